/*
 * bench/rlu/rlu_bench.c - `tsync-bench rlu`: the list / hash-table study of the RLU study (Appl.
 * Sci. 2022) §5 (Figs. 5-6) with tsync's RLU, MV-RLU and ParSec against liburcu RCU and an rwlock.
 *
 * Set-up (RLU study (Appl. Sci. 2022) §5.2): list of 1000 initial nodes over a key range of 2000;
 * hash table of 1000 buckets with 5000 initial nodes over a range of 10000; keys uniform; an update
 * is an insert or a delete with equal probability, so the size stays about constant; the rest are
 * lookups. Each worker runs batches of 64 operations until
 * --seconds have passed (at least one batch, however late it starts); --ops-column
 * appends `ops`, the operations of all threads, for the smoke test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <pthread.h>
#include <sched.h> /* CPU_SETSIZE */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/clock.h>

#include "common.h"
#include "rlu_bench.h"
#include "sets.h"

#ifndef TSYNC_RLU_PLOT_PY
#define TSYNC_RLU_PLOT_PY "plot_rlu.py"
#endif
#ifndef TSYNC_BENCH_PYTHON
#define TSYNC_BENCH_PYTHON "python3"
#endif

#define CSV_HEADER "structure,mechanism,threads,update_pct,ops_per_us,aborts_per_kop"
#define OPS_COLUMN ",ops"
#define MAX_LIST 64
#define MAX_THREADS 1024

static const char *const default_mechs[] = {"rcu", "rcu-sync", "rlu", "mvrlu", "ps", "rwlock"};
/* (a name set_find() does not know is skipped) */

struct opts {
	bool structs[2]; /* list, hash */
	const struct set_ops *mech[16];
	unsigned nmech;
	unsigned threads[MAX_LIST], nthreads;
	unsigned updates[MAX_LIST], nupdates;
	double seconds;
	const char *csv, *out;
	bool pin, ops_col;
};

struct worker {
	_Alignas(64) unsigned id;
	int cpu;
	uint64_t seed, ops;
};

static const struct set_ops *g_ops;
static void *g_set;
static unsigned g_range, g_upd;
static struct bench_run g_run;
static int g_cpus[CPU_SETSIZE];
static unsigned g_ncpus;

static void *worker(void *arg)
{
	struct worker *w = arg;
	(void)bench_pin_self(w->cpu);
	g_ops->thread_init(g_set);
	uint64_t deadline = bench_run_wait(&g_run);
	const struct set_ops *ops = g_ops;
	void *set = g_set;
	uint64_t s = w->seed, n = 0;
	uint64_t thresh = ((uint64_t)g_upd << 32) / 100u;
	for (;;) {
		for (unsigned i = 0; i < 64; i++) {
			uint64_t r = bench_xorshift64s(&s);
			uint64_t k = (r & 0xffffffffu) % g_range;
			if ((r >> 32) < thresh) {
				if (r & (1ull << 31))
					ops->insert(set, k);
				else
					ops->remove(set, k);
			} else {
				ops->lookup(set, k);
			}
		}
		n += 64;
		if (tsync_now() >= deadline)
			break;
	}
	w->ops = n;
	g_ops->thread_fini(g_set);
	return NULL;
}

static int run_one(const struct set_ops *ops, bool hash, unsigned nthr, unsigned upd,
		   const struct opts *o, double *ops_per_us, double *aborts_per_kop,
		   uint64_t *ops_out)
{
	unsigned nb = hash ? 1000u : 1u, init = hash ? 5000u : 1000u;
	g_range = hash ? 10000u : 2000u;
	g_upd = upd;
	g_ops = ops;
	g_set = ops->create(nb);
	if (!g_set) {
		fprintf(stderr, "tsync-bench rlu: %s: cannot create the set\n", ops->name);
		return -1;
	}
	/* Populate with `init` distinct uniform keys. */
	ops->thread_init(g_set);
	uint64_t s = 0x9e3779b97f4a7c15ull ^ g_range;
	for (unsigned have = 0; have < init;)
		have += ops->insert(g_set, bench_xorshift64s(&s) % g_range);
	ops->thread_fini(g_set);

	struct worker *w = aligned_alloc(64, sizeof(*w) * nthr);
	pthread_t *t = calloc(nthr, sizeof(*t));
	if (!w || !t) {
		fprintf(stderr, "tsync-bench rlu: out of memory\n");
		exit(1);
	}
	memset(w, 0, sizeof(*w) * nthr);
	bench_run_init(&g_run, "tsync-bench rlu", nthr);
	for (unsigned i = 0; i < nthr; i++) {
		w[i].id = i;
		w[i].cpu = o->pin ? g_cpus[i % g_ncpus] : -1;
		w[i].seed = 0x5eed0000u + i * 7919u + upd;
		int err = pthread_create(&t[i], NULL, worker, &w[i]);
		if (err) {
			fprintf(stderr, "tsync-bench rlu: pthread_create: %s\n", strerror(err));
			exit(1);
		}
	}
	uint64_t start = bench_run_start(&g_run, o->seconds);
	uint64_t total = 0;
	for (unsigned i = 0; i < nthr; i++) {
		pthread_join(t[i], NULL);
		total += w[i].ops;
	}
	uint64_t end = tsync_now();
	bench_run_destroy(&g_run);
	uint64_t aborts = ops->aborts(g_set);
	ops->destroy(g_set);
	free(w);
	free(t);
	double us = (double)tsync_ticks_to_ns(end - start) / 1e3;
	*ops_per_us = (double)total / (us > 0 ? us : 1);
	*aborts_per_kop = total ? (double)aborts * 1000.0 / (double)total : 0;
	*ops_out = total;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsync-bench rlu [options]\n"
		"\n"
		"The list / hash-table study of the RLU study (Appl. Sci. 2022) sec. 5: lookups, "
		"inserts and deletes of\n"
		"uniform keys; updates are half inserts, half deletes.\n"
		"  list: 1000 initial nodes, key range 2000 (one sorted list)\n"
		"  hash: 1000 buckets, 5000 initial nodes, key range 10000\n"
		"\n"
		"options:\n"
		"  -S, --structure list|hash|list,hash   (default: list,hash)\n"
		"  -m, --mechanisms LIST  from: rcu, rcu-sync, rlu, rlu-defer, mvrlu, ps, rwlock\n"
		"                         (default: rcu,rcu-sync,rlu,mvrlu,ps,rwlock)\n"
		"  -t, --threads LIST     thread counts (default: 1..nproc)\n"
		"  -u, --updates LIST     update percentages (default: 2,20,50)\n"
		"  -s, --seconds S        seconds per run (default: 1)\n"
		"  -c, --csv FILE|-       CSV rows to FILE ('-': stdout; default when no --out)\n"
		"  -o, --out DIR          DIR/rlu.csv, then DIR/table.md and PNG plots "
		"(plot_rlu.py)\n"
		"      --pin / --no-pin   pin worker i to the i-th CPU (default: --pin)\n"
		"  -l, --list             list the mechanisms\n"
		"      --ops-column       append a column ops: the operations of all threads\n"
		"\n"
		"CSV columns: " CSV_HEADER "\n"
		"  ops_per_us: completed operations of all threads per microsecond;\n"
		"  aborts_per_kop: aborted attempts (rlu*: rlu_abort, mvrlu: mvrlu_abort; ps: "
		"failed lock or\n"
		"  validation) per 1000 operations; 0 for the lock-based mechanisms.\n");
}

static int add_mech(const char *tok, void *ctx)
{
	struct opts *o = ctx;
	const struct set_ops *m = set_find(tok);
	if (!m || o->nmech == 16) {
		fprintf(stderr, "tsync-bench rlu: unknown mechanism '%s'\n", tok);
		return -1;
	}
	o->mech[o->nmech++] = m;
	return 0;
}

static int opt_mechs(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	o->nmech = 0;
	return bench_each_item(arg, add_mech, o) == 0 && o->nmech ? 0 : -1;
}

static int opt_structure(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	o->structs[0] = strstr(arg, "list") != NULL;
	o->structs[1] = strstr(arg, "hash") != NULL;
	if (!o->structs[0] && !o->structs[1]) {
		fprintf(stderr, "tsync-bench rlu: bad --structure '%s'\n", arg);
		return -1;
	}
	return 0;
}

static int opt_list(const char *arg, void *ctx)
{
	(void)arg;
	(void)ctx;
	for (size_t i = 0; set_all[i]; i++)
		printf("%-10s %s\n", set_all[i]->name, set_all[i]->what);
	return BENCH_GETOPT_DONE;
}

static void run_plot(const char *dir, const char *csv, const char *cmdline, const char *clock)
{
	const char *py = bench_python();
	char *args[] = {(char *)py,
			(char *)TSYNC_RLU_PLOT_PY,
			(char *)csv,
			(char *)dir,
			(char *)"--command",
			(char *)cmdline,
			(char *)"--clock",
			(char *)clock,
			NULL};
	int rc = bench_run_script(args);
	if (rc < 0) {
		fprintf(stderr, "tsync-bench rlu: warning: cannot run %s; CSV in %s\n", py, csv);
		return;
	}
	if (rc != 0 && rc != BENCH_SCRIPT_NO_MATPLOTLIB)
		fprintf(stderr, "tsync-bench rlu: warning: plot_rlu.py failed; CSV in %s\n", csv);
	else if (rc == BENCH_SCRIPT_NO_MATPLOTLIB)
		fprintf(stderr, "tsync-bench rlu: warning: no matplotlib: table only\n");
}

int rlu_main(int argc, char **argv, const char *cmdline)
{
	struct opts o = {.seconds = 1.0, .pin = true};
	g_ncpus = bench_cpus(g_cpus);
	const struct bench_opt opts[] = {
		BENCH_O_FN("structure", 'S', BENCH_OPT_CALL, opt_structure),
		BENCH_O_FN("mechanisms", 'm', BENCH_OPT_CALL, opt_mechs),
		BENCH_O_LIST("threads", 't', BENCH_OPT_UINTS, o.threads, &o.nthreads, 1,
			     MAX_THREADS, 0),
		BENCH_O_LIST("updates", 'u', BENCH_OPT_UINTS, o.updates, &o.nupdates, 0, 100, 0),
		BENCH_O_DBL("seconds", 's', BENCH_OPT_SECONDS, &o.seconds, 3600),
		BENCH_O_STR("csv", 'c', &o.csv),
		BENCH_O_STR("out", 'o', &o.out),
		BENCH_O_SET("pin", 0, &o.pin),
		BENCH_O_CLEAR("no-pin", 0, &o.pin),
		BENCH_O_FN("list", 'l', BENCH_OPT_CALL0, opt_list),
		BENCH_O_SET("ops-column", 0, &o.ops_col),
		BENCH_O_END,
	};
	int prc = bench_getopt("tsync-bench rlu", argc, argv, opts, usage, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	if (!o.structs[0] && !o.structs[1])
		o.structs[0] = o.structs[1] = true;
	if (!o.nmech)
		for (size_t i = 0; i < sizeof default_mechs / sizeof *default_mechs; i++)
			if ((o.mech[o.nmech] = set_find(default_mechs[i])))
				o.nmech++;
	if (!o.nthreads)
		o.nthreads = bench_thread_counts(o.threads, MAX_LIST, g_ncpus);
	if (!o.nupdates)
		o.nupdates =
			(unsigned)bench_parse_uint_list("2,20,50", o.updates, MAX_LIST, 0, 100, 0);
	struct bench_csv out;
	if (bench_csv_open(&out, "tsync-bench rlu", o.csv, o.out, "rlu.csv",
			   o.ops_col ? CSV_HEADER OPS_COLUMN : CSV_HEADER) != 0)
		return 1;
	tsync_clock_init();
	char clockdesc[128];
	snprintf(clockdesc, sizeof clockdesc, "tsync %s, skew bound %llu ticks, %.4f ticks/ns",
		 tsync_clock_source_name(), (unsigned long long)tsync_clock_skew(),
		 tsync_ticks_per_ns());
	fprintf(stderr, "tsync-bench rlu: clock %s; %u CPUs; pinning %s\n", clockdesc, g_ncpus,
		o.pin ? "on" : "off");
	static const char *const sname[2] = {"list", "hash"};
	for (int si = 0; si < 2; si++) {
		if (!o.structs[si])
			continue;
		for (unsigned m = 0; m < o.nmech; m++)
			for (unsigned u = 0; u < o.nupdates; u++)
				for (unsigned t = 0; t < o.nthreads; t++) {
					double opus, apk;
					uint64_t nops;
					if (run_one(o.mech[m], si == 1, o.threads[t], o.updates[u],
						    &o, &opus, &apk, &nops)) {
						bench_csv_close(&out);
						return 1;
					}
					char opsf[32] = "";
					if (o.ops_col)
						snprintf(opsf, sizeof opsf, ",%" PRIu64, nops);
					bench_csv_printf(&out, "%s,%s,%u,%u,%.4f,%.3f%s\n",
							 sname[si], o.mech[m]->name, o.threads[t],
							 o.updates[u], opus, apk, opsf);
					fprintf(stderr,
						"rlu: %s %-9s threads=%-3u updates=%2u%%: %8.3f "
						"ops/us, %8.3f aborts/kop\n",
						sname[si], o.mech[m]->name, o.threads[t],
						o.updates[u], opus, apk);
				}
	}
	char *path = out.path;
	out.path = NULL;
	bench_csv_close(&out);
	if (path)
		run_plot(o.out, path, cmdline, clockdesc);
	free(path);
	return 0;
}
