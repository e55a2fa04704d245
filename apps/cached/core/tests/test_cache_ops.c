/*
 * apps/cached/core/tests/test_cache_ops.c - every operation's semantics (memcached's),
 * single-threaded, for one variant: test_cache_ops ps|ps-nocrp|mcs-clock|locked|mcs|pf-rw
 */
#include "cache.h"
#include "check.h"

static struct cache *c;
static enum cache_variant variant;

static struct cache *mk(uint64_t mem, unsigned hp)
{
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = variant;
	cfg.mem_limit = mem;
	cfg.hash_power = hp;
	struct cache *x = cache_create(&cfg);
	CHECK(x != NULL);
	return x;
}

static enum cache_status set(const char *k, const char *v, uint32_t flags, int64_t exp)
{
	return cache_store(c, CACHE_SET, k, strlen(k), v, strlen(v), flags, exp, 0, NULL);
}

static enum cache_status op(enum cache_store_op o, const char *k, const char *v, uint64_t cas,
			    uint64_t *cas_out)
{
	return cache_store(c, o, k, strlen(k), v, strlen(v), 0, 0, cas, cas_out);
}

/* The value of k as a string ("" buffer on miss); returns the status. */
static enum cache_status get(const char *k, char *buf, size_t cap, uint32_t *flags, uint64_t *cas)
{
	uint32_t n = 0;
	enum cache_status st = cache_get_copy(c, k, strlen(k), buf, cap - 1, &n, flags, cas);
	buf[st == CACHE_OK ? n : 0] = '\0';
	return st;
}

static void expect_value(const char *k, const char *v)
{
	char buf[4096];
	enum cache_status st = get(k, buf, sizeof buf, NULL, NULL);
	CHECK_MSG(st == CACHE_OK, "get %s: %s", k, cache_status_name(st));
	CHECK_MSG(strcmp(buf, v) == 0, "get %s: '%s' != '%s'", k, buf, v);
}

static void expect_miss(const char *k)
{
	char buf[64];
	CHECK_EQ(get(k, buf, sizeof buf, NULL, NULL), CACHE_NOT_FOUND);
}

static void test_names(void)
{
	enum cache_variant v;
	CHECK_EQ(cache_variant_parse("ps-nocrp", &v), 0);
	CHECK_EQ(v, CACHE_PS_NOCRP);
	CHECK_EQ(cache_variant_parse("bogus", &v), -1);
	CHECK(strcmp(cache_variant_name(CACHE_MCS_CLOCK), "mcs-clock") == 0);
	CHECK(cache_variant_name((enum cache_variant)99) == NULL);
	CHECK_EQ(cache_variant_parse("pf-rw", &v), 0);
	CHECK_EQ(v, CACHE_PF_RW);
	CHECK_EQ(cache_variant_parse("mcs", &v), 0);
	CHECK_EQ(v, CACHE_MCS);
	CHECK(strcmp(cache_status_name(CACHE_EXISTS), "EXISTS") == 0);
	struct cache_config bad = CACHE_CONFIG_INIT;
	bad.growth_factor = 1.0;
	errno = 0;
	CHECK(cache_create(&bad) == NULL && errno == EINVAL);
	bad = (struct cache_config)CACHE_CONFIG_INIT;
	bad.size = 3;
	CHECK(cache_create(&bad) == NULL && errno == EINVAL);
	bad = (struct cache_config)CACHE_CONFIG_INIT;
	bad.item_size_max = 8u << 20;
	bad.mem_limit = 8u << 20; /* -I must be at most half of -m */
	CHECK(cache_create(&bad) == NULL && errno == EINVAL);
	struct cache *d = cache_create(NULL);
	CHECK(d != NULL);
	struct cache_config g;
	cache_config_get(d, &g);
	CHECK_EQ(g.mem_limit, CACHE_MEM_LIMIT_DEFAULT);
	CHECK_EQ(g.item_size_max, CACHE_ITEM_SIZE_MAX_DEFAULT);
	CHECK_EQ(g.hash_power, 16);
	CHECK(cache_nclasses(d) > 10);
	struct cache_class_stats cs0, csl;
	CHECK_EQ(cache_class_stats(d, 0, &cs0), 0);
	CHECK_EQ(cache_class_stats(d, cache_nclasses(d) - 1, &csl), 0);
	/* the largest class fits the largest item memcached admits under -I (its header
	 * counted its way), plus what tsync's item header takes beyond memcached's */
	CHECK(csl.chunk_size >= CACHE_ITEM_SIZE_MAX_DEFAULT &&
	      csl.chunk_size < CACHE_ITEM_SIZE_MAX_DEFAULT + 64);
	CHECK_EQ(cs0.chunk_size, 96); /* memcached's first class: 48 + 48 */
	CHECK_EQ(cache_class_stats(d, cache_nclasses(d), &cs0), -1);
	cache_destroy(d);
}

static void test_basic(void)
{
	char buf[4096];
	uint32_t fl;
	uint64_t cas1, cas2;
	expect_miss("a");
	CHECK_EQ(set("a", "hello", 42, 0), CACHE_STORED);
	CHECK_EQ(get("a", buf, sizeof buf, &fl, &cas1), CACHE_OK);
	CHECK(strcmp(buf, "hello") == 0);
	CHECK_EQ(fl, 42);
	CHECK_GT(cas1, 0);
	CHECK_EQ(set("a", "world!", 7, 0), CACHE_STORED);
	CHECK_EQ(get("a", buf, sizeof buf, &fl, &cas2), CACHE_OK);
	CHECK(strcmp(buf, "world!") == 0);
	CHECK_EQ(fl, 7);
	CHECK_GT(cas2, cas1);
	/* empty value */
	CHECK_EQ(set("empty", "", 0, 0), CACHE_STORED);
	expect_value("empty", "");
	/* buffer too small */
	uint32_t n = 0;
	CHECK_EQ(cache_get_copy(c, "a", 1, buf, 3, &n, NULL, NULL), CACHE_BUF_SMALL);
	CHECK_EQ(n, 6);
	/* keys: 1..250 bytes, binary-safe */
	char key[300];
	memset(key, 'k', sizeof key);
	CHECK_EQ(cache_store(c, CACHE_SET, key, 250, "v", 1, 0, 0, 0, NULL), CACHE_STORED);
	CHECK_EQ(cache_store(c, CACHE_SET, key, 251, "v", 1, 0, 0, 0, NULL), CACHE_BAD_KEY);
	CHECK_EQ(cache_store(c, CACHE_SET, key, 0, "v", 1, 0, 0, 0, NULL), CACHE_BAD_KEY);
	struct cache_ref r;
	CHECK_EQ(cache_get(c, key, 251, &r), CACHE_BAD_KEY);
	CHECK_EQ(cache_get(c, key, 250, &r), CACHE_OK);
	CHECK_EQ(r.nbytes, 1);
	cache_release(c, &r);
	CHECK_EQ(cache_store(c, CACHE_SET, "k\0x", 3, "bin\0ary", 7, 0, 0, 0, NULL), CACHE_STORED);
	CHECK_EQ(cache_get(c, "k\0x", 3, &r), CACHE_OK);
	CHECK_EQ(r.nbytes, 7);
	CHECK(memcmp(r.value, "bin\0ary", 7) == 0);
	cache_release(c, &r);
	CHECK_EQ(cache_get(c, "k\0y", 3, &r), CACHE_NOT_FOUND);
}

static void test_refs(void)
{
	/* A ref keeps the old bytes after an overwrite and a delete. */
	struct cache_ref r1, r2;
	CHECK_EQ(set("ref", "first-value", 1, 0), CACHE_STORED);
	CHECK_EQ(cache_get(c, "ref", 3, &r1), CACHE_OK);
	CHECK_EQ(set("ref", "second-value", 2, 0), CACHE_STORED);
	CHECK_EQ(cache_get(c, "ref", 3, &r2), CACHE_OK); /* nested refs */
	CHECK_EQ(cache_delete(c, "ref", 3, 0), CACHE_OK);
	for (int i = 0; i < 100; i++) /* churn the allocator */
		CHECK_EQ(set("ref", "third-value-xx", 3, 0), CACHE_STORED);
	CHECK_EQ(r1.nbytes, 11);
	CHECK(memcmp(r1.value, "first-value", 11) == 0 && r1.flags == 1);
	CHECK(memcmp(r2.value, "second-value", 12) == 0 && r2.flags == 2);
	cache_release(c, &r1); /* any order */
	cache_release(c, &r2);
	expect_value("ref", "third-value-xx");
}

static void test_add_replace_concat(void)
{
	uint64_t cas;
	CHECK_EQ(op(CACHE_ADD, "b", "1", 0, NULL), CACHE_STORED);
	CHECK_EQ(op(CACHE_ADD, "b", "2", 0, NULL), CACHE_NOT_STORED);
	expect_value("b", "1");
	CHECK_EQ(op(CACHE_REPLACE, "nob", "x", 0, NULL), CACHE_NOT_STORED);
	expect_miss("nob");
	CHECK_EQ(op(CACHE_REPLACE, "b", "3", 0, &cas), CACHE_STORED);
	expect_value("b", "3");
	CHECK_EQ(op(CACHE_REPLACE, "b", "4", cas + 100, NULL), CACHE_EXISTS);
	expect_value("b", "3");
	CHECK_EQ(op(CACHE_APPEND, "nob", "x", 0, NULL), CACHE_NOT_STORED);
	CHECK_EQ(op(CACHE_PREPEND, "nob", "x", 0, NULL), CACHE_NOT_STORED);
	CHECK_EQ(cache_store(c, CACHE_SET, "cat", 3, "mid", 3, 99, 0, 0, NULL), CACHE_STORED);
	CHECK_EQ(cache_store(c, CACHE_APPEND, "cat", 3, "-end", 4, 1, 0, 0, NULL), CACHE_STORED);
	CHECK_EQ(op(CACHE_PREPEND, "cat", "start-", 0, &cas), CACHE_STORED);
	char buf[64];
	uint32_t fl;
	CHECK_EQ(get("cat", buf, sizeof buf, &fl, NULL), CACHE_OK);
	CHECK(strcmp(buf, "start-mid-end") == 0);
	CHECK_EQ(fl, 99); /* append/prepend keep the flags */
	CHECK_EQ(op(CACHE_APPEND, "cat", "!", cas + 1, NULL), CACHE_EXISTS);
	CHECK_EQ(op(CACHE_APPEND, "cat", "!", cas, NULL), CACHE_STORED);
	expect_value("cat", "start-mid-end!");
	/* add over an expired item succeeds */
	CHECK_EQ(set("exp-add", "old", 0, -1), CACHE_STORED);
	expect_miss("exp-add");
	CHECK_EQ(op(CACHE_ADD, "exp-add", "new", 0, NULL), CACHE_STORED);
	expect_value("exp-add", "new");
}

static void test_cas(void)
{
	uint64_t cas, cas2;
	char buf[64];
	CHECK_EQ(op(CACHE_CAS, "nocas", "x", 1, NULL), CACHE_NOT_FOUND);
	CHECK_EQ(op(CACHE_SET, "c", "v1", 0, &cas), CACHE_STORED);
	CHECK_EQ(get("c", buf, sizeof buf, NULL, &cas2), CACHE_OK);
	CHECK_EQ(cas, cas2);
	CHECK_EQ(op(CACHE_CAS, "c", "v2", cas + 1, NULL), CACHE_EXISTS);
	expect_value("c", "v1");
	CHECK_EQ(op(CACHE_CAS, "c", "v2", cas, &cas2), CACHE_STORED);
	CHECK_NE(cas2, cas);
	expect_value("c", "v2");
	CHECK_EQ(op(CACHE_CAS, "c", "v3", cas, NULL), CACHE_EXISTS); /* stale id */
	/* SET with cas_in is CAS */
	CHECK_EQ(op(CACHE_SET, "c", "v4", cas, NULL), CACHE_EXISTS);
	CHECK_EQ(op(CACHE_SET, "c", "v4", cas2, NULL), CACHE_STORED);
	expect_value("c", "v4");
	/* touch keeps the CAS id */
	CHECK_EQ(get("c", buf, sizeof buf, NULL, &cas), CACHE_OK);
	CHECK_EQ(cache_touch(c, "c", 1, 100), CACHE_OK);
	CHECK_EQ(get("c", buf, sizeof buf, NULL, &cas2), CACHE_OK);
	CHECK_EQ(cas, cas2);
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_GE(s.cas_badval, 3);
	CHECK_GE(s.cas_hits, 2);
	CHECK_GE(s.cas_misses, 1);
}

static void test_delete(void)
{
	uint64_t cas;
	CHECK_EQ(cache_delete(c, "nod", 3, 0), CACHE_NOT_FOUND);
	CHECK_EQ(op(CACHE_SET, "d", "x", 0, &cas), CACHE_STORED);
	CHECK_EQ(cache_delete(c, "d", 1, cas + 1), CACHE_EXISTS);
	expect_value("d", "x");
	CHECK_EQ(cache_delete(c, "d", 1, cas), CACHE_OK);
	expect_miss("d");
	CHECK_EQ(cache_delete(c, "d", 1, 0), CACHE_NOT_FOUND);
	CHECK_EQ(set("d", "y", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_delete(c, "d", 1, 0), CACHE_OK);
	expect_miss("d");
}

static void test_incr(void)
{
	uint64_t v, cas;
	CHECK_EQ(cache_incr(c, "n", 1, false, 1, 0, &v, NULL), CACHE_NOT_FOUND);
	CHECK_EQ(cache_store(c, CACHE_SET, "n", 1, "10", 2, 5, 0, 0, NULL), CACHE_STORED);
	CHECK_EQ(cache_incr(c, "n", 1, false, 5, 0, &v, &cas), CACHE_OK);
	CHECK_EQ(v, 15);
	uint32_t fl;
	char buf[64];
	CHECK_EQ(get("n", buf, sizeof buf, &fl, NULL), CACHE_OK);
	CHECK(strcmp(buf, "15") == 0);
	CHECK_EQ(fl, 5);
	CHECK_EQ(cache_incr(c, "n", 1, true, 100, 0, &v, NULL), CACHE_OK);
	CHECK_EQ(v, 0); /* decr stops at 0 */
	expect_value("n", "0");
	CHECK_EQ(cache_incr(c, "n", 1, false, 1, cas, &v, NULL), CACHE_EXISTS);
	/* wrap at 2^64 */
	CHECK_EQ(set("big", "18446744073709551615", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_incr(c, "big", 3, false, 2, 0, &v, NULL), CACHE_OK);
	CHECK_EQ(v, 1);
	CHECK_EQ(set("big", "18446744073709551616", 0, 0), CACHE_STORED); /* 2^64 */
	CHECK_EQ(cache_incr(c, "big", 3, false, 1, 0, &v, NULL), CACHE_NON_NUMERIC);
	CHECK_EQ(set("nn", "12a", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_incr(c, "nn", 2, false, 1, 0, &v, NULL), CACHE_NON_NUMERIC);
	CHECK_EQ(set("nn", "-1", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_incr(c, "nn", 2, true, 1, 0, &v, NULL), CACHE_NON_NUMERIC);
	CHECK_EQ(set("nn", "", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_incr(c, "nn", 2, false, 1, 0, &v, NULL), CACHE_NON_NUMERIC);
	CHECK_EQ(set("nn", "99  ", 0, 0), CACHE_STORED); /* padded, as after a decr */
	CHECK_EQ(cache_incr(c, "nn", 2, false, 1, 0, &v, NULL), CACHE_OK);
	CHECK_EQ(v, 100);
	expect_value("nn", "100");
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_GE(s.incr_hits, 3);
	CHECK_GE(s.incr_misses, 1);
	CHECK_GE(s.decr_hits, 1);
}

static void test_expiry(void)
{
	char buf[64];
	struct cache_ref r;
	CHECK_EQ(set("e1", "v", 0, 10), CACHE_STORED);
	CHECK_EQ(set("e2", "v", 0, 0), CACHE_STORED);
	CHECK_EQ(set("eneg", "v", 0, -1), CACHE_STORED);
	expect_miss("eneg");
	/* absolute time: in the future and in the past */
	int64_t now = (int64_t)time(NULL);
	CHECK_EQ(set("eabs", "v", 0, now + 20), CACHE_STORED);
	CHECK_EQ(set("epast", "v", 0, now - 100), CACHE_STORED);
	expect_miss("epast");
	CHECK_EQ(cache_get(c, "e1", 2, &r), CACHE_OK);
	CHECK(r.exptime > 0 && r.exptime <= 10);
	cache_release(c, &r);
	CHECK_EQ(get("e2", buf, sizeof buf, NULL, NULL), CACHE_OK);
	cache_time_advance(c, 11);
	expect_miss("e1");
	expect_value("e2", "v");
	expect_value("eabs", "v");
	/* touch and gat */
	CHECK_EQ(cache_touch(c, "e1", 2, 100), CACHE_NOT_FOUND);
	CHECK_EQ(set("t", "tv", 0, 5), CACHE_STORED);
	CHECK_EQ(cache_touch(c, "t", 1, 100), CACHE_OK);
	CHECK_EQ(cache_gat(c, "t", 1, 200, &r), CACHE_OK);
	CHECK(memcmp(r.value, "tv", 2) == 0);
	CHECK(r.exptime > 100 && r.exptime <= 200);
	cache_release(c, &r);
	CHECK_EQ(cache_gat(c, "nope", 4, 200, &r), CACHE_NOT_FOUND);
	cache_time_advance(c, 150);
	expect_value("t", "tv");
	expect_miss("eabs");
	cache_time_advance(c, 100);
	expect_miss("t");
	/* gat with 0 clears the expiry */
	CHECK_EQ(set("g0", "v", 0, 5), CACHE_STORED);
	CHECK_EQ(cache_gat(c, "g0", 2, 0, &r), CACHE_OK);
	CHECK_EQ(r.exptime, 0);
	cache_release(c, &r);
	cache_time_advance(c, 1000);
	expect_value("g0", "v");
	/* sweep frees expired items */
	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof k, "sw%d", i);
		CHECK_EQ(set(k, "v", 0, i % 2 ? 5 : 0), CACHE_STORED);
	}
	struct cache_stats s0, s1;
	cache_stats(c, &s0);
	cache_time_advance(c, 6);
	size_t n = cache_sweep(c);
	CHECK_GE(n, 50);
	cache_stats(c, &s1);
	CHECK_EQ(s0.curr_items - s1.curr_items, n);
	CHECK_GE(s1.reclaimed, n);
	CHECK_LT(s1.bytes, s0.bytes);
	expect_value("sw0", "v");
	expect_miss("sw1");
	CHECK_EQ(cache_sweep(c), 0);
}

static void test_flush(void)
{
	CHECK_EQ(set("f1", "a", 0, 0), CACHE_STORED);
	CHECK_EQ(set("f2", "b", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_flush_all(c, 0), CACHE_OK);
	expect_miss("f1");
	expect_miss("f2");
	CHECK_EQ(op(CACHE_ADD, "f1", "c", 0, NULL), CACHE_STORED); /* flushed = absent */
	expect_value("f1", "c");
	CHECK_EQ(op(CACHE_REPLACE, "f2", "x", 0, NULL), CACHE_NOT_STORED);
	/* delayed */
	CHECK_EQ(set("f3", "d", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_flush_all(c, 10), CACHE_OK);
	expect_value("f3", "d");
	cache_time_advance(c, 11);
	expect_miss("f3");
	expect_miss("f1");
	CHECK_EQ(set("f4", "e", 0, 0), CACHE_STORED); /* stored after the flush took effect */
	expect_value("f4", "e");
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_GE(s.get_flushed, 3);
	CHECK_EQ(s.cmd_flush, 2);
}

static void test_too_large(void)
{
	size_t big = CACHE_ITEM_SIZE_MAX_DEFAULT;
	char *v = malloc(big);
	CHECK(v != NULL);
	memset(v, 'x', big);
	CHECK_EQ(set("tl", "small", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_store(c, CACHE_SET, "tl", 2, v, big, 0, 0, 0, NULL), CACHE_TOO_LARGE);
	expect_miss("tl"); /* memcached drops the stale value on a failed set */
	size_t fits = big - 200;
	CHECK_EQ(cache_store(c, CACHE_SET, "tl", 2, v, fits, 0, 0, 0, NULL), CACHE_STORED);
	struct cache_ref r;
	CHECK_EQ(cache_get(c, "tl", 2, &r), CACHE_OK);
	CHECK_EQ(r.nbytes, fits);
	CHECK(r.value[0] == 'x' && r.value[fits - 1] == 'x');
	cache_release(c, &r);
	CHECK_EQ(cache_store(c, CACHE_APPEND, "tl", 2, v, 300, 0, 0, 0, NULL), CACHE_TOO_LARGE);
	CHECK_EQ(cache_get(c, "tl", 2, &r), CACHE_OK); /* append failure keeps the value */
	CHECK_EQ(r.nbytes, fits);
	cache_release(c, &r);
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_GE(s.store_too_large, 2);
	free(v);
}

static void test_stats(void)
{
	struct cache_stats s0, s1;
	cache_stats(c, &s0);
	char buf[16];
	CHECK_EQ(set("st", "1", 0, 0), CACHE_STORED);
	CHECK_EQ(get("st", buf, sizeof buf, NULL, NULL), CACHE_OK);
	CHECK_EQ(get("st-miss", buf, sizeof buf, NULL, NULL), CACHE_NOT_FOUND);
	CHECK_EQ(cache_delete(c, "st", 2, 0), CACHE_OK);
	CHECK_EQ(cache_delete(c, "st", 2, 0), CACHE_NOT_FOUND);
	cache_stats(c, &s1);
	CHECK_EQ(s1.get_hits - s0.get_hits, 1);
	CHECK_EQ(s1.get_misses - s0.get_misses, 1);
	CHECK_EQ(s1.cmd_get - s0.cmd_get, 2);
	CHECK_EQ(s1.cmd_set - s0.cmd_set, 1);
	CHECK_EQ(s1.total_items - s0.total_items, 1);
	CHECK_EQ(s1.delete_hits - s0.delete_hits, 1);
	CHECK_EQ(s1.delete_misses - s0.delete_misses, 1);
	CHECK_EQ(s1.curr_items, s0.curr_items);
	CHECK_EQ(s1.limit_maxbytes, 64u << 20);
	CHECK_GT(s1.total_malloced, 0);
	CHECK_GE(s1.mem_in_use, s1.curr_items);
	CHECK_EQ(s1.hash_power_level, 8);
}

static void test_grow(void)
{
	/* Grow explicitly and through stores; every key survives. */
	struct cache *g = mk(64u << 20, 4);
	struct cache *save = c;
	c = g;
	char k[32], v[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof k, "key%d", i);
		snprintf(v, sizeof v, "val%d", i);
		CHECK_EQ(set(k, v, (uint32_t)i, 0), CACHE_STORED);
	}
	struct cache_stats s;
	cache_stats(c, &s);
	CHECK_GE(s.hash_power_level, 11); /* 5000 items > 1.5 * 2^11 */
	CHECK_GT(s.hash_expansions, 0);
	CHECK_EQ(s.curr_items, 5000);
	CHECK_EQ(cache_grow_now(c), 0);
	cache_stats(c, &s);
	CHECK_EQ(s.hash_is_expanding, 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof k, "key%d", i);
		snprintf(v, sizeof v, "val%d", i);
		uint32_t fl;
		char buf[64];
		CHECK_EQ(get(k, buf, sizeof buf, &fl, NULL), CACHE_OK);
		CHECK(strcmp(buf, v) == 0);
		CHECK_EQ(fl, (uint32_t)i);
	}
	cache_destroy(g);
	c = save;
}

static void test_sweeper_thread(void)
{
	struct cache *g = mk(64u << 20, 4);
	struct cache *save = c;
	c = g;
	CHECK_EQ(cache_sweeper_start(c, 10), 0);
	errno = 0;
	CHECK(cache_sweeper_start(c, 10) == -1 && errno == EBUSY);
	char k[32];
	for (int i = 0; i < 3000; i++) {
		snprintf(k, sizeof k, "key%d", i);
		CHECK_EQ(set(k, "v", 0, i < 1000 ? 2 : 0), CACHE_STORED);
	}
	cache_time_advance(c, 5);
	/* The maintenance thread (nothing else runs here) sweeps every 10 ms and grows the
	 * table when a store asks: both happen, though by no deadline (a loaded machine may
	 * not run it for a while); the watchdog ends a thread that never does. */
	struct cache_stats s;
	for (;;) {
		cache_stats(c, &s);
		CHECK_GE(s.curr_items, 2000); /* the unexpired items stay */
		if (s.curr_items == 2000 && s.hash_expansions > 0)
			break;
		test_sleep_ms(10);
	}
	cache_sweeper_stop(c);
	cache_sweeper_stop(c);
	expect_value("key2999", "v");
	cache_destroy(g);
	c = save;
}

/* mg h/l and the recache token (memcached's meta protocol), one thread. */
static void test_meta(void)
{
	struct cache_ref r;
	struct cache_meta m = {0};
	/* idle counts the cache's clock, whole CLOCK_MONOTONIC_COARSE seconds: a second
	 * may tick between any two calls, so it is checked against the clock read around
	 * them (exact unless one ticked) */
	uint32_t t0 = cache_now(c);
	CHECK_EQ(set("m1", "v", 0, 0), CACHE_STORED);
	CHECK_EQ(cache_mget(c, "m1", 2, &m, &r), CACHE_OK);
	uint32_t t1 = cache_now(c);
	CHECK(!r.hit_before && r.idle <= t1 - t0 && !m.won && !m.token_sent && !m.stale);
	cache_release(c, &r);
	cache_time_advance(c, 7);
	CHECK_EQ(cache_mget(c, "m1", 2, &m, &r), CACHE_OK);
	uint32_t t2 = cache_now(c);
	CHECK(r.hit_before);
	/* accessed at some tick in [t0, t1], now at one in [t1 + 7, t2] */
	CHECK_GE(r.idle, 7);
	CHECK_LE(r.idle, t2 - t0);
	cache_release(c, &r);
	CHECK_EQ(cache_get(c, "m1", 2, &r), CACHE_OK); /* plain gets count as accesses */
	CHECK_EQ(r.idle, 0);
	cache_release(c, &r);
	/* vivify: one winner, then token_sent; a store clears it */
	m = (struct cache_meta){.vivify = true, .vivify_ttl = 30};
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(m.won && !m.token_sent && r.nbytes == 0 && r.exptime > 0 && r.exptime <= 30);
	cache_release(c, &r);
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(!m.won && m.token_sent);
	cache_release(c, &r);
	CHECK_EQ(set("m2", "fresh", 0, 100), CACHE_STORED);
	m = (struct cache_meta){0};
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(!m.won && !m.token_sent && !r.hit_before);
	cache_release(c, &r);
	/* recache: due when less TTL is left than recache_ttl */
	m = (struct cache_meta){.recache = true, .recache_ttl = 50};
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(!m.won && !m.token_sent);
	cache_release(c, &r);
	cache_time_advance(c, 60);
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(m.won && !m.token_sent);
	cache_release(c, &r);
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(!m.won && m.token_sent);
	cache_release(c, &r);
	/* invalidate: stale, a new CAS id, a fresh token; optional new TTL */
	uint64_t cas0 = 0, cas1 = 0;
	char buf[64];
	CHECK_EQ(get("m2", buf, sizeof buf, NULL, &cas0), CACHE_OK);
	CHECK_EQ(cache_invalidate(c, "m2", 2, cas0 + 1, false, 0), CACHE_EXISTS);
	CHECK_EQ(cache_invalidate(c, "nope", 4, 0, false, 0), CACHE_NOT_FOUND);
	CHECK_EQ(cache_invalidate(c, "m2", 2, cas0, true, 20), CACHE_OK);
	CHECK_EQ(get("m2", buf, sizeof buf, NULL, &cas1), CACHE_OK);
	CHECK(strcmp(buf, "fresh") == 0 && cas1 > cas0);
	m = (struct cache_meta){0};
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(m.stale && m.won && !m.token_sent && r.exptime > 0 && r.exptime <= 20);
	cache_release(c, &r);
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(m.stale && !m.won && m.token_sent);
	cache_release(c, &r);
	/* ms I: an older CAS id stores a stale value keeping exptime and token state */
	uint64_t cas2 = 0;
	CHECK_EQ(cache_cas_invalidating(c, "m2", 2, "old", 3, 0, 500, cas1 + 100, NULL),
		 CACHE_EXISTS);
	CHECK_EQ(cache_cas_invalidating(c, "m2", 2, "old", 3, 0, 500, 1, &cas2), CACHE_STORED);
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(m.stale && m.token_sent && r.exptime > 0 && r.exptime <= 20 && r.cas == cas2);
	cache_release(c, &r);
	CHECK_EQ(cache_cas_invalidating(c, "m2", 2, "new", 3, 0, 0, cas2, NULL), CACHE_STORED);
	CHECK_EQ(cache_mget(c, "m2", 2, &m, &r), CACHE_OK);
	CHECK(!m.stale && !m.token_sent && !m.won && r.exptime == 0);
	cache_release(c, &r);
	CHECK_EQ(cache_cas_invalidating(c, "m3", 2, "x", 1, 0, 0, 5, NULL), CACHE_NOT_FOUND);
}

/* Threads race for each key's token: exactly one wins per item version. */
#define RACE_KEYS 64
#define RACE_THREADS 4
static _Atomic unsigned race_wins[RACE_KEYS];

static void *token_racer(void *arg)
{
	(void)arg;
	for (unsigned k = 0; k < RACE_KEYS; k++) {
		char key[16];
		int n = snprintf(key, sizeof key, "race%u", k);
		struct cache_meta m = {.vivify = true, .vivify_ttl = 0};
		struct cache_ref r;
		CHECK_EQ(cache_mget(c, key, (size_t)n, &m, &r), CACHE_OK);
		CHECK(!(m.won && m.token_sent));
		if (m.won)
			atomic_fetch_add(&race_wins[k], 1);
		cache_release(c, &r);
	}
	return NULL;
}

static void test_meta_race(void)
{
	for (int round = 0; round < 2; round++) {
		for (unsigned k = 0; k < RACE_KEYS; k++)
			atomic_store(&race_wins[k], 0);
		pthread_t th[RACE_THREADS];
		for (unsigned i = 0; i < RACE_THREADS; i++)
			th[i] = test_spawn(token_racer, NULL);
		for (unsigned i = 0; i < RACE_THREADS; i++)
			test_join(th[i]);
		for (unsigned k = 0; k < RACE_KEYS; k++) {
			CHECK_MSG(atomic_load(&race_wins[k]) == 1, "round %d key %u: %u winners",
				  round, k, atomic_load(&race_wins[k]));
			/* round 1 races for the stale items' fresh tokens */
			char key[16];
			int n = snprintf(key, sizeof key, "race%u", k);
			CHECK_EQ(cache_invalidate(c, key, (size_t)n, 0, false, 0), CACHE_OK);
		}
	}
}

int main(int argc, char **argv)
{
	/* below the ctest TIMEOUT (60 s) so that a hang reports itself */
	test_watchdog(50);
	CHECK(argc >= 2 && cache_variant_parse(argv[1], &variant) == 0);
	test_names();
	c = mk(64u << 20, 8);
	test_basic();
	test_refs();
	test_add_replace_concat();
	test_cas();
	test_delete();
	test_incr();
	test_stats();
	test_expiry();
	test_flush();
	test_too_large();
	test_grow();
	test_sweeper_thread();
	test_meta();
	test_meta_race();
	cache_destroy(c);
	test_log("test_cache_ops %s: ok", argv[1]);
	return 0;
}
