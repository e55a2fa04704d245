/*
 * bench/vmdb/vmdb_bench.c - `tsync-bench vmdb`: ParSec (EuroSys 2016) §5.3, Figs. 9-10.
 * The virtual-memory mapping database (apps/vmdb/vmdb.h) under its synchronisation
 * designs, a liburcu peer and Linux mmap/munmap, replaying a synthetic Metis-like trace
 * of memory grants.
 *
 * Layouts (--layout): who shares an address space; the work is the same.
 *   shared   (the default; ParSec's Metis runs, one process) every thread maps, looks up,
 *            aliases, revokes and unmaps in one address space, so the space's locks and
 *            the frames' trees are shared and freed pages and frames come back through the
 *            TLB grace across threads. Thread i's lookups and alias trees use the pages of
 *            thread i+1 (mod the thread count): the phases (map, lookups and trees, unmap)
 *            are separated by a barrier of the workers, so those pages stay mapped while
 *            they are used; the trees' aliases go into the same space.
 *   private  every thread works in its own address spaces (one for its grants, one per
 *            tree node); no phase barriers.
 *
 * Workload, per thread and per round:
 *
 *   map     the thread's trace: single-page grants and 1024-page grants, 3 % of the
 *           requests being 1024 pages (the paper: fewer than 5 %), 650 MB x --scale in
 *           all, in a random order fixed per thread index (the same for every design and
 *           round); each vmdb_grant is timed (op map, pages 1 or 1024) with the touch
 *           that follows it: every granted page is written after it is mapped, by the
 *           worker, outside the database's locks (vmdb: cfg.touch off and a store to
 *           each page at vmdb_page(), memfd; the model backend has no page memory, so
 *           nothing; urcu: its touch, made after it drops its locks; linux:
 *           MAP_POPULATE).
 *   lookup  as many vmdb_lookup calls as the trace has requests, each of a page drawn
 *           uniformly from the pages mapped (op lookup, pages 1).
 *   trees   256 x --scale (at least 3) alias trees: the first page of a random granted
 *           region is aliased --tree-fanout times (private: into other address spaces of
 *           the same thread; shared: into the one space), each alias again,
 *           --tree-depth levels deep (vmdb_alias, destination
 *           VMDB_ANY; each timed: op alias, pages 1); then one vmdb_revoke of the root's
 *           page removes the whole tree (op revoke; pages = the mappings that call
 *           removed, fanout + fanout^2 + ... + fanout^depth: 14 by default).
 *   unmap   vmdb_release of every granted region (op unmap, pages 1 or 1024).
 *
 * Each design gets one database per thread count (cfg.sync, cfg.backend from --backend,
 * the rest default unless --scale needs larger address or frame spaces);
 * the address spaces are made once and kept (private: each worker's 1 + the tree's
 * nodes; shared: one).
 * A warm-up round per design comes first and is not recorded; then --repeat rounds,
 * the designs interleaved within each round (the order rotates from round to round:
 * this VM is bimodal, so every design sees both modes). Every worker starts a round
 * together (a barrier); each op is timed alone with tsync_now(). After each round the
 * database must hold no mapping (vmdb_stats / the peer's node count).
 *
 * Designs (--designs):
 *   ps           vmdb, VMDB_SYNC_PS (the seed's design)
 *   rwlock       vmdb, VMDB_SYNC_RWLOCK (a pthread rwlock per space, as Linux's mmap_lock)
 *   global-lock  vmdb, VMDB_SYNC_GLOBAL
 *   frame-lock   vmdb, VMDB_SYNC_FRAME (pthread locks)
 *   frame-ticket vmdb, VMDB_SYNC_FRAME_TICKET (frame-lock with FIFO ticket locks)
 *   urcu         bench/vmdb/peers/urcu_vmdb.c: rculfhash keyed by (pid, vaddr), a mutex per
 *                frame tree, call_rcu (urcu_vmdb.h describes it); honours --backend
 *   linux        mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE) and
 *                munmap of the same trace; MAP_POPULATE is its touch. Map and unmap rows
 *                only (no lookup, alias or revoke). Its threads share one mm (one mmap
 *                lock), and it ignores --backend (its rows carry the run's backend).
 *
 * With ps among the designs, a model run also measures, at each thread count, what a
 * namespace lookup costs against a bare radix-trie walk (ns_lookup.c: rows ns-lookup,
 * ns-walk and bare-trie, op lookup; their quantiles are of 1024-lookup batch means).
 *
 * CSV, one row per design, thread count and (op, pages), over every recorded round and
 * every thread:
 *
 *   design,backend,layout,threads,op,pages,count,avg_ns,p50_ns,p99_ns,p999_ns,max_ns
 *
 *   count     ops timed; avg_ns their mean; p50/p99/p999_ns quantiles from a log-linear
 *             histogram (bench/hist.h: the bucket's midpoint, within 6.25 %); max_ns the
 *             longest (ns-lookup, ns-walk, bare-trie: the largest batch mean, within
 *             6.25 %)
 *   op wait   (pages 0) the locked designs' lock waits (vmdb_config.lock_wait): every
 *             acquisition that could not take its lock at once, timed from the failed
 *             attempt until it held the lock; no row when no thread ever waited
 *
 * --out DIR writes DIR/vmdb.csv - keeping the rows of other backends that a run before
 * wrote there, so that `make bench` can put the model and memfd runs in one file - and
 * runs plot_vmdb.py DIR (DIR/table.md, DIR/vmdb_<backend>.png, DIR/vmdb_<backend>_tail.png).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tsync/clock.h>

#include "common.h"
#include "hist.h"
#include "vmdb.h"
#include "vmdb_bench.h"
#if TSYNC_VMDB_HAVE_URCU
#include "peers/urcu_vmdb.h"
#endif

#ifndef TSYNC_VMDB_HAVE_URCU
#define TSYNC_VMDB_HAVE_URCU 0 /* bench/vmdb/CMakeLists.txt: 1 when liburcu-cds is found */
#endif
#ifndef TSYNC_VMDB_PLOT_PY
#define TSYNC_VMDB_PLOT_PY "plot_vmdb.py"
#endif

#define WHO "tsync-bench vmdb"
#define CSV_HEADER \
	"design,backend,layout,threads,op,pages,count,avg_ns,p50_ns,p99_ns,p999_ns,max_ns"
#define BIG_PAGES 1024u     /* the large grant (the page namespace's largest extent) */
#define BIG_FRACTION 0.03   /* of the requests */
#define MB_PER_THREAD 650.0 /* mapped per thread and round at --scale 1 */
#define TREES_PER_ROUND 256.0
#define MIN_TREES 3u
#define MAX_THREADS 64u
#define MAX_LIST 32u
#define MAX_TREE_NODES 1024u
#define MAX_SCALE 16.0

enum kind { D_VMDB, D_URCU, D_LINUX };
struct design {
	const char *name;
	enum kind kind;
	int sync;
	const char *what;
};
static const struct design designs[] = {
	{"ps", D_VMDB, VMDB_SYNC_PS,
	 "vmdb, VMDB_SYNC_PS: namespaces, wait-free lookups, a ps_lock per node"},
	{"rwlock", D_VMDB, VMDB_SYNC_RWLOCK,
	 "vmdb, VMDB_SYNC_RWLOCK: an rwlock per address space, one mutex for the trees"},
	{"global-lock", D_VMDB, VMDB_SYNC_GLOBAL, "vmdb, VMDB_SYNC_GLOBAL: one mutex"},
	{"frame-lock", D_VMDB, VMDB_SYNC_FRAME,
	 "vmdb, VMDB_SYNC_FRAME: an rwlock per address space, a mutex per frame tree"},
	{"frame-ticket", D_VMDB, VMDB_SYNC_FRAME_TICKET,
	 "vmdb, VMDB_SYNC_FRAME_TICKET: frame-lock with FIFO ticket locks"},
	{"urcu", D_URCU, 0,
	 "liburcu rculfhash keyed by (pid, vaddr), a mutex per frame tree, call_rcu"},
	{"linux", D_LINUX, 0, "mmap(MAP_PRIVATE|MAP_ANONYMOUS|MAP_POPULATE) / munmap"},
};
#define ND (sizeof designs / sizeof designs[0])

enum op {
	OP_MAP1,
	OP_MAP_BIG,
	OP_UNMAP1,
	OP_UNMAP_BIG,
	OP_ALIAS,
	OP_REVOKE,
	OP_LOOKUP,
	OP_WAIT,
	NOPS
};
static const char *const op_name[NOPS] = {"map",   "map",    "unmap",  "unmap",
					  "alias", "revoke", "lookup", "wait"};
static const char *const backend_name[] = {"model", "memfd"};
enum layout { L_SHARED, L_PRIVATE };
static const char *const layout_name[] = {"shared", "private"};

struct lat {
	uint64_t sum, max; /* ticks */
	struct hist h;
};

struct opts {
	unsigned design[ND], nd;
	unsigned threads[MAX_LIST], nthreads;
	int backend;
	int layout;
	unsigned repeat;
	double scale;
	unsigned depth, fanout;
	const char *csv, *out;
	bool pin;
};

/* One design's database at one thread count. */
struct inst {
	const struct design *d;
	struct vmdb *v;
#if TSYNC_VMDB_HAVE_URCU
	struct uvm *u;
#endif
};

struct worker {
	pthread_t th;
	unsigned idx;
	int cpu;
	uint64_t rng;
	uint16_t *trace; /* pages of each request */
	size_t nreq;
	uint64_t *cum;    /* cum[i]: pages of requests before i; cum[nreq]: all */
	uint64_t *region; /* the first page (linux: the address) of each request's grant */
	size_t nmapped;   /* requests of this round granted (all, unless one failed) */
	int *pids[ND];    /* per instance: [0] the thread's space, [1..] the tree's
			   * (shared: [0] only, the one space) */
	int *tpid;        /* a tree being built: its nodes' spaces and pages */
	uint64_t *tva;
	struct lat lat[ND][NOPS];
};

/* The run at one thread count; workers read it between barriers. */
static struct {
	struct inst inst[ND];
	unsigned ninst;
	unsigned threads;
	struct worker **w;
	pthread_barrier_t bar;
	int cur;                 /* the instance of this round; -1: the workers exit */
	bool record;             /* false in the warm-up round */
	bool shared;             /* --layout shared */
	pthread_barrier_t phase; /* shared: the workers, between a round's phases */
	_Atomic bool failed;
	unsigned depth, fanout, tree_nodes, trees;
} g;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	if (atomic_exchange(&g.failed, true))
		return; /* the first failure is the one to report */
	va_list ap;
	va_start(ap, fmt);
	fputs(WHO ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static bool failed(void)
{
	return atomic_load_explicit(&g.failed, memory_order_relaxed);
}

/* ==== the designs' operations ==== */

static int do_space(struct inst *in, int *pid)
{
	switch (in->d->kind) {
	case D_VMDB: return vmdb_space_create(in->v, pid);
	case D_URCU:
#if TSYNC_VMDB_HAVE_URCU
		return uvm_space_create(in->u, pid);
#else
		break;
#endif
	case D_LINUX: *pid = 0; return 0;
	}
	errno = ENOSYS;
	return -1;
}

static int do_grant(struct inst *in, int pid, size_t np, uint64_t *va)
{
	switch (in->d->kind) {
	case D_VMDB: return vmdb_grant(in->v, pid, np, va);
	case D_URCU:
#if TSYNC_VMDB_HAVE_URCU
		return uvm_grant(in->u, pid, np, va);
#else
		break;
#endif
	case D_LINUX: {
		void *p = mmap(NULL, np * VMDB_PAGE_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			return -1;
		*va = (uint64_t)(uintptr_t)p;
		return 0;
	}
	}
	errno = ENOSYS;
	return -1;
}

static long do_release(struct inst *in, int pid, uint64_t va, size_t np)
{
	switch (in->d->kind) {
	case D_VMDB: return vmdb_release(in->v, pid, va, np);
	case D_URCU:
#if TSYNC_VMDB_HAVE_URCU
		return uvm_release(in->u, pid, va, np);
#else
		break;
#endif
	case D_LINUX:
		return munmap((void *)(uintptr_t)va, np * VMDB_PAGE_SIZE) == 0 ? (long)np : -1;
	}
	errno = ENOSYS;
	return -1;
}

/* The caller's per-page work after a grant: write every page (vmdb, memfd backend), out
 * of the database and its locks, so that a locked design's critical section does not
 * include the page faults. The model backend has no page memory; urcu and linux touch
 * in their grant (after its locks; MAP_POPULATE). */
static void do_touch(struct inst *in, int pid, uint64_t va, size_t np)
{
	if (in->d->kind != D_VMDB)
		return;
	char *a = vmdb_page(in->v, pid, va);
	if (a == NULL)
		return;
	for (size_t i = 0; i < np; i++)
		*(volatile uint64_t *)(void *)(a + i * VMDB_PAGE_SIZE) = va + i;
}

static int do_lookup(struct inst *in, int pid, uint64_t va, uint64_t *frame)
{
#if TSYNC_VMDB_HAVE_URCU
	if (in->d->kind == D_URCU)
		return uvm_lookup(in->u, pid, va, frame);
#endif
	return vmdb_lookup(in->v, pid, va, frame);
}

static int do_alias(struct inst *in, int from, uint64_t va, int to, uint64_t *mapto)
{
	*mapto = VMDB_ANY;
#if TSYNC_VMDB_HAVE_URCU
	if (in->d->kind == D_URCU)
		return uvm_alias(in->u, from, va, to, mapto, 1);
#endif
	return vmdb_alias(in->v, from, va, to, mapto, 1);
}

static long do_revoke(struct inst *in, int pid, uint64_t va)
{
#if TSYNC_VMDB_HAVE_URCU
	if (in->d->kind == D_URCU)
		return uvm_revoke(in->u, pid, va, 1);
#endif
	return vmdb_revoke(in->v, pid, va, 1);
}

/* Mappings left in the database (a round must end with none); -1: cannot tell. */
static long long mappings_left(struct inst *in)
{
	switch (in->d->kind) {
	case D_VMDB: {
		struct vmdb_stats st;
		return vmdb_stats(in->v, &st) == 0 ? (long long)st.mappings : -1;
	}
	case D_URCU:
#if TSYNC_VMDB_HAVE_URCU
		return (long long)uvm_mappings(in->u);
#else
		break;
#endif
	case D_LINUX: break;
	}
	return -1;
}

/* ==== the workers ==== */

static inline void rec_ticks(struct lat *l, uint64_t d)
{
	l->sum += d;
	if (d > l->max)
		l->max = d;
	hist_add(&l->h, d);
}

static inline void rec(struct lat *l, bool on, uint64_t t0, uint64_t t1)
{
	if (on)
		rec_ticks(l, t1 - t0);
}

/* The worker's lock-wait histogram of this round (NULL: not recording); vmdb calls
 * on_wait in the thread that waited (vmdb_config.lock_wait). */
static _Thread_local struct lat *wait_lat;

static void on_wait(void *arg, uint64_t ticks)
{
	(void)arg;
	if (wait_lat)
		rec_ticks(wait_lat, ticks);
}

/* shared: wait for every worker between phases, so that the pages of the neighbour a
 * worker uses are mapped until it is done with them */
static void phase_wait(void)
{
	if (g.shared)
		pthread_barrier_wait(&g.phase);
}

/* The worker whose grants this one's lookups and trees use: the next one (shared), or
 * itself (private). */
static const struct worker *source_of(const struct worker *w)
{
	return g.shared ? g.w[(w->idx + 1) % g.threads] : w;
}

/* The space of worker w in instance di: its own, or the one shared space. */
static int pid_of(const struct worker *w, unsigned di)
{
	return g.shared ? g.w[0]->pids[di][0] : w->pids[di][0];
}

/* Index of the request holding page r of the trace: the last i with cum[i] <= r. */
static size_t region_of(const struct worker *w, uint64_t r)
{
	size_t lo = 0, hi = w->nreq; /* cum[lo] <= r < cum[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->cum[mid] <= r)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void round_trees(struct worker *w, unsigned di)
{
	struct inst *in = &g.inst[di];
	struct lat *L = w->lat[di];
	const bool on = g.record;
	const int pid = pid_of(w, di);
	const struct worker *src = source_of(w);
	for (unsigned t = 0; t < g.trees && !failed(); t++) {
		size_t idx = (size_t)(bench_xorshift64s(&w->rng) % src->nreq);
		uint64_t root = src->region[idx];
		w->tpid[0] = pid;
		w->tva[0] = root;
		unsigned n = 1, lstart = 0, lend = 1;
		for (unsigned l = 0; l < g.depth; l++) {
			for (unsigned p = lstart; p < lend; p++) {
				for (unsigned f = 0; f < g.fanout; f++) {
					int to = g.shared ? pid : w->pids[di][n];
					uint64_t mt;
					uint64_t t0 = tsync_now();
					int rc = do_alias(in, w->tpid[p], w->tva[p], to, &mt);
					uint64_t t1 = tsync_now();
					if (rc != 0) {
						fail("%s: alias of (%d, %" PRIu64 ") into %d: %s",
						     in->d->name, w->tpid[p], w->tva[p], to,
						     strerror(errno));
						return;
					}
					rec(&L[OP_ALIAS], on, t0, t1);
					w->tpid[n] = to;
					w->tva[n] = mt;
					n++;
				}
			}
			lstart = lend;
			lend = n;
		}
		uint64_t t0 = tsync_now();
		long removed = do_revoke(in, pid, root);
		uint64_t t1 = tsync_now();
		if (removed != (long)g.tree_nodes) {
			fail("%s: revoke of (%d, %" PRIu64
			     ") removed %ld mappings, expected %u%s%s",
			     in->d->name, pid, root, removed, g.tree_nodes, removed < 0 ? ": " : "",
			     removed < 0 ? strerror(errno) : "");
			return;
		}
		rec(&L[OP_REVOKE], on, t0, t1);
	}
}

static void round_lookups(struct worker *w, unsigned di)
{
	struct inst *in = &g.inst[di];
	struct lat *L = w->lat[di];
	const bool on = g.record;
	const int pid = pid_of(w, di);
	const struct worker *src = source_of(w);
	for (size_t k = 0; k < src->nreq && !failed(); k++) {
		uint64_t r = bench_xorshift64s(&w->rng) % src->cum[src->nreq];
		size_t idx = region_of(src, r);
		uint64_t va = src->region[idx] + (r - src->cum[idx]), frame;
		uint64_t t0 = tsync_now();
		int rc = do_lookup(in, pid, va, &frame);
		uint64_t t1 = tsync_now();
		if (rc != 0) {
			fail("%s: lookup of mapped page (%d, %" PRIu64 "): %s", in->d->name, pid,
			     va, strerror(errno));
			break;
		}
		rec(&L[OP_LOOKUP], on, t0, t1);
	}
}

/* One round of the trace. Every worker reaches the same phase barriers whatever fails
 * (a failure stops the work, not the barriers), and unmaps what it mapped. */
static void round_run(struct worker *w, unsigned di)
{
	struct inst *in = &g.inst[di];
	struct lat *L = w->lat[di];
	const bool on = g.record;
	const int pid = pid_of(w, di);
	wait_lat = on ? &L[OP_WAIT] : NULL;
	w->nmapped = 0;
	for (size_t i = 0; i < w->nreq && !failed(); i++) {
		size_t np = w->trace[i];
		uint64_t t0 = tsync_now();
		int rc = do_grant(in, pid, np, &w->region[i]);
		if (rc == 0)
			do_touch(in, pid, w->region[i], np);
		uint64_t t1 = tsync_now();
		if (rc != 0) {
			fail("%s: grant of %zu pages (request %zu of %zu): %s", in->d->name, np, i,
			     w->nreq, strerror(errno));
			break;
		}
		w->nmapped = i + 1;
		rec(&L[np == 1 ? OP_MAP1 : OP_MAP_BIG], on, t0, t1);
	}
	phase_wait();
	if (in->d->kind != D_LINUX && !failed()) {
		round_lookups(w, di);
		if (!failed())
			round_trees(w, di);
	}
	phase_wait();
	for (size_t i = 0; i < w->nmapped; i++) {
		size_t np = w->trace[i];
		uint64_t t0 = tsync_now();
		long n = do_release(in, pid, w->region[i], np);
		uint64_t t1 = tsync_now();
		if (n != (long)np) {
			if (!failed())
				fail("%s: release of %zu pages at %" PRIu64 " removed %ld%s%s",
				     in->d->name, np, w->region[i], n, n < 0 ? ": " : "",
				     n < 0 ? strerror(errno) : "");
			continue; /* unmap the rest all the same */
		}
		rec(&L[np == 1 ? OP_UNMAP1 : OP_UNMAP_BIG], on, t0, t1);
	}
	wait_lat = NULL;
}

#if TSYNC_VMDB_HAVE_URCU
static bool uses_urcu(void)
{
	for (unsigned i = 0; i < g.ninst; i++)
		if (g.inst[i].d->kind == D_URCU)
			return true;
	return false;
}
#endif

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bench_pin_self(w->cpu);
#if TSYNC_VMDB_HAVE_URCU
	bool urcu = uses_urcu();
	if (urcu)
		uvm_thread_online();
#endif
	for (unsigned i = 0; i < g.ninst && !failed(); i++) {
		/* shared: worker 0 makes the one space; the others use it after the barrier */
		unsigned nsp = g.inst[i].d->kind == D_LINUX || g.shared ? 1 : 1 + g.tree_nodes;
		if (g.shared && w->idx != 0)
			nsp = 0;
		for (unsigned s = 0; s < nsp; s++)
			if (do_space(&g.inst[i], &w->pids[i][s]) != 0) {
				fail("%s: vmdb_space_create: %s", g.inst[i].d->name,
				     strerror(errno));
				break;
			}
	}
	pthread_barrier_wait(&g.bar);
	for (;;) {
		pthread_barrier_wait(&g.bar);
		if (g.cur < 0)
			break;
		/* always: round_run stops its work on a failure but meets the phase barriers
		 * that the other workers wait at */
		round_run(w, (unsigned)g.cur);
		pthread_barrier_wait(&g.bar);
	}
#if TSYNC_VMDB_HAVE_URCU
	if (urcu)
		uvm_thread_offline();
#endif
	return NULL;
}

/* ==== set-up ==== */

/* The trace of thread idx: ~650 MB x scale, 3 % of the requests 1024 pages. */
static int make_trace(struct worker *w, double scale)
{
	double target = MB_PER_THREAD * scale * 1048576.0 / VMDB_PAGE_SIZE;
	double per_req = (1.0 - BIG_FRACTION) + BIG_FRACTION * BIG_PAGES;
	size_t nreq = (size_t)ceil(target / per_req);
	if (nreq < 2)
		nreq = 2;
	size_t nbig = (size_t)llround((double)nreq * BIG_FRACTION);
	if (nbig < 1)
		nbig = 1;
	if (nbig >= nreq)
		nbig = nreq - 1;
	w->nreq = nreq;
	w->trace = malloc(nreq * sizeof *w->trace);
	w->cum = malloc((nreq + 1) * sizeof *w->cum);
	w->region = calloc(nreq, sizeof *w->region);
	if (!w->trace || !w->cum || !w->region)
		return -1;
	for (size_t i = 0; i < nreq; i++)
		w->trace[i] = (uint16_t)(i < nbig ? BIG_PAGES : 1);
	uint64_t s = 0x9e3779b97f4a7c15ull * (w->idx + 1); /* per thread index, not per run */
	for (size_t i = nreq - 1; i > 0; i--) {
		size_t j = (size_t)(bench_xorshift64s(&s) % (i + 1));
		uint16_t t = w->trace[i];
		w->trace[i] = w->trace[j];
		w->trace[j] = t;
	}
	w->cum[0] = 0;
	for (size_t i = 0; i < nreq; i++)
		w->cum[i + 1] = w->cum[i] + w->trace[i];
	w->rng = s ^ 0x2545f4914f6cdd1dull;
	return 0;
}

static unsigned bits_for(uint64_t n)
{
	unsigned b = 0;
	while (b < 63 && (1ull << b) < n)
		b++;
	return b;
}

static void free_worker(struct worker *w)
{
	if (w == NULL)
		return;
	free(w->trace);
	free(w->cum);
	free(w->region);
	free(w->tpid);
	free(w->tva);
	for (unsigned i = 0; i < ND; i++)
		free(w->pids[i]);
	free(w);
}

static void destroy_insts(void)
{
	for (unsigned i = 0; i < g.ninst; i++) {
		struct inst *in = &g.inst[i];
		if (in->v)
			vmdb_destroy(in->v);
#if TSYNC_VMDB_HAVE_URCU
		if (in->u)
			uvm_destroy(in->u);
#endif
		memset(in, 0, sizeof *in);
	}
	g.ninst = 0;
}

static void emit_rows(const struct opts *o, FILE *const outs[2])
{
	double tpn = tsync_ticks_per_ns();
	for (unsigned i = 0; i < g.ninst; i++) {
		for (unsigned op = 0; op < NOPS; op++) {
			struct lat all;
			memset(&all, 0, sizeof all);
			for (unsigned t = 0; t < g.threads; t++) {
				const struct lat *l = &g.w[t]->lat[i][op];
				all.sum += l->sum;
				all.max = l->max > all.max ? l->max : all.max;
				hist_merge(&all.h, &l->h);
			}
			uint64_t n = hist_count(&all.h);
			if (n == 0)
				continue;
			unsigned pages = 1;
			if (op == OP_MAP_BIG || op == OP_UNMAP_BIG)
				pages = BIG_PAGES;
			else if (op == OP_REVOKE)
				pages = g.tree_nodes;
			else if (op == OP_WAIT)
				pages = 0;
			for (int k = 0; k < 2; k++)
				if (outs[k]) {
					fprintf(outs[k],
						"%s,%s,%s,%u,%s,%u,%" PRIu64
						",%.1f,%.0f,%.0f,%.0f,%.0f\n",
						g.inst[i].d->name, backend_name[o->backend],
						layout_name[o->layout], g.threads, op_name[op],
						pages, n, (double)all.sum / (double)n / tpn,
						(double)hist_quantile(&all.h, 0.5) / tpn,
						(double)hist_quantile(&all.h, 0.99) / tpn,
						(double)hist_quantile(&all.h, 0.999) / tpn,
						(double)all.max / tpn);
					fflush(outs[k]);
				}
		}
	}
}

/* Bytes of memory available (MemAvailable), or 0 if unknown. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (f == NULL)
		return 0;
	char line[256];
	unsigned long long kib = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib * 1024u;
}

/* Memory a run at `threads` commits, in bytes: with the memfd backend every database
 * keeps the frames it ever used committed in its memfd (x 1.5: frames wait for their
 * grace period and TLB flush), and they all live until the thread count is done; linux
 * holds one round's trace. The model backend needs no page memory. */
static uint64_t mem_needed(const struct opts *o, unsigned threads, uint64_t pages)
{
	double per = (double)threads * (double)pages * VMDB_PAGE_SIZE, need = 0;
	for (unsigned i = 0; i < o->nd; i++) {
		enum kind k = designs[o->design[i]].kind;
		if (k == D_LINUX)
			need += per;
		else if (o->backend == VMDB_BACKEND_MEMFD)
			need += 1.5 * per;
	}
	return (uint64_t)need;
}

/* Every design at one thread count: set up, warm up, --repeat interleaved rounds. */
static int run_threads(const struct opts *o, unsigned threads, FILE *const outs[2])
{
	int rc = 1;
	memset(&g.inst, 0, sizeof g.inst);
	g.ninst = 0;
	g.threads = threads;
	g.shared = o->layout == L_SHARED;
	g.cur = 0;
	atomic_store(&g.failed, false);
	g.w = calloc(threads, sizeof *g.w);
	if (g.w == NULL)
		return 1;
	uint64_t most = 0; /* pages of the longest trace */
	for (unsigned t = 0; t < threads; t++) {
		struct worker *w = calloc(1, sizeof *w);
		g.w[t] = w;
		if (w == NULL)
			goto out;
		w->idx = t;
		if (make_trace(w, o->scale) != 0)
			goto out;
		if (w->cum[w->nreq] > most)
			most = w->cum[w->nreq];
		w->tpid = calloc(g.tree_nodes + 1, sizeof *w->tpid);
		w->tva = calloc(g.tree_nodes + 1, sizeof *w->tva);
		if (!w->tpid || !w->tva)
			goto out;
		for (unsigned i = 0; i < o->nd; i++) {
			w->pids[i] = calloc(g.tree_nodes + 1, sizeof *w->pids[i]);
			if (w->pids[i] == NULL)
				goto out;
		}
	}
	uint64_t need = mem_needed(o, threads, most), avail = mem_available();
	if (avail && need > avail / 10 * 8) {
		fprintf(stderr,
			WHO
			": %u thread(s) skipped: they would commit about %.1f GiB, more than 80 %% "
			"of the %.1f GiB available (lower --scale or --threads)\n",
			threads, (double)need / 1073741824.0, (double)avail / 1073741824.0);
		rc = 0;
		goto out;
	}
	int cpus[CPU_SETSIZE];
	unsigned ncpu = o->pin ? bench_affinity_cpus(cpus) : 0;
	for (unsigned t = 0; t < threads; t++)
		g.w[t]->cpu = ncpu ? cpus[t % ncpu] : -1;

	/* Room: 4x the pages a space holds (grace periods hold pages back, extents are
	 * never merged; shared: every thread's in one), the defaults where they suffice. */
	unsigned va_bits = bits_for(4 * most * (g.shared ? threads : 1));
	unsigned frame_bits = bits_for(4 * most * threads);
	va_bits = va_bits < 20 ? 0 : va_bits;
	frame_bits = frame_bits < 22 ? 0 : frame_bits;
	unsigned spaces = threads * (1 + g.tree_nodes) + 8;
	for (unsigned i = 0; i < o->nd; i++) {
		struct inst *in = &g.inst[g.ninst++];
		in->d = &designs[o->design[i]];
		if (in->d->kind == D_VMDB) {
			struct vmdb_config cfg = VMDB_CONFIG_INIT;
			cfg.sync = in->d->sync;
			cfg.backend = o->backend;
			cfg.touch = false; /* the worker touches, outside the locks (do_touch) */
			cfg.va_bits = va_bits;
			cfg.frame_bits = frame_bits;
			cfg.max_spaces = spaces > 1024 ? spaces : 0;
			cfg.lock_wait = on_wait; /* the locked designs' waits (ps: never called) */
			in->v = vmdb_create(&cfg);
			if (in->v == NULL) {
				fprintf(stderr, WHO ": vmdb_create (%s, %s): %s\n", in->d->name,
					backend_name[o->backend], strerror(errno));
				goto out;
			}
		}
#if TSYNC_VMDB_HAVE_URCU
		if (in->d->kind == D_URCU) {
			struct uvm_config cfg = {
				.memfd = o->backend == VMDB_BACKEND_MEMFD,
				.touch = true,
				.va_bits = va_bits ? va_bits : 20,
				.frame_bits = frame_bits ? frame_bits : 22,
				.max_spaces = spaces,
				.size_hint = (size_t)(most * threads),
			};
			in->u = uvm_create(&cfg);
			if (in->u == NULL) {
				fprintf(stderr, WHO ": urcu peer: %s\n", strerror(errno));
				goto out;
			}
		}
#endif
	}

	if (pthread_barrier_init(&g.bar, NULL, threads + 1) != 0)
		goto out;
	if (pthread_barrier_init(&g.phase, NULL, threads) != 0) {
		pthread_barrier_destroy(&g.bar);
		goto out;
	}
	unsigned started = 0;
	for (; started < threads; started++)
		if (pthread_create(&g.w[started]->th, NULL, worker_main, g.w[started]) != 0) {
			fprintf(stderr, WHO ": pthread_create failed\n");
			exit(1); /* the barrier counts on every worker */
		}
	pthread_barrier_wait(&g.bar); /* address spaces made */
	for (unsigned r = 0; r <= o->repeat && !failed(); r++) {
		fprintf(stderr, WHO ": %u thread(s), %s backend, %s layout, %s %u/%u\n", threads,
			backend_name[o->backend], layout_name[o->layout], r ? "round" : "warm-up",
			r, o->repeat);
		for (unsigned j = 0; j < g.ninst && !failed(); j++) {
			unsigned i = (j + r) % g.ninst;
			g.cur = (int)i;
			g.record = r > 0;
			pthread_barrier_wait(&g.bar); /* start */
			pthread_barrier_wait(&g.bar); /* every worker done */
			long long left = mappings_left(&g.inst[i]);
			if (left > 0)
				fail("%s: %lld mappings left after a round that unmapped "
				     "everything",
				     g.inst[i].d->name, left);
		}
	}
	g.cur = -1;
	pthread_barrier_wait(&g.bar);
	for (unsigned t = 0; t < threads; t++)
		pthread_join(g.w[t]->th, NULL);
	pthread_barrier_destroy(&g.bar);
	pthread_barrier_destroy(&g.phase);
	if (!failed()) {
		emit_rows(o, outs);
		rc = 0;
	}
out:
	destroy_insts();
	for (unsigned t = 0; t < threads; t++)
		free_worker(g.w[t]);
	free(g.w);
	g.w = NULL;
	return rc;
}

/* ==== options and output ==== */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsync-bench vmdb [options]\n"
		"ParSec (EuroSys 2016) sec. 5.3, Figs. 9-10: a Metis-like trace of grants (single\n"
		"pages and, for 3 %% of the requests, 1024 pages; 650 MB per thread at --scale 1,\n"
		"every page written after it is mapped), then lookups of random mapped pages,\n"
		"alias trees and their revoke, then the release of every grant; one warm-up "
		"round,\n"
		"then --repeat rounds, the designs interleaved. Each operation is timed alone.\n"
		"  --designs LIST      comma-separated (default all):\n");
	for (unsigned i = 0; i < ND; i++) {
		bool missing = !TSYNC_VMDB_HAVE_URCU && designs[i].kind == D_URCU;
		fprintf(f, "                        %-12s %s%s\n", designs[i].name, designs[i].what,
			missing ? " [not built: liburcu-cds not found]" : "");
	}
	fprintf(f,
		"                      linux has map and unmap rows only; it ignores --backend\n"
		"                      with ps, a model run adds lookup rows ns-lookup (a\n"
		"                      section per ps_ns_lookup), ns-walk (the walk alone) and\n"
		"                      bare-trie (a plain radix trie of the same shape)\n"
		"  --layout L          shared (the default, ParSec's Metis: every thread maps,\n"
		"                      aliases, revokes and unmaps in one address space; thread\n"
		"                      i's lookups and trees use thread i+1's pages; a barrier\n"
		"                      between the phases) or private (every thread in its own\n"
		"                      address spaces)\n"
		"  --threads LIST      thread counts (default 1,2)\n"
		"  --backend B         model (page tables are arrays: synchronisation alone; the\n"
		"                      default) or memfd (frames are memfd pages really mapped)\n"
		"  --repeat N          recorded rounds per design and thread count (default 10)\n"
		"  --scale F           trace size: F x 650 MB per thread and round, 0 < F <= 16\n"
		"                      (default 1); also scales the trees per round (256 x F, >= "
		"3)\n"
		"  --tree-depth D      alias tree depth, 0..8 (default 3; 0: no trees)\n"
		"  --tree-fanout F     aliases per node, 1..16 (default 2); at most %u nodes\n"
		"  --csv FILE|-        rows to FILE (default: stdout unless --out)\n"
		"  --out DIR           DIR/vmdb.csv (rows of other backends and layouts already\n"
		"                      there are kept, this run's replaced), then plot_vmdb.py:\n"
		"                      DIR/table.md, DIR/vmdb_<backend>_<layout>.png and\n"
		"                      DIR/vmdb_<backend>_<layout>_tail.png\n"
		"  --pin / --no-pin    pin worker i to the i-th allowed CPU (default --pin)\n"
		"CSV: " CSV_HEADER "\n"
		"  op: map, unmap (pages 1 or 1024), lookup, alias (pages 1), revoke (pages: the\n"
		"  mappings one revoke removed, the tree's nodes below the root), wait (pages 0:\n"
		"  the locked designs' lock waits, when any); avg_ns is the mean, p50/p99/p999_ns\n"
		"  histogram quantiles (within 6.25 %%), max_ns the longest, over every recorded\n"
		"  round and thread.\n",
		MAX_TREE_NODES);
}

#if !TSYNC_VMDB_HAVE_URCU
/* bench_names' check: urcu only where liburcu-cds was found. */
static int check_built(unsigned i, const char *item)
{
	(void)item;
	if (designs[i].kind != D_URCU)
		return 0;
	fprintf(stderr, WHO ": urcu: not built (liburcu-cds was not found)\n");
	return -1;
}
#endif

static const struct bench_names design_names = {
	.what = "design",
	.hint = "ps, rwlock, global-lock, frame-lock, frame-ticket, urcu, linux",
	BENCH_NAMES_OF(designs, name),
	.unique = true,
#if !TSYNC_VMDB_HAVE_URCU
	.check = check_built,
#endif
};

static int parse_designs(const char *arg, struct opts *o)
{
	if (strcmp(arg, "all") == 0) {
		o->nd = 0;
		for (unsigned i = 0; i < ND; i++)
			o->design[o->nd++] = i;
		return 0;
	}
	return bench_name_list(WHO, &design_names, arg, o->design, &o->nd, ND);
}

static int opt_designs(const char *arg, void *ctx)
{
	return parse_designs(arg, ctx) == 0 ? 0 : -1;
}

static int opt_backend(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	if (strcmp(arg, "model") == 0) {
		o->backend = VMDB_BACKEND_MODEL;
	} else if (strcmp(arg, "memfd") == 0) {
		o->backend = VMDB_BACKEND_MEMFD;
	} else {
		fprintf(stderr, WHO ": bad --backend '%s' (model or memfd)\n", arg);
		return -1;
	}
	return 0;
}

static int opt_layout(const char *arg, void *ctx)
{
	struct opts *o = ctx;
	if (strcmp(arg, "shared") == 0) {
		o->layout = L_SHARED;
	} else if (strcmp(arg, "private") == 0) {
		o->layout = L_PRIVATE;
	} else {
		fprintf(stderr, WHO ": bad --layout '%s' (shared or private)\n", arg);
		return -1;
	}
	return 0;
}

/* --out: DIR/vmdb.csv with the rows of other backends and layouts that it holds kept. */
static FILE *open_out_csv(const char *dir, int backend, int layout)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/vmdb.csv", dir);
	char *kept = NULL;
	size_t klen = 0;
	FILE *old = fopen(path, "r");
	if (old) {
		FILE *k = open_memstream(&kept, &klen);
		char line[1024];
		bool header_ok =
			fgets(line, sizeof line, old) && strcmp(line, CSV_HEADER "\n") == 0;
		char mine[64]; /* ",backend,layout," of this run's rows */
		snprintf(mine, sizeof mine, ",%s,%s,", backend_name[backend], layout_name[layout]);
		while (k && header_ok && fgets(line, sizeof line, old)) {
			const char *b = strchr(line, ',');
			if (b && strncmp(b, mine, strlen(mine)) == 0)
				continue; /* this run's backend and layout: replaced */
			fputs(line, k);
		}
		if (k)
			fclose(k);
		fclose(old);
	}
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, WHO ": --out %s: %s\n", path, strerror(errno));
		free(kept);
		return NULL;
	}
	fprintf(f, "%s\n", CSV_HEADER);
	if (kept && klen)
		fwrite(kept, 1, klen, f);
	free(kept);
	fflush(f);
	return f;
}

int vmdb_main(int argc, char **argv, const char *cmdline)
{
	(void)cmdline;
	struct opts o;
	memset(&o, 0, sizeof o);
	o.backend = VMDB_BACKEND_MODEL;
	o.repeat = 10;
	o.scale = 1.0;
	o.depth = 3;
	o.fanout = 2;
	o.threads[0] = 1;
	o.threads[1] = 2;
	o.nthreads = 2;
	o.pin = true;
	for (unsigned i = 0; i < ND; i++)
		if (TSYNC_VMDB_HAVE_URCU || designs[i].kind != D_URCU)
			o.design[o.nd++] = i;
	const struct bench_opt opts[] = {
		BENCH_O_FN("designs", 0, BENCH_OPT_CALL, opt_designs),
		BENCH_O_LIST("threads", 0, BENCH_OPT_UINTS, o.threads, &o.nthreads, 1, MAX_THREADS,
			     0),
		BENCH_O_FN("backend", 0, BENCH_OPT_CALL, opt_backend),
		BENCH_O_FN("layout", 0, BENCH_OPT_CALL, opt_layout),
		BENCH_O_NUM("repeat", 0, BENCH_OPT_UINT, &o.repeat, 1, 100000),
		BENCH_O_DBL("scale", 0, BENCH_OPT_POS, &o.scale, MAX_SCALE),
		BENCH_O_NUM("tree-depth", 0, BENCH_OPT_UINT, &o.depth, 0, 8),
		BENCH_O_NUM("tree-fanout", 0, BENCH_OPT_UINT, &o.fanout, 1, 16),
		BENCH_O_STR("csv", 0, &o.csv),
		BENCH_O_STR("out", 0, &o.out),
		BENCH_O_SET("pin", 0, &o.pin),
		BENCH_O_CLEAR("no-pin", 0, &o.pin),
		BENCH_O_END,
	};
	int prc = bench_getopt(WHO, argc, argv, opts, usage, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	/* the tree: fanout + fanout^2 + ... + fanout^depth nodes below the root */
	uint64_t nodes = 0, lvl = 1;
	for (unsigned l = 0; l < o.depth; l++) {
		lvl *= o.fanout;
		nodes += lvl;
		if (nodes > MAX_TREE_NODES) {
			fprintf(stderr,
				WHO ": a tree of depth %u and fanout %u has more than %u nodes\n",
				o.depth, o.fanout, MAX_TREE_NODES);
			return 2;
		}
	}
	g.depth = o.depth;
	g.fanout = o.fanout;
	g.tree_nodes = (unsigned)nodes;
	g.trees = 0;
	if (o.depth > 0) {
		long t = lround(TREES_PER_ROUND * o.scale);
		g.trees = t < (long)MIN_TREES ? MIN_TREES : (unsigned)t;
	}

	/* f[0]: --csv (stdout by default); f[1]: DIR/vmdb.csv, which keeps the other
	 * backend's rows (open_out_csv) */
	struct bench_csv out = {{NULL, NULL}, NULL};
	if ((o.csv || !o.out) && bench_csv_open(&out, WHO, o.csv, NULL, NULL, CSV_HEADER) != 0)
		return 1;
	if (o.out) {
		if (bench_mkdir_p(o.out) != 0) {
			fprintf(stderr, WHO ": --out %s: %s\n", o.out, strerror(errno));
			bench_csv_close(&out);
			return 1;
		}
		if (!(out.f[1] = open_out_csv(o.out, o.backend, o.layout))) {
			bench_csv_close(&out);
			return 1;
		}
	}
	FILE *const *outs = out.f;

	struct worker probe = {.idx = 0};
	if (make_trace(&probe, o.scale) != 0) {
		fprintf(stderr, WHO ": out of memory\n");
		return 1;
	}
	size_t big = 0;
	for (size_t i = 0; i < probe.nreq; i++)
		big += probe.trace[i] != 1;
	fprintf(stderr,
		WHO ": per thread and round: %zu grants (%zu of %u pages, %zu of 1), %.1f MiB; "
		    "%zu lookups; %u trees of %u aliases; clock %s, %.3f ticks/ns\n",
		probe.nreq, big, BIG_PAGES, probe.nreq - big,
		(double)probe.cum[probe.nreq] * VMDB_PAGE_SIZE / 1048576.0, probe.nreq, g.trees,
		g.tree_nodes, tsync_clock_source_name(), tsync_ticks_per_ns());
	free(probe.trace);
	free(probe.cum);
	free(probe.region);

	g.ninst = 0;
	for (unsigned i = 0; i < o.nd; i++)
		g.inst[g.ninst++].d = &designs[o.design[i]];
#if TSYNC_VMDB_HAVE_URCU
	bool urcu = uses_urcu(); /* the main thread destroys the peer and counts its nodes */
	if (urcu)
		uvm_thread_online();
#endif
	g.ninst = 0;
	int rc = 0;
	bool with_ps = false;
	for (unsigned i = 0; i < o.nd; i++)
		with_ps |= designs[o.design[i]].kind == D_VMDB &&
			   designs[o.design[i]].sync == VMDB_SYNC_PS;
	for (unsigned t = 0; t < o.nthreads && rc == 0; t++) {
		rc = run_threads(&o, o.threads[t], outs);
		/* the lookup's floor: ps_ns_lookup against a bare trie walk (model runs) */
		if (rc == 0 && with_ps && o.backend == VMDB_BACKEND_MODEL)
			rc = ns_lookup_bench(o.threads[t], o.repeat, backend_name[o.backend],
					     layout_name[o.layout], outs);
	}
#if TSYNC_VMDB_HAVE_URCU
	if (urcu)
		uvm_thread_offline();
#endif
	bench_csv_close(&out);
	if (rc == 0 && o.out)
		rc = bench_plot_dir(WHO, TSYNC_VMDB_PLOT_PY, o.out);
	return rc;
}
