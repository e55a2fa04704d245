/*
 * examples/rcu_list.c - an RCU-style linked list protected by ParSec (tsync/ps.h, ps_mem.h).
 *
 * A reader thread looks keys up without locks and without storing to any shared cache
 * line: ps_enter() ... ps_exit() brackets the traversal. The main thread is the only
 * updater: it replaces nodes by updated copies (copy, publish with a release store,
 * ps_free the old node) and finally deletes the odd keys. ps_free() does not make the old
 * node reusable at once: ps_alloc() hands it out again only after every parallel section
 * that could still see it has ended, so the reader never sees a node change under it.
 *
 * Every node carries check = ~(key ^ val); a node reused while a reader still held it
 * would show a torn or foreign (key, val, check) triple and the reader would abort.
 *
 * Build against an installed tsync: see examples/CMakeLists.txt or Makefile.pkgconfig.
 * Prints one line and exits 0 when the final list is exactly what the updater made.
 */
#include "example.h" /* POSIX 2008, the C library headers, CHECK */

#include <tsync/tsync.h>

enum { NKEYS = 64, ROUNDS = 2000 };
#define GEN_MULT 1000000u /* val = key * GEN_MULT + generation */

struct node {
	uint64_t key;
	uint64_t val;
	uint64_t check; /* ~(key ^ val) */
	_Atomic(struct node *) next;
};

static struct ps *ps;
static struct ps_mem *mem;
static _Atomic(struct node *) head; /* sorted by key */
static atomic_bool reader_started, stop;

/* ---- reader side ------------------------------------------------------------------ */

/* Looks key up; returns its value, or -1 if absent. No locks, no shared stores. */
static int64_t lookup(uint64_t key)
{
	int64_t v = -1;

	ps_enter(ps);
	struct node *n = atomic_load_explicit(&head, memory_order_acquire);
	while (n && n->key < key)
		n = atomic_load_explicit(&n->next, memory_order_acquire);
	if (n && n->key == key) {
		CHECK(n->check == ~(n->key ^ n->val)); /* not reused under us */
		CHECK(n->val / GEN_MULT == key);
		v = (int64_t)n->val;
	}
	ps_exit(ps); /* n must not be used after this */
	return v;
}

struct reader_result {
	uint64_t lookups, hits;
};

static void *reader(void *arg)
{
	struct reader_result *r = arg;
	uint64_t last_gen[NKEYS] = {0};

	atomic_store(&reader_started, true);
	for (uint64_t i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		uint64_t key = i % NKEYS;
		int64_t v = lookup(key);
		r->lookups++;
		if (v >= 0) {
			/* One updater, release/acquire publication: a key's generation seen by
			 * one reader never goes backwards. */
			uint64_t gen = (uint64_t)v % GEN_MULT;
			CHECK(gen >= last_gen[key]);
			last_gen[key] = gen;
			r->hits++;
		}
	}
	return NULL;
}

/* ---- updater side (the main thread only) ------------------------------------------ */

static struct node *new_node(uint64_t key, uint64_t gen, struct node *next)
{
	struct node *n = ps_alloc(mem);
	CHECK(n != NULL);
	n->key = key;
	n->val = key * GEN_MULT + gen;
	n->check = ~(n->key ^ n->val);
	atomic_store_explicit(&n->next, next, memory_order_relaxed);
	return n;
}

/* The link that points at key's node (or where it would be). Single updater: the
 * updater's own reads need no section, since only it frees nodes. */
static _Atomic(struct node *) *find_link(uint64_t key)
{
	_Atomic(struct node *) *link = &head;
	struct node *n;
	while ((n = atomic_load_explicit(link, memory_order_relaxed)) && n->key < key)
		link = &n->next;
	return link;
}

/* Replace key's node by a copy with a new generation (copy, publish, free). */
static void replace(uint64_t key, uint64_t gen)
{
	_Atomic(struct node *) *link = find_link(key);
	struct node *old = atomic_load_explicit(link, memory_order_relaxed);
	CHECK(old != NULL && old->key == key);

	struct node *c = new_node(key, gen, atomic_load_explicit(&old->next, memory_order_relaxed));
	atomic_store_explicit(link, c, memory_order_release); /* publish the copy */
	ps_free(mem, old); /* reused only after every reader that could see it has left */
}

/* Unlink key's node; readers already on it still reach its successors. */
static void delete_key(uint64_t key)
{
	_Atomic(struct node *) *link = find_link(key);
	struct node *old = atomic_load_explicit(link, memory_order_relaxed);
	CHECK(old != NULL && old->key == key);
	atomic_store_explicit(link, atomic_load_explicit(&old->next, memory_order_relaxed),
			      memory_order_release);
	ps_free(mem, old);
}

int main(void)
{
	ps = ps_create(NULL);
	if (!ps) {
		fprintf(stderr, "ps_create: %s\n", strerror(errno));
		return 1;
	}
	mem = ps_mem_create(ps, sizeof(struct node), NULL);
	if (!mem) {
		fprintf(stderr, "ps_mem_create: %s\n", strerror(errno));
		return 1;
	}

	/* Build the list back to front: keys 0 .. NKEYS-1, generation 0. */
	for (uint64_t k = NKEYS; k-- > 0;)
		atomic_store_explicit(&head, new_node(k, 0, atomic_load(&head)),
				      memory_order_release);

	struct reader_result rr = {0, 0};
	pthread_t t;
	int err = pthread_create(&t, NULL, reader, &rr);
	if (err) {
		fprintf(stderr, "pthread_create: %s\n", strerror(err));
		return 1;
	}
	while (!atomic_load(&reader_started))
		tsync_arch_relax();

	uint64_t replaced = 0, deleted = 0;
	for (uint64_t gen = 1; gen <= ROUNDS; gen++)
		for (uint64_t k = 0; k < NKEYS; k++, replaced++)
			replace(k, gen);
	for (uint64_t k = 1; k < NKEYS; k += 2, deleted++)
		delete_key(k);

	atomic_store(&stop, true);
	pthread_join(t, NULL);

	/* Final state: exactly the even keys, in order, each at the last generation. */
	uint64_t expect = 0, count = 0;
	for (struct node *n = atomic_load(&head); n; n = atomic_load(&n->next), count++) {
		CHECK(n->key == expect);
		CHECK(n->val == n->key * GEN_MULT + ROUNDS);
		CHECK(n->check == ~(n->key ^ n->val));
		expect += 2;
	}
	CHECK(count == NKEYS / 2);

	struct ps_mem_stats st;
	CHECK(ps_mem_stats(mem, &st) == 0);
	CHECK(st.in_use == NKEYS / 2);
	CHECK(st.frees == replaced + deleted);

	printf("rcu_list: ok - reader: %" PRIu64 " lookups (%" PRIu64 " hits); updater: %" PRIu64
	       " replaced, %" PRIu64 " deleted; allocator: %" PRIu64 " reclaimed, %" PRIu64
	       " slabs; clock: %s\n",
	       rr.lookups, rr.hits, replaced, deleted, st.reclaimed, st.slabs,
	       tsync_clock_source_name());

	ps_mem_destroy(mem);
	ps_destroy(ps);
	return 0;
}
