/*
 * tests/rt/test_reclaimer_both.c - PS_MEM_RECLAIM_BOTH (<tsync/ps_mem.h>, RT-SMR (RTAS
 * 2018) §V-C): the freeing thread collects inline what has quiesced, and a backlog it could
 * not clear (held by an open section) goes to σ.
 */
#include "reclaimer_test.h"

/* BOTH: a backlog the owner could not clear goes to σ. */
static void test_both(void)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_BOTH, PS_MEM_ACCOUNT_EXACT, NULL);
	struct ps_reclaimer *r = mkr(PS_RECLAIMER_MANUAL);
	CHECK_EQ(ps_reclaimer_attach(r, m), 0);
	free_n(m, 50); /* collected inline (the last few wait for the skew bound) */
	wait_past_skew(ps);
	free_n(m, 1); /* collects every earlier one: RT reclaims all that has quiesced */
	CHECK_LE(mstats_zg(m).pending, 1);
	CHECK_EQ(mstats_zg(m).handoff, 0);
	uint64_t p0 = mstats_zg(m).pending;
	struct holder h;
	hold(&h, ps);
	free_n(m, 50);
	struct ps_mem_stats s = mstats_zg(m);
	CHECK_GE(s.pending, 50); /* held by the section (p0 older ones may have gone) */
	CHECK_LE(s.pending, 50 + p0);
	CHECK_GT(s.handoff, 0);
	CHECK_EQ(ps_reclaimer_run(r), 0);
	release(&h);
	wait_past_skew(ps); /* RT's point is the scan's start less S */
	size_t n = ps_reclaimer_run(r);
	CHECK_GT(n, 0);
	ps_mem_reclaim(m);
	s = mstats_zg(m);
	CHECK_MSG(s.pending == 0, "pending %llu handoff %llu task %llu run %zu",
		  (unsigned long long)s.pending, (unsigned long long)s.handoff,
		  (unsigned long long)s.task_queued, n);
	ps_reclaimer_stop(r);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

TEST_MAIN(100, "test_reclaimer: both", test_both)
