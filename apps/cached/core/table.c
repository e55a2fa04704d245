/*
 * apps/cached/core/table.c - the hash table: locked find, link and unlink (I1, I3) and
 * growth without stopping readers (I2; docs/cached.md, "Growth"). The lock-free lookup is
 * inline in cache_types.h.
 */
#include "cache_types.h"

#define GROW_CHECK_EVERY 256u

/* Under the stripe lock: the link to the first item of hash h's chains (the old table's,
 * then the current one's) that is `target` or, target NULL, key's item; NULL if none. */
static inline __attribute__((always_inline)) struct item *_Atomic *chains_find(
	struct cache *c, uint64_t h, const void *key, size_t nkey, const struct item *target)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	struct table *o = atomic_load_explicit(&c->old, ACQUIRE);
	struct table *tabs[2] = {o, t};
	for (int i = 0; i < 2; i++) {
		if (tabs[i] == NULL)
			continue;
		struct item *_Atomic *pp = &tabs[i]->b[h & tabs[i]->mask];
		for (struct item *it = atomic_load_explicit(pp, RELAXED); it;
		     pp = &it->hnext, it = atomic_load_explicit(pp, RELAXED))
			if (target ? it == target : cache__item_is(it, h, key, nkey))
				return pp;
	}
	return NULL;
}

/* Under the stripe lock: find the item and the link that points to it. */
struct item *cache__find_locked(struct cache *c, uint64_t h, const void *key, size_t nkey,
				struct item *_Atomic **pp_out)
{
	struct item *_Atomic *pp = chains_find(c, h, key, nkey, NULL);
	if (pp == NULL)
		return NULL;
	*pp_out = pp;
	return atomic_load_explicit(pp, RELAXED);
}

/* Under the stripe lock: the link pointing to `target` (which must be hashed, I1). */
struct item *_Atomic *cache__find_link(struct cache *c, const struct item *target)
{
	return chains_find(c, target->hash, NULL, 0, target);
}

/* Under the stripe lock: unlink from the chain and the list (I1). The item's own hnext is
 * kept, so a reader standing on it continues down the chain. */
void cache__unlink_locked(struct cache *c, struct item *it, struct item *_Atomic *pp)
{
	atomic_store_explicit(pp, atomic_load_explicit(&it->hnext, RELAXED), RELEASE);
	if (cache__has_list(c)) {
		struct plist *l = cache__list_of(c, it->hash);
		cache__plist_lock(c, l);
		cache__list_remove_locked(c, l, it);
		cache__plist_unlock(c, l);
	}
	cache__st_add(c, S_LINKED, (uint64_t)-1);
}

/*
 * Under the stripe lock: publish nw, replacing old (found at *pp) if non-NULL. nw is
 * fully initialised; the release store that makes it reachable orders those stores
 * before any reader's acquire load that finds it (I3).
 */
void cache__link_locked(struct cache *c, struct item *nw, struct item *old,
			struct item *_Atomic *pp)
{
	nw->cas = atomic_fetch_add_explicit(&c->cas_next, 1, RELAXED) + 1;
	if (!c->ops.pin.parsec)
		atomic_store_explicit(&nw->refcount, 1, RELAXED);
	if (old) {
		/* In place, in whichever table holds old (the grower cannot be moving this
		 * bucket: we hold its stripe): one store swaps old for nw; readers standing on
		 * old continue past it. */
		atomic_store_explicit(&nw->hnext, atomic_load_explicit(&old->hnext, RELAXED),
				      RELAXED);
		atomic_store_explicit(pp, nw, RELEASE);
	} else {
		struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
		struct item *_Atomic *head = &t->b[nw->hash & t->mask];
		atomic_store_explicit(&nw->hnext, atomic_load_explicit(head, RELAXED), RELAXED);
		atomic_store_explicit(head, nw, RELEASE);
	}
	if (cache__has_list(c)) {
		struct plist *l = cache__list_of(c, nw->hash);
		cache__plist_lock(c, l);
		if (old)
			cache__list_replace_locked(c, l, old, nw);
		else
			cache__list_insert_locked(c, l, nw);
		cache__plist_unlock(c, l);
	}
	ST_INC(c, S_TOTAL_ITEMS);
	if (!old) {
		cache__st_add(c, S_LINKED, 1);
		ST_INC(c, S_ADDS);
	}
}

/* ---- growth ----------------------------------------------------------------------------- */

struct table *cache__table_new(unsigned power)
{
	struct table *t = calloc(1, sizeof(*t) + ((size_t)1 << power) * sizeof(t->b[0]));
	if (t) {
		t->power = power;
		t->mask = ((uint64_t)1 << power) - 1;
	}
	return t;
}

/*
 * Move every item of old bucket i into the new table, tail first, under the bucket's
 * stripe lock. For the tail X with link *pp: X->hnext := new head (readers standing on X
 * have already passed every other old-chain item and merely wander into a new chain);
 * new head := X (release); *pp := NULL (release). X is reachable from the new table
 * before it leaves the old one.
 */
static void migrate_bucket(struct cache *c, struct table *o, struct table *t, uint64_t i)
{
	struct ck_spinlock_mcs qn;
	struct stripe *s = &c->stripes[i & c->smask];
	cache__stripe_lock(c, s, &qn);
	for (;;) {
		struct item *_Atomic *pp = &o->b[i];
		struct item *x = atomic_load_explicit(pp, RELAXED);
		if (x == NULL)
			break;
		struct item *nx;
		while ((nx = atomic_load_explicit(&x->hnext, RELAXED)) != NULL) {
			pp = &x->hnext;
			x = nx;
		}
		struct item *_Atomic *head = &t->b[x->hash & t->mask];
		atomic_store_explicit(&x->hnext, atomic_load_explicit(head, RELAXED), RELEASE);
		atomic_store_explicit(head, x, RELEASE);
		atomic_store_explicit(pp, NULL, RELEASE);
	}
	cache__stripe_unlock(c, s, &qn);
}

int cache_grow_now(struct cache *c)
{
	if (pthread_mutex_trylock(&c->grow_mx) != 0) {
		errno = EBUSY;
		return -1;
	}
	struct table *o = atomic_load_explicit(&c->tab, RELAXED);
	if (o->power >= MAX_POWER) {
		pthread_mutex_unlock(&c->grow_mx);
		errno = ERANGE;
		return -1;
	}
	struct table *t = cache__table_new(o->power + 1);
	if (t == NULL) {
		pthread_mutex_unlock(&c->grow_mx);
		errno = ENOMEM;
		return -1;
	}
	/* old before tab: a lookup that loads tab == t then loads old == o. */
	atomic_store_explicit(&c->old, o, RELEASE);
	atomic_store_explicit(&c->tab, t, RELEASE);
	/* Lock-free readers that loaded tab == o without old have ended after this;
	 * lock holders read the pointers under the stripe lock we take per bucket. */
	ps_synchronize(c->ps);
	for (uint64_t i = 0; i <= o->mask; i++)
		migrate_bucket(c, o, t, i);
	atomic_store_explicit(&c->old, NULL, RELEASE);
	ps_synchronize(c->ps);
	/* A lock holder that loaded old == o under a stripe lock has released it after
	 * this pass; later holders see old == NULL. */
	for (uint64_t i = 0; i <= c->smask; i++) {
		struct ck_spinlock_mcs qn;
		cache__stripe_lock(c, &c->stripes[i], &qn);
		cache__stripe_unlock(c, &c->stripes[i], &qn);
	}
	free(o);
	atomic_fetch_add_explicit(&c->expansions, 1, RELAXED);
	pthread_mutex_unlock(&c->grow_mx);
	return 0;
}

void cache__maybe_grow(struct cache *c)
{
	if (c->cfg.no_grow)
		return;
	struct tstats *me = cache__my_stats(c);
	if (atomic_load_explicit(&me->v[S_ADDS], RELAXED) < GROW_CHECK_EVERY)
		return;
	atomic_store_explicit(&me->v[S_ADDS], 0, RELAXED);
	/* Inside a section: a grower frees the table only after a grace period. */
	ps_enter(c->ps);
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	uint64_t nb = t->mask + 1;
	unsigned power = t->power;
	ps_exit(c->ps);
	uint64_t items = cache__st_sum(c, S_LINKED);
	if ((int64_t)items <= 0 || items <= nb + nb / 2 || power >= MAX_POWER)
		return;
	pthread_mutex_lock(&c->mmx);
	bool bg = c->mrunning;
	if (bg) {
		atomic_store_explicit(&c->grow_req, 1, RELAXED);
		pthread_cond_signal(&c->mcv);
	}
	pthread_mutex_unlock(&c->mmx);
	if (!bg && !ps_in_section(c->ps))
		(void)cache_grow_now(c);
}
