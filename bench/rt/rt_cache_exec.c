/*
 * bench/rt/rt_cache_exec.c - `tsync-bench rt-cache`: the partitioned fixed-priority
 * executive of one core (RT-SMR (RTAS 2018) §V, §VII-C): its requests, σ, calibrate's
 * back-to-back loop, and the periodic schedule with its disturbance and miss records.
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
 * the kernel does not throttle real-time threads (bench_rt_throttled: a spinning FIFO
 * executive would be stopped for 50 ms of every second); otherwise, or with the
 * environment TSYNC_BENCH_NO_FIFO=1 (shared machines, the smoke tests), they run
 * SCHED_OTHER, and the JSON's and COMMAND.txt's "sched" says why. Each run also records
 * the hypervisor's steal time on the executives' CPUs (steal_ms): in a VM, the largest
 * disturbance.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <tsync/arch.h>
#include <tsync/clock.h>
#include <tsync/ps.h>
#include <tsync/thread.h>

#include "rt_cache_internal.h"

static _Thread_local struct exec *self_exec;

/* ---- the trace ------------------------------------------------------------------------ */

/* The trace is ycsb_trace(requests, 20, records): that of `tsync-bench cache --set-pct 20`. */

/* The next key of the wanted kind in x's partition (cyclic); any key if there is none. */
static const char *next_key(struct exec *x, bool set)
{
	size_t *cur = set ? &x->si : &x->gi;
	size_t i = *cur;
	for (size_t n = x->hi - x->lo; n; n--) {
		uint32_t e = rtc_trace[i];
		if (++i == x->hi)
			i = x->lo;
		if (((e & SET_BIT) != 0) == set) {
			*cur = i;
			return rtc_keys + (size_t)(e & ~SET_BIT) * KEY_LEN;
		}
	}
	*cur = i;
	return rtc_keys + (size_t)(rtc_trace[i] & ~SET_BIT) * KEY_LEN;
}

/* ---- requests and σ --------------------------------------------------------------------- */

static void do_get(struct exec *x, const char *key)
{
	char buf[VAL_LEN];
	uint32_t n;
	if (cache_get_copy(rtc_cache, key, KEY_LEN, buf, sizeof buf, &n, NULL, NULL) != CACHE_OK)
		x->get_misses++;
}

static void do_set(struct exec *x, const char *key, uint64_t stamp)
{
	char val[VAL_LEN];
	memset(val, 'v', sizeof val);
	memcpy(val, &stamp, sizeof stamp); /* a fresh value each time */
	memcpy(val + 8, &x->core, sizeof x->core);
	enum cache_status st =
		cache_store(rtc_cache, CACHE_SET, key, KEY_LEN, val, VAL_LEN, 0, 0, 0, NULL);
	if (st != CACHE_STORED) {
		fprintf(stderr, WHO ": set failed: %s\n", cache_status_name(st));
		abort();
	}
}

/* One activation of σ (RT-SMR (RTAS 2018) §V-C): one quiescence computation, then the collection of
 * every size class's queue of this thread. Its cost in the analysis is α + collected x β
 * (Eq. 7), so α is the activation's whole fixed cost - the quiescence computation and the
 * visit of every size class's allocator - the activation minus the collection time the
 * reclamation observer reports for the objects it moved (β's samples). Returns the
 * ticks of that collection; the caller records α (sample_alpha), over the window it
 * charges to the job. */
static uint64_t sigma(struct exec *x)
{
	uint64_t b0 = x->beta_ticks;
	(void)ps_quiesce_time(cache_ps(rtc_cache));
	(void)cache_collect(rtc_cache);
	x->sigmas++;
	return x->beta_ticks - b0;
}

/* One α sample: an activation (with what the caller charges to it) of `ticks`, `coll`
 * of them collecting. */
static void sample_alpha(struct exec *x, uint64_t ticks, uint64_t coll)
{
	uint64_t a = ticks > coll ? ticks - coll : 0;
	x->alpha_ticks += a;
	x->alpha_n++;
	hist_add(x->hqa, a);
}

/* The cache's reclamation observer (rt-parsec only): β samples of the collecting core,
 * one per batch (its cost per object, rounded up) for the tail statistics. */
void rtc_on_reclaim(void *arg, const struct ps_mem_reclaim_info *info)
{
	(void)arg;
	struct exec *x = self_exec;
	if (x && info->collected) {
		x->beta_ticks += info->collect_ticks;
		x->beta_n += info->collected;
		hist_add(x->hqb, (info->collect_ticks + info->collected - 1) / info->collected);
	}
}

/*
 * A job's cost, as the admission must charge it: from the loop's clock reading that began
 * the dispatch decision to the next one - the decision, the request, and the bookkeeping
 * after it (clock reads, histograms, miss and disturbance records) that delays whatever
 * runs next on the core just as the request does. σ's activation gives an α sample (its
 * collection time is β's); a job dropped by skip-over ran nothing and gives none.
 */
enum job_kind { JOB_NONE = -1, JOB_GET, JOB_SIGMA, JOB_SET };

static void job_cost(struct exec *x, enum job_kind k, uint64_t ticks, uint64_t coll)
{
	switch (k) {
	case JOB_GET:
		x->get_job_ticks += ticks;
		hist_add(x->hgj, ticks);
		break;
	case JOB_SET:
		x->set_job_ticks += ticks;
		hist_add(x->hsj, ticks);
		break;
	case JOB_SIGMA: sample_alpha(x, ticks, coll); break;
	default: break;
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
		if (rtc_trace[i] & SET_BIT)
			*set = true;
		else
			*get = true;
	}
}

/*
 * Calibrate runs until rtc_end and, past it, until it has measured every cost it reports
 * at least once: a get and a set (where the partition has them) and, with σ, an
 * activation and a collected object (β). An executive that did not get its CPU before
 * rtc_end (a loaded machine) would otherwise report costs of 0 or none, and the admission
 * would take them as the task set's costs. The time past rtc_end counts as active time
 * (x->end_tick).
 */
static bool cal_needs_more(const struct exec *x, bool get, bool set)
{
	return (get && x->gets == 0) || (set && x->sets == 0) ||
	       (rtc_plan.pq && (x->alpha_n == 0 || (set && x->beta_n == 0)));
}

static void run_calibrate(struct exec *x)
{
	const uint64_t pq = rtc_plan.pq, burst = tsync_ns_to_ticks(CAL_BURST_NS);
	uint64_t now = tsync_now(), nq = now + pq, pause_at = now + burst;
	size_t i = x->lo;
	bool has_get, has_set;
	partition_kinds(x, &has_get, &has_set);
	while (now < rtc_end || cal_needs_more(x, has_get, has_set)) {
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
		uint32_t e = rtc_trace[i];
		if (++i == x->hi)
			i = x->lo;
		const char *key = rtc_keys + (size_t)(e & ~SET_BIT) * KEY_LEN;
		uint64_t a = now;
		const bool set = e & SET_BIT;
		if (set)
			do_set(x, key, a);
		else
			do_get(x, key);
		now = tsync_now();
		*(set ? &x->set_ticks : &x->get_ticks) += now - a;
		*(set ? &x->sets : &x->gets) += 1;
		hist_add(set ? x->hss : x->hgs, now - a);
		/* back to back there is no dispatch: a job's cost is its request's */
		job_cost(x, set ? JOB_SET : JOB_GET, now - a, 0);
		if (pq && now >= nq) {
			a = now;
			uint64_t coll = sigma(x);
			now = tsync_now();
			job_cost(x, JOB_SIGMA, now - a, coll);
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
 * interrupted, or waited for a lock holder that was). The thresholds are fixed, not
 * scaled to the periods: scaled down to a fraction of a few-microsecond period they
 * counted ordinary requests as disturbances, and a miss that overlaps one counts as
 * explained - "unexplained" was near 0 by construction. In a VM the hypervisor takes the
 * virtual CPU for milliseconds at a time (steal time), whatever the guest's scheduling
 * class. A deadline miss whose window [release, completion] overlaps no disturbance on
 * any core, and that is not the backlog of one (a miss on a core that has not been idle
 * since its last disturbance is), is "unexplained": the schedule itself missed.
 */
#define DIST_GAP_NS 20000u
#define DIST_SLOW_NS 50000u

static void disturbed(struct exec *x, uint64_t a, uint64_t b)
{
	x->backlogged = true;
	x->ndist_total++;
	if (x->ndist < DIST_LOG)
		x->dist[x->ndist++] = (struct span){a, b};
	else
		x->dist[DIST_LOG - 1].b = b; /* widen the last: still covers every miss after */
}

/* A job released at rel with deadline dl completed (or was dropped) at done > dl. */
static void missed(struct exec *x, uint64_t rel, uint64_t dl, uint64_t done)
{
	if (done - dl > x->late_max)
		x->late_max = done - dl;
	if (x->backlogged) {
		x->miss_backlog++; /* the work a disturbance delayed, not yet caught up */
		return;
	}
	if (x->nmiss < MISS_LOG)
		x->miss[x->nmiss++] = (struct span){rel, done};
	else
		x->miss_unlogged++;
}

/*
 * Release jitter: the executive notices a release only when its loop next reads the
 * clock, so a job released while the core is idle starts up to one idle step (a clock
 * read, the pending checks, a pause instruction) after its release - with everything
 * released with it. While the core is busy a release waits for the job in progress, and
 * the step that notices it is in that job's cost (job_cost): blocking or interference,
 * which the analysis has. The first is release jitter J in the standard response-time
 * analysis (docs/rt-analysis.md, "The platform"): each sample is the delay from the
 * release of the job dispatched right after an idle step to that dispatch decision. A
 * delay above IRQ_MIN_NS was lengthened by an interruption of the idle step (or a late
 * wake-up): the platform's, the interference task's share and no part of the
 * executive's poll; it is only counted (jit_long), and the largest delay of all kept.
 */
#define IRQ_MIN_NS 1500u

static void release_jitter(struct exec *x, uint64_t delay)
{
	static _Thread_local uint64_t lim;
	if (!lim)
		lim = tsync_ns_to_ticks(IRQ_MIN_NS);
	if (delay > x->jit_max)
		x->jit_max = delay;
	if (delay > lim) {
		x->jit_long++;
		return;
	}
	x->jit_ticks += delay;
	hist_add(x->hjit, delay);
}

/* Jobs of period p released in [t0, end): ceil((end - t0) / p). */
static uint64_t njobs(uint64_t p)
{
	return p ? (rtc_end - rtc_t0 + p - 1) / p : 0;
}

/*
 * The partitioned FP executive (strict, relaxed, overload); see the file header. Gets:
 * strict - the periodic task τr; relaxed - served in the slack, closed loop, as the
 * paper's relaxed admission control does (RT-SMR (RTAS 2018) §VII-C): one get per core
 * outstanding, the next issued when it completes, run whenever no periodic job is
 * pending, its latency from its issue to its completion; overload - an open-loop
 * arrival every P->ia into a queue served in the slack (an offered load above the
 * slack makes the queue, and the latency, grow: the sweep measures that backlog).
 */
static void run_periodic(struct exec *x)
{
	const struct plan *P = &rtc_plan;
	const bool open = P->mode == M_OVERLOAD, closed = P->mode == M_RELAXED;
	const bool relaxed = open || closed; /* gets in the slack */
	const uint64_t t0 = rtc_t0;
	const uint64_t pg = open ? P->ia : closed ? 0 : P->pg;
	const uint64_t ng = njobs(pg), ns = njobs(P->ps), nq = njobs(P->pq);
	uint64_t issued = t0;            /* closed loop: when the next get was issued */
	uint64_t kg = 0, ks = 0, kq = 0; /* completed jobs: the oldest pending is number k */
	const uint64_t tsc0 = tsync_now(), mono0 = bench_mono_ns();
	const uint64_t gap = tsync_ns_to_ticks(DIST_GAP_NS);
	const uint64_t slow = tsync_ns_to_ticks(DIST_SLOW_NS);
	/* the periodic jobs released (relaxed: gets are requests in the slack, not jobs) */
	x->jobs = (relaxed ? 0 : ng) + ns + nq;
	/* when the loop expected to run next: now, after a step; after a sleep, the release
	 * it slept for (waking later than asked but before that release delays nothing) */
	uint64_t expect = tsc0;
	enum job_kind job = JOB_NONE; /* the job the last step ran */
	bool idle = false;            /* the last step found nothing pending (release_jitter) */
	uint64_t job_at = 0, job_coll = 0; /* its dispatch decision's clock reading; σ's
					    * collection ticks */
	for (;;) {
		uint64_t now = tsync_now();
		job_cost(x, job, now - job_at, job_coll);
		job = JOB_NONE;
		if (kg >= ng && ks >= ns && kq >= nq && (!closed || now >= rtc_end))
			break;
		if (now > expect + gap) {
			disturbed(x, expect, now);
			if (now - expect > x->gap_max)
				x->gap_max = now - expect;
		}
		expect = now;
		bool g = closed ? now >= t0 && now < rtc_end : kg < ng && t0 + kg * pg <= now;
		bool s = ks < ns && t0 + ks * P->ps <= now;
		bool q = kq < nq && t0 + kq * P->pq <= now;
		if (open && g) {
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
			if (closed && now < t0)
				next = t0;
			if (ks < ns && t0 + ks * P->ps < next)
				next = t0 + ks * P->ps;
			if (kq < nq && t0 + kq * P->pq < next)
				next = t0 + kq * P->pq;
			x->backlogged = false; /* idle: caught up */
			idle = true;
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
		const bool was_idle = idle;
		idle = false;
		if (!relaxed && run == 0 && now > t0 + kg * pg + pg) {
			x->miss_g++;
			x->dropped++;
			x->dropped_g++;
			missed(x, t0 + kg * pg, t0 + kg * pg + pg, now);
			kg++;
			continue;
		}
		if (run == 2 && now > t0 + ks * P->ps + P->ps) {
			x->miss_s++;
			x->dropped++;
			x->dropped_s++;
			missed(x, t0 + ks * P->ps, t0 + ks * P->ps + P->ps, now);
			ks++;
			continue;
		}
		if (run == 1) {
			uint64_t last = (now - t0) / P->pq; /* the latest release */
			if (last >= nq)
				last = nq - 1;
			if (last > kq) { /* the deadlines of kq .. last - 1 have passed */
				uint64_t dl = t0 + kq * P->pq + P->pq; /* the oldest's */
				if (now - dl > x->late_max)
					x->late_max = now - dl;
				x->miss_q += last - kq;
				kq = last;
			}
		}
		/* the periodic jobs' release jitter (relaxed and overload gets are requests in
		 * the slack, not released jobs) */
		if (was_idle && (run != 0 || !relaxed))
			release_jitter(x, now - (run == 0   ? t0 + kg * pg
						 : run == 1 ? t0 + kq * P->pq
							    : t0 + ks * P->ps));
		uint64_t a = tsync_now(), done, rel;
		job = (enum job_kind)run;
		job_at = now;
		switch (run) {
		case 0:
			rel = closed ? issued : t0 + kg * pg;
			do_get(x, next_key(x, false));
			done = tsync_now();
			issued = done;
			x->get_ticks += done - a;
			hist_add(x->hgs, done - a);
			if (done - a > x->get_svc_max)
				x->get_svc_max = done - a;
			hist_add(x->hg, done - rel);
			if (!relaxed && done - rel > pg) {
				x->miss_g++;
				missed(x, rel, rel + pg, done);
			}
			kg++;
			x->gets++;
			break;
		case 1:
			rel = t0 + kq * P->pq;
			job_coll = sigma(x);
			done = tsync_now();
			if (done - rel > P->pq) {
				x->miss_q++;
				missed(x, rel, rel + P->pq, done);
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
			hist_add(x->hss, done - a);
			hist_add(x->hs, done - rel);
			if (done - rel > x->set_resp_max)
				x->set_resp_max = done - rel;
			if (done - rel > P->ps) {
				x->miss_s++;
				missed(x, rel, rel + P->ps, done);
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
		/* overload: stop serving the queue at the end; what is left is the backlog */
		if (open && done >= rtc_end && ks >= ns && kq >= nq) {
			x->backlog = ng - kg;
			break;
		}
	}
}

/*
 * Co-tenants: time another task had this thread's CPU while it was runnable - its run
 * delay, the second field of /proc/thread-self/schedstat (ns) - and its involuntary
 * context switches (/proc/thread-self/status). A disturbance of its own kind: the gaps
 * record when, these say by whom (another task of this machine, not the hypervisor,
 * whose share is steal time). Zeros where the kernel does not say.
 */
static void thread_sched(uint64_t *delay_ns, uint64_t *nivcsw)
{
	*delay_ns = *nivcsw = 0;
	unsigned long long run = 0, wait = 0, v = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			*delay_ns = wait;
		fclose(f);
	}
	char line[256];
	f = fopen("/proc/thread-self/status", "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
			*nivcsw = v;
	fclose(f);
}

/*
 * The platform's interference (calibrate only, before the clock starts): the executive
 * spins on the clock for IRQ_PROBE_NS and records every interruption of the spin - a gap
 * between two clock reads - longer than IRQ_MIN_NS (above): the timer tick and the interrupts
 * this core takes. Their count over the probe gives the mean period and their lengths
 * the cost, for the admission's top-priority interference task
 * (python/tsync_rta/model.py, interference). A gap longer than IRQ_MAX_NS is not the
 * platform's periodic work but a preemption or the hypervisor's steal - outside every
 * task model, handled by skip-over and counted as a disturbance - and is only counted
 * (irq_long): taken as a cost it would make every task set unschedulable.
 */
#define IRQ_PROBE_NS 50000000u
#define IRQ_MAX_NS 100000u

static void irq_probe(struct exec *x)
{
	const uint64_t lo = tsync_ns_to_ticks(IRQ_MIN_NS), hi = tsync_ns_to_ticks(IRQ_MAX_NS);
	uint64_t t = tsync_now(), end = t + tsync_ns_to_ticks(IRQ_PROBE_NS), t0 = t;
	while (t < end) {
		uint64_t n = tsync_now(), g = n - t;
		if (g > hi) {
			x->irq_long++;
		} else if (g > lo) {
			hist_add(x->hirq, g);
			x->irq_n++;
			x->irq_ticks += g;
		}
		t = n;
	}
	x->irq_probe_ticks = t - t0;
}

void *rtc_exec_main(void *arg)
{
	struct exec *x = arg;
	self_exec = x;
	x->pinned = x->cpu >= 0 && bench_pin_self(x->cpu) == 0;
	/* the idle sleeps end IDLE_SPIN_NS before a release: without timer slack (50 us by
	 * default for SCHED_OTHER threads, 0 for SCHED_FIFO ones) they wake in time */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (rtc_try_fifo) {
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
	if (cache_ps(rtc_cache) && rtc_plan.pq) {
		(void)ps_quiesce_time(cache_ps(rtc_cache));
		(void)cache_collect(rtc_cache);
	}
	x->gi = x->si = x->lo;
	x->get_misses = 0;
	x->beta_ticks = x->beta_n = 0; /* the warm-up's collection is not measured */
	memset(x->hqb, 0, sizeof *x->hqb);
	if (rtc_plan.mode == M_CAL)
		irq_probe(x);
	(void)bench_run_wait(&rtc_run); /* rtc_t0 and rtc_end are set */
	uint64_t d0, n0, d1, n1;
	thread_sched(&d0, &n0);
	if (rtc_plan.mode == M_CAL)
		run_calibrate(x);
	else
		run_periodic(x);
	thread_sched(&d1, &n1);
	x->run_delay_ns = d1 > d0 ? d1 - d0 : 0;
	x->nivcsw = n1 > n0 ? n1 - n0 : 0;
	return NULL;
}
