/*
 * tests/ps_mem/test_ps_kmem.c - <tsync/ps_kmem.h>: configuration errors, the class
 * sequence and lookup, every size from 1 byte to max_size in a class that holds it,
 * distinct writable objects, reuse only after quiescence (deferred) or at once
 * (immediate), summed statistics, foreign frees abort, and large objects' slabs
 * returned to the system once reclaimed.
 */
#include <tsync/tsync.h>
#include <tsync/ps_kmem.h>

#include "ps_mem_test.h"

#define CHECK_KMEM_CREATE_FAILS(ps, cfgp)                                              \
	do {                                                                           \
		errno = 0;                                                             \
		CHECK_MSG(ps_kmem_create((ps), (cfgp)) == NULL, "%s accepted", #cfgp); \
		CHECK_EQ_I(errno, EINVAL);                                             \
	} while (0)

static void test_invalid(struct ps *ps)
{
	struct ps_kmem_config c = PS_KMEM_CONFIG_INIT;
	CHECK_KMEM_CREATE_FAILS(NULL, NULL);
	const double bad_f[] = {1.0, 0.5, 4.5, -2.0};
	for (size_t i = 0; i < sizeof bad_f / sizeof bad_f[0]; i++) {
		c = (struct ps_kmem_config)PS_KMEM_CONFIG_INIT;
		c.growth_factor = bad_f[i];
		CHECK_KMEM_CREATE_FAILS(ps, &c);
	}
	c = (struct ps_kmem_config)PS_KMEM_CONFIG_INIT;
	c.min_size = 4096;
	c.max_size = 1024;
	CHECK_KMEM_CREATE_FAILS(ps, &c);
	const unsigned bad_max[] = {1, PS_KMEM_MAX_CLASSES + 1};
	for (size_t i = 0; i < sizeof bad_max / sizeof bad_max[0]; i++) {
		c = (struct ps_kmem_config)PS_KMEM_CONFIG_INIT;
		c.max_classes = bad_max[i];
		CHECK_KMEM_CREATE_FAILS(ps, &c);
	}
	/* a slow factor: the sequence stops at max_classes - 1, then max_size */
	c = (struct ps_kmem_config)PS_KMEM_CONFIG_INIT;
	c.min_size = 8;
	c.max_size = (size_t)1 << 20;
	c.growth_factor = 1.01;
	c.max_classes = 40;
	struct ps_kmem *k = ps_kmem_create(ps, &c);
	CHECK(k != NULL);
	CHECK_EQ(ps_kmem_nclasses(k), 40);
	CHECK_EQ(ps_kmem_class_size(k, 39), (size_t)1 << 20);
	CHECK_EQ(ps_kmem_class_size(k, 38), 8 + 38 * 8); /* 1.01x rounds up to the next 8 */
	ps_kmem_destroy(k);
	/* a template ps_mem refuses */
	c = (struct ps_kmem_config)PS_KMEM_CONFIG_INIT;
	c.mem.align = 3;
	CHECK_KMEM_CREATE_FAILS(ps, &c);
	CHECK_ERRNO(ps_kmem_stats(NULL, NULL), -1, EINVAL);
	ps_kmem_destroy(NULL);
}

static void test_classes(struct ps *ps)
{
	struct ps_kmem *k = ps_kmem_create(ps, NULL);
	CHECK(k != NULL);
	unsigned n = ps_kmem_nclasses(k);
	CHECK_GE(n, 20);
	CHECK_EQ(ps_kmem_class_size(k, 0), 16);
	CHECK_EQ(ps_kmem_class_size(k, n - 1), 64 * 1024);
	CHECK_EQ(ps_kmem_class_size(k, n), 0);
	CHECK(ps_kmem_class(k, n) == NULL);
	for (unsigned i = 1; i < n; i++) {
		size_t a = ps_kmem_class_size(k, i - 1), b = ps_kmem_class_size(k, i);
		CHECK_MSG(b > a && b % 8 == 0, "class %u: %zu after %zu", i, b, a);
		CHECK_MSG(i == n - 1 || (double)b <= (double)a * 1.25 + 16,
			  "class %u grows too fast: %zu after %zu", i, b, a);
	}
	CHECK_EQ_I(ps_kmem_class_of(k, 0), -1);
	CHECK_EQ_I(ps_kmem_class_of(k, 64 * 1024 + 1), -1);
	errno = 0;
	CHECK(ps_kmalloc(k, 64 * 1024 + 1) == NULL);
	CHECK_EQ_I(errno, EINVAL);
	errno = 0;
	CHECK(ps_kmalloc(k, 0) == NULL);
	CHECK_EQ_I(errno, EINVAL);
	/* every size: the smallest class that holds it, and an object that holds it */
	for (size_t sz = 1; sz <= 64 * 1024; sz += sz < 512 ? 1 : 61) {
		int i = ps_kmem_class_of(k, sz);
		CHECK(i >= 0);
		CHECK_GE(ps_kmem_class_size(k, (unsigned)i), sz);
		CHECK_MSG(i == 0 || ps_kmem_class_size(k, (unsigned)i - 1) < sz,
			  "size %zu: class %d is not the smallest that holds it", sz, i);
		unsigned char *p = ps_kmalloc(k, sz);
		CHECK(p != NULL);
		CHECK_GE(ps_kmem_usable_size(p), sz);
		CHECK_EQ(ps_kmem_usable_size(p), ps_kmem_class_size(k, (unsigned)i));
		CHECK(ps_mem_of(p) == ps_kmem_class(k, (unsigned)i));
		memset(p, 0xa5, ps_kmem_usable_size(p));
		ps_kfree_now(k, p);
	}
	ps_kmem_destroy(k);
}

/* ps_kmem_class_of against a linear search, for every size of a few sequences: sizes up
 * to 8 KiB take a lookup table, larger ones a binary search; the largest class
 * (max_size) need not be a multiple of 8. */
static void test_class_lookup(struct ps *ps)
{
	static const struct {
		size_t min, max;
		double f;
		unsigned maxc;
	} seq[] = {{0, 0, 0.0, 0},      {8, 1000, 1.25, 0},  {24, 20001, 2.0, 0},
		   {16, 8192, 1.07, 0}, {16, 9000, 1.25, 2}, {100, 100, 1.25, 0},
		   {8, 8191, 3.5, 0}};
	for (size_t q = 0; q < sizeof seq / sizeof seq[0]; q++) {
		struct ps_kmem_config c = PS_KMEM_CONFIG_INIT;
		c.min_size = seq[q].min;
		c.max_size = seq[q].max;
		c.growth_factor = seq[q].f;
		c.max_classes = seq[q].maxc;
		struct ps_kmem *k = ps_kmem_create(ps, &c);
		CHECK_MSG(k != NULL, "sequence %zu", q);
		unsigned n = ps_kmem_nclasses(k);
		size_t max = ps_kmem_class_size(k, n - 1);
		unsigned want = 0;
		for (size_t sz = 1; sz <= max; sz++) {
			while (ps_kmem_class_size(k, want) < sz)
				want++;
			int got = ps_kmem_class_of(k, sz);
			CHECK_MSG(got == (int)want, "sequence %zu, size %zu: class %d, expected %u",
				  q, sz, got, want);
		}
		CHECK_EQ_I(ps_kmem_class_of(k, max + 1), -1);
		CHECK_EQ_I(ps_kmem_class_of(k, 0), -1);
		CHECK_EQ_I(ps_kmem_class_of(k, (size_t)-1), -1);
		ps_kmem_destroy(k);
	}
}

static void test_reuse(struct ps *ps)
{
	struct ps_kmem *k = ps_kmem_create(ps, NULL);
	CHECK(k != NULL);
	/* distinct, writable objects of mixed sizes */
	enum { N = 2000 };
	unsigned char **p = calloc(N, sizeof *p);
	size_t *sz = calloc(N, sizeof *sz);
	CHECK(p && sz);
	uint64_t seed = test_seed(7);
	for (int i = 0; i < N; i++) {
		sz[i] = 1 + test_rand(&seed) % (i % 10 == 0 ? 64 * 1024 : 512);
		p[i] = ps_kmalloc(k, sz[i]);
		CHECK(p[i] != NULL);
		memset(p[i], i & 0xff, sz[i]);
	}
	for (int i = 0; i < N; i++)
		for (size_t b = 0; b < sz[i]; b += 97)
			CHECK_MSG(p[i][b] == (i & 0xff), "object %d overwritten", i);
	struct ps_mem_stats s;
	CHECK_EQ(ps_kmem_stats(k, &s), 0);
	CHECK_EQ(s.allocs, N);
	CHECK_EQ(s.in_use, N);
	CHECK_GE(s.live_bytes, N); /* at least a byte each */

	/* deferred: not reused while a section that began before the free runs */
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_ENTER);
	for (int i = 0; i < N; i++)
		ps_kfree(k, p[i]);
	for (int i = 0; i < N; i++) {
		void *q = ps_kmalloc(k, sz[i]);
		CHECK(q != NULL);
		for (int j = 0; j < N; j++)
			if (i % 97 == 0)
				CHECK_MSG(q != p[j], "a deferred free was reused inside a section");
		ps_kfree_now(k, q);
	}
	holder_do(&h, HOLD_EXIT);
	holder_stop(&h, HOLD_QUIT);
	ps_kmem_reclaim(k);
	CHECK_EQ(ps_kmem_stats(k, &s), 0);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.pending, 0);
	CHECK_EQ(s.frees, N);
	CHECK_EQ(s.frees_now, N);
	/* immediate: the next allocation of the class */
	void *a = ps_kmalloc(k, 100);
	ps_kfree_now(k, a);
	CHECK(ps_kmalloc(k, 100) == a);
	ps_kfree_now(k, a);
	free(p);
	free(sz);
	ps_kmem_destroy(k);
}

/* Large objects have one-object slabs: once reclaimed, their memory goes back to the
 * pool and the pool keeps one slab per class. */
static void test_large_returned(struct ps *ps)
{
	struct ps_kmem_config c = PS_KMEM_CONFIG_INIT;
	c.max_size = 256 * 1024;
	struct ps_kmem *k = ps_kmem_create(ps, &c);
	CHECK(k != NULL);
	enum { N = 64 };
	void *p[N];
	for (int i = 0; i < N; i++)
		CHECK((p[i] = ps_kmalloc(k, 200 * 1024)) != NULL);
	struct ps_mem *m = ps_mem_of(p[0]);
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(m, &s), 0);
	CHECK_EQ(s.slabs, N);
	/* a slab of its own, under two pages more than the class size */
	CHECK_LE(s.slab_bytes, (uint64_t)N * (ps_kmem_usable_size(p[0]) + 8192));
	CHECK_EQ(ps_mem_slab_objects(m), 1);
	CHECK_EQ(ps_mem_slab_size(m) % 4096, 0);
	for (int i = 0; i < N; i++)
		ps_kfree(k, p[i]);
	/* each reclaim unmaps at most 16 excess slabs (ps_mem's trim_max) */
	for (int i = 0; i <= N / 16; i++)
		ps_kmem_reclaim(k);
	CHECK_EQ(ps_mem_stats(m, &s), 0);
	CHECK_EQ(s.in_use, 0);
	CHECK_EQ(s.cached, 0);
	CHECK_EQ(s.slabs, 1);
	ps_kmem_destroy(k);
}

struct foreign {
	struct ps *ps;
	int now, malloced;
};

static void free_foreign(void *arg)
{
	const struct foreign *f = arg;
	struct ps_kmem *a = ps_kmem_create(f->ps, NULL), *b = ps_kmem_create(f->ps, NULL);
	void *p = f->malloced ? malloc(100) : ps_kmalloc(a, 100);
	if (f->now < 0) { /* a double deferred free */
		ps_kfree(a, p);
		ps_kfree(a, p);
		_exit(0);
	}
	if (f->now)
		ps_kfree_now(b, p);
	else
		ps_kfree(b, p);
	_exit(0); /* not aborted: the test fails */
}

static void test_kmem(struct ps *ps)
{
	test_invalid(ps);
	test_classes(ps);
	test_class_lookup(ps);
	test_reuse(ps);
	test_large_returned(ps);
	/* another ps_kmem's object, and a pointer from malloc: one-line diagnostics naming
	 * the call (under ASan the header read of a malloc'd pointer is itself the report) */
	if (test_can_fork())
		for (int k = 0; k < 4; k++) {
			struct foreign f = {ps, k & 1, k >> 1};
			const char *want = f.malloced && TEST_ASAN ? "AddressSanitizer"
					   : f.now                 ? "ps_kfree_now: 0x"
								   : "ps_kfree: 0x";
			CHECK_MSG(test_dies_saying(free_foreign, &f, want),
				  "a foreign %s free did not abort saying \"%s\"",
				  f.now ? "immediate" : "deferred", want);
		}
	if (test_can_fork()) {
		struct foreign f = {ps, -1, 0};
		CHECK_MSG(test_dies_saying(free_foreign, &f, "ps_kfree: double free"),
			  "a double ps_kfree did not abort naming ps_kfree");
	}
}

PS_MEM_TEST_MAIN("kmem", test_kmem)
