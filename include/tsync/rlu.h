/*
 * tsync/rlu.h - Read-Log-Update: multi-pointer atomic updates with per-thread write logs.
 *
 * Seed 003 §3.2 (procedure, Fig. 2) and §4.1 (API use, Fig. 4); the original design is
 * Matveev, Shavit, Felber, Marlier, "Read-Log-Update", SOSP 2015 (seed 003 ref. [24]).
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
#define RLU_CONFIG_INIT {sizeof(struct rlu_config), 1, 0, false}

/*
 * rlu_create: a new RLU domain (its own global clock and per-thread logs).
 * cfg: NULL for defaults. Returns NULL with errno = EINVAL (bad cfg) or ENOMEM.
 * Blocking. Any thread.
 */
struct rlu *rlu_create(const struct rlu_config *cfg);
/*
 * rlu_destroy: free the domain's thread records and logs; write sets still deferred are
 * written back first. Precondition: no thread is in a section or uses r again. Objects
 * still linked in user structures are the user's (free them with rlu_free_unsafe).
 */
void rlu_destroy(struct rlu *r);

/*
 * rlu_thread_get: the calling thread's handle for r, creating it on first use
 * (registers the thread with tsync's registry). Returns NULL with errno = EAGAIN or
 * ENOMEM. Wait-free after the first call (two loads). Calling thread only.
 */
struct rlu_thread *rlu_thread_get(struct rlu *r);
/* rlu_flush: synchronize and write back the caller's deferred write sets now. Must be
 * called outside a section. Blocking (waits for older sections). */
void rlu_flush(struct rlu_thread *self);

/*
 * rlu_reader_lock: begin a section. Marks the thread active (one store, then a full
 * fence) and reads the global clock into the local clock; every object this section
 * reads through rlu_deref is the version committed at or before that clock. Runs a
 * synchronization first if another thread asked this one to (deferral). Wait-free
 * otherwise. Not nestable.
 */
void rlu_reader_lock(struct rlu_thread *self);
/*
 * rlu_reader_unlock: end the section. A reader just marks itself inactive (release).
 * A writer marks itself inactive, commits (write clock := global clock + 1, then the
 * global clock is incremented; seq_cst), and unless deferring, waits until every
 * section that began before the commit has ended, writes its copies back, unlocks them
 * and frees its rlu_free'd objects. Blocking for writers (the grace period).
 */
void rlu_reader_unlock(struct rlu_thread *self);
/*
 * rlu_abort: abandon the section: unlock and discard this section's copies (nothing
 * of it is ever visible), forget its rlu_free calls, end the section; then, if the
 * failure came from deferral (own lock from an earlier write set, full log, or a peer's
 * request), synchronize the deferred write sets; if the log is full of the entries of
 * aborted sections (which keep their space while a concurrent section may still read
 * them) and no write set is deferred, wait for a grace period and recycle the log. Call
 * it after a failed rlu_try_lock, then retry the whole section. Blocking only in that
 * synchronization or grace period.
 */
void rlu_abort(struct rlu_thread *self);

/*
 * rlu_deref: the version of obj this section must read: the caller's own copy if it
 * locked obj; another writer's copy if that writer committed at or before this
 * section's local clock (steal); else obj itself. obj may be NULL (returns NULL) or
 * any pointer returned by rlu_alloc/rlu_deref. Acquire: the returned version's contents
 * are those committed. Wait-free. Inside a section only.
 * Inline fast path: a section that began when no committed write set was waiting for
 * its write-back (rlu_reader_lock read the count of such sets as 0), and that has not
 * locked anything itself, can only ever be asked to read originals - any commit it
 * could steal from comes after its local clock - so rlu_deref returns obj without
 * looking at its header (one load of the caller's own line). docs/rlu.md §3.
 */
struct rlu__thread_head {
	bool deref_fast; /* private: set by rlu_reader_lock, cleared by rlu_try_lock */
};
void *rlu__deref_slow(struct rlu_thread *self, void *obj);
static inline void *rlu_deref(struct rlu_thread *self, void *obj)
{
	if (TSYNC_LIKELY(((const struct rlu__thread_head *)(const void *)self)->deref_fast))
		return obj;
	return rlu__deref_slow(self, obj);
}
/*
 * rlu_try_lock: lock *pobj (an object or a copy of one, as rlu_deref returned it) for
 * modification by this section and set *pobj to the caller's private copy, which it then
 * modifies freely (size: the object's size in bytes, as given to rlu_alloc). Returns
 * true on success (also when the caller already holds it). Returns false - and the
 * caller must call rlu_abort and restart the section - when another thread holds the
 * object (a concurrent, or a deferred, write), when the caller holds it from an earlier
 * deferred write set, or when the write log is full, also with aborted sections'
 * entries (errno = ENOSPC if the section's copies do not fit in an empty log at all:
 * retrying cannot help). Wait-free. Inside a section.
 */
bool rlu_try_lock(struct rlu_thread *self, void **pobj, size_t size);
/*
 * rlu_try_lock_const: lock *pobj without modifying it (e.g. the node a delete unlinks:
 * no concurrent writer may change it, but nothing is written back). Same contract as
 * rlu_try_lock; the copy must not be modified.
 */
bool rlu_try_lock_const(struct rlu_thread *self, void **pobj, size_t size);
/*
 * rlu_assign_ptr: *p_ptr = obj, storing the original object even when obj is a copy
 * (links always point to originals). p_ptr must lie inside a copy the caller locked
 * (or in memory no reader sees yet). Release store. Inside a section.
 */
void rlu_assign_ptr(struct rlu_thread *self, void **p_ptr, void *obj);
/* rlu_cmp_objs: do a and b (objects or copies) denote the same object? Wait-free. */
bool rlu_cmp_objs(const void *a, const void *b);
/* rlu_actual: the original object of a (a itself unless a is a copy). Wait-free. */
void *rlu_actual(void *a);

/*
 * rlu_alloc: a new object of size bytes (zeroed), not yet visible to anyone; publish it
 * with rlu_assign_ptr in a locked copy. Returns NULL with errno = ENOMEM. Any thread.
 */
void *rlu_alloc(size_t size);
/*
 * rlu_free: free obj (an object or a copy) once this section's commit has been
 * synchronized; the caller must hold its lock (rlu_try_lock or rlu_try_lock_const) and
 * unlink it in the same section. Forgotten on rlu_abort. Inside a section.
 */
void rlu_free(struct rlu_thread *self, void *obj);
/* rlu_free_unsafe: free an object that no section can reach (teardown). */
void rlu_free_unsafe(void *obj);

/* Per-thread counters (caller's own), for benchmarks and tests. */
struct rlu_stats {
	uint64_t sections, commits, aborts, syncs, sync_requests, writebacks, frees;
};
int rlu_stats_thread(struct rlu_thread *self, struct rlu_stats *out);
/* Sum over all threads of r (approximate while threads run). */
int rlu_stats(struct rlu *r, struct rlu_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_RLU_H */
