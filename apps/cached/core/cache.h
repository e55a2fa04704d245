/*
 * apps/cached/core/cache.h - the tsync-cached cache core: a memcached-semantics key/value
 * cache whose lookups run inside ParSec parallel sections (ParSec (EuroSys 2016) §5.2).
 *
 * Design (docs/cached.md, "Cache core"):
 *  - A chained hash table. In the ps variants a lookup (get/gets/gat's read) takes no lock
 *    and writes no shared line except the item's own header, only when a value changes:
 *    the reference bit (once per CLOCK period), the fetched bit (once) and the access time
 *    (once per second): it runs between ps_enter and ps_exit. Every update (set/add/
 *    replace/append/prepend/cas/delete/incr/decr/touch, eviction, expiry, invalidation -
 *    cache_invalidate - and vivification) takes the bucket's lock (a lock
 *    stripe shared by every bucket with the same low hash bits, in the old and the new
 *    table alike), allocates the new item, links it, unlinks the old one and ps_free()s it:
 *    the old item's memory is reused only after every section that could see it has ended.
 *  - The table doubles without stopping readers or moving item memory (see table.c).
 *  - Items come from ps_mem allocators, one per size class (memcached's slab classes:
 *    sizes grow by growth_factor up to item_size_max). Every item is charged its class's
 *    chunk size plus the allocator's per-object header against mem_limit from allocation
 *    until ps_mem reclaims it (garbage waiting for a grace period stays charged, so the
 *    limit bounds item memory however long a reader stays in a section); a store that
 *    would pass the limit first evicts - about its own charge, then it waits for its
 *    victims' grace period rather than evicting more (CLOCK over 64 partitioned lists,
 *    ParSec (EuroSys 2016) §5.2, choosing by GreedyDual-Size-Frequency by default: see
 *    enum cache_evict_policy; a get only sets a reference bit) - or waits a bounded time
 *    for grace periods when garbage holds the memory, and fails with CACHE_NO_MEMORY when
 *    it cannot.
 *  - Expiry is lazy (an expired or flushed item reads as absent and is unlinked by the
 *    next update that meets it) plus a background sweeper (cache_sweeper_start).
 *
 * Variants, for the in-process study (`tsync-bench cache`, ParSec (EuroSys 2016) Figs. 7-8):
 *   CACHE_PS        the design above.
 *   CACHE_PS_NOCRP  ps without a replacement policy: no CLOCK lists, no reference bits; a
 *                   store past mem_limit fails with CACHE_NO_MEMORY (ParSec (EuroSys 2016)'s upper
 * bound). CACHE_MCS_CLOCK "modified memcached": gets take the bucket's MCS lock and a per-item
 *                   reference count; one CLOCK list under one lock (ParSec (EuroSys 2016) §5.2,
 * [15]). CACHE_LOCKED    "stock memcached": pthread mutex bucket locks held by gets, per-item
 *                   reference counts, one LRU list under one global lock, the item moved
 *                   to its head on every access.
 * and for the real-time study (`tsync-bench rt-cache`, RT-SMR (RTAS 2018) §VII-C, Figs.
 * 14-15), which runs ps-nocrp on a PS_POLICY_RT ps (cache_config.ps_policy) beside:
 *   CACHE_MCS       FIFO MCS bucket locks (Concurrency Kit's ck_spinlock_mcs) taken by
 *                   gets and updates alike, per-item reference counts, no replacement
 *                   (no lists, no reference bits; past mem_limit a store fails with
 *                   CACHE_NO_MEMORY, as ps-nocrp).
 *   CACHE_PF_RW     phase-fair reader-writer bucket locks (Concurrency Kit's ck_pflock,
 *                   Brandenburg & Anderson): gets take the read side, every update the
 *                   write side; per-item reference counts, no replacement. A get that
 *                   meets an expired item leaves it for the next update to unlink (it
 *                   holds only the read side).
 * ("Bucket lock": the stripe of buckets with the same low hash bits, as in every variant.)
 *
 * Keys are 1..CACHE_KEY_MAX bytes of any value (the server enforces memcached's no-space/
 * no-control-character rule for the ASCII protocol). Times are seconds.
 *
 * Threads: every function may be called from any thread, concurrently with any other,
 * except cache_create/cache_destroy. Threads register with tsync lazily (<tsync/thread.h>).
 * A thread may call any function while it holds cache_refs, except cache_sweep,
 * cache_grow_now and cache_destroy (they wait for grace periods). It must not block
 * (wait on a socket, sleep) while it holds a cache_ref: in the ps variants that keeps the
 * thread inside a parallel section, which delays the reuse of every item freed meanwhile
 * (memory grows, never corrupts).
 */
#ifndef TSYNC_CACHED_CACHE_H
#define TSYNC_CACHED_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cache;
struct ps;
struct ps_mem;

#define CACHE_KEY_MAX 250u                     /* memcached's KEY_MAX_LENGTH */
#define CACHE_ITEM_SIZE_MAX_DEFAULT (1u << 20) /* memcached -I default: 1 MiB */
#define CACHE_MEM_LIMIT_DEFAULT (64ull << 20)  /* memcached -m default: 64 MiB */
#define CACHE_CLOCK_LISTS 64u                  /* ParSec (EuroSys 2016) §5.2: 64 CLOCK lists */
/* exptime values above this are absolute unix times, at or below relative seconds
 * (memcached's REALTIME_MAXDELTA, 30 days). */
#define CACHE_REALTIME_MAXDELTA (60 * 60 * 24 * 30)

enum cache_variant {
	CACHE_PS = 0,
	CACHE_PS_NOCRP,
	CACHE_MCS_CLOCK,
	CACHE_LOCKED,
	CACHE_MCS,
	CACHE_PF_RW,
};

/*
 * Which item a CLOCK variant (ps, mcs-clock) evicts when memory is needed (docs/cached.md,
 * "Eviction"):
 *  CACHE_EVICT_GDSF   GreedyDual-Size-Frequency over the CLOCK lists: the item of lowest
 *                     priority, L + uses x (2^32 / bytes charged), among the oldest
 *                     unreferenced items of each size band, L rising to each victim's
 *                     priority. At equal memory it keeps more items, and more of the
 *                     ones being read, than CLOCK (the default).
 *  CACHE_EVICT_CLOCK  plain CLOCK, as ParSec (EuroSys 2016) §5.2: the first item whose
 *                     reference bit is clear, whatever its size.
 */
enum cache_evict_policy {
	CACHE_EVICT_GDSF = 0,
	CACHE_EVICT_CLOCK,
};

/* Result codes: one for each reply memcached distinguishes. */
enum cache_status {
	CACHE_OK = 0,      /* hit / deleted / touched / incremented / flushed */
	CACHE_STORED,      /* "STORED" */
	CACHE_NOT_STORED,  /* "NOT_STORED": add on a live key, replace/append/prepend on a
			    * missing one */
	CACHE_EXISTS,      /* "EXISTS": CAS id mismatch (cas, and any op given cas_in != 0) */
	CACHE_NOT_FOUND,   /* "NOT_FOUND" / miss: absent, expired or flushed */
	CACHE_TOO_LARGE,   /* "SERVER_ERROR object too large for cache": the item (header +
			    * key + value) exceeds item_size_max; also append/prepend whose
			    * result would */
	CACHE_NO_MEMORY,   /* "SERVER_ERROR out of memory storing object": mem_limit reached
			    * and nothing evictable (or eviction disabled / ps-nocrp), garbage
			    * not released in time, or the system refused memory (the exact
			    * conditions: cache_store) */
	CACHE_NON_NUMERIC, /* "CLIENT_ERROR cannot increment or decrement non-numeric value" */
	CACHE_BAD_KEY,     /* key length 0 or > CACHE_KEY_MAX ("CLIENT_ERROR bad command line
			    * format" in ASCII, EINVAL in binary) */
	CACHE_BUF_SMALL,   /* cache_get_copy: the value did not fit the caller's buffer */
};

/* A short name for a status ("STORED", "NOT_FOUND", ...). Never NULL. */
const char *cache_status_name(enum cache_status s);
/* "ps", "ps-nocrp", "mcs-clock", "locked", "mcs", "pf-rw"; NULL for an unknown value. */
const char *cache_variant_name(enum cache_variant v);
/* Parse a variant name (as above). Returns 0, or -1 for an unknown name. */
int cache_variant_parse(const char *name, enum cache_variant *out);

/*
 * Configuration for cache_create(). Start from CACHE_CONFIG_INIT (or zero it and set
 * size); 0 in any other field means its default.
 */
/* What cache_config.evict_fn is told of an evicted item (memcached's eviction log). */
struct cache_evicted {
	const char *key;
	size_t nkey;
	uint32_t nbytes; /* value length */
	unsigned cls;    /* size class id (0-based) */
	bool fetched;    /* a get had returned it */
	int64_t ttl;     /* seconds it had left; -1: no expiry */
	uint32_t idle;   /* seconds since its last access */
};

struct ps_mem_reclaim_info;

struct cache_config {
	size_t size;                /* sizeof(struct cache_config) */
	enum cache_variant variant; /* default CACHE_PS */
	uint64_t mem_limit;         /* bytes of item memory (memcached -m, in bytes); default
				     * 64 MiB; at least 1 MiB is enforced (smaller is raised) */
	uint32_t item_size_max;     /* largest item incl. header and key (memcached -I); default
				     * 1 MiB; 1 KiB .. 128 MiB and <= mem_limit / 2 */
	double growth_factor;       /* slab class size factor (memcached -f); default 1.25;
				     * must be > 1.0 */
	uint32_t chunk_min;         /* smallest chunk's value space in bytes (memcached -n);
				     * default 48 */
	unsigned hash_power;        /* initial table size 2^hash_power buckets (memcached
				     * hashpower); default 16; 4 .. 30 */
	bool no_evict;              /* memcached -M: fail with CACHE_NO_MEMORY instead of
				     * evicting */
	bool no_grow;               /* never grow the table (the study sizes it up front) */
	int mem_wait_ms;            /* how long a store may wait for grace periods to release
				     * memory held by freed items before it fails with
				     * CACHE_NO_MEMORY (see cache_store); default (0) 100 ms;
				     * < 0: never wait; at most 60000 */
	enum cache_evict_policy evict_policy; /* ps, mcs-clock: which items CLOCK evicts;
					       * default (0) CACHE_EVICT_GDSF; the locked variant
					       * always evicts its LRU tail */
	unsigned evict_window; /* CACHE_EVICT_GDSF: unreferenced items of each size band one
				* eviction compares when none is overdue; default (0) 4;
				* at most 16 */
	/* Called for each live item evicted (not for expired ones), on the evicting thread,
	 * after the item is unlinked and before its memory can be reused, with a CLOCK list
	 * lock held: it must be short and must not call into the cache. NULL: none. */
	void (*evict_fn)(void *arg, const struct cache_evicted *e);
	void *evict_arg;
	/* Prudence's policies for every size class (ps_mem_config.prudence: 0, the default,
	 * turns them all on; PS_MEM_PRUDENCE_NONE turns them off). */
	unsigned prudence;
	/* The cache's ps policy (enum ps_policy, <tsync/ps.h>): PS_POLICY_GENERAL (0, the
	 * default) or PS_POLICY_RT (RT-ParSec, RT-SMR (RTAS 2018) §IV-A: every reclamation
	 * collects all quiesced garbage, exact accounting with peaks); TEMPORAL is refused
	 * (EINVAL: its readers would not enter sections). Any variant; only the ps ones read
	 * through sections. */
	int ps_policy;
	/* ps_mem_config.reclaim_period_ns of every size class (RT-SMR (RTAS 2018) §V-C's quiescence
	 * period q): 0 (default) every ps_free may reclaim; > 0 at most once per period, the
	 * rest left to cache_collect / cache_reclaim. */
	uint64_t reclaim_period_ns;
	/* Reclamation observer (ps_mem_config.reclaim_fn), called after the cache's own
	 * accounting for every reclamation of any size class, on the reclaiming thread: for
	 * measuring α and β. Same rules as ps_mem_reclaim_fn. NULL: none. */
	void (*reclaim_fn)(void *arg, const struct ps_mem_reclaim_info *info);
	void *reclaim_arg;
};
#define CACHE_CONFIG_INIT                                                                \
	{                                                                                \
		sizeof(struct cache_config), CACHE_PS, 0, 0, 0.0, 0, 0, false, false, 0, \
			CACHE_EVICT_GDSF, 0, NULL, NULL, 0, 0, 0, NULL, NULL             \
	}

/*
 * cache_create: a new, empty cache. cfg NULL means defaults. Creates its own struct ps
 * and one ps_mem per size class. Starts no thread (see cache_sweeper_start).
 * Returns the cache, or NULL with errno = EINVAL (bad cfg field or size) or ENOMEM.
 * Blocking. Any thread.
 */
struct cache *cache_create(const struct cache_config *cfg);

/*
 * cache_destroy: stop the sweeper if running and free everything. Precondition (not
 * checked): no other thread uses c any more and no cache_ref of c is held. NULL is
 * ignored. Blocking.
 */
void cache_destroy(struct cache *c);

/* The configuration in force, defaults filled in (mem_limit after rounding). */
void cache_config_get(const struct cache *c, struct cache_config *out);

/* ---- reads ----------------------------------------------------------------------------- */

/*
 * A reference to a stored item, filled by cache_get/cache_gat. value/nbytes/flags/cas are
 * those of the item at the instant of the lookup (the linearisation point is the load
 * that found it); later updates of the key do not change them (they create a new item).
 * The bytes stay valid and unchanged until cache_release(c, ref) - in the ps variants
 * because the calling thread stays inside a parallel section, in mcs-clock/locked because
 * the item's reference count is held.
 * Rules: release every ref exactly once, on the thread that obtained it, and before the
 * thread blocks (ps variants: refs nest; they may be released in any order). A server
 * therefore copies the value into its output buffer (e.g. evbuffer_add) and releases at
 * once; it may hold several refs while it builds one multi-key reply.
 */
struct cache_ref {
	const char *value; /* nbytes bytes (a memcached value; no trailing "\r\n") */
	uint32_t nbytes;
	uint32_t flags;  /* the client's opaque 32-bit flags */
	uint64_t cas;    /* CAS unique id, > 0 */
	int64_t exptime; /* remaining seconds to live, 0 = never expires (after gat: the
			  * new exptime) */
	bool hit_before; /* a get had returned this item before this one (mg h) */
	bool key_binary; /* stored with a base64 key (cache_store_meta): mg k returns
			  * the key base64, as memcached's ITEM_KEY_BINARY */
	uint32_t idle;   /* seconds since the item's previous access (mg l), as of the
			  * cache's tick: updates and the maintenance thread advance it,
			  * so with neither running it lags the clock */
	void *item_;     /* private */
};

/*
 * cache_get: look up key. On a hit fills *ref and returns CACHE_OK (the caller must
 * cache_release it); on a miss (absent, expired, flushed) returns CACHE_NOT_FOUND and
 * *ref holds nothing to release; CACHE_BAD_KEY for a bad key length.
 * ps / ps-nocrp: lock-free, inside ps_enter/ps_exit, and nearly store-free: the only
 * stores go to the item's own header, each only when its value changes - the reference
 * bit (ps: once per CLOCK period), the fetched bit (once per item) and the access time
 * (at most once per second); mcs-clock/locked: takes the bucket lock (blocking) and
 * an atomic reference count; locked also the global LRU lock. Counts get_hits/misses.
 */
enum cache_status cache_get(struct cache *c, const void *key, size_t nkey, struct cache_ref *ref);

/*
 * cache_gat: get-and-touch (memcached gat/gats, binary GAT): like cache_get, and on a hit
 * first sets the item's exptime (memcached exptime convention, see cache_store). The
 * touch takes the bucket lock in every variant. Counts touch_hits/misses and get_*.
 */
enum cache_status cache_gat(struct cache *c, const void *key, size_t nkey, int64_t exptime,
			    struct cache_ref *ref);

/* cache_release: end a ref from cache_get/cache_gat (see struct cache_ref). Wait-free in
 * the ps variants (ps_exit); mcs-clock/locked may free the item. */
void cache_release(struct cache *c, struct cache_ref *ref);

/* cache_peek: cache_get that leaves the item as it was: not marked fetched, no access
 * time, no CLOCK/LRU reference (a look for the server's own bookkeeping). Same
 * contract as cache_get otherwise (release the ref). */
enum cache_status cache_peek(struct cache *c, const void *key, size_t nkey, struct cache_ref *ref);

/*
 * cache_get_copy: cache_get that copies the value into buf (cap bytes) and releases at
 * once. Returns CACHE_OK with *nbytes, *flags, *cas set (any of them may be NULL);
 * CACHE_NOT_FOUND; CACHE_BAD_KEY; or CACHE_BUF_SMALL with *nbytes = the value's length
 * and nothing copied (the hit is counted). What the study's get does.
 */
enum cache_status cache_get_copy(struct cache *c, const void *key, size_t nkey, void *buf,
				 size_t cap, uint32_t *nbytes, uint32_t *flags, uint64_t *cas);

/*
 * Meta get (memcached's mg with N, R, T; the anti-dogpiling "recache token"). In: vivify
 * (N: on a miss, create an empty item with exptime vivify_ttl, memcached exptime
 * convention), recache (R: win the token when the item's remaining TTL is below
 * recache_ttl seconds), touch (T: set exptime to ttl, as cache_gat). Out: won (W: this
 * caller got the token - it should recompute the value and store it; exactly one caller
 * wins per item version), token_sent (Z: another caller already holds it), stale (X: the
 * item was invalidated by cache_invalidate; stale items win the token like R).
 * An item's token is handed out at most once: a winner's store replaces the item with a
 * fresh one. Returns what cache_get (or cache_gat) returns; with vivify a miss returns
 * CACHE_OK and the new empty item (won = true), or NO_MEMORY/TOO_LARGE. Lock-free like
 * cache_get on a hit, plus one atomic or on the item's header when the token is due;
 * vivify stores (cache_store's blocking rules). Any thread.
 */
struct cache_meta {
	bool vivify, recache, touch;
	bool no_update; /* mg u: read without marking the item fetched or used */
	int64_t vivify_ttl, recache_ttl, ttl;
	bool won, token_sent, stale;
	bool created; /* out: this call made the item (vivify) */
};
enum cache_status cache_mget(struct cache *c, const void *key, size_t nkey, struct cache_meta *m,
			     struct cache_ref *ref);

/* ---- updates: each takes the bucket lock; blocking ----------------------------------- */

enum cache_store_op {
	CACHE_SET = 0, /* store unconditionally */
	CACHE_ADD,     /* store only if absent (expired/flushed counts as absent) */
	CACHE_REPLACE, /* store only if present */
	CACHE_APPEND,  /* value := old value + data; flags and exptime of the old item kept */
	CACHE_PREPEND, /* value := data + old value; flags and exptime kept */
	CACHE_CAS,     /* store only if present and its CAS id equals cas_in */
};

/*
 * cache_store: the storage commands. key/nkey the key, data/nbytes the value, flags the
 * client flags, exptime in memcached's convention: 0 never expires; 1..2592000 (30 days)
 * relative seconds; larger an absolute unix time (in the past = already expired);
 * negative = already expired (the store succeeds and the key then reads as absent).
 * cas_in: for CACHE_CAS the expected CAS id; for the other ops 0 for none. A non-zero
 * cas_in on SET makes it exactly CACHE_CAS (memcached's binary set); on REPLACE/APPEND/
 * PREPEND the present item's id must equal it, else CACHE_EXISTS (absent: NOT_STORED);
 * ADD ignores it.
 * cas_out (may be NULL): the new item's CAS id on CACHE_STORED.
 * Returns: SET: STORED; ADD: STORED or NOT_STORED (live key exists); REPLACE/APPEND/
 * PREPEND: STORED or NOT_STORED (absent); CAS: STORED, EXISTS (id differs), NOT_FOUND
 * (absent); any: TOO_LARGE, NO_MEMORY, BAD_KEY. On any failure the cache is unchanged
 * (except evictions made to find room, and a TOO_LARGE or NO_MEMORY plain SET, which
 * removes the key, as memcached does, so a stale value is not served).
 * The new item becomes visible to gets atomically (one pointer store, release ordering):
 * a get returns either the whole old value or the whole new value.
 * Memory: the new item is charged against mem_limit until its memory is reclaimed (a
 * replaced or evicted item stays charged, as garbage, until the grace period after its
 * free has passed). At the limit a store evicts (CLOCK/LRU) while garbage is under
 * mem_limit / 8. A candidate whose bucket lock another thread holds is passed over for
 * the next; when every candidate is locked, SET, ADD, REPLACE and CAS (which hold no
 * bucket lock while they allocate) wait for a holder to unlock and evict again - they
 * never give up while an item is evictable. When garbage holds the memory (a reader's
 * section holds a grace period back) or nothing is evictable, the store reclaims its own
 * thread's garbage and then - SET, ADD, REPLACE and CAS only, and only outside a section
 * (no cache_ref held) - naps 50 us at a time until memory is released or mem_wait_ms has
 * passed. So with eviction on, SET/ADD/REPLACE/CAS return CACHE_NO_MEMORY only when
 *  - garbage held the memory: it was not released within mem_wait_ms (the caller waited
 *    at least that long), or the caller holds a cache_ref or mem_wait_ms < 0; or
 *  - nothing could be evicted and there was no garbage: no item was linked (the memory
 *    is in items other threads are storing or in replaced items still held by
 *    cache_refs), or every linked item was referenced again while the store's CLOCK
 *    hand swept twice past it; or
 *  - the system refused memory;
 * and with eviction off (no_evict, ps-nocrp, mcs, pf-rw) when the items and the garbage
 * fill mem_limit (after the same wait for garbage). APPEND, PREPEND, incr, decr (and
 * cache_invalidate) allocate under the bucket's lock: they never wait, and also fail when
 * every candidate's bucket lock stayed held by other threads over a few retries. The
 * cause of each refusal is counted (cache_stats: nomem_*). Otherwise non-blocking (the
 * bucket's lock is held for the link only).
 */
enum cache_status cache_store(struct cache *c, enum cache_store_op op, const void *key, size_t nkey,
			      const void *data, size_t nbytes, uint32_t flags, int64_t exptime,
			      uint64_t cas_in, uint64_t *cas_out);

/*
 * cache_cas_invalidating: memcached's `ms key ... I C<cas_in>`: as cache_store(CACHE_CAS),
 * except that a cas_in older (smaller) than the item's CAS id still stores the value, as
 * a stale item (cache_mget reports X) that keeps the replaced item's exptime (exptime is
 * then ignored) and its recache token state. A newer cas_in: CACHE_EXISTS. Returns what
 * cache_store(CACHE_CAS) returns. Same blocking rules.
 */
/* cache_store_meta: cache_store for meta's ms; key_binary records that the client sent
 * the key in base64 (ms b), which mg's k flag then echoes base64 with b (memcached). */
enum cache_status cache_store_meta(struct cache *c, enum cache_store_op op, const void *key,
				   size_t nkey, const void *data, size_t nbytes, uint32_t flags,
				   int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				   bool key_binary);
enum cache_status cache_cas_invalidating(struct cache *c, const void *key, size_t nkey,
					 const void *data, size_t nbytes, uint32_t flags,
					 int64_t exptime, uint64_t cas_in, uint64_t *cas_out);

/*
 * cache_invalidate: memcached's `md key I [T]`: instead of removing key, mark it stale:
 * gets still return it, cache_mget reports it stale and hands its recache token to one
 * caller (the token of the item before is forgotten). The item is replaced by a copy
 * (same value, flags; a new CAS id), with exptime set to exptime (memcached convention)
 * if set_ttl, else unchanged. cas_in 0 or the CAS id it must have. Returns CACHE_OK,
 * CACHE_NOT_FOUND, CACHE_EXISTS (cas_in differs), CACHE_NO_MEMORY (no room for the copy;
 * never waits: it allocates under the bucket's lock), CACHE_BAD_KEY. Blocking (the
 * bucket's lock). Any thread.
 */
enum cache_status cache_invalidate(struct cache *c, const void *key, size_t nkey, uint64_t cas_in,
				   bool set_ttl, int64_t exptime);

/*
 * cache_delete: remove key. cas_in 0, or the CAS id it must have (binary/meta delete).
 * Returns CACHE_OK ("DELETED"), CACHE_NOT_FOUND, CACHE_EXISTS (cas_in differs),
 * CACHE_BAD_KEY. The item is ps_free()d: a get that already holds it keeps a valid copy.
 */
enum cache_status cache_delete(struct cache *c, const void *key, size_t nkey, uint64_t cas_in);

/*
 * cache_incr / cache_decr semantics (memcached): the value must be a decimal number of
 * at most 20 digits, optionally followed by spaces (CACHE_NON_NUMERIC otherwise, also
 * when it exceeds 2^64-1); incr adds delta modulo 2^64; decr subtracts and stops at 0.
 * The new value is stored as a new item holding the decimal digits (flags and exptime
 * kept, new CAS id).
 * cas_in: 0, or the CAS id the item must have (binary protocol) else CACHE_EXISTS.
 * Returns CACHE_OK with *result (and *cas_out if non-NULL) set, CACHE_NOT_FOUND,
 * CACHE_NON_NUMERIC, CACHE_EXISTS, CACHE_NO_MEMORY, CACHE_BAD_KEY. (Binary incr with an
 * initial value: on CACHE_NOT_FOUND the server calls cache_store(CACHE_ADD, ...) and
 * retries on NOT_STORED, as memcached does.)
 */
enum cache_status cache_incr(struct cache *c, const void *key, size_t nkey, bool decr,
			     uint64_t delta, uint64_t cas_in, uint64_t *result, uint64_t *cas_out);

/*
 * cache_touch: set key's exptime (convention of cache_store) without changing its value
 * or CAS id. Returns CACHE_OK ("TOUCHED"), CACHE_NOT_FOUND, CACHE_BAD_KEY.
 */
enum cache_status cache_touch(struct cache *c, const void *key, size_t nkey, int64_t exptime);

/*
 * cache_flush_all: invalidate every item stored before now + delay seconds, effective at
 * now + delay (delay <= 0: at once; memcached's flush_all [delay], with delay in the
 * cache_store exptime convention when > 30 days). Items read as absent from then on and
 * are freed by the sweeper or by updates that meet them. Returns CACHE_OK. Wait-free
 * (two stores); does not walk the table.
 */
enum cache_status cache_flush_all(struct cache *c, int64_t delay);

/* ---- time, sweeper, maintenance ------------------------------------------------------ */

/*
 * cache_now: the cache's clock, in seconds (memcached's current_time, rel_time_t): 2 at
 * cache_create (as in memcached, so that 1 can mean "already expired"), then
 * CLOCK_MONOTONIC_COARSE seconds since, plus the offset added by cache_time_advance.
 */
uint32_t cache_now(const struct cache *c);

/*
 * cache_time_advance: move the cache's clock forward by seconds (> 0), for tests and
 * for a server's debug command; expiry and delayed flushes see the new time at once.
 * Wait-free.
 */
void cache_time_advance(struct cache *c, uint32_t seconds);

/*
 * cache_sweeper_start: start the background maintenance thread: every interval_ms
 * milliseconds (0 = 1000) it walks the table (up to 2^20 buckets per interval, so a
 * larger table takes several intervals a pass) and unlinks and frees expired and flushed
 * items, then reclaims what it freed; and it performs table growth
 * requested by stores. Returns 0, or -1 with errno (EBUSY if already running, or
 * pthread_create's error). Without it, the storing thread that triggers growth grows the
 * table itself (blocking that store for the copy of the chains).
 */
int cache_sweeper_start(struct cache *c, unsigned interval_ms);
/* cache_sweeper_stop: stop and join the maintenance thread (no-op if not running). */
void cache_sweeper_stop(struct cache *c);

/*
 * cache_reclaim: make the memory of items this thread freed reusable where their grace
 * period has passed (ps_mem_reclaim on every size class), and give their charge back to
 * mem_limit. Garbage is otherwise reclaimed by the freeing thread's later stores and
 * deletes; a thread that goes idle after freeing (a server worker between requests)
 * should call this, or its garbage stays charged until it works again. Returns the number
 * of items reclaimed. Never waits; O(size classes). Any thread (its own garbage only).
 */
size_t cache_reclaim(struct cache *c);

/*
 * cache_sweep: one full synchronous pass over the table: unlink and free every expired or
 * flushed item. Returns how many it removed. Blocking (takes each bucket lock in turn).
 * Must not be called while the caller holds a cache_ref.
 */
size_t cache_sweep(struct cache *c);

/*
 * cache_grow_now: double the table now (as the maintenance thread does), readers
 * unaffected. Returns 0, or -1 with errno = EBUSY (a growth is in progress), ERANGE (at
 * the 2^30 bucket limit) or ENOMEM. Must not be called while the caller holds a cache_ref
 * (it waits for a grace period).
 */
int cache_grow_now(struct cache *c);

/*
 * The cache's ps and its size classes' allocators, for callers that run reclamation as
 * their own task (RT-SMR (RTAS 2018) §V-C's σ: ps_quiesce_time, then cache_collect).
 * cache_class_mem: NULL for a bad class id. Pure; any thread.
 */
struct ps *cache_ps(const struct cache *c);
struct ps_mem *cache_class_mem(const struct cache *c, unsigned cls);

/*
 * cache_collect: ps_mem_collect on every size class: make the calling thread's freed
 * items reusable up to its last computed quiescence point (ps_quiesce_time(cache_ps(c))),
 * computing none, and give their charge back to mem_limit. Returns the number collected.
 * Never waits; bounded by the caller's queue. Any thread (its own garbage only).
 */
size_t cache_collect(struct cache *c);

/* ---- statistics ---------------------------------------------------------------------- */

/*
 * Counters, memcached's names where one exists. Per-thread counters are summed without
 * stopping the threads (each exact, the snapshot approximate while others run).
 */
struct cache_stats {
	/* items */
	uint64_t curr_items;        /* linked items (expired-but-unswept ones included) */
	uint64_t total_items;       /* items ever stored */
	uint64_t bytes;             /* charged bytes of items not yet freed (linked, or held
				     * by a cache_ref after an update replaced them) */
	uint64_t limit_maxbytes;    /* mem_limit */
	uint64_t evictions;         /* live items removed to make room */
	uint64_t expired_unfetched; /* (not tracked: 0) */
	uint64_t reclaimed;         /* expired/flushed items removed by updates or the sweeper */
	uint64_t sweeper_runs;      /* sweeper passes (partial passes count) */
	/* commands */
	uint64_t cmd_get, get_hits, get_misses, get_expired, get_flushed;
	uint64_t cmd_set; /* every cache_store call */
	uint64_t cmd_touch, touch_hits, touch_misses;
	uint64_t delete_hits, delete_misses;
	uint64_t incr_hits, incr_misses, decr_hits, decr_misses;
	uint64_t cas_hits, cas_misses, cas_badval;
	uint64_t cmd_flush;
	uint64_t store_too_large, store_no_memory;
	/* Allocations refused with CACHE_NO_MEMORY, by cause (cache_store's "Memory"
	 * paragraph), counted for every update that allocates (stores, incr/decr, cache_mget's
	 * vivify, cache_invalidate): they sum to all CACHE_NO_MEMORY replies of those. */
	uint64_t nomem_full;    /* nothing to evict and no garbage: eviction off, no item
				 * linked, or every item referenced again during the sweeps */
	uint64_t nomem_garbage; /* garbage held the memory: not released within mem_wait_ms,
				 * or the caller could not wait for it */
	uint64_t nomem_busy;    /* every candidate's stripe locked by another thread, and the
				 * caller (holding a stripe lock) could not wait for it */
	uint64_t nomem_system;  /* the allocator refused (the system's memory) */
	uint64_t evict_waits;   /* times a store waited for the holder of a candidate's
				 * stripe lock instead of giving up */
	uint64_t mem_waits;     /* stores that napped waiting for garbage to be released */
	/* hash table */
	uint64_t hash_power_level;
	uint64_t hash_bytes;
	uint64_t hash_is_expanding;
	uint64_t hash_expansions;
	/* memory: ps_mem allocators summed over the size classes (<tsync/ps_mem.h>) */
	uint64_t total_malloced; /* bytes of slabs held (slabs * slab size) */
	uint64_t slabs, peak_slabs;
	uint64_t mem_in_use;  /* objects allocated and not freed */
	uint64_t mem_pending; /* freed, waiting for quiescence */
	uint64_t mem_cached;  /* in per-thread object caches */
	uint64_t mem_frees, mem_reclaimed;
	uint64_t mem_max_wait_ns;   /* longest free-to-reuse time seen */
	uint64_t mem_charged;       /* bytes + mem_garbage_bytes: what mem_limit bounds */
	uint64_t mem_garbage_bytes; /* charged bytes of freed items waiting for a grace
				     * period (still occupying slab memory) */
	/* quiescence: the calling thread's ps_quiesce counters (struct ps_stats) */
	uint64_t quiesce_calls, quiesce_true;
};
/* cache_mem_stats: the item allocator's counters, every size class summed (ps_kmem_stats:
 * Prudence's churn and fragmentation measures among them). Returns 0, or -1 with errno
 * = EINVAL. Takes each class's pool mutex briefly. Any thread. */
struct ps_mem_stats;
int cache_mem_stats(struct cache *c, struct ps_mem_stats *out);

/* cache_stats: fill *out. Takes each size class's pool mutex briefly. Any thread. */
void cache_stats(struct cache *c, struct cache_stats *out);

/* Per size class ("stats slabs" / "stats items"). */
struct cache_class_stats {
	uint32_t chunk_size;    /* bytes per item of this class (header + key + value) */
	uint64_t charged;       /* bytes charged per item (chunk + allocator header) */
	uint64_t used_chunks;   /* linked items of this class */
	uint64_t total_slabs;   /* ps_mem slabs held */
	uint64_t slab_bytes;    /* bytes per slab */
	uint64_t evicted;       /* evictions of this class */
	uint64_t mem_requested; /* bytes its allocated items asked for (header + key +
				 * value), memcached's mem_requested */
	uint64_t reclaimed;     /* its items found expired or flushed and unlinked */
};
/* The class id an item of key length nkey and value length nbytes goes to, or -1 when it
 * is larger than -I. Pure; any thread. */
int cache_class_for(const struct cache *c, size_t nkey, size_t nbytes);
/* Number of size classes (class ids 0 .. n-1, chunk sizes increasing). */
unsigned cache_nclasses(const struct cache *c);
/* Fill *out for class id cls. Returns 0, or -1 for a bad id. */
int cache_class_stats(struct cache *c, unsigned cls, struct cache_class_stats *out);

/*
 * cache_dump_class ("stats cachedump"): call fn once for each live item of size class
 * cls, at most limit items (0: no limit), in hash-table order, with its key, value length
 * and remaining time to live in seconds (-1: never expires). Stops early when fn returns
 * false. Returns the number of items passed to fn, or -1 for a bad class id.
 * Blocking: holds the table-growth mutex for the walk and each bucket's lock while its
 * chain is read, so fn must not call into the cache and should be short (copy and go
 * on). A diagnostic: it costs a pass over the whole table. Any thread.
 */
long cache_dump_class(struct cache *c, unsigned cls, unsigned long limit,
		      bool (*fn)(void *arg, const char *key, size_t nkey, uint32_t nbytes,
				 int64_t ttl),
		      void *arg);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_CACHED_CACHE_H */
