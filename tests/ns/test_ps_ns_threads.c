/*
 * tests/ns/test_ps_ns_threads.c - <tsync/ps_ns.h> from several threads at once: no id
 * handed out twice, every thread's ids looked up by all, exact counts after (a quick
 * unit-level check; stress_ps_ns hunts).
 */
#include "ps_ns_test.h"

/* ---- several threads at once (a quick unit-level check; the stress test hunts) -------- */
struct mt_arg {
	struct ps_ns *ns;
	_Atomic uint8_t *own;
	unsigned n;
	struct uobj **held;
	test_barrier *bar;
};

static void *mt_main(void *p)
{
	struct mt_arg *a = p;
	test_barrier_wait(a->bar);
	for (unsigned i = 0; i < a->n; i++) {
		uint64_t id;
		struct uobj *o = ps_ns_alloc(a->ns, &id);
		CHECK(o != NULL);
		uint8_t z = 0;
		CHECK_MSG(atomic_compare_exchange_strong(&a->own[id], &z, 1),
			  "id %" PRIu64 " handed to two threads", id);
		o->id = id;
		ps_ns_publish(a->ns, o);
		a->held[i] = o;
	}
	test_barrier_wait(a->bar);
	/* look up everyone's ids */
	ps_enter(PS);
	for (uint64_t id = 0; id < ps_ns_capacity(a->ns); id++) {
		struct uobj *o = ps_ns_lookup(a->ns, id);
		if (atomic_load(&a->own[id]))
			CHECK(o != NULL && o->id == id);
		else
			CHECK(o == NULL);
	}
	ps_exit(PS);
	test_barrier_wait(a->bar);
	for (unsigned i = 0; i < a->n; i++)
		ps_ns_free(a->ns, a->held[i]);
	return NULL;
}

static void test_threads(void)
{
	enum { NT = 4 };
	const unsigned per = (unsigned)test_scale(1500, 3);
	struct ps_ns *ns = mk_ns(14, 0, PS_NS_ID_LOWEST, 8, NULL, NULL);
	_Atomic uint8_t *own = calloc(1u << 14, 1);
	CHECK(own != NULL);
	test_barrier bar;
	test_barrier_init(&bar, NT);
	struct mt_arg a[NT];
	pthread_t t[NT];
	for (int i = 0; i < NT; i++) {
		a[i] = (struct mt_arg){ns, own, per, calloc(per, sizeof(struct uobj *)), &bar};
		CHECK(a[i].held != NULL);
		t[i] = test_spawn(mt_main, &a[i]);
	}
	for (int i = 0; i < NT; i++) {
		test_join(t[i]);
		free(a[i].held);
	}
	test_barrier_destroy(&bar);
	struct ps_ns_stats s = nstats(ns);
	CHECK_EQ(s.allocs, (uint64_t)NT * per);
	CHECK_EQ(s.frees, (uint64_t)NT * per);
	CHECK_EQ(s.live, 0);
	free(own);
	ps_ns_destroy(ns);
}

TEST_CASES_MAIN(ps_ns_test_main, {"threads", test_threads})
