/*
 * apps/cached/core/cache.c - the tsync-cached cache core (seed 000 §5.2). Contracts in
 * cache.h; the design and the correctness argument in docs/cached.md ("Cache core").
 *
 * Invariants the code relies on (each argued in docs/cached.md):
 *  I1 An item is reachable from a hash chain (of the table or, while growing, of the old
 *     table) exactly while it is on its CLOCK/LRU list (variants with one); both change
 *     only under the item's stripe lock. So an evictor holding a list lock that also gets
 *     the victim's stripe lock (trylock) finds the victim hashed.
 *  I2 Every bucket with index b (in the old and in the new table) is guarded by stripe
 *     b & smask, and smask < the smallest table size: one lock covers a bucket, the two
 *     buckets it splits into, and every item whose hash maps there.
 *  I3 Items are immutable once published except hnext (chain link), exptime (touch),
 *     refbit and refcount, all atomics. An update publishes a new item with one release
 *     store and unlinks the old one afterwards; the old one is ps_free()d (ps variants:
 *     reused only after every section that could hold it has ended) or dropped by its
 *     reference count (mcs-clock, locked).
 *  I4 Lock order: stripe -> list lock (blocking). A thread holding a list lock takes
 *     stripe locks only with trylock. The grower takes one stripe at a time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cache.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tsync/arch.h>
#include <tsync/clock.h>
#include <tsync/ps.h>
#include <tsync/ps_mem.h>
#include <tsync/thread.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#define XXH_INLINE_ALL
#include <xxhash.h>
#pragma GCC diagnostic pop

#define RELAXED memory_order_relaxed
#define ACQUIRE memory_order_acquire
#define RELEASE memory_order_release
#define ACQ_REL memory_order_acq_rel

#define MAX_CLASSES 63u
#define MAX_POWER 30u
#define MAX_STRIPES 4096u
#define GROW_CHECK_EVERY 256u
#define SWEEP_CHUNK (1ull << 20) /* buckets the sweeper visits per interval, at most */

/* ---- items ------------------------------------------------------------------------------ */

struct item {
	struct item *_Atomic hnext; /* hash chain (I3: the only link readers follow) */
	struct item *lprev, *lnext; /* CLOCK/LRU list, under the list's lock */
	/* what the CLOCK hand reads, beside its link (one line for most items) */
	uint64_t prio;              /* GreedyDual-Size priority, under the list's lock */
	_Atomic uint8_t refbit;     /* CLOCK reference bit */
	uint8_t freq;               /* GreedyDual-Size-Frequency count, under the list's lock */
	uint8_t cls;
	uint8_t nkey;
	_Atomic uint8_t mflags;     /* M_*: memcached's fetched / stale / token-sent bits */
	_Atomic uint32_t refcount;  /* mcs-clock, locked: 1 for the table + 1 per cache_ref */
	_Atomic uint32_t exptime;   /* cache_now() units; 0 = never */
	uint64_t hash;
	uint64_t cas;
	uint32_t time;              /* cache_now() when stored (delayed flush_all) */
	uint32_t flags;
	uint32_t nbytes;
	_Atomic uint32_t atime;     /* cache_now() of the last access (the cache's tick) */
	char data[];                /* key, then value */
};
/* mflags (meta protocol, cache_mget): set with atomic or; a new item starts with 0 */
#define M_FETCHED 1u /* a get has returned the item (mg h) */
#define M_TOKEN 2u   /* a recache win token was handed out for it (mg W, then Z) */
#define M_STALE 4u   /* invalidated by cache_invalidate (mg X) */
#define M_KEYB 8u    /* stored with a base64 key (ms b): mg k returns it base64 */
#define ITEM_HDR offsetof(struct item, data)
#define MC_ITEM_HDR 48u /* memcached 1.6's sizeof(item) on 64-bit: its first class is
			 * MC_ITEM_HDR + chunk_min */

static inline const char *item_value(const struct item *it)
{
	return it->data + it->nkey;
}

/* ---- locks ------------------------------------------------------------------------------ */

static inline void spin_wait(unsigned *spins)
{
	if (++*spins < 256)
		tsync_arch_relax();
	else
		sched_yield();
}

/* Ticket lock with trylock: the ps variants' stripe locks and the CLOCK list locks. */
struct tlock {
	_Atomic uint32_t next;
	_Atomic uint32_t owner;
};

static inline void tlock_lock(struct tlock *l)
{
	uint32_t t = atomic_fetch_add_explicit(&l->next, 1, RELAXED);
	unsigned spins = 0;
	while (atomic_load_explicit(&l->owner, ACQUIRE) != t)
		spin_wait(&spins);
}

static inline bool tlock_trylock(struct tlock *l)
{
	/* acquire on owner: reading the previous holder's unlock store is what orders its
	 * critical section before ours (the CAS on next synchronises with nobody's unlock). */
	uint32_t o = atomic_load_explicit(&l->owner, ACQUIRE);
	uint32_t expect = o;
	return atomic_compare_exchange_strong_explicit(&l->next, &expect, o + 1, ACQUIRE,
						       RELAXED);
}

static inline void tlock_unlock(struct tlock *l)
{
	atomic_store_explicit(&l->owner, atomic_load_explicit(&l->owner, RELAXED) + 1, RELEASE);
}

/* MCS queue lock (Mellor-Crummey & Scott 1991): the mcs-clock variant's stripe locks.
 * Each acquisition brings its own queue node (on the caller's stack; it lives until the
 * matching unlock). */
struct mcs_node {
	struct mcs_node *_Atomic next;
	_Atomic uint32_t wait;
};
struct mcs_lock {
	struct mcs_node *_Atomic tail;
};

static inline void mcs_lock(struct mcs_lock *l, struct mcs_node *n)
{
	atomic_store_explicit(&n->next, NULL, RELAXED);
	atomic_store_explicit(&n->wait, 1, RELAXED);
	/* acq_rel: acquire the previous holder's section; release our node's init to the
	 * predecessor that links to it. */
	struct mcs_node *pred = atomic_exchange_explicit(&l->tail, n, ACQ_REL);
	if (pred == NULL)
		return;
	atomic_store_explicit(&pred->next, n, RELEASE);
	unsigned spins = 0;
	while (atomic_load_explicit(&n->wait, ACQUIRE))
		spin_wait(&spins);
}

static inline bool mcs_trylock(struct mcs_lock *l, struct mcs_node *n)
{
	atomic_store_explicit(&n->next, NULL, RELAXED);
	atomic_store_explicit(&n->wait, 0, RELAXED);
	struct mcs_node *expect = NULL;
	return atomic_compare_exchange_strong_explicit(&l->tail, &expect, n, ACQ_REL, RELAXED);
}

static inline void mcs_unlock(struct mcs_lock *l, struct mcs_node *n)
{
	struct mcs_node *next = atomic_load_explicit(&n->next, ACQUIRE);
	if (next == NULL) {
		struct mcs_node *expect = n;
		if (atomic_compare_exchange_strong_explicit(&l->tail, &expect, NULL, RELEASE,
							    RELAXED))
			return;
		unsigned spins = 0;
		while ((next = atomic_load_explicit(&n->next, ACQUIRE)) == NULL)
			spin_wait(&spins);
	}
	atomic_store_explicit(&next->wait, 0, RELEASE);
}

/* One stripe lock per cache line; which member is used depends on the variant. */
struct stripe {
	_Alignas(TSYNC_CACHE_LINE) union {
		struct tlock t;          /* ps, ps-nocrp */
		struct mcs_lock m;       /* mcs-clock */
		pthread_mutex_t x;       /* locked */
	} u;
};

/*
 * A CLOCK list (ps: 64 of them; mcs-clock: one) or the LRU list (locked: one). A CLOCK
 * list under GreedyDual-Size-Frequency keeps one ring per size band (items whose charge
 * is within a factor of 4), so that every eviction compares the oldest unreferenced items
 * of every size (see evict_clock_locked); plain CLOCK and the LRU use ring 0 only.
 */
#define EVICT_BANDS 8u
struct ring {
	struct item *hand;  /* CLOCK hand / LRU head (most recent); NULL when empty */
	uint64_t n;
};
struct plist {
	_Alignas(TSYNC_CACHE_LINE) struct tlock t;
	pthread_mutex_t x;  /* locked: the global LRU lock */
	uint64_t inflation; /* GreedyDual-Size's L: the highest priority evicted */
	struct ring r[EVICT_BANDS];
};

/* ---- the cache -------------------------------------------------------------------------- */

struct table {
	uint64_t mask;
	unsigned power;
	struct item *_Atomic b[];
};

enum {
	S_GET_HITS, S_GET_MISSES, S_GET_EXPIRED, S_GET_FLUSHED, S_CMD_SET, S_TOTAL_ITEMS,
	S_CMD_TOUCH, S_TOUCH_HITS, S_TOUCH_MISSES, S_DELETE_HITS, S_DELETE_MISSES,
	S_INCR_HITS, S_INCR_MISSES, S_DECR_HITS, S_DECR_MISSES, S_CAS_HITS, S_CAS_MISSES,
	S_CAS_BADVAL, S_CMD_FLUSH, S_TOO_LARGE, S_NO_MEMORY, S_EVICTIONS, S_RECLAIMED,
	S_LINKED, /* items linked minus unlinked by this thread (wraps; summed) */
	S_ADDS,   /* link events since the last growth check (owner only) */
	S_N
};
/* Per-thread counters, written only by their thread (tsync thread id). */
struct tstats {
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t v[S_N];
};

struct sclass {
	uint32_t size;   /* chunk bytes: ITEM_HDR + key + value fit */
	uint64_t charge; /* bytes charged against mem_limit per item */
	uint64_t credit; /* GreedyDual-Size credit per use: GDS_SCALE / charge */
	unsigned band;   /* its CLOCK ring in each list (0 without size bands) */
	struct ps_mem *mem;
	struct cache *owner; /* for the reclamation observer */
	_Atomic uint64_t evicted;
	_Atomic uint64_t requested; /* ITEM_HDR + key + value of allocated, unretired items */
	_Atomic uint64_t reclaimed; /* expired or flushed items of this class unlinked */
};

struct cache {
	struct cache_config cfg;
	struct ps *ps;
	unsigned nclasses;
	struct sclass cls[MAX_CLASSES];
	struct stripe *stripes;
	uint64_t smask;
	struct plist *lists;
	unsigned nlists;
	struct tstats *ts;
	unsigned nts;
	int64_t start_sec;    /* CLOCK_MONOTONIC_COARSE seconds at create */
	int64_t start_unix;   /* time(NULL) at create */

	/* read by every lookup, written only by growth */
	_Alignas(TSYNC_CACHE_LINE) struct table *_Atomic tab;
	struct table *_Atomic old; /* non-NULL while growing */

	/* read by every lookup, written by flush_all / time_advance */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t oldest_cas;
	_Atomic uint32_t flush_at;    /* delayed flush: items stored before it die at it */
	_Atomic uint32_t time_offset; /* cache_time_advance */
	_Atomic uint32_t tick;        /* cache_now() as last read by an update or the
				       * maintenance thread (clock_tick): gets stamp
				       * access times with it instead of reading the clock */

	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t cas_next;
	/* Charged bytes: items allocated and not yet reclaimed (live + garbage <= mem_limit),
	 * and of those, garbage: freed, waiting for a grace period (docs/cached.md, "Memory"). */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t mem_used;
	_Atomic uint64_t mem_garbage;

	_Alignas(TSYNC_CACHE_LINE) pthread_mutex_t grow_mx;
	_Atomic uint64_t expansions;
	_Atomic uint64_t sweeper_runs;
	_Atomic int grow_req;
	pthread_mutex_t mmx; /* maintenance thread state */
	pthread_cond_t mcv;
	pthread_t mthr;
	bool mrunning, mstop;
	unsigned interval_ms;
	uint64_t sweep_cursor;
};

static inline bool is_ps(const struct cache *c)
{
	return c->cfg.variant == CACHE_PS || c->cfg.variant == CACHE_PS_NOCRP;
}

/* ---- per-thread counters ---------------------------------------------------------------- */

static inline struct tstats *my_stats(struct cache *c)
{
	unsigned id = tsync__self();
	return &c->ts[id < c->nts ? id : c->nts - 1];
}

/* Owner-only increment: a load and a store, no read-modify-write. Threads beyond the
 * counter array share its last slot: increments are then atomic RMWs. */
static inline void st_add(struct cache *c, unsigned k, uint64_t d)
{
	unsigned id = tsync__self();
	if (TSYNC_LIKELY(id < c->nts - 1)) {
		_Atomic uint64_t *p = &c->ts[id].v[k];
		atomic_store_explicit(p, atomic_load_explicit(p, RELAXED) + d, RELAXED);
	} else {
		atomic_fetch_add_explicit(&c->ts[c->nts - 1].v[k], d, RELAXED);
	}
}
#define ST_INC(c, k) st_add((c), (k), 1)

static uint64_t st_sum(const struct cache *c, unsigned k)
{
	uint64_t s = 0;
	for (unsigned i = 0; i < c->nts; i++)
		s += atomic_load_explicit(&c->ts[i].v[k], RELAXED);
	return s;
}

/* ---- time ------------------------------------------------------------------------------- */

uint32_t cache_now(const struct cache *c)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)(ts.tv_sec - c->start_sec) + 2u +
	       atomic_load_explicit(&c->time_offset, RELAXED);
}

/* cache_now(), published as the cache's tick (one store per second at most). */
static inline uint32_t clock_tick(struct cache *c)
{
	uint32_t now = cache_now(c);
	if (atomic_load_explicit(&c->tick, RELAXED) != now)
		atomic_store_explicit(&c->tick, now, RELAXED);
	return now;
}

void cache_time_advance(struct cache *c, uint32_t seconds)
{
	atomic_fetch_add_explicit(&c->time_offset, seconds, RELEASE);
}

/* memcached's realtime(): exptime convention -> cache_now() units (0 = never). */
static uint32_t rel_time(const struct cache *c, int64_t e)
{
	if (e == 0)
		return 0;
	if (e < 0)
		return 1; /* already expired: cache_now() >= 2 */
	if (e > CACHE_REALTIME_MAXDELTA) {
		if (e <= c->start_unix)
			return 1;
		int64_t r = e - c->start_unix + 2;
		return r > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)r;
	}
	uint64_t r = (uint64_t)cache_now(c) + (uint64_t)e;
	return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

enum { LIVE, EXPIRED, FLUSHED };

static inline int item_state(const struct cache *c, const struct item *it)
{
	if (it->cas <= atomic_load_explicit(&c->oldest_cas, ACQUIRE))
		return FLUSHED;
	uint32_t fa = atomic_load_explicit(&c->flush_at, ACQUIRE);
	uint32_t e = atomic_load_explicit(&it->exptime, RELAXED);
	if (TSYNC_LIKELY(fa == 0 && e == 0))
		return LIVE;
	uint32_t now = cache_now(c);
	if (fa && it->time < fa && now >= fa)
		return FLUSHED;
	if (e && e <= now)
		return EXPIRED;
	return LIVE;
}

/* ---- names ------------------------------------------------------------------------------ */

const char *cache_status_name(enum cache_status s)
{
	switch (s) {
	case CACHE_OK: return "OK";
	case CACHE_STORED: return "STORED";
	case CACHE_NOT_STORED: return "NOT_STORED";
	case CACHE_EXISTS: return "EXISTS";
	case CACHE_NOT_FOUND: return "NOT_FOUND";
	case CACHE_TOO_LARGE: return "TOO_LARGE";
	case CACHE_NO_MEMORY: return "NO_MEMORY";
	case CACHE_NON_NUMERIC: return "NON_NUMERIC";
	case CACHE_BAD_KEY: return "BAD_KEY";
	case CACHE_BUF_SMALL: return "BUF_SMALL";
	}
	return "UNKNOWN";
}

static const char *const variant_names[] = {"ps", "ps-nocrp", "mcs-clock", "locked"};

const char *cache_variant_name(enum cache_variant v)
{
	if ((unsigned)v >= sizeof variant_names / sizeof variant_names[0])
		return NULL;
	return variant_names[v];
}

int cache_variant_parse(const char *name, enum cache_variant *out)
{
	for (unsigned i = 0; i < sizeof variant_names / sizeof variant_names[0]; i++)
		if (name && strcmp(name, variant_names[i]) == 0) {
			*out = (enum cache_variant)i;
			return 0;
		}
	return -1;
}

/* ---- stripe locks ----------------------------------------------------------------------- */

static inline struct stripe *stripe_of(struct cache *c, uint64_t hash)
{
	return &c->stripes[hash & c->smask];
}

static inline void stripe_lock(struct cache *c, struct stripe *s, struct mcs_node *n)
{
	switch (c->cfg.variant) {
	case CACHE_MCS_CLOCK: mcs_lock(&s->u.m, n); break;
	case CACHE_LOCKED: pthread_mutex_lock(&s->u.x); break;
	default: tlock_lock(&s->u.t); break;
	}
}

static inline bool stripe_trylock(struct cache *c, struct stripe *s, struct mcs_node *n)
{
	switch (c->cfg.variant) {
	case CACHE_MCS_CLOCK: return mcs_trylock(&s->u.m, n);
	case CACHE_LOCKED: return pthread_mutex_trylock(&s->u.x) == 0;
	default: return tlock_trylock(&s->u.t);
	}
}

static inline void stripe_unlock(struct cache *c, struct stripe *s, struct mcs_node *n)
{
	switch (c->cfg.variant) {
	case CACHE_MCS_CLOCK: mcs_unlock(&s->u.m, n); break;
	case CACHE_LOCKED: pthread_mutex_unlock(&s->u.x); break;
	default: tlock_unlock(&s->u.t); break;
	}
}

/* ---- lists: CLOCK (ps, mcs-clock) and LRU (locked) -------------------------------------- */

static inline bool has_list(const struct cache *c)
{
	return c->cfg.variant != CACHE_PS_NOCRP;
}

static inline struct plist *list_of(struct cache *c, uint64_t hash)
{
	/* The top bits: independent of the bucket and stripe (low) bits. */
	return &c->lists[(hash >> 58) & (c->nlists - 1)];
}

static inline void plist_lock(struct cache *c, struct plist *l)
{
	if (c->cfg.variant == CACHE_LOCKED)
		pthread_mutex_lock(&l->x);
	else
		tlock_lock(&l->t);
}

static inline void plist_unlock(struct cache *c, struct plist *l)
{
	if (c->cfg.variant == CACHE_LOCKED)
		pthread_mutex_unlock(&l->x);
	else
		tlock_unlock(&l->t);
}

/*
 * GreedyDual-Size-Frequency (Cao and Irani, USITS 1997; Cherkasova, HP Labs 1998) with a
 * uniform miss cost: an item's priority is the list's inflation L at its last access plus
 * its frequency times a credit inversely proportional to the memory it is charged, and
 * eviction takes the lowest priority. Small items keep more credit, so at equal memory
 * the cache keeps more of them; frequently used ones keep more, so a hot large item
 * outlives cold ones; L rises to each victim's priority, so an item not accessed for a
 * while ages out whatever its size. The frequency is counted by the CLOCK hand: the
 * number of its passes that found the reference bit set, from 1 at the store.
 */
#define GDS_SCALE (1ull << 32)
#define GDS_FREQ_MAX 15u

static inline bool gdsf(const struct cache *c)
{
	return c->cfg.evict_policy == CACHE_EVICT_GDSF && c->cfg.variant != CACHE_LOCKED;
}

static inline uint64_t gds_priority(const struct cache *c, const struct plist *l,
				    const struct item *it)
{
	return l->inflation + it->freq * c->cls[it->cls].credit;
}

static inline struct ring *ring_of(struct cache *c, struct plist *l, const struct item *it)
{
	return &l->r[c->cls[it->cls].band];
}

/* Insert: LRU at the head (most recent); CLOCK just behind the hand (visited last), so
 * the hand meets a ring's items oldest first - and under GreedyDual-Size-Frequency those
 * of lowest priority, as priorities within a band grow with L at their last access. */
static void list_insert_locked(struct cache *c, struct plist *l, struct item *it)
{
	struct ring *r = ring_of(c, l, it);
	it->freq = 1;
	it->prio = gds_priority(c, l, it);
	if (r->hand == NULL) {
		it->lprev = it->lnext = it;
		r->hand = it;
	} else {
		struct item *h = r->hand;
		it->lnext = h;
		it->lprev = h->lprev;
		h->lprev->lnext = it;
		h->lprev = it;
		if (c->cfg.variant == CACHE_LOCKED)
			r->hand = it;
	}
	r->n++;
}

static void list_remove_locked(struct cache *c, struct plist *l, struct item *it)
{
	struct ring *r = ring_of(c, l, it);
	if (it->lnext == it) {
		r->hand = NULL;
	} else {
		it->lprev->lnext = it->lnext;
		it->lnext->lprev = it->lprev;
		if (r->hand == it)
			r->hand = it->lnext;
	}
	it->lprev = it->lnext = NULL;
	r->n--;
}

/* new replaces old (same list: same hash): CLOCK in old's place when both are in one
 * ring; otherwise (the LRU, or another size band) it is inserted as new. */
static void list_replace_locked(struct cache *c, struct plist *l, struct item *old,
				struct item *nw)
{
	struct ring *r = ring_of(c, l, old);
	if (c->cfg.variant == CACHE_LOCKED || r != ring_of(c, l, nw)) {
		list_remove_locked(c, l, old);
		list_insert_locked(c, l, nw);
		return;
	}
	nw->freq = 1;
	nw->prio = gds_priority(c, l, nw);
	if (old->lnext == old) {
		nw->lprev = nw->lnext = nw;
	} else {
		nw->lprev = old->lprev;
		nw->lnext = old->lnext;
		old->lprev->lnext = nw;
		old->lnext->lprev = nw;
	}
	if (r->hand == old)
		r->hand = nw;
	old->lprev = old->lnext = NULL;
}

/* locked: move to the LRU head. Caller holds the item's stripe lock (I1). */
static void lru_bump(struct cache *c, struct item *it)
{
	struct plist *l = &c->lists[0];
	pthread_mutex_lock(&l->x);
	if (l->r[0].hand != it) {
		list_remove_locked(c, l, it);
		list_insert_locked(c, l, it);
	}
	pthread_mutex_unlock(&l->x);
}

/* ---- memory ----------------------------------------------------------------------------- */

/*
 * Memory accounting (docs/cached.md, "Memory"). An item's charge is taken when it is
 * allocated and given back when ps_mem makes its memory reusable - not when it is freed:
 * between the two it is garbage waiting for a grace period, and it still occupies slab
 * memory. So mem_used (live + garbage) <= mem_limit bounds the item memory, whatever the
 * readers do; a stalled section makes stores wait or fail, never the memory grow.
 */

/* ps_free an item whose charge becomes garbage until its reclamation. */
static inline void item_retire(struct cache *c, struct item *it)
{
	atomic_fetch_sub_explicit(&c->cls[it->cls].requested, ITEM_HDR + it->nkey + it->nbytes,
				  RELAXED);
	atomic_fetch_add_explicit(&c->mem_garbage, c->cls[it->cls].charge, RELAXED);
	ps_free(c->cls[it->cls].mem, it);
}

/* ps_mem's reclamation observer: `collected` objects of one class became reusable. */
static void on_reclaim(struct ps_mem *m, const struct ps_mem_reclaim_info *info, void *arg)
{
	(void)m;
	const struct sclass *k = arg;
	if (info->collected == 0)
		return;
	uint64_t b = info->collected * k->charge;
	atomic_fetch_sub_explicit(&k->owner->mem_garbage, b, RELAXED);
	atomic_fetch_sub_explicit(&k->owner->mem_used, b, RELAXED);
}

/* Free an unlinked item: ps variants defer reuse through ParSec (I3); the refcounted
 * variants drop the table's reference. */
static void item_drop(struct cache *c, struct item *it)
{
	if (is_ps(c)) {
		item_retire(c, it);
		return;
	}
	if (atomic_fetch_sub_explicit(&it->refcount, 1, ACQ_REL) == 1)
		item_retire(c, it);
}

/* item_drop for an item found expired or flushed: counted as reclaimed, in all and in
 * its class (read before the drop: a refcounted variant may free it at once). */
static void item_drop_dead(struct cache *c, struct item *it)
{
	atomic_fetch_add_explicit(&c->cls[it->cls].reclaimed, 1, RELAXED);
	ST_INC(c, S_RECLAIMED);
	item_drop(c, it);
}

size_t cache_reclaim(struct cache *c)
{
	size_t n = 0;
	for (unsigned i = 0; i < c->nclasses; i++)
		n += ps_mem_reclaim(c->cls[i].mem);
	return n;
}

static bool evict_one(struct cache *c, unsigned *cls);

/* Garbage above mem_limit / GARBAGE_SHARE stops eviction: evicting a live item then only
 * adds garbage, so a store waits for grace periods instead of emptying the cache. */
#define GARBAGE_SHARE 8u
#define RESERVE_NAP_NS 50000L
/* Rounds (a reclamation, then sched_yield) a store waits for the grace period of the
 * items it evicted before it evicts again; a round is about a microsecond when no other
 * thread is runnable, a time slice when one is (docs/cached.md, "Memory"). */
#define VICTIM_WAIT_ROUNDS 64u

/* Reclaim the caller's garbage of the classes in mask (bit i: class i). */
static size_t reclaim_classes(struct cache *c, uint64_t mask)
{
	size_t n = 0;
	for (; mask; mask &= mask - 1)
		n += ps_mem_reclaim(c->cls[__builtin_ctzll(mask)].mem);
	return n;
}

/*
 * Reserve n bytes under mem_limit. An evicted item's charge comes back only when its
 * grace period has passed (it is garbage until then), so a store evicts only until its
 * victims' charge covers n, then waits for their grace period - reclaiming their classes
 * and yielding, at most VICTIM_WAIT_ROUNDS rounds - instead of evicting more live items
 * for memory that is about to return; only a grace period that long makes it evict
 * again. Callers that may not wait (holding a stripe lock) or cannot (inside a section,
 * which holds their own garbage back) evict without waiting. Garbage above mem_limit /
 * GARBAGE_SHARE stops eviction altogether (a section holds grace periods back): then
 * the store reclaims the caller's own garbage and, with may_wait, outside any section,
 * and while garbage exists that could be released, naps and retries until
 * cfg.mem_wait_ms has passed.
 */
static bool mem_reserve(struct cache *c, uint64_t n, bool may_wait)
{
	unsigned fails = 0, rounds = 0;
	uint64_t deadline = 0, evicted = 0, victims = 0;
	bool wait_victims = may_wait && !ps_in_section(c->ps);
	for (;;) {
		uint64_t u = atomic_load_explicit(&c->mem_used, RELAXED);
		while (u + n <= c->cfg.mem_limit)
			if (atomic_compare_exchange_weak_explicit(&c->mem_used, &u, u + n, RELAXED,
								  RELAXED))
				return true;
		if (victims && reclaim_classes(c, victims) > 0)
			continue;
		if (wait_victims && evicted >= n) {
			if (++rounds <= VICTIM_WAIT_ROUNDS) {
				sched_yield();
				continue;
			}
			evicted = 0; /* a long grace period: evict again */
		}
		rounds = 0;
		uint64_t g = atomic_load_explicit(&c->mem_garbage, RELAXED);
		if (has_list(c) && !c->cfg.no_evict && g <= c->cfg.mem_limit / GARBAGE_SHARE) {
			unsigned k;
			if (evict_one(c, &k)) {
				evicted += c->cls[k].charge;
				victims |= 1ull << k;
				continue;
			}
			/* Nothing evictable now (items locked by others, or all memory held by
			 * unfinished stores): retry a few times. */
			if (++fails <= 8) {
				sched_yield();
				continue;
			}
		}
		if (cache_reclaim(c) > 0)
			continue;
		if (g == 0 || !may_wait || c->cfg.mem_wait_ms < 0 || ps_in_section(c->ps))
			return false;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
		if (deadline == 0)
			deadline = t + (uint64_t)c->cfg.mem_wait_ms * 1000000u;
		else if (t >= deadline)
			return false;
		struct timespec nap = {0, RESERVE_NAP_NS};
		nanosleep(&nap, NULL);
		fails = 0;
	}
}

static int class_of(const struct cache *c, size_t total)
{
	for (unsigned i = 0; i < c->nclasses; i++)
		if (c->cls[i].size >= total)
			return (int)i;
	return -1;
}

/* A new, unpublished item of total value length nbytes (key copied, value not). */
/* memcached's item_size_ok: its header, the CAS, the key's NUL, the flags if not 0 and the
 * value's "\r\n" count against -I; so the largest value that fits is memcached's. */
static inline bool size_ok(const struct cache *c, size_t nkey, size_t nbytes, uint32_t flags)
{
	return MC_ITEM_HDR + 8 + nkey + 1 + (flags ? 4 : 0) + nbytes + 2 <= c->cfg.item_size_max;
}

static enum cache_status item_alloc(struct cache *c, uint64_t hash, const void *key,
				    size_t nkey, size_t nbytes, uint32_t flags, bool may_wait,
				    struct item **out)
{
	size_t total = ITEM_HDR + nkey + nbytes;
	if (!size_ok(c, nkey, nbytes, flags) || nbytes > UINT32_MAX)
		return CACHE_TOO_LARGE;
	int k = class_of(c, total);
	if (k < 0)
		return CACHE_TOO_LARGE;
	if (!mem_reserve(c, c->cls[k].charge, may_wait))
		return CACHE_NO_MEMORY;
	struct item *it = ps_alloc(c->cls[k].mem);
	if (it == NULL) {
		atomic_fetch_sub_explicit(&c->mem_used, c->cls[k].charge, RELAXED);
		return CACHE_NO_MEMORY;
	}
	atomic_store_explicit(&it->hnext, NULL, RELAXED);
	it->lprev = it->lnext = NULL;
	it->hash = hash;
	it->cas = 0;
	atomic_store_explicit(&it->exptime, 0, RELAXED);
	it->time = 0;
	it->flags = 0;
	it->nbytes = (uint32_t)nbytes;
	atomic_store_explicit(&it->refcount, 1, RELAXED);
	atomic_store_explicit(&it->refbit, 0, RELAXED);
	it->nkey = (uint8_t)nkey;
	it->cls = (uint8_t)k;
	atomic_store_explicit(&it->mflags, 0, RELAXED);
	atomic_store_explicit(&it->atime, atomic_load_explicit(&c->tick, RELAXED), RELAXED);
	memcpy(it->data, key, nkey);
	atomic_fetch_add_explicit(&c->cls[k].requested, total, RELAXED);
	*out = it;
	return CACHE_OK;
}

/* ---- hash table ------------------------------------------------------------------------- */

static inline uint64_t key_hash(const void *key, size_t nkey)
{
	return XXH3_64bits(key, nkey);
}

static inline bool key_ok(size_t nkey)
{
	return nkey >= 1 && nkey <= CACHE_KEY_MAX;
}

static inline bool item_is(const struct item *it, uint64_t h, const void *key, size_t nkey)
{
	return it->hash == h && it->nkey == nkey && memcmp(it->data, key, nkey) == 0;
}

static inline struct item *chain_find(struct item *_Atomic *head, uint64_t h, const void *key,
				      size_t nkey)
{
	for (struct item *it = atomic_load_explicit(head, ACQUIRE); it;
	     it = atomic_load_explicit(&it->hnext, ACQUIRE))
		if (item_is(it, h, key, nkey))
			return it;
	return NULL;
}

/*
 * Lock-free lookup (ps variants, inside a section; the others, under the stripe lock).
 * Load tab, then old; search old, then tab. The grower stores old before tab, links an
 * item into the new table before unlinking it from the old one, and waits a grace period
 * between publishing the new table and moving anything: so an item linked throughout the
 * lookup is found (docs/cached.md, "Growth").
 */
static inline struct item *lookup(struct cache *c, uint64_t h, const void *key, size_t nkey)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	struct table *o = atomic_load_explicit(&c->old, ACQUIRE);
	struct item *it = NULL;
	if (TSYNC_UNLIKELY(o != NULL))
		it = chain_find(&o->b[h & o->mask], h, key, nkey);
	if (it == NULL)
		it = chain_find(&t->b[h & t->mask], h, key, nkey);
	return it;
}

/* Under the stripe lock: find the item and the link that points to it. */
static struct item *find_locked(struct cache *c, uint64_t h, const void *key, size_t nkey,
				struct item *_Atomic **pp_out)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	struct table *o = atomic_load_explicit(&c->old, ACQUIRE);
	struct table *tabs[2] = {o, t};
	for (int i = 0; i < 2; i++) {
		if (tabs[i] == NULL)
			continue;
		struct item *_Atomic *pp = &tabs[i]->b[h & tabs[i]->mask];
		for (struct item *it = atomic_load_explicit(pp, RELAXED); it;
		     pp = &it->hnext, it = atomic_load_explicit(pp, RELAXED))
			if (item_is(it, h, key, nkey)) {
				*pp_out = pp;
				return it;
			}
	}
	return NULL;
}

/* Under the stripe lock: the link pointing to `target` (which must be hashed, I1). */
static struct item *_Atomic *find_link(struct cache *c, const struct item *target)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	struct table *o = atomic_load_explicit(&c->old, ACQUIRE);
	struct table *tabs[2] = {o, t};
	for (int i = 0; i < 2; i++) {
		if (tabs[i] == NULL)
			continue;
		struct item *_Atomic *pp = &tabs[i]->b[target->hash & tabs[i]->mask];
		for (struct item *it = atomic_load_explicit(pp, RELAXED); it;
		     pp = &it->hnext, it = atomic_load_explicit(pp, RELAXED))
			if (it == target)
				return pp;
	}
	return NULL;
}

/* Under the stripe lock: unlink from the chain and the list (I1). The item's own hnext is
 * kept, so a reader standing on it continues down the chain. */
static void unlink_locked(struct cache *c, struct item *it, struct item *_Atomic *pp)
{
	atomic_store_explicit(pp, atomic_load_explicit(&it->hnext, RELAXED), RELEASE);
	if (has_list(c)) {
		struct plist *l = list_of(c, it->hash);
		plist_lock(c, l);
		list_remove_locked(c, l, it);
		plist_unlock(c, l);
	}
	st_add(c, S_LINKED, (uint64_t)-1);
}

static void maybe_grow(struct cache *c);

/*
 * Under the stripe lock: publish nw, replacing old (found at *pp) if non-NULL. nw is
 * fully initialised; the release store that makes it reachable orders those stores
 * before any reader's acquire load that finds it (I3).
 */
static void link_locked(struct cache *c, struct item *nw, struct item *old,
			struct item *_Atomic *pp)
{
	nw->cas = atomic_fetch_add_explicit(&c->cas_next, 1, RELAXED) + 1;
	if (!is_ps(c))
		atomic_store_explicit(&nw->refcount, 1, RELAXED);
	if (old) {
		/* In place, in whichever table holds old (the grower cannot be moving this
		 * bucket: we hold its stripe): one store swaps old for nw; readers standing on
		 * old continue past it. */
		atomic_store_explicit(&nw->hnext, atomic_load_explicit(&old->hnext, RELAXED),
				      RELAXED);
		atomic_store_explicit(pp, nw, RELEASE);
	} else {
		struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
		struct item *_Atomic *head = &t->b[nw->hash & t->mask];
		atomic_store_explicit(&nw->hnext, atomic_load_explicit(head, RELAXED), RELAXED);
		atomic_store_explicit(head, nw, RELEASE);
	}
	if (has_list(c)) {
		struct plist *l = list_of(c, nw->hash);
		plist_lock(c, l);
		if (old)
			list_replace_locked(c, l, old, nw);
		else
			list_insert_locked(c, l, nw);
		plist_unlock(c, l);
	}
	ST_INC(c, S_TOTAL_ITEMS);
	if (!old) {
		st_add(c, S_LINKED, 1);
		ST_INC(c, S_ADDS);
	}
}

/* ---- eviction --------------------------------------------------------------------------- */

/* Under l's lock: try to evict victim (I1, I4). Returns true if it was removed. */
static bool try_evict_locked(struct cache *c, struct plist *l, struct item *v)
{
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, v->hash);
	if (!stripe_trylock(c, s, &qn))
		return false;
	struct item *_Atomic *pp = find_link(c, v);
	if (pp == NULL) { /* cannot happen by I1; be safe */
		stripe_unlock(c, s, &qn);
		return false;
	}
	atomic_store_explicit(pp, atomic_load_explicit(&v->hnext, RELAXED), RELEASE);
	list_remove_locked(c, l, v);
	stripe_unlock(c, s, &qn);
	st_add(c, S_LINKED, (uint64_t)-1);
	if (item_state(c, v) == LIVE) {
		ST_INC(c, S_EVICTIONS);
		atomic_fetch_add_explicit(&c->cls[v->cls].evicted, 1, RELAXED);
		if (c->cfg.evict_fn) {
			uint32_t now = cache_now(c);
			uint32_t e = atomic_load_explicit(&v->exptime, RELAXED);
			uint32_t at = atomic_load_explicit(&v->atime, RELAXED);
			struct cache_evicted ev = {
			    .key = v->data, .nkey = v->nkey, .nbytes = v->nbytes, .cls = v->cls,
			    .fetched = (atomic_load_explicit(&v->mflags, RELAXED) & M_FETCHED) != 0,
			    .ttl = e == 0 ? -1 : (e > now ? (int64_t)(e - now) : 0),
			    .idle = now > at ? now - at : 0};
			c->cfg.evict_fn(c->cfg.evict_arg, &ev);
		}
		item_drop(c, v);
	} else {
		item_drop_dead(c, v);
	}
	return true;
}

/*
 * Evict one item from the lists, visited round-robin from a per-thread cursor, so that
 * every list gives up items at the same rate whatever the keys being stored hash to (the
 * list of the key being stored would make a large store empty one small list). Returns
 * false if no list had an evictable item; *cls: the victim's class.
 * LRU (locked): from the tail.
 * CLOCK (ParSec (EuroSys 2016) §5.2): the hand moves past items whose reference bit is
 * set, clearing it, and evicts the first whose bit is clear.
 * GreedyDual-Size-Frequency over CLOCK rings: in each size band's ring the hand moves
 * past referenced items, clearing the bit, counting the use and renewing the priority
 * (an access is accounted lazily, when the hand passes, so a get stores nothing but the
 * bit). The first unreferenced item whose priority is at most L is overdue and goes at
 * once. Otherwise the hand collects evict_window unreferenced items from each band, the
 * one of lowest priority goes and L rises to it: the oldest items of each band stand for
 * their band, so the comparison sees every size however rare. Items the hand passed stay
 * where they are, for its next round.
 */
#define EVICT_WINDOW_MAX 16u

/* Evict the candidate of lowest priority (the next if its stripe is busy); over_l: an
 * item that beats no overdue one, so L rises to it. */
static bool evict_lowest(struct cache *c, struct plist *l, struct item **cand, unsigned nc,
			 bool over_l, unsigned *cls)
{
	while (nc > 0) {
		unsigned m = 0;
		for (unsigned i = 1; i < nc; i++)
			if (cand[i]->prio < cand[m]->prio)
				m = i;
		struct item *v = cand[m];
		uint64_t p = v->prio;
		*cls = v->cls; /* read before the eviction frees it */
		if (try_evict_locked(c, l, v)) {
			if (over_l && p > l->inflation)
				l->inflation = p;
			return true;
		}
		cand[m] = cand[--nc];
	}
	return false;
}

static bool evict_clock_locked(struct cache *c, struct plist *l, unsigned *cls)
{
	struct item *cand[EVICT_BANDS * EVICT_WINDOW_MAX], *due[EVICT_BANDS];
	unsigned nc = 0, nd = 0, want = gdsf(c) ? c->cfg.evict_window : 1;
	for (unsigned b = 0; b < EVICT_BANDS; b++) {
		struct ring *r = &l->r[b];
		unsigned got = 0;
		uint64_t steps = r->n; /* one round: what it clears waits for the next pass */
		struct item *first = NULL;
		while (r->hand && steps-- && got < want) {
			struct item *v = r->hand;
			if (atomic_load_explicit(&v->refbit, RELAXED)) {
				atomic_store_explicit(&v->refbit, 0, RELAXED);
				if (v->freq < GDS_FREQ_MAX)
					v->freq++;
				v->prio = gds_priority(c, l, v);
				r->hand = v->lnext;
				continue;
			}
			if (!gdsf(c) || v->prio <= l->inflation) {
				/* CLOCK's victim / overdue: the hand stays on it */
				due[nd++] = v;
				break;
			}
			r->hand = v->lnext;
			if (v == first)
				break; /* every item of the ring is a candidate already */
			if (first == NULL)
				first = v;
			cand[nc++] = v;
			got++;
		}
	}
	if (nd > 0 && evict_lowest(c, l, due, nd, false, cls))
		return true;
	return evict_lowest(c, l, cand, nc, true, cls);
}

static bool evict_one(struct cache *c, unsigned *cls)
{
	static _Thread_local unsigned cursor;
	unsigned start = cursor++;
	/* Two sweeps: when every list's items were referenced, the first clears their bits. */
	for (unsigned k = 0; k < 2 * c->nlists; k++) {
		struct plist *l = &c->lists[(start + k) & (c->nlists - 1)];
		plist_lock(c, l);
		bool done = false;
		if (c->cfg.variant == CACHE_LOCKED) {
			struct item *v = l->r[0].hand ? l->r[0].hand->lprev : NULL;
			for (unsigned tries = 0; v && tries < 50 && !done; tries++) {
				struct item *prev = v->lprev;
				*cls = v->cls;
				done = try_evict_locked(c, l, v);
				if (prev == v)
					break;
				v = prev;
			}
		} else {
			done = evict_clock_locked(c, l, cls);
		}
		plist_unlock(c, l);
		if (done)
			return true;
	}
	return false;
}

/* ---- reads ------------------------------------------------------------------------------ */

static inline void fill_ref(const struct cache *c, struct cache_ref *ref, struct item *it,
			    bool update)
{
	ref->value = item_value(it);
	ref->nbytes = it->nbytes;
	ref->flags = it->flags;
	ref->cas = it->cas;
	uint32_t e = atomic_load_explicit(&it->exptime, RELAXED);
	if (e == 0) {
		ref->exptime = 0;
	} else {
		int64_t left = (int64_t)e - (int64_t)cache_now(c);
		ref->exptime = left > 0 ? left : 1;
	}
	ref->item_ = it;
	/* Access tracking (mg h, mg l): the fetched bit is stored once per item, the access
	 * time at most once per tick (a second); both only when they change. */
	uint8_t f = atomic_load_explicit(&it->mflags, RELAXED);
	ref->hit_before = (f & M_FETCHED) != 0;
	ref->key_binary = (f & M_KEYB) != 0;
	if (update && !(f & M_FETCHED))
		atomic_fetch_or_explicit(&it->mflags, M_FETCHED, RELAXED);
	uint32_t now = atomic_load_explicit(&c->tick, RELAXED);
	uint32_t at = atomic_load_explicit(&it->atime, RELAXED);
	ref->idle = now > at ? now - at : 0;
	if (update && at != now)
		atomic_store_explicit(&it->atime, now, RELAXED);
}

static inline void count_state(struct cache *c, int st)
{
	ST_INC(c, S_GET_MISSES);
	if (st == EXPIRED)
		ST_INC(c, S_GET_EXPIRED);
	else if (st == FLUSHED)
		ST_INC(c, S_GET_FLUSHED);
}

/* update: a normal read (fetched bit, access time, CLOCK/LRU reference); false for
 * meta's no-update flag (mg u), which reads the item and leaves its state alone. */
static inline enum cache_status get_impl(struct cache *c, const void *key, size_t nkey,
					 struct cache_ref *ref, bool update)
{
	if (TSYNC_UNLIKELY(!key_ok(nkey)))
		return CACHE_BAD_KEY;
	uint64_t h = key_hash(key, nkey);
	if (is_ps(c)) {
		ps_enter(c->ps);
		struct item *it = lookup(c, h, key, nkey);
		int st = it ? item_state(c, it) : LIVE;
		if (it && st == LIVE) {
			/* The only store of a get: once per CLOCK period, to the item's line. */
			if (update && c->cfg.variant == CACHE_PS &&
			    !atomic_load_explicit(&it->refbit, RELAXED))
				atomic_store_explicit(&it->refbit, 1, RELAXED);
			fill_ref(c, ref, it, update);
			ST_INC(c, S_GET_HITS);
			return CACHE_OK; /* the section stays open until cache_release */
		}
		ps_exit(c->ps);
		if (it)
			count_state(c, st);
		else
			ST_INC(c, S_GET_MISSES);
		return CACHE_NOT_FOUND;
	}
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, h);
	stripe_lock(c, s, &qn);
	struct item *_Atomic *pp;
	struct item *it = find_locked(c, h, key, nkey, &pp);
	int st = it ? item_state(c, it) : LIVE;
	if (it && st == LIVE) {
		atomic_fetch_add_explicit(&it->refcount, 1, RELAXED);
		if (!update)
			;
		else if (c->cfg.variant == CACHE_LOCKED)
			lru_bump(c, it);
		else if (!atomic_load_explicit(&it->refbit, RELAXED))
			atomic_store_explicit(&it->refbit, 1, RELAXED);
		stripe_unlock(c, s, &qn);
		fill_ref(c, ref, it, update);
		ST_INC(c, S_GET_HITS);
		return CACHE_OK;
	}
	if (it) /* lazy expiry: memcached unlinks what a get finds dead */
		unlink_locked(c, it, pp);
	stripe_unlock(c, s, &qn);
	if (it) {
		item_drop_dead(c, it);
		count_state(c, st);
	} else {
		ST_INC(c, S_GET_MISSES);
	}
	return CACHE_NOT_FOUND;
}

enum cache_status cache_get(struct cache *c, const void *key, size_t nkey,
			    struct cache_ref *ref)
{
	return get_impl(c, key, nkey, ref, true);
}

void cache_release(struct cache *c, struct cache_ref *ref)
{
	if (is_ps(c)) {
		ps_exit(c->ps);
	} else {
		struct item *it = ref->item_;
		if (atomic_fetch_sub_explicit(&it->refcount, 1, ACQ_REL) == 1)
			item_retire(c, it);
	}
	ref->item_ = NULL;
	ref->value = NULL;
}

enum cache_status cache_get_copy(struct cache *c, const void *key, size_t nkey, void *buf,
				 size_t cap, uint32_t *nbytes, uint32_t *flags, uint64_t *cas)
{
	struct cache_ref r;
	enum cache_status st = cache_get(c, key, nkey, &r);
	if (st != CACHE_OK)
		return st;
	if (nbytes)
		*nbytes = r.nbytes;
	if (r.nbytes > cap) {
		cache_release(c, &r);
		return CACHE_BUF_SMALL;
	}
	memcpy(buf, r.value, r.nbytes);
	if (flags)
		*flags = r.flags;
	if (cas)
		*cas = r.cas;
	cache_release(c, &r);
	return CACHE_OK;
}

/* Under the stripe lock: the live item for key, unlinking (and collecting in *dead) a
 * dead one met on the way. */
static struct item *find_live_locked(struct cache *c, uint64_t h, const void *key,
				     size_t nkey, struct item *_Atomic **pp,
				     struct item **dead)
{
	struct item *it = find_locked(c, h, key, nkey, pp);
	*dead = NULL;
	if (it && item_state(c, it) != LIVE) {
		unlink_locked(c, it, *pp);
		*dead = it;
		it = NULL;
	}
	return it;
}

static void drop_dead(struct cache *c, struct item *dead)
{
	if (dead)
		item_drop_dead(c, dead);
}

/*
 * gat and touch: find key's live item under its stripe lock and set its exptime. With
 * take_ref, also pin it as cache_get does (ps variants: enter the section before
 * unlocking - while we hold the lock nobody can free it; others: a reference count) and
 * mark it referenced for the replacement policy; without, only LOCKED's LRU position
 * moves. Counts the touch; returns the item or NULL, with the stripe unlocked.
 */
static struct item *touch_item(struct cache *c, const void *key, size_t nkey, int64_t exptime,
			       bool take_ref)
{
	uint64_t h = key_hash(key, nkey);
	uint32_t e = rel_time(c, exptime);
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, h);
	struct item *_Atomic *pp, *dead;
	ST_INC(c, S_CMD_TOUCH);
	stripe_lock(c, s, &qn);
	struct item *it = find_live_locked(c, h, key, nkey, &pp, &dead);
	if (it) {
		atomic_store_explicit(&it->exptime, e, RELAXED);
		if (!take_ref) {
			/* memcached's touch is an access: the item counts as fetched (mg h) */
			if (!(atomic_load_explicit(&it->mflags, RELAXED) & M_FETCHED))
				atomic_fetch_or_explicit(&it->mflags, M_FETCHED, RELAXED);
			if (c->cfg.variant == CACHE_LOCKED)
				lru_bump(c, it);
		} else if (is_ps(c)) {
			ps_enter(c->ps);
			if (c->cfg.variant == CACHE_PS)
				atomic_store_explicit(&it->refbit, 1, RELAXED);
		} else {
			atomic_fetch_add_explicit(&it->refcount, 1, RELAXED);
			if (c->cfg.variant == CACHE_LOCKED)
				lru_bump(c, it);
			else
				atomic_store_explicit(&it->refbit, 1, RELAXED);
		}
	}
	stripe_unlock(c, s, &qn);
	drop_dead(c, dead);
	ST_INC(c, it ? S_TOUCH_HITS : S_TOUCH_MISSES);
	return it;
}

/* update false: mg u T, which sets the TTL without marking the item fetched */
static enum cache_status gat_impl(struct cache *c, const void *key, size_t nkey,
				  int64_t exptime, struct cache_ref *ref, bool update)
{
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	struct item *it = touch_item(c, key, nkey, exptime, true);
	if (it) {
		fill_ref(c, ref, it, update);
		ST_INC(c, S_GET_HITS);
		return CACHE_OK;
	}
	ST_INC(c, S_GET_MISSES);
	return CACHE_NOT_FOUND;
}

enum cache_status cache_gat(struct cache *c, const void *key, size_t nkey, int64_t exptime,
			    struct cache_ref *ref)
{
	return gat_impl(c, key, nkey, exptime, ref, true);
}

enum cache_status cache_peek(struct cache *c, const void *key, size_t nkey,
			     struct cache_ref *ref)
{
	return get_impl(c, key, nkey, ref, false);
}

/* ---- updates ---------------------------------------------------------------------------- */

/* store_impl's xflags: the new item's initial M_* bits (not for APPEND/PREPEND), and: */
#define STORE_INVALIDATING 0x100u /* CAS: an older cas_in stores a stale item instead */

/* cache_store, with the meta protocol's extras (xflags). */
static enum cache_status store_impl(struct cache *c, enum cache_store_op op, const void *key,
				    size_t nkey, const void *data, size_t nbytes, uint32_t flags,
				    int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				    unsigned xflags)
{
	uint8_t mflags = (uint8_t)(xflags & 0xffu);
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	if (op == CACHE_SET && cas_in != 0)
		op = CACHE_CAS;
	ST_INC(c, S_CMD_SET);
	uint64_t h = key_hash(key, nkey);
	uint32_t e = rel_time(c, exptime);
	bool concat = op == CACHE_APPEND || op == CACHE_PREPEND;
	struct item *nw = NULL;
	enum cache_status st;
	if (!concat) {
		/* Allocate and fill before taking the lock: the common path holds it briefly. */
		st = item_alloc(c, h, key, nkey, nbytes, flags, true, &nw);
		if (st != CACHE_OK) {
			ST_INC(c, st == CACHE_TOO_LARGE ? S_TOO_LARGE : S_NO_MEMORY);
			if (op == CACHE_SET) /* memcached: do not keep serving the stale value */
				cache_delete(c, key, nkey, 0);
			if (op == CACHE_CAS)
				ST_INC(c, S_CAS_MISSES);
			return st;
		}
		memcpy(nw->data + nkey, data, nbytes);
		nw->flags = flags;
		atomic_store_explicit(&nw->exptime, e, RELAXED);
		nw->time = clock_tick(c);
		atomic_store_explicit(&nw->atime, nw->time, RELAXED);
		atomic_store_explicit(&nw->mflags, mflags, RELAXED);
	}
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, h);
	struct item *_Atomic *pp, *dead;
	stripe_lock(c, s, &qn);
	struct item *old = find_live_locked(c, h, key, nkey, &pp, &dead);
	st = CACHE_STORED;
	switch (op) {
	case CACHE_SET:
		break;
	case CACHE_ADD:
		if (old) {
			if (c->cfg.variant == CACHE_PS || c->cfg.variant == CACHE_MCS_CLOCK)
				atomic_store_explicit(&old->refbit, 1, RELAXED);
			else if (c->cfg.variant == CACHE_LOCKED)
				lru_bump(c, old);
			st = CACHE_NOT_STORED;
		}
		break;
	case CACHE_REPLACE:
		if (!old)
			st = CACHE_NOT_STORED;
		else if (cas_in && old->cas != cas_in)
			st = CACHE_EXISTS;
		break;
	case CACHE_CAS:
		if (!old) {
			st = CACHE_NOT_FOUND;
			ST_INC(c, S_CAS_MISSES);
		} else if (old->cas != cas_in && (xflags & STORE_INVALIDATING) &&
			   cas_in < old->cas) {
			/* memcached's ms I: a writer with an older view still stores, but
			 * the result is stale, keeps the item's exptime and its token state */
			atomic_store_explicit(
			    &nw->mflags,
			    (uint8_t)(M_STALE | (mflags & M_KEYB) |
				      (atomic_load_explicit(&old->mflags, RELAXED) & M_TOKEN)),
			    RELAXED);
			atomic_store_explicit(&nw->exptime,
					      atomic_load_explicit(&old->exptime, RELAXED), RELAXED);
			ST_INC(c, S_CAS_HITS);
		} else if (old->cas != cas_in) {
			st = CACHE_EXISTS;
			ST_INC(c, S_CAS_BADVAL);
		} else {
			ST_INC(c, S_CAS_HITS);
		}
		break;
	case CACHE_APPEND:
	case CACHE_PREPEND:
		if (!old) {
			st = CACHE_NOT_STORED;
			break;
		}
		if (cas_in && old->cas != cas_in) {
			st = CACHE_EXISTS;
			break;
		}
		st = item_alloc(c, h, key, nkey, (size_t)old->nbytes + nbytes, old->flags, false,
				&nw);
		if (st != CACHE_OK) {
			ST_INC(c, st == CACHE_TOO_LARGE ? S_TOO_LARGE : S_NO_MEMORY);
			nw = NULL;
			break;
		}
		st = CACHE_STORED;
		if (op == CACHE_APPEND) {
			memcpy(nw->data + nkey, item_value(old), old->nbytes);
			memcpy(nw->data + nkey + old->nbytes, data, nbytes);
		} else {
			memcpy(nw->data + nkey, data, nbytes);
			memcpy(nw->data + nkey + nbytes, item_value(old), old->nbytes);
		}
		nw->flags = old->flags;
		atomic_store_explicit(&nw->exptime, atomic_load_explicit(&old->exptime, RELAXED),
				      RELAXED);
		nw->time = old->time;
		break;
	}
	if (st == CACHE_STORED) {
		link_locked(c, nw, old, pp);
		if (cas_out)
			*cas_out = nw->cas;
	}
	stripe_unlock(c, s, &qn);
	drop_dead(c, dead);
	if (st == CACHE_STORED) {
		if (old)
			item_drop(c, old);
		else
			maybe_grow(c);
	} else if (nw) {
		item_retire(c, nw); /* never published: no reader holds it */
	}
	return st;
}

enum cache_status cache_store(struct cache *c, enum cache_store_op op, const void *key,
			      size_t nkey, const void *data, size_t nbytes, uint32_t flags,
			      int64_t exptime, uint64_t cas_in, uint64_t *cas_out)
{
	return store_impl(c, op, key, nkey, data, nbytes, flags, exptime, cas_in, cas_out, 0);
}

enum cache_status cache_store_meta(struct cache *c, enum cache_store_op op, const void *key,
				   size_t nkey, const void *data, size_t nbytes, uint32_t flags,
				   int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				   bool key_binary)
{
	return store_impl(c, op, key, nkey, data, nbytes, flags, exptime, cas_in, cas_out,
			  key_binary ? M_KEYB : 0);
}

enum cache_status cache_cas_invalidating(struct cache *c, const void *key, size_t nkey,
					 const void *data, size_t nbytes, uint32_t flags,
					 int64_t exptime, uint64_t cas_in, uint64_t *cas_out)
{
	return store_impl(c, CACHE_CAS, key, nkey, data, nbytes, flags, exptime, cas_in, cas_out,
			  STORE_INVALIDATING);
}

/* ---- meta protocol: the recache token and invalidation ---------------------------------- */

enum cache_status cache_mget(struct cache *c, const void *key, size_t nkey,
			     struct cache_meta *m, struct cache_ref *ref)
{
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	m->won = m->stale = m->token_sent = m->created = false;
	(void)clock_tick(c); /* a fresh tick: mg l is measured against it */
	for (unsigned tries = 0;; tries++) {
		enum cache_status st = m->touch ? gat_impl(c, key, nkey, m->ttl, ref, !m->no_update)
						: get_impl(c, key, nkey, ref, !m->no_update);
		if (st == CACHE_OK) {
			struct item *it = ref->item_;
			uint8_t f = atomic_load_explicit(&it->mflags, RELAXED);
			m->stale = (f & M_STALE) != 0;
			bool due = m->stale || (m->recache && ref->exptime != 0 &&
						ref->exptime < m->recache_ttl);
			if (f & M_TOKEN)
				m->token_sent = true;
			else if (due)
				/* one winner: the first to set the bit */
				m->won = !(atomic_fetch_or_explicit(&it->mflags, M_TOKEN, ACQ_REL) &
					   M_TOKEN);
			if (due && !m->won)
				m->token_sent = true;
			return CACHE_OK;
		}
		if (st != CACHE_NOT_FOUND || !m->vivify || tries >= 8)
			return st;
		/* Vivify: an empty item, already fetched and with its token handed to us; a
		 * concurrent vivify that added first makes our ADD fail, and the retry finds
		 * its item (token sent: Z). */
		st = store_impl(c, CACHE_ADD, key, nkey, "", 0, 0, m->vivify_ttl, 0, NULL,
				M_FETCHED | M_TOKEN);
		if (st == CACHE_STORED) {
			if (cache_get(c, key, nkey, ref) != CACHE_OK)
				continue; /* evicted or replaced already: look again */
			m->won = true;
			m->token_sent = false;
			m->stale = false;
			ref->hit_before = false; /* created by this request (memcached: h0) */
			m->created = true;
			return CACHE_OK;
		}
		if (st != CACHE_NOT_STORED)
			return st;
	}
}

enum cache_status cache_invalidate(struct cache *c, const void *key, size_t nkey,
				   uint64_t cas_in, bool set_ttl, int64_t exptime)
{
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	uint64_t h = key_hash(key, nkey);
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, h);
	struct item *_Atomic *pp, *dead, *nw = NULL;
	stripe_lock(c, s, &qn);
	struct item *old = find_live_locked(c, h, key, nkey, &pp, &dead);
	enum cache_status st = CACHE_NOT_FOUND;
	if (old && cas_in && old->cas != cas_in) {
		st = CACHE_EXISTS;
	} else if (old) {
		/* A copy, as every update makes (items are immutable once published): same
		 * value, flags and store time, a new CAS id, stale, its token not yet sent. */
		st = item_alloc(c, h, key, nkey, old->nbytes, old->flags, false, &nw);
		if (st == CACHE_OK) {
			memcpy(nw->data + nkey, item_value(old), old->nbytes);
			nw->flags = old->flags;
			atomic_store_explicit(&nw->exptime,
					      set_ttl ? rel_time(c, exptime)
						      : atomic_load_explicit(&old->exptime, RELAXED),
					      RELAXED);
			nw->time = old->time;
			atomic_store_explicit(&nw->atime,
					      atomic_load_explicit(&old->atime, RELAXED), RELAXED);
			atomic_store_explicit(&nw->mflags,
					      (uint8_t)((atomic_load_explicit(&old->mflags, RELAXED) &
							 M_FETCHED) | M_STALE),
					      RELAXED);
			link_locked(c, nw, old, pp);
		} else {
			ST_INC(c, st == CACHE_TOO_LARGE ? S_TOO_LARGE : S_NO_MEMORY);
			nw = NULL;
		}
	}
	stripe_unlock(c, s, &qn);
	drop_dead(c, dead);
	if (nw)
		item_drop(c, old);
	if (st == CACHE_OK || st == CACHE_NOT_FOUND)
		ST_INC(c, st == CACHE_OK ? S_DELETE_HITS : S_DELETE_MISSES);
	return st;
}

enum cache_status cache_delete(struct cache *c, const void *key, size_t nkey, uint64_t cas_in)
{
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	uint64_t h = key_hash(key, nkey);
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, h);
	struct item *_Atomic *pp, *dead;
	stripe_lock(c, s, &qn);
	struct item *it = find_live_locked(c, h, key, nkey, &pp, &dead);
	enum cache_status st = CACHE_NOT_FOUND;
	if (it && cas_in && it->cas != cas_in) {
		st = CACHE_EXISTS;
		it = NULL;
	} else if (it) {
		unlink_locked(c, it, pp);
		st = CACHE_OK;
	}
	stripe_unlock(c, s, &qn);
	drop_dead(c, dead);
	if (it)
		item_drop(c, it);
	ST_INC(c, st == CACHE_OK ? S_DELETE_HITS : S_DELETE_MISSES);
	return st;
}

/* memcached's safe_strtoull on a value: optional leading spaces, 1-20 digits, optional
 * trailing spaces (a decremented value may have been padded), no sign, no overflow. */
/* The number an item's value holds for incr/decr, read as memcached reads it (strtoull on
 * the value, which it stores followed by "\r\n"): leading white space and a sign are
 * skipped, the digits must be followed by the end or white space ("12 apples" is 12), and
 * a minus sign is refused unless the wrapped result is not negative as a signed number. */
static bool parse_u64(const char *p, size_t n, uint64_t *out)
{
	size_t i = 0;
	while (i < n && (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r')))
		i++;
	bool neg = false;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	size_t d0 = i;
	uint64_t v = 0;
	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (i == d0)
		return false;
	if (i < n && !(p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r') || p[i] == '\0'))
		return false;
	if (neg) {
		v = (uint64_t)0 - v;
		if ((int64_t)v < 0)
			return false;
	}
	*out = v;
	return true;
}

enum cache_status cache_incr(struct cache *c, const void *key, size_t nkey, bool decr,
			     uint64_t delta, uint64_t cas_in, uint64_t *result,
			     uint64_t *cas_out)
{
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	uint64_t h = key_hash(key, nkey);
	struct mcs_node qn;
	struct stripe *s = stripe_of(c, h);
	struct item *_Atomic *pp, *dead;
	struct item *nw = NULL;
	enum cache_status st;
	stripe_lock(c, s, &qn);
	struct item *old = find_live_locked(c, h, key, nkey, &pp, &dead);
	uint64_t v = 0;
	if (!old) {
		st = CACHE_NOT_FOUND;
	} else if (cas_in && old->cas != cas_in) {
		st = CACHE_EXISTS;
	} else if (!parse_u64(item_value(old), old->nbytes, &v)) {
		st = CACHE_NON_NUMERIC;
	} else {
		if (decr)
			v = v < delta ? 0 : v - delta;
		else
			v += delta; /* wraps at 2^64, as memcached */
		char buf[24];
		size_t n = 0;
		char tmp[24];
		uint64_t x = v;
		do {
			tmp[n++] = (char)('0' + x % 10);
			x /= 10;
		} while (x);
		for (size_t i = 0; i < n; i++)
			buf[i] = tmp[n - 1 - i];
		st = item_alloc(c, h, key, nkey, n, old->flags, false, &nw);
		if (st == CACHE_OK) {
			memcpy(nw->data + nkey, buf, n);
			nw->flags = old->flags;
			atomic_store_explicit(&nw->exptime,
					      atomic_load_explicit(&old->exptime, RELAXED), RELAXED);
			nw->time = old->time;
			link_locked(c, nw, old, pp);
			if (result)
				*result = v;
			if (cas_out)
				*cas_out = nw->cas;
		} else {
			ST_INC(c, S_NO_MEMORY);
			nw = NULL;
		}
	}
	stripe_unlock(c, s, &qn);
	drop_dead(c, dead);
	if (nw)
		item_drop(c, old);
	if (st == CACHE_NOT_FOUND)
		ST_INC(c, decr ? S_DECR_MISSES : S_INCR_MISSES);
	else if (st == CACHE_OK)
		ST_INC(c, decr ? S_DECR_HITS : S_INCR_HITS);
	return st;
}

enum cache_status cache_touch(struct cache *c, const void *key, size_t nkey, int64_t exptime)
{
	if (!key_ok(nkey))
		return CACHE_BAD_KEY;
	return touch_item(c, key, nkey, exptime, false) ? CACHE_OK : CACHE_NOT_FOUND;
}

enum cache_status cache_flush_all(struct cache *c, int64_t delay)
{
	ST_INC(c, S_CMD_FLUSH);
	if (delay <= 0) {
		/* Every item with a CAS id handed out so far is dead (ids are unique and
		 * increasing: a store that linearises after this gets a larger one). */
		atomic_store_explicit(&c->flush_at, 0, RELEASE);
		atomic_store_explicit(&c->oldest_cas, atomic_load_explicit(&c->cas_next, ACQUIRE),
				      RELEASE);
	} else {
		atomic_store_explicit(&c->flush_at, rel_time(c, delay), RELEASE);
	}
	return CACHE_OK;
}

/* ---- growth ----------------------------------------------------------------------------- */

static struct table *table_new(unsigned power)
{
	struct table *t = calloc(1, sizeof(*t) + ((size_t)1 << power) * sizeof(t->b[0]));
	if (t) {
		t->power = power;
		t->mask = ((uint64_t)1 << power) - 1;
	}
	return t;
}

/*
 * Move every item of old bucket i into the new table, tail first, under the bucket's
 * stripe lock. For the tail X with link *pp: X->hnext := new head (readers standing on X
 * have already passed every other old-chain item and merely wander into a new chain);
 * new head := X (release); *pp := NULL (release). X is reachable from the new table
 * before it leaves the old one.
 */
static void migrate_bucket(struct cache *c, struct table *o, struct table *t, uint64_t i)
{
	struct mcs_node qn;
	struct stripe *s = &c->stripes[i & c->smask];
	stripe_lock(c, s, &qn);
	for (;;) {
		struct item *_Atomic *pp = &o->b[i];
		struct item *x = atomic_load_explicit(pp, RELAXED);
		if (x == NULL)
			break;
		struct item *nx;
		while ((nx = atomic_load_explicit(&x->hnext, RELAXED)) != NULL) {
			pp = &x->hnext;
			x = nx;
		}
		struct item *_Atomic *head = &t->b[x->hash & t->mask];
		atomic_store_explicit(&x->hnext, atomic_load_explicit(head, RELAXED), RELEASE);
		atomic_store_explicit(head, x, RELEASE);
		atomic_store_explicit(pp, NULL, RELEASE);
	}
	stripe_unlock(c, s, &qn);
}

int cache_grow_now(struct cache *c)
{
	if (pthread_mutex_trylock(&c->grow_mx) != 0) {
		errno = EBUSY;
		return -1;
	}
	struct table *o = atomic_load_explicit(&c->tab, RELAXED);
	if (o->power >= MAX_POWER) {
		pthread_mutex_unlock(&c->grow_mx);
		errno = ERANGE;
		return -1;
	}
	struct table *t = table_new(o->power + 1);
	if (t == NULL) {
		pthread_mutex_unlock(&c->grow_mx);
		errno = ENOMEM;
		return -1;
	}
	/* old before tab: a lookup that loads tab == t then loads old == o. */
	atomic_store_explicit(&c->old, o, RELEASE);
	atomic_store_explicit(&c->tab, t, RELEASE);
	/* Lock-free readers that loaded tab == o without old have ended after this;
	 * lock holders read the pointers under the stripe lock we take per bucket. */
	ps_synchronize(c->ps);
	for (uint64_t i = 0; i <= o->mask; i++)
		migrate_bucket(c, o, t, i);
	atomic_store_explicit(&c->old, NULL, RELEASE);
	ps_synchronize(c->ps);
	/* A lock holder that loaded old == o under a stripe lock has released it after
	 * this pass; later holders see old == NULL. */
	for (uint64_t i = 0; i <= c->smask; i++) {
		struct mcs_node qn;
		stripe_lock(c, &c->stripes[i], &qn);
		stripe_unlock(c, &c->stripes[i], &qn);
	}
	free(o);
	atomic_fetch_add_explicit(&c->expansions, 1, RELAXED);
	pthread_mutex_unlock(&c->grow_mx);
	return 0;
}

static void maybe_grow(struct cache *c)
{
	if (c->cfg.no_grow)
		return;
	struct tstats *me = my_stats(c);
	if (atomic_load_explicit(&me->v[S_ADDS], RELAXED) < GROW_CHECK_EVERY)
		return;
	atomic_store_explicit(&me->v[S_ADDS], 0, RELAXED);
	/* Inside a section: a grower frees the table only after a grace period. */
	ps_enter(c->ps);
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	uint64_t nb = t->mask + 1;
	unsigned power = t->power;
	ps_exit(c->ps);
	uint64_t items = st_sum(c, S_LINKED);
	if ((int64_t)items <= 0 || items <= nb + nb / 2 || power >= MAX_POWER)
		return;
	pthread_mutex_lock(&c->mmx);
	bool bg = c->mrunning;
	if (bg) {
		atomic_store_explicit(&c->grow_req, 1, RELAXED);
		pthread_cond_signal(&c->mcv);
	}
	pthread_mutex_unlock(&c->mmx);
	if (!bg && !ps_in_section(c->ps))
		(void)cache_grow_now(c);
}

/* ---- sweeper ---------------------------------------------------------------------------- */

/* Sweep buckets [from, from + n) of the table; returns items removed. Caller holds
 * grow_mx (no growth in progress). */
static size_t sweep_range(struct cache *c, uint64_t from, uint64_t n)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	size_t removed = 0;
	for (uint64_t i = from; i < from + n && i <= t->mask; i++) {
		if (atomic_load_explicit(&t->b[i], RELAXED) == NULL)
			continue;
		struct mcs_node qn;
		struct stripe *s = &c->stripes[i & c->smask];
		struct item *dead = NULL;
		stripe_lock(c, s, &qn);
		struct item *_Atomic *pp = &t->b[i];
		struct item *it;
		while ((it = atomic_load_explicit(pp, RELAXED)) != NULL) {
			if (item_state(c, it) != LIVE) {
				unlink_locked(c, it, pp);
				it->lnext = dead; /* off the list now: reuse the link */
				dead = it;
			} else {
				pp = &it->hnext;
			}
		}
		stripe_unlock(c, s, &qn);
		while (dead) {
			struct item *nx = dead->lnext;
			dead->lnext = NULL;
			item_drop_dead(c, dead);
			removed++;
			dead = nx;
		}
	}
	return removed;
}

long cache_dump_class(struct cache *c, unsigned cls, unsigned long limit,
		      bool (*fn)(void *arg, const char *key, size_t nkey, uint32_t nbytes,
				 int64_t ttl),
		      void *arg)
{
	if (cls >= c->nclasses)
		return -1;
	long n = 0;
	bool more = true;
	uint32_t now = cache_now(c);
	pthread_mutex_lock(&c->grow_mx);
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	for (uint64_t i = 0; more && i <= t->mask; i++) {
		if (atomic_load_explicit(&t->b[i], RELAXED) == NULL)
			continue;
		struct mcs_node qn;
		struct stripe *s = &c->stripes[i & c->smask];
		stripe_lock(c, s, &qn);
		for (struct item *it = atomic_load_explicit(&t->b[i], RELAXED); it && more;
		     it = atomic_load_explicit(&it->hnext, RELAXED)) {
			if (it->cls != cls || item_state(c, it) != LIVE)
				continue;
			uint32_t e = atomic_load_explicit(&it->exptime, RELAXED);
			int64_t ttl = e == 0 ? -1 : (e > now ? (int64_t)(e - now) : 0);
			more = fn(arg, it->data, it->nkey, it->nbytes, ttl);
			n++;
			if (limit && (unsigned long)n >= limit)
				more = false;
		}
		stripe_unlock(c, s, &qn);
	}
	pthread_mutex_unlock(&c->grow_mx);
	return n;
}

size_t cache_sweep(struct cache *c)
{
	pthread_mutex_lock(&c->grow_mx);
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	size_t n = sweep_range(c, 0, t->mask + 1);
	pthread_mutex_unlock(&c->grow_mx);
	atomic_fetch_add_explicit(&c->sweeper_runs, 1, RELAXED);
	return n;
}

static void *maint_main(void *arg)
{
	struct cache *c = arg;
	pthread_mutex_lock(&c->mmx);
	while (!c->mstop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)c->interval_ms * 1000000u;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		if (!atomic_load_explicit(&c->grow_req, RELAXED))
			pthread_cond_timedwait(&c->mcv, &c->mmx, &ts);
		if (c->mstop)
			break;
		bool grow = atomic_exchange_explicit(&c->grow_req, 0, RELAXED);
		pthread_mutex_unlock(&c->mmx);
		(void)clock_tick(c); /* keeps access times current when no update runs */
		if (grow)
			(void)cache_grow_now(c);
		/* The whole table per interval up to SWEEP_CHUNK buckets (a bucket costs one
		 * load when empty, one stripe lock when not), so expired items give their
		 * memory back within about a second, as memcached's LRU maintainer does from
		 * its tails; a larger table takes nb / SWEEP_CHUNK intervals a pass. */
		pthread_mutex_lock(&c->grow_mx);
		struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
		uint64_t nb = t->mask + 1, chunk = nb < SWEEP_CHUNK ? nb : SWEEP_CHUNK;
		if (c->sweep_cursor >= nb)
			c->sweep_cursor = 0;
		sweep_range(c, c->sweep_cursor, chunk);
		c->sweep_cursor += chunk;
		pthread_mutex_unlock(&c->grow_mx);
		/* What this pass freed must not wait for the next one to be reclaimed. */
		cache_reclaim(c);
		atomic_fetch_add_explicit(&c->sweeper_runs, 1, RELAXED);
		pthread_mutex_lock(&c->mmx);
	}
	pthread_mutex_unlock(&c->mmx);
	/* The thread leaves tsync's registry when it exits (its ps_mem caches go back). */
	return NULL;
}

int cache_sweeper_start(struct cache *c, unsigned interval_ms)
{
	pthread_mutex_lock(&c->mmx);
	if (c->mrunning) {
		pthread_mutex_unlock(&c->mmx);
		errno = EBUSY;
		return -1;
	}
	c->interval_ms = interval_ms ? interval_ms : 1000;
	c->mstop = false;
	int rc = pthread_create(&c->mthr, NULL, maint_main, c);
	if (rc == 0)
		c->mrunning = true;
	pthread_mutex_unlock(&c->mmx);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

void cache_sweeper_stop(struct cache *c)
{
	pthread_mutex_lock(&c->mmx);
	if (!c->mrunning) {
		pthread_mutex_unlock(&c->mmx);
		return;
	}
	c->mstop = true;
	pthread_cond_signal(&c->mcv);
	pthread_mutex_unlock(&c->mmx);
	pthread_join(c->mthr, NULL);
	pthread_mutex_lock(&c->mmx);
	c->mrunning = false;
	pthread_mutex_unlock(&c->mmx);
}

/* ---- create / destroy ------------------------------------------------------------------- */

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ps_mem's layout (src/ps_mem.c): a 32-byte header before each 16-aligned object, the
 * slab's own header in the first cache lines. What a slab of `slab` bytes holds. */
#define PSMEM_HDR 32u
#define PSMEM_FIRST 128u

static int make_classes(struct cache *c)
{
	const struct cache_config *g = &c->cfg;
	size_t sizes[MAX_CLASSES];
	unsigned n = 0;
	/* memcached's sequence: its item header (48 bytes) + -n, times -f, 8-aligned; so a
	 * class id names the same chunk size as in memcached's "stats slabs" (to its
	 * largest class, slab_chunk_max, above which memcached chunks items) */
	size_t sz = round_up(MC_ITEM_HDR + g->chunk_min, 8);
	while (n < MAX_CLASSES - 1 && sz <= (size_t)((double)g->item_size_max / g->growth_factor)) {
		sizes[n++] = sz;
		size_t nx = round_up((size_t)((double)sz * g->growth_factor), 8);
		sz = nx > sz ? nx : sz + 8;
	}
	/* the largest class holds the largest item size_ok() admits: -I counted memcached's
	 * way, plus what tsync's header takes beyond memcached's */
	size_t slack = ITEM_HDR > MC_ITEM_HDR + 11 ? ITEM_HDR - (MC_ITEM_HDR + 11) : 0;
	sizes[n++] = round_up(g->item_size_max + slack, 8);
	for (unsigned i = 0; i < n; i++) {
		size_t stride = round_up(PSMEM_HDR + sizes[i], 16);
		size_t slab = 64 * 1024;
		unsigned want = stride <= 8192 ? 8 : 2;
		while (PSMEM_FIRST + want * stride > slab)
			slab <<= 1;
		size_t nobj = (slab - PSMEM_FIRST) / stride;
		struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
		mc.slab_size = slab;
		size_t cs = (64 * 1024) / stride;
		mc.cache_size = (unsigned)(cs < 2 ? 2 : cs > 64 ? 64 : cs);
		mc.slabs_kept = 1;
		c->cls[i].owner = c;
		mc.reclaim_fn = on_reclaim;
		mc.reclaim_arg = &c->cls[i];
		c->cls[i].mem = ps_mem_create(c->ps, sizes[i], &mc);
		if (c->cls[i].mem == NULL)
			return -1;
		c->cls[i].size = (uint32_t)sizes[i];
		c->cls[i].charge = (slab + nobj - 1) / nobj;
		c->cls[i].credit = GDS_SCALE / c->cls[i].charge;
		unsigned band = 0;
		for (uint64_t q = c->cls[i].charge / 64; q >= 4 && band < EVICT_BANDS - 1; q /= 4)
			band++;
		c->cls[i].band = gdsf(c) ? band : 0;
		c->nclasses = i + 1;
	}
	return 0;
}

void cache_config_get(const struct cache *c, struct cache_config *out)
{
	*out = c->cfg;
}

struct cache *cache_create(const struct cache_config *cfg)
{
	struct cache_config g = CACHE_CONFIG_INIT;
	if (cfg) {
		if (cfg->size != sizeof(struct cache_config)) {
			errno = EINVAL;
			return NULL;
		}
		g = *cfg;
	}
	if (!g.mem_limit)
		g.mem_limit = CACHE_MEM_LIMIT_DEFAULT;
	if (g.mem_limit < (1u << 20))
		g.mem_limit = 1u << 20;
	if (!g.item_size_max)
		g.item_size_max = CACHE_ITEM_SIZE_MAX_DEFAULT;
	if (g.growth_factor == 0.0)
		g.growth_factor = 1.25;
	if (!g.chunk_min)
		g.chunk_min = 48;
	if (!g.hash_power)
		g.hash_power = 16;
	if (g.mem_wait_ms == 0)
		g.mem_wait_ms = 100;
	if (g.evict_window == 0)
		g.evict_window = 4;
	if ((unsigned)g.variant > CACHE_LOCKED || g.growth_factor <= 1.0 ||
	    g.growth_factor > 100.0 || g.item_size_max < 1024 ||
	    g.item_size_max > (128u << 20) || g.item_size_max > g.mem_limit / 2 ||
	    g.chunk_min > g.item_size_max / 2 || g.hash_power < 4 || g.hash_power > MAX_POWER ||
	    g.mem_wait_ms > 60000 || g.evict_window > EVICT_WINDOW_MAX ||
	    (unsigned)g.evict_policy > CACHE_EVICT_CLOCK) {
		errno = EINVAL;
		return NULL;
	}
	struct cache *c = aligned_alloc(TSYNC_CACHE_LINE, round_up(sizeof(*c), TSYNC_CACHE_LINE));
	if (c == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->cfg = g;
	c->cfg.size = sizeof(struct cache_config);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	c->start_sec = ts.tv_sec;
	c->start_unix = (int64_t)time(NULL);
	atomic_store_explicit(&c->tick, cache_now(c), RELAXED);
	pthread_mutex_init(&c->grow_mx, NULL);
	pthread_mutex_init(&c->mmx, NULL);
	pthread_cond_init(&c->mcv, NULL);
	c->ps = ps_create(NULL);
	if (c->ps == NULL)
		goto fail;
	if (make_classes(c) != 0)
		goto fail;
	uint64_t ns = (uint64_t)1 << g.hash_power;
	if (ns > MAX_STRIPES)
		ns = MAX_STRIPES;
	c->smask = ns - 1;
	c->stripes = aligned_alloc(TSYNC_CACHE_LINE, ns * sizeof(struct stripe));
	if (c->stripes == NULL)
		goto fail;
	memset(c->stripes, 0, ns * sizeof(struct stripe));
	for (uint64_t i = 0; i < ns; i++)
		if (g.variant == CACHE_LOCKED)
			pthread_mutex_init(&c->stripes[i].u.x, NULL);
	c->nlists = g.variant == CACHE_PS ? CACHE_CLOCK_LISTS : 1;
	c->lists = aligned_alloc(TSYNC_CACHE_LINE, c->nlists * sizeof(struct plist));
	if (c->lists == NULL)
		goto fail;
	memset(c->lists, 0, c->nlists * sizeof(struct plist));
	for (unsigned i = 0; i < c->nlists; i++)
		pthread_mutex_init(&c->lists[i].x, NULL);
	c->nts = tsync_thread_capacity() + 1; /* the last slot is shared by overflow ids */
	c->ts = aligned_alloc(TSYNC_CACHE_LINE, c->nts * sizeof(struct tstats));
	if (c->ts == NULL)
		goto fail;
	memset(c->ts, 0, c->nts * sizeof(struct tstats));
	struct table *t = table_new(g.hash_power);
	if (t == NULL)
		goto fail;
	atomic_store_explicit(&c->tab, t, RELEASE);
	return c;
fail:
	cache_destroy(c);
	errno = ENOMEM;
	return NULL;
}

void cache_destroy(struct cache *c)
{
	if (c == NULL)
		return;
	if (c->mrunning)
		cache_sweeper_stop(c);
	/* Items live in the ps_mem slabs: destroying the allocators frees them all. */
	for (unsigned i = 0; i < c->nclasses; i++)
		ps_mem_destroy(c->cls[i].mem);
	free(atomic_load_explicit(&c->tab, RELAXED));
	free(atomic_load_explicit(&c->old, RELAXED));
	if (c->stripes && c->cfg.variant == CACHE_LOCKED)
		for (uint64_t i = 0; i <= c->smask; i++)
			pthread_mutex_destroy(&c->stripes[i].u.x);
	free(c->stripes);
	if (c->lists)
		for (unsigned i = 0; i < c->nlists; i++)
			pthread_mutex_destroy(&c->lists[i].x);
	free(c->lists);
	free(c->ts);
	if (c->ps)
		ps_destroy(c->ps);
	pthread_cond_destroy(&c->mcv);
	pthread_mutex_destroy(&c->mmx);
	pthread_mutex_destroy(&c->grow_mx);
	free(c);
}

/* ---- statistics ------------------------------------------------------------------------- */

int cache_class_for(const struct cache *c, size_t nkey, size_t nbytes)
{
	return size_ok(c, nkey, nbytes, 0) ? class_of(c, ITEM_HDR + nkey + nbytes) : -1;
}

unsigned cache_nclasses(const struct cache *c)
{
	return c->nclasses;
}

int cache_class_stats(struct cache *c, unsigned cls, struct cache_class_stats *out)
{
	if (cls >= c->nclasses)
		return -1;
	struct ps_mem_stats ms;
	ps_mem_stats(c->cls[cls].mem, &ms);
	memset(out, 0, sizeof(*out));
	out->chunk_size = c->cls[cls].size;
	out->charged = c->cls[cls].charge;
	out->used_chunks = ms.in_use;
	out->total_slabs = ms.slabs;
	size_t stride = round_up(PSMEM_HDR + c->cls[cls].size, 16);
	size_t slab = 64 * 1024;
	unsigned want = stride <= 8192 ? 8 : 2;
	while (PSMEM_FIRST + want * stride > slab)
		slab <<= 1;
	out->slab_bytes = slab;
	out->evicted = atomic_load_explicit(&c->cls[cls].evicted, RELAXED);
	out->mem_requested = atomic_load_explicit(&c->cls[cls].requested, RELAXED);
	out->reclaimed = atomic_load_explicit(&c->cls[cls].reclaimed, RELAXED);
	return 0;
}

void cache_stats(struct cache *c, struct cache_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->limit_maxbytes = c->cfg.mem_limit;
	uint64_t used = atomic_load_explicit(&c->mem_used, RELAXED);
	uint64_t garbage = atomic_load_explicit(&c->mem_garbage, RELAXED);
	o->bytes = used > garbage ? used - garbage : 0;
	o->mem_charged = used;
	o->mem_garbage_bytes = garbage;
	o->total_items = st_sum(c, S_TOTAL_ITEMS);
	o->evictions = st_sum(c, S_EVICTIONS);
	o->reclaimed = st_sum(c, S_RECLAIMED);
	o->sweeper_runs = atomic_load_explicit(&c->sweeper_runs, RELAXED);
	o->get_hits = st_sum(c, S_GET_HITS);
	o->get_misses = st_sum(c, S_GET_MISSES);
	o->cmd_get = o->get_hits + o->get_misses;
	o->get_expired = st_sum(c, S_GET_EXPIRED);
	o->get_flushed = st_sum(c, S_GET_FLUSHED);
	o->cmd_set = st_sum(c, S_CMD_SET);
	o->cmd_touch = st_sum(c, S_CMD_TOUCH);
	o->touch_hits = st_sum(c, S_TOUCH_HITS);
	o->touch_misses = st_sum(c, S_TOUCH_MISSES);
	o->delete_hits = st_sum(c, S_DELETE_HITS);
	o->delete_misses = st_sum(c, S_DELETE_MISSES);
	o->incr_hits = st_sum(c, S_INCR_HITS);
	o->incr_misses = st_sum(c, S_INCR_MISSES);
	o->decr_hits = st_sum(c, S_DECR_HITS);
	o->decr_misses = st_sum(c, S_DECR_MISSES);
	o->cas_hits = st_sum(c, S_CAS_HITS);
	o->cas_misses = st_sum(c, S_CAS_MISSES);
	o->cas_badval = st_sum(c, S_CAS_BADVAL);
	o->cmd_flush = st_sum(c, S_CMD_FLUSH);
	o->store_too_large = st_sum(c, S_TOO_LARGE);
	o->store_no_memory = st_sum(c, S_NO_MEMORY);
	int64_t linked = (int64_t)st_sum(c, S_LINKED);
	o->curr_items = linked > 0 ? (uint64_t)linked : 0;
	ps_enter(c->ps); /* the table is freed only after a grace period */
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	o->hash_power_level = t->power;
	o->hash_bytes = (t->mask + 1) * sizeof(void *);
	o->hash_is_expanding = atomic_load_explicit(&c->old, RELAXED) != NULL;
	ps_exit(c->ps);
	o->hash_expansions = atomic_load_explicit(&c->expansions, RELAXED);
	uint64_t max_wait = 0;
	for (unsigned i = 0; i < c->nclasses; i++) {
		struct ps_mem_stats ms;
		struct cache_class_stats cs;
		ps_mem_stats(c->cls[i].mem, &ms);
		cache_class_stats(c, i, &cs);
		o->total_malloced += ms.slabs * cs.slab_bytes;
		o->slabs += ms.slabs;
		o->peak_slabs += ms.peak_slabs;
		o->mem_in_use += ms.in_use;
		o->mem_pending += ms.pending;
		o->mem_cached += ms.cached;
		o->mem_frees += ms.frees;
		o->mem_reclaimed += ms.reclaimed;
		if (ms.max_wait_ticks > max_wait)
			max_wait = ms.max_wait_ticks;
	}
	o->mem_max_wait_ns = tsync_ticks_to_ns(max_wait);
	struct ps_stats ps;
	ps_stats_thread(c->ps, &ps);
	o->quiesce_calls = ps.quiesce_calls;
	o->quiesce_true = ps.quiesce_true;
}
