/*
 * tsync/mvrlu.h - Multi-Version Read-Log-Update: RLU with per-object version chains,
 * clock-ordered commits and concurrent, threshold-driven log reclamation.
 *
 * The RLU study (Appl. Sci. 2022) §3.3 (procedure, Fig. 3; API §3.3.2) and §6 (ORDO's
 * boundary); the original design is Kim, Mathew, Kashyap, Ramanathan, Min, "MV-RLU:
 * Scaling Read-Log-Update with Multi-Versioning", ASPLOS 2019 (the study's ref. [25]). docs/rlu.md
 * §6 has the design and the correctness argument.
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
 * Reclamation (RLU study §3.3.1, step 6). Each thread reclaims its own log, concurrently
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
#define MVRLU_CONFIG_INIT                                \
	{                                                \
		sizeof(struct mvrlu_config), 0, 0, false \
	}

/*
 * mvrlu_create - a new MV-RLU domain: its own per-thread logs (the clock is tsync's).
 *
 * Arguments: cfg: NULL for the defaults, else cfg->size = sizeof(struct mvrlu_config),
 *            log_bytes 0 (256 KiB) or 4 KiB..1 GiB (rounded up to 16 bytes), reclaim_pct
 *            0 (50) or 1..95.
 * Returns:   the domain; NULL with errno = EINVAL (bad cfg), ENOMEM, or tsync_clock_init's
 *            error.
 * Progress:  blocking (initialises tsync's clock if needed; malloc).
 * Caller:    any thread.
 */
struct mvrlu *mvrlu_create(const struct mvrlu_config *cfg);
/*
 * mvrlu_destroy - write the newest committed version of every object back into it, free
 * the objects mvrlu_free'd by committed write sets, free the logs and thread records.
 *
 * Arguments: d: the domain, or NULL (nothing happens).
 * Returns:   nothing. Objects still linked in user structures are the user's (free them
 *            with mvrlu_free_unsafe).
 * Progress:  blocking (free).
 * Caller:    any thread, once no thread is in a section of d or uses d again.
 */
void mvrlu_destroy(struct mvrlu *d);

/*
 * mvrlu_thread_get - the calling thread's handle for d.
 *
 * Arguments: d: the domain.
 * Returns:   the handle, created on first use (registers the thread with tsync's
 *            registry; allocates its circular log of log_bytes and its ring of write-set
 *            records); NULL with errno = EAGAIN (registry full) or ENOMEM. A thread that
 *            exits leaves its log in place: its versions stay readable, and the next
 *            thread given the same registry id continues with it.
 * Progress:  wait-free after the thread's first call (a thread-local load, an acquire
 *            load, a test); blocking on the first (malloc).
 * Ordering:  none beyond the handle's own publication (acquire).
 * Caller:    the thread the handle is for; a handle is used by that thread only.
 */
struct mvrlu_thread *mvrlu_thread_get(struct mvrlu *d);
/*
 * mvrlu_flush - reclaim the caller's whole log: write back every version that is still
 * the newest of its object, recycle the rest, free mvrlu_free'd objects.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing, once the log is empty. Optional (tests; idle threads that should give
 *            memory back early).
 * Progress:  blocking: reclamation passes until the log is empty, waiting between them
 *            (32 << min(i, 8) relaxes after pass i for 16 passes, then a yield) for the
 *            sections that can still read the versions and for writers holding locks on
 *            top of them to commit or abort.
 * Ordering:  write-backs are ordered before the version is detached (release CAS).
 * Caller:    the handle's thread, outside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3.1 step 6 (reclamation).
 */
void mvrlu_flush(struct mvrlu_thread *self);

/*
 * mvrlu_reader_lock - begin a section: publish a "starting" marker, read tsync's clock into
 * the local clock L and publish it.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing. Every object the section reads through mvrlu_deref is its newest
 *            version committed with c <= L.
 * Progress:  wait-free.
 * Ordering:  the clock is read after the marker is visible (tsync_now_ordered(): a full
 *            fence, then an ordered reading) and published with a seq_cst store; the
 *            section's loads (acquire) are performed after the reading.
 * Caller:    the handle's thread, outside a section (sections do not nest).
 * Implements: the RLU study (Appl. Sci. 2022) §3.3 (Fig. 3) with ORDO's clock (§6).
 */
void mvrlu_reader_lock(struct mvrlu_thread *self);
/*
 * mvrlu_reader_unlock - end the section; a writer commits.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing. A writer commits at c = (ordered clock reading) + S + 1, stamps the
 *            versions it replaced superseded-at-c, and waits until the clock is past
 *            c + S: a section that begins after the return, on any thread, sees the
 *            commit. Either kind may run one reclamation pass (docs/design.md §9.10).
 * Progress:  never waits for readers. A writer waits at most 2S + 1 clock ticks; a
 *            reclamation pass is bounded.
 * Ordering:  the section end is a release store; the commit stores COMMITTING (seq_cst),
 *            then c (release), then the superseded stamps (release).
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3 (Fig. 3, commit) and §6 (ORDO).
 */
void mvrlu_reader_unlock(struct mvrlu_thread *self);
/*
 * mvrlu_abort - abandon the section: unlink its versions, forget its mvrlu_free calls, end
 * the section; then back off.
 *
 * Arguments: self: the caller's handle.
 * Returns:   nothing; nothing of the section becomes visible. If the failure was a full
 *            log, it reclaims until the bytes the failed lock needed fit (last resort:
 *            waits for readers). Then it backs off: 2^n relaxes after the n-th consecutive
 *            abort, n <= 8, a yield beyond.
 * Progress:  blocking only in that last-resort reclamation (as mvrlu_flush).
 * Ordering:  the unlinks and the ABORTED clock word are release stores.
 * Caller:    the handle's thread, inside a section, after a failed mvrlu_try_lock; then
 *            retry the whole section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3 and §4.1 (the retry protocol).
 */
void mvrlu_abort(struct mvrlu_thread *self);

/*
 * mvrlu_deref - the version of obj this section reads.
 *
 * Arguments: self: the caller's handle; obj: NULL or a pointer from mvrlu_alloc/mvrlu_deref
 *            (a version is returned as it is).
 * Returns:   NULL for NULL; the caller's own uncommitted version if it locked obj, else the
 *            newest version committed with c <= L, else obj itself.
 * Progress:  wait-free, except that a deref meeting a write set in the middle of its commit
 *            (a few instructions) spins until c is published. Inline fast path: one
 *            acquire load for an object without versions (docs/design.md §9.10).
 * Ordering:  acquire: the returned version's contents are those committed.
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3 (Fig. 3, dereference).
 */
static inline void *mvrlu_deref(struct mvrlu_thread *self, void *obj);
/*
 * mvrlu_try_lock - lock *pobj for this section: a copy of the version it reads goes on top
 * of the object's chain, and *pobj is set to it.
 *
 * Arguments: self: the caller's handle; pobj: as mvrlu_deref returned it; size: the
 *            object's size, as given to mvrlu_alloc.
 * Returns:   true on success (also when the caller already holds it). false - call
 *            mvrlu_abort and restart the section - when another section holds the object,
 *            a version newer than this section's L exists, or the log is full (ENOSPC:
 *            the write set cannot fit even in an empty log; docs/design.md §9.10).
 * Progress:  never waits for other threads (it fails); a full log: one bounded reclamation pass.
 * Ordering:  the version is published with a release CAS on the object's header.
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3 (Fig. 3, try-lock).
 */
bool mvrlu_try_lock(struct mvrlu_thread *self, void **pobj, size_t size);
/*
 * mvrlu_try_lock_const - lock *pobj for this section without changing it (the node a
 * delete unlinks: no concurrent writer may change it).
 *
 * Arguments, Returns, Progress, Ordering, Caller: as mvrlu_try_lock (the same code: the
 *            version is committed and written back like any other); the copy must not be
 *            modified.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3.2 (the MV-RLU API).
 */
bool mvrlu_try_lock_const(struct mvrlu_thread *self, void **pobj, size_t size);
/*
 * mvrlu_assign_ptr - *p_ptr = obj, storing the master even when obj is a version (links
 * always point to masters).
 *
 * Arguments: self: the caller's handle; p_ptr: inside a version the caller locked (or in
 *            memory no reader sees yet); obj: NULL, an object or a version.
 * Returns:   nothing.
 * Progress:  wait-free.
 * Ordering:  a plain store, published by the commit.
 * Caller:    the handle's thread, inside a section.
 */
void mvrlu_assign_ptr(struct mvrlu_thread *self, void **p_ptr, void *obj);
/*
 * mvrlu_cmp_objs - do a and b (objects or versions) denote the same object?
 *
 * Returns:   true if mvrlu_actual(a) == mvrlu_actual(b).
 * Progress:  wait-free.
 * Caller:    any thread, on objects it may read.
 */
bool mvrlu_cmp_objs(const void *a, const void *b);
/*
 * mvrlu_actual - the master of a.
 *
 * Arguments: a: NULL, an object or a version.
 * Returns:   a itself unless a is a version; then its master.
 * Progress:  wait-free (one relaxed load).
 * Caller:    any thread, on objects it may read.
 */
void *mvrlu_actual(void *a);

/*
 * mvrlu_alloc - a new object, not yet visible to anyone; publish it with mvrlu_assign_ptr
 * in a locked version.
 *
 * Arguments: size: bytes of data (zeroed; at most UINT32_MAX); a 16-byte header precedes
 *            them.
 * Returns:   the object; NULL with errno = ENOMEM (also for size > UINT32_MAX).
 * Progress:  blocking (malloc).
 * Caller:    any thread.
 */
void *mvrlu_alloc(size_t size);
/*
 * mvrlu_free - free obj once no section can reach it: when the commit time of this
 * section is <= every active section's local clock (checked by the caller's log
 * reclamation) and no reclamation pass can still read its header.
 *
 * Arguments: self: the caller's handle; obj: NULL (nothing happens), an object or a
 *            version, locked by the caller (mvrlu_try_lock or mvrlu_try_lock_const) and
 *            unlinked in the same section.
 * Returns:   nothing; forgotten on mvrlu_abort. Aborts the process with a diagnostic if
 *            the caller does not hold obj's lock.
 * Progress:  wait-free.
 * Caller:    the handle's thread, inside a section.
 * Implements: the RLU study (Appl. Sci. 2022) §3.3.1 step 6 (freeing with reclamation).
 */
void mvrlu_free(struct mvrlu_thread *self, void *obj);
/*
 * mvrlu_free_unsafe - free an object that no section can reach (teardown; never
 * published).
 *
 * Arguments: obj: NULL (nothing happens) or an object from mvrlu_alloc (not a version).
 * Progress:  blocking (free).
 * Caller:    any thread.
 */
void mvrlu_free_unsafe(void *obj);

/* Per-thread counters, for benchmarks and tests. uint64_t only (mvrlu_stats sums them
 * word by word); each is written by its thread only. */
struct mvrlu_stats {
	uint64_t sections;    /* sections begun (mvrlu_reader_lock calls) */
	uint64_t commits;     /* write sets committed (writer mvrlu_reader_unlock calls) */
	uint64_t aborts;      /* mvrlu_abort calls */
	uint64_t reclaims;    /* reclamation passes over this thread's log */
	uint64_t writebacks;  /* versions copied into their master */
	uint64_t recycled;    /* versions whose log space was recycled */
	uint64_t frees;       /* objects returned to malloc */
	uint64_t log_full;    /* try_lock failures for lack of log space or write-set slots */
	uint64_t waits;       /* last-resort waits (mvrlu_abort / mvrlu_flush calls that
			       * needed more than one reclamation pass) */
	uint64_t chain_steps; /* versions skipped by mvrlu_deref (too new / uncommitted) */
	uint64_t wb_hints;    /* sections whose derefs mostly met versions: they asked
			       * every writer to reclaim (the dereference watermark) */
};
/*
 * mvrlu_stats_thread - one thread's counters.
 *
 * Arguments: self: a handle; out: where to copy its counters.
 * Returns:   0; -1 with errno = EINVAL if self or out is NULL.
 * Progress:  wait-free.
 * Ordering:  none: exact for the caller's own handle, approximate for another's.
 * Caller:    any thread (normally the handle's own).
 */
int mvrlu_stats_thread(struct mvrlu_thread *self, struct mvrlu_stats *out);
/*
 * mvrlu_stats - the sum of the counters of every thread of d.
 *
 * Arguments: d: the domain; out: the sum.
 * Returns:   0; -1 with errno = EINVAL if d or out is NULL.
 * Progress:  wait-free: one pass over the thread records (the registry's capacity).
 * Ordering:  none: approximate while threads run (each counter read once, racily).
 * Caller:    any thread.
 */
int mvrlu_stats(struct mvrlu *d, struct mvrlu_stats *out);
/*
 * mvrlu_log_used - bytes of the caller's log in use (not yet recycled).
 *
 * Arguments: self: the caller's handle.
 * Returns:   the bytes, fillers at the log's end included.
 * Progress:  wait-free.
 * Caller:    the handle's thread.
 */
size_t mvrlu_log_used(struct mvrlu_thread *self);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_MVRLU_H */

/* The inline bodies (not API). */
#include <tsync/static/mvrlu.h>
