/*
 * examples/hash_map.c - a shared hash map of string keys, ported the way a liburcu user
 * would port one: lookups inside ParSec sections (tsync/ps.h), updates under a mutex per
 * bucket, entries from ps_kmem (tsync/ps_kmem.h: sized to their key) and freed with
 * ps_kfree, so a lookup never sees an entry reused under it.
 *
 * Two threads each own half of the key space and do mixed inserts, updates, deletes and
 * lookups around 3,600 live entries in all (1,800 each). Phase 1: both work. Phase 2: the
 * second thread goes idle (it makes no more tsync calls until the end) while the first
 * goes on. Then the program prints the live bytes, the slab bytes that hold them
 * (ps_kmem_stats) and their ratio, and checks its own results:
 *  - every lookup of a thread's own key finds exactly the value that thread last stored
 *    for it (or nothing after a delete);
 *  - a lookup of the other thread's key finds nothing or a value made for that key;
 *  - the map's final entries are exactly the two threads' final key sets.
 * Exit status 0 when every check holds, 1 otherwise.
 *
 * Build against an installed tsync: see examples/CMakeLists.txt or Makefile.pkgconfig.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/tsync.h>

enum {
	NBUCKETS = 1024,
	NTHREADS = 2,
	KEYS_PER_THREAD = 2400, /* each thread's key space */
	LIVE_PER_THREAD = 1800, /* entries each thread keeps, about: 3,600 in all */
	PHASE1_OPS = 400000,    /* per thread */
	PHASE2_OPS = 200000,    /* thread 0 only, while thread 1 is idle */
};

struct entry {
	_Atomic(struct entry *) next;
	uint64_t value; /* key id << 32 | version: names its key */
	uint32_t hash;
	char key[]; /* NUL-terminated */
};

struct bucket {
	pthread_mutex_t lock; /* updates only */
	_Atomic(struct entry *) head;
};

static struct ps *ps;
static struct ps_kmem *km;
static struct bucket table[NBUCKETS];
static _Atomic unsigned long failures;
static _Atomic int idle_phase; /* 1: thread 1 idles while thread 0 works */
static _Atomic int finished;   /* threads done with all their calls */
static _Atomic int release_idle;

#define FAIL(...)                                          \
	do {                                               \
		fprintf(stderr, "hash_map: " __VA_ARGS__); \
		fputc('\n', stderr);                       \
		atomic_fetch_add(&failures, 1);            \
	} while (0)

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* Key id -> its string: lengths 12 to about 60 bytes, so entries span several classes. */
static void key_name(unsigned id, char *buf, size_t len)
{
	static const char *const kinds[] = {"user", "session-token", "cart",
					    "recommendation-cache-entry", "profile:avatar"};
	snprintf(buf, len, "%s:%u:%0*u", kinds[id % 5], id, (int)(id % 7) * 4 + 1, id * 7919u);
}

/* Lookup: inside a section, no locks, no shared stores. Returns false if absent. */
static bool map_get(const char *key, uint64_t *value)
{
	uint32_t h = hash_str(key);
	struct bucket *b = &table[h % NBUCKETS];
	bool found = false;
	ps_enter(ps);
	for (struct entry *e = atomic_load_explicit(&b->head, memory_order_acquire); e;
	     e = atomic_load_explicit(&e->next, memory_order_acquire)) {
		if (e->hash == h && strcmp(e->key, key) == 0) {
			*value = e->value;
			found = true;
			break;
		}
	}
	ps_exit(ps);
	return found;
}

/* Under the bucket's lock: the link that points to key's entry (*e), or to the end of the
 * chain (*e = NULL). */
static _Atomic(struct entry *) *find_locked(struct bucket *b, uint32_t h, const char *key,
					    struct entry **e)
{
	_Atomic(struct entry *) *link = &b->head;
	while ((*e = atomic_load_explicit(link, memory_order_relaxed)) != NULL &&
	       !((*e)->hash == h && strcmp((*e)->key, key) == 0))
		link = &(*e)->next;
	return link;
}

/* Insert or replace (a replacement is a new entry: readers see the old or the new). */
static int map_put(const char *key, uint64_t value)
{
	uint32_t h = hash_str(key);
	struct bucket *b = &table[h % NBUCKETS];
	size_t klen = strlen(key) + 1;
	struct entry *n = ps_kmalloc(km, sizeof(*n) + klen);
	if (n == NULL)
		return -1;
	n->value = value;
	n->hash = h;
	memcpy(n->key, key, klen);
	pthread_mutex_lock(&b->lock);
	struct entry *e;
	_Atomic(struct entry *) *link = find_locked(b, h, key, &e);
	atomic_store_explicit(&n->next,
			      e ? atomic_load_explicit(&e->next, memory_order_relaxed) : NULL,
			      memory_order_relaxed);
	atomic_store_explicit(link, n, memory_order_release);
	pthread_mutex_unlock(&b->lock);
	if (e)
		ps_kfree(km, e); /* reused only after every section that may see it */
	return 0;
}

static bool map_del(const char *key)
{
	uint32_t h = hash_str(key);
	struct bucket *b = &table[h % NBUCKETS];
	pthread_mutex_lock(&b->lock);
	struct entry *e;
	_Atomic(struct entry *) *link = find_locked(b, h, key, &e);
	if (e)
		atomic_store_explicit(link, atomic_load_explicit(&e->next, memory_order_relaxed),
				      memory_order_release);
	pthread_mutex_unlock(&b->lock);
	if (e)
		ps_kfree(km, e);
	return e != NULL;
}

/* ---- the two threads ------------------------------------------------------------- */

struct worker {
	unsigned id;
	uint64_t shadow[KEYS_PER_THREAD]; /* value last stored, 0: absent */
	unsigned live;
	uint64_t rng;
	uint64_t ops;
};

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void one_op(struct worker *w)
{
	char key[96];
	uint64_t r = next_rand(&w->rng);
	unsigned slot = (unsigned)(r % KEYS_PER_THREAD);
	unsigned id = w->id * KEYS_PER_THREAD + slot;
	unsigned kind = (unsigned)(r >> 32) % 10;
	w->ops++;
	if (kind < 6) { /* 60 %: lookups, of our keys and of the other thread's */
		uint64_t v;
		if (kind < 4) {
			key_name(id, key, sizeof key);
			bool found = map_get(key, &v);
			if (found != (w->shadow[slot] != 0) || (found && v != w->shadow[slot]))
				FAIL("thread %u: lookup of %s found %d (%" PRIx64
				     "), expected %" PRIx64,
				     w->id, key, found, found ? v : 0, w->shadow[slot]);
		} else {
			unsigned other = (1 - w->id) * KEYS_PER_THREAD + slot;
			key_name(other, key, sizeof key);
			if (map_get(key, &v) && (v >> 32) != other)
				FAIL("lookup of %s found a value made for key %" PRIu64, key,
				     v >> 32);
		}
		return;
	}
	key_name(id, key, sizeof key);
	/* 40 %: updates, holding about LIVE_PER_THREAD entries */
	if (w->shadow[slot] != 0 && (w->live > LIVE_PER_THREAD || kind == 9)) {
		if (!map_del(key))
			FAIL("thread %u: delete of %s found nothing", w->id, key);
		w->shadow[slot] = 0;
		w->live--;
	} else if (w->shadow[slot] != 0 || w->live < LIVE_PER_THREAD) {
		uint64_t v = ((uint64_t)id << 32) | (uint32_t)(w->ops | 1);
		if (map_put(key, v) != 0) {
			FAIL("ps_kmalloc: %s", strerror(errno));
			return;
		}
		if (w->shadow[slot] == 0)
			w->live++;
		w->shadow[slot] = v;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < PHASE1_OPS; i++)
		one_op(w);
	if (w->id == 1) {
		/* phase 2: idle - no tsync call - until the main thread has measured */
		atomic_store(&idle_phase, 1);
		atomic_fetch_add(&finished, 1);
		while (!atomic_load(&release_idle))
			sched_yield();
		return NULL;
	}
	while (!atomic_load(&idle_phase))
		sched_yield();
	for (int i = 0; i < PHASE2_OPS; i++)
		one_op(w);
	atomic_fetch_add(&finished, 1);
	while (!atomic_load(&release_idle))
		sched_yield();
	return NULL;
}

int main(void)
{
	ps = ps_create(NULL);
	if (ps == NULL) {
		fprintf(stderr, "ps_create: %s\n", strerror(errno));
		return 1;
	}
	km = ps_kmem_create(ps, NULL);
	if (km == NULL) {
		fprintf(stderr, "ps_kmem_create: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < NBUCKETS; i++) {
		pthread_mutex_init(&table[i].lock, NULL);
		atomic_init(&table[i].head, NULL);
	}
	static struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i].id = i;
		w[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		if (pthread_create(&t[i], NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	while (atomic_load(&finished) < NTHREADS)
		sched_yield();

	/* Both threads are alive and idle: what does the map hold, and in how much? */
	struct ps_mem_stats s;
	if (ps_kmem_stats(km, &s) != 0) {
		fprintf(stderr, "ps_kmem_stats: %s\n", strerror(errno));
		return 1;
	}
	uint64_t entries = 0, key_bytes = 0;
	for (int i = 0; i < NBUCKETS; i++)
		for (struct entry *e = atomic_load(&table[i].head); e; e = atomic_load(&e->next)) {
			entries++;
			key_bytes += sizeof(*e) + strlen(e->key) + 1;
		}
	atomic_store(&release_idle, 1);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);

	unsigned expected = w[0].live + w[1].live;
	if (entries != expected)
		FAIL("the map holds %" PRIu64 " entries, the threads made %u", entries, expected);
	if (s.live != entries)
		FAIL("ps_kmem_stats: %" PRIu64 " live objects, the map holds %" PRIu64, s.live,
		     entries);
	char key[96];
	for (unsigned i = 0; i < NTHREADS; i++)
		for (unsigned slot = 0; slot < KEYS_PER_THREAD; slot++) {
			uint64_t v = 0;
			key_name(i * KEYS_PER_THREAD + slot, key, sizeof key);
			bool found = map_get(key, &v);
			if (found != (w[i].shadow[slot] != 0) || (found && v != w[i].shadow[slot]))
				FAIL("final lookup of %s: found %d, expected %" PRIx64, key, found,
				     w[i].shadow[slot]);
		}
	printf("hash_map: %" PRIu64 " entries after %" PRIu64 " + %" PRIu64
	       " operations; entry bytes %" PRIu64 ", live bytes (classes) %" PRIu64
	       ", pending objects %" PRIu64 ", cached %" PRIu64 ", free %" PRIu64
	       ", slab bytes %" PRIu64 " (%" PRIu64 " slabs): slab/live %.2f\n",
	       entries, w[0].ops, w[1].ops, key_bytes, s.live_bytes, s.pending, s.cached, s.freed,
	       s.slab_bytes, s.slabs,
	       s.live_bytes ? (double)s.slab_bytes / (double)s.live_bytes : 0.0);

	for (int i = 0; i < NBUCKETS; i++) { /* no thread uses the map any more */
		struct entry *e = atomic_load(&table[i].head);
		while (e) {
			struct entry *next = atomic_load(&e->next);
			ps_kfree_now(km, e);
			e = next;
		}
		pthread_mutex_destroy(&table[i].lock);
	}
	ps_kmem_destroy(km);
	ps_destroy(ps);
	unsigned long f = atomic_load(&failures);
	if (f) {
		fprintf(stderr, "hash_map: %lu checks failed\n", f);
		return 1;
	}
	return 0;
}
