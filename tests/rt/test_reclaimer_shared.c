/*
 * tests/rt/test_reclaimer_shared.c - one σ shared by two ps_mem (RT-SMR (RTAS 2018) Fig.
 * 13's RT-PARSEC-single), on one ps and on two, and the stop/destroy orderings of
 * <tsync/ps_reclaimer.h>.
 */
#include "reclaimer_test.h"

/* ---- one σ for two ps_mem (RT-PARSEC-single), stop/destroy orderings --------------- */

static void test_shared(bool same_ps)
{
	struct ps *ps1 = mkps(PS_POLICY_RT, 0), *ps2 = same_ps ? ps1 : mkps(PS_POLICY_GENERAL, 0);
	struct ps_mem *a = mkmem(ps1, PS_MEM_RECLAIM_TASK, PS_MEM_ACCOUNT_EXACT, NULL);
	struct ps_mem *b = mkmem(ps2, PS_MEM_RECLAIM_TASK, PS_MEM_ACCOUNT_EXACT, NULL);
	struct ps_mem *c = mkmem(ps1, PS_MEM_RECLAIM_INLINE, PS_MEM_ACCOUNT_AUTO, NULL);
	struct ps_reclaimer *r = mkr(PS_RECLAIMER_MANUAL), *r2 = mkr(PS_RECLAIMER_MANUAL);
	CHECK_ERRNO(ps_reclaimer_attach(r, c), -1, EINVAL); /* INLINE */
	CHECK_ERRNO(ps_reclaimer_attach(NULL, a), -1, EINVAL);
	CHECK_EQ(ps_reclaimer_attach(r, a), 0);
	CHECK_EQ(ps_reclaimer_attach(r, b), 0);
	CHECK_ERRNO(ps_reclaimer_attach(r2, a), -1, EBUSY); /* one σ per ps_mem */
	CHECK_ERRNO(ps_reclaimer_detach(r2, a), -1, ENOENT);
	CHECK_EQ(rstats(r).attached, 2);
	free_n(a, 100);
	free_n(b, 50);
	wait_past_skew(ps1);
	wait_past_skew(ps2);
	CHECK_EQ(ps_reclaimer_run(r), 150);
	struct ps_reclaimer_stats rs = rstats(r);
	CHECK_EQ(rs.activations, 1);
	CHECK_EQ(rs.collected, 150);
	CHECK_EQ(rs.max_collected, 150);
	CHECK_GT(rs.max_activation_ns, 0);
	CHECK_LE(rs.max_quiesce_ns, rs.max_activation_ns);
	CHECK_EQ(mstats_zg(a).pending + mstats_zg(b).pending, 0);

	/* destroy one while attached: it detaches (collecting), σ goes on with the other */
	free_n(a, 10);
	ps_mem_destroy(a);
	CHECK_EQ(rstats(r).attached, 1);
	free_n(b, 10);
	wait_past_skew(ps2);
	CHECK_EQ(ps_reclaimer_run(r), 10);
	/* a detached m continues INLINE; a σ can be attached again */
	CHECK_EQ(ps_reclaimer_detach(r, b), 0);
	free_n(b, 10);
	CHECK_EQ(mstats_zg(b).handoff, 0);
	wait_past_skew(ps2);
	ps_mem_reclaim(b);
	CHECK_EQ(mstats_zg(b).pending, 0);
	CHECK_EQ(ps_reclaimer_attach(r2, b), 0);
	free_n(b, 5);
	CHECK_EQ(mstats_zg(b).handoff, 5);
	/* stop with b attached and a section open: what waits is orphaned, adopted later */
	wait_past_skew(ps2); /* the section begins after the 5 frees by more than S */
	struct holder h;
	clock_past_frees(ps2);
	hold(&h, ps2);
	free_n(b, 7);
	ps_reclaimer_stop(r2);
	CHECK_EQ(mstats_zg(b).pending, 7); /* the 5 freed before the section were collected */
	CHECK_EQ(mstats_zg(b).handoff, 0);
	release(&h);
	wait_past_skew(ps2);
	ps_mem_reclaim(b); /* adopts the orphaned queue */
	CHECK_EQ(mstats_zg(b).pending, 0);
	ps_reclaimer_stop(r);
	ps_mem_destroy(b);
	ps_mem_destroy(c);
	if (!same_ps)
		ps_destroy(ps2);
	ps_destroy(ps1);
}

static void test_shared_all(void)
{
	test_shared(true);
	test_shared(false);
}

TEST_MAIN(100, "test_reclaimer: shared σ, stop/destroy", test_shared_all)
