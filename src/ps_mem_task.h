/*
 * src/ps_mem_task.h - the hand-off to the reclamation task σ (defined in ps_mem_task.c), for
 * ps_mem.c and ps_reclaimer.c. Not installed.
 */
#ifndef TSYNC_PS_MEM_TASK_H
#define TSYNC_PS_MEM_TASK_H

#include "ps_mem_types.h"

/* ---- ps_mem_task.c: the hand-off to σ (ps_reclaimer.c drives σ's side) ------------- */

/* Take every hand-off list of m and m's orphans into m->task_pt's queue (in free-time
 * order). `final`: seq_cst loads (the detach's sweep). Returns the objects taken.
 * Caller holds the attached σ's mutex. */
uint64_t ps_mem__task_sweep(struct ps_mem *m, bool final);
/* Collect task_pt's queue up to the caller's published quiescence point of m's ps
 * (ps_quiesce_time just computed): RECLAIM_COLLECT on task_pt. Returns the count. */
size_t ps_mem__task_collect(struct ps_mem *m);
/* Detach's last step (m->sigma already NULL): orphan what task_pt still holds. */
void ps_mem__task_release(struct ps_mem *m);
/* TASK/BOTH, at the caller's allocator calls: hand the queue to σ, or take the hand-off
 * list back when no σ is attached. */
void ps_mem__task_sync(struct ps_mem *m, struct ps_mem_pt *pt);
/* Give pt's whole queue to σ (ps_free in BOTH mode: a backlog). */
void ps_mem__handoff_queue(struct ps_mem *m, struct ps_mem_pt *pt);
/* ps_free in TASK and BOTH mode, h checked and marked: true if h went to σ; false: free
 * it inline. */
bool ps_mem__free_task(struct ps_mem *m, struct ps_mem_pt *pt, struct ps_mem_hdr *h);

#endif
