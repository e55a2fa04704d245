/*
 * tests/rt/reclaimer_test.h - what the test_reclaimer_*.c files share: the object type,
 * making a ps_mem and a σ (ps_reclaimer), statistics snapshots with the zombie and garbage
 * invariants (mstats_zg), waiting past the skew bound, a thread that holds a section open
 * on demand, and freeing objects at once; making a ps and waiting past a time stamp come
 * from rt_test.h.
 */
#ifndef TSYNC_TEST_RECLAIMER_TEST_H
#define TSYNC_TEST_RECLAIMER_TEST_H

#include <pthread.h>
#include <string.h>

#include <tsync/tsync.h>

#include "check.h"
#include "rt_test.h"

#define MAGIC 0x5a5a5a5a5a5a5a5aull

struct obj {
	uint64_t magic;
	uint64_t seq;
	char pad[48];
};

static inline struct ps_mem *mkmem(struct ps *ps, int mode, int accounting, ps_mem_grace_fn fn)
{
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.reclaim_mode = mode;
	c.accounting = accounting;
	c.grace_fn = fn;
	struct ps_mem *m = ps_mem_create(ps, sizeof(struct obj), &c);
	CHECK(m != NULL);
	return m;
}

static inline struct ps_mem_stats mstats_zg(struct ps_mem *m)
{
	struct ps_mem_stats s;
	CHECK_STATS(ps_mem_stats, m, s);
	CHECK_EQ(s.zombie + s.garbage, s.pending);
	CHECK_LE(s.garbage, s.pending);
	if (s.exact) {
		CHECK_LE(s.peak_pending, s.peak_zombie + s.peak_garbage);
		CHECK_LE(s.garbage, s.peak_garbage);
		CHECK_LE(s.zombie, s.peak_zombie);
	}
	return s;
}

static inline struct ps_reclaimer_stats rstats(struct ps_reclaimer *r)
{
	struct ps_reclaimer_stats s;
	CHECK_STATS(ps_reclaimer_stats, r, s);
	return s;
}

/* Wait until every time stamp taken so far is more than ps's skew bound in the past: RT's
 * exact quiescence point is the scan's start - S - 1 even with nobody inside, so a count
 * that expects every free so far collected must not come within S of the last one (the
 * measured S grows on a loaded machine). */
static inline void wait_past_skew(struct ps *ps)
{
	wait_past(ps, tsync_now());
}

static inline struct ps_reclaimer *mkr(uint64_t period_ns)
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

static inline void *holder_main(void *p)
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
static inline void clock_past_frees(struct ps *ps)
{
	tsync_tick_t t = tsync_now_ordered();
	uint64_t dl = test_now_ns() + 5000000000ull;
	while (!tsync_clock_before(t + ps_skew_ticks(ps), tsync_now_ordered()))
		CHECK_MSG(test_now_ns() < dl, "the clock did not pass t + S");
	CHECK(ps_quiesce(ps, t));
}

static inline void hold(struct holder *h, struct ps *ps)
{
	h->ps = ps;
	atomic_store(&h->state, 0);
	CHECK_PT(pthread_create(&h->t, NULL, holder_main, h));
	while (atomic_load(&h->state) != 1)
		test_sleep_ns(20000);
}

static inline void release(struct holder *h)
{
	atomic_store(&h->state, 2);
	CHECK_PT(pthread_join(h->t, NULL));
}

/* How long σ's thread may take to run at all before that is a hang: a generous bound (a
 * loaded machine may not run it for a while), inside the watchdog of main. */
#define SIGMA_STALL_NS 30000000000ull

static inline void free_n(struct ps_mem *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct obj *o = ps_alloc(m);
		CHECK(o != NULL);
		ps_free(m, o);
	}
}

#endif
