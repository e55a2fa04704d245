/*
 * tests/ps_mem/test_ps_mem_stats.c - <tsync/ps_mem.h>'s counters (struct ps_mem_stats):
 * exact when quiet, slabs growing and returned to the system, and Prudence (ASPLOS 2016)'s
 * measures (cache hits and misses, churn, fragmentation).
 */
#include "ps_mem_test.h"

/* ---- exact counters, slabs growing and shrinking ------------------------------------ */
static void test_exact_stats(struct ps *ps)
{
	struct ps_mem_config c = small_cfg();
	struct ps_mem *m = ps_mem_create(ps, 64, &c);
	CHECK(m != NULL);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.allocs, 0);
	CHECK_EQ(s.frees, 0);
	CHECK_EQ(s.reclaimed, 0);
	CHECK_EQ(s.remote_frees, 0);

	const size_t n = 2000;
	void **p = calloc(n, sizeof *p);
	CHECK(p != NULL);
	for (size_t i = 0; i < n; i++)
		CHECK((p[i] = ps_alloc(m)) != NULL);
	s = mstats(m);
	CHECK_EQ(s.allocs, n);
	CHECK_EQ(s.in_use, n);
	CHECK_EQ(s.frees, 0);
	CHECK_LE(s.cached, c.cache_size);
	CHECK_GE(s.slab_grows * 4096, n * 64);
	CHECK_GE(s.cache_refills, 1);
	uint64_t grown = s.slab_grows;

	for (size_t i = 0; i < n; i++)
		ps_free(m, p[i]);
	s = mstats(m);
	CHECK_EQ(s.frees, n);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.pending + s.reclaimed, n); /* freed: waiting or reclaimed, nothing lost */
	/* objects freed within the skew bound of a scan cannot be proven quiescent by it */
	wait_past(tsync_now_ordered(), S);
	size_t got = ps_mem_reclaim(m);
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.reclaimed, n);
	CHECK_LE(got, n);
	CHECK_LE(s.cached, c.cache_size);
	/* the default policies: past a full cache the merge sends the reclaimed objects to
	 * their slabs, without a flush (Prudence (ASPLOS 2016) Algorithm 1, lines 64-65) */
	CHECK_EQ(s.cache_flushes, 0);
	CHECK_MSG(s.slab_shrinks > 0,
		  "no slab returned to the system after freeing %zu objects "
		  "(%" PRIu64 " slabs, slabs_kept %u)",
		  n, s.slabs, c.slabs_kept);
	CHECK_MSG(s.slabs <= c.slabs_kept + c.cache_size + 2,
		  "%" PRIu64 " slabs kept after freeing everything (grown %" PRIu64
		  ", slabs_kept %u, cache %u)",
		  s.slabs, grown, c.slabs_kept, c.cache_size);
	CHECK_GE(s.peak_slabs, grown);

	/* the caller's own section holds its own frees back */
	ps_enter(ps);
	void *x = ps_alloc(m);
	CHECK(x != NULL);
	ps_free(m, x);
	s = mstats(m);
	CHECK_EQ(s.pending, 1);
	CHECK_EQ(ps_mem_reclaim(m), 0);
	for (int i = 0; i < 10; i++) { /* more traffic does not reclaim it either */
		void *y = ps_alloc(m);
		CHECK(y != NULL && y != x);
		ps_free(m, y);
	}
	CHECK_EQ(mstats(m).pending, 11);
	ps_exit(ps);
	wait_past(tsync_now_ordered(), S);
	CHECK_EQ(ps_mem_reclaim(m), 11);
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.allocs, n + 11);
	CHECK_EQ(s.frees, n + 11);
	CHECK_EQ(s.reclaimed, n + 11);

	/* unregistering hands the object cache back */
	CHECK_EQ(tsync_thread_unregister(), 0);
	s = mstats(m);
	CHECK_EQ(s.cached, 0);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(tsync_thread_register(), 0);
	/* and everything still works */
	x = ps_alloc(m);
	CHECK(x != NULL);
	ps_free(m, x);
	CHECK_EQ(mstats(m).in_use, 0);
	free(p);
	ps_mem_destroy(m);
}

/* ---- Prudence's measures: cache hits and misses, churn, fragmentation -------------- */
static void test_measures(struct ps *ps)
{
	struct ps_mem_config c = small_cfg(); /* cache 4: a refill takes 2 */
	c.prudence = PS_MEM_PRUDENCE_NONE;    /* (the partial refill would take 4) */
	struct ps_mem *m = ps_mem_create(ps, 100, &c);
	CHECK(m != NULL);
	void *p[3];
	for (int i = 0; i < 3; i++)
		CHECK((p[i] = ps_alloc(m)) != NULL);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.allocs, 3);
	CHECK_EQ(s.cache_misses, 2); /* the 1st and 3rd found the cache empty */
	CHECK_EQ(s.cache_hits, 1);
	CHECK_EQ(s.cache_refills, 2);
	CHECK_EQ(s.slab_bytes, s.slabs * 4096);
	CHECK_EQ(s.live_bytes, 3 * ps_mem_obj_size(m));
	CHECK_EQ(s.cache_churn,
		 s.cache_refills < s.cache_flushes ? s.cache_refills : s.cache_flushes);
	/* immediate frees overflow the cache: a flush, so one refill/flush pair */
	for (int i = 0; i < 3; i++)
		ps_free_now(m, p[i]);
	void *q[8];
	for (int i = 0; i < 8; i++)
		CHECK((q[i] = ps_alloc(m)) != NULL);
	for (int i = 0; i < 8; i++)
		ps_free_now(m, q[i]);
	s = mstats(m);
	CHECK_GE(s.cache_flushes, 1);
	CHECK_GE(s.cache_churn, 1);
	CHECK_EQ(s.live_bytes, 0);
	CHECK_EQ(s.slab_churn, s.slab_grows < s.slab_shrinks ? s.slab_grows : s.slab_shrinks);
	ps_mem_destroy(m);
}

static void test_stats_all(struct ps *ps)
{
	test_exact_stats(ps);
	test_measures(ps);
}

PS_MEM_TEST_MAIN("stats", test_stats_all)
