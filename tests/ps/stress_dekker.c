/*
 * tests/ps/stress_dekker.c - premature-reuse hunt (5): the store-load race at the
 * heart of ParSec, as a litmus test run millions of times.
 *
 * Reader:  ps_enter (store enter; full fence)  ->  load P  ->  hold the node a while
 * Writer:  store P = fresh node (the unlink)   ->  ps_free(old) (ordered free time)
 *          ->  ps_mem_reclaim (scan: load the reader's enter/exit)  ->  ps_alloc
 * Both start each round at the same instant (spinning on one flag). Without the fence in
 * ps_enter (or the fence in the ordered free time), the reader's load of P can be
 * performed before its enter store is visible while the writer's scan misses that store:
 * the reader holds the old node, the writer reclaims it, ps_alloc hands it straight back
 * (object caches are LIFO) and the writer rewrites it under the reader. The reader
 * re-reads the node's incarnation after holding it: any change is a premature reuse.
 *
 *   stress_dekker [mem]      direct (default): the writer calls ps_quiesce right after
 *                            the unlink and rewrites the old node when told it may;
 *                            mem: the writer goes through ps_free, ps_mem_reclaim and
 *                            ps_alloc (LIFO caches hand the old node straight back).
 *                            Duration: TSYNC_STRESS_SECONDS (default 2).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "stress.h"

struct dnode {
	uint64_t inc;
	uint64_t pad[7];
};

static struct ps *ps;
static struct ps_mem *mem;
static struct dnode *_Atomic P;
static _Atomic uint64_t go, rdone;
static _Atomic uint64_t violations, reused_under_reader;
static uint64_t hold_spin = 300;

static void wait_for(_Atomic uint64_t *v, uint64_t k)
{
	unsigned n = 0;
	while (atomic_load_explicit(v, memory_order_acquire) < k) {
		if (stress_stopping())
			return;
		if (++n > 2000)
			sched_yield(); /* the other side is not running: do not burn its slice */
		else
			tsync_arch_relax();
	}
}

static void *reader(void *arg)
{
	(void)arg;
	uint64_t rng = test_seed(5);
	for (uint64_t k = 1; !stress_stopping(); k++) {
		wait_for(&go, k);
		test_spin((unsigned)(test_rand(&rng) % 40)); /* sweep the window */
		ps_enter(ps);
		struct dnode *n = atomic_load_explicit(&P, memory_order_acquire);
		uint64_t inc = n->inc;
		test_spin((unsigned)hold_spin);
		uint64_t again = n->inc;
		ps_exit(ps);
		if (again != inc) {
			atomic_fetch_add(&violations, 1);
			if (atomic_load(&violations) <= 5)
				fprintf(stderr,
					"VIOLATION: round %" PRIu64 ": node %p reused under a "
					"reader (incarnation %" PRIu64 " -> %" PRIu64 ")\n",
					k, (void *)n, inc, again);
		}
		atomic_store_explicit(&rdone, k, memory_order_release);
	}
	return NULL;
}

/* The writer's rounds until the deadline (or a reuse); returns the rounds run.
 * direct: the writer asks ps_quiesce itself right after the unlink and, when told the
 * old node is quiescent, rewrites it at once (what an allocator could do); *told counts
 * those answers. mem: the writer frees the old node, reclaims at once and allocates;
 * *told counts the old node handed straight back (LIFO caches). */
static uint64_t run_writer(double secs, bool direct, uint64_t *told, double *el)
{
	uint64_t rng = test_seed(6), inc = direct ? 1000000000 : 1, k;
	stress_start(secs);
	struct dnode *cur = ps_alloc(mem), *next = ps_alloc(mem);
	CHECK(cur != NULL && next != NULL);
	cur->inc = inc++;
	next->inc = inc++;
	atomic_store(&P, cur);
	stress_spawn(reader, NULL);
	/* The deadline (and a violation) is checked every 10 ms of wall time, not every N
	 * rounds: a round takes a microsecond while both threads run, but a time slice or
	 * more when one of them is preempted, so N rounds may take seconds on a busy
	 * machine. tsync_now() is a counter read, cheap enough for every round. */
	const tsync_tick_t check_every = tsync_ns_to_ticks(10000000);
	tsync_tick_t next_check = tsync_now() + check_every;
	for (k = 1;; k++) {
		tsync_tick_t now = tsync_now();
		if (now >= next_check) {
			next_check = now + check_every;
			if (stress_done(&violations))
				break;
		}
		atomic_store_explicit(&go, k, memory_order_release);
		test_spin((unsigned)(test_rand(&rng) % (direct ? 120 : 40)));
		/* unlink the current node */
		struct dnode *old = cur;
		atomic_store_explicit(&P, next, memory_order_release);
		cur = next;
		if (direct) {
			tsync_tick_t t = tsync_now_ordered();
			if (ps_quiesce(ps, t)) {
				old->inc =
					inc++; /* "reused": a reader still holding it sees this */
				(*told)++;
			}
			wait_for(&rdone, k);
			next = old;
			next->inc = inc++;
			continue;
		}
		/* mem: free it, reclaim at once, allocate */
		ps_free(mem, old);
		ps_mem_reclaim(mem);
		next = ps_alloc(mem);
		CHECK(next != NULL);
		if (next == old) {
			(*told)++;
			if (atomic_load_explicit(&rdone, memory_order_acquire) < k)
				atomic_fetch_add(&reused_under_reader,
						 1); /* legal only if the reader
						      * had not reached P yet */
		}
		next->inc = inc++; /* rewrite: a reader still holding it would see this */
		wait_for(&rdone, k);
	}
	*el = stress_end(&violations);
	ps_free(mem, cur);
	ps_free(mem, next);
	return k - 1;
}

int main(int argc, char **argv)
{
	bool direct = !(argc > 1 && strcmp(argv[1], "mem") == 0);
	double secs = stress_begin(2.0, 10, 60);
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	struct ps_mem_config cfg = PS_MEM_CONFIG_INIT;
	cfg.cache_size = 8;
	cfg.prudence = PS_MEM_PRUDENCE_ALL; /* every Prudence policy, whatever the default */
	mem = ps_mem_create(ps, sizeof(struct dnode), &cfg);
	CHECK(mem != NULL);
	uint64_t told = 0;
	double el;
	uint64_t rounds = run_writer(secs, direct, &told, &el);
	uint64_t v = atomic_load(&violations);
	if (direct)
		printf("stress_dekker (direct): %" PRIu64 " rounds in %.2f s, ps_quiesce true "
		       "right after the unlink %" PRIu64 " times, reuses detected %" PRIu64 "\n",
		       rounds, el, told, v);
	else
		printf("stress_dekker (mem): %" PRIu64 " rounds in %.2f s, old node handed "
		       "straight back %" PRIu64 " times (%" PRIu64 " while the reader was still "
		       "in its round), reuses detected %" PRIu64 "\n",
		       rounds, el, told, atomic_load(&reused_under_reader), v);
	ps_mem_destroy(mem);
	ps_destroy(ps);
	return v ? 1 : 0;
}
