/*
 * src/ps_mem_slab.h - object cache <-> owned slabs <-> pool <-> system (defined in ps_mem_slab.c)
 * and the inline push onto a thread's object cache, for the files above the slabs (ps_mem.c,
 * ps_mem_queue.c, ps_mem_task.c, ps_mem_wait.c).
 * Not installed.
 */
#ifndef TSYNC_PS_MEM_SLAB_H
#define TSYNC_PS_MEM_SLAB_H

#include "ps_mem_policy.h"
#include "ps_mem_types.h"

/* ---- ps_mem_slab.c: object cache <-> owned slabs <-> pool <-> system ---------------- */

/* Return one free object to its slab, wherever that slab is owned (a remote free when
 * another thread owns it, the pool mutex when the pool does). */
void ps_mem__free_to_slab(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
			  struct ps_mem_hdr *h);
/* Flush n objects from pt's cache back to their slabs (then pool_shrink). */
void ps_mem__cache_flush(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, unsigned n);
/* Return the objects other threads freed into our slabs (our remote lists) to them. */
void ps_mem__drain_remote(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt);
/* Refill the empty cache from our slabs, taking a slab from the pool or the system if
 * they have none: cache_size - nlatent objects, at least a quarter cache (Prudence's
 * partial refill), or half a cache with that policy off. Returns the count; 0 with errno = ENOSPC
 * when m holds max_slabs slabs already, ENOMEM when the system refused one. */
unsigned ps_mem__refill(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt);
/* Unmap up to trim_max excess empty slabs of the pool (not under the pool mutex). */
void ps_mem__pool_shrink(struct ps_mem *m);
/* Thread exit: give every slab pt owns to the pool and unmap the pool's excess. */
void ps_mem__slabs_release(struct ps_mem *m, struct ps_mem_pt *pt);
/* ps_mem_destroy: unmap every slab (no thread uses m any more). */
void ps_mem__slabs_destroy(struct ps_mem *m);
/* h's grace period is over and it carried HDR_LATENT_SLAB: untag it, uncount it from
 * its latent slab and return it to that slab. */
void ps_mem__latent_slab_take(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
			      struct ps_mem_hdr *h);

/* ---- the object cache ------------------------------------------------------------- */

/* Give a free object to the caller's object cache - except the object of a one-object
 * slab: that is a whole slab, so it goes straight back to its (pool-owned) slab, where
 * any thread's refill finds it and pool_trim can unmap it (docs/design.md §3). */
static inline void cache_push(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
			      struct ps_mem_hdr *h)
{
	if (TSYNC_UNLIKELY(m->nobj == 1)) {
		ps_mem__free_to_slab(m, me, pt, h);
		return;
	}
	if (TSYNC_UNLIKELY(pt->ncache >= m->cache_size))
		ps_mem__cache_flush(m, me, pt, ps_mem__flush_size(m, pt));
	h->next = pt->cache;
	pt->cache = h;
	pt->ncache++;
}

#endif
