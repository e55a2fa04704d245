/*
 * bench/smr/peers/unsafe.c - a control that must fail: readers use no protection and
 * updaters free the old node at once. Not part of `all` (name it explicitly); it exists
 * to show that the readers' node check catches use-after-free (ctest
 * bench_smr_detects_unsafe expects the run to abort with the check's diagnostic).
 *
 * Left to chance, a reader catches a free only when an update of its slot lands in the
 * few nanoseconds between its load and its check - on a loaded machine, where the two
 * threads rarely run at once, perhaps never in a whole run. So with two or more workers
 * the control stages that interleaving once, deterministically: a reader holds the node
 * it loaded (its section open), the next update replaces that node and frees it, and
 * only then does the reader check it - the check must fail. The holder is the first
 * reader, or, if no worker read before one finished its loop (a loaded machine, 0 %
 * reads), that worker in its thread_fini; either way another worker has not finished
 * yet, and releases the hold with its next update or, if none comes (0 % updates, or its
 * loop ended), in its own thread_fini. While a freed node waits for its check, updates
 * wait too, so nothing reuses its memory first (an update's malloc could hand it out
 * again, re-initialised for the same slot, and the check would pass). Updates always
 * take the hold's mutex: the control's speed is not a figure anyone reads.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../smr_run.h"

static struct smr_node *_Atomic slots[SMR_SLOTS];

/* The staged interleaving (all under hold_mu): IDLE (no hold yet) -> HELD (a reader holds
 * the node of held_slot) -> FREED (an update freed it; the reader may check) -> DONE (the
 * reader's check passed - it should not have - or one worker alone: no hold). */
enum hold_state { HOLD_IDLE, HOLD_HELD, HOLD_FREED, HOLD_DONE };
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static enum hold_state hold_state;
static _Atomic bool hold_open; /* a reader may still take the hold: state IDLE */
static unsigned held_slot;

static int uns_init(unsigned nthreads)
{
	for (unsigned i = 0; i < SMR_SLOTS; i++) {
		struct smr_node *n = malloc(SMR_NODE_BYTES);
		if (!n)
			smr_oom();
		smr_node_init(n, smr_initial_gen(i), i);
		atomic_store_explicit(&slots[i], n, memory_order_release);
	}
	/* one worker has nobody to free a node under it: no hold */
	hold_state = nthreads >= 2 ? HOLD_IDLE : HOLD_DONE;
	atomic_store(&hold_open, nthreads >= 2);
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

/* The update itself: a new node into slot, the old one poisoned and freed at once. */
static void replace(struct bench_thread *t, unsigned slot)
{
	struct smr_node *n = malloc(SMR_NODE_BYTES);
	if (!n)
		smr_oom();
	smr_node_init(n, smr_gen(t), slot);
	struct smr_node *old = atomic_exchange_explicit(&slots[slot], n, memory_order_acq_rel);
	smr_node_poison(old);
	free(old); /* wrong on purpose: a reader may still hold old */
}

/* With hold_mu held and a hold in place: replace the held node (freeing it), let the
 * reader check it, and wait until it has (it aborts if the check works). */
static void free_held(struct bench_thread *t)
{
	replace(t, held_slot); /* the held node is still there: updates take hold_mu */
	hold_state = HOLD_FREED;
	pthread_cond_broadcast(&hold_cv);
	while (hold_state == HOLD_FREED)
		pthread_cond_wait(&hold_cv, &hold_mu);
}

/* With hold_mu held and the hold IDLE: hold slot's node until an update has freed it,
 * then check it (must abort). */
static void hold(unsigned slot)
{
	atomic_store(&hold_open, false);
	struct smr_node *n = atomic_load_explicit(&slots[slot], memory_order_acquire);
	held_slot = slot;
	hold_state = HOLD_HELD;
	while (hold_state == HOLD_HELD)
		pthread_cond_wait(&hold_cv, &hold_mu);
	/* FREED: n is freed memory now, and nobody allocates until we are done */
	smr_node_check(n, slot); /* must abort */
	hold_state = HOLD_DONE;
	pthread_cond_broadcast(&hold_cv);
}

static void uns_thread_fini(struct bench_thread *t)
{
	pthread_mutex_lock(&hold_mu);
	if (hold_state == HOLD_HELD) /* another worker holds a node: free it */
		free_held(t);
	else if (hold_state == HOLD_IDLE) /* nobody read yet: hold here (a worker is left) */
		hold(0);
	pthread_mutex_unlock(&hold_mu);
}

/* The first read while the hold is open. */
static bool read_held(unsigned slot)
{
	pthread_mutex_lock(&hold_mu);
	bool mine = hold_state == HOLD_IDLE;
	if (mine)
		hold(slot);
	pthread_mutex_unlock(&hold_mu);
	return mine;
}

static void uns_read(struct bench_thread *t, unsigned slot)
{
	(void)t;
	if (atomic_load_explicit(&hold_open, memory_order_relaxed) && read_held(slot))
		return;
	struct smr_node *n = atomic_load_explicit(&slots[slot], memory_order_acquire);
	smr_node_check(n, slot);
}

static void uns_update(struct bench_thread *t, unsigned slot)
{
	pthread_mutex_lock(&hold_mu);
	while (hold_state == HOLD_FREED) /* a freed node awaits its check: no malloc now */
		pthread_cond_wait(&hold_cv, &hold_mu);
	if (hold_state == HOLD_HELD)
		free_held(t);
	else
		replace(t, slot);
	pthread_mutex_unlock(&hold_mu);
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
