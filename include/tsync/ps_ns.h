/*
 * tsync/ps_ns.h - ParSec namespaces: flat scalar ids bound to objects, looked up without
 * synchronisation, reused only after quiescence (ParSec (EuroSys 2016) §3.6, with the
 * custom grace periods of §3.7).
 *
 * A namespace maps ids in [0, 2^id_bits) to objects of one size. System code uses one
 * wherever it hands out opaque tokens that it must translate back to a node: file
 * descriptors, virtual pages of an address space, physical frames (apps/vmdb uses all
 * three kinds). Three properties make it scale:
 *
 *  - Lookup (ps_ns_lookup) walks a lock-less radix trie of fixed height inside a
 *    parallel section: height loads, no store to any shared line, no lock, no reference
 *    count. Interior trie nodes are never freed while the namespace lives.
 *  - Allocation and free of ids scale like ps_alloc/ps_free: each thread keeps a cache
 *    of free ids per extent size and touches the namespace's id pool (one mutex) only to
 *    refill or flush half a cache. An id and its object are allocated together; the
 *    object comes from the namespace's own ps_mem, so the id's leaf entry shares the
 *    slab object header ("tracked as memory", §3.6).
 *  - ps_ns_free unbinds the id at once (new lookups return NULL) and hands the object to
 *    ps_free; the id (and object) become reusable only when quiescence for the free time
 *    and the namespace's custom grace hook both agree. So a reader that looked an id up
 *    inside a section can never see that id bound to another object before its section
 *    ends (docs/design.md §5).
 *
 * Extents: ps_ns_alloc_extent reserves 2^k contiguous ids aligned to 2^k (the "mmap of
 * npages" of §3.6), one free list per extent size. Ids of an extent are bound and freed
 * one by one; the extent returns to its size's free list when the last of its ids has
 * passed its grace period (or, with PS_NS_EXTENT_SINGLY, each id returns on its own).
 * A free list that runs dry is refilled from never-used ids and then by splitting a
 * larger free extent; freed extents are not merged with their neighbours in the lists
 * (no buddy coalescing). When the caller's cache and the pool are both dry, the
 * allocation gives its other caches back to the pool and last scans the trie for free
 * ids (or an aligned run of 2^k of them) that other threads' caches hold, and claims
 * them there: ENOSPC means every id (every aligned run) was seen bound, reserved, in
 * its grace period or claimed during the call. The scan costs one load per id of the
 * space; it runs only in a namespace that is (nearly) full.
 *
 * Id states, one word per id in the trie's leaves: free, reserved (claimed by an
 * allocation, not yet published - lookups return NULL), bound (published: lookups
 * return the object), in grace (freed, waiting for quiescence and the hook). The word's
 * compare-and-swap decides every race between allocators (ps_ns_alloc_at against a
 * cached free id, two ps_ns_alloc_at of one id): exactly one wins. An extent is claimed
 * word by word through a transient claimed state that only its claimer resolves (to
 * reserved when all its ids were free, back to free otherwise); ps_ns_alloc_at of such
 * an id waits for that outcome, so a claim that fails never makes an id look taken.
 *
 * Memory: per id in a populated leaf of 512 ids, one 8-byte word (a 4 KiB
 * leaf once any of its ids was used), plus interior nodes (1/512 of that per
 * level); per bound id, one object of obj_size plus a small tail (its id, extent and
 * leaf word) plus ps_mem's object header, rounded to the allocator's alignment. A
 * namespace of 2^40 ids costs nothing for ids never used.
 *
 * Threads: any thread may call any function here (registers lazily; a thread not
 * registered explicitly has its records allocated at its first use of ns: the
 * allocation calls report a failure, ps_ns_free aborts; <tsync/thread.h>).
 */
#ifndef TSYNC_PS_NS_H
#define TSYNC_PS_NS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/ps_mem.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps_ns;

/* Largest id space: ids are below 2^PS_NS_ID_BITS_MAX (a trie of at most 7 levels). */
#define PS_NS_ID_BITS_MAX 60u
/* Largest extent: 2^PS_NS_ORDER_MAX ids. */
#define PS_NS_ORDER_MAX 20u

/* Which free id an allocation takes (cfg->id_policy). */
enum ps_ns_id_policy {
	/* Lowest free (default): a refill takes the lowest free ids of the pool before
	 * never-used ones, so the id space, and the trie, stay dense. Ids a thread already
	 * holds in its cache (its last refill and the ids its own reclamation returned) are
	 * used first, lowest first, and a full cache gives its highest ids back to the pool;
	 * so an allocation returns the lowest id of the caller's cache, not necessarily the
	 * lowest free id of the whole namespace. */
	PS_NS_ID_LOWEST = 0,
	/* Cyclic: never-used ids in increasing order until the space is exhausted, then
	 * freed ids in the order they came back (oldest first), like process ids: an id is
	 * reused as late as possible. Costs the pool mutex once per reclaimed id (they go
	 * straight to the back of the pool's FIFO, not to a cache). */
	PS_NS_ID_CYCLIC = 1,
};

/* When the ids of an extent become reusable (cfg->extent_policy). */
enum ps_ns_extent_policy {
	/* Whole (default): the extent returns, as one extent of its size, when the last of
	 * its bound ids has passed its grace period; until then every id of it stays taken
	 * (ps_ns_alloc_at: EEXIST or EBUSY). */
	PS_NS_EXTENT_WHOLE = 0,
	/* Singly: each bound id of the extent is free on its own once it passed its grace
	 * period (a partial munmap: an address space's pages, physical frames) - for
	 * ps_ns_alloc_at, and for an allocation whose cache and pool ran dry (the scan);
	 * the free lists hand the extent out again, whole, when its last bound id has
	 * passed (the ids beyond n with it), unless one of its ids was taken meanwhile. */
	PS_NS_EXTENT_SINGLY = 1,
};

/*
 * ps_ns_grace_fn - a custom grace period for ids: may obj and its id be reused?
 *
 * Arguments:  ns; obj (do not write it); id, its id; free_time, its stamp in ticks; arg,
 *             cfg->grace_arg.
 * Returns:    true to let them be reused, false to keep them (asked again at the next
 *             reclamation; ids freed later by the same thread wait behind).
 * Progress:   must be short (as ps_mem_grace_fn).
 * Caller:     called after normal quiescence, in free-time order per freeing thread;
 *             it must not allocate or free on ns.
 * Implements: ParSec (EuroSys 2016) §3.7.
 */
typedef bool (*ps_ns_grace_fn)(struct ps_ns *ns, void *obj, uint64_t id, tsync_tick_t free_time,
			       void *arg);

/* Configuration for ps_ns_create(). Zero-initialise, set size, change what you need. */
struct ps_ns_config {
	size_t size;             /* sizeof(struct ps_ns_config) */
	unsigned id_bits;        /* ids are in [0, 2^id_bits): 1..PS_NS_ID_BITS_MAX (default 32) */
	unsigned max_order;      /* largest extent 2^max_order ids, <= min(id_bits,
				  * PS_NS_ORDER_MAX) (default min(10, id_bits)) */
	int id_policy;           /* enum ps_ns_id_policy (default PS_NS_ID_LOWEST) */
	unsigned id_cache;       /* ids each thread caches per extent size (default 64 for
				  * single ids, a quarter of it, at least 4, for extents) */
	ps_ns_grace_fn grace_fn; /* custom grace period hook, or NULL */
	void *grace_arg;
	/* The object allocator's configuration (<tsync/ps_mem.h>), or NULL for defaults.
	 * Its grace_fn must be NULL (the namespace installs its own and calls grace_fn
	 * above from it). */
	const struct ps_mem_config *mem;
	int extent_policy; /* enum ps_ns_extent_policy (default PS_NS_EXTENT_WHOLE) */
};
#define PS_NS_CONFIG_INIT                                                                \
	{                                                                                \
		sizeof(struct ps_ns_config), 0, 0, PS_NS_ID_LOWEST, 0, NULL, NULL, NULL, \
			PS_NS_EXTENT_WHOLE                                               \
	}

/*
 * ps_ns_create - a namespace of objects of obj_size bytes, reclaimed through ps.
 *
 * Arguments:  ps: the parallel-section domain. obj_size: bytes per object (> 0). cfg:
 *             the configuration, or NULL for the defaults.
 * Returns:    the namespace; NULL with errno = EINVAL (obj_size 0, bad cfg field or
 *             size, a cfg->mem with a grace_fn) or ENOMEM (also when the records of the
 *             explicitly registered threads, allocated now, cannot be: <tsync/thread.h>).
 * Progress:   blocking (allocates, also every explicitly registered thread's records;
 *             takes the registry mutex).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
struct ps_ns *ps_ns_create(struct ps *ps, size_t obj_size, const struct ps_ns_config *cfg);

/*
 * ps_ns_destroy - free the namespace, its trie, its id pool and every object (live or
 * pending).
 *
 * Arguments:  ns: the namespace, or NULL (ignored).
 * Progress:   blocking.
 * Caller:     any thread, once (not checked) no thread uses ns or its objects any more
 *             and none is inside a section holding one.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
void ps_ns_destroy(struct ps_ns *ns);

/*
 * ps_ns_alloc - a free id and a new object bound to it, in the reserved state: lookups
 * return NULL for the id until ps_ns_publish(ns, obj). Contents unspecified (as ps_alloc's).
 *
 * Arguments:  id: receives the id.
 * Returns:    the object; NULL with errno = ENOSPC (every id is bound, reserved or in its
 *             grace period), EINVAL (ns or id NULL), or ENOMEM or EAGAIN (as ps_alloc's,
 *             also for the thread's records: see Threads above).
 * Progress:   wait-free on the fast path (an id from the caller's cache, one CAS on its
 *             leaf word, a ps_alloc); a refill takes the pool mutex and may allocate trie
 *             nodes; a full namespace is scanned before ENOSPC (see Extents above).
 * Caller:     any thread, inside or outside a section.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
void *ps_ns_alloc(struct ps_ns *ns, uint64_t *id);

/*
 * ps_ns_alloc_at - bind the chosen id to a new object (reserved state, as ps_ns_alloc).
 *
 * Arguments:  id: the id wanted (a copy of it in some thread's cache is skipped later).
 * Returns:    the object; NULL with errno = EINVAL (ns NULL), ERANGE (id outside the
 *             space), EEXIST (id bound or reserved, also as part of an extent), EBUSY (id
 *             still in its grace period, after one reclamation of the caller's own
 *             queue), or ENOMEM or EAGAIN (as ps_ns_alloc's).
 * Progress:   wait-free apart from trie node allocation, that reclamation, and a wait for
 *             the outcome of an extent claim in progress over id (at most 2^k CASes of
 *             the claimer, longer only if it is preempted: docs/design.md §9.7).
 * Caller:     any thread, inside or outside a section.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
void *ps_ns_alloc_at(struct ps_ns *ns, uint64_t id);

/*
 * ps_ns_alloc_extent - reserve 2^k contiguous ids aligned to 2^k, k the smallest with
 * 2^k >= n, and bind the first n of them to new objects (reserved state); the ids beyond
 * n stay reserved, unbound, until the extent returns.
 *
 * Arguments:  n: objects, in [1, 2^max_order]. base: receives the first id. objs:
 *             receives the objects (objs[i] has id *base + i).
 * Returns:    0, or -1 with errno = EINVAL (n out of range, NULL argument), ENOSPC (no
 *             aligned run of 2^k free ids was found) or ENOMEM (any allocation failed,
 *             the thread's records and a full registry included; nothing is left claimed).
 * Progress:   n ps_alloc calls, 3 x 2^k leaf-word accesses, a small record per extent;
 *             a refill as ps_ns_alloc.
 * Caller:     any thread, inside or outside a section.
 * Implements: ParSec (EuroSys 2016) §3.6 (the "mmap of npages").
 */
int ps_ns_alloc_extent(struct ps_ns *ns, size_t n, uint64_t *base, void **objs);

/*
 * ps_ns_publish - make a reserved object visible: lookups of its id return obj from now
 * on.
 *
 * Arguments:  obj: from an allocation on ns, neither published nor freed (checked:
 *             aborts with a diagnostic).
 * Progress:   wait-free.
 * Ordering:   release store: everything the caller wrote to obj before happens-before a
 *             lookup that returns it.
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
void ps_ns_publish(struct ps_ns *ns, void *obj);

/*
 * ps_ns_free - unbind obj's id (lookups return NULL from now on) and free obj with
 * ps_free: the id and the object are reused only after every section of ns's ps active
 * now has ended and the grace hook (if any) agreed. Marks obj freed for ps_lock_take.
 *
 * Arguments:  obj: from ns, published or still reserved, or NULL (ignored). A foreign
 *             object or a double free aborts with a one-line diagnostic (two racing
 *             frees may both pass: freeing is the owner's act, as for free(3)).
 * Progress:   wait-free apart from ps_free's reclamation work.
 * Caller:     any thread, inside or outside a section (a lazily registered one aborts if
 *             its record cannot be allocated: see Threads above).
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
void ps_ns_free(struct ps_ns *ns, void *obj);

/*
 * ps_ns_id - the id obj is bound to (reserved, published or freed).
 *
 * Progress:   wait-free.
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
uint64_t ps_ns_id(const struct ps_ns *ns, const void *obj);

/*
 * ps_ns_next - iteration over published ids.
 *
 * Loop: for (id = 0; (o = ps_ns_next(ns, &id)); id++). Ids bound or freed during the
 * walk may or may not be seen.
 *
 * Arguments:  id: in: the first id to consider; out: the id of the object returned.
 * Returns:    the published object with the smallest id >= *id, or NULL (errno
 *             unchanged) when there is none.
 * Progress:   no store to shared memory; cost: the trie nodes walked.
 * Caller:     any thread inside a section of ns's ps; use the objects only within it.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
void *ps_ns_next(struct ps_ns *ns, uint64_t *id);

/*
 * ps_ns_ps, ps_ns_mem, ps_ns_obj_size, ps_ns_capacity - a namespace's properties.
 *
 * Returns:    the ps; the object allocator (for ps_mem_stats; do not ps_free its objects
 *             directly); the object size asked for, in bytes; the number of ids
 *             (2^id_bits).
 * Progress:   wait-free.
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
struct ps *ps_ns_ps(const struct ps_ns *ns);
struct ps_mem *ps_ns_mem(const struct ps_ns *ns);
size_t ps_ns_obj_size(const struct ps_ns *ns);
uint64_t ps_ns_capacity(const struct ps_ns *ns);

/* Counters, summed over threads without stopping them (exact when they are quiet).
 * Counts of events are totals since creation; "now" fields are snapshots. */
struct ps_ns_stats {
	uint64_t live;           /* ids reserved or published now (allocations - frees) */
	uint64_t grace;          /* ids freed, not yet reusable, now (frees - reclaimed) */
	uint64_t allocs;         /* ids allocated: ps_ns_alloc, ps_ns_alloc_at, extents (n) */
	uint64_t frees;          /* ps_ns_free calls */
	uint64_t reclaimed;      /* ids reusable again (passed quiescence and the hook) */
	uint64_t extents;        /* ps_ns_alloc_extent calls with n > 1 */
	uint64_t grace_refusals; /* custom grace hook refusals, count */
	uint64_t refills;        /* id cache refills from the pool (pool mutex), count */
	uint64_t flushes;        /* id cache flushes to the pool (pool mutex), count */
	uint64_t fresh;          /* never-used ids taken, in ids */
	uint64_t splits;         /* free extents split into smaller ones, count */
	uint64_t stale;          /* cached or pooled ids skipped, in ids: claimed by
				  * ps_ns_alloc_at or by another thread's scan */
	uint64_t scans;          /* allocations that found their cache and the pool dry and
				  * scanned the trie (the last step before ENOSPC), count */
	uint64_t pool_ids;       /* ids in the pool's free lists now (stale ones included) */
	uint64_t trie_nodes;     /* trie nodes allocated (4 KiB each), count */
	uint64_t trie_bytes;     /* bytes of trie nodes: trie_nodes x 4096 */
};
/*
 * ps_ns_stats - ns's counters.
 *
 * Arguments:  out: filled with the counters.
 * Returns:    0, or -1 with errno = EINVAL (ns or out NULL).
 * Progress:   blocking: takes the pool mutex briefly.
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
int ps_ns_stats(struct ps_ns *ns, struct ps_ns_stats *out);

/*
 * ps_ns_lookup - the object published under id.
 *
 * The object stays valid (not reused) until the caller's section ends, even if another
 * thread frees it meanwhile - check ps_lock_take or your own state if you must know.
 *
 * Returns:    the object; NULL if id is free, reserved, in grace or never used; NULL
 *             with errno = ERANGE for an id outside the space.
 * Progress:   wait-free: at most `height` acquire loads (ceil(id_bits / 9)), no store to
 *             any shared line, no lock, no reference count.
 * Ordering:   acquire; pairs with ps_ns_publish's release.
 * Caller:     any thread inside a section of ns's ps.
 * Implements: ParSec (EuroSys 2016) §3.6.
 */
static inline void *ps_ns_lookup(struct ps_ns *ns, uint64_t id);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_NS_H */

/* The inline bodies (not API). */
#include <tsync/static/ps_ns.h>
