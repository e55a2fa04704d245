/*
 * tests/ps_mem/test_ps_mem_config.c - configuration errors (<tsync/ps_mem.h>, ps_mem_create
 * and struct ps_mem_config): every invalid size, alignment, slab size and wait is refused
 * with EINVAL (absurd sizes with EINVAL or ENOMEM, never a wrapped-around allocator), the
 * valid extremes are accepted, ps_mem_stats and ps_free reject NULL.
 */
#include "ps_mem_test.h"

static void test_invalid(struct ps *ps)
{
	struct ps_mem_config c;
	CHECK_CREATE_FAILS(ps, 0, NULL, EINVAL);
	c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	c.size = 0;
	CHECK_CREATE_FAILS(ps, 32, &c, EINVAL);
	c.size = 3;
	CHECK_CREATE_FAILS(ps, 32, &c, EINVAL);
	static const size_t bad_align[] = {3, 24, 48, 8192, 1u << 20};
	for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
		c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
		c.align = bad_align[i];
		CHECK_CREATE_FAILS(ps, 32, &c, EINVAL);
	}
	static const size_t bad_slab[] = {2048,  5000,         4095,
					  65537, 3 * 4096 + 8, ((size_t)1 << 31) + 4096};
	for (size_t i = 0; i < sizeof bad_slab / sizeof bad_slab[0]; i++) {
		c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
		c.slab_size = bad_slab[i];
		CHECK_CREATE_FAILS(ps, 32, &c, EINVAL);
	}
	c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	c.limit_wait_ms = -2;
	CHECK_CREATE_FAILS(ps, 32, &c, EINVAL);
	/* an object that does not fit an explicit slab size */
	c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	c.slab_size = 4096;
	CHECK_CREATE_FAILS(ps, 8192, &c, EINVAL);
	CHECK_CREATE_FAILS(ps, 4096, &c, EINVAL); /* the header has to fit too */
	/* absurd sizes: EINVAL (or ENOMEM), never a wrapped-around small allocator */
	errno = 0;
	CHECK(ps_mem_create(ps, SIZE_MAX / 2, NULL) == NULL);
	CHECK_MSG(errno == EINVAL || errno == ENOMEM, "errno %d", errno);
	errno = 0;
	CHECK(ps_mem_create(ps, SIZE_MAX - 8, NULL) == NULL);
	CHECK_MSG(errno == EINVAL || errno == ENOMEM, "errno %d", errno);

	/* the valid extremes are accepted */
	c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	c.align = 4096;
	struct ps_mem *m = ps_mem_create(ps, 1, &c);
	CHECK(m != NULL);
	ps_mem_destroy(m);
	c = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	c.slab_size = 4096;
	m = ps_mem_create(ps, 200, &c);
	CHECK(m != NULL);
	ps_mem_destroy(m);

	struct ps_mem_stats s;
	m = ps_mem_create(ps, 16, NULL);
	CHECK(m != NULL);
	CHECK_ERRNO(ps_mem_stats(NULL, &s), -1, EINVAL);
	CHECK_ERRNO(ps_mem_stats(m, NULL), -1, EINVAL);
	ps_free(m, NULL); /* ignored */
	ps_mem_destroy(m);
	ps_mem_destroy(NULL);
}

PS_MEM_TEST_MAIN("config", test_invalid)
