/*
 * src/ps_mem_policy.c - Prudence's policies in ps_mem (Prudence (ASPLOS 2016) §4,
 * Algorithm 1; each a switch in ps_mem_config.prudence): latent slabs and slab
 * pre-movement, the latent-aware flush size, the partial refill size, the
 * fragmentation-aware slab choice and the pre-flush: decisions and bookkeeping that call
 * no other file of ps_mem. The mechanisms they steer call them (the queue:
 * ps_mem_queue.c; the slabs: ps_mem_slab.c); the wait for a grace period is
 * ps_mem_wait.c. The layer map: ps_mem.c; what the files share:
 * ps_mem_types.h; the measures: docs/prudence.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "ps_mem_types.h"
#include "ps_mem_policy.h"

/* ---- latent slabs (Prudence (ASPLOS 2016) §4.1) and pre-movement ------------------- */

/*
 * Slab pre-movement (Algorithm 1, lines 52-57): at the deferred free that puts an object
 * into s's latent slab, move s to the list it will belong on when that object comes back,
 * instead of in the burst of returns after the grace period. Who may move s follows the
 * ownership rules (ps_mem_types.h; docs/design.md §3, "Prudence's latent caches and
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

#define FRAG_SCAN 10 /* partly free slabs a refill compares (Prudence (ASPLOS 2016) §5: 10) */

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
