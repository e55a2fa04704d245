/*
 * src/ps_mem_task.c - ps_mem's hand-off to the reclamation task σ (RT-SMR (RTAS 2018)
 * §V-C; reclaim_mode TASK and BOTH): the freeing threads' hand-off lists (push, take
 * back, give the whole queue), ps_free's TASK path, and σ's side of each ps_mem, which
 * src/ps_reclaimer.c drives (ps_mem__task_sweep, _collect, _release). The layer map:
 * ps_mem.c; what the files share: ps_mem_types.h; the argument: docs/design.md §3
 * ("The reclamation task σ"), the analysis: docs/rt.md §10.
 */
#include <stdint.h>

#include "ps_mem_acct.h"
#include "ps_mem_types.h"
#include "ps_mem_queue.h"
#include "ps_mem_slab.h"
#include "ps_mem_task.h"

/* ---- the reclamation task's hand-off (RT-SMR (RTAS 2018) §V-C; docs/design.md §3 ("The
 * reclamation task σ")) -- */

static struct ps_mem_hdr *hlist_msort(struct ps_mem_hdr *l, uint64_t n)
{
	if (n <= 1) {
		if (l)
			l->next = NULL;
		return l;
	}
	struct ps_mem_hdr *mid = l;
	for (uint64_t i = 1; i < n / 2; i++)
		mid = mid->next;
	struct ps_mem_hdr *b = mid->next;
	mid->next = NULL;
	return ps_mem__hlist_merge(hlist_msort(l, n / 2), hlist_msort(b, n - n / 2));
}

/* A hand-off list (pushed newest first) in free-time order: reversed, and sorted only
 * if that is not enough (pushes of one thread are in stamp order; a reused id's are
 * not necessarily). *k: its length. */
static struct ps_mem_hdr *hlist_order(struct ps_mem_hdr *l, uint64_t *k)
{
	struct ps_mem_hdr *rev = NULL;
	uint64_t n = 0;
	while (l) {
		struct ps_mem_hdr *next = l->next;
		l->next = rev;
		rev = l;
		l = next;
		n++;
	}
	*k = n;
	for (struct ps_mem_hdr *h = rev; h && h->next; h = h->next)
		if (hdr_tsc(h) > hdr_tsc(h->next))
			return hlist_msort(rev, n);
	return rev;
}

/* The owner takes its own hand-off list back (no σ attached): into its queue, which
 * reclaims it as INLINE does. Every object in it is latent-slab tagged and stamped. */
static void handoff_take_back(struct ps_mem *m, struct ps_mem_pt *pt)
{
	struct ps_mem_hdr *l = atomic_exchange_explicit(&pt->handoff, NULL, memory_order_seq_cst);
	if (l == NULL)
		return;
	uint64_t k;
	l = hlist_order(l, &k);
	ps_mem__stamp(pt); /* merging needs every free time */
	ps_mem__queue_merge(m, pt, l);
	cnt_add(&pt->c_pending, k);
	atomic_fetch_add_explicit(&pt->c_taken, k, memory_order_relaxed);
}

/* Push the chain first..last (linked newest first, every object stamped and tagged)
 * onto pt's hand-off list: a release CAS that only σ's exchange can make fail (a failed
 * try leaves the head NULL, which σ does not take: at most two tries). Then, the other
 * half of the detach's Dekker pair: if no σ is attached any more, take the list back -
 * either the detach's sweep saw our push or we see its store (both seq_cst). */
static void handoff_push(struct ps_mem *m, struct ps_mem_pt *pt, struct ps_mem_hdr *first,
			 struct ps_mem_hdr *last, uint64_t k)
{
	cnt_add(&pt->c_handed, k);
	struct ps_mem_hdr *old = atomic_load_explicit(&pt->handoff, memory_order_relaxed);
	do
		last->next = old;
	while (!atomic_compare_exchange_strong_explicit(
		&pt->handoff, &old, first, memory_order_seq_cst, memory_order_relaxed));
	if (!sigma_on(m))
		handoff_take_back(m, pt);
}

/* Give the caller's whole queue to σ (stamped first; objects bound for the cache move
 * to their latent slabs: σ returns every object to its slab). */
void ps_mem__handoff_queue(struct ps_mem *m, struct ps_mem_pt *pt)
{
	ps_mem__stamp(pt);
	if (pt->qhead == NULL)
		return;
	garb_forget(m, pt);
	struct ps_mem_hdr *rev = NULL, *last = pt->qhead;
	uint64_t k = 0;
	for (struct ps_mem_hdr *h = pt->qhead, *next; h; h = next) {
		next = h->next;
		if (!hdr_latent(h)) {
			ps_mem__latent_slab_put(m, pt, h);
			pt->nlatent--;
		}
		h->next = rev;
		rev = h;
		k++;
	}
	pt->qhead = pt->qtail = NULL;
	pt->pf_tail = NULL; /* the pre-flush's cursor went with the queue */
	cnt_sub(&pt->c_pending, k);
	atomic_store_explicit(&pt->c_blocker1, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_hook_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_head_tsc, 0, memory_order_relaxed);
	handoff_push(m, pt, rev, last, k);
}

/* TASK/BOTH, at the caller's allocator calls: with a σ, TASK hands over what the queue
 * still holds (frees made before the attach); without one, take our list back. */
void ps_mem__task_sync(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (sigma_on(m)) {
		if (m->mode == PS_MEM_RECLAIM_TASK && (pt->qhead || pt->unstamped))
			ps_mem__handoff_queue(m, pt);
	} else if (atomic_load_explicit(&pt->handoff, memory_order_relaxed) != NULL) {
		handoff_take_back(m, pt);
	}
}

uint64_t ps_mem__task_sweep(struct ps_mem *m, bool final)
{
	struct ps_mem_pt *tp = &m->task_pt;
	struct ps_mem_hdr *all = NULL;
	uint64_t total = 0;
	unsigned pos = 0;
	for (struct ps_mem_pt *pt; (pt = pt_next(m, &pos)) != NULL;) {
		if (atomic_load_explicit(&pt->handoff, final ? memory_order_seq_cst
							     : memory_order_relaxed) == NULL)
			continue;
		/* acquire: the owner's stores to each object (stamp, tag, link) are visible */
		struct ps_mem_hdr *l =
			atomic_exchange_explicit(&pt->handoff, NULL, memory_order_seq_cst);
		uint64_t k;
		l = hlist_order(l, &k);
		atomic_fetch_add_explicit(&pt->c_taken, k, memory_order_relaxed);
		all = ps_mem__hlist_merge(all, l);
		total += k;
	}
	if (all) {
		ps_mem__queue_merge(m, tp, all);
		cnt_add(&tp->c_pending, total);
	}
	while (atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) != 0) {
		uint64_t n = ps_mem__adopt_orphan(m, tp);
		if (n == 0)
			break;
		total += n;
	}
	return total;
}

size_t ps_mem__task_collect(struct ps_mem *m)
{
	/* every object in task_pt's queue is latent-slab tagged: each goes to its slab */
	return reclaim(m, PS_MEM_TASK_ME, &m->task_pt, SIZE_MAX, RECLAIM_COLLECT);
}

void ps_mem__task_release(struct ps_mem *m)
{
	struct ps_mem_pt *tp = &m->task_pt;
	/* without memory for the record the queue is kept: the next σ attached continues */
	if (tp->qhead == NULL || !ps_mem__queue_orphan(m, tp))
		return;
	ps_mem__stall_clear(tp);
}

/*
 * ps_free in TASK mode (h checked and marked): with a σ attached, stamp h with its own
 * ordered clock reading (read after the caller's unlink), tag it for its slab, count it,
 * and hand it to σ; returns true. Without one, take our hand-off list back (if any) and
 * return false: the caller continues as INLINE. BOTH only takes back.
 */
__attribute__((noinline)) bool ps_mem__free_task(struct ps_mem *m, struct ps_mem_pt *pt,
						 struct ps_mem_hdr *h)
{
	if (m->mode != PS_MEM_RECLAIM_TASK || !sigma_on(m)) {
		if (atomic_load_explicit(&pt->handoff, memory_order_relaxed) != NULL)
			handoff_take_back(m, pt);
		return false;
	}
	if (pt->qhead || pt->unstamped) /* frees queued before the attach go first */
		ps_mem__handoff_queue(m, pt);
	uint64_t t = tsync_now_ordered();
	if (t <= PS_MEM_MARKED)
		t = PS_MEM_MARKED + 1;
	atomic_store_explicit(&h->free_tsc, t, memory_order_relaxed);
	ps_mem__latent_slab_put(m, pt, h);
	cnt_add(&pt->c_frees, 1);
	uint64_t crossed = 0;
	if (m->exact) {
		zg_add(m, 1);
		uint64_t v = acct_add(m, ACCT_FREE, 0);
		if (m->pending_fn && ACCT_PENDING(v) == m->threshold)
			crossed = ACCT_PENDING(v);
	}
	handoff_push(m, pt, h, h, 1);
	if (TSYNC_UNLIKELY(crossed))
		m->pending_fn(m, crossed, m->pending_arg);
	return true;
}
