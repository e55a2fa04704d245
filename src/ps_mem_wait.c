/*
 * src/ps_mem_wait.c - waiting for a grace period instead of growing or failing (Prudence
 * (ASPLOS 2016) §4, Algorithm 1 lines 31-32): at the pending bound (is one due:
 * ps_mem__bound_due) and at cfg->max_bytes or a refused slab (ps_mem__limit_wait), for
 * ps_alloc's slow path. It drives the queue (ps_mem_queue.c) and the slabs
 * (ps_mem_slab.c); the layer map: ps_mem.c; the argument: docs/design.md §3 ("Waiting for
 * a grace period").
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "ps_mem_types.h"
#include "ps_mem_queue.h"
#include "ps_mem_slab.h"
#include "ps_mem_wait.h"

/* ---- waiting for a grace period (§4; Algorithm 1 lines 31-32) ----------------------- */

/* Objects of m freed with ps_free and not yet reclaimed, in every thread's queue and
 * the orphaned ones, and, if `live` is not NULL, the live objects in *live (sums without
 * stopping anyone: a snapshot, as ps_mem_stats'). */
static uint64_t pending_any(struct ps_mem *m, uint64_t *live)
{
	if (m->exact) {
		uint64_t v = atomic_load_explicit(&m->acct, memory_order_relaxed);
		if (live)
			*live = ACCT_LIVE(v);
		return ACCT_PENDING(v);
	}
	uint64_t n = atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) +
		     atomic_load_explicit(&m->task_pt.c_pending, memory_order_relaxed);
	uint64_t allocs = 0, frees = 0;
	unsigned pos = 0;
	for (struct ps_mem_pt *pt; (pt = pt_next(m, &pos)) != NULL;) {
		uint64_t tk = atomic_load_explicit(&pt->c_taken, memory_order_relaxed);
		uint64_t hd = atomic_load_explicit(&pt->c_handed, memory_order_relaxed);
		uint64_t pd = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
		uint64_t st = atomic_load_explicit(&pt->c_stolen, memory_order_relaxed);
		n += (pd > st ? pd - st : 0) + (hd > tk ? hd - tk : 0);
		if (live) {
			allocs += atomic_load_explicit(&pt->c_allocs, memory_order_relaxed);
			frees += atomic_load_explicit(&pt->c_frees, memory_order_relaxed) +
				 atomic_load_explicit(&pt->c_frees_now, memory_order_relaxed);
		}
	}
	if (live)
		*live = allocs > frees ? allocs - frees : 0;
	return n;
}

/*
 * Is m past its pending bound, with `slabs` slabs and no free object in the caller's
 * reach (refill_maps)? What m holds beyond its live objects - the pending ones and the
 * free slots the caller cannot reach (other threads' caches, slabs and remote lists) -
 * is more than bound_pct % of the live objects, and than PS_MEM_BOUND_FLOOR_SLABS slabs
 * hold. (One object size: a ratio of counts is the ratio of bytes.) Pending objects
 * alone undercount: on the endurance run, slabs mapped while the pending count was low
 * but the free slots were another thread's left the peak at 3.3-3.7x the live set
 * instead of 1.8x (docs/prudence.md §2).
 */
static bool over_bound(struct ps_mem *m, uint64_t slabs)
{
	uint64_t live, pending = pending_any(m, &live), cap = slabs * m->nobj;
	uint64_t held = cap > live ? cap - live : 0;
	if (held < pending) /* the sums are snapshots */
		held = pending;
	return held > (uint64_t)PS_MEM_BOUND_FLOOR_SLABS * m->nobj &&
	       held * 100 > live * m->bound_pct;
}

/* Would a refill map a new slab now: no free object in the caller's own slabs nor in
 * the pool's, and m below cfg->max_bytes (at the limit the refill cannot map: the limit
 * wait takes over)? The slabs m holds in *slabs. A snapshot under the pool mutex, taken
 * as the refill takes it: another thread may take the pool's last slab first, and the
 * refill then maps. */
static bool refill_maps(struct ps_mem *m, struct ps_mem_pt *pt, uint64_t *slabs)
{
	if (pt->partial.head != NULL)
		return false;
	pthread_mutex_lock(&m->pool_lock);
	bool maps = m->pool_partial.head == NULL && m->pool_empty.head == NULL &&
		    ps_mem__pick_slab(m, &m->pool_draining, true) == NULL &&
		    (m->max_slabs == 0 || m->slabs < m->max_slabs);
	*slabs = m->slabs;
	pthread_mutex_unlock(&m->pool_lock);
	return maps;
}

bool ps_mem__bound_due(struct ps_mem *m, struct ps_mem_pt *pt)
{
	/* the cheap tests first: the caller's own line, its own section; then the pool
	 * mutex (the refill takes it anyway), last the sums over every thread's record */
	uint64_t own = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
	if (own <= atomic_load_explicit(&pt->c_stolen, memory_order_relaxed))
		return false; /* nothing our wait could make reusable */
	uint64_t slabs;
	return !ps_in_section(m->ps) && refill_maps(m, pt, &slabs) && over_bound(m, slabs);
}

/* The wait's backoff: naps from NAP_MIN_NS, doubling to NAP_MAX_NS. */
#define NAP_MIN_NS 4000u
#define NAP_MAX_NS 1000000u

/*
 * Wait for a grace period with an empty cache (Prudence (ASPLOS 2016) §4, Algorithm 1
 * lines 31-32: wait instead of growing or failing). Each try repeats what the slow path
 * does - reclaim the caller's queue, take remote-freed objects and orphaned queues -
 * then refills from free memory. The quiescence computations are the lazy ones of
 * ps_alloc's slow path: at most one read barrier per read interval in the domain, and
 * none while a section holds the head's grace period back (a barrier costs a
 * millisecond on a VM whose other CPU runs a thread of the process: a barrier per nap
 * would cost more than the wait). Between tries, naps with an exponential backoff, up
 * to m->limit_wait_ms from the first try. Contract: ps_alloc; argument:
 * docs/design.md §3 ("Waiting for a grace period").
 */
__attribute__((noinline)) bool ps_mem__limit_wait(struct ps_mem *m, unsigned me,
						  struct ps_mem_pt *pt, int why)
{
	bool bound = why == PS_MEM_WAIT_BOUND;
	if (m->limit_wait_ms < 0 || pending_any(m, NULL) == 0) {
		errno = ENOMEM;
		return false;
	}
	if (ps_in_section(m->ps)) { /* its own section may hold that grace period back */
		errno = why == PS_MEM_WAIT_LIMIT ? EDEADLK : ENOMEM;
		return false;
	}
	cnt_add(&pt->c_waits, 1);
	uint64_t deadline = tsync__mono_ns() + (uint64_t)m->limit_wait_ms * 1000000u;
	unsigned nap = NAP_MIN_NS;
	for (;;) {
		reclaim(m, me, pt, SIZE_MAX, RECLAIM_ALLOC);
		ps_mem__drain_remote(m, me, pt);
		if (atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) != 0 &&
		    ps_mem__adopt_orphan(m, pt) != 0)
			reclaim(m, me, pt, SIZE_MAX, RECLAIM_ALLOC);
		if (pt->cache != NULL)
			return true;
		uint64_t slabs;
		if (bound) {
			/* free memory in reach now: take it; else map once below the bound */
			if (!refill_maps(m, pt, &slabs)) {
				if (ps_mem__refill(m, me, pt) > 0)
					return true;
			} else if (!over_bound(m, slabs)) {
				return false;
			}
		} else if (ps_mem__refill(m, me, pt) > 0) {
			return true;
		} else if (errno != ENOSPC && errno != ENOMEM) {
			errno = ENOMEM;
			return false;
		} else if (errno == ENOMEM && m->bound_pct == 0) {
			return false; /* no bound: a refused slab fails at once, as before */
		}
		if (pending_any(m, NULL) == 0) { /* nothing left to wait for */
			errno = ENOMEM;
			return false;
		}
		uint64_t now = tsync__mono_ns();
		if (now >= deadline) {
			cnt_add(&pt->c_wait_timeouts, 1);
			errno = ENOMEM;
			return false;
		}
		uint64_t left = deadline - now;
		struct timespec ts = {0, (long)(nap < left ? nap : left)};
		nanosleep(&ts, NULL);
		if (nap < NAP_MAX_NS)
			nap = nap * 2 < NAP_MAX_NS ? nap * 2 : NAP_MAX_NS;
	}
}
