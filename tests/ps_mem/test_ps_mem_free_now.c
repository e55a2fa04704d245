/*
 * tests/ps_mem/test_ps_mem_free_now.c - the immediate free (ps_free_now, <tsync/ps_mem.h>;
 * Prudence (ASPLOS 2016) §4's "two frees"): reused at once, counted, and every bad free
 * aborts with a one-line diagnostic that names the call.
 */
#include "ps_mem_test.h"

/* ---- the immediate free (Prudence (ASPLOS 2016) §4: "two frees")
 * ------------------------------------ */
struct bad_free {
	struct ps *ps;
	int kind;
};

static void bad_free_now(void *arg)
{
	const struct bad_free *b = arg;
	struct ps_mem *m = ps_mem_create(b->ps, 32, NULL), *other = ps_mem_create(b->ps, 32, NULL);
	void *p = ps_alloc(m);
	switch (b->kind) {
	case 0: /* immediate, twice */
		ps_free_now(m, p);
		ps_free_now(m, p);
		break;
	case 1: /* deferred, then immediate */
		ps_free(m, p);
		ps_free_now(m, p);
		break;
	case 2: /* immediate, then deferred */
		ps_free_now(m, p);
		ps_free(m, p);
		break;
	case 3: /* an object of another ps_mem */ ps_free_now(other, p); break;
	case 4: /* a pointer no ps_mem handed out (glibc's chunk header precedes it) */
		ps_free(m, malloc(64));
		break;
	default: /* the same, immediately */ ps_free_now(m, malloc(64)); break;
	}
	_exit(0); /* not aborted: the test fails */
}

static void test_free_now(struct ps *ps)
{
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.accounting = PS_MEM_ACCOUNT_EXACT;
	struct ps_mem *m = ps_mem_create(ps, 48, &c);
	CHECK(m != NULL);
	/* Inside our own section, which holds every deferred free back: an immediately freed
	 * object is handed out again at once, a deferred one is not. */
	ps_enter(ps);
	void *a = ps_alloc(m);
	CHECK(a != NULL);
	ps_free_now(m, a);
	void *b = ps_alloc(m);
	CHECK_MSG(b == a, "an immediately freed object was not the next one handed out");
	ps_free(m, b);
	void *d = ps_alloc(m);
	CHECK_MSG(d != b, "a deferred free was reused inside the freeing thread's own section");
	ps_exit(ps);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.allocs, 3);
	CHECK_EQ(s.frees, 1);
	CHECK_EQ(s.frees_now, 1);
	CHECK_EQ(s.in_use, 1);
	CHECK_EQ(s.live, 1);
	CHECK_EQ(s.pending, 1);
	ps_free_now(m, d);
	ps_free_now(m, NULL); /* ignored */
	s = mstats(m);
	CHECK_EQ(s.frees_now, 2);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.peak_live, 1);      /* the immediate free ended a before b began */
	CHECK_EQ(s.peak_footprint, 2); /* d live while b was pending */
	ps_mem_destroy(m);

	/* bad frees abort with a diagnostic naming the call and the fault (under ASan the
	 * header read of a malloc'd pointer is itself the report) */
	static const char *const say[] = {"ps_free_now: double free",
					  "ps_free_now: double free",
					  "ps_free: double free",
					  "ps_free_now: 0x",
					  "ps_free: 0x",
					  "ps_free_now: 0x"};
	if (test_can_fork())
		for (int k = 0; k < 6; k++) {
			struct bad_free bf = {ps, k};
			const char *want = TEST_ASAN && k >= 4 ? "AddressSanitizer" : say[k];
			CHECK_MSG(test_dies_saying(bad_free_now, &bf, want),
				  "bad free %d did not abort saying \"%s\"", k, want);
		}
}

PS_MEM_TEST_MAIN("free_now", test_free_now)
