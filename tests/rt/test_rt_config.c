/*
 * tests/rt/test_rt_config.c - the configuration of RT-SMR (RTAS 2018)'s policies and exact
 * accounting (struct ps_config.policy and grace_ns in <tsync/ps.h>, struct
 * ps_mem_config.accounting and pending_threshold in <tsync/ps_mem.h>): an unknown policy,
 * TEMPORAL without a grace period, a grace period for RT, an unknown accounting and a
 * threshold without a callback fail with EINVAL; a zero-initialised or older, shorter
 * config keeps GENERAL; the default accounting keeps per-thread counters without peaks.
 */
#include "rt_test.h"

/* ---- configuration ------------------------------------------------------------------ */
static void test_config(void)
{
	struct ps_config c = PS_CONFIG_INIT;
	c.policy = 3;
	CHECK_ERRNO(ps_create(&c), 0, EINVAL);
	c.policy = PS_POLICY_TEMPORAL; /* without a grace period */
	CHECK_ERRNO(ps_create(&c), 0, EINVAL);
	c.policy = PS_POLICY_RT; /* a grace period is for TEMPORAL only */
	c.grace_ns = 1000;
	CHECK_ERRNO(ps_create(&c), 0, EINVAL);
	/* a zero-initialised config (only size set) keeps today's behaviour */
	struct ps_config z;
	memset(&z, 0, sizeof z);
	z.size = sizeof z;
	struct ps *ps = ps_create(&z);
	CHECK(ps != NULL);
	CHECK_EQ(ps_policy(ps), PS_POLICY_GENERAL);
	CHECK_EQ(ps_grace_ticks(ps), 0);
	/* an old, shorter config (size of the first two fields) too */
	struct ps_config old = PS_CONFIG_INIT;
	old.size = offsetof(struct ps_config, policy);
	old.policy = 99; /* beyond size: ignored */
	struct ps *ps2 = ps_create(&old);
	CHECK(ps2 != NULL);
	CHECK_EQ(ps_policy(ps2), PS_POLICY_GENERAL);

	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.accounting = 3;
	CHECK_ERRNO(ps_mem_create(ps, 64, &mc), 0, EINVAL);
	mc = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	mc.pending_threshold = 5; /* without a callback */
	CHECK_ERRNO(ps_mem_create(ps, 64, &mc), 0, EINVAL);
	/* general + default accounting: per-thread counters, no peaks */
	struct ps_mem *m = ps_mem_create(ps, 64, NULL);
	CHECK(m != NULL);
	void *o = ps_alloc(m);
	ps_free(m, o);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.exact, 0);
	CHECK_EQ(s.peak_live, 0);
	CHECK_EQ(s.allocs, 1);
	ps_mem_destroy(m);
	ps_destroy(ps);
	ps_destroy(ps2);
}

TEST_MAIN(100, "test_rt: config", test_config)
