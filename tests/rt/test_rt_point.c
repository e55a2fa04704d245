/*
 * tests/rt/test_rt_point.c - RT-ParSec's exact quiescence point (RT-SMR (RTAS 2018) Fig. 8,
 * PS_POLICY_RT): the earliest enter of a section still open - S - 1, moving at once when a
 * reader leaves.
 */
#include "holder.h"
#include "rt_test.h"

/* ---- RT-ParSec: the exact point ---------------------------------------------------- */
static void test_rt_point(void)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	const uint64_t K = ps_skew_ticks(ps);
	struct holder a, b;
	holder_start(&a, ps);
	holder_start(&b, ps);
	holder_do(&a, HOLD_ID);
	holder_do(&b, HOLD_ID);

	/* nobody inside: the point follows the clock */
	uint64_t t0 = tsync_now();
	uint64_t q0 = ps_quiesce_time(ps);
	CHECK_GE(q0 + 2 * K + 1, t0);

	holder_do(&a, HOLD_ENTER);
	wait_past(ps, tsync_now());
	holder_do(&b, HOLD_ENTER);
	struct ps_stall st;
	CHECK_EQ(ps_stall_report(ps, NULL, &st), 0);
	CHECK_EQ_I(st.tid, a.id); /* the earliest enter */
	CHECK_EQ(st.inside, 2);
	uint64_t ea = st.enter;
	/* exactly the earliest enter time, less the skew bound: no cache, no margin */
	uint64_t q = ps_quiesce_time(ps);
	CHECK_EQ(q, ea - K - 1);
	CHECK_EQ(ps_quiescence_point(ps), q);
	CHECK(ps_quiesce(ps, q));
	CHECK(!ps_quiesce(ps, ea));
	CHECK(!ps_quiesce(ps, tsync_now_ordered()));

	/* a leaves: the point moves to b's enter at once */
	holder_do(&a, HOLD_EXIT);
	CHECK_EQ(ps_stall_report(ps, NULL, &st), 0);
	CHECK_EQ_I(st.tid, b.id);
	uint64_t eb = st.enter;
	CHECK_GT(eb, ea);
	CHECK_EQ(ps_quiesce_time(ps), eb - K - 1);
	CHECK(ps_quiesce(ps, ea));

	/* the caller's own section counts */
	holder_do(&b, HOLD_EXIT);
	ps_enter(ps);
	CHECK_EQ(ps_stall_report(ps, NULL, &st), 0);
	CHECK_EQ_I(st.tid, tsync_thread_id());
	CHECK_EQ(ps_quiesce_time(ps), st.enter - K - 1);
	ps_exit(ps);
	wait_past(ps, eb);
	uint64_t t1 = tsync_now();
	uint64_t q1 = ps_quiesce_time(ps);
	CHECK_GT(q1, eb);
	CHECK_GE(q1 + 2 * K + 1, t1);
	CHECK_EQ(ps_stall_report(ps, NULL, &st), 0);
	CHECK_EQ_I(st.tid, -1);
	CHECK_EQ(st.inside, 0);

	holder_stop(&a, HOLD_QUIT);
	holder_stop(&b, HOLD_QUIT);
	ps_destroy(ps);
}

TEST_MAIN(100, "test_rt: rt point", test_rt_point)
