/*
 * tests/rt/test_rt_counters.c - exact accounting (PS_MEM_ACCOUNT_EXACT, struct
 * ps_mem_stats) under GENERAL, RT and TEMPORAL: live, pending and freed counters and their
 * peaks exact, the stall report and the pending threshold's callback.
 */
#include "holder.h"
#include "rt_test.h"

/* ---- exact counters ---------------------------------------------------------------------- */
static _Atomic uint64_t thr_calls, thr_last;
static void on_threshold(struct ps_mem *m, uint64_t pending, void *arg)
{
	(void)m;
	CHECK(arg == &thr_calls);
	atomic_fetch_add(&thr_calls, 1);
	atomic_store(&thr_last, pending);
}

struct seq_arg {
	struct ps_mem *m;
	int n;
};
static void alloc_free_n(void *p)
{
	struct seq_arg *a = p;
	void *o[64];
	for (int i = 0; i < a->n; i++)
		o[i] = ps_alloc(a->m);
	for (int i = 0; i < a->n; i++)
		ps_free(a->m, o[i]);
}

struct churn_arg {
	struct ps_mem *m;
	test_barrier *b;
};
static void *churn(void *p)
{
	struct churn_arg *a = p;
	void *o[10];
	test_barrier_wait(a->b);
	for (int r = 0; r < (int)test_scale(20000, 20); r++) {
		for (int i = 0; i < 10; i++)
			o[i] = ps_alloc(a->m);
		for (int i = 0; i < 10; i++)
			ps_free(a->m, o[i]);
	}
	ps_mem_reclaim(a->m);
	return NULL;
}

static void test_counters(int policy)
{
	struct ps *ps = mkps(policy, policy == PS_POLICY_TEMPORAL ? 200000000 : 0);
	const uint64_t K = ps_skew_ticks(ps), G = ps_grace_ticks(ps);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.accounting = PS_MEM_ACCOUNT_EXACT; /* default for RT/TEMPORAL, asked for GENERAL */
	mc.pending_threshold = 10;
	mc.pending_fn = on_threshold;
	mc.pending_arg = &thr_calls;
	struct ps_mem *m = ps_mem_create(ps, 64, &mc);
	CHECK(m != NULL);
	atomic_store(&thr_calls, 0);
	void *o[130];
	for (int i = 0; i < 100; i++)
		o[i] = ps_alloc(m);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.exact, 1);
	CHECK_EQ(s.live, 100);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.peak_live, 100);
	CHECK_EQ(s.peak_pending, 0);
	CHECK_EQ(s.peak_footprint, 100);
	const uint64_t cap = s.freed + s.live + s.pending;
	CHECK_GE(cap, 100);

	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ID);
	holder_do(&h, HOLD_ENTER);
	/* GENERAL, RT: the holder's section keeps every free pending. TEMPORAL: the grace
	 * period does (200 ms): a free at or after f0 can be collected only once now passes
	 * f0 + G + S, so the figures are exact while tsync_now() <= f0 + G; a test thread
	 * descheduled that long broke the policy's contract itself, and then only what
	 * collection cannot change is checked */
	uint64_t f0 = tsync_now();
	for (int i = 0; i < 40; i++)
		ps_free(m, o[i]);
	uint64_t f1 = tsync_now();
	s = mstats(m);
	bool exact = policy != PS_POLICY_TEMPORAL || tsync_now() <= f0 + G;
	CHECK_EQ(s.live, 60);
	CHECK_EQ(s.frees, 40);
	CHECK_EQ(s.pending + s.reclaimed, 40);
	CHECK_EQ(s.peak_live, 100);
	CHECK_EQ(s.peak_footprint, 100);
	CHECK_EQ(s.freed + s.live + s.pending, cap);
	if (exact) {
		CHECK_EQ(s.pending, 40);
		CHECK_EQ(s.peak_pending, 40);
		CHECK_EQ(atomic_load(&thr_calls), 1); /* crossed 10 once */
		CHECK_EQ(atomic_load(&thr_last), 10);
	}
	if (policy == PS_POLICY_RT) {
		struct ps_stall st;
		CHECK_EQ(ps_stall_report(ps, m, &st), 0);
		CHECK_EQ_I(st.tid, h.id);
		CHECK_EQ(st.waiting, 40);
		CHECK_EQ(st.pending, 40);
		CHECK_GT(st.section_ns, 0);
		CHECK_GT(st.oldest_pending_ticks, 0);
	}
	for (int i = 100; i < 130; i++)
		o[i] = ps_alloc(m);
	s = mstats(m);
	exact = exact && (policy != PS_POLICY_TEMPORAL || tsync_now() <= f0 + G);
	CHECK_EQ(s.live, 90);
	CHECK_EQ(s.peak_live, 100);
	CHECK_LE(s.peak_footprint, 130);
	if (exact)
		CHECK_EQ(s.peak_footprint, 130);
	const uint64_t reclaimed_before = s.reclaimed;

	holder_do(&h, HOLD_EXIT);
	if (policy == PS_POLICY_TEMPORAL)
		test_sleep_ns(tsync_ticks_to_ns(G + 2 * K) + 1000000);
	else
		wait_past(ps, tsync_now());
	uint64_t r0 = tsync_now();
	size_t collected = ps_mem_reclaim(m);
	uint64_t r1 = tsync_now();
	CHECK_EQ(collected, 40 - reclaimed_before);
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.reclaimed, 40);
	CHECK_LE(s.peak_pending, 40);
	CHECK_LE(s.peak_footprint, 130);
	if (exact) {
		CHECK_EQ(collected, 40);
		CHECK_EQ(s.peak_pending, 40);
		CHECK_EQ(s.peak_footprint, 130);
	}
	/* the longest wait: from the first free's stamp to the reclamation (one freed by
	 * f1 was collected at or after r0 if this reclamation collected any) */
	CHECK_LE(s.max_wait_ticks, r1 - f0 + K);
	if (collected > 0)
		CHECK_GE(s.max_wait_ticks + K, r0 - f1);

	/* crossing again after falling below (TEMPORAL: unless 15 frees outlast G) */
	uint64_t calls0 = atomic_load(&thr_calls), g0 = tsync_now();
	holder_do(&h, HOLD_ENTER);
	for (int i = 40; i < 55; i++)
		ps_free(m, o[i]);
	if (policy != PS_POLICY_TEMPORAL || tsync_now() <= g0 + G)
		CHECK_EQ(atomic_load(&thr_calls), calls0 + 1);
	holder_do(&h, HOLD_EXIT);
	holder_stop(&h, HOLD_QUIT);
	for (int i = 55; i < 130; i++)
		ps_free(m, o[i]);
	ps_mem_destroy(m);

	/* peaks are of the whole instance, not sums of per-thread peaks: two threads, one
	 * after the other, each holding 50 live objects -> peak_live 50 */
	mc = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	mc.accounting = PS_MEM_ACCOUNT_EXACT;
	m = ps_mem_create(ps, 64, &mc);
	CHECK(m != NULL);
	struct seq_arg sa = {m, 50};
	struct holder x, y;
	holder_start(&x, ps);
	holder_start(&y, ps);
	x.fn = alloc_free_n;
	x.arg = &sa;
	y.fn = alloc_free_n;
	y.arg = &sa;
	ps_enter(ps); /* keeps every free pending, whatever the policy's timing */
	holder_do(&x, HOLD_CALL);
	holder_do(&y, HOLD_CALL);
	s = mstats(m);
	CHECK_EQ(s.live, 0);
	if (policy != PS_POLICY_TEMPORAL) {
		CHECK_EQ(s.pending, 100);
		CHECK_EQ(s.peak_pending, 100);
		CHECK_EQ(s.peak_footprint, 100);
	}
	CHECK_EQ(s.peak_live, 50);
	ps_exit(ps);
	holder_stop(&x, HOLD_QUIT);
	holder_stop(&y, HOLD_QUIT);
	s = mstats(m);
	CHECK_EQ(s.frees, s.reclaimed + s.pending);
	ps_mem_destroy(m);

	/* concurrent churn: each thread holds at most 10 live objects at once */
	m = ps_mem_create(ps, 64, &mc);
	CHECK(m != NULL);
	test_barrier b;
	test_barrier_init(&b, 2);
	struct churn_arg ca = {m, &b};
	pthread_t t1 = test_spawn(churn, &ca), t2 = test_spawn(churn, &ca);
	test_join(t1);
	test_join(t2);
	test_barrier_destroy(&b);
	s = mstats(m);
	CHECK_EQ(s.live, 0);
	CHECK_GE(s.peak_live, 10);
	CHECK_LE(s.peak_live, 20);
	CHECK_EQ(s.frees, s.reclaimed + s.pending);
	CHECK_EQ(s.allocs, 2 * 10 * test_scale(20000, 20));
	ps_mem_destroy(m);
	ps_destroy(ps);
}

static void test_counters_all(void)
{
	test_counters(PS_POLICY_GENERAL);
	test_counters(PS_POLICY_RT);
	test_counters(PS_POLICY_TEMPORAL);
}

TEST_MAIN(100, "test_rt: counters", test_counters_all)
