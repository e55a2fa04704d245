/*
 * tests/ns/test_ps_ns_policy.c - <tsync/ps_ns.h>'s id policies, as far as the header
 * promises them: PS_NS_ID_LOWEST hands out the lowest free id, PS_NS_ID_CYCLIC goes round
 * the space (with id caches of 0, 1 and 4).
 */
#include "ps_ns_test.h"

/* ---- policies ----------------------------------------------------------------------- */
static void test_lowest(void)
{
	struct ps_ns *ns = mk_ns(12, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	struct uobj *o[10];
	for (uint64_t i = 0; i < 10; i++) {
		uint64_t id;
		o[i] = alloc_pub(ns, &id);
		CHECK_EQ(id, i);
	}
	ps_ns_free(ns, o[3]);
	drain(ns);
	/* id 3 is free again: it is either in our cache (then our next allocation, the
	 * lowest of our cache, is 3) or in the pool (then a fresh thread's refill takes the
	 * lowest free ids of the pool before never-used ones, and its first id is 3) */
	struct holder h;
	holder_start(&h, PS);
	struct free_arg fa = {ns, NULL, 0, 0};
	h.fn = call_alloc;
	h.arg = &fa;
	holder_do(&h, HOLD_CALL);
	CHECK(fa.obj != NULL);
	uint64_t mine;
	struct uobj *x = alloc_pub(ns, &mine);
	CHECK_NE(mine, fa.id);
	CHECK_MSG(mine == 3 || fa.id == 3,
		  "LOWEST: after id 3 of 0..9 was freed and reclaimed, this thread got %" PRIu64
		  " and a fresh thread %" PRIu64,
		  mine, fa.id);
	CHECK(mine >= 10 || mine == 3);
	CHECK(fa.id >= 10 || fa.id == 3);
	h.fn = call_free;
	holder_do(&h, HOLD_CALL);
	holder_stop(&h, HOLD_QUIT);
	ps_ns_free(ns, x);
	for (int i = 0; i < 10; i++)
		if (i != 3)
			ps_ns_free(ns, o[i]);
	ps_ns_destroy(ns);

	/* one thread: two ids freed in increasing order come back; with no refill in
	 * between, two allocations take the lowest of the caller's cache each time, so they
	 * increase (3 then 5 if the ids came back to this thread's cache, two higher cached
	 * ids otherwise - never 5 then 3) */
	ns = mk_ns(12, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	for (uint64_t i = 0; i < 10; i++)
		o[i] = alloc_pub(ns, NULL);
	ps_ns_free(ns, o[3]);
	ps_ns_free(ns, o[5]);
	drain(ns);
	uint64_t a1, a2;
	struct uobj *x1 = alloc_pub(ns, &a1), *x2 = alloc_pub(ns, &a2);
	CHECK_MSG(a1 < a2,
		  "LOWEST: after ids 3 and 5 were freed (in that order), this thread "
		  "allocated %" PRIu64 " before %" PRIu64 ": not the lowest of its cache",
		  a1, a2);
	ps_ns_free(ns, x1);
	ps_ns_free(ns, x2);
	for (int i = 0; i < 10; i++)
		if (i != 3 && i != 5)
			ps_ns_free(ns, o[i]);
	ps_ns_destroy(ns);
}

static void test_cyclic(unsigned cache)
{
	const unsigned bits = 6;
	const uint64_t cap = 64;
	struct ps_ns *ns = mk_ns(bits, 0, PS_NS_ID_CYCLIC, cache, NULL, NULL);
	/* first cycle: never-used ids in increasing order, although freed ids come back
	 * (and are reclaimed) all along */
	for (uint64_t i = 0; i < cap; i++) {
		uint64_t id;
		struct uobj *o = alloc_pub(ns, &id);
		CHECK_MSG(id == i, "CYCLIC (cache %u): allocation %" PRIu64 " got id %" PRIu64,
			  cache, i, id);
		ps_ns_free(ns, o);
		if (i % 4 == 3)
			drain(ns);
	}
	drain(ns);
	/* the space wrapped: the freed ids, oldest first */
	struct uobj *o[64];
	for (uint64_t i = 0; i < cap; i++) {
		uint64_t id;
		o[i] = alloc_pub(ns, &id);
		CHECK_MSG(id == i,
			  "CYCLIC (cache %u): after the wrap, allocation %" PRIu64
			  " got id %" PRIu64 " (freed in order 0..63)",
			  cache, i, id);
	}
	uint64_t id;
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	/* free in a scrambled order: they come back in that order */
	uint64_t order[64];
	for (uint64_t i = 0; i < cap; i++)
		order[i] = (i * 37) % cap;
	for (uint64_t i = 0; i < cap; i++)
		ps_ns_free(ns, o[order[i]]);
	drain(ns);
	for (uint64_t i = 0; i < cap; i++) {
		o[i] = alloc_pub(ns, &id);
		CHECK_MSG(id == order[i],
			  "CYCLIC (cache %u): reuse %" PRIu64 " got id %" PRIu64 ", freed %" PRIu64
			  "th was %" PRIu64,
			  cache, i, id, i, order[i]);
	}
	for (uint64_t i = 0; i < cap; i++)
		ps_ns_free(ns, o[i]);
	ps_ns_destroy(ns);
}

static void test_cyclics(void)
{
	test_cyclic(0);
	test_cyclic(4);
	test_cyclic(1);
}

TEST_CASES_MAIN(ps_ns_test_main, {"lowest", test_lowest}, {"cyclic", test_cyclics})
