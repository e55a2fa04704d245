/*
 * tsync/thread.h - the thread registry.
 *
 * Every thread that uses tsync owns a small integer id in [0, capacity), its index into
 * the per-thread records of every struct ps and struct ps_mem (each record on its own
 * cache line). Records are per thread, not per CPU: threads here are preempted and
 * migrate, and nothing in tsync depends on pinning.
 *
 * Registration is lazy: the first tsync call a thread makes registers it. A thread may
 * also register explicitly (to see the error instead of an abort when capacity is
 * exhausted) and unregister explicitly. A thread that exits is unregistered
 * automatically (a pthread key destructor), also when it exits inside a parallel
 * section: its sections are closed, since an exited thread holds no references, and its
 * per-thread allocator state (object cache, quiescence queue) is handed back to the
 * shared layers so that nothing it freed is lost. Ids are reused, lowest first.
 *
 * Capacity: TSYNC_THREADS_DEFAULT unless set with tsync_thread_set_capacity() before
 * it is fixed (by the first registration or the first ps_create/ps_mem_create), or by
 * the environment variable TSYNC_MAX_THREADS (read when it is fixed). Memory for records
 * grows with the highest id in use, in fixed-size chunks of ids (the chunk size is an
 * implementation constant), not with the capacity. Registering past capacity fails with
 * EAGAIN (explicit registration) or prints a diagnostic and aborts (lazy registration
 * inside a call that cannot fail, such as ps_enter): never memory corruption.
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

/* Internal: id + 1 of the calling thread, 0 when unregistered. */
extern _Thread_local unsigned tsync__tid1 __attribute__((tls_model("initial-exec")));
unsigned tsync__thread_lazy_register(void);

/*
 * tsync_thread_register - register the calling thread (idempotent).
 *
 * Returns:    0, or -1 with errno = EAGAIN (capacity exhausted) or ENOMEM.
 * Progress:   blocking: takes the registry mutex (registration is not a fast path).
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
 * tsync_thread_id - the calling thread's id, registering it if needed.
 *
 * Returns:    the id in [0, capacity), or -1 with errno = EAGAIN or ENOMEM if the
 *             thread cannot be registered.
 * Progress:   wait-free once registered (one thread-local load); else as
 *             tsync_thread_register.
 * Caller:     any thread.
 * Implements: infrastructure (no paper section).
 */
static inline int tsync_thread_id(void)
{
	unsigned t = tsync__tid1;
	if (TSYNC_LIKELY(t != 0))
		return (int)(t - 1);
	return tsync_thread_register() == 0 ? (int)(tsync__tid1 - 1) : -1;
}

/* Internal: the calling thread's id; registers lazily and aborts if it cannot. */
static inline unsigned tsync__self(void)
{
	unsigned t = tsync__tid1;
	if (TSYNC_LIKELY(t != 0))
		return t - 1;
	return tsync__thread_lazy_register();
}

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
