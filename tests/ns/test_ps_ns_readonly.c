/*
 * tests/ns/test_ps_ns_readonly.c - <tsync/ps_ns.h>'s lookups are loads only: with every
 * trie node mapped read-only, ps_ns_lookup and ps_ns_next run without a fault.
 */
#include "ps_ns_test.h"
/* White-box: the test write-protects the radix tree's nodes (struct ps_ns__node). */
#include <tsync/static/ps_ns.h>

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

TEST_CASES_MAIN(ps_ns_test_main, {"readonly", test_readonly})
