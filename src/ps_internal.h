/*
 * src/ps_internal.h - what src/ps.c (the quiescence core) and src/ps_call.c (the deferred
 * calls) offer the rest of src/ beyond <tsync/ps.h> (not installed): ps_life.c (an
 * instance's life, which composes the two), ps_call.c, ps_mem.c (a thread's records in ps
 * before a reclamation), ps_mem_queue.c (a reclamation's quiescence and its stall
 * summary) and ps_mem_stats.c (ps_stall_report). Calls run one way: ps_life.c -> ps_call.c
 * -> ps.c, and ps_life.c -> ps.c.
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
/*
 * ps_quiesce for a reclaimer's own queue. t: the oldest free time in it. Returns 0 if t
 * is not proven quiescent ("not yet"), else a bound u >= t: every free time <= u that the
 * caller read (or that happens-before the call) before the call is quiescent - with a
 * read barrier made in this call that is every such free time not held by a section
 * seen inside (UINT64_MAX when none is), which is more than the published point says:
 * u is for the caller's queue only, never a point for later free times. lazy (ps_free's
 * and ps_alloc's reclamations): where a read barrier is needed and the read interval
 * since the domain's last one is not over (or another lazy barrier is running), answer
 * 0 at once instead of making one; the clock word likewise moves at most once per
 * interval. Otherwise as ps_quiesce (which is ps__quiesce_own(ps, t, false) != 0).
 */
#include <stdbool.h>
uint64_t ps__quiesce_own(struct ps *ps, uint64_t t, bool lazy);

/* ---- the instance (ps.c), for ps_life.c ---- */
struct ps_calls;
struct ps_config;
struct tsync__client;
/* A new instance for cfg, its thread hooks set, not yet in the registry and without
 * ps_call's queues; NULL with errno = EINVAL (cfg, checked before any allocation) or
 * ENOMEM. ps__set_calls attaches the queues before the instance is shared. */
struct ps *ps__new(const struct ps_config *cfg);
void ps__set_calls(struct ps *ps, struct ps_calls *calls);
/* Free what ps__new made (not the queues); ps is out of the registry. */
void ps__delete(struct ps *ps);
/* ps's registry record, and back from it. */
struct tsync__client *ps__client(struct ps *ps);
struct ps *ps__of_client(struct tsync__client *c);
/* fork, in the child: close the vanished threads' sections, drop a begun mode switch,
 * register for membarriers again (ids as tsync__client.fork_child). */
void ps__fork_child_sections(struct ps *ps, const unsigned char *ids, unsigned n);

/* ---- ps_call's queues (ps_call.c), one struct per instance, made by ps_create ---- */
struct ps_calls *ps__calls(struct ps *ps); /* defined in ps.c */
struct ps_calls *ps__calls_new(unsigned nchunks);
/* ps_destroy, before the instance leaves the registry: run what is queued. */
void ps__calls_drain(struct ps *ps);
/* Free the queues (after the instance left the registry, or ps_create's failure). */
void ps__calls_destroy(struct ps_calls *c);
/* fork (ps_life.c's registry hooks, docs/design.md §8): take / release every queue's mutex;
 * in the child drop the vanished ids' open lists (ids as tsync__client.fork_child). */
void ps__calls_fork_prepare(struct ps_calls *c);
void ps__calls_fork_parent(struct ps_calls *c);
void ps__calls_fork_child(struct ps_calls *c, const unsigned char *ids, unsigned n);

#endif
