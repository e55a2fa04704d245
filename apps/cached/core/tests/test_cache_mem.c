/*
 * apps/cached/core/tests/test_cache_mem.c - the memory limit holds under a set storm, and
 * a store refuses only for the causes cache_store promises.
 *
 *   test_cache_mem VARIANT      (ps, mcs-clock, locked; plus ps-nocrp and -M semantics)
 *
 *  1. Threads store far more than mem_limit of one size class: the charged bytes (live +
 *     garbage) never pass the limit, items are evicted, and what a get returns is intact.
 *     Every store is STORED or CACHE_NO_MEMORY, and a NO_MEMORY only for a cause
 *     cache_store allows in a storm: garbage held the memory for mem_wait_ms (the store
 *     waited that long; a reader preempted inside its section holds grace periods back)
 *     - never because a victim's lock was held, and never "nothing to evict" while items
 *     are linked. Once the threads are joined (a quiescent point): their object caches
 *     are back in the slabs, cache_reclaim releases every byte of garbage, and stores
 *     succeed.
 *  2. Mixed sizes (many classes): the same.
 *  3. ps-nocrp and no_evict (memcached -M): a storm past the limit gets CACHE_NO_MEMORY
 *     (cause: full), never more memory; after deletes, stores succeed again.
 *  4. A stalled reader: one thread stays inside a section (holds a cache_ref) while
 *     another keeps storing. Replaced and evicted items then cannot be reclaimed; they
 *     stay charged as garbage, so slab memory stays within the limit (it grew without
 *     bound before the charge was held until reclamation): stores wait mem_wait_ms and
 *     fail with CACHE_NO_MEMORY, and succeed again once the reader leaves. A store made
 *     inside a section never waits (it would wait for itself). One thread allocates, so
 *     slab memory stays within what ps_mem guarantees then: the limit plus one slab.
 *  5. A busy victim: the only evictable item's bucket lock is held (cache_dump_class's
 *     callback stands in for a preempted holder); a SET that must evict it waits for the
 *     holder and stores - it used to give up with NO_MEMORY after eight yields.
 */
#include "cache.h"
#include "check.h"

#define LIMIT (4u << 20)

static enum cache_variant variant;
static struct cache *c;
static _Atomic int stop;
static size_t vmin, vmax;
static uint64_t wait_ns; /* the storm cache's mem_wait_ms, in ns */
static _Atomic uint64_t storm_nomem;

static void *storm(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x1234567ull * (id + 1);
	char key[32], val[4096], buf[4096];
	uint64_t nomem = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = test_rand(&rng);
		uint64_t k = r % 1000000;
		size_t nk = (size_t)snprintf(key, sizeof key, "s%" PRIu64, k);
		size_t len = vmin + (size_t)((r >> 20) % (vmax - vmin + 1));
		memset(val, (int)(k & 0xff), len);
		memcpy(val, &k, sizeof k);
		uint64_t t0 = test_now_ns();
		enum cache_status st = cache_store(c, CACHE_SET, key, nk, val, len, 0, 0, 0, NULL);
		CHECK_MSG(st == CACHE_STORED || st == CACHE_NO_MEMORY, "set: %s",
			  cache_status_name(st));
		if (st == CACHE_NO_MEMORY) {
			/* the one cause a storm allows: garbage not released within mem_wait_ms,
			 * which this store (outside any section) waited for in full */
			uint64_t ns = test_now_ns() - t0;
			CHECK_MSG(ns >= wait_ns,
				  "NO_MEMORY after %" PRIu64 " ns, mem_wait_ms is %" PRIu64 " ns",
				  ns, wait_ns);
			nomem++;
		}
		if (r % 4 == 0) {
			uint32_t got = 0;
			st = cache_get_copy(c, key, nk, buf, sizeof buf, &got, NULL, NULL);
			if (st == CACHE_OK) {
				uint64_t k2;
				memcpy(&k2, buf, sizeof k2);
				CHECK_EQ(k2, k);
				for (uint32_t i = sizeof k; i < got; i++)
					CHECK_EQ((unsigned char)buf[i], k & 0xff);
			}
		}
	}
	atomic_fetch_add(&storm_nomem, nomem);
	return NULL;
}

static void run_storm(unsigned threads, double secs)
{
	pthread_t th[8];
	struct cache_config cfg;
	cache_config_get(c, &cfg);
	wait_ns = (uint64_t)cfg.mem_wait_ms * 1000000u;
	atomic_store(&stop, 0);
	atomic_store(&storm_nomem, 0);
	for (unsigned i = 0; i < threads; i++)
		CHECK_PT(pthread_create(&th[i], NULL, storm, (void *)(uintptr_t)i));
	/* At least secs, and on until the storm has filled memory and evicted (a slow
	 * sanitizer build on a loaded machine may need longer; the watchdog ends a hang). */
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9);
	struct cache_stats s = {0};
	uint64_t max_malloced = 0;
	while (test_now_ns() < end || s.evictions == 0) {
		test_sleep_ms(10);
		cache_stats(c, &s);
		CHECK_MSG(s.mem_charged <= cfg.mem_limit, "charged %" PRIu64 " > %" PRIu64,
			  s.mem_charged, cfg.mem_limit);
		if (s.total_malloced > max_malloced)
			max_malloced = s.total_malloced;
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < threads; i++)
		CHECK_PT(pthread_join(th[i], NULL));
	cache_stats(c, &s);
	uint64_t nomem = atomic_load(&storm_nomem);
	/* Slab memory is logged, not checked: while threads run, memory freed into the
	 * slabs of a thread that is not running waits on its remote-free list until it
	 * allocates again, and the others map new slabs meanwhile - no constant bounds it on
	 * a loaded machine (bench/cached-net/cached_memeff.py measures it; docs/cached.md, "Memory
	 * limit"). */
	test_log("%s: items %" PRIu64 " charged %" PRIu64 " slab bytes %" PRIu64 " (max %" PRIu64
		 ", limit %" PRIu64 ") evictions %" PRIu64 " evict_waits %" PRIu64
		 " no_memory %" PRIu64 " (garbage %" PRIu64 ", mem_waits %" PRIu64 ")",
		 cache_variant_name(variant), s.curr_items, s.mem_charged, s.total_malloced,
		 max_malloced, cfg.mem_limit, s.evictions, s.evict_waits, nomem, s.nomem_garbage,
		 s.mem_waits);
	CHECK_LE(s.mem_charged, cfg.mem_limit);
	CHECK_GT(s.evictions, 0);
	CHECK_GT(s.curr_items, 0);
	/* Every refusal is counted, and by the one cause a storm allows. A lock held by
	 * a preempted thread is no cause (the store waits for it, or takes another victim);
	 * "nothing to evict" cannot be while items are linked and at most the just-read
	 * ones referenced. */
	CHECK_EQ(s.store_no_memory, nomem);
	CHECK_EQ(s.nomem_garbage, nomem);
	CHECK_EQ(s.nomem_full, 0);
	CHECK_EQ(s.nomem_busy, 0);
	CHECK_EQ(s.nomem_system, 0);
	CHECK_LE(s.nomem_garbage, s.mem_waits);

	/* A quiescent point: every storing thread has exited and none is in a section.
	 * Exiting threads give their object caches back to the slabs (this thread never
	 * allocated here)... */
	CHECK_EQ(s.mem_cached, 0);
	/* ...and leave their garbage queued for the next thread that reclaims: all of it
	 * is past its grace period, so reclaiming until nothing is left releases every
	 * charged byte of garbage. */
	while (cache_reclaim(c) > 0)
		;
	cache_stats(c, &s);
	CHECK_EQ(s.mem_pending, 0);
	CHECK_EQ(s.mem_garbage_bytes, 0);
	/* With no section open and eviction on, stores succeed: as many as the limit holds,
	 * evicting the storm's items. */
	char key[32], val[4096];
	memset(val, 'q', vmax);
	for (uint64_t i = 0; i * vmax < 2 * cfg.mem_limit; i++) {
		size_t nk = (size_t)snprintf(key, sizeof key, "after%" PRIu64, i);
		CHECK_EQ(cache_store(c, CACHE_SET, key, nk, val, vmin + i % (vmax - vmin + 1), 0, 0,
				     0, NULL),
			 CACHE_STORED);
	}
	cache_stats(c, &s);
	CHECK_LE(s.mem_charged, cfg.mem_limit);
	CHECK_EQ(s.store_no_memory, nomem);
}

static struct cache *mk_wait(enum cache_variant v, bool no_evict, int wait_ms, uint64_t limit)
{
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = v;
	cfg.mem_wait_ms = wait_ms;
	cfg.mem_limit = limit;
	cfg.item_size_max = 64u << 10;
	/* the stalled-reader case: a table growth would wait for the reader's grace period */
	cfg.hash_power = wait_ms ? 16 : 12;
	cfg.no_evict = no_evict;
	struct cache *x = cache_create(&cfg);
	CHECK(x != NULL);
	return x;
}

static struct cache *mk(enum cache_variant v, bool no_evict)
{
	return mk_wait(v, no_evict, 0, LIMIT);
}

static _Atomic int reader_in, reader_go;

/* Every key of the stalled-reader case has 8 bytes and every value VLEN: all its items
 * are of one size class, the case the single-thread slab bound below is about. Large
 * values, so that few evictions fill mem_limit / 8 with garbage: under a stalled reader
 * each eviction is followed by cache_room's (item.c) VICTIM_WAIT_ROUNDS yields, which take a
 * time slice each on a loaded machine. */
#define PIN "p0000000"
#define VLEN 7000
/* and a small limit: 16 evictions fill its eighth, 1,024 yields */
#define SLIMIT (1u << 20)

static void *stalled_reader(void *arg)
{
	(void)arg;
	struct cache_ref r;
	CHECK_EQ(cache_get(c, PIN, 8, &r), CACHE_OK);
	atomic_store(&reader_in, 1);
	while (!atomic_load(&reader_go))
		test_sleep_ms(1);
	CHECK_EQ(r.nbytes, VLEN);
	CHECK_EQ(r.value[0], 'p');
	cache_release(c, &r);
	return NULL;
}

static enum cache_status put(uint64_t i, char fill, uint64_t *ns)
{
	char key[32], val[VLEN];
	memset(val, fill, sizeof val);
	size_t nk = (size_t)snprintf(key, sizeof key, "k%07" PRIu64, i);
	CHECK_EQ(nk, 8);
	uint64_t t0 = test_now_ns();
	enum cache_status st = cache_store(c, CACHE_SET, key, nk, val, sizeof val, 0, 0, 0, NULL);
	if (ns)
		*ns = test_now_ns() - t0;
	return st;
}

static void stalled(enum cache_variant v)
{
	/* one store waits this long, in full (a lower bound only: no test here depends on
	 * how fast anything runs) */
	const int wait_ms = 1000;
	c = mk_wait(v, false, wait_ms, SLIMIT);
	char pin[VLEN];
	memset(pin, 'p', sizeof pin);
	CHECK_EQ(cache_store(c, CACHE_SET, PIN, 8, pin, sizeof pin, 0, 0, 0, NULL), CACHE_STORED);
	int cls = cache_class_for(c, 8, VLEN);
	CHECK(cls >= 0);
	struct cache_class_stats cs;
	CHECK_EQ(cache_class_stats(c, (unsigned)cls, &cs), 0);
	uint64_t per_limit = SLIMIT / cs.charged; /* items of this class the limit holds */
	/* One thread allocates (the reader only reads), and all of its items are of one
	 * class. ps_mem maps a slab only when no free object is within the allocating
	 * thread's reach (its object cache and slabs, the objects others freed into them,
	 * the pool), so at every mapping all the class's other memory holds charged objects:
	 * slab memory <= the charge (<= the limit) + the slab just mapped. */
	const uint64_t slab_bound = (uint64_t)SLIMIT + cs.slab_bytes;
	atomic_store(&reader_in, 0);
	atomic_store(&reader_go, 0);
	pthread_t th;
	CHECK_PT(pthread_create(&th, NULL, stalled_reader, NULL));
	while (!atomic_load(&reader_in))
		test_sleep_ms(1);

	/* Store until the first CACHE_NO_MEMORY: five times what the limit holds would
	 * pass it fourfold if garbage were not charged. */
	struct cache_stats s;
	uint64_t i, ns = 0, max_malloced = 0;
	enum cache_status st = CACHE_STORED;
	for (i = 0; i < 5 * per_limit && st == CACHE_STORED; i++) {
		st = put(i, 'a', &ns);
		if (i % 64 == 0) {
			cache_stats(c, &s);
			if (s.total_malloced > max_malloced)
				max_malloced = s.total_malloced;
		}
	}
	cache_stats(c, &s);
	if (s.total_malloced > max_malloced)
		max_malloced = s.total_malloced;
	test_log("%s stalled: %" PRIu64 " stores, then %s after %.1f ms; garbage %" PRIu64
		 " B, charged %" PRIu64 ", slab bytes max %" PRIu64 " (bound %" PRIu64
		 "), evictions %" PRIu64,
		 cache_variant_name(v), i, cache_status_name(st), (double)ns / 1e6,
		 s.mem_garbage_bytes, s.mem_charged, max_malloced, slab_bound, s.evictions);
	CHECK_LE(s.mem_charged, SLIMIT);
	CHECK_LE(max_malloced, slab_bound);
	if (v == CACHE_PS) {
		/* the garbage no reader can free is what fills the limit */
		CHECK_EQ(st, CACHE_NO_MEMORY);
		CHECK_GE(s.mem_garbage_bytes, SLIMIT / 8);
		CHECK_GE(ns, (uint64_t)wait_ms * 1000000u); /* it waited mem_wait_ms in full */
		CHECK_EQ(s.store_no_memory, 1);
		CHECK_EQ(s.nomem_garbage, 1);
		CHECK_EQ(s.mem_waits, 1);
		/* A store made inside a section fails without waiting: it would wait for
		 * itself. (The last stored key is live: eviction stopped when garbage passed
		 * mem_limit / 8.) */
		char key[32];
		size_t nk = (size_t)snprintf(key, sizeof key, "k%07" PRIu64, i - 2);
		struct cache_ref r;
		CHECK_EQ(cache_get(c, key, nk, &r), CACHE_OK);
		CHECK_EQ(put(i + 1, 'b', NULL), CACHE_NO_MEMORY);
		cache_release(c, &r);
		cache_stats(c, &s);
		CHECK_EQ(s.nomem_garbage, 2); /* garbage it could not wait for */
		CHECK_EQ(s.mem_waits, 1);     /* no nap: did not wait */
	} else {
		/* refcounted variants: a held item does not hold back the others */
		CHECK_EQ(st, CACHE_STORED);
		CHECK_EQ(s.store_no_memory, 0);
	}
	atomic_store(&reader_go, 1);
	CHECK_PT(pthread_join(th, NULL));
	/* The reader has left: the garbage is reclaimable, stores succeed again. */
	for (uint64_t j = 0; j < 2 * per_limit; j++)
		CHECK_EQ(put(i + 2 + j, 'c', NULL), CACHE_STORED);
	/* a quiescent point (no section open, the reader gone): all garbage reclaimable */
	while (cache_reclaim(c) > 0)
		;
	cache_stats(c, &s);
	CHECK_LE(s.mem_charged, SLIMIT);
	CHECK_EQ(s.mem_garbage_bytes, 0);
	CHECK_LE(s.total_malloced, slab_bound);
	cache_destroy(c);
}

/* ---- 5. a busy victim ------------------------------------------------------------------ */

static pthread_mutex_t bv_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bv_cv = PTHREAD_COND_INITIALIZER;
static int bv_held, bv_go;
static _Atomic int bv_done;
static enum cache_status bv_st;
static size_t bv_n;
static unsigned bv_cls;

/* cache_dump_class's callback runs under the item's bucket lock: hold it until told. */
static bool bv_hold(void *arg, const char *key, size_t nkey, uint32_t nbytes, int64_t ttl)
{
	(void)arg;
	(void)nbytes;
	(void)ttl;
	CHECK(nkey == 1 && key[0] == 'a');
	CHECK_PT(pthread_mutex_lock(&bv_mx));
	bv_held = 1;
	CHECK_PT(pthread_cond_broadcast(&bv_cv));
	while (!bv_go)
		CHECK_PT(pthread_cond_wait(&bv_cv, &bv_mx));
	CHECK_PT(pthread_mutex_unlock(&bv_mx));
	return false;
}

static void *bv_holder(void *arg)
{
	(void)arg;
	CHECK_EQ(cache_dump_class(c, bv_cls, 0, bv_hold, NULL), 1);
	return NULL;
}

static void *bv_store(void *arg)
{
	char *v = arg;
	bv_st = cache_store(c, CACHE_SET, "b", 1, v, bv_n, 0, 0, 0, NULL);
	atomic_store(&bv_done, 1);
	return NULL;
}

static void busy_victim(enum cache_variant v)
{
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = v;
	cfg.mem_limit = 1u << 20;
	cfg.item_size_max = 512u << 10;
	/* the store waits for its victim's grace period too (the holder is no reader, but
	 * a deadline must not decide this case) */
	cfg.mem_wait_ms = 60000;
	c = cache_create(&cfg);
	CHECK(c != NULL);
	bv_n = 500000;
	char *val = calloc(1, bv_n);
	CHECK(val != NULL);
	CHECK_EQ(cache_store(c, CACHE_SET, "a", 1, val, bv_n, 0, 0, 0, NULL), CACHE_STORED);
	bv_cls = (unsigned)cache_class_for(c, 1, bv_n);
	struct cache_class_stats cs;
	CHECK_EQ(cache_class_stats(c, bv_cls, &cs), 0);
	CHECK_GT(2 * cs.charged, cfg.mem_limit); /* "b" fits only in place of "a" */
	bv_held = bv_go = 0;
	atomic_store(&bv_done, 0);
	pthread_t h, t;
	CHECK_PT(pthread_create(&h, NULL, bv_holder, NULL));
	CHECK_PT(pthread_mutex_lock(&bv_mx));
	while (!bv_held)
		CHECK_PT(pthread_cond_wait(&bv_cv, &bv_mx));
	CHECK_PT(pthread_mutex_unlock(&bv_mx));
	/* "a"'s bucket is locked (by a holder that does not run, as a preempted one would
	 * not): the store must wait for it rather than answer NO_MEMORY. Release the lock
	 * once it waits - or once it answered, which fails below. */
	CHECK_PT(pthread_create(&t, NULL, bv_store, val));
	struct cache_stats s;
	for (;;) {
		cache_stats(c, &s);
		if (s.evict_waits > 0 || atomic_load(&bv_done))
			break;
		test_sleep_ms(1);
	}
	CHECK_PT(pthread_mutex_lock(&bv_mx));
	bv_go = 1;
	CHECK_PT(pthread_cond_broadcast(&bv_cv));
	CHECK_PT(pthread_mutex_unlock(&bv_mx));
	CHECK_PT(pthread_join(t, NULL));
	CHECK_PT(pthread_join(h, NULL));
	free(val);
	cache_stats(c, &s);
	test_log("%s busy victim: %s, evict_waits %" PRIu64, cache_variant_name(v),
		 cache_status_name(bv_st), s.evict_waits);
	CHECK_MSG(bv_st == CACHE_STORED, "store with its victim's bucket locked: %s",
		  cache_status_name(bv_st));
	CHECK_GE(s.evict_waits, 1);
	CHECK_EQ(s.evictions, 1);
	char buf[8];
	uint32_t got;
	CHECK_EQ(cache_get_copy(c, "a", 1, buf, sizeof buf, &got, NULL, NULL), CACHE_NOT_FOUND);
	CHECK_EQ(cache_get_copy(c, "b", 1, buf, sizeof buf, &got, NULL, NULL), CACHE_BUF_SMALL);
	CHECK_EQ(got, bv_n);
	cache_destroy(c);
}

static void no_memory(enum cache_variant v, bool no_evict)
{
	c = mk(v, no_evict);
	char key[32], val[1000];
	memset(val, 'v', sizeof val);
	uint64_t i;
	enum cache_status st = CACHE_STORED;
	for (i = 0; i < 100000 && st == CACHE_STORED; i++) {
		size_t nk = (size_t)snprintf(key, sizeof key, "n%" PRIu64, i);
		st = cache_store(c, CACHE_SET, key, nk, val, sizeof val, 0, 0, 0, NULL);
	}
	CHECK_EQ(st, CACHE_NO_MEMORY);
	CHECK_GT(i, LIMIT / 2048);
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_LE(s.bytes, LIMIT);
	CHECK_EQ(s.evictions, 0);
	CHECK_EQ(s.store_no_memory, 1);
	CHECK_EQ(s.nomem_full, 1); /* nothing to evict, no garbage: refused at once */
	CHECK_EQ(s.mem_waits, 0);
	/* the first items are all still there */
	char buf[1000];
	uint32_t got;
	CHECK_EQ(cache_get_copy(c, "n0", 2, buf, sizeof buf, &got, NULL, NULL), CACHE_OK);
	/* free room and store again */
	for (uint64_t j = 0; j < 10; j++) {
		size_t nk = (size_t)snprintf(key, sizeof key, "n%" PRIu64, j);
		CHECK_EQ(cache_delete(c, key, nk, 0), CACHE_OK);
	}
	CHECK_EQ(cache_store(c, CACHE_SET, "again", 5, val, sizeof val, 0, 0, 0, NULL),
		 CACHE_STORED);
	cache_destroy(c);
}

int main(int argc, char **argv)
{
	/* below the ctest TIMEOUT (180 s) so that a hang reports itself */
	test_watchdog(150);
	CHECK(argc >= 2 && cache_variant_parse(argv[1], &variant) == 0);
	unsigned threads = 3;
	double secs = test_stress_seconds(TEST_SMALL ? 0.7 : 1.0) / 2;

	/* 1. one class: values of 200..230 bytes */
	c = mk(variant, false);
	vmin = 200;
	vmax = 230;
	run_storm(threads, secs);
	cache_destroy(c);

	/* 2. mixed sizes: 16..3000 bytes */
	c = mk(variant, false);
	vmin = 16;
	vmax = 3000;
	run_storm(threads, secs);
	cache_destroy(c);

	/* 3. no eviction */
	no_memory(CACHE_PS_NOCRP, false);
	no_memory(variant, true);

	/* 4. a reader that stays in its section */
	stalled(variant);

	/* 5. a victim whose bucket lock is held */
	busy_victim(variant);
	test_log("test_cache_mem %s: ok", argv[1]);
	return 0;
}
