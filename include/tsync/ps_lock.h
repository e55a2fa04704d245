/*
 * tsync/ps_lock.h - node locks that fail on freed nodes (ParSec (EuroSys 2016) §2.2,
 * §3.5, Fig. 1).
 *
 * Lookups inside a parallel section are not synchronised with frees, so a thread may
 * reach a node just as another thread deletes it. ps_lock_take() therefore fails when the
 * node has been freed: the deleter marks the node freed *before* it releases the lock
 * (ps_lock_release_free), so whoever takes the lock next sees the mark. The node memory,
 * lock included, stays valid until the contender leaves its section (ps_mem does not
 * reuse it before), so spinning on a lock inside a node being freed is safe.
 *
 * The lock is a ticket lock: FIFO-fair (a modifier cannot be starved by a stream of
 * others on the same node, which bounds its wait by the number of contenders - what the
 * real-time analysis of RT-SMR (RTAS 2018) assumes for FIFO spin locks), 8 bytes
 * embedded in the node, and needs no per-waiter queue node that would have to outlive
 * the wait. MCS scales better only under heavy contention on one lock, which per-node
 * locks avoid. ps_lock_lock/ps_lock_trylock/ps_lock_unlock use the same lock with no
 * node.
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
	TSYNC_ATOMIC(uint32_t) next;  /* next ticket to hand out */
	TSYNC_ATOMIC(uint32_t) owner; /* ticket now served */
};
#define PS_LOCK_INIT \
	{            \
		0, 0 \
	}

/*
 * ps_lock_init - make lock unlocked (as PS_LOCK_INIT).
 *
 * Ordering:   plain stores: not atomic with respect to other users of lock.
 * Caller:     any thread, before lock is shared.
 * Implements: ParSec (EuroSys 2016) §3.5.
 */
void ps_lock_init(struct ps_lock *lock);

/*
 * ps_lock_take - take lock, unless node has been freed.
 *
 * Arguments:  node: an object from ps_alloc() (its header carries the freed mark); lock:
 *             any struct ps_lock inside it.
 * Returns:    true with the lock held, or false if node was freed by ps_free or
 *             ps_lock_release_free before the caller got the lock (the lock is then not
 *             held).
 * Progress:   blocking: waits FIFO behind earlier takers, spinning briefly and then
 *             calling sched_yield() (so it stays usable with more threads than CPUs).
 * Ordering:   acquire: the previous holder's critical section happens-before the
 *             caller's.
 * Caller:     any thread inside a section of the node's ps.
 * Implements: ParSec (EuroSys 2016) §3.5, Fig. 1.
 */
bool ps_lock_take(void *node, struct ps_lock *lock);

/*
 * ps_lock_release - release a lock taken by ps_lock_take.
 *
 * Ordering:   release: the caller's critical section happens-before the next holder's.
 * Caller:     the holder, inside a section of the node's ps.
 * Implements: ParSec (EuroSys 2016) §3.5.
 */
void ps_lock_release(void *node, struct ps_lock *lock);

/*
 * ps_lock_release_free - mark node freed, release lock, and ps_free() the node.
 *
 * Every thread that takes the lock after this sees the mark and fails. node goes to the
 * ps_mem it came from, with ps_free's contract.
 *
 * Arguments:  node: already unlinked by the caller; lock: held by the caller.
 * Progress:   as ps_free (never waits for another thread).
 * Ordering:   the mark is stored before the release, so the next taker sees it.
 * Caller:     the holder, inside a section of the node's ps.
 * Implements: ParSec (EuroSys 2016) §3.5, Fig. 1.
 */
void ps_lock_release_free(void *node, struct ps_lock *lock);

/*
 * ps_lock_is_freed - has node been freed (or marked freed)?
 *
 * Progress:   wait-free.
 * Ordering:   acquire load of the mark.
 * Caller:     any thread inside a section of the node's ps.
 * Implements: ParSec (EuroSys 2016) §3.5.
 */
bool ps_lock_is_freed(const void *node);

/*
 * ps_lock_lock, ps_lock_trylock, ps_lock_unlock - the same ticket lock without a node:
 * a plain FIFO spin lock for locks outside ps_alloc() memory (lock stripes, list heads),
 * which never fails on a freed mark. Not reentrant; not to be mixed with ps_lock_take.
 *
 * Returns:    ps_lock_trylock: true with the lock held, or false at once, with no effect,
 *             if it was held or contended (a spurious false is possible).
 * Progress:   ps_lock_lock: blocking, FIFO behind earlier takers, spinning and then
 *             yielding, as ps_lock_take (docs/design.md §9.6). ps_lock_trylock: never
 *             waits, never joins the queue. ps_lock_unlock: wait-free.
 * Ordering:   taking is acquire; ps_lock_unlock is release.
 * Caller:     any thread, inside a parallel section or not; ps_lock_unlock only by the
 *             holder (of a lock taken by ps_lock_lock or ps_lock_trylock).
 * Implements: ParSec (EuroSys 2016) §3.5 (the lock without the freed check).
 */
void ps_lock_lock(struct ps_lock *lock);

bool ps_lock_trylock(struct ps_lock *lock);

void ps_lock_unlock(struct ps_lock *lock);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_LOCK_H */
