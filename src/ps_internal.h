/*
 * src/ps_internal.h - what src/ps.c offers ps_mem's diagnostics beyond <tsync/ps.h>
 * (not installed). Defined in ps.c; included by ps.c, ps_mem.c (the stall summary of a
 * reclamation) and ps_mem_stats.c (ps_stall_report).
 */
#ifndef TSYNC_PS_INTERNAL_H
#define TSYNC_PS_INTERNAL_H

#include <stdint.h>

struct ps;
/* The thread whose section made the caller's last failed quiescence computation on ps
 * fail (its enter time in *enter), or -1 if none is known (no failure yet, TEMPORAL, or
 * a point held back by the skew margin only). Caller's own state: wait-free. */
int ps__last_blocker(struct ps *ps, uint64_t *enter);
/* Scan every record of ps now: the thread inside a section with the earliest enter time
 * (its enter in *enter), -1 if none; *inside = number of threads inside a section. */
int ps__oldest_section(struct ps *ps, uint64_t *enter, unsigned *inside);
/* Thread tid's slot and quiescence cache in ps, allocated if missing (owner-only fields:
 * thread tid, or the registry's thread_prepare); 0, or -1 with errno = ENOMEM. */
int ps__thread_prepare(struct ps *ps, unsigned tid);

#endif
