/*
 * src/ps_mem.c - the SMR-integrated slab allocator (ParSec (EuroSys 2016) §3.4, RT-SMR
 * (RTAS 2018) App. A): the API (ps_alloc, ps_free, ps_free_now, ps_mem_reclaim,
 * ps_mem_collect, the accessors), the fork, thread-prepare and thread-exit hooks, create
 * and destroy.
 *
 * Layers (include/tsync/ps_mem.h), one file each, each calling only the ones below it:
 *   one limit over several instances (a budget)          (ps_mem_budget.c)
 *   API: ps_alloc, ps_free, ...                          (this file)
 *   waiting for a grace period (bound, limit)            (ps_mem_wait.c)
 *   quiescence queue --hand-off--> σ (TASK, BOTH)        (ps_mem_task.c)
 *   quiescence queue --reclaim--> object cache           (ps_mem_queue.c)
 *   object cache --flush/refill--> owned slabs <--> slab pool <--> system
 *                                                        (ps_mem_slab.c)
 *   Prudence's policies on the paths above               (ps_mem_policy.c)
 *   counters and the stall report                        (ps_mem_stats.c)
 *   exact accounting, a budget's charge: inline          (ps_mem_acct.h, ps_mem_types.h)
 * A member of a budget allocates and leaves it through hooks the budget sets
 * (ps_mem.budget_alloc, budget_detach). Structures and ownership rules:
 * ps_mem_types.h; the argument: docs/design.md §3.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ps_internal.h"
#include "ps_mem_acct.h"
#include "ps_mem_types.h"
#include "ps_mem_queue.h"
#include "ps_mem_slab.h"
#include "ps_mem_task.h"
#include "ps_mem_wait.h"
#include "util.h"

/* Hand out the cache's top object (the cache must not be empty). */
static inline void *cache_pop(struct ps_mem_pt *pt)
{
	struct ps_mem_hdr *h = pt->cache;
	pt->cache = h->next;
	pt->ncache--;
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	atomic_store_explicit(&h->free_tsc, 0, memory_order_relaxed);
	cnt_add(&pt->c_allocs, 1);
	return OBJ(h);
}

/* May this thread reclaim now under the schedule (cfg->reclaim_period_ns)? */
static inline bool reclaim_due(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (TSYNC_LIKELY(m->period == 0))
		return true;
	uint64_t now = tsync_now();
	if (pt->last_reclaim != 0 && now - pt->last_reclaim < m->period)
		return false;
	pt->last_reclaim = now ? now : 1;
	return true;
}

static void *alloc_slow(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt)
{
	/* The reclamation below uses the caller's records in m's ps (slot, quiescence
	 * cache): a lazily registered thread allocates them here, where failing is allowed,
	 * rather than abort in ps_quiesce. Two loads once they exist. */
	if (TSYNC_UNLIKELY(ps__thread_prepare(m->ps, me) != 0))
		return NULL; /* errno = ENOMEM */
	cnt_add(&pt->c_misses, 1);
	uint64_t refills = atomic_load_explicit(&pt->c_refills, memory_order_relaxed);
	if (TSYNC_UNLIKELY(m->mode != PS_MEM_RECLAIM_INLINE))
		ps_mem__task_sync(m, pt);
	/* the queue steps need qlock (a thief detaching it: skip them this time) */
	bool own = qlock_try(m, pt);
	/* 1. quiesced memory first: reuse is the point of the queue */
	bool due = own && reclaim_due(m, pt);
	if (!due || reclaim(m, me, pt, m->batch, RECLAIM_ALLOC) == 0 || pt->cache == NULL) {
		/* 2. objects others returned to our slabs; queues of exited threads (all of
		 * them) and of one idle thread; then our slabs */
		ps_mem__drain_remote(m, me, pt);
		if (own) {
			uint64_t got = 0;
			if (atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) != 0)
				got += ps_mem__adopt_orphan(m, pt);
			if (!m->ext)
				got += ps_mem__steal_idle(m, pt, 1);
			if (got && due)
				reclaim(m, me, pt, m->batch, RECLAIM_ALLOC);
		}
		/* 3. nothing quiesced and no free object: fresh memory (ParSec (EuroSys
		 * 2016) §3.2) - but past the pending bound, first wait for a grace period
		 * (Prudence (ASPLOS 2016) Algorithm 1 lines 31-32); at cfg->max_bytes, or
		 * when the system refuses a slab under the bound, wait instead of failing.
		 * limit_wait reclaims: it needs our queue lock (it waits anyway). */
		if (pt->cache == NULL && m->bound_pct && ps_mem__bound_due(m, pt)) {
			if (!own) {
				ps_mem__qlock_own(m, pt);
				own = true;
			}
			ps_mem__limit_wait(m, me, pt, PS_MEM_WAIT_BOUND); /* false: map */
		}
		if (pt->cache == NULL && ps_mem__refill(m, me, pt) == 0) {
			int why = errno == ENOSPC                   ? PS_MEM_WAIT_LIMIT
				  : errno == ENOMEM && m->bound_pct ? PS_MEM_WAIT_NOMEM
								    : -1;
			if (why >= 0 && !own) {
				ps_mem__qlock_own(m, pt);
				own = true;
			}
			if (why < 0 || !ps_mem__limit_wait(m, me, pt, why)) {
				int e = why < 0 ? ENOMEM : errno;
				if (own)
					qlock_drop(m, pt);
				errno = e;
				return NULL; /* errno = ENOMEM or EDEADLK */
			}
		}
		ps_mem__pool_shrink(m);
	}
	if (own)
		qlock_drop(m, pt);
	/* served without a refill: by what our reclamation merged into the cache */
	if (atomic_load_explicit(&pt->c_refills, memory_order_relaxed) == refills)
		cnt_add(&pt->c_merge_hits, 1);
	return cache_pop(pt);
}

/*
 * The caller's record on its first use of m (out of line, so that the registration and
 * allocation calls' code stays out of ps_alloc's and ps_free's fast paths). An
 * explicitly registered thread never gets here: its record was allocated when it
 * registered or when m was created (ps_mem_thread_prepare). A lazily registered one
 * registers (if it is not yet) and allocates its record here: NULL with errno = EAGAIN
 * (registry full) or ENOMEM, for the calls that can return an error.
 */
/* Thread id `tid` has a record in m: raise m->pt_hw over it (steal_idle's range). */
static void pt_hw_note(struct ps_mem *m, unsigned tid)
{
	unsigned cur = atomic_load_explicit(&m->pt_hw, memory_order_relaxed);
	while (cur < tid + 1 &&
	       !atomic_compare_exchange_weak_explicit(&m->pt_hw, &cur, tid + 1,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

static __attribute__((noinline, cold)) struct ps_mem_pt *pt_first(struct ps_mem *m)
{
	if (tsync__tid1 == 0 && tsync__thread_try_lazy() != 0)
		return NULL;
	struct ps_mem_pt *pt = tsync__tdir_get((void *_Atomic *)m->chunks, tsync__tid1 - 1,
					       sizeof(struct ps_mem_pt), NULL, NULL);
	if (pt)
		pt_hw_note(m, tsync__tid1 - 1);
	return pt;
}

/* pt_first for the calls that cannot return an error (ps_free, ...): a failure aborts. */
static __attribute__((noinline, cold)) struct ps_mem_pt *pt_first_or_die(struct ps_mem *m)
{
	unsigned me = tsync__self(); /* aborts if the registry is full */
	struct ps_mem_pt *pt = tsync__tdir_get((void *_Atomic *)m->chunks, me,
					       sizeof(struct ps_mem_pt), NULL, NULL);
	if (pt == NULL)
		tsync__fatal("out of memory allocating per-thread allocator state (a thread "
			     "registered with tsync_thread_register() has it allocated up front)");
	pt_hw_note(m, me);
	return pt;
}

/* The caller's record if it has one in m (its id in *me), else NULL: the fast path
 * shared by self_pt_try and self_pt, one load of the thread id and one of the chunk. */
static inline struct ps_mem_pt *self_pt_if_exists(struct ps_mem *m, unsigned *me)
{
	unsigned t1 = tsync__tid1;
	if (TSYNC_LIKELY(t1 != 0)) {
		*me = t1 - 1;
		return tsync__tdir_at((void *_Atomic *)m->chunks, *me, sizeof(struct ps_mem_pt));
	}
	return NULL;
}

/* The caller's record, or NULL (errno = EAGAIN or ENOMEM; pt_first). */
static inline struct ps_mem_pt *self_pt_try(struct ps_mem *m, unsigned *me)
{
	struct ps_mem_pt *pt = self_pt_if_exists(m, me);
	if (TSYNC_LIKELY(pt != NULL))
		return pt;
	pt = pt_first(m); /* *me set after the call: me stays in a register */
	*me = tsync__tid1 - 1;
	return pt;
}

/* The caller's record; a lazily registered thread's first use allocates it and aborts
 * if that fails (pt_first_or_die). */
static inline struct ps_mem_pt *self_pt(struct ps_mem *m, unsigned *me)
{
	struct ps_mem_pt *pt = self_pt_if_exists(m, me);
	if (TSYNC_LIKELY(pt != NULL))
		return pt;
	pt = pt_first_or_die(m);
	*me = tsync__tid1 - 1;
	return pt;
}

/* ps_alloc's body: always inlined into ps_alloc, whose fast path stays one call deep. */
static inline __attribute__((always_inline)) void *alloc_plain(struct ps_mem *m)
{
	unsigned me;
	struct ps_mem_pt *pt = self_pt_try(m, &me);
	if (TSYNC_UNLIKELY(pt == NULL))
		return NULL; /* errno = EAGAIN or ENOMEM */
	void *obj;
	if (TSYNC_LIKELY(pt->cache != NULL)) {
		obj = cache_pop(pt);
		if (TSYNC_LIKELY(!m->exact))
			return obj;
	} else {
		obj = alloc_slow(m, me, pt);
		if (!m->exact || obj == NULL)
			return obj;
	}
	acct_add(m, ACCT_ALLOC, 0);
	return obj;
}

void *ps_alloc(struct ps_mem *m)
{
	if (TSYNC_UNLIKELY(m->budget != NULL)) /* a budget's member: charged first */
		return m->budget_alloc(m);
	return alloc_plain(m);
}

void *ps_mem__alloc_plain(struct ps_mem *m)
{
	return alloc_plain(m);
}

/* Bad frees abort (include/tsync/ps_mem.h): a header whose slab word is not a page
 * address (with at most the latent tag) was never written by a ps_mem - the pointer is
 * not ps_mem's; a header whose free time is set was freed already
 * (ps_lock_release_free marks it first: `marked` accepts that mark); one whose slab
 * belongs to another ps_mem is foreign. */
static inline void check_free(struct ps_mem *m, struct ps_mem_hdr *h, void *obj, int marked,
			      const char *call)
{
	if (TSYNC_UNLIKELY(!hdr_plausible(h)))
		tsync__fatal("%s: %p was not allocated by a ps_mem", call, obj);
	uint64_t old = atomic_load_explicit(&h->free_tsc, memory_order_relaxed);
	if (TSYNC_UNLIKELY(old != 0 && !(marked && old == PS_MEM_MARKED)))
		tsync__fatal("%s: double free of %p", call, obj);
	if (TSYNC_UNLIKELY(hdr_slab(h)->m != m))
		tsync__fatal("%s: %p does not belong to this ps_mem", call, obj);
}

/* Shared by ps_free and ps_lock_release_free (which marked the header first). */
void ps__free(struct ps_mem *m, void *obj, int marked, const char *call)
{
	struct ps_mem_hdr *h = HDR(obj);
	check_free(m, h, obj, marked, call);
	unsigned me;
	struct ps_mem_pt *pt = self_pt(m, &me);
	/* Freed from now on for ps_lock_take and the double-free check; the free time is
	 * stamped below, once per reclaim_batch frees, by one ordered clock reading that
	 * follows every earlier store of ours, the unlinks included. */
	atomic_store_explicit(&h->free_tsc, PS_MEM_MARKED, memory_order_release);
	if (TSYNC_UNLIKELY(m->budget != NULL))
		ps_mem__budget_freed(m);
	if (TSYNC_UNLIKELY(m->mode != PS_MEM_RECLAIM_INLINE) && ps_mem__free_task(m, pt, h))
		return;
	/* onto the unstamped frees (the caller's alone; ps_mem__stamp() queues them) */
	h->next = NULL;
	if (pt->utail)
		pt->utail->next = h;
	else
		pt->unstamped = h;
	pt->utail = h;
	/* Its latent cache, or beyond its bound its latent slab (Prudence (ASPLOS 2016) §4.1) */
	if (TSYNC_LIKELY(pt->nlatent < m->cache_size || !PRUDENT(m, PS_MEM_PRUDENCE_LATENT_SLAB)))
		pt->nlatent++;
	else
		ps_mem__latent_slab_put(m, pt, h);
	/* A cache flush foreseen: schedule the pre-flush for the idle hook (Prudence
	 * Algorithm 1, lines 41-43; ps_mem_reclaim runs it) */
	if (TSYNC_UNLIKELY(pt->ncache + pt->nlatent > m->cache_size))
		pt->pf_due = true;
	cnt_add(&pt->c_pending, 1);
	cnt_add(&pt->c_frees, 1);
	if (TSYNC_LIKELY(!m->ext)) {
		/* Every stamp_batch-th free stamps the batch, queues it and reclaims, under
		 * qlock (the queue may be taken from an idle owner: steal_idle). The other
		 * frees touch only the caller's unstamped list. A thief holding qlock (a few
		 * instructions) makes this free skip: the next one tries again. */
		if (++pt->nunstamped >= m->stamp_batch && qlock_try(m, pt)) {
			ps_mem__stamp(pt);
			ps_mem__reclaim_general(m, me, pt, m->batch, RECLAIM_FREE);
			if (TSYNC_UNLIKELY(++pt->steal_tick >= STEAL_EVERY)) {
				pt->steal_tick = 0;
				ps_mem__steal_idle(m, pt, 1);
			}
			qlock_drop(m, pt);
		}
		return;
	}
	if (++pt->nunstamped >= m->stamp_batch)
		ps_mem__stamp(pt);
	uint64_t crossed = 0;
	if (m->exact) {
		zg_add(m, 1); /* a zombie, before pending rises (struct ps_mem: zg) */
		uint64_t v = acct_add(m, ACCT_FREE, 0);
		if (m->pending_fn && ACCT_PENDING(v) == m->threshold)
			crossed = ACCT_PENDING(v);
	}
	if (reclaim_due(m, pt))
		reclaim(m, me, pt, m->batch, RECLAIM_FREE);
	/* BOTH: a backlog our reclamation could not clear goes to σ */
	if (TSYNC_UNLIKELY(m->mode == PS_MEM_RECLAIM_BOTH) &&
	    atomic_load_explicit(&pt->c_pending, memory_order_relaxed) >= m->batch && sigma_on(m))
		ps_mem__handoff_queue(m, pt);
	if (TSYNC_UNLIKELY(crossed))
		m->pending_fn(m, crossed, m->pending_arg);
}

void ps_free(struct ps_mem *m, void *obj)
{
	if (obj != NULL)
		ps__free(m, obj, 0, "ps_free");
}

void ps_free_now(struct ps_mem *m, void *obj)
{
	if (obj == NULL)
		return;
	struct ps_mem_hdr *h = HDR(obj);
	check_free(m, h, obj, 0, "ps_free_now");
	unsigned me;
	struct ps_mem_pt *pt = self_pt(m, &me);
	/* Any non-zero time marks it free for the checks (cache_pop clears it); no one
	 * compares it with a quiescence point. */
	atomic_store_explicit(&h->free_tsc, PS_MEM_MARKED + 1, memory_order_relaxed);
	cache_push(m, me, pt, h);
	if (pt->ncache + pt->nlatent > m->cache_size)
		pt->pf_due = true; /* as ps_free does */
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	cnt_add(&pt->c_frees_now, 1);
	if (m->exact)
		acct_add(m, ACCT_ALLOC, 1); /* live - 1 */
	if (m->budget != NULL)
		ps_mem__budget_reusable(m, 1, false);
}

/* The caller's record, its hand-off to σ synchronised (TASK, BOTH) and its queue lock
 * taken: the start of ps_mem_reclaim and ps_mem_collect. */
static struct ps_mem_pt *reclaim_begin(struct ps_mem *m, unsigned *me)
{
	struct ps_mem_pt *pt = self_pt(m, me);
	if (TSYNC_UNLIKELY(m->mode != PS_MEM_RECLAIM_INLINE))
		ps_mem__task_sync(m, pt);
	ps_mem__qlock_own(m, pt);
	return pt;
}

size_t ps_mem_reclaim(struct ps_mem *m)
{
	unsigned me;
	struct ps_mem_pt *pt = reclaim_begin(m, &me);
	/* queues of exited threads wait for a caller: adopt one (an idle thread's call is
	 * where they would otherwise be left, when no allocation runs dry) */
	if (atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) != 0)
		ps_mem__adopt_orphan(m, pt);
	if (!m->ext)
		ps_mem__steal_idle(m, pt, UINT_MAX); /* one look at every other thread */
	size_t n = reclaim(m, me, pt, SIZE_MAX, RECLAIM_ALL);
	/* the idle hook: the pre-flush a free scheduled */
	if (pt->pf_due && PRUDENT(m, PS_MEM_PRUDENCE_PREFLUSH))
		ps_mem__preflush(m, pt);
	qlock_drop(m, pt);
	ps_mem__pool_shrink(m);
	/* the callbacks of m's ps that are ready (<tsync/ps.h>: ps_call), outside every
	 * lock of m: a callback may free into m */
	ps_call_poll(m->ps);
	return n;
}

size_t ps_mem_collect(struct ps_mem *m)
{
	unsigned me;
	struct ps_mem_pt *pt = reclaim_begin(m, &me);
	ps_mem__stamp(pt);
	size_t n = reclaim(m, me, pt, SIZE_MAX, RECLAIM_COLLECT);
	qlock_drop(m, pt);
	return n;
}

/* ---- fork (registry hooks; docs/design.md §8) ---------------------------------------- */

static struct ps_mem *mem_of_client(struct tsync__client *c)
{
	return (struct ps_mem *)((char *)c - offsetof(struct ps_mem, client));
}

static void ps_mem_fork_prepare(struct tsync__client *c, int phase)
{
	if (phase == 1)
		pthread_mutex_lock(&mem_of_client(c)->pool_lock);
}

static void ps_mem_fork_parent(struct tsync__client *c)
{
	pthread_mutex_unlock(&mem_of_client(c)->pool_lock);
}

/* The child: the pool (slabs, orphaned queues) was changed only under the pool mutex,
 * which the forking thread holds: it is whole. What the vanished threads owned alone -
 * caches, queues, slabs, hand-off lists - is left as it is, never touched again (their
 * ids are retired). σ's thread does not exist here: detach it, so that frees are
 * reclaimed inline (the forking thread takes its own hand-off list back at its next
 * free, as after a detach). */
static void ps_mem_fork_child(struct tsync__client *c, const unsigned char *ids, unsigned n)
{
	struct ps_mem *m = mem_of_client(c);
	/* A vanished thread's queue lock may be free while its queue is not whole (it was
	 * changing its unstamped part, or the fork caught it between a detach's steps):
	 * hold every such lock for good, so that no idle-queue look (steal_idle) takes it. */
	for (unsigned id = 0; id < n; id++)
		if (ids[id] == TSYNC__ID_VANISHED) {
			struct ps_mem_pt *pt = pt_if_exists(m, id);
			if (pt != NULL)
				atomic_store_explicit(&pt->qlock, 1, memory_order_relaxed);
		}
	atomic_store_explicit(&m->sigma, NULL, memory_order_seq_cst);
	pthread_mutex_unlock(&m->pool_lock);
}

/* Registry hook: an explicitly registered thread's record, allocated up front so that
 * none of its calls on m allocates per-thread state. */
static int ps_mem_thread_prepare(struct tsync__client *c, unsigned tid)
{
	struct ps_mem *m = (struct ps_mem *)((char *)c - offsetof(struct ps_mem, client));
	if (!tsync__tdir_get((void *_Atomic *)m->chunks, tid, sizeof(struct ps_mem_pt), NULL, NULL))
		return -1;
	pt_hw_note(m, tid);
	return 0;
}

/* ---- create / destroy ---------------------------------------------------------- */

#ifdef TSYNC_TEST_SMALL
#define DEF_CACHE 4u
#define DEF_BATCH 2u
#define DEF_KEPT 1u
#define DEF_SLAB 4096u
#else
#define DEF_CACHE 64u
#define DEF_BATCH 16u
#define DEF_KEPT 4u
#define DEF_SLAB (64u * 1024u)
#endif
/* Objects a default slab holds at least (and the floor of the rule's target). */
#define SLAB_TARGET_MIN 8u

struct ps_mem *ps_mem_create(struct ps *ps, size_t obj_size, const struct ps_mem_config *cfg)
{
	struct ps_mem_config def = PS_MEM_CONFIG_INIT, c = def;
	if (cfg) {
		if (cfg->size < sizeof(size_t) || cfg->size > 4096) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	}
	if (ps == NULL || obj_size == 0 || obj_size > ((size_t)1 << 30)) {
		errno = EINVAL;
		return NULL;
	}
	size_t align = c.align ? c.align : 16;
	if ((align & (align - 1)) || align > 4096 || (c.slab_size % 4096) ||
	    c.slab_size > ((size_t)1 << 31)) {
		errno = EINVAL;
		return NULL;
	}
	if (align < sizeof(void *))
		align = sizeof(void *);
	/* Slot: [pad][header][object], header immediately before the object; the object is
	 * aligned to `align` because first and stride are multiples of it. */
	size_t hdr_area = tsync__round_up(sizeof(struct ps_mem_hdr), align);
	size_t stride = tsync__round_up(hdr_area + obj_size, align);
	size_t first = tsync__round_up(sizeof(struct slab),
				       align > TSYNC_CACHE_LINE ? align : TSYNC_CACHE_LINE);
	size_t slab = c.slab_size;
	if (!slab) {
		/* The slab-size rule (include/tsync/ps_mem.h, struct ps_mem_config): the
		 * smallest page multiple that holds max(cache_size, 8) objects - one refill
		 * from a fresh slab - between 4 KiB and DEF_SLAB; above DEF_SLAB, as before,
		 * the power of two that holds 8. */
		unsigned cs = c.cache_size ? c.cache_size : DEF_CACHE;
		size_t target = cs > SLAB_TARGET_MIN ? cs : SLAB_TARGET_MIN;
		slab = DEF_SLAB;
		if (target <= (DEF_SLAB - first) / stride)
			slab = tsync__round_up(first + target * stride, 4096);
		if (slab < 4096)
			slab = 4096;
		while (first + SLAB_TARGET_MIN * stride > slab)
			slab <<= 1;
	}
	if (first + stride > slab) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_mem *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->ps = ps;
	m->obj_size = obj_size;
	m->align = align;
	m->hdr_area = hdr_area;
	m->stride = stride;
	m->first = first;
	m->slab_size = slab;
	m->nobj = (unsigned)((slab - first) / stride);
	m->cache_size = c.cache_size ? c.cache_size : DEF_CACHE;
	m->trim_max = m->cache_size > 4 ? 4 * m->cache_size : 16;
	m->batch = c.reclaim_batch ? c.reclaim_batch : DEF_BATCH;
	m->slabs_kept = c.slabs_kept ? c.slabs_kept : DEF_KEPT;
	m->rt = ps_policy(ps) != PS_POLICY_GENERAL;
	m->stamp_batch = c.stamp_batch ? c.stamp_batch : m->rt ? 1 : m->batch;
	if (c.accounting < PS_MEM_ACCOUNT_AUTO || c.accounting > PS_MEM_ACCOUNT_EXACT ||
	    c.limit_wait_ms < -1 || c.pending_bound_pct < PS_MEM_PENDING_BOUND_OFF ||
	    (c.pending_fn && c.pending_threshold == 0) ||
	    (c.pending_threshold && c.pending_fn == NULL) ||
	    (c.pending_fn && c.accounting == PS_MEM_ACCOUNT_PER_THREAD) ||
	    c.reclaim_mode < PS_MEM_RECLAIM_INLINE || c.reclaim_mode > PS_MEM_RECLAIM_BOTH) {
		free(m);
		errno = EINVAL;
		return NULL;
	}
	m->exact = c.accounting == PS_MEM_ACCOUNT_EXACT ||
		   (c.accounting == PS_MEM_ACCOUNT_AUTO && (m->rt || c.pending_fn));
	m->period = c.reclaim_period_ns ? tsync_ns_to_ticks(c.reclaim_period_ns) : 0;
	if (c.reclaim_period_ns && m->period == 0)
		m->period = 1;
	m->grace_fn = c.grace_fn;
	m->grace_arg = c.grace_arg;
	m->threshold = c.pending_threshold;
	m->pending_fn = c.pending_fn;
	m->pending_arg = c.pending_arg;
	m->reclaim_fn = c.reclaim_fn;
	m->reclaim_arg = c.reclaim_arg;
	m->max_slabs = c.max_bytes ? (c.max_bytes / slab ? c.max_bytes / slab : 1) : 0;
	m->limit_wait_ms = c.limit_wait_ms ? c.limit_wait_ms : 100;
	/* the pending bound: GENERAL instances that reclaim INLINE without a period (the
	 * others keep the rules docs/rt.md analyses) */
	if (!m->rt && c.reclaim_mode == PS_MEM_RECLAIM_INLINE && m->period == 0 &&
	    c.pending_bound_pct != PS_MEM_PENDING_BOUND_OFF)
		m->bound_pct = c.pending_bound_pct > 0 ? (unsigned)c.pending_bound_pct
						       : PS_MEM_PENDING_BOUND_DEFAULT;
	m->prudence = c.prudence == 0 ? PS_MEM_PRUDENCE_DEFAULT : c.prudence & PS_MEM_PRUDENCE_ALL;
	m->mode = c.reclaim_mode;
	m->ext = m->rt || m->exact || m->period || m->grace_fn || m->pending_fn || m->reclaim_fn ||
		 m->mode != PS_MEM_RECLAIM_INLINE;
	m->nchunks = tsync__chunk_count();
	m->chunks = calloc(m->nchunks, sizeof(*m->chunks));
	if (m->chunks == NULL) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&m->pool_lock, NULL);
	m->client.thread_exit = ps_mem__thread_exit;
	m->client.thread_prepare = ps_mem_thread_prepare;
	m->client.fork_prepare = ps_mem_fork_prepare;
	m->client.fork_parent = ps_mem_fork_parent;
	m->client.fork_child = ps_mem_fork_child;
	if (tsync__client_add(&m->client) != 0) { /* records of registered threads */
		for (unsigned i = 0; i < m->nchunks; i++)
			free(atomic_load_explicit(&m->chunks[i], memory_order_relaxed));
		free(m->chunks);
		pthread_mutex_destroy(&m->pool_lock);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void ps_mem_destroy(struct ps_mem *m)
{
	if (m == NULL)
		return;
	struct ps_reclaimer *r = atomic_load_explicit(&m->sigma, memory_order_seq_cst);
	if (r != NULL && r != PS_MEM_SIGMA_DETACHING)
		ps_reclaimer_detach(r, m);
	if (m->budget != NULL)
		m->budget_detach(m);
	tsync__client_remove(&m->client);
	pthread_mutex_lock(&m->pool_lock);
	ps_mem__slabs_destroy(m);
	while (m->orphans) {
		struct orphan *o = m->orphans;
		m->orphans = o->next;
		free(o);
	}
	pthread_mutex_unlock(&m->pool_lock);
	tsync__tdir_free_chunks((void *_Atomic *)m->chunks, m->nchunks);
	free(m->chunks);
	pthread_mutex_destroy(&m->pool_lock);
	free(m);
}

struct ps_mem *ps_mem_of(const void *obj)
{
	return hdr_slab(HDR(obj))->m;
}

struct ps *ps_mem_ps(const struct ps_mem *m)
{
	return m->ps;
}

size_t ps_mem_obj_size(const struct ps_mem *m)
{
	return m->obj_size;
}

size_t ps_mem_slab_size(const struct ps_mem *m)
{
	return m->slab_size;
}

unsigned ps_mem_slab_objects(const struct ps_mem *m)
{
	return m->nobj;
}

/* ---- thread exit --------------------------------------------------------------------- */

/* Runs in the exiting thread (registry mutex held): give everything back. */
void ps_mem__thread_exit(struct tsync__client *c, unsigned tid)
{
	struct ps_mem *m = (struct ps_mem *)((char *)c - offsetof(struct ps_mem, client));
	struct ps_mem_pt *pt = pt_if_exists(m, tid);
	if (pt == NULL)
		return;
	/* TASK with a σ: the queue goes to σ; without one, the hand-off list comes back
	 * and is reclaimed or orphaned with the queue. A list left with a σ stays in this
	 * record, which outlives the thread: σ sweeps every record. */
	if (m->mode != PS_MEM_RECLAIM_INLINE)
		ps_mem__task_sync(m, pt);
	ps_mem__qlock_own(m, pt); /* held to the end: the record outlives the thread */
	reclaim(m, tid, pt, SIZE_MAX, RECLAIM_ALL); /* stamps the whole queue first */
	ps_mem__cache_flush(m, tid, pt, pt->ncache);
	ps_mem__drain_remote(m, tid, pt);
	/* What still waits goes to its latent slabs, not to whoever adopts the queue: an
	 * orphan carries no latent cache, so no count strands with the id. */
	ps_mem__latent_to_slabs(m, pt, 0);

	/* cannot hand the queue over: keep it with the id; its next user adopts it */
	if (!ps_mem__queue_orphan(m, pt)) {
		qlock_drop(m, pt);
		return;
	}
	ps_mem__stall_clear(pt);
	pt->last_reclaim = 0;
	qlock_drop(m, pt);
	ps_mem__slabs_release(m, pt);
}
