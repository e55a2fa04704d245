/*
 * tsync/rlu.h - Read-Log-Update: multi-pointer atomic updates with per-thread write logs.
 *
 * The RLU study (Appl. Sci. 2022) §3.2 (procedure, Fig. 2) and §4.1 (API use, Fig. 4); the
 * original design is Matveev, Shavit, Felber, Marlier, "Read-Log-Update", SOSP 2015 (the
 * study's ref. [24]).
 *
 * Model. An RLU section is the span between rlu_reader_lock() and rlu_reader_unlock().
 * Every section reads the global clock into the thread's local clock when it begins. A
 * section becomes a writer by locking objects with rlu_try_lock(): the object is copied
 * into the thread's write log and every change goes to the copy. At rlu_reader_unlock
 * the writer commits: it sets its write clock to global clock + 1 and then increments
 * the global clock. From then on a section whose local clock is >= that write clock
 * "steals" the copies (rlu_deref returns the copy), older sections keep reading the
 * originals: all of a commit's changes - any number of pointers in any number of
 * objects - become visible to a new section at once, and never partially. The writer
 * then waits for the sections that began before its commit (rlu_synchronize), writes
 * the copies back to the originals, unlocks them, and frees the objects it rlu_free'd.
 *
 * Deferral (struct rlu_config.max_write_sets > 1; SOSP'15 §3.7): a writer commits
 * (publishes) at every rlu_reader_unlock but synchronizes, writes back and unlocks only
 * after max_write_sets commits, when its log fills up, when it locks an object that it
 * still holds from an earlier deferred commit, or when another thread asked it to
 * (that thread hit one of its locks). Each deferred write set has its own write clock,
 * so readers see each commit exactly when it is published. A thread that stops using an
 * instance with deferred writes pending must call rlu_flush() (other writers that need
 * its locks abort until it does; a registered thread that exits does it automatically).
 *
 * Objects are allocated with rlu_alloc (malloc plus a 16-byte header); after the
 * writer's own grace period they go straight back to malloc: RLU's synchronize is
 * already the grace period, so a second, SMR-based one (ps_mem) would only add cost.
 * docs/rlu.md explains the choice.
 *
 * Progress: readers never wait (rlu_reader_lock/rlu_deref are wait-free); rlu_try_lock
 * never waits (it fails instead); a committing writer waits for older sections
 * (blocking, like synchronize_rcu) unless it defers.
 *
 * Threads: every function takes the caller's own handle from rlu_thread_get(); a handle
 * must only be used by the thread it belongs to. Sections do not nest.
 *
 * Retry protocol (every writer must follow it):
 *     struct rlu_thread *self = rlu_thread_get(r);
 *   restart:
 *     rlu_reader_lock(self);
 *     ... p = rlu_deref(self, head->next) ...
 *     if (!rlu_try_lock(self, &p, sizeof *p)) { rlu_abort(self); goto restart; }
 *     ... rlu_assign_ptr(self, &p->next, q) ...
 *     rlu_reader_unlock(self);
 */
#ifndef TSYNC_RLU_H
#define TSYNC_RLU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rlu;
struct rlu_thread;

/* Configuration for rlu_create(); RLU_CONFIG_INIT gives the defaults. */
struct rlu_config {
	size_t size;             /* sizeof(struct rlu_config) */
	unsigned max_write_sets; /* commits per synchronize: 1 = no deferral (default 1),
				  * at most RLU_MAX_WRITE_SETS */
	size_t log_bytes;        /* per-thread write-log bytes per generation (default
				  * 64 KiB); bounds one section's write set, and the deferred
				  * write sets together */
	bool poison_on_free;     /* fill freed objects with 0xdb before free() (tests) */
};
#define RLU_MAX_WRITE_SETS 64u
#define RLU_CONFIG_INIT                                \
	{                                              \
		sizeof(struct rlu_config), 1, 0, false \
	}

/*
 * rlu_create - a new RLU domain: its own global clock and per-thread write logs.
 *
 * Arguments: cfg: NULL for the defaults, else cfg->size = sizeof(struct rlu_config),
 *            max_write_sets in 0..RLU_MAX_WRITE_SETS (0: 1), log_bytes 0 (64 KiB) or
 *            1 KiB..1 GiB (rounded up to 16 bytes).
 * Returns:   the domain; NULL with errno = EINVAL (bad cfg) or ENOMEM.
 * Progress:  blocking (malloc; the registry mutex, to add the thread-exit hook).
 * Caller:    any thread.
 */
struct rlu *rlu_create(const struct rlu_config *cfg);
/*
 * rlu_destroy - free the domain's thread records and logs.
 *
 * Arguments: r: the domain, or NULL (nothing happens).
 * Returns:   nothing. Write sets still deferred are written back and their rlu_free'd
 *            objects freed first; objects still linked in user structures are the user's
 *            (free them with rlu_free_unsafe).
 * Progress:  blocking (the registry mutex, free).
 * Caller:    any thread, once no thread is in a section of r or uses r again.
 */
void rlu_destroy(struct rlu *r);

/*
 * rlu_thread_get - the calling thread's handle for r.
 *
 * Arguments: r: the domain.
 * Returns:   the handle, created on first use (registers the thread with tsync's
 *            registry, allocates its two logs of log_bytes and its free list); NULL with
 *            errno = EAGAIN (registry full) or ENOMEM.
 * Progress:  wait-free after the thread's first call (a thread-local load, an acquire
 *            load, a test); blocking on the first (malloc).
 * Ordering:  none beyond the handle's own publication (acquire).
 * Caller:    the thread the handle is for; a handle is used by that thread only.
 */
struct rlu_thread *rlu_thread_get(struct rlu *r);
/*
 * rlu_flush - synchronize now: write back and unlock the caller's deferred write sets and
 * free the objects they rlu_free'd.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing.
 * Progress:  blocking: waits for every section that began before the last deferred
 *            commit (spins TSYNC__SPIN_HANDOFF rounds per section, then yields).
 * Ordering:  the write-back happens before the unlock (release stores of the headers).
 * Caller:    the handle's thread, outside a section.
 * Implements: deferral, Matveev et al. (SOSP 2015) §3.7.
 */
void rlu_flush(struct rlu_thread *self);

/*
 * rlu_reader_lock - begin a section.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing. Every object the section reads through rlu_deref is the version
 *            committed at or before its local clock (the global clock read here).
 * Progress:  wait-free (a store, a full fence, two loads), except that it first
 *            synchronizes the caller's deferred write sets (blocking, as rlu_flush) if
 *            another thread asked it to.
 * Ordering:  the section's marker (run counter, release) is ordered before the clock load
 *            by a seq_cst fence: a committing writer either sees the section or the
 *            section sees its commit.
 * Caller:    the handle's thread, outside a section (sections do not nest).
 * Implements: the RLU study (Appl. Sci. 2022) §3.2 (Fig. 2, reader lock).
 */
void rlu_reader_lock(struct rlu_thread *self);
/*
 * rlu_reader_unlock - end the section; a writer commits.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing. A writer sets its write clock to global clock + 1 and increments the
 *            global clock; unless it defers, it then waits for the sections that began
 *            before the commit, writes its copies back, unlocks them and frees its
 *            rlu_free'd objects (docs/design.md §9.9).
 * Progress:  a reader: wait-free (one store), unless a peer asked it to synchronize its
 *            deferred write sets. A writer: blocking on the grace period, unless it defers.
 * Ordering:  the section end is a release store; the commit is seq_cst, then the write
 *            clock is published with a release store: a stealing section sees all of it.
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.2 (Fig. 2: unlock, commit, synchronize).
 */
void rlu_reader_unlock(struct rlu_thread *self);
/*
 * rlu_abort - abandon the section: unlock and discard its copies, forget its rlu_free
 * calls, end the section; then back off (2^n relaxes after the n-th consecutive abort,
 * n <= 8, a yield beyond).
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing; nothing of the section is ever visible. Deferred write sets, or a
 *            log full of aborted entries, are synchronized first (docs/design.md §9.9).
 * Progress:  blocking only in that synchronization or grace period.
 * Ordering:  the unlocks are release stores.
 * Caller:    the handle's thread, inside a section, after a failed rlu_try_lock; then
 *            retry the whole section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.2 and §4.1 (the retry protocol, Fig. 4).
 */
void rlu_abort(struct rlu_thread *self);

/*
 * rlu_deref - the version of obj this section must read.
 *
 * Arguments: self: the caller's handle; obj: NULL or a pointer from rlu_alloc/rlu_deref.
 * Returns:   NULL for NULL; the caller's own copy if it locked obj; another writer's copy
 *            if that writer committed at or before this section's local clock (steal);
 *            else obj itself.
 * Progress:  wait-free, except that a deref meeting a write set in the middle of its
 *            commit (two stores) spins until it is published. Inline fast path: one load
 *            of the caller's own line when no commit can be stolen (docs/design.md §9.9).
 * Ordering:  acquire: the returned version's contents are those committed.
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.2 (Fig. 2, dereference and steal).
 */
static inline void *rlu_deref(struct rlu_thread *self, void *obj);
/*
 * rlu_try_lock - lock *pobj for modification by this section and point *pobj to the
 * caller's private copy, which it then modifies freely.
 *
 * Arguments: self: the caller's handle; pobj: an object or a copy of one, as rlu_deref
 *            returned it; size: the object's size in bytes, as given to rlu_alloc.
 * Returns:   true on success (also when the caller already holds it). false - call
 *            rlu_abort and restart the section - when another thread holds the object,
 *            the caller holds it from an earlier deferred write set, or the log is full
 *            (ENOSPC: the copies cannot fit even in an empty log; docs/design.md §9.9).
 * Progress:  wait-free (one CAS; it fails instead of waiting).
 * Ordering:  acq_rel CAS on the header: publishes the copy, acquires the last write-back.
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.2 (Fig. 2, try-lock).
 */
bool rlu_try_lock(struct rlu_thread *self, void **pobj, size_t size);
/*
 * rlu_try_lock_const - lock *pobj without modifying it (e.g. the node a delete unlinks:
 * no concurrent writer may change it, but nothing is written back).
 *
 * Arguments, Returns, Progress, Ordering, Caller: as rlu_try_lock; the copy must not be
 *            modified (a later rlu_try_lock of the same object in the section makes it a
 *            copy that is written back).
 * Implements: the RLU API of Matveev et al. (SOSP 2015), as the RLU study (Appl. Sci.
 *            2022) §4.1 uses it.
 */
bool rlu_try_lock_const(struct rlu_thread *self, void **pobj, size_t size);
/*
 * rlu_assign_ptr - *p_ptr = obj, storing the original object even when obj is a copy
 * (links always point to originals).
 *
 * Arguments: self: the caller's handle; p_ptr: inside a copy the caller locked (or in
 *            memory no reader sees yet); obj: NULL, an object or a copy.
 * Returns:   nothing.
 * Progress:  wait-free.
 * Ordering:  a plain store: the commit publishes it (readers reach the copy only through
 *            its write clock or, after write-back, through the release unlock).
 * Caller:    the handle's thread, inside a section.
 */
void rlu_assign_ptr(struct rlu_thread *self, void **p_ptr, void *obj);
/*
 * rlu_cmp_objs - do a and b (objects or copies) denote the same object?
 *
 * Returns:   true if rlu_actual(a) == rlu_actual(b).
 * Progress:  wait-free.
 * Caller:    any thread, on objects it may read.
 */
bool rlu_cmp_objs(const void *a, const void *b);
/*
 * rlu_actual - the original object of a.
 *
 * Arguments: a: NULL, an object or a copy.
 * Returns:   a itself unless a is a copy; then the object it is a copy of.
 * Progress:  wait-free (one relaxed load).
 * Caller:    any thread, on objects it may read.
 */
void *rlu_actual(void *a);

/*
 * rlu_alloc - a new object, not yet visible to anyone; publish it with rlu_assign_ptr in a
 * locked copy.
 *
 * Arguments: size: bytes of data (zeroed); a 16-byte header precedes them.
 * Returns:   the object; NULL with errno = ENOMEM.
 * Progress:  blocking (malloc).
 * Caller:    any thread.
 */
void *rlu_alloc(size_t size);
/*
 * rlu_free - free obj once this section's commit has been synchronized (after the grace
 * period of its write set, by the writer's own synchronize).
 *
 * Arguments: self: the caller's handle; obj: NULL (nothing happens), an object or a copy,
 *            locked by the caller (rlu_try_lock or rlu_try_lock_const) and unlinked in the
 *            same section.
 * Returns:   nothing; forgotten on rlu_abort. Aborts the process if the free list cannot
 *            grow (out of memory).
 * Progress:  wait-free, but for a realloc when the free list doubles.
 * Caller:    the handle's thread, inside a section.
 */
void rlu_free(struct rlu_thread *self, void *obj);
/*
 * rlu_free_unsafe - free an object that no section can reach (teardown; never published).
 *
 * Arguments: obj: NULL (nothing happens) or an object from rlu_alloc (not a copy).
 * Progress:  blocking (free).
 * Caller:    any thread.
 */
void rlu_free_unsafe(void *obj);

/* Per-thread counters, for benchmarks and tests. uint64_t only (rlu_stats sums them word
 * by word); each is written by its thread only. */
struct rlu_stats {
	uint64_t sections;      /* sections begun (rlu_reader_lock calls) */
	uint64_t commits;       /* write sets committed (writer rlu_reader_unlock calls) */
	uint64_t aborts;        /* rlu_abort calls */
	uint64_t syncs;         /* synchronizations: write-backs of the deferred write sets,
				 * and grace periods that recycled a log of dead entries */
	uint64_t sync_requests; /* requests this thread sent to a lock holder to synchronize */
	uint64_t writebacks;    /* copies written back into their object (const locks not) */
	uint64_t frees;         /* objects returned to malloc after a synchronize */
};
/*
 * rlu_stats_thread - one thread's counters.
 *
 * Arguments: self: a handle; out: where to copy its counters.
 * Returns:   0; -1 with errno = EINVAL if self or out is NULL.
 * Progress:  wait-free.
 * Ordering:  none: exact for the caller's own handle, approximate for another's.
 * Caller:    any thread (normally the handle's own).
 */
int rlu_stats_thread(struct rlu_thread *self, struct rlu_stats *out);
/*
 * rlu_stats - the sum of the counters of every thread of r.
 *
 * Arguments: r: the domain; out: the sum.
 * Returns:   0; -1 with errno = EINVAL if r or out is NULL.
 * Progress:  wait-free: one pass over the thread records (the registry's capacity).
 * Ordering:  none: approximate while threads run (each counter read once, racily).
 * Caller:    any thread.
 */
int rlu_stats(struct rlu *r, struct rlu_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_RLU_H */

/* The inline bodies (not API). */
#include <tsync/static/rlu.h>
