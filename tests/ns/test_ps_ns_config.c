/*
 * tests/ns/test_ps_ns_config.c - <tsync/ps_ns.h>'s configuration (ps_ns_create, struct
 * ps_ns_config): every invalid field is refused, and the extreme id spaces work: 1 bit (two
 * ids), 2^40 and 2^60 ids used near their top.
 */
#include "ps_ns_test.h"

/* ---- configuration ------------------------------------------------------------------ */
static bool dummy_mem_grace(struct ps_mem *m, void *obj, tsync_tick_t t, void *arg)
{
	(void)m, (void)obj, (void)t, (void)arg;
	return true;
}

#define CHECK_CREATE_FAILS(size, cfgp, err)                                   \
	do {                                                                  \
		errno = 0;                                                    \
		struct ps_ns *bad_ = ps_ns_create(PS, (size), (cfgp));        \
		CHECK_MSG(bad_ == NULL, "ps_ns_create(%s) succeeded", #cfgp); \
		CHECK_EQ_I(errno, (err));                                     \
	} while (0)

static void test_config(void)
{
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	CHECK_CREATE_FAILS(0, NULL, EINVAL);
	CHECK_CREATE_FAILS(0, &c, EINVAL);
	c.size = 0;
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	c.size = 3;
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	static const unsigned bad_bits[] = {61, 62, 64, 65, 1000};
	for (size_t i = 0; i < sizeof bad_bits / sizeof bad_bits[0]; i++) {
		c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
		c.id_bits = bad_bits[i];
		CHECK_CREATE_FAILS(16, &c, EINVAL);
	}
	/* max_order above id_bits, above PS_NS_ORDER_MAX */
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.id_bits = 4;
	c.max_order = 5;
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.max_order = PS_NS_ORDER_MAX + 1; /* id_bits default 32 */
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.id_bits = 1;
	c.max_order = 2;
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	/* unknown policies */
	static const int bad_pol[] = {2, 3, -1, 1000};
	for (size_t i = 0; i < sizeof bad_pol / sizeof bad_pol[0]; i++) {
		c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
		c.id_policy = bad_pol[i];
		CHECK_CREATE_FAILS(16, &c, EINVAL);
	}
	/* an object allocator configuration with its own grace hook, or a bad one */
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.grace_fn = dummy_mem_grace;
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.mem = &mc;
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	mc = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	mc.align = 3;
	CHECK_CREATE_FAILS(16, &c, EINVAL);
	mc = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	mc.size = 1;
	CHECK_CREATE_FAILS(16, &c, EINVAL);

	/* defaults */
	struct ps_ns *ns = ps_ns_create(PS, 40, NULL);
	CHECK(ns != NULL);
	CHECK(ps_ns_ps(ns) == PS);
	CHECK_EQ(ps_ns_capacity(ns), (uint64_t)1 << 32);
	CHECK_EQ(ps_ns_obj_size(ns), 40);
	struct ps_mem *m = ps_ns_mem(ns);
	CHECK(m != NULL);
	CHECK(ps_mem_ps(m) == PS);
	CHECK_GE(ps_mem_obj_size(m), 40);
	/* the default max_order is min(10, id_bits): 1024 accepted, 1025 not */
	uint64_t base;
	void **objs = calloc(1025, sizeof *objs);
	CHECK(objs != NULL);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 1025, &base, objs), -1, EINVAL);
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 1024, &base, objs), 0);
	CHECK_EQ(base % 1024, 0);
	for (size_t i = 0; i < 1024; i++)
		ps_ns_free(ns, objs[i]);
	free(objs);
	struct ps_ns_stats s;
	CHECK_ERRNO(ps_ns_stats(NULL, &s), -1, EINVAL);
	CHECK_ERRNO(ps_ns_stats(ns, NULL), -1, EINVAL);
	ps_ns_free(ns, NULL); /* ignored */
	ps_ns_destroy(ns);
	ps_ns_destroy(NULL); /* ignored */

	/* a valid object allocator configuration is taken */
	mc = (struct ps_mem_config)PS_MEM_CONFIG_INIT;
	mc.cache_size = 4;
	mc.reclaim_batch = 2;
	mc.slab_size = 4096;
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.mem = &mc;
	c.id_bits = 8;
	ns = ps_ns_create(PS, 24, &c);
	CHECK(ns != NULL);
	CHECK_EQ(ps_mem_slab_size(ps_ns_mem(ns)), 4096);
	uint64_t id;
	for (int i = 0; i < 100; i++) {
		void *o = ps_ns_alloc(ns, &id);
		CHECK(o != NULL);
		ps_ns_free(ns, o);
	}
	ps_ns_destroy(ns);

	/* the valid extremes: max_order = id_bits = 4, max_order 20 */
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.id_bits = 4;
	c.max_order = 4;
	ns = ps_ns_create(PS, 8, &c);
	CHECK(ns != NULL);
	void *o16[16];
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 16, &base, o16), 0);
	CHECK_EQ(base, 0);
	for (int i = 0; i < 16; i++)
		ps_ns_free(ns, o16[i]);
	ps_ns_destroy(ns);
	c = (struct ps_ns_config)PS_NS_CONFIG_INIT;
	c.max_order = PS_NS_ORDER_MAX;
	ns = ps_ns_create(PS, 8, &c);
	CHECK(ns != NULL);
	ps_ns_destroy(ns);
}

/* id_bits 1: two ids. */
static void test_bits1(void)
{
	struct ps_ns *ns = mk_ns(1, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	CHECK_EQ(ps_ns_capacity(ns), 2);
	uint64_t a, b, id;
	struct uobj *oa = alloc_pub(ns, &a), *ob = alloc_pub(ns, &b);
	CHECK(a != b && a < 2 && b < 2);
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	void *objs[3];
	uint64_t base;
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 2, &base, objs), -1, ENOSPC);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 3, &base, objs), -1, EINVAL);
	CHECK_AT_FAILS(ns, 2, ERANGE);
	CHECK_AT_FAILS(ns, a, EEXIST);
	CHECK(lookup(ns, a) == oa && lookup(ns, b) == ob);
	ps_ns_free(ns, oa);
	ps_ns_free(ns, ob);
	drain(ns);
	/* both ids came back; whether the extent of 2 can be had again depends on whether
	 * they returned as singles (no coalescing): take them as singles */
	oa = alloc_pub(ns, &a);
	ob = alloc_pub(ns, &b);
	CHECK(a != b);
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	ps_ns_free(ns, oa);
	ps_ns_free(ns, ob);
	ps_ns_destroy(ns);

	/* a fresh 2-id space hands out its one extent of 2 */
	ns = mk_ns(1, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 2, &base, objs), 0);
	CHECK_EQ(base, 0);
	CHECK_EQ(ps_ns_id(ns, objs[0]), 0);
	CHECK_EQ(ps_ns_id(ns, objs[1]), 1);
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	CHECK_AT_FAILS(ns, 0, EEXIST);
	CHECK_AT_FAILS(ns, 1, EEXIST);
	ps_ns_destroy(ns); /* with both ids reserved */
}

/* id_bits 60 and 40: ids near the top of the space. */
static void test_large(unsigned bits)
{
	struct ps_ns *ns = mk_ns(bits, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	const uint64_t cap = (uint64_t)1 << bits;
	CHECK_EQ(ps_ns_capacity(ns), cap);
	struct ps_ns_stats s0 = nstats(ns);
	const uint64_t ids[] = {cap - 1, cap - 2, cap / 2, cap - 513, 12345};
	struct uobj *o[5];
	for (int i = 0; i < 5; i++) {
		o[i] = ps_ns_alloc_at(ns, ids[i]);
		CHECK_MSG(o[i] != NULL, "alloc_at(%" PRIu64 ") in a %u-bit space: errno %d", ids[i],
			  bits, errno);
		CHECK_EQ(ps_ns_id(ns, o[i]), ids[i]);
		CHECK(lookup(ns, ids[i]) == NULL); /* reserved */
		o[i]->id = ids[i];
		ps_ns_publish(ns, o[i]);
		CHECK(lookup(ns, ids[i]) == o[i]);
	}
	CHECK_AT_FAILS(ns, cap, ERANGE);
	CHECK_AT_FAILS(ns, cap + 1, ERANGE);
	CHECK_AT_FAILS(ns, UINT64_MAX, ERANGE);
	CHECK_AT_FAILS(ns, cap - 1, EEXIST);
	errno = 0;
	CHECK(lookup(ns, cap) == NULL);
	CHECK_EQ_I(errno, ERANGE);
	errno = 0;
	CHECK(lookup(ns, UINT64_MAX) == NULL);
	CHECK_EQ_I(errno, ERANGE);
	CHECK(lookup(ns, cap - 3) == NULL);
	/* a sparse space costs a path of trie nodes per used region, not the space */
	unsigned height = (bits + PS_NS__FANOUT_SHIFT - 1) / PS_NS__FANOUT_SHIFT;
	struct ps_ns_stats s = nstats(ns);
	CHECK_MSG(s.trie_nodes - s0.trie_nodes <= 5u * height,
		  "%" PRIu64 " trie nodes for 5 ids in a %u-bit space", s.trie_nodes, bits);
	/* LOWEST: a fresh single is the lowest free id */
	uint64_t id;
	struct uobj *z = alloc_pub(ns, &id);
	CHECK_EQ(id, 0);
	/* an extent in a sparse space */
	void *eo[1024];
	uint64_t base;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 1024, &base, eo), 0);
	CHECK_EQ(base % 1024, 0);
	CHECK(base + 1023 < cap);
	for (int i = 0; i < 1024; i++)
		CHECK(base + (uint64_t)i != 12345 && base + (uint64_t)i != 0);
	/* iteration finds the ids at the top (and does not walk the empty space) */
	ps_enter(PS);
	uint64_t it = cap / 2 + 1;
	void *n = ps_ns_next(ns, &it);
	CHECK(n == o[3]);
	CHECK_EQ(it, cap - 513);
	it++;
	CHECK(ps_ns_next(ns, &it) == o[1]);
	CHECK_EQ(it, cap - 2);
	it++;
	CHECK(ps_ns_next(ns, &it) == o[0]);
	CHECK_EQ(it, cap - 1);
	it++;
	CHECK(ps_ns_next(ns, &it) == NULL);
	ps_exit(PS);
	for (int i = 0; i < 5; i++)
		ps_ns_free(ns, o[i]);
	ps_ns_free(ns, z);
	for (int i = 0; i < 1024; i++)
		ps_ns_free(ns, eo[i]);
	drain(ns);
	for (int i = 0; i < 5; i++) {
		o[i] = at_pub(ns, ids[i]);
		ps_ns_free(ns, o[i]);
	}
	ps_ns_destroy(ns);
}

static void test_large40(void)
{
	test_large(40);
}

static void test_large60(void)
{
	test_large(60);
}

TEST_CASES_MAIN(ps_ns_test_main, {"config", test_config}, {"bits1", test_bits1},
		{"large40", test_large40}, {"large60", test_large60})
