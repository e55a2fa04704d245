/*
 * bench/rt/rt_cache_bench.c - `tsync-bench rt-cache`: the memcached application study of RT-SMR
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
 * Every get is cache_get_copy into a 32-byte buffer, so all three do the same work. The
 * task model and the executive that runs it: rt_cache_exec.c.
 *
 * Modes:
 *   calibrate  per design and core count: τr and τw back to back, unthrottled (each core
 *              runs its partition in trace order), σ every q; average get and set
 *              costs, α (σ's fixed cost per activation, see sigma() in rt_cache_exec.c)
 *              and β (per object collected, from the reclamation observer
 *              cache_config.reclaim_fn = ps_mem_config.reclaim_fn), and the platform's
 *              interruptions of a bare spin (irq_probe). JSON on stdout. An executive
 *              goes on past --seconds until it has measured each once (cal_needs_more).
 *   strict     (Fig. 14) calibrate, write the admission task set (YAML) and run
 *              `<rta> admission FILE --json`; probe those periods and admit again with
 *              the job costs measured there (rtc_admit()); run the tasks at the chosen
 *              periods (σ at its q) for --seconds, dropping a job whose deadline passed
 *              before it could start (skip-over, see run_periodic). --get-period-us/
 *              --set-period-us skip the admission.
 *   relaxed    (Fig. 15) sets (and σ) periodic at the admission's (or the given) update
 *              period; gets served in the slack - whenever no periodic job is pending -
 *              closed loop, as the paper's: one get per core outstanding, the next
 *              issued when it completes. Get latency = completion - issue.
 *   overload   the same periodic sets and σ; gets arrive open loop at a fixed rate
 *              (one every 1/rate, YCSB's -target pacing) into a queue served in the
 *              slack, at each --get-rates: above the slack the queue grows, and the
 *              latency (completion - arrival) measures that backlog.
 * --repeat N: for each core count, N rounds, each running every design in turn (each
 * calibrated, admitted and run as above), so that the designs alternate on a machine
 * whose speed drifts; the rows say which round (repeat).
 * CSV (bench/README.md, "rt-cache"):
 *   mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops,
 *   get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses,jobs,
 *   misses_unexplained,max_lateness_ns,bound_measured_objects,shared_cpu_ms,
 *   zero_slack_kops,repeat
 *
 * This file: the options and main - which designs, core counts and loads run, in which
 * order, and the rows they leave. The other files, one job each, are listed in
 * rt_cache_internal.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tsync/clock.h>

#include "rt_cache_bench.h"
#include "rt_cache_internal.h"

/* ---- options -------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: tsync-bench rt-cache --mode calibrate|strict|relaxed|overload\n"
	      "         [--designs rt-parsec,mcs,pf-rw] [--cores 1,2] [--get-rates KOPS,...]\n"
	      "         [--seconds S] [--requests N] [--q-us Q]\n"
	      "         [--get-period-us P --set-period-us P] [--cost-percentile STAT]\n"
	      "         [--slack F] [--util-cap U] [--model-interference] [--rta CMD]\n"
	      "         [--repeat N] [--csv FILE|-] [--out DIR]\n"
	      "\n"
	      "The memcached application study of RT-SMR (RTAS 2018) sec. VII-C (Figs. 14-15) on\n"
	      "the tsync-cached core: per core a get task (higher priority) and a set task, one\n"
	      "request per job, run by one pinned fixed-priority executive thread per core on\n"
	      "the TSC clock; rt-parsec adds the quiescence task sigma (period q). YCSB Zipf "
	      "0.99,\n"
	      "20% sets, 16-byte keys, 32-byte values, every record preloaded, no eviction.\n"
	      "(bench/README.md, \"rt-cache\")\n"
	      "\n"
	      "  --mode M          calibrate: average get/set cost, alpha, beta (JSON on stdout)\n"
	      "                    strict: calibrate, admission (tsync-rta), run at its periods\n"
	      "                    relaxed: sets periodic, gets in the slack, closed loop\n"
	      "                    overload: sets periodic, gets offered at each --get-rates\n"
	      "                    (open loop) into a queue served in the slack\n"
	      "  --designs LIST    rt-parsec,mcs,pf-rw (default: all three)\n"
	      "  --cores LIST      core counts (default 1..CPUs); core i runs on the i-th CPU\n"
	      "  --get-rates LIST  overload: offered gets, kops PER CORE (default\n"
	      "                    50,100,200,400);\n"
	      "                    the CSV's offered_get_kops and get_kops are totals\n"
	      "  --seconds S       each run's length (default 2; the calibration of the other\n"
	      "                    modes: min(S, 0.5))\n"
	      "  --requests N      trace length, partitioned over the cores (default 10000000);\n"
	      "                    records: min(N, 1000000)\n"
	      "  --q-us Q          rt-parsec's sigma period (default: the admission's q, else the\n"
	      "                    set period; calibrate: 100)\n"
	      "  --get-period-us P, --set-period-us P\n"
	      "                    skip the admission: strict needs both, the others the set\n"
	      "                    period\n"
	      "  --cost-percentile STAT\n"
	      "                    the admission's costs: mean, max or pN of the measured job\n"
	      "                    costs, alpha and beta (default p99.9)\n"
	      "  --slack F         admit only periods at which every response time <= F x its\n"
	      "                    period, 0 < F <= 1 (default 0.7; 1: the paper's zero slack)\n"
	      "  --util-cap U      also keep each core's utilisation <= U (default: no cap)\n"
	      "                    (each admission also records, as zero_slack_kops, what mean\n"
	      "                    costs, slack 1 and no cap admit on the same costs)\n"
	      "  --model-interference\n"
	      "                    admit with the timer tick and interrupts calibrate measured\n"
	      "                    as a top-priority task on every core (default: measured and\n"
	      "                    recorded only)\n"
	      "  --rta CMD         the admission command (default $TSYNC_RTA, else\n"
	      "                    'python3 -m tsync_rta'); run as CMD admission FILE --json\n"
	      "  --repeat N        per core count, N rounds of every design in turn (default 1;\n"
	      "                    the CSV's repeat column, -rK in the JSON names when N > 1)\n"
	      "  --csv FILE|-      the CSV (default: stdout, except for calibrate)\n"
	      "  --out DIR         DIR/rt-cache.csv, per-run JSON, admission YAML/JSON, "
	      "COMMAND.txt\n"
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
	for (k = 0; k < NMODE && strcmp(arg, rtc_mname[k]) != 0; k++)
		;
	if (k == NMODE) {
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
	for (k = 0; k < ND && strcmp(t, rtc_dname[k]) != 0; k++)
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

/* --cost-percentile's statistic as a quantile: "max" 1, "pN" N/100 (0 < N < 100), "mean"
 * -1 (tsync-rta's names, python/tsync_rta/admission.py). 0, or -1 when it is none. */
static int cost_quantile(const char *stat, double *q)
{
	if (!strcmp(stat, "mean") || !strcmp(stat, "max")) {
		*q = stat[1] == 'e' ? -1.0 : 1.0;
		return 0;
	}
	if (stat[0] != 'p' || !stat[1])
		return -1;
	char *end;
	double v = strtod(stat + 1, &end);
	if (*end || !(v > 0 && v < 100))
		return -1;
	*q = v / 100.0;
	return 0;
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
		BENCH_O_STR("cost-percentile", 0, &o->cost_stat),
		BENCH_O_DBL("slack", 0, BENCH_OPT_POS, &o->slack, 1.0),
		BENCH_O_DBL("util-cap", 0, BENCH_OPT_POS, &o->util_cap, 1e3),
		BENCH_O_SET("model-interference", 0, &o->interference),
		BENCH_O_NUM("repeat", 0, BENCH_OPT_UINT, &o->repeat, 1, 1000),
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
	if (cost_quantile(o->cost_stat, &rtc_cost_q) != 0) {
		fprintf(stderr,
			WHO ": --cost-percentile '%s': mean, max or pN with 0 < N < 100 "
			    "(p99.9)\n",
			o->cost_stat);
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
		tsync_clock_source_name(), tsync_ticks_per_ns(), rtc_ncpus);
	return fclose(f);
}

/* What every run of one invocation shares. */
struct study {
	const struct opts *o;
	struct outs out;
	const uint32_t *trace;
	uint64_t records;
	const char *tmpdir;
	char sched[512]; /* the last run's scheduling class (COMMAND.txt, calibrate's JSON) */
	unsigned rep;    /* the round of --repeat, from 1 */
	char sfx[16];    /* what ends the round's file names: "" (one round), "-r<rep>" */
};

/* calibrate: one run of design d on n cores, its JSON and row. 0 or -1. */
static int calibrate_one(struct study *st, enum design d, unsigned n)
{
	const struct opts *o = st->o;
	struct plan p = {.mode = M_CAL};
	struct result r;
	char name[256];
	double q = 0;
	if (d == D_RTPARSEC) {
		q = o->q_us > 0 ? o->q_us : CAL_Q_US;
		p.pq = rtc_us_ticks(q);
	}
	if (rtc_run_one(d, n, st->trace, o->requests, st->records, &p, o->seconds, &r) != 0)
		return -1;
	rtc_sched_line(&r, st->sched, sizeof st->sched);
	fprintf(stderr,
		"  %-9s %u core(s): get %.3f us, set %.3f us, alpha %.3f us, beta %.4f us "
		"(%s)\n",
		rtc_dname[d], n, r.get_us, r.set_us, r.alpha_us, r.beta_us, st->sched);
	snprintf(name, sizeof name, "calibrate-%s-%u%s", rtc_dname[d], n, st->sfx);
	json_t *j = rtc_run_json(M_CAL, d, n, 0, 0, q, 0, o->seconds, &r);
	json_object_set_new(j, "repeat", json_integer(st->rep));
	int rc = rtc_emit_json(&st->out, j, name);
	rtc_csv_row(&st->out, M_CAL, d, n, 0, 0, 0, &r, NULL, st->rep);
	return rc;
}

/* strict, relaxed, overload: admit design d on n cores, then run it (overload: at every
 * offered load), each run with its JSON and row. 0 or -1. */
static int admitted_runs(struct study *st, enum design d, unsigned n)
{
	const struct opts *o = st->o;
	struct admission a;
	char name[256];
	if (rtc_admit(o, &st->out, d, n, st->trace, st->records, st->tmpdir, st->sfx, &a) != 0) {
		rtc_admission_free(&a);
		return -1;
	}
	if (!a.schedulable) {
		/* a row that says so: empty periods and results */
		rtc_csv_row(&st->out, o->mode, d, n, 0, 0, 0, NULL, &a, st->rep);
		rtc_admission_free(&a);
		return 0;
	}
	double q = 0;
	struct plan p = {.mode = o->mode, .ps = rtc_us_ticks(a.set_p_us)};
	if (o->mode == M_STRICT)
		p.pg = rtc_us_ticks(a.get_p_us);
	if (d == D_RTPARSEC) {
		q = rtc_sigma_q_us(o, d, &a);
		p.pq = rtc_us_ticks(q);
	}
	int rc = 0;
	unsigned nruns = o->mode == M_OVERLOAD ? o->nrates : 1;
	for (unsigned ri = 0; ri < nruns && !rc; ri++) {
		struct result r;
		double offered = 0; /* kops, total */
		if (o->mode == M_OVERLOAD) {
			p.ia = tsync_ns_to_ticks(1000000u) / o->rates[ri];
			if (!p.ia)
				p.ia = 1;
			offered = (double)o->rates[ri] * n;
		}
		if (rtc_run_one(d, n, st->trace, o->requests, st->records, &p, o->seconds, &r) !=
		    0) {
			rc = -1;
			break;
		}
		rtc_sched_line(&r, st->sched, sizeof st->sched);
		double gp = o->mode == M_STRICT ? a.get_p_us : 0;
		fprintf(stderr,
			"  %-7s %-9s %u core(s) get %.3g us set %.3g us%s%.6g: %.1f + %.1f kops, "
			"p99 get %" PRIu64 " ns set %" PRIu64 " ns, peak pending %" PRIu64
			", misses %" PRIu64 " (%s)\n",
			rtc_mname[o->mode], rtc_dname[d], n, gp, a.set_p_us,
			o->mode == M_OVERLOAD ? ", offered kops " : ", q ",
			o->mode == M_OVERLOAD ? offered : q, r.get_kops, r.set_kops, r.get_p99_ns,
			r.set_p99_ns, r.peak_pending, r.misses, st->sched);
		json_t *j = rtc_run_json(o->mode, d, n, gp, a.set_p_us, q, offered, o->seconds, &r);
		json_object_set_new(j, "bound_objects",
				    a.have_bound ? json_integer(a.bound) : json_null());
		json_object_set_new(j, "repeat", json_integer(st->rep));
		if (a.json) {
			json_object_set(j, "admission", a.json);
			json_object_set_new(j, "admitted_kops", json_real(a.kops));
		}
		if (a.zero_slack)
			json_object_set(j, "zero_slack", a.zero_slack);
		if (o->mode == M_OVERLOAD)
			snprintf(name, sizeof name, "overload-%s-%u-%" PRIu64 "%s", rtc_dname[d], n,
				 o->rates[ri], st->sfx);
		else
			snprintf(name, sizeof name, "%s-%s-%u%s", rtc_mname[o->mode], rtc_dname[d],
				 n, st->sfx);
		if (rtc_emit_json(&st->out, j, name) != 0)
			rc = -1;
		rtc_csv_row(&st->out, o->mode, d, n, gp, a.set_p_us, offered, &r, &a, st->rep);
	}
	rtc_admission_free(&a);
	return rc;
}

/* Whether the executives try SCHED_FIFO, and if not why (rtc_try_fifo, rtc_no_fifo_why). */
static void choose_sched(void)
{
	const char *nf = getenv("TSYNC_BENCH_NO_FIFO");
	rtc_try_fifo = true;
	if (nf && *nf && strcmp(nf, "0") != 0) {
		rtc_try_fifo = false;
		rtc_no_fifo_why = "TSYNC_BENCH_NO_FIFO";
	} else if (bench_rt_throttled()) {
		rtc_try_fifo = false;
		rtc_no_fifo_why = "the kernel throttles real-time threads "
				  "(kernel.sched_rt_runtime_us < sched_rt_period_us): an "
				  "executive that spins between releases would be stopped for "
				  "the rest of every throttling period (50 ms of each second by "
				  "default); sysctl -w kernel.sched_rt_runtime_us=-1 lifts it";
	}
}

/* Remove what the admission wrote to tmpdir (rtc_admit()'s task sets), and tmpdir. */
static void remove_tmpdir(const char *tmpdir)
{
	char path[4096];
	DIR *dir = opendir(tmpdir);
	struct dirent *e;
	while (dir && (e = readdir(dir)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
			unlink(path);
		}
	if (dir)
		closedir(dir);
	rmdir(tmpdir);
}

int rt_cache_main(int argc, char **argv, const char *cmdline)
{
	struct opts o = {.seconds = 2.0,
			 .requests = 10000000u,
			 .pin = true,
			 .cost_stat = "p99.9",
			 .slack = 0.7,
			 .repeat = 1};
	rtc_ncpus = bench_cpus(rtc_cpus);
	int prc = parse_opts(argc, argv, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	rtc_pin = o.pin;
	choose_sched();
	if (o.ncores == 0)
		o.ncores = bench_thread_counts(o.cores, MAX_LIST, rtc_ncpus);
	for (unsigned i = 0; i < o.ncores; i++)
		if (o.cores[i] > rtc_ncpus) {
			/* two spinning executives on one CPU would not be a partitioned schedule
			 * (and under SCHED_FIFO one would starve the other) */
			fprintf(stderr, WHO ": --cores %u: only %u CPUs to pin executives to\n",
				o.cores[i], rtc_ncpus);
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
	struct study st = {.o = &o, .out = {.dir = o.out, .runs = json_array()}};
	char tmpdir[64] = "";
	/* calibrate's JSON goes to stdout: its CSV only where asked for */
	struct bench_csv csv = {{NULL, NULL}, NULL};
	if ((o.csv || o.out || o.mode != M_CAL) &&
	    bench_csv_open(&csv, WHO, o.csv, o.out, "rt-cache.csv", CSV_HEADER) != 0)
		return 1;
	st.out.csv[0] = csv.f[0];
	st.out.csv[1] = csv.f[1];
	bool given = o.get_p_us > 0 || (o.mode != M_STRICT && o.set_p_us > 0);
	if (!o.out && o.mode != M_CAL && !given) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/tsync-rt-cache.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			fprintf(stderr, WHO ": mkdtemp: %s\n", strerror(errno));
			return 1;
		}
	}
	st.tmpdir = tmpdir;
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
	rtc_keys = keys;
	st.trace = trace;
	st.records = records;
	fprintf(stderr, WHO ": %s, %" PRIu64 " requests, %" PRIu64 " records, %u CPUs\n",
		rtc_mname[o.mode], o.requests, records, rtc_ncpus);
	/* per core count, the designs back to back - each calibrated and admitted right
	 * before its runs - so that they meet the machine in about the same state; with
	 * --repeat, round after round of them, so that the designs alternate */
	int status = 0;
	for (unsigned ci = 0; ci < o.ncores && !status; ci++)
		for (st.rep = 1; st.rep <= o.repeat && !status; st.rep++) {
			st.sfx[0] = '\0';
			if (o.repeat > 1)
				snprintf(st.sfx, sizeof st.sfx, "-r%u", st.rep);
			for (int d = 0; d < ND && !status; d++) {
				if (!o.sel[d])
					continue;
				enum design dd = (enum design)d;
				int rc = o.mode == M_CAL ? calibrate_one(&st, dd, o.cores[ci])
							 : admitted_runs(&st, dd, o.cores[ci]);
				if (rc != 0)
					status = 1;
			}
		}
	if (o.mode == M_CAL && !status && !(o.csv && strcmp(o.csv, "-") == 0)) {
		json_t *root = json_object();
		json_object_set_new(root, "command", json_string(cmdline));
		json_object_set_new(root, "sched", json_string(st.sched));
		json_object_set(root, "runs", st.out.runs);
		json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
		json_decref(root);
	}
	if (o.out && write_command(o.out, cmdline, st.sched) != 0) {
		fprintf(stderr, WHO ": cannot write %s/COMMAND.txt\n", o.out);
		status = 1;
	}
	if (tmpdir[0])
		remove_tmpdir(tmpdir);
	json_decref(st.out.runs);
	free(keys);
	free(trace);
	bench_csv_close(&csv);
	return status;
}
