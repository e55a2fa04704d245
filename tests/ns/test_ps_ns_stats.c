/*
 * tests/ns/test_ps_ns_stats.c - <tsync/ps_ns.h>'s counters (struct ps_ns_stats): exact
 * after allocations, publishes, extents and frees, and the invariants of every quiet
 * snapshot.
 */
#include "ps_ns_test.h"

/* ---- counters ------------------------------------------------------------------------- */
static void test_stats(void)
{
	struct ps_ns *ns = mk_ns(12, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	struct ps_ns_stats s = nstats(ns);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.allocs, 0);
	CHECK_EQ(s.frees, 0);
	CHECK_EQ(s.extents, 0);
	struct uobj *o[5];
	for (int i = 0; i < 5; i++)
		o[i] = alloc_pub(ns, NULL);
	struct uobj *at = at_pub(ns, 1000);
	void *eo[3], *e1[1];
	uint64_t base, b1;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 3, &base, eo), 0);
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 1, &b1, e1), 0); /* a single: not an extent */
	s = nstats(ns);
	CHECK_EQ(s.allocs, 10);
	CHECK_EQ(s.live, 10);
	CHECK_EQ(s.frees, 0);
	CHECK_EQ(s.extents, 1);
	CHECK_EQ(s.grace_refusals, 0);
	CHECK_GE(s.refills, 1);
	CHECK_GE(s.trie_nodes, 1);
	CHECK_GE(s.fresh, 5);
	ps_enter(PS);
	ps_ns_free(ns, o[0]);
	ps_ns_free(ns, o[1]);
	s = nstats(ns);
	CHECK_EQ(s.frees, 2);
	CHECK_EQ(s.live, 8);
	CHECK_EQ(s.grace, 2);
	CHECK_EQ(s.reclaimed, 0);
	ps_exit(PS);
	drain(ns);
	s = nstats(ns);
	CHECK_EQ(s.grace, 0);
	CHECK_EQ(s.reclaimed, 2);
	for (int i = 2; i < 5; i++)
		ps_ns_free(ns, o[i]);
	ps_ns_free(ns, at);
	for (int i = 0; i < 3; i++)
		ps_ns_free(ns, eo[i]);
	ps_ns_free(ns, e1[0]);
	drain(ns);
	s = nstats(ns);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.frees, 10);
	CHECK_EQ(s.grace, 0);
	CHECK_EQ(s.reclaimed, 10);
	CHECK_EQ(s.allocs, 10);
	CHECK_EQ(s.extents, 1);
	struct ps_mem_stats ms;
	CHECK_EQ(ps_mem_stats(ps_ns_mem(ns), &ms), 0);
	CHECK_EQ(ms.in_use, 0);
	CHECK_EQ(ms.allocs, 10);
	test_log("ps_ns: stats after 10 ids: refills %" PRIu64 " flushes %" PRIu64 " fresh %" PRIu64
		 " splits %" PRIu64 " stale %" PRIu64 " pool_ids %" PRIu64 " trie_nodes %" PRIu64,
		 s.refills, s.flushes, s.fresh, s.splits, s.stale, s.pool_ids, s.trie_nodes);
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"stats", test_stats})
