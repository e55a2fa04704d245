/*
 * bench/rt/rt_cache.c - `tsync-bench rt-cache`: the memcached application study of RT-SMR
 * (RTAS 2018) §VII-C (Figs. 14-15) on the tsync-cached core (apps/cached/core/cache.h).
 *
 * Set-up, as the paper's: in process, no network; replacement off (ps-nocrp, mcs, pf-rw
 * have none) and mem_limit for every record, so nothing is evicted; a YCSB trace
 * (ScrambledZipfian theta 0.99, 20 % sets, 16-byte keys, 32-byte values, --requests
 * requests over min(10^6, --requests) records, the same trace as `tsync-bench cache
 * --set-pct 20`) partitioned over the cores; every record preloaded. The designs:
 *   rt-parsec  CACHE_PS_NOCRP on a PS_POLICY_RT ps: gets lock-free in a section, sets
 *              under the bucket's ticket lock, replaced items ps_free()d; reclamation is
 *              the task σ below (the allocators' own reclamation is held off with a 1 h
 *              reclaim period).
 *   mcs        CACHE_MCS: gets and sets under the bucket's ck_spinlock_mcs, items
 *              reference-counted (the last reference frees).
 *   pf-rw      CACHE_PF_RW: gets on the read side of the bucket's ck_pflock, sets on
 *              the write side, items reference-counted.
 * Every get is cache_get_copy into a 32-byte buffer, so all three do the same work.
 *
 * Task model (§V, §VII-C): on each core c, τr (get<c>: one get per job, priority 2) and
 * τw (set<c>: one set per job, priority 1), implicit deadlines; for rt-parsec also σ
 * (quiescence: ps_quiesce_time, then cache_collect = ps_mem_collect of every size class,
 * period q), with a priority between them (§V-C: higher than the writer's, lower than
 * hp_i's). Periods are tens of microseconds, far below what a sleep-based release can
 * hit in a VM, so each core is ONE pinned thread running a partitioned fixed-priority
 * executive over its tasks: jobs are released at t0 + k·p on the TSC clock (tsync_now);
 * the thread spins until a release, then always runs the highest-priority pending job;
 * a job's response time is completion - release, a deadline miss completion > release
 * + p. Each job is one request, and a request is non-preemptive (a set holds a spin
 * lock; the paper's writers are non-preemptive; a get is shorter than any dispatch), so
 * running jobs to completion at request granularity IS the partitioned FP schedule the
 * analysis models - a higher-priority release waits for at most the one request in
 * progress, as under the analysis' non-preemptive sections - with no kernel scheduler
 * between the tasks of a core to add its latency. σ collects the garbage of the
 * executive's thread, which is the thread that freed it (τw runs on it): ps_mem_collect
 * works on the caller's own queue only. The executives try SCHED_FIFO (priority 1) where
 * the kernel does not throttle real-time threads (rt_throttled: a spinning FIFO executive
 * would be stopped for 50 ms of every second); otherwise, or with the environment
 * TSYNC_BENCH_NO_FIFO=1 (shared machines, the smoke tests), they run SCHED_OTHER, and the
 * JSON's and COMMAND.txt's "sched" says why. Each run also records the hypervisor's steal
 * time on the executives' CPUs (steal_ms): in a VM, the largest disturbance.
 *
 * Modes:
 *   calibrate  per design and core count: τr and τw back to back, unthrottled (each core
 *              runs its partition in trace order), σ every q; average get and set
 *              costs, α (σ's fixed cost per activation, see sigma()) and β (per object
 *              collected, from the reclamation observer cache_config.reclaim_fn =
 *              ps_mem_config.reclaim_fn). JSON on stdout. An executive goes on past
 *              --seconds until it has measured each of them once (cal_needs_more).
 *   strict     (Fig. 14) calibrate, write the admission task set (YAML) and run
 *              `<rta> admission FILE --json`; probe those periods and admit again with
 *              the job costs measured there (admit()); run the tasks at the chosen
 *              periods (σ at its q) for --seconds, dropping a job whose deadline passed
 *              before it could start (skip-over, see run_periodic). --get-period-us/
 *              --set-period-us skip the admission.
 *   relaxed    (Fig. 15) sets (and σ) periodic at the admission's (or the given) update
 *              period; gets arrive at a fixed rate (one every 1/rate, YCSB's -target
 *              pacing) into a queue served in the slack: whenever no periodic job is
 *              pending. Get latency = completion - arrival.
 * CSV (bench/README.md, "rt-cache"):
 *   mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops,
 *   get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tsync/arch.h>
#include <tsync/clock.h>
#include <tsync/ps.h>
#include <tsync/ps_mem.h>
#include <tsync/thread.h>

#include "cache.h"
#include "cache/ycsb.h"
#include "common.h"
#include "hist.h"
#include "rt_cache.h"

#define WHO "tsync-bench rt-cache"
#define CSV_HEADER                                                                         \
	"mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops,"   \
	"get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses"
#define MAX_LIST 64u
#define MAX_CORES 1024u
#define KEY_LEN 16u
#define VAL_LEN 32u
#define SET_BIT YCSB_SET_BIT
#define SET_PCT 20u
#define MAX_RECORDS 1000000u
/* strict/relaxed calibrate first, for this long at most */
#define CAL_SECONDS 0.5
/* calibrate's σ period when neither --q-us nor a set period gives one */
#define CAL_Q_US 100.0
/* the admission's search ranges (us): update periods geometric, inclusive */
#define ADM_UPDATE_MIN 2.0
#define ADM_UPDATE_MAX 2000.0
#define ADM_UPDATE_STEPS 31
#define ADM_READ_MAX 100000.0
/* the allocators' own reclamation period under rt-parsec: σ does the work */
#define RT_HOLD_NS (3600ull * 1000000000ull)

enum design { D_RTPARSEC, D_MCS, D_PFRW, ND };
static const char *const dname[ND] = {"rt-parsec", "mcs", "pf-rw"};
static const char *const dpolicy[ND] = {"rt", "mutex", "pf-rw"}; /* tsync-rta's names */

enum mode { M_CAL, M_STRICT, M_RELAXED };
static const char *const mname[] = {"calibrate", "strict", "relaxed"};

struct opts {
	enum mode mode;
	bool have_mode;
	bool sel[ND], any_sel;
	unsigned cores[MAX_LIST], ncores;
	uint64_t rates[MAX_LIST]; /* relaxed: offered gets, kops per core */
	unsigned nrates;
	double seconds;
	uint64_t requests;
	double q_us, get_p_us, set_p_us; /* 0: not given */
	const char *rta, *csv, *out;
	bool pin;
};

/* What one run's executives do: periods in ticks, 0 = task absent. */
struct plan {
	enum mode mode;   /* M_CAL: back to back */
	uint64_t pg, ps, pq, ia; /* get period, set period, σ period; relaxed: get spacing */
};

/* One core's executive. */
struct exec {
	_Alignas(64) unsigned core;
	int cpu;
	size_t lo, hi, gi, si; /* its trace partition, and the get / set cursors */
	uint64_t rng;
	/* results */
	bool pinned, fifo;
	int fifo_err;
	uint64_t gets, sets, sigmas, get_misses; /* get_misses: a preloaded key not found */
	uint64_t miss_g, miss_s, miss_q;         /* deadline misses (dropped jobs included) */
	uint64_t dropped, dropped_g, dropped_s;  /* jobs dropped: deadline passed before start */
	uint64_t get_ticks, set_ticks;           /* service time sums */
	uint64_t get_job_ticks, set_job_ticks;   /* periodic: job costs, from the dispatch
						  * decision to completion */
	uint64_t alpha_ticks, alpha_n, beta_ticks, beta_n;
	uint64_t peak_queue, backlog;
	uint64_t paused; /* calibrate: ticks not running requests */
	uint64_t end_tick; /* calibrate: when it stopped (g_end, or later: cal_needs_more) */
	uint64_t sigma_max; /* σ's longest response, ticks */
	struct span *dist, *miss; /* disturbances and deadline misses (periodic modes) */
	unsigned ndist, nmiss;
	uint64_t ndist_total, miss_unlogged, slow_requests, gap_max;
	/* since its last disturbance the core has not been idle: a miss now is that
	 * disturbance's backlog (explained) */
	bool backlogged;
	uint64_t miss_backlog;
	struct hist *hg, *hs;   /* response (strict: completion - release; relaxed gets:
				 * completion - arrival) */
	struct hist *hgs, *hss; /* service times */
};

static struct cache *g_cache;
static const uint32_t *g_trace;
static const char *g_keys;
static struct plan g_plan;
static uint64_t g_t0, g_end;
static struct bench_run g_run; /* its deadline: g_end */
static int g_cpus[CPU_SETSIZE];
static unsigned g_ncpus;
static bool g_pin = true; /* --no-pin clears it: executives left to the scheduler */
static bool g_try_fifo;
/* why SCHED_FIFO is not tried (NULL: it is): the environment, or the kernel's RT
 * throttling (see rt_throttled) */
static const char *g_no_fifo_why;
static uint64_t steal_ns(unsigned ncpu);
static _Thread_local struct exec *self_exec;

/* ---- the trace ------------------------------------------------------------------------ */

/* The trace is ycsb_trace(requests, 20, records): that of `tsync-bench cache --set-pct 20`. */

/* The next key of the wanted kind in x's partition (cyclic); any key if there is none. */
static const char *next_key(struct exec *x, bool set)
{
	size_t *cur = set ? &x->si : &x->gi;
	size_t i = *cur;
	for (size_t n = x->hi - x->lo; n; n--) {
		uint32_t e = g_trace[i];
		if (++i == x->hi)
			i = x->lo;
		if (((e & SET_BIT) != 0) == set) {
			*cur = i;
			return g_keys + (size_t)(e & ~SET_BIT) * KEY_LEN;
		}
	}
	*cur = i;
	return g_keys + (size_t)(g_trace[i] & ~SET_BIT) * KEY_LEN;
}

/* ---- requests and σ --------------------------------------------------------------------- */

static void do_get(struct exec *x, const char *key)
{
	char buf[VAL_LEN];
	uint32_t n;
	if (cache_get_copy(g_cache, key, KEY_LEN, buf, sizeof buf, &n, NULL, NULL) != CACHE_OK)
		x->get_misses++;
}

static void do_set(struct exec *x, const char *key, uint64_t stamp)
{
	char val[VAL_LEN];
	memset(val, 'v', sizeof val);
	memcpy(val, &stamp, sizeof stamp); /* a fresh value each time */
	memcpy(val + 8, &x->core, sizeof x->core);
	enum cache_status st =
	    cache_store(g_cache, CACHE_SET, key, KEY_LEN, val, VAL_LEN, 0, 0, 0, NULL);
	if (st != CACHE_STORED) {
		fprintf(stderr, WHO ": set failed: %s\n", cache_status_name(st));
		abort();
	}
}

/* σ (RT-SMR §V-C): compute a quiescence point (α), then collect this thread's garbage up
 * to it (β per object, measured by the reclamation observer). */
/* One activation of σ: one quiescence computation, then the collection of every size
 * class's queue of this thread. Its cost in the analysis is α + collected x β (Eq. 7),
 * so α here is the activation's whole fixed cost - the quiescence computation and the
 * visit of every size class's allocator - the activation minus the collection time the
 * reclamation observer reports for the objects it moved (β's samples). */
static void sigma(struct exec *x)
{
	uint64_t a = tsync_now(), b0 = x->beta_ticks;
	(void)ps_quiesce_time(cache_ps(g_cache));
	(void)cache_collect(g_cache);
	uint64_t t = tsync_now() - a, b = x->beta_ticks - b0;
	x->alpha_ticks += t > b ? t - b : 0;
	x->alpha_n++;
	x->sigmas++;
}

/* The cache's reclamation observer (rt-parsec only): β samples of the collecting core. */
static void on_reclaim(void *arg, const struct ps_mem_reclaim_info *info)
{
	(void)arg;
	struct exec *x = self_exec;
	if (x && info->collected) {
		x->beta_ticks += info->collect_ticks;
		x->beta_n += info->collected;
	}
}

/* ---- the executives ------------------------------------------------------------------- */

/* Calibrate pauses CAL_PAUSE_NS every CAL_BURST_NS of back-to-back requests, so that a
 * SCHED_FIFO executive stays under the kernel's real-time throttling (see idle_until);
 * the pauses are outside every timed request and outside the active time. */
#define CAL_BURST_NS 400000000u
#define CAL_PAUSE_NS 100000000u

/* Does x's partition hold a get, a set? */
static void partition_kinds(const struct exec *x, bool *get, bool *set)
{
	*get = *set = false;
	for (size_t i = x->lo; i < x->hi && !(*get && *set); i++) {
		if (g_trace[i] & SET_BIT)
			*set = true;
		else
			*get = true;
	}
}

/*
 * Calibrate runs until g_end and, past it, until it has measured every cost it reports
 * at least once: a get and a set (where the partition has them) and, with σ, an
 * activation and a collected object (β). An executive that did not get its CPU before
 * g_end (a loaded machine) would otherwise report costs of 0 or none, and the admission
 * would take them as the task set's costs. The time past g_end counts as active time
 * (x->end_tick).
 */
static bool cal_needs_more(const struct exec *x, bool get, bool set)
{
	return (get && x->gets == 0) || (set && x->sets == 0) ||
	       (g_plan.pq && (x->alpha_n == 0 || (set && x->beta_n == 0)));
}

static void run_calibrate(struct exec *x)
{
	const uint64_t pq = g_plan.pq, burst = tsync_ns_to_ticks(CAL_BURST_NS);
	uint64_t now = tsync_now(), nq = now + pq, pause_at = now + burst;
	size_t i = x->lo;
	bool has_get, has_set;
	partition_kinds(x, &has_get, &has_set);
	while (now < g_end || cal_needs_more(x, has_get, has_set)) {
		if (now >= pause_at) {
			struct timespec ts = {0, CAL_PAUSE_NS};
			nanosleep(&ts, NULL);
			uint64_t t = tsync_now();
			x->paused += t - now;
			now = t;
			pause_at = now + burst;
			nq = now + pq;
			continue;
		}
		uint32_t e = g_trace[i];
		if (++i == x->hi)
			i = x->lo;
		const char *key = g_keys + (size_t)(e & ~SET_BIT) * KEY_LEN;
		uint64_t a = now;
		if (e & SET_BIT) {
			do_set(x, key, a);
			now = tsync_now();
			x->set_ticks += now - a;
			hist_add(x->hss, now - a);
			x->sets++;
		} else {
			do_get(x, key);
			now = tsync_now();
			x->get_ticks += now - a;
			hist_add(x->hgs, now - a);
			x->gets++;
		}
		if (pq && now >= nq) {
			sigma(x);
			now = tsync_now();
			nq += pq;
			if (nq < now)
				nq = now + pq;
		}
	}
	x->end_tick = now;
}

/*
 * Idle gaps: the executive spins for the last IDLE_SPIN_NS before a release and sleeps
 * (clock_nanosleep, absolute) through the rest of a gap longer than that. At tens of
 * microseconds of period it always spins; at generous periods it leaves its CPU to others
 * - and a SCHED_FIFO thread that sleeps is not charged against the kernel's real-time
 * throttling (sched_rt_runtime_us, by default 950 ms of each second), which would stall
 * a FIFO thread that spins for 50 ms every second: so SCHED_FIFO runs with slack meet
 * their deadlines however long they last. tsc0/mono0 map TSC ticks to CLOCK_MONOTONIC.
 */
#define IDLE_SPIN_NS 60000u

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin a moment, or sleep to IDLE_SPIN_NS before `until`. Returns when the executive
 * expected to run again: now (spun), or the wake-up time it asked for (slept). */
static uint64_t idle_until(uint64_t now, uint64_t until, uint64_t tsc0, uint64_t mono0)
{
	static _Thread_local uint64_t spin_ticks;
	if (!spin_ticks)
		spin_ticks = tsync_ns_to_ticks(IDLE_SPIN_NS);
	if (until <= now || until - now <= spin_ticks) {
		tsync_arch_relax();
		return now;
	}
	uint64_t wake = until - spin_ticks;
	uint64_t t = mono0 + tsync_ticks_to_ns(wake - tsc0);
	struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	return wake;
}

/*
 * Disturbances: intervals in which the executive did not get its CPU - a gap of more
 * than DIST_GAP_NS between two steps of its loop (or after the wake-up it asked for), or
 * a request that took more than DIST_SLOW_NS (requests cost microseconds: such a one was
 * interrupted, or waited for a lock holder that was); both thresholds at most a quarter
 * and a half of the shortest period. In a VM the hypervisor takes the
 * virtual CPU for milliseconds at a time (steal time), whatever the guest's scheduling
 * class. A deadline miss whose window [release, completion] overlaps no disturbance on
 * any core, and that is not the backlog of one (a miss on a core that has not been idle
 * since its last disturbance is), is "unexplained": the schedule itself missed (the smoke
 * tests require none).
 */
#define DIST_GAP_NS 20000u
#define DIST_SLOW_NS 50000u
#define DIST_LOG 1024u
#define MISS_LOG 4096u

struct span {
	uint64_t a, b;
};

static void disturbed(struct exec *x, uint64_t a, uint64_t b)
{
	x->backlogged = true;
	x->ndist_total++;
	if (x->ndist < DIST_LOG)
		x->dist[x->ndist++] = (struct span){a, b};
	else
		x->dist[DIST_LOG - 1].b = b; /* widen the last: still covers every miss after */
}

static void missed(struct exec *x, uint64_t rel, uint64_t done)
{
	if (x->backlogged) {
		x->miss_backlog++; /* the work a disturbance delayed, not yet caught up */
		return;
	}
	if (x->nmiss < MISS_LOG)
		x->miss[x->nmiss++] = (struct span){rel, done};
	else
		x->miss_unlogged++;
}

/* Jobs of period p released in [t0, end): ceil((end - t0) / p). */
static uint64_t njobs(uint64_t p)
{
	return p ? (g_end - g_t0 + p - 1) / p : 0;
}

/* The partitioned FP executive (strict, relaxed); see the file header. */
static void run_periodic(struct exec *x)
{
	const struct plan *P = &g_plan;
	const bool relaxed = P->mode == M_RELAXED;
	const uint64_t t0 = g_t0;
	/* gets: strict τr jobs, relaxed arrivals */
	const uint64_t pg = relaxed ? P->ia : P->pg;
	const uint64_t ng = njobs(pg), ns = njobs(P->ps), nq = njobs(P->pq);
	uint64_t kg = 0, ks = 0, kq = 0; /* completed jobs: the oldest pending is number k */
	const uint64_t tsc0 = tsync_now(), mono0 = mono_ns();
	/* thresholds: at most a quarter (gaps) and half (requests) of the shortest period */
	uint64_t pmin = UINT64_MAX;
	if (pg && pg < pmin)
		pmin = pg;
	if (P->ps && P->ps < pmin)
		pmin = P->ps;
	if (P->pq && P->pq < pmin)
		pmin = P->pq;
	uint64_t gap = tsync_ns_to_ticks(DIST_GAP_NS), slow = tsync_ns_to_ticks(DIST_SLOW_NS);
	if (gap > pmin / 4)
		gap = pmin / 4;
	if (slow > pmin / 2)
		slow = pmin / 2;
	/* when the loop expected to run next: now, after a step; after a sleep, the release
	 * it slept for (waking later than asked but before that release delays nothing) */
	uint64_t expect = tsc0;
	for (;;) {
		if (kg >= ng && ks >= ns && kq >= nq)
			break;
		uint64_t now = tsync_now();
		if (now > expect + gap) {
			disturbed(x, expect, now);
			if (now - expect > x->gap_max)
				x->gap_max = now - expect;
		}
		expect = now;
		bool g = kg < ng && t0 + kg * pg <= now;
		bool s = ks < ns && t0 + ks * P->ps <= now;
		bool q = kq < nq && t0 + kq * P->pq <= now;
		if (relaxed && g) {
			uint64_t arrived = (now - t0) / pg + 1;
			if (arrived > ng)
				arrived = ng;
			if (arrived - kg > x->peak_queue)
				x->peak_queue = arrived - kg;
		}
		int run; /* 0 get, 1 σ, 2 set */
		if (!relaxed && g)
			run = 0;
		else if (q)
			run = 1;
		else if (s)
			run = 2;
		else if (g)
			run = 0; /* relaxed: the slack */
		else {
			uint64_t next = UINT64_MAX;
			if (kg < ng)
				next = t0 + kg * pg;
			if (ks < ns && t0 + ks * P->ps < next)
				next = t0 + ks * P->ps;
			if (kq < nq && t0 + kq * P->pq < next)
				next = t0 + kq * P->pq;
			x->backlogged = false; /* idle: caught up */
			expect = idle_until(now, next, tsc0, mono0) != now ? next : now;
			continue;
		}
		/* Skip-over: a periodic job whose deadline passed before it could start (the
		 * core was taken away - the hypervisor's steal, an interrupt storm - for longer
		 * than a period) is dropped and counted as a missed deadline (x->dropped too),
		 * rather than run late: a disturbance outside the task model then costs the jobs
		 * released during it, not every job until a backlog at utilisation U drains
		 * (a 20 ms stall at U = 0.85 would make the next 130 ms late). σ's jobs are not
		 * dropped but merged: one activation collects for every release it missed. */
		if (!relaxed && run == 0 && now > t0 + kg * pg + pg) {
			x->miss_g++;
			x->dropped++;
			x->dropped_g++;
			missed(x, t0 + kg * pg, now);
			kg++;
			continue;
		}
		if (run == 2 && now > t0 + ks * P->ps + P->ps) {
			x->miss_s++;
			x->dropped++;
			x->dropped_s++;
			missed(x, t0 + ks * P->ps, now);
			ks++;
			continue;
		}
		if (run == 1) {
			uint64_t last = (now - t0) / P->pq; /* the latest release */
			if (last >= nq)
				last = nq - 1;
			if (last > kq) { /* the deadlines of kq .. last - 1 have passed */
				x->miss_q += last - kq;
				kq = last;
			}
		}
		uint64_t a = tsync_now(), done, rel;
		switch (run) {
		case 0:
			rel = t0 + kg * pg;
			do_get(x, next_key(x, false));
			done = tsync_now();
			x->get_ticks += done - a;
			x->get_job_ticks += done - now;
			hist_add(x->hgs, done - a);
			hist_add(x->hg, done - rel);
			if (!relaxed && done - rel > pg) {
				x->miss_g++;
				missed(x, rel, done);
			}
			kg++;
			x->gets++;
			break;
		case 1:
			rel = t0 + kq * P->pq;
			sigma(x);
			done = tsync_now();
			if (done - rel > P->pq) {
				x->miss_q++;
				missed(x, rel, done);
			}
			if (done - rel > x->sigma_max)
				x->sigma_max = done - rel;
			kq++;
			break;
		default:
			rel = t0 + ks * P->ps;
			do_set(x, next_key(x, true), a);
			done = tsync_now();
			x->set_ticks += done - a;
			x->set_job_ticks += done - now;
			hist_add(x->hss, done - a);
			hist_add(x->hs, done - rel);
			if (done - rel > P->ps) {
				x->miss_s++;
				missed(x, rel, done);
			}
			ks++;
			x->sets++;
			break;
		}
		/* from the loop's clock reading, not from a: the dispatch decision between them
		 * can be interrupted too (an interrupt there once left a 508 us set miss that no
		 * recorded disturbance covered) */
		if (done - now > slow) {
			x->slow_requests++;
			disturbed(x, now, done);
		}
		expect = done;
		/* relaxed: stop serving the queue at the end; what is left is the backlog */
		if (relaxed && done >= g_end && ks >= ns && kq >= nq) {
			x->backlog = ng - kg;
			break;
		}
	}
}

static void *exec_main(void *arg)
{
	struct exec *x = arg;
	self_exec = x;
	x->pinned = x->cpu >= 0 && bench_pin_self(x->cpu) == 0;
	/* the idle sleeps end IDLE_SPIN_NS before a release: without timer slack (50 us by
	 * default for SCHED_OTHER threads, 0 for SCHED_FIFO ones) they wake in time */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (g_try_fifo) {
		struct sched_param sp = {.sched_priority = 1};
		x->fifo_err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
		x->fifo = x->fifo_err == 0;
	}
	tsync_thread_register();
	/* Warm-up, before the clock starts: the thread's first get, set and collection make
	 * its per-thread state in the cache and in every size class's allocator (a first σ
	 * alone takes milliseconds). */
	do_get(x, next_key(x, false));
	do_set(x, next_key(x, true), 0);
	if (cache_ps(g_cache) && g_plan.pq) {
		(void)ps_quiesce_time(cache_ps(g_cache));
		(void)cache_collect(g_cache);
	}
	x->gi = x->si = x->lo;
	x->get_misses = 0;
	x->beta_ticks = x->beta_n = 0; /* the warm-up's collection is not measured */
	(void)bench_run_wait(&g_run); /* g_t0 and g_end are set */
	if (g_plan.mode == M_CAL)
		run_calibrate(x);
	else
		run_periodic(x);
	return NULL;
}

/* ---- one run -------------------------------------------------------------------------- */

struct result {
	/* calibrate */
	double get_us, set_us, alpha_us, beta_us; /* averages; α, β: NAN unless rt-parsec */
	double get_job_us, set_job_us; /* periodic: average job costs (dispatch included) */
	/* every mode */
	uint64_t gets, sets, sigmas, misses, get_misses, backlog, peak_queue;
	uint64_t miss_g, miss_s, miss_q; /* deadline misses by task: get, set, σ */
	uint64_t dropped, dropped_g, dropped_s; /* jobs dropped (skip-over), counted in the misses */
	uint64_t sigma_max_ns;           /* σ's longest response */
	uint64_t unexplained;            /* misses overlapping no disturbance */
	uint64_t disturbances, slow_requests, gap_max_ns;
	uint64_t steal_ns;               /* hypervisor steal time on the executives' CPUs */
	double get_kops, set_kops;
	uint64_t get_p99_ns, set_p99_ns, get_max_ns, set_max_ns;
	uint64_t get_svc_p99_ns, set_svc_p99_ns;
	uint64_t peak_pending;
	bool fifo;
	int fifo_err;
	unsigned pinned;
};

static double ticks_us(double t)
{
	return t / tsync_ticks_per_ns() / 1000.0;
}

static uint64_t us_ticks(double us)
{
	uint64_t t = tsync_ns_to_ticks((uint64_t)llround(us * 1000.0));
	return t ? t : 1;
}

static uint64_t hist_ns(const struct hist *h, double q)
{
	return hist_count(h) ? tsync_ticks_to_ns(hist_quantile(h, q)) : 0;
}

static int run_one(enum design d, unsigned ncores, const uint32_t *trace, uint64_t nreq,
		   uint64_t records, const struct plan *plan, double seconds, struct result *r)
{
	memset(r, 0, sizeof *r);
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = d == D_RTPARSEC ? CACHE_PS_NOCRP : d == D_MCS ? CACHE_MCS : CACHE_PF_RW;
	if (d == D_RTPARSEC) {
		cfg.ps_policy = PS_POLICY_RT;
		cfg.reclaim_period_ns = RT_HOLD_NS;
		cfg.reclaim_fn = on_reclaim;
	}
	/* every record, the garbage of the run, and slack: nothing is ever evicted */
	cfg.mem_limit = records * 256 + (256ull << 20);
	unsigned hp = 4;
	while (hp < 30 && ((uint64_t)1 << hp) < records)
		hp++;
	cfg.hash_power = hp;
	cfg.no_grow = true;
	/* every item is one size (16-byte key, 32-byte value): the smallest item_size_max
	 * keeps the size classes - each one a ps_mem that σ's collection visits - few */
	cfg.item_size_max = 1024;
	g_cache = cache_create(&cfg);
	if (!g_cache) {
		fprintf(stderr, WHO ": cache_create: %s\n", strerror(errno));
		return -1;
	}
	char val[VAL_LEN];
	memset(val, 'v', sizeof val);
	for (uint64_t k = 0; k < records; k++)
		if (cache_store(g_cache, CACHE_SET, g_keys + k * KEY_LEN, KEY_LEN, val, VAL_LEN, 0,
				0, 0, NULL) != CACHE_STORED) {
			fprintf(stderr, WHO ": preload failed\n");
			cache_destroy(g_cache);
			return -1;
		}
	g_trace = trace;
	g_plan = *plan;
	struct exec *xs = calloc(ncores, sizeof *xs);
	pthread_t *th = calloc(ncores, sizeof *th);
	if (!xs || !th) {
		free(xs);
		free(th);
		cache_destroy(g_cache);
		return -1;
	}
	bench_run_init(&g_run, WHO, ncores);
	int rc = 0;
	unsigned started = 0;
	for (unsigned i = 0; i < ncores; i++) {
		struct exec *x = &xs[i];
		x->core = i;
		x->cpu = g_pin ? g_cpus[i % g_ncpus] : -1;
		x->lo = (size_t)(nreq * i / ncores);
		x->hi = (size_t)(nreq * (i + 1) / ncores);
		x->gi = x->si = x->lo;
		x->hg = calloc(1, sizeof(struct hist));
		x->hs = calloc(1, sizeof(struct hist));
		x->hgs = calloc(1, sizeof(struct hist));
		x->hss = calloc(1, sizeof(struct hist));
		x->dist = calloc(DIST_LOG, sizeof(struct span));
		x->miss = calloc(MISS_LOG, sizeof(struct span));
		if (!x->hg || !x->hs || !x->hgs || !x->hss || !x->dist || !x->miss ||
		    pthread_create(&th[i], NULL, exec_main, x) != 0) {
			fprintf(stderr, WHO ": cannot start executive %u\n", i);
			abort(); /* the barriers count on every thread */
		}
		started++;
	}
	bench_run_ready(&g_run);
	/* periodic: first release in 20 ms, when every executive is past the barrier and
	 * spinning */
	g_t0 = tsync_now() + (plan->mode == M_CAL ? 0 : tsync_ns_to_ticks(20000000u));
	g_end = g_t0 + tsync_ns_to_ticks((uint64_t)(seconds * 1e9));
	uint64_t steal0 = steal_ns(started < g_ncpus ? started : g_ncpus);
	bench_run_go(&g_run, g_end);
	struct hist hg = {{0}}, hs = {{0}}, hgs = {{0}}, hss = {{0}};
	uint64_t gt = 0, st = 0, at = 0, an = 0, bt = 0, bn = 0, gjt = 0, sjt = 0;
	double cal_gk = 0, cal_sk = 0; /* calibrate: per-core rates over active time, summed */
	r->fifo = true;
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	uint64_t steal1 = steal_ns(started < g_ncpus ? started : g_ncpus);
	r->steal_ns = steal1 > steal0 ? steal1 - steal0 : 0;
	/* a miss is explained by a disturbance on any core that overlaps its window */
	for (unsigned i = 0; i < started; i++) {
		struct exec *x = &xs[i];
		r->unexplained += x->miss_unlogged;
		for (unsigned m = 0; m < x->nmiss; m++) {
			bool ok = false;
			for (unsigned j = 0; j < started && !ok; j++)
				for (unsigned k = 0; k < xs[j].ndist && !ok; k++)
					ok = xs[j].dist[k].a < x->miss[m].b && xs[j].dist[k].b > x->miss[m].a;
			r->unexplained += !ok;
			if (!ok && getenv("TSYNC_RT_CACHE_DEBUG")) {
				FILE *df = fopen(getenv("TSYNC_RT_CACHE_DEBUG"), "a");
				fprintf(df, "unexplained miss core %u: [%+.1f, %+.1f] us\n", i,
					ticks_us((double)(x->miss[m].a - g_t0)),
					ticks_us((double)(x->miss[m].b - g_t0)));
				for (unsigned k = 0; k < x->ndist; k++)
					fprintf(df, "   dist [%+.1f, %+.1f]\n",
						ticks_us((double)x->dist[k].a - (double)g_t0),
						ticks_us((double)x->dist[k].b - (double)g_t0));
				fclose(df);
			}
		}
		r->disturbances += x->ndist_total;
		r->slow_requests += x->slow_requests;
		if (tsync_ticks_to_ns(x->gap_max) > r->gap_max_ns)
			r->gap_max_ns = tsync_ticks_to_ns(x->gap_max);
	}
	for (unsigned i = 0; i < started; i++) {
		struct exec *x = &xs[i];
		hist_merge(&hg, x->hg);
		hist_merge(&hs, x->hs);
		hist_merge(&hgs, x->hgs);
		hist_merge(&hss, x->hss);
		r->gets += x->gets;
		r->sets += x->sets;
		r->sigmas += x->sigmas;
		r->get_misses += x->get_misses;
		r->misses += x->miss_g + x->miss_s + x->miss_q;
		r->miss_g += x->miss_g;
		r->miss_s += x->miss_s;
		r->miss_q += x->miss_q;
		r->dropped += x->dropped;
		r->dropped_g += x->dropped_g;
		r->dropped_s += x->dropped_s;
		if (tsync_ticks_to_ns(x->sigma_max) > r->sigma_max_ns)
			r->sigma_max_ns = tsync_ticks_to_ns(x->sigma_max);
		r->backlog += x->backlog;
		r->peak_queue = x->peak_queue > r->peak_queue ? x->peak_queue : r->peak_queue;
		gt += x->get_ticks;
		st += x->set_ticks;
		gjt += x->get_job_ticks;
		sjt += x->set_job_ticks;
		at += x->alpha_ticks;
		an += x->alpha_n;
		bt += x->beta_ticks;
		bn += x->beta_n;
		r->fifo = r->fifo && x->fifo;
		if (x->fifo_err)
			r->fifo_err = x->fifo_err;
		r->pinned += x->pinned;
		uint64_t stop = x->end_tick > g_end ? x->end_tick : g_end;
		double active = (double)tsync_ticks_to_ns(stop - g_t0 - x->paused) / 1e9;
		if (active > 0) {
			cal_gk += (double)x->gets / active / 1000.0;
			cal_sk += (double)x->sets / active / 1000.0;
		}
		free(x->hg);
		free(x->hs);
		free(x->hgs);
		free(x->hss);
		free(x->dist);
		free(x->miss);
	}
	r->get_us = r->gets ? ticks_us((double)gt / (double)r->gets) : 0;
	r->get_job_us = r->gets ? ticks_us((double)gjt / (double)r->gets) : 0;
	r->set_job_us = r->sets ? ticks_us((double)sjt / (double)r->sets) : 0;
	r->set_us = r->sets ? ticks_us((double)st / (double)r->sets) : 0;
	r->alpha_us = d == D_RTPARSEC && an ? ticks_us((double)at / (double)an) : NAN;
	r->beta_us = d == D_RTPARSEC && bn ? ticks_us((double)bt / (double)bn) : NAN;
	r->get_kops = (double)r->gets / seconds / 1000.0;
	r->set_kops = (double)r->sets / seconds / 1000.0;
	if (plan->mode == M_CAL) {
		r->get_kops = cal_gk;
		r->set_kops = cal_sk;
		r->get_p99_ns = hist_ns(&hgs, 0.99);
		r->set_p99_ns = hist_ns(&hss, 0.99);
		r->get_max_ns = hist_ns(&hgs, 1.0);
		r->set_max_ns = hist_ns(&hss, 1.0);
	} else {
		r->get_p99_ns = hist_ns(&hg, 0.99);
		r->set_p99_ns = hist_ns(&hs, 0.99);
		r->get_max_ns = hist_ns(&hg, 1.0);
		r->set_max_ns = hist_ns(&hs, 1.0);
	}
	r->get_svc_p99_ns = hist_ns(&hgs, 0.99);
	r->set_svc_p99_ns = hist_ns(&hss, 0.99);
	/* the allocators' exact peaks (EXACT accounting under PS_POLICY_RT), summed over the
	 * size classes */
	if (d == D_RTPARSEC)
		for (unsigned i = 0; i < cache_nclasses(g_cache); i++) {
			struct ps_mem_stats ms;
			if (ps_mem_stats(cache_class_mem(g_cache, i), &ms) == 0)
				r->peak_pending += ms.peak_pending;
		}
	if (r->get_misses) {
		fprintf(stderr, WHO ": %" PRIu64 " gets missed a preloaded key\n", r->get_misses);
		rc = -1;
	}
	bench_run_destroy(&g_run);
	free(xs);
	free(th);
	cache_destroy(g_cache);
	g_cache = NULL;
	return rc;
}

/* ---- output --------------------------------------------------------------------------- */

struct outs {
	FILE *csv[2]; /* --csv, --out DIR/rt-cache.csv */
	const char *dir;
	json_t *runs; /* every run's JSON object */
};

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static int write_json_file(const char *path, json_t *j)
{
	if (json_dump_file(j, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
		fprintf(stderr, WHO ": cannot write %s\n", path);
		return -1;
	}
	return 0;
}

/* Does the kernel throttle SCHED_FIFO threads (RT bandwidth control: a real-time thread
 * may run sched_rt_runtime_us of every sched_rt_period_us, then waits out the period)?
 * At tens of microseconds of period the executives never sleep, so a FIFO executive
 * would be stopped for the rest of every throttling period - 50 ms each second by
 * default, a stall no analysis of the task set allows for. Unknown (no /proc): no. */
static bool rt_throttled(void)
{
	FILE *f = fopen("/proc/sys/kernel/sched_rt_runtime_us", "r");
	if (f == NULL)
		return false;
	long long rt = -1;
	if (fscanf(f, "%lld", &rt) != 1)
		rt = -1;
	fclose(f);
	return rt >= 0;
}

/* Steal time of the CPUs the executives run on, ns (/proc/stat's 8th field of each
 * cpuN line, in USER_HZ ticks): time the hypervisor ran something else on them - the
 * largest disturbance of a virtual machine, outside any task model. 0 if unknown. */
static uint64_t steal_ns(unsigned ncpu)
{
	FILE *f = fopen("/proc/stat", "r");
	if (f == NULL)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	char line[512];
	uint64_t sum = 0;
	while (fgets(line, sizeof line, f)) {
		int cpu;
		unsigned long long v[8];
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
			continue;
		for (unsigned i = 0; i < ncpu; i++)
			if (g_cpus[i] == cpu)
				sum += v[7];
	}
	fclose(f);
	return hz > 0 ? sum * (1000000000ull / (uint64_t)hz) : 0;
}

static const char *sched_line(const struct result *r, char *buf, size_t n)
{
	if (!g_try_fifo)
		snprintf(buf, n, "SCHED_OTHER (SCHED_FIFO not tried: %s)", g_no_fifo_why);
	else if (r->fifo)
		snprintf(buf, n, "SCHED_FIFO");
	else
		snprintf(buf, n, "SCHED_OTHER (SCHED_FIFO refused: %s)", strerror(r->fifo_err));
	return buf;
}

/* One CSV row. Empty fields: not applicable (periods in calibrate, the offered load
 * outside relaxed, bound_objects for the lock designs); get_period_us is 0 in relaxed
 * (gets are not periodic there). */
static void csv_row(struct outs *o, enum mode m, enum design d, unsigned cores, double gp,
		    double sp, double offered, const struct result *r, long long bound,
		    bool have_bound)
{
	char gps[32] = "", sps[32] = "", off[32] = "", bnd[32] = "";
	if (m != M_CAL) {
		snprintf(gps, sizeof gps, "%.6g", gp);
		snprintf(sps, sizeof sps, "%.6g", sp);
	}
	if (m == M_RELAXED)
		snprintf(off, sizeof off, "%.6g", offered);
	if (have_bound)
		snprintf(bnd, sizeof bnd, "%lld", bound);
	for (int k = 0; k < 2; k++)
		if (o->csv[k]) {
			fprintf(o->csv[k],
				"%s,%s,%u,%s,%s,%s,%.6g,%.6g,%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%s,%" PRIu64 "\n",
				mname[m], dname[d], cores, gps, sps, off, r->get_kops, r->set_kops,
				r->get_p99_ns, r->set_p99_ns, r->peak_pending, bnd, r->misses);
			fflush(o->csv[k]);
		}
}

static json_t *run_json(enum mode m, enum design d, unsigned cores, double gp, double sp,
			double q, double offered, double seconds, const struct result *r)
{
	char sb[512];
	json_t *j = json_object();
	json_object_set_new(j, "mode", json_string(mname[m]));
	json_object_set_new(j, "design", json_string(dname[d]));
	json_object_set_new(j, "cores", json_integer(cores));
	json_object_set_new(j, "seconds", json_real(seconds));
	if (m != M_CAL) {
		json_object_set_new(j, "get_period_us", json_real(gp));
		json_object_set_new(j, "set_period_us", json_real(sp));
	}
	json_object_set_new(j, "q_us", q > 0 ? json_real(q) : json_null());
	if (m == M_RELAXED)
		json_object_set_new(j, "offered_get_kops", json_real(offered));
	json_object_set_new(j, "get_us", json_real(r->get_us));
	json_object_set_new(j, "set_us", json_real(r->set_us));
	json_object_set_new(j, "alpha_us", num_or_null(r->alpha_us));
	json_object_set_new(j, "beta_us", num_or_null(r->beta_us));
	json_object_set_new(j, "gets", json_integer((json_int_t)r->gets));
	json_object_set_new(j, "sets", json_integer((json_int_t)r->sets));
	json_object_set_new(j, "sigmas", json_integer((json_int_t)r->sigmas));
	json_object_set_new(j, "get_kops", json_real(r->get_kops));
	json_object_set_new(j, "set_kops", json_real(r->set_kops));
	json_object_set_new(j, "get_p99_ns", json_integer((json_int_t)r->get_p99_ns));
	json_object_set_new(j, "set_p99_ns", json_integer((json_int_t)r->set_p99_ns));
	json_object_set_new(j, "get_max_ns", json_integer((json_int_t)r->get_max_ns));
	json_object_set_new(j, "set_max_ns", json_integer((json_int_t)r->set_max_ns));
	json_object_set_new(j, "get_service_p99_ns", json_integer((json_int_t)r->get_svc_p99_ns));
	json_object_set_new(j, "set_service_p99_ns", json_integer((json_int_t)r->set_svc_p99_ns));
	json_object_set_new(j, "peak_pending", json_integer((json_int_t)r->peak_pending));
	json_object_set_new(j, "deadline_misses", json_integer((json_int_t)r->misses));
	json_object_set_new(j, "deadline_misses_get", json_integer((json_int_t)r->miss_g));
	json_object_set_new(j, "deadline_misses_set", json_integer((json_int_t)r->miss_s));
	json_object_set_new(j, "deadline_misses_sigma", json_integer((json_int_t)r->miss_q));
	json_object_set_new(j, "jobs_dropped", json_integer((json_int_t)r->dropped));
	json_object_set_new(j, "jobs_dropped_get", json_integer((json_int_t)r->dropped_g));
	json_object_set_new(j, "jobs_dropped_set", json_integer((json_int_t)r->dropped_s));
	json_object_set_new(j, "sigma_max_ns", json_integer((json_int_t)r->sigma_max_ns));
	if (m != M_CAL) {
		json_object_set_new(j, "misses_unexplained", json_integer((json_int_t)r->unexplained));
		json_object_set_new(j, "disturbances", json_integer((json_int_t)r->disturbances));
		json_object_set_new(j, "steal_ms", json_real((double)r->steal_ns / 1e6));
		json_object_set_new(j, "slow_requests", json_integer((json_int_t)r->slow_requests));
		json_object_set_new(j, "gap_max_ns", json_integer((json_int_t)r->gap_max_ns));
	}
	if (m == M_RELAXED) {
		json_object_set_new(j, "get_backlog", json_integer((json_int_t)r->backlog));
		json_object_set_new(j, "peak_queue", json_integer((json_int_t)r->peak_queue));
	}
	json_object_set_new(j, "pinned", json_integer(r->pinned));
	json_object_set_new(j, "sched", json_string(sched_line(r, sb, sizeof sb)));
	return j;
}

/* Record a run's JSON (taking j): kept for calibrate's stdout, and DIR/<name>.json with
 * --out. */
static int emit_json(struct outs *o, json_t *j, const char *name)
{
	int rc = 0;
	if (o->dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.json", o->dir, name);
		rc = write_json_file(path, j);
	}
	json_array_append_new(o->runs, j);
	return rc;
}

/* ---- admission (strict, relaxed) ------------------------------------------------------ */

struct admission {
	double get_p_us, set_p_us, q_us;
	bool schedulable;
	long long bound;  /* G*, objects */
	bool have_bound;
	json_t *json;     /* the tool's output, owned */
};

static int write_yaml(const char *path, enum design d, unsigned cores, const struct result *cal,
		      double q_us)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, WHO ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	/* obj_size: the item's chunk (header + 16-byte key + 32-byte value, class size) */
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.item_size_max = 1024; /* as run_one's */
	struct cache *c = cache_create(&cfg);
	uint32_t obj = 0;
	if (c) {
		int k = cache_class_for(c, KEY_LEN, VAL_LEN);
		struct cache_class_stats cs;
		if (k >= 0 && cache_class_stats(c, (unsigned)k, &cs) == 0)
			obj = cs.chunk_size;
		cache_destroy(c);
	}
	fprintf(f, "# tsync-bench rt-cache: admission for %s on %u core(s) (RT-SMR (RTAS 2018)\n"
		   "# sec. VII-C); e, gamma: measured average costs (us), as the paper's soft\n"
		   "# real-time analysis uses.\n",
		dname[d], cores);
	fprintf(f, "cores: %u\n", cores);
	fprintf(f, "alpha: %.6g\n", d == D_RTPARSEC && !isnan(cal->alpha_us) ? cal->alpha_us : 0.0);
	fprintf(f, "beta: %.6g\n", d == D_RTPARSEC && !isnan(cal->beta_us) ? cal->beta_us : 0.0);
	fprintf(f, "obj_size: %u\n", obj ? obj : 128u);
	fprintf(f, "policy: %s\n", dpolicy[d]);
	fprintf(f, "tasks:\n");
	/* a zero cost would be refused; the clock's resolution is far below a request */
	double ge = cal->get_us > 0.001 ? cal->get_us : 0.001;
	double se = cal->set_us > 0.001 ? cal->set_us : 0.001;
	for (unsigned c2 = 0; c2 < cores; c2++) {
		fprintf(f, "  - {name: get%u, e: %.6g, p: read, core: %u, prio: 2, gamma_r: %.6g}\n",
			c2, ge, c2, ge);
		fprintf(f,
			"  - {name: set%u, e: %.6g, p: update, core: %u, prio: 1, gamma_w: %.6g, "
			"a: 1}\n",
			c2, se, c2, se);
	}
	fprintf(f, "admission:\n");
	fprintf(f, "  update_periods: {min: %g, max: %g, steps: %d}\n", ADM_UPDATE_MIN,
		ADM_UPDATE_MAX, ADM_UPDATE_STEPS);
	fprintf(f, "  read_period: {min: %.6g, max: %g}\n", ge, ADM_READ_MAX);
	if (q_us > 0)
		fprintf(f, "  q: %.6g\n", q_us);
	return fclose(f) == 0 ? 0 : -1;
}

/* Run `<rta> admission YAML --json` and parse its JSON. 0, or -1 (reported). */
static int run_admission(const char *rta, const char *yaml, struct admission *a)
{
	/* the path goes to the shell single-quoted */
	size_t n = strlen(rta) + 4 * strlen(yaml) + 64;
	char *cmd = malloc(n), *p;
	if (!cmd)
		return -1;
	p = cmd + sprintf(cmd, "%s admission '", rta);
	for (const char *s = yaml; *s; s++)
		p = *s == '\'' ? stpcpy(p, "'\\''") : (*p = *s, p + 1);
	/* inflation: one write request per core and job here, where the ILP found the same
	 * periods in every case compared, at a tenth of the time */
	strcpy(p, "' --json --blocking inflation");
	FILE *f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, WHO ": cannot run %s: %s\n", cmd, strerror(errno));
		free(cmd);
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	int st = pclose(f);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (!buf || (code != 0 && code != 1)) {
		fprintf(stderr, WHO ": `%s` exited with %d (set --rta or TSYNC_RTA)\n", cmd, code);
		free(buf);
		free(cmd);
		return -1;
	}
	buf[len] = '\0';
	json_error_t err;
	a->json = json_loads(buf, 0, &err);
	free(buf);
	if (!a->json || !json_is_object(a->json)) {
		fprintf(stderr, WHO ": `%s`: no JSON object on stdout (%s)\n", cmd, err.text);
		free(cmd);
		return -1;
	}
	free(cmd);
	json_t *j = a->json;
	a->schedulable = json_is_true(json_object_get(j, "schedulable"));
	if (a->schedulable != (code == 0)) {
		fprintf(stderr, WHO ": admission: exit status %d but schedulable %s\n", code,
			a->schedulable ? "true" : "false");
		return -1;
	}
	if (!a->schedulable)
		return 0;
	json_t *u = json_object_get(j, "update_period_us"), *r = json_object_get(j, "read_period_us");
	json_t *q = json_object_get(j, "q_us"), *b = json_object_get(j, "bound_objects");
	if (!json_is_number(u) || !json_is_number(r)) {
		fprintf(stderr, WHO ": admission: update_period_us / read_period_us missing\n");
		return -1;
	}
	a->set_p_us = json_number_value(u);
	a->get_p_us = json_number_value(r);
	a->q_us = json_is_number(q) ? json_number_value(q) : 0;
	a->have_bound = json_is_number(b);
	a->bound = a->have_bound ? (long long)llround(json_number_value(b)) : 0;
	return 0;
}

/* Calibrate (briefly), then the admission, or the given periods. 0 (a->schedulable says
 * whether to run), or -1. */
/* Write the admission task set of `cost` (its get_us/set_us/alpha_us/beta_us) as
 * OUT/NAME.yaml, run the tool on it, keep its output as OUT/NAME.out.json. */
static int admission_step(const struct opts *o, struct outs *out, enum design d, unsigned cores,
			  const struct result *cost, const char *name, const char *tmpdir,
			  struct admission *a)
{
	char yaml[4096];
	json_decref(a->json);
	memset(a, 0, sizeof *a);
	a->q_us = o->q_us;
	snprintf(yaml, sizeof yaml, "%s/%s.yaml", out->dir ? out->dir : tmpdir, name);
	if (write_yaml(yaml, d, cores, cost, o->q_us) != 0)
		return -1;
	const char *rta = o->rta;
	if (!rta || !*rta)
		rta = getenv("TSYNC_RTA");
	if (!rta || !*rta)
		rta = "python3 -m tsync_rta";
	if (run_admission(rta, yaml, a) != 0)
		return -1;
	if (out->dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.out.json", out->dir, name);
		write_json_file(path, a->json);
	}
	if (a->schedulable)
		fprintf(stderr, "  admission %-9s %u core(s): get period %.3f us, set period %.3f us, "
				"q %.3f us\n",
			dname[d], cores, a->get_p_us, a->set_p_us, a->q_us);
	else
		fprintf(stderr, "  admission %-9s %u core(s): no candidate schedulable\n", dname[d],
			cores);
	return 0;
}

/* σ's period for design d under admission a: --q-us, else the admission's q, else the
 * set period (0: no σ). */
static double sigma_q_us(const struct opts *o, enum design d, const struct admission *a)
{
	if (d != D_RTPARSEC)
		return 0;
	return o->q_us > 0 ? o->q_us : a->q_us > 0 ? a->q_us : a->set_p_us;
}

/*
 * The periods of design d on `cores` cores: given (--get-period-us/--set-period-us), or
 * chosen by `tsync-rta admission` from measured average costs, in two steps:
 *  1. calibrate: requests back to back (get, set, α, β), and admit with those costs;
 *  2. probe: run the tasks at the admitted periods for as long as calibrate ran, and
 *     admit again with the average JOB costs measured there - from the executive's
 *     dispatch decision to completion, so the clock reads and the priority decision that
 *     every job of this schedule pays are in e - and that run's α and β. The same
 *     requests cost more in the periodic schedule than back to back (each job starts
 *     after a wait, its lines gone cold; measured here up to 2x for sets), so step 1's
 *     periods alone overload the cores. Step 2's are the ones that run: the admission
 *     rests on the average overheads (the paper's soft real-time analysis, §VII-C) of
 *     the schedule it admits.
 */
static int admit(const struct opts *o, struct outs *out, enum design d, unsigned cores,
		 const uint32_t *trace, uint64_t records, const char *tmpdir,
		 struct admission *a)
{
	memset(a, 0, sizeof *a);
	a->q_us = o->q_us;
	if (o->set_p_us > 0 && (o->mode == M_RELAXED || o->get_p_us > 0)) {
		a->set_p_us = o->set_p_us;
		a->get_p_us = o->get_p_us;
		a->schedulable = true;
		a->have_bound = d == D_RTPARSEC; /* -1: not computed */
		a->bound = -1;
		return 0;
	}
	struct plan cp = {.mode = M_CAL};
	double cq = 0;
	if (d == D_RTPARSEC) {
		cq = o->q_us > 0 ? o->q_us : CAL_Q_US;
		cp.pq = us_ticks(cq);
	}
	struct result cal;
	double cs = o->seconds < CAL_SECONDS ? o->seconds : CAL_SECONDS;
	if (run_one(d, cores, trace, o->requests, records, &cp, cs, &cal) != 0)
		return -1;
	fprintf(stderr, "  calibrate %-9s %u core(s): get %.3f us, set %.3f us, alpha %.3f us, "
			"beta %.4f us\n",
		dname[d], cores, cal.get_us, cal.set_us, cal.alpha_us, cal.beta_us);
	char name[256];
	snprintf(name, sizeof name, "admission-%s-%u", dname[d], cores);
	if (emit_json(out, run_json(M_CAL, d, cores, 0, 0, cq, 0, cs, &cal), name) != 0)
		return -1;
	if (admission_step(o, out, d, cores, &cal, name, tmpdir, a) != 0)
		return -1;
	if (!a->schedulable)
		return 0;
	/* step 2: the probe */
	double pq = sigma_q_us(o, d, a);
	struct plan pp = {.mode = M_STRICT, .pg = us_ticks(a->get_p_us), .ps = us_ticks(a->set_p_us),
			  .pq = pq > 0 ? us_ticks(pq) : 0};
	struct result pr;
	if (run_one(d, cores, trace, o->requests, records, &pp, cs, &pr) != 0)
		return -1;
	struct result cost = pr;
	cost.get_us = pr.get_job_us;
	cost.set_us = pr.set_job_us;
	if (d == D_RTPARSEC && (isnan(pr.alpha_us) || isnan(pr.beta_us))) {
		cost.alpha_us = cal.alpha_us;
		cost.beta_us = cal.beta_us;
	}
	fprintf(stderr, "  probe     %-9s %u core(s): get job %.3f us, set job %.3f us, alpha %.3f "
			"us, beta %.4f us, misses %" PRIu64 "\n",
		dname[d], cores, cost.get_us, cost.set_us, cost.alpha_us, cost.beta_us, pr.misses);
	snprintf(name, sizeof name, "admission-%s-%u-probe", dname[d], cores);
	json_t *pj = run_json(M_STRICT, d, cores, a->get_p_us, a->set_p_us, pq, 0, cs, &pr);
	json_object_set_new(pj, "get_job_us", json_real(pr.get_job_us));
	json_object_set_new(pj, "set_job_us", json_real(pr.set_job_us));
	if (emit_json(out, pj, name) != 0)
		return -1;
	return admission_step(o, out, d, cores, &cost, name, tmpdir, a);
}

/* ---- options -------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: tsync-bench rt-cache --mode calibrate|strict|relaxed\n"
	      "         [--designs rt-parsec,mcs,pf-rw] [--cores 1,2] [--get-rates KOPS,...]\n"
	      "         [--seconds S] [--requests N] [--q-us Q]\n"
	      "         [--get-period-us P --set-period-us P] [--rta CMD] [--csv FILE|-]\n"
	      "         [--out DIR]\n"
	      "\n"
	      "The memcached application study of RT-SMR (RTAS 2018) sec. VII-C (Figs. 14-15) on\n"
	      "the tsync-cached core: per core a get task (higher priority) and a set task, one\n"
	      "request per job, run by one pinned fixed-priority executive thread per core on\n"
	      "the TSC clock; rt-parsec adds the quiescence task sigma (period q). YCSB Zipf 0.99,\n"
	      "20% sets, 16-byte keys, 32-byte values, every record preloaded, no eviction.\n"
	      "(bench/README.md, \"rt-cache\")\n"
	      "\n"
	      "  --mode M          calibrate: average get/set cost, alpha, beta (JSON on stdout)\n"
	      "                    strict: calibrate, admission (tsync-rta), run at its periods\n"
	      "                    relaxed: sets periodic, gets at each --get-rates in the slack\n"
	      "  --designs LIST    rt-parsec,mcs,pf-rw (default: all three)\n"
	      "  --cores LIST      core counts (default 1..CPUs); core i runs on the i-th CPU\n"
	      "  --get-rates LIST  relaxed: offered gets, kops PER CORE (default 50,100,200,400);\n"
	      "                    the CSV's offered_get_kops and get_kops are totals\n"
	      "  --seconds S       each run's length (default 2; calibrate inside strict/relaxed:\n"
	      "                    min(S, 0.5))\n"
	      "  --requests N      trace length, partitioned over the cores (default 10000000);\n"
	      "                    records: min(N, 1000000)\n"
	      "  --q-us Q          rt-parsec's sigma period (default: the admission's q, else the\n"
	      "                    set period; calibrate: 100)\n"
	      "  --get-period-us P, --set-period-us P\n"
	      "                    skip the admission: strict needs both, relaxed the set period\n"
	      "  --rta CMD         the admission command (default $TSYNC_RTA, else\n"
	      "                    'python3 -m tsync_rta'); run as CMD admission FILE --json\n"
	      "  --csv FILE|-      the CSV (default: stdout for strict/relaxed)\n"
	      "  --out DIR         DIR/rt-cache.csv, per-run JSON, admission YAML/JSON, COMMAND.txt\n"
	      "  --pin / --no-pin  pin core i's executive to the i-th allowed CPU (default\n"
	      "                    --pin; --no-pin leaves them to the scheduler: not the\n"
	      "                    partitioned schedule the analysis models, for tests)\n"
	      "Environment: TSYNC_BENCH_NO_FIFO=1: do not try SCHED_FIFO for the executives.\n"
	      "CSV: " CSV_HEADER "\n",
	      f);
}

static int opt_mode(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	int k;
	for (k = 0; k < 3 && strcmp(arg, mname[k]) != 0; k++)
		;
	if (k == 3) {
		fprintf(stderr, WHO ": bad --mode '%s'\n", arg);
		return -1;
	}
	o->mode = (enum mode)k;
	o->have_mode = true;
	return 0;
}

static int select_design(const char *t, void *ctx)
{
	struct opts *o = ctx;
	int k;
	for (k = 0; k < ND && strcmp(t, dname[k]) != 0; k++)
		;
	if (k == ND) {
		fprintf(stderr, WHO ": unknown design '%s'\n", t);
		return -1;
	}
	o->sel[k] = o->any_sel = true;
	return 0;
}

static int opt_designs(const char *arg, void *ctx)
{
	return bench_each_item(arg, select_design, ctx) == 0 ? 0 : -1;
}

/* 0, BENCH_GETOPT_DONE (--help) or -1. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	const struct bench_opt opts[] = {
		BENCH_O_FN("mode", 0, BENCH_OPT_CALL, opt_mode),
		BENCH_O_FN("designs", 0, BENCH_OPT_CALL, opt_designs),
		BENCH_O_LIST("cores", 0, BENCH_OPT_UINTS, o->cores, &o->ncores, 1, MAX_CORES,
			     BENCH_LIST_SKIP_EMPTY),
		BENCH_O_LIST("get-rates", 0, BENCH_OPT_U64S, o->rates, &o->nrates, 1, 100000000u,
			     BENCH_LIST_SKIP_EMPTY),
		BENCH_O_DBL("seconds", 0, BENCH_OPT_SECONDS, &o->seconds, 3600),
		BENCH_O_NUM("requests", 0, BENCH_OPT_U64, &o->requests, 1000, 1ull << 32),
		BENCH_O_DBL("q-us", 0, BENCH_OPT_POS, &o->q_us, 1e9),
		BENCH_O_DBL("get-period-us", 0, BENCH_OPT_POS, &o->get_p_us, 1e9),
		BENCH_O_DBL("set-period-us", 0, BENCH_OPT_POS, &o->set_p_us, 1e9),
		BENCH_O_STR("rta", 0, &o->rta),
		BENCH_O_STR("csv", 0, &o->csv),
		BENCH_O_STR("out", 0, &o->out),
		BENCH_O_SET("pin", 0, &o->pin),
		BENCH_O_CLEAR("no-pin", 0, &o->pin),
		BENCH_O_END,
	};
	int rc = bench_getopt(WHO, argc, argv, opts, usage, o);
	if (rc != 0)
		return rc;
	if (!o->have_mode) {
		fprintf(stderr, WHO ": --mode is required\n");
		usage(stderr);
		return -1;
	}
	if (o->mode == M_STRICT && (o->get_p_us > 0) != (o->set_p_us > 0)) {
		fprintf(stderr, WHO ": strict: give both --get-period-us and --set-period-us, or "
				"neither (admission)\n");
		return -1;
	}
	if (!o->any_sel)
		for (int k = 0; k < ND; k++)
			o->sel[k] = true;
	return 0;
}

/* ---- main ----------------------------------------------------------------------------- */

static int write_command(const char *dir, const char *cmdline, const char *sched)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/COMMAND.txt", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\nsched: %s\nclock: %s, %.4f ticks/ns\ncpus: %u\n", cmdline, sched,
		tsync_clock_source_name(), tsync_ticks_per_ns(), g_ncpus);
	return fclose(f);
}

int rt_cache_main(int argc, char **argv, const char *cmdline)
{
	struct opts o = {.seconds = 2.0, .requests = 10000000u, .pin = true};
	g_ncpus = bench_cpus(g_cpus);
	int prc = parse_opts(argc, argv, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	g_pin = o.pin;
	const char *nf = getenv("TSYNC_BENCH_NO_FIFO");
	g_try_fifo = true;
	if (nf && *nf && strcmp(nf, "0") != 0) {
		g_try_fifo = false;
		g_no_fifo_why = "TSYNC_BENCH_NO_FIFO";
	} else if (rt_throttled()) {
		g_try_fifo = false;
		g_no_fifo_why = "the kernel throttles real-time threads (kernel.sched_rt_runtime_us "
				"< sched_rt_period_us): an executive that spins between releases "
				"would be stopped for the rest of every throttling period (50 ms of "
				"each second by default); sysctl -w kernel.sched_rt_runtime_us=-1 "
				"lifts it";
	}
	if (o.ncores == 0)
		o.ncores = bench_thread_counts(o.cores, MAX_LIST, g_ncpus);
	for (unsigned i = 0; i < o.ncores; i++)
		if (o.cores[i] > g_ncpus) {
			/* two spinning executives on one CPU would not be a partitioned schedule
			 * (and under SCHED_FIFO one would starve the other) */
			fprintf(stderr, WHO ": --cores %u: only %u CPUs to pin executives to\n",
				o.cores[i], g_ncpus);
			return 2;
		}
	if (o.nrates == 0) {
		static const uint64_t def[] = {50, 100, 200, 400};
		for (unsigned i = 0; i < 4; i++)
			o.rates[o.nrates++] = def[i];
	}
	if (tsync_clock_init() != 0) {
		perror("tsync_clock_init");
		return 1;
	}
	struct outs out = {.dir = o.out, .runs = json_array()};
	char tmpdir[64] = "";
	/* calibrate's JSON goes to stdout: its CSV only where asked for */
	struct bench_csv csv = {{NULL, NULL}, NULL};
	if ((o.csv || o.out || o.mode != M_CAL) &&
	    bench_csv_open(&csv, WHO, o.csv, o.out, "rt-cache.csv", CSV_HEADER) != 0)
		return 1;
	out.csv[0] = csv.f[0];
	out.csv[1] = csv.f[1];
	if (!o.out && o.mode != M_CAL && !(o.get_p_us > 0 || (o.mode == M_RELAXED && o.set_p_us > 0))) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/tsync-rt-cache.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			fprintf(stderr, WHO ": mkdtemp: %s\n", strerror(errno));
			return 1;
		}
	}
	uint64_t records = o.requests < MAX_RECORDS ? o.requests : MAX_RECORDS;
	/* keys: "user" + 12 digits = 16 bytes, as YCSB's "user<number>" */
	char *keys = malloc(records * KEY_LEN + 1);
	uint32_t *trace = ycsb_trace(o.requests, SET_PCT, records);
	if (!keys || !trace) {
		fprintf(stderr, WHO ": out of memory for the trace\n");
		return 1;
	}
	for (uint64_t k = 0; k < records; k++) {
		char tmp[32];
		snprintf(tmp, sizeof tmp, "user%012" PRIu64, k);
		memcpy(keys + k * KEY_LEN, tmp, KEY_LEN);
	}
	g_keys = keys;
	fprintf(stderr, WHO ": %s, %" PRIu64 " requests, %" PRIu64 " records, %u CPUs\n",
		mname[o.mode], o.requests, records, g_ncpus);
	int status = 0;
	char sched[512] = "";
	for (int d = 0; d < ND && !status; d++) {
		if (!o.sel[d])
			continue;
		for (unsigned ci = 0; ci < o.ncores && !status; ci++) {
			unsigned n = o.cores[ci];
			char name[256];
			struct result r;
			if (o.mode == M_CAL) {
				struct plan p = {.mode = M_CAL};
				double q = 0;
				if (d == D_RTPARSEC) {
					q = o.q_us > 0 ? o.q_us : CAL_Q_US;
					p.pq = us_ticks(q);
				}
				if (run_one((enum design)d, n, trace, o.requests, records, &p, o.seconds,
					    &r) != 0) {
					status = 1;
					break;
				}
				sched_line(&r, sched, sizeof sched);
				fprintf(stderr, "  %-9s %u core(s): get %.3f us, set %.3f us, alpha %.3f "
						"us, beta %.4f us (%s)\n",
					dname[d], n, r.get_us, r.set_us, r.alpha_us, r.beta_us, sched);
				snprintf(name, sizeof name, "calibrate-%s-%u", dname[d], n);
				if (emit_json(&out, run_json(M_CAL, (enum design)d, n, 0, 0, q, 0,
							     o.seconds, &r),
					      name) != 0)
					status = 1;
				csv_row(&out, M_CAL, (enum design)d, n, 0, 0, 0, &r, 0, false);
				continue;
			}
			struct admission a;
			if (admit(&o, &out, (enum design)d, n, trace, records, tmpdir, &a) != 0) {
				json_decref(a.json);
				status = 1;
				break;
			}
			if (!a.schedulable) {
				/* a row that says so: empty periods and results */
				for (int k = 0; k < 2; k++)
					if (out.csv[k])
						fprintf(out.csv[k], "%s,%s,%u,,,,,,,,,,\n", mname[o.mode],
							dname[d], n);
				json_decref(a.json);
				continue;
			}
			double q = 0;
			struct plan p = {.mode = o.mode, .ps = us_ticks(a.set_p_us)};
			if (o.mode == M_STRICT)
				p.pg = us_ticks(a.get_p_us);
			if (d == D_RTPARSEC) {
				q = sigma_q_us(&o, (enum design)d, &a);
				p.pq = us_ticks(q);
			}
			unsigned nruns = o.mode == M_RELAXED ? o.nrates : 1;
			for (unsigned ri = 0; ri < nruns && !status; ri++) {
				double offered = 0; /* kops, total */
				if (o.mode == M_RELAXED) {
					p.ia = tsync_ns_to_ticks(1000000u) / o.rates[ri];
					if (!p.ia)
						p.ia = 1;
					offered = (double)o.rates[ri] * n;
				}
				if (run_one((enum design)d, n, trace, o.requests, records, &p, o.seconds,
					    &r) != 0) {
					status = 1;
					break;
				}
				sched_line(&r, sched, sizeof sched);
				double gp = o.mode == M_STRICT ? a.get_p_us : 0;
				fprintf(stderr,
					"  %-7s %-9s %u core(s) get %.3g us set %.3g us%s%.6g: %.1f + %.1f "
					"kops, p99 get %" PRIu64 " ns set %" PRIu64 " ns, peak pending %" PRIu64
					", misses %" PRIu64 " (%s)\n",
					mname[o.mode], dname[d], n, gp, a.set_p_us,
					o.mode == M_RELAXED ? ", offered kops " : ", q ",
					o.mode == M_RELAXED ? offered : q, r.get_kops, r.set_kops,
					r.get_p99_ns, r.set_p99_ns, r.peak_pending, r.misses, sched);
				json_t *j = run_json(o.mode, (enum design)d, n, gp, a.set_p_us, q, offered,
						     o.seconds, &r);
				json_object_set_new(j, "bound_objects",
						    a.have_bound ? json_integer(a.bound) : json_null());
				if (a.json)
					json_object_set(j, "admission", a.json);
				if (o.mode == M_RELAXED)
					snprintf(name, sizeof name, "relaxed-%s-%u-%" PRIu64, dname[d], n,
						 o.rates[ri]);
				else
					snprintf(name, sizeof name, "strict-%s-%u", dname[d], n);
				if (emit_json(&out, j, name) != 0)
					status = 1;
				csv_row(&out, o.mode, (enum design)d, n, gp, a.set_p_us, offered, &r,
					a.bound, a.have_bound);
			}
			json_decref(a.json);
		}
	}
	if (o.mode == M_CAL && !status && !(o.csv && strcmp(o.csv, "-") == 0)) {
		json_t *root = json_object();
		json_object_set_new(root, "command", json_string(cmdline));
		json_object_set_new(root, "sched", json_string(sched));
		json_object_set(root, "runs", out.runs);
		json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
		json_decref(root);
	}
	if (o.out && write_command(o.out, cmdline, sched) != 0) {
		fprintf(stderr, WHO ": cannot write %s/COMMAND.txt\n", o.out);
		status = 1;
	}
	if (tmpdir[0]) {
		char path[4096];
		for (int d = 0; d < ND; d++)
			for (unsigned ci = 0; ci < o.ncores; ci++) {
				for (int probe = 0; probe < 2; probe++) { /* admit()'s two steps */
					snprintf(path, sizeof path, "%s/admission-%s-%u%s.yaml", tmpdir,
						 dname[d], o.cores[ci], probe ? "-probe" : "");
					unlink(path);
				}
			}
		rmdir(tmpdir);
	}
	json_decref(out.runs);
	free(keys);
	free(trace);
	bench_csv_close(&csv);
	return status;
}
