/*
 * tests/rt/test_reclaimer_detach.c - frees racing with a σ's attach and detach
 * (<tsync/ps_reclaimer.h>): nothing is lost, every object is collected.
 */
#include "reclaimer_test.h"

/* ---- frees racing with attach/detach: nothing lost ------------------------------ */

struct racer {
	pthread_t t;
	struct ps_mem *m;
	_Atomic int *stop;
	uint64_t freed;
};

static void *racer_main(void *p)
{
	struct racer *rc = p;
	while (!atomic_load(rc->stop)) {
		struct obj *o = ps_alloc(rc->m);
		CHECK(o != NULL);
		ps_free(rc->m, o);
		rc->freed++;
	}
	ps_mem_reclaim(rc->m);
	return NULL;
}

static void test_detach_race(void)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_TASK, PS_MEM_ACCOUNT_EXACT, NULL);
	struct ps_reclaimer *r = mkr(50000);
	_Atomic int stop = 0;
	struct racer rc[2];
	for (int i = 0; i < 2; i++) {
		rc[i] = (struct racer){.m = m, .stop = &stop};
		CHECK_PT(pthread_create(&rc[i].t, NULL, racer_main, &rc[i]));
	}
	/* at least `rounds` windows, and on until σ or a detach collected something: the
	 * racers free in a window only if the scheduler runs them then */
	unsigned rounds = TEST_TSAN ? 20 : 200;
	uint64_t t0 = test_now_ns();
	for (unsigned i = 0; i < rounds || rstats(r).collected == 0; i++) {
		CHECK_MSG(test_now_ns() - t0 < SIGMA_STALL_NS,
			  "nothing collected in %u attach/detach windows", i);
		CHECK_EQ(ps_reclaimer_attach(r, m), 0);
		test_sleep_ns(100000);
		CHECK_EQ(ps_reclaimer_detach(r, m), 0);
		test_sleep_ns(50000);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK_PT(pthread_join(rc[i].t, NULL));
	/* A racer's last frees may be within S of its final reclaim (RT's point is the
	 * scan's start less S), so its queue may be left behind when it exits: past S, each
	 * ps_mem_reclaim adopts one such queue and collects everything queued. */
	wait_past_skew(ps);
	for (int i = 0; i < 3; i++)
		ps_mem_reclaim(m);
	struct ps_mem_stats s = mstats_zg(m);
	CHECK_EQ(s.frees, rc[0].freed + rc[1].freed);
	CHECK_EQ(s.handoff, 0);
	CHECK_EQ(s.pending, 0); /* every free was collected by σ, a detach, or INLINE */
	CHECK_EQ(s.live, 0);
	CHECK_GT(rstats(r).collected, 0);
	ps_reclaimer_stop(r);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

TEST_MAIN(100, "test_reclaimer: detach race", test_detach_race)
