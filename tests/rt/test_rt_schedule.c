/*
 * tests/rt/test_rt_schedule.c - the reclamation schedule q (struct
 * ps_mem_config.reclaim_period_ns, RT-SMR (RTAS 2018) §V) and its reclaim callback;
 * ps_mem_collect, and the stall summary of a GENERAL instance without options.
 */
#include "holder.h"
#include "rt_test.h"

/* ---- the reclamation schedule ------------------------------------------------------- */
static _Atomic uint64_t n_reclaims, n_quiesce, n_collected;
static void count_reclaim(struct ps_mem *m, const struct ps_mem_reclaim_info *i, void *arg)
{
	(void)m;
	(void)arg;
	atomic_fetch_add(&n_reclaims, 1);
	atomic_fetch_add(&n_collected, i->collected);
	if (i->quiesced)
		atomic_fetch_add(&n_quiesce, 1);
}

static void test_schedule(void)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	const uint64_t K = ps_skew_ticks(ps);
	/* q = 0: every free reclaims everything quiesced (Fig. 8: not a batch) */
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.reclaim_fn = count_reclaim;
	struct ps_mem *m = ps_mem_create(ps, 64, &mc);
	CHECK(m != NULL);
	void *o[100];
	for (int i = 0; i < 100; i++)
		o[i] = ps_alloc(m);
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ENTER);
	for (int i = 0; i < 60; i++)
		ps_free(m, o[i]);
	CHECK_EQ(mstats(m).pending, 60); /* all held back by h */
	holder_do(&h, HOLD_EXIT);
	wait_past(ps, tsync_now());
	uint64_t t;
	ps_free(m, o[60]); /* one free collects all 60 at once */
	CHECK_LE(mstats(m).pending, 1);
	CHECK_GE(mstats(m).reclaimed, 60);
	for (int i = 61; i < 100; i++) {
		t = tsync_now();
		while (tsync_now() < t + 2 * K + 2)
			;
		ps_free(m, o[i]);
		CHECK_LE(mstats(m).pending, 1);
	}
	ps_mem_destroy(m);

	/* q = 200 ms: frees within a period only queue */
	mc.reclaim_period_ns = 200000000;
	m = ps_mem_create(ps, 64, &mc);
	CHECK(m != NULL);
	for (int i = 0; i < 100; i++)
		o[i] = ps_alloc(m);
	atomic_store(&n_quiesce, 0);
	atomic_store(&n_reclaims, 0);
	uint64_t t0 = test_now_ns();
	ps_free(m, o[0]); /* the first reclamation is due at once */
	for (int i = 1; i < 50; i++)
		ps_free(m, o[i]);
	uint64_t t1 = test_now_ns();
	if (t1 - t0 < 150000000) { /* not preempted for most of a period */
		CHECK_LE(atomic_load(&n_reclaims), 1);
		CHECK_GE(mstats(m).pending, 49);
	}
	test_sleep_ms(210);
	ps_free(m, o[50]); /* due again: collects everything quiesced */
	CHECK_LE(mstats(m).pending, 1);
	CHECK_GE(atomic_load(&n_quiesce), 1);
	/* ps_mem_reclaim is not subject to the schedule */
	for (int i = 51; i < 100; i++)
		ps_free(m, o[i]);
	t = tsync_now();
	while (tsync_now() < t + 2 * K + 2)
		;
	ps_mem_reclaim(m);
	CHECK_EQ(mstats(m).pending, 0);
	holder_stop(&h, HOLD_QUIT);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

/* ---- ps_mem_collect, and the stall summary of a GENERAL instance without options ---- */
static void test_collect_and_general_stall(void)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.reclaim_period_ns = 10000000000ull; /* frees never reclaim after the first */
	mc.reclaim_fn = count_reclaim;
	struct ps_mem *m = ps_mem_create(ps, 64, &mc);
	CHECK(m != NULL);
	void *o[16];
	for (int i = 0; i < 16; i++)
		o[i] = ps_alloc(m);
	for (int i = 0; i < 10; i++)
		ps_free(m, o[i]);
	wait_past(ps, tsync_now());
	CHECK_EQ(ps_mem_collect(m), 0); /* no point computed since those frees */
	ps_quiesce_time(ps);
	atomic_store(&n_quiesce, 0);
	const uint64_t queued = mstats(m).pending;
	CHECK_GE(queued, 9); /* the first free's own reclamation may have taken o[0] */
	CHECK_EQ(ps_mem_collect(m), queued);
	CHECK_EQ(mstats(m).pending, 0);
	CHECK_EQ(atomic_load(&n_quiesce), 0); /* collected without computing quiescence */
	for (int i = 10; i < 16; i++)
		ps_free(m, o[i]);
	CHECK_EQ(ps_mem_collect(m), 0); /* freed after the point */
	CHECK_EQ(mstats(m).pending, 6);
	ps_mem_destroy(m);
	ps_destroy(ps);

	/* GENERAL, default ps_mem (the foundation's reclamation path) */
	ps = mkps(PS_POLICY_GENERAL, 0);
	m = ps_mem_create(ps, 64, NULL);
	CHECK(m != NULL);
	void *g[48];
	for (int i = 0; i < 48; i++)
		g[i] = ps_alloc(m);
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ID);
	holder_do(&h, HOLD_ENTER);
	for (int i = 0; i < 48; i++)
		ps_free(m, g[i]);
	struct ps_stall st;
	CHECK_EQ(ps_stall_report(ps, m, &st), 0);
	CHECK_EQ_I(st.tid, h.id);
	/* the last free stamps (48 = 3 x stamp_batch) and its scan fails on h's section */
	CHECK_EQ(st.waiting, 48);
	CHECK_EQ(st.pending, 48);
	CHECK_GT(st.oldest_pending_ticks, 0);
	holder_do(&h, HOLD_EXIT);
	wait_past(ps, tsync_now());
	CHECK_EQ(ps_mem_reclaim(m), 48);
	CHECK_EQ(ps_stall_report(ps, m, &st), 0);
	CHECK_EQ_I(st.tid, -1);
	CHECK_EQ(st.waiting, 0);
	CHECK_EQ(st.oldest_pending_ticks, 0);
	holder_stop(&h, HOLD_QUIT);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

static void test_schedule_and_collect(void)
{
	test_schedule();
	test_collect_and_general_stall();
}

TEST_MAIN(100, "test_rt: schedule, collect and general stall", test_schedule_and_collect)
