/*
 * src/wait.h - how tsync's internal waits spend their time (not installed).
 *
 * Every wait in tsync waits for another thread to take a step: a lock holder to release,
 * a committer to publish its write clock, a section to end. On a machine with at least as
 * many runnable threads as CPUs that step comes within a few hundred cycles, so a waiter
 * spins with tsync_arch_relax() (PAUSE / YIELD: it tells the core to give the pipeline to
 * its sibling and saves power). When threads outnumber CPUs the thread it waits for may
 * be preempted, and spinning only burns the CPU that thread needs, so after a bounded
 * number of relaxes the waiter calls sched_yield() on every further round. No wait here
 * sleeps in the kernel on a futex: every one of them waits for a step that a running
 * thread takes in bounded time, and sched_yield() lets a preempted one run.
 *
 * The thresholds are rounds of tsync_arch_relax(), about 40 cycles each on x86 (PAUSE on
 * Zen is ~65, on Skylake-SP ~140 cycles; on aarch64 YIELD is a few cycles):
 *
 *   TSYNC__SPIN_QUIESCE   64   a quiescence retry (ps_synchronize): the section it waits
 *                              for is the caller's reader, typically microseconds long, so
 *                              a short spin catches only the nearly finished ones; yield
 *                              early.
 *   TSYNC__SPIN_HANDOFF  128   a hand-off by a thread inside a short critical section (a
 *                              ticket lock's owner, a claimed namespace slot, a reader's
 *                              run counter): ~5 us of spinning covers a critical section
 *                              that was not preempted.
 *
 * tsync__backoff(n) is the contention back-off after the n-th consecutive failed attempt
 * (RLU / MV-RLU aborts): 2^n relaxes up to n = TSYNC__BACKOFF_MAX, then a yield.
 *
 * Two waits are not of this kind. OpLog's commit wait (src/oplog.c) stays a plain
 * tsync_arch_relax() loop: it waits for the clock to pass a time, at most the skew bound
 * S after the op's timestamp, not for a thread, so a preemption never lengthens it (a
 * preempted waiter finds the time passed when it runs again). The skew measurement
 * (src/clock.c, once per process) spins for at most 200 us and then sleeps on a
 * condition variable until its partner wakes it: a yield would not help a partner pinned
 * to another CPU, and a sleep in a round only makes that round's reading large, which the
 * minimum discards. Included by the modules whose threads wait for each other: ps.c
 * (ps_synchronize), ps_call.c (ps_barrier's wait for a batch), ps_lock.c (the ticket lock), ps_ns.c
 * (an extent claim), oplog.c (slot and object locks, eviction), and RLU / MV-RLU.
 */
#ifndef TSYNC_WAIT_H
#define TSYNC_WAIT_H

#include <sched.h>
#include <tsync/arch.h>

#define TSYNC__SPIN_QUIESCE 64u
#define TSYNC__SPIN_HANDOFF 128u
#define TSYNC__BACKOFF_MAX 8u

/* One wait: rounds taken so far. Initialise with TSYNC__WAIT_INIT. */
struct tsync__wait {
	unsigned rounds;
};
#define TSYNC__WAIT_INIT \
	{                \
		0        \
	}

/* One round of a wait that spins for `spin` rounds, then yields on every later one. */
static inline void tsync__wait_round(struct tsync__wait *w, unsigned spin)
{
	if (w->rounds < spin) {
		w->rounds++;
		tsync_arch_relax();
	} else {
		sched_yield();
	}
}

/* Wait until `cond` holds (re-evaluated after every round). */
#define tsync__wait_until(cond, spin)                            \
	do {                                                     \
		struct tsync__wait tsync__w_ = TSYNC__WAIT_INIT; \
		while (!(cond))                                  \
			tsync__wait_round(&tsync__w_, (spin));   \
	} while (0)

/* Back off after the n-th consecutive failure (n >= 1). */
static inline void tsync__backoff(unsigned n)
{
	if (n > TSYNC__BACKOFF_MAX) {
		sched_yield();
		return;
	}
	for (unsigned i = 0; i < (1u << n); i++)
		tsync_arch_relax();
}

#endif
