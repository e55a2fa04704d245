/*
 * tests/ns/ps_ns_test.h - what the test_ps_ns_*.c files share: the ps every case uses, the
 * object type, making a namespace, draining its grace periods, a quiet statistics
 * snapshot with its invariants, allocating and publishing, a lookup in a section, the
 * failing ps_ns_alloc_at check, calls run by a holder thread, and the main that runs a
 * file's cases (all, or the ones named).
 */
#ifndef TSYNC_TEST_PS_NS_TEST_H
#define TSYNC_TEST_PS_NS_TEST_H

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
static inline struct ps_ns *mk_ns(unsigned bits, unsigned order, int policy, unsigned cache,
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
static inline void drain(struct ps_ns *ns)
{
	ps_synchronize(ps_ns_ps(ns));
	ps_mem_reclaim(ps_ns_mem(ns));
}

static inline struct ps_ns_stats nstats(struct ps_ns *ns)
{
	struct ps_ns_stats s;
	CHECK_STATS(ps_ns_stats, ns, s);
	/* invariants of a quiet snapshot */
	CHECK_EQ(s.live, s.allocs - s.frees);
	CHECK_LE(s.reclaimed, s.frees);
	CHECK_EQ(s.grace, s.frees - s.reclaimed);
	CHECK_EQ(s.trie_bytes, s.trie_nodes * 4096);
	return s;
}

/* Allocate and publish, filling the object. */
static inline struct uobj *alloc_pub(struct ps_ns *ns, uint64_t *idp)
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

/* ps_ns_alloc until the space is full: an object (its id in *idp), or NULL when ps_ns_alloc
 * failed - with ENOSPC, or the test fails. */
static inline struct uobj *alloc_unless_full(struct ps_ns *ns, uint64_t *idp)
{
	errno = 0;
	struct uobj *x = ps_ns_alloc(ns, idp);
	if (x == NULL)
		CHECK_EQ_I(errno, ENOSPC);
	return x;
}

static inline struct uobj *at_pub(struct ps_ns *ns, uint64_t id)
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

static inline void *lookup(struct ps_ns *ns, uint64_t id)
{
	ps_enter(PS);
	void *o = ps_ns_lookup(ns, id);
	ps_exit(PS);
	return o;
}

/* alloc_at must fail with err; nothing is bound by the attempt. */
#define CHECK_AT_FAILS(ns, id, err)                                                            \
	do {                                                                                   \
		errno = 0;                                                                     \
		void *at_o_ = ps_ns_alloc_at((ns), (id));                                      \
		int at_e_ = errno;                                                             \
		CHECK_MSG(at_o_ == NULL && at_e_ == (err),                                     \
			  "ps_ns_alloc_at(%" PRIu64 ") = %p errno %d (%s), expected errno %d", \
			  (uint64_t)(id), at_o_, at_e_, strerror(at_e_), (int)(err));          \
	} while (0)

static inline unsigned order_of(size_t n)
{
	unsigned k = 0;
	while (((size_t)1 << k) < n)
		k++;
	return k;
}

struct free_arg {
	struct ps_ns *ns;
	void *obj;
	uint64_t id;
	int err;
};

static inline void call_free(void *p)
{
	struct free_arg *a = p;
	ps_ns_free(a->ns, a->obj);
}

static inline void call_alloc_at(void *p)
{
	struct free_arg *a = p;
	errno = 0;
	a->obj = ps_ns_alloc_at(a->ns, a->id);
	a->err = errno;
}

static inline void call_alloc(void *p)
{
	struct free_arg *a = p;
	errno = 0;
	a->obj = ps_ns_alloc(a->ns, &a->id);
	a->err = errno;
}

static inline void call_drain(void *p)
{
	struct free_arg *a = p;
	drain(a->ns);
}

/* The main of each test_ps_ns_* file (TEST_CASES_MAIN(ps_ns_test_main, ...)):
 * `test_ps_ns_NAME [CASE...]` runs every case of the file, or the ones named
 * (tests/ns/CMakeLists.txt runs each case as its own ctest, ns_unit_CASE, and each file's
 * cases in one process with a large skew bound, ns_unit_NAME_large_skew). */
static inline int ps_ns_test_main(int argc, char **argv, const struct test_case *cases, size_t n)
{
	/* inside ctest's TIMEOUT, so that the watchdog's message is printed: 120 s for one
	 * case (ns_unit_CASE), 240 s for every case in one process (ns_unit_*_large_skew) */
	test_watchdog(argc > 1 ? 100 : 220);
	CHECK_EQ(tsync_clock_init(), 0);
	PS = ps_create(NULL);
	CHECK(PS != NULL);
	CHECK_EQ(tsync_thread_register(), 0);
	test_run_cases(argc, argv, cases, n);
	ps_destroy(PS);
	test_log("ps_ns: ok");
	return 0;
}

#endif
