/*
 * tests/ps_mem/test_ps_mem_remote.c - remote frees (<tsync/ps_mem.h>: an object freed by
 * another thread than the one that allocated it) keep memory bounded, and free memory is
 * not stranded in one thread's partly free slabs (the partial-slab cap).
 */
#include "ps_mem_test.h"

/* ---- remote frees: allocated by A, freed by B ----------------------------------------
 * The threads take turns through check.h's gates (a blocking hand-off: a preempted
 * partner costs a wake-up, not a yielded time slice per round). */
#define RBATCH 64
struct remote {
	struct ps_mem *m;
	void *obj[RBATCH];
	test_gate produced, consumed;
	uint64_t rounds;
	uint64_t mid_slabs;
};

static void *remote_producer(void *p)
{
	struct remote *r = p;
	for (uint64_t k = 1; k <= r->rounds; k++) {
		test_gate_wait(&r->consumed, k - 1, 60000);
		for (int i = 0; i < RBATCH; i++) {
			r->obj[i] = ps_alloc(r->m);
			CHECK(r->obj[i] != NULL);
			memset(r->obj[i], 0xa5, 32);
		}
		test_gate_set(&r->produced, k);
	}
	return NULL;
}

static void *remote_consumer(void *p)
{
	struct remote *r = p;
	for (uint64_t k = 1; k <= r->rounds; k++) {
		test_gate_wait(&r->produced, k, 60000);
		for (int i = 0; i < RBATCH; i++) {
			CHECK(ps_mem_of(r->obj[i]) == r->m);
			ps_free(r->m, r->obj[i]);
		}
		if (k == r->rounds / 4) {
			struct ps_mem_stats s;
			ps_mem_stats(r->m, &s);
			r->mid_slabs = s.slabs;
		}
		test_gate_set(&r->consumed, k);
	}
	return NULL;
}

static void test_remote(struct ps *ps, const struct ps_mem_config *cfg, const char *name)
{
	static struct remote r;
	memset(&r, 0, sizeof r);
	test_gate_init(&r.produced, 0);
	test_gate_init(&r.consumed, 0);
	r.m = ps_mem_create(ps, 64, cfg);
	CHECK(r.m != NULL);
	r.rounds = test_scale(4000, 8);
	pthread_t a = test_spawn(remote_producer, &r), b = test_spawn(remote_consumer, &r);
	test_join(a);
	test_join(b);
	test_gate_destroy(&r.produced);
	test_gate_destroy(&r.consumed);
	struct ps_mem_stats s = mstats(r.m);
	CHECK_EQ(s.allocs, r.rounds * RBATCH);
	CHECK_EQ(s.frees, r.rounds * RBATCH);
	CHECK_EQ(s.in_use, 0);
	CHECK_MSG(s.remote_frees > 0,
		  "%s: objects freed by another thread never went back as "
		  "remote frees",
		  name);
	/* bounded: about two batches live at once, plus caches and queues */
	size_t slab = ps_mem_slab_size(r.m);
	uint64_t bound_objs =
		8 * RBATCH + 4 * (cfg && cfg->cache_size ? cfg->cache_size : 64) + 1024;
	uint64_t bound_slabs = bound_objs * 96 / slab + 8;
	CHECK_MSG(s.peak_slabs <= bound_slabs,
		  "%s: peak %" PRIu64 " slabs for %d objects in flight (bound %" PRIu64 "; %" PRIu64
		  " slabs at a quarter of the run, %" PRIu64 " now): memory grows",
		  name, s.peak_slabs, RBATCH, bound_slabs, r.mid_slabs, s.slabs);
	test_log("ps_mem: remote (%s): %" PRIu64 " objects, remote_frees %" PRIu64 ", peak %" PRIu64
		 " slabs, grows %" PRIu64 " shrinks %" PRIu64,
		 name, s.allocs, s.remote_frees, s.peak_slabs, s.slab_grows, s.slab_shrinks);
	ps_mem_destroy(r.m);
}

/* ---- free memory is not stranded in one thread's slabs -------------------------------- */
/*
 * Owner A allocates 20 slabs' worth; another thread frees every other object, which goes
 * back to A's slabs as remote frees; A drains them on its next refill. A third thread
 * then allocates 6 slabs' worth: ps_mem must serve it from the free half of A's slabs
 * (A keeps four partly free slabs, the pool gets the rest), not map new ones. Before the
 * partial-slab cap, A kept all 20 and the third thread mapped 6 new slabs.
 */
struct strand {
	struct ps_mem *m;
	void **obj, *extra[512];
	size_t n, nextra, k;
	test_gate phase; /* 1..4: the steps below, taken in turn by the owner and main */
	uint64_t grows_before, grows_after;
};

static void strand_wait(struct strand *r, int phase)
{
	test_gate_wait(&r->phase, (uint64_t)phase, 60000);
}

static void *strand_owner(void *p)
{
	struct strand *r = p;
	for (size_t i = 0; i < r->n; i++)
		CHECK((r->obj[i] = ps_alloc(r->m)) != NULL);
	test_gate_set(&r->phase, 1);
	strand_wait(r, 2);
	/* past the object cache: the refill drains the remote frees into A's slabs */
	for (size_t i = 0; i < r->nextra; i++)
		CHECK((r->extra[i] = ps_alloc(r->m)) != NULL);
	test_gate_set(&r->phase, 3);
	strand_wait(r, 4);
	for (size_t i = 0; i < r->nextra; i++)
		ps_free(r->m, r->extra[i]);
	for (size_t i = 0; i < r->n; i += 2)
		ps_free(r->m, r->obj[i]);
	return NULL;
}

static void *strand_taker(void *p)
{
	struct strand *r = p;
	void **mine = malloc(r->k * sizeof *mine);
	CHECK(mine != NULL);
	for (size_t i = 0; i < r->k; i++)
		CHECK((mine[i] = ps_alloc(r->m)) != NULL);
	r->grows_after = mstats(r->m).slab_grows;
	for (size_t i = 0; i < r->k; i++)
		ps_free(r->m, mine[i]);
	free(mine);
	return NULL;
}

static void test_no_stranding(struct ps *ps)
{
	static struct strand r;
	memset(&r, 0, sizeof r);
	test_gate_init(&r.phase, 0);
	r.m = ps_mem_create(ps, 64, NULL);
	CHECK(r.m != NULL);
	size_t per_slab = ps_mem_slab_objects(r.m);
	r.n = 20 * per_slab;
	r.nextra = 2 * 64 + 1; /* two object caches: at least one refill */
	r.k = 6 * per_slab;
	r.obj = malloc(r.n * sizeof *r.obj);
	CHECK(r.obj != NULL);
	pthread_t a = test_spawn(strand_owner, &r);
	strand_wait(&r, 1);
	for (size_t i = 1; i < r.n; i += 2)
		ps_free(r.m, r.obj[i]);
	while (ps_mem_reclaim(r.m) > 0) /* no sections: all quiesced; flushes go remote */
		;
	test_gate_set(&r.phase, 2);
	strand_wait(&r, 3);
	struct ps_mem_stats s = mstats(r.m);
	r.grows_before = s.slab_grows;
	pthread_t c = test_spawn(strand_taker, &r);
	test_join(c);
	test_log("ps_mem: stranding: %zu objects freed into the owner's %" PRIu64
		 " slabs; a third thread's %zu allocations mapped %" PRIu64 " new slabs",
		 r.n / 2, r.grows_before, r.k, r.grows_after - r.grows_before);
	CHECK_MSG(r.grows_after - r.grows_before <= 1,
		  "free objects stranded in the owner's slabs: %" PRIu64 " slabs mapped for %zu "
		  "objects while %zu were free",
		  r.grows_after - r.grows_before, r.k, r.n / 2);
	test_gate_set(&r.phase, 4);
	test_join(a);
	test_gate_destroy(&r.phase);
	free(r.obj);
	ps_mem_destroy(r.m);
}

static void test_remote_all(struct ps *ps)
{
	test_remote(ps, NULL, "default config");
	struct ps_mem_config small = small_cfg();
	test_remote(ps, &small, "small config");
	test_no_stranding(ps);
}

PS_MEM_TEST_MAIN("remote", test_remote_all)
