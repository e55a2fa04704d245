/*
 * apps/cached/core/tests/test_cache_rt.c - what `tsync-bench rt-cache` (RT-SMR (RTAS 2018)
 * §VII-C) needs of the cache core: a PS_POLICY_RT ps (cache_config.ps_policy) with
 * reclamation run as the caller's own task (ps_quiesce_time + cache_collect, the
 * reclamation observer, exact peaks), TEMPORAL refused; and the mcs / pf-rw variants
 * under concurrent gets, sets and deletes (2 readers, 1 writer, 1 deleter), each value
 * checked against its key and version (a reused item would fail it). Run under TSan it
 * checks the ck_pflock / ck_spinlock_mcs happens-before annotations of variant.c.
 * Usage: test_cache_rt rt | test_cache_rt concurrent mcs|pf-rw|ps-nocrp
 */
#include <tsync/ps.h>
#include <tsync/ps_mem.h>

#include "cache.h"
#include "check.h"

#define KEYS 64u
#define VLEN 32u

static struct cache *c;
static _Atomic int stop;
static _Atomic uint64_t observed, observed_collected;

static void observer(void *arg, const struct ps_mem_reclaim_info *info)
{
	CHECK(arg == &observed);
	atomic_fetch_add(&observed, 1);
	atomic_fetch_add(&observed_collected, info->collected);
}

/* value: 8 bytes version, 8 bytes key index, 16 bytes of (version ^ key) */
static void make_value(char *v, uint64_t ver, uint64_t k)
{
	uint64_t x = ver ^ (k * 0x9e3779b97f4a7c15ull);
	memcpy(v, &ver, 8);
	memcpy(v + 8, &k, 8);
	memcpy(v + 16, &x, 8);
	memcpy(v + 24, &x, 8);
}

static void check_value(const char *v, uint64_t k)
{
	uint64_t ver, kk, x, y;
	memcpy(&ver, v, 8);
	memcpy(&kk, v + 8, 8);
	memcpy(&x, v + 16, 8);
	memcpy(&y, v + 24, 8);
	CHECK_EQ(kk, k);
	CHECK_EQ(x, ver ^ (k * 0x9e3779b97f4a7c15ull));
	CHECK_EQ(y, x);
}

static int key_of(char *buf, uint64_t k)
{
	return snprintf(buf, 32, "key%06" PRIu64, k);
}

static void test_rt_policy(void)
{
	/* TEMPORAL and unknown policies are refused */
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = CACHE_PS_NOCRP;
	cfg.ps_policy = PS_POLICY_TEMPORAL;
	errno = 0;
	CHECK(cache_create(&cfg) == NULL);
	CHECK_EQ(errno, EINVAL);
	cfg.ps_policy = 7;
	CHECK(cache_create(&cfg) == NULL);

	cfg.ps_policy = PS_POLICY_RT;
	cfg.reclaim_period_ns = 3600ull * 1000000000u; /* only cache_collect reclaims */
	cfg.reclaim_fn = observer;
	cfg.reclaim_arg = (void *)&observed;
	c = cache_create(&cfg);
	CHECK(c != NULL);
	struct cache_config got;
	cache_config_get(c, &got);
	CHECK_EQ(got.ps_policy, PS_POLICY_RT);
	CHECK_EQ(ps_policy(cache_ps(c)), PS_POLICY_RT);
	CHECK(cache_class_mem(c, cache_nclasses(c)) == NULL);
	char key[32], v[VLEN], buf[VLEN];
	int n = key_of(key, 1);
	for (uint64_t ver = 0; ver < 100; ver++) {
		make_value(v, ver, 1);
		CHECK_EQ(cache_store(c, CACHE_SET, key, (size_t)n, v, VLEN, 0, 0, 0, NULL),
			 CACHE_STORED);
	}
	uint32_t nb;
	CHECK_EQ(cache_get_copy(c, key, (size_t)n, buf, sizeof buf, &nb, NULL, NULL), CACHE_OK);
	CHECK_EQ(nb, VLEN);
	check_value(buf, 1);
	/* 99 replaced items wait in this thread's queue (its first free may have reclaimed) */
	int cls = cache_class_for(c, (size_t)n, VLEN);
	CHECK_GE(cls, 0);
	struct ps_mem_stats ms;
	CHECK_EQ(ps_mem_stats(cache_class_mem(c, (unsigned)cls), &ms), 0);
	CHECK_EQ(ms.exact, 1);
	CHECK_GE(ms.pending, 98);
	CHECK_GE(ms.peak_pending, ms.pending);
	/* σ: quiescence, then collection */
	(void)ps_quiesce_time(cache_ps(c));
	size_t got_n = cache_collect(c);
	CHECK_GE(got_n, 98);
	CHECK_EQ(ps_mem_stats(cache_class_mem(c, (unsigned)cls), &ms), 0);
	CHECK_EQ(ms.pending, 0);
	CHECK_GE(ms.peak_pending, 98);
	CHECK_GE(atomic_load(&observed), 1);
	CHECK_GE(atomic_load(&observed_collected), got_n);
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_EQ(s.mem_garbage_bytes, 0);
	CHECK_EQ(s.curr_items, 1);
	/* delete works as ever */
	CHECK_EQ(cache_delete(c, key, (size_t)n, 0), CACHE_OK);
	CHECK_EQ(cache_get_copy(c, key, (size_t)n, buf, sizeof buf, &nb, NULL, NULL),
		 CACHE_NOT_FOUND);
	cache_destroy(c);
	c = NULL;
	test_log("test_cache_rt rt: ok");
}

static void *reader(void *arg)
{
	uint64_t rng = test_seed((uint64_t)(uintptr_t)arg), gets = 0;
	char key[32], buf[VLEN];
	while (!atomic_load_explicit(&stop, memory_order_relaxed) || gets < 1000) {
		uint64_t k = test_rand(&rng) % KEYS;
		int n = key_of(key, k);
		if (test_rand(&rng) & 1) {
			uint32_t nb = 0;
			enum cache_status st =
				cache_get_copy(c, key, (size_t)n, buf, sizeof buf, &nb, NULL, NULL);
			CHECK_MSG(st == CACHE_OK || st == CACHE_NOT_FOUND, "get: %s",
				  cache_status_name(st));
			if (st == CACHE_OK) {
				CHECK_EQ(nb, VLEN);
				check_value(buf, k);
			}
		} else {
			/* hold a ref across a little work: the item must stay intact */
			struct cache_ref r;
			if (cache_get(c, key, (size_t)n, &r) == CACHE_OK) {
				char copy[VLEN];
				memcpy(copy, r.value, VLEN);
				test_spin(50);
				CHECK(memcmp(copy, r.value, VLEN) == 0);
				check_value(r.value, k);
				cache_release(c, &r);
			}
		}
		gets++;
	}
	return NULL;
}

static void *writer(void *arg)
{
	uint64_t rng = test_seed(77), ver = 1;
	bool deleter = arg != NULL;
	char key[32], v[VLEN];
	double secs = test_stress_seconds(1.0);
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9), ops = 0;
	while (test_now_ns() < end || ops < 1000) {
		uint64_t k = test_rand(&rng) % KEYS;
		int n = key_of(key, k);
		if (deleter) {
			enum cache_status st = cache_delete(c, key, (size_t)n, 0);
			CHECK(st == CACHE_OK || st == CACHE_NOT_FOUND);
			test_spin(200);
		} else {
			make_value(v, ver++, k);
			CHECK_EQ(cache_store(c, CACHE_SET, key, (size_t)n, v, VLEN, 0, 0, 0, NULL),
				 CACHE_STORED);
		}
		ops++;
	}
	return NULL;
}

static void test_concurrent(enum cache_variant v)
{
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = v;
	cfg.hash_power = 4; /* 16 stripes for 64 keys: real contention */
	cfg.no_grow = true;
	if (v == CACHE_PS_NOCRP)
		cfg.ps_policy = PS_POLICY_RT;
	c = cache_create(&cfg);
	CHECK(c != NULL);
	char key[32], val[VLEN];
	for (uint64_t k = 0; k < KEYS; k++) {
		int n = key_of(key, k);
		make_value(val, 0, k);
		CHECK_EQ(cache_store(c, CACHE_SET, key, (size_t)n, val, VLEN, 0, 0, 0, NULL),
			 CACHE_STORED);
	}
	pthread_t r1 = test_spawn(reader, (void *)1), r2 = test_spawn(reader, (void *)2);
	pthread_t w = test_spawn(writer, NULL), d = test_spawn(writer, (void *)1);
	test_join(w);
	test_join(d);
	atomic_store(&stop, 1);
	test_join(r1);
	test_join(r2);
	/* every key present or deleted; what is there is intact */
	for (uint64_t k = 0; k < KEYS; k++) {
		int n = key_of(key, k);
		uint32_t nb;
		enum cache_status st =
			cache_get_copy(c, key, (size_t)n, val, sizeof val, &nb, NULL, NULL);
		CHECK(st == CACHE_OK || st == CACHE_NOT_FOUND);
		if (st == CACHE_OK)
			check_value(val, k);
	}
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_LE(s.curr_items, KEYS);
	cache_destroy(c);
	c = NULL;
	test_log("test_cache_rt concurrent %s: ok", cache_variant_name(v));
}

int main(int argc, char **argv)
{
	CHECK(argc >= 2);
	/* below the ctest TIMEOUTs (rt: 60 s, concurrent: 120 s): a hang reports itself */
	test_watchdog(strcmp(argv[1], "rt") == 0 ? 50 : 100);
	if (strcmp(argv[1], "rt") == 0) {
		test_rt_policy();
		return 0;
	}
	enum cache_variant v;
	CHECK(strcmp(argv[1], "concurrent") == 0 && argc >= 3 &&
	      cache_variant_parse(argv[2], &v) == 0);
	test_concurrent(v);
	return 0;
}
