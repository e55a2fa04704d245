/*
 * src/ps_mem_policy.h - Prudence's policies (defined in ps_mem_policy.c), for the mechanisms they
 * steer (ps_mem.c, ps_mem_queue.c, ps_mem_slab.c, ps_mem_task.c, ps_mem_wait.c, ps_mem_stats.c).
 * Not installed.
 */
#ifndef TSYNC_PS_MEM_POLICY_H
#define TSYNC_PS_MEM_POLICY_H

#include "ps_mem_types.h"

/* ---- ps_mem_policy.c: Prudence's policies (Prudence (ASPLOS 2016) §4) ---------------- */

/* h (queued by pt's thread, not yet latent) joins its latent slab: tag it and count it
 * there; with pre-movement, move its slab where it will belong when h comes back (a pool
 * slab: full -> partial, or draining once every allocated object is latent; the
 * caller's own slab with every allocated object latent: to the pool, draining). */
void ps_mem__latent_slab_put(struct ps_mem *m, struct ps_mem_pt *pt, struct ps_mem_hdr *h);
/* Objects waiting in latent slabs now (pool mutex held; ps_mem_stats). */
uint64_t ps_mem__latent_slab_count(struct ps_mem *m);
/* How many objects a full cache flushes before taking one more (latent-aware flush). */
unsigned ps_mem__flush_size(const struct ps_mem *m, const struct ps_mem_pt *pt);
/* How many objects a refill takes (partial refill). */
unsigned ps_mem__refill_want(struct ps_mem *m, struct ps_mem_pt *pt);
/* The slab of list l a refill takes (fragmentation-aware: the fullest; latent_ok: also
 * a mostly latent one), or NULL. A pool list: pool mutex held; pt->partial: its owner. */
struct slab *ps_mem__pick_slab(struct ps_mem *m, struct slab_list *l, bool latent_ok);
/* Pre-movement at the owner's refill: pt's partly free slabs that other threads'
 * deferred frees left with every allocated object latent go to the pool's draining list. */
void ps_mem__premove_own(struct ps_mem *m, struct ps_mem_pt *pt);
/* Move queued latent-cache objects to their latent slabs until cache + latent cache
 * hold at most `target`, from the pre-flush's cursor on. */
void ps_mem__latent_to_slabs(struct ps_mem *m, struct ps_mem_pt *pt, unsigned target);
/* Pre-flush, from ps_mem_reclaim when a free scheduled it (pt->pf_due): latent objects to
 * their latent slabs now when they would overflow the cache after their grace period. */
void ps_mem__preflush(struct ps_mem *m, struct ps_mem_pt *pt);

#endif
