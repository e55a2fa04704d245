/*
 * tsync/ps_mem.h - the SMR-integrated slab allocator (ParSec memory, seed 000 §3.4,
 * with the predictable remote frees of seed 004 Appendix A).
 *
 * A struct ps_mem hands out objects of one size. ps_free() does not make an object
 * reusable: it marks the object freed and appends it to the calling thread's
 * quiescence queue, where it is stamped with a free time: one ordered clock reading
 * (tsync_now_ordered(), ~23 ns on x86-64) per cfg->stamp_batch frees stamps every
 * object freed since the previous one. A later reading is a valid free time (it only
 * delays reuse), so the queue stays ordered by free time at a fraction of the cost.
 * Objects leave that queue - a bounded batch per ps_free/ps_alloc call, never waiting
 * on another thread - once ps_quiesce() says every section active at their free time
 * has ended. When nothing has quiesced, ps_alloc takes fresh memory rather than wait
 * (seed 000 §3.2).
 *
 * Layers, each with countable events (the Prudence policies of seed 001 build on them):
 *   quiescence queue (per thread)  --reclaim-->  object cache (per thread, capacity C)
 *   object cache  --flush C/2 / refill C/2-->  slabs owned by the thread
 *   slabs  <-->  the instance's slab pool (a mutex, slow path only)  <-->  the system
 * A slab is one page-aligned chunk (slab_size bytes, a power of two) whose objects each
 * carry a header: the free time, the queue link, and the owning slab. Each slab is
 * owned by one thread; an object returned to a slab owned by another thread ("remote
 * free") goes onto that owner's remote list for the freeing thread's id modulo
 * PS_MEM_REMOTE_LINES, each list head on its own cache line, pushed with a
 * compare-and-swap that only freeing threads sharing that line contend on. The owner
 * takes whole lists with one exchange when it refills. Fully free slabs beyond
 * cfg->slabs_kept go back to the system.
 *
 * Threads: any thread may allocate and free any object of any ps_mem. Objects are
 * aligned to cfg->align (default 16).
 */
#ifndef TSYNC_PS_MEM_H
#define TSYNC_PS_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <tsync/ps.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps_mem;

#define PS_MEM_REMOTE_LINES 8

/* Configuration for ps_mem_create(); PS_MEM_CONFIG_INIT gives the defaults (0 = default
 * for every field but size). */
struct ps_mem_config {
	size_t size;          /* sizeof(struct ps_mem_config) */
	size_t align;         /* object alignment, a power of two <= 4096 (default 16) */
	size_t slab_size;     /* bytes per slab, a power of two >= 4096 (default 64 KiB, or
			       * larger so that a slab holds at least 8 objects) */
	unsigned cache_size;  /* per-thread object cache capacity C (default 64) */
	unsigned reclaim_batch; /* most objects reclaimed per ps_free/ps_alloc (default 16) */
	unsigned slabs_kept;  /* fully free slabs kept in the pool before unmapping (def. 4) */
	unsigned stamp_batch; /* frees per ordered clock reading (default reclaim_batch);
			       * 1: every free gets its own time (the precise contract
			       * that real-time analysis assumes, at ~23 ns per free) */
};
#define PS_MEM_CONFIG_INIT {sizeof(struct ps_mem_config), 0, 0, 0, 0, 0, 0}

/*
 * ps_mem_create: an object allocator of obj_size-byte objects reclaimed through ps.
 * cfg: NULL for defaults. Returns NULL with errno = EINVAL (obj_size 0 or too large for
 * a slab, bad alignment/slab size, bad cfg->size) or ENOMEM. Blocking. Any thread.
 */
struct ps_mem *ps_mem_create(struct ps *ps, size_t obj_size, const struct ps_mem_config *cfg);

/*
 * ps_mem_destroy: return every slab to the system, including objects still pending in
 * quiescence queues. Precondition (not checked): no thread uses m or any of its objects
 * any more, and none is inside a section holding one. NULL is ignored. Blocking.
 */
void ps_mem_destroy(struct ps_mem *m);

/*
 * ps_alloc: an object of m's size, its contents unspecified (they may hold values from
 * an earlier incarnation, but no reader can still see that incarnation).
 * Returns NULL with errno = ENOMEM only when the system refuses more memory.
 * Wait-free on the fast path (pop from the thread's object cache); a refill reclaims at
 * most reclaim_batch quiesced objects (with at most one ps_quiesce scan, whatever the
 * queue length), takes remote-freed objects with one exchange per
 * list, and only then takes the pool mutex or maps a new slab. Never waits for
 * quiescence. Any thread, inside or outside a section.
 */
void *ps_alloc(struct ps_mem *m);

/*
 * ps_free: defer reuse of obj until every section of m's ps active now has ended,
 * including the caller's own. The caller must already have made obj unreachable for
 * new readers (the free time is read after all the caller's earlier stores are visible,
 * tsync_now_ordered(), at this call or at a later one of the same thread: at the
 * stamp_batch-th free since the last stamp, or at the thread's next forced reclamation;
 * a section that begins in between may therefore also hold obj back - it may wait
 * longer, never less; stamp_batch = 1 stamps every free at once). ps_lock_take fails on
 * obj from this call on. obj must come from ps_alloc(m) and not be freed twice (a double
 * free aborts with a diagnostic). Then reclaims at most reclaim_batch objects from the
 * head of the caller's queue: those freed before the caller's published quiescence point
 * (ps_quiescence_point) at the cost of one comparison each, and, once the queue holds at
 * least reclaim_batch objects, more after one ps_quiesce scan - so a scan's loads of
 * other threads' lines are amortised over about reclaim_batch frees (seed 000 §3.4: a
 * longer queue lets one quiescence computation free more). Never waits for another
 * thread; may take the pool mutex only when a flush returns a slab to the pool.
 * NULL is ignored.
 */
void ps_free(struct ps_mem *m, void *obj);

/*
 * ps_mem_reclaim: stamp the caller's queued frees and reclaim the quiesced objects at
 * the head of its queue, not bounded by reclaim_batch, with one scan (ps_quiesce for the
 * newest free time, then for the oldest if that fails). Returns the number reclaimed.
 * Never waits.
 */
size_t ps_mem_reclaim(struct ps_mem *m);

/* The ps_mem an object came from (read from its slab header). Wait-free. */
struct ps_mem *ps_mem_of(const void *obj);
/* The ps an allocator reclaims through, and its object size. */
struct ps *ps_mem_ps(const struct ps_mem *m);
size_t ps_mem_obj_size(const struct ps_mem *m);

/*
 * Counters. Per-thread counters are summed without stopping the threads, so a snapshot
 * taken while others run is approximate (each counter is exact, their sum is not
 * atomic); taken with all threads quiet, it is exact.
 */
struct ps_mem_stats {
	uint64_t in_use;        /* allocated and not freed */
	uint64_t pending;       /* freed, waiting for quiescence (queues + orphaned queues) */
	uint64_t cached;        /* in per-thread object caches */
	uint64_t allocs;        /* ps_alloc calls that returned an object */
	uint64_t frees;         /* ps_free calls */
	uint64_t reclaimed;     /* objects moved from a queue to a cache after quiescence */
	uint64_t slabs;         /* slabs held now (owned by threads or in the pool) */
	uint64_t peak_slabs;    /* most slabs held at once */
	uint64_t cache_refills; /* object-cache refills from slabs */
	uint64_t cache_flushes; /* object-cache flushes to slabs */
	uint64_t slab_grows;    /* slabs obtained from the system */
	uint64_t slab_shrinks;  /* slabs returned to the system */
	uint64_t remote_frees;  /* objects returned to a slab owned by another thread */
	uint64_t max_wait_ticks; /* longest free-to-reclaim time seen, in ticks */
};
/* ps_mem_stats: fill *out. Returns 0, or -1 with errno = EINVAL for NULL arguments.
 * Takes the pool mutex briefly. Any thread. */
int ps_mem_stats(struct ps_mem *m, struct ps_mem_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_MEM_H */
