/*
 * bench/smr/peers/unsafe.c - a control that must fail: readers use no protection and
 * updaters free the old node at once. Not part of `all` (name it explicitly); it exists
 * to show that the readers' node check catches use-after-free (ctest
 * bench_smr_detects_unsafe expects the run to abort with the check's diagnostic).
 */
#include <stdlib.h>

#include "../smr.h"

static struct smr_node *_Atomic slots[SMR_SLOTS];

static int uns_init(unsigned nthreads)
{
	(void)nthreads;
	for (unsigned i = 0; i < SMR_SLOTS; i++) {
		struct smr_node *n = malloc(SMR_NODE_BYTES);
		if (!n)
			smr_oom();
		smr_node_init(n, smr_initial_gen(i), i);
		atomic_store_explicit(&slots[i], n, memory_order_release);
	}
	return 0;
}

static void uns_fini(void)
{
	for (unsigned i = 0; i < SMR_SLOTS; i++)
		free(atomic_exchange_explicit(&slots[i], NULL, memory_order_relaxed));
}

static int uns_thread_init(struct bench_thread *t)
{
	(void)t;
	return 0;
}

static void uns_thread_fini(struct bench_thread *t)
{
	(void)t;
}

static void uns_read(struct bench_thread *t, unsigned slot)
{
	(void)t;
	struct smr_node *n = atomic_load_explicit(&slots[slot], memory_order_acquire);
	smr_node_check(n, slot);
}

static void uns_update(struct bench_thread *t, unsigned slot)
{
	struct smr_node *n = malloc(SMR_NODE_BYTES);
	if (!n)
		smr_oom();
	smr_node_init(n, smr_gen(t), slot);
	struct smr_node *old = atomic_exchange_explicit(&slots[slot], n, memory_order_acq_rel);
	smr_node_poison(old);
	free(old); /* wrong on purpose: a reader may still hold old */
}

const struct smr_peer smr_peer_unsafe = {
	.name = "unsafe",
	.what = "control, not in 'all': no read-side protection, immediate free (must abort)",
	.init = uns_init,
	.fini = uns_fini,
	.thread_init = uns_thread_init,
	.thread_fini = uns_thread_fini,
	.read = uns_read,
	.update = uns_update,
	.pending = NULL,
};
