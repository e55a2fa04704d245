/*
 * apps/cached/core/evict.c - eviction: the CLOCK hand and the LRU tail choose a victim
 * (GreedyDual-Size-Frequency or plain CLOCK) and unlink it (I1, I4: a list lock holder
 * takes stripe locks only with trylock); docs/cached.md, "Eviction". The lists
 * themselves are lists.c.
 */
#include "cache_types.h"

/* Under l's lock: try to evict victim (I1, I4). Returns true if it was removed (its
 * class in r->cls); false if its stripe was locked by another thread (r->busy). The
 * stripe r->held, which the caller locked before l, needs no trylock. */
static bool try_evict_locked(struct cache *c, struct plist *l, struct item *v, struct evict_res *r)
{
	struct ck_spinlock_mcs qn;
	struct stripe *s = cache__stripe_of(c, v->hash);
	bool mine = s == r->held;
	r->cls = v->cls; /* read before the eviction frees it */
	if (!mine && !cache__stripe_trylock(c, s, &qn)) {
		r->busy = s;
		return false;
	}
	struct item *_Atomic *pp = cache__find_link(c, v);
	if (pp == NULL) { /* cannot happen by I1; be safe */
		if (!mine)
			cache__stripe_unlock(c, s, &qn);
		return false;
	}
	atomic_store_explicit(pp, atomic_load_explicit(&v->hnext, RELAXED), RELEASE);
	cache__list_remove_locked(c, l, v);
	if (!mine)
		cache__stripe_unlock(c, s, &qn);
	cache__st_add(c, S_LINKED, (uint64_t)-1);
	if (cache__item_state(c, v) == LIVE) {
		ST_INC(c, S_EVICTIONS);
		atomic_fetch_add_explicit(&c->cls[v->cls].evicted, 1, RELAXED);
		if (c->cfg.evict_fn) {
			uint32_t now = cache__now(c);
			uint32_t e = atomic_load_explicit(&v->exptime, RELAXED);
			uint32_t at = atomic_load_explicit(&v->atime, RELAXED);
			struct cache_evicted ev = {
				.key = v->data,
				.nkey = v->nkey,
				.nbytes = v->nbytes,
				.cls = v->cls,
				.fetched = (atomic_load_explicit(&v->mflags, RELAXED) &
					    M_FETCHED) != 0,
				.ttl = e == 0 ? -1 : (e > now ? (int64_t)(e - now) : 0),
				.idle = now > at ? now - at : 0};
			c->cfg.evict_fn(c->cfg.evict_arg, &ev);
		}
		cache__item_drop(c, v);
	} else {
		cache__item_drop_dead(c, v);
	}
	return true;
}

/* LRU (locked), under l's lock: the first of up to 50 items from the tail (least
 * recently used) whose stripe can be taken. */
bool cache__lru_evict_locked(struct cache *c, struct plist *l, struct evict_res *r)
{
	bool done = false;
	struct item *v = l->r[0].hand ? l->r[0].hand->lprev : NULL;
	for (unsigned tries = 0; v && tries < 50 && !done; tries++) {
		struct item *prev = v->lprev;
		done = try_evict_locked(c, l, v, r);
		if (prev == v)
			break;
		v = prev;
	}
	return done;
}

/* Evict the candidate of lowest priority (the next if its stripe is busy); raise: it beat
 * no overdue item, so L rises to it. */
static bool evict_lowest(struct cache *c, struct plist *l, struct item **cand, unsigned nc,
			 bool raise, struct evict_res *r)
{
	while (nc > 0) {
		unsigned m = 0;
		for (unsigned i = 1; i < nc; i++)
			if (cand[i]->prio < cand[m]->prio)
				m = i;
		struct item *v = cand[m];
		uint64_t p = v->prio;
		if (try_evict_locked(c, l, v, r)) {
			if (raise && p > l->inflation)
				l->inflation = p;
			return true;
		}
		cand[m] = cand[--nc];
	}
	return false;
}

/*
 * CLOCK (ps, mcs-clock), under l's lock; each ring's hand goes at most once round, so
 * what it clears waits for a later pass (and a list whose items were all referenced gives
 * up nothing this time: cache__evict_one tries the next).
 * Plain CLOCK (ParSec (EuroSys 2016) §5.2): move the hand past items whose reference bit
 * is set, clearing it, to the first whose bit is clear, and evict it.
 * GreedyDual-Size-Frequency: in each size band's ring the hand moves past referenced
 * items, clearing the bit, counting the use and renewing the priority (an access is
 * accounted lazily, when the hand passes, so a get stores nothing but the bit). It stops
 * on the first unreferenced item whose priority is at most L (overdue); the overdue item
 * of lowest priority across bands goes. When no band has one, the hand collects
 * evict_window unreferenced items of each band, the lowest goes and L rises to it: the
 * oldest items of each band stand for their band, so the comparison sees every size
 * however rare. Items the hand passed stay where they are, for its next round.
 */
bool cache__clock_evict_locked(struct cache *c, struct plist *l, struct evict_res *res)
{
	struct item *cand[EVICT_BANDS * EVICT_WINDOW_MAX], *due[EVICT_BANDS];
	unsigned nc = 0, nd = 0, want = cache__gdsf(c) ? c->cfg.evict_window : 1;
	for (unsigned b = 0; b < EVICT_BANDS; b++) {
		struct ring *r = &l->r[b];
		unsigned got = 0;
		uint64_t steps = r->n; /* so no item is seen twice */
		while (r->hand && steps-- && got < want) {
			struct item *v = r->hand;
			uint8_t rb = atomic_load_explicit(&v->refbit, RELAXED);
			if (rb & REF_BIT) {
				unsigned f = REF_FREQ_OF(rb);
				atomic_store_explicit(&v->refbit,
						      REF_FREQ(f < GDS_FREQ_MAX ? f + 1 : f),
						      RELAXED);
				v->prio = cache__gds_priority(c, l, v);
				r->hand = v->lnext;
				continue;
			}
			if (!cache__gdsf(c) || v->prio <= l->inflation) {
				/* CLOCK's victim / overdue: the hand stays on it */
				due[nd++] = v;
				break;
			}
			r->hand = v->lnext;
			cand[nc++] = v;
			got++;
		}
	}
	if (nd > 0 && evict_lowest(c, l, due, nd, false, res))
		return true;
	return evict_lowest(c, l, cand, nc, true, res);
}

/*
 * Evict one item (the variant's evict_scan, under each list's lock in turn). Lists are
 * visited round-robin from a per-thread cursor, so every list gives up items at the same
 * rate whatever the keys being stored hash to (starting at the stored key's list made a
 * large store empty one small list). Two sweeps: when every list's items were referenced,
 * the first clears their bits. Returns true with r->cls, the victim's class; false if no
 * list had an item it could evict, r->busy then naming a stripe whose lock kept a
 * candidate from it (NULL: no candidate was locked - the lists were empty, or every item
 * was referenced again during the two sweeps).
 */
bool cache__evict_one(struct cache *c, struct evict_res *r)
{
	static _Thread_local unsigned cursor;
	unsigned start = cursor++;
	r->busy = NULL;
	for (unsigned k = 0; k < 2 * c->nlists; k++) {
		struct plist *l = &c->lists[(start + k) & (c->nlists - 1)];
		cache__plist_lock(c, l);
		bool done = c->ops.repl.evict_scan(c, l, r);
		cache__plist_unlock(c, l);
		if (done)
			return true;
	}
	return false;
}
