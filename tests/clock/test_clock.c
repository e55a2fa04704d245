/*
 * tests/clock/test_clock.c - <tsync/clock.h>: source, skew bound, per-thread and
 * cross-thread ordering within the bound, tick/ns conversion, tsync_clock_before.
 *
 * Run with TSYNC_CLOCK=monotonic and with TSYNC_SKEW=<n> too (see CMakeLists.txt): the
 * expectations follow the environment. `test_clock onecpu` first pins the process to the
 * CPU it runs on: skew bound 0, constant preemption.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <sched.h>
#include <tsync/tsync.h>

#include "check.h"

static tsync_tick_t S;

static void test_source(void)
{
	CHECK_EQ(tsync_clock_init(), 0);
	CHECK_EQ(tsync_clock_init(), 0); /* idempotent */
	enum tsync_clock_source src = tsync_clock_source();
	const char *name = tsync_clock_source_name();
	CHECK(name != NULL);
	CHECK(src == TSYNC_CLOCK_COUNTER || src == TSYNC_CLOCK_MONOTONIC);
	if (src == TSYNC_CLOCK_MONOTONIC) {
		CHECK_MSG(strcmp(name, "monotonic") == 0, "name %s", name);
		CHECK_MSG(tsync_ticks_per_ns() == 1.0, "monotonic rate %f", tsync_ticks_per_ns());
		CHECK_EQ(tsync_clock_skew(), 0);
	} else {
#if defined(__x86_64__)
		CHECK_MSG(strcmp(name, "rdtsc") == 0, "name %s", name);
#elif defined(__aarch64__)
		CHECK_MSG(strcmp(name, "cntvct") == 0, "name %s", name);
#endif
		CHECK(TSYNC_ARCH_HAS_COUNTER);
	}
	const char *force = getenv("TSYNC_CLOCK");
	if (force && strcmp(force, "monotonic") == 0)
		CHECK_MSG(src == TSYNC_CLOCK_MONOTONIC, "TSYNC_CLOCK=monotonic ignored (%s)", name);
	if (force && strcmp(force, "rdtsc") == 0 && TSYNC_ARCH_HAS_COUNTER)
		CHECK_MSG(src == TSYNC_CLOCK_COUNTER, "TSYNC_CLOCK=rdtsc ignored (%s)", name);

	S = tsync_clock_skew();
	tsync_tick_t inv = tsync_clock_inversion();
	const char *skew_env = getenv("TSYNC_SKEW");
	if (skew_env && *skew_env && src == TSYNC_CLOCK_COUNTER) {
		CHECK_EQ(S, strtoull(skew_env, NULL, 0));
	} else if (src == TSYNC_CLOCK_COUNTER) {
		/* The largest inversion observed is (sender - receiver) for a message in one
		 * direction; the minimum (receiver - sender) in the other direction is at least
		 * its negation (one-way latencies are positive), and S is the largest such
		 * minimum: an inversion beyond S would make tsync_clock_before() unsafe. */
		CHECK_MSG(inv <= S, "observed inversion %" PRIu64 " > skew bound %" PRIu64, inv, S);
		/* a sanity bound: 50 ms of skew would make every grace period enormous */
		CHECK_MSG(S < tsync_ns_to_ticks(50000000u),
			  "skew bound %" PRIu64 " ticks (%" PRIu64 " ns) is implausibly large", S,
			  tsync_ticks_to_ns(S));
	}
	test_log("clock: source %s, %.3f ticks/ns, skew %" PRIu64 " ticks (%" PRIu64
		 " ns), inversion %" PRIu64 " ticks",
		 name, tsync_ticks_per_ns(), S, tsync_ticks_to_ns(S), inv);
}

static void test_before(void)
{
	tsync_tick_t a = 1000000;
	CHECK(!tsync_clock_before(a, a));
	CHECK(!tsync_clock_before(a, a + S));
	CHECK(tsync_clock_before(a, a + S + 1));
	CHECK(!tsync_clock_before(a + S + 1, a));
	CHECK(!tsync_clock_before(a + 10, a));
	/* ordered timestamps taken far enough apart are "before" */
	tsync_tick_t t0 = tsync_now_ordered();
	uint64_t dl = test_now_ns() + 2000000000u;
	for (;;) {
		/* the wall time first: failing needs the clock read after 2 s still <= t0 + S */
		uint64_t w = test_now_ns();
		if (tsync_clock_before(t0, tsync_now_ordered()))
			break;
		CHECK_MSG(w < dl, "time never got past t0 + skew");
	}
}

/* Per-thread monotonicity within the skew bound (a thread may migrate). */
static void check_monotonic(uint64_t n)
{
	tsync_tick_t prev = tsync_now(), prev_o = tsync_now_ordered(),
		     prev_b = tsync_now_before_loads();
	for (uint64_t i = 0; i < n; i++) {
		tsync_tick_t a = tsync_now(), b = tsync_now_ordered(), c = tsync_now_before_loads();
		CHECK_MSG(a + S >= prev, "tsync_now went back %" PRIu64 " > skew", prev - a);
		CHECK_MSG(b + S >= prev_o, "tsync_now_ordered went back %" PRIu64, prev_o - b);
		CHECK_MSG(c + S >= prev_b, "tsync_now_before_loads went back %" PRIu64, prev_b - c);
		CHECK_MSG(b + S >= a && c + S >= b, "variants out of order");
		prev = a;
		prev_o = b;
		prev_b = c;
		if ((i & 1023) == 0)
			sched_yield(); /* invite migration */
	}
}

static void *monotonic_thread(void *arg)
{
	check_monotonic((uint64_t)(uintptr_t)arg);
	return NULL;
}

/* Cross-thread order: a timestamp sent through memory (release/acquire) is never later,
 * by more than S, than an ordered timestamp taken by the receiver after receiving it.
 * The hand-offs are check.h's gates: they spin while the partner runs (a fast hand-off
 * is the one that could expose a skew beyond S) and sleep when it is preempted or shares
 * the CPU (onecpu), instead of yielding a time slice away at every round. */
struct pingpong {
	test_gate ping; /* round number sent by main */
	test_gate pong; /* round number answered */
	_Atomic uint64_t ping_ts, pong_ts;
	uint64_t rounds;
	_Atomic uint64_t worst; /* largest (sent - received) seen */
};

static void *pong_thread(void *arg)
{
	struct pingpong *p = arg;
	for (uint64_t i = 1; i <= p->rounds; i++) {
		test_gate_wait(&p->ping, i, 40000);
		uint64_t t = atomic_load_explicit(&p->ping_ts, memory_order_relaxed);
		tsync_tick_t now = tsync_now_ordered();
		if (t > now && t - now > atomic_load_explicit(&p->worst, memory_order_relaxed))
			atomic_store_explicit(&p->worst, t - now, memory_order_relaxed);
		CHECK_MSG(!tsync_clock_before(now, t),
			  "message sent at %" PRIu64 " received at %" PRIu64 " (skew %" PRIu64 ")",
			  t, now, S);
		atomic_store_explicit(&p->pong_ts, tsync_now_ordered(), memory_order_relaxed);
		test_gate_set(&p->pong, i);
	}
	return NULL;
}

static void test_cross_thread(void)
{
	static struct pingpong p;
	test_gate_init(&p.ping, 0);
	test_gate_init(&p.pong, 0);
	p.rounds = test_scale(5000, 5);
	pthread_t t = test_spawn(pong_thread, &p);
	for (uint64_t i = 1; i <= p.rounds; i++) {
		atomic_store_explicit(&p.ping_ts, tsync_now_ordered(), memory_order_relaxed);
		test_gate_set(&p.ping, i);
		test_gate_wait(&p.pong, i, 40000);
		uint64_t d = atomic_load_explicit(&p.pong_ts, memory_order_relaxed);
		tsync_tick_t now = tsync_now_ordered();
		if (d > now && d - now > atomic_load_explicit(&p.worst, memory_order_relaxed))
			atomic_store_explicit(&p.worst, d - now, memory_order_relaxed);
		CHECK_MSG(!tsync_clock_before(now, d),
			  "reply sent at %" PRIu64 " received at %" PRIu64, d, now);
	}
	test_join(t);
	test_gate_destroy(&p.ping);
	test_gate_destroy(&p.pong);
	test_log("clock: %" PRIu64 " round trips, worst inversion seen %" PRIu64
		 " ticks (skew %" PRIu64 ")",
		 p.rounds, atomic_load(&p.worst), S);
}

/* A (CLOCK_MONOTONIC, tick) pair: the tick read between two CLOCK_MONOTONIC reads, the
 * pair retried while they are more than 50 us apart (a preemption between them); *width
 * gets the bracket of the pair used (the tightest of 1000 tries at worst). */
static void paired_sample(uint64_t *ns, tsync_tick_t *tk, uint64_t *width)
{
	*width = UINT64_MAX;
	for (int i = 0; i < 1000 && *width > 50000; i++) {
		uint64_t a = test_now_ns();
		tsync_tick_t t = tsync_now_ordered();
		uint64_t b = test_now_ns();
		if (b - a < *width) {
			*ns = a + (b - a) / 2;
			*tk = t;
			*width = b - a;
		}
	}
}

static void test_conversion(void)
{
	double r = tsync_ticks_per_ns();
	CHECK_MSG(r > 0.01 && r < 100.0, "ticks per ns %f", r);
	static const uint64_t ns[] = {1000, 1000000, 123456789, 1000000000, 60000000000ull};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		uint64_t back = tsync_ticks_to_ns(tsync_ns_to_ticks(ns[i]));
		double err = fabs((double)back - (double)ns[i]);
		CHECK_MSG(err <= (double)ns[i] * 0.001 + 2.0,
			  "ns %" PRIu64 " -> ticks %" PRIu64 " -> ns %" PRIu64, ns[i],
			  tsync_ns_to_ticks(ns[i]), back);
		uint64_t tk = ns[i];
		uint64_t tk_back = tsync_ns_to_ticks(tsync_ticks_to_ns(tk));
		CHECK_MSG(fabs((double)tk_back - (double)tk) <= (double)tk * 0.001 + r + 2.0,
			  "ticks %" PRIu64 " -> ns -> ticks %" PRIu64, tk, tk_back);
	}
	CHECK_EQ(tsync_ns_to_ticks(0), 0);
	CHECK_EQ(tsync_ticks_to_ns(0), 0);
	/* conversion agrees with the rate */
	double expect = 1e6 * r;
	double got = (double)tsync_ns_to_ticks(1000000);
	CHECK_MSG(fabs(got - expect) <= expect * 0.01 + 2, "1 ms = %f ticks, rate says %f", got,
		  expect);

	/* 1 ms of ticks measured against CLOCK_MONOTONIC over a sleep. Each end is a
	 * (CLOCK_MONOTONIC, tick) pair taken back to back, retried if preempted between.
	 * The rate must agree within: <tsync/clock.h>'s calibration promise (0.1 %), plus
	 * CLOCK_MONOTONIC's rate changing between the calibration and now (NTP slews it by
	 * at most 500 ppm either way: 0.1 %), plus this measurement's own uncertainty (the
	 * two brackets' widths over the interval). The promises add up to 0.2 %; 0.5 % is
	 * allowed, twenty times less than a 1 ms preemption inside a 20 ms calibration. */
	uint64_t c0, c1, w0, w1;
	tsync_tick_t t0, t1;
	paired_sample(&c0, &t0, &w0);
	test_sleep_ms(30);
	paired_sample(&c1, &t1, &w1);
	double span = (double)(c1 - c0);
	double tol = 0.005 + (double)(w0 + w1) / span;
	double measured = (double)(t1 - t0) / span * 1e6;
	CHECK_MSG(fabs(measured - got) <= got * tol,
		  "over a %.1f ms sleep: %.0f ticks per ms measured, tsync_ns_to_ticks(1e6) = %.0f "
		  "(tolerance %.3f %%)",
		  span / 1e6, measured, got, tol * 100);
	double elapsed = (double)tsync_ticks_to_ns(t1 - t0);
	CHECK_MSG(fabs(elapsed - span) <= span * tol + 2.0,
		  "ticks_to_ns says %.0f ns, CLOCK_MONOTONIC %.0f (tolerance %.3f %%)", elapsed,
		  span, tol * 100);
	test_log("clock: rate over %.1f ms agrees within %.4f %% (tolerance %.3f %%)", span / 1e6,
		 fabs(measured - got) / got * 100, tol * 100);
}

/* Clock functions are usable from threads that never registered. */
static void *unregistered_thread(void *arg)
{
	(void)arg;
	tsync_tick_t a = tsync_now(), b = tsync_now_ordered();
	CHECK(b + S >= a);
	CHECK(tsync_clock_skew() == S);
	return NULL;
}

/* onecpu: every thread of the process on one CPU (the one it starts on), before the
 * clock initialises: no pair of CPUs to measure, so the skew bound is 0, and every
 * hand-off between threads is a context switch. */
static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();
	CHECK(cpu >= 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0);
	test_log("clock: onecpu: every thread on CPU %d", cpu);
}

int main(int argc, char **argv)
{
	/* shorter than ctest's TIMEOUT (60 s, CMakeLists.txt): a hang fails with a message */
	test_watchdog(50);
	bool onecpu = argc > 1 && strcmp(argv[1], "onecpu") == 0;
	CHECK_MSG(argc == 1 || onecpu, "usage: test_clock [onecpu]");
	if (onecpu)
		pin_to_one_cpu();
	test_source();
	if (onecpu && tsync_clock_source() == TSYNC_CLOCK_COUNTER && getenv("TSYNC_SKEW") == NULL)
		CHECK_MSG(S == 0, "one usable CPU, yet skew bound %" PRIu64, S);
	test_before();
	uint64_t n = test_scale(200000, 10);
	check_monotonic(n);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		t[i] = test_spawn(monotonic_thread, (void *)(uintptr_t)n);
	for (int i = 0; i < 3; i++)
		test_join(t[i]);
	test_cross_thread();
	test_conversion();
	test_join(test_spawn(unregistered_thread, NULL));
	test_log("clock: ok");
	return 0;
}
