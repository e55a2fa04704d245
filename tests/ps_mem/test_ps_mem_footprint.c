/*
 * tests/ps_mem/test_ps_mem_footprint.c - footprint for small programs (issue 26 item 5):
 *  1. the slab-size rule of <tsync/ps_mem.h> (struct ps_mem_config.slab_size 0), for
 *     ps_mem and for ps_kmem's classes;
 *  2. idle and exited threads' queues: a thread frees N objects and then makes no call
 *     (blocks, or exits); another thread's ordinary ps_alloc/ps_free - no
 *     ps_mem_reclaim - must make every one of them reusable within a bounded number of
 *     its calls, while readers in sections check that nothing they hold is reused
 *     (a marker written at allocation, read twice inside the section).
 */
#include <inttypes.h>
#include <time.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/tsync.h>

#include "ps_mem_test.h"

#ifdef TSYNC_TEST_SMALL
#define DEF_SLAB 4096u
#define DEF_CACHE 4u
#else
#define DEF_SLAB 65536u
#define DEF_CACHE 64u
#endif

/* ps_mem's layout at the default alignment (16): a 32-byte header area per object. */
static size_t stride_of(size_t obj)
{
	return (32 + obj + 15) / 16 * 16;
}

/* The contract's rule for one size: a page multiple of at least 4 KiB; up to DEF_SLAB it
 * is the smallest one holding max(cache_size, 8) objects (at most a 128-byte slab
 * header); when that target does not fit, DEF_SLAB if 8 fit, else the power of two above
 * it that holds 8. */
static void check_rule(struct ps_mem *m, size_t obj, unsigned cache)
{
	size_t slab = ps_mem_slab_size(m), st = stride_of(obj);
	unsigned n = ps_mem_slab_objects(m), target = cache > 8 ? cache : 8;
	CHECK_EQ(slab % 4096, 0);
	CHECK_LE(4096, slab);
	if (128 + (size_t)target * st <= DEF_SLAB) {
		CHECK_MSG(n >= target, "%zu-byte objects: %u per %zu-byte slab, rule needs %u", obj,
			  n, slab, target);
		CHECK_MSG(slab == 4096 || slab - 4096 < 128 + (size_t)target * st,
			  "%zu-byte objects: a %zu-byte slab is not the smallest for %u", obj, slab,
			  target);
	} else if (128 + 8 * st <= DEF_SLAB) {
		CHECK_EQ(slab, DEF_SLAB);
	} else {
		CHECK_EQ(slab & (slab - 1), 0);
		CHECK_LE(8, n);
		CHECK_MSG(slab / 2 < 128 + 8 * st, "%zu-byte objects: %zu-byte slab too large", obj,
			  slab);
	}
}

static void test_slab_rule(struct ps *ps)
{
	static const size_t sizes[] = {1, 16, 40, 64, 100, 200, 500, 1000, 2000, 5000, 9000, 70000};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct ps_mem *m = ps_mem_create(ps, sizes[i], NULL);
		CHECK(m != NULL);
		check_rule(m, sizes[i], DEF_CACHE);
		ps_mem_destroy(m);
		struct ps_mem_config c = PS_MEM_CONFIG_INIT;
		c.cache_size = 16;
		m = ps_mem_create(ps, sizes[i], &c);
		CHECK(m != NULL);
		check_rule(m, sizes[i], 16);
		ps_mem_destroy(m);
	}
	/* an explicit slab_size is kept as given */
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.slab_size = 3 * 4096;
	struct ps_mem *m = ps_mem_create(ps, 64, &c);
	CHECK(m != NULL);
	CHECK_EQ(ps_mem_slab_size(m), 3 * 4096);
	ps_mem_destroy(m);
	/* ps_kmem's shared classes follow the same rule with their cache sizes: 16 KiB of
	 * cache per class (cache_bytes) holds cache_bytes / stride objects, 1 to 64 */
	struct ps_kmem_config kc = PS_KMEM_CONFIG_INIT;
	kc.cache_bytes = 16384;
	struct ps_kmem *k = ps_kmem_create(ps, &kc);
	CHECK(k != NULL);
	for (unsigned i = 0; i < ps_kmem_nclasses(k); i++) {
		size_t sz = ps_kmem_class_size(k, i);
		if (sz > 8192)
			continue; /* a slab of its own (ps_kmem.h) */
		size_t cs = 16384 / stride_of(sz);
		check_rule(ps_kmem_class(k, i), sz, (unsigned)(cs < 1 ? 1 : cs > 64 ? 64 : cs));
	}
	ps_kmem_destroy(k);
	test_log("ps_mem: footprint: slab-size rule holds for %zu sizes and every shared class",
		 sizeof sizes / sizeof sizes[0]);
}

/* ---- idle and exited threads --------------------------------------------------------- */

#define MARK_IDLE 0x1d1e1d1e1d1e1d1eull
#define MARK_TAKER 0x7a4e7a4e7a4e7a4eull
enum { N = 1000, READERS = 2, ROUND = 128, MAX_ROUNDS = 500 };

struct obj {
	_Atomic uint64_t mark;
	char pad[56];
};

struct idle_run {
	struct ps *ps;
	struct ps_mem *m;
	bool exit_instead; /* the freeing thread exits instead of blocking */
	_Atomic(struct obj *) pub[N];
	test_gate freed; /* 1: the freeing thread has freed all N */
	test_gate done;  /* 1: the test is over (the idle thread may return) */
	atomic_bool stop;
	_Atomic uint64_t reads;
};

static void *idle_freer(void *arg)
{
	struct idle_run *r = arg;
	for (int i = 0; i < N; i++) {
		struct obj *o = ps_alloc(r->m);
		CHECK(o != NULL);
		atomic_store_explicit(&o->mark, MARK_IDLE, memory_order_relaxed);
		atomic_store_explicit(&r->pub[i], o, memory_order_release);
	}
	for (int i = 0; i < N; i++) {
		struct obj *o = atomic_exchange_explicit(&r->pub[i], NULL, memory_order_acq_rel);
		ps_free(r->m, o);
	}
	test_gate_set(&r->freed, 1);
	if (!r->exit_instead)
		test_gate_wait(&r->done, 1, 100000); /* no tsync call: idle */
	return NULL;
}

static void *idle_reader(void *arg)
{
	struct idle_run *r = arg;
	uint64_t seed = (uint64_t)(uintptr_t)&seed;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		ps_enter(r->ps);
		struct obj *o =
			atomic_load_explicit(&r->pub[test_rand(&seed) % N], memory_order_acquire);
		if (o != NULL) {
			uint64_t a = atomic_load_explicit(&o->mark, memory_order_relaxed);
			for (int s = 0; s < 200; s++)
				tsync_arch_relax();
			uint64_t b = atomic_load_explicit(&o->mark, memory_order_relaxed);
			CHECK_MSG(a == MARK_IDLE && b == MARK_IDLE,
				  "object %p reused under a reader (%" PRIx64 ", %" PRIx64 ")",
				  (void *)o, a, b);
			atomic_fetch_add_explicit(&r->reads, 1, memory_order_relaxed);
		}
		ps_exit(r->ps);
	}
	return NULL;
}

static void test_idle(struct ps *ps, bool exit_instead, unsigned stamp_batch)
{
	static struct idle_run r;
	memset(&r, 0, sizeof r);
	r.ps = ps;
	r.exit_instead = exit_instead;
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.stamp_batch = stamp_batch;
	r.m = ps_mem_create(ps, sizeof(struct obj), &c);
	CHECK(r.m != NULL);
	test_gate_init(&r.freed, 0);
	test_gate_init(&r.done, 0);
	pthread_t rd[READERS];
	for (int i = 0; i < READERS; i++)
		rd[i] = test_spawn(idle_reader, &r);
	/* exit variant: our own section holds the frees back while the thread exits, so
	 * its exit cannot reclaim them: its queue is orphaned */
	if (exit_instead)
		ps_enter(ps);
	pthread_t f = test_spawn(idle_freer, &r);
	test_gate_wait(&r.freed, 1, 60000);
	if (exit_instead) {
		test_join(f);
		ps_exit(ps);
		struct ps_mem_stats s0;
		CHECK_EQ(ps_mem_stats(r.m, &s0), 0);
		CHECK_MSG(s0.pending > 0, "the exited thread left no queue: nothing tested");
	}
	/* the contract: all but the idle thread's unstamped frees (fewer than stamp_batch);
	 * an exited thread stamped them all */
	unsigned sb = stamp_batch ? stamp_batch : 16;
	uint64_t left = exit_instead ? 0 : (uint64_t)(N % sb);
	/* The taker: rounds of ROUND allocations, kept until the end (so that every
	 * pending object is the freeing thread's); each round has at least one allocation
	 * slow path (ROUND > the cache), where an idle queue is taken at the second look at
	 * its thread (looks go round the thread ids that used m), orphans are all adopted,
	 * and up to reclaim_batch objects are reclaimed once their grace period is over:
	 * the contract's bound in slow paths is 2 x (thread ids that used m) + N /
	 * reclaim_batch after that, far below MAX_ROUNDS. */
	static struct obj *mine[MAX_ROUNDS][ROUND];
	int rounds = 0;
	struct ps_mem_stats s;
	/* "After that": the rounds count from the end of the frees' grace period, which
	 * the readers decide - a reader preempted inside its section holds it as long as
	 * the scheduler keeps it off a CPU (under load, once in about a thousand runs,
	 * longer than 500 rounds took; no bound on that is the contract's). */
	const tsync_tick_t t_freed = tsync_now();
	while (!ps_quiesce(ps, t_freed)) {
		struct timespec nap = {0, 200000};
		nanosleep(&nap, NULL);
	}
	for (;;) {
		CHECK_EQ(ps_mem_stats(r.m, &s), 0);
		if (s.pending <= left)
			break;
		CHECK_MSG(rounds < MAX_ROUNDS,
			  "%s thread: %" PRIu64 " objects still pending after %d rounds "
			  "(%" PRIu64 " allowed)",
			  exit_instead ? "exited" : "idle", s.pending, rounds, left);
		for (int i = 0; i < ROUND; i++) {
			struct obj *o = ps_alloc(r.m);
			CHECK(o != NULL);
			atomic_store_explicit(&o->mark, MARK_TAKER, memory_order_relaxed);
			mine[rounds][i] = o;
		}
		rounds++;
		/* let the clock pass the read interval (50 us, <tsync/ps.h>): the lazy
		 * quiescence of the allocation path then may prove the readers' sections
		 * over - no rate is asserted, only the count of rounds */
		struct timespec nap = {0, 200000};
		nanosleep(&nap, NULL);
	}
	for (int k = 0; k < rounds; k++)
		for (int i = 0; i < ROUND; i++)
			ps_free(r.m, mine[k][i]);
	atomic_store(&r.stop, true);
	for (int i = 0; i < READERS; i++)
		test_join(rd[i]);
	test_gate_set(&r.done, 1);
	if (!exit_instead)
		test_join(f);
	test_log("ps_mem: footprint: %s thread's %d frees (stamp_batch %u) reusable after %d "
		 "rounds of another thread's alloc/free, %" PRIu64 " left as promised; %" PRIu64
		 " reads",
		 exit_instead ? "an exited" : "an idle", N, sb, rounds, s.pending,
		 atomic_load(&r.reads));
	test_gate_destroy(&r.freed);
	test_gate_destroy(&r.done);
	ps_mem_destroy(r.m);
}

static void test_footprint(struct ps *ps)
{
	test_slab_rule(ps);
	test_idle(ps, false, 1);
	test_idle(ps, false, 0);
	test_idle(ps, true, 0);
}

PS_MEM_TEST_MAIN("footprint", test_footprint)
