/*
 * apps/cached/core/tests/test_cache_mem.c - the memory limit holds under a set storm.
 *
 *   test_cache_mem VARIANT      (ps, mcs-clock, locked; plus ps-nocrp and -M semantics)
 *
 *  1. Threads store far more than mem_limit of one size class: the charged bytes never
 *     pass the limit, the slab memory the allocator holds (ps_mem, counted from its own
 *     statistics) stays within the limit plus a small per-thread allowance, items are
 *     evicted, and what a get returns is intact.
 *  2. Mixed sizes (many classes): the charge holds; slab memory within the limit plus one
 *     allowance per class.
 *  3. ps-nocrp and no_evict (memcached -M): a storm past the limit gets CACHE_NO_MEMORY,
 *     never more memory; after deletes, stores succeed again.
 */
#include "cache.h"
#include "check.h"

#define LIMIT (4u << 20)

static enum cache_variant variant;
static struct cache *c;
static _Atomic int stop;
static size_t vmin, vmax;

static void *storm(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x1234567ull * (id + 1);
	char key[32], val[4096], buf[4096];
	uint64_t n = 0, nomem = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = test_rand(&rng);
		uint64_t k = r % 1000000;
		size_t nk = (size_t)snprintf(key, sizeof key, "s%" PRIu64, k);
		size_t len = vmin + (size_t)((r >> 20) % (vmax - vmin + 1));
		memset(val, (int)(k & 0xff), len);
		memcpy(val, &k, sizeof k);
		enum cache_status st = cache_store(c, CACHE_SET, key, nk, val, len, 0, 0, 0, NULL);
		CHECK_MSG(st == CACHE_STORED || st == CACHE_NO_MEMORY, "set: %s",
			  cache_status_name(st));
		nomem += st == CACHE_NO_MEMORY;
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
		n++;
	}
	/* a storm may hit NO_MEMORY only rarely (every victim momentarily locked) */
	CHECK_LE(nomem * 100, n + 100);
	return NULL;
}

static void run_storm(unsigned threads, double secs, uint64_t allowance)
{
	pthread_t th[8];
	atomic_store(&stop, 0);
	for (unsigned i = 0; i < threads; i++)
		CHECK_PT(pthread_create(&th[i], NULL, storm, (void *)(uintptr_t)i));
	/* At least secs, and on until the storm has filled memory and evicted (a slow
	 * sanitizer build may need longer), at most 60 s. */
	uint64_t t0 = test_now_ns(), end = t0 + (uint64_t)(secs * 1e9), last = t0 + 60000000000ull;
	struct cache_stats s = {0};
	uint64_t max_malloced = 0;
	while (test_now_ns() < end || (s.evictions == 0 && test_now_ns() < last)) {
		test_sleep_ms(10);
		cache_stats(c, &s);
		CHECK_MSG(s.bytes <= LIMIT, "charged %" PRIu64 " > %u", s.bytes, LIMIT);
		if (s.total_malloced > max_malloced)
			max_malloced = s.total_malloced;
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < threads; i++)
		CHECK_PT(pthread_join(th[i], NULL));
	cache_stats(c, &s);
	test_log("%s: items %" PRIu64 " charged %" PRIu64 " slab bytes %" PRIu64
		 " (max %" PRIu64 ", limit %u + allowance %" PRIu64 ") evictions %" PRIu64
		 " pending %" PRIu64 "",
		 cache_variant_name(variant), s.curr_items, s.bytes, s.total_malloced,
		 max_malloced, LIMIT, allowance, s.evictions, s.mem_pending);
	CHECK_LE(s.bytes, LIMIT);
	CHECK_GT(s.evictions, 0);
	CHECK_LE(max_malloced, (uint64_t)LIMIT + allowance);
	CHECK_GT(s.curr_items, 0);
}

static struct cache *mk(enum cache_variant v, bool no_evict)
{
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = v;
	cfg.mem_limit = LIMIT;
	cfg.item_size_max = 64u << 10;
	cfg.hash_power = 12;
	cfg.no_evict = no_evict;
	struct cache *x = cache_create(&cfg);
	CHECK(x != NULL);
	return x;
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
	CHECK_GE(s.store_no_memory, 1);
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
	test_watchdog(60);
	CHECK(argc >= 2 && cache_variant_parse(argv[1], &variant) == 0);
	unsigned threads = 3;
	double secs = test_stress_seconds(TEST_SMALL ? 0.7 : 1.0) / 2;

	/* 1. one class: values of 200..230 bytes */
	c = mk(variant, false);
	vmin = 200;
	vmax = 230;
	struct cache_class_stats cs;
	unsigned k;
	for (k = 0; k < cache_nclasses(c); k++) {
		CHECK_EQ(cache_class_stats(c, k, &cs), 0);
		if (cs.chunk_size >= 64 + 10 + vmax)
			break;
	}
	/* per thread: its object cache, partly used owned slabs and remote-free lists (measured:
	 * ~9 slabs per thread, independent of the limit); the pool keeps one slab;
	 * frees pending quiescence: a few batches */
	uint64_t allowance = (threads + 2) * 8 * cs.slab_bytes;
	run_storm(threads, secs, allowance);
	cache_destroy(c);

	/* 2. mixed sizes: 16..3000 bytes */
	c = mk(variant, false);
	vmin = 16;
	vmax = 3000;
	uint64_t all = 0;
	for (k = 0; k < cache_nclasses(c); k++) {
		CHECK_EQ(cache_class_stats(c, k, &cs), 0);
		if (cs.chunk_size <= 64 + 10 + vmax + 1024)
			all += (threads + 2) * 8 * cs.slab_bytes;
	}
	run_storm(threads, secs, all);
	cache_destroy(c);

	/* 3. no eviction */
	no_memory(CACHE_PS_NOCRP, false);
	no_memory(variant, true);
	test_log("test_cache_mem %s: ok", argv[1]);
	return 0;
}
