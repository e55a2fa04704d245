/*
 * tsync/ps.h - ParSec parallel sections: scalable memory reclamation ordered by time
 * (ParSec (EuroSys 2016) §2.2 and §3.2-3.3; the RT and temporal policies of RT-SMR
 * (RTAS 2018) §IV).
 *
 * A parallel section is the span between ps_enter() and ps_exit() in which a thread may
 * hold references into a data structure protected by a struct ps. Entering and leaving
 * store only to the calling thread's own cache line and read no line that updaters
 * write often. An object unlinked and freed at time t may be reused once every section
 * that was active at t has ended; ps_quiesce(ps, t) decides that without waiting for any
 * thread, applying the clock's skew bound S (<tsync/clock.h>) to every comparison.
 *
 * The read path (enum ps_read_path). A section publishes its start as a time no later
 * than its true start: by default (GENERAL policy) the domain's clock word, a counter
 * reading that reclaimers advance, so ps_enter reads no counter and executes no fence;
 * a reclaimer believes what it sees of a thread outside a section only after a read
 * barrier, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running
 * thread's earlier stores visible (the asymmetric fence of liburcu's memb flavour).
 * Where the kernel has no such membarrier, ps_enter adds a full fence instead. The RT
 * and TEMPORAL policies keep exact start times: ps_enter reads the counter and fences,
 * as their analysis assumes (docs/rt.md §2). docs/design.md §2 gives the argument.
 *
 * The four optimisations of ParSec (EuroSys 2016) §3.3 are implemented:
 *  1. one timestamp per section: the state word holds the start and an inside bit, and
 *     ps_exit clears the bit (no second counter read);
 *  2. each thread publishes its last computed quiescence point on its own line, and a
 *     quiescer stops as soon as it finds its own or any other thread's point >= t;
 *  3. each thread caches the state words it read from every other thread with the
 *     time they stand for, and reuses them for any t older than that time;
 *  4. each thread starts its scan at its own id, spreading the reads of popular lines.
 *
 * Several struct ps are independent (ParSec (EuroSys 2016), "nested parallel
 * sections"): a thread may be inside sections of several instances at once, and
 * quiescence of one ignores the others. Sections of one instance nest per thread: only
 * the outermost enter/exit pair records times.
 *
 * S in the contracts below is the instance's bound, ps_skew_ticks(ps): the clock's
 * measured S plus cfg->skew_margin plus 1 tick.
 *
 * Threads: any thread may call any function here; a thread not registered is registered
 * lazily, and one not registered explicitly has its record in an instance allocated at
 * its first use of it, aborting if that fails (<tsync/thread.h>). The memory-ordering
 * argument is in docs/design.md §2.
 */
#ifndef TSYNC_PS_H
#define TSYNC_PS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/arch.h>
#include <tsync/clock.h>
#include <tsync/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps;

/*
 * Quiescence policies (RT-SMR (RTAS 2018) §IV), chosen per instance at creation. What
 * each proves and costs: docs/design.md §9.3.
 *
 *  PS_POLICY_GENERAL   ParSec (EuroSys 2016) §3.3: wait-free ps_quiesce with the four
 *                      optimisations; throughput first, no garbage bound. The default.
 *  PS_POLICY_RT        RT-ParSec (RT-SMR (RTAS 2018) §IV-A, Fig. 8): every computation
 *                      reads every record now; exact, so Eq. 5's garbage bound applies.
 *  PS_POLICY_TEMPORAL  Temporal quiescence (RT-SMR (RTAS 2018) §IV-B, Fig. 9): the point
 *                      is now - grace_ns - S, no record is read. CONTRACT: every section
 *                      lasts less than grace_ns of real time (§VI, Eq. 8). Readers need
 *                      not call ps_enter/ps_exit; if they do, ps_stall_report flags a
 *                      section that outlives grace_ns.
 */
enum ps_policy {
	PS_POLICY_GENERAL = 0,
	PS_POLICY_RT = 1,
	PS_POLICY_TEMPORAL = 2,
};

/* Configuration for ps_create(). Zero-initialise, set size = sizeof(struct ps_config),
 * then change what you need; PS_CONFIG_INIT gives the defaults. */
struct ps_config {
	size_t size;               /* sizeof(struct ps_config), for forward compatibility */
	uint64_t skew_margin;      /* ticks added to the measured skew bound for this instance */
	int policy;                /* enum ps_policy (default PS_POLICY_GENERAL) */
	uint64_t grace_ns;         /* PS_POLICY_TEMPORAL: the grace period, nanoseconds (> 0);
				    * must be 0 for the other policies */
	uint64_t read_interval_ns; /* GENERAL: the least time between two read barriers or
				    * two clock-word advances that ps_free's reclamation issues
				    * (ps_quiesce, ps_synchronize and explicit reclaims do not
				    * wait for it); 0: PS_READ_INTERVAL_NS. Must be 0 for the
				    * other policies. */
};
#define PS_CONFIG_INIT                                               \
	{                                                            \
		sizeof(struct ps_config), 0, PS_POLICY_GENERAL, 0, 0 \
	}

/* The default read interval: 50 us. What the interval bounds (GENERAL, docs/design.md
 * §2.5): sections date themselves by the domain clock word, which a reclaimer raises at
 * most once per interval, so a section begun up to one interval after a free may hold
 * that free until it ends; and a read barrier is made at most once per interval. Once a
 * quiescence computation for a free at t has run more than S after t (S: the skew bound,
 * ps_skew_ticks; ps_free's reclamation makes one every reclaim_batch frees), every
 * computation made more than two intervals plus the longest section then in progress
 * later proves it, whatever the readers do. A longer interval means fewer barriers and
 * clock-word misses for readers, a shorter one less pending memory:
 * docs/results/smr-interval/table.md (scripts/ps-interval-sweep.sh, part of `make
 * bench`) measures both sides - throughput, update p99 and peak pending objects from
 * 10 us to 1 ms. */
#define PS_READ_INTERVAL_NS 50000u

/*
 * How an instance's sections publish their start, fixed at ps_create.
 *
 *  PS_READ_MEMBARRIER  GENERAL where the kernel has MEMBARRIER_CMD_PRIVATE_EXPEDITED:
 *                      ps_enter loads the domain clock word and stores the state word;
 *                      no counter read, no fence. Reclaimers issue read barriers.
 *  PS_READ_FENCE       GENERAL without it (or with the environment variable
 *                      TSYNC_MEMBARRIER=0 at ps_create): the clock word, then a full
 *                      fence after the store.
 *  PS_READ_COUNTER     RT and TEMPORAL: a counter reading, then a full fence; start
 *                      times are exact.
 */
enum ps_read_path {
	PS_READ_MEMBARRIER = 0,
	PS_READ_FENCE = 1,
	PS_READ_COUNTER = 2,
};

/*
 * ps_create - a new, independent parallel-section domain.
 *
 * Arguments:  cfg: the configuration, or NULL for the defaults (PS_CONFIG_INIT).
 * Returns:    the instance; NULL with errno = ENOMEM (also when the records of the
 *             explicitly registered threads, allocated now, cannot be: <tsync/thread.h>),
 *             or EINVAL (bad cfg->size, unknown policy, TEMPORAL without grace_ns,
 *             grace_ns or read_interval_ns with another policy).
 * Progress:   blocking (allocates, also every explicitly registered thread's record;
 *             takes the registry mutex); initialises the clock (<tsync/clock.h>) if
 *             needed; the first GENERAL instance of the process registers it for
 *             private expedited membarriers (one system call, see ps_read_path).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.3; policies: RT-SMR (RTAS 2018) §IV.
 */
struct ps *ps_create(const struct ps_config *cfg);

/*
 * ps_destroy - free an instance.
 *
 * Arguments:  ps: the instance, or NULL (ignored).
 * Progress:   blocking: first runs every callback still queued by ps_call (as
 *             ps_barrier), then frees.
 * Caller:     any thread, once (not checked) no thread is inside one of ps's sections
 *             or will use it again, and every ps_mem created on it was destroyed.
 * Implements: ParSec (EuroSys 2016) §3.3.
 */
void ps_destroy(struct ps *ps);

/*
 * ps_quiesce - has every thread left every section of ps that was active at time t?
 *
 * Arguments:  t: ticks, from tsync_now_ordered() after the object was made unreachable.
 * Returns:    true if every section active at t has ended, the caller's own included,
 *             as the policy proves it (docs/design.md §2.8); false: "not yet", call again.
 * Progress:   wait-free: O(threads) loads at worst, usually O(1); at most one membarrier
 *             system call (PS_READ_MEMBARRIER), which waits for no section. Never sleeps.
 * Ordering:   acquire: a true result happens-after the exit of every such section.
 * Caller:     any thread, inside or outside a section.
 * Implements: ParSec (EuroSys 2016) §3.2-3.3; RT and TEMPORAL: RT-SMR (RTAS 2018)
 *             §IV-A/B, Figs. 8 and 9.
 */
bool ps_quiesce(struct ps *ps, tsync_tick_t t);

/*
 * ps_quiesce_time - the most recent quiescence point, computed now: every section of ps
 * active at or before it has ended, so an object freed at or before it may be reused.
 *
 * Returns:    a time in ticks, never below the caller's published point, which it
 *             becomes (RT: exact; GENERAL: may lag now by the read interval plus S;
 *             TEMPORAL: now - grace - S - 1; docs/design.md §2.8).
 * Progress:   wait-free: O(threads) loads (GENERAL, RT), O(1) (TEMPORAL); GENERAL with
 *             PS_READ_MEMBARRIER at most one membarrier system call.
 * Ordering:   acquire: every section that ended by the returned time happens-before the return.
 * Caller:     any thread.
 * Implements: RT-SMR (RTAS 2018) Fig. 8's ps_quiesce (GENERAL, RT), Fig. 9's (TEMPORAL).
 */
tsync_tick_t ps_quiesce_time(struct ps *ps);

/*
 * ps_policy, ps_grace_ticks, ps_skew_ticks, ps_read_path, ps_read_interval_ticks - an
 * instance's configuration.
 *
 * Returns:    ps_policy: the policy ps was created with. ps_grace_ticks: its grace
 *             period in ticks (0 unless TEMPORAL). ps_skew_ticks: the skew bound ps
 *             applies to every comparison, in ticks (S + cfg->skew_margin + 1).
 *             ps_read_path: how its sections publish their start (enum ps_read_path).
 *             ps_read_interval_ticks: the read interval in ticks (0 unless GENERAL).
 * Progress:   wait-free (reads fields fixed at creation).
 * Caller:     any thread.
 * Implements: RT-SMR (RTAS 2018) §IV (policies); ParSec (EuroSys 2016) §3.2 (skew).
 */
enum ps_policy ps_policy(const struct ps *ps);
tsync_tick_t ps_grace_ticks(const struct ps *ps);
tsync_tick_t ps_skew_ticks(const struct ps *ps);
enum ps_read_path ps_read_path(const struct ps *ps);
tsync_tick_t ps_read_interval_ticks(const struct ps *ps);

/*
 * ps_synchronize - wait until every section of ps active now has ended.
 *
 * The classic grace period, for callers that want to free memory themselves.
 *
 * Progress:   blocking: retries ps_quiesce, spinning briefly with tsync_arch_relax()
 *             and then calling sched_yield() between tries; with PS_READ_MEMBARRIER
 *             usually one membarrier system call in all (tries that find a section in
 *             the way make none).
 * Ordering:   as a true ps_quiesce: the exit of every such section happens-before the
 *             return.
 * Caller:     any thread outside a section of ps (inside one it would wait for itself:
 *             the call aborts with a diagnostic).
 * Implements: ParSec (EuroSys 2016) §3.3 (a ps_quiesce loop).
 */
void ps_synchronize(struct ps *ps);

/*
 * Deferred callbacks for any object: ps_call, ps_call_free, ps_barrier, ps_call_poll.
 *
 * The counterpart of liburcu's call_rcu/rcu_barrier and Concurrency Kit's
 * ck_epoch_call/ck_epoch_barrier, for memory that no ps_mem hands out (malloc, a
 * user pool, a file descriptor to close): embed a struct ps_head in the object, unlink
 * the object, then ps_call(ps, &obj->head, fn). fn runs once, after every section of
 * ps that was active at the call has ended - ParSec's rule for ps_free (ParSec
 * (EuroSys 2016) §3.2: an object freed at time t is reused once quiescence proves t),
 * applied to a batch stamped with one ordered clock reading.
 *
 * Where callbacks run: in whichever thread gets there - a thread's ps_call every
 * PS_CALL_BATCH calls (its own queue, then one idle or exited thread's), ps_call_poll,
 * ps_barrier, ps_destroy, ps_mem_reclaim of a ps_mem on ps (docs/design.md §9.3) -
 * possibly inside a section, while that thread holds its own locks. So a callback must
 * not block, take a lock a ps_call caller may hold, call ps_barrier or ps_synchronize,
 * or create or destroy tsync instances; it may call ps_call (which only queues) and
 * ps_free. One queue's callbacks run in the order queued; different queues' in no
 * particular order, possibly concurrently.
 *
 * An exiting thread's queue stays with its thread id: any thread's poll or ps_barrier
 * runs it, and the id's next user queues behind it. fork: see <tsync/thread.h>.
 */

/* Embed one in every object handed to ps_call, like liburcu's struct rcu_head. Its
 * fields belong to tsync from ps_call until fn is called. */
struct ps_head {
	struct ps_head *next;
	void (*fn)(struct ps_head *head);
};

/* Calls a thread queues before it closes them into a batch and polls (see above). */
#define PS_CALL_BATCH 64u

/*
 * ps_call - run fn(head) once every section of ps active now has ended.
 *
 * Arguments:  head: in an object now unreachable to every section that begins from now
 *             on, not queued already; fn: called with head exactly once (then head is fn's).
 * Progress:   lock-free queueing (a CAS on the caller's own list); every PS_CALL_BATCH-th
 *             call also polls without waiting, running ready callbacks in the caller
 *             (docs/design.md §9.3). A lazily registered thread aborts if its queue
 *             cannot be allocated (as ps_enter).
 * Ordering:   release: the caller's accesses before ps_call happen-before fn; fn
 *             happens-after the end of every section of ps active at the call.
 * Caller:     any thread, inside or outside a section (the caller's own section then
 *             holds fn back too), and callbacks (which only queue).
 * Implements: ParSec (EuroSys 2016) §3.2-3.3; the call_rcu interface is liburcu's.
 */
void ps_call(struct ps *ps, struct ps_head *head, void (*fn)(struct ps_head *head));

/*
 * ps_call_free - ps_call whose callback is free((char *)head - offset): the kfree_rcu of
 * objects from malloc.
 *
 * Arguments:  head: inside an object allocated with malloc/calloc/realloc/
 *             aligned_alloc, at byte offset `offset` from its start
 *             (offsetof(struct T, head_member)); offset < 4096, else the call aborts
 *             with a diagnostic.
 * Progress, Ordering, Caller: as ps_call (no callback pointer is stored: the offset is,
 *             and the run loop tells it from a function's address, as Linux's
 *             kfree_rcu does).
 * Implements: as ps_call.
 */
void ps_call_free(struct ps *ps, struct ps_head *head, size_t offset);

/*
 * ps_barrier - wait until every callback queued on ps before the call has run.
 *
 * Every thread's queue counts, exited threads' too. Closes every open list, waits for
 * the grace period of each batch, and runs what is ready, in the caller.
 *
 * Progress:   blocking: waits for sections of ps (as ps_synchronize) and for a queue's
 *             mutex while another thread runs that queue's callbacks.
 * Ordering:   every callback queued before the call happens-before the return.
 * Caller:     any thread outside every section of ps and not from a callback (either
 *             would wait for itself: the call aborts with a diagnostic).
 * Implements: liburcu's rcu_barrier / CK's ck_epoch_barrier, on ParSec quiescence.
 */
void ps_barrier(struct ps *ps);

/*
 * ps_call_poll - run every queued callback of ps whose grace period is over now, from
 * every thread's queue: for a program's own periodic task, or a thread about to idle.
 *
 * Returns:    the number of callbacks run.
 * Progress:   never waits for a section: one quiescence computation per queue with
 *             work (at most one read barrier in all, PS_READ_MEMBARRIER); a queue whose
 *             mutex another thread holds is skipped (that thread is running it).
 * Ordering:   as ps_call for each callback run.
 * Caller:     any thread, inside or outside a section (its own section holds back
 *             what it began before); not from a callback (it returns 0 there).
 * Implements: ParSec (EuroSys 2016) §3.3 (quiescence computed without waiting).
 */
size_t ps_call_poll(struct ps *ps);

/* Counters of ps's deferred callbacks, summed over every thread's queue (a snapshot
 * taken without stopping anyone: queued and run are each exact totals, read one after
 * the other). */
struct ps_call_stats {
	uint64_t queued;  /* ps_call and ps_call_free calls, count */
	uint64_t run;     /* callbacks run, count */
	uint64_t pending; /* queued - run: callbacks waiting now, count */
	uint64_t batches; /* batches closed, count */
	uint64_t merges;  /* batches merged into the previous one because a queue held
			   * PS_CALL_RING batches (their callbacks then wait for the later
			   * stamp), count */
	uint64_t helped;  /* callbacks run by a thread other than the id that queued
			   * them (polls' help, ps_call_poll, ps_barrier), count */
};
/* Batches a thread's queue holds before new ones merge into its newest. */
#define PS_CALL_RING 16u
/*
 * ps_call_stats - ps's callback counters.
 *
 * Returns:    0, or -1 with errno = EINVAL (ps or out NULL).
 * Progress:   wait-free: O(threads) loads.
 * Caller:     any thread.
 * Implements: instrumentation (no paper).
 */
int ps_call_stats(struct ps *ps, struct ps_call_stats *out);

/*
 * ps_quiescence_point - the calling thread's last computed quiescence point.
 *
 * Returns:    a time in ticks at or before which every section of ps has ended; 0 if
 *             the caller has computed none yet.
 * Progress:   wait-free (one load from the caller's own line).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.3, optimisation 2.
 */
tsync_tick_t ps_quiescence_point(struct ps *ps);

/* Counters of the calling thread's ps_quiesce calls, for tests and diagnostics. Every
 * field is a count of events since the thread's record for ps was created. */
struct ps_stats {
	uint64_t quiesce_calls;     /* ps_quiesce calls, count */
	uint64_t quiesce_true;      /* ... that returned true, count */
	uint64_t own_point_hits;    /* calls answered by the caller's own published point
				     * (opt. 2), count */
	uint64_t peer_point_hits;   /* calls answered by another thread's published point
				     * (opt. 2), count */
	uint64_t cache_hits;        /* per-thread checks answered from the local cache
				     * (opt. 3), count of thread records */
	uint64_t remote_reads;      /* per-thread checks that read the other thread's line,
				     * count of thread records */
	uint64_t barriers;          /* read barriers (membarrier calls) made, count */
	uint64_t barrier_deferrals; /* ps_free's reclamations that found a barrier needed
				     * and the read interval not yet over, count */
	uint64_t clock_advances;    /* domain clock-word advances made, count */
	uint64_t fence_switches;    /* switches of a PS_READ_MEMBARRIER instance to its fence
				     * mode made, count (docs/design.md §2.6) */
};
/*
 * ps_stats_thread - the calling thread's ps_quiesce counters for ps.
 *
 * Arguments:  out: filled with the counters (all 0 if the caller never quiesced ps).
 * Returns:    0. Like every tsync stats function it returns int, 0 or -1 with errno;
 *             this one has no failing case.
 * Progress:   wait-free.
 * Caller:     any thread (its own counters only).
 * Implements: ParSec (EuroSys 2016) §3.3 (counts its optimisations).
 */
int ps_stats_thread(struct ps *ps, struct ps_stats *out);

/*
 * ps_enter, ps_exit - begin and end a parallel section of ps.
 *
 * Sections nest (at most 15 deep per instance); only the outermost pair records anything,
 * on the caller's own line. After the outermost exit the caller holds no reference into ps.
 *
 * Progress:   wait-free: two loads and a store to the caller's own line, one load of the
 *             instance's first line; no fence or counter read on the membarrier path.
 * Ordering:   ps_enter: acquire load, then release store; ps_exit: release store.
 * Caller:     any thread (a lazily registered one aborts if its record cannot be
 *             allocated). A 16th nested ps_enter, or a ps_exit outside a section of ps,
 *             aborts with a diagnostic. All of it: docs/design.md §2.8.
 * Implements: ParSec (EuroSys 2016) §2.2 and §3.3, optimisation 1; the clock word and
 *             the read barrier are tsync's (docs/design.md §2).
 */
static inline void ps_enter(struct ps *ps);

static inline void ps_exit(struct ps *ps);

/*
 * ps_in_section - is the calling thread inside a section of ps?
 *
 * Returns:    true while the caller's nesting depth for ps is not 0.
 * Progress:   wait-free (reads the caller's own line).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §2.2.
 */
static inline bool ps_in_section(struct ps *ps);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_H */

/* The inline bodies (not API). */
#include <tsync/static/ps.h>
