/*
 * bench/smr/peers/urcu_flavour.h - the two liburcu adapters (-sync, -call) of one flavour.
 *
 * Included once by each flavour's .c file (urcu_mb.c, urcu_memb.c, urcu_qsbr.c) after it
 * has included that flavour's header with _LGPL_SOURCE and defined:
 *   URCU_FN(x)    the flavour's prefixed API name, e.g. urcu_mb_##x
 *   URCU_NAME     "urcu-mb"
 *   URCU_PEER(k)  the exported adapter names, e.g. smr_peer_urcu_mb_##k
 * One translation unit per flavour because two flavour headers in one TU conflict (they
 * map the same unprefixed names). Everything here is static to that TU.
 *
 * -sync: malloc, rcu_xchg_pointer, synchronize_rcu, poison + free.
 * -call: malloc, rcu_xchg_pointer, call_rcu; the callback (on liburcu's call_rcu worker
 *        thread) poisons and frees. rcu_barrier() drains callbacks at the end of a run.
 *
 * Quiescent states: a worker reports one after every operation (URCU_FN(quiescent_state)).
 * For mb/memb that is an empty inline function. For QSBR it is what the flavour needs:
 * one benchmark op is one "request", and reporting per request is how QSBR is used in a
 * server loop; when no grace period is pending it costs one load and compare, so the
 * read path stays fence-free, while reporting only every N ops would make every
 * synchronize_rcu wait for N ops of each other worker and inflate QSBR's update latency.
 */
#include <stdlib.h>

#include "../smr_run.h"

struct unode {
	struct smr_node n;
	struct rcu_head head;
};
_Static_assert(sizeof(struct unode) <= SMR_NODE_BYTES, "node must fit one cache line");

/* liburcu's pointer API works on plain pointers (rcu_dereference, rcu_xchg_pointer). */
static struct unode *slots[SMR_SLOTS];

static struct unode *unode_new(uint64_t gen, unsigned slot)
{
	struct unode *u = malloc(SMR_NODE_BYTES); /* same footprint as every mechanism */
	if (!u)
		smr_oom();
	smr_node_init(&u->n, gen, slot);
	return u;
}

static void unode_free(struct unode *u)
{
	smr_node_poison(&u->n);
	free(u);
}

static int urcu_init(unsigned nthreads)
{
	(void)nthreads;
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		rcu_set_pointer(&slots[i], unode_new(smr_initial_gen(i), i));
	return 0;
}

static void urcu_fini_sync(void)
{
	for (unsigned i = 0; i < SMR_SLOTS; i++) {
		unode_free(slots[i]);
		slots[i] = NULL;
	}
}

static void urcu_fini_call(void)
{
	URCU_FN(barrier)(); /* every queued callback has run */
	urcu_fini_sync();
}

static int urcu_thread_init(struct bench_thread *t)
{
	(void)t;
	URCU_FN(register_thread)();
	return 0;
}

static void urcu_thread_fini(struct bench_thread *t)
{
	(void)t;
	URCU_FN(unregister_thread)();
}

static void urcu_read(struct bench_thread *t, unsigned slot)
{
	(void)t;
	URCU_FN(read_lock)();
	struct unode *u = rcu_dereference(slots[slot]);
	smr_node_check(&u->n, slot);
	URCU_FN(read_unlock)();
	URCU_FN(quiescent_state)();
}

static void urcu_update_sync(struct bench_thread *t, unsigned slot)
{
	struct unode *u = unode_new(smr_gen(t), slot);
	struct unode *old = rcu_xchg_pointer(&slots[slot], u);
	URCU_FN(synchronize_rcu)();
	unode_free(old);
	URCU_FN(quiescent_state)();
}

static void urcu_free_cb(struct rcu_head *head)
{
	struct unode *u = smr_container_of(head, struct unode, head);
	unsigned freer = u->n.freer;
	unode_free(u);
	smr_deferred_done(freer);
}

static void urcu_update_call(struct bench_thread *t, unsigned slot)
{
	struct unode *u = unode_new(smr_gen(t), slot);
	struct unode *old = rcu_xchg_pointer(&slots[slot], u);
	old->n.freer = t->id; /* readers never read freer */
	smr_deferred_queued(t);
	URCU_FN(call_rcu)(&old->head, urcu_free_cb);
	URCU_FN(quiescent_state)();
}

const struct smr_peer URCU_PEER(sync) = {
	.name = URCU_NAME "-sync",
	.what = "liburcu " URCU_NAME ": read_lock/unlock; malloc + xchg + synchronize_rcu + free",
	.init = urcu_init,
	.fini = urcu_fini_sync,
	.thread_init = urcu_thread_init,
	.thread_fini = urcu_thread_fini,
	.read = urcu_read,
	.update = urcu_update_sync,
	.pending = NULL,
};

const struct smr_peer URCU_PEER(call) = {
	.name = URCU_NAME "-call",
	.what = "liburcu " URCU_NAME ": read_lock/unlock; malloc + xchg + call_rcu(free)",
	.init = urcu_init,
	.fini = urcu_fini_call,
	.thread_init = urcu_thread_init,
	.thread_fini = urcu_thread_fini,
	.read = urcu_read,
	.update = urcu_update_call,
	.pending = smr_pending_counted,
};
