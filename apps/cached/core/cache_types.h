/*
 * apps/cached/core/cache_types.h - the cache core's private structures and the inline
 * helpers its files share (docs/cached.md, "Cache core"); the inlines call no file of the
 * core but through the variant's tables. The files, each calling only those below it:
 * cache.c (the API), sweep.c (the maintenance thread), item.c (items, size classes,
 * memory), variant.c (the variants' tables), evict.c (eviction), table.c (the hash
 * table), lists.c (the replacement lists). Not installed, not a contract for anything outside
 * apps/cached/core. Names: what the core's files share is cache__<name> (its public API, cache.h,
 * is cache_<name>), so that no name here is read as one of the library's (src/).
 *
 * Invariants the code relies on (each argued in docs/cached.md; each file names those it
 * maintains):
 *  I1 An item is reachable from a hash chain (of the table or, while growing, of the old
 *     table) exactly while it is on its CLOCK/LRU list (variants with one); both change
 *     only under the item's stripe lock. So an evictor holding a list lock that also
 *     holds the victim's stripe lock (a trylock, or taken before the list lock) finds
 *     the victim hashed.
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
#ifndef TSYNC_CACHE_TYPES_H
#define TSYNC_CACHE_TYPES_H

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
#include <tsync/ps_kmem.h>
#include <tsync/ps_lock.h>
#include <tsync/ps_mem.h>
#include <tsync/thread.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <ck_pflock.h>
#include <ck_spinlock.h>
#pragma GCC diagnostic pop

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

/* ---- items ------------------------------------------------------------------------------ */

struct item {
	struct item *_Atomic hnext; /* hash chain (I3: the only link readers follow) */
	struct item *lprev, *lnext; /* CLOCK/LRU list, under the list's lock */
	/* what the CLOCK hand reads, beside its link (one line for most items) */
	uint64_t prio;          /* GreedyDual-Size priority, under the list's lock */
	_Atomic uint8_t refbit; /* REF_BIT: CLOCK's reference bit, set by gets; above it
				 * the hand's use count (REF_FREQ) */
	uint8_t cls;
	uint8_t nkey;
	_Atomic uint8_t mflags;    /* M_*: memcached's fetched / stale / token-sent bits */
	_Atomic uint32_t refcount; /* mcs-clock, locked: 1 for the table + 1 per cache_ref */
	_Atomic uint32_t exptime;  /* cache_now() units; 0 = never */
	uint32_t hash;             /* the key's hash, low 32 bits (tables <= 2^MAX_POWER) */
	uint64_t cas;
	uint32_t time; /* cache_now() when stored (delayed flush_all) */
	uint32_t flags;
	uint32_t nbytes;
	_Atomic uint32_t atime; /* cache_now() of the last access (the cache's tick) */
	char data[];            /* key, then value */
};
/* refbit: a get stores REF_BIT when it finds it clear (its only store to the item); the
 * hand, under the list's lock, stores the count of its passes that found the bit set,
 * REF_FREQ(n), clearing the bit (a get racing with it may put back the old count: one
 * use uncounted, never a lost bit). */
#define REF_BIT 1u
#define REF_FREQ(n) ((uint8_t)((n) << 1))
#define REF_FREQ_OF(r) ((unsigned)(r) >> 1)
/* mflags (meta protocol, cache_mget): set with atomic or; a new item starts with 0 */
#define M_FETCHED 1u /* a get has returned the item (mg h) */
#define M_TOKEN 2u   /* a recache win token was handed out for it (mg W, then Z) */
#define M_STALE 4u   /* invalidated by cache_invalidate (mg X) */
#define M_KEYB 8u    /* stored with a base64 key (ms b): mg k returns it base64 */
#define ITEM_HDR offsetof(struct item, data)
/* memcached 1.6's sizeof(item) on 64-bit: its first class is MC_ITEM_HDR + chunk_min */
#define MC_ITEM_HDR 48u

static inline const char *cache__item_value(const struct item *it)
{
	return it->data + it->nkey;
}

/* ---- locks ------------------------------------------------------------------------------ */

/* MCS queue lock (Mellor-Crummey & Scott 1991): the mcs-clock variant's stripe locks,
 * Concurrency Kit's ck_spinlock_mcs. Each acquisition brings its own queue node (struct
 * ck_spinlock_mcs, on the caller's stack; it lives until the matching unlock). */

/* One stripe lock per cache line; which member is used depends on the variant. */
struct stripe {
	_Alignas(TSYNC_CACHE_LINE) union {
		struct ps_lock t;    /* ps, ps-nocrp: the ticket lock with trylock */
		ck_spinlock_mcs_t m; /* mcs-clock, mcs */
		ck_pflock_t p;       /* pf-rw: phase-fair reader-writer lock */
		pthread_mutex_t x;   /* locked */
	} u;
};

/*
 * A CLOCK list (ps: 64 of them; mcs-clock: one) or the LRU list (locked: one). A CLOCK
 * list under GreedyDual-Size-Frequency keeps one ring per size band (items whose charge
 * is within a factor of 4), so that every eviction compares the oldest unreferenced items
 * of every size (evict.c); plain CLOCK and the LRU use ring 0 only.
 */
#define EVICT_BANDS 8u
#define EVICT_WINDOW_MAX 16u
struct ring {
	struct item *hand; /* CLOCK hand / LRU head (most recent); NULL when empty */
	uint64_t n;
};
struct plist {
	_Alignas(TSYNC_CACHE_LINE) struct ps_lock t; /* ps, mcs-clock */
	pthread_mutex_t x;                           /* locked: the global LRU lock */
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
	S_GET_HITS,
	S_GET_MISSES,
	S_GET_EXPIRED,
	S_GET_FLUSHED,
	S_CMD_SET,
	S_TOTAL_ITEMS,
	S_CMD_TOUCH,
	S_TOUCH_HITS,
	S_TOUCH_MISSES,
	S_DELETE_HITS,
	S_DELETE_MISSES,
	S_INCR_HITS,
	S_INCR_MISSES,
	S_DECR_HITS,
	S_DECR_MISSES,
	S_CAS_HITS,
	S_CAS_MISSES,
	S_CAS_BADVAL,
	S_CMD_FLUSH,
	S_TOO_LARGE,
	S_NO_MEMORY,
	S_EVICTIONS,
	S_RECLAIMED,
	S_LINKED, /* items linked minus unlinked by this thread (wraps; summed) */
	S_ADDS,   /* link events since the last growth check (owner only) */
	/* cache__item_alloc (item.c): refusals by cause, and waits for a stripe lock (the
	 * waits for garbage are the budget's: ps_mem_budget_stats) */
	S_NOMEM_FULL,
	S_NOMEM_GARBAGE,
	S_NOMEM_BUSY,
	S_NOMEM_SYSTEM,
	S_EVICT_WAITS,
	S_N
};
/* Per-thread counters, written only by their thread (tsync thread id). */
struct tstats {
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t v[S_N];
};

struct sclass {
	uint32_t size;   /* chunk bytes: ITEM_HDR + key + value fit */
	uint32_t slab;   /* bytes per slab of its ps_mem */
	uint64_t charge; /* bytes charged against mem_limit per item: slab / objects per slab */
	uint64_t credit; /* GreedyDual-Size credit per use: GDS_SCALE / charge */
	unsigned band;   /* its CLOCK ring in each list (0 without size bands) */
	struct ps_mem *mem;
	_Atomic uint64_t evicted;
	_Atomic uint64_t requested; /* ITEM_HDR + key + value of allocated, unretired items */
	_Atomic uint64_t reclaimed; /* expired or flushed items of this class unlinked */
};

/* An eviction attempt (cache__evict_one, a variant's evict_scan). In: held, a stripe the caller
 * locked before the list lock (the order I4 allows), whose items it evicts without a
 * trylock; or NULL. Out: the victim's class when it evicted one; when it did not, busy
 * is the stripe of a candidate it passed over because another thread held that stripe's
 * lock (NULL if none was: no candidate at all). Stripes live as long as the cache, so
 * the pointer stays valid after the list lock is released - unlike the candidate. */
struct evict_res {
	struct stripe *held;
	unsigned cls;
	struct stripe *busy;
};

/* ---- the variants ------------------------------------------------------------------------ */

/*
 * What the study's variants (cache.h, enum cache_variant) do differently, on three axes,
 * each a small constant table in variant.c (filled positionally: a row per choice): the
 * stripe lock, how a get pins what it returns, and the replacement policy. cache_create
 * combines one row of each into c->ops (cache__variant_ops). Everything else is common
 * code. c->ops is inside struct cache: a ps get makes one indirect call (bump, when it
 * updates the item) and its cache_release one (unpin).
 */
/* Stripe locks (I2): the member of struct stripe's union this variant uses. n is the
 * caller's queue node (mcs-clock), on its stack from the lock to the unlock. init makes a
 * zeroed stripe an unlocked one; fini (may be NULL) undoes it. rdlock/rdunlock: the lock
 * a non-parsec get takes - the exclusive one, or (shared_reads) the read side of a
 * reader-writer lock, under which a get changes nothing but atomics (the reference
 * count, the item's access bits) and leaves a dead item for the next update to unlink. */
struct cache_stripe_ops {
	void (*init)(struct stripe *s);
	void (*fini)(struct stripe *s);
	void (*lock)(struct stripe *s, struct ck_spinlock_mcs *n);
	bool (*trylock)(struct stripe *s, struct ck_spinlock_mcs *n);
	void (*unlock)(struct stripe *s, struct ck_spinlock_mcs *n);
	bool shared_reads;
	void (*rdlock)(struct stripe *s, struct ck_spinlock_mcs *n);
	void (*rdunlock)(struct stripe *s, struct ck_spinlock_mcs *n);
};
/* Read-side protection (I3). parsec: gets search the table lock-free inside a ParSec
 * section that stays open until cache_release, and unlinked items are ps_free()d;
 * otherwise gets search under the stripe lock and items are reference-counted. pin, under
 * the item's stripe lock: keep it valid after the unlock for a cache_ref (enter the
 * section / take a reference); unpin: cache_release's undo; drop: an unlinked item's end
 * (ps_free it / put the table's reference). */
struct cache_pin_ops {
	bool parsec;
	void (*pin)(struct cache *c, struct item *it);
	void (*unpin)(struct cache *c, struct item *it);
	void (*drop)(struct cache *c, struct item *it);
};
/* Replacement. has_list: items are on CLOCK/LRU lists (I1; cache_ops.nlists of them),
 * locked with list_lock/list_unlock; lru: the list is in recency order (insert at the head, every
 * access moves the item there), else a CLOCK ring (insert behind the hand). bump: a hit's
 * mark for the policy (set the reference bit / move to the LRU head, under the stripe
 * lock / nothing). evict_scan: under l's lock, choose candidates on l and evict one
 * (try_evict_locked), filling *r; false if none could be. */
struct cache_repl_ops {
	bool has_list;
	bool lru;
	void (*list_lock)(struct plist *l);
	void (*list_unlock)(struct plist *l);
	void (*bump)(struct cache *c, struct item *it);
	bool (*evict_scan)(struct cache *c, struct plist *l, struct evict_res *r);
};
struct cache_ops {
	struct cache_stripe_ops stripe;
	struct cache_pin_ops pin;
	struct cache_repl_ops repl;
	unsigned nlists; /* the replacement's lists: CACHE_CLOCK_LISTS (ps) or 1 */
};

/* variant.c: variant v's three axes in *out (v <= CACHE_PF_RW). */
void cache__variant_ops(enum cache_variant v, struct cache_ops *out);

/* ---- struct cache ---------------------------------------------------------------------- */

struct cache {
	struct cache_ops ops; /* the variant's (cfg.variant): cache__variant_ops */
	struct cache_config cfg;
	struct ps *ps;
	struct ps_kmem *kmem; /* the size classes: cls[i].mem is its class i */
	/* mem_limit over every class: charged bytes of items allocated and not yet reusable
	 * (live + garbage), and the wait for garbage (docs/cached.md, "Memory") */
	struct ps_mem_budget *budget;
	unsigned nclasses;
	struct sclass cls[MAX_CLASSES];
	struct stripe *stripes;
	uint64_t smask;
	struct plist *lists;
	unsigned nlists;
	struct tstats *ts;
	unsigned nts;
	int64_t start_sec;  /* CLOCK_MONOTONIC_COARSE seconds at create */
	int64_t start_unix; /* time(NULL) at create */

	/* read by every lookup, written only by growth */
	_Alignas(TSYNC_CACHE_LINE) struct table *_Atomic tab;
	struct table *_Atomic old; /* non-NULL while growing */

	/* read by every lookup, written by flush_all / time_advance */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t oldest_cas;
	_Atomic uint32_t flush_at;    /* delayed flush: items stored before it die at it */
	_Atomic uint32_t time_offset; /* cache_time_advance */
	_Atomic uint32_t tick;        /* cache_now() as last read by an update or the
				       * maintenance thread (cache__clock_tick): gets stamp
				       * access times with it instead of reading the clock */

	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t cas_next;
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

/* ---- per-thread counters ---------------------------------------------------------------- */

static inline struct tstats *cache__my_stats(struct cache *c)
{
	unsigned id = tsync_thread_self();
	return &c->ts[id < c->nts ? id : c->nts - 1];
}

/* Owner-only increment: a load and a store, no read-modify-write. Threads beyond the
 * counter array share its last slot: increments are then atomic RMWs. */
static inline void cache__st_add(struct cache *c, unsigned k, uint64_t d)
{
	unsigned id = tsync_thread_self();
	if (TSYNC_LIKELY(id < c->nts - 1)) {
		_Atomic uint64_t *p = &c->ts[id].v[k];
		atomic_store_explicit(p, atomic_load_explicit(p, RELAXED) + d, RELAXED);
	} else {
		atomic_fetch_add_explicit(&c->ts[c->nts - 1].v[k], d, RELAXED);
	}
}
#define ST_INC(c, k) cache__st_add((c), (k), 1)

static inline uint64_t cache__st_sum(const struct cache *c, unsigned k)
{
	uint64_t s = 0;
	for (unsigned i = 0; i < c->nts; i++)
		s += atomic_load_explicit(&c->ts[i].v[k], RELAXED);
	return s;
}

/* ---- time ------------------------------------------------------------------------------- */

/* cache_now's body (cache.h), inline for the core's files below cache.c. */
static inline uint32_t cache__now(const struct cache *c)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)(ts.tv_sec - c->start_sec) + 2u +
	       atomic_load_explicit(&c->time_offset, RELAXED);
}

/* cache_now(), published as the cache's tick (one store per second at most). */
static inline uint32_t cache__clock_tick(struct cache *c)
{
	uint32_t now = cache__now(c);
	if (atomic_load_explicit(&c->tick, RELAXED) != now)
		atomic_store_explicit(&c->tick, now, RELAXED);
	return now;
}

enum { LIVE, EXPIRED, FLUSHED };

static inline int cache__item_state(const struct cache *c, const struct item *it)
{
	if (it->cas <= atomic_load_explicit(&c->oldest_cas, ACQUIRE))
		return FLUSHED;
	uint32_t fa = atomic_load_explicit(&c->flush_at, ACQUIRE);
	uint32_t e = atomic_load_explicit(&it->exptime, RELAXED);
	if (TSYNC_LIKELY(fa == 0 && e == 0))
		return LIVE;
	uint32_t now = cache__now(c);
	if (fa && it->time < fa && now >= fa)
		return FLUSHED;
	if (e && e <= now)
		return EXPIRED;
	return LIVE;
}

/* ---- stripe locks ----------------------------------------------------------------------- */

static inline struct stripe *cache__stripe_of(struct cache *c, uint64_t hash)
{
	return &c->stripes[hash & c->smask];
}

static inline void cache__stripe_lock(struct cache *c, struct stripe *s, struct ck_spinlock_mcs *n)
{
	c->ops.stripe.lock(s, n);
}

static inline bool cache__stripe_trylock(struct cache *c, struct stripe *s,
					 struct ck_spinlock_mcs *n)
{
	return c->ops.stripe.trylock(s, n);
}

static inline void cache__stripe_unlock(struct cache *c, struct stripe *s,
					struct ck_spinlock_mcs *n)
{
	c->ops.stripe.unlock(s, n);
}

/* ---- lists: CLOCK (ps, mcs-clock) and LRU (locked) -------------------------------------- */

static inline bool cache__has_list(const struct cache *c)
{
	return c->ops.repl.has_list;
}

static inline struct plist *cache__list_of(struct cache *c, uint64_t hash)
{
	/* Bits 26-31: independent of the stripe bits (at most 12 low bits). */
	return &c->lists[((uint32_t)hash >> 26) & (c->nlists - 1)];
}

static inline void cache__plist_lock(struct cache *c, struct plist *l)
{
	c->ops.repl.list_lock(l);
}

static inline void cache__plist_unlock(struct cache *c, struct plist *l)
{
	c->ops.repl.list_unlock(l);
}

/* ---- items and memory (item.c) ---------------------------------------------------------- */

/* ps_free an item: its charge becomes garbage in the budget until its reclamation. */
static inline void cache__item_retire(struct cache *c, struct item *it)
{
	atomic_fetch_sub_explicit(&c->cls[it->cls].requested, ITEM_HDR + it->nkey + it->nbytes,
				  RELAXED);
	ps_free(c->cls[it->cls].mem, it);
}

/* memcached's item_size_ok: its header, the CAS, the key's NUL, the flags if not 0 and the
 * value's "\r\n" count against -I; so the largest value that fits is memcached's. */
static inline bool cache__size_ok(const struct cache *c, size_t nkey, size_t nbytes, uint32_t flags)
{
	return MC_ITEM_HDR + 8 + nkey + 1 + (flags ? 4 : 0) + nbytes + 2 <= c->cfg.item_size_max;
}

/* Free an unlinked item: ps variants defer reuse through ParSec (I3); the refcounted
 * variants drop the table's reference. */
static inline void cache__item_drop(struct cache *c, struct item *it)
{
	c->ops.pin.drop(c, it);
}

/* cache__item_drop for an item found expired or flushed: counted as reclaimed, in all and in
 * its class (read before the drop: a refcounted variant may free it at once). */
static inline void cache__item_drop_dead(struct cache *c, struct item *it)
{
	atomic_fetch_add_explicit(&c->cls[it->cls].reclaimed, 1, RELAXED);
	ST_INC(c, S_RECLAIMED);
	cache__item_drop(c, it);
}

/* ---- hash table ------------------------------------------------------------------------- */

static inline uint64_t cache__key_hash(const void *key, size_t nkey)
{
	return XXH3_64bits(key, nkey);
}

static inline bool cache__key_ok(size_t nkey)
{
	return nkey >= 1 && nkey <= CACHE_KEY_MAX;
}

static inline bool cache__item_is(const struct item *it, uint64_t h, const void *key, size_t nkey)
{
	return it->hash == (uint32_t)h && it->nkey == nkey && memcmp(it->data, key, nkey) == 0;
}

static inline struct item *cache__chain_find(struct item *_Atomic *head, uint64_t h,
					     const void *key, size_t nkey)
{
	for (struct item *it = atomic_load_explicit(head, ACQUIRE); it;
	     it = atomic_load_explicit(&it->hnext, ACQUIRE))
		if (cache__item_is(it, h, key, nkey))
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
static inline struct item *cache__lookup(struct cache *c, uint64_t h, const void *key, size_t nkey)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	struct table *o = atomic_load_explicit(&c->old, ACQUIRE);
	struct item *it = NULL;
	if (TSYNC_UNLIKELY(o != NULL))
		it = cache__chain_find(&o->b[h & o->mask], h, key, nkey);
	if (it == NULL)
		it = cache__chain_find(&t->b[h & t->mask], h, key, nkey);
	return it;
}

/* ---- GreedyDual-Size-Frequency: the priorities lists.c keeps and evict.c compares --- */

/*
 * GreedyDual-Size-Frequency (Cao and Irani, USITS 1997; Cherkasova, HP Labs 1998) with a
 * uniform miss cost: an item's priority is the list's inflation L at its last access plus
 * its frequency times a credit inversely proportional to the memory it is charged, and
 * eviction takes the lowest priority. Small items keep more credit, so at equal memory
 * the cache keeps more of them; frequently used ones keep more, so a hot item outlives
 * cold ones of its size; L rises to each victim's priority, so an item not accessed for a
 * while ages out whatever its size. The frequency is counted by the CLOCK hand: the number
 * of its passes that found the reference bit set, from 1 at the store.
 */
#define GDS_SCALE (1ull << 32)
#define GDS_FREQ_MAX 15u

static inline bool cache__gdsf(const struct cache *c)
{
	return c->cfg.evict_policy == CACHE_EVICT_GDSF && !c->ops.repl.lru;
}

static inline uint64_t cache__gds_priority(const struct cache *c, const struct plist *l,
					   const struct item *it)
{
	unsigned f = REF_FREQ_OF(atomic_load_explicit(&it->refbit, RELAXED));
	return l->inflation + f * c->cls[it->cls].credit;
}

static inline struct ring *cache__ring_of(struct cache *c, struct plist *l, const struct item *it)
{
	return &l->r[c->cls[it->cls].band];
}

/* ---- sizes ------------------------------------------------------------------------------ */

static inline size_t cache__round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- across files ----------------------------------------------------------------------- */

/* item.c */
int cache__make_classes(struct cache *c);
int cache__class_of(const struct cache *c, size_t total);
enum cache_status cache__item_alloc(struct cache *c, uint64_t hash, const void *key, size_t nkey,
				    size_t nbytes, uint32_t flags, bool may_wait,
				    struct item **out);

/* table.c */
struct table *cache__table_new(unsigned power);
struct item *cache__find_locked(struct cache *c, uint64_t h, const void *key, size_t nkey,
				struct item *_Atomic **pp_out);
struct item *_Atomic *cache__find_link(struct cache *c, const struct item *target);
void cache__unlink_locked(struct cache *c, struct item *it, struct item *_Atomic *pp);
void cache__link_locked(struct cache *c, struct item *nw, struct item *old,
			struct item *_Atomic *pp);
void cache__maybe_grow(struct cache *c);

/* lists.c */
void cache__list_insert_locked(struct cache *c, struct plist *l, struct item *it);
void cache__list_remove_locked(struct cache *c, struct plist *l, struct item *it);
void cache__list_replace_locked(struct cache *c, struct plist *l, struct item *old,
				struct item *nw);
void cache__lru_bump(struct cache *c, struct item *it);
void cache__evict_classes_init(struct cache *c); /* each class's credit and band */

/* evict.c */
bool cache__evict_one(struct cache *c, struct evict_res *r);
bool cache__clock_evict_locked(struct cache *c, struct plist *l, struct evict_res *r);
bool cache__lru_evict_locked(struct cache *c, struct plist *l, struct evict_res *r);

#endif /* TSYNC_CACHE_TYPES_H */
