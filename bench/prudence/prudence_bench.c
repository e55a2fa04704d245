/*
 * bench/prudence/prudence_bench.c - `tsync-bench prudence pairs|endurance`: allocation
 * with deferred frees, the workloads of Prudence (ASPLOS 2016) §5.
 *
 *   pairs      Fig. 6: each thread allocates an object of --sizes bytes, writes its first
 *              and last word and frees it deferred, as fast as it can; one op = one
 *              alloc + deferred-free pair. Optional reader threads (--readers) loop over
 *              empty read-side sections of the allocator's SMR, so grace periods must
 *              wait for them.
 *   endurance  Fig. 3: each thread owns a table of --nodes nodes of --sizes bytes (512 by
 *              default) and updates it copy-on-write at the maximal rate: allocate a node,
 *              copy the old one into it, publish it in the old one's slot, free the old
 *              one deferred. Readers walk every table in sections of 64 nodes. RSS
 *              (VmRSS) and the deferred objects not yet reusable are sampled every
 *              --sample-ms into a series file; --limit-mib puts the run in a memory
 *              cgroup with that limit, so a run whose garbage outgrows it is killed (the
 *              seed's SLUB running out of memory after 196 s).
 * Pinning (--pin, the default): writer i on the i-th allowed CPU, reader j on the
 * (threads + j)-th modulo their number - on 2 CPUs with 2 writers, the reader shares
 * writer 0's CPU, and a reader preempted inside its section holds every grace period
 * for a time slice; --no-pin-readers leaves the readers to the scheduler.
 *
 * Allocators (--list): the deferred free of every peer is what a user-space program uses
 * today - liburcu's call_rcu (memb flavour; its callbacks run on call_rcu worker
 * threads: one per process by default, one per CPU with create_all_cpu_call_rcu_data)
 * over glibc malloc, or over jemalloc, tcmalloc or mimalloc put in with LD_PRELOAD; and
 * Concurrency Kit's ck_epoch_call, with ck_epoch_poll every 64 calls in the freeing
 * thread. tsync's are ps_mem (one object size, ps_free) and ps_kmem (size classes,
 * ps_kfree), and, with glibc malloc and no recycling (the peers' pattern, ParSec's
 * reclamation), ps_call with a callback that free()s (ps-call) and ps_call_free
 * (ps-call-free), their callbacks run by the freeing threads every PS_CALL_BATCH calls.
 *
 * Every measurement runs in a child process (this program again, `--child`), so the
 * preloaded allocator, the peak RSS (the child's ru_maxrss) and a failure under the
 * memory limit belong to that one run. --repeat R runs every configuration R times,
 * repeats interleaved (this VM is bimodal); each run is one CSV row:
 *
 *   workload,allocator,threads,readers,size,mops,p50_ns,p99_ns,p999_ns,helper_cpu_pct,
 *   peak_rss_kib,slab_churn,allocs,cache_hits,merge_hits,frees,frees_now
 *
 *   mops            ops (pairs, or copy-on-write updates) of all threads per second / 1e6
 *   p50/p99/p999_ns one op's latency, every 16th op timed (two clock reads around it)
 *   helper_cpu_pct  CPU time of the process's other threads (call_rcu workers) during
 *                   the timed window, in % of one CPU; measured for every allocator
 *   peak_rss_kib    the child's peak resident set (getrusage)
 *   slab_churn      ps_mem_stats' slab grow/shrink pairs; empty for the peers and
 *                   ps-call(-free), which have no ps_mem
 *   allocs, cache_hits, merge_hits, frees, frees_now
 *                   ps_mem_stats' counts at the end of the timed window (empty for the
 *                   peers): allocations, those served by the object cache, and by what
 *                   the slow path's reclamation merged into it (no refill: Prudence's
 *                   Fig. 7 counts both as object-cache hits), deferred (ps_free) and
 *                   immediate (ps_free_now) frees (Fig. 12: the deferred share)
 * --ops-column appends `ops`, the operations of all writers (each writer does at least
 * one batch of 256, however late it starts), for the smoke test.
 * A run that did not finish (killed under --limit-mib, an allocation failed, or no end
 * after --seconds + 120 s) has empty mops and latencies (and ops); endurance_runs.csv says which:
 * outcome ok, killed-oom, enomem, timeout or failed. endurance also writes, under --out,
 * endurance_series.csv (allocator,threads,readers,size,repeat,t_s,rss_kib,pending) and
 * endurance_runs.csv
 * (allocator,threads,readers,size,repeat,live_kib,limit_mib,outcome,wall_s,cache_churn,
 * cache_misses,peak_slabs,ft,peak_slab_kib,preflushed,slab_premoves,alloc_waits,wait_timeouts:
 * ps_mem_stats' object-cache churn, misses and peak slabs and the total fragmentation f_t =
 * slab bytes / live bytes at the end of the timed window - Prudence's Figs. 8-11 measures -
 * peak_slabs x the slab size of the run's size class (slab sizes follow the object size),
 * the objects the pre-flush moved and the slabs pre-movement moved (what those two policies
 * did in the run), and the allocations that waited for a grace period (the pending bound,
 * max_bytes) and those whose wait timed out; empty for the peers).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tsync/clock.h>
#include <tsync/ps.h>
#include <tsync/ps_kmem.h>
#include <tsync/ps_mem.h>

#include "common.h"
#include "sys.h"
#include "hist.h"
#include "prudence_bench.h"
#include "peers/peer.h"

#ifndef TSYNC_PRUDENCE_PLOT_PY
#define TSYNC_PRUDENCE_PLOT_PY "plot_prudence.py"
#endif
#ifndef TSYNC_PRELOAD_JEMALLOC
#define TSYNC_PRELOAD_JEMALLOC ""
#endif
#ifndef TSYNC_PRELOAD_TCMALLOC
#define TSYNC_PRELOAD_TCMALLOC ""
#endif
#ifndef TSYNC_PRELOAD_MIMALLOC
#define TSYNC_PRELOAD_MIMALLOC ""
#endif

#define WHO "tsync-bench prudence"
#define CSV_HEADER                                                                           \
	"workload,allocator,threads,readers,size,mops,p50_ns,p99_ns,p999_ns,helper_cpu_pct," \
	"peak_rss_kib,slab_churn,allocs,cache_hits,merge_hits,frees,frees_now"
#define OPS_COLUMN ",ops"
#define SERIES_HEADER "allocator,threads,readers,size,repeat,t_s,rss_kib,pending"
#define RUNS_HEADER                                                                            \
	"allocator,threads,readers,size,repeat,live_kib,limit_mib,outcome,wall_s,cache_churn," \
	"cache_misses,peak_slabs,ft,peak_slab_kib,preflushed,slab_premoves,alloc_waits,wait_"  \
	"timeouts"
#define MAX_THREADS 64u
#define MAX_LIST 32u
#define LAT_EVERY 16u  /* time every 16th op: a clock read costs 10-30 ns under KVM */
#define READ_CHUNK 64u /* endurance readers: nodes per section */
#define OBJ_MIN 16u    /* the peers keep their callback head (16 bytes) in the object */
#define EXIT_ENOMEM 3  /* child: an allocation failed */
/* The writers' stand-in for idle time: they never idle, so every IDLE_MS each calls its
 * allocator's idle hook, as tsync-cached's workers call cache_reclaim on a 10 ms timer
 * (apps/cached/server/server.c, RECLAIM_MS). tsync's allocators only: ps_mem_reclaim /
 * ps_kmem_reclaim, which run the pre-flush (docs/prudence.md §3). */
#define IDLE_MS 10u

enum workload { W_PAIRS, W_ENDURANCE };
/* A ps_kmem row's memory limit: the default (the pending bound of ps_mem_config), also
 * max_bytes = BOUNDED_FACTOR x the endurance live set, or no pending bound. */
enum mem_limit { LIM_DEFAULT, LIM_MAX, LIM_UNBOUNDED };
static const char *const workload_name[] = {"pairs", "endurance"};

/* ==== allocators ==== */

struct palloc {
	const char *name;
	const char *preload; /* LD_PRELOAD for the child; NULL: none */
	const char *what;
	int (*init)(size_t size, unsigned nthreads);
	void (*fini)(void);
	void (*thread_init)(unsigned idx);
	void (*thread_fini)(void);
	void *(*alloc)(size_t size);
	void (*free_deferred)(void *p);
	void (*read_lock)(void);
	void (*read_unlock)(void);
	void (*drain)(void); /* a writer, after its last free */
	/* a writer, every IDLE_MS: the allocator's idle hook (NULL: none) - where Prudence
	 * (ASPLOS 2016) §4.2 runs the pre-flush a free scheduled */
	void (*idle)(void);
	uint64_t (*pending)(void);                   /* deferred, not yet reusable */
	bool (*mem_stats)(struct ps_mem_stats *out); /* false: not a ps_mem */
	unsigned prudence; /* tsync: ps_mem_config.prudence (0: the default policies) */
	bool ablation;     /* a ps_kmem with policies off: in `ablation`, not in `all` */
	int limit;         /* enum mem_limit: a ps_kmem with max_bytes or without the
			    * pending bound runs only when named */
};

/* The writers (their issued counters feed the peers' pending count: peers/peer.h). */
struct wthread;
static struct wthread *g_w;
static unsigned g_nw;
static uint64_t issued_sum(void);

/* ---- tsync: ps_mem (one size) and ps_kmem (size classes) ---- */

static struct ps *g_ps;
static struct ps_mem *g_m;
static struct ps_kmem *g_k;
static unsigned g_prudence; /* the running allocator's policies (run_child sets it) */

static int psm_init(size_t size, unsigned n)
{
	(void)n;
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.prudence = g_prudence;
	g_ps = ps_create(NULL);
	g_m = g_ps ? ps_mem_create(g_ps, size, &c) : NULL;
	return g_m ? 0 : -1;
}
/* ps-kmem-max's memory limit: this times the endurance run's live set (its one class
 * holds every node), so slabs for the live set, their headers and the deferred objects
 * share 40 % above it; a writer at the limit waits for a grace period (up to 1 s). */
#define BOUNDED_FACTOR 1.4
static int g_limit;              /* enum mem_limit of the running allocator */
static uint64_t g_bounded_nodes; /* nodes of every writer (run_child sets both) */

static int psk_init(size_t size, unsigned n)
{
	(void)n;
	struct ps_kmem_config c = PS_KMEM_CONFIG_INIT;
	c.mem.prudence = g_prudence;
	if (g_limit == LIM_MAX) {
		c.mem.max_bytes = (size_t)(BOUNDED_FACTOR * (double)size * (double)g_bounded_nodes);
		c.mem.limit_wait_ms = 1000;
	} else if (g_limit == LIM_UNBOUNDED) {
		c.mem.pending_bound_pct = PS_MEM_PENDING_BOUND_OFF;
	}
	g_ps = ps_create(NULL);
	g_k = g_ps ? ps_kmem_create(g_ps, &c) : NULL;
	return g_k ? 0 : -1;
}
static void psm_fini(void)
{
	ps_mem_destroy(g_m);
	g_m = NULL;
	ps_destroy(g_ps);
}
static void psk_fini(void)
{
	ps_kmem_destroy(g_k);
	g_k = NULL;
	ps_destroy(g_ps);
}
static void ps_thread_init(unsigned idx)
{
	(void)idx;
}
static void *psm_alloc(size_t size)
{
	(void)size;
	return ps_alloc(g_m);
}
static void psm_free(void *p)
{
	ps_free(g_m, p);
}
static void *psk_alloc(size_t size)
{
	return ps_kmalloc(g_k, size);
}
static void psk_free(void *p)
{
	ps_kfree(g_k, p);
}
static void psm_idle(void)
{
	ps_mem_reclaim(g_m);
}
static void psk_idle(void)
{
	ps_kmem_reclaim(g_k);
}
static void ps_lock(void)
{
	ps_enter(g_ps);
}
static void ps_unlock(void)
{
	ps_exit(g_ps);
}
static int ps_stats_now(struct ps_mem_stats *st)
{
	return g_k ? ps_kmem_stats(g_k, st) : ps_mem_stats(g_m, st);
}
static uint64_t ps_pending(void)
{
	struct ps_mem_stats st;
	return ps_stats_now(&st) == 0 ? st.pending : 0;
}
static bool ps_stats_of(struct ps_mem_stats *out)
{
	return ps_stats_now(out) == 0;
}

/* ---- glibc malloc + ps_call / ps_call_free: tsync's call_rcu, no recycling ---- */

/* The object's first 16 bytes are its struct ps_head (OBJ_MIN), as the peers keep their
 * rcu_head / ck_epoch_entry there. The callback frees it: the malloc + call_rcu pattern
 * with ParSec's reclamation (callbacks run in the freeing threads, every PS_CALL_BATCH
 * calls). Pending: ps_call_stats' queued - run (no counter in the callback). */
static void psc_free_cb(struct ps_head *h)
{
	free(h);
}
static int psc_init(size_t size, unsigned n)
{
	(void)size, (void)n;
	g_ps = ps_create(NULL);
	return g_ps ? 0 : -1;
}
static void psc_fini(void)
{
	ps_destroy(g_ps); /* runs every callback still queued (as ps_barrier) */
	g_ps = NULL;
}
static void psc_free(void *p)
{
	ps_call(g_ps, (struct ps_head *)p, psc_free_cb);
}
static void psc_free_off(void *p)
{
	ps_call_free(g_ps, (struct ps_head *)p, 0);
}
static uint64_t psc_pending(void)
{
	struct ps_call_stats st;
	return ps_call_stats(g_ps, &st) == 0 ? st.pending : 0;
}

#define RCU_ALLOC(nm, pre, wh)                                                                     \
	{                                                                                          \
		nm, pre, wh, prudence_rcu_init, prudence_rcu_fini, prudence_rcu_thread_init,       \
			prudence_rcu_thread_fini, prudence_libc_alloc, prudence_rcu_free_deferred, \
			prudence_rcu_lock, prudence_rcu_unlock, prudence_nothing, NULL,            \
			prudence__peer_pending, prudence_no_stats, 0, false, LIM_DEFAULT           \
	}

static const struct palloc allocators[] = {
	RCU_ALLOC("malloc-call-rcu", NULL, "glibc malloc + liburcu call_rcu (memb), one worker"),
	{"malloc-call-rcu-all", NULL,
	 "glibc malloc + liburcu call_rcu (memb), a worker per CPU (create_all_cpu_call_rcu_data)",
	 prudence_rcu_init_all, prudence_rcu_fini_all, prudence_rcu_thread_init,
	 prudence_rcu_thread_fini, prudence_libc_alloc, prudence_rcu_free_deferred,
	 prudence_rcu_lock, prudence_rcu_unlock, prudence_nothing, NULL, prudence__peer_pending,
	 prudence_no_stats, 0, false, LIM_DEFAULT},
	RCU_ALLOC("jemalloc-call-rcu", TSYNC_PRELOAD_JEMALLOC,
		  "jemalloc (LD_PRELOAD) + liburcu call_rcu (memb), one worker"),
	RCU_ALLOC("tcmalloc-call-rcu", TSYNC_PRELOAD_TCMALLOC,
		  "tcmalloc (gperftools, LD_PRELOAD) + liburcu call_rcu (memb), one worker"),
	RCU_ALLOC("mimalloc-call-rcu", TSYNC_PRELOAD_MIMALLOC,
		  "mimalloc (LD_PRELOAD) + liburcu call_rcu (memb), one worker"),
	{"ck-epoch", NULL, "glibc malloc + ck_epoch_call, ck_epoch_poll every 64 calls",
	 prudence_cke_init, prudence_cke_fini, prudence_cke_thread_init, prudence_cke_thread_fini,
	 prudence_libc_alloc, prudence_cke_free_deferred, prudence_cke_lock, prudence_cke_unlock,
	 prudence_cke_drain, NULL, prudence__peer_pending, prudence_no_stats, 0, false,
	 LIM_DEFAULT},
	{"ps-call", NULL, "glibc malloc + tsync ps_call, the callback free()s (no recycling)",
	 psc_init, psc_fini, ps_thread_init, prudence_nothing, prudence_libc_alloc, psc_free,
	 ps_lock, ps_unlock, prudence_nothing, NULL, psc_pending, prudence_no_stats, 0, false,
	 LIM_DEFAULT},
	{"ps-call-free", NULL, "glibc malloc + tsync ps_call_free (kfree_rcu-style, no callback)",
	 psc_init, psc_fini, ps_thread_init, prudence_nothing, prudence_libc_alloc, psc_free_off,
	 ps_lock, ps_unlock, prudence_nothing, NULL, psc_pending, prudence_no_stats, 0, false,
	 LIM_DEFAULT},
	{"ps-mem", NULL,
	 "tsync ps_mem, Prudence's policies off: one object size, ps_alloc + ps_free", psm_init,
	 psm_fini, ps_thread_init, prudence_nothing, psm_alloc, psm_free, ps_lock, ps_unlock,
	 prudence_nothing, psm_idle, ps_pending, ps_stats_of, PS_MEM_PRUDENCE_NONE, false,
	 LIM_DEFAULT},
/* Every ps_kmem row: its policies (prud), whether `--allocators ablation` runs it (abl),
 * and its memory limit (enum mem_limit; other than the default, run only when named). */
#define PSK(name, what, prud, abl, limit)                                                     \
	{                                                                                     \
		name, NULL, "tsync ps_kmem, " what, psk_init, psk_fini, ps_thread_init,       \
			prudence_nothing, psk_alloc, psk_free, ps_lock, ps_unlock,            \
			prudence_nothing, psk_idle, ps_pending, ps_stats_of, prud, abl, limit \
	}
	PSK("ps-kmem", "Prudence's policies on (the default): size classes, ps_kmalloc + ps_kfree",
	    0, false, LIM_DEFAULT),
/* The ablation: ps_kmem with every policy off, and with each one off in turn. */
#define PSK_ABL(name, what, prud) PSK(name, what, prud, true, LIM_DEFAULT)
	PSK_ABL("ps-kmem-off", "every Prudence policy off", PS_MEM_PRUDENCE_NONE),
	PSK_ABL("ps-kmem-no-latent-slab", "all but the latent-slab bound",
		PS_MEM_PRUDENCE_DEFAULT & ~PS_MEM_PRUDENCE_LATENT_SLAB),
	PSK_ABL("ps-kmem-no-partial-refill", "all but the partial refill",
		PS_MEM_PRUDENCE_DEFAULT & ~PS_MEM_PRUDENCE_PARTIAL_REFILL),
	PSK_ABL("ps-kmem-no-latent-flush", "all but the latent-aware flush",
		PS_MEM_PRUDENCE_DEFAULT & ~PS_MEM_PRUDENCE_LATENT_FLUSH),
	PSK_ABL("ps-kmem-no-preflush", "all but the pre-flush",
		PS_MEM_PRUDENCE_DEFAULT & ~PS_MEM_PRUDENCE_PREFLUSH),
	PSK_ABL("ps-kmem-no-premove", "all but slab pre-movement",
		PS_MEM_PRUDENCE_DEFAULT & ~PS_MEM_PRUDENCE_PREMOVE),
	PSK_ABL("ps-kmem-no-frag-refill", "all but the fragmentation-aware refill",
		PS_MEM_PRUDENCE_DEFAULT & ~PS_MEM_PRUDENCE_FRAG_REFILL),
	PSK("ps-kmem-max",
	    "policies on, max_bytes = 1.4 x the endurance live set: at the limit "
	    "ps_alloc waits for a grace period (only when named)",
	    0, false, LIM_MAX),
	PSK("ps-kmem-unbounded",
	    "policies on, no pending bound (pending_bound_pct = "
	    "PS_MEM_PENDING_BOUND_OFF): ParSec's rule, a new slab rather than a wait (only when "
	    "named)",
	    0, false, LIM_UNBOUNDED),
};
#define NALLOC (sizeof allocators / sizeof allocators[0])

/* Can this build run allocator a? (a preloaded library that was not found: no) */
static bool available(const struct palloc *a)
{
	return a->preload == NULL || a->preload[0] != '\0';
}

/* ==== one run (the child) ==== */

struct wthread {
	_Alignas(64) unsigned idx;
	int cpu;
	pid_t tid;
	pthread_t th;
	uint64_t ops;
	_Atomic uint64_t issued;
	uint64_t seed;
	uint64_t end_tick;
	struct hist lat;
	_Atomic(void *) *tab; /* endurance: this thread's nodes */
	int failed;           /* errno of a failed allocation */
};

struct run {
	enum workload w;
	const struct palloc *a;
	unsigned threads, readers;
	size_t size;
	unsigned nodes;
	double seconds;
	unsigned sample_ms;
	unsigned repeat;
	FILE *series;
	bool pin, pin_readers, ops_col;
};

static struct run g_run;
static _Atomic bool g_stop;
static _Atomic unsigned g_readers_in;
static pthread_barrier_t g_ready;
static _Atomic uint64_t g_shared_word;

static uint64_t issued_sum(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < g_nw; i++)
		n += atomic_load_explicit(&g_w[i].issued, memory_order_relaxed);
	return n;
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void *writer(void *arg)
{
	struct wthread *t = arg;
	const struct palloc *a = g_run.a;
	const size_t size = g_run.size;
	bench_pin_self(t->cpu);
	t->tid = gettid_();
	a->thread_init(t->idx);
	if (g_run.w == W_ENDURANCE) {
		for (unsigned i = 0; i < g_run.nodes; i++) {
			uint64_t *p = a->alloc(size);
			if (p == NULL) {
				t->failed = errno ? errno : ENOMEM;
				break;
			}
			memset(p, 0, size);
			p[2] = i;
			atomic_store_explicit(&t->tab[i], p, memory_order_release);
		}
	}
	pthread_barrier_wait(&g_ready);
	uint64_t ops = 0;
	const uint64_t last = size / 8 - 1;
	const uint64_t idle_every = tsync_ns_to_ticks(IDLE_MS * 1000000ull);
	uint64_t next_idle = tsync_now() + idle_every;
	/* at least one batch: a writer that gets its CPU only after the timed window still
	 * shows that it can allocate and free (the smoke test counts on ops >= 256) */
	for (bool first = true;
	     !t->failed && (first || !atomic_load_explicit(&g_stop, memory_order_relaxed));
	     first = false) {
		for (unsigned k = 0; k < 256; k++, ops++) {
			bool timed = ops % LAT_EVERY == 0;
			uint64_t t0 = timed ? tsync_now() : 0;
			uint64_t *p = a->alloc(size);
			if (TSYNC_UNLIKELY(p == NULL)) {
				t->failed = errno ? errno : ENOMEM;
				break;
			}
			if (g_run.w == W_PAIRS) {
				((volatile uint64_t *)p)[0] = ops;
				((volatile uint64_t *)p)[last] = ops;
				a->free_deferred(p);
			} else {
				unsigned i = (unsigned)(bench_xorshift64s(&t->seed) % g_run.nodes);
				uint64_t *old =
					atomic_load_explicit(&t->tab[i], memory_order_relaxed);
				memcpy(p + 2, old + 2, size - 16);
				p[2] = ops;
				atomic_store_explicit(&t->tab[i], p, memory_order_release);
				a->free_deferred(old);
			}
			if (timed)
				hist_add(&t->lat, tsync_now() - t0);
		}
		atomic_store_explicit(&t->issued, ops, memory_order_relaxed);
		if (a->idle && (int64_t)(tsync_now() - next_idle) >= 0) {
			a->idle(); /* outside the timed operations */
			next_idle = tsync_now() + idle_every;
		}
	}
	t->end_tick = tsync_now();
	t->ops = ops;
	atomic_store_explicit(&t->issued, ops, memory_order_relaxed);
	if (g_run.w == W_ENDURANCE) {
		/* every node goes back: the readers may still walk the table */
		for (unsigned i = 0; i < g_run.nodes; i++) {
			void *p = atomic_exchange_explicit(&t->tab[i], NULL, memory_order_acq_rel);
			if (p)
				a->free_deferred(p);
		}
	}
	a->drain();
	a->thread_fini();
	return NULL;
}

static pid_t g_rtid[MAX_THREADS];

static void *reader(void *arg)
{
	unsigned idx = (unsigned)(uintptr_t)arg;
	g_rtid[idx] = gettid_();
	const struct palloc *a = g_run.a;
	int cpus[CPU_SETSIZE];
	unsigned ncpu = g_run.pin && g_run.pin_readers ? bench_affinity_cpus(cpus) : 0;
	if (ncpu)
		bench_pin_self(cpus[(g_run.threads + idx) % ncpu]);
	a->thread_init(g_run.threads + idx);
	atomic_fetch_add(&g_readers_in, 1);
	pthread_barrier_wait(&g_ready);
	uint64_t sum = 0;
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		if (g_run.w == W_PAIRS) {
			a->read_lock();
			sum += atomic_load_explicit(&g_shared_word, memory_order_relaxed);
			a->read_unlock();
			continue;
		}
		for (unsigned w = 0; w < g_nw; w++) {
			for (unsigned i = 0; i < g_run.nodes; i += READ_CHUNK) {
				a->read_lock();
				for (unsigned j = i; j < i + READ_CHUNK && j < g_run.nodes; j++) {
					uint64_t *p = atomic_load_explicit(&g_w[w].tab[j],
									   memory_order_acquire);
					if (p)
						sum += p[2];
				}
				a->read_unlock();
			}
		}
	}
	atomic_store_explicit(&g_shared_word, sum, memory_order_relaxed);
	a->thread_fini();
	return NULL;
}

/* CPU time (ns) of every thread of this process but those in `ours`: each one's CPU
 * clock, the POSIX clock id of the task as glibc's pthread_getcpuclockid encodes it
 * (Linux ABI: per-thread, scheduler clock). A thread that ended meanwhile is skipped. */
static uint64_t others_cpu_ns(const pid_t *ours, unsigned n)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return 0;
	uint64_t sum = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		pid_t tid = (pid_t)atoi(e->d_name);
		bool mine = false;
		for (unsigned i = 0; i < n && !mine; i++)
			mine = ours[i] == tid;
		struct timespec ts;
		if (!mine && clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6u), &ts) == 0)
			sum += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	closedir(d);
	return sum;
}

/* The process's malloc is the one asked for: the library that defines `malloc`. */
static int check_preload(const struct palloc *a)
{
	if (a->preload == NULL)
		return 0;
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	const char *base = strrchr(a->preload, '/');
	base = base ? base + 1 : a->preload;
	char stem[64];
	snprintf(stem, sizeof stem, "%s", base);
	char *dot = strchr(stem, '.');
	if (dot)
		*dot = '\0';
	if (sym == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL ||
	    strstr(info.dli_fname, stem) == NULL) {
		fprintf(stderr, WHO ": %s: malloc is not %s's (is it %s?)\n", a->name, stem,
			sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "unknown");
		return -1;
	}
	return 0;
}

/* Run one configuration in this process; print its CSV row (no workload prefix for the
 * parent to add: the whole row). Returns the exit status. */
static int child_run(void)
{
	const struct palloc *a = g_run.a;
	if (check_preload(a) != 0)
		return 1;
	if (tsync_clock_init() != 0) {
		fprintf(stderr, WHO ": clock init failed\n");
		return 1;
	}
	unsigned nthr = g_run.threads + g_run.readers;
	g_prudence = a->prudence;
	g_limit = a->limit;
	g_bounded_nodes = (uint64_t)g_run.nodes * g_run.threads;
	if (a->init(g_run.size, nthr) != 0) {
		fprintf(stderr, WHO ": %s: init failed: %s\n", a->name, strerror(errno));
		return 1;
	}
	g_nw = g_run.threads;
	prudence__issued = issued_sum; /* the peers' pending count (peers/peer.h) */
	g_w = aligned_alloc(64, g_nw * sizeof *g_w);
	if (g_w == NULL)
		return 1;
	memset(g_w, 0, g_nw * sizeof *g_w);
	int cpus[CPU_SETSIZE];
	unsigned ncpu = bench_affinity_cpus(cpus);
	pthread_barrier_init(&g_ready, NULL, nthr + 1);
	for (unsigned i = 0; i < g_nw; i++) {
		struct wthread *t = &g_w[i];
		t->idx = i;
		t->cpu = ncpu && g_run.pin ? cpus[i % ncpu] : -1;
		t->seed = 0x9e3779b97f4a7c15ull * (i + 1);
		if (g_run.w == W_ENDURANCE) {
			t->tab = calloc(g_run.nodes, sizeof *t->tab);
			if (t->tab == NULL)
				return 1;
		}
		if (pthread_create(&t->th, NULL, writer, t) != 0)
			return 1;
	}
	pthread_t rth[MAX_THREADS];
	for (unsigned i = 0; i < g_run.readers; i++)
		if (pthread_create(&rth[i], NULL, reader, (void *)(uintptr_t)i) != 0)
			return 1;
	pthread_barrier_wait(&g_ready);
	/* every thread has its tid and its initial nodes: time starts. The helpers' CPU
	 * time is that of every thread not in ours[] (call_rcu workers). */
	pid_t ours[2 * MAX_THREADS + 1];
	unsigned nours = 0;
	ours[nours++] = gettid_();
	for (unsigned i = 0; i < g_nw; i++)
		ours[nours++] = g_w[i].tid;
	for (unsigned i = 0; i < g_run.readers; i++)
		ours[nours++] = g_rtid[i];
	uint64_t start_ns = bench_mono_ns(), start_tick = tsync_now();
	uint64_t helper0 = others_cpu_ns(ours, nours);
	uint64_t deadline = start_ns + (uint64_t)(g_run.seconds * 1e9);
	bool failed = false;
	unsigned samples = 0;
	for (;;) {
		uint64_t now = bench_mono_ns();
		if (now >= deadline)
			break;
		uint64_t step = g_run.sample_ms ? g_run.sample_ms * 1000000ull : deadline - now;
		if (step > deadline - now)
			step = deadline - now;
		struct timespec nap = {(time_t)(step / 1000000000u), (long)(step % 1000000000u)};
		nanosleep(&nap, NULL);
		if (g_run.series) {
			fprintf(g_run.series, "%s,%u,%u,%zu,%u,%.3f,%" PRIu64 ",%" PRIu64 "\n",
				a->name, g_run.threads, g_run.readers, g_run.size, g_run.repeat,
				(double)(bench_mono_ns() - start_ns) / 1e9, bench_rss_kib(),
				a->pending());
			fflush(g_run.series);
			samples++;
		}
		for (unsigned i = 0; i < g_nw; i++)
			failed |= g_w[i].failed != 0;
		if (failed)
			break;
	}
	/* every run has a sample, even one whose main thread got no CPU until the end */
	if (g_run.series && samples == 0) {
		fprintf(g_run.series, "%s,%u,%u,%zu,%u,%.3f,%" PRIu64 ",%" PRIu64 "\n", a->name,
			g_run.threads, g_run.readers, g_run.size, g_run.repeat,
			(double)(bench_mono_ns() - start_ns) / 1e9, bench_rss_kib(), a->pending());
		fflush(g_run.series);
	}
	atomic_store(&g_stop, true);
	/* the allocator's own measures at the end of the timed window (ps_mem only) */
	struct ps_mem_stats st;
	bool has_stats = a->mem_stats(&st);
	uint64_t helper1 = others_cpu_ns(ours, nours);
	uint64_t stop_ns = bench_mono_ns();
	for (unsigned i = 0; i < g_nw; i++)
		pthread_join(g_w[i].th, NULL);
	for (unsigned i = 0; i < g_run.readers; i++)
		pthread_join(rth[i], NULL);

	uint64_t ops = 0, end_tick = start_tick;
	struct hist *lat = calloc(1, sizeof *lat);
	if (lat == NULL)
		return 1;
	for (unsigned i = 0; i < g_nw; i++) {
		ops += g_w[i].ops;
		if (g_w[i].end_tick > end_tick)
			end_tick = g_w[i].end_tick;
		hist_merge(lat, &g_w[i].lat);
		failed |= g_w[i].failed != 0;
	}
	double wall_s = (double)tsync_ticks_to_ns(end_tick - start_tick) / 1e9;
	double helper_pct = 100.0 * (double)(helper1 - helper0) / (double)(stop_ns - start_ns);
	char mem_s[160] = ",,,,,";
	if (has_stats) {
		snprintf(mem_s, sizeof mem_s,
			 "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			 st.slab_churn, st.allocs, st.cache_hits, st.merge_hits, st.frees,
			 st.frees_now);
		/* for the parent's endurance_runs.csv (Prudence's Figs. 8-11 measures) */
		/* the slab size of the run's class: one size per run, so one class */
		size_t slab = g_k   ? ps_mem_slab_size(ps_kmem_class(
					      g_k, (unsigned)ps_kmem_class_of(g_k, g_run.size)))
			      : g_m ? ps_mem_slab_size(g_m)
				    : 0;
		printf("#stats %" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64
		       ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		       st.cache_churn, st.cache_misses, st.peak_slabs,
		       st.live_bytes ? (double)st.slab_bytes / (double)st.live_bytes : 0.0,
		       st.peak_slabs * (uint64_t)slab / 1024, st.preflushed, st.slab_premoves,
		       st.alloc_waits, st.wait_timeouts);
	}
	char ops_s[32] = "";
	if (g_run.ops_col && !failed)
		snprintf(ops_s, sizeof ops_s, ",%" PRIu64, ops);
	else if (g_run.ops_col)
		snprintf(ops_s, sizeof ops_s, ",");
	if (failed) {
		printf("%s,%s,%u,%u,%zu,,,,,%.1f,,%s%s\n", workload_name[g_run.w], a->name,
		       g_run.threads, g_run.readers, g_run.size, helper_pct, mem_s, ops_s);
	} else {
		printf("%s,%s,%u,%u,%zu,%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,,%s%s\n",
		       workload_name[g_run.w], a->name, g_run.threads, g_run.readers, g_run.size,
		       wall_s > 0 ? (double)ops / wall_s / 1e6 : 0.0,
		       tsync_ticks_to_ns(hist_quantile(lat, 0.50)),
		       tsync_ticks_to_ns(hist_quantile(lat, 0.99)),
		       tsync_ticks_to_ns(hist_quantile(lat, 0.999)), helper_pct, mem_s, ops_s);
	}
	fflush(stdout);
	free(lat);
	a->fini();
	for (unsigned i = 0; i < g_nw; i++)
		free(g_w[i].tab);
	free(g_w);
	pthread_barrier_destroy(&g_ready);
	return failed ? EXIT_ENOMEM : 0;
}

/* ==== the parent: one child per run ==== */

struct opts {
	enum workload w;
	unsigned alloc[NALLOC], nalloc;
	unsigned sizes[MAX_LIST], nsizes;
	unsigned threads[MAX_LIST], nthreads;
	unsigned readers[MAX_LIST], nreaders;
	double seconds;
	unsigned repeat, nodes, sample_ms, limit_mib;
	const char *csv, *out;
	bool pin, pin_readers, ops_col;
};

/* Insert `val` as field `idx` (0-based) of the CSV row, whose field idx is empty. */
static void row_set_field(char *row, size_t cap, unsigned idx, const char *val)
{
	char *p = row;
	for (unsigned i = 0; i < idx && p; i++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (p == NULL)
		return;
	size_t vl = strlen(val), rl = strlen(row);
	if (rl + vl + 1 > cap)
		return;
	memmove(p + vl, p, strlen(p) + 1);
	memcpy(p, val, vl);
}

struct outcome {
	char row[512];
	char stats[160];  /* cache_churn,cache_misses,peak_slabs,ft,peak_slab_kib,preflushed,
			   * slab_premoves,alloc_waits,wait_timeouts, or ",,,,,,,," */
	const char *what; /* ok, killed-oom, enomem, failed */
	double wall_s;
};

/* One run in a child process. */
static int spawn_run(const struct opts *o, const struct palloc *a, unsigned size, unsigned threads,
		     unsigned readers, unsigned rep, const char *series, unsigned serial,
		     struct outcome *res)
{
	char a_size[16], a_thr[16], a_rd[16], a_sec[32], a_nodes[16], a_ms[16], a_rep[16];
	snprintf(a_size, sizeof a_size, "%u", size);
	snprintf(a_thr, sizeof a_thr, "%u", threads);
	snprintf(a_rd, sizeof a_rd, "%u", readers);
	snprintf(a_sec, sizeof a_sec, "%.17g", o->seconds);
	snprintf(a_nodes, sizeof a_nodes, "%u", o->nodes);
	snprintf(a_ms, sizeof a_ms, "%u", series ? o->sample_ms : 0);
	snprintf(a_rep, sizeof a_rep, "%u", rep);
	char *argv[32];
	unsigned n = 0;
	argv[n++] = "tsync-bench";
	argv[n++] = "prudence";
	argv[n++] = (char *)workload_name[o->w];
	argv[n++] = "--child";
	argv[n++] = "--allocators";
	argv[n++] = (char *)a->name;
	argv[n++] = "--sizes";
	argv[n++] = a_size;
	argv[n++] = "--threads";
	argv[n++] = a_thr;
	argv[n++] = "--readers";
	argv[n++] = a_rd;
	argv[n++] = "--seconds";
	argv[n++] = a_sec;
	argv[n++] = "--nodes";
	argv[n++] = a_nodes;
	argv[n++] = "--sample-ms";
	argv[n++] = a_ms;
	argv[n++] = "--repeat-index";
	argv[n++] = a_rep;
	if (series) {
		argv[n++] = "--series";
		argv[n++] = (char *)series;
	}
	if (!o->pin)
		argv[n++] = "--no-pin";
	if (!o->pin_readers)
		argv[n++] = "--no-pin-readers";
	if (o->ops_col)
		argv[n++] = "--ops-column";
	argv[n] = NULL;

	char cg[4300] = "";
	if (o->limit_mib &&
	    bench_cgroup_make(WHO, "tsync-prudence", o->limit_mib, serial, cg, sizeof cg) != 0)
		return -1;
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	uint64_t t0 = bench_mono_ns();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		if (cg[0]) {
			if (bench_cgroup_enter(cg) != 0) {
				fprintf(stderr, WHO ": cannot enter %s: %s\n", cg, strerror(errno));
				_exit(126);
			}
		}
		if (a->preload)
			setenv("LD_PRELOAD", a->preload, 1);
		execv("/proc/self/exe", argv);
		fprintf(stderr, WHO ": exec /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	/* A run may not hang the study: a child frozen in its cgroup (an OOM killer that
	 * is disabled there) or stuck is killed at seconds + 120 s. */
	uint64_t kill_at = t0 + (uint64_t)((o->seconds + 120.0) * 1e9);
	bool timed_out = false;
	char buf[4096];
	size_t len = 0;
	for (;;) {
		uint64_t now = bench_mono_ns();
		struct pollfd pf = {pfd[0], POLLIN, 0};
		int pr = now >= kill_at ? 0 : poll(&pf, 1, (int)((kill_at - now) / 1000000u) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0 && bench_mono_ns() >= kill_at) {
			fprintf(stderr, WHO ": %s: no end after %.0f s, killed\n", a->name,
				o->seconds + 120.0);
			kill(pid, SIGKILL);
			timed_out = true;
			break;
		}
		if (pr == 0)
			continue;
		ssize_t r = read(pfd[0], buf + len, sizeof buf - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof buf - 1)
			break;
	}
	close(pfd[0]);
	buf[len] = '\0';
	int status = 0;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	res->wall_s = (double)(bench_mono_ns() - t0) / 1e9;
	if (cg[0])
		bench_cgroup_remove(cg);
	snprintf(res->stats, sizeof res->stats, ",,,,,,,,");
	char *st = strstr(buf, "#stats ");
	if (st) {
		size_t sl = strcspn(st + 7, "\n");
		if (sl < sizeof res->stats) {
			memcpy(res->stats, st + 7, sl);
			res->stats[sl] = '\0';
		}
	}
	/* the row: the child's last line */
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	char *line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	if (timed_out)
		res->what = "timeout";
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		res->what = "ok";
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_ENOMEM)
		res->what = "enomem";
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && o->limit_mib)
		res->what = "killed-oom";
	else
		res->what = "failed";
	if (strncmp(line, workload_name[o->w], strlen(workload_name[o->w])) != 0) {
		/* no row: a run that died; what is known */
		snprintf(res->row, sizeof res->row, "%s,%s,%u,%u,%u,,,,,,,,,,,,%s",
			 workload_name[o->w], a->name, threads, readers, size,
			 o->ops_col ? "," : "");
	} else {
		size_t ll = strlen(line);
		if (ll >= sizeof res->row)
			ll = sizeof res->row - 1;
		memcpy(res->row, line, ll);
		res->row[ll] = '\0';
	}
	char rss[32];
	snprintf(rss, sizeof rss, "%ld", ru.ru_maxrss);
	row_set_field(res->row, sizeof res->row, 10, rss);
	if (strcmp(res->what, "failed") == 0 || timed_out) {
		fprintf(stderr, WHO ": %s run failed (%s %d)\n", a->name,
			WIFSIGNALED(status) ? "signal" : "exit status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		if (o->limit_mib == 0)
			return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsync-bench prudence pairs|endurance [options]\n"
		"  --allocators LIST  comma-separated names; all: every peer this build has (the\n"
		"                     default); ablation: ps-kmem and its variants with policies "
		"off\n"
		"  --sizes LIST       object bytes, 16..65536 (pairs: 16,64,256,1024,4096;\n"
		"                     endurance: 512)\n"
		"  --threads LIST     allocating threads (default 1,2)\n"
		"  --readers LIST     reader threads in read-side sections (default 0,1)\n"
		"  --seconds S        timed seconds per run (pairs 1, endurance 60)\n"
		"  --repeat R         runs per configuration, interleaved (pairs 3, endurance 1)\n"
		"  --nodes N          endurance: nodes per thread (default 16384)\n"
		"  --sample-ms MS     endurance: RSS sampling period (default 10)\n"
		"  --limit-mib M      endurance: run each child in a memory cgroup of M MiB\n"
		"  --pin / --no-pin   pin writer i to the i-th allowed CPU and the readers to the\n"
		"                     next ones (default --pin)\n"
		"  --no-pin-readers   with --pin, pin the writers only: the readers run where the\n"
		"                     scheduler puts them (--pin-readers: the default)\n"
		"  --ops-column       append a column ops: the operations of all writers\n"
		"  --csv FILE|-       rows to FILE (default: stdout unless --out)\n"
		"  --out DIR          DIR/<workload>.csv (and endurance's series), then plots\n"
		"  --list             name the allocators\n"
		"CSV: " CSV_HEADER "\n");
}

/* bench_names' check: refuses an allocator whose preloaded library was not found. */
static int check_available(unsigned i, const char *item)
{
	if (available(&allocators[i]))
		return 0;
	fprintf(stderr,
		WHO ": %s: its library was not found when tsync-bench was "
		    "built (apt-get install libjemalloc-dev "
		    "libgoogle-perftools-dev libmimalloc-dev)\n",
		item);
	return -1;
}

static const struct bench_names allocator_names = {
	.what = "allocator",
	.hint = "--list names them",
	BENCH_NAMES_OF(allocators, name),
	.check = check_available,
};

static int parse_allocators(const char *arg, struct opts *o)
{
	bool all = strcmp(arg, "all") == 0, abl = strcmp(arg, "ablation") == 0;
	if (all || abl) {
		o->nalloc = 0;
		for (unsigned i = 0; i < NALLOC; i++)
			if (available(&allocators[i]) && allocators[i].limit == LIM_DEFAULT &&
			    (all ? !allocators[i].ablation
				 : allocators[i].ablation ||
					     strcmp(allocators[i].name, "ps-kmem") == 0))
				o->alloc[o->nalloc++] = i;
		return 0;
	}
	return bench_name_list(WHO, &allocator_names, arg, o->alloc, &o->nalloc, NALLOC);
}

static int opt_allocators(const char *arg, void *ctx)
{
	return parse_allocators(arg, ctx) == 0 ? 0 : -1;
}

int prudence_main(int argc, char **argv, const char *cmdline)
{
	(void)cmdline;
	struct opts o;
	memset(&o, 0, sizeof o);
	bool child = false, list = false;
	const char *series = NULL;
	unsigned rep_index = 0;
	int wi = -1;
	if (argc >= 2 && argv[1][0] != '-') {
		for (int i = 0; i < 2; i++)
			if (strcmp(argv[1], workload_name[i]) == 0)
				wi = i;
		if (wi < 0) {
			fprintf(stderr, WHO ": unknown workload '%s' (pairs or endurance)\n",
				argv[1]);
			return 2;
		}
		argc--;
		argv++;
	}
	o.w = wi == 1 ? W_ENDURANCE : W_PAIRS;
	o.seconds = 0;
	o.repeat = 0;
	o.nodes = 16384;
	o.sample_ms = 10;
	o.pin = true;
	o.pin_readers = true;
	parse_allocators("all", &o);
	const struct bench_opt opts[] = {
		BENCH_O_FN("allocators", 0, BENCH_OPT_CALL, opt_allocators),
		BENCH_O_LIST("sizes", 0, BENCH_OPT_UINTS, o.sizes, &o.nsizes, OBJ_MIN, 65536, 0),
		BENCH_O_LIST("threads", 0, BENCH_OPT_UINTS, o.threads, &o.nthreads, 1, MAX_THREADS,
			     0),
		BENCH_O_LIST("readers", 0, BENCH_OPT_UINTS, o.readers, &o.nreaders, 0, MAX_THREADS,
			     0),
		BENCH_O_DBL("seconds", 0, BENCH_OPT_SECONDS, &o.seconds, 86400),
		BENCH_O_NUM("repeat", 0, BENCH_OPT_UINT, &o.repeat, 1, 100000),
		BENCH_O_NUM("nodes", 0, BENCH_OPT_UINT, &o.nodes, 1, 1u << 24),
		BENCH_O_NUM("sample-ms", 0, BENCH_OPT_UINT, &o.sample_ms, 0, 100000),
		BENCH_O_NUM("limit-mib", 0, BENCH_OPT_UINT, &o.limit_mib, 1, 1u << 20),
		BENCH_O_STR("csv", 0, &o.csv),
		BENCH_O_STR("out", 0, &o.out),
		BENCH_O_SET("list", 0, &list),
		BENCH_O_SET("child", 0, &child),
		BENCH_O_STR("series", 0, &series),
		BENCH_O_NUM("repeat-index", 0, BENCH_OPT_UINT, &rep_index, 0, 100000),
		BENCH_O_SET("pin", 0, &o.pin),
		BENCH_O_CLEAR("no-pin", 0, &o.pin),
		BENCH_O_SET("pin-readers", 0, &o.pin_readers),
		BENCH_O_CLEAR("no-pin-readers", 0, &o.pin_readers),
		BENCH_O_SET("ops-column", 0, &o.ops_col),
		BENCH_O_END,
	};
	int prc = bench_getopt(WHO, argc, argv, opts, usage, &o);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	bool have_sizes = o.nsizes > 0, have_thr = o.nthreads > 0, have_rd = o.nreaders > 0;
	if (list) {
		for (unsigned i = 0; i < NALLOC; i++)
			printf("%-26s %s%s%s\n", allocators[i].name, allocators[i].what,
			       allocators[i].limit      ? " [by name only]"
			       : allocators[i].ablation ? " [in --allocators ablation]"
							: "",
			       available(&allocators[i]) ? "" : " [not built: library not found]");
		return 0;
	}
	if (wi < 0) {
		usage(stderr);
		return 2;
	}
	if (!have_sizes) {
		static const unsigned pair_sizes[] = {16, 64, 256, 1024, 4096};
		if (o.w == W_PAIRS) {
			memcpy(o.sizes, pair_sizes, sizeof pair_sizes);
			o.nsizes = 5;
		} else {
			o.sizes[0] = 512;
			o.nsizes = 1;
		}
	}
	if (!have_thr) {
		o.threads[0] = 1;
		o.threads[1] = 2;
		o.nthreads = 2;
	}
	if (!have_rd) {
		o.readers[0] = 0;
		o.readers[1] = 1;
		o.nreaders = 2;
	}
	if (o.seconds == 0)
		o.seconds = o.w == W_PAIRS ? 1.0 : 60.0;
	if (o.repeat == 0)
		o.repeat = o.w == W_PAIRS ? 3 : 1;

	if (child) {
		if (o.nalloc != 1 || o.nsizes != 1 || o.nthreads != 1 || o.nreaders != 1) {
			fprintf(stderr, WHO ": --child runs one configuration\n");
			return 2;
		}
		g_run.w = o.w;
		g_run.a = &allocators[o.alloc[0]];
		g_run.size = o.sizes[0];
		g_run.threads = o.threads[0];
		g_run.readers = o.readers[0];
		g_run.nodes = o.nodes;
		g_run.seconds = o.seconds;
		g_run.sample_ms = o.sample_ms;
		g_run.repeat = rep_index;
		g_run.pin = o.pin;
		g_run.pin_readers = o.pin_readers;
		g_run.ops_col = o.ops_col;
		if (series) {
			g_run.series = fopen(series, "a");
			if (g_run.series == NULL) {
				fprintf(stderr, WHO ": %s: %s\n", series, strerror(errno));
				return 1;
			}
		}
		int rc = child_run();
		if (g_run.series)
			fclose(g_run.series);
		return rc;
	}

	/* the parent */
	char name[64], *spath = NULL;
	snprintf(name, sizeof name, "%s.csv", workload_name[o.w]);
	struct bench_csv out;
	if (bench_csv_open(&out, WHO, o.csv, o.out, name,
			   o.ops_col ? CSV_HEADER OPS_COLUMN : CSV_HEADER) != 0)
		return 1;
	FILE *runs = NULL;
	if (o.out && o.w == W_ENDURANCE) {
		FILE *sf =
			bench_out_open(WHO, o.out, "endurance_series.csv", SERIES_HEADER, &spath);
		if (sf)
			fclose(sf);
		if (!sf ||
		    !(runs = bench_out_open(WHO, o.out, "endurance_runs.csv", RUNS_HEADER, NULL))) {
			free(spath);
			bench_csv_close(&out);
			return 1;
		}
	}
	int rc = 0;
	unsigned serial = 0;
	for (unsigned r = 0; r < o.repeat && rc == 0; r++)
		for (unsigned s = 0; s < o.nsizes && rc == 0; s++)
			for (unsigned t = 0; t < o.nthreads && rc == 0; t++)
				for (unsigned d = 0; d < o.nreaders && rc == 0; d++)
					for (unsigned ai = 0; ai < o.nalloc && rc == 0; ai++) {
						const struct palloc *a = &allocators[o.alloc[ai]];
						struct outcome res;
						fprintf(stderr,
							WHO ": %s %s size %u threads %u readers %u "
							    "(repeat %u/%u)\n",
							workload_name[o.w], a->name, o.sizes[s],
							o.threads[t], o.readers[d], r + 1,
							o.repeat);
						if (spawn_run(&o, a, o.sizes[s], o.threads[t],
							      o.readers[d], r, spath, serial++,
							      &res) != 0) {
							rc = 1;
							break;
						}
						bench_csv_printf(&out, "%s\n", res.row);
						if (runs) {
							fprintf(runs,
								"%s,%u,%u,%u,%u,%llu,%u,%s,%.2f,%"
								"s\n",
								a->name, o.threads[t], o.readers[d],
								o.sizes[s], r,
								(unsigned long long)o.threads[t] *
									o.nodes * o.sizes[s] /
									1024u,
								o.limit_mib, res.what, res.wall_s,
								res.stats);
							fflush(runs);
						}
					}
	bench_csv_close(&out);
	free(spath);
	if (runs)
		fclose(runs);
	if (rc == 0 && o.out)
		rc = bench_plot_dir(WHO, TSYNC_PRUDENCE_PLOT_PY, o.out);
	return rc;
}
