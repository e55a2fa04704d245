/*
 * src/ps_call.c - deferred callbacks for any object: ps_call, ps_call_free, ps_barrier,
 * ps_call_poll (contracts in include/tsync/ps.h; the argument in docs/design.md §2.7).
 *
 * Each thread id has a queue per struct ps:
 *   open   a LIFO list that only the id's thread pushes onto (a CAS on a line of its
 *          own); anyone may take it whole with one exchange, under the queue's mutex;
 *   ring   up to PS_CALL_RING batches, oldest first, under the mutex: each a FIFO list
 *          stamped with an ordered clock reading taken after the exchange that closed
 *          it, so after every ps_call in it - a later stamp than ParSec's per-object
 *          free time (ParSec (EuroSys 2016) §3.2), which only delays the callbacks.
 * A batch runs once ps__quiesce_own proves its stamp, under the queue's mutex, so
 * that ps_barrier, which takes every mutex in turn, also waits for callbacks being run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/ps.h>
#include "ps_internal.h"
#include "registry.h"
#include "tdir.h"
#include "util.h"
#include "wait.h"

struct ps_callb {
	struct ps_head *first, *last; /* FIFO: first->...->last, last->next == NULL */
	uint64_t stamp;               /* an ordered reading after every call in it */
	uint64_t n;                   /* callbacks in it */
	uint64_t hi;                  /* the sequence number of the newest batch closed
				       * into it (a merge makes it cover several) */
};

struct ps_callq {
	/* The id's thread pushes here; others only exchange it (under mu). */
	_Alignas(TSYNC_CACHE_LINE) struct ps_head *_Atomic open;
	_Atomic uint64_t queued; /* calls made through this id (its thread only) */
	unsigned nopen;          /* its thread: calls since its last poll */
	unsigned help_next;      /* its thread: the id it helps next */
	_Atomic uint64_t polled; /* its thread: tsync_now() at its last poll (0: never) */
	_Alignas(TSYNC_CACHE_LINE) pthread_mutex_t mu;
	/* under mu (the atomics: also read by ps_call_stats and by pollers' quick check) */
	struct ps_callb ring[PS_CALL_RING];
	unsigned rhead;
	_Atomic unsigned rcount;
	uint64_t closed;  /* batches closed so far: sequence numbers 1..closed */
	uint64_t run_seq; /* every batch with a sequence number <= this has run */
	_Atomic uint64_t run, batches, merges, helped;
	uint64_t ncalls_closed; /* callbacks closed into batches so far */
};

/* A counter changed by one writer at a time (its thread, or under mu), read by stats. */
static inline void cnt_add_(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_release);
}

struct ps_calls {
	void *_Atomic *dir; /* tdir of struct ps_callq, nchunks entries */
	unsigned nchunks;
	/* fork: the chunks whose mutexes fork_prepare took (a chunk published after it
	 * looked is not among them); nchunks entries, written in the forking thread only */
	struct ps_callq **forklocked;
};

/* > 0 while the thread runs callbacks: its ps_call only queues, and ps_barrier aborts. */
static _Thread_local unsigned call_depth;

static void callq_chunk_init(void *chunk, void *arg)
{
	(void)arg;
	struct ps_callq *q = chunk;
	for (unsigned i = 0; i < TSYNC__CHUNK; i++)
		if (pthread_mutex_init(&q[i].mu, NULL) != 0)
			tsync__fatal("pthread_mutex_init failed");
}

struct ps_calls *ps__calls_new(unsigned nchunks)
{
	struct ps_calls *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->dir = calloc(nchunks, sizeof(*c->dir));
	c->forklocked = calloc(nchunks, sizeof(*c->forklocked));
	if (c->dir == NULL || c->forklocked == NULL) {
		free(c->dir);
		free(c->forklocked);
		free(c);
		return NULL;
	}
	c->nchunks = nchunks;
	return c;
}

static struct ps_callq *callq_next(struct ps_calls *c, unsigned *pos)
{
	return tsync__tdir_next(c->dir, c->nchunks, sizeof(struct ps_callq), pos);
}

/* The calling thread's queue, allocated at its first call on ps (ps_call cannot fail). */
static struct ps_callq *callq_own(struct ps *ps, unsigned *tid)
{
	struct ps_calls *c = ps__calls(ps);
	*tid = tsync__self();
	struct ps_callq *q =
		tsync__tdir_get(c->dir, *tid, sizeof(struct ps_callq), callq_chunk_init, NULL);
	if (q == NULL)
		tsync__fatal("out of memory allocating a ps_call queue");
	return q;
}

/* Close q's open list into a batch (mu held). */
static void callq_close(struct ps_callq *q)
{
	struct ps_head *h = atomic_exchange_explicit(&q->open, NULL, memory_order_acquire);
	if (h == NULL)
		return;
	/* After the exchange, which synchronises with every push it took: the stamp follows
	 * every call in the batch (docs/design.md §2.7). */
	uint64_t t = tsync_now_ordered();
	struct ps_head *first = NULL, *last = h;
	uint64_t n = 0;
	while (h) { /* newest first -> oldest first */
		struct ps_head *next = h->next;
		h->next = first;
		first = h;
		h = next;
		n++;
	}
	q->closed++;
	q->ncalls_closed += n;
	cnt_add_(&q->batches, 1);
	unsigned rc = atomic_load_explicit(&q->rcount, memory_order_relaxed);
	if (rc == PS_CALL_RING) {
		/* Full: the newest batch takes these too, with the later stamp. */
		struct ps_callb *b = &q->ring[(q->rhead + rc - 1) % PS_CALL_RING];
		b->last->next = first;
		b->last = last;
		b->n += n;
		b->stamp = t;
		b->hi = q->closed;
		cnt_add_(&q->merges, 1);
		return;
	}
	q->ring[(q->rhead + rc) % PS_CALL_RING] = (struct ps_callb){
		.first = first, .last = last, .stamp = t, .n = n, .hi = q->closed};
	atomic_store_explicit(&q->rcount, rc + 1, memory_order_relaxed);
}

/* Run one callback: a function, or (ps_call_free) an offset below 4096 to free at. */
static void run_one(struct ps_head *h)
{
	uintptr_t v;
	memcpy(&v, &h->fn, sizeof(v));
	if (v < 4096)
		free((char *)h - v);
	else
		h->fn(h);
}

/* Callbacks one poll runs for another thread's queue at most: a helper runs callbacks
 * of an idle or exited thread, a bounded share of its own time (polls help only queues
 * whose thread has not polled for HELP_AFTER_NS). */
#define HELP_BUDGET (4u * PS_CALL_BATCH)
#define HELP_AFTER_NS 1000000u

/* Run q's batches whose stamps are proven quiescent, oldest first (mu held), at most
 * `budget` callbacks (the rest of a batch begun stays at the head). Stops at the first
 * batch that is not quiescent. mine: the caller is the id that queued them. Returns the
 * count. */
static size_t callq_run(struct ps *ps, struct ps_callq *q, bool lazy, bool mine, size_t budget)
{
	size_t n = 0;
	uint64_t u = 0; /* every stamp <= u read before the computation is quiescent */
	while (atomic_load_explicit(&q->rcount, memory_order_relaxed) != 0 && n < budget) {
		struct ps_callb b = q->ring[q->rhead];
		if (b.stamp > u) {
			/* The stamps were written under mu, before this call: ps__quiesce_own's
			 * bound holds for them. */
			u = ps__quiesce_own(ps, b.stamp, lazy);
			if (u < b.stamp)
				break;
		}
		if (b.n > budget - n) {
			/* part of it: the rest stays at the head, same stamp, not yet run */
			uint64_t k = budget - n;
			struct ps_head *h = b.first, *next;
			call_depth++;
			for (uint64_t i = 0; i < k; i++, h = next) {
				next = h->next;
				run_one(h);
			}
			call_depth--;
			q->ring[q->rhead].first = h;
			q->ring[q->rhead].n = b.n - k;
			cnt_add_(&q->run, k);
			if (!mine)
				cnt_add_(&q->helped, k);
			n += k;
			break;
		}
		q->rhead = (q->rhead + 1) % PS_CALL_RING;
		atomic_store_explicit(&q->rcount,
				      atomic_load_explicit(&q->rcount, memory_order_relaxed) - 1,
				      memory_order_relaxed);
		call_depth++;
		for (struct ps_head *h = b.first, *next; h != NULL; h = next) {
			next = h->next;
			run_one(h);
		}
		call_depth--;
		q->run_seq = b.hi;
		cnt_add_(&q->run, b.n);
		if (!mine)
			cnt_add_(&q->helped, b.n);
		n += b.n;
	}
	return n;
}

static bool callq_busy(struct ps_callq *q)
{
	return atomic_load_explicit(&q->open, memory_order_relaxed) != NULL ||
	       atomic_load_explicit(&q->rcount, memory_order_relaxed) != 0;
}

/* Close and run what is ready of q, if its mutex is free. */
static size_t callq_try(struct ps *ps, struct ps_callq *q, bool lazy, bool mine)
{
	if (pthread_mutex_trylock(&q->mu) != 0)
		return 0; /* someone is running it */
	callq_close(q);
	size_t n = callq_run(ps, q, lazy, mine, lazy && !mine ? HELP_BUDGET : SIZE_MAX);
	pthread_mutex_unlock(&q->mu);
	return n;
}

/* Every PS_CALL_BATCH-th call: the caller's own queue, then the next other queue with work
 * whose thread has not polled for HELP_AFTER_NS (idle, or exited). Helping a busy thread
 * would only fight it for its mutex - its polls then fail the trylock and its batches
 * grow - and free its objects into its allocator arena from the wrong thread. */
static void callq_poll(struct ps *ps, struct ps_callq *q, unsigned me)
{
	q->nopen = 0;
	uint64_t now = tsync_now();
	atomic_store_explicit(&q->polled, now, memory_order_relaxed);
	callq_try(ps, q, true, true);
	struct ps_calls *c = ps__calls(ps);
	unsigned hw = tsync_thread_high_water();
	if (hw <= 1)
		return;
	for (unsigned i = 0; i < hw; i++) {
		unsigned id = (q->help_next + i) % hw;
		if (id == me)
			continue;
		struct ps_callq *o = tsync__tdir_at(c->dir, id, sizeof(struct ps_callq));
		if (o != NULL && callq_busy(o) &&
		    now - atomic_load_explicit(&o->polled, memory_order_relaxed) >
			    tsync_ns_to_ticks(HELP_AFTER_NS)) {
			callq_try(ps, o, true, false);
			q->help_next = id + 1;
			return;
		}
	}
}

static void push(struct ps *ps, struct ps_head *head)
{
	unsigned me;
	struct ps_callq *q = callq_own(ps, &me);
	struct ps_head *old = atomic_load_explicit(&q->open, memory_order_relaxed);
	do
		head->next = old;
	while (!atomic_compare_exchange_weak_explicit(&q->open, &old, head, memory_order_release,
						      memory_order_relaxed));
	cnt_add_(&q->queued, 1);
	if (++q->nopen >= PS_CALL_BATCH && call_depth == 0)
		callq_poll(ps, q, me);
}

void ps_call(struct ps *ps, struct ps_head *head, void (*fn)(struct ps_head *head))
{
	if (fn == NULL)
		tsync__fatal("ps_call with a NULL callback");
	head->fn = fn;
	push(ps, head);
}

void ps_call_free(struct ps *ps, struct ps_head *head, size_t offset)
{
	if (offset >= 4096)
		tsync__fatal("ps_call_free: offset %zu is not below 4096", offset);
	uintptr_t v = offset;
	memcpy(&head->fn, &v, sizeof(v));
	push(ps, head);
}

size_t ps_call_poll(struct ps *ps)
{
	if (call_depth != 0)
		return 0;
	struct ps_calls *c = ps__calls(ps);
	unsigned me = tsync__self(), pos = 0;
	size_t n = 0;
	for (struct ps_callq *q; (q = callq_next(c, &pos)) != NULL;)
		if (callq_busy(q))
			n += callq_try(ps, q, false, pos - 1 == me);
	return n;
}

/* Run q's batches up to sequence number target, waiting for their grace periods with q's
 * mutex released (a section the wait is for may belong to a thread that is about to
 * take it, e.g. to fork). */
static void callq_drain_to(struct ps *ps, struct ps_callq *q, uint64_t target, bool mine)
{
	pthread_mutex_lock(&q->mu);
	while (q->run_seq < target) {
		callq_run(ps, q, false, mine, SIZE_MAX);
		if (q->run_seq >= target)
			break;
		/* Its head batch holds a callback queued before the barrier: wait for it. */
		uint64_t stamp = q->ring[q->rhead].stamp;
		pthread_mutex_unlock(&q->mu);
		tsync__wait_until(ps_quiesce(ps, stamp),
				  TSYNC__SPIN_QUIESCE); /* as ps_synchronize */
		pthread_mutex_lock(&q->mu);
	}
	pthread_mutex_unlock(&q->mu);
}

void ps_barrier(struct ps *ps)
{
	if (call_depth != 0)
		tsync__fatal(
			"ps_barrier called from a ps_call callback (it would wait for itself)");
	if (ps_in_section(ps))
		tsync__fatal("ps_barrier called inside a section of the same instance (it would "
			     "wait for itself)");
	struct ps_calls *c = ps__calls(ps);
	unsigned me = tsync__self();
	/* One chunk of ids at a time: close every open list, one grace period for all of
	 * them, then run each queue up to what was closed. */
	for (unsigned ci = 0; ci < c->nchunks; ci++) {
		struct ps_callq *chunk = atomic_load_explicit(&c->dir[ci], memory_order_acquire);
		if (chunk == NULL)
			continue;
		uint64_t target[TSYNC__CHUNK];
		bool any = false;
		for (unsigned i = 0; i < TSYNC__CHUNK; i++) {
			struct ps_callq *q = &chunk[i];
			pthread_mutex_lock(&q->mu);
			callq_close(q);
			target[i] = q->closed;
			any |= q->run_seq < target[i];
			pthread_mutex_unlock(&q->mu);
		}
		if (!any)
			continue;
		ps_synchronize(ps);
		for (unsigned i = 0; i < TSYNC__CHUNK; i++)
			callq_drain_to(ps, &chunk[i], target[i], ci * TSYNC__CHUNK + i == me);
	}
}

int ps_call_stats(struct ps *ps, struct ps_call_stats *out)
{
	if (ps == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	struct ps_calls *c = ps__calls(ps);
	unsigned pos = 0;
	for (struct ps_callq *q; (q = callq_next(c, &pos)) != NULL;) {
		out->run += atomic_load_explicit(&q->run, memory_order_acquire);
		out->batches += atomic_load_explicit(&q->batches, memory_order_relaxed);
		out->merges += atomic_load_explicit(&q->merges, memory_order_relaxed);
		out->helped += atomic_load_explicit(&q->helped, memory_order_relaxed);
	}
	pos = 0;
	for (struct ps_callq *q; (q = callq_next(c, &pos)) != NULL;)
		out->queued += atomic_load_explicit(&q->queued, memory_order_acquire);
	out->pending = out->queued > out->run ? out->queued - out->run : 0;
	return 0;
}

/* ps_destroy, while ps is still a registry client: run what is queued (no section can
 * hold it back any more). */
void ps__calls_drain(struct ps *ps)
{
	struct ps_calls *c = ps__calls(ps);
	unsigned pos = 0;
	bool any = false;
	for (struct ps_callq *q; (q = callq_next(c, &pos)) != NULL;)
		any |= callq_busy(q);
	if (any)
		ps_barrier(ps);
}

/* Free c (ps_destroy after the client left the registry, so no fork handler sees the
 * mutexes any more; ps_create's failure). */
void ps__calls_destroy(struct ps_calls *c)
{
	if (c == NULL)
		return;
	if (c->dir != NULL) {
		unsigned pos = 0;
		for (struct ps_callq *q; (q = callq_next(c, &pos)) != NULL;)
			pthread_mutex_destroy(&q->mu);
		tsync__tdir_free_chunks(c->dir, c->nchunks);
		free(c->dir);
	}
	free(c->forklocked);
	free(c);
}

/* ---- fork (docs/design.md §8) ------------------------------------------------------- */

/* Take every queue's mutex, chunk by chunk, remembering which chunks: one published
 * after this looked (a thread's first ps_call racing with the fork) is not locked. */
void ps__calls_fork_prepare(struct ps_calls *c)
{
	for (unsigned ci = 0; ci < c->nchunks; ci++) {
		struct ps_callq *chunk = atomic_load_explicit(&c->dir[ci], memory_order_acquire);
		c->forklocked[ci] = chunk;
		if (chunk != NULL)
			for (unsigned i = 0; i < TSYNC__CHUNK; i++)
				pthread_mutex_lock(&chunk[i].mu);
	}
}

void ps__calls_fork_parent(struct ps_calls *c)
{
	for (unsigned ci = 0; ci < c->nchunks; ci++)
		if (c->forklocked[ci] != NULL)
			for (unsigned i = 0; i < TSYNC__CHUNK; i++)
				pthread_mutex_unlock(&c->forklocked[ci][i].mu);
}

/* The child. Locked chunks: the mutexes are the forking thread's, so it releases them;
 * a vanished id's closed batches were changed only under its mutex, so they are whole
 * and run as usual, but its open list may be half-pushed (a next pointer not yet
 * written when the fork copied it): it is dropped, its callbacks never run in the child.
 * A chunk published after fork_prepare looked holds only ids that began using ps during
 * the fork; whatever a vanished one among them was doing under its mutex may be torn, so
 * their batches are dropped too, and every mutex of the chunk, which no thread of the
 * child holds, is made anew. */
void ps__calls_fork_child(struct ps_calls *c, const unsigned char *ids, unsigned n)
{
	for (unsigned ci = 0; ci < c->nchunks; ci++) {
		struct ps_callq *chunk = atomic_load_explicit(&c->dir[ci], memory_order_relaxed);
		if (chunk == NULL)
			continue;
		bool locked = c->forklocked[ci] == chunk;
		for (unsigned i = 0; i < TSYNC__CHUNK; i++) {
			struct ps_callq *q = &chunk[i];
			unsigned id = ci * TSYNC__CHUNK + i;
			if (id < n && ids[id] == TSYNC__ID_VANISHED) {
				atomic_store_explicit(&q->open, NULL, memory_order_relaxed);
				q->nopen = 0;
				if (!locked) {
					atomic_store_explicit(&q->rcount, 0, memory_order_relaxed);
					q->run_seq = q->closed;
					atomic_store_explicit(&q->run, q->ncalls_closed,
							      memory_order_relaxed);
				}
				/* its calls not closed: no longer pending */
				atomic_store_explicit(&q->queued, q->ncalls_closed,
						      memory_order_relaxed);
			}
			if (locked)
				pthread_mutex_unlock(&q->mu);
			else if (pthread_mutex_init(&q->mu, NULL) != 0)
				tsync__fatal("pthread_mutex_init failed");
		}
	}
}
