/*
 * bench/smr/peers/ck_brlock.c - Concurrency Kit's big-reader lock (ck_brlock): each reader
 * has its own counter, a writer sets the writer flag and waits for every reader counter
 * to drain. Reads take the read lock; an update swaps the slot under the write lock and
 * frees the old node immediately (no reader can hold it once the write lock is ours).
 */
#include <ck_brlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../smr_run.h"

struct reader {
	_Alignas(SMR_CACHE_LINE) ck_brlock_reader_t r; /* one line per reader */
};

static ck_brlock_t lock;
static struct reader *readers;
static struct smr_node *_Atomic slots[SMR_SLOTS];

static struct smr_node *bnode_new(uint64_t gen, unsigned slot)
{
	struct smr_node *n = malloc(SMR_NODE_BYTES);
	if (!n)
		smr_oom();
	smr_node_init(n, gen, slot);
	return n;
}

static void bnode_free(struct smr_node *n)
{
	smr_node_poison(n);
	free(n);
}

static int brl_init(unsigned nthreads)
{
	readers = aligned_alloc(SMR_CACHE_LINE, (size_t)nthreads * sizeof(*readers));
	if (!readers) {
		perror("ck-brlock readers");
		return -1;
	}
	memset(readers, 0, (size_t)nthreads * sizeof(*readers));
	ck_brlock_init(&lock);
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		atomic_store_explicit(&slots[i], bnode_new(smr_initial_gen(i), i),
				      memory_order_release);
	return 0;
}

static void brl_fini(void)
{
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		bnode_free(atomic_exchange_explicit(&slots[i], NULL, memory_order_relaxed));
	free(readers);
	readers = NULL;
}

static int brl_thread_init(struct bench_thread *t)
{
	ck_brlock_read_register(&lock, &readers[t->id].r);
	t->peer = &readers[t->id].r;
	return 0;
}

static void brl_thread_fini(struct bench_thread *t)
{
	ck_brlock_read_unregister(&lock, t->peer);
}

static void brl_read(struct bench_thread *t, unsigned slot)
{
	ck_brlock_read_lock(&lock, t->peer);
	struct smr_node *n = atomic_load_explicit(&slots[slot], memory_order_relaxed);
	smr_node_check(n, slot);
	ck_brlock_read_unlock(t->peer);
}

static void brl_update(struct bench_thread *t, unsigned slot)
{
	struct smr_node *n = bnode_new(smr_gen(t), slot);
	ck_brlock_write_lock(&lock);
	struct smr_node *old = atomic_load_explicit(&slots[slot], memory_order_relaxed);
	atomic_store_explicit(&slots[slot], n, memory_order_relaxed);
	ck_brlock_write_unlock(&lock);
	bnode_free(old);
}

const struct smr_peer smr_peer_ck_brlock = {
	.name = "ck-brlock",
	.what = "Concurrency Kit ck_brlock: read lock; write lock + swap, free at once",
	.init = brl_init,
	.fini = brl_fini,
	.thread_init = brl_thread_init,
	.thread_fini = brl_thread_fini,
	.read = brl_read,
	.update = brl_update,
	.pending = NULL,
};
