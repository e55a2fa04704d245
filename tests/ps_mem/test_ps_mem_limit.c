/*
 * tests/ps_mem/test_ps_mem_limit.c - the memory limit (struct ps_mem_config.limit_slabs and
 * limit_wait_ms, Prudence (ASPLOS 2016) §4): at the limit ps_alloc waits for a grace period
 * instead of failing, for as long as it is told and no longer.
 */
#include "ps_mem_test.h"

/* ---- a memory limit: wait for a grace period instead of failing (Prudence (ASPLOS 2016) §4)
 * ------- */
struct releaser {
	struct holder *h;
	unsigned ms;
	_Atomic int released; /* set before the holder's section ends */
};

/* End h's section after a while (the while only lets the allocator start waiting first:
 * if it does not, the wait is not exercised, but nothing checked depends on it). The
 * flag is set before the exit: it happens-before the ps_exit (through holder_do), and so
 * before any ps_quiesce that sees the section over. */
static void *release_later(void *arg)
{
	struct releaser *r = arg;
	test_sleep_ms(r->ms);
	atomic_store_explicit(&r->released, 1, memory_order_release);
	holder_do(r->h, HOLD_EXIT);
	return NULL;
}

/* Allocate until ps_alloc fails; returns the count, errno of the failure in *err. */
static size_t fill(struct ps_mem *m, void **objs, size_t max, int *err)
{
	size_t n = 0;
	for (;;) {
		errno = 0;
		void *p = ps_alloc(m);
		if (p == NULL) {
			*err = errno;
			return n;
		}
		CHECK_MSG(n < max, "more than %zu objects under a %zu-slab limit", max, (size_t)2);
		objs[n++] = p;
	}
}

static void test_limit_wait(struct ps *ps)
{
	/* WAIT_MS: how long a waiting ps_alloc may wait. A wait that should not happen at
	 * all is checked against WAIT_MS / 2: a wait of the whole limit (the bug) exceeds
	 * it, a preemption does not come near it. */
	enum { MAX = 256, WAIT_MS = 20000 };
	void *objs[MAX];
	int err = 0;
	struct ps_mem_config c = small_cfg();
	c.max_bytes = 2 * 4096 + 100; /* two slabs */
	c.limit_wait_ms = WAIT_MS;
	struct ps_mem *m = ps_mem_create(ps, 200, &c);
	CHECK(m != NULL);

	/* 1. at the limit, nothing deferred: ENOMEM at once */
	uint64_t t0 = test_now_ns();
	size_t n = fill(m, objs, MAX, &err);
	CHECK_EQ_I(err, ENOMEM);
	CHECK_MSG(test_now_ns() - t0 < WAIT_MS / 2 * 1000000ull, "waited with nothing deferred");
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.slabs, 2);
	CHECK_EQ(s.in_use, n);
	CHECK_GE(n, 2);

	/* 2. another thread's section holds every free back: ps_alloc waits until it ends */
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ENTER);
	for (size_t i = 0; i < n; i++)
		ps_free(m, objs[i]);
	struct releaser r = {&h, 100, 0};
	pthread_t rel = test_spawn(release_later, &r);
	void *p = ps_alloc(m);
	CHECK_MSG(p != NULL, "ps_alloc failed (errno %d) instead of waiting for the section",
		  errno);
	CHECK_MSG(atomic_load_explicit(&r.released, memory_order_acquire),
		  "an object came back while the section that holds every free back still ran");
	test_join(rel);
	s = mstats(m);
	CHECK_EQ(s.slabs, 2); /* waited: never past the limit */
	ps_free(m, p);
	ps_mem_reclaim(m);

	/* 3. the section outlasts limit_wait_ms: ENOMEM when the time is up */
	ps_mem_destroy(m);
	c.limit_wait_ms = 100;
	m = ps_mem_create(ps, 200, &c);
	CHECK(m != NULL);
	n = fill(m, objs, MAX, &err);
	holder_do(&h, HOLD_ENTER);
	for (size_t i = 0; i < n; i++)
		ps_free(m, objs[i]);
	t0 = test_now_ns();
	errno = 0;
	CHECK(ps_alloc(m) == NULL);
	CHECK_EQ_I(errno, ENOMEM);
	uint64_t waited = test_now_ns() - t0;
	CHECK_MSG(waited >= 90000000ull, "gave up after %" PRIu64 " ns, limit_wait_ms is 100",
		  waited);
	holder_do(&h, HOLD_EXIT);
	holder_stop(&h, HOLD_QUIT);

	/* 4. inside the caller's own section, which holds its own frees back: EDEADLK at
	 * once, not after waiting out limit_wait_ms */
	ps_mem_destroy(m);
	c.limit_wait_ms = WAIT_MS;
	m = ps_mem_create(ps, 200, &c);
	CHECK(m != NULL);
	n = fill(m, objs, MAX, &err);
	CHECK_EQ_I(err, ENOMEM);
	ps_enter(ps);
	for (size_t i = 0; i < n; i++)
		ps_free(m, objs[i]);
	t0 = test_now_ns();
	errno = 0;
	CHECK(ps_alloc(m) == NULL);
	CHECK_EQ_I(errno, EDEADLK);
	CHECK_MSG(test_now_ns() - t0 < WAIT_MS / 2 * 1000000ull, "waited inside its own section");
	ps_exit(ps);
	ps_mem_reclaim(m);
	p = ps_alloc(m);
	CHECK(p != NULL);
	ps_free(m, p);
	ps_mem_destroy(m);
}

PS_MEM_TEST_MAIN("limit", test_limit_wait)
