/*
 * tests/rt/test_rt.c - RT-SMR (RTAS 2018)'s policies and the allocator extensions of issue 6:
 * configuration errors; RT-ParSec's exact quiescence point (Fig. 8); temporal
 * quiescence (Fig. 9) ignoring sections, and its documented failure when a section
 * outlives the grace period (in a child process: the reuse is detected); the
 * reclamation schedule q; the custom grace hook's ordering (ParSec (EuroSys 2016) §3.7); exact
 * live/pending/freed counters and peaks; the stall report and the pending threshold.
 */
#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

/* Wait until every time stamp taken before t (on any CPU) is more than ps's skew bound in
 * the past, so a quiescence point computed now lies after t. */
static void wait_past(struct ps *ps, uint64_t t)
{
	const uint64_t K = ps_skew_ticks(ps);
	while (tsync_now() <= t + 2 * K + 2)
		test_sleep_ns(tsync_ticks_to_ns(K) / 4 + 1000);
}

static struct ps *mkps(int policy, uint64_t grace_ns)
{
	struct ps_config c = PS_CONFIG_INIT;
	c.policy = policy;
	c.grace_ns = grace_ns;
	struct ps *ps = ps_create(&c);
	CHECK(ps != NULL);
	CHECK_EQ(ps_policy(ps), policy);
	return ps;
}

static struct ps_mem_stats mstats(struct ps_mem *m)
{
	struct ps_mem_stats s;
	memset(&s, 0xff, sizeof s);
	CHECK_EQ(ps_mem_stats(m, &s), 0);
	CHECK_EQ(s.live, s.in_use);
	return s;
}

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

/* ---- temporal: now - grace, sections ignored ---------------------------------------- */
static void test_temporal(void)
{
	const uint64_t grace_ns = 20000000; /* 20 ms */
	struct ps *ps = mkps(PS_POLICY_TEMPORAL, grace_ns);
	const uint64_t K = ps_skew_ticks(ps), G = ps_grace_ticks(ps);
	CHECK_EQ(G, tsync_ns_to_ticks(grace_ns));
	uint64_t a = tsync_now();
	uint64_t q = ps_quiesce_time(ps);
	uint64_t b = tsync_now();
	CHECK_GE(q + G + K + 1 + K, a); /* q = now - G - K - 1, now within a - K .. b + K */
	CHECK_LE(q + G + K + 1, b + K);

	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ID);
	holder_do(&h, HOLD_ENTER); /* optional under TEMPORAL: only for diagnostics */
	struct ps_stall st;
	CHECK_EQ(ps_stall_report(ps, NULL, &st), 0);
	CHECK_EQ_I(st.tid, h.id);
	if (st.section_ticks < G / 2)
		CHECK(!st.over_grace);
	/* true iff t + G + S < now: false unless we were descheduled for G meanwhile */
	uint64_t t = tsync_now_ordered();
	bool q_early = ps_quiesce(ps, t);
	if (tsync_now() <= t + G)
		CHECK(!q_early);
	else
		test_log("test_rt: temporal: preempted for the grace period; early check skipped");
	test_sleep_ns(grace_ns + tsync_ticks_to_ns(2 * K) + 2000000);
	/* the holder is still inside, but temporal quiescence does not look */
	CHECK(ps_quiesce(ps, t));
	CHECK_EQ(ps_stall_report(ps, NULL, &st), 0);
	CHECK_EQ_I(st.tid, h.id);
	CHECK(st.over_grace); /* ... which the stall report flags as a broken contract */
	CHECK_GE(st.section_ns, grace_ns);
	holder_do(&h, HOLD_EXIT);

	/* the allocator reuses an object once the grace period has passed, never before: o's
	 * free time is >= tf, so no allocation that returns before tf + G may hand it out,
	 * and until then it stays pending (checked exactly unless we were descheduled for G;
	 * then the grace period may have passed, as for any thread that slept that long) */
	struct ps_mem *m = ps_mem_create(ps, 64, NULL);
	CHECK(m != NULL);
	void *o = ps_alloc(m);
	const uint64_t tf = tsync_now();
	ps_free(m, o);
	void *others[64];
	bool reused = false;
	for (int i = 0; i < 64; i++) {
		others[i] = ps_alloc(m);
		if (others[i] == o) {
			CHECK_MSG(tsync_now() + K >= tf + G,
				  "an object was handed out %" PRIu64 " ns after its free, inside "
				  "the %" PRIu64 " ns grace period",
				  tsync_ticks_to_ns(tsync_now() - tf), grace_ns);
			reused = true;
		}
	}
	struct ps_mem_stats s = mstats(m);
	bool exact = tsync_now() <= tf + G;
	CHECK_LE(s.pending, 1);
	if (exact) {
		CHECK(!reused);
		CHECK_EQ(s.pending, 1);
	}
	test_sleep_ns(grace_ns + tsync_ticks_to_ns(2 * K) + 2000000);
	size_t collected = ps_mem_reclaim(m);
	CHECK_EQ(mstats(m).pending, 0);
	bool o_live = reused; /* handed out again (one of others) */
	if (exact) {
		CHECK_EQ(collected, 1);
		CHECK(ps_alloc(m) == o);
		o_live = true;
	}
	for (int i = 0; i < 64; i++)
		if (others[i] != o)
			ps_free(m, others[i]);
	if (o_live)
		ps_free(m, o);
	holder_stop(&h, HOLD_QUIT);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

/* ---- temporal's documented failure, and RT's absence of it -------------------------- */
struct victim {
	uint64_t val;
	uint64_t pad[7];
};
/* The reader holds its section open until the writer is done (explicit hand-offs: the
 * section outlives the grace period however the threads are scheduled). */
struct overrun {
	struct ps *ps;
	struct ps_mem *m;
	struct victim *_Atomic shared;
	_Atomic int stage; /* 1: the reader holds v; 2: the writer is done with it */
	_Atomic int reader_saw_change;
	_Atomic int reader_id;
};

static void *overrun_reader(void *p)
{
	struct overrun *o = p;
	atomic_store(&o->reader_id, tsync_thread_id());
	ps_enter(o->ps); /* optional for TEMPORAL; lets the stall report see the overrun */
	struct victim *v = atomic_load_explicit(&o->shared, memory_order_acquire);
	uint64_t v0 = v->val;
	atomic_store(&o->stage, 1);
	test_wait_flag(&o->stage, 2, 60000); /* the section outlives the grace period */
	/* a volatile read: the compiler must reload what may have been overwritten */
	uint64_t v1 = *(volatile uint64_t *)&v->val;
	atomic_store(&o->reader_saw_change, v1 != v0);
	ps_exit(o->ps);
	return NULL;
}

/* Returns 1 if the writer got the reader's object back while the reader was inside,
 * and 42 + that if the reader saw it overwritten; *over_grace from the stall report.
 * The writer frees the reader's object, waits past the grace period (2 ms, TEMPORAL),
 * then reclaims and allocates up to 256 objects, each overwritten, while the reader
 * stays inside. */
static int overrun_scenario(int policy, bool *over_grace)
{
	struct ps *ps = mkps(policy, policy == PS_POLICY_TEMPORAL ? 2000000 : 0);
	struct ps_mem *m = ps_mem_create(ps, sizeof(struct victim), NULL);
	CHECK(m != NULL);
	struct overrun o = {.ps = ps, .m = m};
	struct victim *v = ps_alloc(m);
	v->val = 7;
	atomic_store(&o.shared, v);
	pthread_t r = test_spawn(overrun_reader, &o);
	test_wait_flag(&o.stage, 1, 60000);
	atomic_store_explicit(&o.shared, NULL, memory_order_release); /* unlink */
	ps_free(m, v);
	test_sleep_ms(20); /* > the 2 ms grace period (and its skew bound) */
	int got_back = 0;
	struct victim *held[256];
	int n = 0;
	while (n < 256) {
		ps_mem_reclaim(m);
		struct victim *x = ps_alloc(m);
		CHECK(x != NULL);
		x->val = 0xdeadull; /* the new incarnation */
		held[n++] = x;
		if (x == v) {
			got_back = 1;
			break;
		}
	}
	struct ps_stall st;
	CHECK_EQ(ps_stall_report(ps, m, &st), 0);
	*over_grace = st.over_grace && st.tid == atomic_load(&o.reader_id);
	atomic_store(&o.stage, 2);
	test_join(r);
	for (int i = 0; i < n; i++)
		ps_free(m, held[i]);
	ps_mem_destroy(m);
	ps_destroy(ps);
	return got_back + (atomic_load(&o.reader_saw_change) ? 42 : 0);
}

static void overrun_child(void *arg)
{
	(void)arg;
	bool over = false;
	int r = overrun_scenario(PS_POLICY_TEMPORAL, &over);
	if (r == 43 && over) {
		fprintf(stderr, "temporal overrun: the reader's object was reused under it, and "
				"ps_stall_report flagged the section (expected)\n");
		_exit(42);
	}
	fprintf(stderr, "temporal overrun: result %d, over_grace %d\n", r, (int)over);
	_exit(1);
}

static void test_overrun(void)
{
	/* RT: the same reader holds its object back, however long it stays */
	bool over = true;
	CHECK_EQ(overrun_scenario(PS_POLICY_RT, &over), 0);
	CHECK(!over);
	/* TEMPORAL with a section longer than the grace period: the documented failure,
	 * premature reuse. In a child: the failure is real memory reuse under a reader. */
	if (!test_can_fork()) {
		test_log("test_rt: temporal overrun death test skipped (TSan: no fork)");
		return;
	}
	CHECK_EQ(test_in_child(overrun_child, NULL), 42);
}

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

int main(void)
{
	test_watchdog(100);
	test_config();
	test_log("test_rt: config ok");
	test_rt_point();
	test_log("test_rt: rt point ok");
	test_temporal();
	test_log("test_rt: temporal ok");
	test_overrun();
	test_log("test_rt: overrun ok");
	test_schedule();
	test_log("test_rt: schedule ok");
	test_collect_and_general_stall();
	test_log("test_rt: collect and general stall ok");
	test_hook_ordering(PS_POLICY_GENERAL);
	test_hook_ordering(PS_POLICY_RT);
	test_log("test_rt: hook ordering ok");
	test_counters(PS_POLICY_GENERAL);
	test_counters(PS_POLICY_RT);
	test_counters(PS_POLICY_TEMPORAL);
	test_log("test_rt: counters ok");
	return 0;
}
