/*
 * tsync/oplog_counter.h - a distributed reference counter on OpLog (MIT TR 2014
 * §5.2, Fig. 8: the CounterLog, whose per-thread "log" is a single count).
 *
 * oplog_counter_add/inc/dec fold the delta into the calling thread's count for the
 * counter (its slot in the domain's per-thread table: no shared cache line is written);
 * oplog_counter_read synchronizes: it sums every thread's count into the shared value
 * and returns it. Updates commute, so the type is OPLOG_TYPE_UNORDERED: no timestamps,
 * no commit wait. A counter that is not being updated on a thread holds no count there
 * (dynamic log allocation, §4.2): it costs sizeof(struct oplog_counter) bytes.
 *
 * Zero detection: a counter created with a release callback calls it once, the first
 * time a synchronize of the counter (a read, or an eviction of the counter from some
 * thread's slot) finds the total to be 0. The callback runs in the thread that
 * synchronized, after every OpLog lock is released; it may call oplog_counter_fini and
 * free the counter. The total is exact at the synchronize's cut (see <tsync/oplog.h>),
 * so 0 means that at that instant every increment had been matched by a decrement.
 * Typical use: the creator holds one reference (initial = 1) and drops it with
 * oplog_counter_dec when the object becomes unreachable; the object is released at the
 * next synchronize that sees 0. Incrementing a released counter is a programming error.
 *
 * Linearizable (inc/dec/add/read) against the sequential counter: see docs/oplog.md.
 * Threads: any. Callers of one counter must not run concurrently with its init/fini.
 */
#ifndef TSYNC_OPLOG_COUNTER_H
#define TSYNC_OPLOG_COUNTER_H

#include <stdint.h>
#include <tsync/oplog.h>

#ifdef __cplusplus
extern "C" {
#endif

struct oplog_counter;
typedef void (*oplog_counter_release_fn)(struct oplog_counter *c, void *arg);

struct oplog_counter {
	struct oplog_object obj;
	int64_t value; /* the shared count: under the object lock */
	oplog_counter_release_fn release;
	void *arg;
	TSYNC_ATOMIC(int) zero_seen; /* a synchronize found 0: the unlocked hook releases */
	TSYNC_ATOMIC(int) released;  /* release has run (or fini has begun) */
};

/*
 * oplog_counter_type, oplog_counter_domain_create - the counter log type (a per-thread
 * int64 delta; push adds, apply sums) and a domain of it.
 *
 * Returns:    the type (static storage); oplog_domain_create(oplog_counter_type(), cfg)
 *             and its errors.
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §5.2, Fig. 8 (CounterLog).
 */
const struct oplog_type *oplog_counter_type(void);

struct oplog_domain *oplog_counter_domain_create(const struct oplog_config *cfg);

/*
 * oplog_counter_init - a counter of domain d with the value initial.
 *
 * Arguments:  d: from oplog_counter_domain_create. initial: the starting value. release:
 *             the zero callback (see the top of this file), or NULL; arg: its argument.
 * Returns:    0, or -1 with errno = EINVAL (NULL argument, or d not a counter domain).
 * Progress:   wait-free.
 * Caller:     any thread; c must not be in use.
 * Implements: OpLog (MIT TR 2014) §5.2, Fig. 8.
 */
int oplog_counter_init(struct oplog_counter *c, struct oplog_domain *d, int64_t initial,
		       oplog_counter_release_fn release, void *arg);

/*
 * oplog_counter_fini - stop zero detection, then oplog_object_fini.
 *
 * Progress:   blocking.
 * Caller:     as oplog_object_fini: no other thread uses c concurrently or afterwards.
 * Implements: OpLog (MIT TR 2014) §6.
 */
void oplog_counter_fini(struct oplog_counter *c);

/*
 * oplog_counter_add, oplog_counter_inc, oplog_counter_dec - add delta (inc: +1, dec: -1)
 * to the counter.
 *
 * Returns:    0, or -1 with errno from oplog_log_acquire (ENOMEM/EAGAIN for a thread's
 *             first table).
 * Progress:   inline fast path: the thread's slot lock (an uncontended exchange on its
 *             own line) and one add to its count; no shared store, no wait.
 * Ordering:   release on the slot lock: the update is visible to the next synchronize.
 * Caller:     any thread; incrementing a released counter is a programming error.
 * Implements: OpLog (MIT TR 2014) §5.2, Fig. 8 (the CounterLog push, done in place).
 */
static inline int oplog_counter_add(struct oplog_counter *c, int64_t delta)
{
	int64_t *count = (int64_t *)oplog_log_acquire(&c->obj); /* the per-thread log */
	if (TSYNC_UNLIKELY(count == NULL))
		return -1;
	*count += delta;
	oplog_log_release(count);
	return 0;
}
static inline int oplog_counter_inc(struct oplog_counter *c)
{
	return oplog_counter_add(c, 1);
}
static inline int oplog_counter_dec(struct oplog_counter *c)
{
	return oplog_counter_add(c, -1);
}

/*
 * oplog_counter_read - synchronize (sum every thread's count into the shared value) and
 * return the value.
 *
 * Returns:    the value at the synchronize's cut. May run the release callback before
 *             returning (if the value is 0).
 * Progress:   blocking: O(threads that used the domain) slot-lock acquisitions.
 * Ordering:   acquire, as oplog_synchronize.
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §5.2, Fig. 8.
 */
int64_t oplog_counter_read(struct oplog_counter *c);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_OPLOG_COUNTER_H */
