/*
 * tests/ns/test_ps_ns_grace_hook.c - <tsync/ps_ns.h>'s custom grace hook (ParSec (EuroSys
 * 2016) §3.7): asked only after quiescence, in free order; refusals hold ids back and are
 * counted.
 */
#include "ps_ns_test.h"

/* ---- the custom grace hook ------------------------------------------------------------ */
struct hookrec {
	struct ps_ns *ns;
	_Atomic int accept;         /* 1: accept everything */
	_Atomic uint64_t refuse_id; /* with accept: refuse this id only */
	_Atomic unsigned calls, refusals;
	uint64_t seen[64];
	void *seen_obj[64];
	_Atomic unsigned nseen;
	bool bad_args;
};

static bool hook(struct ps_ns *ns, void *obj, uint64_t id, tsync_tick_t free_time, void *arg)
{
	struct hookrec *r = arg;
	if (ns != r->ns || free_time == 0 || ps_ns_id(ns, obj) != id ||
	    ((struct uobj *)obj)->id != id)
		r->bad_args = true;
	atomic_fetch_add(&r->calls, 1);
	unsigned k = atomic_fetch_add(&r->nseen, 1);
	if (k < 64) {
		r->seen[k] = id;
		r->seen_obj[k] = obj;
	}
	bool ok = atomic_load(&r->accept) && atomic_load(&r->refuse_id) != id;
	if (!ok)
		atomic_fetch_add(&r->refusals, 1);
	return ok;
}

static void test_grace_hook(void)
{
	struct hookrec r = {0};
	atomic_store(&r.refuse_id, UINT64_MAX);
	struct ps_ns *ns = mk_ns(8, 0, PS_NS_ID_LOWEST, 0, hook, &r);
	r.ns = ns;
	uint64_t ida;
	struct uobj *a = alloc_pub(ns, &ida);
	/* not asked before quiescence */
	struct holder h;
	holder_start(&h, PS);
	holder_do(&h, HOLD_ENTER);
	ps_ns_free(ns, a);
	for (int i = 0; i < 3; i++) {
		ps_mem_reclaim(ps_ns_mem(ns));
		test_sleep_ms(1);
	}
	CHECK_MSG(atomic_load(&r.calls) == 0, "the grace hook was asked before quiescence");
	CHECK_AT_FAILS(ns, ida, EBUSY);
	holder_do(&h, HOLD_EXIT);
	/* quiescent now; the hook refuses */
	drain(ns);
	CHECK_GE(atomic_load(&r.calls), 1);
	CHECK(!r.bad_args);
	CHECK_EQ(r.seen[0], ida);
	CHECK(r.seen_obj[0] == a);
	CHECK_AT_FAILS(ns, ida, EBUSY);
	struct ps_ns_stats s = nstats(ns);
	CHECK_GE(s.grace_refusals, 1);
	CHECK_EQ(s.grace_refusals, atomic_load(&r.refusals));
	CHECK_EQ(s.grace, 1);
	CHECK_EQ(s.reclaimed, 0);
	unsigned before = atomic_load(&r.calls);
	drain(ns); /* asked again */
	CHECK_GT(atomic_load(&r.calls), before);
	CHECK_AT_FAILS(ns, ida, EBUSY);
	s = nstats(ns);
	CHECK_GE(s.grace_refusals, 2);
	/* accepted: reusable */
	atomic_store(&r.accept, 1);
	drain(ns);
	s = nstats(ns);
	CHECK_EQ(s.grace, 0);
	CHECK_EQ(s.reclaimed, 1);
	a = at_pub(ns, ida);

	/* free order: a refused id holds back the ones freed after it by the same thread */
	uint64_t idx, idy;
	struct uobj *x = alloc_pub(ns, &idx), *y = alloc_pub(ns, &idy);
	atomic_store(&r.refuse_id, idx);
	atomic_store(&r.nseen, 0);
	ps_ns_free(ns, x);
	ps_ns_free(ns, y);
	drain(ns);
	drain(ns);
	unsigned n = atomic_load(&r.nseen);
	CHECK_GE(n, 2); /* x asked (twice) */
	for (unsigned i = 0; i < n && i < 64; i++)
		CHECK_MSG(r.seen[i] == idx,
			  "the hook was asked about id %" PRIu64
			  " freed after the refused %" PRIu64,
			  r.seen[i], idx);
	CHECK_AT_FAILS(ns, idx, EBUSY);
	CHECK_AT_FAILS(ns, idy, EBUSY);
	atomic_store(&r.refuse_id, UINT64_MAX);
	atomic_store(&r.nseen, 0);
	drain(ns);
	n = atomic_load(&r.nseen);
	CHECK_GE(n, 2);
	CHECK_EQ(r.seen[0], idx);
	CHECK_EQ(r.seen[1], idy);
	x = at_pub(ns, idx);
	y = at_pub(ns, idy);

	/* another thread's frees are asked in that thread's reclamation */
	atomic_store(&r.accept, 0);
	struct free_arg fa = {ns, x, 0, 0};
	h.fn = call_free;
	h.arg = &fa;
	holder_do(&h, HOLD_CALL);
	h.fn = call_drain;
	holder_do(&h, HOLD_CALL);
	CHECK_AT_FAILS(ns, idx, EBUSY);
	atomic_store(&r.accept, 1);
	holder_do(&h, HOLD_CALL);
	x = at_pub(ns, idx);
	holder_stop(&h, HOLD_QUIT);

	/* an extent whose last id is refused does not return */
	void *eo[4];
	uint64_t base;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 4, &base, eo), 0);
	for (int i = 0; i < 4; i++) {
		((struct uobj *)eo[i])->id = base + (uint64_t)i;
		ps_ns_publish(ns, eo[i]);
	}
	atomic_store(&r.refuse_id, base + 3);
	for (int i = 0; i < 4; i++)
		ps_ns_free(ns, eo[i]);
	drain(ns);
	for (uint64_t j = 0; j < 4; j++) {
		errno = 0;
		void *z = ps_ns_alloc_at(ns, base + j);
		CHECK_MSG(z == NULL && (errno == EBUSY || errno == EEXIST),
			  "extent id %" PRIu64 " reusable while its last id is refused", base + j);
	}
	atomic_store(&r.refuse_id, UINT64_MAX);
	drain(ns);
	for (uint64_t j = 0; j < 4; j++)
		ps_ns_free(ns, at_pub(ns, base + j));

	/* destroy with ids refused, live and reserved (ASan: nothing leaks) */
	atomic_store(&r.accept, 0);
	ps_ns_free(ns, x);
	drain(ns);
	uint64_t rid;
	CHECK(ps_ns_alloc(ns, &rid) != NULL);
	(void)a, (void)y;
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"grace_hook", test_grace_hook})
