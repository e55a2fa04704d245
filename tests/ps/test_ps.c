/*
 * tests/ps/test_ps.c - <tsync/ps.h>: section nesting, the ps_quiesce contract (false
 * while a section that began before t is open, in another thread or the caller; true
 * after it ends; true for sections that began more than the skew bound after t),
 * skew_margin, ps_synchronize, independence of instances, exits inside sections, and
 * the optimisations of ParSec (EuroSys 2016) §3.3 seen through ps_stats_thread.
 */
#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

static tsync_tick_t S;

/* Spin until an ordered reading is certainly after t + extra (by the skew rule). */
static void wait_past(tsync_tick_t t, tsync_tick_t extra)
{
	uint64_t dl = test_now_ns() + 5000000000ull;
	extra += tsync_ns_to_ticks(10000) + 2; /* margin: ps adds a tick or so to the bound */
	while (!tsync_clock_before(t + extra, tsync_now_ordered())) {
		/* the clock read after the deadline decides (not one before a preemption) */
		CHECK_MSG(test_now_ns() < dl || tsync_clock_before(t + extra, tsync_now_ordered()),
			  "clock did not advance past t + %" PRIu64, extra);
		sched_yield();
	}
}

/* ps_quiesce(ps, t) becomes true within ms milliseconds: a call made after the deadline
 * decides (a thread preempted between two calls is not "not quiescent"). */
static bool quiesce_within(struct ps *ps, tsync_tick_t t, unsigned ms)
{
	uint64_t dl = test_now_ns() + (uint64_t)ms * 1000000u;
	while (!ps_quiesce(ps, t)) {
		if (test_now_ns() > dl)
			return ps_quiesce(ps, t);
		sched_yield();
	}
	return true;
}

/* ps_quiesce(ps, t) stays false for ms milliseconds (many calls). */
static void stays_false(struct ps *ps, tsync_tick_t t, unsigned ms, const char *why)
{
	uint64_t dl = test_now_ns() + (uint64_t)ms * 1000000u;
	unsigned n = 0;
	do {
		CHECK_MSG(!ps_quiesce(ps, t), "ps_quiesce true after %u calls: %s", n, why);
		n++;
		if ((n & 63) == 0)
			sched_yield();
	} while (test_now_ns() < dl || n < 100);
}

static void test_create(void)
{
	struct ps_config cfg = PS_CONFIG_INIT;
	struct ps *ps = ps_create(&cfg);
	CHECK(ps != NULL);
	ps_destroy(ps);
	cfg.size = 1;
	errno = 0;
	CHECK(ps_create(&cfg) == NULL);
	CHECK_EQ_I(errno, EINVAL);
	cfg.size = 0;
	errno = 0;
	CHECK(ps_create(&cfg) == NULL);
	CHECK_EQ_I(errno, EINVAL);
	ps_destroy(NULL);
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	CHECK_EQ(ps_quiescence_point(ps), 0);
	ps_destroy(ps);
}

static void test_nesting_and_self(struct ps *ps)
{
	CHECK(!ps_in_section(ps));
	ps_enter(ps);
	CHECK(ps_in_section(ps));
	tsync_tick_t t1 = tsync_now_ordered();
	ps_enter(ps);
	ps_enter(ps);
	CHECK(ps_in_section(ps));
	ps_exit(ps);
	ps_exit(ps); /* inner exits record nothing: the outer section is still open */
	CHECK(ps_in_section(ps));
	stays_false(ps, t1, 5, "caller inside a section that began before t (after nested exits)");
	ps_exit(ps);
	CHECK(!ps_in_section(ps));
	CHECK_MSG(quiesce_within(ps, t1, 1000), "not quiescent after the caller's exit");
	CHECK_GE(ps_quiescence_point(ps), t1);

	/* A section of the caller whose start is more than S after t does not hold t back.
	 * Its start is the domain clock word (PS_READ_MEMBARRIER, PS_READ_FENCE), which a
	 * quiescence computation for t moves past t + S: that one is made here, with nobody
	 * inside (so it is true), after t + S has passed. */
	tsync_tick_t t0 = tsync_now_ordered();
	wait_past(t0, S);
	CHECK_MSG(ps_quiesce(ps, t0), "nobody inside, yet ps_quiesce(t0) is false");
	ps_enter(ps);
	tsync_tick_t t2 = tsync_now_ordered();
	CHECK_MSG(quiesce_within(ps, t0, 1000),
		  "caller's section began after t0 + S but ps_quiesce(t0) is false");
	stays_false(ps, t2, 5, "caller inside a section that began before t2");
	ps_exit(ps);
	CHECK(quiesce_within(ps, t2, 1000));
}

static void test_other_thread(struct ps *ps)
{
	struct holder r;
	holder_start(&r, ps);
	holder_do(&r, HOLD_ENTER);
	tsync_tick_t t = tsync_now_ordered();
	stays_false(ps, t, 20, "another thread inside a section that began before t");
	holder_do(&r, HOLD_EXIT);
	CHECK_MSG(quiesce_within(ps, t, 1000), "not quiescent after the reader's exit");
	CHECK(ps_quiesce(ps, t - 1000));

	/* cached "outside" must not be reused for a t after the cache was filled */
	tsync_tick_t t1 = tsync_now_ordered();
	wait_past(t1, S); /* so that the scan below proves, and publishes, a point >= t1 */
	CHECK(quiesce_within(ps, t1, 1000)); /* r is outside: read and perhaps cached */
	CHECK_GE(ps_quiescence_point(ps), t1);
	holder_do(&r, HOLD_ENTER);
	tsync_tick_t t2 = tsync_now_ordered();
	stays_false(ps, t2, 10, "reader entered after a scan that saw it outside");
	/* a section opened after t1 and still open: t1 stays quiescent (published point) */
	CHECK(ps_quiesce(ps, t1));
	holder_do(&r, HOLD_EXIT);
	CHECK(quiesce_within(ps, t2, 1000));

	/* a section whose start is more than S after t does not hold t back (its start is
	 * the clock word, moved past t + S by the quiescence computation before it) */
	tsync_tick_t t3 = tsync_now_ordered();
	wait_past(t3, S);
	CHECK_MSG(ps_quiesce(ps, t3), "nobody inside, yet ps_quiesce(t3) is false");
	holder_do(&r, HOLD_ENTER);
	CHECK_MSG(quiesce_within(ps, t3, 1000),
		  "reader's section began after t + S but ps_quiesce(t) is false");
	tsync_tick_t t4 = tsync_now_ordered();
	stays_false(ps, t4, 5, "reader inside (second check)");
	holder_do(&r, HOLD_EXIT);

	/* a registered thread that never entered a section of ps does not hold it back */
	struct holder idle;
	holder_start(&idle, ps);
	holder_do(&idle, HOLD_REGISTER);
	tsync_tick_t t5 = tsync_now_ordered();
	CHECK_MSG(quiesce_within(ps, t5, 1000), "a registered, never-entered thread blocks");
	/* nor does one that only quiesces */
	idle.t = t5;
	holder_do(&idle, HOLD_QUIESCE);
	CHECK(idle.ret);
	holder_stop(&idle, HOLD_QUIT);
	holder_stop(&r, HOLD_QUIT);
}

/* skew_margin widens "began after t" for one instance. */
static void test_margin(void)
{
	struct ps_config cfg = PS_CONFIG_INIT;
	tsync_tick_t M = tsync_ns_to_ticks(30000000); /* 30 ms */
	cfg.skew_margin = M;
	struct ps *ps = ps_create(&cfg);
	CHECK(ps != NULL);
	struct holder r;
	holder_start(&r, ps);
	holder_do(&r, HOLD_REGISTER);
	tsync_tick_t t = tsync_now_ordered();
	holder_do(&r, HOLD_ENTER); /* begins after t, but well within S + M of it */
	tsync_tick_t e = tsync_now_ordered();
	if (e < t + M / 2) /* (the holder was not descheduled for 15 ms) */
		stays_false(ps, t, 5, "section began within skew + margin of t");
	holder_do(&r, HOLD_EXIT);
	CHECK(quiesce_within(ps, t, 1000));
	/* past the margin, a new section no longer counts */
	tsync_tick_t t2 = tsync_now_ordered();
	wait_past(t2, S + M);
	CHECK(ps_quiesce(ps, t2)); /* moves the clock word past t2 + S + M */
	holder_do(&r, HOLD_ENTER);
	CHECK_MSG(quiesce_within(ps, t2, 1000), "section began after t + S + M, still blocks");
	holder_do(&r, HOLD_EXIT);
	holder_stop(&r, HOLD_QUIT);
	ps_destroy(ps);
}

struct sync_arg {
	struct holder *r;
	_Atomic int released;
	unsigned delay_ms;
};

static void *releaser(void *p)
{
	struct sync_arg *a = p;
	test_sleep_ms(a->delay_ms);
	atomic_store(&a->released, 1);
	holder_do(a->r, HOLD_EXIT);
	return NULL;
}

struct busy_arg {
	struct ps *ps;
	_Atomic int stop;
	_Atomic uint64_t sections;
};

static void *busy_reader(void *p)
{
	struct busy_arg *a = p;
	while (!atomic_load_explicit(&a->stop, memory_order_relaxed)) {
		ps_enter(a->ps);
		test_spin(100);
		ps_exit(a->ps);
		atomic_fetch_add_explicit(&a->sections, 1, memory_order_relaxed);
	}
	return NULL;
}

static struct ps *death_ps;
static void synchronize_inside(void *arg)
{
	(void)arg;
	ps_enter(death_ps);
	ps_synchronize(death_ps); /* would wait for itself: documented to abort */
}

static void exit_unbalanced(void *arg)
{
	(void)arg;
	ps_exit(death_ps); /* not inside: documented to abort, in every build */
}

static void enter_too_deep(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i <= PS__DEPTH_MASK; i++) /* one more than the 15 allowed */
		ps_enter(death_ps);
}

static void test_synchronize(struct ps *ps)
{
	/* nobody inside: the first ps_quiesce answers, so ps_synchronize does not wait (one
	 * scan that sees every thread outside proves t) */
	struct ps_stats q0, q1;
	CHECK_EQ(ps_stats_thread(ps, &q0), 0);
	ps_synchronize(ps);
	CHECK_EQ(ps_stats_thread(ps, &q1), 0);
	CHECK_EQ(q1.quiesce_calls - q0.quiesce_calls, 1);
	CHECK_EQ(q1.quiesce_true - q0.quiesce_true, 1);

	struct holder r;
	holder_start(&r, ps);
	holder_do(&r, HOLD_ENTER);
	/* the releaser sets released just before the reader's exit (after a delay, so that we
	 * usually wait in ps_synchronize meanwhile): returning earlier is the bug */
	struct sync_arg a = {.r = &r, .delay_ms = 100};
	pthread_t rel = test_spawn(releaser, &a);
	uint64_t t0 = test_now_ns();
	ps_synchronize(ps);
	uint64_t waited = test_now_ns() - t0;
	CHECK_MSG(atomic_load(&a.released) == 1,
		  "ps_synchronize returned while the reader was "
		  "inside (after %" PRIu64 " ns)",
		  waited);
	test_join(rel);
	holder_stop(&r, HOLD_QUIT);

	/* readers that keep entering new sections do not starve it */
	struct busy_arg b = {.ps = ps};
	pthread_t br[2] = {test_spawn(busy_reader, &b), test_spawn(busy_reader, &b)};
	while (atomic_load(&b.sections) < 100)
		sched_yield();
	for (int i = 0; i < 20; i++)
		ps_synchronize(ps);
	atomic_store(&b.stop, 1);
	test_join(br[0]);
	test_join(br[1]);

	if (test_can_fork()) {
		death_ps = ps;
		CHECK_MSG(test_dies(synchronize_inside, NULL),
			  "ps_synchronize inside a section of the same ps did not abort");
		/* in every build, NDEBUG or not (<tsync/ps.h>) */
		CHECK_MSG(test_dies_saying(exit_unbalanced, NULL, "ps_exit without a matching"),
			  "unbalanced ps_exit did not abort");
		CHECK_MSG(test_dies_saying(enter_too_deep, NULL, "nested more than"),
			  "a 16th nested ps_enter did not abort");
	}
}

static void test_independent(void)
{
	struct ps *A = ps_create(NULL), *B = ps_create(NULL);
	CHECK(A && B);
	struct holder r;
	holder_start(&r, A);
	holder_do(&r, HOLD_ENTER); /* inside A */
	tsync_tick_t t = tsync_now_ordered();
	CHECK_MSG(quiesce_within(B, t, 1000), "a reader of A blocks quiescence of B");
	stays_false(A, t, 5, "reader inside A");
	ps_synchronize(B);
	/* the caller inside A, a section of B opened and closed inside it */
	ps_enter(A);
	ps_enter(B);
	CHECK(ps_in_section(A) && ps_in_section(B));
	tsync_tick_t t2 = tsync_now_ordered();
	ps_exit(B);
	CHECK(!ps_in_section(B) && ps_in_section(A));
	CHECK_MSG(quiesce_within(B, t2, 1000), "caller's section of A blocks B");
	stays_false(A, t2, 5, "caller inside A");
	ps_exit(A);
	holder_do(&r, HOLD_EXIT);
	CHECK(quiesce_within(A, t2, 1000));
	holder_stop(&r, HOLD_QUIT);
	ps_destroy(A);
	ps_destroy(B);
}

/* A thread that ends inside a section (pthread_exit, return, or explicit unregister)
 * does not hold quiescence back. */
static void test_exit_inside(struct ps *ps)
{
	for (int how = 0; how < 3; how++) {
		struct holder r;
		holder_start(&r, ps);
		holder_do(&r, HOLD_ENTER);
		holder_do(&r, HOLD_ENTER); /* nested, even */
		tsync_tick_t t = tsync_now_ordered();
		stays_false(ps, t, 2, "reader inside");
		if (how == 0) {
			holder_stop(&r, HOLD_PTHREAD_EXIT);
		} else if (how == 1) {
			holder_stop(&r, HOLD_QUIT);
		} else {
			holder_do(&r, HOLD_UNREGISTER);
			CHECK_EQ_I(r.ret, 0);
			CHECK_MSG(quiesce_within(ps, t, 1000),
				  "thread unregistered inside a section still blocks");
			holder_do(&r, HOLD_ENTER); /* registers again, a fresh section */
			tsync_tick_t t2 = tsync_now_ordered();
			stays_false(ps, t2, 2, "re-registered reader inside");
			holder_do(&r, HOLD_EXIT);
			holder_stop(&r, HOLD_QUIT);
		}
		CHECK_MSG(quiesce_within(ps, t, 1000),
			  "thread exited inside a section (%s) still "
			  "blocks quiescence",
			  how == 0   ? "pthread_exit"
			  : how == 1 ? "return"
				     : "unregister");
		/* the id is reused by a new thread: its slot starts outside */
		struct holder n;
		holder_start(&n, ps);
		holder_do(&n, HOLD_REGISTER);
		tsync_tick_t t3 = tsync_now_ordered();
		CHECK_MSG(quiesce_within(ps, t3, 1000), "reused id inherited an open section");
		holder_stop(&n, HOLD_QUIT);
	}
}

static struct ps_stats stats(struct ps *ps)
{
	struct ps_stats s;
	CHECK_STATS(ps_stats_thread, ps, s);
	return s;
}

static void test_stats(void)
{
	struct ps *P = ps_create(NULL);
	CHECK(P != NULL);
	struct ps_stats s0 = stats(P);
	CHECK_EQ(s0.quiesce_calls, 0);
	CHECK_EQ(s0.quiesce_true, 0);
	CHECK_EQ(ps_quiescence_point(P), 0);

	struct holder h1, h2;
	holder_start(&h1, P);
	holder_start(&h2, P);
	holder_do(&h1, HOLD_ENTER);
	holder_do(&h1, HOLD_EXIT);
	holder_do(&h2, HOLD_ENTER);
	holder_do(&h2, HOLD_EXIT);

	/* a full scan, then optimisation 2: the own published point answers older times */
	tsync_tick_t t1 = tsync_now_ordered();
	wait_past(t1, S);
	CHECK(ps_quiesce(P, t1));
	struct ps_stats s1 = stats(P);
	CHECK_EQ(s1.quiesce_calls, 1);
	CHECK_EQ(s1.quiesce_true, 1);
	CHECK_GE(s1.remote_reads, 1); /* the first scan must look at the other threads */
	tsync_tick_t q = ps_quiescence_point(P);
	CHECK_GE(q, t1);
	CHECK(ps_quiesce(P, t1 - 100));
	CHECK(ps_quiesce(P, t1));
	struct ps_stats s2 = stats(P);
	CHECK_EQ(s2.quiesce_calls, 3);
	CHECK_EQ(s2.quiesce_true, 3);
	CHECK_EQ(s2.own_point_hits - s1.own_point_hits, 2);
	CHECK_EQ(s2.remote_reads, s1.remote_reads); /* no other thread's line was read */

	/* optimisation 3: while one thread is inside, the idle one is answered from the
	 * cache on repeated scans. A view stands for the time of the read barrier that
	 * dated it, so the scans ask about a time tb that such a barrier follows by more
	 * than S, and that the reader's section does not: the reader enters, a failed
	 * computation moves the clock word past ta + S, the reader re-enters (its start is
	 * now after ta), a computation for ta makes a barrier and views of both; tb is just
	 * above the point that proved (held back by the reader's start). Run it with each
	 * holder as the reader, so that the idle one comes first in the scan order in one
	 * of the two runs. */
	for (int k = 0; k < 2; k++) {
		struct holder *rd = k ? &h1 : &h2;
		holder_do(rd, HOLD_ENTER);
		tsync_tick_t ta = tsync_now_ordered();
		wait_past(ta, S);
		CHECK(!ps_quiesce(P, ta));
		holder_do(rd, HOLD_EXIT);
		holder_do(rd, HOLD_ENTER);
		CHECK_MSG(ps_quiesce(P, ta), "a section that began after ta + S holds ta");
		tsync_tick_t tb = ps_quiescence_point(P) + 1;
		for (int i = 0; i < 5; i++)
			CHECK(!ps_quiesce(P, tb));
		holder_do(rd, HOLD_EXIT);
		CHECK(quiesce_within(P, tb, 1000));
	}
	struct ps_stats s3 = stats(P);
	CHECK_GE(s3.quiesce_calls, s2.quiesce_calls + 12);
	CHECK_MSG(s3.cache_hits > s2.cache_hits,
		  "no cache hit in 10 scans that met an idle thread (cache_hits %" PRIu64
		  ", remote_reads %" PRIu64 " -> %" PRIu64 ")",
		  s3.cache_hits, s2.remote_reads, s3.remote_reads);
	CHECK_GT(s3.remote_reads, s2.remote_reads);

	/* optimisation 2 across threads: a peer's published point answers our scan */
	struct ps *Q = ps_create(NULL);
	CHECK(Q != NULL);
	holder_stop(&h1, HOLD_QUIT);
	holder_start(&h1, Q);
	holder_do(&h1, HOLD_ENTER);
	holder_do(&h1, HOLD_EXIT);
	tsync_tick_t tb = tsync_now_ordered();
	wait_past(tb, S);
	h1.t = tb;
	holder_do(&h1, HOLD_QUIESCE);
	CHECK(h1.ret); /* h1 publishes a point >= tb */
	struct ps_stats q0 = stats(Q);
	CHECK_EQ(q0.quiesce_calls, 0);
	CHECK(ps_quiesce(Q, tb - 10));
	struct ps_stats q1 = stats(Q);
	CHECK_EQ(q1.quiesce_true, 1);
	CHECK_MSG(q1.peer_point_hits >= 1,
		  "a peer's published point >= t was not used "
		  "(peer_point_hits %" PRIu64 ", remote_reads %" PRIu64 ")",
		  q1.peer_point_hits, q1.remote_reads);
	test_log("ps: stats P: calls %" PRIu64 " true %" PRIu64 " own %" PRIu64 " peer %" PRIu64
		 " cache %" PRIu64 " remote %" PRIu64 "; Q: peer %" PRIu64,
		 s3.quiesce_calls, s3.quiesce_true, s3.own_point_hits, s3.peer_point_hits,
		 s3.cache_hits, s3.remote_reads, q1.peer_point_hits);
	holder_stop(&h1, HOLD_QUIT);
	holder_stop(&h2, HOLD_QUIT);
	ps_destroy(Q);
	ps_destroy(P);
}

/* Many readers and quiescers at once: every true answer for t is checked against the
 * readers' own record of whether they were inside at t (a reader inside with enter
 * before t must make it false). */
struct race {
	struct ps *ps;
	_Atomic int stop;
	_Atomic uint64_t in_since[4]; /* ordered time taken just after enter; 0 when out */
};

static struct race R;

static void *race_reader(void *p)
{
	int i = (int)(uintptr_t)p;
	uint64_t rng = test_seed((uint64_t)i + 11);
	while (!atomic_load_explicit(&R.stop, memory_order_relaxed)) {
		ps_enter(R.ps);
		atomic_store_explicit(&R.in_since[i], tsync_now_ordered(), memory_order_seq_cst);
		test_spin((unsigned)(test_rand(&rng) % 3000));
		if ((test_rand(&rng) & 63) == 0)
			sched_yield();
		atomic_store_explicit(&R.in_since[i], 0, memory_order_seq_cst);
		ps_exit(R.ps);
	}
	return NULL;
}

static void test_race(void)
{
	R.ps = ps_create(NULL);
	CHECK(R.ps != NULL);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		th[i] = test_spawn(race_reader, (void *)(uintptr_t)i);
	uint64_t dl = test_now_ns() + (uint64_t)(test_stress_seconds(1.0) * 3e8);
	uint64_t calls = 0, trues = 0;
	while (test_now_ns() < dl) {
		/* a reader is inside with a time taken after its enter; a later t must wait */
		for (int i = 0; i < 3; i++) {
			uint64_t since = atomic_load_explicit(&R.in_since[i], memory_order_seq_cst);
			if (since == 0)
				continue;
			tsync_tick_t t = tsync_now_ordered();
			bool q = ps_quiesce(R.ps, t);
			uint64_t still = atomic_load_explicit(&R.in_since[i], memory_order_seq_cst);
			calls++;
			trues += q;
			/* still == since: the reader has not left that section yet, so ps_quiesce
			 * had to see it inside, with an enter before t */
			CHECK_MSG(!(q && still == since),
				  "ps_quiesce(t) true while reader %d was inside a section entered "
				  "before t",
				  i);
		}
	}
	atomic_store(&R.stop, 1);
	for (int i = 0; i < 3; i++)
		test_join(th[i]);
	test_log("ps: race: %" PRIu64 " checks, %" PRIu64 " true", calls, trues);
	ps_destroy(R.ps);
}

int main(void)
{
	test_watchdog(80); /* inside ctest's TIMEOUT (90 s): the watchdog's message is printed */
	CHECK_EQ(tsync_clock_init(), 0);
	S = tsync_clock_skew();
	test_create();
	struct ps *ps = ps_create(NULL);
	CHECK(ps != NULL);
	CHECK_EQ(tsync_thread_register(), 0);
	test_nesting_and_self(ps);
	test_other_thread(ps);
	test_margin();
	test_synchronize(ps);
	test_independent();
	test_exit_inside(ps);
	test_stats();
	test_race();
	ps_destroy(ps);
	test_log("ps: ok");
	return 0;
}
