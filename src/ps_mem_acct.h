/*
 * src/ps_mem_acct.h - ps_mem's exact accounting (PS_MEM_ACCOUNT_EXACT; RT-SMR (RTAS 2018)
 * §II-E): the live/pending word and its peaks (acct_add), the zombie/garbage word
 * (zg_add), and each queue's known-garbage prefix (garb_advance, garb_forget). Inline:
 * ps_alloc and ps_free (ps_mem.c), the reclamation loop (ps_mem_queue.c) and the hand-off
 * to σ (ps_mem_task.c) apply them. The words and their ACCT_* / ZG_* fields are in
 * ps_mem_types.h (struct ps_mem), where ps_mem_stats.c reads them too. Not installed.
 */
#ifndef TSYNC_PS_MEM_ACCT_H
#define TSYNC_PS_MEM_ACCT_H

#include <stdatomic.h>
#include <stdint.h>

#include "ps_mem_types.h"

static inline void peak_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

/* Apply one accounting event; returns the word after it. */
static inline uint64_t acct_add(struct ps_mem *m, uint64_t delta, int sub)
{
	uint64_t v = sub ? atomic_fetch_sub_explicit(&m->acct, delta, memory_order_relaxed) - delta
			 : atomic_fetch_add_explicit(&m->acct, delta, memory_order_relaxed) + delta;
	if (!sub) {
		peak_max(&m->peak_live, ACCT_LIVE(v));
		peak_max(&m->peak_pending, ACCT_PENDING(v));
		peak_max(&m->peak_foot, ACCT_LIVE(v) + ACCT_PENDING(v));
	}
	return v;
}

/* The zombie/garbage word (EXACT accounting): add delta (mod 2^64; both fields stay in
 * range because every transition moves objects that the word counts), then the peaks. */
static inline void zg_add(struct ps_mem *m, uint64_t delta)
{
	uint64_t v = atomic_fetch_add_explicit(&m->zg, delta, memory_order_seq_cst) + delta;
	peak_max(&m->peak_zombie, ZG_ZOMBIE(v));
	peak_max(&m->peak_garbage, ZG_GARBAGE(v));
}

/* Known garbage (RT-SMR (RTAS 2018) §II-E): extend pt's garbage prefix over the queued
 * objects stamped <= q (a proven quiescence point the caller just used); returns how
 * many joined it. Each object is passed over once while it is queued. */
static inline uint64_t garb_advance(struct ps_mem_pt *pt, uint64_t q)
{
	uint64_t g = 0;
	struct ps_mem_hdr *h = pt->gtail ? pt->gtail->next : pt->qhead;
	for (; h && atomic_load_explicit(&h->free_tsc, memory_order_relaxed) <= q; h = h->next) {
		pt->gtail = h;
		g++;
	}
	pt->ngarb += g;
	return g;
}

/* pt's queue is about to be reordered or given away: its known garbage becomes zombie
 * again (the next reclamation of whoever holds it learns it anew). */
static inline void garb_forget(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (pt->ngarb == 0)
		return;
	if (m->exact)
		zg_add(m, pt->ngarb - (pt->ngarb << 32)); /* zombie + g, garbage - g */
	pt->ngarb = 0;
	pt->gtail = NULL;
	atomic_store_explicit(&pt->c_garbage, 0, memory_order_relaxed);
}

#endif
