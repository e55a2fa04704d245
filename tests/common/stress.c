/*
 * tests/common/stress.c - the stress tests' scaffold (stress.h).
 */
#include "stress.h"

#include "check.h"

_Atomic int stress_stop_flag;

enum { STRESS_MAX_THREADS = 512 };
static pthread_t threads[STRESS_MAX_THREADS];
static unsigned nthreads;
static uint64_t run_t0;

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

void stress_run(double secs, _Atomic uint64_t *violations, void (*sample)(void *), void *arg)
{
	run_t0 = test_now_ns();
	uint64_t dl = run_t0 + (uint64_t)(secs * 1e9);
	while (test_now_ns() < dl && !(violations && atomic_load(violations)) &&
	       !stress_stopping()) {
		test_sleep_ms(10);
		if (sample != NULL)
			sample(arg);
	}
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
