/*
 * tests/ps_lock/stress_lock_free.c - premature-reuse hunt (4): lock/free races of
 * ParSec (EuroSys 2016) Fig. 1 on a few hot nodes.
 *
 * A handful of slots each hold one node. Every thread repeatedly picks a slot and runs
 *   modify: lookup; ps_lock_take; count++ (in the node and in a per-incarnation
 *           external counter); ps_lock_release            - or -
 *   delete: lookup; ps_lock_take; unlink (CAS the slot to NULL); record the node's
 *           count; ps_lock_release_free; put a fresh node in the slot.
 * Checks, per incarnation (external arrays, since the nodes themselves get reused):
 *   - exactly one delete wins;
 *   - the count the deleter saw equals the number of successful modifies: no modify
 *     incremented the node after its delete, none was lost;
 *   - a successful take always finds the node alive with the incarnation that was looked
 *     up; a failed take always finds it marked freed (ps_lock_is_freed);
 *   - the unlink CAS never fails (only the lock holder unlinks);
 *   - every worker finished at least one operation (the scaffold's promise, stress.h).
 *
 *   stress_lock_free [threads] [small]   Duration: TSYNC_STRESS_SECONDS (default 2).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "slist.h" /* wl_violation */
#include "stress.h"

#define NSLOTS 4
#define ALIVE 0x414c495645ull /* "ALIVE" */
#define DEAD 0x44454144ull

struct lnode {
	struct ps_lock lock;
	uint64_t inc;
	uint64_t alive;
	uint64_t count;
	uint64_t slot;
};

static struct ps *ps;
static struct ps_mem *mem;
static struct lnode *_Atomic slots[NSLOTS];
static _Atomic uint64_t next_inc;
static uint64_t max_inc;
/* per incarnation */
static _Atomic uint32_t *mods, *del_wins;
static uint32_t *final_count;
static _Atomic uint8_t *published;

struct counts {
	uint64_t mod_ok, mod_fail, del_ok, del_fail, empty, created, unpublished;
};

static struct lnode *node_new(uint64_t slot)
{
	uint64_t inc = atomic_fetch_add(&next_inc, 1) + 1;
	if (inc >= max_inc) {
		stress_stop(); /* the incarnation arrays are full: end the run */
		return NULL;
	}
	struct lnode *n = ps_alloc(mem);
	CHECK(n != NULL);
	if (n->alive == ALIVE)
		wl_violation("ps_alloc returned %p, a live node (inc %" PRIu64 ")", (void *)n,
			     n->inc);
	ps_lock_init(&n->lock);
	n->inc = inc;
	n->count = 0;
	n->slot = slot;
	n->alive = ALIVE;
	return n;
}

/* Put a fresh node into an empty slot (caller inside a section). */
static void refill(uint64_t i, struct counts *c)
{
	struct lnode *n = node_new(i);
	if (n == NULL)
		return;
	struct lnode *expect = NULL;
	if (atomic_compare_exchange_strong_explicit(&slots[i], &expect, n, memory_order_release,
						    memory_order_relaxed)) {
		atomic_store_explicit(&published[n->inc], 1, memory_order_relaxed);
		c->created++;
	} else {
		n->alive = DEAD;
		ps_free(mem, n); /* never published */
		c->unpublished++;
	}
}

/* Enter a section and look slot i up; an empty slot is refilled and NULL returned
 * (outside the section again). Otherwise the caller is inside the section. */
static struct lnode *lookup(uint64_t i, struct counts *c)
{
	ps_enter(ps);
	struct lnode *n = atomic_load_explicit(&slots[i], memory_order_acquire);
	if (n == NULL) {
		c->empty++;
		refill(i, c);
		ps_exit(ps);
	}
	return n;
}

/* ps_lock_take of n, looked up with incarnation inc in this section: a successful take
 * finds it alive with that incarnation, a failed one finds it marked freed and (the
 * section still protects it) not reused. */
static bool take(struct lnode *n, uint64_t inc, const char *what)
{
	if (ps_lock_take(n, &n->lock)) {
		if (n->alive != ALIVE || n->inc != inc)
			wl_violation("%s took the lock of %p: alive %#" PRIx64 ", inc %" PRIu64
				     " (looked up %" PRIu64 "): lock of a freed or reused node",
				     what, (void *)n, n->alive, n->inc, inc);
		return true;
	}
	if (!ps_lock_is_freed(n))
		wl_violation("ps_lock_take failed on %p, which is not marked freed", (void *)n);
	if (n->inc != inc)
		wl_violation("node %p reused (inc %" PRIu64 " -> %" PRIu64
			     ") inside the section that looked it up",
			     (void *)n, inc, n->inc);
	return false;
}

/* n is unlinked and its lock held: record its incarnation's end and free it. */
static void retire(struct lnode *n)
{
	n->alive = DEAD;
	final_count[n->inc] = (uint32_t)n->count;
	atomic_fetch_add_explicit(&del_wins[n->inc], 1, memory_order_relaxed);
	ps_lock_release_free(n, &n->lock);
}

static void modify(uint64_t i, uint64_t *rng, struct counts *c)
{
	struct lnode *n = lookup(i, c);
	if (n == NULL)
		return;
	uint64_t inc = n->inc;
	if (take(n, inc, "modify")) {
		n->count++;
		atomic_fetch_add_explicit(&mods[inc], 1, memory_order_relaxed);
		if ((test_rand(rng) & 63) == 0)
			sched_yield(); /* preempted while holding it */
		ps_lock_release(n, &n->lock);
		c->mod_ok++;
	} else {
		c->mod_fail++;
	}
	ps_exit(ps);
}

static void delete (uint64_t i, struct counts *c)
{
	struct lnode *n = lookup(i, c);
	if (n == NULL)
		return;
	if (take(n, n->inc, "delete")) {
		struct lnode *expect = n;
		if (!atomic_compare_exchange_strong(&slots[i], &expect, NULL))
			wl_violation("slot %" PRIu64 " changed under the lock holder of %p", i,
				     (void *)n);
		retire(n);
		c->del_ok++;
		refill(i, c);
	} else {
		c->del_fail++;
	}
	ps_exit(ps);
}

struct worker {
	struct stress_worker sw;
	struct counts c;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	uint64_t rng = w->sw.seed;
	while (!stress_stopping() && !atomic_load_explicit(&wl_violations, memory_order_relaxed)) {
		uint64_t r = test_rand(&rng);
		uint64_t i = (r >> 8) % NSLOTS;
		if ((r & 15) < 3)
			delete (i, &w->c);
		else
			modify(i, &rng, &w->c);
		w->sw.ops++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	bool small = argc > 2 && strcmp(argv[2], "small") == 0;
	double secs = stress_begin(2.0, 10, 90);
	CHECK(nthreads >= 2 && nthreads <= 64);
	max_inc = test_scale(1u << 21, 4);
	mods = calloc(max_inc, sizeof *mods);
	del_wins = calloc(max_inc, sizeof *del_wins);
	final_count = calloc(max_inc, sizeof *final_count);
	published = calloc(max_inc, sizeof *published);
	CHECK(mods && del_wins && final_count && published);

	mem = wl_create_mem(&ps, sizeof(struct lnode), small);
	struct counts mc = {0};
	ps_enter(ps);
	for (uint64_t i = 0; i < NSLOTS; i++)
		refill(i, &mc);
	ps_exit(ps);

	struct worker *w = calloc((size_t)nthreads, sizeof *w);
	CHECK(w != NULL);
	stress_spawn_workers(worker_main, w, (unsigned)nthreads, 99);
	stress_run(secs, &wl_violations, NULL, NULL);
	double el = stress_end(&wl_violations);
	struct counts tot = mc;
	for (int i = 0; i < nthreads; i++)
		stress_counts_add(&tot, &w[i].c);

	/* delete what is left, the same way */
	for (uint64_t i = 0; i < NSLOTS; i++) {
		ps_enter(ps);
		struct lnode *n = atomic_load(&slots[i]);
		if (n != NULL) {
			CHECK(ps_lock_take(n, &n->lock));
			atomic_store(&slots[i], NULL);
			retire(n);
			tot.del_ok++;
		}
		ps_exit(ps);
	}

	/* per-incarnation accounting */
	uint64_t last = atomic_load(&next_inc);
	if (last >= max_inc)
		last = max_inc - 1;
	uint64_t nodes = 0, bad_wins = 0, bad_counts = 0, total_mods = 0;
	for (uint64_t k = 1; k <= last; k++) {
		if (!atomic_load(&published[k]))
			continue;
		nodes++;
		uint32_t wins = atomic_load(&del_wins[k]), m = atomic_load(&mods[k]);
		total_mods += m;
		if (wins != 1 && bad_wins++ < 5)
			fprintf(stderr, "VIOLATION: incarnation %" PRIu64 " deleted %u times\n", k,
				wins);
		if (wins == 1 && final_count[k] != m && bad_counts++ < 5)
			fprintf(stderr,
				"VIOLATION: incarnation %" PRIu64 ": %u modifies succeeded, "
				"the deleter saw %u\n",
				k, m, final_count[k]);
	}
	CHECK_EQ(total_mods, tot.mod_ok);
	CHECK_EQ(nodes, tot.del_ok);
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(mem, &s), 0);
	CHECK_EQ(s.in_use, 0);
	uint64_t v = atomic_load(&wl_violations) + bad_wins + bad_counts;
	printf("stress_lock_free%s: %d threads on %d hot nodes, %.2f s: modifies %" PRIu64
	       " ok / %" PRIu64 " refused, deletes %" PRIu64 " won / %" PRIu64 " refused, %" PRIu64
	       " incarnations checked, remote_frees %" PRIu64 ", peak slabs %" PRIu64
	       ", violations %" PRIu64 " (reuses detected %" PRIu64 ")\n",
	       small ? " (small)" : "", nthreads, NSLOTS, el, tot.mod_ok, tot.mod_fail, tot.del_ok,
	       tot.del_fail, nodes, s.remote_frees, s.peak_slabs, v, atomic_load(&wl_violations));
	/* coverage, not correctness: whether a take ever loses to a delete depends on how the
	 * threads interleave, which nothing promises (a waiter queued behind a deleter is
	 * unit_ps_lock's test_waiters_fail, deterministically): a warning, not a failure */
	if (tot.mod_fail + tot.del_fail == 0)
		fprintf(stderr,
			"warning: no ps_lock_take ever failed in %" PRIu64 " deletes: the "
			"modify/delete race was not exercised\n",
			tot.del_ok);
	stress_check_progress("worker", w, (unsigned)nthreads, 1);
	free(w);
	ps_mem_destroy(mem);
	ps_destroy(ps);
	free(mods);
	free(del_wins);
	free(final_count);
	free((void *)published);
	return v ? 1 : 0;
}
