/*
 * tests/rt/rt_test.h - what the test_rt_*.c files share (the first two with
 * test_reclaimer_*.c): waiting until a quiescence point computed now lies after a time
 * stamp, making a ps of a policy, and a statistics snapshot with live == in_use.
 */
#ifndef TSYNC_TEST_RT_TEST_H
#define TSYNC_TEST_RT_TEST_H

#include <tsync/tsync.h>

#include "check.h"

/* Wait until every time stamp taken before t (on any CPU) is more than ps's skew bound in
 * the past, so a quiescence point computed now lies after t. */
static inline void wait_past(struct ps *ps, uint64_t t)
{
	const uint64_t K = ps_skew_ticks(ps);
	while (tsync_now() <= t + 2 * K + 2)
		test_sleep_ns(tsync_ticks_to_ns(K) / 4 + 1000);
}

static inline struct ps *mkps(int policy, uint64_t grace_ns)
{
	struct ps_config c = PS_CONFIG_INIT;
	c.policy = policy;
	c.grace_ns = grace_ns;
	struct ps *ps = ps_create(&c);
	CHECK(ps != NULL);
	CHECK_EQ(ps_policy(ps), policy);
	return ps;
}

static inline struct ps_mem_stats mstats(struct ps_mem *m)
{
	struct ps_mem_stats s;
	CHECK_STATS(ps_mem_stats, m, s);
	CHECK_EQ(s.live, s.in_use);
	return s;
}

#endif
