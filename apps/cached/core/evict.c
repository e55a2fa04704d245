/*
 * apps/cached/core/evict.c - CLOCK lists (ps, mcs-clock), the LRU list (locked) and
 * eviction (I1, I4: a list lock holder takes stripe locks only with trylock).
 */
#include "cache_internal.h"

/* Insert it just behind the hand (CLOCK: visited last) / at the head (LRU: most recent). */
void list_insert_locked(struct cache *c, struct plist *l, struct item *it)
{
	if (l->hand == NULL) {
		it->lprev = it->lnext = it;
		l->hand = it;
	} else {
		struct item *h = l->hand;
		it->lnext = h;
		it->lprev = h->lprev;
		h->lprev->lnext = it;
		h->lprev = it;
		if (c->ops->lru)
			l->hand = it;
	}
	l->n++;
}

void list_remove_locked(struct plist *l, struct item *it)
{
	if (it->lnext == it) {
		l->hand = NULL;
	} else {
		it->lprev->lnext = it->lnext;
		it->lnext->lprev = it->lprev;
		if (l->hand == it)
			l->hand = it->lnext;
	}
	it->lprev = it->lnext = NULL;
	l->n--;
}

/* new takes old's place (same list: same hash); the LRU then moves it to the head. */
void list_replace_locked(struct cache *c, struct plist *l, struct item *old,
				struct item *nw)
{
	if (old->lnext == old) {
		nw->lprev = nw->lnext = nw;
	} else {
		nw->lprev = old->lprev;
		nw->lnext = old->lnext;
		old->lprev->lnext = nw;
		old->lnext->lprev = nw;
	}
	if (l->hand == old)
		l->hand = nw;
	old->lprev = old->lnext = NULL;
	if (c->ops->lru && l->hand != nw) {
		list_remove_locked(l, nw);
		list_insert_locked(c, l, nw);
	}
}

/* locked: move to the LRU head. Caller holds the item's stripe lock (I1). */
void lru_bump(struct cache *c, struct item *it)
{
	struct plist *l = &c->lists[0];
	pthread_mutex_lock(&l->x);
	if (l->hand != it) {
		list_remove_locked(l, it);
		list_insert_locked(c, l, it);
	}
	pthread_mutex_unlock(&l->x);
}
/* ---- eviction --------------------------------------------------------------------------- */

/* Under l's lock: try to evict victim (I1, I4). Returns true if it was removed. */
static bool try_evict_locked(struct cache *c, struct plist *l, struct item *v)
{
	struct ck_spinlock_mcs qn;
	struct stripe *s = stripe_of(c, v->hash);
	if (!stripe_trylock(c, s, &qn))
		return false;
	struct item *_Atomic *pp = find_link(c, v);
	if (pp == NULL) { /* cannot happen by I1; be safe */
		stripe_unlock(c, s, &qn);
		return false;
	}
	atomic_store_explicit(pp, atomic_load_explicit(&v->hnext, RELAXED), RELEASE);
	list_remove_locked(l, v);
	stripe_unlock(c, s, &qn);
	st_add(c, S_LINKED, (uint64_t)-1);
	if (item_state(c, v) == LIVE) {
		ST_INC(c, S_EVICTIONS);
		atomic_fetch_add_explicit(&c->cls[v->cls].evicted, 1, RELAXED);
		if (c->cfg.evict_fn) {
			uint32_t now = cache_now(c);
			uint32_t e = atomic_load_explicit(&v->exptime, RELAXED);
			uint32_t at = atomic_load_explicit(&v->atime, RELAXED);
			struct cache_evicted ev = {
			    .key = v->data, .nkey = v->nkey, .nbytes = v->nbytes, .cls = v->cls,
			    .fetched = (atomic_load_explicit(&v->mflags, RELAXED) & M_FETCHED) != 0,
			    .ttl = e == 0 ? -1 : (e > now ? (int64_t)(e - now) : 0),
			    .idle = now > at ? now - at : 0};
			c->cfg.evict_fn(c->cfg.evict_arg, &ev);
		}
		item_drop(c, v);
	} else {
		item_drop_dead(c, v);
	}
	return true;
}

/* LRU (locked), under l's lock: the first of up to 50 items from the tail (least
 * recently used) whose stripe can be taken. */
bool lru_evict_locked(struct cache *c, struct plist *l)
{
	bool done = false;
	struct item *v = l->hand ? l->hand->lprev : NULL;
	for (unsigned tries = 0; v && tries < 50 && !done; tries++) {
		struct item *prev = v->lprev;
		done = try_evict_locked(c, l, v);
		if (prev == v)
			break;
		v = prev;
	}
	return done;
}

/* CLOCK (ps, mcs-clock), under l's lock: move the hand past items whose reference bit is
 * set (clearing it) to the first one whose bit is clear and evict it; two turns at most. */
bool clock_evict_locked(struct cache *c, struct plist *l)
{
	bool done = false;
	uint64_t steps = 2 * l->n + 1;
	while (l->hand && steps-- && !done) {
		struct item *v = l->hand;
		l->hand = v->lnext;
		if (atomic_load_explicit(&v->refbit, RELAXED)) {
			atomic_store_explicit(&v->refbit, 0, RELAXED);
			continue;
		}
		done = try_evict_locked(c, l, v);
	}
	return done;
}

/*
 * Evict one item. CLOCK (ParSec, EuroSys 2016, §5.2): starting at the list the hint hashes
 * to, move each list's hand past items whose reference bit is set (clearing it) to the
 * first one whose bit is clear; LRU: from the tail (the variant's evict_scan: the two
 * functions above). Returns false if no list had an evictable item.
 */
bool evict_one(struct cache *c, uint64_t hint)
{
	unsigned start = (unsigned)((hint >> 58) & (c->nlists - 1));
	for (unsigned k = 0; k < c->nlists; k++) {
		struct plist *l = &c->lists[(start + k) & (c->nlists - 1)];
		plist_lock(c, l);
		bool done = c->ops->evict_scan(c, l);
		plist_unlock(c, l);
		if (done)
			return true;
	}
	return false;
}
