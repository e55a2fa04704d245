/*
 * src/clock.c - clock source choice, rate calibration and the cross-CPU skew bound.
 * See include/tsync/clock.h for the contract and docs/design.md §1 for the argument.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tsync/clock.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

_Atomic int tsync__clock_source = TSYNC_CLOCK_UNINIT;
static tsync_tick_t clock_skew;
static tsync_tick_t clock_inversion;
static double ticks_per_ns = 1.0;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int counter_is_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	/* CPUID.80000007H:EDX[8] = invariant TSC (Intel SDM 17.17.1; AMD APM "TscInvariant"). */
	unsigned max_ext = (unsigned)__get_cpuid_max(0x80000000u, NULL);
	if (max_ext < 0x80000007u)
		return 0;
	__cpuid(0x80000007u, a, b, c, d);
	(void)a, (void)b, (void)c;
	return (d >> 8) & 1u;
#elif defined(__aarch64__)
	return 1; /* the generic timer is architecturally a system-wide constant-rate count */
#else
	return 0;
#endif
}

/* Ticks per nanosecond of the hardware counter, over a short sleep. */
static double calibrate(void)
{
	uint64_t n0 = mono_ns(), c0 = tsync_arch_counter_ordered();
	struct timespec d = {0, 20 * 1000 * 1000};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
	uint64_t n1 = mono_ns(), c1 = tsync_arch_counter_ordered();
	if (n1 <= n0 || c1 <= c0)
		return 1.0;
	return (double)(c1 - c0) / (double)(n1 - n0);
}

/*
 * ORDO-style pairwise measurement (RLU study (Appl. Sci. 2022) §6). Two threads
 * pinned to CPUs a and b take turns: the sender reads its counter and publishes the
 * value; the receiver spins until it sees it (a pure spin, not a src/wait.h wait: each
 * thread has its CPU to itself, and a yield would only add to the latency measured) and
 * reads its own counter. receiver - sender = offset(b - a) +
 * latency, latency > 0, so the minimum over rounds bounds offset(b - a) from above;
 * with both directions measured, |offset| <= max(min_ab, min_ba). The maximum over all
 * pairs is the skew bound; a negative minimum is an observed inversion.
 */
#define SKEW_ROUNDS 400
struct skew_pair {
	int cpu[2];
	_Atomic uint64_t cell[2]; /* cell[s]: timestamp sent to side s (| 1), 0 = empty */
	_Atomic int ready;        /* threads pinned; -1: give up */
	int64_t min_delta[2];     /* min(receiver - sender) measured by receiver `side` */
	int ok[2];
};
struct skew_arg {
	struct skew_pair *p;
	int side;
};

/* Rounds alternate: on even rounds side 0 sends to side 1, on odd rounds the reverse.
 * A receiver empties its cell before it sends, so cells never hold stale values. */
static void *skew_thread(void *argp)
{
	struct skew_arg *a = argp;
	struct skew_pair *p = a->p;
	int me = a->side;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(p->cpu[me], &set);
	p->ok[me] = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
	atomic_fetch_add(&p->ready, 1);
	int r;
	while ((r = atomic_load(&p->ready)) < 2)
		if (r < 0)
			return NULL;
	int64_t best = INT64_MAX;
	for (int round = 0; round < 2 * SKEW_ROUNDS; round++) {
		if ((round & 1) == me) {
			atomic_store_explicit(&p->cell[!me], tsync_arch_counter_ordered() | 1u,
					      memory_order_release);
		} else {
			uint64_t v;
			while ((v = atomic_load_explicit(&p->cell[me], memory_order_acquire)) == 0)
				tsync_arch_relax();
			uint64_t now = tsync_arch_counter_ordered();
			atomic_store_explicit(&p->cell[me], 0, memory_order_relaxed);
			int64_t d = (int64_t)(now - v);
			if (d < best)
				best = d;
		}
	}
	p->min_delta[me] = best;
	return NULL;
}

static void measure_skew(void)
{
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE], n = 0;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	if (n < 2)
		return;
	/* All pairs up to 32 CPUs (496 pairs, ~0.1 ms each); beyond, pairs with CPU 0 and
	 * neighbours, which covers each socket boundary at least once. */
	int64_t skew = 0, inv = 0;
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			if (n > 32 && i != 0 && j != i + 1)
				continue;
			struct skew_pair p;
			memset(&p, 0, sizeof(p));
			p.cpu[0] = cpus[i];
			p.cpu[1] = cpus[j];
			struct skew_arg a0 = {&p, 0}, a1 = {&p, 1};
			pthread_t t0, t1;
			if (pthread_create(&t0, NULL, skew_thread, &a0) != 0)
				return;
			if (pthread_create(&t1, NULL, skew_thread, &a1) != 0) {
				atomic_store(&p.ready, -100); /* t0 gives up */
				pthread_join(t0, NULL);
				return;
			}
			pthread_join(t0, NULL);
			pthread_join(t1, NULL);
			if (!p.ok[0] || !p.ok[1])
				continue;
			for (int s = 0; s < 2; s++) {
				if (p.min_delta[s] > skew)
					skew = p.min_delta[s];
				if (-p.min_delta[s] > inv)
					inv = -p.min_delta[s];
			}
		}
	}
	/* An inversion means the counters are offset by more than the latency: the other
	 * direction's minimum then already exceeds it, but keep the bound >= inversion. */
	if (inv > skew)
		skew = inv;
	clock_skew = (tsync_tick_t)skew;
	clock_inversion = (tsync_tick_t)inv;
}

static void clock_init_once(void)
{
	int src = TSYNC_CLOCK_MONOTONIC;
	const char *env = getenv("TSYNC_CLOCK");
#if TSYNC_ARCH_HAS_COUNTER
	if (env && (!strcmp(env, "rdtsc") || !strcmp(env, "cntvct") || !strcmp(env, "counter")))
		src = TSYNC_CLOCK_COUNTER;
	else if (!(env && !strcmp(env, "monotonic")) && counter_is_invariant())
		src = TSYNC_CLOCK_COUNTER;
#else
	(void)env;
	(void)counter_is_invariant;
#endif
	if (src == TSYNC_CLOCK_COUNTER) {
		ticks_per_ns = calibrate();
		const char *s = getenv("TSYNC_SKEW");
		if (s && *s) {
			char *end;
			unsigned long long v = strtoull(s, &end, 10);
			if (*end == '\0')
				clock_skew = v;
			else
				measure_skew();
		} else {
			measure_skew();
		}
	} else {
		ticks_per_ns = 1.0;
		clock_skew = 0;
	}
	atomic_store_explicit(&tsync__clock_source, src, memory_order_release);
}

int tsync_clock_init(void)
{
	pthread_once(&clock_once, clock_init_once);
	return 0;
}

tsync_tick_t tsync__now_slow(int ordered)
{
	int src = atomic_load_explicit(&tsync__clock_source, memory_order_acquire);
	if (src == TSYNC_CLOCK_UNINIT) {
		tsync_clock_init();
		src = atomic_load_explicit(&tsync__clock_source, memory_order_acquire);
	}
	if (src == TSYNC_CLOCK_COUNTER)
		return ordered ? tsync_arch_counter_ordered() : tsync_arch_counter();
	if (ordered)
		atomic_thread_fence(memory_order_seq_cst);
	uint64_t v = mono_ns();
	if (ordered)
		atomic_thread_fence(memory_order_seq_cst);
	return v;
}

enum tsync_clock_source tsync_clock_source(void)
{
	tsync_clock_init();
	return (enum tsync_clock_source)atomic_load(&tsync__clock_source);
}

const char *tsync_clock_source_name(void)
{
	if (tsync_clock_source() == TSYNC_CLOCK_COUNTER)
#if defined(__aarch64__)
		return "cntvct";
#else
		return "rdtsc";
#endif
	return "monotonic";
}

tsync_tick_t tsync_clock_skew(void)
{
	tsync_clock_init();
	return clock_skew;
}

tsync_tick_t tsync_clock_inversion(void)
{
	tsync_clock_init();
	return clock_inversion;
}

double tsync_ticks_per_ns(void)
{
	tsync_clock_init();
	return ticks_per_ns;
}

uint64_t tsync_ticks_to_ns(tsync_tick_t ticks)
{
	return (uint64_t)((double)ticks / tsync_ticks_per_ns());
}

tsync_tick_t tsync_ns_to_ticks(uint64_t ns)
{
	return (tsync_tick_t)((double)ns * tsync_ticks_per_ns());
}
