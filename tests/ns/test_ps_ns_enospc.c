/*
 * tests/ns/test_ps_ns_enospc.c - <tsync/ps_ns.h>'s ENOSPC: exactly when every id is bound,
 * reserved or in grace, also with free ids in another thread's cache (live or exited) and
 * with freed extents to split.
 */
#include "ps_ns_test.h"

/* ---- ENOSPC ------------------------------------------------------------------------- */
static void take_all(void *p)
{
	struct free_arg *a = p; /* obj: an array of 16 pointers; id: how many */
	void **arr = a->obj;
	a->id = 0;
	for (;;) {
		uint64_t id;
		errno = 0;
		void *x = ps_ns_alloc(a->ns, &id);
		if (!x) {
			a->err = errno;
			return;
		}
		CHECK_LT(a->id, 16);
		arr[a->id++] = x;
	}
}

static void free_all(void *p)
{
	struct free_arg *a = p;
	void **arr = a->obj;
	for (uint64_t i = 0; i < a->id; i++)
		ps_ns_free(a->ns, arr[i]);
	drain(a->ns);
}

static void test_enospc(void)
{
	struct ps_ns *ns = mk_ns(4, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	struct uobj *o[16];
	bool seen[16] = {false};
	for (int i = 0; i < 16; i++) {
		uint64_t id;
		o[i] = alloc_pub(ns, &id);
		CHECK(!seen[id]);
		seen[id] = true;
	}
	uint64_t id;
	void *eo[2];
	uint64_t base;
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 2, &base, eo), -1, ENOSPC);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 1, &base, eo), -1, ENOSPC);
	/* freed ids are in grace while our section is open: still ENOSPC */
	ps_enter(PS);
	bool freed[16] = {false};
	for (int i = 0; i < 16; i += 3) {
		freed[o[i]->id] = true;
		ps_ns_free(ns, o[i]);
	}
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	ps_mem_reclaim(ps_ns_mem(ns));
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	for (int i = 0; i < 16; i++)
		if (freed[i])
			CHECK_AT_FAILS(ns, (uint64_t)i, EBUSY);
	struct ps_ns_stats s = nstats(ns);
	CHECK_EQ(s.live, 10);
	CHECK_EQ(s.grace, 6);
	ps_exit(PS);
	drain(ns);
	/* the 6 come back, and only they */
	for (int i = 0; i < 16; i += 3) {
		uint64_t nid;
		o[i] = alloc_pub(ns, &nid);
		CHECK_MSG(freed[nid], "got id %" PRIu64 " which was never freed", nid);
		freed[nid] = false;
	}
	CHECK_ERRNO(ps_ns_alloc(ns, &id), 0, ENOSPC);
	for (int i = 0; i < 16; i++)
		ps_ns_free(ns, o[i]);
	drain(ns);
	s = nstats(ns);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.grace, 0);
	ps_ns_destroy(ns);

	/* free ids in another thread's cache do not make ENOSPC: we hold one id (and our
	 * cache may hold the other 15); a second thread must still get the other 15, and
	 * after it exits, its cached ids must not be lost either */
	ns = mk_ns(4, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	uint64_t mine;
	struct uobj *m1 = alloc_pub(ns, &mine);
	void *arr[16];
	struct free_arg fa = {ns, arr, 0, 0};
	struct holder h;
	holder_start(&h, PS);
	h.fn = take_all;
	h.arg = &fa;
	holder_do(&h, HOLD_CALL);
	CHECK_EQ_I(fa.err, ENOSPC);
	CHECK_MSG(fa.id == 15, "a second thread got %" PRIu64 " of the 15 free ids before ENOSPC",
		  fa.id);
	h.fn = free_all;
	holder_do(&h, HOLD_CALL);
	holder_stop(&h, HOLD_QUIT); /* its caches go with it */
	struct free_arg mf = {ns, arr, 0, 0};
	take_all(&mf);
	CHECK_EQ_I(mf.err, ENOSPC);
	CHECK_MSG(mf.id == 15, "after the thread exited, %" PRIu64 " of 15 free ids could be had",
		  mf.id);
	free_all(&mf);
	ps_ns_free(ns, m1);
	ps_ns_destroy(ns);

	/* the same while the other thread stays alive: the 15 ids it freed and reclaimed
	 * are free, wherever it keeps them, so ENOSPC would be wrong */
	ns = mk_ns(4, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	m1 = alloc_pub(ns, &mine);
	fa = (struct free_arg){ns, arr, 0, 0};
	holder_start(&h, PS);
	h.fn = take_all;
	h.arg = &fa;
	holder_do(&h, HOLD_CALL);
	CHECK_EQ(fa.id, 15);
	h.fn = free_all;
	holder_do(&h, HOLD_CALL); /* freed and drained, the thread lives on */
	void *arr2[16];
	mf = (struct free_arg){ns, arr2, 0, 0};
	take_all(&mf);
	CHECK_EQ_I(mf.err, ENOSPC);
	CHECK_MSG(mf.id == 15,
		  "ENOSPC with %" PRIu64 " of 16 ids taken: the other 15 - free, "
		  "in a live thread's cache - could not be had",
		  mf.id + 1);
	free_all(&mf);
	holder_stop(&h, HOLD_QUIT);
	ps_ns_free(ns, m1);
	ps_ns_destroy(ns);

	/* freed extents are split for single ids: an extent of 8 of 16 ids, freed and
	 * reclaimed, then 16 singles */
	ns = mk_ns(4, 3, PS_NS_ID_LOWEST, 0, NULL, NULL);
	void *e8[8];
	uint64_t base8;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 8, &base8, e8), 0);
	for (int i = 0; i < 8; i++)
		ps_ns_free(ns, e8[i]);
	drain(ns);
	mf = (struct free_arg){ns, arr, 0, 0};
	take_all(&mf);
	CHECK_MSG(mf.id == 16,
		  "ENOSPC after %" PRIu64 " of 16 singles: the freed extent of 8 "
		  "was not split",
		  mf.id);
	free_all(&mf);
	ps_ns_destroy(ns);

	/* threads that each take and free an id and exit lose none of them */
	ns = mk_ns(4, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	for (int t = 0; t < 20; t++) {
		holder_start(&h, PS);
		struct free_arg one = {ns, NULL, 0, 0};
		h.fn = call_alloc;
		h.arg = &one;
		holder_do(&h, HOLD_CALL);
		CHECK_MSG(one.obj != NULL, "thread %d: ps_ns_alloc failed, errno %d", t, one.err);
		h.fn = call_free;
		holder_do(&h, HOLD_CALL);
		h.fn = call_drain;
		holder_do(&h, HOLD_CALL);
		holder_stop(&h, t % 2 ? HOLD_QUIT : HOLD_PTHREAD_EXIT);
	}
	mf = (struct free_arg){ns, arr, 0, 0};
	take_all(&mf);
	CHECK_MSG(mf.id == 16, "after 20 threads came and went, %" PRIu64 " of 16 ids are left",
		  mf.id);
	free_all(&mf);
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"enospc", test_enospc})
