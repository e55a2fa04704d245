/*
 * src/ps_mem_hdr.h - the header ps_mem puts before every object, and what reads it
 * (not installed): the layout, the HDR/OBJ conversions, the tag and checks on its slab
 * word, and ps__free (ps_free's body, for ps_lock_release_free and ps_kfree). Included
 * by ps_mem_types.h (ps_mem*.c, ps_reclaimer.c, ps_kmem.c), ps_lock.c and ps_ns.c.
 */
#ifndef TSYNC_PS_MEM_HDR_H
#define TSYNC_PS_MEM_HDR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* ps_mem object header, immediately before every object (ParSec (EuroSys 2016) §3.4):
 * the free time (0 while live), the link used by queues, caches and freelists, and the
 * owning slab. */
struct ps_mem_hdr {
	_Atomic uint64_t free_tsc; /* 0: live; PS_MEM_MARKED: marked by ps_lock_release_free;
				    * otherwise the free time (> PS_MEM_MARKED) */
	struct ps_mem_hdr *next;
	/* the owning slab (page aligned); its low bit tags a queued object for its latent
	 * slab (HDR_LATENT_SLAB, hdr_slab below). Atomic: readers may call ps_mem_of on an
	 * object while its freeing thread tags it. */
	_Atomic uintptr_t slab;
};
#define PS_MEM_MARKED 1u
#define HDR(obj) ((struct ps_mem_hdr *)((char *)(obj) - sizeof(struct ps_mem_hdr)))
#define OBJ(h) ((void *)((char *)(h) + sizeof(struct ps_mem_hdr)))

/* A queued object whose grace period ends in its slab, not in a cache: the low bit of
 * its header's slab pointer (slabs are page aligned). Only its queue's owner sets or
 * clears it; every reader of h->slab masks it (hdr_slab). */
#define HDR_LATENT_SLAB ((uintptr_t)1)
struct slab; /* src/ps_mem_types.h */
static inline struct slab *hdr_slab(const struct ps_mem_hdr *h)
{
	return (struct slab *)(atomic_load_explicit(&h->slab, memory_order_relaxed) &
			       ~HDR_LATENT_SLAB);
}
static inline bool hdr_latent(const struct ps_mem_hdr *h)
{
	return (atomic_load_explicit(&h->slab, memory_order_relaxed) & HDR_LATENT_SLAB) != 0;
}
/* The header check of every free (cost: a load of the word next to the free time and
 * one test): a ps_mem wrote a page address there, tagged at most in bit 0; a pointer no
 * ps_mem handed out almost never has one (glibc's chunk size word, say, is not page
 * aligned), so its free aborts instead of writing through a wild slab pointer. */
static inline bool hdr_plausible(const struct ps_mem_hdr *h)
{
	uintptr_t sw = atomic_load_explicit(&h->slab, memory_order_relaxed);
	return sw >= 4096 && (sw & (4095 & ~HDR_LATENT_SLAB)) == 0;
}

struct ps_mem;
/* ps_free's body (src/ps_mem.c); marked: the header may carry PS_MEM_MARKED
 * (ps_lock_release_free). */
void ps__free(struct ps_mem *m, void *obj, int marked, const char *call);

#endif
