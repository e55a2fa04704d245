/*
 * src/util.h - small helpers every module may use (not installed): the fatal-error exit
 * for documented programming errors (defined in src/thread.c), power-of-two rounding and
 * the monotonic clock in nanoseconds. Included by thread.c, clock.c, ps.c, ps_lock.c,
 * ps_mem.c, ps_mem_slab.c, ps_kmem.c, ps_ns.c, ps_reclaimer.c, oplog.c, rlu.c, mvrlu.c.
 */
#ifndef TSYNC_UTIL_H
#define TSYNC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Print "tsync: <msg>" to stderr and abort: documented programming errors only. */
_Noreturn void tsync__fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* v rounded up to a multiple of a (a power of two). */
static inline size_t tsync__round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* CLOCK_MONOTONIC in nanoseconds: deadlines and naps, never the tick clock of clock.h. */
static inline uint64_t tsync__mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
