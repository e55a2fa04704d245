/*
 * tests/thread/test_thread_capacity.c - registry capacity: tsync_thread_set_capacity()
 * before the first registration (EINVAL for bad values, EBUSY afterwards), EAGAIN from
 * explicit registration past capacity (never a crash), an abort with a diagnostic from
 * lazy registration past capacity, and a freed slot being usable again.
 *
 *   test_thread_capacity        set the capacity to 4 with tsync_thread_set_capacity
 *   test_thread_capacity env    expect the capacity from TSYNC_MAX_THREADS
 *   test_thread_capacity late   raise the capacity after ps_create/ps_mem_create (which
 *                               size their per-thread records by it) but before any
 *                               registration: refused with EBUSY, or else the instances
 *                               created before must work with ids beyond the old capacity
 *                               (never memory corruption)
 */
#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

static struct ps *ps;

static void *lazy_enter(void *arg)
{
	(void)arg;
	ps_enter(ps); /* registry full: must abort with a diagnostic, not corrupt memory */
	ps_exit(ps);
	return NULL;
}

static void child_lazy_past_capacity(void *arg)
{
	(void)arg;
	pthread_t t = test_spawn(lazy_enter, NULL);
	test_join(t);
	/* reaching this point means ps_enter returned with no id to use */
	fprintf(stderr, "ps_enter in a thread past capacity returned\n");
	_exit(0);
}

static struct ps_mem *late_mem;

static void late_alloc_free(void *arg)
{
	(void)arg;
	ps_enter(ps);
	void *p = ps_alloc(late_mem);
	CHECK(p != NULL);
	memset(p, 0x5a, 32);
	ps_free(late_mem, p);
	ps_exit(ps);
}

/* Capacity raised after instances were created, before any thread registered. */
static int test_late(void)
{
	CHECK_EQ(tsync_thread_set_capacity(64), 0);
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	late_mem = ps_mem_create(ps, 32, NULL);
	CHECK(late_mem != NULL);
	errno = 0;
	int rc = tsync_thread_set_capacity(256);
	int err = errno;
	unsigned cap = tsync_thread_capacity();
	test_log("thread_capacity: set_capacity(256) after ps_create: rc %d errno %d, capacity %u",
		 rc, err, cap);
	if (rc != 0)
		CHECK_EQ_I(err, EBUSY);
	CHECK_EQ(cap, rc == 0 ? 256u : 64u);
	/* use every id up to min(capacity, 100) on the instances created before */
	unsigned n = cap < 100 ? cap : 100;
	static struct holder h[100];
	CHECK_EQ(tsync_thread_register(), 0);
	for (unsigned i = 0; i + 1 < n; i++) {
		holder_start(&h[i], ps);
		holder_do(&h[i], HOLD_REGISTER);
		CHECK_EQ_I(h[i].ret, 0);
		h[i].fn = late_alloc_free;
		holder_do(&h[i], HOLD_CALL);
		holder_do(&h[i], HOLD_ENTER);
	}
	CHECK_EQ(tsync_thread_high_water(), n);
	tsync_tick_t t = tsync_now_ordered();
	CHECK(!ps_quiesce(ps, t)); /* the holders are inside */
	for (unsigned i = 0; i + 1 < n; i++)
		holder_do(&h[i], HOLD_EXIT);
	CHECK(ps_quiesce(ps, t));
	for (unsigned i = 0; i + 1 < n; i++)
		holder_stop(&h[i], HOLD_QUIT);
	late_alloc_free(NULL);
	ps_mem_reclaim(late_mem);
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(late_mem, &s), 0);
	CHECK_EQ(s.allocs, n);
	CHECK_EQ(s.frees, n);
	ps_mem_destroy(late_mem);
	ps_destroy(ps);
	test_log("thread_capacity: late: ok (%u threads)", n);
	return 0;
}

int main(int argc, char **argv)
{
	test_watchdog(50); /* inside ctest's TIMEOUT (60 s): the watchdog's message is printed */
	if (argc > 1 && strcmp(argv[1], "late") == 0)
		return test_late();
	unsigned cap;
	if (argc > 1 && strcmp(argv[1], "env") == 0) {
		const char *e = getenv("TSYNC_MAX_THREADS");
		CHECK_MSG(e != NULL, "run with TSYNC_MAX_THREADS set");
		cap = (unsigned)strtoul(e, NULL, 10);
		CHECK_EQ(tsync_thread_capacity(), cap);
	} else {
		CHECK_ERRNO(tsync_thread_set_capacity(0), -1, EINVAL);
		CHECK_ERRNO(tsync_thread_set_capacity(TSYNC_THREADS_MAX + 1), -1, EINVAL);
		/* may change it until it is fixed (registration, ps_create/ps_mem_create, or
		 * a tsync_thread_capacity() query) */
		CHECK_EQ(tsync_thread_set_capacity(7), 0);
		CHECK_EQ(tsync_thread_set_capacity(4), 0);
		CHECK_EQ(tsync_thread_capacity(), 4); /* fixes it */
		CHECK_ERRNO(tsync_thread_set_capacity(5), -1, EBUSY);
		CHECK_EQ(tsync_thread_capacity(), 4);
		cap = 4;
	}
	CHECK(cap >= 2 && cap <= 16);
	ps = ps_create(NULL);
	CHECK(ps != NULL);

	CHECK_EQ(tsync_thread_register(), 0);
	CHECK_ERRNO(tsync_thread_set_capacity(8), -1, EBUSY);
	CHECK_EQ(tsync_thread_capacity(), cap);

	/* fill the registry: main + cap - 1 holders, each inside a section */
	struct holder h[16];
	for (unsigned i = 0; i + 1 < cap; i++) {
		holder_start(&h[i], ps);
		holder_do(&h[i], HOLD_REGISTER);
		CHECK_EQ_I(h[i].ret, 0);
		CHECK(h[i].id >= 0 && (unsigned)h[i].id < cap);
		holder_do(&h[i], HOLD_ENTER);
	}
	CHECK_EQ(tsync_thread_count(), cap);
	CHECK_LE(tsync_thread_high_water(), cap);

	/* one more: explicit registration fails with EAGAIN, repeatedly, without harm */
	struct holder x;
	holder_start(&x, ps);
	for (int k = 0; k < 3; k++) {
		holder_do(&x, HOLD_REGISTER);
		CHECK_EQ_I(x.ret, -1);
		CHECK_EQ_I(x.err, EAGAIN);
		holder_do(&x, HOLD_ID);
		CHECK_EQ_I(x.id, -1);
		CHECK_EQ_I(x.err, EAGAIN);
	}
	CHECK_EQ(tsync_thread_count(), cap);
	CHECK_LE(tsync_thread_high_water(), cap);
	/* unregistering an unregistered thread is EINVAL, still no harm */
	holder_do(&x, HOLD_UNREGISTER);
	CHECK_EQ_I(x.ret, -1);
	CHECK_EQ_I(x.err, EINVAL);

	/* lazy registration past capacity aborts (in a child process) */
	if (test_can_fork()) {
		int st = test_in_child(child_lazy_past_capacity, NULL);
		CHECK_MSG(st != 0, "lazy registration past capacity did not fail (status %d)", st);
		test_log("thread_capacity: lazy registration past capacity ended the child with "
			 "status %d (expected: abort = %d)",
			 st, 128 + SIGABRT);
	}

	/* a thread exits (inside its section): its id can be taken */
	int freed = h[0].id;
	holder_stop(&h[0], HOLD_QUIT);
	CHECK_EQ(tsync_thread_count(), cap - 1);
	holder_do(&x, HOLD_REGISTER);
	CHECK_EQ_I(x.ret, 0);
	CHECK_EQ_I(x.id, freed);
	CHECK_EQ(tsync_thread_count(), cap);
	/* and main's slot too, after an explicit unregister */
	int mid = tsync_thread_id();
	CHECK_EQ(tsync_thread_unregister(), 0);
	struct holder y;
	holder_start(&y, ps);
	holder_do(&y, HOLD_REGISTER);
	CHECK_EQ_I(y.ret, 0);
	CHECK_EQ_I(y.id, mid);
	/* main is now the one left out */
	CHECK_ERRNO(tsync_thread_register(), -1, EAGAIN);

	/* the sections of the holders do not outlive them */
	tsync_tick_t t = tsync_now_ordered();
	for (unsigned i = 1; i + 1 < cap; i++)
		holder_stop(&h[i], (i & 1) ? HOLD_PTHREAD_EXIT : HOLD_QUIT);
	holder_stop(&x, HOLD_QUIT);
	/* y outside, everyone else gone: quiescence of t is reachable */
	y.t = t;
	uint64_t dl = test_now_ns() + 30000000000ull; /* a hang, inside the watchdog */
	holder_do(&y, HOLD_QUIESCE);
	while (!y.ret) {
		CHECK_MSG(test_now_ns() < dl, "ps_quiesce never true after the holders exited");
		holder_do(&y, HOLD_QUIESCE);
	}
	holder_stop(&y, HOLD_QUIT);
	CHECK_EQ(tsync_thread_count(), 0);
	CHECK_EQ(tsync_thread_register(), 0);
	CHECK_EQ(tsync_thread_unregister(), 0);
	ps_destroy(ps);
	test_log("thread_capacity: ok (capacity %u)", cap);
	return 0;
}
