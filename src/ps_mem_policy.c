/*
 * src/ps_mem_policy.c - Prudence's policies in ps_mem (Prudence (ASPLOS 2016) §4,
 * Algorithm 1; each a switch in ps_mem_config.prudence): latent slabs and slab
 * pre-movement, the latent-aware flush size, the partial refill size, the
 * fragmentation-aware slab choice, the pre-flush, and waiting for a grace period at
 * cfg->max_bytes. The mechanisms they steer are elsewhere (the queue: ps_mem_queue.c;
 * the slabs: ps_mem_slab.c). The layer map: ps_mem.c; what the files share:
 * ps_mem_internal.h; the measures: docs/prudence.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "ps_mem_internal.h"

/* ---- latent slabs (Prudence (ASPLOS 2016) §4.1) and pre-movement ------------------- */

/*
 * Slab pre-movement (Algorithm 1, lines 52-57): at the deferred free that puts an object
 * into s's latent slab, move s to the list it will belong on when that object comes back,
 * instead of in the burst of returns after the grace period. Who may move s follows the
 * ownership rules (ps_mem_internal.h; docs/design.md §3, "Prudence's latent caches and
 * slabs"):
 *  - a pool slab, under the pool mutex (the paper's node lock): full -> partial (lines
 *    54-55), or to the draining list once every allocated object is latent (lines 56-57;
 *    refills take it last, so it empties and pool_trim can return it);
 *  - the caller's own slab with every allocated object latent: handed to the pool, onto
 *    the draining list (the only place slabs are returned from). An owned full slab is
 *    not moved to the owner's partial list: that list is what the owner can refill from
 *    now (and what own_slab_gained caps), and it takes no lock to spare;
 *  - another thread's slab: not touched (its lists are its owner's alone). The count
 *    just added to s->nlatent is what its owner acts on: its refill passes over a mostly
 *    latent slab (ps_mem__pick_slab) and hands an all-latent one to the pool
 *    (ps_mem__premove_own).
 * A hint: a busy pool mutex skips it (the slab then moves when its objects come back).
 */
static void slab_premove(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s)
{
	int o = atomic_load_explicit(&s->owner, memory_order_relaxed);
	if (o == OWNER_POOL) {
		if (pthread_mutex_trylock(&m->pool_lock) != 0)
			return;
		if (atomic_load_explicit(&s->owner, memory_order_relaxed) == OWNER_POOL &&
		    (s->list == L_POOL_PARTIAL || s->list == L_POOL_FULL)) {
			enum slab_list_id to = pool_list_for(m, s);
			if (to != s->list) {
				list_del(m, NULL, s);
				list_add(m, NULL, s, to);
				m->premoves++;
			}
		}
		pthread_mutex_unlock(&m->pool_lock);
		return;
	}
	/* ours? (an owner id names its record; only we read our slabs' nfree) */
	if (o < 0 || pt_if_exists(m, (unsigned)o) != pt || !slab_all_latent(s) ||
	    pthread_mutex_trylock(&m->pool_lock) != 0)
		return;
	slab_give_locked(m, pt, s);
	m->premoves++;
	pthread_mutex_unlock(&m->pool_lock);
}

void ps_mem__latent_slab_put(struct ps_mem *m, struct ps_mem_pt *pt, struct ps_mem_hdr *h)
{
	struct slab *s = hdr_slab(h);
	atomic_store_explicit(&h->slab, (uintptr_t)s | HDR_LATENT_SLAB, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->nlatent, 1, memory_order_relaxed);
	if (PRUDENT(m, PS_MEM_PRUDENCE_PREMOVE))
		slab_premove(m, pt, s);
}

void ps_mem__latent_slab_take(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
			      struct ps_mem_hdr *h)
{
	struct slab *s = hdr_slab(h);
	atomic_store_explicit(&h->slab, (uintptr_t)s, memory_order_relaxed);
	/* uncounted before it is back: a slab never looks empty with an object queued */
	atomic_fetch_sub_explicit(&s->nlatent, 1, memory_order_relaxed);
	ps_mem__free_to_slab(m, me, pt, h);
}

uint64_t ps_mem__latent_slab_count(struct ps_mem *m)
{
	uint64_t n = 0;
	for (struct slab *s = m->all; s; s = s->all_next)
		n += atomic_load_explicit(&s->nlatent, memory_order_relaxed);
	return n;
}

/* ---- how many objects a flush and a refill move (§4.2; Algorithm 1, line 14) -------- */

/* How many objects a full cache flushes before taking one more. Latent-aware (Prudence
 * (ASPLOS 2016) §4.2): room for that one and for every object the latent cache will
 * still bring after its grace period, so their arrival needs no second flush - at least
 * half a cache, at most all of it. */
unsigned ps_mem__flush_size(const struct ps_mem *m, const struct ps_mem_pt *pt)
{
	unsigned half = (m->cache_size + 1) / 2;
	if (!PRUDENT(m, PS_MEM_PRUDENCE_LATENT_FLUSH) || pt->nlatent + 1 <= half)
		return half;
	return pt->nlatent + 1 < m->cache_size ? pt->nlatent + 1 : m->cache_size;
}

/* How many objects a refill takes. Partial refill (Prudence (ASPLOS 2016) Algorithm 1,
 * line 14): room for the latent cache's objects, which arrive after their grace period
 * - capacity minus them, but at least a quarter of the cache: under a long grace period
 * the latent cache stays full while its objects trickle in one per reclamation, and
 * "capacity minus them" would make every allocation a one-object refill (measured: ten
 * times the misses on the endurance run). Without the policy: half a cache. */
unsigned ps_mem__refill_want(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (!PRUDENT(m, PS_MEM_PRUDENCE_PARTIAL_REFILL))
		return (m->cache_size + 1) / 2;
	unsigned floor = (m->cache_size + 3) / 4;
	return pt->nlatent + floor < m->cache_size ? m->cache_size - pt->nlatent : floor;
}

/* ---- which slab a refill takes (Algorithm 1, lines 17-21) ------------------------- */

#define FRAG_SCAN 10 /* partly free slabs a refill compares (Prudence §5: 10) */

/*
 * Fragmentation-aware choice (Prudence (ASPLOS 2016) Algorithm 1 lines 17-19, Fig. 5,
 * §4.2 "Reduces total fragmentation"): among the first FRAG_SCAN slabs of `l` that have a
 * free object, the fullest - the fewest objects free now - so the live set packs into
 * few slabs and the emptier ones can drain; passing over slabs most of whose allocated
 * objects are latent (slab_mostly_latent: they empty after the grace period if left
 * alone) unless latent_ok (the caller's fallback before growing: the paper's "unless it
 * needs to grow the slab cache"). Without the policy: the first slab with a free object.
 * Slabs with no free object (pre-moved full ones) do not count toward FRAG_SCAN; at most
 * 4 x FRAG_SCAN slabs are looked at. NULL if none fits. A pool list: pool mutex held;
 * an owner's partial list: that owner.
 */
struct slab *ps_mem__pick_slab(struct ps_mem *m, struct slab_list *l, bool latent_ok)
{
	struct slab *best = NULL;
	bool frag = PRUDENT(m, PS_MEM_PRUDENCE_FRAG_REFILL);
	unsigned seen = 0, looked = 0;
	for (struct slab *s = l->head; s && seen < FRAG_SCAN && looked < 4 * FRAG_SCAN;
	     s = s->next, looked++) {
		if (s->nfree == 0)
			continue;
		seen++;
		if (!frag)
			return s;
		if (!latent_ok && slab_mostly_latent(s))
			continue;
		if (best == NULL || s->nfree < best->nfree)
			best = s;
	}
	return best;
}

/*
 * Pre-movement of the caller's own slabs at its refill (Algorithm 1, lines 56-57, for
 * slabs the owner could not move at the free): another thread's deferred free may not
 * touch our lists, so it only counted its object in the slab's nlatent; here the owner
 * reads those counts and hands every slab among its first FRAG_SCAN partly free ones
 * whose allocated objects are all latent to the pool's draining list (one pool mutex for
 * all of them, and only when there is one).
 */
void ps_mem__premove_own(struct ps_mem *m, struct ps_mem_pt *pt)
{
	unsigned i = 0, n = 0;
	for (struct slab *s = pt->partial.head; s && i < FRAG_SCAN; s = s->next, i++)
		n += s->nfree < s->nobj && slab_all_latent(s);
	if (n == 0)
		return;
	pthread_mutex_lock(&m->pool_lock);
	i = 0;
	for (struct slab *s = pt->partial.head, *next; s && i < FRAG_SCAN; s = next, i++) {
		next = s->next;
		if (s->nfree == s->nobj || !slab_all_latent(s))
			continue;
		slab_give_locked(m, pt, s);
		m->premoves++;
	}
	pthread_mutex_unlock(&m->pool_lock);
}

/* ---- pre-flush (§4.2; Algorithm 1, lines 41-43) ------------------------------------ */

/* The object after h in the pre-flush's walk: the queue (qhead..qtail), then the frees
 * not yet stamped (unstamped..utail); h NULL: the first. */
static struct ps_mem_hdr *pf_next(const struct ps_mem_pt *pt, const struct ps_mem_hdr *h)
{
	if (h == NULL)
		return pt->qhead ? pt->qhead : pt->unstamped;
	if (h->next)
		return h->next;
	return h == pt->qtail ? pt->unstamped : NULL;
}

/*
 * Move queued latent-cache objects to their latent slabs until cache + latent cache
 * hold at most `target` objects (or none is left to move). The oldest go first: their
 * grace period ends first, so they would overflow the cache first. The walk resumes at
 * the cursor pt->pf_tail (every object before it is tagged already), so each queued
 * object is passed once, not once per call. Changes where an object goes after its
 * grace period, never when (docs/design.md §3, "Prudence's latent caches and slabs").
 */
void ps_mem__latent_to_slabs(struct ps_mem *m, struct ps_mem_pt *pt, unsigned target)
{
	uint64_t moved = 0;
	for (struct ps_mem_hdr *h = pf_next(pt, pt->pf_tail);
	     h && pt->nlatent && pt->ncache + pt->nlatent > target; h = pf_next(pt, h)) {
		if (!hdr_latent(h)) {
			ps_mem__latent_slab_put(m, pt, h);
			pt->nlatent--;
			moved++;
		}
		pt->pf_tail = h;
	}
	if (moved)
		cnt_add(&pt->c_preflushed, moved);
}

/*
 * Pre-flush (Prudence (ASPLOS 2016) §4.2, Algorithm 1 lines 41-43). A free that leaves
 * the cache and the latent cache together past the cache's size schedules it
 * (pt->pf_due: SCHEDULE_IDLE_PREFLUSH); the idle hook, ps_mem_reclaim, runs it: latent
 * objects move to their latent slabs now, instead of overflowing the cache when their
 * grace period ends. How far: to cache_size while the thread allocated at least as many
 * objects as it freed since the last pre-flush (allocation empties the cache), to half a
 * cache when it freed more (the paper's aggressiveness from the recent rates).
 */
void ps_mem__preflush(struct ps_mem *m, struct ps_mem_pt *pt)
{
	uint64_t a = atomic_load_explicit(&pt->c_allocs, memory_order_relaxed);
	uint64_t f = atomic_load_explicit(&pt->c_frees, memory_order_relaxed);
	bool freeing = f - pt->pf_frees > a - pt->pf_allocs;
	pt->pf_allocs = a;
	pt->pf_frees = f;
	pt->pf_due = false;
	if (pt->ncache + pt->nlatent > m->cache_size)
		ps_mem__latent_to_slabs(m, pt, freeing ? m->cache_size / 2 : m->cache_size);
}

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

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
	uint64_t deadline = mono_ns() + (uint64_t)m->limit_wait_ms * 1000000u;
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
		uint64_t now = mono_ns();
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
