/*
 * bench/smr/peers/pthread_rwlock.c - one pthread_rwlock_t with default attributes (glibc:
 * reader-preferring) around every read; an update swaps the slot under the write lock and
 * frees the old node immediately.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../smr_run.h"

static pthread_rwlock_t lock;
static struct smr_node *_Atomic slots[SMR_SLOTS];

static struct smr_node *rwl_node_new(uint64_t gen, unsigned slot)
{
	struct smr_node *n = malloc(SMR_NODE_BYTES);
	if (!n)
		smr_oom();
	smr_node_init(n, gen, slot);
	return n;
}

static void rwl_node_free(struct smr_node *n)
{
	smr_node_poison(n);
	free(n);
}

static int rwl_init(unsigned nthreads)
{
	(void)nthreads;
	int err = pthread_rwlock_init(&lock, NULL);
	if (err) {
		fprintf(stderr, "pthread_rwlock_init: %s\n", strerror(err));
		return -1;
	}
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		atomic_store_explicit(&slots[i], rwl_node_new(smr_initial_gen(i), i),
				      memory_order_release);
	return 0;
}

static void rwl_fini(void)
{
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		rwl_node_free(atomic_exchange_explicit(&slots[i], NULL, memory_order_relaxed));
	pthread_rwlock_destroy(&lock);
}

static int rwl_thread_init(struct bench_thread *t)
{
	(void)t;
	return 0;
}

static void rwl_thread_fini(struct bench_thread *t)
{
	(void)t;
}

static void rwl_read(struct bench_thread *t, unsigned slot)
{
	(void)t;
	pthread_rwlock_rdlock(&lock);
	struct smr_node *n = atomic_load_explicit(&slots[slot], memory_order_relaxed);
	smr_node_check(n, slot);
	pthread_rwlock_unlock(&lock);
}

static void rwl_update(struct bench_thread *t, unsigned slot)
{
	struct smr_node *n = rwl_node_new(smr_gen(t), slot);
	pthread_rwlock_wrlock(&lock);
	struct smr_node *old = atomic_load_explicit(&slots[slot], memory_order_relaxed);
	atomic_store_explicit(&slots[slot], n, memory_order_relaxed);
	pthread_rwlock_unlock(&lock);
	rwl_node_free(old);
}

const struct smr_peer smr_peer_pthread_rwlock = {
	.name = "pthread-rwlock",
	.what = "glibc pthread_rwlock_t (default attributes): rdlock; wrlock + swap, free at once",
	.init = rwl_init,
	.fini = rwl_fini,
	.thread_init = rwl_thread_init,
	.thread_fini = rwl_thread_fini,
	.read = rwl_read,
	.update = rwl_update,
	.pending = NULL,
};
