/*
 * bench/smr/smr_run.h - the `tsync-bench smr` harness as seen by a mechanism adapter ("peer"):
 * the types, the node checks and what smr_run.c holds for a run, below both the driver
 * (smr_bench.c) and the peers.
 *
 * Workload (ParSec, EuroSys 2016, §5.1): SMR_SLOTS shared slots each point to a live node. A read
 * enters the mechanism's read-side section, loads one slot, checks the node it finds
 * (smr_node_check) and leaves. An update allocates a node, initialises it, swaps it into
 * a slot and frees the old node through the mechanism's free path (deferred or after a
 * grace period). Every adapter lives in its own file under peers/ and exports one
 * `const struct smr_peer` per mechanism variant.
 */
#ifndef TSYNC_BENCH_SMR_H
#define TSYNC_BENCH_SMR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"

#define SMR_SLOTS 1024u    /* shared slots; a trace entry names one */
#define SMR_NODE_BYTES 64u /* every mechanism allocates nodes of one cache line */
#define SMR_CACHE_LINE 64

#define smr_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ---- per-thread harness state ---- */
struct bench_thread {
	_Alignas(SMR_CACHE_LINE) unsigned id; /* 0 .. threads-1 */
	int cpu;                              /* CPU the worker is pinned to, -1 if not pinned */
	uint64_t seq;                         /* incarnations handed out by this thread */
	unsigned up_off;           /* added to an update's slot: 0, or this thread's private slot
				    * in the paper layout (see --layout) */
	void *peer;                /* adapter's per-thread state, if it wants one */
	struct hist *rd, *up;      /* latency histograms, in ticks */
	uint64_t end_tick;         /* tsync_now() after the last op */
	uint64_t nreads, nupdates; /* ops completed */
	/* Deferred frees requested by this thread (call_rcu, ck_epoch_call); written only by
	 * the owner. */
	_Atomic uint64_t queued;
	/* ... and completed by a callback, which may run on another thread (urcu's call_rcu
	 * worker): its own line so that callback writes don't hit the owner's line. */
	_Alignas(SMR_CACHE_LINE) _Atomic uint64_t done;
};

/* The run the driver set up (smr_run.c; written by smr.c before the workers start, read
 * by the peers and the fatal paths): the mechanism, its workers' records. */
extern const struct smr_peer *smr__peer;
extern struct bench_thread *smr__threads;
extern unsigned smr__nthreads;

/* The harness's thread record of worker id (valid during a run). */
struct bench_thread *smr_thread(unsigned id);

/* Count one deferred free requested by t (call before handing the node over). */
static inline void smr_deferred_queued(struct bench_thread *t)
{
	atomic_store_explicit(&t->queued,
			      atomic_load_explicit(&t->queued, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* Count one deferred free completed, on behalf of worker `freer` (from a callback). */
static inline void smr_deferred_done(unsigned freer)
{
	atomic_fetch_add_explicit(&smr_thread(freer)->done, 1, memory_order_release);
}

/* Sum over workers of queued - done: what a call-based peer returns as pending. */
uint64_t smr_pending_counted(void);

/* ---- nodes and validation ---- */
#define SMR_NODE_LIVE 0x4c4956454e4f4445ull   /* "LIVENODE" */
#define SMR_NODE_POISON 0xdeadbeefdeadbeefull /* set when freed (or about to be reused) */

/* The first bytes of every mechanism's node. Fields are atomics accessed with relaxed
 * ordering (plain loads and stores on x86-64 and aarch64): the pointer load that found
 * the node orders them, and if a mechanism lets a reader see a node being freed or
 * reused, the race is reported by the check instead of being undefined behaviour. */
struct smr_node {
	_Atomic uint64_t magic; /* SMR_NODE_LIVE while reachable */
	_Atomic uint64_t gen;   /* incarnation: (creator id << 40) | creator's sequence */
	_Atomic uint64_t check; /* smr_node_hash(gen, slot) */
	_Atomic uint32_t slot;  /* slot the node was installed in */
	uint32_t freer;         /* worker that deferred its free (for pending counters) */
};

static inline uint64_t smr_node_hash(uint64_t gen, unsigned slot)
{
	return (gen ^ ((uint64_t)slot << 48)) * 0x9e3779b97f4a7c15ull;
}

/* A fresh incarnation number for a node created by t. */
static inline uint64_t smr_gen(struct bench_thread *t)
{
	return ((uint64_t)t->id << 40) | (++t->seq & ((1ull << 40) - 1));
}

/* Incarnation of the node that initially fills slot i. */
static inline uint64_t smr_initial_gen(unsigned i)
{
	return (0xfffffull << 40) | i;
}

/* Initialise n before publishing it. The first store poisons the node: if a mechanism
 * reuses memory a reader can still reach, that reader may see the poison or a
 * gen/check/slot mismatch while the fields are rewritten. */
static inline void smr_node_init(struct smr_node *n, uint64_t gen, unsigned slot)
{
	atomic_store_explicit(&n->magic, SMR_NODE_POISON, memory_order_relaxed);
	atomic_store_explicit(&n->gen, gen, memory_order_relaxed);
	atomic_store_explicit(&n->check, smr_node_hash(gen, slot), memory_order_relaxed);
	atomic_store_explicit(&n->slot, slot, memory_order_relaxed);
	n->freer = 0;
	atomic_store_explicit(&n->magic, SMR_NODE_LIVE, memory_order_relaxed);
}

/* Mark n freed; peers call it right before returning n to the system allocator. */
static inline void smr_node_poison(struct smr_node *n)
{
	atomic_store_explicit(&n->magic, SMR_NODE_POISON, memory_order_relaxed);
}

/* Prints what the reader saw and aborts. */
_Noreturn void smr_node_fail(const struct smr_node *n, unsigned slot, uint64_t magic, uint64_t gen,
			     uint64_t check, unsigned nslot);

/* The read-side work: a reader inside its section validates the node it loaded from
 * slot. Aborts with a diagnostic if the node is freed, being reused, or corrupt. */
static inline void smr_node_check(const struct smr_node *n, unsigned slot)
{
	uint64_t m = atomic_load_explicit(&n->magic, memory_order_relaxed);
	uint64_t g = atomic_load_explicit(&n->gen, memory_order_relaxed);
	uint64_t c = atomic_load_explicit(&n->check, memory_order_relaxed);
	unsigned s = atomic_load_explicit(&n->slot, memory_order_relaxed);
	if (__builtin_expect(m != SMR_NODE_LIVE || s != slot || c != smr_node_hash(g, slot), 0))
		smr_node_fail(n, slot, m, g, c, s);
}

/* Aborts with "out of memory" (node allocation failed inside the timed loop). */
_Noreturn void smr_oom(void);

/* ---- the adapter interface ---- */
struct smr_peer {
	const char *name; /* as given to --mechanisms */
	const char *what; /* one line for --help */
	/* Before the workers start, on the main thread: create the mechanism, fill the
	 * SMR_SLOTS slots with initialised nodes (smr_initial_gen). Returns 0 or -1. */
	int (*init)(unsigned nthreads);
	/* After every worker has been joined: drain deferred frees, free every node. */
	void (*fini)(void);
	/* On the worker, before the start barrier (registration, per-thread records).
	 * Returns 0 or -1. */
	int (*thread_init)(struct bench_thread *t);
	/* On the worker, after its last op. */
	void (*thread_fini)(struct bench_thread *t);
	/* One read and one update of slot (slot < SMR_SLOTS). */
	void (*read)(struct bench_thread *t, unsigned slot);
	void (*update)(struct bench_thread *t, unsigned slot);
	/* Objects freed but not yet reusable, any thread, any time during a run. NULL: the
	 * mechanism never defers (frees right after its grace period or under a lock). */
	uint64_t (*pending)(void);
};

extern const struct smr_peer smr_peer_ps;
extern const struct smr_peer smr_peer_urcu_mb_sync, smr_peer_urcu_mb_call;
extern const struct smr_peer smr_peer_urcu_memb_sync, smr_peer_urcu_memb_call;
extern const struct smr_peer smr_peer_urcu_qsbr_sync, smr_peer_urcu_qsbr_call;
extern const struct smr_peer smr_peer_ck_epoch_sync, smr_peer_ck_epoch_call;
extern const struct smr_peer smr_peer_ck_brlock;
extern const struct smr_peer smr_peer_pthread_rwlock;
extern const struct smr_peer smr_peer_unsafe; /* control: must fail the check */

/* Entry point of `tsync-bench smr`: argv[0] is "smr", cmdline the whole command line
 * (for the report's header). Returns the exit status. */
int smr_main(int argc, char **argv, const char *cmdline);

#endif /* TSYNC_BENCH_SMR_H */
