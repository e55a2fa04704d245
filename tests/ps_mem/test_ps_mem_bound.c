/*
 * tests/ps_mem/test_ps_mem_bound.c - memory bounded by default (<tsync/ps_mem.h>'s pending
 * bound, Prudence (ASPLOS 2016) §4, Algorithm 1 lines 31-32): allocations wait at the bound
 * and reuse what a section held back the moment it ends, an unreachable bound does not
 * wait, and a refused slab (RLIMIT_AS) under the bound waits and retries instead of ENOMEM
 * at once.
 */
#include "ps_mem_test.h"

/* ---- memory bounded by default: the pending bound (Prudence (ASPLOS 2016) §4, Algorithm 1 lines
 * 31-32) --------------------------------------------------------------------------- */

/* Ends a holder's section once m's allocator is seen waiting for a grace period (or once
 * `stop` is set, or after 30 s: a test whose allocation never waits fails on its own
 * checks, not here). So the wait is always exercised, however the threads are scheduled;
 * `released` is set before the section ends. */
struct bound_releaser {
	struct holder *h;
	struct ps_mem *m;
	_Atomic int stop, released, saw_wait;
};

static void *release_on_wait(void *arg)
{
	struct bound_releaser *r = arg;
	uint64_t dl = test_now_ns() + 30000000000ull;
	while (!atomic_load_explicit(&r->stop, memory_order_acquire) && test_now_ns() < dl) {
		struct ps_mem_stats s;
		CHECK_EQ(ps_mem_stats(r->m, &s), 0);
		if (s.alloc_waits > 0) {
			atomic_store(&r->saw_wait, 1);
			test_sleep_ms(20); /* let it nap a few times */
			break;
		}
		test_sleep_ms(1);
	}
	atomic_store_explicit(&r->released, 1, memory_order_release);
	holder_do(r->h, HOLD_EXIT);
	return NULL;
}

/* The set-up of the bound's tests: 200-byte objects on 4 KiB slabs, BOUND_LIVE slabs'
 * worth of objects live and BOUND_FREED slabs' worth freed with ps_free - past the
 * default bound (10 % of the live objects) and its floor (PS_MEM_BOUND_FLOOR_SLABS
 * slabs' worth) - with every slab full, so that the next allocations use up the cache
 * and the last slab and then need a new one. The caller holds a section (its own or a
 * holder's) that keeps the freed objects pending. */
#define BOUND_LIVE 20
#define BOUND_FREED (PS_MEM_BOUND_FLOOR_SLABS + 4)
#define BOUND_EXTRA 256
struct bound_run {
	struct ps_mem *m;
	void **objs, *extra[BOUND_EXTRA];
	size_t n, freed, nextra;
};

static void bound_fill(struct bound_run *b, struct ps *ps, int pct, int wait_ms)
{
	memset(b, 0, sizeof *b);
	struct ps_mem_config c = small_cfg();
	c.limit_wait_ms = wait_ms;
	c.pending_bound_pct = pct;
	b->m = ps_mem_create(ps, 200, &c);
	CHECK(b->m != NULL);
	unsigned nobj = ps_mem_slab_objects(b->m);
	b->freed = (size_t)BOUND_FREED * nobj;
	b->n = b->freed + (size_t)BOUND_LIVE * nobj;
	b->objs = calloc(b->n, sizeof *b->objs);
	CHECK(b->objs != NULL);
	for (size_t i = 0; i < b->n; i++)
		CHECK((b->objs[i] = ps_alloc(b->m)) != NULL);
	for (size_t i = 0; i < b->freed; i++)
		ps_free(b->m, b->objs[i]);
	struct ps_mem_stats s = mstats(b->m);
	CHECK_EQ(s.pending, b->freed); /* the section holds them all */
	CHECK_EQ(s.alloc_waits, 0);
}

/* Allocate until a ps_alloc waited or mapped a slab (the one that needed a new slab):
 * the stats just before it in *before, after it in *after; returns its object. */
static void *bound_alloc_slow(struct bound_run *b, struct ps_mem_stats *before,
			      struct ps_mem_stats *after)
{
	for (;;) {
		*before = mstats(b->m);
		void *p = ps_alloc(b->m);
		CHECK_MSG(p != NULL, "ps_alloc failed (errno %d)", errno);
		*after = mstats(b->m);
		if (after->slab_grows != before->slab_grows ||
		    after->alloc_waits != before->alloc_waits)
			return p;
		CHECK_MSG(b->nextra < BOUND_EXTRA, "no allocation needed a new slab");
		b->extra[b->nextra++] = p;
	}
}

static void bound_done(struct bound_run *b, void *p)
{
	ps_free(b->m, p);
	for (size_t i = 0; i < b->nextra; i++)
		ps_free(b->m, b->extra[i]);
	for (size_t i = b->freed; i < b->n; i++)
		ps_free(b->m, b->objs[i]);
	ps_mem_reclaim(b->m);
	ps_mem_destroy(b->m);
	free(b->objs);
}

static bool bound_was_freed(const struct bound_run *b, const void *p)
{
	for (size_t i = 0; i < b->freed; i++)
		if (b->objs[i] == p)
			return true;
	return false;
}

/* Fill a bound_run's objects from the holder's thread (HOLD_CALL). */
static void bound_fill_there(void *arg)
{
	struct bound_run *b = arg;
	for (size_t i = 0; i < b->n; i++)
		CHECK((b->objs[i] = ps_alloc(b->m)) != NULL);
}

static void test_bound_unreachable(struct ps *ps, struct holder *h)
{
	struct ps_mem_config c = small_cfg();
	c.limit_wait_ms = 20000;
	struct bound_run b = {.m = ps_mem_create(ps, 200, &c)};
	CHECK(b.m != NULL);
	unsigned nobj = ps_mem_slab_objects(b.m);
	void **theirs = calloc((size_t)BOUND_LIVE * nobj, sizeof *theirs);
	CHECK(theirs != NULL);
	struct bound_run t = {.m = b.m, .objs = theirs, .n = (size_t)BOUND_LIVE * nobj};
	h->fn = bound_fill_there;
	h->arg = &t;
	holder_do(h, HOLD_CALL); /* its slabs */
	for (size_t i = 0; i < t.n; i++)
		ps_free_now(b.m, theirs[i]); /* never published: free at once, onto its lists */
	b.n = (size_t)BOUND_LIVE * nobj;
	b.objs = calloc(b.n, sizeof *b.objs);
	CHECK(b.objs != NULL);
	for (size_t i = 0; i < b.n; i++)
		CHECK((b.objs[i] = ps_alloc(b.m)) != NULL);
	holder_do(h, HOLD_ENTER);
	b.freed = 10;
	for (size_t i = 0; i < b.freed; i++)
		ps_free(b.m, b.objs[i]);
	struct ps_mem_stats s0 = mstats(b.m), s1;
	CHECK_EQ(s0.pending, b.freed); /* below the floor of 16 slabs' worth */
	CHECK_GT(s0.freed, (uint64_t)PS_MEM_BOUND_FLOOR_SLABS * nobj);
	struct bound_releaser r = {.h = h, .m = b.m};
	pthread_t rel = test_spawn(release_on_wait, &r);
	void *p = bound_alloc_slow(&b, &s0, &s1);
	atomic_store_explicit(&r.stop, 1, memory_order_release);
	test_join(rel);
	CHECK_MSG(s1.slab_grows == s0.slab_grows,
		  "mapped a slab with %" PRIu64 " pending and %" PRIu64 " free slots for %" PRIu64
		  " live objects",
		  s0.pending, s0.freed, s0.live);
	CHECK_EQ(s1.alloc_waits, 1);
	CHECK_MSG(bound_was_freed(&b, p), "the wait handed out %p, not a freed object", p);
	bound_done(&b, p);
	free(theirs);
}

static void test_bound(struct ps *ps)
{
	enum { WAIT_MS = 20000 };
	struct bound_run b;
	struct ps_mem_stats s0, s1;
	struct holder h;
	holder_start(&h, ps);

	/* 1. the default: past the bound, the allocation that needs a new slab waits for
	 * the grace period that another thread's section holds back, and reuses a freed
	 * object instead of mapping */
	holder_do(&h, HOLD_ENTER);
	bound_fill(&b, ps, 0, WAIT_MS);
	struct bound_releaser r = {.h = &h, .m = b.m};
	pthread_t rel = test_spawn(release_on_wait, &r);
	void *p = bound_alloc_slow(&b, &s0, &s1);
	atomic_store_explicit(&r.stop, 1, memory_order_release);
	test_join(rel);
	CHECK_MSG(s1.slab_grows == s0.slab_grows,
		  "mapped a slab with %" PRIu64 " of %" PRIu64 " live objects pending", s0.pending,
		  s0.live);
	CHECK_EQ(s1.alloc_waits, 1);
	CHECK_EQ(s1.wait_timeouts, 0);
	CHECK_MSG(atomic_load(&r.saw_wait) &&
			  atomic_load_explicit(&r.released, memory_order_acquire),
		  "an object came back while the section that holds every free back still ran");
	CHECK_MSG(bound_was_freed(&b, p), "the wait handed out %p, not a freed object", p);
	CHECK_EQ(s1.merge_hits, s0.merge_hits + 1); /* served by the reclamation: no refill */
	bound_done(&b, p);

	/* 2. the wait is bounded: a section that outlasts limit_wait_ms costs a wait of
	 * limit_wait_ms, then the slab is mapped - and the next slab needed past the bound
	 * waits again: while the section holds the grace period, each slab costs a wait */
	holder_do(&h, HOLD_ENTER);
	bound_fill(&b, ps, 0, 100);
	uint64_t t0 = test_now_ns();
	p = bound_alloc_slow(&b, &s0, &s1);
	uint64_t waited = test_now_ns() - t0;
	CHECK_EQ(s1.alloc_waits, 1);
	CHECK_EQ(s1.wait_timeouts, 1);
	CHECK_EQ(s1.slab_grows, s0.slab_grows + 1);
	CHECK_MSG(waited >= 90000000ull, "gave up after %" PRIu64 " ns, limit_wait_ms is 100",
		  waited);
	b.extra[b.nextra++] = p;
	p = bound_alloc_slow(&b, &s0, &s1); /* the next slab: a wait again */
	CHECK_EQ(s1.alloc_waits, 2);
	CHECK_EQ(s1.wait_timeouts, 2);
	CHECK_EQ(s1.slab_grows, s0.slab_grows + 1);
	holder_do(&h, HOLD_EXIT);
	bound_done(&b, p);

	/* 3. inside the caller's own section, which holds its own frees back: it maps a
	 * slab at once instead of waiting for itself */
	ps_enter(ps);
	bound_fill(&b, ps, 0, WAIT_MS);
	t0 = test_now_ns();
	p = bound_alloc_slow(&b, &s0, &s1);
	CHECK_EQ(s1.slab_grows, s0.slab_grows + 1);
	CHECK_EQ(s1.alloc_waits, 0);
	CHECK_MSG(test_now_ns() - t0 < WAIT_MS / 2 * 1000000ull, "waited inside its own section");
	ps_exit(ps);
	bound_done(&b, p);

	/* 4. the opt-out: pending_bound_pct = PS_MEM_PENDING_BOUND_OFF keeps ParSec's rule,
	 * fresh memory at once while the section still holds every free back */
	holder_do(&h, HOLD_ENTER);
	bound_fill(&b, ps, PS_MEM_PENDING_BOUND_OFF, WAIT_MS);
	t0 = test_now_ns();
	p = bound_alloc_slow(&b, &s0, &s1);
	CHECK_EQ(s1.slab_grows, s0.slab_grows + 1);
	CHECK_EQ(s1.alloc_waits, 0);
	CHECK_MSG(test_now_ns() - t0 < WAIT_MS / 2 * 1000000ull, "waited with the bound off");
	holder_do(&h, HOLD_EXIT);
	bound_done(&b, p);

	/* 5. free slots the caller cannot reach count as well as pending objects: another
	 * thread's slabs whose objects sit free on its remote lists (it allocated them, the
	 * caller freed them at once, it never allocates again) and a few frees pending -
	 * too few to pass the floor alone - still make the allocation wait and reuse */
	test_bound_unreachable(ps, &h);

	/* 6. a bad value is refused */
	struct ps_mem_config c = small_cfg();
	c.pending_bound_pct = -2;
	CHECK_CREATE_FAILS(ps, 200, &c, EINVAL);
	holder_stop(&h, HOLD_QUIT);
}

/* A refused slab (RLIMIT_AS) under the bound: wait for a grace period and retry, not
 * ENOMEM at once - and with the bound off, ENOMEM at once as before. Exit status: 0, or
 * which check failed. */
struct bound_nomem {
	struct ps *ps;
	int pct;
};

static void bound_enomem_child(void *arg)
{
	struct bound_nomem *a = arg;
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.pending_bound_pct = a->pct;
	c.limit_wait_ms = 20000;
	void **keep;
	struct ps_mem *m = child_mem(a->ps, &c, &keep);
	/* threads first: their stacks are address space too */
	struct holder h;
	holder_start(&h, a->ps);
	holder_do(&h, HOLD_ENTER);
	struct bound_releaser r = {.h = &h, .m = m};
	pthread_t rel = test_spawn(release_on_wait, &r);
	limit_address_space();
	size_t n = fill_until_null(m, keep); /* nothing pending: ENOMEM at once */
	struct ps_mem_stats s;
	if (errno != ENOMEM || ps_mem_stats(m, &s) != 0 || s.alloc_waits != 0)
		_exit(13);
	for (size_t i = 0; i < 100 && n > 0; i++) /* held back by the holder's section */
		ps_free(m, keep[--n]);
	errno = 0;
	void *p = ps_alloc(m);
	int e = errno;
	atomic_store_explicit(&r.stop, 1, memory_order_release);
	test_join(rel);
	if (ps_mem_stats(m, &s) != 0)
		_exit(14);
	if (a->pct == PS_MEM_PENDING_BOUND_OFF)
		_exit(p == NULL && e == ENOMEM && s.alloc_waits == 0 ? 0 : 15);
	if (p == NULL)
		_exit(16); /* ENOMEM although a grace period would free 100 objects */
	if (!atomic_load(&r.saw_wait) || s.alloc_waits != 1 || s.wait_timeouts != 0)
		_exit(17);
	_exit(0);
}

static void test_bound_enomem(struct ps *ps)
{
	if (TEST_ASAN || TEST_TSAN || !test_can_fork()) {
		test_log("ps_mem: bound ENOMEM test skipped under sanitizers");
		return;
	}
	int pcts[2] = {0, PS_MEM_PENDING_BOUND_OFF};
	for (int i = 0; i < 2; i++) {
		struct bound_nomem a = {ps, pcts[i]};
		int st = test_in_child(bound_enomem_child, &a);
		if (st == 77) {
			test_log("ps_mem: bound ENOMEM test skipped (no RLIMIT_AS)");
			return;
		}
		CHECK_MSG(st == 0,
			  "bound ENOMEM child (pending_bound_pct %d) failed with status %d "
			  "(12: no ENOMEM, 13: a wait with nothing pending, 15: bound off and not "
			  "ENOMEM at once, 16: ENOMEM instead of waiting, 17: no wait seen)",
			  pcts[i], st);
	}
}

static void test_bound_all(struct ps *ps)
{
	test_bound(ps);
	test_bound_enomem(ps);
}

PS_MEM_TEST_MAIN("bound", test_bound_all)
