/*
 * src/ps.c - ParSec quiescence (ParSec (EuroSys 2016) §3.2-3.3) and the read barrier
 * that lets the read path go without a fence (docs/design.md §2). The inline read path
 * (ps_enter, ps_exit) is in include/tsync/ps.h; the argument for why no reader can
 * observe reused memory is in docs/design.md §2; tests/model/ps.pml checks it.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tsync/ps.h>
#include "ps_internal.h"
#include "registry.h"
#include "tdir.h"
#include "util.h"
#include "wait.h"

/* ps's directory of slots is a src/tdir.h directory whose layout <tsync/ps.h> spells out
 * for the inline ps_enter/ps_exit (a public header cannot include tdir.h): the same
 * chunking, and a chunk is an array of records. */
_Static_assert(PS__CHUNK_SHIFT == TSYNC__CHUNK_SHIFT, "ps chunks are tdir chunks");
_Static_assert(sizeof(struct ps__chunk) == TSYNC__CHUNK * sizeof(struct ps__slot),
	       "a ps chunk is TSYNC__CHUNK slots");
_Static_assert(sizeof(struct ps__slot) == TSYNC_CACHE_LINE, "one slot per cache line");

struct ps {
	struct ps__head head; /* first: the inline fast path casts struct ps * to it */
	unsigned nchunks;
	int policy;             /* enum ps_policy */
	uint64_t skew;          /* clock skew bound + cfg->skew_margin + 1 */
	uint64_t grace;         /* PS_POLICY_TEMPORAL: grace period in ticks */
	uint64_t interval;      /* GENERAL: the read interval in ticks */
	int path;               /* enum ps_read_path, fixed at creation */
	struct ps_calls *calls; /* ps_call's queues (src/ps_call.c) */
	struct tsync__client client;
	/* Written by reclaimers, on a line of their own (the head line is the readers'). */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t
		bar_time;             /* newest read barrier's time:
				       * a reading taken before its membarrier; 0: none yet */
	_Atomic uint64_t bar_next;    /* a rate-limited barrier may start at this time */
	_Atomic uint64_t clock_next;  /* a rate-limited clock advance may happen at this time */
	_Atomic uint64_t bar_cost;    /* ticks a read barrier took, moving average */
	_Atomic unsigned fence_ready; /* scans may date their loads by a reading before them:
				       * readers fence (docs/design.md §2.6) */
	_Atomic unsigned switching;   /* a mode switch is in progress */
	_Atomic uint64_t fence_until; /* the fence mode's lease ends at this time */
};
_Static_assert(offsetof(struct ps, head) == 0, "the head is the first line");

/* What a quiescer last read of another thread's slot, and when (optimisation 3). */
struct ps_view {
	uint64_t state; /* the state word read */
	uint64_t at;    /* the time it stands for: the read barrier's time (or, with
			 * PS_READ_FENCE, the reading taken before the load) */
};
/* A quiescer's private state, hung off its own slot (owner only). */
struct ps_qcache {
	struct ps_stats stats;
	int blocker;            /* thread that made the last failed quiescence fail, or -1 */
	uint64_t blocker_enter; /* ... and the enter time of its section */
	void *_Atomic views[];  /* tdir directory of struct ps_view (nchunks entries) */
};

static void slot_chunk_init(void *chunk, void *arg)
{
	(void)arg;
	struct ps__chunk *c = chunk;
	for (unsigned i = 0; i < PS__CHUNK; i++)
		atomic_store_explicit(&c->slot[i].state, 0, memory_order_relaxed); /* outside */
}

_Thread_local uint64_t tsync__ps_key __attribute__((tls_model("initial-exec")));
_Thread_local struct ps__slot *tsync__ps_slot __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t next_key = 1;

/* ps__slot's miss: the caller's slot in ps through its id (registering it lazily), which
 * then becomes its cached one. A thread whose records were not allocated up front
 * (lazily registered, <tsync/thread.h>) allocates its slot at its first use of ps;
 * ps_enter cannot return an error, so a failed allocation aborts. */
struct ps__slot *ps__slot_miss(struct ps *ps)
{
	unsigned tid = tsync__self();
	struct ps__slot *s =
		tsync__tdir_at((void *_Atomic *)ps->head.chunks, tid, sizeof(struct ps__slot));
	if (s == NULL) {
		s = tsync__tdir_get((void *_Atomic *)ps->head.chunks, tid, sizeof(struct ps__slot),
				    slot_chunk_init, NULL);
		if (s == NULL)
			tsync__fatal("out of memory allocating parallel-section records (a thread "
				     "registered with tsync_thread_register() has them allocated "
				     "up front)");
	}
	tsync__ps_slot = s;
	tsync__ps_key = ps->head.key;
	return s;
}

static inline uint64_t enc(const struct ps *ps, uint64_t t);

void ps__exit_unbalanced(void)
{
	tsync__fatal("ps_exit without a matching ps_enter");
}

/* PS_READ_COUNTER: the section's start is a counter reading taken now, after the store
 * of the clock word's (an earlier, so conservative, start that a scanner may see
 * meanwhile), then a full fence: the start the RT analysis assumes (docs/rt.md §2). */
void ps__enter_counter(struct ps *ps, struct ps__slot *s)
{
	atomic_store_explicit(&s->state, enc(ps, tsync_now()) | 1, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
}

void ps__enter_too_deep(void)
{
	tsync__fatal("ps_enter nested more than %u deep", PS__DEPTH_MASK);
}

static struct ps__slot *slot_if_exists(struct ps *ps, unsigned tid)
{
	return tsync__tdir_at((void *_Atomic *)ps->head.chunks, tid, sizeof(struct ps__slot));
}

/* Registry hook: the exiting thread closes its sections (it can hold no references
 * any more) and forgets its statistics; its caches stay with the id (still true). */
static void ps_thread_exit(struct tsync__client *c, unsigned tid)
{
	struct ps *ps = (struct ps *)((char *)c - offsetof(struct ps, client));
	/* runs in the exiting thread: its cached slot is its id's, not its own any more */
	tsync__ps_key = 0;
	tsync__ps_slot = NULL;
	struct ps__slot *s = slot_if_exists(ps, tid);
	if (s == NULL)
		return;
	uint64_t w = atomic_load_explicit(&s->state, memory_order_relaxed);
	if (w & PS__DEPTH_MASK)
		atomic_store_explicit(&s->state, w & ~(uint64_t)PS__DEPTH_MASK,
				      memory_order_release);
	struct ps_qcache *qc = s->qcache;
	if (qc)
		memset(&qc->stats, 0, sizeof(qc->stats));
}

/* Registry hook: an explicitly registered thread's slot and quiescence cache, allocated
 * up front so that its ps_enter and ps_quiesce never allocate. */
static int ps_thread_prepare(struct tsync__client *c, unsigned tid)
{
	return ps__thread_prepare((struct ps *)((char *)c - offsetof(struct ps, client)), tid);
}

static void qcache_free(void *slot, void *arg)
{
	struct ps *ps = arg;
	struct ps_qcache *qc = ((struct ps__slot *)slot)->qcache;
	if (qc == NULL)
		return;
	tsync__tdir_free_chunks(qc->views, ps->nchunks);
	free(qc);
}

/* Free what ps__new made (the slots, the quiescence caches, ps); ps_call's queues are
 * ps_life.c's to free. */
void ps__delete(struct ps *ps)
{
	tsync__tdir_each((void *_Atomic *)ps->head.chunks, ps->nchunks, sizeof(struct ps__slot),
			 qcache_free, ps);
	tsync__tdir_free_chunks((void *_Atomic *)ps->head.chunks, ps->nchunks);
	free(ps->head.chunks);
	free(ps);
}

struct ps_calls *ps__calls(struct ps *ps)
{
	return ps->calls;
}

void ps__set_calls(struct ps *ps, struct ps_calls *calls)
{
	ps->calls = calls;
}

struct tsync__client *ps__client(struct ps *ps)
{
	return &ps->client;
}

struct ps *ps__of_client(struct tsync__client *c)
{
	return (struct ps *)((char *)c - offsetof(struct ps, client));
}

/* ---- the read barrier's system call ------------------------------------------------ */

static int sys_membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0u, 0);
}

/* Register the process for private expedited membarriers, once: 1 registered, 0 not
 * available (no such command, a seccomp filter, or TSYNC_MEMBARRIER=0). */
static int membarrier_state; /* under membarrier_once */
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

static void membarrier_init(void)
{
	const char *env = getenv("TSYNC_MEMBARRIER");
	if (env && strcmp(env, "0") == 0)
		return;
	int cmds = sys_membarrier(MEMBARRIER_CMD_QUERY);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return;
	if (sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		return;
	membarrier_state = 1;
}

static bool membarrier_ready(void)
{
	pthread_once(&membarrier_once, membarrier_init);
	return membarrier_state == 1;
}

/* membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every thread of the process that runs
 * now executes a full barrier before this returns (one that does not run passes one when
 * it is next scheduled). A process whose registration the kernel forgot (a fork child:
 * registration belongs to the address space) registers again; if the kernel still
 * refuses, MEMBARRIER_CMD_GLOBAL gives the same guarantee slowly (it waits for a
 * scheduler grace period); if that fails too, no barrier is possible and readers could
 * be unsafe: abort. */
static void read_membarrier(void)
{
	if (TSYNC_LIKELY(sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0))
		return;
	if (sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
	    sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return;
	if (sys_membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
		return;
	tsync__fatal("membarrier failed (%s): parallel sections cannot be reclaimed safely",
		     strerror(errno));
}

/* ---- fork (docs/design.md §8) ------------------------------------------------------- */

/* The child's part for the sections (ps_life.c's fork_child hook calls it): close the
 * sections of the threads that are not there (their slots are never used again: the ids
 * are retired), let go of a mode switch one of them had begun (the switch's steps are
 * each safe to stop after: docs/design.md §2.6), and register for membarriers again. */
void ps__fork_child_sections(struct ps *ps, const unsigned char *ids, unsigned n)
{
	unsigned pos = 0;
	for (struct ps__slot *s;
	     (s = tsync__tdir_next((void *_Atomic *)ps->head.chunks, ps->nchunks,
				   sizeof(struct ps__slot), &pos)) != NULL;) {
		unsigned id = pos - 1;
		if (id < n && ids[id] == TSYNC__ID_VANISHED) {
			uint64_t w = atomic_load_explicit(&s->state, memory_order_relaxed);
			atomic_store_explicit(&s->state, w & ~(uint64_t)PS__DEPTH_MASK,
					      memory_order_release);
		}
	}
	atomic_store_explicit(&ps->switching, 0, memory_order_release);
	if (ps->path == PS_READ_MEMBARRIER)
		(void)sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

/* Raise a monotonic word to v (CAS loop; words only grow). */
static void raise_to(_Atomic uint64_t *w, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(w, memory_order_relaxed);
	while (cur < v && !atomic_compare_exchange_weak_explicit(w, &cur, v, memory_order_release,
								 memory_order_relaxed))
		;
}

/* A new instance for cfg (checked first), with its thread hooks set, without ps_call's
 * queues (ps_life.c's ps_create attaches them) and not yet in the registry; NULL with
 * errno = EINVAL or ENOMEM. */
struct ps *ps__new(const struct ps_config *cfg)
{
	struct ps_config def = PS_CONFIG_INIT;
	if (cfg == NULL)
		cfg = &def;
	if (cfg->size < sizeof(size_t) || cfg->size > 4096) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_config c = def;
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	if ((c.policy != PS_POLICY_GENERAL && c.policy != PS_POLICY_RT &&
	     c.policy != PS_POLICY_TEMPORAL) ||
	    ((c.policy == PS_POLICY_TEMPORAL) != (c.grace_ns != 0)) ||
	    (c.policy != PS_POLICY_GENERAL && c.read_interval_ns != 0)) {
		errno = EINVAL;
		return NULL;
	}

	tsync_clock_init();
	struct ps *ps = aligned_alloc(TSYNC_CACHE_LINE, sizeof(*ps));
	if (ps == NULL)
		return NULL;
	memset(ps, 0, sizeof(*ps));
	ps->nchunks = tsync__chunk_count();
	ps->head.chunks = calloc(ps->nchunks, sizeof(*ps->head.chunks));
	if (ps->head.chunks == NULL) {
		free(ps);
		errno = ENOMEM;
		return NULL;
	}
	/* One tick of margin beyond the measured bound: the comparisons are strict. */
	ps->skew = tsync_clock_skew() + c.skew_margin + 1;
	ps->policy = c.policy;
	if (c.policy == PS_POLICY_TEMPORAL) {
		ps->grace = tsync_ns_to_ticks(c.grace_ns);
		if (ps->grace == 0)
			ps->grace = 1;
	}
	if (c.policy == PS_POLICY_GENERAL) {
		ps->path = membarrier_ready() ? PS_READ_MEMBARRIER : PS_READ_FENCE;
		ps->interval = tsync_ns_to_ticks(c.read_interval_ns ? c.read_interval_ns
								    : PS_READ_INTERVAL_NS);
	} else {
		/* exact start times: the analysis of docs/rt.md assumes them */
		ps->path = PS_READ_COUNTER;
	}
	if (ps->path == PS_READ_COUNTER)
		atomic_store_explicit(&ps->head.read, PS__READ_TSC | PS__READ_FENCE,
				      memory_order_relaxed);
	else if (ps->path == PS_READ_FENCE)
		atomic_store_explicit(&ps->head.read, PS__READ_FENCE, memory_order_relaxed);
	atomic_store_explicit(&ps->fence_ready, ps->path != PS_READ_MEMBARRIER,
			      memory_order_relaxed);
	ps->head.base = tsync_now();
	atomic_store_explicit(&ps->head.clock, 0, memory_order_relaxed);
	ps->head.key = atomic_fetch_add_explicit(&next_key, 1, memory_order_relaxed);
	ps->client.thread_exit = ps_thread_exit;
	ps->client.thread_prepare = ps_thread_prepare;
	return ps;
}

static struct ps_qcache *qcache_new(struct ps *ps)
{
	struct ps_qcache *qc = calloc(1, sizeof(*qc) + ps->nchunks * sizeof(qc->views[0]));
	if (qc == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qc->blocker = -1;
	return qc;
}

/* The caller's quiescence cache; allocated on its first quiescence computation unless
 * ps__thread_prepare did it (ps_quiesce cannot return an error: a failure aborts). */
static struct ps_qcache *qcache_of(struct ps *ps, struct ps__slot *me)
{
	if (TSYNC_LIKELY(me->qcache != NULL))
		return me->qcache;
	struct ps_qcache *qc = qcache_new(ps);
	if (qc == NULL)
		tsync__fatal("out of memory allocating quiescence caches");
	me->qcache = qc;
	return qc;
}

int ps__thread_prepare(struct ps *ps, unsigned tid)
{
	struct ps__slot *s = tsync__tdir_get((void *_Atomic *)ps->head.chunks, tid,
					     sizeof(struct ps__slot), slot_chunk_init, NULL);
	if (s == NULL)
		return -1;
	if (s->qcache == NULL && (s->qcache = qcache_new(ps)) == NULL)
		return -1;
	return 0;
}

/* The cached view of thread j, or NULL if its chunk cannot be allocated (then the
 * scan simply reads j's slot every time: the cache is an optimisation only). */
static struct ps_view *view_of(struct ps_qcache *qc, unsigned j)
{
	return tsync__tdir_get(qc->views, j, sizeof(struct ps_view), NULL, NULL);
}

static void publish(struct ps__slot *me, uint64_t q)
{
	if (q > atomic_load_explicit(&me->quiesced, memory_order_relaxed))
		atomic_store_explicit(&me->quiesced, q, memory_order_release);
}

/* State words and the clock word hold times as (ticks since base) << PS__DEPTH_BITS. */
static inline uint64_t enc(const struct ps *ps, uint64_t t)
{
	return t > ps->head.base ? (t - ps->head.base) << PS__DEPTH_BITS : 0;
}

static inline uint64_t dec(const struct ps *ps, uint64_t w)
{
	return (w >> PS__DEPTH_BITS) + ps->head.base;
}

static inline bool st_inside(uint64_t w)
{
	return (w & PS__DEPTH_MASK) != 0;
}

static inline uint64_t clock_now(const struct ps *ps)
{
	return dec(ps, atomic_load_explicit(&ps->head.clock, memory_order_relaxed));
}

/* ---- the read barrier and the clock word (docs/design.md §2.4-2.5) -------------------- */

/*
 * Advance the domain clock word to a fresh reading, so that sections that begin after
 * this see a start after it (liveness: a thread running back-to-back sections stops
 * looking "inside since before t" once its next section begins). Lazily (ps_free's
 * reclamation) at most once per read interval; the clock word is on the readers' line,
 * so each advance costs every reader one cache miss.
 */
static void clock_advance(struct ps *ps, struct ps_qcache *qc, uint64_t now, bool lazy)
{
	if (ps->path == PS_READ_COUNTER)
		return; /* sections read the counter themselves */
	if (now <= clock_now(ps))
		return;
	if (lazy) {
		uint64_t next = atomic_load_explicit(&ps->clock_next, memory_order_relaxed);
		if (now < next || !atomic_compare_exchange_strong_explicit(
					  &ps->clock_next, &next, now + ps->interval,
					  memory_order_relaxed, memory_order_relaxed))
			return;
	}
	raise_to(&ps->head.clock, enc(ps, now));
	qc->stats.clock_advances++;
}

/* ---- the fence mode of PS_READ_MEMBARRIER instances (docs/design.md §2.6) ------------ */

/* A read barrier is expensive when, made once per read interval, it would take more
 * than 1/PS__FENCE_SHARE of the caller's time; a fence lease lasts PS__FENCE_LEASE read
 * intervals (about 100 ms by default), after which the instance tries its membarrier
 * mode again. */
#define PS__FENCE_SHARE 16u
#define PS__FENCE_LEASE 2048u

static void cost_sample(struct ps *ps, uint64_t c)
{
	uint64_t old = atomic_load_explicit(&ps->bar_cost, memory_order_relaxed);
	atomic_store_explicit(&ps->bar_cost, old ? (7 * old + c) / 8 : c, memory_order_relaxed);
}

/*
 * Readers fence (the instance's fence path, or its fence mode): a reading taken now,
 * before the caller's later loads (RDTSC; LFENCE), dates them. fence_ready is loaded
 * after the reading: if it is set then, every section that the loads do not see
 * performs its own loads after the reading (docs/design.md §2.6).
 */
static bool fence_dated(struct ps *ps, uint64_t *date)
{
	uint64_t n = tsync_now_before_loads();
	if (!atomic_load_explicit(&ps->fence_ready, memory_order_seq_cst))
		return false;
	*date = n;
	return true;
}

/*
 * Enter the fence mode: readers are told to fence (the flag they load after their
 * store), then a read barrier makes every section that did not see it visible; only
 * then may scans date their loads by a reading before them. Made by ps_free's
 * reclamation when it needs a barrier, the interval forbids one, and barriers are
 * expensive: frees would wait for rare barriers, and more barriers would cost more than
 * readers' fences.
 */
static void fence_on(struct ps *ps, struct ps_qcache *qc)
{
	unsigned z = 0;
	if (!atomic_compare_exchange_strong_explicit(&ps->switching, &z, 1, memory_order_acquire,
						     memory_order_relaxed))
		return;
	if (!atomic_load_explicit(&ps->fence_ready, memory_order_relaxed)) {
		atomic_fetch_or_explicit(&ps->head.read, PS__READ_FENCE, memory_order_seq_cst);
		uint64_t n = tsync_now_before_loads();
		read_membarrier();
		cost_sample(ps, tsync_now() - n);
		atomic_store_explicit(&ps->fence_until, n + PS__FENCE_LEASE * ps->interval,
				      memory_order_relaxed);
		atomic_store_explicit(&ps->fence_ready, 1, memory_order_seq_cst);
		qc->stats.fence_switches++;
	}
	atomic_store_explicit(&ps->switching, 0, memory_order_release);
}

/* Leave the fence mode once its lease is over: scans stop dating by readings first,
 * then readers stop fencing (a scan that saw fence_ready read its date before, so a
 * section that no longer fences performs its loads after that date). */
static void fence_off(struct ps *ps, uint64_t now)
{
	unsigned z = 0;
	if (now < atomic_load_explicit(&ps->fence_until, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&ps->switching, &z, 1, memory_order_acquire,
						     memory_order_relaxed))
		return;
	if (atomic_load_explicit(&ps->fence_ready, memory_order_relaxed) &&
	    now >= atomic_load_explicit(&ps->fence_until, memory_order_relaxed)) {
		atomic_store_explicit(&ps->fence_ready, 0, memory_order_seq_cst);
		atomic_fetch_and_explicit(&ps->head.read, ~PS__READ_FENCE, memory_order_seq_cst);
		atomic_store_explicit(&ps->bar_next, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&ps->switching, 0, memory_order_release);
}

/* A lazy reclamation needed a barrier and the interval forbade it. */
static void barrier_deferred(struct ps *ps, struct ps_qcache *qc)
{
	qc->stats.barrier_deferrals++;
	if (ps->path == PS_READ_MEMBARRIER &&
	    atomic_load_explicit(&ps->bar_cost, memory_order_relaxed) * PS__FENCE_SHARE >
		    ps->interval)
		fence_on(ps, qc);
}

/*
 * A read barrier whose loads the caller may then date by *date: every section of every
 * thread that a load made after this call does not see began after *date (or is the
 * caller's own, which it sees). PS_READ_FENCE: readers fence, so a reading taken before
 * the loads does. PS_READ_MEMBARRIER: a reading n, the clock word raised to n, then
 * membarrier; n is published as the barrier's time for other reclaimers. The reading is
 * taken *before* the membarrier: a reader that enters after the membarrier may not be
 * visible to the loads, and it began after n (tests/model/ps.pml, mutant
 * MUTANT_NOW_AFTER_BARRIER). When the caller is the only registered thread there is
 * nobody to wait for: n, read before the registry's count, is the date and no system
 * call is made (registry.h: a thread registering later begins its sections after the
 * count was read). Lazily, at most one barrier per read interval in the domain: false if
 * the interval is not over (or another thread just claimed it).
 */
static bool read_barrier(struct ps *ps, struct ps_qcache *qc, bool lazy, uint64_t *date)
{
	if (fence_dated(ps, date))
		return true;
	uint64_t n = tsync_now_before_loads();
	if (tsync__thread_live() <= 1) {
		*date = n;
		return true;
	}
	if (lazy) {
		/* Claim the interval: one lazy barrier per interval in the domain, and no
		 * waiting for its maker (preempted, it delays the next claim by an interval
		 * at most). */
		uint64_t next = atomic_load_explicit(&ps->bar_next, memory_order_relaxed);
		if (n < next || !atomic_compare_exchange_strong_explicit(
					&ps->bar_next, &next, n + ps->interval,
					memory_order_relaxed, memory_order_relaxed)) {
			barrier_deferred(ps, qc);
			return false;
		}
	} else {
		atomic_store_explicit(&ps->bar_next, n + ps->interval, memory_order_relaxed);
	}
	raise_to(&ps->head.clock, enc(ps, n));
	read_membarrier();
	raise_to(&ps->bar_time, n);
	cost_sample(ps, tsync_now() - n);
	qc->stats.barriers++;
	*date = n;
	return true;
}

/*
 * RT-ParSec's quiescence point (RT-SMR (RTAS 2018) Fig. 8, lines 15-22), exact: every
 * thread's record is read now, dated by `date`, a time before the loads at which every
 * section not visible to them had not begun (PS_READ_COUNTER and PS_READ_FENCE: a reading
 * taken before the loads, RDTSC; LFENCE; PS_READ_MEMBARRIER: a read barrier's time).
 * A thread seen outside was outside at a time after `date`, and one seen inside since e
 * has been inside since at least e: every section active at any time before
 * min(date, e_min) - S has ended or began after it (docs/design.md §2, reasons 2-4, and
 * docs/rt.md §2). The caller's own record counts like any other. The thread with the
 * earliest start is remembered as the blocker (for ps_stall_report).
 */
static uint64_t point_exact(struct ps *ps, unsigned me_id, struct ps__slot *me,
			    struct ps_qcache *qc, uint64_t date)
{
	const uint64_t S = ps->skew;
	const unsigned hw = tsync_thread_high_water();
	uint64_t min = date;
	int blocker = -1;
	for (unsigned j = 0; j < hw; j++) {
		struct ps__slot *s = j == me_id ? me : slot_if_exists(ps, j);
		if (s == NULL)
			continue; /* never entered a section of ps before the date */
		if (j != me_id)
			qc->stats.remote_reads++;
		uint64_t w = atomic_load_explicit(&s->state, memory_order_acquire);
		if (!st_inside(w))
			continue;
		if (dec(ps, w) < min) {
			min = dec(ps, w);
			blocker = (int)j;
		}
	}
	qc->blocker = blocker;
	qc->blocker_enter = blocker >= 0 ? min : 0;
	return min > S + 1 ? min - S - 1 : 0;
}

/* Temporal quiescence (RT-SMR (RTAS 2018) Fig. 9): now - grace - S - 1. `now` is read
 * before any later load or store of the caller (RDTSC; LFENCE), so reuse follows it. */
static uint64_t point_temporal(struct ps *ps, struct ps_qcache *qc)
{
	const uint64_t now = tsync_now_before_loads();
	const uint64_t d = ps->grace + ps->skew + 1;
	qc->blocker = -1;
	return now > d ? now - d : 0;
}

/* The date of an exact scan of a GENERAL instance: the newest read barrier's, if it began
 * less than a read interval ago; otherwise a new barrier's (lazily; if another thread's
 * lazy barrier is running or just ran, the newest one still serves). */
static uint64_t general_date(struct ps *ps, struct ps_qcache *qc)
{
	uint64_t date;
	if (fence_dated(ps, &date))
		return date;
	uint64_t b = atomic_load_explicit(&ps->bar_time, memory_order_acquire);
	uint64_t now = tsync_now();
	if (b != 0 && now < b + ps->interval)
		return b;
	if (read_barrier(ps, qc, true, &date))
		return date;
	b = atomic_load_explicit(&ps->bar_time, memory_order_acquire);
	if (b != 0)
		return b;
	read_barrier(ps, qc, false, &date);
	return date;
}

/* The policy's point now, published (opt. 2). */
static uint64_t point_now(struct ps *ps, unsigned me_id, struct ps__slot *me, struct ps_qcache *qc)
{
	uint64_t q;
	if (ps->policy == PS_POLICY_TEMPORAL)
		q = point_temporal(ps, qc);
	else if (ps->policy == PS_POLICY_RT)
		q = point_exact(ps, me_id, me, qc, tsync_now_before_loads());
	else
		q = point_exact(ps, me_id, me, qc, general_date(ps, qc));
	publish(me, q);
	uint64_t p = atomic_load_explicit(&me->quiesced, memory_order_relaxed);
	return p > q ? p : q;
}

tsync_tick_t ps_quiesce_time(struct ps *ps)
{
	unsigned me_id = tsync__self();
	struct ps__slot *me = ps__slot(ps);
	struct ps_qcache *qc = qcache_of(ps, me);
	qc->stats.quiesce_calls++;
	return point_now(ps, me_id, me, qc);
}

enum ps_policy ps_policy(const struct ps *ps)
{
	return (enum ps_policy)ps->policy;
}

tsync_tick_t ps_grace_ticks(const struct ps *ps)
{
	return ps->grace;
}

tsync_tick_t ps_skew_ticks(const struct ps *ps)
{
	return ps->skew;
}

enum ps_read_path ps_read_path(const struct ps *ps)
{
	return (enum ps_read_path)ps->path;
}

tsync_tick_t ps_read_interval_ticks(const struct ps *ps)
{
	return ps->interval;
}

int ps__last_blocker(struct ps *ps, uint64_t *enter)
{
	struct ps__slot *me = ps__slot(ps);
	struct ps_qcache *qc = me->qcache;
	if (qc == NULL || qc->blocker < 0)
		return -1;
	*enter = qc->blocker_enter;
	return qc->blocker;
}

int ps__oldest_section(struct ps *ps, uint64_t *enter, unsigned *inside)
{
	const unsigned hw = tsync_thread_high_water();
	uint64_t min = UINT64_MAX;
	int who = -1;
	unsigned n = 0;
	for (unsigned j = 0; j < hw; j++) {
		struct ps__slot *s = slot_if_exists(ps, j);
		if (s == NULL)
			continue;
		uint64_t w = atomic_load_explicit(&s->state, memory_order_acquire);
		if (!st_inside(w))
			continue;
		n++;
		if (dec(ps, w) < min) {
			min = dec(ps, w);
			who = (int)j;
		}
	}
	*inside = n;
	*enter = who >= 0 ? min : 0;
	return who;
}

/* The outcome of one pass over the threads. */
enum pass_result {
	PASS_OK,      /* every thread is quiescent with respect to t */
	PASS_PEER,    /* another thread's published point answered (already published) */
	PASS_BLOCKED, /* a thread is (or may be) inside a section that began by t + S */
	PASS_NEED,    /* threads were seen outside, and no barrier dates the pass */
};

/* What one pass proves. min: the earliest date, start and view time it accepted (the
 * published point is min - S - 1). own: for free times read by the caller before the
 * call, the largest one it proves quiescent (UINT64_MAX: all of them); see ps__quiesce_own. */
struct pass_out {
	uint64_t min, own;
};

static inline void lower(uint64_t *x, uint64_t v)
{
	if (v < *x)
		*x = v;
}

/*
 * One pass of ps_quiesce(t) over the threads, from the caller's own id (optimisation
 * 4). covered: the pass's loads follow a read barrier that serves t, whose time is
 * `date`; then a thread seen outside was outside at `date`, after t (and, if `mine`,
 * the barrier was made by this call, after every free time the caller read before it).
 * Without it a thread seen outside (or without a record) may have begun a section whose
 * store is not yet visible, so the pass reports PASS_NEED, but it goes on looking for a
 * thread inside a section begun by t + S, which makes the call fail without a barrier.
 * A thread seen inside since e > t + S is quiescent either way: a newer state it may be
 * in began later still.
 */
static enum pass_result pass(struct ps *ps, unsigned me_id, struct ps__slot *me,
			     struct ps_qcache *qc, uint64_t t, bool covered, bool mine,
			     uint64_t date, struct pass_out *out)
{
	const uint64_t S = ps->skew;
	const unsigned hw = tsync_thread_high_water();
	/* a thread seen outside at `date`: free times before date - S are quiescent */
	const uint64_t outside_own = mine ? UINT64_MAX : date - S - 1;
	bool need = false;
	for (unsigned k = 0; k < hw; k++) {
		unsigned j = me_id + k;
		if (j >= hw)
			j -= hw;
		struct ps__slot *s = j == me_id ? me : slot_if_exists(ps, j);
		if (s == NULL) {
			/* No record: j never entered a section of ps before the record existed;
			 * like a thread seen outside, believed after a barrier
			 * (docs/design.md §2, reason 5). */
			if (covered)
				lower(&out->own, outside_own);
			else
				need = true;
			continue;
		}
		struct ps_view *v = NULL;
		if (j != me_id) {
			v = view_of(qc, j);
			/* Optimisation 3: a view that stands for a time certainly after t. */
			if (v && v->at > t + S) {
				if (!st_inside(v->state)) {
					qc->stats.cache_hits++;
					lower(&out->min, v->at);
					lower(&out->own, v->at - S - 1);
					continue;
				}
				if (dec(ps, v->state) > t + S) {
					qc->stats.cache_hits++;
					lower(&out->min, dec(ps, v->state));
					lower(&out->own, dec(ps, v->state) - S - 1);
					continue;
				}
			}
			/* Optimisation 2, peer's point: it is on the line we are about to read. */
			uint64_t qj = atomic_load_explicit(&s->quiesced, memory_order_acquire);
			if (qj >= t) {
				qc->stats.peer_point_hits++;
				publish(me, qj);
				out->own = qj;
				return PASS_PEER;
			}
			qc->stats.remote_reads++;
		}
		uint64_t w = atomic_load_explicit(&s->state, memory_order_acquire);
		if (v && covered) {
			v->state = w;
			v->at = date;
		}
		if (st_inside(w)) {
			uint64_t e = dec(ps, w);
			if (e > t + S) { /* began after t */
				lower(&out->min, e);
				lower(&out->own, e - S - 1);
				continue;
			}
			qc->blocker = (int)j;
			qc->blocker_enter = e;
			return PASS_BLOCKED;
		}
		/* Outside: the caller's own record is exact; another's, after a barrier. */
		if (j == me_id)
			continue;
		if (covered)
			lower(&out->own, outside_own);
		else
			need = true;
	}
	return need ? PASS_NEED : PASS_OK;
}

/*
 * ps_quiesce's GENERAL path. Each thread j is quiescent with respect to t when it was
 * seen inside a section that certainly began after t, or outside any section at a time
 * that certainly follows t: the pass is dated by a read barrier that began after t's
 * unlink (its time exceeds t + S, or this call made it), or with PS_READ_FENCE by a
 * reading before the loads. The first pass uses the newest barrier if it serves t;
 * otherwise it only looks for a thread in the way, and if none is, a barrier is made
 * (lazily: if the read interval allows) and a second pass decides. On success the point
 * this proves - the earliest of the date, every accepted start and view time, less the
 * skew bound; and t - S - 1 - is published on the caller's line (opt. 2). Returns 0 (not
 * yet) or the bound of ps__quiesce_own (>= t).
 */
static uint64_t quiesce_general(struct ps *ps, unsigned me_id, struct ps__slot *me,
				struct ps_qcache *qc, uint64_t t, bool lazy)
{
	const uint64_t S = ps->skew;
	uint64_t date;
	bool covered, mine;
	/* Sections that begin from now on should begin "after t": move the clock word past
	 * t + S if it is not (lazily: once per read interval in the domain). Sections that
	 * began with an older word hold t until they end (docs/design.md §2.5). */
	if (clock_now(ps) <= t + S)
		clock_advance(ps, qc, tsync_now(), lazy);
	struct pass_out out = {UINT64_MAX, UINT64_MAX};
	if (ps->path == PS_READ_MEMBARRIER &&
	    atomic_load_explicit(&ps->fence_ready, memory_order_relaxed))
		fence_off(ps, tsync_now());
	if (fence_dated(ps, &date)) {
		/* Loads below observe the other threads at or after `date`. */
		covered = mine = true;
		out.min = date;
	} else {
		date = atomic_load_explicit(&ps->bar_time, memory_order_acquire);
		covered = date > t + S;
		mine = false;
		out.min = covered ? date : tsync_now_before_loads();
		/* Lazily, when no barrier may be made yet, a pass could only succeed if every
		 * other thread were inside a section begun after t: not worth its loads. */
		if (!covered && lazy &&
		    out.min < atomic_load_explicit(&ps->bar_next, memory_order_relaxed) &&
		    tsync__thread_live() > 1) {
			barrier_deferred(ps, qc);
			return 0;
		}
	}
	enum pass_result r = pass(ps, me_id, me, qc, t, covered, mine, date, &out);
	if (r == PASS_NEED) {
		if (!read_barrier(ps, qc, lazy, &date))
			return 0;
		out.min = date;
		out.own = UINT64_MAX;
		r = pass(ps, me_id, me, qc, t, true, true, date, &out);
	}
	if (r == PASS_BLOCKED)
		return 0;
	qc->stats.quiesce_true++;
	if (r == PASS_PEER)
		return out.own;
	/* Both are quiescence points (docs/design.md §2, reason 4): min - S - 1, and
	 * t - S - 1 (a free time that low was read before t). Not t itself: a free time
	 * t' <= t read after this scan on a CPU whose counter lags may belong to an object
	 * that a section begun after the scan still holds (tests/model/ps.pml,
	 * MUTANT_PUBLISH_T). */
	uint64_t q = out.min > S + 1 ? out.min - S - 1 : 0;
	uint64_t tq = t > S + 1 ? t - S - 1 : 0;
	publish(me, q > tq ? q : tq);
	return out.own;
}

static uint64_t quiesce(struct ps *ps, tsync_tick_t t, bool lazy)
{
	unsigned me_id = tsync__self();
	struct ps__slot *me = ps__slot(ps);
	struct ps_qcache *qc = qcache_of(ps, me);
	qc->stats.quiesce_calls++;

	/* Optimisation 2, own point: every section active at or before it has ended. */
	uint64_t p = atomic_load_explicit(&me->quiesced, memory_order_acquire);
	if (t <= p) {
		qc->stats.own_point_hits++;
		qc->stats.quiesce_true++;
		return p;
	}
	if (ps->policy != PS_POLICY_GENERAL) {
		/* RT / TEMPORAL (RT-SMR (RTAS 2018) Figs. 8-9): compare with a fresh point. */
		uint64_t q = point_now(ps, me_id, me, qc);
		if (t <= q) {
			qc->stats.quiesce_true++;
			return q;
		}
		return 0;
	}
	return quiesce_general(ps, me_id, me, qc, t, lazy);
}

bool ps_quiesce(struct ps *ps, tsync_tick_t t)
{
	return quiesce(ps, t, false) != 0;
}

uint64_t ps__quiesce_own(struct ps *ps, tsync_tick_t t, bool lazy)
{
	return quiesce(ps, t, lazy);
}

void ps_synchronize(struct ps *ps)
{
	if (ps_in_section(ps))
		tsync__fatal("ps_synchronize called inside a parallel section of the same ps");
	uint64_t t = tsync_now_ordered();
	tsync__wait_until(ps_quiesce(ps, t), TSYNC__SPIN_QUIESCE);
}

tsync_tick_t ps_quiescence_point(struct ps *ps)
{
	return ps__quiescence_point(ps);
}

int ps_stats_thread(struct ps *ps, struct ps_stats *out)
{
	struct ps__slot *me = ps__slot(ps);
	if (me->qcache)
		*out = ((struct ps_qcache *)me->qcache)->stats;
	else
		memset(out, 0, sizeof(*out));
	return 0;
}
