/*
 * src/ps_mem_queue.c - ps_mem's deferred-free queue (ParSec (EuroSys 2016) §3.4; the
 * options of RT-SMR (RTAS 2018) and ParSec (EuroSys 2016) §3.7 as named steps of its one
 * reclamation loop): stamping, reclamation into the object cache, merging, the queues of exited
 * threads (orphans) and of idle ones (steal_idle), and thread exit, which hands the
 * queue on. The fork hooks stay in ps_mem.c with the other registry hooks: they guard
 * the pool mutex and retire the vanished threads' records whole, not only their queues.
 * The layer map: ps_mem.c; what the files share: ps_mem_types.h; the argument:
 * docs/design.md §3.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ps_internal.h"
#include "ps_mem_acct.h"
#include "ps_mem_types.h"
#include "ps_mem_queue.h"
#include "ps_mem_slab.h"

/* ---- quiescence queue -------------------------------------------------------------- */

/*
 * Stamp every not yet stamped free with one ordered clock reading and append them to the
 * queue. It is read after each of their ps_free calls, hence after each unlink was
 * visible: a valid free time for all of them, at most stamp_batch frees late
 * (docs/design.md §3). Touches the queue: qlock held in instances without options.
 */
__attribute__((noinline)) void ps_mem__stamp(struct ps_mem_pt *pt)
{
	if (pt->unstamped == NULL)
		return;
	uint64_t t = tsync_now_ordered();
	if (t <= PS_MEM_MARKED)
		t = PS_MEM_MARKED + 1;
	for (struct ps_mem_hdr *h = pt->unstamped; h; h = h->next)
		atomic_store_explicit(&h->free_tsc, t, memory_order_relaxed);
	if (pt->qtail)
		pt->qtail->next = pt->unstamped;
	else
		pt->qhead = pt->unstamped;
	pt->qtail = pt->utail;
	pt->unstamped = pt->utail = NULL;
	pt->nunstamped = 0;
}

/* ---- the queue lock (instances without options: idle queues may be taken) ---------- */

/* The owner takes its queue lock, spinning while a thief's detach holds it. */
void ps_mem__qlock_own(struct ps_mem *m, struct ps_mem_pt *pt)
{
	while (!qlock_try(m, pt))
		tsync_arch_relax();
}

/* Publish the queue head's free time (stall report: oldest pending). */
static inline void head_published(struct ps_mem_pt *pt)
{
	uint64_t t = 0;
	if (pt->qhead)
		t = atomic_load_explicit(&pt->qhead->free_tsc, memory_order_relaxed);
	atomic_store_explicit(&pt->c_head_tsc, t, memory_order_relaxed);
}

/* Move the queue's head h (free time t, quiesced) into the cache - or, if it was freed
 * beyond the latent cache, into its latent slab's slab; track the longest wait among
 * the objects moved by this call (*now: read once, lazily). Returns true if h went to
 * its slab. */
static inline bool reclaim_take(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
				struct ps_mem_hdr *h, uint64_t t, uint64_t *now, uint64_t *max_wait)
{
	pt->qhead = h->next;
	if (pt->qhead == NULL)
		pt->qtail = NULL;
	if (TSYNC_UNLIKELY(h == pt->pf_tail))
		pt->pf_tail = NULL; /* it and all before it are gone: the walk starts anew */
	if (*now == 0)
		*now = tsync_now();
	if (*now > t && *now - t > *max_wait)
		*max_wait = *now - t;
	if (TSYNC_UNLIKELY(hdr_latent(h))) {
		ps_mem__latent_slab_take(m, me, pt, h);
		return true;
	}
	pt->nlatent--;
	/* The latent cache's merge stops at a full cache (Prudence (ASPLOS 2016) Algorithm 1,
	 * lines 64-65): no flush in the middle of it; the object goes to its slab, where a
	 * flush would have sent one (docs/prudence.md §3, "Merge"). */
	if (TSYNC_UNLIKELY(pt->ncache >= m->cache_size) &&
	    PRUDENT(m, PS_MEM_PRUDENCE_LATENT_SLAB)) {
		ps_mem__free_to_slab(m, me, pt, h);
		return true;
	}
	cache_push(m, me, pt, h);
	return false;
}

/* The owner's counters after a call that reclaimed n > 0 objects. */
static inline void reclaim_count(struct ps_mem_pt *pt, size_t n, uint64_t max_wait)
{
	cnt_sub(&pt->c_pending, n);
	cnt_add(&pt->c_reclaimed, n);
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	if (max_wait > atomic_load_explicit(&pt->c_max_wait, memory_order_relaxed))
		atomic_store_explicit(&pt->c_max_wait, max_wait, memory_order_relaxed);
}

/* ---- reclamation: one loop; the options of RT-SMR (RTAS 2018) and ParSec (EuroSys 2016) §3.7 are
 * named steps, each behind `ext` (m->ext, a constant in each copy of the loop) -------------------
 */

/* Step "quiesce": the head's free time t is beyond the point we know quiesced (q): make
 * the one quiescence computation of this call. RT/TEMPORAL (RT-SMR (RTAS 2018) Fig. 8): one exact
 * computation or clock reading. Otherwise ps__quiesce_own for the head: lazily for
 * ps_free/ps_alloc (a read barrier at most once per read interval), at once for an
 * explicit reclaim or a thread exit (RECLAIM_ALL), which first asks for a fresh reading -
 * if it has quiesced, so has everything queued before it - then for the head. The head's
 * computation alone may prove less than the whole queue (a barrier published by another
 * thread dates what it saw no later than that barrier); RECLAIM_ALL promises every
 * object that has quiesced. Not on the hot paths: no cached view is newer than a fresh
 * stamp, so that query always reads the other threads' lines, which optimisation 3
 * exists to avoid (on the allocation slow path it cut 2-thread throughput by half).
 * Returns whether t quiesced; updates q. With `timed` (the observer is set) stores the
 * computation's ticks in *alpha. */
static inline __attribute__((always_inline)) bool step_quiesce(struct ps_mem *m, uint64_t t,
							       int scan, bool ext, bool timed,
							       uint64_t *q, uint64_t *alpha)
{
	uint64_t a0 = timed ? tsync_now() : 0;
	bool ok;
	if (ext && m->rt) {
		*q = ps_quiesce_time(m->ps);
		ok = t <= *q;
	} else {
		/* Every object in our queue was stamped before this call (ours, or an
		 * adopted orphan's, stamped before its thread exited): the bound covers
		 * what the scan proves of all of them, not only the head - for this queue
		 * only; the published point stays lower (docs/design.md §2, reason 4). */
		uint64_t u = 0;
		if (scan == RECLAIM_ALL) {
			uint64_t newest = tsync_now_ordered();
			if (newest > t)
				u = ps__quiesce_own(m->ps, newest, false);
		}
		if (u == 0)
			u = ps__quiesce_own(m->ps, t, scan != RECLAIM_ALL);
		ok = u != 0;
		if (ok) {
			uint64_t p = ps__quiescence_point(m->ps);
			*q = p > u ? p : u;
		}
	}
	if (timed)
		*alpha = tsync_now() - a0;
	return ok;
}

/* Step "stall summary" (ps_stall_report): who kept the rest of the queue waiting, and
 * the free time of the head it kept waiting. Written when a quiescence computation
 * failed or the hook refused, and cleared by the next reclamation that gets past that;
 * reclamations with nothing to report (the common case) add two loads of the owner's
 * own line, no store. */
static void step_stall_summary(struct ps_mem *m, struct ps_mem_pt *pt, bool blocked, bool refused)
{
	uint64_t left = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
	uint64_t b1 = 0, be = 0;
	if (blocked) {
		int b = ps__last_blocker(m->ps, &be);
		b1 = b >= 0 ? (uint64_t)b + 1 : 0;
	}
	atomic_store_explicit(&pt->c_blocker1, b1, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocker_enter, be, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocked, blocked ? left : 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_hook_blocked, refused ? left : 0, memory_order_relaxed);
	if (refused)
		cnt_add(&pt->c_refused, 1);
	head_published(pt);
}

/* Step "observe": tell the reclamation observer what this call did (RT-SMR (RTAS 2018) §V-C's
 * alpha and beta). */
static void step_observe(struct ps_mem *m, struct ps_mem_pt *pt, uint64_t t0, uint64_t alpha,
			 size_t n, bool attempted)
{
	uint64_t t1 = tsync_now();
	struct ps_mem_reclaim_info info = {
		.quiesce_ticks = alpha,
		.collect_ticks = t1 - t0 > alpha ? t1 - t0 - alpha : 0,
		.collected = n,
		.queued = atomic_load_explicit(&pt->c_pending, memory_order_relaxed),
		.quiesced = attempted,
	};
	m->reclaim_fn(m, &info, m->reclaim_arg);
}

/*
 * Move up to `limit` quiesced objects from the head of our queue into our cache.
 * Objects freed before our own published quiescence point cost one comparison each.
 * A scan of the other threads (step_quiesce) is made once per call at most, and by
 * ps_free only once the queue holds reclaim_batch objects: a longer queue means one scan
 * proves more objects quiesced (ParSec (EuroSys 2016) §3.4), so a scan's remote loads are amortised
 * over about a batch of frees. RT/TEMPORAL instances collect every quiesced object
 * (RT-SMR (RTAS 2018) Fig. 8, lines 27-30). The custom grace period (ParSec (EuroSys 2016) §3.7) is
 * asked last, in free-time order; its first refusal ends the call. `ext` is false in the copy that
 * ps_free uses on instances without options, so that copy pays nothing for them.
 */
static inline __attribute__((always_inline)) size_t reclaim_loop(struct ps_mem *m, unsigned me,
								 struct ps_mem_pt *pt, size_t limit,
								 int scan, const bool ext)
{
	size_t n = 0;
	if (scan != RECLAIM_FREE)
		ps_mem__stamp(pt);
	const bool timed = ext && TSYNC_UNLIKELY(m->reclaim_fn != NULL);
	uint64_t max_wait = 0, now = 0, t0 = timed ? tsync_now() : 0, alpha = 0;
	uint64_t q = ps__quiescence_point(m->ps);
	bool scanned = false, attempted = false, blocked = false, refused = false, slabbed = false;
	uint64_t gfrom = 0; /* collected objects that were known garbage already */
	if (ext && m->rt) {
		limit = SIZE_MAX;
		scanned = scan == RECLAIM_COLLECT;
	} else if ((scan == RECLAIM_FREE &&
		    atomic_load_explicit(&pt->c_pending, memory_order_relaxed) < m->batch) ||
		   scan == RECLAIM_COLLECT) {
		scanned = true; /* queue too short to be worth a scan: own point only */
	}
	while (n < limit && pt->qhead) {
		struct ps_mem_hdr *h = pt->qhead; /* stamped: the unstamped are not queued yet */
		uint64_t t = atomic_load_explicit(&h->free_tsc, memory_order_relaxed);
		/* h heads the known garbage (an earlier call proved it quiescent: through a
		 * point, or through a bound for this queue, ps__quiesce_own) or is older than
		 * the point q; otherwise one quiescence computation per call. */
		if (t > q && pt->ngarb == 0) {
			if (scanned)
				break;
			scanned = attempted = true;
			if (!step_quiesce(m, t, scan, ext, timed, &q, &alpha)) {
				blocked = true;
				break;
			}
		}
		if (ext && m->grace_fn && !m->grace_fn(m, OBJ(h), t, m->grace_arg)) {
			refused = true;
			break;
		}
		if (pt->ngarb) { /* h heads the garbage prefix */
			gfrom++;
			if (--pt->ngarb == 0)
				pt->gtail = NULL;
		}
		slabbed |= reclaim_take(m, me, pt, h, t, &now, &max_wait);
		n++;
	}
	/* objects that went to their slabs may have emptied some: the pool returns its
	 * excess, as after a flush (σ leaves that to the threads' slow paths, as before) */
	if (slabbed && me != PS_MEM_TASK_ME)
		ps_mem__pool_shrink(m);
	uint64_t gnew = garb_advance(pt, q);
	if (n) {
		reclaim_count(pt, n, max_wait);
		if (ext && m->exact)
			acct_add(m, ACCT_RECLAIM(n), 1);
		if (ext && m->budget != NULL)
			ps_mem__budget_reusable(m, n, true);
	}
	if (n || gnew) {
		atomic_store_explicit(&pt->c_garbage, pt->ngarb, memory_order_relaxed);
		/* after pending fell in acct: garbage + gnew - gfrom, zombie - (n - gfrom) -
		 * gnew, one add */
		if (ext && m->exact)
			zg_add(m, (gnew << 32) - (gfrom << 32) - (n - gfrom) - gnew);
	}
	/* A summary to write, or one to clear: without options, only a scan clears it (the
	 * common ps_free then reads nothing more); with them, any progress does. */
	if (blocked || refused ||
	    ((ext ? attempted || n : attempted) &&
	     (atomic_load_explicit(&pt->c_blocked, memory_order_relaxed) |
	      (ext ? atomic_load_explicit(&pt->c_hook_blocked, memory_order_relaxed) : 0))))
		step_stall_summary(m, pt, blocked, refused);
	if (timed && (n || attempted))
		step_observe(m, pt, t0, alpha, n, attempted);
	return n;
}

/* Instances without a hook, observer, schedule, exact accounting or RT policy. */
size_t ps_mem__reclaim_general(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			       int scan)
{
	return reclaim_loop(m, me, pt, limit, scan, false);
}

size_t ps_mem__reclaim_ext(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			   int scan)
{
	return reclaim_loop(m, me, pt, limit, scan, true);
}

/* Merge two lists sorted by free time. */
struct ps_mem_hdr *ps_mem__hlist_merge(struct ps_mem_hdr *a, struct ps_mem_hdr *b)
{
	struct ps_mem_hdr head = {0}, *tail = &head;
	while (a && b) {
		if (hdr_tsc(a) <= hdr_tsc(b)) {
			tail->next = a;
			a = a->next;
		} else {
			tail->next = b;
			b = b->next;
		}
		tail = tail->next;
	}
	tail->next = a ? a : b;
	return head.next;
}

/* Merge a queue segment (sorted by free time) into ours: appended when it is all
 * stamped no earlier than our tail (the prefix of known garbage stays), else merged.
 * The pre-flush's cursor stays only where every object that now precedes it is tagged:
 * an appended segment of tagged objects (orphans, hand-off lists) lands before a cursor
 * in the unstamped part; anything else restarts the walk. */
void ps_mem__queue_merge(struct ps_mem *m, struct ps_mem_pt *pt, struct ps_mem_hdr *b)
{
	if (b == NULL)
		return;
	if (pt->qtail && hdr_tsc(pt->qtail) <= hdr_tsc(b)) {
		pt->qtail->next = b;
		bool tagged = hdr_latent(b);
		while (b->next) {
			b = b->next;
			tagged &= hdr_latent(b);
		}
		pt->qtail = b;
		if (!tagged)
			pt->pf_tail = NULL;
		return;
	}
	pt->pf_tail = NULL;
	garb_forget(m, pt);
	pt->qhead = ps_mem__hlist_merge(pt->qhead, b);
	struct ps_mem_hdr *tail = pt->qhead;
	while (tail->next)
		tail = tail->next;
	pt->qtail = tail; /* b was not empty */
}

/* Take over every queue left behind by exited threads (the whole orphan list, detached
 * in one moment under the pool mutex, so none is left for a later call); returns their
 * total length. Each orphan is sorted by free time: they are merged pairwise into one
 * list, then into the caller's queue. */
uint64_t ps_mem__adopt_orphan(struct ps_mem *m, struct ps_mem_pt *pt)
{
	pthread_mutex_lock(&m->pool_lock);
	struct orphan *o = m->orphans;
	m->orphans = NULL;
	atomic_store_explicit(&m->orphan_pending, 0, memory_order_relaxed);
	pthread_mutex_unlock(&m->pool_lock);
	if (o == NULL)
		return 0;
	uint64_t n = 0;
	struct ps_mem_hdr *all = NULL;
	while (o) {
		struct orphan *next = o->next;
		n += o->n;
		all = ps_mem__hlist_merge(all, o->head);
		free(o);
		o = next;
	}
	ps_mem__stamp(pt); /* merging needs every free time */
	ps_mem__queue_merge(m, pt,
			    all); /* every orphan is latent-slab tagged (ps_mem__thread_exit) */
	cnt_add(&pt->c_pending, n);
	return n;
}

/* Clear pt's stall summary (ps_stall_report): the queue it describes is gone. */
void ps_mem__stall_clear(struct ps_mem_pt *pt)
{
	atomic_store_explicit(&pt->c_blocker1, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_hook_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_head_tsc, 0, memory_order_relaxed);
}

/* Give pt's queue, if it has one, to m's orphaned queues (adopted by the next thread
 * whose allocation slow path or ps_mem_reclaim runs). False if there was no memory for
 * the orphan record: the queue then stays with pt. */
bool ps_mem__queue_orphan(struct ps_mem *m, struct ps_mem_pt *pt)
{
	ps_mem__stamp(pt);
	if (pt->qhead == NULL)
		return true;
	struct orphan *o = malloc(sizeof(*o));
	if (o == NULL)
		return false;
	garb_forget(m, pt);
	o->head = pt->qhead;
	o->tail = pt->qtail;
	o->n = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
	pt->qhead = pt->qtail = NULL;
	pt->pf_tail = NULL;
	atomic_store_explicit(&pt->c_pending, 0, memory_order_relaxed);
	pthread_mutex_lock(&m->pool_lock); /* it guards the orphan list too */
	o->next = m->orphans;
	m->orphans = o;
	atomic_store_explicit(&m->orphan_pending,
			      atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) + o->n,
			      memory_order_relaxed);
	pthread_mutex_unlock(&m->pool_lock);
	return true;
}

/*
 * Idle threads (docs/design.md §3, "Idle and exited threads"; contract: ps_mem_reclaim in
 * <tsync/ps_mem.h>). Look at up to `looks` other threads' records, round robin over the
 * ids below m->pt_hw from the caller's cursor. A record whose owner made no ps_free and
 * no allocation slow path on m since the previous look (of any thread: idle_seen) and
 * whose qlock is free loses its stamped queue to the caller: detached under the owner's
 * qlock (a few loads and stores), then - outside it - counted (the owner subtracts them,
 * and its latent-cache objects, at its next qlock: c_stolen*), its latent-cache objects
 * moved to the caller's latent cache (after their grace period they go to the caller's
 * object cache, where the caller reuses them, not back to the idle owner's slabs), and
 * merged into the caller's queue by free time, where they wait for quiescence by the
 * same rule as the caller's own frees. Caller: holds its own qlock; m without options.
 * Returns the objects taken.
 */
uint64_t ps_mem__steal_idle(struct ps_mem *m, struct ps_mem_pt *pt, unsigned looks)
{
	unsigned hw = atomic_load_explicit(&m->pt_hw, memory_order_relaxed);
	if (looks > hw)
		looks = hw;
	uint64_t total = 0;
	for (unsigned i = 0; i < looks; i++) {
		if (pt->steal_pos >= hw)
			pt->steal_pos = 0;
		struct ps_mem_pt *v = pt_if_exists(m, pt->steal_pos++);
		if (v == NULL || v == pt)
			continue;
		uint64_t act = atomic_load_explicit(&v->c_frees, memory_order_relaxed) +
			       atomic_load_explicit(&v->c_misses, memory_order_relaxed) + 1;
		if (atomic_exchange_explicit(&v->idle_seen, act, memory_order_relaxed) != act)
			continue; /* active since the last look (or first look) */
		if (atomic_load_explicit(&v->c_pending, memory_order_relaxed) <=
		    atomic_load_explicit(&v->c_stolen, memory_order_relaxed))
			continue; /* nothing queued */
		if (atomic_exchange_explicit(&v->qlock, 1, memory_order_acquire) != 0)
			continue;
		struct ps_mem_hdr *l = v->qhead;
		v->qhead = v->qtail = NULL;
		v->pf_tail = NULL; /* it may name a taken object */
		v->ngarb = 0;
		v->gtail = NULL;
		atomic_store_explicit(&v->c_garbage, 0, memory_order_relaxed);
		ps_mem__stall_clear(v);
		atomic_store_explicit(&v->qlock, 0, memory_order_release);
		if (l == NULL)
			continue;
		uint64_t k = 0, u = 0;
		for (struct ps_mem_hdr *h = l; h; h = h->next, k++)
			u += !hdr_latent(h);
		atomic_fetch_add_explicit(&v->c_stolen_latent, u, memory_order_relaxed);
		atomic_fetch_add_explicit(&v->c_stolen, k, memory_order_relaxed);
		ps_mem__queue_merge(m, pt, l);
		pt->nlatent += (unsigned)u; /* they reach our cache, reusable by us */
		if (pt->ncache + pt->nlatent > m->cache_size)
			pt->pf_due = true; /* as freeing them here would */
		cnt_add(&pt->c_pending, k);
		total += k;
	}
	return total;
}
