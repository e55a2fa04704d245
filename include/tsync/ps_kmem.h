/*
 * tsync/ps_kmem.h - allocation by size over ps_mem: a kmalloc-style front end of size
 * classes (Prudence (ASPLOS 2016) §4: kmalloc, kfree_deferred and kfree over slab caches
 * that see deferred frees), each class one struct ps_mem of <tsync/ps_mem.h>.
 *
 * Classes grow geometrically like memcached's slab classes: the smallest holds
 * cfg->min_size bytes, each next one growth_factor times more (rounded up to the
 * alignment), the largest cfg->max_size. An allocation takes the smallest class that
 * holds it. Classes of small objects share slabs of several objects each (sized by
 * ps_mem's rule, <tsync/ps_mem.h> struct ps_mem_config.slab_size: a page multiple that
 * holds the class's object cache, 4 to 64 KiB); an object
 * above a size threshold (an implementation constant, a few KiB) has a slab of its own,
 * rounded up to a page, which goes back to the pool as soon as the object is reclaimed
 * (<tsync/ps_mem.h>), so memory freed in one class is free for every class once its slab
 * is unmapped.
 *
 * Every function may be called by any thread, inside or outside a section of the ps the
 * instance was created with, unless its contract says otherwise.
 */
#ifndef TSYNC_PS_KMEM_H
#define TSYNC_PS_KMEM_H

#include <stddef.h>
#include <tsync/ps_mem.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps_kmem;

/* Most classes an instance may have. */
#define PS_KMEM_MAX_CLASSES 128

/* Configuration for ps_kmem_create(); PS_KMEM_CONFIG_INIT gives the defaults (0 = default
 * for every field but size). */
struct ps_kmem_config {
	size_t size;          /* sizeof(struct ps_kmem_config) */
	size_t min_size;      /* bytes of the smallest class (default 16) */
	size_t max_size;      /* bytes of the largest class: the largest allocation (default
			       * 64 KiB; at most 1 GiB) */
	double growth_factor; /* each class this many times the previous, rounded up to 8
			       * bytes (default 1.25, memcached's -f; > 1.0 and <= 4.0); as
			       * in memcached, the classes below max_size are at most
			       * max_size / growth_factor */
	size_t cache_bytes;   /* per thread and class, the object cache holds about this
			       * many bytes: 1 to 64 objects (default 64 KiB) */
	unsigned max_classes; /* most classes, 2 to PS_KMEM_MAX_CLASSES (default: that);
			       * as in memcached, past max_classes - 1 the sequence stops
			       * and the last class is max_size */
	/* Template for every class's ps_mem: align, reclaim_batch, stamp_batch, schedule,
	 * accounting, hooks (called with the class's ps_mem), max_bytes (per class), and
	 * Prudence's policies (prudence: 0, the default, turns them all on). Its
	 * size field must be set (PS_MEM_CONFIG_INIT); slab_size and cache_size 0 let
	 * ps_kmem choose per class (above); slabs_kept 0 means 1 per class. */
	struct ps_mem_config mem;
};
#define PS_KMEM_CONFIG_INIT                                                        \
	{                                                                          \
		sizeof(struct ps_kmem_config), 0, 0, 0.0, 0, 0, PS_MEM_CONFIG_INIT \
	}

/*
 * ps_kmem_create - size classes over ps.
 *
 * Arguments:  ps: the parallel-section domain. cfg: the configuration, or NULL for the
 *             defaults.
 * Returns:    the instance; NULL with errno = EINVAL (bad sizes, factor or max_classes, a
 *             ps_mem template ps_mem_create refuses) or ENOMEM.
 * Progress:   blocking.
 * Caller:     any thread.
 * Implements: Prudence (ASPLOS 2016) §4 (kmalloc's caches).
 */
struct ps_kmem *ps_kmem_create(struct ps *ps, const struct ps_kmem_config *cfg);

/*
 * ps_kmem_destroy - destroy every class.
 *
 * Arguments:  k: the instance, or NULL (ignored).
 * Progress:   blocking.
 * Caller:     any thread, once ps_mem_destroy's precondition holds for each class: no
 *             thread uses k or any of its objects any more.
 * Implements: Prudence (ASPLOS 2016) §4.
 */
void ps_kmem_destroy(struct ps_kmem *k);

/*
 * ps_kmalloc - an object of at least size bytes, from the smallest class that holds it.
 *
 * Arguments:  size: bytes, 1 to cfg->max_size.
 * Returns:    the object (contents unspecified); NULL with errno = EINVAL (size 0 or
 *             above cfg->max_size), or as ps_alloc fails (ENOMEM; EDEADLK at a class's
 *             max_bytes inside a section).
 * Progress:   ps_alloc's, plus finding the class: one table load for small sizes, a
 *             binary search over the classes above them.
 * Ordering:   as ps_alloc.
 * Caller:     any thread, inside or outside a section.
 * Implements: Prudence (ASPLOS 2016) §4 (kmalloc).
 */
void *ps_kmalloc(struct ps_kmem *k, size_t size);

/*
 * ps_kfree - the deferred free: ps_free on obj's class.
 *
 * obj is reused only after every section of k's ps active now has ended; ps_free's
 * contract otherwise.
 *
 * Arguments:  obj: from ps_kmalloc(k), or NULL (ignored). A double free, an object of
 *             another instance or a pointer no ps_kmem handed out aborts with a one-line
 *             diagnostic naming ps_kfree (the header check: two loads and compares beyond
 *             ps_free's).
 * Progress:   as ps_free.
 * Caller:     any thread, inside or outside a section.
 * Implements: Prudence (ASPLOS 2016) §4 (kfree_deferred).
 */
void ps_kfree(struct ps_kmem *k, void *obj);

/*
 * ps_kfree_now - the immediate free: ps_free_now on obj's class.
 *
 * Arguments:  obj: from ps_kmalloc(k) and one no reader can have reached (ps_free_now's
 *             contract), or NULL (ignored).
 * Progress:   as ps_free_now.
 * Caller:     any thread, inside or outside a section.
 * Implements: Prudence (ASPLOS 2016) §4 (kfree).
 */
void ps_kfree_now(struct ps_kmem *k, void *obj);

/*
 * ps_kmem_usable_size - bytes usable at obj.
 *
 * Arguments:  obj: live, from some ps_kmem.
 * Returns:    its class's size, >= the size asked for.
 * Progress:   wait-free.
 * Caller:     any thread.
 * Implements: Prudence (ASPLOS 2016) §4 (kmalloc's ksize).
 */
size_t ps_kmem_usable_size(const void *obj);

/*
 * ps_kmem_nclasses, ps_kmem_class_size, ps_kmem_class_of - the class table.
 *
 * Returns:    ps_kmem_nclasses: the number of classes. ps_kmem_class_size: bytes of
 *             class i (0 if i is out of range). ps_kmem_class_of: the class an
 *             allocation of size bytes takes, or -1 when size is 0 or above max_size.
 * Progress:   wait-free.
 * Caller:     any thread.
 * Implements: Prudence (ASPLOS 2016) §4.
 */
unsigned ps_kmem_nclasses(const struct ps_kmem *k);
size_t ps_kmem_class_size(const struct ps_kmem *k, unsigned i);
int ps_kmem_class_of(const struct ps_kmem *k, size_t size);

/*
 * ps_kmem_class - class i's ps_mem, for ps_mem_stats, ps_mem_reclaim and
 * ps_stall_report per class.
 *
 * Returns:    the ps_mem, or NULL if i is out of range.
 * Progress:   wait-free.
 * Caller:     any thread.
 * Implements: Prudence (ASPLOS 2016) §4.
 */
struct ps_mem *ps_kmem_class(struct ps_kmem *k, unsigned i);
/*
 * ps_kmem_stats - the sum of every class's ps_mem_stats.
 *
 * Peaks and max_wait_ticks are the largest of any class; exact is 1 only if every class
 * is exact. Units as struct ps_mem_stats.
 *
 * Arguments:  out: filled with the sums.
 * Returns:    0, or -1 with errno = EINVAL (k or out NULL).
 * Progress:   blocking: takes each class's pool mutex briefly.
 * Caller:     any thread.
 * Implements: Prudence (ASPLOS 2016) §5 (measures).
 */
int ps_kmem_stats(struct ps_kmem *k, struct ps_mem_stats *out);

/*
 * ps_kmem_reclaim - ps_mem_reclaim on every class (the caller's own queues).
 *
 * Returns:    the number of objects reclaimed.
 * Progress:   never waits (as ps_mem_reclaim).
 * Caller:     any thread.
 * Implements: Prudence (ASPLOS 2016) §4.2 (the idle-time call).
 */
size_t ps_kmem_reclaim(struct ps_kmem *k);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_KMEM_H */
