/*
 * bench/smr/smr_bench.c - `tsync-bench smr`: the SMR micro-benchmark of ParSec (EuroSys 2016)
 * §5.1 (Figs. 4-6).
 *
 * For every (mechanism, update %, thread count): a trace of --requests operations
 * (read or update, uniform at the given update %, each naming one of SMR_SLOTS slots) is
 * generated before timing and partitioned over the workers; each worker cycles through
 * its partition until the deadline. Every op is timed (one tsync_now() between
 * consecutive ops, so a latency includes the harness's few ns of per-op bookkeeping, the
 * same for every mechanism) into a per-thread histogram. A sampler thread polls the
 * mechanism's pending count every ~1 ms.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_* */
#endif
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tsync/clock.h>

#include "common.h"
#include "smr_run.h"

#ifndef TSYNC_REPORT_PY
#define TSYNC_REPORT_PY "plot_smr.py"
#endif
#ifndef TSYNC_BENCH_PYTHON
#define TSYNC_BENCH_PYTHON "python3"
#endif

/* Canonical order: rows come out in this order. */
static const struct smr_peer *const all_peers[] = {
	&smr_peer_ps,
	&smr_peer_urcu_mb_sync,
	&smr_peer_urcu_mb_call,
	&smr_peer_urcu_memb_sync,
	&smr_peer_urcu_memb_call,
	&smr_peer_urcu_qsbr_sync,
	&smr_peer_urcu_qsbr_call,
	&smr_peer_ck_epoch_sync,
	&smr_peer_ck_epoch_call,
	&smr_peer_ck_brlock,
	&smr_peer_pthread_rwlock,
	&smr_peer_unsafe, /* last: not selected by 'all' or a prefix, only by its name */
};
#define NPEERS (sizeof all_peers / sizeof all_peers[0])

static bool is_control(const struct smr_peer *p)
{
	return p == &smr_peer_unsafe;
}

#define CSV_HEADER                                                                    \
	"mechanism,threads,update_pct,read_mops,update_mops,read_p50_ns,read_p99_ns," \
	"update_p50_ns,update_p99_ns,peak_pending"

#define TRACE_UPDATE 0x8000u /* trace entry: bit 15 = update, low bits = slot */
_Static_assert(SMR_SLOTS <= TRACE_UPDATE && (SMR_SLOTS & (SMR_SLOTS - 1)) == 0,
	       "slots must be a power of two that fits below the update bit");

#define DEFAULT_REQUESTS 10000000u
#define MAX_THREADS 1024u
#define MAX_LIST 64u
#define SAMPLE_NS 1000000L

struct opts {
	bool sel[NPEERS], any_sel;
	unsigned threads[MAX_LIST], nthreads;
	unsigned updates[MAX_LIST], nupdates;
	double seconds;
	const char *csv;
	const char *out;
	bool pin;
	size_t requests;
	unsigned lat_every;
	bool paper; /* --layout paper (default) or slots */
};

struct result {
	double read_mops, update_mops, elapsed_s;
	uint64_t read_p50_ns, read_p99_ns, update_p50_ns, update_p99_ns;
	uint64_t peak_pending;
};

/* ---- state of the run in progress (read by workers, sampler and peers) ---- */

static bool g_paper;
static const uint16_t *g_trace;
static size_t g_trace_len;
static struct bench_run g_run;
static _Atomic int g_init_failed;
static _Atomic int g_sampling;
static _Atomic uint64_t g_peak_pending;
static unsigned g_lat_every = 1;

static int g_cpus[CPU_SETSIZE];
static unsigned g_ncpus;

/* ---- traces ---- */

/* n entries, update with probability pct/100, slot uniform (or 0 for every entry in the
 * paper layout, where workers add their private slot to updates); deterministic per pct. */
static uint16_t *make_trace(size_t n, unsigned pct, bool paper)
{
	uint16_t *tr = malloc(n * sizeof(*tr));
	if (!tr)
		return NULL;
	uint64_t x = 0x5eed5eed5eed5eedull ^ ((uint64_t)pct * 0x9e3779b97f4a7c15ull);
	uint64_t thresh = ((uint64_t)pct << 32) / 100u; /* update iff high 32 bits < thresh */
	for (size_t i = 0; i < n; i++) {
		x ^= x >> 12; /* xorshift64* */
		x ^= x << 25;
		x ^= x >> 27;
		uint64_t r = x * 0x2545f4914f6cdd1dull;
		unsigned slot = paper ? 0u : (unsigned)(r >> 8) & (SMR_SLOTS - 1u);
		tr[i] = (uint16_t)(slot | ((r >> 32) < thresh ? TRACE_UPDATE : 0u));
	}
	return tr;
}

/* ---- workers and sampler ---- */

/* Every op timed: one clock read between consecutive ops serves as the end of one op and
 * the start of the next. */
static void run_loop_all(struct bench_thread *t, size_t lo, size_t hi, uint64_t deadline)
{
	const uint16_t *tr = g_trace;
	void (*rd)(struct bench_thread *, unsigned) = smr__peer->read;
	void (*up)(struct bench_thread *, unsigned) = smr__peer->update;
	struct hist *hr = t->rd, *hu = t->up;
	uint64_t prev = tsync_now(), now, nrd = 0, nup = 0;
	size_t i = lo;

	/* The deadline is checked after every op: a run overshoots by at most one op (one
	 * grace period for the synchronize-based mechanisms). */
	for (;;) {
		unsigned e = tr[i];
		if (++i == hi)
			i = lo;
		if (e & TRACE_UPDATE) {
			up(t, (e + t->up_off) & (SMR_SLOTS - 1u));
			now = tsync_now();
			hist_add(hu, now > prev ? now - prev : 0); /* a migration may step back */
			nup++;
		} else {
			rd(t, e & (SMR_SLOTS - 1u));
			now = tsync_now();
			hist_add(hr, now > prev ? now - prev : 0);
			nrd++;
		}
		prev = now;
		if (now >= deadline)
			break;
	}
	t->nreads = nrd;
	t->nupdates = nup;
	t->end_tick = prev;
}

/* One op in `every` timed (clock read before and after it); the deadline is checked at
 * those ops, so a run overshoots by at most `every` ops. */
static void run_loop_sampled(struct bench_thread *t, size_t lo, size_t hi, uint64_t deadline,
			     unsigned every)
{
	const uint16_t *tr = g_trace;
	void (*rd)(struct bench_thread *, unsigned) = smr__peer->read;
	void (*up)(struct bench_thread *, unsigned) = smr__peer->update;
	uint64_t nrd = 0, nup = 0, t1 = 0;
	unsigned left = every;
	size_t i = lo;

	for (;;) {
		unsigned e = tr[i];
		if (++i == hi)
			i = lo;
		bool is_up = (e & TRACE_UPDATE) != 0;
		unsigned slot = (e + (is_up ? t->up_off : 0u)) & (SMR_SLOTS - 1u);
		nup += is_up;
		nrd += !is_up;
		if (--left != 0) {
			if (is_up)
				up(t, slot);
			else
				rd(t, slot);
			continue;
		}
		left = every;
		uint64_t t0 = tsync_now();
		if (is_up)
			up(t, slot);
		else
			rd(t, slot);
		t1 = tsync_now();
		hist_add(is_up ? t->up : t->rd, t1 > t0 ? t1 - t0 : 0);
		if (t1 >= deadline)
			break;
	}
	t->nreads = nrd;
	t->nupdates = nup;
	t->end_tick = t1;
}

static void run_loop(struct bench_thread *t, uint64_t deadline)
{
	size_t lo = g_trace_len * t->id / smr__nthreads;
	size_t hi = g_trace_len * (t->id + 1) / smr__nthreads;
	if (g_lat_every <= 1)
		run_loop_all(t, lo, hi, deadline);
	else
		run_loop_sampled(t, lo, hi, deadline, g_lat_every);
}

static void *worker(void *arg)
{
	struct bench_thread *t = arg;
	int err = bench_pin_self(t->cpu);
	if (err && t->id == 0)
		fprintf(stderr, "tsync-bench smr: warning: pinning to CPU %d: %s\n", t->cpu,
			strerror(err));
	int ok = smr__peer->thread_init(t) == 0;
	if (!ok)
		atomic_store(&g_init_failed, 1);
	uint64_t deadline = bench_run_wait(&g_run);
	if (!atomic_load(&g_init_failed))
		run_loop(t, deadline);
	if (ok)
		smr__peer->thread_fini(t);
	return NULL;
}

static void *sampler(void *arg)
{
	(void)arg;
	const struct timespec period = {0, SAMPLE_NS};
	uint64_t peak = 0;
	while (atomic_load_explicit(&g_sampling, memory_order_acquire)) {
		uint64_t v = smr__peer->pending();
		if (v > peak)
			peak = v;
		nanosleep(&period, NULL);
	}
	atomic_store(&g_peak_pending, peak);
	return NULL;
}

static void die_errno(const char *what, int err)
{
	fprintf(stderr, "tsync-bench smr: %s: %s\n", what, strerror(err));
	exit(1);
}

static int run_one(const struct smr_peer *p, unsigned nthr, const struct opts *o,
		   struct result *res)
{
	int err;
	size_t bytes = (size_t)nthr * sizeof(struct bench_thread);
	struct bench_thread *th = aligned_alloc(SMR_CACHE_LINE, bytes);
	pthread_t *tid = calloc(nthr, sizeof(*tid));
	if (!th || !tid)
		die_errno("allocating threads", ENOMEM);
	memset(th, 0, bytes);
	for (unsigned i = 0; i < nthr; i++) {
		th[i].id = i;
		/* paper layout: slot 8 (i + 1): 64 bytes from any other thread's slot, so on a
		 * line of its own, and never slot 0, the one readers read */
		th[i].up_off = g_paper ? 8u + 8u * (i % (SMR_SLOTS / 8u - 1u)) : 0u;
		th[i].cpu = o->pin ? g_cpus[i % g_ncpus] : -1;
		th[i].rd = calloc(1, sizeof(struct hist));
		th[i].up = calloc(1, sizeof(struct hist));
		if (!th[i].rd || !th[i].up)
			die_errno("allocating histograms", ENOMEM);
	}
	smr__peer = p;
	smr__threads = th;
	smr__nthreads = nthr;
	atomic_store(&g_init_failed, 0);
	atomic_store(&g_peak_pending, 0);

	if (p->init(nthr) != 0) {
		fprintf(stderr, "tsync-bench smr: %s: initialisation failed\n", p->name);
		return -1;
	}
	bench_run_init(&g_run, "tsync-bench smr", nthr);
	for (unsigned i = 0; i < nthr; i++)
		if ((err = pthread_create(&tid[i], NULL, worker, &th[i])) != 0)
			die_errno("pthread_create", err); /* the barriers would never open */
	pthread_t samp;
	if (p->pending) {
		atomic_store(&g_sampling, 1);
		if ((err = pthread_create(&samp, NULL, sampler, NULL)) != 0)
			die_errno("pthread_create (sampler)", err);
	}
	uint64_t start = bench_run_start(&g_run, o->seconds);
	for (unsigned i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	if (p->pending) {
		atomic_store_explicit(&g_sampling, 0, memory_order_release);
		pthread_join(samp, NULL);
	}
	p->fini(); /* callbacks may still count into th[]: free it only after */
	bench_run_destroy(&g_run);

	int failed = atomic_load(&g_init_failed);
	struct hist *rd = calloc(1, sizeof(*rd)), *up = calloc(1, sizeof(*up));
	if (!rd || !up)
		die_errno("allocating histograms", ENOMEM);
	uint64_t end = start, nreads = 0, nupdates = 0;
	for (unsigned i = 0; i < nthr; i++) {
		nreads += th[i].nreads;
		nupdates += th[i].nupdates;
		hist_merge(rd, th[i].rd);
		hist_merge(up, th[i].up);
		if (th[i].end_tick > end)
			end = th[i].end_tick;
		free(th[i].rd);
		free(th[i].up);
	}
	double secs = (double)tsync_ticks_to_ns(end - start) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	res->elapsed_s = secs;
	res->read_mops = (double)nreads / secs / 1e6;
	res->update_mops = (double)nupdates / secs / 1e6;
	res->read_p50_ns = tsync_ticks_to_ns(hist_quantile(rd, 0.50));
	res->read_p99_ns = tsync_ticks_to_ns(hist_quantile(rd, 0.99));
	res->update_p50_ns = tsync_ticks_to_ns(hist_quantile(up, 0.50));
	res->update_p99_ns = tsync_ticks_to_ns(hist_quantile(up, 0.99));
	res->peak_pending = atomic_load(&g_peak_pending);
	free(rd);
	free(up);
	free(th);
	free(tid);
	smr__threads = NULL;
	smr__nthreads = 0;
	if (failed) {
		fprintf(stderr, "tsync-bench smr: %s: thread initialisation failed\n", p->name);
		return -1;
	}
	return 0;
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsync-bench smr [options]\n"
		"\n"
		"SMR micro-benchmark of ParSec (EuroSys 2016) sec. 5.1 over %u slots, each "
		"pointing\n"
		"to a %u-byte node.\n"
		"  read:   enter the read-side section, load a slot, validate the node, exit.\n"
		"  update: allocate and initialise a node, swap it into a slot, free the old\n"
		"          node through the mechanism (deferred, or after a grace period).\n"
		"Layouts (--layout):\n"
		"  paper   (default) the paper's set-up, which measures the mechanisms' own "
		"costs:\n"
		"          every read reads one shared node (slot 0, never replaced); each\n"
		"          thread's updates replace the node in its own slot, on its own line.\n"
		"  slots   reads and updates name a uniformly random slot: updates replace nodes\n"
		"          that readers are reading, so readers race with frees (and every\n"
		"          mechanism also pays the coherence traffic of the shared slots).\n"
		"A trace of --requests ops (uniform read/update choice at the update %%) is\n"
		"generated before timing and partitioned over the threads; each thread cycles\n"
		"through its partition until --seconds have passed.\n"
		"By default every op is timed: one tsync_now() (rdtsc on x86-64) between\n"
		"consecutive ops, so latencies include a few ns of harness bookkeeping and the\n"
		"throughput includes one clock read per op - the same for every mechanism, but\n"
		"not small next to a read (rdtsc costs ~10-40 cycles, more under some\n"
		"hypervisors). --lat-every N times one op in N instead. Readers abort the run if\n"
		"they ever see a freed (poisoned) or reused node.\n"
		"\n"
		"options:\n"
		"  -m, --mechanisms LIST  comma-separated names or family prefixes (urcu, "
		"urcu-mb,\n"
		"                         ck-epoch, ...) or 'all' (default: all); 'unsafe' is a\n"
		"                         control without protection that must abort\n"
		"  -t, --threads LIST     thread counts (default: 1..nproc and 2*nproc)\n"
		"  -u, --updates LIST     update percentages (default: 0,10,50,90)\n"
		"  -s, --seconds S        seconds per run, fractional allowed (default: 1)\n"
		"  -c, --csv FILE|-       write CSV rows to FILE ('-': stdout)\n"
		"  -o, --out DIR          write DIR/smr.csv, then run plot_smr.py for "
		"DIR/table.md\n"
		"                         and PNG plots (needs python3 with matplotlib)\n"
		"      --pin / --no-pin   pin worker i to the i-th CPU of the affinity mask,\n"
		"                         modulo their number (default: --pin); the pending-count\n"
		"                         sampler and library helper threads are never pinned\n"
		"  -r, --requests N       trace length (default: %u)\n"
		"      --lat-every N      time one op in N, with a clock read before and after\n"
		"                         it (default 1: every op, chained); the deadline is then\n"
		"                         checked every N ops\n"
		"      --layout L         paper (default) or slots, see above\n"
		"  -l, --list             list the mechanisms of 'all' and exit\n"
		"  -h, --help             this text\n"
		"\n"
		"CSV columns: " CSV_HEADER "\n"
		"  *_mops: completed ops of all threads per second / 1e6; *_p50_ns, *_p99_ns:\n"
		"  latency percentiles (0 when no op of that kind ran); peak_pending: most "
		"objects\n"
		"  freed but not yet reusable, sampled every ~1 ms (0 for mechanisms that free\n"
		"  right after the grace period or under a lock).\n"
		"Progress goes to stderr. Environment: TSYNC_BENCH_PYTHON overrides the Python\n"
		"interpreter used for --out (default: %s); TSYNC_BENCH_PS_READ_INTERVAL_US sets\n"
		"ps's read interval (ps_config.read_interval_ns; unset: the library's default).\n",
		SMR_SLOTS, SMR_NODE_BYTES, DEFAULT_REQUESTS, TSYNC_BENCH_PYTHON);
}

/* The mechanisms 'all' selects, then (with controls) the control. */
static void list_peers(FILE *f, bool controls)
{
	for (size_t i = 0; i < NPEERS; i++)
		if (controls || !is_control(all_peers[i]))
			fprintf(f, "%-15s %s\n", all_peers[i]->name, all_peers[i]->what);
}

/* "all", a full name, or a prefix ending at a '-' boundary (urcu-mb: urcu-mb-sync and
 * urcu-mb-call, not urcu-memb-*). */
static int select_peer(const char *tok, void *ctx)
{
	bool *sel = ctx;
	size_t len = strlen(tok);
	bool any = false;
	for (size_t i = 0; i < NPEERS; i++) {
		const char *name = all_peers[i]->name;
		bool group = strcmp(tok, "all") == 0 ||
			     (strncmp(tok, name, len) == 0 && name[len] == '-');
		if (strcmp(tok, name) == 0 || (group && !is_control(all_peers[i]))) {
			sel[i] = true;
			any = true;
		}
	}
	if (!any) {
		fprintf(stderr, "tsync-bench smr: unknown mechanism '%s'; known:\n", tok);
		list_peers(stderr, true);
		return -1;
	}
	return 0;
}

static int opt_mechanisms(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	o->any_sel = true;
	return bench_each_item(arg, select_peer, o->sel) == 0 ? 0 : -1;
}

static int opt_layout(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	if (strcmp(arg, "paper") != 0 && strcmp(arg, "slots") != 0) {
		fprintf(stderr, "tsync-bench smr: bad --layout '%s' (paper|slots)\n", arg);
		return -1;
	}
	o->paper = strcmp(arg, "paper") == 0;
	return 0;
}

static int opt_list(const char *arg, void *ctx)
{
	(void)arg;
	(void)ctx;
	list_peers(stdout, false);
	return BENCH_GETOPT_DONE;
}

/* 0, BENCH_GETOPT_DONE (--help, --list) or -1. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	const struct bench_opt opts[] = {
		BENCH_O_FN("mechanisms", 'm', BENCH_OPT_CALL, opt_mechanisms),
		BENCH_O_LIST("threads", 't', BENCH_OPT_UINTS, o->threads, &o->nthreads, 1,
			     MAX_THREADS, 0),
		BENCH_O_LIST("updates", 'u', BENCH_OPT_UINTS, o->updates, &o->nupdates, 0, 100, 0),
		BENCH_O_DBL("seconds", 's', BENCH_OPT_SECONDS, &o->seconds, 3600),
		BENCH_O_STR("csv", 'c', &o->csv),
		BENCH_O_STR("out", 'o', &o->out),
		BENCH_O_SET("pin", 0, &o->pin),
		BENCH_O_CLEAR("no-pin", 0, &o->pin),
		BENCH_O_NUM("requests", 'r', BENCH_OPT_SIZE, &o->requests, MAX_THREADS,
			    (uint64_t)1 << 32),
		BENCH_O_NUM("lat-every", 0, BENCH_OPT_UINT, &o->lat_every, 1, 1000000),
		BENCH_O_FN("layout", 0, BENCH_OPT_CALL, opt_layout),
		BENCH_O_FN("list", 'l', BENCH_OPT_CALL0, opt_list),
		BENCH_O_END,
	};
	int rc = bench_getopt("tsync-bench smr", argc, argv, opts, usage, o);
	if (rc != 0)
		return rc;
	if (!o->any_sel)
		for (size_t i = 0; i < NPEERS; i++)
			o->sel[i] = !is_control(all_peers[i]);
	return 0;
}

/* ---- output ---- */

static void csv_row(struct bench_csv *out, const char *name, unsigned thr, unsigned pct,
		    const struct result *r)
{
	bench_csv_printf(out,
			 "%s,%u,%u,%.6g,%.6g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			 ",%" PRIu64 "\n",
			 name, thr, pct, r->read_mops, r->update_mops, r->read_p50_ns,
			 r->read_p99_ns, r->update_p50_ns, r->update_p99_ns, r->peak_pending);
}

/* Runs plot_smr.py; a missing interpreter or matplotlib only warns (the CSV is written). */
static void run_report(const char *dir, const char *csv_path, const char *cmdline,
		       const char *clockdesc)
{
	const char *py = bench_python();
	char *args[] = {(char *)py,        (char *)TSYNC_REPORT_PY,
			(char *)"smr",     (char *)csv_path,
			(char *)dir,       (char *)"--command",
			(char *)cmdline,   (char *)"--clock",
			(char *)clockdesc, NULL};
	int rc = bench_run_report("tsync-bench smr", csv_path, args);
	if (rc == BENCH_SCRIPT_MISSING)
		return;
	if (rc < 0) {
		fprintf(stderr,
			"tsync-bench smr: warning: cannot run %s (%s): no table or plots; "
			"the CSV is in %s (run %s smr %s %s yourself)\n",
			py, strerror(-rc), csv_path, TSYNC_REPORT_PY, csv_path, dir);
		return;
	}
	if (rc == 0)
		fprintf(stderr, "tsync-bench smr: wrote %s/table.md and plots\n", dir);
	else if (rc == BENCH_SCRIPT_NO_MATPLOTLIB)
		fprintf(stderr,
			"tsync-bench smr: warning: %s has no matplotlib: wrote %s and %s/table.md, "
			"no plots (set TSYNC_BENCH_PYTHON to an interpreter with matplotlib)\n",
			py, csv_path, dir);
	else
		fprintf(stderr, "tsync-bench smr: warning: %s failed; the CSV is in %s\n",
			TSYNC_REPORT_PY, csv_path);
}

static void init_cpus(void)
{
	g_ncpus = bench_affinity_cpus(g_cpus);
	if (g_ncpus == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		for (long i = 0; i < (n > 0 ? n : 1) && i < CPU_SETSIZE; i++)
			g_cpus[g_ncpus++] = (int)i;
	}
}

int smr_main(int argc, char **argv, const char *cmdline)
{
	struct opts o = {.seconds = 1.0,
			 .pin = true,
			 .requests = DEFAULT_REQUESTS,
			 .lat_every = 1,
			 .paper = true};
	init_cpus();
	int prc = parse_opts(argc, argv, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	g_lat_every = o.lat_every;
	g_paper = o.paper;
	if (o.nthreads == 0) {
		o.nthreads = bench_thread_counts(o.threads, MAX_LIST - 1, g_ncpus);
		o.threads[o.nthreads++] = 2 * g_ncpus;
	}
	if (o.nupdates == 0)
		o.nupdates = (unsigned)bench_parse_uint_list("0,10,50,90", o.updates, MAX_LIST, 0,
							     100, 0);

	struct bench_csv out;
	if (bench_csv_open(&out, "tsync-bench smr", o.csv, o.out, "smr.csv", CSV_HEADER) != 0)
		return 1;

	if (tsync_clock_init() != 0) {
		perror("tsync_clock_init");
		return 1;
	}
	char clockdesc[128];
	snprintf(clockdesc, sizeof(clockdesc),
		 "tsync %s, skew bound %" PRIu64 " ticks, %.4f ticks/ns", tsync_clock_source_name(),
		 (uint64_t)tsync_clock_skew(), tsync_ticks_per_ns());
	fprintf(stderr,
		"tsync-bench smr: clock: %s; %u CPUs; pinning %s; %zu requests per trace; "
		"timing 1 op in %u\n",
		clockdesc, g_ncpus, o.pin ? "on" : "off", o.requests, o.lat_every);

	/* One trace per update %, shared by every mechanism and thread count. */
	uint16_t *traces[MAX_LIST] = {NULL};
	int status = 0;
	for (size_t m = 0; m < NPEERS && status == 0; m++) {
		if (!o.sel[m])
			continue;
		const struct smr_peer *p = all_peers[m];
		for (unsigned u = 0; u < o.nupdates && status == 0; u++) {
			if (!traces[u] &&
			    !(traces[u] = make_trace(o.requests, o.updates[u], o.paper)))
				die_errno("allocating the trace", ENOMEM);
			g_trace = traces[u];
			g_trace_len = o.requests;
			for (unsigned k = 0; k < o.nthreads; k++) {
				struct result r;
				if (run_one(p, o.threads[k], &o, &r) != 0) {
					status = 1;
					break;
				}
				csv_row(&out, p->name, o.threads[k], o.updates[u], &r);
				fprintf(stderr,
					"smr: %-15s threads=%-3u updates=%3u%%: read %9.3f Mops, "
					"update %9.4f Mops, p99 read %6" PRIu64
					" ns, update %9" PRIu64 " ns, peak pending %" PRIu64
					" (%.2f s)\n",
					p->name, o.threads[k], o.updates[u], r.read_mops,
					r.update_mops, r.read_p99_ns, r.update_p99_ns,
					r.peak_pending, r.elapsed_s);
			}
		}
	}
	for (unsigned u = 0; u < MAX_LIST; u++)
		free(traces[u]);
	char *csv_path = out.path;
	out.path = NULL;
	bench_csv_close(&out);
	if (csv_path && status == 0)
		run_report(o.out, csv_path, cmdline, clockdesc);
	free(csv_path);
	return status;
}
