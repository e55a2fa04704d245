/*
 * src/util.h - small helpers every module may use (not installed): the fatal-error exit
 * for documented programming errors (defined in src/thread.c) and power-of-two rounding.
 * Included by thread.c, ps.c, ps_lock.c, ps_mem.c, ps_mem_slab.c, ps_kmem.c, ps_ns.c,
 * oplog.c, rlu.c, mvrlu.c.
 */
#ifndef TSYNC_UTIL_H
#define TSYNC_UTIL_H

#include <stddef.h>

/* Print "tsync: <msg>" to stderr and abort: documented programming errors only. */
_Noreturn void tsync__fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* v rounded up to a multiple of a (a power of two). */
static inline size_t tsync__round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#endif
