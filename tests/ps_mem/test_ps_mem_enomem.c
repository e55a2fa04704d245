/*
 * tests/ps_mem/test_ps_mem_enomem.c - ENOMEM (<tsync/ps_mem.h>, ps_alloc): under an
 * address-space limit (a child process, release builds only) ps_alloc fails with ENOMEM,
 * the counters stay right, and a free makes the next allocation succeed; a double ps_free
 * aborts in builds without NDEBUG.
 */
#include "ps_mem_test.h"

static void enomem_child(void *arg)
{
	struct ps *ps = arg;
	limit_address_space();
	void **keep;
	struct ps_mem *m = child_mem(ps, NULL, &keep);
	size_t n = fill_until_null(m, keep);
	if (errno != ENOMEM)
		_exit(13);
	struct ps_mem_stats s;
	if (ps_mem_stats(m, &s) != 0 || s.allocs != n || s.in_use != n)
		_exit(14);
	/* freeing makes room again */
	for (size_t i = 0; i < 100 && i < n; i++)
		ps_free(m, keep[--n]);
	ps_mem_reclaim(m);
	void *p = ps_alloc(m);
	if (p == NULL)
		_exit(15);
	ps_free(m, p);
	_exit(0);
}

#ifndef NDEBUG
static void double_free(void *arg)
{
	struct ps_mem *m = ps_mem_create(arg, 32, NULL);
	void *p = ps_alloc(m);
	ps_free(m, p);
	ps_free(m, p); /* documented to abort in builds without NDEBUG */
}
#endif

static void test_enomem(struct ps *ps)
{
#ifndef NDEBUG
	if (test_can_fork())
		CHECK_MSG(test_dies(double_free, ps), "a double ps_free did not abort");
#endif
	if (TEST_ASAN || TEST_TSAN || !test_can_fork()) {
		test_log("ps_mem: ENOMEM test skipped under sanitizers");
		return;
	}
	int st = test_in_child(enomem_child, ps);
	if (st == 77) {
		test_log("ps_mem: ENOMEM test skipped (no RLIMIT_AS)");
		return;
	}
	CHECK_MSG(st == 0,
		  "ENOMEM child failed with status %d (12: no ENOMEM before 1M objects, "
		  "13: NULL with errno != ENOMEM, 14: bad stats, 15: no alloc after free)",
		  st);
}

PS_MEM_TEST_MAIN("enomem", test_enomem)
