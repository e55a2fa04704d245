/*
 * src/ps_lock.c - node locks that fail on freed nodes (ParSec (EuroSys 2016) §2.2, §3.5, Fig. 1).
 * Why a contender can never use a freed node: docs/design.md §4.
 */
#include <tsync/ps_lock.h>
#include "ps_mem_hdr.h"
#include "util.h"
#include "wait.h"

void ps_lock_init(struct ps_lock *lock)
{
	atomic_init(&lock->next, 0);
	atomic_init(&lock->owner, 0);
}

/* The ticket lock itself, shared by the node locks and the plain ones. */
static inline void ticket_acquire(struct ps_lock *lock)
{
	uint32_t ticket = atomic_fetch_add_explicit(&lock->next, 1, memory_order_relaxed);
	/* Spin briefly, then yield: with more threads than CPUs the holder, or the thread
	 * whose turn is next, may be preempted, and a FIFO lock cannot let us overtake it. */
	tsync__wait_until(atomic_load_explicit(&lock->owner, memory_order_acquire) == ticket,
			  TSYNC__SPIN_HANDOFF);
}

static inline void ticket_release(struct ps_lock *lock)
{
	uint32_t o = atomic_load_explicit(&lock->owner, memory_order_relaxed);
	atomic_store_explicit(&lock->owner, o + 1, memory_order_release);
}

bool ps_lock_take(void *node, struct ps_lock *lock)
{
	ticket_acquire(lock);
	/* The deleter marked the node before releasing the lock we just acquired. */
	if (atomic_load_explicit(&HDR(node)->free_tsc, memory_order_acquire) != 0) {
		ps_lock_release(node, lock);
		return false;
	}
	return true;
}

void ps_lock_release(void *node, struct ps_lock *lock)
{
	(void)node;
	ticket_release(lock);
}

void ps_lock_lock(struct ps_lock *lock)
{
	ticket_acquire(lock);
}

bool ps_lock_trylock(struct ps_lock *lock)
{
	/* Free and uncontended exactly when next == owner: take ticket `owner` by moving next
	 * past it. acquire on owner: reading the previous holder's release store is what
	 * orders its critical section before ours (the CAS on next synchronises with nobody's
	 * unlock). */
	uint32_t o = atomic_load_explicit(&lock->owner, memory_order_acquire);
	uint32_t expect = o;
	return atomic_compare_exchange_strong_explicit(&lock->next, &expect, o + 1,
						       memory_order_acquire, memory_order_relaxed);
}

void ps_lock_unlock(struct ps_lock *lock)
{
	ticket_release(lock);
}

void ps_lock_release_free(void *node, struct ps_lock *lock)
{
	struct ps_mem_hdr *h = HDR(node);
	if (atomic_load_explicit(&h->free_tsc, memory_order_relaxed) != 0)
		tsync__fatal("ps_lock_release_free: node %p already freed", node);
	/* Mark first, release second: the mark is visible to the next lock holder. */
	atomic_store_explicit(&h->free_tsc, PS_MEM_MARKED, memory_order_relaxed);
	ps_lock_release(node, lock);
	ps__free(ps_mem_of(node), node, 1, "ps_lock_release_free");
}

bool ps_lock_is_freed(const void *node)
{
	return atomic_load_explicit(&HDR((void *)node)->free_tsc, memory_order_acquire) != 0;
}
