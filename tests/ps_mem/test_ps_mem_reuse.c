/*
 * tests/ps_mem/test_ps_mem_reuse.c - <tsync/ps_mem.h>'s safety promise (ParSec (EuroSys
 * 2016) §3.5, ps_free's contract): distinct, aligned objects attributed to their allocator;
 * an object freed deferred is not handed out again while a section that began before its
 * free is open (default, small and per-free-stamped configurations); an explicit
 * ps_mem_reclaim takes everything that has quiesced.
 */
#include "ps_mem_test.h"

/* ---- basics: distinct, aligned, attributed objects ---------------------------------- */
static void check_objects(struct ps_mem *m, size_t size, size_t align, size_t n)
{
	void **p = calloc(n, sizeof *p);
	CHECK(p != NULL);
	for (size_t i = 0; i < n; i++) {
		p[i] = ps_alloc(m);
		CHECK(p[i] != NULL);
		CHECK_MSG((uintptr_t)p[i] % align == 0, "object %p not aligned to %zu", p[i],
			  align);
		CHECK(ps_mem_of(p[i]) == m);
		memset(p[i], (int)(i & 0xff), size);
	}
	for (size_t i = 0; i < n; i++) {
		const unsigned char *b = p[i];
		for (size_t k = 0; k < size; k++)
			CHECK_MSG(b[k] == (i & 0xff), "object %zu overwritten at byte %zu", i, k);
	}
	qsort(p, n, sizeof *p, cmp_ptr);
	for (size_t i = 0; i + 1 < n; i++)
		CHECK_MSG((uintptr_t)p[i + 1] - (uintptr_t)p[i] >= size,
			  "live objects %p and %p overlap (size %zu)", p[i], p[i + 1], size);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.in_use, n);
	for (size_t i = 0; i < n; i++)
		ps_free(m, p[i]);
	s = mstats(m);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.frees, n);
	free(p);
}

static void test_basic(struct ps *ps)
{
	struct ps_mem *m = ps_mem_create(ps, 40, NULL);
	CHECK(m != NULL);
	CHECK(ps_mem_ps(m) == ps);
	CHECK_GE(ps_mem_obj_size(m), 40);
	check_objects(m, 40, 16, test_scale(5000, 4));
	ps_mem_destroy(m);

	static const size_t aligns[] = {8, 16, 64, 256, 4096};
	for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
		struct ps_mem_config c = PS_MEM_CONFIG_INIT;
		c.align = aligns[i];
		m = ps_mem_create(ps, 24, &c);
		CHECK(m != NULL);
		check_objects(m, 24, aligns[i], aligns[i] >= 4096 ? 40 : 700);
		ps_mem_destroy(m);
	}
	struct ps_mem_config c = small_cfg();
	m = ps_mem_create(ps, 100, &c);
	CHECK(m != NULL);
	check_objects(m, 100, 16, 300);
	ps_mem_destroy(m);

	/* a slab size that is a page multiple but no power of two: one 11 KiB object per
	 * three-page slab, each slab its own mapping (check_objects writes every byte) */
	c = small_cfg();
	c.slab_size = 3 * 4096;
	m = ps_mem_create(ps, 11 * 1024, &c);
	CHECK(m != NULL);
	check_objects(m, 11 * 1024, 16, 40);
	struct ps_mem_stats st = mstats(m);
	CHECK_GE(st.peak_slabs, 40); /* one object per slab: 40 live at once */
	/* reclaimed one-object slabs skip the object cache: back to the pool, which keeps
	 * slabs_kept of them and unmaps the rest - no thread holds a whole slab */
	void *big[8];
	for (int i = 0; i < 8; i++)
		CHECK((big[i] = ps_alloc(m)) != NULL);
	for (int i = 0; i < 8; i++)
		ps_free(m, big[i]);
	ps_mem_reclaim(m); /* what the frees did not reclaim themselves; then pool_shrink */
	st = mstats(m);
	CHECK_EQ(st.in_use, 0);
	CHECK_EQ(st.pending, 0);
	CHECK_EQ(st.cached, 0);
	CHECK_EQ(st.slabs, c.slabs_kept);
	ps_mem_destroy(m);

	/* two allocators on one ps: objects know where they came from */
	struct ps_mem *a = ps_mem_create(ps, 32, NULL), *b = ps_mem_create(ps, 32, NULL);
	CHECK(a && b);
	void *x = ps_alloc(a), *y = ps_alloc(b);
	CHECK(x && y && x != y);
	CHECK(ps_mem_of(x) == a && ps_mem_of(y) == b);
	ps_free(b, y);
	ps_free(a, x);
	ps_mem_destroy(a);
	ps_mem_destroy(b);
}

/* ---- reuse only after quiescence ------------------------------------------------------ */
static bool in_set(void *const *set, size_t n, const void *p)
{
	return bsearch(&p, set, n, sizeof *set, cmp_ptr) != NULL;
}

static void test_reuse_after_quiescence(struct ps *ps, const struct ps_mem_config *cfg)
{
	struct ps_mem *m = ps_mem_create(ps, 48, cfg);
	CHECK(m != NULL);
	const size_t K = 300, MORE = 3000;
	void **freed = calloc(K, sizeof *freed), **live = calloc(MORE, sizeof *live);
	CHECK(freed && live);
	/* warm up: some objects through the cache */
	for (size_t i = 0; i < K; i++)
		freed[i] = ps_alloc(m);
	for (size_t i = 0; i < K; i++)
		ps_free(m, freed[i]);
	wait_past(tsync_now_ordered(), S);
	ps_mem_reclaim(m);

	struct holder r;
	holder_start(&r, ps);
	holder_do(&r, HOLD_ENTER);
	struct ps_mem_stats s0 = mstats(m);
	for (size_t i = 0; i < K; i++)
		CHECK((freed[i] = ps_alloc(m)) != NULL);
	for (size_t i = 0; i < K; i++)
		ps_free(m, freed[i]);
	qsort(freed, K, sizeof *freed, cmp_ptr);
	struct ps_mem_stats s1 = mstats(m);
	/* every one of them waits for the reader; only objects already pending before its
	 * enter (freed within the skew bound of the last scan) may have been reclaimed */
	CHECK_GE(s1.pending, K);
	CHECK_EQ(s1.reclaimed - s0.reclaimed, s0.pending + K - s1.pending);
	CHECK_LE(s1.reclaimed - s0.reclaimed, s0.pending);
	ps_mem_reclaim(m);
	CHECK_GE(mstats(m).pending, K);
	for (size_t i = 0; i < MORE; i++) {
		CHECK((live[i] = ps_alloc(m)) != NULL);
		CHECK_MSG(!in_set(freed, K, live[i]),
			  "object %p reused while a reader that entered before its free is inside",
			  live[i]);
	}
	struct ps_mem_stats s2 = mstats(m);
	CHECK_EQ(s2.pending, s1.pending);
	CHECK_GT(s2.slab_grows, s1.slab_grows); /* fresh memory instead of waiting */
	test_sleep_ms(50);
	holder_do(&r, HOLD_EXIT);
	CHECK_EQ(ps_mem_reclaim(m), s2.pending);
	struct ps_mem_stats s3 = mstats(m);
	CHECK_EQ(s3.pending, 0);
	CHECK_EQ(s3.reclaimed, s2.reclaimed + s2.pending);
	CHECK_MSG(s3.max_wait_ticks >= tsync_ns_to_ticks(40000000),
		  "max_wait_ticks %" PRIu64 " after a 50 ms wait", s3.max_wait_ticks);
	/* now they are reused */
	size_t reused = 0;
	void *extra[64];
	for (size_t i = 0; i < 64; i++) {
		CHECK((extra[i] = ps_alloc(m)) != NULL);
		reused += in_set(freed, K, extra[i]);
	}
	CHECK_MSG(reused > 0, "no freed object reused after quiescence");
	for (size_t i = 0; i < 64; i++)
		ps_free(m, extra[i]);
	for (size_t i = 0; i < MORE; i++)
		ps_free(m, live[i]);

	/* A section whose start is more than S after the frees does not hold them, when
	 * every free is stamped at once (stamp_batch 1). With batched stamps only the frees
	 * since the last stamp (fewer than stamp_batch, here < K) may be held, until it
	 * exits. A GENERAL section's start is the domain clock word (<tsync/ps.h>), which a
	 * quiescence computation for a time t moves past t + S: one is made after the
	 * frees and S, before the reader enters. */
	const bool precise = cfg && cfg->stamp_batch == 1;
	for (size_t i = 0; i < K; i++)
		CHECK((freed[i] = ps_alloc(m)) != NULL);
	for (size_t i = 0; i < K; i++)
		ps_free(m, freed[i]);
	wait_past(tsync_now_ordered(), S);
	CHECK(ps_quiesce(ps, tsync_now_ordered()));
	holder_do(&r, HOLD_ENTER);
	ps_mem_reclaim(m);
	if (precise)
		CHECK_MSG(mstats(m).pending == 0,
			  "a reader that entered after the frees holds them");
	else
		CHECK_MSG(mstats(m).pending < K,
			  "a reader that entered after %zu frees holds "
			  "%" PRIu64 " of them",
			  K, mstats(m).pending);
	holder_do(&r, HOLD_EXIT);
	wait_past(tsync_now_ordered(), S);
	ps_mem_reclaim(m);
	CHECK_MSG(mstats(m).pending == 0, "frees held after the reader exited");

	/* destroy with objects still pending (LeakSanitizer checks the slabs go) */
	holder_do(&r, HOLD_ENTER);
	for (size_t i = 0; i < K; i++)
		CHECK((freed[i] = ps_alloc(m)) != NULL);
	for (size_t i = 0; i < K; i++)
		ps_free(m, freed[i]);
	CHECK_EQ(mstats(m).pending, K);
	holder_do(&r, HOLD_EXIT);
	holder_stop(&r, HOLD_QUIT);
	ps_mem_destroy(m);
	free(freed);
	free(live);
}

/* ---- an explicit reclaim takes everything that has quiesced ------------------------ */

/* A read barrier that another thread made after our frees serves only the frees more than
 * S before it (it dates what it saw no later than itself). ps_mem_reclaim must still
 * collect the whole queue once every free is more than S in the past and nobody is
 * inside a section: it asks for a fresh reading, not only for its head's free time. With
 * a large skew bound (unit_ps_mem_reuse_large_skew) the peer's barrier falls within S of the
 * later frees, the case this hunts; with a small one it passes however the code decides. */
static void test_reclaim_all(struct ps *ps)
{
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.accounting = PS_MEM_ACCOUNT_EXACT;
	c.stamp_batch = 1;                     /* each free stamped when it is made */
	c.reclaim_period_ns = 600000000000ull; /* ps_free leaves the queue to ps_mem_reclaim */
	struct ps_mem *m = ps_mem_create(ps, 48, &c);
	CHECK(m != NULL);
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_REGISTER);
	CHECK_EQ(h.ret, 0);
	for (int round = 0; round < 4; round++) {
		void *o[8];
		for (int i = 0; i < 8; i++)
			CHECK((o[i] = ps_alloc(m)) != NULL);
		ps_free(m, o[0]);
		wait_past(tsync_now_ordered(), S); /* the head is more than S older than the rest */
		for (int i = 1; i < 8; i++)
			ps_free(m, o[i]);
		/* ps_free reclaims once per reclaim_period_ns: only the very first free could
		 * have proven anything, and only its own object */
		CHECK_GE(mstats(m).pending, round == 0 ? 7 : 8);
		/* the peer's barrier: nobody is inside, so its quiescence needs one */
		h.t = tsync_now_ordered();
		holder_do(&h, HOLD_QUIESCE);
		CHECK_EQ(h.ret, 1);
		wait_past(tsync_now_ordered(), 2 * S);
		ps_mem_reclaim(m);
		CHECK_MSG(mstats(m).pending == 0,
			  "round %d: ps_mem_reclaim left %llu of 8 quiesced frees pending", round,
			  (unsigned long long)mstats(m).pending);
	}
	holder_stop(&h, HOLD_QUIT);
	ps_mem_destroy(m);
}

static void test_reuse_all(struct ps *ps)
{
	test_basic(ps);
	test_reuse_after_quiescence(ps, NULL);
	struct ps_mem_config small = small_cfg();
	test_reuse_after_quiescence(ps, &small);
	struct ps_mem_config precise = PS_MEM_CONFIG_INIT;
	precise.stamp_batch = 1;
	test_reuse_after_quiescence(ps, &precise);
	small.stamp_batch = 1;
	test_reuse_after_quiescence(ps, &small);
	test_reclaim_all(ps);
}

PS_MEM_TEST_MAIN("reuse", test_reuse_all)
