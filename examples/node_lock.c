/*
 * examples/node_lock.c - Fig. 1 of "Parallel Sections" (ParSec (EuroSys 2016) §2.2): observe,
 * modify and delete on a data structure D whose lookups are not synchronised with frees.
 *
 *   observe: ps_enter; lookup; read the node;                              ps_exit
 *   modify:  ps_enter; lookup; if (ps_lock_take) { change; ps_lock_release }      ps_exit
 *   delete:  ps_enter; lookup; if (ps_lock_take) { unlink; ps_lock_release_free } ps_exit
 *
 * A modifier may reach a node just as a deleter frees it. ps_lock_take() then returns
 * false: the deleter marked the node freed before releasing the lock, and the node's
 * memory (lock included) stays valid until the modifier leaves its section.
 *
 * D here is a table of NSLOTS slots, each holding one node; lookup(D, id) is a load of
 * slot id. Threads pick random slots and operations; a deleter re-inserts a fresh node
 * so the table stays full. Each node keeps a = -b, changed only under its lock; the final
 * check proves mutual exclusion (no lost update) and that no update was applied to a
 * freed node: sum of every successful modify == sum of `a` over live and deleted nodes.
 */
#include "example.h" /* POSIX 2008, the C library headers, CHECK */

#include <tsync/tsync.h>

enum { NSLOTS = 16, NTHREADS = 4, OPS = 50000 };

struct node {
	struct ps_lock lock;      /* Fig. 1's node->lock */
	uint32_t id;              /* immutable once published */
	int64_t a, b;             /* a == -b; written only under lock */
	_Atomic uint64_t version; /* bumped by modify; observe reads it without the lock */
};

struct D {
	struct ps *ps;
	struct ps_mem *mem;
	_Atomic(struct node *) slot[NSLOTS];
};
static struct D d;

static _Atomic int64_t retired_a;       /* sum of a over deleted nodes */
static _Atomic uint64_t total_modified; /* successful modifies */

static struct node *lookup(struct D *D, uint32_t id)
{
	return atomic_load_explicit(&D->slot[id], memory_order_acquire);
}

/* Publish a fresh node in an empty slot (after a delete). */
static void insert(struct D *D, uint32_t id)
{
	struct node *n = ps_alloc(D->mem);
	CHECK(n != NULL);
	ps_lock_init(&n->lock);
	n->id = id;
	n->a = n->b = 0;
	atomic_store_explicit(&n->version, 0, memory_order_relaxed);
	struct node *expected = NULL;
	if (!atomic_compare_exchange_strong_explicit(&D->slot[id], &expected, n,
						     memory_order_release, memory_order_relaxed))
		ps_free(D->mem, n); /* someone else refilled it; never published */
}

static void observe(struct D *D, uint32_t id, uint64_t *seen)
{
	ps_enter(D->ps);
	struct node *n = lookup(D, id);
	if (n) { /* process on the node: no lock, read-only */
		CHECK(n->id == id);
		*seen += atomic_load_explicit(&n->version, memory_order_relaxed);
	}
	ps_exit(D->ps);
}

static bool modify(struct D *D, uint32_t id)
{
	bool done = false;
	ps_enter(D->ps);
	struct node *n = lookup(D, id);
	if (n && ps_lock_take(n, &n->lock)) {
		/* modify the node */
		CHECK(n->id == id && n->a == -n->b);
		n->a++;
		n->b--;
		atomic_fetch_add_explicit(&n->version, 1, memory_order_relaxed);
		ps_lock_release(n, &n->lock);
		done = true;
	}
	ps_exit(D->ps);
	return done;
}

static bool delete (struct D *D, uint32_t id)
{
	bool done = false;
	ps_enter(D->ps);
	struct node *n = lookup(D, id);
	if (n && ps_lock_take(n, &n->lock)) {
		/* cleanup & update D: only the lock holder unlinks n */
		struct node *expected = n;
		CHECK(atomic_compare_exchange_strong_explicit(
			&D->slot[id], &expected, NULL, memory_order_release, memory_order_relaxed));
		CHECK(n->a == -n->b);
		atomic_fetch_add_explicit(&retired_a, n->a, memory_order_relaxed);
		ps_lock_release_free(n, &n->lock); /* later takers see "freed" and fail */
		done = true;
	}
	ps_exit(D->ps);
	if (done)
		insert(D, id);
	return done;
}

struct result {
	uint64_t observed, modified, modify_lost, deleted, delete_lost, seen;
};

static void *worker(void *arg)
{
	struct result *r = arg;
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15u | 1; /* xorshift seed */

	for (int i = 0; i < OPS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t id = (uint32_t)(x >> 32) % NSLOTS;
		unsigned op = (unsigned)(x % 100);
		if (op < 60) {
			observe(&d, id, &r->seen);
			r->observed++;
		} else if (op < 95) {
			if (modify(&d, id))
				r->modified++;
			else
				r->modify_lost++; /* the node was freed (or gone) under us */
		} else {
			if (delete (&d, id))
				r->deleted++;
			else
				r->delete_lost++;
		}
	}
	atomic_fetch_add(&total_modified, r->modified);
	return NULL;
}

int main(void)
{
	d.ps = ps_create(NULL);
	if (!d.ps) {
		fprintf(stderr, "ps_create: %s\n", strerror(errno));
		return 1;
	}
	d.mem = ps_mem_create(d.ps, sizeof(struct node), NULL);
	if (!d.mem) {
		fprintf(stderr, "ps_mem_create: %s\n", strerror(errno));
		return 1;
	}
	for (uint32_t id = 0; id < NSLOTS; id++)
		insert(&d, id);

	pthread_t t[NTHREADS];
	struct result r[NTHREADS];
	memset(r, 0, sizeof r);
	for (int i = 0; i < NTHREADS; i++) {
		int err = pthread_create(&t[i], NULL, worker, &r[i]);
		if (err) {
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	struct result sum = {0, 0, 0, 0, 0, 0};
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		sum.observed += r[i].observed;
		sum.modified += r[i].modified;
		sum.modify_lost += r[i].modify_lost;
		sum.deleted += r[i].deleted;
		sum.delete_lost += r[i].delete_lost;
	}

	/* Every successful modify is in exactly one node, live or deleted. */
	int64_t live_a = 0;
	for (uint32_t id = 0; id < NSLOTS; id++) {
		struct node *n = atomic_load(&d.slot[id]);
		CHECK(n != NULL && n->id == id && n->a == -n->b);
		CHECK(!ps_lock_is_freed(n));
		live_a += n->a;
	}
	CHECK((uint64_t)(live_a + atomic_load(&retired_a)) == atomic_load(&total_modified));
	CHECK(sum.observed + sum.modified + sum.modify_lost + sum.deleted + sum.delete_lost ==
	      (uint64_t)NTHREADS * OPS);

	struct ps_mem_stats st;
	CHECK(ps_mem_stats(d.mem, &st) == 0);
	CHECK(st.in_use == NSLOTS);

	printf("node_lock: ok - %d threads: %" PRIu64 " observe, %" PRIu64 " modify (%" PRIu64
	       " found the node freed), %" PRIu64 " delete (%" PRIu64 " lost the race); "
	       "%" PRIu64 " objects reclaimed\n",
	       NTHREADS, sum.observed, sum.modified, sum.modify_lost, sum.deleted, sum.delete_lost,
	       st.reclaimed);

	ps_mem_destroy(d.mem);
	ps_destroy(d.ps);
	return 0;
}
