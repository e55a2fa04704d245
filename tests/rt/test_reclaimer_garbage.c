/*
 * tests/rt/test_reclaimer_garbage.c - the grace hook with σ (order and refusal), and the
 * zombie/garbage states of RT-SMR (RTAS 2018) §II-E with their peaks under EXACT and
 * PER_THREAD accounting, with σ (TASK) and INLINE.
 */
#include "reclaimer_test.h"

/* ---- the grace hook with σ; zombie and garbage -------------------------------------- */

static uint64_t hook_allow, hook_calls, hook_last;
static bool hook_ordered = true;
static bool seq_hook(struct ps_mem *m, void *obj, tsync_tick_t t, void *arg)
{
	(void)m, (void)t, (void)arg;
	struct obj *o = obj;
	hook_calls++;
	if (o->seq < hook_last)
		hook_ordered = false;
	hook_last = o->seq;
	return o->seq < hook_allow;
}

static void free_seq(struct ps_mem *m, uint64_t from, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct obj *o = ps_alloc(m);
		CHECK(o != NULL);
		o->seq = from + i;
		ps_free(m, o);
	}
}

static void test_hook_task(int accounting)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_TASK, accounting, seq_hook);
	struct ps_reclaimer *r = mkr(PS_RECLAIMER_MANUAL);
	CHECK_EQ(ps_reclaimer_attach(r, m), 0);
	hook_allow = 4;
	hook_last = 0;
	hook_ordered = true;
	free_seq(m, 0, 10);
	struct ps_mem_stats s = mstats_zg(m);
	CHECK_EQ(s.zombie, 10);
	CHECK_EQ(s.garbage, 0);
	wait_past_skew(ps);
	CHECK_EQ(ps_reclaimer_run(r), 4); /* 0..3 accepted, 4 refused: the rest waits */
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 6);
	CHECK_EQ(s.garbage, 6); /* grace period over, the hook asked next */
	CHECK_EQ(s.zombie, 0);
	CHECK_EQ(s.grace_refusals, 1);
	/* frees under an open section are zombie beside that garbage */
	struct holder h;
	hold(&h, ps);
	free_seq(m, 10, 3);
	CHECK_EQ(ps_reclaimer_run(r), 0);
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 9);
	CHECK_EQ(s.garbage, 6);
	CHECK_EQ(s.zombie, 3);
	if (s.exact) {
		CHECK_EQ(s.peak_garbage, 6);
		CHECK_EQ(s.peak_pending, 10);
	}
	hook_allow = 100;
	CHECK_EQ(ps_reclaimer_run(r), 6); /* the garbage; the section holds the zombies */
	s = mstats_zg(m);
	CHECK_EQ(s.zombie, 3);
	CHECK_EQ(s.garbage, 0);
	release(&h);
	wait_past_skew(ps);
	CHECK_EQ(ps_reclaimer_run(r), 3);
	CHECK(hook_ordered);
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.zombie + s.garbage, 0);
	ps_reclaimer_stop(r);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

/* INLINE: garbage is what a thread's reclamation proved quiesced and left queued. */
static void test_garbage_inline(int accounting)
{
	struct ps *ps = mkps(PS_POLICY_RT, 0);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_INLINE, accounting, seq_hook);
	hook_allow = 0;
	hook_last = 0;
	/* Once the first free is more than S in the past, the next ps_free's computation
	 * proves it quiesced and the hook refuses it; the later ones find the head below the
	 * point they know and stop at the hook: no new point is learnt, so their objects
	 * stay zombie as far as the owner knows. The computation proves the second object
	 * too if it came more than S after that object's stamp (a preemption between the
	 * two): garbage 1, or 2 - never more, and never 0. */
	free_seq(m, 0, 1);
	wait_past_skew(ps);
	free_seq(m, 1, 4);
	struct ps_mem_stats s = mstats_zg(m);
	CHECK_EQ(s.pending, 5);
	CHECK_GE(s.garbage, 1);
	CHECK_LE(s.garbage, 2);
	CHECK_GE(s.zombie, 3);
	/* a quiescence computation, then a collection (Fig. 8's split): all 5 garbage once
	 * the last free is more than S in the past */
	wait_past_skew(ps);
	ps_quiesce_time(ps);
	CHECK_EQ(ps_mem_collect(m), 0);
	s = mstats_zg(m);
	CHECK_EQ(s.garbage, 5);
	CHECK_EQ(s.zombie, 0);
	struct holder h;
	hold(&h, ps);
	free_seq(m, 5, 3);
	s = mstats_zg(m);
	CHECK_EQ(s.garbage, 5);
	CHECK_EQ(s.zombie, 3);
	if (s.exact) {
		CHECK_EQ(s.peak_garbage, 5);
		CHECK_EQ(s.peak_pending, 8);
		CHECK_GE(s.peak_zombie, 3);
	}
	release(&h);
	hook_allow = 100;
	wait_past_skew(ps); /* RT's point is the scan's start less S */
	ps_mem_reclaim(m);
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.garbage, 0);
	ps_mem_destroy(m);

	/* GENERAL, one object per reclamation: a thread frees under a section, the section
	 * ends, its next free proves the backlog quiesced but collects one: the rest is
	 * garbage until a later reclamation collects it. */
	struct ps *g = mkps(PS_POLICY_GENERAL, 0);
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.accounting = accounting;
	c.reclaim_batch = 1;
	c.stamp_batch = 1;
	m = ps_mem_create(g, sizeof(struct obj), &c);
	CHECK(m != NULL);
	hold(&h, g);
	free_seq(m, 0, 4);
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 4);
	CHECK_EQ(s.garbage, 0);
	release(&h);
	wait_past_skew(g);
	ps_quiesce_time(g); /* a quiescence point past every free so far, published */
	/* collects one per reclamation (reclaim_batch; its ps_alloc may reclaim one too when
	 * the cache is empty) and learns the rest are garbage */
	free_seq(m, 4, 1);
	s = mstats_zg(m);
	CHECK_GE(s.garbage, 2);
	CHECK_EQ(s.zombie, 1); /* the last free: stamped after the point */
	CHECK_EQ(s.pending + s.reclaimed, 5);
	if (s.exact)
		CHECK_GE(s.peak_garbage, 2);
	ps_mem_reclaim(m);
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.garbage, 0);
	ps_mem_destroy(m);
	ps_destroy(g);
	ps_destroy(ps);
}

static void test_garbage_all(void)
{
	test_hook_task(PS_MEM_ACCOUNT_EXACT);
	test_hook_task(PS_MEM_ACCOUNT_PER_THREAD);
	test_garbage_inline(PS_MEM_ACCOUNT_EXACT);
	test_garbage_inline(PS_MEM_ACCOUNT_PER_THREAD);
}

TEST_MAIN(100, "test_reclaimer: hook with σ, zombie/garbage, inline garbage", test_garbage_all)
