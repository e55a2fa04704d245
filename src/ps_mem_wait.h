/*
 * src/ps_mem_wait.h - waiting for a grace period (defined in ps_mem_wait.c), for ps_alloc's slow
 * path in ps_mem.c. Not installed.
 */
#ifndef TSYNC_PS_MEM_WAIT_H
#define TSYNC_PS_MEM_WAIT_H

#include "ps_mem_types.h"

/* ---- ps_mem_wait.c: waiting for a grace period (Prudence (ASPLOS 2016) §4) ---------- */

/* Why ps_alloc waits for a grace period (ps_mem__limit_wait). */
enum { PS_MEM_WAIT_LIMIT, PS_MEM_WAIT_BOUND, PS_MEM_WAIT_NOMEM };
/* Wait for a grace period with an empty cache, `why`: at cfg->max_bytes, at the pending
 * bound (before mapping a slab), or after the system refused a slab. True once the cache
 * holds an object; false otherwise - at the bound: map now; else errno = ENOMEM or
 * EDEADLK (at max_bytes inside a section). Caller holds its qlock. */
bool ps_mem__limit_wait(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, int why);
/* With the pending bound on (m->bound_pct) and an empty cache: should the caller wait
 * (PS_MEM_WAIT_BOUND) before its refill - would the refill map a slab, is m past the
 * bound, does the caller's own queue hold pending objects, and is it outside every
 * section of m's ps? */
bool ps_mem__bound_due(struct ps_mem *m, struct ps_mem_pt *pt);

#endif
