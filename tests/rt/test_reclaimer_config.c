/*
 * tests/rt/test_reclaimer_config.c - the configuration of the reclamation task σ
 * (<tsync/ps_reclaimer.h>, struct ps_mem_config.reclaim_mode): INLINE by default, an
 * unknown mode refused, a bad CPU refused with EINVAL, a pinned σ with the default period
 * (1 ms), stop and stats of NULL.
 */
#include "reclaimer_test.h"

static void test_config(void)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	CHECK_EQ(c.reclaim_mode, PS_MEM_RECLAIM_INLINE);
	c.reclaim_mode = 7;
	CHECK(ps_mem_create(ps, 64, &c) == NULL);
	struct ps_reclaimer_config rc = PS_RECLAIMER_CONFIG_INIT;
	rc.cpu = -5;
	CHECK(ps_reclaimer_start(&rc) == NULL);
	CHECK_EQ(errno, EINVAL);
	rc.cpu = 0; /* pinned, default period */
	struct ps_reclaimer *r = ps_reclaimer_start(&rc);
	CHECK(r != NULL);
	CHECK_EQ(rstats(r).period_ns, 1000000);
	ps_reclaimer_stop(r);
	ps_reclaimer_stop(NULL);
	CHECK_ERRNO(ps_reclaimer_stats(NULL, NULL), -1, EINVAL);
	ps_destroy(ps);
}

TEST_MAIN(100, "test_reclaimer: config", test_config)
