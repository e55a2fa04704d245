/*
 * tests/ns/test_ps_ns_destroy.c - <tsync/ps_ns.h>'s ps_ns_destroy with everything in
 * flight: published, freed and reserved ids, a partly freed extent, an id in another
 * thread's cache and in its queue (ASan/LSan: nothing leaks).
 */
#include "ps_ns_test.h"

/* ---- destroy with everything in flight (ASan/LSan: nothing leaks) --------------------- */
static void test_destroy_busy(void)
{
	struct ps_ns *ns = mk_ns(16, 0, PS_NS_ID_CYCLIC, 4, NULL, NULL);
	struct holder h;
	holder_start(&h, PS);
	for (int i = 0; i < 100; i++) {
		struct uobj *o = alloc_pub(ns, NULL);
		if (i % 3 == 0)
			ps_ns_free(ns, o);
	}
	uint64_t id;
	CHECK(ps_ns_alloc(ns, &id) != NULL); /* reserved */
	void *eo[37];
	uint64_t base;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 37, &base, eo), 0);
	for (int i = 0; i < 37; i += 2)
		ps_ns_free(ns, eo[i]);
	struct free_arg fa = {ns, NULL, 0, 0};
	h.fn = call_alloc;
	h.arg = &fa;
	holder_do(&h, HOLD_CALL); /* an id in another thread's cache */
	h.fn = call_free;
	holder_do(&h, HOLD_CALL); /* and in its queue */
	holder_stop(&h, HOLD_QUIT);
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"destroy_busy", test_destroy_busy})
