/*
 * tests/common/stress.c - the stress tests' scaffold (stress.h).
 */
#include "stress.h"

#include "check.h"
#include "slist.h"

_Atomic int stress_stop_flag;
_Thread_local const struct stress_worker *stress_self;

enum { STRESS_MAX_THREADS = 512 };
static pthread_t threads[STRESS_MAX_THREADS];
static unsigned nthreads;

/* What a worker of stress_spawn_workers starts with (one per thread slot, read by the new
 * thread only; rewritten only after stress_end joined it). */
static struct worker_start {
	void *(*fn)(void *);
	struct stress_worker *h;
} starts[STRESS_MAX_THREADS];
static uint64_t run_t0, run_deadline;

void stress_stop(void)
{
	atomic_store(&stress_stop_flag, 1);
}

double stress_begin(double def_secs, unsigned factor, unsigned slack_s)
{
	double secs = test_stress_seconds(def_secs);
	test_watchdog((unsigned)(secs * factor) + slack_s);
	return secs;
}

pthread_t stress_spawn(void *(*fn)(void *), void *arg)
{
	CHECK(nthreads < STRESS_MAX_THREADS);
	pthread_t t = test_spawn(fn, arg);
	threads[nthreads++] = t;
	return t;
}

static struct stress_worker *worker_at(const void *w, size_t size, unsigned i)
{
	return (struct stress_worker *)((uintptr_t)w + (size_t)i * size);
}

/* A worker's thread: its record is stress_self, so that stress_stopping() holds it until
 * its first operation is done. */
static void *worker_start(void *p)
{
	const struct worker_start *s = p;
	stress_self = s->h;
	return s->fn(s->h);
}

void stress_spawn_workers_(void *(*fn)(void *), void *w, size_t size, unsigned n, uint64_t salt)
{
	for (unsigned i = 0; i < n; i++) {
		struct stress_worker *h = worker_at(w, size, i);
		*h = (struct stress_worker){.idx = i, .seed = test_seed(salt + i)};
		CHECK(nthreads < STRESS_MAX_THREADS);
		starts[nthreads] = (struct worker_start){fn, h};
		stress_spawn(worker_start, &starts[nthreads]);
	}
}

uint64_t stress_ops_total_(const void *w, size_t size, unsigned n)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += worker_at(w, size, i)->ops;
	return sum;
}

void stress_check_progress_(const char *who, const void *w, size_t size, unsigned n, uint64_t min)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t ops = worker_at(w, size, i)->ops;
		CHECK_MSG(ops >= min,
			  "no progress: %s %u of %u finished %" PRIu64
			  " operations (at least %" PRIu64 " expected, %" PRIu64 " in all)",
			  who, i, n, ops, min, stress_ops_total_(w, size, n));
	}
}

void stress_counts_add_(void *dst, const void *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t a, b;
		memcpy(&a, (char *)dst + i * sizeof a, sizeof a);
		memcpy(&b, (const char *)src + i * sizeof b, sizeof b);
		a += b;
		memcpy((char *)dst + i * sizeof a, &a, sizeof a);
	}
}

void stress_start(double secs)
{
	run_t0 = test_now_ns();
	run_deadline = run_t0 + (uint64_t)(secs * 1e9);
}

bool stress_done(_Atomic uint64_t *violations)
{
	return test_now_ns() >= run_deadline || (violations && atomic_load(violations)) ||
	       stress_stopping();
}

void stress_run(double secs, _Atomic uint64_t *violations, void (*sample)(void *), void *arg)
{
	stress_start(secs);
	while (!stress_done(violations)) {
		test_sleep_ms(10);
		if (sample != NULL)
			sample(arg);
	}
}

void stress_run_until_reclaimed(struct ps_mem *mem, _Atomic uint64_t *violations,
				void (*sample)(void *), void *arg)
{
	for (;;) {
		struct ps_mem_stats s;
		CHECK_EQ(ps_mem_stats(mem, &s), 0);
		if (s.reclaimed > 0 || (violations && atomic_load(violations)))
			return;
		test_sleep_ms(10);
		if (sample != NULL)
			sample(arg);
	}
}

uint64_t stress_rounds(double secs, _Atomic uint64_t *violations, void (*round)(void *), void *arg)
{
	uint64_t n = 0;
	stress_start(secs);
	do {
		round(arg);
		n++;
	} while (!stress_done(violations));
	return n;
}

double stress_end(_Atomic uint64_t *violations)
{
	if (violations && atomic_load(violations))
		test_bail_soon(10);
	stress_stop();
	for (unsigned i = 0; i < nthreads; i++)
		test_join(threads[i]);
	nthreads = 0;
	atomic_store(&stress_stop_flag, 0);
	return (double)(test_now_ns() - run_t0) / 1e9;
}

void stress_small_mem(struct ps_mem_config *mc)
{
	mc->cache_size = 4;
	mc->reclaim_batch = 2;
	mc->slab_size = 4096;
	mc->slabs_kept = 1;
}

void stress_sample_pending(void *pending)
{
	struct stress_pending *p = pending;
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(p->mem, &s), 0);
	if (s.pending > p->max)
		p->max = s.pending;
}

void stress_wl_op(struct wl *wl, int role, uint64_t *rng, struct wl_counts *c)
{
	if (role == STRESS_READER || (role == STRESS_MIXED && (test_rand(rng) & 1)))
		wl_read_op(wl, rng, c);
	else
		wl_write_op(wl, rng, c);
}
