/*
 * tsync/thread.h - the thread registry.
 *
 * Every thread that uses tsync owns a small integer id in [0, capacity), its index into
 * the per-thread records of every struct ps and struct ps_mem (each record on its own
 * cache line). Records are per thread, not per CPU: threads here are preempted and
 * migrate, and nothing in tsync depends on pinning.
 *
 * Registration. A thread registers explicitly with tsync_thread_register() (or
 * tsync_thread_id(), which calls it when the thread is not registered), or lazily: the
 * first other tsync call it makes (ps_enter, ps_alloc, ...) registers it.
 *
 * Explicit registration allocates the thread's per-thread records in every existing
 * instance (struct ps, ps_mem, ps_ns), and every instance created afterwards allocates
 * them for each explicitly registered thread at creation (ps_create, ps_mem_create and
 * ps_ns_create fail with ENOMEM otherwise). So an explicitly registered thread's calls
 * never allocate per-thread records and never fail or abort for them: ps_enter/ps_exit
 * stay wait-free without exception, and ps_alloc fails only as its own contract says
 * (memory for objects, cfg->max_bytes). If the allocation at registration fails,
 * tsync_thread_register returns -1 with errno = ENOMEM and the thread stays
 * unregistered (or, if it was registered lazily, stays so, with the same id); what was
 * allocated stays with its instance for the id's next user and is freed with the
 * instance. A retry may succeed. (Only ps_quiesce's cache of other threads' views grows
 * later, with the ids in use; an allocation that fails there leaves the cache unfilled,
 * never fails the call.)
 *
 * Lazy registration only takes an id; each instance allocates the thread's records on
 * the thread's first use of it. A call that can return an error reports a failure
 * there: ps_alloc, ps_ns_alloc and ps_ns_alloc_at return NULL with errno = ENOMEM
 * (allocation) or EAGAIN (registry full); ps_ns_alloc_extent returns -1 with errno =
 * ENOMEM for both. A call that cannot (ps_enter, ps_exit, ps_in_section, ps_quiesce,
 * ps_quiesce_time, ps_synchronize, ps_free, ps_free_now, ps_mem_reclaim,
 * ps_mem_collect, ps_ns_free, ...) prints a diagnostic and aborts when the registry is
 * full or the records cannot be allocated: a thread's first ps_enter on an instance
 * included. Threads that must not abort register explicitly before using tsync.
 *
 * A thread may unregister explicitly. A thread that exits is unregistered
 * automatically (a pthread key destructor), also when it exits inside a parallel
 * section: its sections are closed, since an exited thread holds no references, and its
 * per-thread allocator state (object cache, quiescence queue) is handed back to the
 * shared layers so that nothing it freed is lost. Ids are reused, lowest first.
 *
 * Capacity: TSYNC_THREADS_DEFAULT unless set with tsync_thread_set_capacity() before
 * it is fixed (by the first registration, the first tsync_thread_capacity() call, or the
 * first instance created: ps_create, ps_mem_create, ps_ns_create, rlu_create,
 * oplog_domain_create, ...), or by
 * the environment variable TSYNC_MAX_THREADS (read when it is fixed). Memory for records
 * grows with the highest id in use, in fixed-size chunks of ids (the chunk size is an
 * implementation constant), not with the capacity. Registering past capacity fails with
 * EAGAIN (explicit registration, and the lazy registration inside the calls listed above
 * that can return an error; ps_ns_alloc_extent reports it as ENOMEM) or prints a
 * diagnostic and aborts (lazy registration inside a call that cannot fail, such as
 * ps_enter): never memory corruption.
 *
 * fork. tsync installs pthread_atfork handlers at the first registration or instance
 * creation; before the fork they take every internal mutex, so fork() must not be called
 * from a ps_call callback, a grace hook or another place that holds one. The child has
 * only the forking thread (tsync_thread_count() is 1, or 0 if it was not registered):
 * every other id is retired, never reused, so the child's usable capacity is smaller; the
 * vanished threads' sections are closed; the shared layers stay usable. What only a
 * vanished thread could change (its caches, queues, slabs, open callbacks) stays
 * allocated and unused: the child's memory in use is at most the parent's. Every ps_mem
 * is detached from its σ in the child, which must not call ps_reclaimer_* on an
 * inherited σ. docs/design.md §8 gives the argument. RLU, MV-RLU and OpLog have no fork
 * handlers: a child of a process whose other threads use them may call only what POSIX
 * allows after fork (exec).
 */
#ifndef TSYNC_THREAD_H
#define TSYNC_THREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <tsync/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The capacity when none is set; the largest capacity tsync_thread_set_capacity takes. */
#define TSYNC_THREADS_DEFAULT 4096u
#define TSYNC_THREADS_MAX (1u << 20)

/*
 * tsync_thread_register - register the calling thread explicitly (idempotent): its
 * records in every existing instance are allocated now (see the top of this file). A
 * lazily registered thread is upgraded (same id).
 *
 * Returns:    0, or -1 with errno = EAGAIN (capacity exhausted) or ENOMEM (the
 *             registry's table or a record could not be allocated: the thread is left as
 *             it was, nothing is leaked, a retry may succeed; docs/design.md §9.2).
 * Progress:   blocking: takes the registry mutex; allocates.
 * Caller:     any thread.
 * Implements: infrastructure (no paper section): the per-thread records of ParSec
 *             (EuroSys 2016) §3.3 are indexed by this id.
 */
int tsync_thread_register(void);

/*
 * tsync_thread_unregister - unregister the calling thread now rather than at exit.
 *
 * Closes any parallel section the thread is still inside, hands its allocator caches and
 * pending frees back to shared layers, and releases its id for reuse. A later tsync call
 * by the same thread registers it again, possibly with another id.
 *
 * Returns:    0, or -1 with errno = EINVAL if the thread was not registered.
 * Progress:   blocking (registry mutex).
 * Caller:     a registered thread that holds no references into tsync-protected memory.
 * Implements: infrastructure (no paper section).
 */
int tsync_thread_unregister(void);

/*
 * tsync_thread_id - the calling thread's id, registering it explicitly
 * (tsync_thread_register) if it is not registered.
 *
 * A lazily registered thread keeps its id and stays lazily registered (only
 * tsync_thread_register upgrades it).
 *
 * Returns:    the id in [0, capacity), or -1 with errno = EAGAIN or ENOMEM if the
 *             thread cannot be registered.
 * Progress:   wait-free once registered (one thread-local load); else as
 *             tsync_thread_register.
 * Caller:     any thread.
 * Implements: infrastructure (no paper section).
 */
static inline int tsync_thread_id(void);

/*
 * tsync_thread_self - the calling thread's id, the one tsync's own calls use, for
 * indexing per-thread data on a fast path. A thread not yet registered is registered
 * lazily (only an id is taken). The id is the caller's until it unregisters or exits.
 *
 * Returns:    the id in [0, capacity). If the thread cannot be registered (capacity
 *             exhausted) it prints a diagnostic and aborts, like ps_enter; a thread that
 *             must not abort registers first (tsync_thread_register) or calls
 *             tsync_thread_id, which reports the error instead.
 * Progress:   wait-free once registered (one thread-local load); the first call of an
 *             unregistered thread blocks on the registry mutex.
 * Caller:     any thread.
 * Implements: infrastructure (no paper section).
 */
static inline unsigned tsync_thread_self(void);

/*
 * tsync_thread_set_capacity - set the maximum number of simultaneously registered
 * threads.
 *
 * Arguments:  n: the capacity, in [1, TSYNC_THREADS_MAX].
 * Returns:    0, or -1 with errno = EBUSY (capacity already fixed) or EINVAL (n out of
 *             range).
 * Caller:     any thread, before the capacity is fixed, which the first registration,
 *             the first ps_create/ps_mem_create (they size their per-thread tables by
 *             it) or the first tsync_thread_capacity() call does.
 * Implements: infrastructure (no paper section).
 */
int tsync_thread_set_capacity(unsigned n);

/*
 * tsync_thread_capacity - the capacity in force.
 *
 * Returns:    the capacity; the call fixes it (tsync_thread_set_capacity fails
 *             afterwards).
 * Caller:     any thread.
 * Implements: infrastructure (no paper section).
 */
unsigned tsync_thread_capacity(void);

/*
 * tsync_thread_high_water - one more than the highest id ever handed out.
 *
 * Returns:    the bound; scanners walk ids [0, high_water).
 * Progress:   wait-free.
 * Ordering:   acquire load: a thread whose registration happened before a store that
 *             the caller has observed is inside the returned range.
 * Caller:     any thread.
 * Implements: infrastructure for the scans of ParSec (EuroSys 2016) §3.3.
 */
unsigned tsync_thread_high_water(void);

/*
 * tsync_thread_count - the number of threads registered now (a snapshot).
 *
 * Caller:     any thread.
 * Implements: infrastructure (no paper section).
 */
unsigned tsync_thread_count(void);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_THREAD_H */

/* The inline bodies (not API). */
#include <tsync/static/thread.h>
