/*
 * bench/prudence/peers/peer.c - what `tsync-bench prudence`'s peers share with the
 * harness (peer.h): the completed-frees count and the pending count built on it, and the
 * hooks every malloc-based row uses.
 */
#include <stdlib.h>

#include "peer.h"

_Atomic uint64_t prudence__done;
uint64_t (*prudence__issued)(void);

uint64_t prudence__peer_pending(void)
{
	uint64_t done = atomic_load_explicit(&prudence__done, memory_order_relaxed);
	uint64_t issued = prudence__issued ? prudence__issued() : 0;
	return issued > done ? issued - done : 0;
}

void *prudence_libc_alloc(size_t size)
{
	return malloc(size);
}

void prudence_nothing(void)
{
}

bool prudence_no_stats(struct ps_mem_stats *out)
{
	(void)out;
	return false;
}
