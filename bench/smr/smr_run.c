/*
 * bench/smr/smr_run.c - what `tsync-bench smr`'s driver (smr.c) and the peers
 * (bench/smr/peers/) share during a run: the mechanism and the worker records of the run the
 * driver set up, the deferred-free counters the call-based peers report as pending, and
 * the fatal paths of a node check. Below both, so calls run one way: smr.c -> peers ->
 * smr_run.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "smr_run.h"

const struct smr_peer *smr__peer;
struct bench_thread *smr__threads;
unsigned smr__nthreads;

struct bench_thread *smr_thread(unsigned id)
{
	return &smr__threads[id];
}

uint64_t smr_pending_counted(void)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < smr__nthreads; i++) {
		/* done first: every completion it counts was queued before (release/acquire
		 * through the mechanism's queue and the done increment), so queued >= done. */
		uint64_t d = atomic_load_explicit(&smr__threads[i].done, memory_order_acquire);
		uint64_t q = atomic_load_explicit(&smr__threads[i].queued, memory_order_relaxed);
		sum += q > d ? q - d : 0;
	}
	return sum;
}

void smr_node_fail(const struct smr_node *n, unsigned slot, uint64_t magic, uint64_t gen,
		   uint64_t check, unsigned nslot)
{
	const char *why = magic == SMR_NODE_POISON ? "a freed (poisoned) node"
			  : magic != SMR_NODE_LIVE ? "a node with a corrupt magic"
			  : nslot != slot          ? "a node installed in another slot"
						   : "a node with an inconsistent incarnation";
	fprintf(stderr,
		"tsync-bench smr: FATAL: mechanism '%s': a reader of slot %u saw %s\n"
		"  node %p: magic %#" PRIx64 " gen %#" PRIx64 " check %#" PRIx64
		" (expected %#" PRIx64 ") slot %u\n"
		"  the mechanism let a reader access memory that was freed or reused.\n",
		smr__peer ? smr__peer->name : "?", slot, why, (const void *)n, magic, gen, check,
		smr_node_hash(gen, slot), nslot);
	abort();
}

void smr_oom(void)
{
	fprintf(stderr, "tsync-bench smr: FATAL: mechanism '%s': node allocation failed\n",
		smr__peer ? smr__peer->name : "?");
	abort();
}
