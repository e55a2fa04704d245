/*
 * tests/ns/test_ps_ns_extent.c - <tsync/ps_ns.h>'s extents: aligned, their ids bound in
 * order, no overlap with each other or with single ids, returned only once every id passed
 * its grace period (PS_NS_EXTENT_WHOLE), or id by id (PS_NS_EXTENT_SINGLY).
 */
#include "ps_ns_test.h"

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
			CHECK_MSG(own[base + j] == 0,
				  "extent [%" PRIu64 ", +%" PRIu64 ") overlaps id %" PRIu64, base,
				  span, base + j);
			own[base + j] = 2;
		}
		for (size_t i = 0; i < esz[e]; i++) {
			ps_ns_publish(ns, eo[i]);
			held[nheld++] = eo[i];
		}
		bound += esz[e];
		reserved_extra += span - esz[e];
	}
	uint64_t id;
	for (struct uobj *x; (x = alloc_unless_full(ns, &id)) != NULL;) {
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
	for (struct uobj *x; (x = alloc_unless_full(ns, &id)) != NULL;) {
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

TEST_CASES_MAIN(ps_ns_test_main, {"extents", test_extents}, {"singly", test_singly})
