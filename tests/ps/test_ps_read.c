/*
 * tests/ps/test_ps_read.c - the read path of <tsync/ps.h> (docs/design.md §2.4-2.5):
 *
 *  1. paths: GENERAL instances use PS_READ_MEMBARRIER where the kernel offers private
 *     expedited membarriers and PS_READ_FENCE where it does not or TSYNC_MEMBARRIER=0;
 *     RT and TEMPORAL use PS_READ_COUNTER; read_interval_ns is GENERAL's only.
 *  2. barriers: a quiescence computation makes at most one read barrier, none while a
 *     section begun by t + S is in the way (it moves the clock word instead), none when
 *     a published point answers, none when the caller is the only registered thread;
 *     PS_READ_FENCE makes none at all.
 *  3. the read interval: ps_free's reclamation makes at most one barrier per interval
 *     (later ones are deferred and the objects wait), while ps_mem_reclaim does not wait
 *     for it.
 *  4. liveness: a reader that runs back-to-back sections, each starting at the clock
 *     word, neither blocks ps_synchronize nor keeps ps_free's queue from being reclaimed
 *     (the clock word moves past the free times).
 *
 *   test_ps_read membarrier|fence     the path GENERAL instances must take here
 *   (ctest: unit_ps_read, and unit_ps_read_fence with TSYNC_MEMBARRIER=0)
 */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

static tsync_tick_t S;
static enum ps_read_path general_path;

static void wait_past(tsync_tick_t t, tsync_tick_t extra)
{
	uint64_t dl = test_now_ns() + 5000000000ull;
	extra += tsync_ns_to_ticks(10000) + 2;
	while (!tsync_clock_before(t + extra, tsync_now_ordered())) {
		/* the clock read after the deadline decides (not one before a preemption) */
		CHECK_MSG(test_now_ns() < dl || tsync_clock_before(t + extra, tsync_now_ordered()),
			  "clock did not advance past t + %" PRIu64, extra);
		sched_yield();
	}
}

static struct ps_stats stats(struct ps *ps)
{
	struct ps_stats s;
	CHECK_EQ(ps_stats_thread(ps, &s), 0);
	return s;
}

/* What the kernel offers, asked independently of the library. */
static bool kernel_has_membarrier(void)
{
	long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0u, 0);
	return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	       (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

static void test_paths(const char *want)
{
	struct ps *g = ps_create(NULL);
	CHECK(g != NULL);
	if (strcmp(want, "fence") == 0) {
		CHECK_EQ(ps_read_path(g), PS_READ_FENCE);
	} else {
		CHECK_MSG(kernel_has_membarrier(),
			  "this kernel has no private expedited membarrier: run the fence case");
		CHECK_EQ(ps_read_path(g), PS_READ_MEMBARRIER);
	}
	general_path = ps_read_path(g);
	CHECK_EQ(ps_read_interval_ticks(g), tsync_ns_to_ticks(PS_READ_INTERVAL_NS));
	ps_destroy(g);

	struct ps_config c = PS_CONFIG_INIT;
	c.read_interval_ns = 123456;
	g = ps_create(&c);
	CHECK(g != NULL);
	CHECK_EQ(ps_read_interval_ticks(g), tsync_ns_to_ticks(123456));
	ps_destroy(g);

	c = (struct ps_config)PS_CONFIG_INIT;
	c.policy = PS_POLICY_RT;
	struct ps *rt = ps_create(&c);
	CHECK(rt != NULL);
	CHECK_EQ(ps_read_path(rt), PS_READ_COUNTER);
	CHECK_EQ(ps_read_interval_ticks(rt), 0);
	ps_destroy(rt);
	c.read_interval_ns = 1000;
	errno = 0;
	CHECK(ps_create(&c) == NULL);
	CHECK_EQ(errno, EINVAL);

	c = (struct ps_config)PS_CONFIG_INIT;
	c.policy = PS_POLICY_TEMPORAL;
	c.grace_ns = 1000000;
	struct ps *tq = ps_create(&c);
	CHECK(tq != NULL);
	CHECK_EQ(ps_read_path(tq), PS_READ_COUNTER);
	ps_destroy(tq);
}

static void test_barriers(void)
{
	const bool mb = general_path == PS_READ_MEMBARRIER;
	struct ps *P = ps_create(NULL);
	CHECK(P != NULL);
	struct holder h;
	holder_start(&h, P);
	holder_do(&h, HOLD_REGISTER);
	CHECK_EQ(h.ret, 0);
	holder_do(&h, HOLD_ENTER);
	holder_do(&h, HOLD_EXIT);

	/* another registered thread, outside: believed after one barrier */
	tsync_tick_t t1 = tsync_now_ordered();
	wait_past(t1, S);
	struct ps_stats s0 = stats(P);
	CHECK(ps_quiesce(P, t1));
	struct ps_stats s1 = stats(P);
	CHECK_EQ(s1.barriers - s0.barriers, mb ? 1 : 0);
	/* the published point answers older times: no barrier */
	CHECK(ps_quiesce(P, t1 - 1));
	CHECK_EQ(stats(P).barriers, s1.barriers);

	/* a section in the way: false, no barrier; the clock word moves past t2 + S */
	holder_do(&h, HOLD_ENTER);
	tsync_tick_t t2 = tsync_now_ordered();
	wait_past(t2, S);
	for (int i = 0; i < 5; i++)
		CHECK(!ps_quiesce(P, t2));
	struct ps_stats s2 = stats(P);
	CHECK_EQ(s2.barriers, s1.barriers);
	CHECK_GE(s2.clock_advances, s1.clock_advances + 1);
	/* a section that begins now starts after t2 + S: it does not hold t2 */
	holder_do(&h, HOLD_EXIT);
	holder_do(&h, HOLD_ENTER);
	tsync_tick_t deadline = test_now_ns() + 5000000000ull;
	while (!ps_quiesce(P, t2))
		CHECK_MSG(test_now_ns() < deadline || ps_quiesce(P, t2),
			  "a section begun after the clock word passed t2 + S holds t2");
	/* (a thread inside a section begun after t needs no barrier to be believed) */
	CHECK_EQ(stats(P).barriers, s2.barriers);
	holder_do(&h, HOLD_EXIT);

	/* the only registered thread: nobody to wait for, no barrier */
	holder_stop(&h, HOLD_QUIT); /* unregisters at exit */
	CHECK_EQ(tsync_thread_count(), 1);
	struct ps_stats s3 = stats(P);
	tsync_tick_t t3 = tsync_now_ordered();
	wait_past(t3, S);
	CHECK(ps_quiesce(P, t3));
	CHECK_EQ(stats(P).barriers, s3.barriers);
	ps_destroy(P);
}

/* ps_free's reclamation makes at most one barrier per read interval; ps_mem_reclaim does
 * not wait for it. */
static void test_interval(void)
{
	struct ps_config c = PS_CONFIG_INIT;
	c.read_interval_ns = 60ull * 1000000000ull; /* a minute: the second one never comes */
	struct ps *P = ps_create(&c);
	CHECK(P != NULL);
	struct holder h;
	holder_start(&h, P);
	holder_do(&h, HOLD_REGISTER);
	CHECK_EQ(h.ret, 0);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.reclaim_batch = 8;
	mc.stamp_batch = 1;
	struct ps_mem *m = ps_mem_create(P, 64, &mc);
	CHECK(m != NULL);
	enum { N = 4000 };
	static void *obj[N];
	for (int i = 0; i < N; i++)
		CHECK((obj[i] = ps_alloc(m)) != NULL);
	for (int i = 0; i < N; i++)
		ps_free(m, obj[i]);
	struct ps_mem_stats ms;
	CHECK_EQ(ps_mem_stats(m, &ms), 0);
	struct ps_stats s = stats(P);
	test_log("interval: %" PRIu64 " barriers, %" PRIu64 " deferred, %" PRIu64
		 " pending of %d freed",
		 s.barriers, s.barrier_deferrals, ms.pending, N);
	if (general_path == PS_READ_MEMBARRIER) {
		CHECK_LE(s.barriers, 1);
		CHECK_GT(s.barrier_deferrals, 0);
		/* objects freed after the one barrier wait for the next */
		CHECK_GT(ms.pending, (uint64_t)mc.reclaim_batch);
	} else {
		CHECK_EQ(s.barriers, 0);
		CHECK_EQ(s.barrier_deferrals, 0);
	}
	ps_mem_reclaim(m);
	CHECK_EQ(ps_mem_stats(m, &ms), 0);
	CHECK_EQ(ms.pending, 0);
	holder_stop(&h, HOLD_QUIT);
	ps_mem_destroy(m);
	ps_destroy(P);
}

/* ---- liveness beside a reader that is always (almost) inside a section ---------------- */

static struct ps *g_ps;
static _Atomic int g_stop;
static _Atomic uint64_t g_sections;

static void *back_to_back(void *arg)
{
	(void)arg;
	CHECK_EQ(tsync_thread_register(), 0);
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		ps_enter(g_ps);
		for (volatile int i = 0; i < 200; i++)
			;
		ps_exit(g_ps);
		atomic_fetch_add_explicit(&g_sections, 1, memory_order_relaxed);
	}
	return NULL;
}

static void test_liveness(void)
{
	g_ps = ps_create(NULL);
	CHECK(g_ps != NULL);
	atomic_store(&g_stop, 0);
	pthread_t r = test_spawn(back_to_back, NULL);
	while (atomic_load(&g_sections) < 10)
		test_sleep_ms(1);
	/* ps_synchronize returns (the watchdog fails the test if it never does) */
	for (int i = 0; i < 20; i++)
		ps_synchronize(g_ps);
	/* ps_free's own, lazy reclamation frees objects while the reader runs */
	struct ps_mem *m = ps_mem_create(g_ps, 64, NULL);
	CHECK(m != NULL);
	struct ps_mem_stats ms = {0};
	uint64_t frees = 0, t0 = test_now_ns();
	while (ms.reclaimed == 0) {
		void *o = ps_alloc(m);
		CHECK(o != NULL);
		ps_free(m, o);
		frees++;
		if ((frees & 1023) == 0)
			CHECK_EQ(ps_mem_stats(m, &ms), 0);
	}
	struct ps_stats st = stats(g_ps);
	test_log("liveness: reclaimed %" PRIu64 " after %" PRIu64 " frees beside %" PRIu64
		 " sections (%" PRIu64 " quiescence calls, %" PRIu64 " barriers, %" PRIu64
		 " deferred, %" PRIu64 " clock advances)",
		 ms.reclaimed, frees, atomic_load(&g_sections), st.quiesce_calls, st.barriers,
		 st.barrier_deferrals, st.clock_advances);
	test_log("liveness: first reclamation after %.3f ms", (test_now_ns() - t0) / 1e6);
	atomic_store(&g_stop, 1);
	test_join(r);
	ps_mem_destroy(m);
	ps_destroy(g_ps);
}

int main(int argc, char **argv)
{
	test_watchdog(110);
	CHECK_MSG(argc == 2, "usage: %s membarrier|fence", argv[0]);
	CHECK_EQ(tsync_clock_init(), 0);
	S = tsync_clock_skew();
	CHECK_EQ(tsync_thread_register(), 0);
	test_paths(argv[1]);
	test_barriers();
	test_interval();
	test_liveness();
	test_log("ps read path (%s): ok", argv[1]);
	return 0;
}
