/*
 * tsync/mvrlu.h - Multi-Version Read-Log-Update: RLU with per-object version chains,
 * clock-ordered commits and concurrent, threshold-driven log reclamation.
 *
 * Seed 003 §3.3 (procedure, Fig. 3; API §3.3.2) and §6 (ORDO's boundary); the original
 * design is Kim, Mathew, Kashyap, Ramanathan, Min, "MV-RLU: Scaling Read-Log-Update with
 * Multi-Versioning", ASPLOS 2019 (seed 003 ref. [25]). docs/rlu.md §6 has the design and
 * the correctness argument.
 *
 * Model. An MV-RLU section is the span between mvrlu_reader_lock() and
 * mvrlu_reader_unlock(). At its start the section reads tsync's clock (<tsync/clock.h>)
 * into its local clock L. Every object (the "master", from mvrlu_alloc) may carry a chain
 * of versions, newest first; each version is a copy kept in its writer's circular log and
 * stamped with its write set's commit time c. mvrlu_deref returns the newest version with
 * c <= L (or the master when there is none): a section sees every commit with c <= L
 * entirely and no other commit at all. A section becomes a writer by locking objects with
 * mvrlu_try_lock (a new version on top of the chain, private to the section); at
 * mvrlu_reader_unlock it commits: c = (ordered clock reading) + S + 1, where S is tsync's
 * measured cross-CPU skew bound (tsync_clock_skew(), ORDO's "boundary"), and then waits
 * until the clock has passed c + S on every CPU (at most 2S + 1 ticks, ~0.1 us here), so
 * every section that begins after mvrlu_reader_unlock returns - on any thread - sees the
 * commit. Unlike RLU, a commit never waits for readers: old versions stay readable in the
 * log until no section can select them.
 *
 * Reclamation (seed 003 §3.3.1 step 6). Each thread reclaims its own log, concurrently
 * with every other thread, when its use passes mvrlu_config.reclaim_pct: with m = the
 * smallest local clock of any active section (a bound on every future one too), a write
 * set with c <= m has its versions that are still the newest of their object written back
 * into the master and detached; a version is recycled when a newer version with commit
 * time <= m exists (no section can select it) or, once detached, when every section that
 * could have loaded it has ended. Nobody waits for this in the common case; a writer whose
 * log is full reclaims first and only then, as a last resort in mvrlu_abort, waits for
 * readers (there is no separate forced-reclaim path). Dereference watermark: a section
 * that made at least 50 derefs, more than a third of which met a version, reclaims its
 * own log when it ends and asks every writer to reclaim at its next commit (one shared
 * counter), so objects return to the version-free fast path of mvrlu_deref.
 *
 * Objects (masters) are allocated with malloc plus a 16-byte header, and return to malloc
 * when the write set that mvrlu_free'd them has commit time <= m (no section can reach
 * them) and every reclamation pass that could still touch their header has ended.
 *
 * Progress: mvrlu_reader_lock/mvrlu_deref are wait-free except that a deref that meets a
 * write set in the middle of its commit (a window of a few instructions) waits for it;
 * mvrlu_try_lock never waits for other threads (it fails instead); mvrlu_reader_unlock of
 * a writer waits at most 2S + 1 clock ticks plus a bounded reclamation pass.
 *
 * Threads: every function takes the caller's own handle from mvrlu_thread_get(); a handle
 * is used only by the thread it belongs to. Sections do not nest.
 *
 * Retry protocol (every writer must follow it):
 *     struct mvrlu_thread *self = mvrlu_thread_get(d);
 *   restart:
 *     mvrlu_reader_lock(self);
 *     ... p = mvrlu_deref(self, head->next) ...
 *     if (!mvrlu_try_lock(self, (void **)&p, sizeof *p)) { mvrlu_abort(self); goto restart; }
 *     ... mvrlu_assign_ptr(self, (void **)&p->next, q) ...
 *     mvrlu_reader_unlock(self);
 */
#ifndef TSYNC_MVRLU_H
#define TSYNC_MVRLU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mvrlu;
struct mvrlu_thread;

/* Configuration for mvrlu_create(); MVRLU_CONFIG_INIT gives the defaults. */
struct mvrlu_config {
	size_t size;          /* sizeof(struct mvrlu_config) */
	size_t log_bytes;     /* per-thread circular log (default 256 KiB, >= 4 KiB); bounds
			       * one section's write set and the versions a thread keeps */
	unsigned reclaim_pct; /* reclaim when the log is this % full (default 50, 1..95) */
	bool poison_on_free;  /* fill freed objects with 0xdb before free() (tests) */
};
#define MVRLU_CONFIG_INIT {sizeof(struct mvrlu_config), 0, 0, false}

/*
 * mvrlu_create: a new MV-RLU domain (its own per-thread logs; the clock is tsync's).
 * cfg: NULL for defaults. Returns NULL with errno = EINVAL (bad cfg) or ENOMEM.
 * Blocking (initialises tsync's clock if needed). Any thread.
 */
struct mvrlu *mvrlu_create(const struct mvrlu_config *cfg);
/*
 * mvrlu_destroy: write the newest version of every object back into it, free the objects
 * mvrlu_free'd by committed write sets, free the logs and thread records. Precondition:
 * no thread is in a section or uses d again. Objects still linked in user structures
 * are the user's (free them with mvrlu_free_unsafe).
 */
void mvrlu_destroy(struct mvrlu *d);

/*
 * mvrlu_thread_get: the calling thread's handle for d, creating it on first use
 * (registers the thread with tsync's registry; the log is allocated here). Returns NULL
 * with errno = EAGAIN or ENOMEM. Wait-free after the first call. Calling thread only.
 * A thread that exits leaves its log in place: its versions stay readable, and the next
 * thread to get the same registry id continues with it.
 */
struct mvrlu_thread *mvrlu_thread_get(struct mvrlu *d);
/*
 * mvrlu_flush: reclaim the caller's whole log: write back every version that is still
 * the newest of its object, recycle the rest, free mvrlu_free'd objects. Outside a
 * section. Blocking: waits for sections that can still read the versions, and for
 * writers that hold locks on top of them to commit or abort. Optional (tests, idle
 * threads that should give back memory early).
 */
void mvrlu_flush(struct mvrlu_thread *self);

/*
 * mvrlu_reader_lock: begin a section: publish a "starting" marker, then (after a full
 * fence) read tsync's clock into the local clock L and publish it; the section's loads
 * are performed after the reading (seq_cst fence; LFENCE; RDTSC; RDTSC; LFENCE on x86-64).
 * Every object read through mvrlu_deref is its newest version committed with c <= L.
 * Wait-free. Not nestable.
 */
void mvrlu_reader_lock(struct mvrlu_thread *self);
/*
 * mvrlu_reader_unlock: end the section. A reader publishes "inactive" (release store).
 * A writer commits: its write set's clock word goes to COMMITTING (seq_cst), c is taken
 * from an ordered clock reading plus S + 1 and published (release), the versions it
 * replaced are stamped superseded-at-c; the section ends; then the caller waits until
 * the clock is past c + S (real-time order, see the top of this file) and, if its log is
 * more than reclaim_pct full or a section asked for write-back since its last pass (the
 * dereference watermark), runs one reclamation pass. Either may run a pass when the
 * section's derefs mostly met versions. Never waits for readers.
 */
void mvrlu_reader_unlock(struct mvrlu_thread *self);
/*
 * mvrlu_abort: abandon the section: unlink this section's versions (nothing of the
 * section becomes visible), forget its mvrlu_free calls, end the section. If the failure
 * was a full log, reclaim first, and - last resort - wait for readers until the log has
 * room again. Call it after a failed mvrlu_try_lock, then retry the whole section.
 */
void mvrlu_abort(struct mvrlu_thread *self);

/*
 * mvrlu_deref: the version of obj this section reads: the caller's own uncommitted
 * version if it locked obj, else the newest version committed with c <= L, else obj
 * itself. The chain walk stops at the first match (versions that are not yet committed
 * or too new are skipped; nothing older is ever visited). obj may be NULL (returns NULL)
 * or a pointer from mvrlu_alloc/mvrlu_deref (a version: returned as is). Acquire: the
 * returned version's contents are those committed. Inside a section only. Wait-free
 * except for the commit window described above.
 * Inline fast path: an object without versions (the common case once reclamation has
 * written them back) costs one acquire load of its header and a count on the caller's
 * own line (the dereference watermark's).
 */
struct mvrlu__thread_head {
	uint32_t sec_derefs, sec_versioned; /* private: this section's derefs (watermark) */
};
#define MVRLU__OBJ_HDR 16 /* private: bytes of the header before each object's data */
void *mvrlu__deref_slow(struct mvrlu_thread *self, void *obj);
static inline void *mvrlu_deref(struct mvrlu_thread *self, void *obj)
{
	if (!obj)
		return NULL;
	((struct mvrlu__thread_head *)(void *)self)->sec_derefs++;
	/* the header's first word: the newest version, NULL if none */
	void *_Atomic *head = (void *_Atomic *)(void *)((char *)obj - MVRLU__OBJ_HDR);
	if (TSYNC_LIKELY(atomic_load_explicit(head, memory_order_acquire) == NULL))
		return obj;
	return mvrlu__deref_slow(self, obj);
}
/*
 * mvrlu_try_lock: lock *pobj (an object or a version of it, as mvrlu_deref returned it)
 * for modification by this section: a copy of the version the section reads is put on
 * top of the object's chain, and *pobj is set to it; modify it freely (size: the object's
 * size in bytes, as given to mvrlu_alloc). Returns true on success (also when the
 * caller already holds it). Returns false - and the caller must call mvrlu_abort and
 * restart the section - when another section holds the object, when a version newer than
 * this section's L exists (the section's view is stale), or when the log is full after
 * an inline reclamation pass (errno = ENOSPC when the write set cannot fit even in an
 * empty log: retrying cannot help). Never waits for other threads. Inside a section.
 */
bool mvrlu_try_lock(struct mvrlu_thread *self, void **pobj, size_t size);
/*
 * mvrlu_try_lock_const: lock *pobj for this section without changing it (the node a
 * delete unlinks: no concurrent writer may change it). Same contract as mvrlu_try_lock;
 * the copy must not be modified.
 */
bool mvrlu_try_lock_const(struct mvrlu_thread *self, void **pobj, size_t size);
/*
 * mvrlu_assign_ptr: *p_ptr = obj, storing the master even when obj is a version (links
 * always point to masters). p_ptr lies inside a version the caller locked (or in memory
 * no reader sees yet). Plain store (published by the commit). Inside a section.
 */
void mvrlu_assign_ptr(struct mvrlu_thread *self, void **p_ptr, void *obj);
/* mvrlu_cmp_objs: do a and b (objects or versions) denote the same object? Wait-free. */
bool mvrlu_cmp_objs(const void *a, const void *b);
/* mvrlu_actual: the master of a (a itself unless a is a version). Wait-free. */
void *mvrlu_actual(void *a);

/*
 * mvrlu_alloc: a new object of size bytes (zeroed), not yet visible to anyone; publish
 * it with mvrlu_assign_ptr in a locked version. Returns NULL with errno = ENOMEM.
 */
void *mvrlu_alloc(size_t size);
/*
 * mvrlu_free: free obj (an object or a version) once no section can reach it: after
 * the commit time of this section is <= every active section's local clock (checked by
 * the caller's log reclamation). The caller must hold obj's lock (mvrlu_try_lock or
 * mvrlu_try_lock_const) and unlink it in the same section. Forgotten on mvrlu_abort.
 */
void mvrlu_free(struct mvrlu_thread *self, void *obj);
/* mvrlu_free_unsafe: free an object that no section can reach (teardown; never
 * published). */
void mvrlu_free_unsafe(void *obj);

/* Per-thread counters (caller's own), for benchmarks and tests. */
struct mvrlu_stats {
	uint64_t sections, commits, aborts;
	uint64_t reclaims;     /* reclamation passes */
	uint64_t writebacks;   /* versions copied into their master */
	uint64_t recycled;     /* versions whose log space was recycled */
	uint64_t frees;        /* objects returned to malloc */
	uint64_t log_full;     /* try_lock failures for lack of log space */
	uint64_t waits;        /* last-resort waits in mvrlu_abort / mvrlu_flush */
	uint64_t chain_steps;  /* versions skipped by mvrlu_deref (too new / uncommitted) */
	uint64_t wb_hints;     /* sections whose derefs mostly met versions: they asked
				* every writer to reclaim (the dereference watermark) */
};
int mvrlu_stats_thread(struct mvrlu_thread *self, struct mvrlu_stats *out);
/* Sum over all threads of d (approximate while threads run). */
int mvrlu_stats(struct mvrlu *d, struct mvrlu_stats *out);
/* Bytes of the caller's log in use (not yet recycled). Caller's own handle. */
size_t mvrlu_log_used(struct mvrlu_thread *self);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_MVRLU_H */
