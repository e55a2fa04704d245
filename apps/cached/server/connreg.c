/*
 * apps/cached/server/connreg.c - memcached's connection registry, for "stats conns": one
 * slot per descriptor, filled when a worker adopts a connection and cleared when it frees
 * it, under one mutex (opening and closing a connection are rare next to requests); the
 * last-command time is a relaxed atomic the owning worker stores once per read event.
 */
#include "connreg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct slot {
	bool used;
	bool listener;
	_Atomic int state;
	_Atomic int64_t last_cmd; /* CLOCK_MONOTONIC_COARSE seconds */
	char addr[80], listen_addr[80];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static unsigned nslots;

static int64_t mono_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

int connreg_init(unsigned max_fd)
{
	slots = calloc(max_fd, sizeof *slots);
	if (!slots)
		return -1;
	nslots = max_fd;
	return 0;
}

void connreg_free(void)
{
	free(slots);
	slots = NULL;
	nslots = 0;
}

void connreg_add(int fd, bool listener, const char *addr, const char *listen_addr)
{
	if (fd < 0 || (unsigned)fd >= nslots)
		return;
	pthread_mutex_lock(&reg_lock);
	struct slot *s = &slots[fd];
	s->used = true;
	s->listener = listener;
	atomic_store_explicit(&s->state, listener ? CONN_LISTENING : CONN_WAITING,
			      memory_order_relaxed);
	atomic_store_explicit(&s->last_cmd, mono_sec(), memory_order_relaxed);
	snprintf(s->addr, sizeof s->addr, "%s", addr);
	snprintf(s->listen_addr, sizeof s->listen_addr, "%s", listen_addr ? listen_addr : "");
	pthread_mutex_unlock(&reg_lock);
}

void connreg_del(int fd)
{
	if (fd < 0 || (unsigned)fd >= nslots)
		return;
	pthread_mutex_lock(&reg_lock);
	slots[fd].used = false;
	pthread_mutex_unlock(&reg_lock);
}

void connreg_touch(int fd, int state)
{
	if (fd < 0 || (unsigned)fd >= nslots)
		return;
	atomic_store_explicit(&slots[fd].state, state, memory_order_relaxed);
	if (state != CONN_WAITING)
		atomic_store_explicit(&slots[fd].last_cmd, mono_sec(), memory_order_relaxed);
}

static const char *const state_names[] = {"conn_listening", "conn_waiting", "conn_parse_cmd",
					  "conn_watch"};

void connreg_each(int self_fd, void (*fn)(void *arg, int fd, const char *name, const char *val),
		  void *arg)
{
	int64_t now = mono_sec();
	pthread_mutex_lock(&reg_lock);
	for (unsigned fd = 0; fd < nslots; fd++) {
		struct slot *s = &slots[fd];
		if (!s->used)
			continue;
		fn(arg, (int)fd, "addr", s->addr);
		if (!s->listener)
			fn(arg, (int)fd, "listen_addr", s->listen_addr);
		int st = (int)fd == self_fd ? CONN_PARSE_CMD
					    : atomic_load_explicit(&s->state, memory_order_relaxed);
		fn(arg, (int)fd, "state", state_names[st]);
		char secs[24];
		int64_t last = atomic_load_explicit(&s->last_cmd, memory_order_relaxed);
		snprintf(secs, sizeof secs, "%lld", (long long)(now - last));
		fn(arg, (int)fd, "secs_since_last_cmd", secs);
	}
	pthread_mutex_unlock(&reg_lock);
}
