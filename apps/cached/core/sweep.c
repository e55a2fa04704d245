/*
 * apps/cached/core/sweep.c - the maintenance thread (sweeper of expired and flushed items,
 * background growth, the cache's tick) and the per-class dump.
 */
#include "cache_types.h"

#define SWEEP_CHUNK (1ull << 20) /* buckets the sweeper visits per interval, at most */

/* ---- sweeper ---------------------------------------------------------------------------- */

/* Sweep buckets [from, from + n) of the table; returns items removed. Caller holds
 * grow_mx (no growth in progress). */
static size_t sweep_range(struct cache *c, uint64_t from, uint64_t n)
{
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	size_t removed = 0;
	for (uint64_t i = from; i < from + n && i <= t->mask; i++) {
		if (atomic_load_explicit(&t->b[i], RELAXED) == NULL)
			continue;
		struct ck_spinlock_mcs qn;
		struct stripe *s = &c->stripes[i & c->smask];
		struct item *dead = NULL;
		cache__stripe_lock(c, s, &qn);
		struct item *_Atomic *pp = &t->b[i];
		struct item *it;
		while ((it = atomic_load_explicit(pp, RELAXED)) != NULL) {
			if (cache__item_state(c, it) != LIVE) {
				cache__unlink_locked(c, it, pp);
				it->lnext = dead; /* off the list now: reuse the link */
				dead = it;
			} else {
				pp = &it->hnext;
			}
		}
		cache__stripe_unlock(c, s, &qn);
		while (dead) {
			struct item *nx = dead->lnext;
			dead->lnext = NULL;
			cache__item_drop_dead(c, dead);
			removed++;
			dead = nx;
		}
	}
	return removed;
}

long cache_dump_class(struct cache *c, unsigned cls, unsigned long limit,
		      bool (*fn)(void *arg, const char *key, size_t nkey, uint32_t nbytes,
				 int64_t ttl),
		      void *arg)
{
	if (cls >= c->nclasses)
		return -1;
	long n = 0;
	bool more = true;
	uint32_t now = cache__now(c);
	pthread_mutex_lock(&c->grow_mx);
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	for (uint64_t i = 0; more && i <= t->mask; i++) {
		if (atomic_load_explicit(&t->b[i], RELAXED) == NULL)
			continue;
		struct ck_spinlock_mcs qn;
		struct stripe *s = &c->stripes[i & c->smask];
		cache__stripe_lock(c, s, &qn);
		for (struct item *it = atomic_load_explicit(&t->b[i], RELAXED); it && more;
		     it = atomic_load_explicit(&it->hnext, RELAXED)) {
			if (it->cls != cls || cache__item_state(c, it) != LIVE)
				continue;
			uint32_t e = atomic_load_explicit(&it->exptime, RELAXED);
			int64_t ttl = e == 0 ? -1 : (e > now ? (int64_t)(e - now) : 0);
			more = fn(arg, it->data, it->nkey, it->nbytes, ttl);
			n++;
			if (limit && (unsigned long)n >= limit)
				more = false;
		}
		cache__stripe_unlock(c, s, &qn);
	}
	pthread_mutex_unlock(&c->grow_mx);
	return n;
}

size_t cache_sweep(struct cache *c)
{
	pthread_mutex_lock(&c->grow_mx);
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	size_t n = sweep_range(c, 0, t->mask + 1);
	pthread_mutex_unlock(&c->grow_mx);
	atomic_fetch_add_explicit(&c->sweeper_runs, 1, RELAXED);
	return n;
}

static void *maint_main(void *arg)
{
	struct cache *c = arg;
	pthread_mutex_lock(&c->mmx);
	while (!c->mstop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)c->interval_ms * 1000000u;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		if (!atomic_load_explicit(&c->grow_req, RELAXED))
			pthread_cond_timedwait(&c->mcv, &c->mmx, &ts);
		if (c->mstop)
			break;
		bool grow = atomic_exchange_explicit(&c->grow_req, 0, RELAXED);
		pthread_mutex_unlock(&c->mmx);
		(void)cache__clock_tick(c); /* keeps access times current when no update runs */
		if (grow)
			(void)cache_grow_now(c);
		/* The whole table per interval up to SWEEP_CHUNK buckets (a bucket costs one
		 * load when empty, one stripe lock when not), so expired items give their
		 * memory back within about a second, as memcached's LRU maintainer does from
		 * its tails; a larger table takes nb / SWEEP_CHUNK intervals a pass. */
		pthread_mutex_lock(&c->grow_mx);
		struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
		uint64_t nb = t->mask + 1, chunk = nb < SWEEP_CHUNK ? nb : SWEEP_CHUNK;
		if (c->sweep_cursor >= nb)
			c->sweep_cursor = 0;
		sweep_range(c, c->sweep_cursor, chunk);
		c->sweep_cursor += chunk;
		pthread_mutex_unlock(&c->grow_mx);
		/* What this pass freed must not wait for the next one to be reclaimed. */
		cache_reclaim(c);
		atomic_fetch_add_explicit(&c->sweeper_runs, 1, RELAXED);
		pthread_mutex_lock(&c->mmx);
	}
	pthread_mutex_unlock(&c->mmx);
	/* The thread leaves tsync's registry when it exits (its ps_mem caches go back). */
	return NULL;
}

int cache_sweeper_start(struct cache *c, unsigned interval_ms)
{
	pthread_mutex_lock(&c->mmx);
	if (c->mrunning) {
		pthread_mutex_unlock(&c->mmx);
		errno = EBUSY;
		return -1;
	}
	c->interval_ms = interval_ms ? interval_ms : 1000;
	c->mstop = false;
	int rc = pthread_create(&c->mthr, NULL, maint_main, c);
	if (rc == 0)
		c->mrunning = true;
	pthread_mutex_unlock(&c->mmx);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

void cache_sweeper_stop(struct cache *c)
{
	pthread_mutex_lock(&c->mmx);
	if (!c->mrunning) {
		pthread_mutex_unlock(&c->mmx);
		return;
	}
	c->mstop = true;
	pthread_cond_signal(&c->mcv);
	pthread_mutex_unlock(&c->mmx);
	pthread_join(c->mthr, NULL);
	pthread_mutex_lock(&c->mmx);
	c->mrunning = false;
	pthread_mutex_unlock(&c->mmx);
}
