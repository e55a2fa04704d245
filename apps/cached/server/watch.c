/*
 * apps/cached/server/watch.c - memcached's connection registry ("stats conns") and log
 * watchers ("watch fetchers mutations ..."), with memcached 1.6.18's line formats.
 *
 * Registry: one slot per descriptor, filled when a worker adopts a connection and
 * cleared when it frees it, under one mutex (opening and closing a connection are rare
 * next to requests); the last-command time is a relaxed atomic the owning worker stores
 * once per read event.
 *
 * Watchers: a watching connection's output buffer is made thread-safe
 * (evbuffer_enable_locking) and its sink is put on a list under watch_lock. A worker that
 * logs an event checks srv->watch_mask first (one relaxed load: nothing else is paid
 * while nobody watches), then formats the line once and, under watch_lock, appends it to
 * every sink that asked for that kind and activates the sink's write event, which its
 * own worker then flushes. A sink whose client does not read keeps at most
 * WATCH_BUF_MAX bytes; lines past that are counted (log_watcher_skipped) and dropped,
 * as memcached's logger does. The owning worker removes a sink (under watch_lock) before
 * freeing its connection, so no other thread touches a freed buffer or event.
 */
#include "server.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define WATCH_BUF_MAX (256u << 10) /* memcached's watcher_logbuf_size default */

/* ---- registry ---------------------------------------------------------------------- */

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
		snprintf(secs, sizeof secs, "%lld",
			 (long long)(now - atomic_load_explicit(&s->last_cmd, memory_order_relaxed)));
		fn(arg, (int)fd, "secs_since_last_cmd", secs);
	}
	pthread_mutex_unlock(&reg_lock);
}

/* ---- watchers ---------------------------------------------------------------------- */

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_sink *sinks;
static _Atomic uint64_t gid;

/* the OR of every sink's flags, kept under watch_lock */
static void update_mask(struct server *srv)
{
	unsigned m = 0;
	for (struct watch_sink *w = sinks; w; w = w->next)
		m |= w->flags;
	atomic_store_explicit(&srv->watch_mask, m, memory_order_relaxed);
}

void watch_add(struct server *srv, struct watch_sink *w)
{
	evbuffer_enable_locking(w->out, NULL);
	pthread_mutex_lock(&watch_lock);
	w->next = sinks;
	sinks = w;
	update_mask(srv);
	atomic_fetch_add(&srv->log_watchers, 1);
	pthread_mutex_unlock(&watch_lock);
}

void watch_remove(struct server *srv, struct watch_sink *w)
{
	pthread_mutex_lock(&watch_lock);
	for (struct watch_sink **pp = &sinks; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			atomic_fetch_sub(&srv->log_watchers, 1);
			break;
		}
	}
	update_mask(srv);
	pthread_mutex_unlock(&watch_lock);
}

void watch_log(struct server *srv, unsigned kind, const char *fmt, ...)
{
	char line[1024];
	struct timeval tv;
	gettimeofday(&tv, NULL);
	int n = snprintf(line, sizeof line, "ts=%lld.%d gid=%llu ", (long long)tv.tv_sec,
			 (int)tv.tv_usec,
			 (unsigned long long)atomic_fetch_add_explicit(&gid, 1,
								       memory_order_relaxed) + 1);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len >= sizeof line - 1)
		len = sizeof line - 2;
	line[len++] = '\n';
	pthread_mutex_lock(&watch_lock);
	for (struct watch_sink *w = sinks; w; w = w->next) {
		if (!(w->flags & kind))
			continue;
		if (evbuffer_get_length(w->out) + len > WATCH_BUF_MAX) {
			atomic_fetch_add_explicit(&srv->log_watcher_skipped, 1,
						  memory_order_relaxed);
			continue;
		}
		evbuffer_add(w->out, line, len);
		atomic_fetch_add_explicit(&srv->log_watcher_sent, 1, memory_order_relaxed);
		event_active(w->wake, EV_WRITE, 1);
	}
	pthread_mutex_unlock(&watch_lock);
}

/* memcached's uriencode: keys in log lines with every byte but [A-Za-z0-9._~-] as %XX */
size_t watch_uriencode(const char *src, size_t n, char *dst, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
			     ch == '~';
		if (d + 4 > cap)
			break;
		if (plain) {
			dst[d++] = (char)ch;
		} else {
			dst[d++] = '%';
			dst[d++] = hex[ch >> 4];
			dst[d++] = hex[ch & 15];
		}
	}
	dst[d] = 0;
	return d;
}
