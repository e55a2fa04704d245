/*
 * bench/cache/cache_bench.c - `tsync-bench cache`: the in-process memcached study of
 * ParSec (EuroSys 2016) §5.2 (Figs. 7-8) on the tsync-cached core (apps/cached/core/cache.h).
 *
 * Workload (as in the paper): a YCSB-style trace of get/set requests over --keys records,
 * keys drawn from YCSB's ScrambledZipfianGenerator (theta 0.99 over 10^10 items, then
 * FNV-1a-64 hashed modulo the record count), 16-byte keys ("user" + 12 digits), 32-byte
 * values, --requests requests (default 10 million) generated before timing and
 * partitioned over the threads; each thread runs its partition once (or cycles it until
 * --seconds). The cache is created per run with memory for every record (no eviction
 * needed, as in the paper) and a table sized for the records, then preloaded with every
 * key (YCSB's load phase). Every request is timed (one clock read between consecutive
 * requests) into a per-thread histogram for gets and one for sets.
 *
 * CSV: variant,threads,set_pct,mops,get_p99_ns,set_p99_ns
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tsync/clock.h>
#include <tsync/ps_mem.h>

#include "cache.h"
#include "cache_bench.h"
#include "common.h"
#include "hist.h"
#include "ycsb.h"

#ifndef TSYNC_CACHE_REPORT_PY
#define TSYNC_CACHE_REPORT_PY "plot_cache.py"
#endif
#ifndef TSYNC_BENCH_PYTHON
#define TSYNC_BENCH_PYTHON "python3"
#endif

#define CSV_HEADER "variant,threads,set_pct,mops,get_p99_ns,set_p99_ns"
#define MAX_LIST 64u
#define MAX_THREADS 1024u
#define KEY_LEN 16u
#define VAL_LEN 32u
#define SET_BIT YCSB_SET_BIT

struct opts {
	bool sel[4], any_sel;
	unsigned threads[MAX_LIST], nthreads;
	unsigned pcts[MAX_LIST], npcts;
	size_t requests;
	uint64_t keys;
	double seconds; /* 0: run the partition once */
	const char *csv, *out;
	bool pin;
	bool prud[2];        /* Prudence's policies [0]: on, [1]: off (--prudence) */
	const char *mem_csv; /* --mem-csv: the allocator's counters per run, appended */
};

struct worker {
	_Alignas(64) unsigned id;
	int cpu;
	size_t lo, hi;
	uint64_t ngets, nsets, start, end;
	struct hist *hg, *hs;
};

static struct cache *g_cache;
static const uint32_t *g_trace;
static const char *g_keys; /* KEY_LEN bytes per record */
static double g_seconds;
static struct bench_run g_run;
static int g_cpus[CPU_SETSIZE];
static unsigned g_ncpus;

/* ---- the run ------------------------------------------------------------------------ */

static void run_part(struct worker *w, uint64_t deadline)
{
	char val[VAL_LEN], buf[64];
	memset(val, 'v', sizeof val);
	uint64_t now, prev = tsync_now(), ng = 0, ns = 0;
	w->start = prev;
	size_t i = w->lo;
	for (;;) {
		uint32_t e = g_trace[i];
		const char *key = g_keys + (size_t)(e & ~SET_BIT) * KEY_LEN;
		if (e & SET_BIT) {
			memcpy(val, &prev, sizeof prev); /* a fresh value each time */
			enum cache_status st = cache_store(g_cache, CACHE_SET, key, KEY_LEN, val,
							   VAL_LEN, 0, 0, 0, NULL);
			if (st != CACHE_STORED) {
				fprintf(stderr, "tsync-bench cache: set failed: %s\n",
					cache_status_name(st));
				abort();
			}
			now = tsync_now();
			hist_add(w->hs, now > prev ? now - prev : 0);
			ns++;
		} else {
			uint32_t n;
			(void)cache_get_copy(g_cache, key, KEY_LEN, buf, sizeof buf, &n, NULL,
					     NULL);
			now = tsync_now();
			hist_add(w->hg, now > prev ? now - prev : 0);
			ng++;
		}
		prev = now;
		if (++i == w->hi) {
			if (g_seconds <= 0)
				break;
			i = w->lo;
		}
		if (g_seconds > 0 && now >= deadline)
			break;
	}
	w->end = prev;
	w->ngets = ng;
	w->nsets = ns;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	(void)bench_pin_self(w->cpu);
	run_part(w, bench_run_wait(&g_run));
	return NULL;
}

struct result {
	double mops;
	uint64_t get_p99_ns, set_p99_ns;
	struct ps_mem_stats mem; /* the item allocator's counters at the end of the run */
};

/* --mem-csv: Prudence (ASPLOS 2016) §5's measures of the item allocator (ps_kmem_stats
 * over every size class) for one run, Prudence on or off. */
#define MEM_CSV_HEADER                                                                          \
	"variant,threads,set_pct,prudence,mops,cache_misses,cache_churn,slab_churn,peak_slabs," \
	"slab_bytes,live_bytes,ft"
static int mem_row(FILE *f, const char *name, unsigned thr, unsigned pct, int off,
		   const struct result *r)
{
	const struct ps_mem_stats *m = &r->mem;
	fprintf(f,
		"%s,%u,%u,%s,%.6g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%.4f\n",
		name, thr, pct, off ? "off" : "on", r->mops, m->cache_misses, m->cache_churn,
		m->slab_churn, m->peak_slabs, m->slab_bytes, m->live_bytes,
		m->live_bytes ? (double)m->slab_bytes / (double)m->live_bytes : 0.0);
	return fflush(f) == 0 ? 0 : -1;
}

static int run_one(enum cache_variant v, unsigned nthr, const uint32_t *trace, const struct opts *o,
		   unsigned prudence, struct result *res)
{
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = v;
	cfg.prudence = prudence;
	/* every record, a replaced item per thread in flight, and slack */
	cfg.mem_limit = o->keys * 256 + (256ull << 20);
	unsigned hp = 4;
	while (hp < 30 && ((uint64_t)1 << hp) < o->keys)
		hp++;
	cfg.hash_power = hp;
	cfg.no_grow = true;
	g_cache = cache_create(&cfg);
	if (!g_cache) {
		perror("cache_create");
		return -1;
	}
	char val[VAL_LEN];
	memset(val, 'v', sizeof val);
	for (uint64_t k = 0; k < o->keys; k++)
		if (cache_store(g_cache, CACHE_SET, g_keys + k * KEY_LEN, KEY_LEN, val, VAL_LEN, 0,
				0, 0, NULL) != CACHE_STORED) {
			fprintf(stderr, "tsync-bench cache: preload failed\n");
			return -1;
		}
	g_trace = trace;
	g_seconds = o->seconds;
	struct worker *ws = calloc(nthr, sizeof *ws);
	pthread_t *th = calloc(nthr, sizeof *th);
	if (!ws || !th)
		return -1;
	bench_run_init(&g_run, "tsync-bench cache", nthr);
	for (unsigned i = 0; i < nthr; i++) {
		ws[i].id = i;
		ws[i].cpu = o->pin ? g_cpus[i % g_ncpus] : -1;
		ws[i].lo = o->requests * i / nthr;
		ws[i].hi = o->requests * (i + 1) / nthr;
		ws[i].hg = calloc(1, sizeof(struct hist));
		ws[i].hs = calloc(1, sizeof(struct hist));
		if (!ws[i].hg || !ws[i].hs || pthread_create(&th[i], NULL, worker_main, &ws[i]))
			return -1;
	}
	uint64_t t0 = bench_run_start(&g_run, o->seconds);
	struct hist hg = {{0}}, hs = {{0}};
	uint64_t ops = 0, t_end = 0;
	for (unsigned i = 0; i < nthr; i++) {
		pthread_join(th[i], NULL);
		ops += ws[i].ngets + ws[i].nsets;
		if (ws[i].end > t_end)
			t_end = ws[i].end;
		hist_merge(&hg, ws[i].hg);
		hist_merge(&hs, ws[i].hs);
		free(ws[i].hg);
		free(ws[i].hs);
	}
	double secs = (double)tsync_ticks_to_ns(t_end - t0) / 1e9;
	res->mops = secs > 0 ? (double)ops / secs / 1e6 : 0;
	res->get_p99_ns = tsync_ticks_to_ns(hist_quantile(&hg, 0.99));
	res->set_p99_ns = hist_count(&hs) ? tsync_ticks_to_ns(hist_quantile(&hs, 0.99)) : 0;
	bench_run_destroy(&g_run);
	free(ws);
	free(th);
	cache_mem_stats(g_cache, &res->mem);
	cache_destroy(g_cache);
	g_cache = NULL;
	return 0;
}

/* ---- options, output -------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: tsync-bench cache [options]\n"
	      "  The in-process memcached study of ParSec (EuroSys 2016) sec. 5.2 (Figs. 7-8): "
	      "YCSB Zipfian\n"
	      "  (theta 0.99, scrambled) gets and sets on the tsync-cached core, 16-byte keys,\n"
	      "  32-byte values.\n"
	      "  --variants LIST   ps,ps-nocrp,mcs-clock,locked (default: all four)\n"
	      "  --threads LIST    thread counts (default 1..CPUs)\n"
	      "  --set-pct LIST    set percentages (default 0,10,20)\n"
	      "  --requests N      trace length, partitioned over the threads (default 10000000)\n"
	      "  --seconds S       cycle each partition for S seconds instead of running it once\n"
	      "  --keys N          records (default 1000000)\n"
	      "  --csv FILE|-      write the CSV there ('-': stdout)\n"
	      "  --out DIR         write DIR/cache.csv, DIR/table.md and plots\n"
	      "  --no-pin          do not pin worker i to the i-th allowed CPU\n"
	      "  --prudence LIST   on,off: the item allocator's Prudence policies (default on;\n"
	      "                    both: each configuration twice, interleaved; the CSV has the\n"
	      "                    `on` runs)\n"
	      "  --mem-csv FILE    append per run: " MEM_CSV_HEADER "\n"
	      "CSV: " CSV_HEADER "\n",
	      f);
}

static int select_variant(const char *t, void *ctx)
{
	struct opts *o = ctx;
	enum cache_variant v;
	if (strcmp(t, "all") == 0) {
		for (int i = 0; i < 4; i++)
			o->sel[i] = true;
	} else if (cache_variant_parse(t, &v) == 0 && v < 4) {
		/* the study's four (the rest: tsync-bench rt-cache) */
		o->sel[v] = true;
	} else {
		fprintf(stderr, "tsync-bench cache: unknown variant '%s'\n", t);
		return -1;
	}
	o->any_sel = true;
	return 0;
}

static int opt_variants(const char *arg, void *ctx)
{
	return bench_each_item(arg, select_variant, ctx) == 0 ? 0 : -1;
}

static int select_prudence(const char *t, void *ctx)
{
	struct opts *o = ctx;
	if (strcmp(t, "on") != 0 && strcmp(t, "off") != 0) {
		fprintf(stderr, "tsync-bench cache: bad --prudence '%s'\n", t);
		return -1;
	}
	o->prud[strcmp(t, "off") == 0] = true;
	return 0;
}

static int opt_prudence(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	o->prud[0] = o->prud[1] = false;
	if (bench_each_item(arg, select_prudence, o) != 0)
		return -1;
	if (!o->prud[0] && !o->prud[1]) {
		fprintf(stderr, "tsync-bench cache: empty --prudence\n");
		return -1;
	}
	return 0;
}

/* 0, BENCH_GETOPT_DONE (--help) or -1. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	const struct bench_opt opts[] = {
		BENCH_O_FN("variants", 0, BENCH_OPT_CALL, opt_variants),
		BENCH_O_LIST("threads", 0, BENCH_OPT_UINTS, o->threads, &o->nthreads, 1,
			     MAX_THREADS, BENCH_LIST_SKIP_EMPTY),
		BENCH_O_LIST("set-pct", 0, BENCH_OPT_UINTS, o->pcts, &o->npcts, 0, 100,
			     BENCH_LIST_SKIP_EMPTY),
		BENCH_O_NUM("requests", 0, BENCH_OPT_SIZE, &o->requests, 1, 1ull << 32),
		BENCH_O_DBL("seconds", 0, BENCH_OPT_SECONDS, &o->seconds, 3600),
		BENCH_O_NUM("keys", 0, BENCH_OPT_U64, &o->keys, 1, SET_BIT - 1),
		BENCH_O_STR("csv", 0, &o->csv),
		BENCH_O_STR("out", 0, &o->out),
		BENCH_O_CLEAR("no-pin", 0, &o->pin),
		BENCH_O_FN("prudence", 0, BENCH_OPT_CALL, opt_prudence),
		BENCH_O_STR("mem-csv", 0, &o->mem_csv),
		BENCH_O_END,
	};
	int rc = bench_getopt("tsync-bench cache", argc, argv, opts, usage, o);
	if (rc != 0)
		return rc;
	if (!o->any_sel)
		for (int i = 0; i < 4; i++)
			o->sel[i] = true;
	return 0;
}

static void run_report(const char *dir, const char *csv_path, const char *cmdline)
{
	const char *py = bench_python();
	char *args[] = {(char *)py,  (char *)TSYNC_CACHE_REPORT_PY, (char *)csv_path,
			(char *)dir, (char *)"--command",           (char *)cmdline,
			NULL};
	int rc = bench_run_report("tsync-bench cache", csv_path, args);
	if (rc == BENCH_SCRIPT_MISSING)
		return;
	if (rc < 0) {
		fprintf(stderr, "tsync-bench cache: warning: cannot run %s (%s); CSV in %s\n", py,
			strerror(-rc), csv_path);
		return;
	}
	if (rc == 0)
		fprintf(stderr, "tsync-bench cache: wrote %s/table.md and plots\n", dir);
	else if (rc == BENCH_SCRIPT_NO_MATPLOTLIB)
		fprintf(stderr,
			"tsync-bench cache: warning: no matplotlib: wrote %s/table.md, no "
			"plots\n",
			dir);
	else
		fprintf(stderr, "tsync-bench cache: warning: %s failed; CSV in %s\n",
			TSYNC_CACHE_REPORT_PY, csv_path);
}

int cache_main(int argc, char **argv, const char *cmdline)
{
	struct opts o = {
		.requests = 10000000u, .keys = 1000000u, .pin = true, .prud = {true, false}};
	g_ncpus = bench_cpus(g_cpus);
	int prc = parse_opts(argc, argv, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	if (o.nthreads == 0)
		o.nthreads = bench_thread_counts(o.threads, MAX_LIST, g_ncpus);
	if (o.npcts == 0)
		o.npcts = (unsigned)bench_parse_uint_list("0,10,20", o.pcts, MAX_LIST, 0, 100, 0);
	struct bench_csv out;
	if (bench_csv_open(&out, "tsync-bench cache", o.csv, o.out, "cache.csv", CSV_HEADER) != 0)
		return 1;
	FILE *mem = NULL;
	if (o.mem_csv) {
		if (!(mem = fopen(o.mem_csv, "a"))) {
			fprintf(stderr, "tsync-bench cache: %s: %s\n", o.mem_csv, strerror(errno));
			return 1;
		}
		if (ftell(mem) == 0)
			fputs(MEM_CSV_HEADER "\n", mem);
	}
	if (tsync_clock_init() != 0) {
		perror("tsync_clock_init");
		return 1;
	}
	/* keys: "user" + 12 digits = 16 bytes, as YCSB's "user<number>" */
	char *keys = malloc(o.keys * KEY_LEN + 1);
	if (!keys)
		return 1;
	for (uint64_t k = 0; k < o.keys; k++) {
		char tmp[32];
		snprintf(tmp, sizeof tmp, "user%012" PRIu64, (uint64_t)(k % 1000000000000ull));
		memcpy(keys + k * KEY_LEN, tmp, KEY_LEN);
	}
	g_keys = keys;
	fprintf(stderr,
		"tsync-bench cache: %zu requests, %" PRIu64 " keys, %s; %u CPUs, pinning %s\n",
		o.requests, o.keys, o.seconds > 0 ? "timed" : "one pass", g_ncpus,
		o.pin ? "on" : "off");
	int status = 0;
	for (unsigned p = 0; p < o.npcts && !status; p++) {
		uint32_t *trace = ycsb_trace(o.requests, o.pcts[p], o.keys);
		if (!trace) {
			fprintf(stderr, "tsync-bench cache: out of memory for the trace\n");
			return 1;
		}
		for (int v = 0; v < 4 && !status; v++) {
			if (!o.sel[v])
				continue;
			for (unsigned t = 0; t < o.nthreads && !status; t++)
				for (int u = 0; u < 2 && !status; u++) {
					if (!o.prud[u])
						continue;
					struct result r;
					if (run_one((enum cache_variant)v, o.threads[t], trace, &o,
						    u ? PS_MEM_PRUDENCE_NONE : 0, &r) != 0) {
						status = 1;
						break;
					}
					const char *name =
						cache_variant_name((enum cache_variant)v);
					fprintf(stderr,
						"  %-9s %2u threads %3u%% sets, Prudence %-3s: "
						"%8.3f Mops/s  "
						"get p99 %" PRIu64 " ns  set p99 %" PRIu64 " ns\n",
						name, o.threads[t], o.pcts[p], u ? "off" : "on",
						r.mops, r.get_p99_ns, r.set_p99_ns);
					if (mem && mem_row(mem, name, o.threads[t], o.pcts[p], u,
							   &r) != 0) {
						status = 1;
						break;
					}
					if (!u)
						bench_csv_printf(
							&out,
							"%s,%u,%u,%.6g,%" PRIu64 ",%" PRIu64 "\n",
							name, o.threads[t], o.pcts[p], r.mops,
							r.get_p99_ns, r.set_p99_ns);
				}
		}
		free(trace);
	}
	free(keys);
	if (mem)
		fclose(mem);
	char *csv_path = out.path;
	out.path = NULL;
	bench_csv_close(&out);
	if (csv_path && !status)
		run_report(o.out, csv_path, cmdline);
	free(csv_path);
	return status;
}
