/*
 * tsync/ps_lock.h - node locks that fail on freed nodes (seed 000 §2.2, §3.5, Fig. 1).
 *
 * Lookups inside a parallel section are not synchronised with frees, so a thread may
 * reach a node just as another thread deletes it. ps_lock_take() therefore returns false
 * when the node has been freed: the deleter marks the node freed *before* it releases
 * the lock (ps_lock_release_free), so whoever takes the lock next sees the mark. The node
 * memory, lock included, stays valid until the contender leaves its section (ps_mem
 * does not reuse it before), so spinning on a lock inside a node being freed is safe.
 *
 * The lock is a ticket lock: FIFO-fair (a modifier cannot be starved by a stream of
 * others on the same node, which bounds its wait by the number of contenders - what
 * the real-time analysis of seed 004 assumes for FIFO spin locks), 8 bytes embedded in
 * the node, and needs no per-waiter queue node that would have to outlive the wait. MCS
 * scales better only under heavy contention on one lock, which per-node locks avoid.
 *
 * node must be an object from ps_alloc() (its header carries the freed mark); lock is
 * any struct ps_lock inside it. Call these inside a parallel section of the node's ps.
 * ps_lock_lock/ps_lock_trylock/ps_lock_unlock use the same lock with no node (below).
 */
#ifndef TSYNC_PS_LOCK_H
#define TSYNC_PS_LOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <tsync/ps_mem.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps_lock {
	_Atomic uint32_t next;  /* next ticket to hand out */
	_Atomic uint32_t owner; /* ticket now served */
};
#define PS_LOCK_INIT {0, 0}

/* ps_lock_init: an unlocked lock. Not atomic with respect to other users. */
void ps_lock_init(struct ps_lock *lock);

/*
 * ps_lock_take: take lock, unless node has been freed.
 * Returns true with the lock held (acquire: the previous holder's critical section
 * happens-before ours), or false if node was freed by ps_free or ps_lock_release_free
 * before we got the lock (the lock is then not held). Blocking: waits FIFO behind
 * earlier takers, spinning briefly and then calling sched_yield() (so it stays usable
 * with more threads than CPUs). Precondition: inside a section of the node's ps.
 */
bool ps_lock_take(void *node, struct ps_lock *lock);

/* ps_lock_release: release a lock taken by ps_lock_take (release ordering). */
void ps_lock_release(void *node, struct ps_lock *lock);

/*
 * ps_lock_release_free: mark node freed, release lock, and ps_free() the node into the
 * ps_mem it came from. Every thread that takes the lock after this sees the mark and
 * fails. The caller must already have unlinked node. Precondition: lock held.
 */
void ps_lock_release_free(void *node, struct ps_lock *lock);

/* ps_lock_is_freed: has node been freed (or marked freed)? Acquire load. */
bool ps_lock_is_freed(const void *node);

/*
 * The same ticket lock without a node: a plain FIFO spin lock for locks that do not live
 * in ps_alloc() memory (lock stripes, list heads). Never fails on a freed mark: there is
 * no node to carry one. Any thread may call these, inside a parallel section or not; the
 * lock is not reentrant, and a lock held with these must not be taken with ps_lock_take.
 *
 * ps_lock_lock: take lock. Blocking: waits FIFO behind earlier takers (a taker's wait is
 * bounded by the number of earlier ones), spinning briefly and then calling sched_yield(),
 * exactly as ps_lock_take (the same code). Acquire: the previous holder's critical section
 * happens-before ours.
 */
void ps_lock_lock(struct ps_lock *lock);

/*
 * ps_lock_trylock: take lock if nobody holds it or waits for it. Returns true with the lock
 * held (acquire, as ps_lock_lock), or false at once, with no effect, if it was held or
 * contended (including a spurious false when another thread changed it at the same moment).
 * Non-blocking: never waits, never joins the queue.
 */
bool ps_lock_trylock(struct ps_lock *lock);

/* ps_lock_unlock: release a lock taken by ps_lock_lock or ps_lock_trylock (release
 * ordering: our critical section happens-before the next holder's). Caller must hold it. */
void ps_lock_unlock(struct ps_lock *lock);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_LOCK_H */
