/*
 * bench/smr/peers/ck_epoch.c - Concurrency Kit's epoch reclamation (ck_epoch), two variants:
 *   ck-epoch-sync: ck_epoch_begin/end around reads; update = malloc + xchg +
 *                  ck_epoch_synchronize + free.
 *   ck-epoch-call: same reads; update = malloc + xchg + ck_epoch_call + ck_epoch_poll.
 *                  Callbacks run on the record's owner inside ck_epoch_poll (or the
 *                  ck_epoch_barrier at thread exit).
 * One ck_epoch_t per run, one record per worker (records stay linked into the epoch
 * after ck_epoch_unregister, so they are freed only with it, in fini).
 */
#include <ck_epoch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../smr_run.h"

struct cnode {
	struct smr_node n;
	ck_epoch_entry_t entry;
};
_Static_assert(sizeof(struct cnode) <= SMR_NODE_BYTES, "node must fit one cache line");

static ck_epoch_t epoch;
static ck_epoch_record_t *records; /* one per worker, cache-line aligned by ck */
static struct cnode *_Atomic slots[SMR_SLOTS];

static struct cnode *cnode_new(uint64_t gen, unsigned slot)
{
	struct cnode *c = malloc(SMR_NODE_BYTES);
	if (!c)
		smr_oom();
	smr_node_init(&c->n, gen, slot);
	return c;
}

static void cnode_free(struct cnode *c)
{
	smr_node_poison(&c->n);
	free(c);
}

static int cke_init(unsigned nthreads)
{
	size_t bytes = (size_t)nthreads * sizeof(ck_epoch_record_t);
	bytes = (bytes + SMR_CACHE_LINE - 1) / SMR_CACHE_LINE * SMR_CACHE_LINE;
	records = aligned_alloc(SMR_CACHE_LINE, bytes);
	if (!records) {
		perror("ck-epoch records");
		return -1;
	}
	memset(records, 0, bytes);
	ck_epoch_init(&epoch);
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		atomic_store_explicit(&slots[i], cnode_new(smr_initial_gen(i), i),
				      memory_order_release);
	return 0;
}

static void cke_fini(void)
{
	/* Workers ran ck_epoch_barrier before unregistering: nothing is pending. */
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		cnode_free(atomic_exchange_explicit(&slots[i], NULL, memory_order_relaxed));
	free(records);
	records = NULL;
}

static int cke_thread_init(struct bench_thread *t)
{
	ck_epoch_record_t *r = &records[t->id];
	ck_epoch_register(&epoch, r, NULL);
	t->peer = r;
	return 0;
}

static void cke_thread_fini_sync(struct bench_thread *t)
{
	ck_epoch_unregister(t->peer);
}

static void cke_thread_fini_call(struct bench_thread *t)
{
	ck_epoch_barrier(t->peer); /* runs every callback this record queued */
	ck_epoch_unregister(t->peer);
}

static void cke_read(struct bench_thread *t, unsigned slot)
{
	ck_epoch_record_t *r = t->peer;
	ck_epoch_begin(r, NULL);
	struct cnode *c = atomic_load_explicit(&slots[slot], memory_order_acquire);
	smr_node_check(&c->n, slot);
	ck_epoch_end(r, NULL);
}

static void cke_update_sync(struct bench_thread *t, unsigned slot)
{
	struct cnode *c = cnode_new(smr_gen(t), slot);
	struct cnode *old = atomic_exchange_explicit(&slots[slot], c, memory_order_acq_rel);
	ck_epoch_synchronize(t->peer);
	cnode_free(old);
}

static void cke_free_cb(ck_epoch_entry_t *e)
{
	struct cnode *c = smr_container_of(e, struct cnode, entry);
	unsigned freer = c->n.freer;
	cnode_free(c);
	smr_deferred_done(freer);
}

static void cke_update_call(struct bench_thread *t, unsigned slot)
{
	ck_epoch_record_t *r = t->peer;
	struct cnode *c = cnode_new(smr_gen(t), slot);
	struct cnode *old = atomic_exchange_explicit(&slots[slot], c, memory_order_acq_rel);
	old->n.freer = t->id;
	smr_deferred_queued(t);
	ck_epoch_call(r, &old->entry, cke_free_cb);
	ck_epoch_poll(r);
}

const struct smr_peer smr_peer_ck_epoch_sync = {
	.name = "ck-epoch-sync",
	.what = "Concurrency Kit ck_epoch: begin/end; malloc + xchg + ck_epoch_synchronize + free",
	.init = cke_init,
	.fini = cke_fini,
	.thread_init = cke_thread_init,
	.thread_fini = cke_thread_fini_sync,
	.read = cke_read,
	.update = cke_update_sync,
	.pending = NULL,
};

const struct smr_peer smr_peer_ck_epoch_call = {
	.name = "ck-epoch-call",
	.what = "Concurrency Kit ck_epoch: begin/end; malloc + xchg + ck_epoch_call + "
		"ck_epoch_poll",
	.init = cke_init,
	.fini = cke_fini,
	.thread_init = cke_thread_init,
	.thread_fini = cke_thread_fini_call,
	.read = cke_read,
	.update = cke_update_call,
	.pending = smr_pending_counted,
};
