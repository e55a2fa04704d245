/*
 * tsync/oplog.h - OpLog: per-thread time-stamped operation logs for update-heavy data
 * structures (OpLog (MIT TR 2014): Boyd-Wickizer, Kaashoek, Morris, Zeldovich, "OpLog: a
 * library for scaling update-heavy data structures").
 *
 * An update that has no return value ("deferrable", OpLog (MIT TR 2014) §4.1) is not
 * applied to the shared structure: oplog_log() appends it, with a timestamp, to the
 * calling thread's log for that object, touching only cache lines the thread already
 * owns. A read calls
 * oplog_synchronize(), which takes the object's lock, merges every thread's log for the
 * object in timestamp order, executes the operations on the underlying structure, and
 * returns with the object locked; the read then uses the structure and calls
 * oplog_unlock() (§5.1, Fig. 6).
 *
 *   struct my_add { struct oplog_op op; struct item *it; };
 *   static void my_add_exec(struct oplog_object *o, struct oplog_op *op) {...}
 *   struct my_add a = { OPLOG_OP_INIT(struct my_add, my_add_exec, 0), it };
 *   oplog_log(&s->obj, &a.op);        // any thread: appended to its own log
 *   oplog_synchronize(&s->obj);       // reader: all logged updates applied
 *   ... read s's underlying structure ...
 *   oplog_unlock(&s->obj);
 *
 * Log types (§5.2). A struct oplog_type says how a per-thread log behaves: push (insert
 * an op: append it, absorb it into an op already logged - "local absorption" - or fold
 * it into a specialised state such as a per-thread counter, Fig. 8), apply (merge all
 * logs and execute; the default merges by timestamp and calls try_absorb on every op
 * first, so that an op can cancel an earlier, not yet executed one - "global
 * absorption", §5.2 and Fig. 12) and try_absorb.
 *
 * Logs are per THREAD, not per CPU: tsync's registry gives each thread a small id, and a
 * thread's log is its own whatever CPU it runs on, so logs are correct without pinning
 * and a preempted logger never blocks another CPU's log (docs/oplog.md, "Per-thread
 * logs"). Logs are bounded: a push that finds the log full synchronizes the object and
 * retries.
 *
 * Dynamic log allocation (§4.2, §6). Logs live in per-thread hash tables of a struct
 * oplog_domain (one domain per log type, the paper's "per-core hash table for each type"):
 * `slots` logs per thread, and object o may have a log only in slot hash(o) of each
 * table. An object that was not updated recently on a thread holds no log there: when
 * another object needs the slot, the occupant is synchronized (its logged ops applied)
 * and evicted. An object with no log costs only its shared part
 * (sizeof(struct oplog_object) = 16 bytes plus the underlying structure); a domain costs
 * `slots` logs per thread that has logged into it, whatever the number of objects.
 *
 * Ordering across threads (§4.1, §6.1). Timestamps come from tsync's clock, read under
 * the log's lock after a full fence (tsync_now_ordered) and made strictly increasing per
 * log. The paper relied on counters synchronised to better than a cache-line transfer
 * (its §6.1 experiment); tsync measures the skew bound S instead (<tsync/clock.h>), and
 * the order policy chooses (docs/oplog.md §3):
 *   OPLOG_ORDER_CLOCK  (default with an invariant counter) oplog_log returns only once
 *       the clock reads more than ts + S (commit wait): an update that completes before
 *       another begins, on any CPU, has the smaller timestamp. Costs about S ticks per
 *       logged op that is not absorbed; nothing when S = 0.
 *   OPLOG_ORDER_TRUST  the paper's assumption, no wait: tsync_clock_inversion() == 0 is
 *       evidence for it, not proof.
 *   OPLOG_ORDER_COUNTER  (default without an invariant counter) timestamps from one
 *       shared fetch-and-add counter per domain: always correct, but updates stop scaling.
 * TSYNC_OPLOG_ORDER=clock|trust|counter overrides the default of every domain created
 * with OPLOG_ORDER_AUTO. Types flagged OPLOG_TYPE_UNORDERED (commutative updates, such as
 * the counter) take no timestamp and never wait.
 *
 * Which snapshot a read sees: oplog_synchronize locks slot hash(o) of every thread's
 * table at once (in thread-id order, while holding the object lock) and applies every
 * op found there; an op whose log append finished before that instant is applied, one
 * that started after it is not. Together with the timestamp order inside the batch this
 * makes every structure built on OpLog linearizable if its sequential version is (the
 * argument is in docs/oplog.md, "Linearizability").
 *
 * Threads: any registered or unregistered thread (registration is lazy, <tsync/thread.h>);
 * a thread's pending ops outlive it (the domain owns the tables). Callbacks (exec, push,
 * apply, try_absorb) run with OpLog's locks held and must not call oplog functions on
 * objects of the same domain.
 */
#ifndef TSYNC_OPLOG_H
#define TSYNC_OPLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/arch.h>
#include <tsync/clock.h>
#include <tsync/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

struct oplog_object;
struct oplog_domain;

/*
 * An operation: embed this header as the FIRST member of a struct that also holds the
 * operation's arguments. oplog_log() copies the whole struct (size bytes) into the log,
 * so the caller's copy may live on its stack; nothing is allocated per op. exec is
 * called at synchronize time with the object lock held, in timestamp order, with a
 * pointer to the logged copy (Fig. 6, Op::exec).
 */
struct oplog_op {
	void (*exec)(struct oplog_object *obj, struct oplog_op *op);
	uint64_t ts;    /* set by oplog_log (0 for OPLOG_TYPE_UNORDERED types) */
	uint16_t size;  /* bytes of the whole op struct, header included (<= OPLOG_OP_MAX) */
	uint16_t flags; /* OpLog's: OPLOG_OP_DEAD once absorbed (never executed) */
	uint32_t kind;  /* the structure's own tag (e.g. add / remove), for absorption */
};
#define OPLOG_OP_DEAD 1u
#define OPLOG_OP_MAX 256u
/* Initialiser for the header of an op struct of type T. */
#define OPLOG_OP_INIT(T, exec_fn, kind_)                                \
	{                                                               \
		(exec_fn), 0, (uint16_t)sizeof(T), 0, (uint32_t)(kind_) \
	}

/* Return values of a log type's push. */
enum oplog_push {
	OPLOG_PUSHED = 0,   /* the op was recorded; it takes effect at the next synchronize */
	OPLOG_ABSORBED = 1, /* the op cancelled an op already in this log (local absorption):
			     * neither will ever execute */
	OPLOG_FULL = 2,     /* no room: OpLog synchronizes the object and pushes again */
};

/*
 * A log type (Fig. 6 "Log"). Zero-initialise, set size = sizeof(struct oplog_type) and
 * fill what differs from the default; NULL hooks take the default op log:
 *   - a bounded array of ops in append order (= timestamp order) of `capacity` bytes,
 *   - push appends (oplog_ops_append),
 *   - apply merges the logs by timestamp (ties: lower thread id first), calls try_absorb
 *     (if set) on every op in that order BEFORE executing any, then executes the ops
 *     that are not dead (oplog_ops_apply).
 * A type with a specialised per-thread state (Fig. 8) sets log_bytes, push and apply,
 * and usually OPLOG_TYPE_UNORDERED.
 */
struct oplog_type {
	size_t size;      /* sizeof(struct oplog_type) */
	const char *name; /* for diagnostics */
	unsigned flags;   /* OPLOG_TYPE_UNORDERED: ops commute; no timestamp, no commit wait */
	/* Bytes of per-thread log state for a custom push/apply (zeroed when a slot is given
	 * to an object). 0: the default op log. */
	size_t log_bytes;
	/* Default op log: bytes of op storage per thread per object (default 4096; at least
	 * sizeof(struct oplog_op); an op larger than this cannot be logged). */
	size_t capacity;
	/* push(obj, log, op): called by oplog_log with the thread's slot locked, op->ts
	 * already set. Returns an enum oplog_push. Must leave a full log unchanged. */
	int (*push)(struct oplog_object *obj, void *log, struct oplog_op *op);
	/* apply(obj, logs, n): called by oplog_synchronize with the object and the n logs
	 * (n >= 1, in thread-id order) locked. Must execute every pending op and leave every
	 * log empty. */
	void (*apply)(struct oplog_object *obj, void *const *logs, unsigned n);
	/* try_absorb(obj, op): global absorption, called by the default apply on each op in
	 * timestamp order before any op is executed. Return true to drop op; it may also
	 * cancel an earlier op of the same batch with oplog_op_cancel(). */
	bool (*try_absorb)(struct oplog_object *obj, struct oplog_op *op);
	/* empty(log): does a custom log hold nothing to apply? Lets OpLog skip it when
	 * synchronizing and take its slot without synchronizing its owner. NULL: a custom
	 * log is assumed non-empty (the default op log needs no hook). Slot lock held. */
	bool (*empty)(const void *log);
	/* unlocked(obj): called by oplog_unlock after the object lock is released, with no
	 * OpLog lock held (e.g. a counter's release callback). May destroy obj. */
	void (*unlocked)(struct oplog_object *obj);
};
#define OPLOG_TYPE_UNORDERED 1u

enum oplog_order {
	OPLOG_ORDER_AUTO = 0,    /* CLOCK with an invariant counter, else COUNTER; env override */
	OPLOG_ORDER_CLOCK = 1,   /* tsync clock + commit wait of the skew bound */
	OPLOG_ORDER_TRUST = 2,   /* tsync clock, no wait (OpLog (MIT TR 2014) §6.1's assumption) */
	OPLOG_ORDER_COUNTER = 3, /* one shared atomic counter per domain */
};

/* Domain configuration; OPLOG_CONFIG_INIT gives the defaults (0 = default). */
struct oplog_config {
	size_t size;    /* sizeof(struct oplog_config) */
	unsigned slots; /* logs per thread, a power of two (default 64) */
	int order;      /* enum oplog_order (default OPLOG_ORDER_AUTO) */
};
#define OPLOG_CONFIG_INIT                         \
	{                                         \
		sizeof(struct oplog_config), 0, 0 \
	}

/*
 * The shared part of every OpLog object; embed it in the structure it wraps (the paper's
 * Object base class). Fields are OpLog's.
 */
struct oplog_object {
	TSYNC_ATOMIC(uint32_t) lock; /* the per-object lock taken by oplog_synchronize */
	uint32_t hash;               /* slot index hash, from the object's address */
	struct oplog_domain *dom;
};

/*
 * oplog_domain_create - a set of per-thread log tables for objects of one log type.
 *
 * Arguments:  type: copied (the caller's struct may go away; its hooks must stay
 *             valid). cfg: the configuration, or NULL for the defaults.
 * Returns:    the domain; NULL with errno = EINVAL (type NULL, bad type->size or
 *             cfg->size, slots not a power of two or > 2^20, a bad order, a custom log
 *             state (log_bytes) without push and apply, or a default op log whose
 *             capacity is below sizeof(struct oplog_op) or above 1 GiB) or ENOMEM.
 * Progress:   blocking (allocates); initialises the clock.
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §4.2 and §6 (per-type tables, dynamic log allocation).
 */
struct oplog_domain *oplog_domain_create(const struct oplog_type *type,
					 const struct oplog_config *cfg);

/*
 * oplog_domain_destroy - free the tables.
 *
 * Arguments:  d: the domain, or NULL (ignored).
 * Caller:     any thread, once (not checked) every object of the domain was finalised
 *             with oplog_object_fini and no thread uses the domain.
 * Implements: OpLog (MIT TR 2014) §6.
 */
void oplog_domain_destroy(struct oplog_domain *d);

/*
 * oplog_domain_type, oplog_domain_order, oplog_order_name - a domain's configuration.
 *
 * Returns:    the domain's copy of its log type; the order policy in force for d (never
 *             OPLOG_ORDER_AUTO); the name of an order policy: "clock", "trust" or
 *             "counter".
 * Progress:   wait-free.
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §5.2 (types), §6.1 (ordering).
 */
const struct oplog_type *oplog_domain_type(const struct oplog_domain *d);

enum oplog_order oplog_domain_order(const struct oplog_domain *d);
const char *oplog_order_name(enum oplog_order o);

/*
 * oplog_object_init - make obj an object of domain d with no pending ops, unlocked.
 *
 * Returns:    0, or -1 with errno = EINVAL if obj or d is NULL.
 * Progress:   wait-free.
 * Caller:     any thread; obj must not be in use.
 * Implements: OpLog (MIT TR 2014) §5.1 (the Object base class).
 */
int oplog_object_init(struct oplog_object *obj, struct oplog_domain *d);

/*
 * oplog_object_fini - apply every pending op of obj and detach it from OpLog.
 *
 * Applies the ops as oplog_synchronize does, detaches obj from every thread's table, and
 * returns with obj unlocked and unknown to OpLog: its memory may then be freed or reused.
 *
 * Progress:   blocking (OpLog's own evictions of obj are waited for).
 * Caller:     any thread, once no other thread calls oplog_log, oplog_synchronize or a
 *             structure function on obj, concurrently or afterwards.
 * Implements: OpLog (MIT TR 2014) §6.
 */
void oplog_object_fini(struct oplog_object *obj);

/*
 * oplog_log - record op for obj in the calling thread's log (op->size bytes copied, op->ts
 * set); a slot's other object is evicted first, a full log synchronized.
 *
 * Arguments:  op: the op header, first member of an op struct of op->size bytes.
 * Returns:    OPLOG_PUSHED or OPLOG_ABSORBED, or -1 with errno = EINVAL (a bad op->size
 *             or op for this log type: docs/design.md §9.11), ENOMEM (the thread's first
 *             table) or EAGAIN (the thread cannot be registered).
 * Progress:   no shared store on the fast path (OPLOG_ORDER_COUNTER: one fetch-and-add);
 *             blocks on a synchronize holding the slot lock, evictions and full logs;
 *             OPLOG_ORDER_CLOCK: a logged op spins at most S ticks.
 * Ordering:   visible to every synchronize that starts after the return (release on the slot lock).
 * Caller:     any thread (registers lazily).
 * Implements: OpLog (MIT TR 2014) §5.1, Fig. 6 (Object::log); commit wait: §6.1.
 */
int oplog_log(struct oplog_object *obj, struct oplog_op *op);

/*
 * oplog_synchronize - take obj's lock and apply every logged op, in timestamp order.
 *
 * Applies every op logged for obj by any thread before this call began (and possibly
 * some concurrent ones), then returns with obj locked: the caller reads (or updates
 * directly) the underlying structure, then calls oplog_unlock.
 *
 * Progress:   blocking: waits for the object lock and for each thread's slot lock;
 *             O(threads that ever logged into the domain) lock acquisitions plus the ops
 *             applied.
 * Ordering:   acquire: everything the applied ops' loggers did before logging
 *             happens-before the caller's reads.
 * Caller:     any thread that does not hold obj's lock already (self-deadlock).
 * Implements: OpLog (MIT TR 2014) §5.1, Fig. 6 (Object::synchronize).
 */
void oplog_synchronize(struct oplog_object *obj);

/*
 * oplog_unlock - release the lock taken by oplog_synchronize, then run the type's
 * unlocked hook if it has one.
 *
 * Ordering:   release: the caller's accesses to the structure happen-before the next
 *             synchronize's.
 * Caller:     the thread that holds obj's lock (from oplog_synchronize).
 * Implements: OpLog (MIT TR 2014) §5.1, Fig. 6 (Object::unlock).
 */
void oplog_unlock(struct oplog_object *obj);

/* Counters of a domain, summed over its tables (approximate while threads run). Counts
 * are totals since the domain's creation. */
struct oplog_stats {
	uint64_t tables;          /* per-thread tables allocated, count */
	uint64_t table_bytes;     /* bytes of those tables */
	uint64_t slot_bytes;      /* bytes per slot (one log and its header) */
	uint64_t logged;          /* pushes that returned OPLOG_PUSHED, count of ops */
	uint64_t absorbed_local;  /* pushes that returned OPLOG_ABSORBED, count of ops */
	uint64_t absorbed_global; /* ops dropped by try_absorb or cancelled during apply */
	uint64_t executed;        /* ops executed by the default apply */
	uint64_t syncs;           /* oplog_synchronize calls that applied at least one log */
	uint64_t full_syncs;      /* synchronizes forced by a full log, count */
	uint64_t evictions;       /* slots taken from another object (synchronized first when
				   * its log there was not empty), count */
	uint64_t commit_waits;    /* logged ops that had to wait for the skew bound, count */
};
/*
 * oplog_domain_stats - d's counters.
 *
 * Arguments:  out: filled with the counters.
 * Returns:    0, or -1 with errno = EINVAL (d or out NULL).
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §5.2 (absorption), §6 (tables, evictions).
 */
int oplog_domain_stats(struct oplog_domain *d, struct oplog_stats *out);

/* ---- helpers for log types built on the default op log ---------------------------- */

/*
 * The oplog_ops_* helpers below work on the default op log (the per-thread "op log" of
 * OpLog (MIT TR 2014) §5.2: ops appended in time order); every one runs with the log's slot lock
 * held (inside a push, apply or try_absorb hook) unless it says otherwise.
 *
 * oplog_ops_append - the default push: append op (op->size bytes, padded to 8).
 *
 * Returns:    OPLOG_PUSHED or OPLOG_FULL.
 * Caller:     a push hook (slot lock held).
 * Implements: OpLog (MIT TR 2014) §5.2.
 */
int oplog_ops_append(struct oplog_object *obj, void *log, struct oplog_op *op);

/*
 * oplog_ops_find_last - the newest live op in log for which match(op, arg) is true.
 *
 * Returns:    the op, or NULL.
 * Progress:   O(ops in the log).
 * Caller:     a push hook doing local absorption (slot lock held).
 * Implements: OpLog (MIT TR 2014) §4.2 (local absorption).
 */
struct oplog_op *oplog_ops_find_last(void *log,
				     bool (*match)(const struct oplog_op *op, const void *arg),
				     const void *arg);

/*
 * oplog_op_cancel - mark a logged op dead: it will not execute.
 *
 * Arguments:  op: in a push hook, an op from oplog_ops_find_last on the same log
 *             (counts as local absorption when the hook then returns OPLOG_ABSORBED); in
 *             try_absorb, an op of the batch being applied that has not executed yet
 *             (counts as global absorption).
 * Caller:     a push or try_absorb hook.
 * Implements: OpLog (MIT TR 2014) §4.2 and §5.2 (absorption).
 */
void oplog_op_cancel(struct oplog_op *op);

/*
 * oplog_ops_next - where the next oplog_ops_append to log will put its op.
 *
 * Returns:    that address; valid only if that append returns OPLOG_PUSHED.
 * Caller:     a push hook (slot lock held).
 * Implements: OpLog (MIT TR 2014) §4.2.
 */
struct oplog_op *oplog_ops_next(void *log);

/*
 * oplog_ops_live_at - is op a live (not cancelled) op of log, pointing into its used
 * part at a multiple of stride bytes from the start?
 *
 * For structures whose ops all have one stride (then op boundaries are fixed), to
 * validate a remembered op pointer before absorbing it.
 *
 * Progress:   O(1).
 * Caller:     a hook (slot lock held).
 * Implements: OpLog (MIT TR 2014) §4.2.
 */
bool oplog_ops_live_at(void *log, const struct oplog_op *op, size_t stride);

/*
 * oplog_ops_pop - if op is the newest op of log, remove it (the log shrinks); else
 * nothing.
 *
 * Progress:   O(1).
 * Caller:     a hook (slot lock held).
 * Implements: OpLog (MIT TR 2014) §4.2.
 */
void oplog_ops_pop(void *log, struct oplog_op *op);

/*
 * oplog_ops_apply - the default apply (see struct oplog_type).
 *
 * Caller:     an apply hook (object lock and the n logs' slot locks held).
 * Implements: OpLog (MIT TR 2014) §5.2, Fig. 6.
 */
void oplog_ops_apply(struct oplog_object *obj, void *const *logs, unsigned n);

/*
 * oplog_ops_used - bytes of live ops in a default op log (for tests and diagnostics).
 *
 * Caller:     slot lock held.
 * Implements: infrastructure (no paper section).
 */
size_t oplog_ops_used(const void *log);

/* ---- direct access to a specialised per-thread log (Fig. 8) ----------------------- */

/*
 * oplog_log_acquire, oplog_log_release - direct access to the calling thread's log for
 * obj, for a type with a custom per-thread state and OPLOG_TYPE_UNORDERED (a counter's
 * push is "add to my count"). Update the state between the two calls, at once; the next
 * synchronize applies it. oplog_log_acquire evicts the slot's occupant as oplog_log.
 *
 * Returns:    oplog_log_acquire: the log, locked; NULL with errno = EINVAL (not such a
 *             type), ENOMEM or EAGAIN.
 * Progress:   fast path (inline): one thread-local load, two loads, one uncontended
 *             exchange on the thread's own slot; no shared store. Slow path as oplog_log.
 * Ordering:   oplog_log_release is a release store: the update is visible to the next
 *             synchronize.
 * Caller:     any thread; oplog_log_release only with its own oplog_log_acquire's log.
 * Implements: OpLog (MIT TR 2014) §5.2, Fig. 8.
 */
static inline void *oplog_log_acquire(struct oplog_object *obj);

static inline void oplog_log_release(void *log);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_OPLOG_H */

/* The inline bodies (not API). */
#include <tsync/static/oplog.h>
