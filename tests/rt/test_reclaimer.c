/*
 * tests/rt/test_reclaimer.c - the reclamation task σ of RT-SMR (RTAS 2018) §V-C
 * (ps_reclaimer_*, cfg->reclaim_mode) and the zombie/garbage states of §II-E:
 *  - TASK: objects freed by several threads while a section is open are not collected
 *    (nor handed out again) until it ends, then σ collects them (manual and threaded σ);
 *  - stats: activations, taken, collected;
 *  - one σ shared by two ps_mem (Fig. 13's RT-PARSEC-single), on one ps and on two;
 *  - stop/destroy orderings, frees racing with detach, thread exit with a hand-off list;
 *  - the grace hook with σ: order and refusal;
 *  - zombie/garbage/peaks under EXACT and PER_THREAD accounting, INLINE and TASK.
 */
#include <pthread.h>
#include <string.h>

#include <tsync/tsync.h>

#include "check.h"

#define MAGIC 0x5a5a5a5a5a5a5a5aull

struct obj {
	uint64_t magic;
	uint64_t seq;
	char pad[48];
};

static struct ps *mkps(int policy)
{
	struct ps_config c = PS_CONFIG_INIT;
	c.policy = policy;
	struct ps *ps = ps_create(&c);
	CHECK(ps != NULL);
	return ps;
}

static struct ps_mem *mkmem(struct ps *ps, int mode, int accounting, ps_mem_grace_fn fn)
{
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.reclaim_mode = mode;
	c.accounting = accounting;
	c.grace_fn = fn;
	struct ps_mem *m = ps_mem_create(ps, sizeof(struct obj), &c);
	CHECK(m != NULL);
	return m;
}

static struct ps_mem_stats mstats(struct ps_mem *m)
{
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(m, &s), 0);
	CHECK_EQ(s.zombie + s.garbage, s.pending);
	CHECK_LE(s.garbage, s.pending);
	if (s.exact) {
		CHECK_LE(s.peak_pending, s.peak_zombie + s.peak_garbage);
		CHECK_LE(s.garbage, s.peak_garbage);
		CHECK_LE(s.zombie, s.peak_zombie);
	}
	return s;
}

static struct ps_reclaimer_stats rstats(struct ps_reclaimer *r)
{
	struct ps_reclaimer_stats s;
	CHECK_EQ(ps_reclaimer_stats(r, &s), 0);
	return s;
}

/* Wait until every time stamp taken so far is more than ps's skew bound in the past: RT's
 * exact quiescence point is the scan's start - S - 1 even with nobody inside, so a count
 * that expects every free so far collected must not come within S of the last one (the
 * measured S grows on a loaded machine). */
static void wait_past_skew(struct ps *ps)
{
	uint64_t t = tsync_now(), K = ps_skew_ticks(ps);
	while (tsync_now() <= t + 2 * K + 2)
		test_sleep_ns(tsync_ticks_to_ns(K) / 4 + 1000);
}

static struct ps_reclaimer *mkr(uint64_t period_ns)
{
	struct ps_reclaimer_config c = PS_RECLAIMER_CONFIG_INIT;
	c.period_ns = period_ns;
	struct ps_reclaimer *r = ps_reclaimer_start(&c);
	CHECK(r != NULL);
	return r;
}

/* ---- a thread that holds a section open on demand ---------------------------------- */

struct holder {
	pthread_t t;
	struct ps *ps;
	_Atomic int state; /* 0 start, 1 inside, 2 leave, 3 left */
};

static void *holder_main(void *p)
{
	struct holder *h = p;
	ps_enter(h->ps);
	atomic_store(&h->state, 1);
	while (atomic_load(&h->state) != 2)
		test_sleep_ns(20000);
	ps_exit(h->ps);
	atomic_store(&h->state, 3);
	return NULL;
}

/* Move ps's clock word past every free made so far: a section that begins afterwards
 * starts after them (<tsync/ps.h>: a GENERAL section's start is the clock word, which a
 * quiescence computation for t moves past t + S). Nobody may be inside a section. */
static void clock_past_frees(struct ps *ps)
{
	tsync_tick_t t = tsync_now_ordered();
	uint64_t dl = test_now_ns() + 5000000000ull;
	while (!tsync_clock_before(t + ps_skew_ticks(ps), tsync_now_ordered()))
		CHECK_MSG(test_now_ns() < dl, "the clock did not pass t + S");
	CHECK(ps_quiesce(ps, t));
}

static void hold(struct holder *h, struct ps *ps)
{
	h->ps = ps;
	atomic_store(&h->state, 0);
	CHECK_PT(pthread_create(&h->t, NULL, holder_main, h));
	while (atomic_load(&h->state) != 1)
		test_sleep_ns(20000);
}

static void release(struct holder *h)
{
	atomic_store(&h->state, 2);
	CHECK_PT(pthread_join(h->t, NULL));
}

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

/* How long σ's thread may take to run at all before that is a hang: a generous bound (a
 * loaded machine may not run it for a while), inside the watchdog of main. */
#define SIGMA_STALL_NS 30000000000ull

/* Wait (bounded) until r has collected at least `want` objects. */
static void wait_collected(struct ps_reclaimer *r, uint64_t want)
{
	uint64_t t0 = test_now_ns();
	while (rstats(r).collected < want) {
		CHECK_MSG(test_now_ns() - t0 < SIGMA_STALL_NS,
			  "σ collected %llu of %llu in %.0f s",
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
	struct ps *ps = mkps(policy);
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
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.pending, total);
	CHECK_EQ(s.frees, total);
	if (!threaded) {
		CHECK_EQ(s.handoff, total);
		for (int i = 0; i < 3; i++)
			CHECK_EQ(ps_reclaimer_run(r), 0);
		s = mstats(m);
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
	CHECK_EQ(mstats(m).pending, total);

	release(&h);
	if (threaded) {
		wait_collected(r, total);
	} else {
		wait_past_skew(ps);
		CHECK_EQ(ps_reclaimer_run(r), total);
	}
	s = mstats(m);
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
	wait_past_skew(ps); /* RT's point is the scan's start less S */
	ps_reclaimer_stop(r); /* detaches: collects what quiesced */
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

/* ---- one σ for two ps_mem (RT-PARSEC-single), stop/destroy orderings --------------- */

static void free_n(struct ps_mem *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct obj *o = ps_alloc(m);
		CHECK(o != NULL);
		ps_free(m, o);
	}
}

static void test_shared(bool same_ps)
{
	struct ps *ps1 = mkps(PS_POLICY_RT), *ps2 = same_ps ? ps1 : mkps(PS_POLICY_GENERAL);
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
	CHECK_EQ(mstats(a).pending + mstats(b).pending, 0);

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
	CHECK_EQ(mstats(b).handoff, 0);
	wait_past_skew(ps2);
	ps_mem_reclaim(b);
	CHECK_EQ(mstats(b).pending, 0);
	CHECK_EQ(ps_reclaimer_attach(r2, b), 0);
	free_n(b, 5);
	CHECK_EQ(mstats(b).handoff, 5);
	/* stop with b attached and a section open: what waits is orphaned, adopted later */
	wait_past_skew(ps2); /* the section begins after the 5 frees by more than S */
	struct holder h;
	clock_past_frees(ps2);
	hold(&h, ps2);
	free_n(b, 7);
	ps_reclaimer_stop(r2);
	CHECK_EQ(mstats(b).pending, 7); /* the 5 freed before the section were collected */
	CHECK_EQ(mstats(b).handoff, 0);
	release(&h);
	wait_past_skew(ps2);
	ps_mem_reclaim(b); /* adopts the orphaned queue */
	CHECK_EQ(mstats(b).pending, 0);
	ps_reclaimer_stop(r);
	ps_mem_destroy(b);
	ps_mem_destroy(c);
	if (!same_ps)
		ps_destroy(ps2);
	ps_destroy(ps1);
}

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
	struct ps *ps = mkps(PS_POLICY_RT);
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
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.frees, rc[0].freed + rc[1].freed);
	CHECK_EQ(s.handoff, 0);
	CHECK_EQ(s.pending, 0); /* every free was collected by σ, a detach, or INLINE */
	CHECK_EQ(s.live, 0);
	CHECK_GT(rstats(r).collected, 0);
	ps_reclaimer_stop(r);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

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
	struct ps *ps = mkps(PS_POLICY_RT);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_TASK, accounting, seq_hook);
	struct ps_reclaimer *r = mkr(PS_RECLAIMER_MANUAL);
	CHECK_EQ(ps_reclaimer_attach(r, m), 0);
	hook_allow = 4;
	hook_last = 0;
	hook_ordered = true;
	free_seq(m, 0, 10);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.zombie, 10);
	CHECK_EQ(s.garbage, 0);
	wait_past_skew(ps);
	CHECK_EQ(ps_reclaimer_run(r), 4); /* 0..3 accepted, 4 refused: the rest waits */
	s = mstats(m);
	CHECK_EQ(s.pending, 6);
	CHECK_EQ(s.garbage, 6); /* grace period over, the hook asked next */
	CHECK_EQ(s.zombie, 0);
	CHECK_EQ(s.grace_refusals, 1);
	/* frees under an open section are zombie beside that garbage */
	struct holder h;
	hold(&h, ps);
	free_seq(m, 10, 3);
	CHECK_EQ(ps_reclaimer_run(r), 0);
	s = mstats(m);
	CHECK_EQ(s.pending, 9);
	CHECK_EQ(s.garbage, 6);
	CHECK_EQ(s.zombie, 3);
	if (s.exact) {
		CHECK_EQ(s.peak_garbage, 6);
		CHECK_EQ(s.peak_pending, 10);
	}
	hook_allow = 100;
	CHECK_EQ(ps_reclaimer_run(r), 6); /* the garbage; the section holds the zombies */
	s = mstats(m);
	CHECK_EQ(s.zombie, 3);
	CHECK_EQ(s.garbage, 0);
	release(&h);
	wait_past_skew(ps);
	CHECK_EQ(ps_reclaimer_run(r), 3);
	CHECK(hook_ordered);
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.zombie + s.garbage, 0);
	ps_reclaimer_stop(r);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

/* INLINE: garbage is what a thread's reclamation proved quiesced and left queued. */
static void test_garbage_inline(int accounting)
{
	struct ps *ps = mkps(PS_POLICY_RT);
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
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.pending, 5);
	CHECK_GE(s.garbage, 1);
	CHECK_LE(s.garbage, 2);
	CHECK_GE(s.zombie, 3);
	/* a quiescence computation, then a collection (Fig. 8's split): all 5 garbage once
	 * the last free is more than S in the past */
	wait_past_skew(ps);
	ps_quiesce_time(ps);
	CHECK_EQ(ps_mem_collect(m), 0);
	s = mstats(m);
	CHECK_EQ(s.garbage, 5);
	CHECK_EQ(s.zombie, 0);
	struct holder h;
	hold(&h, ps);
	free_seq(m, 5, 3);
	s = mstats(m);
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
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.garbage, 0);
	ps_mem_destroy(m);

	/* GENERAL, one object per reclamation: a thread frees under a section, the section
	 * ends, its next free proves the backlog quiesced but collects one: the rest is
	 * garbage until a later reclamation collects it. */
	struct ps *g = mkps(PS_POLICY_GENERAL);
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.accounting = accounting;
	c.reclaim_batch = 1;
	c.stamp_batch = 1;
	m = ps_mem_create(g, sizeof(struct obj), &c);
	CHECK(m != NULL);
	hold(&h, g);
	free_seq(m, 0, 4);
	s = mstats(m);
	CHECK_EQ(s.pending, 4);
	CHECK_EQ(s.garbage, 0);
	release(&h);
	wait_past_skew(g);
	ps_quiesce_time(g); /* a quiescence point past every free so far, published */
	/* collects one per reclamation (reclaim_batch; its ps_alloc may reclaim one too when
	 * the cache is empty) and learns the rest are garbage */
	free_seq(m, 4, 1);
	s = mstats(m);
	CHECK_GE(s.garbage, 2);
	CHECK_EQ(s.zombie, 1); /* the last free: stamped after the point */
	CHECK_EQ(s.pending + s.reclaimed, 5);
	if (s.exact)
		CHECK_GE(s.peak_garbage, 2);
	ps_mem_reclaim(m);
	s = mstats(m);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.garbage, 0);
	ps_mem_destroy(m);
	ps_destroy(g);
	ps_destroy(ps);
}

/* BOTH: a backlog the owner could not clear goes to σ. */
static void test_both(void)
{
	struct ps *ps = mkps(PS_POLICY_RT);
	struct ps_mem *m = mkmem(ps, PS_MEM_RECLAIM_BOTH, PS_MEM_ACCOUNT_EXACT, NULL);
	struct ps_reclaimer *r = mkr(PS_RECLAIMER_MANUAL);
	CHECK_EQ(ps_reclaimer_attach(r, m), 0);
	free_n(m, 50); /* collected inline (the last few wait for the skew bound) */
	wait_past_skew(ps);
	free_n(m, 1); /* collects every earlier one: RT reclaims all that has quiesced */
	CHECK_LE(mstats(m).pending, 1);
	CHECK_EQ(mstats(m).handoff, 0);
	uint64_t p0 = mstats(m).pending;
	struct holder h;
	hold(&h, ps);
	free_n(m, 50);
	struct ps_mem_stats s = mstats(m);
	CHECK_GE(s.pending, 50); /* held by the section (p0 older ones may have gone) */
	CHECK_LE(s.pending, 50 + p0);
	CHECK_GT(s.handoff, 0);
	CHECK_EQ(ps_reclaimer_run(r), 0);
	release(&h);
	wait_past_skew(ps); /* RT's point is the scan's start less S */
	size_t n = ps_reclaimer_run(r);
	CHECK_GT(n, 0);
	ps_mem_reclaim(m);
	s = mstats(m);
	CHECK_MSG(s.pending == 0, "pending %llu handoff %llu task %llu run %zu",
		  (unsigned long long)s.pending, (unsigned long long)s.handoff,
		  (unsigned long long)s.task_queued, n);
	ps_reclaimer_stop(r);
	ps_mem_destroy(m);
	ps_destroy(ps);
}

static void test_config(void)
{
	struct ps *ps = mkps(PS_POLICY_RT);
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

int main(void)
{
	test_watchdog(100);
	test_config();
	test_log("test_reclaimer: config ok");
	test_task_holds(PS_POLICY_RT, false);
	test_task_holds(PS_POLICY_GENERAL, false);
	test_task_holds(PS_POLICY_RT, true);
	test_log("test_reclaimer: task holds ok");
	test_shared(true);
	test_shared(false);
	test_log("test_reclaimer: shared σ, stop/destroy ok");
	test_detach_race();
	test_log("test_reclaimer: detach race ok");
	test_hook_task(PS_MEM_ACCOUNT_EXACT);
	test_hook_task(PS_MEM_ACCOUNT_PER_THREAD);
	test_log("test_reclaimer: hook with σ, zombie/garbage ok");
	test_garbage_inline(PS_MEM_ACCOUNT_EXACT);
	test_garbage_inline(PS_MEM_ACCOUNT_PER_THREAD);
	test_log("test_reclaimer: inline garbage ok");
	test_both();
	test_log("test_reclaimer: both ok");
	return 0;
}
