/*
 * bench/oplog/oplog_bench.c - `tsync-bench oplog list|counter|rmap`: the micro-benchmarks
 * of OpLog (MIT TR 2014) §7.2-7.3.
 *
 *   list     Fig. 12: each thread adds its element, spins ~1000 cycles, removes it, spins
 *            ~1000 cycles (one op = one such iteration); param N > 0 adds a read (the
 *            list's size) after every N-th iteration (0: never, the seed's set-up).
 *            Variants: lockfree (Harris list, ParSec SMR), oplog-basic,
 *            oplog-global-absorb, oplog-local-absorb.
 *   counter  inc/dec (alternating) with a read every N ops (param N).
 *            Variants: atomic (one shared counter), percpu (a counter per CPU, picked
 *            with sched_getcpu), oplog-counter.
 *   rmap     each thread keeps 8 mappings; an op removes one and adds it back (the
 *            fork/exit pattern of §3), and every K-th op is a truncate (param K).
 *            Variants: mutex (a sorted list under a pthread mutex), lockfree (Harris
 *            list, ParSec SMR, truncate by CAS on each mapping's end), oplog-basic,
 *            oplog-global-absorb, oplog-local-absorb.
 *
 * CSV: benchmark,variant,threads,param,ops_per_ms,p99_ns
 *   ops_per_ms  operations of all threads per millisecond of wall time
 *   p99_ns      99th percentile latency of one op, sampled every 32nd op (two clock
 *               reads around it); for list an op includes its two spins
 * --ops-column appends `ops`, the operations of all threads (every worker does at least
 * one: its first op comes before its first look at the deadline), for the smoke test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tsync/clock.h>
#include <tsync/oplog.h>
#include <tsync/oplog_counter.h>
#include <tsync/oplog_list.h>
#include <tsync/oplog_rmap.h>

#include "common.h"
#include "hist.h"
#include "harris.h"
#include "oplog_bench.h"

#ifndef TSYNC_OPLOG_PLOT_PY
#define TSYNC_OPLOG_PLOT_PY "plot_oplog.py"
#endif
#ifndef TSYNC_BENCH_PYTHON
#define TSYNC_BENCH_PYTHON "python3"
#endif

#define CSV_HEADER "benchmark,variant,threads,param,ops_per_ms,p99_ns"
#define OPS_COLUMN ",ops"
#define MAX_THREADS 256u
#define MAX_LIST 32u
#define LAT_EVERY 32u /* rdtsc costs ~10-30 ns under KVM: time few ops */
#define SPIN_CYCLES 1000u
#define RMAP_W 8u     /* mappings per thread */
#define RMAP_PAGES 64 /* file size in pages; mappings start in [0, 64) */

struct bthread {
	_Alignas(64) unsigned id;
	int cpu;
	uint64_t ops;
	uint64_t end_tick;
	uint64_t seed;
	struct hist *lat;
	/* list */
	struct oplog_list_node node;
	/* rmap */
	struct oplog_rmap_mapping maps[RMAP_W];
	uint64_t keys[RMAP_W];
	unsigned ring;
	bool removed;
	bool inc_next; /* counter: alternate inc/dec, so each thread adds 0 or 1 */
};

struct variant {
	const char *name;
	int (*init)(unsigned nthr);
	void (*fini)(void);
	void (*thread_init)(struct bthread *t);
	void (*op)(struct bthread *t, uint64_t i);
};

/* ---- run state ---- */
static uint64_t g_param;
static unsigned g_nthr;
static struct bthread *g_th;
static struct bench_run g_run;

static inline void spin_cycles(uint64_t n)
{
	uint64_t until = tsync_now() + n;
	while (tsync_now() < until)
		tsync_arch_relax();
}

/* ==== list ==== */
static struct hl_list g_hl;
static struct oplog_domain *g_ld;
static struct oplog_list g_ol;

static int lf_list_init(unsigned n)
{
	(void)n;
	return hl_init(&g_hl);
}
static void lf_list_fini(void)
{
	hl_fini(&g_hl);
}
static void noop_thread_init(struct bthread *t)
{
	(void)t;
}
static void lf_list_op(struct bthread *t, uint64_t i)
{
	if (!hl_insert(&g_hl, t->id + 1, 0, 0))
		abort();
	spin_cycles(SPIN_CYCLES);
	if (!hl_delete(&g_hl, t->id + 1))
		abort();
	spin_cycles(SPIN_CYCLES);
	if (g_param && i % g_param == g_param - 1) {
		/* a read after this iteration: walk the list, count live elements */
		size_t n = 0;
		ps_enter(g_hl.ps);
		for (uintptr_t p = atomic_load_explicit(&g_hl.head, memory_order_acquire);
		     p & ~(uintptr_t)1;) {
			struct hl_node *x = (struct hl_node *)(p & ~(uintptr_t)1);
			p = atomic_load_explicit(&x->next, memory_order_acquire);
			n += !(p & 1);
		}
		ps_exit(g_hl.ps);
		if (n > g_nthr)
			abort();
	}
}

static int ol_init(enum oplog_list_mode m)
{
	g_ld = oplog_list_domain_create(m, 0, NULL);
	if (!g_ld)
		return -1;
	return oplog_list_init(&g_ol, g_ld);
}
static int ol_basic_init(unsigned n)
{
	(void)n;
	return ol_init(OPLOG_LIST_BASIC);
}
static int ol_global_init(unsigned n)
{
	(void)n;
	return ol_init(OPLOG_LIST_GLOBAL_ABSORB);
}
static int ol_local_init(unsigned n)
{
	(void)n;
	return ol_init(OPLOG_LIST_LOCAL_ABSORB);
}
static void ol_fini(void)
{
	if (oplog_list_size(&g_ol) != 0)
		abort();
	oplog_list_fini(&g_ol);
	oplog_domain_destroy(g_ld);
}
static void ol_thread_init(struct bthread *t)
{
	oplog_list_node_init(&t->node);
}
static void ol_op(struct bthread *t, uint64_t i)
{
	if (oplog_list_add(&g_ol, &t->node) < 0)
		abort();
	spin_cycles(SPIN_CYCLES);
	if (oplog_list_remove(&g_ol, &t->node) < 0)
		abort();
	spin_cycles(SPIN_CYCLES);
	if (g_param && i % g_param == g_param - 1 && oplog_list_size(&g_ol) > g_nthr)
		abort();
}

static const struct variant list_variants[] = {
	{"lockfree", lf_list_init, lf_list_fini, noop_thread_init, lf_list_op},
	{"oplog-basic", ol_basic_init, ol_fini, ol_thread_init, ol_op},
	{"oplog-global-absorb", ol_global_init, ol_fini, ol_thread_init, ol_op},
	{"oplog-local-absorb", ol_local_init, ol_fini, ol_thread_init, ol_op},
};

/* ==== counter ==== */
static _Alignas(64) _Atomic int64_t g_atomic;
struct percpu_slot {
	_Alignas(64) _Atomic int64_t v;
};
static struct percpu_slot *g_percpu;
static unsigned g_ncpu_slots;
static struct oplog_domain *g_cd;
static struct oplog_counter g_ctr;

static inline bool is_read(uint64_t i)
{
	return g_param && i % g_param == g_param - 1;
}

/* +1, -1, +1, ...: the counter stays in [0, threads] (the reads check it). */
static inline int64_t delta(struct bthread *t)
{
	t->inc_next = !t->inc_next;
	return t->inc_next ? 1 : -1;
}

static inline bool bad_value(int64_t v)
{
	return v < 0 || v > (int64_t)g_nthr;
}

static int atomic_init_v(unsigned n)
{
	(void)n;
	atomic_store(&g_atomic, 0);
	return 0;
}
static void nothing(void)
{
}
static void atomic_op(struct bthread *t, uint64_t i)
{
	if (is_read(i)) {
		if (bad_value(atomic_load_explicit(&g_atomic, memory_order_acquire)))
			abort();
		return;
	}
	atomic_fetch_add_explicit(&g_atomic, delta(t), memory_order_relaxed);
}

static int percpu_init(unsigned n)
{
	(void)n;
	g_ncpu_slots = (unsigned)sysconf(_SC_NPROCESSORS_CONF);
	if (g_ncpu_slots < 1)
		g_ncpu_slots = 1;
	g_percpu = aligned_alloc(64, g_ncpu_slots * sizeof(*g_percpu));
	if (!g_percpu)
		return -1;
	memset(g_percpu, 0, g_ncpu_slots * sizeof(*g_percpu));
	return 0;
}
static void percpu_fini(void)
{
	free(g_percpu);
}
static void percpu_op(struct bthread *t, uint64_t i)
{
	if (is_read(i)) {
		int64_t s = 0;
		for (unsigned c = 0; c < g_ncpu_slots; c++)
			s += atomic_load_explicit(&g_percpu[c].v, memory_order_relaxed);
		if (bad_value(s))
			abort();
		return;
	}
	int cpu = sched_getcpu();
	unsigned c = cpu < 0 ? 0 : (unsigned)cpu % g_ncpu_slots;
	atomic_fetch_add_explicit(&g_percpu[c].v, delta(t), memory_order_relaxed);
}

static int oc_init(unsigned n)
{
	(void)n;
	g_cd = oplog_counter_domain_create(NULL);
	if (!g_cd)
		return -1;
	return oplog_counter_init(&g_ctr, g_cd, 0, NULL, NULL);
}
static void oc_fini(void)
{
	if (bad_value(oplog_counter_read(&g_ctr)))
		abort();
	oplog_counter_fini(&g_ctr);
	oplog_domain_destroy(g_cd);
}
static void oc_op(struct bthread *t, uint64_t i)
{
	if (is_read(i)) {
		if (bad_value(oplog_counter_read(&g_ctr)))
			abort();
		return;
	}
	if (oplog_counter_add(&g_ctr, delta(t)) != 0)
		abort();
}

static const struct variant counter_variants[] = {
	{"atomic", atomic_init_v, nothing, noop_thread_init, atomic_op},
	{"percpu", percpu_init, percpu_fini, noop_thread_init, percpu_op},
	{"oplog-counter", oc_init, oc_fini, noop_thread_init, oc_op},
};

/* ==== rmap ==== */
static pthread_mutex_t g_rm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct oplog_list_node g_rm_head;
static struct oplog_domain *g_rd;
static struct oplog_rmap g_or;

static uint64_t map_start(struct bthread *t, unsigned j)
{
	return (t->id * 7u + j * 13u) % RMAP_PAGES;
}

static bool is_trunc(uint64_t i)
{
	return g_param && i % g_param == g_param - 1;
}

static uint64_t trunc_off(struct bthread *t)
{
	return RMAP_PAGES / 2 + bench_xorshift64s(&t->seed) % (RMAP_PAGES / 2);
}

/* mutex: a sorted list of the threads' mapping structs */
static void mx_insert(struct oplog_rmap_mapping *m)
{
	struct oplog_list_node *at = g_rm_head.next;
	while (at != &g_rm_head && ((struct oplog_rmap_mapping *)(void *)at)->start <= m->start)
		at = at->next;
	m->link.next = at;
	m->link.prev = at->prev;
	at->prev->next = &m->link;
	at->prev = &m->link;
}
static void mx_remove(struct oplog_rmap_mapping *m)
{
	m->link.prev->next = m->link.next;
	m->link.next->prev = m->link.prev;
	m->link.next = m->link.prev = NULL;
}
static int mx_init(unsigned n)
{
	(void)n;
	g_rm_head.next = g_rm_head.prev = &g_rm_head;
	return 0;
}
static void mx_thread_init(struct bthread *t)
{
	pthread_mutex_lock(&g_rm_lock);
	for (unsigned j = 0; j < RMAP_W; j++) {
		oplog_rmap_mapping_init(&t->maps[j], map_start(t, j), map_start(t, j) + 16);
		mx_insert(&t->maps[j]);
	}
	pthread_mutex_unlock(&g_rm_lock);
}
static void mx_op(struct bthread *t, uint64_t i)
{
	if (is_trunc(i)) {
		uint64_t off = trunc_off(t), pages = 0;
		pthread_mutex_lock(&g_rm_lock);
		for (struct oplog_list_node *n = g_rm_head.next; n != &g_rm_head; n = n->next) {
			struct oplog_rmap_mapping *m = (struct oplog_rmap_mapping *)(void *)n;
			if (m->end > off) {
				uint64_t ne = m->start > off ? m->start : off;
				pages += m->end - ne;
				m->end = ne;
			}
		}
		pthread_mutex_unlock(&g_rm_lock);
		(void)pages;
		return;
	}
	struct oplog_rmap_mapping *m = &t->maps[t->ring];
	pthread_mutex_lock(&g_rm_lock);
	if (!t->removed)
		mx_remove(m);
	else
		mx_insert(m);
	pthread_mutex_unlock(&g_rm_lock);
	if (t->removed)
		t->ring = (t->ring + 1) % RMAP_W;
	t->removed = !t->removed;
}

/* lockfree: Harris list keyed by (start, thread, slot) */
static uint64_t lf_key(struct bthread *t, unsigned j)
{
	return (map_start(t, j) << 32) | ((uint64_t)t->id << 8) | j;
}
static void lfr_thread_init(struct bthread *t)
{
	for (unsigned j = 0; j < RMAP_W; j++)
		if (!hl_insert(&g_hl, lf_key(t, j), map_start(t, j), map_start(t, j) + 16))
			abort();
}
static void lfr_op(struct bthread *t, uint64_t i)
{
	if (is_trunc(i)) {
		(void)hl_truncate(&g_hl, trunc_off(t));
		return;
	}
	unsigned j = t->ring;
	if (!t->removed) {
		if (!hl_delete(&g_hl, lf_key(t, j)))
			abort();
	} else {
		if (!hl_insert(&g_hl, lf_key(t, j), map_start(t, j), map_start(t, j) + 16))
			abort();
		t->ring = (t->ring + 1) % RMAP_W;
	}
	t->removed = !t->removed;
}

/* oplog */
static int or_init(enum oplog_list_mode m)
{
	g_rd = oplog_rmap_domain_create(m, 0, NULL);
	if (!g_rd)
		return -1;
	return oplog_rmap_init(&g_or, g_rd);
}
static int or_basic_init(unsigned n)
{
	(void)n;
	return or_init(OPLOG_LIST_BASIC);
}
static int or_global_init(unsigned n)
{
	(void)n;
	return or_init(OPLOG_LIST_GLOBAL_ABSORB);
}
static int or_local_init(unsigned n)
{
	(void)n;
	return or_init(OPLOG_LIST_LOCAL_ABSORB);
}
static void or_fini(void)
{
	size_t n = oplog_rmap_count(&g_or); /* each thread has W or W - 1 mappings in */
	if (n > g_nthr * RMAP_W || n < g_nthr * (RMAP_W - 1))
		abort();
	oplog_rmap_fini(&g_or);
	oplog_domain_destroy(g_rd);
}
static void or_thread_init(struct bthread *t)
{
	for (unsigned j = 0; j < RMAP_W; j++) {
		oplog_rmap_mapping_init(&t->maps[j], map_start(t, j), map_start(t, j) + 16);
		if (oplog_rmap_add(&g_or, &t->maps[j]) < 0)
			abort();
	}
}
static void or_op(struct bthread *t, uint64_t i)
{
	if (is_trunc(i)) {
		(void)oplog_rmap_truncate(&g_or, trunc_off(t));
		return;
	}
	struct oplog_rmap_mapping *m = &t->maps[t->ring];
	if ((!t->removed ? oplog_rmap_remove(&g_or, m) : oplog_rmap_add(&g_or, m)) < 0)
		abort();
	if (t->removed)
		t->ring = (t->ring + 1) % RMAP_W;
	t->removed = !t->removed;
}

static const struct variant rmap_variants[] = {
	{"mutex", mx_init, nothing, mx_thread_init, mx_op},
	{"lockfree", lf_list_init, lf_list_fini, lfr_thread_init, lfr_op},
	{"oplog-basic", or_basic_init, or_fini, or_thread_init, or_op},
	{"oplog-global-absorb", or_global_init, or_fini, or_thread_init, or_op},
	{"oplog-local-absorb", or_local_init, or_fini, or_thread_init, or_op},
};

/* ==== harness ==== */
struct bench {
	const char *name;
	const struct variant *v;
	size_t nv;
	const char *params_default;
	const char *param_name;
};
static const struct bench benches[] = {
	{"list", list_variants, sizeof list_variants / sizeof list_variants[0], "0",
	 "read every N iterations (0: never)"},
	{"counter", counter_variants, sizeof counter_variants / sizeof counter_variants[0],
	 "1,10,100,1000,10000,100000", "read every N ops"},
	{"rmap", rmap_variants, sizeof rmap_variants / sizeof rmap_variants[0], "1,2,3,10,100",
	 "truncate every K ops"},
};

static const struct variant *g_v;

static void *worker(void *arg)
{
	struct bthread *t = arg;
	(void)bench_pin_self(t->cpu);
	g_v->thread_init(t);
	uint64_t deadline = bench_run_wait(&g_run);
	void (*op)(struct bthread *, uint64_t) = g_v->op;
	uint64_t i = 0, t1 = 0;
	for (;; i++) {
		if ((i % LAT_EVERY) != 0) {
			op(t, i);
			continue;
		}
		uint64_t t0 = tsync_now();
		op(t, i);
		t1 = tsync_now();
		hist_add(t->lat, t1 > t0 ? t1 - t0 : 0);
		if (t1 >= deadline)
			break;
	}
	t->ops = i + 1;
	t->end_tick = t1;
	return NULL;
}

struct opts {
	const struct bench *b;
	bool sel[8];
	unsigned threads[MAX_LIST], nthreads;
	uint64_t params[MAX_LIST];
	unsigned nparams;
	double seconds;
	const char *csv, *out;
	bool pin, any_sel, ops_col;
	unsigned repeat;
};

static int g_cpus[CPU_SETSIZE];
static unsigned g_ncpus;

static int run_one(const struct variant *v, unsigned nthr, uint64_t param, const struct opts *o,
		   double *ops_per_ms, uint64_t *p99_ns, uint64_t *ops_out)
{
	g_v = v;
	g_param = param;
	g_nthr = nthr;
	g_th = aligned_alloc(64, nthr * sizeof(*g_th));
	pthread_t *tid = calloc(nthr, sizeof(*tid));
	if (!g_th || !tid)
		return -1;
	memset(g_th, 0, nthr * sizeof(*g_th));
	if (v->init(nthr) != 0) {
		fprintf(stderr, "tsync-bench oplog: %s: init failed: %s\n", v->name,
			strerror(errno));
		return -1;
	}
	bench_run_init(&g_run, "tsync-bench oplog", nthr);
	for (unsigned i = 0; i < nthr; i++) {
		g_th[i].id = i;
		g_th[i].cpu = o->pin ? g_cpus[i % g_ncpus] : -1;
		g_th[i].seed = 0x9e3779b97f4a7c15ull * (i + 1) | 1;
		g_th[i].lat = calloc(1, sizeof(struct hist));
		if (!g_th[i].lat || pthread_create(&tid[i], NULL, worker, &g_th[i]) != 0) {
			fprintf(stderr, "tsync-bench oplog: cannot start threads\n");
			exit(1);
		}
	}
	uint64_t start = bench_run_start(&g_run, o->seconds);
	for (unsigned i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	v->fini();
	struct hist *all = calloc(1, sizeof(*all));
	if (!all)
		return -1;
	uint64_t ops = 0, end = start;
	for (unsigned i = 0; i < nthr; i++) {
		ops += g_th[i].ops;
		hist_merge(all, g_th[i].lat);
		if (g_th[i].end_tick > end)
			end = g_th[i].end_tick;
		free(g_th[i].lat);
	}
	double ms = (double)tsync_ticks_to_ns(end - start) / 1e6;
	*ops_per_ms = ms > 0 ? (double)ops / ms : 0;
	*ops_out = ops;
	*p99_ns = tsync_ticks_to_ns(hist_quantile(all, 0.99));
	free(all);
	free(g_th);
	free(tid);
	bench_run_destroy(&g_run);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsync-bench oplog list|counter|rmap [options]\n"
		"\n"
		"Micro-benchmarks of OpLog (MIT TR 2014) sec. 7.2-7.3:\n"
		"  list     Fig. 12: add own element, spin ~%u cycles, remove it, spin; one op\n"
		"           per iteration. Param N: a read (list size) after every N-th\n"
		"           iteration (default 0: never). Variants: lockfree (Harris list + ParSec "
		"SMR),\n"
		"           oplog-basic, oplog-global-absorb, oplog-local-absorb.\n"
		"  counter  alternating inc/dec with a read every N ops (default N: 1,10,100,\n"
		"           1000,10000,100000). Variants: atomic, percpu, oplog-counter.\n"
		"  rmap     remove/re-add one of the thread's %u mappings per op, a truncate\n"
		"           every K ops (default K: 1,2,3,10,100). Variants: mutex, lockfree,\n"
		"           oplog-basic, oplog-global-absorb, oplog-local-absorb.\n"
		"\n"
		"options:\n"
		"  -v, --variants LIST   comma-separated variant names (default: all)\n"
		"  -t, --threads LIST    thread counts (default: 1..nproc)\n"
		"  -p, --params LIST     the benchmark's parameter values (see above)\n"
		"  -s, --seconds S       seconds per run (default 1)\n"
		"  -c, --csv FILE|-      CSV output ('-': stdout; default when no --out)\n"
		"  -o, --out DIR         write DIR/oplog_<bench>.csv, then plots and a summary\n"
		"                        (bench/oplog/plot_oplog.py, needs python3 with "
		"matplotlib)\n"
		"      --pin / --no-pin  pin worker i to the i-th allowed CPU (default --pin)\n"
		"  -r, --repeat R        run every configuration R times, interleaved (all\n"
		"                        configurations once, then again...), and report the\n"
		"                        run with the median ops/ms (default 1)\n"
		"      --ops-column      append a column ops: the operations of all threads\n"
		"                        (of the reported run)\n"
		"  -h, --help\n"
		"\n"
		"CSV columns: " CSV_HEADER "\n"
		"  ops_per_ms: ops of all threads per ms; p99_ns: 99th percentile latency of one\n"
		"  op (every %uth op timed).\n",
		SPIN_CYCLES, RMAP_W, LAT_EVERY);
}

static int select_variant(const char *tok, void *ctx)
{
	struct opts *o = ctx;
	bool found = false;
	for (size_t i = 0; i < o->b->nv; i++)
		if (strcmp(tok, o->b->v[i].name) == 0)
			o->sel[i] = found = true;
	if (!found) {
		fprintf(stderr, "tsync-bench oplog %s: unknown variant '%s'; known:", o->b->name,
			tok);
		for (size_t i = 0; i < o->b->nv; i++)
			fprintf(stderr, " %s", o->b->v[i].name);
		fputc('\n', stderr);
		return -1;
	}
	return 0;
}

static int opt_variants(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	o->any_sel = true;
	return bench_each_item(arg, select_variant, o) == 0 ? 0 : -1;
}

/* 0, BENCH_GETOPT_DONE (--help) or -1. */
static int parse(int argc, char **argv, struct opts *o)
{
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
			usage(stdout);
			return BENCH_GETOPT_DONE;
		}
		usage(stderr);
		return -1;
	}
	for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
		if (strcmp(argv[1], benches[i].name) == 0)
			o->b = &benches[i];
	if (!o->b) {
		fprintf(stderr, "tsync-bench oplog: unknown benchmark '%s' (list|counter|rmap)\n",
			argv[1]);
		return -1;
	}
	const struct bench_opt opts[] = {
		BENCH_O_FN("variants", 'v', BENCH_OPT_CALL, opt_variants),
		BENCH_O_LIST("threads", 't', BENCH_OPT_UINTS, o->threads, &o->nthreads, 1,
			     MAX_THREADS, 0),
		BENCH_O_LIST("params", 'p', BENCH_OPT_U64S, o->params, &o->nparams, 0,
			     1000000000ull, 0),
		BENCH_O_DBL("seconds", 's', BENCH_OPT_SECONDS, &o->seconds, 3600),
		BENCH_O_STR("csv", 'c', &o->csv),
		BENCH_O_STR("out", 'o', &o->out),
		BENCH_O_SET("pin", 0, &o->pin),
		BENCH_O_CLEAR("no-pin", 0, &o->pin),
		BENCH_O_NUM("repeat", 'r', BENCH_OPT_UINT, &o->repeat, 1, 100),
		BENCH_O_SET("ops-column", 0, &o->ops_col),
		BENCH_O_END,
	};
	/* argv[1], the benchmark, is getopt's argv[0] */
	int rc = bench_getopt("tsync-bench oplog", argc - 1, argv + 1, opts, usage, o);
	if (rc != 0)
		return rc;
	if (!o->any_sel)
		for (size_t i = 0; i < o->b->nv; i++)
			o->sel[i] = true;
	if (o->nparams == 0)
		o->nparams = (unsigned)bench_parse_u64_list(o->b->params_default, o->params,
							    MAX_LIST, 0, 1000000000ull, 0);
	if (o->b == &benches[1] || o->b == &benches[2])
		for (unsigned i = 0; i < o->nparams; i++)
			if (o->params[i] == 0) {
				fprintf(stderr, "tsync-bench oplog %s: params must be >= 1\n",
					o->b->name);
				return -1;
			}
	return 0;
}

static void run_plot(const char *csv_path, const char *dir, const char *cmdline)
{
	const char *py = bench_python();
	char *args[] = {(char *)py,  (char *)TSYNC_OPLOG_PLOT_PY, (char *)csv_path,
			(char *)dir, (char *)"--command",         (char *)cmdline,
			NULL};
	int rc = bench_run_report("tsync-bench oplog", csv_path, args);
	if (rc == BENCH_SCRIPT_MISSING)
		return;
	if (rc < 0) {
		fprintf(stderr, "tsync-bench oplog: warning: cannot run %s: %s\n", py,
			strerror(-rc));
		return;
	}
	if (rc == BENCH_SCRIPT_NO_MATPLOTLIB)
		fprintf(stderr,
			"tsync-bench oplog: warning: no matplotlib: summary only, no plots\n");
	else if (rc != 0)
		fprintf(stderr, "tsync-bench oplog: warning: %s failed\n", TSYNC_OPLOG_PLOT_PY);
}

int oplog_main(int argc, char **argv, const char *cmdline)
{
	struct opts o;
	memset(&o, 0, sizeof(o));
	o.seconds = 1;
	o.pin = true;
	o.repeat = 1;
	int prc = parse(argc, argv, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	g_ncpus = bench_cpus(g_cpus);
	if (o.nthreads == 0)
		o.nthreads = bench_thread_counts(o.threads, MAX_LIST, g_ncpus);
	if (tsync_clock_init() != 0) {
		perror("tsync-bench oplog: clock");
		return 1;
	}
	char *outname = NULL;
	if (o.out && asprintf(&outname, "oplog_%s.csv", o.b->name) < 0)
		return 1;
	struct bench_csv out;
	int orc = bench_csv_open(&out, "tsync-bench oplog", o.csv, o.out, outname,
				 o.ops_col ? CSV_HEADER OPS_COLUMN : CSV_HEADER);
	free(outname);
	if (orc != 0)
		return 1;
	fprintf(stderr, "tsync-bench oplog %s: clock %s, skew bound %" PRIu64 " ticks, order %s\n",
		o.b->name, tsync_clock_source_name(), (uint64_t)tsync_clock_skew(),
		getenv("TSYNC_OPLOG_ORDER") ? getenv("TSYNC_OPLOG_ORDER") : "auto");
	int rc = 0;
	size_t nconf = (size_t)o.nparams * o.b->nv * o.nthreads;
	struct sample {
		double opm;
		uint64_t p99, ops;
	} *res = calloc(nconf * o.repeat, sizeof(*res));
	if (!res)
		return 1;
#define RES(pi, vi, ti, r) \
	res[((((size_t)(pi)*o.b->nv + (vi)) * o.nthreads + (ti)) * o.repeat) + (r)]
	for (unsigned r = 0; r < o.repeat; r++)
		for (unsigned pi = 0; pi < o.nparams; pi++)
			for (size_t vi = 0; vi < o.b->nv; vi++) {
				if (!o.sel[vi])
					continue;
				for (unsigned ti = 0; ti < o.nthreads; ti++) {
					const struct variant *v = &o.b->v[vi];
					struct sample *sm = &RES(pi, vi, ti, r);
					if (run_one(v, o.threads[ti], o.params[pi], &o, &sm->opm,
						    &sm->p99, &sm->ops) != 0) {
						rc = 1;
						sm->opm = -1;
						continue;
					}
					fprintf(stderr,
						"  [%u/%u] %-20s threads %3u param %7" PRIu64
						": %12.1f ops/ms p99 %" PRIu64 " ns\n",
						r + 1, o.repeat, v->name, o.threads[ti],
						o.params[pi], sm->opm, sm->p99);
				}
			}
	for (unsigned pi = 0; pi < o.nparams; pi++)
		for (size_t vi = 0; vi < o.b->nv; vi++) {
			if (!o.sel[vi])
				continue;
			for (unsigned ti = 0; ti < o.nthreads; ti++) {
				/* the median run by ops/ms (insertion sort of R samples) */
				struct sample *sm = &RES(pi, vi, ti, 0);
				for (unsigned a = 1; a < o.repeat; a++)
					for (unsigned b = a; b > 0 && sm[b].opm < sm[b - 1].opm;
					     b--) {
						struct sample x = sm[b];
						sm[b] = sm[b - 1];
						sm[b - 1] = x;
					}
				struct sample med = sm[o.repeat / 2];
				if (med.opm < 0)
					continue;
				char opsf[32] = "";
				if (o.ops_col)
					snprintf(opsf, sizeof opsf, ",%" PRIu64, med.ops);
				bench_csv_printf(&out, "%s,%s,%u,%" PRIu64 ",%.1f,%" PRIu64 "%s\n",
						 o.b->name, o.b->v[vi].name, o.threads[ti],
						 o.params[pi], med.opm, med.p99, opsf);
			}
		}
#undef RES
	free(res);
	char *outpath = out.path;
	out.path = NULL;
	bench_csv_close(&out);
	if (outpath)
		run_plot(outpath, o.out, cmdline);
	free(outpath);
	return rc;
}
