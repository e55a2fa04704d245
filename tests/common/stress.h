/*
 * tests/common/stress.h - the stress tests' one scaffold: the run length
 * (TSYNC_STRESS_SECONDS) and its watchdog, the workers started and stopped together
 * (each with its index, seed and progress counter), the main thread's loops that end at
 * the deadline or at the first violation (10 ms sampling, or whole rounds), the bound
 * "every worker made progress", and the small ps_mem configuration that provokes races.
 * What each test hunts (its checks, its progress bound) stays in the test.
 *
 *   double secs = stress_begin(2.0, 10, 60);   run length; watchdog 10 x secs + 60 s
 *   stress_spawn_workers(worker, w, n, 1);     or stress_spawn(fn, arg) one by one;
 *                                              workers loop while !stress_stopping()
 *   stress_run(secs, &violations, sample, arg); sample(arg) every 10 ms until done
 *     (then stress_run_until_reclaimed(mem, ...): on until mem reclaimed something)
 *     or stress_rounds(secs, &violations, round, arg): round(arg) until done
 *     or stress_start(secs) and the main thread's own loop while !stress_done(&v)
 *   double el = stress_end(&violations);       stop and join every worker
 *   stress_check_progress("writers", w, n, 1); and the test's own bounds
 *
 * Every worker of stress_spawn_workers finishes at least one operation, however late it
 * is first scheduled: stress_stopping() stays false for it until its ops counter is
 * non-zero, so the bound "every worker made progress" (min 1) is a promise of the
 * scaffold, not a matter of the scheduler. A worker therefore counts its ops as it goes
 * (w->sw.ops++ after each one), never only at its end.
 */
#ifndef TSYNC_TEST_STRESS_H
#define TSYNC_TEST_STRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tsync/ps_mem.h>

extern _Atomic int stress_stop_flag;

/* The head of a worker record: the first member of a test's struct worker. */
struct stress_worker {
	unsigned idx;  /* its index in the array given to stress_spawn_workers */
	uint64_t seed; /* test_seed(salt + idx): the state of its PRNG (test_rand) */
	uint64_t ops;  /* progress: the operations it finished (the worker counts them, one by
			* one as it finishes them: stress_stopping() reads it) */
};

/* The calling thread's record if stress_spawn_workers started it, else NULL. */
extern _Thread_local const struct stress_worker *stress_self;

/* The workers' loop condition: true once stress_stop() or stress_end() was called - for a
 * worker of stress_spawn_workers only once it has also finished an operation (its
 * ops > 0): a worker first scheduled after the deadline still does one. The worker reads
 * its own counter: no other thread writes it while it runs. */
static inline bool stress_stopping(void)
{
	if (!atomic_load_explicit(&stress_stop_flag, memory_order_relaxed))
		return false;
	return stress_self == NULL || stress_self->ops > 0;
}

/* Ask every worker to stop (a test that ends its run early, e.g. on a violation). */
void stress_stop(void);

/* The run length: TSYNC_STRESS_SECONDS, or def_secs; arms the watchdog at
 * secs * factor + slack_s seconds (a hang, or threads stuck after a violation). */
double stress_begin(double def_secs, unsigned factor, unsigned slack_s);

/* Start a worker, joined by stress_end() (at most 512 per run). */
pthread_t stress_spawn(void *(*fn)(void *), void *arg);

/* Start fn(&w[i]) for each of the n records of the array w (each record's first member
 * a struct stress_worker), after setting its head: idx i, seed test_seed(salt + i),
 * ops 0. The rest of each record is the caller's (set it before). */
#define stress_spawn_workers(fn, w, n, salt) stress_spawn_workers_(fn, w, sizeof *(w), n, salt)
void stress_spawn_workers_(void *(*fn)(void *), void *w, size_t size, unsigned n, uint64_t salt);

/* Progress over the n records of w: the sum of their ops; the bound "every worker made
 * progress": fail the test (naming who and the laggard) unless each one's ops >= min.
 * Call after stress_end() (the workers' ops are plain). min 1 is promised (stress_stopping);
 * it still fails when a worker counts nothing (a loop that never reaches its count). */
#define stress_ops_total(w, n) stress_ops_total_(w, sizeof *(w), n)
uint64_t stress_ops_total_(const void *w, size_t size, unsigned n);
#define stress_check_progress(who, w, n, min) stress_check_progress_(who, w, sizeof *(w), n, min)
void stress_check_progress_(const char *who, const void *w, size_t size, unsigned n, uint64_t min);

/* Add the counters of src to those of dst: two structs of the same type made of
 * uint64_t counters only (a worker's counts summed into the totals). */
#define stress_counts_add(dst, src)                                             \
	do {                                                                    \
		_Static_assert(sizeof *(dst) == sizeof *(src) &&                \
				       sizeof *(dst) % sizeof(uint64_t) == 0,   \
			       "counts are uint64_t only");                     \
		stress_counts_add_(dst, src, sizeof *(dst) / sizeof(uint64_t)); \
	} while (0)
void stress_counts_add_(void *dst, const void *src, size_t n);

/* Start the run clock (stress_end measures from here) with a deadline secs away; for a
 * main thread that runs its own loop (stress_run and stress_rounds call it). */
void stress_start(double secs);

/* The run is over: the deadline of stress_start has passed, a violation was counted
 * in *violations (may be NULL), or stress_stop() was called. */
bool stress_done(_Atomic uint64_t *violations);

/* The main thread's loop: every 10 ms call sample(arg) (may be NULL), until
 * stress_done(violations). */
void stress_run(double secs, _Atomic uint64_t *violations, void (*sample)(void *), void *arg);

/* After stress_run: go on sampling every 10 ms until mem has reclaimed an object (or a
 * violation was counted), for a test that must have seen reuse: the workers' frees reclaim
 * what has quiesced, so it comes however late they ran; the watchdog bounds the wait. */
void stress_run_until_reclaimed(struct ps_mem *mem, _Atomic uint64_t *violations,
				void (*sample)(void *), void *arg);

/* The main thread's loop for a test that works in rounds: round(arg) once, and again
 * while !stress_done(violations) (the deadline counts from the first round's start).
 * Returns the rounds run (at least 1). */
uint64_t stress_rounds(double secs, _Atomic uint64_t *violations, void (*round)(void *), void *arg);

/* End the run: after a violation, give the workers a few seconds (test_bail_soon);
 * stop and join every worker of stress_spawn - a worker of stress_spawn_workers that has
 * not finished an operation yet first finishes one (bounded by the watchdog of
 * stress_begin: a worker that never can is a hang); clear the stop flag for a next run.
 * Returns the seconds since stress_start (stress_run, stress_rounds) began. */
double stress_end(_Atomic uint64_t *violations);

/* The small ps_mem configuration: a 4-object cache, batches of 2, 4 KiB slabs, 1 slab
 * kept, so that objects are reclaimed and reused as soon as possible. */
void stress_small_mem(struct ps_mem_config *mc);

/* A sample of stress_run (or called from one): the most objects ever pending in mem. */
struct stress_pending {
	struct ps_mem *mem;
	uint64_t max;
};
void stress_sample_pending(void *pending);

/* One operation of the slist.h workload by a worker of this role: a reader reads, a
 * writer updates, a mixed worker does either with even odds. */
enum stress_role { STRESS_READER, STRESS_WRITER, STRESS_MIXED };
struct wl;
struct wl_counts;
void stress_wl_op(struct wl *wl, int role, uint64_t *rng, struct wl_counts *c);

#endif
