/*
 * src/ps_mem_queue.h - the deferred-free queue's functions (defined in ps_mem_queue.c) and the
 * inline dispatch to its reclamation loop, for the files above it (ps_mem.c, ps_mem_task.c,
 * ps_mem_wait.c).
 * Not installed.
 */
#ifndef TSYNC_PS_MEM_QUEUE_H
#define TSYNC_PS_MEM_QUEUE_H

#include "ps_mem_types.h"

/* ---- ps_mem_queue.c: the deferred-free queue ------------------------------------- */

/*
 * How a reclamation may scan the other threads (reclaim_loop): RECLAIM_FREE (ps_free:
 * only once the queue holds reclaim_batch objects), RECLAIM_ALLOC (allocation slow path:
 * regardless), RECLAIM_ALL (explicit reclaim, thread exit: stamp everything, ask for the
 * newest stamp first), RECLAIM_COLLECT (ps_mem_collect: the own point only, no scan).
 */
enum { RECLAIM_FREE, RECLAIM_ALLOC, RECLAIM_ALL, RECLAIM_COLLECT };
/* Stamped batches of ps_free between two looks of steal_idle from ps_free. */
#define STEAL_EVERY 64u

/* Stamp pt's unstamped frees with one ordered clock reading and queue them. */
void ps_mem__stamp(struct ps_mem_pt *pt);
/* Reclaim up to `limit` quiesced objects from the head of pt's queue into its cache
 * (their latent slabs for the objects so tagged); `scan`: RECLAIM_*. general: instances
 * without options (!m->ext); ext: the others. Returns the count. */
size_t ps_mem__reclaim_general(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			       int scan);
size_t ps_mem__reclaim_ext(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			   int scan);
/* Merge two lists sorted by free time. */
struct ps_mem_hdr *ps_mem__hlist_merge(struct ps_mem_hdr *a, struct ps_mem_hdr *b);
/* Merge a segment sorted by free time into pt's queue. */
void ps_mem__queue_merge(struct ps_mem *m, struct ps_mem_pt *pt, struct ps_mem_hdr *b);
/* Take every orphaned queue of m into pt's; returns their objects. */
uint64_t ps_mem__adopt_orphan(struct ps_mem *m, struct ps_mem_pt *pt);
/* Give pt's queue to m's orphans; false (the queue stays) without memory for it. */
bool ps_mem__queue_orphan(struct ps_mem *m, struct ps_mem_pt *pt);
/* Clear pt's stall summary. */
void ps_mem__stall_clear(struct ps_mem_pt *pt);
/* Take the stamped queues of idle threads (looks: records looked at); returns objects. */
uint64_t ps_mem__steal_idle(struct ps_mem *m, struct ps_mem_pt *pt, unsigned looks);
/* The owner takes its queue lock, spinning while a thief holds it. */
void ps_mem__qlock_own(struct ps_mem *m, struct ps_mem_pt *pt);
/* Registry hook: the exiting thread gives m everything back. */
void ps_mem__thread_exit(struct tsync__client *c, unsigned tid);

/* Reclaim with the copy of the loop that m's options need (ps_mem__reclaim_*). */
static inline size_t reclaim(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			     int scan)
{
	if (TSYNC_LIKELY(!m->ext))
		return ps_mem__reclaim_general(m, me, pt, limit, scan);
	return ps_mem__reclaim_ext(m, me, pt, limit, scan);
}

#endif
