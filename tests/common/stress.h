/*
 * tests/common/stress.h - the stress tests' one scaffold: the run length
 * (TSYNC_STRESS_SECONDS) and its watchdog, the workers started and stopped together,
 * the main thread's sampling loop that ends at the deadline or at the first violation,
 * and the small ps_mem configuration that provokes races. What each test hunts (its
 * checks, its progress bound) stays in the test.
 *
 *   double secs = stress_begin(2.0, 10, 60);   run length; watchdog 10 x secs + 60 s
 *   stress_spawn(worker, &w[i]);               workers loop while !stress_stopping()
 *   stress_run(secs, &violations, sample, arg); sample(arg) every 10 ms until done
 *   double el = stress_end(&violations);       stop and join every worker
 *   CHECK_MSG(<progress bound>, "no progress");
 */
#ifndef TSYNC_TEST_STRESS_H
#define TSYNC_TEST_STRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <tsync/ps_mem.h>

extern _Atomic int stress_stop_flag;

/* The workers' loop condition: true once stress_stop() or stress_end() was called. */
static inline bool stress_stopping(void)
{
	return atomic_load_explicit(&stress_stop_flag, memory_order_relaxed) != 0;
}

/* Ask every worker to stop (a test that ends its run early, e.g. on a violation). */
void stress_stop(void);

/* The run length: TSYNC_STRESS_SECONDS, or def_secs; arms the watchdog at
 * secs * factor + slack_s seconds (a hang, or threads stuck after a violation). */
double stress_begin(double def_secs, unsigned factor, unsigned slack_s);

/* Start a worker, joined by stress_end() (at most 512 per run). */
pthread_t stress_spawn(void *(*fn)(void *), void *arg);

/* The main thread's loop: every 10 ms call sample(arg) (may be NULL), until secs have
 * passed, a violation was counted in *violations (may be NULL) or stress_stop(). */
void stress_run(double secs, _Atomic uint64_t *violations, void (*sample)(void *), void *arg);

/* End the run: after a violation, give the workers a few seconds (test_bail_soon);
 * stop and join every worker of stress_spawn; clear the stop flag for a next run.
 * Returns the seconds since stress_run began. */
double stress_end(_Atomic uint64_t *violations);

/* The small ps_mem configuration: a 4-object cache, batches of 2, 4 KiB slabs, 1 slab
 * kept, so that objects are reclaimed and reused as soon as possible. */
void stress_small_mem(struct ps_mem_config *mc);

#endif
