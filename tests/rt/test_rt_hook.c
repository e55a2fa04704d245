/*
 * tests/rt/test_rt_hook.c - custom grace periods (ParSec (EuroSys 2016) §3.7, struct
 * ps_mem_config.grace_fn) under GENERAL and RT: asked in free order after quiescence,
 * re-asked after a refusal, no refused object handed out.
 */
#include "holder.h"
#include "rt_test.h"

/* ---- custom grace periods: ordering --------------------------------------------------- */
#define HOOK_N 40
struct hooked {
	uint64_t seq;
	uint64_t pad[7];
};
static uint64_t hook_allow; /* accept objects with seq < hook_allow */
#define HOOK_MAX (8 * HOOK_N)
static uint64_t hook_calls, hook_seq[HOOK_MAX], hook_time[HOOK_MAX];
static struct ps_mem *hook_m;

static bool grace_hook(struct ps_mem *m, void *obj, tsync_tick_t free_time, void *arg)
{
	CHECK(m == hook_m);
	CHECK(arg == &hook_allow);
	const struct hooked *o = obj;
	CHECK_LT(hook_calls, HOOK_MAX);
	hook_seq[hook_calls] = o->seq;
	hook_time[hook_calls] = free_time;
	hook_calls++;
	/* normal quiescence has passed before the hook is asked */
	CHECK(ps_quiesce(ps_mem_ps(m), free_time));
	return o->seq < hook_allow;
}

static void test_hook_ordering(int policy)
{
	struct ps *ps = mkps(policy, 0);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.grace_fn = grace_hook;
	mc.grace_arg = &hook_allow;
	mc.stamp_batch = 1; /* distinct free times */
	hook_m = ps_mem_create(ps, sizeof(struct hooked), &mc);
	struct ps_mem *m = hook_m;
	CHECK(m != NULL);
	hook_calls = 0;
	hook_allow = 0;
	struct hooked *o[HOOK_N];
	for (int i = 0; i < HOOK_N; i++) {
		o[i] = ps_alloc(m);
		o[i]->seq = (uint64_t)i;
	}
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ID);
	holder_do(&h, HOLD_ENTER);
	for (int i = 0; i < HOOK_N; i++)
		ps_free(m, o[i]);
	/* 1. a reader that began before the frees holds them all: the hook is not asked */
	ps_mem_reclaim(m);
	CHECK_EQ(hook_calls, 0);
	struct ps_stall st;
	CHECK_EQ(ps_stall_report(ps, m, &st), 0);
	CHECK_EQ_I(st.tid, h.id);
	CHECK_EQ(st.waiting, HOOK_N); /* every object waits on that reader */
	CHECK_EQ(st.pending, HOOK_N);
	holder_do(&h, HOLD_EXIT);
	wait_past(ps, tsync_now());

	/* 2. the hook accepts seq < 5: asked for 0..5 in free order, refuses 5, stops */
	hook_allow = 5;
	CHECK_EQ(ps_mem_reclaim(m), 5);
	CHECK_EQ(hook_calls, 6);
	for (uint64_t i = 0; i < 6; i++)
		CHECK_EQ(hook_seq[i], i);
	for (uint64_t i = 1; i < 6; i++)
		CHECK_GE(hook_time[i], hook_time[i - 1]);
	struct ps_mem_stats s = mstats(hook_m);
	CHECK_EQ(s.pending, HOOK_N - 5);
	CHECK_EQ(s.grace_refusals, 1);
	CHECK_EQ(ps_stall_report(ps, m, &st), 0);
	CHECK_EQ(st.waiting_hook, HOOK_N - 5);
	CHECK_EQ(st.waiting, 0);

	/* 3. the refused object is asked again first, and nothing behind it is asked */
	CHECK_EQ(ps_mem_reclaim(m), 0);
	CHECK_EQ(hook_calls, 7);
	CHECK_EQ(hook_seq[6], 5);

	/* 4. no refused object is handed out, however much is allocated (the refills ask
	 * the hook again: always the head, seq 5) */
	struct hooked *got[3 * HOOK_N];
	for (int i = 0; i < 3 * HOOK_N; i++) {
		got[i] = ps_alloc(m);
		for (int j = 5; j < HOOK_N; j++)
			CHECK(got[i] != o[j]);
	}
	const uint64_t c4 = hook_calls;
	for (uint64_t i = 6; i < c4; i++)
		CHECK_EQ(hook_seq[i], 5);

	/* 5. accepted from then on, in order */
	hook_allow = UINT64_MAX;
	CHECK_EQ(ps_mem_reclaim(m), HOOK_N - 5);
	CHECK_EQ(hook_calls, c4 + HOOK_N - 5);
	for (uint64_t i = c4; i < hook_calls; i++)
		CHECK_EQ(hook_seq[i], 5 + (i - c4));
	CHECK_EQ(mstats(m).pending, 0);
	CHECK_EQ(ps_stall_report(ps, m, &st), 0);
	CHECK_EQ(st.waiting_hook, 0);
	for (int i = 0; i < 3 * HOOK_N; i++)
		ps_free(m, got[i]);
	holder_stop(&h, HOLD_QUIT);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

static void test_hook_orderings(void)
{
	test_hook_ordering(PS_POLICY_GENERAL);
	test_hook_ordering(PS_POLICY_RT);
}

TEST_MAIN(100, "test_rt: hook ordering", test_hook_orderings)
