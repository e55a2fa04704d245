/*
 * src/thread.c - the thread registry: ids, capacity, explicit and lazy registration,
 * exit cleanup.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/clock.h>
#include <tsync/thread.h>
#include "registry.h"
#include "tdir.h"
#include "util.h"

_Thread_local unsigned tsync__tid1 __attribute__((tls_model("initial-exec")));

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned capacity;  /* 0 until set or fixed */
static int capacity_fixed; /* set by the first registration, query or table sizing */
/* capacity bytes, allocated at the first registration: per id, 0 (free), ID_LAZY or
 * ID_EXPLICIT (register_self) */
static unsigned char *id_used;
#define ID_LAZY 1
#define ID_EXPLICIT 2
/* A fork child's ids of the threads that did not survive the fork: never reused, as
 * their records may be half-changed (docs/design.md §8). */
#define ID_VANISHED TSYNC__ID_VANISHED
static unsigned nregistered;
/* nregistered again, for lock-free readers (tsync__thread_live): changed with seq_cst
 * read-modify-writes under reg_lock, before a new thread's first section and after an
 * exiting thread's exit hooks. */
static _Atomic unsigned live;
static _Atomic unsigned high_water;
static struct tsync__client clients = {.prev = &clients, .next = &clients};
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* The calling thread registered explicitly (its id is ID_EXPLICIT): owner only. */
static _Thread_local bool self_explicit;

_Noreturn void tsync__fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tsync: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

/* Fix the capacity (registry mutex held). */
static unsigned capacity_locked(void)
{
	if (capacity == 0) {
		unsigned c = TSYNC_THREADS_DEFAULT;
		const char *env = getenv("TSYNC_MAX_THREADS");
		if (env && *env) {
			char *end;
			unsigned long v = strtoul(env, &end, 10);
			if (*end == '\0' && v >= 1 && v <= TSYNC_THREADS_MAX)
				c = (unsigned)v;
		}
		capacity = c;
	}
	capacity_fixed = 1;
	return capacity;
}

unsigned tsync_thread_capacity(void)
{
	pthread_mutex_lock(&reg_lock);
	unsigned c = capacity_locked();
	pthread_mutex_unlock(&reg_lock);
	return c;
}

unsigned tsync__chunk_count(void)
{
	return (tsync_thread_capacity() + TSYNC__CHUNK - 1) / TSYNC__CHUNK;
}

int tsync_thread_set_capacity(unsigned n)
{
	if (n < 1 || n > TSYNC_THREADS_MAX) {
		errno = EINVAL;
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&reg_lock);
	if (capacity_fixed) {
		errno = EBUSY;
		rc = -1;
	} else {
		capacity = n;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

unsigned tsync_thread_high_water(void)
{
	return atomic_load_explicit(&high_water, memory_order_acquire);
}

unsigned tsync__thread_live(void)
{
	return atomic_load_explicit(&live, memory_order_seq_cst);
}

unsigned tsync_thread_count(void)
{
	pthread_mutex_lock(&reg_lock);
	unsigned n = nregistered;
	pthread_mutex_unlock(&reg_lock);
	return n;
}

static void unregister_id(unsigned tid);

/* ---- fork (docs/design.md §8) ------------------------------------------------------- */

/* Before fork: the registry mutex, then every client's mutexes (call queues first), so
 * that the child finds none held by a thread that does not exist there. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
	for (int phase = 0; phase < 2; phase++)
		for (struct tsync__client *c = clients.next; c != &clients; c = c->next)
			if (c->fork_prepare)
				c->fork_prepare(c, phase);
}

static void atfork_parent(void)
{
	for (struct tsync__client *c = clients.prev; c != &clients; c = c->prev)
		if (c->fork_parent)
			c->fork_parent(c);
	pthread_mutex_unlock(&reg_lock);
}

/* In the child: only the forking thread exists. Every other registered id is retired
 * (ID_VANISHED: not counted, never reused), then each client lets go of it. */
static void atfork_child(void)
{
	unsigned self = tsync__tid1; /* 0: the forking thread was not registered */
	if (id_used != NULL) {
		unsigned n = 0;
		for (unsigned id = 0; id < capacity; id++)
			if ((id_used[id] == ID_LAZY || id_used[id] == ID_EXPLICIT) &&
			    id + 1 != self) {
				id_used[id] = ID_VANISHED;
				n++;
			}
		nregistered -= n;
		atomic_store_explicit(&live, nregistered, memory_order_seq_cst);
	}
	for (struct tsync__client *c = clients.prev; c != &clients; c = c->prev)
		if (c->fork_child)
			c->fork_child(c, id_used, id_used ? capacity : 0);
	pthread_mutex_unlock(&reg_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_install(void)
{
	if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0)
		tsync__fatal("pthread_atfork failed");
}

/* pthread key destructor: runs in the exiting thread, whose thread-locals are still live. */
static void thread_exit_destructor(void *v)
{
	unsigned tid1 = (unsigned)(uintptr_t)v;
	if (tid1 != 0 && tsync__tid1 == tid1)
		unregister_id(tid1 - 1);
}

static void make_key(void)
{
	if (pthread_key_create(&exit_key, thread_exit_destructor) != 0)
		tsync__fatal("pthread_key_create failed");
}

/* Run every client's thread_prepare for tid (registry mutex held): 0, or -1 with
 * errno = ENOMEM at the first that fails. */
static int prepare_locked(unsigned tid)
{
	for (struct tsync__client *c = clients.next; c != &clients; c = c->next)
		if (c->thread_prepare && c->thread_prepare(c, tid) != 0) {
			errno = ENOMEM;
			return -1;
		}
	return 0;
}

/*
 * Register the calling thread. Explicit registration (tsync_thread_register, also
 * reached through tsync_thread_id) first allocates the thread's records in every
 * client (prepare_locked) and marks its id ID_EXPLICIT, so that clients created later
 * allocate them at creation (tsync__client_add): no call of an explicitly registered
 * thread allocates per-thread state. Lazy registration (tsync__self inside another
 * call, tsync__thread_try_lazy) only takes an id; each client allocates the thread's
 * records on its first use. A lazily registered thread that registers explicitly is
 * prepared then (on failure it stays registered lazily).
 */
static int register_self(bool explicit_reg)
{
	if (tsync__tid1 != 0) {
		if (!explicit_reg || self_explicit)
			return 0;
		unsigned id = tsync__tid1 - 1;
		pthread_mutex_lock(&reg_lock);
		int rc = prepare_locked(id);
		if (rc == 0)
			id_used[id] = ID_EXPLICIT;
		pthread_mutex_unlock(&reg_lock);
		if (rc == 0)
			self_explicit = 1;
		return rc;
	}
	/* The clock first: its initialisation starts (and joins) helper threads, which must
	 * not happen under the registry mutex. */
	tsync_clock_init();
	pthread_once(&key_once, make_key);
	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&reg_lock);
	unsigned cap = capacity_locked();
	if (id_used == NULL) {
		id_used = calloc(cap, 1);
		if (id_used == NULL) {
			pthread_mutex_unlock(&reg_lock);
			errno = ENOMEM;
			return -1;
		}
	}
	unsigned id;
	for (id = 0; id < cap && id_used[id]; id++)
		;
	if (id == cap) {
		pthread_mutex_unlock(&reg_lock);
		errno = EAGAIN;
		return -1;
	}
	/* Before the id is taken: on failure nothing refers to it, and what was allocated
	 * stays with its client for the id's next user (freed with the client). */
	if (explicit_reg && prepare_locked(id) != 0) {
		pthread_mutex_unlock(&reg_lock);
		return -1;
	}
	id_used[id] = explicit_reg ? ID_EXPLICIT : ID_LAZY;
	nregistered++;
	atomic_fetch_add_explicit(&live, 1, memory_order_seq_cst);
	if (id + 1 > atomic_load_explicit(&high_water, memory_order_relaxed))
		atomic_store_explicit(&high_water, id + 1, memory_order_seq_cst);
	pthread_mutex_unlock(&reg_lock);
	tsync__tid1 = id + 1;
	self_explicit = explicit_reg;
	if (pthread_setspecific(exit_key, (void *)(uintptr_t)(id + 1)) != 0) {
		unregister_id(id);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int tsync_thread_register(void)
{
	return register_self(true);
}

int tsync__thread_try_lazy(void)
{
	return register_self(false);
}

unsigned tsync__thread_lazy_register(void)
{
	if (register_self(false) != 0)
		tsync__fatal("cannot register thread (%s): capacity %u threads; raise it with "
			     "tsync_thread_set_capacity() or TSYNC_MAX_THREADS",
			     strerror(errno), tsync_thread_capacity());
	return tsync__tid1 - 1;
}

static void unregister_id(unsigned tid)
{
	pthread_mutex_lock(&reg_lock);
	for (struct tsync__client *c = clients.next; c != &clients; c = c->next)
		c->thread_exit(c, tid);
	id_used[tid] = 0;
	nregistered--;
	atomic_fetch_sub_explicit(&live, 1, memory_order_seq_cst);
	pthread_mutex_unlock(&reg_lock);
	tsync__tid1 = 0;
	self_explicit = false;
	pthread_setspecific(exit_key, NULL);
}

int tsync_thread_unregister(void)
{
	if (tsync__tid1 == 0) {
		errno = EINVAL;
		return -1;
	}
	unregister_id(tsync__tid1 - 1);
	return 0;
}

int tsync__client_add(struct tsync__client *c)
{
	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&reg_lock);
	if (c->thread_prepare && id_used != NULL) {
		unsigned hw = atomic_load_explicit(&high_water, memory_order_relaxed);
		for (unsigned id = 0; id < hw; id++)
			if (id_used[id] == ID_EXPLICIT && c->thread_prepare(c, id) != 0) {
				pthread_mutex_unlock(&reg_lock);
				errno = ENOMEM;
				return -1;
			}
	}
	c->next = &clients;
	c->prev = clients.prev;
	clients.prev->next = c;
	clients.prev = c;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

void tsync__client_remove(struct tsync__client *c)
{
	pthread_mutex_lock(&reg_lock);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->next = c->prev = c;
	pthread_mutex_unlock(&reg_lock);
}

void *tsync__chunk_get(void *_Atomic *dir, unsigned idx, size_t chunk_bytes,
		       void (*init)(void *chunk, void *arg), void *arg)
{
	void *c = atomic_load_explicit(&dir[idx], memory_order_acquire);
	if (c != NULL)
		return c;
	void *fresh =
		aligned_alloc(TSYNC_CACHE_LINE, tsync__round_up(chunk_bytes, TSYNC_CACHE_LINE));
	if (fresh == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(fresh, 0, chunk_bytes);
	if (init)
		init(fresh, arg);
	void *expected = NULL;
	if (atomic_compare_exchange_strong_explicit(&dir[idx], &expected, fresh,
						    memory_order_acq_rel, memory_order_acquire))
		return fresh;
	free(fresh);
	return expected;
}
