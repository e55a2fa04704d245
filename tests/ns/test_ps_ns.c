/*
 * tests/ns/test_ps_ns.c - <tsync/ps_ns.h>, the contract case by case: configuration
 * errors and the extreme id spaces (1 and 60 bits); reserved until published; ids
 * chosen with ps_ns_alloc_at (ERANGE, EEXIST for bound, reserved and extent ids, EBUSY
 * while a section that began before the free is open in this or another thread, free
 * again after quiescence); extents (alignment, ids bound in order, no overlap with each
 * other or with single ids, returned only once every id passed its grace period);
 * ENOSPC exactly when every id is bound, reserved or in grace (also with free ids in
 * another thread's cache, live or exited, and with freed extents to split); the LOWEST
 * and CYCLIC policies as far as the header promises them; the custom grace hook (asked
 * only after quiescence, in free order, refusals hold ids back and are counted);
 * ps_ns_next; the counters; bad frees and publishes abort with a diagnostic; 2^40- and
 * 2^60-id spaces used near their top; destroy with everything in flight (ASan: no leak).
 *
 *   test_ps_ns [NAME...]   every case, or the named ones (tests/ns/CMakeLists.txt runs
 *                          each as its own ctest, ns_unit_NAME)
 */
#include <sys/mman.h>
#include <tsync/ps_ns.h>
#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

struct uobj {
	uint64_t id;
	uint64_t v;
};

static struct ps *PS;

/* ---- helpers ----------------------------------------------------------------------- */
static struct ps_ns *mk_ns(unsigned bits, unsigned order, int policy, unsigned cache,
			   ps_ns_grace_fn fn, void *arg)
{
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	c.id_bits = bits;
	c.max_order = order;
	c.id_policy = policy;
	c.id_cache = cache;
	c.grace_fn = fn;
	c.grace_arg = arg;
	errno = 0;
	struct ps_ns *ns = ps_ns_create(PS, sizeof(struct uobj), &c);
	CHECK_MSG(ns != NULL, "ps_ns_create(bits %u, order %u, policy %d, cache %u): errno %d",
		  bits, order, policy, cache, errno);
	return ns;
}

/* Every section that began before now has ended (none is open in this thread), and the
 * caller's quiescence queue of ns's objects is reclaimed: what the caller freed before is
 * reusable, unless the grace hook refuses it. */
static void drain(struct ps_ns *ns)
{
	ps_synchronize(ps_ns_ps(ns));
	ps_mem_reclaim(ps_ns_mem(ns));
}

static struct ps_ns_stats nstats(struct ps_ns *ns)
{
	struct ps_ns_stats s;
	memset(&s, 0xff, sizeof s);
	CHECK_EQ(ps_ns_stats(ns, &s), 0);
	/* invariants of a quiet snapshot */
	CHECK_EQ(s.live, s.allocs - s.frees);
	CHECK_LE(s.reclaimed, s.frees);
	CHECK_EQ(s.grace, s.frees - s.reclaimed);
	CHECK_EQ(s.trie_bytes, s.trie_nodes * 4096);
	return s;
}

/* Allocate and publish, filling the object. */
static struct uobj *alloc_pub(struct ps_ns *ns, uint64_t *idp)
{
	uint64_t id = UINT64_MAX;
	struct uobj *o = ps_ns_alloc(ns, &id);
	CHECK_MSG(o != NULL, "ps_ns_alloc: errno %d", errno);
	CHECK_LT(id, ps_ns_capacity(ns));
	CHECK_EQ(ps_ns_id(ns, o), id);
	o->id = id;
	o->v = id * 3 + 1;
	ps_ns_publish(ns, o);
	if (idp)
		*idp = id;
	return o;
}

static struct uobj *at_pub(struct ps_ns *ns, uint64_t id)
{
	struct uobj *o = ps_ns_alloc_at(ns, id);
	CHECK_MSG(o != NULL, "ps_ns_alloc_at(%" PRIu64 "): errno %d (%s)", id, errno,
		  strerror(errno));
	CHECK_EQ(ps_ns_id(ns, o), id);
	o->id = id;
	o->v = id * 3 + 1;
	ps_ns_publish(ns, o);
	return o;
}

static void *lookup(struct ps_ns *ns, uint64_t id)
{
	ps_enter(PS);
	void *o = ps_ns_lookup(ns, id);
	ps_exit(PS);
	return o;
}

/* alloc_at must fail with err; nothing is bound by the attempt. */
#define CHECK_AT_FAILS(ns, id, err)                                                        \
	do {                                                                               \
		errno = 0;                                                                 \
		void *at_o_ = ps_ns_alloc_at((ns), (id));                                  \
		int at_e_ = errno;                                                         \
		CHECK_MSG(at_o_ == NULL && at_e_ == (err),                                 \
			  "ps_ns_alloc_at(%" PRIu64 ") = %p errno %d (%s), expected errno %d", \
			  (uint64_t)(id), at_o_, at_e_, strerror(at_e_), (int)(err));      \
	} while (0)

static unsigned order_of(size_t n)
{
	unsigned k = 0;
	while (((size_t)1 << k) < n)
		k++;
	return k;
}

/* ---- configuration ------------------------------------------------------------------ */
static bool dummy_mem_grace(struct ps_mem *m, void *obj, tsync_tick_t t, void *arg)
{
	(void)m, (void)obj, (void)t, (void)arg;
	return true;
}

#define CHECK_CREATE_FAILS(size, cfgp, err)                                                \
	do {                                                                               \
		errno = 0;                                                                 \
		struct ps_ns *bad_ = ps_ns_create(PS, (size), (cfgp));                     \
		CHECK_MSG(bad_ == NULL, "ps_ns_create(%s) succeeded", #cfgp);              \
		CHECK_EQ_I(errno, (err));                                                  \
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
		CHECK_MSG(id == i, "LOWEST: allocation %" PRIu64 " of a fresh namespace got id %"
			  PRIu64, i, id);
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
struct free_arg {
	struct ps_ns *ns;
	void *obj;
	uint64_t id;
	int err;
};

static void call_free(void *p)
{
	struct free_arg *a = p;
	ps_ns_free(a->ns, a->obj);
}

static void call_alloc_at(void *p)
{
	struct free_arg *a = p;
	errno = 0;
	a->obj = ps_ns_alloc_at(a->ns, a->id);
	a->err = errno;
}

static void call_alloc(void *p)
{
	struct free_arg *a = p;
	errno = 0;
	a->obj = ps_ns_alloc(a->ns, &a->id);
	a->err = errno;
}

static void call_drain(void *p)
{
	struct free_arg *a = p;
	drain(a->ns);
}

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
		CHECK_MSG(!seen[id], "ps_ns_alloc returned id %" PRIu64 " twice (or the claimed id)",
			  id);
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
	for (;;) {
		errno = 0;
		struct uobj *x = ps_ns_alloc(ns, &id);
		if (!x) {
			CHECK_EQ_I(errno, ENOSPC);
			break;
		}
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

/* ---- extents -------------------------------------------------------------------------- */
struct ival {
	uint64_t lo, hi; /* [lo, hi) */
};

static int cmp_ival(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void check_disjoint(struct ival *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_ival);
	for (size_t i = 0; i + 1 < n; i++)
		CHECK_MSG(v[i].hi <= v[i + 1].lo,
			  "ids [%" PRIu64 ", %" PRIu64 ") and [%" PRIu64 ", %" PRIu64 ") overlap",
			  v[i].lo, v[i].hi, v[i + 1].lo, v[i + 1].hi);
}

static void test_extents(void)
{
	struct ps_ns *ns = mk_ns(20, 0, PS_NS_ID_LOWEST, 0, NULL, NULL);
	static const size_t sizes[] = {1, 3, 4, 1024, 2, 5, 7, 8, 9, 100, 1023, 3, 1, 64};
	enum { NS_ = sizeof sizes / sizeof sizes[0], NSINGLE = 3 * NS_ };
	void **objs[NS_];
	uint64_t bases[NS_];
	struct ival iv[NS_ + NSINGLE];
	size_t niv = 0;
	struct uobj *single[NSINGLE];
	size_t nsingle = 0;
	uint64_t extents = 0, allocs = 0;
	void *dummy[2];
	uint64_t base;
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 0, &base, dummy), -1, EINVAL);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 1025, &base, dummy), -1, EINVAL);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 2, NULL, dummy), -1, EINVAL);
	CHECK_ERRNO(ps_ns_alloc_extent(ns, 2, &base, NULL), -1, EINVAL);
	for (size_t e = 0; e < NS_; e++) {
		size_t n = sizes[e];
		unsigned k = order_of(n);
		objs[e] = calloc(n, sizeof(void *));
		CHECK(objs[e] != NULL);
		CHECK_EQ_I(ps_ns_alloc_extent(ns, n, &bases[e], objs[e]), 0);
		uint64_t b = bases[e];
		CHECK_MSG(b % ((uint64_t)1 << k) == 0,
			  "extent of %zu at %" PRIu64 " not aligned to %llu", n, b, 1ull << k);
		CHECK_LE(b + ((uint64_t)1 << k), ps_ns_capacity(ns));
		for (size_t i = 0; i < n; i++) {
			struct uobj *o = objs[e][i];
			CHECK(o != NULL);
			CHECK_EQ(ps_ns_id(ns, o), b + i);
			for (size_t j = 0; j < i; j++)
				CHECK(objs[e][j] != o);
			CHECK(lookup(ns, b + i) == NULL); /* reserved */
			o->id = b + i;
		}
		/* every id of the extent, bound or not, is taken */
		for (uint64_t j = 0; j < ((uint64_t)1 << k); j++)
			CHECK_AT_FAILS(ns, b + j, EEXIST);
		for (size_t i = 0; i < n; i++)
			if (i != 1) /* leave one reserved */
				ps_ns_publish(ns, objs[e][i]);
		for (size_t i = 0; i < n; i++)
			CHECK(lookup(ns, b + i) == (i != 1 ? objs[e][i] : NULL));
		for (uint64_t j = n; j < ((uint64_t)1 << k); j++)
			CHECK(lookup(ns, b + j) == NULL);
		iv[niv++] = (struct ival){b, b + ((uint64_t)1 << k)};
		extents += n > 1;
		allocs += n;
		/* singles in between */
		for (int i = 0; i < 3; i++) {
			uint64_t id;
			single[nsingle] = alloc_pub(ns, &id);
			nsingle++;
			iv[niv++] = (struct ival){id, id + 1};
			allocs++;
		}
	}
	check_disjoint(iv, niv);
	struct ps_ns_stats s = nstats(ns);
	CHECK_EQ(s.extents, extents);
	CHECK_EQ(s.allocs, allocs);
	CHECK_EQ(s.live, allocs);

	/* an extent's ids come back only when all of them passed their grace period */
	size_t e3 = 1; /* n = 3: 4 ids, the 4th reserved unbound */
	uint64_t b3 = bases[e3];
	CHECK_EQ(sizes[e3], 3);
	ps_ns_free(ns, objs[e3][0]);
	ps_ns_free(ns, objs[e3][1]); /* the reserved one */
	CHECK(lookup(ns, b3) == NULL);
	CHECK(lookup(ns, b3 + 2) == objs[e3][2]);
	drain(ns);
	for (uint64_t j = 0; j < 4; j++) {
		errno = 0;
		void *x = ps_ns_alloc_at(ns, b3 + j);
		CHECK_MSG(x == NULL && (errno == EEXIST || errno == EBUSY),
			  "id %" PRIu64 " of an extent with a live id: alloc_at = %p errno %d",
			  b3 + j, x, errno);
	}
	CHECK_AT_FAILS(ns, b3 + 2, EEXIST);
	CHECK_AT_FAILS(ns, b3 + 3, EEXIST);
	ps_enter(PS); /* a section older than the free: the id is in its grace period */
	ps_ns_free(ns, objs[e3][2]);
	CHECK_AT_FAILS(ns, b3 + 2, EBUSY);
	ps_exit(PS);
	drain(ns);
	for (uint64_t j = 0; j < 4; j++) {
		struct uobj *x = at_pub(ns, b3 + j);
		ps_ns_free(ns, x);
	}
	drain(ns);

	/* everything back */
	for (size_t e = 0; e < NS_; e++) {
		if (e != e3)
			for (size_t i = 0; i < sizes[e]; i++)
				ps_ns_free(ns, objs[e][i]);
		free(objs[e]);
	}
	for (size_t i = 0; i < nsingle; i++)
		ps_ns_free(ns, single[i]);
	drain(ns);
	s = nstats(ns);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.grace, 0);
	CHECK_EQ(s.reclaimed, s.frees);
	ps_ns_destroy(ns);

	/* extents and alloc_at in a small space: no overlap, no id lost */
	ns = mk_ns(6, 4, PS_NS_ID_LOWEST, 0, NULL, NULL);
	uint8_t own[64] = {0};
	void *held[64];
	size_t nheld = 0;
	struct uobj *o5 = at_pub(ns, 5);
	own[5] = 1;
	held[nheld++] = o5;
	static const size_t esz[] = {8, 16, 4, 2, 3};
	uint64_t bound = 1, reserved_extra = 0;
	for (size_t e = 0; e < sizeof esz / sizeof esz[0]; e++) {
		void *eo[16];
		CHECK_EQ_I(ps_ns_alloc_extent(ns, esz[e], &base, eo), 0);
		uint64_t span = (uint64_t)1 << order_of(esz[e]);
		CHECK_EQ(base % span, 0);
		for (uint64_t j = 0; j < span; j++) {
			CHECK_MSG(own[base + j] == 0, "extent [%" PRIu64 ", +%" PRIu64
				  ") overlaps id %" PRIu64, base, span, base + j);
			own[base + j] = 2;
		}
		for (size_t i = 0; i < esz[e]; i++) {
			ps_ns_publish(ns, eo[i]);
			held[nheld++] = eo[i];
		}
		bound += esz[e];
		reserved_extra += span - esz[e];
	}
	for (;;) {
		uint64_t id;
		errno = 0;
		struct uobj *x = ps_ns_alloc(ns, &id);
		if (!x) {
			CHECK_EQ_I(errno, ENOSPC);
			break;
		}
		CHECK_MSG(own[id] == 0, "single id %" PRIu64 " was taken already", id);
		own[id] = 3;
		ps_ns_publish(ns, x);
		held[nheld++] = x;
		bound++;
	}
	CHECK_MSG(bound + reserved_extra == 64,
		  "ENOSPC with %" PRIu64 " ids bound and %" PRIu64 " reserved of 64", bound,
		  reserved_extra);
	for (size_t i = 0; i < nheld; i++)
		ps_ns_free(ns, held[i]);
	drain(ns);
	/* every id is free again: 64 singles (extents split as needed) */
	nheld = 0;
	memset(own, 0, sizeof own);
	for (;;) {
		uint64_t id;
		errno = 0;
		struct uobj *x = ps_ns_alloc(ns, &id);
		if (!x) {
			CHECK_EQ_I(errno, ENOSPC);
			break;
		}
		CHECK(own[id] == 0);
		own[id] = 1;
		held[nheld++] = x;
	}
	CHECK_MSG(nheld == 64, "after freeing everything only %zu of 64 ids could be allocated",
		  nheld);
	for (size_t i = 0; i < nheld; i++)
		ps_ns_free(ns, held[i]);
	drain(ns);
	/* no coalescing is promised: an extent of 16 may or may not be had now */
	void *e16[16];
	errno = 0;
	int r = ps_ns_alloc_extent(ns, 16, &base, e16);
	CHECK_MSG(r == 0 || errno == ENOSPC, "extent after splitting: %d errno %d", r, errno);
	test_log("ps_ns: an extent of 16 after every id was split to singles: %s",
		 r == 0 ? "allocated" : "ENOSPC");
	if (r == 0)
		for (int i = 0; i < 16; i++)
			ps_ns_free(ns, e16[i]);
	ps_ns_destroy(ns);
}

/* PS_NS_EXTENT_SINGLY: each bound id of an extent returns on its own after its grace
 * period; the unbound tail returns with the last bound id; WHOLE holds them all. */
static void test_singly(void)
{
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	c.id_bits = 8;
	c.extent_policy = 2; /* neither policy */
	errno = 0;
	CHECK(ps_ns_create(PS, sizeof(struct uobj), &c) == NULL);
	CHECK_EQ_I(errno, EINVAL);
	c.extent_policy = PS_NS_EXTENT_SINGLY;
	struct ps_ns *ns = ps_ns_create(PS, sizeof(struct uobj), &c);
	CHECK(ns != NULL);
	void *o[5];
	uint64_t b;
	CHECK_EQ_I(ps_ns_alloc_extent(ns, 5, &b, o), 0); /* 8 ids, 3 unbound */
	CHECK_EQ(b % 8, 0);
	for (int i = 0; i < 5; i++)
		ps_ns_publish(ns, o[i]);
	/* id b + 1, freed: in grace while a section older than the free is open, then
	 * free on its own though the extent lives on */
	ps_enter(PS);
	ps_ns_free(ns, o[1]);
	CHECK_AT_FAILS(ns, b + 1, EBUSY);
	ps_exit(PS);
	drain(ns);
	struct uobj *x = at_pub(ns, b + 1);
	CHECK(lookup(ns, b + 1) == x);
	/* the tail stays reserved while bound ids of the extent are out */
	for (uint64_t j = 5; j < 8; j++)
		CHECK_AT_FAILS(ns, b + j, EEXIST);
	ps_enter(PS); /* a section older than the frees: none of them passes its grace */
	for (int i = 0; i < 5; i++)
		if (i != 1)
			ps_ns_free(ns, o[i]);
	for (uint64_t j = 5; j < 8; j++) /* not before the last bound id's grace */
		CHECK_AT_FAILS(ns, b + j, EEXIST);
	ps_exit(PS);
	drain(ns);
	/* every id of the extent but b + 1 (x holds it) is free now: alloc_at each */
	struct uobj *y[8] = {NULL};
	for (uint64_t j = 0; j < 8; j++)
		if (j != 1)
			y[j] = at_pub(ns, b + j);
	CHECK_AT_FAILS(ns, b + 1, EEXIST);
	for (uint64_t j = 0; j < 8; j++)
		ps_ns_free(ns, y[j]); /* NULL ignored */
	ps_ns_free(ns, x);
	drain(ns);
	struct ps_ns_stats s = nstats(ns);
	CHECK_EQ(s.live, 0);
	CHECK_EQ(s.grace, 0);
	/* and the whole space is there for singles */
	uint64_t got = 0, id;
	struct uobj *all[257];
	while ((all[got] = ps_ns_alloc(ns, &id)) != NULL)
		got++;
	CHECK_EQ_I(errno, ENOSPC);
	CHECK_EQ(got, 256);
	for (uint64_t i = 0; i < got; i++)
		ps_ns_free(ns, all[i]);
	ps_ns_destroy(ns);
}

/* Lookups store nothing to the trie: with every trie node mapped read-only, lookups of
 * bound, reserved, freed and never-used ids and a ps_ns_next walk run without a fault
 * (a store would be SIGSEGV). The nodes are page-sized and page-aligned (ps_ns.h's
 * layout); the walk below finds them through the public head, as ps_ns_lookup does. */
static size_t collect_nodes(struct ps_ns__node *n, unsigned level, struct ps_ns__node **out,
			    size_t cap, size_t k)
{
	CHECK_LT(k, cap);
	CHECK_EQ((uintptr_t)n % 4096, 0);
	out[k++] = n;
	if (level > 0)
		for (unsigned i = 0; i < PS_NS__FANOUT; i++) {
			uintptr_t v = atomic_load(&n->slot[i]);
			if (v)
				k = collect_nodes((struct ps_ns__node *)v, level - 1, out, cap, k);
		}
	return k;
}

static void protect_nodes(struct ps_ns__node **v, size_t n, int prot)
{
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_I(mprotect(v[i], sizeof(struct ps_ns__node), prot), 0);
}

static void test_readonly(void)
{
	struct ps_ns *ns = mk_ns(32, 4, PS_NS_ID_LOWEST, 0, NULL, NULL);
	enum { N = 40 };
	struct uobj *o[N];
	uint64_t ids[N];
	for (int i = 0; i < N; i++) /* ids in several leaves and interior nodes */
		o[i] = at_pub(ns, ids[i] = (uint64_t)i * 40503u * 1031u % (UINT64_C(1) << 32));
	uint64_t rid;
	struct uobj *res = ps_ns_alloc(ns, &rid); /* reserved, not published */
	CHECK(res != NULL);
	ps_ns_free(ns, o[7]); /* in grace (or free again: either way not found) */
	const struct ps_ns__head *h = (const struct ps_ns__head *)ns;
	struct ps_ns__node *nodes[256];
	size_t nn = collect_nodes(h->root, h->height - 1, nodes, 256, 0);
	CHECK_GE(nn, 4);
	protect_nodes(nodes, nn, PROT_READ);
	ps_enter(PS);
	for (int i = 0; i < N; i++)
		CHECK(ps_ns_lookup(ns, ids[i]) == (i == 7 ? NULL : o[i]));
	CHECK(ps_ns_lookup(ns, rid) == NULL);
	for (uint64_t id = 3; id < (UINT64_C(1) << 32); id = id * 7 + 1)
		(void)ps_ns_lookup(ns, id); /* never-used ids, missing nodes */
	uint64_t id = 0;
	size_t seen = 0;
	for (struct uobj *x; (x = ps_ns_next(ns, &id)) != NULL; id++) {
		CHECK_EQ(x->id, id);
		seen++;
	}
	ps_exit(PS);
	protect_nodes(nodes, nn, PROT_READ | PROT_WRITE);
	CHECK_EQ(seen, N - 1);
	for (int i = 0; i < N; i++)
		if (i != 7)
			ps_ns_free(ns, o[i]);
	ps_ns_free(ns, res);
	ps_ns_destroy(ns);
}

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
	CHECK_MSG(mf.id == 15, "ENOSPC with %" PRIu64 " of 16 ids taken: the other 15 - free, "
		  "in a live thread's cache - could not be had", mf.id + 1);
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
	CHECK_MSG(mf.id == 16, "ENOSPC after %" PRIu64 " of 16 singles: the freed extent of 8 "
		  "was not split", mf.id);
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
	CHECK_MSG(a1 < a2, "LOWEST: after ids 3 and 5 were freed (in that order), this thread "
		  "allocated %" PRIu64 " before %" PRIu64 ": not the lowest of its cache", a1, a2);
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
		CHECK_MSG(id == i, "CYCLIC (cache %u): after the wrap, allocation %" PRIu64
			  " got id %" PRIu64 " (freed in order 0..63)", cache, i, id);
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
		CHECK_MSG(id == order[i], "CYCLIC (cache %u): reuse %" PRIu64 " got id %" PRIu64
			  ", freed %" PRIu64 "th was %" PRIu64, cache, i, id, i, order[i]);
	}
	for (uint64_t i = 0; i < cap; i++)
		ps_ns_free(ns, o[i]);
	ps_ns_destroy(ns);
}

/* ---- the custom grace hook ------------------------------------------------------------ */
struct hookrec {
	struct ps_ns *ns;
	_Atomic int accept;        /* 1: accept everything */
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
		CHECK_MSG(r.seen[i] == idx, "the hook was asked about id %" PRIu64
			  " freed after the refused %" PRIu64, r.seen[i], idx);
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
		CHECK_MSG(it == pub[k], "ps_ns_next: id %" PRIu64 ", expected %" PRIu64, it, pub[k]);
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

/* ---- bad frees and publishes ---------------------------------------------------------- */
static void bad_call(void *arg)
{
	int kind = *(int *)arg;
	struct ps_ns *ns = ps_ns_create(PS, 32, NULL), *other = ps_ns_create(PS, 32, NULL);
	CHECK(ns && other);
	uint64_t id;
	void *o = ps_ns_alloc(ns, &id), *p = ps_ns_alloc(other, &id);
	CHECK(o && p);
	switch (kind) {
	case 0: /* double free of a published object */
		ps_ns_publish(ns, o);
		ps_ns_free(ns, o);
		ps_ns_free(ns, o);
		break;
	case 1: /* double free of a reserved object */
		ps_ns_free(ns, o);
		ps_ns_free(ns, o);
		break;
	case 2: /* an object of another namespace */
		ps_ns_publish(other, p);
		ps_ns_free(ns, p);
		break;
	case 3: /* a pointer no allocator handed out */
		ps_ns_free(ns, malloc(64));
		break;
	case 4: /* an object of a plain ps_mem */
	{
		struct ps_mem *m = ps_mem_create(PS, 32, NULL);
		ps_ns_free(ns, ps_alloc(m));
		break;
	}
	case 5: /* publish twice */
		ps_ns_publish(ns, o);
		ps_ns_publish(ns, o);
		break;
	case 6: /* publish after free */
		ps_enter(PS);
		ps_ns_free(ns, o);
		ps_ns_publish(ns, o);
		ps_exit(PS);
		break;
	case 7: /* publish an object of another namespace */
		ps_ns_publish(ns, p);
		break;
	default: /* free after a publish, then publish again */
		ps_ns_publish(ns, o);
		ps_enter(PS);
		ps_ns_free(ns, o);
		ps_ns_publish(ns, o);
		ps_exit(PS);
		break;
	}
	_exit(0); /* not aborted: the test fails */
}

static void test_death(void)
{
	if (!test_can_fork())
		return;
	struct {
		const char *what;
		const char *want[3];
	} cases[] = {
	    {"double free (published)", {"ps_ns_free", "double free", NULL}},
	    {"double free (reserved)", {"ps_ns_free", "double free", NULL}},
	    {"free of another namespace's object", {"ps_ns_free", NULL, NULL}},
	    {"free of a malloc'd pointer", {"ps_ns_free", "ps_free", "AddressSanitizer"}},
	    {"free of a ps_mem object", {"ps_ns_free", NULL, NULL}},
	    {"publish twice", {"ps_ns_publish", NULL, NULL}},
	    {"publish after free", {"ps_ns_publish", NULL, NULL}},
	    {"publish of another namespace's object", {"ps_ns_publish", NULL, NULL}},
	    {"publish after free of a published object", {"ps_ns_publish", NULL, NULL}},
	};
	for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
		int nw = 0;
		while (nw < 3 && cases[k].want[nw])
			nw++;
		/* a double free must name the call (the namespace catches it, not only the
		 * allocator underneath after the id was released twice) */
		CHECK_MSG(test_dies_saying_any(bad_call, &k, cases[k].want, k <= 1 ? 1 : nw),
			  "%s did not abort with a diagnostic naming %s", cases[k].what,
			  cases[k].want[0]);
	}
}

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

static void test_large40(void)
{
	test_large(40);
}

static void test_large60(void)
{
	test_large(60);
}

static void test_cyclics(void)
{
	test_cyclic(0);
	test_cyclic(4);
	test_cyclic(1);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
    {"death", test_death}, /* first: fork with no other thread running */
    {"config", test_config},
    {"bits1", test_bits1},
    {"large40", test_large40},
    {"large60", test_large60},
    {"alloc_publish", test_alloc_publish},
    {"alloc_at", test_alloc_at},
    {"extents", test_extents},
    {"singly", test_singly},
    {"readonly", test_readonly},
    {"enospc", test_enospc},
    {"lowest", test_lowest},
    {"cyclic", test_cyclics},
    {"grace_hook", test_grace_hook},
    {"next", test_next},
    {"stats", test_stats},
    {"threads", test_threads},
    {"destroy_busy", test_destroy_busy},
};

/* test_ps_ns [NAME...]: every test, or the ones named. */
int main(int argc, char **argv)
{
	/* inside ctest's TIMEOUT, so that the watchdog's message is printed: 120 s for one
	 * case (ns_unit_NAME), 240 s for every case in one process (ns_unit_large_skew) */
	test_watchdog(argc > 1 ? 100 : 220);
	CHECK_EQ(tsync_clock_init(), 0);
	PS = ps_create(NULL);
	CHECK(PS != NULL);
	CHECK_EQ(tsync_thread_register(), 0);
	const size_t nt = sizeof tests / sizeof tests[0];
	for (int a = 1; a < argc; a++) {
		bool known = false;
		for (size_t i = 0; i < nt; i++)
			known |= strcmp(argv[a], tests[i].name) == 0;
		CHECK_MSG(known, "unknown test '%s'", argv[a]);
	}
	for (size_t i = 0; i < nt; i++) {
		bool run = argc == 1;
		for (int a = 1; a < argc; a++)
			run |= strcmp(argv[a], tests[i].name) == 0;
		if (run)
			tests[i].fn();
	}
	ps_destroy(PS);
	test_log("ps_ns: ok");
	return 0;
}
