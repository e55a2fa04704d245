/*
 * bench/smr/peers/ps.c - tsync's ParSec (EuroSys 2016): ps_enter/ps_exit around reads, ps_alloc
 * and ps_free on updates. One struct ps and one 64-byte-object struct ps_mem per run.
 *
 * Nodes are never poisoned at ps_free: ps_free only queues the object and readers that
 * entered before the free may still read it, legitimately. Misuse would show up when
 * ps_alloc hands the memory out again: smr_node_init poisons it first, and a reader
 * that could still see it would then fail its check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <tsync/tsync.h>

#include "../smr_run.h"

static struct ps *ps;
static struct ps_mem *mem;
static struct smr_node *_Atomic slots[SMR_SLOTS];

static int ps_peer_init(unsigned nthreads)
{
	(void)nthreads;
	/* TSYNC_BENCH_PS_READ_INTERVAL_US: ps_config.read_interval_ns for the read-interval
	 * sweep of docs/design.md §2.5 (unset or 0: the library's default). */
	struct ps_config cfg = PS_CONFIG_INIT;
	const char *iv = getenv("TSYNC_BENCH_PS_READ_INTERVAL_US");
	if (iv && *iv) {
		char *end;
		unsigned long long us = strtoull(iv, &end, 10);
		if (*end != '\0' || us > UINT64_MAX / 1000) {
			fprintf(stderr, "TSYNC_BENCH_PS_READ_INTERVAL_US: bad value '%s'\n", iv);
			return -1;
		}
		cfg.read_interval_ns = (uint64_t)us * 1000;
	}
	ps = ps_create(&cfg);
	if (!ps) {
		perror("ps_create");
		return -1;
	}
	mem = ps_mem_create(ps, SMR_NODE_BYTES, NULL);
	if (!mem) {
		perror("ps_mem_create");
		ps_destroy(ps);
		return -1;
	}
	for (unsigned i = 0; i < SMR_SLOTS; i++) {
		struct smr_node *n = ps_alloc(mem);
		if (!n)
			smr_oom();
		smr_node_init(n, smr_initial_gen(i), i);
		atomic_store_explicit(&slots[i], n, memory_order_release);
	}
	return 0;
}

static void ps_peer_fini(void)
{
	/* Frees every slab, the nodes still in the slots and queues included. */
	ps_mem_destroy(mem);
	ps_destroy(ps);
	mem = NULL;
	ps = NULL;
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		atomic_store_explicit(&slots[i], NULL, memory_order_relaxed);
}

static int ps_peer_thread_init(struct bench_thread *t)
{
	(void)t;
	if (tsync_thread_register() != 0) {
		perror("tsync_thread_register");
		return -1;
	}
	/* Keep the lazy per-instance record allocation out of the timed loop. */
	ps_enter(ps);
	ps_exit(ps);
	return 0;
}

static void ps_peer_thread_fini(struct bench_thread *t)
{
	(void)t;
	/* Hands the thread's cache and pending queue back to the shared layers now, while
	 * the instance certainly exists (thread exit would do it too). */
	tsync_thread_unregister();
}

static void ps_peer_read(struct bench_thread *t, unsigned slot)
{
	(void)t;
	ps_enter(ps);
	struct smr_node *n = atomic_load_explicit(&slots[slot], memory_order_acquire);
	smr_node_check(n, slot);
	ps_exit(ps);
}

static void ps_peer_update(struct bench_thread *t, unsigned slot)
{
	struct smr_node *n = ps_alloc(mem);
	if (!n)
		smr_oom();
	smr_node_init(n, smr_gen(t), slot);
	struct smr_node *old = atomic_exchange_explicit(&slots[slot], n, memory_order_acq_rel);
	ps_free(mem, old);
}

static uint64_t ps_peer_pending(void)
{
	struct ps_mem_stats st;
	if (ps_mem_stats(mem, &st) != 0)
		return 0;
	return st.pending;
}

const struct smr_peer smr_peer_ps = {
	.name = "ps",
	.what = "tsync ParSec: ps_enter/ps_exit; ps_alloc + xchg + ps_free",
	.init = ps_peer_init,
	.fini = ps_peer_fini,
	.thread_init = ps_peer_thread_init,
	.thread_fini = ps_peer_thread_fini,
	.read = ps_peer_read,
	.update = ps_peer_update,
	.pending = ps_peer_pending,
};
