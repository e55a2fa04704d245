/*
 * tests/ns/test_ps_ns_alloc.c - <tsync/ps_ns.h>'s ids (ParSec (EuroSys 2016) §3.6): an id
 * is reserved until published and looked up only once published; ps_ns_alloc_at chooses an
 * id (ERANGE, EEXIST for bound, reserved and extent ids, EBUSY while a section that began
 * before the free is open in this or another thread, free again after quiescence).
 */
#include "ps_ns_test.h"

/* ---- reserved until published; ids; lookups ---------------------------------------- */
static void test_alloc_publish(void)
{
	struct ps_ns *ns = mk_ns(16, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	const uint64_t cap = ps_ns_capacity(ns);
	CHECK_EQ(cap, 65536);
	CHECK_ERRNO(ps_ns_alloc(ns, NULL), 0, EINVAL);
	/* LOWEST, one thread, nothing freed: the space is handed out densely from 0 */
	struct uobj *o[10];
	for (uint64_t i = 0; i < 10; i++) {
		uint64_t id = UINT64_MAX;
		o[i] = ps_ns_alloc(ns, &id);
		CHECK(o[i] != NULL);
		CHECK_MSG(id == i,
			  "LOWEST: allocation %" PRIu64 " of a fresh namespace got id %" PRIu64, i,
			  id);
		CHECK_EQ(ps_ns_id(ns, o[i]), id);
		for (uint64_t j = 0; j < i; j++)
			CHECK(o[j] != o[i]);
		CHECK(lookup(ns, id) == NULL); /* reserved */
		CHECK_AT_FAILS(ns, id, EEXIST);
		CHECK(!ps_lock_is_freed(o[i]));
	}
	for (uint64_t i = 0; i < 10; i++) {
		o[i]->id = i;
		o[i]->v = 1000 + i;
		if (i % 2 == 0) {
			ps_ns_publish(ns, o[i]);
			CHECK(lookup(ns, i) == o[i]);
			CHECK_EQ(ps_ns_id(ns, o[i]), i);
		}
	}
	for (uint64_t i = 0; i < 10; i++)
		CHECK(lookup(ns, i) == (i % 2 == 0 ? (void *)o[i] : NULL));
	CHECK(lookup(ns, 10) == NULL);
	CHECK(lookup(ns, cap - 1) == NULL);
	errno = 0;
	CHECK(lookup(ns, cap) == NULL);
	CHECK_EQ_I(errno, ERANGE);

	/* free: unbound at once, published or reserved; the id and the freed mark stay
	 * readable while the object cannot be reused (inside a section) */
	ps_enter(PS);
	ps_ns_free(ns, o[2]); /* published */
	ps_ns_free(ns, o[3]); /* reserved */
	CHECK(ps_ns_lookup(ns, 2) == NULL);
	CHECK(ps_ns_lookup(ns, 3) == NULL);
	CHECK_EQ(ps_ns_id(ns, o[2]), 2);
	CHECK_EQ(ps_ns_id(ns, o[3]), 3);
	CHECK(ps_lock_is_freed(o[2]));
	CHECK(ps_lock_is_freed(o[3]));
	CHECK_EQ(o[2]->v, 1002); /* not reused under us */
	CHECK(ps_ns_lookup(ns, 4) == o[4]);
	ps_exit(PS);
	for (uint64_t i = 0; i < 10; i++)
		if (i != 2 && i != 3)
			ps_ns_free(ns, o[i]);
	ps_ns_destroy(ns);
}

/* ---- ps_ns_alloc_at ------------------------------------------------------------------ */

static void test_alloc_at(void)
{
	struct ps_ns *ns = mk_ns(10, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	CHECK_AT_FAILS(ns, 1024, ERANGE);
	CHECK_AT_FAILS(ns, 1u << 20, ERANGE);
	CHECK_AT_FAILS(ns, UINT64_MAX, ERANGE);
	struct uobj *o = ps_ns_alloc_at(ns, 100);
	CHECK(o != NULL);
	CHECK_EQ(ps_ns_id(ns, o), 100);
	CHECK(lookup(ns, 100) == NULL);
	CHECK_AT_FAILS(ns, 100, EEXIST); /* reserved */
	o->id = 100;
	ps_ns_publish(ns, o);
	CHECK(lookup(ns, 100) == o);
	CHECK_AT_FAILS(ns, 100, EEXIST); /* bound */
	/* ps_ns_alloc never hands out a claimed id */
	struct uobj *s[200];
	bool seen[1024] = {false};
	seen[100] = true;
	for (int i = 0; i < 200; i++) {
		uint64_t id;
		s[i] = alloc_pub(ns, &id);
		CHECK_MSG(!seen[id],
			  "ps_ns_alloc returned id %" PRIu64 " twice (or the claimed id)", id);
		seen[id] = true;
	}
	for (int i = 0; i < 200; i++)
		ps_ns_free(ns, s[i]);

	/* EBUSY while a section of this thread that began before the free is open */
	ps_enter(PS);
	ps_ns_free(ns, o);
	CHECK(ps_ns_lookup(ns, 100) == NULL);
	CHECK_AT_FAILS(ns, 100, EBUSY);
	ps_mem_reclaim(ps_ns_mem(ns)); /* our own section holds it */
	CHECK_AT_FAILS(ns, 100, EBUSY);
	ps_exit(PS);
	drain(ns);
	o = at_pub(ns, 100);
	CHECK(lookup(ns, 100) == o);

	/* EBUSY while another thread's section that began before the free is open */
	struct holder h;
	holder_start(&h, PS);
	holder_do(&h, HOLD_ENTER);
	ps_ns_free(ns, o);
	CHECK_AT_FAILS(ns, 100, EBUSY);
	struct free_arg hat = {ns, NULL, 100, 0};
	h.fn = call_alloc_at;
	h.arg = &hat;
	holder_do(&h, HOLD_CALL); /* the holder, inside its section, asks too */
	CHECK(hat.obj == NULL);
	CHECK_EQ_I(hat.err, EBUSY);
	for (int i = 0; i < 3; i++) {
		ps_mem_reclaim(ps_ns_mem(ns));
		test_sleep_ms(2);
		CHECK_AT_FAILS(ns, 100, EBUSY);
	}
	/* and ps_ns_alloc does not hand it out either: take every other id */
	uint64_t taken = 0, id;
	struct uobj **all = calloc(1024, sizeof *all);
	CHECK(all != NULL);
	for (struct uobj *x; (x = alloc_unless_full(ns, &id)) != NULL;) {
		CHECK_NE(id, 100);
		all[taken++] = x;
	}
	CHECK_EQ(taken, 1024 - 1); /* the 200 freed above were drained */
	for (uint64_t i = 0; i < taken; i++)
		ps_ns_free(ns, all[i]);
	holder_do(&h, HOLD_EXIT);
	drain(ns);
	o = at_pub(ns, 100);
	/* the holder frees it: EBUSY for us until the holder reclaims its own queue */
	struct free_arg fa = {ns, o, 0, 0};
	h.fn = call_free;
	h.arg = &fa;
	holder_do(&h, HOLD_CALL);
	CHECK_AT_FAILS(ns, 100, EBUSY);
	h.fn = call_drain;
	holder_do(&h, HOLD_CALL);
	o = at_pub(ns, 100);
	ps_ns_free(ns, o);
	holder_stop(&h, HOLD_QUIT);
	free(all);
	ps_ns_destroy(ns);

	/* a free id that sits in this thread's cache: claimed with alloc_at, then skipped */
	ns = mk_ns(10, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	uint64_t a, b;
	struct uobj *oa = alloc_pub(ns, &a);
	CHECK_EQ(a, 0);
	struct uobj *o1 = at_pub(ns, 1);
	struct uobj *ob = alloc_pub(ns, &b);
	CHECK_NE(b, 1);
	CHECK(lookup(ns, 1) == o1);
	struct ps_ns_stats st = nstats(ns);
	test_log("ps_ns: alloc_at of a cached id: next allocation %" PRIu64 ", stale %" PRIu64, b,
		 st.stale);
	ps_ns_free(ns, oa);
	ps_ns_free(ns, o1);
	ps_ns_free(ns, ob);
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"alloc_publish", test_alloc_publish}, {"alloc_at", test_alloc_at})
