/*
 * apps/cached/core/item.c - items and size classes: allocation within mem_limit (the
 * library's budget, and the eviction that makes room in it), the drop of an unlinked item
 * (I3). docs/cached.md, "Memory".
 */
#include "cache_types.h"

/*
 * Memory accounting (docs/cached.md, "Memory"): the item classes are the members of one
 * ps_mem_budget of mem_limit bytes (<tsync/ps_mem.h>). An item's charge is taken when it
 * is allocated and given back when ps_mem makes its memory reusable - not when it is
 * freed: between the two it is garbage waiting for a grace period, and it still occupies
 * slab memory. So charged bytes (live + garbage) <= mem_limit bound the item memory,
 * whatever the readers do; a stalled section makes stores wait or fail, never the memory
 * grow. The budget's wait (reclaim, nap, deadline, the in-section check) is the
 * library's; what is the cache's is how it makes room - eviction (cache_room below).
 */

/* ps_mem's reclamation observer, set only for the user's (cache_config.reclaim_fn). */
static void on_reclaim(struct ps_mem *m, const struct ps_mem_reclaim_info *info, void *arg)
{
	(void)m;
	struct cache *c = arg;
	c->cfg.reclaim_fn(c->cfg.reclaim_arg, info);
}

/* Garbage above mem_limit / GARBAGE_SHARE stops eviction: evicting a live item then only
 * adds garbage, so a store waits for grace periods instead of emptying the cache. */
#define GARBAGE_SHARE 8u
/* Rounds (a reclamation, then sched_yield) a store waits for the grace period of the
 * items it evicted before it evicts again; a round is about a microsecond when no other
 * thread is runnable, a time slice when one is (docs/cached.md, "Memory"). */
#define VICTIM_WAIT_ROUNDS 64u
/* Sweeps a store that may not wait for a stripe lock (it holds one) retries, yielding in
 * between, when every candidate it met was locked, before it gives up. */
#define BUSY_RETRIES 8u

/* Reclaim the caller's garbage of the classes in mask (bit i: class i). */
static size_t reclaim_classes(struct cache *c, uint64_t mask)
{
	size_t n = 0;
	for (; mask; mask &= mask - 1)
		n += ps_mem_reclaim(c->cls[__builtin_ctzll(mask)].mem);
	return n;
}

size_t cache_reclaim(struct cache *c)
{
	return reclaim_classes(c, (1ull << c->nclasses) - 1); /* nclasses <= MAX_CLASSES */
}

/* One store's eviction state across the budget's retries (cache_room). */
struct room {
	struct cache *c;
	bool may_wait; /* holds no stripe lock: may wait for one */
	bool can_wait; /* may_wait, and outside a section: may wait for grace periods */
	bool busy;     /* the last sweep passed over locked candidates only */
	unsigned tries, rounds, naps;
	uint64_t evicted, victims;
};

/*
 * Make room for n bytes (the promise is cache_store's, cache.h; docs/cached.md, "What a
 * store does at the limit"): ps_mem_room_fn of the budget's allocation, which, when this
 * returns false, reclaims every class and - with garbage, outside a section, may_wait -
 * naps and retries until cfg.mem_wait_ms has passed. An evicted item's charge comes back
 * only when its grace period has passed (it is garbage until then), so a store evicts
 * only until its victims' charge covers n, then waits for their grace period -
 * reclaiming their classes and yielding, at most VICTIM_WAIT_ROUNDS rounds - instead of
 * evicting more live items for memory that is about to return; only a grace period that
 * long makes it evict again. Callers that may not wait (holding a stripe lock) or cannot
 * (inside a section, which holds their own garbage back) evict without waiting for grace
 * periods.
 *
 * A candidate whose stripe another thread has locked is passed over for the next one
 * (evict.c); when every candidate was locked, a caller that may wait (it holds no stripe
 * lock) waits for one holder to unlock and evicts again: a store never gives up while an
 * item is evictable merely because its lock was held - the holder may be preempted for
 * a long time slice on a loaded machine, and counting yields made that a NO_MEMORY. Such
 * a wait cannot deadlock: the waiter holds no stripe or list lock, and a stripe holder
 * waits only for list locks, whose holders never wait (I4). A caller that holds a stripe
 * lock cannot wait for another (two such callers could wait for each other, or one for
 * itself): it retries BUSY_RETRIES sweeps per nap, yielding, then gives up.
 *
 * Garbage above mem_limit / GARBAGE_SHARE stops eviction altogether (a section holds
 * grace periods back): then only the budget's reclamation and wait remain.
 */
static bool cache_room(void *arg, size_t n, unsigned naps)
{
	struct room *m = arg;
	struct cache *c = m->c;
	if (naps != m->naps) { /* after a nap: BUSY_RETRIES sweeps again */
		m->naps = naps;
		m->tries = 0;
	}
	m->busy = false;
	if (m->victims && reclaim_classes(c, m->victims) > 0)
		return true;
	if (m->can_wait && m->evicted >= n) {
		if (++m->rounds <= VICTIM_WAIT_ROUNDS) {
			sched_yield();
			return true;
		}
		m->evicted = 0; /* a long grace period: evict again */
	}
	m->rounds = 0;
	struct ps_mem_budget_stats b;
	ps_mem_budget_stats(c->budget, &b);
	if (!cache__has_list(c) || c->cfg.no_evict || b.garbage > c->cfg.mem_limit / GARBAGE_SHARE)
		return false;
	struct evict_res r = {.held = NULL};
	bool done = cache__evict_one(c, &r);
	if (!done && r.busy && m->may_wait) {
		/* Every candidate was locked: wait for the holder of one, and evict again
		 * holding that stripe (stripe, then list lock: I4). Holding it, we can evict
		 * its items whatever other waiters do - merely waiting for an unlock could wait
		 * forever, as every waiter queued on an MCS lock fails the others' trylock. */
		struct ck_spinlock_mcs qn;
		ST_INC(c, S_EVICT_WAITS);
		r.held = r.busy;
		cache__stripe_lock(c, r.held, &qn);
		done = cache__evict_one(c, &r);
		cache__stripe_unlock(c, r.held, &qn);
		if (!done)
			return true;
	}
	if (done) {
		m->evicted += c->cls[r.cls].charge;
		m->victims |= 1ull << r.cls;
		return true;
	}
	/* Nothing evictable: the candidates were locked (and we hold a stripe lock), or
	 * there were none - every item was referenced again during the sweeps, or the memory
	 * is all in items being stored, in items still held by cache_refs (refcounted
	 * variants) and in garbage. Retry a few times. */
	m->busy = r.busy != NULL;
	if (++m->tries <= BUSY_RETRIES) {
		sched_yield();
		return true;
	}
	return false;
}

/* An item's memory of class k within mem_limit (cache_room, then the budget's wait); NULL
 * after counting the refusal's cause (S_NOMEM_*). */
static struct item *item_mem(struct cache *c, int k, bool may_wait)
{
	struct room m = {.c = c, .may_wait = may_wait};
	/* may nap: holds no stripe lock, and no section of its own holds its garbage back */
	m.can_wait = may_wait && !ps_in_section(c->ps);
	struct item *it = ps_mem_budget_alloc(c->cls[k].mem, may_wait ? 0 : PS_MEM_BUDGET_NOWAIT,
					      cache_room, &m);
	if (it != NULL)
		return it;
	int e = errno; /* the budget's refusals; any other: ps_alloc's, the system's */
	if (e != ENOSPC && e != ETIMEDOUT && e != EDEADLK)
		ST_INC(c, S_NOMEM_SYSTEM);
	else
		ST_INC(c, m.busy ? S_NOMEM_BUSY : e == ENOSPC ? S_NOMEM_FULL : S_NOMEM_GARBAGE);
	return NULL;
}

int cache__class_of(const struct cache *c, size_t total)
{
	return ps_kmem_class_of(c->kmem, total);
}

/* A new, unpublished item of total value length nbytes (key copied, value not). */
enum cache_status cache__item_alloc(struct cache *c, uint64_t hash, const void *key, size_t nkey,
				    size_t nbytes, uint32_t flags, bool may_wait, struct item **out)
{
	size_t total = ITEM_HDR + nkey + nbytes;
	if (!cache__size_ok(c, nkey, nbytes, flags) || nbytes > UINT32_MAX)
		return CACHE_TOO_LARGE;
	int k = cache__class_of(c, total);
	if (k < 0)
		return CACHE_TOO_LARGE;
	struct item *it = item_mem(c, k, may_wait);
	if (it == NULL)
		return CACHE_NO_MEMORY;
	atomic_store_explicit(&it->hnext, NULL, RELAXED);
	it->lprev = it->lnext = NULL;
	it->hash = (uint32_t)hash;
	it->cas = 0;
	atomic_store_explicit(&it->exptime, 0, RELAXED);
	it->time = 0;
	it->flags = 0;
	it->nbytes = (uint32_t)nbytes;
	atomic_store_explicit(&it->refcount, 1, RELAXED);
	atomic_store_explicit(&it->refbit, REF_FREQ(1), RELAXED);
	it->nkey = (uint8_t)nkey;
	it->cls = (uint8_t)k;
	atomic_store_explicit(&it->mflags, 0, RELAXED);
	atomic_store_explicit(&it->atime, atomic_load_explicit(&c->tick, RELAXED), RELAXED);
	memcpy(it->data, key, nkey);
	atomic_fetch_add_explicit(&c->cls[k].requested, total, RELAXED);
	*out = it;
	return CACHE_OK;
}

int cache__make_classes(struct cache *c)
{
	const struct cache_config *g = &c->cfg;
	/* memcached's sequence (a ps_kmem follows it): its item header (48 bytes) + -n, times
	 * -f, 8-aligned, while at most the largest / -f; so a class id names the same chunk
	 * size as in memcached's "stats slabs" (to its largest class, slab_chunk_max, above
	 * which memcached chunks items). The largest class holds the largest item cache__size_ok()
	 * admits: -I counted memcached's way, plus what tsync's header takes beyond
	 * memcached's. Slabs: 64 KiB or more for chunks up to 8 KiB, a page-granular slab of
	 * its own for a larger one; object caches of 16 KiB per class and thread, one empty
	 * slab kept per class (docs/cached.md, "Memory limit"). */
	size_t slack = ITEM_HDR > MC_ITEM_HDR + 11 ? ITEM_HDR - (MC_ITEM_HDR + 11) : 0;
	struct ps_kmem_config kc = PS_KMEM_CONFIG_INIT;
	kc.min_size = cache__round_up(MC_ITEM_HDR + g->chunk_min, 8);
	kc.max_size = cache__round_up(g->item_size_max + slack, 8);
	kc.growth_factor = g->growth_factor;
	kc.cache_bytes = 16 * 1024;
	kc.max_classes = MAX_CLASSES;
	kc.mem.slabs_kept = 1;
	kc.mem.prudence = g->prudence;
	kc.mem.reclaim_period_ns = g->reclaim_period_ns;
	if (g->reclaim_fn) {
		kc.mem.reclaim_fn = on_reclaim;
		kc.mem.reclaim_arg = c;
	}
	/* No pending bound in ps_alloc: the budget bounds the memory (mem_limit, and its
	 * wait for garbage, made only by callers that hold no stripe lock), and
	 * APPEND/incr/... allocate under a stripe lock, where a wait for a grace period
	 * would break I4 (a stripe holder waits only for list locks). */
	kc.mem.pending_bound_pct = PS_MEM_PENDING_BOUND_OFF;
	int wait_ms = g->mem_wait_ms < 0 ? -1 : g->mem_wait_ms; /* < 0: never wait */
	c->budget = ps_mem_budget_create(c->ps, g->mem_limit, wait_ms);
	if (c->budget == NULL)
		return -1;
	c->kmem = ps_kmem_create(c->ps, &kc);
	if (c->kmem == NULL)
		return -1;
	c->nclasses = ps_kmem_nclasses(c->kmem);
	for (unsigned i = 0; i < c->nclasses; i++) {
		struct sclass *k = &c->cls[i];
		k->mem = ps_kmem_class(c->kmem, i);
		if (ps_mem_budget_attach(c->budget, k->mem) != 0)
			return -1;
		k->size = (uint32_t)ps_kmem_class_size(c->kmem, i);
		k->slab = (uint32_t)ps_mem_slab_size(k->mem);
		unsigned nobj = ps_mem_slab_objects(k->mem);
		k->charge = (k->slab + nobj - 1) / nobj;
	}
	cache__evict_classes_init(c);
	return 0;
}
