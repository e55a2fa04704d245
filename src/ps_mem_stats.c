/*
 * src/ps_mem_stats.c - ps_mem's diagnostics: the counters of ps_mem_stats (summed over
 * the per-thread records without stopping their threads) and the stall report
 * (ps_stall_report: which section holds how much memory back). Structures:
 * ps_mem_types.h.
 */
#include <errno.h>
#include <string.h>

#include "ps_internal.h"
#include "ps_mem_types.h"
#include "ps_mem_policy.h"

int ps_mem_stats(struct ps_mem *m, struct ps_mem_stats *out)
{
	if (m == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	uint64_t allocs = 0, frees = 0, frees_now = 0;
	unsigned pos = 0;
	for (struct ps_mem_pt *pt; (pt = pt_next(m, &pos)) != NULL;) {
		allocs += atomic_load_explicit(&pt->c_allocs, memory_order_relaxed);
		frees += atomic_load_explicit(&pt->c_frees, memory_order_relaxed);
		frees_now += atomic_load_explicit(&pt->c_frees_now, memory_order_relaxed);
		uint64_t pd = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
		uint64_t st = atomic_load_explicit(&pt->c_stolen, memory_order_relaxed);
		out->pending += pd > st ? pd - st : 0; /* taken by a thief, not yet subtracted */
		out->cached += atomic_load_explicit(&pt->c_cached, memory_order_relaxed);
		out->reclaimed += atomic_load_explicit(&pt->c_reclaimed, memory_order_relaxed);
		uint64_t rf = atomic_load_explicit(&pt->c_refills, memory_order_relaxed);
		uint64_t fl = atomic_load_explicit(&pt->c_flushes, memory_order_relaxed);
		out->cache_refills += rf;
		out->cache_flushes += fl;
		out->cache_churn += rf < fl ? rf : fl;
		out->cache_misses += atomic_load_explicit(&pt->c_misses, memory_order_relaxed);
		out->merge_hits += atomic_load_explicit(&pt->c_merge_hits, memory_order_relaxed);
		out->alloc_waits += atomic_load_explicit(&pt->c_waits, memory_order_relaxed);
		out->wait_timeouts +=
			atomic_load_explicit(&pt->c_wait_timeouts, memory_order_relaxed);
		out->remote_frees += atomic_load_explicit(&pt->c_remote, memory_order_relaxed);
		out->grace_refusals += atomic_load_explicit(&pt->c_refused, memory_order_relaxed);
		out->preflushed += atomic_load_explicit(&pt->c_preflushed, memory_order_relaxed);
		uint64_t w = atomic_load_explicit(&pt->c_max_wait, memory_order_relaxed);
		if (w > out->max_wait_ticks)
			out->max_wait_ticks = w;
	}
	out->allocs = allocs;
	out->frees = frees;
	out->frees_now = frees_now;
	out->in_use = allocs > frees + frees_now ? allocs - frees - frees_now : 0;
	out->pending += atomic_load_explicit(&m->orphan_pending, memory_order_relaxed);
	/* The reclamation task's share: hand-off lists (taken read first: a list is
	 * counted into c_handed before it can be taken) and σ's queue. */
	uint64_t garbage = 0;
	pos = 0;
	for (struct ps_mem_pt *pt; (pt = pt_next(m, &pos)) != NULL;) {
		uint64_t tk = atomic_load_explicit(&pt->c_taken, memory_order_acquire);
		uint64_t hd = atomic_load_explicit(&pt->c_handed, memory_order_relaxed);
		out->handoff += hd > tk ? hd - tk : 0;
		garbage += atomic_load_explicit(&pt->c_garbage, memory_order_relaxed);
	}
	struct ps_mem_pt *tp = &m->task_pt;
	out->task_queued = atomic_load_explicit(&tp->c_pending, memory_order_relaxed);
	garbage += atomic_load_explicit(&tp->c_garbage, memory_order_relaxed);
	out->pending += out->handoff + out->task_queued;
	out->cached += atomic_load_explicit(&tp->c_cached, memory_order_relaxed);
	out->reclaimed += atomic_load_explicit(&tp->c_reclaimed, memory_order_relaxed);
	out->remote_frees += atomic_load_explicit(&tp->c_remote, memory_order_relaxed);
	out->grace_refusals += atomic_load_explicit(&tp->c_refused, memory_order_relaxed);
	uint64_t tw = atomic_load_explicit(&tp->c_max_wait, memory_order_relaxed);
	if (tw > out->max_wait_ticks)
		out->max_wait_ticks = tw;
	if (m->exact) {
		/* One word: live and pending at one instant. */
		uint64_t v = atomic_load_explicit(&m->acct, memory_order_relaxed);
		out->live = ACCT_LIVE(v);
		out->pending = ACCT_PENDING(v);
		out->in_use = out->live;
		out->peak_live = atomic_load_explicit(&m->peak_live, memory_order_relaxed);
		out->peak_pending = atomic_load_explicit(&m->peak_pending, memory_order_relaxed);
		out->peak_footprint = atomic_load_explicit(&m->peak_foot, memory_order_relaxed);
		out->exact = 1;
		uint64_t zg = atomic_load_explicit(&m->zg, memory_order_relaxed);
		garbage = ZG_GARBAGE(zg);
		out->peak_zombie = atomic_load_explicit(&m->peak_zombie, memory_order_relaxed);
		out->peak_garbage = atomic_load_explicit(&m->peak_garbage, memory_order_relaxed);
	} else {
		out->live = out->in_use;
	}
	/* garbage <= pending even while updates are in flight; zombie = the rest */
	out->garbage = garbage < out->pending ? garbage : out->pending;
	out->zombie = out->pending - out->garbage;
	pthread_mutex_lock(&m->pool_lock);
	out->slabs = m->slabs;
	out->peak_slabs = m->peak_slabs;
	out->slab_grows = m->grows;
	out->slab_shrinks = m->shrinks;
	out->remote_frees += m->pool_remote;
	out->slab_premoves = m->premoves;
	out->latent_slab = ps_mem__latent_slab_count(m);
	pthread_mutex_unlock(&m->pool_lock);
	out->latent_cache = out->pending > out->latent_slab ? out->pending - out->latent_slab : 0;
	out->cache_hits = allocs > out->cache_misses ? allocs - out->cache_misses : 0;
	out->slab_churn = out->slab_grows < out->slab_shrinks ? out->slab_grows : out->slab_shrinks;
	out->slab_bytes = out->slabs * m->slab_size;
	out->live_bytes = out->live * m->obj_size;
	uint64_t cap = out->slabs * m->nobj, used = out->live + out->pending;
	out->freed = cap > used ? cap - used : 0;
	return 0;
}

int ps_stall_report(struct ps *ps, struct ps_mem *m, struct ps_stall *out)
{
	if (ps == NULL || out == NULL || (m != NULL && m->ps != ps)) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	uint64_t enter = 0;
	unsigned inside = 0;
	out->tid = ps__oldest_section(ps, &enter, &inside);
	uint64_t now = tsync_now();
	out->inside = inside;
	if (out->tid >= 0) {
		out->enter = enter;
		out->section_ticks = now > enter ? now - enter : 0;
		out->section_ns = tsync_ticks_to_ns(out->section_ticks);
		out->over_grace = ps_policy(ps) == PS_POLICY_TEMPORAL &&
				  out->section_ticks > ps_grace_ticks(ps);
	}
	if (m == NULL)
		return 0;
	uint64_t oldest = UINT64_MAX;
	unsigned pos = 0;
	for (struct ps_mem_pt *pt; (pt = pt_next(m, &pos)) != NULL;) {
		uint64_t b1 = atomic_load_explicit(&pt->c_blocker1, memory_order_relaxed);
		uint64_t be = atomic_load_explicit(&pt->c_blocker_enter, memory_order_relaxed);
		if (out->tid >= 0 && b1 == (uint64_t)out->tid + 1 && be == enter)
			out->waiting += atomic_load_explicit(&pt->c_blocked, memory_order_relaxed);
		out->waiting_hook +=
			atomic_load_explicit(&pt->c_hook_blocked, memory_order_relaxed);
		uint64_t h = atomic_load_explicit(&pt->c_head_tsc, memory_order_relaxed);
		bool held = atomic_load_explicit(&pt->c_blocked, memory_order_relaxed) ||
			    atomic_load_explicit(&pt->c_hook_blocked, memory_order_relaxed);
		if (held && h > PS_MEM_MARKED && h < oldest)
			oldest = h;
	}
	if (oldest != UINT64_MAX && now > oldest)
		out->oldest_pending_ticks = now - oldest;
	struct ps_mem_stats st;
	ps_mem_stats(m, &st);
	out->pending = st.pending;
	return 0;
}
