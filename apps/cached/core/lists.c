/*
 * apps/cached/core/lists.c - the replacement lists: insert, remove and replace an item in
 * its CLOCK ring (ps, mcs-clock) or the LRU list (locked), the LRU's bump on a hit, and
 * each class's GreedyDual-Size-Frequency credit and ring (docs/cached.md, "Eviction").
 * The list lock is held (I1); eviction, which walks these lists, is evict.c.
 */
#include "cache_types.h"

/* Each class's credit and ring: band b holds charges in [64 * 4^b, 64 * 4^(b+1)). */
void cache__evict_classes_init(struct cache *c)
{
	for (unsigned i = 0; i < c->nclasses; i++) {
		struct sclass *k = &c->cls[i];
		k->credit = GDS_SCALE / k->charge;
		unsigned band = 0;
		for (uint64_t q = k->charge / 64; q >= 4 && band < EVICT_BANDS - 1; q /= 4)
			band++;
		k->band = cache__gdsf(c) ? band : 0;
	}
}

/* Insert: LRU at the head (most recent); CLOCK just behind the hand (visited last), so
 * the hand meets a ring's items oldest first - and under GreedyDual-Size-Frequency those
 * of lowest priority, as priorities within a band grow with L at their last access. */
void cache__list_insert_locked(struct cache *c, struct plist *l, struct item *it)
{
	struct ring *r = cache__ring_of(c, l, it);
	it->prio = cache__gds_priority(c, l, it); /* the count is 1 from cache__item_alloc */
	if (r->hand == NULL) {
		it->lprev = it->lnext = it;
		r->hand = it;
	} else {
		struct item *h = r->hand;
		it->lnext = h;
		it->lprev = h->lprev;
		h->lprev->lnext = it;
		h->lprev = it;
		if (c->ops.repl.lru)
			r->hand = it;
	}
	r->n++;
}

void cache__list_remove_locked(struct cache *c, struct plist *l, struct item *it)
{
	struct ring *r = cache__ring_of(c, l, it);
	if (it->lnext == it) {
		r->hand = NULL;
	} else {
		it->lprev->lnext = it->lnext;
		it->lnext->lprev = it->lprev;
		if (r->hand == it)
			r->hand = it->lnext;
	}
	it->lprev = it->lnext = NULL;
	r->n--;
}

/* new replaces old (same list: same hash): CLOCK in old's place when both are in one
 * ring; otherwise (the LRU, or another size band) it is inserted as new. */
void cache__list_replace_locked(struct cache *c, struct plist *l, struct item *old, struct item *nw)
{
	struct ring *r = cache__ring_of(c, l, old);
	if (c->ops.repl.lru || r != cache__ring_of(c, l, nw)) {
		cache__list_remove_locked(c, l, old);
		cache__list_insert_locked(c, l, nw);
		return;
	}
	nw->prio = cache__gds_priority(c, l, nw);
	if (old->lnext == old) {
		nw->lprev = nw->lnext = nw;
	} else {
		nw->lprev = old->lprev;
		nw->lnext = old->lnext;
		old->lprev->lnext = nw;
		old->lnext->lprev = nw;
	}
	if (r->hand == old)
		r->hand = nw;
	old->lprev = old->lnext = NULL;
}

/* locked: move to the LRU head. Caller holds the item's stripe lock (I1). */
void cache__lru_bump(struct cache *c, struct item *it)
{
	struct plist *l = &c->lists[0];
	pthread_mutex_lock(&l->x);
	if (l->r[0].hand != it) {
		cache__list_remove_locked(c, l, it);
		cache__list_insert_locked(c, l, it);
	}
	pthread_mutex_unlock(&l->x);
}

/* ---- eviction --------------------------------------------------------------------------- */
