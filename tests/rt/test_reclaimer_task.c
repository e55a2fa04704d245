/*
 * tests/rt/test_reclaimer_task.c - the reclamation task σ of RT-SMR (RTAS 2018) §V-C
 * (PS_MEM_RECLAIM_TASK): objects freed by several threads while a section is open are not
 * collected (nor handed out again) until it ends, then σ collects them, manual and
 * threaded, RT and GENERAL; σ's activations, taken and collected counts; freeing threads
 * exit with their hand-off lists non-empty.
 */
#include "reclaimer_test.h"

/* ---- freeing threads (they exit with their hand-off lists non-empty) -------------- */

#define PER_FREER 40
struct freer {
	pthread_t t;
	struct ps_mem *m;
	struct obj *objs[PER_FREER];
};

static void *freer_main(void *p)
{
	struct freer *f = p;
	for (int i = 0; i < PER_FREER; i++) {
		f->objs[i] = ps_alloc(f->m);
		CHECK(f->objs[i] != NULL);
		f->objs[i]->magic = MAGIC;
		f->objs[i]->seq = (uint64_t)i;
	}
	for (int i = 0; i < PER_FREER; i++)
		ps_free(f->m, f->objs[i]);
	return NULL;
}

/* Wait (bounded) until r has collected at least `want` objects. */
static void wait_collected(struct ps_reclaimer *r, uint64_t want)
{
	uint64_t t0 = test_now_ns();
	while (rstats(r).collected < want) {
		CHECK_MSG(test_now_ns() - t0 < SIGMA_STALL_NS, "σ collected %llu of %llu in %.0f s",
			  (unsigned long long)rstats(r).collected, (unsigned long long)want,
			  (double)SIGMA_STALL_NS / 1e9);
		test_sleep_ns(100000);
	}
}

/* Wait (bounded) until r has begun and ended an activation after this call. */
static void wait_activation(struct ps_reclaimer *r)
{
	uint64_t a0 = rstats(r).activations, t0 = test_now_ns();
	while (rstats(r).activations < a0 + 2) {
		CHECK_MSG(test_now_ns() - t0 < SIGMA_STALL_NS, "σ ran %llu activations in %.0f s",
			  (unsigned long long)(rstats(r).activations - a0),
			  (double)SIGMA_STALL_NS / 1e9);
		test_sleep_ns(100000);
	}
}

/* ---- TASK: nothing collected or reused under an open section ---------------------- */

static void test_task_holds(int policy, bool threaded)
{
	struct ps *ps = mkps(policy, 0);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_TASK, PS_MEM_ACCOUNT_EXACT, NULL);
	struct ps_reclaimer *r = mkr(threaded ? 100000 : PS_RECLAIMER_MANUAL);
	CHECK_EQ(ps_reclaimer_attach(r, m), 0);

	struct holder h;
	hold(&h, ps);
	enum { NF = 3 };
	struct freer f[NF];
	for (int i = 0; i < NF; i++) {
		f[i].m = m;
		CHECK_PT(pthread_create(&f[i].t, NULL, freer_main, &f[i]));
	}
	for (int i = 0; i < NF; i++)
		CHECK_PT(pthread_join(f[i].t, NULL)); /* exits: lists stay in their records */
	/* ... and some of our own */
	struct obj *mine[PER_FREER];
	for (int i = 0; i < PER_FREER; i++) {
		mine[i] = ps_alloc(m);
		mine[i]->magic = MAGIC;
		mine[i]->seq = 1000u + (uint64_t)i;
	}
	for (int i = 0; i < PER_FREER; i++)
		ps_free(m, mine[i]);
	const uint64_t total = (NF + 1) * PER_FREER;
	struct ps_mem_stats s = mstats_zg(m);
	CHECK_EQ(s.pending, total);
	CHECK_EQ(s.frees, total);
	if (!threaded) {
		CHECK_EQ(s.handoff, total);
		for (int i = 0; i < 3; i++)
			CHECK_EQ(ps_reclaimer_run(r), 0);
		s = mstats_zg(m);
		CHECK_EQ(s.handoff, 0);
		CHECK_EQ(s.task_queued, total);
		CHECK_EQ(s.garbage, 0); /* σ learnt a point before every free */
		CHECK_EQ(rstats(r).taken, total);
	} else {
		/* σ ran wholly after the frees (one activation after the count we start from
		 * may have begun before them) and collected nothing */
		wait_activation(r);
	}
	CHECK_EQ(rstats(r).collected, 0);
	/* nothing freed is handed out again while the section is open */
	enum { NA = 2000 };
	static struct obj *fresh[NA];
	for (int i = 0; i < NA; i++) {
		fresh[i] = ps_alloc(m);
		CHECK(fresh[i] != NULL);
		for (int j = 0; j < NF; j++)
			for (int k = 0; k < PER_FREER; k++)
				CHECK(fresh[i] != f[j].objs[k]);
		for (int k = 0; k < PER_FREER; k++)
			CHECK(fresh[i] != mine[k]);
		fresh[i]->magic = 0;
	}
	for (int j = 0; j < NF; j++)
		for (int k = 0; k < PER_FREER; k++)
			CHECK_EQ(f[j].objs[k]->magic, MAGIC);
	for (int k = 0; k < PER_FREER; k++)
		CHECK_EQ(mine[k]->magic, MAGIC);
	CHECK_EQ(mstats_zg(m).pending, total);

	release(&h);
	if (threaded) {
		wait_collected(r, total);
	} else {
		wait_past_skew(ps);
		CHECK_EQ(ps_reclaimer_run(r), total);
	}
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.zombie, 0);
	CHECK_EQ(s.garbage, 0);
	CHECK_EQ(s.peak_pending, total);
	CHECK_EQ(rstats(r).collected, total);
	CHECK_EQ(s.live, NA);
	/* the collected objects are reusable: by their slabs' owners (remote frees), or the
	 * pool - the counts add up */
	CHECK_EQ(s.freed + s.live, s.slabs * ps_mem_slab_objects(m));
	for (int i = 0; i < NA; i++)
		ps_free(m, fresh[i]);
	wait_past_skew(ps);   /* RT's point is the scan's start less S */
	ps_reclaimer_stop(r); /* detaches: collects what quiesced */
	s = mstats_zg(m);
	CHECK_EQ(s.pending, 0);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

static void test_task_holds_all(void)
{
	test_task_holds(PS_POLICY_RT, false);
	test_task_holds(PS_POLICY_GENERAL, false);
	test_task_holds(PS_POLICY_RT, true);
}

TEST_MAIN(100, "test_reclaimer: task holds", test_task_holds_all)
