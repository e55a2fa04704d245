/*
 * tsync/ps_reclaimer.h - the reclamation task σ (RT-SMR (RTAS 2018) §V-C), which reclaims
 * the ps_mem instances attached to it whose reclaim_mode is TASK or BOTH. Included by
 * <tsync/ps_mem.h>.
 */
#ifndef TSYNC_PS_RECLAIMER_H
#define TSYNC_PS_RECLAIMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps_mem; /* <tsync/ps_mem.h> */

/*
 * The reclamation task σ_i = (α, q) of RT-SMR (RTAS 2018) §V-C: a thread that wakes every
 * period q, computes quiescence once (α) and collects every object that quiesced (β
 * each), for every ps_mem attached to it whose cfg->reclaim_mode is TASK or BOTH. One σ
 * per ps_mem, or one σ shared by many ps_mem (RT-SMR (RTAS 2018) Fig. 13's
 * RT-PARSEC-single). σ never takes a lock that a freeing or allocating thread holds,
 * apart from m's pool mutex when it returns an object to a pool-owned slab (as every
 * reclamation does; a blocking mutex, no spinning). Objects σ collects go straight back
 * to their slabs (a remote free to the slab's owning thread, or the pool), never into a
 * cache. r's own mutex (taken by every ps_reclaimer_* call and by each activation) is
 * priority-inheriting. Analysis bounds per mode: enum ps_mem_reclaim_mode; docs/rt.md §10.
 */
struct ps_reclaimer;

struct ps_reclaimer_config {
	size_t size;         /* sizeof(struct ps_reclaimer_config) */
	uint64_t period_ns;  /* q: from one activation's release to the next, ns (0: the
			      * default, 1 ms); PS_RECLAIMER_MANUAL: no thread, activations
			      * only through ps_reclaimer_run */
	int cpu;             /* CPU to pin σ's thread to, -1: unpinned */
	int sched_fifo_prio; /* SCHED_FIFO priority for σ's thread, 0: inherit the
			      * caller's policy and priority */
};
#define PS_RECLAIMER_CONFIG_INIT                             \
	{                                                    \
		sizeof(struct ps_reclaimer_config), 0, -1, 0 \
	}
#define PS_RECLAIMER_MANUAL UINT64_MAX

/*
 * ps_reclaimer_start - start a σ (its thread, unless period_ns is PS_RECLAIMER_MANUAL).
 *
 * Its first activation is released one period after the start; activation k at
 * start + k q (an activation that ends after the next release is an overrun: the next
 * one starts at once and the releases missed are skipped).
 *
 * Arguments:  cfg: the configuration, or NULL for the defaults.
 * Returns:    σ; NULL with errno = EINVAL (bad cfg->size, cpu or priority), EPERM
 *             (SCHED_FIFO not allowed), ENOMEM or another pthread_create error.
 * Progress:   blocking.
 * Caller:     any thread.
 * Implements: RT-SMR (RTAS 2018) §V-C (the task σ).
 */
struct ps_reclaimer *ps_reclaimer_start(const struct ps_reclaimer_config *cfg);

/*
 * ps_reclaimer_attach - σ reclaims m from its next activation on.
 *
 * m's threads hand off their frees from their next ps_free on.
 *
 * Returns:    0, or -1 with errno = EINVAL (NULL, or m's reclaim_mode is INLINE), EBUSY
 *             (m has a σ already: one σ per ps_mem) or ENOMEM.
 * Progress:   blocking: waits while an activation runs (r's mutex).
 * Ordering:   seq_cst on m's σ word: freeing threads that see it start handing off.
 * Caller:     any thread; not concurrently with ps_mem_destroy(m) or
 *             ps_reclaimer_stop(r).
 * Implements: RT-SMR (RTAS 2018) §V-C.
 */
int ps_reclaimer_attach(struct ps_reclaimer *r, struct ps_mem *m);

/*
 * ps_reclaimer_detach - σ stops reclaiming m. Before it returns it collects what of m's
 * hand-off lists has quiesced, in the caller; the rest goes to m's orphaned queues, for
 * m's threads to adopt (INLINE from then on; docs/design.md §9.5).
 *
 * Returns:    0, or -1 with errno = EINVAL (NULL) or ENOENT (m is not attached to r).
 * Progress:   blocking (r's mutex).
 * Ordering:   seq_cst on both sides: a free racing with the detach is not lost (the
 *             freeing thread sees no σ after its push and takes its list back).
 * Caller:     any thread outside a section of m's ps (inside one, its own section holds
 *             the objects back); ps_mem_destroy(m) calls it.
 * Implements: RT-SMR (RTAS 2018) §V-C.
 */
int ps_reclaimer_detach(struct ps_reclaimer *r, struct ps_mem *m);

/*
 * ps_reclaimer_run - one activation now, in the caller.
 *
 * Takes the hand-off lists, makes one ps_quiesce_time per ps, collects. For tests, for
 * PS_RECLAIMER_MANUAL, or to drive σ from the application's own periodic task.
 *
 * Returns:    the number of objects collected (0 for r NULL).
 * Progress:   blocking: runs under r's mutex, so it waits for a running activation.
 * Caller:     any thread outside a section of the attached ps_mems' ps.
 * Implements: RT-SMR (RTAS 2018) §V-C (one activation of σ).
 */
size_t ps_reclaimer_run(struct ps_reclaimer *r);

/*
 * ps_reclaimer_stop - stop and join σ's thread, detach every ps_mem still attached, and
 * free r.
 *
 * Each detach is as ps_reclaimer_detach: it collects what has quiesced and orphans the
 * rest.
 *
 * Arguments:  r: σ, or NULL (ignored).
 * Progress:   blocking.
 * Caller:     any thread; not concurrently with any other call on r.
 * Implements: RT-SMR (RTAS 2018) §V-C.
 */
void ps_reclaimer_stop(struct ps_reclaimer *r);

/* σ's counters; counts are totals since ps_reclaimer_start, maxima over that time. */
struct ps_reclaimer_stats {
	uint64_t activations;        /* activations run (thread and ps_reclaimer_run), count */
	uint64_t collected;          /* objects made reusable */
	uint64_t taken;              /* objects taken from hand-off lists and orphans */
	uint64_t max_activation_ns;  /* longest activation, ns: α + collected x β + the
				      * hand-off sweep (σ's execution time e_σ) */
	uint64_t max_quiesce_ns;     /* longest quiescence part of one activation (α), ns */
	uint64_t max_collected;      /* most objects collected by one activation */
	uint64_t max_release_lag_ns; /* longest delay from a release to the activation's
				      * start (σ's thread only), ns */
	uint64_t overruns;           /* activations that ended after the next release, count */
	uint64_t attached;           /* ps_mem attached now, count */
	uint64_t period_ns;          /* q, ns */
};
/*
 * ps_reclaimer_stats - σ's counters.
 *
 * Arguments:  out: filled with the counters.
 * Returns:    0, or -1 with errno = EINVAL (r or out NULL).
 * Progress:   blocking: waits while an activation runs (r's mutex).
 * Caller:     any thread.
 * Implements: RT-SMR (RTAS 2018) §V-C (measures e_σ, α and the release lag).
 */
int ps_reclaimer_stats(struct ps_reclaimer *r, struct ps_reclaimer_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_RECLAIMER_H */
