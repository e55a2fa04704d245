/*
 * bench/rt/rt_cache_internal.h - what the files of `tsync-bench rt-cache` share: the
 * options, the plan of one run, one core's executive, a run's result, the outputs, the
 * admission's answer, and the state of the run in progress. The study, its modes and
 * its CSV are described in rt_cache_bench.c; the files, one job each:
 *   rt_cache_bench.c        options and main: which runs, in which order, and their rows
 *   rt_cache_run.c    one run: the cache, the executive threads, their merged result,
 *                     and its CSV row and JSON
 *   rt_cache_exec.c   the partitioned fixed-priority executive of one core
 *   rt_cache_admit.c  the admission interface: task set out, `tsync-rta admission` in
 */
#ifndef TSYNC_BENCH_RT_CACHE_INTERNAL_H
#define TSYNC_BENCH_RT_CACHE_INTERNAL_H

#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tsync/ps_mem.h>

#include "cache.h"
#include "cache/ycsb.h"
#include "common.h"
#include "sys.h"
#include "hist.h"

#define WHO "tsync-bench rt-cache"
#define CSV_HEADER                                                                          \
	"mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops," \
	"get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses,jobs,"            \
	"misses_unexplained,max_lateness_ns,bound_measured_objects,shared_cpu_ms,"          \
	"zero_slack_kops,repeat"
#define MAX_LIST 64u
#define MAX_CORES 1024u
#define KEY_LEN 16u
#define VAL_LEN 32u
#define SET_BIT YCSB_SET_BIT
#define SET_PCT 20u
#define MAX_RECORDS 1000000u
/* strict/relaxed/overload calibrate first, for this long at most */
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
/* per executive: the disturbances and deadline misses logged (rt_cache_exec.c) */
#define DIST_LOG 1024u
#define MISS_LOG 4096u

enum design { D_RTPARSEC, D_MCS, D_PFRW, ND };
extern const char *const rtc_dname[ND];
extern const char *const rtc_dpolicy[ND]; /* tsync-rta's names */

enum mode { M_CAL, M_STRICT, M_RELAXED, M_OVERLOAD, NMODE };
extern const char *const rtc_mname[NMODE];

struct opts {
	enum mode mode;
	bool have_mode;
	bool sel[ND], any_sel;
	unsigned cores[MAX_LIST], ncores;
	uint64_t rates[MAX_LIST]; /* overload: offered gets, kops per core */
	unsigned nrates;
	double seconds;
	uint64_t requests;
	double q_us, get_p_us, set_p_us; /* 0: not given */
	const char *rta, *csv, *out;
	bool pin;
	/* the admission: which cost statistic (--cost-percentile: "mean", "max", "pN"), the
	 * slack (every response time <= slack x period) and a per-core utilisation cap (0:
	 * none); python/tsync_rta/admission.py */
	const char *cost_stat;
	double slack, util_cap;
	bool interference; /* --model-interference: the measured tick/interrupts as a task */
	unsigned repeat;   /* --repeat: every design this many times per core count, in turn */
};

/* What one run's executives do: periods in ticks, 0 = task absent. */
struct plan {
	enum mode mode;          /* M_CAL: back to back */
	uint64_t pg, ps, pq, ia; /* get period, set period, σ period; overload: get spacing */
};

/* An interval on the TSC clock: a disturbance, or a missed job's [release, completion]. */
struct span {
	uint64_t a, b;
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
	uint64_t get_job_ticks, set_job_ticks;   /* job costs (rt_cache_exec.c, job_cost) */
	uint64_t alpha_ticks, alpha_n, beta_ticks, beta_n;
	uint64_t peak_queue, backlog;
	uint64_t paused;    /* calibrate: ticks not running requests */
	uint64_t end_tick;  /* calibrate: when it stopped (rtc_end, or later: cal_needs_more) */
	uint64_t sigma_max; /* σ's longest response, ticks */
	uint64_t get_svc_max, set_resp_max; /* the longest get (rt-parsec: section) and set
					     * response, ticks: Eq. 5's measured inputs */
	struct span *dist, *miss;           /* disturbances and deadline misses (periodic modes) */
	unsigned ndist, nmiss;
	uint64_t ndist_total, miss_unlogged, slow_requests, gap_max;
	uint64_t jobs;     /* periodic jobs released (dropped and merged ones included) */
	uint64_t late_max; /* the largest lateness (completion, or drop, - deadline), ticks */
	uint64_t run_delay_ns, nivcsw; /* co-tenants on its CPU (rt_cache_exec.c) */
	/* since its last disturbance the core has not been idle: a miss now is that
	 * disturbance's backlog (explained) */
	bool backlogged;
	uint64_t miss_backlog;
	struct hist *hg, *hs;   /* response (strict: completion - release; relaxed gets:
				 * completion - issue; overload gets: completion - arrival) */
	struct hist *hgs, *hss; /* service times */
	struct hist *hgj, *hsj; /* job costs */
	struct hist *hqa, *hqb; /* σ: α per activation, β per object (per collected batch) */
	struct hist *hirq;      /* calibrate: the interruptions of a bare spin (irq_probe) */
	uint64_t irq_n, irq_ticks, irq_probe_ticks, irq_long;
	/* release jitter: a periodic job's release to its dispatch when the executive was
	 * idle (rt_cache_exec.c, run_periodic); the samples an interruption lengthened are
	 * only counted (jit_long), and the largest of all kept */
	struct hist *hjit;
	uint64_t jit_ticks, jit_long, jit_max;
};

/* The run in progress (rt_cache_run.c sets it up, the executives read it). */
extern struct cache *rtc_cache;
extern const uint32_t *rtc_trace;
extern const char *rtc_keys;
extern struct plan rtc_plan;
extern uint64_t rtc_t0, rtc_end;
extern struct bench_run rtc_run; /* its deadline: rtc_end */
/* The machine and how the executives run (rt_cache_bench.c sets them from the options). */
extern int rtc_cpus[CPU_SETSIZE];
extern unsigned rtc_ncpus;
extern bool rtc_pin; /* --no-pin clears it: executives left to the scheduler */
extern bool rtc_try_fifo;
/* why SCHED_FIFO is not tried (NULL: it is): the environment, or the kernel's RT
 * throttling (see bench_rt_throttled, bench/sys.h) */
extern const char *rtc_no_fifo_why;
/* --cost-percentile as a quantile: (0, 1], or -1 for the mean (rt_cache_bench.c sets it) */
extern double rtc_cost_q;

/* Statistics of a measured cost, us: what the admission task set offers tsync-rta (a
 * map {mean, p99, p99.9, max, and the --cost-percentile one}). Tail statistics are the
 * upper edge of their histogram bucket: a cost is never understated. */
struct cost_stats {
	double mean, p99, p999, max;
	double pick; /* the --cost-percentile statistic */
	uint64_t n;  /* samples */
};

struct result {
	/* calibrate */
	double get_us, set_us, alpha_us, beta_us; /* averages; α, β: NAN unless rt-parsec */
	double get_job_us, set_job_us; /* average job costs (dispatch and bookkeeping included) */
	/* the admission's costs: jobs (calibrate: requests back to back), α, β */
	struct cost_stats get_e, set_e, alpha, beta;
	/* calibrate: the platform's interference (the timer tick and interrupts) as the
	 * executives' bare spin saw it: cost statistics and the mean period, us (0: none) */
	struct cost_stats irq;
	double irq_period_us;
	uint64_t irq_long; /* interruptions too long to be the platform's (outside the model) */
	/* periodic modes: the executive's release jitter (its poll; the admission's
	 * release_jitter), the samples an interruption lengthened, the largest of all */
	struct cost_stats jitter;
	uint64_t jitter_long, jitter_max_ns;
	/* every mode */
	uint64_t gets, sets, sigmas, misses, get_misses, backlog, peak_queue;
	uint64_t miss_g, miss_s, miss_q; /* deadline misses by task: get, set, σ */
	uint64_t dropped, dropped_g,
		dropped_s;     /* jobs dropped (skip-over), counted in the misses */
	uint64_t sigma_max_ns; /* σ's longest response */
	/* Eq. 5 with measured inputs (rt-parsec, periodic modes; -1: not applicable):
	 * the longest section Δ*, L* = r_set (the longest set response), q, r_σ* */
	long long bound_measured;
	uint64_t section_max_ns, set_resp_max_ns, q_ns;
	uint64_t unexplained; /* misses overlapping no disturbance */
	uint64_t jobs;        /* periodic jobs released */
	uint64_t max_lateness_ns;
	uint64_t run_delay_ns, nivcsw; /* the executives' co-tenants, summed */
	uint64_t disturbances, slow_requests, gap_max_ns;
	uint64_t steal_ns; /* hypervisor steal time on the executives' CPUs */
	double get_kops, set_kops;
	uint64_t get_p99_ns, set_p99_ns, get_max_ns, set_max_ns;
	uint64_t get_svc_p99_ns, set_svc_p99_ns;
	uint64_t peak_pending;
	bool fifo;
	int fifo_err;
	unsigned pinned;
};

struct outs {
	FILE *csv[2]; /* --csv, --out DIR/rt-cache.csv */
	const char *dir;
	json_t *runs; /* every run's JSON object */
};

struct admission {
	double get_p_us, set_p_us, q_us;
	bool schedulable;
	long long bound; /* G*, objects */
	bool have_bound;
	double kops; /* the admitted request rate (the tool's throughput), kops */
	/* what the zero-slack rule (mean costs, slack 1, no cap) admits on the same costs,
	 * kops (0: nothing; NAN: not computed - periods given), and its summary (owned) */
	double zero_slack_kops;
	json_t *zero_slack;
	json_t *json; /* the tool's output, owned */
};

/* rt_cache_exec.c */
void *rtc_exec_main(void *arg);
void rtc_on_reclaim(void *arg, const struct ps_mem_reclaim_info *info);

/* rt_cache_run.c */
double rtc_ticks_us(double t);
uint64_t rtc_us_ticks(double us);
int rtc_run_one(enum design d, unsigned ncores, const uint32_t *trace, uint64_t nreq,
		uint64_t records, const struct plan *plan, double seconds, struct result *r);
int rtc_write_json_file(const char *path, json_t *j);
const char *rtc_sched_line(const struct result *r, char *buf, size_t n);
double rtc_shared_cpu_ms(const struct result *r);
void rtc_csv_row(struct outs *o, enum mode m, enum design d, unsigned cores, double gp, double sp,
		 double offered, const struct result *r, const struct admission *a, unsigned rep);
json_t *rtc_run_json(enum mode m, enum design d, unsigned cores, double gp, double sp, double q,
		     double offered, double seconds, const struct result *r);
int rtc_emit_json(struct outs *o, json_t *j, const char *name);

/* rt_cache_admit.c */
int rtc_admit(const struct opts *o, struct outs *out, enum design d, unsigned cores,
	      const uint32_t *trace, uint64_t records, const char *tmpdir, const char *sfx,
	      struct admission *a);
void rtc_admission_free(struct admission *a);
double rtc_sigma_q_us(const struct opts *o, enum design d, const struct admission *a);

#endif /* TSYNC_BENCH_RT_CACHE_INTERNAL_H */
