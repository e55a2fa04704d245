/*
 * tests/clock/test_clock.c - <tsync/clock.h>: source, skew bound, per-thread and
 * cross-thread ordering within the bound, tick/ns conversion, tsync_clock_before.
 *
 * Run with TSYNC_CLOCK=monotonic and with TSYNC_SKEW=<n> too (see CMakeLists.txt): the
 * expectations follow the environment.
 */
#include <math.h>
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
		CHECK_MSG(S < tsync_ns_to_ticks(50000000u), "skew bound %" PRIu64 " ticks (%" PRIu64
			  " ns) is implausibly large", S, tsync_ticks_to_ns(S));
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
	while (!tsync_clock_before(t0, tsync_now_ordered()))
		CHECK_MSG(test_now_ns() < dl, "time never got past t0 + skew");
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
 * by more than S, than an ordered timestamp taken by the receiver after receiving it. */
struct pingpong {
	_Atomic uint64_t ping; /* round number sent by main */
	_Atomic uint64_t pong; /* round number answered */
	_Atomic uint64_t ping_ts, pong_ts;
	uint64_t rounds;
	_Atomic uint64_t worst; /* largest (sent - received) seen */
};

static void *pong_thread(void *arg)
{
	struct pingpong *p = arg;
	for (uint64_t i = 1; i <= p->rounds; i++) {
		while (atomic_load_explicit(&p->ping, memory_order_acquire) != i)
			sched_yield();
		uint64_t t = atomic_load_explicit(&p->ping_ts, memory_order_relaxed);
		tsync_tick_t now = tsync_now_ordered();
		if (t > now && t - now > atomic_load_explicit(&p->worst, memory_order_relaxed))
			atomic_store_explicit(&p->worst, t - now, memory_order_relaxed);
		CHECK_MSG(!tsync_clock_before(now, t),
			  "message sent at %" PRIu64 " received at %" PRIu64 " (skew %" PRIu64 ")",
			  t, now, S);
		atomic_store_explicit(&p->pong_ts, tsync_now_ordered(), memory_order_relaxed);
		atomic_store_explicit(&p->pong, i, memory_order_release);
	}
	return NULL;
}

static void test_cross_thread(void)
{
	static struct pingpong p;
	p.rounds = test_scale(20000, 10);
	pthread_t t = test_spawn(pong_thread, &p);
	for (uint64_t i = 1; i <= p.rounds; i++) {
		atomic_store_explicit(&p.ping_ts, tsync_now_ordered(), memory_order_relaxed);
		atomic_store_explicit(&p.ping, i, memory_order_release);
		while (atomic_load_explicit(&p.pong, memory_order_acquire) != i)
			sched_yield();
		uint64_t d = atomic_load_explicit(&p.pong_ts, memory_order_relaxed);
		tsync_tick_t now = tsync_now_ordered();
		if (d > now && d - now > atomic_load_explicit(&p.worst, memory_order_relaxed))
			atomic_store_explicit(&p.worst, d - now, memory_order_relaxed);
		CHECK_MSG(!tsync_clock_before(now, d), "reply sent at %" PRIu64 " received at %" PRIu64,
			  d, now);
	}
	test_join(t);
	test_log("clock: %" PRIu64 " round trips, worst inversion seen %" PRIu64 " ticks (skew %" PRIu64 ")",
		 p.rounds, atomic_load(&p.worst), S);
}

static void paired_sample(uint64_t *ns, tsync_tick_t *tk)
{
	for (int i = 0;; i++) {
		uint64_t a = test_now_ns();
		tsync_tick_t t = tsync_now_ordered();
		uint64_t b = test_now_ns();
		if (b - a < 50000 || i == 1000) {
			*ns = a + (b - a) / 2;
			*tk = t;
			return;
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
	 * (CLOCK_MONOTONIC, tick) pair taken back to back, retried if preempted between. */
	uint64_t c0, c1;
	tsync_tick_t t0, t1;
	paired_sample(&c0, &t0);
	test_sleep_ms(30);
	paired_sample(&c1, &t1);
	double measured = (double)(t1 - t0) / (double)(c1 - c0) * 1e6;
	CHECK_MSG(measured > got * 0.9 && measured < got * 1.1,
		  "over a %.1f ms sleep: %.0f ticks per ms measured, tsync_ns_to_ticks(1e6) = %.0f",
		  (double)(c1 - c0) / 1e6, measured, got);
	uint64_t elapsed = tsync_ticks_to_ns(t1 - t0);
	CHECK_MSG(elapsed >= (c1 - c0) * 9 / 10 && elapsed <= (c1 - c0) * 11 / 10,
		  "ticks_to_ns says %" PRIu64 " ns, CLOCK_MONOTONIC %" PRIu64, elapsed, c1 - c0);
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

int main(void)
{
	test_watchdog(120);
	test_source();
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
