/*
 * tests/ns/test_ps_ns_next.c - <tsync/ps_ns.h>'s ps_ns_next: a walk visits the published
 * ids in increasing order and nothing else (not reserved, extent or freed ids), up to the
 * top of the space; NULL with errno untouched when none is left.
 */
#include "ps_ns_test.h"

/* ---- ps_ns_next ----------------------------------------------------------------------- */
static void test_next(void)
{
	struct ps_ns *ns = mk_ns(20, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	uint64_t it = 0;
	ps_enter(PS);
	errno = 4242;
	CHECK(ps_ns_next(ns, &it) == NULL);
	CHECK_EQ_I(errno, 4242);
	ps_exit(PS);
	static const uint64_t pub[] = {0, 5, 511, 512, 1000, 70000, 262143, 262144, (1u << 20) - 1};
	enum { NP = sizeof pub / sizeof pub[0] };
	struct uobj *po[NP];
	for (int i = 0; i < NP; i++)
		po[i] = at_pub(ns, pub[i]);
	struct uobj *r6 = ps_ns_alloc_at(ns, 6), *r513 = ps_ns_alloc_at(ns, 513);
	CHECK(r6 && r513);
	struct uobj *f7 = at_pub(ns, 7), *f1001 = at_pub(ns, 1001);
	ps_ns_free(ns, f7);
	ps_ns_free(ns, f1001);
	void *eo[3];
	uint64_t base;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 3, &base, eo), 0); /* reserved, not published */

	ps_enter(PS);
	int k = 0;
	errno = 4242;
	struct uobj *o;
	for (it = 0; (o = ps_ns_next(ns, &it)); it++) {
		CHECK_MSG(k < NP, "ps_ns_next returned an extra id %" PRIu64, it);
		CHECK_MSG(it == pub[k], "ps_ns_next: id %" PRIu64 ", expected %" PRIu64, it,
			  pub[k]);
		CHECK(o == po[k]);
		CHECK_EQ(o->id, it);
		k++;
		if (it == (1u << 20) - 1)
			break; /* it++ would leave the space; the next call must still say NULL */
	}
	CHECK_EQ(k, NP);
	it = (1u << 20) - 1;
	CHECK(ps_ns_next(ns, &it) == po[NP - 1]);
	it = 1u << 20;
	CHECK(ps_ns_next(ns, &it) == NULL);
	it = UINT64_MAX;
	CHECK(ps_ns_next(ns, &it) == NULL);
	CHECK_EQ_I(errno, 4242);
	it = 6;
	CHECK(ps_ns_next(ns, &it) == po[2]);
	CHECK_EQ(it, 511);
	it = 513;
	CHECK(ps_ns_next(ns, &it) == po[4]);
	CHECK_EQ(it, 1000);
	it = 1001;
	CHECK(ps_ns_next(ns, &it) == po[5]);
	CHECK_EQ(it, 70000);
	ps_exit(PS);
	for (int i = 0; i < NP; i++)
		ps_ns_free(ns, po[i]);
	ps_ns_free(ns, r6);
	ps_ns_free(ns, r513);
	for (int i = 0; i < 3; i++)
		ps_ns_free(ns, eo[i]);
	ps_enter(PS);
	it = 0;
	CHECK(ps_ns_next(ns, &it) == NULL);
	ps_exit(PS);
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"next", test_next})
