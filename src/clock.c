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
#include "util.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

_Atomic int tsync__clock_source = TSYNC_CLOCK_UNINIT;
static tsync_tick_t clock_skew;
static tsync_tick_t clock_inversion;
static double ticks_per_ns = 1.0;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

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

/*
 * Rate calibration. Each end of the interval is a counter reading bracketed by two
 * CLOCK_MONOTONIC readings; the counter was read at most half the bracket's width from
 * the bracket's middle. A preemption between the readings widens the bracket (and would
 * skew the rate of the whole process by the preemption's length over the interval), so
 * a wide bracket is retried. The rate's relative error is at most the sum of the two
 * half-widths over the interval: the interval is lengthened until that is at most
 * 1 / CAL_ERR_DIV (0.1 %, the promise of <tsync/clock.h>).
 */
#define CAL_PAIR_NS 10000u     /* a bracket this tight ends the retries (vDSO: ~50 ns) */
#define CAL_PAIR_TRIES 1000    /* then the tightest bracket seen is used */
#define CAL_SLEEP_NS 20000000L /* the interval's first sleep, 20 ms */
#define CAL_MAX_NS 2000000000u /* brackets never tight: stop lengthening after 2 s */
#define CAL_ERR_DIV 1000u

struct cal_pair {
	uint64_t ns;    /* the bracket's middle */
	uint64_t ticks; /* the counter inside it */
	uint64_t width; /* the bracket's width, ns */
};

static struct cal_pair cal_pair(void)
{
	struct cal_pair best = {0, 0, UINT64_MAX};
	for (int i = 0; i < CAL_PAIR_TRIES && best.width > CAL_PAIR_NS; i++) {
		uint64_t a = tsync__mono_ns();
		uint64_t c = tsync_arch_counter_ordered();
		uint64_t b = tsync__mono_ns();
		if (b >= a && b - a < best.width)
			best = (struct cal_pair){a + (b - a) / 2, c, b - a};
	}
	return best;
}

/* Ticks per nanosecond of the hardware counter, over a sleep of 20 ms or more. */
static double calibrate(void)
{
	struct cal_pair p0 = cal_pair(), p1;
	for (;;) {
		struct timespec d = {0, CAL_SLEEP_NS};
		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
		p1 = cal_pair();
		if (p1.ns <= p0.ns || p1.ticks <= p0.ticks || p0.width == UINT64_MAX ||
		    p1.width == UINT64_MAX)
			return 1.0;
		uint64_t span = p1.ns - p0.ns, err = p0.width / 2 + p1.width / 2;
		if (err <= span / CAL_ERR_DIV || span >= CAL_MAX_NS)
			break;
	}
	return (double)(p1.ticks - p0.ticks) / (double)(p1.ns - p0.ns);
}

/*
 * ORDO-style pairwise measurement (RLU study (Appl. Sci. 2022) §6). Two threads
 * pinned to CPUs a and b take turns: the sender reads its counter and publishes the
 * value; the receiver waits until it sees it and reads its own counter.
 * receiver - sender = offset(b - a) + latency, latency > 0, so the minimum over rounds
 * bounds offset(b - a) from above; with both directions measured, |offset| <=
 * max(min_ab, min_ba). The maximum over all pairs is the skew bound; a negative minimum
 * is an observed inversion.
 *
 * The receiver spins (a yield or a sleep would only add to the latency measured; a reply
 * between two running threads takes well under a microsecond) for at most SKEW_SPIN_NS,
 * then sleeps on the pair's condition variable until the sender wakes it. On a busy
 * machine the partner may be preempted, and a pinned receiver that kept spinning burnt
 * its own time slice too, round after round: beside one busy loop per CPU,
 * initialisation took seconds (up to 40 s seen). A woken thread waits for its CPU for up
 * to the time slice of whatever runs there; 200 us of spinning catches a partner that
 * comes back sooner, and once both run, the rounds left take microseconds. A round with
 * a sleep in it measures a wake-up (a large difference), which the minimum ignores: slow
 * rounds cost time, not accuracy.
 */
#define SKEW_ROUNDS 400
#define SKEW_SPIN_NS 200000.0
struct skew_pair {
	int cpu[2];
	_Atomic uint64_t cell[2]; /* cell[s]: timestamp sent to side s (| 1), 0 = empty */
	_Atomic int ready;        /* threads pinned; -1: give up */
	_Atomic int sleepers;     /* threads asleep (or about to be) on cv */
	uint64_t spin_ticks;      /* SKEW_SPIN_NS in counter ticks */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t min_delta[2]; /* min(receiver - sender) measured by receiver `side` */
	int ok[2];
};
struct skew_arg {
	struct skew_pair *p;
	int side;
};

/* After a store that a sleeper may wait for. The seq_cst store before and this seq_cst
 * load pair with the sleeper's seq_cst increment and re-check (Dekker): either we see it
 * asleep, or it sees the store. */
static void skew_wake(struct skew_pair *p)
{
	if (atomic_load_explicit(&p->sleepers, memory_order_seq_cst) != 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

/* Has the awaited store happened: the cell filled or, at the start (cell NULL), both
 * threads pinned (ready >= 2) or the pair given up (ready < 0)? */
static bool skew_seen(_Atomic uint64_t *cell, _Atomic int *ready)
{
	if (cell)
		return atomic_load_explicit(cell, memory_order_seq_cst) != 0;
	int r = atomic_load_explicit(ready, memory_order_seq_cst);
	return r >= 2 || r < 0;
}

static void skew_wait(struct skew_pair *p, _Atomic uint64_t *cell, _Atomic int *ready)
{
	uint64_t t0 = tsync_arch_counter();
	while (tsync_arch_counter() - t0 < p->spin_ticks) {
		if (skew_seen(cell, ready))
			return;
		tsync_arch_relax();
	}
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_seq_cst);
	while (!skew_seen(cell, ready))
		pthread_cond_wait(&p->cv, &p->mu);
	atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_relaxed);
	pthread_mutex_unlock(&p->mu);
}

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
	atomic_fetch_add_explicit(&p->ready, 1, memory_order_seq_cst);
	skew_wake(p);
	skew_wait(p, NULL, &p->ready);
	if (atomic_load(&p->ready) < 0)
		return NULL;
	int64_t best = INT64_MAX;
	for (int round = 0; round < 2 * SKEW_ROUNDS; round++) {
		if ((round & 1) == me) {
			atomic_store_explicit(&p->cell[!me], tsync_arch_counter_ordered() | 1u,
					      memory_order_seq_cst);
			skew_wake(p);
		} else {
			skew_wait(p, &p->cell[me], NULL);
			uint64_t v = atomic_load_explicit(&p->cell[me], memory_order_acquire);
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
			pthread_mutex_init(&p.mu, NULL);
			pthread_cond_init(&p.cv, NULL);
			p.cpu[0] = cpus[i];
			p.cpu[1] = cpus[j];
			p.spin_ticks = (uint64_t)(SKEW_SPIN_NS * ticks_per_ns);
			struct skew_arg a0 = {&p, 0}, a1 = {&p, 1};
			pthread_t t0, t1;
			bool started = pthread_create(&t0, NULL, skew_thread, &a0) == 0;
			if (started && pthread_create(&t1, NULL, skew_thread, &a1) != 0) {
				atomic_store(&p.ready, -100); /* t0 gives up */
				skew_wake(&p);
				pthread_join(t0, NULL);
				started = false;
			} else if (started) {
				pthread_join(t0, NULL);
				pthread_join(t1, NULL);
			}
			pthread_cond_destroy(&p.cv);
			pthread_mutex_destroy(&p.mu);
			if (!started)
				return;
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
	uint64_t v = tsync__mono_ns();
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
