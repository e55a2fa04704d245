/*
 * bench/prudence/peers/urcu.c - the peer "malloc + liburcu call_rcu (memb)" of
 * `tsync-bench prudence`: whatever malloc the process has (glibc, or jemalloc, tcmalloc,
 * mimalloc preloaded), each deferred free a call_rcu whose callback free()s; one
 * call_rcu worker, or one per CPU (_all). Hooks declared in peer.h.
 */
#define _LGPL_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <urcu/urcu-memb.h>

#include "peer.h"

static void rcu_free_cb(struct rcu_head *h)
{
	atomic_fetch_add_explicit(&prudence__done, 1, memory_order_relaxed);
	free(h);
}

int prudence_rcu_init(size_t size, unsigned n)
{
	(void)size, (void)n;
	urcu_memb_register_thread(); /* rcu_barrier in fini needs a registered thread */
	return 0;
}

int prudence_rcu_init_all(size_t size, unsigned n)
{
	prudence_rcu_init(size, n);
	if (urcu_memb_create_all_cpu_call_rcu_data(0) != 0) {
		fprintf(stderr, "tsync-bench prudence: create_all_cpu_call_rcu_data failed\n");
		return -1;
	}
	return 0;
}

void prudence_rcu_fini(void)
{
	urcu_memb_barrier(); /* every callback has run */
	urcu_memb_unregister_thread();
}

void prudence_rcu_fini_all(void)
{
	urcu_memb_barrier();
	urcu_memb_free_all_cpu_call_rcu_data();
	urcu_memb_unregister_thread();
}

void prudence_rcu_thread_init(unsigned idx)
{
	(void)idx;
	urcu_memb_register_thread();
}
void prudence_rcu_thread_fini(void)
{
	urcu_memb_unregister_thread();
}
void prudence_rcu_free_deferred(void *p)
{
	urcu_memb_call_rcu((struct rcu_head *)p, rcu_free_cb);
}
void prudence_rcu_lock(void)
{
	urcu_memb_read_lock();
}
void prudence_rcu_unlock(void)
{
	urcu_memb_read_unlock();
}
