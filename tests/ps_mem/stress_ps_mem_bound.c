/*
 * tests/ps_mem/stress_ps_mem_bound.c - premature-reuse hunt under the pending bound
 * (memory bounded by default: Prudence (ASPLOS 2016) Algorithm 1 lines 31-32).
 *
 * A table of NSLOTS nodes, updated copy-on-write as the endurance benchmark does
 * (bench/prudence): writers, outside any section (the bound never waits inside one),
 * allocate a node, give it a new incarnation, exchange it into a random slot and free the
 * old one with ps_free. Readers, inside sections, record nodes (address, incarnation,
 * check word), work a little and re-read them: a change is a reuse under a reader. The
 * main thread is a napping reader: it enters a section, pins (the pin generation, odd
 * while it is inside), records nodes, and holds the section until a writer is seen
 * waiting at the pending bound (the frees since its enter passed the bound and the writer
 * needs a new slab), then up to 3 ms more; it re-checks and exits - and the waiting writer
 * reuses what the section held back the moment it ends: the window this test hunts.
 * Every node ps_alloc hands out is checked: not live, and not freed after the enter of
 * the pinning reader that is still inside. Also: the bound acted (waits happened, and
 * some ended by reuse rather than by their deadline), and the counters are exact when
 * quiet.
 *
 *   stress_ps_mem_bound        Duration: TSYNC_STRESS_SECONDS (default 2).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "stress.h"

#define NWRITERS 2
#define NREADERS 1
#define NSLOTS 2048u
#define NREC 64u
/* The longest a nap waits for a writer to wait at the bound: a real stall, far beyond
 * any scheduling delay, inside the watchdog of stress_begin. */
#define STALL_NS 60000000000ull

#define LIVE 0x4c4956454c495645ull  /* "LIVELIVE" */
#define FREED 0x4445414444454144ull /* "DEADDEAD" */
#define MAGIC 0x9e3779b97f4a7c15ull

/* inc and check are plain: written before the node is published (release), read by
 * readers that reached it with an acquire load - a reuse under a reader is a data race
 * for ThreadSanitizer and a changed incarnation in every build. state and freed_gen are
 * written by the writer that unlinked the node and read by the allocator that gets it
 * next (ps_free / ps_alloc order them). */
struct node {
	uint64_t inc, check;
	uint64_t state, freed_gen;
	uint64_t payload[4];
};

static struct ps *g_ps;
static struct ps_mem *g_m;
static _Atomic(struct node *) g_slot[NSLOTS];
static _Atomic uint64_t g_inc, g_pin_gen, g_violations;
static _Atomic unsigned g_filled; /* writers that have filled their share of the table */

static void violation(const char *what, const struct node *n, uint64_t a, uint64_t b)
{
	if (atomic_fetch_add(&g_violations, 1) < 10)
		fprintf(stderr, "VIOLATION: %s: node %p (%" PRIu64 ", %" PRIu64 ")\n", what,
			(const void *)n, a, b);
}

static uint64_t check_of(const struct node *n, uint64_t inc)
{
	return inc ^ MAGIC ^ (uint64_t)(uintptr_t)n;
}

static struct node *node_new(void)
{
	struct node *n = ps_alloc(g_m);
	CHECK_MSG(n != NULL, "ps_alloc returned NULL (errno %d)", errno);
	uint64_t g = atomic_load_explicit(&g_pin_gen, memory_order_acquire);
	if (n->state == LIVE)
		violation("ps_alloc handed out a live node", n, n->inc, 0);
	else if ((g & 1) && n->state == FREED && n->freed_gen == g)
		violation("ps_alloc handed out a node freed after the enter of a reader still "
			  "inside (premature reuse)",
			  n, n->inc, g);
	n->inc = atomic_fetch_add_explicit(&g_inc, 1, memory_order_relaxed) + 1;
	n->check = check_of(n, n->inc);
	n->state = LIVE;
	n->freed_gen = 0;
	n->payload[0] = n->inc;
	return n;
}

struct worker {
	struct stress_worker sw;
	bool writer;
	unsigned idx;
};

struct seen {
	const struct node *n;
	uint64_t inc;
};

/* Record up to NREC nodes from random slots (inside a section). */
static unsigned record(struct seen *rec, uint64_t *rng)
{
	unsigned k = 0;
	for (unsigned i = 0; i < NREC; i++) {
		const struct node *n = atomic_load_explicit(&g_slot[test_rand(rng) % NSLOTS],
							    memory_order_acquire);
		uint64_t inc = n->inc;
		if (n->check != check_of(n, inc))
			violation("a reader met a node whose check word is wrong", n, inc,
				  n->check);
		rec[k++] = (struct seen){n, inc};
	}
	return k;
}

/* Re-read what record() saw (inside the same section): a change is a reuse. */
static unsigned recheck(const struct seen *rec, unsigned k)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < k; i++)
		if (rec[i].n->inc != rec[i].inc ||
		    rec[i].n->check != check_of(rec[i].n, rec[i].inc)) {
			violation("a node changed under a reader (reused)", rec[i].n, rec[i].inc,
				  rec[i].n->inc);
			bad++;
		}
	return bad;
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	uint64_t rng = w->sw.seed;
	struct seen rec[NREC];
	if (w->writer) {
		/* each writer fills its share: its slabs hold what it allocated (a node
		 * another thread allocated would go back to that thread's slabs) */
		for (unsigned i = w->idx; i < NSLOTS; i += NWRITERS)
			atomic_store_explicit(&g_slot[i], node_new(), memory_order_release);
		atomic_fetch_add_explicit(&g_filled, 1, memory_order_release);
	}
	while (atomic_load_explicit(&g_filled, memory_order_acquire) < NWRITERS)
		sched_yield();
	for (unsigned n = 1; !stress_stopping(); n++) {
		if (w->writer) {
			struct node *fresh = node_new();
			struct node *old = atomic_exchange_explicit(
				&g_slot[test_rand(&rng) % NSLOTS], fresh, memory_order_acq_rel);
			old->freed_gen = atomic_load_explicit(&g_pin_gen, memory_order_acquire);
			old->state = FREED;
			ps_free(g_m, old);
			if ((n & 1023) == 0)
				ps_mem_reclaim(g_m);
		} else {
			ps_enter(g_ps);
			unsigned k = record(rec, &rng);
			test_spin((unsigned)(test_rand(&rng) % 2000));
			recheck(rec, k);
			ps_exit(g_ps);
		}
		w->sw.ops++;
		if (atomic_load_explicit(&g_violations, memory_order_relaxed))
			break;
	}
	return NULL;
}

static struct ps_mem_stats stats_now(void)
{
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(g_m, &s), 0);
	return s;
}

struct rounds {
	uint64_t rng;
	unsigned rounds, waited_rounds;
};

/* One nap: hold a pinning section until a writer waits at the bound, then a little. */
static void nap_round(void *arg)
{
	struct rounds *rd = arg;
	struct seen rec[NREC];
	ps_enter(g_ps);
	atomic_fetch_add(&g_pin_gen, 1); /* odd: pinned */
	uint64_t w0 = stats_now().alloc_waits;
	unsigned k = record(rec, &rd->rng);
	uint64_t t0 = test_now_ns();
	for (;;) {
		if (stats_now().alloc_waits > w0) {
			rd->waited_rounds++;
			break;
		}
		CHECK_MSG(test_now_ns() - t0 < STALL_NS,
			  "no writer waited at the pending bound in %.0f s while a section held "
			  "every free back",
			  (double)STALL_NS / 1e9);
		if (stress_done(&g_violations))
			break;
		test_sleep_ms(1);
	}
	test_sleep_ns(test_rand(&rd->rng) % 3000000u); /* the writer naps a few times */
	unsigned bad = recheck(rec, k);
	atomic_fetch_add(&g_pin_gen, 1); /* even: before the exit */
	ps_exit(g_ps);
	CHECK_EQ(bad, 0);
	rd->rounds++;
	test_sleep_ns(test_rand(&rd->rng) % 5000000u); /* the writers run free a while */
}

int main(void)
{
	double secs = stress_begin(2.0, 10, 90);
	g_ps = ps_create(NULL);
	CHECK(g_ps != NULL);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	stress_small_mem(&mc);
	/* the default bound (pending_bound_pct 0: 10 % of the live nodes, and 16 slabs'
	 * worth); a deadline far above the naps (a few ms after a wait is seen), so that
	 * waits end by reuse, not by mapping */
	mc.limit_wait_ms = 5000;
	g_m = ps_mem_create(g_ps, sizeof(struct node), &mc);
	CHECK(g_m != NULL);

	struct worker w[NWRITERS + NREADERS];
	const unsigned n = NWRITERS + NREADERS;
	for (unsigned i = 0; i < n; i++)
		w[i] = (struct worker){.writer = i < NWRITERS, .idx = i};
	stress_spawn_workers(worker_main, w, n, 11);
	while (atomic_load_explicit(&g_filled, memory_order_acquire) < NWRITERS)
		test_sleep_ms(1);
	struct rounds rd = {.rng = test_seed(5)};
	stress_rounds(secs, &g_violations, nap_round, &rd);
	double el = stress_end(&g_violations);

	/* quiet: the counters are exact */
	struct ps_mem_stats s = stats_now();
	CHECK_EQ(s.in_use, NSLOTS);
	CHECK_EQ(s.allocs - s.frees - s.frees_now, s.in_use);
	uint64_t v = atomic_load(&g_violations);
	printf("stress_ps_mem_bound: %.2f s, %u naps (%u with a writer waiting), allocs %" PRIu64
	       ", waits %" PRIu64 " (timed out %" PRIu64 "), merge hits %" PRIu64
	       ", peak slabs %" PRIu64 " (%u objects each), reuses detected %" PRIu64 "\n",
	       el, rd.rounds, rd.waited_rounds, s.allocs, s.alloc_waits, s.wait_timeouts,
	       s.merge_hits, s.peak_slabs, ps_mem_slab_objects(g_m), v);
	if (v == 0) {
		CHECK_MSG(rd.waited_rounds > 0 && s.alloc_waits > 0, "the bound never acted");
		CHECK_MSG(s.alloc_waits > s.wait_timeouts,
			  "every wait at the bound timed out: none ended by reuse");
	}
	for (unsigned i = 0; i < NSLOTS; i++)
		ps_free(g_m, atomic_load_explicit(&g_slot[i], memory_order_relaxed));
	ps_mem_reclaim(g_m);
	ps_mem_destroy(g_m);
	ps_destroy(g_ps);
	return v ? 1 : 0;
}
