/*
 * tests/oplog/test_oplog_absorb.c - OpLog's absorption (OpLog (MIT TR 2014) Fig. 12,
 * <tsync/oplog_list.h>): the three list variants give the same results (absorption never
 * changes them) and do absorb, in one thread and then in two with hand-offs.
 */
#include "oplog_test.h"

/* ---- absorption never changes results ---- */
#define AN 16
struct absorb_run {
	struct oplog_list l;
	struct oplog_list_node n[2][AN];
	bool present[2][AN];
	test_barrier bar;
	uint64_t seed;
	size_t sizes[64]; /* results of reads, per round */
	uint64_t final_mask;
};

static struct absorb_run g_ar;

/* Thread t: rounds of toggling its own nodes (no reads, so adds and removes meet in the
 * logs), a read by thread 0 every other round, and a hand-off: in odd rounds each thread
 * removes the nodes the other thread added (P2 holds: the add and the remove of a node
 * are separated by a barrier and the adder does nothing more with it). */
static void *absorb_thread(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t s = g_ar.seed + t;
	for (unsigned r = 0; r < 64; r++) {
		test_barrier_wait(&g_ar.bar);
		if (r % 2 == 0) {
			for (unsigned k = 0; k < 40; k++) {
				unsigned i = (unsigned)(test_rand(&s) % AN);
				if (g_ar.present[t][i])
					CHECK(oplog_list_remove(&g_ar.l, &g_ar.n[t][i]) >= 0);
				else
					CHECK(oplog_list_add(&g_ar.l, &g_ar.n[t][i]) >= 0);
				g_ar.present[t][i] = !g_ar.present[t][i];
			}
		} else {
			unsigned o = 1 - t; /* hand-off: remove the other thread's nodes */
			for (unsigned i = 0; i < AN; i++) {
				if (g_ar.present[o][i] && (test_rand(&s) & 1)) {
					CHECK(oplog_list_remove(&g_ar.l, &g_ar.n[o][i]) >= 0);
					g_ar.present[o][i] = false;
				}
			}
		}
		test_barrier_wait(&g_ar.bar);
		if (t == 0 && r % 4 == 1)
			g_ar.sizes[r] = oplog_list_size(&g_ar.l);
		test_barrier_wait(&g_ar.bar);
	}
	return NULL;
}

static void absorb_one(enum oplog_list_mode mode, uint64_t seed, size_t cap, struct oplog_stats *st)
{
	memset(&g_ar, 0, sizeof(g_ar));
	g_ar.seed = seed;
	struct oplog_domain *d = oplog_list_domain_create(mode, cap, NULL);
	CHECK(d);
	CHECK(oplog_list_init(&g_ar.l, d) == 0);
	for (unsigned t = 0; t < 2; t++)
		for (unsigned i = 0; i < AN; i++)
			oplog_list_node_init(&g_ar.n[t][i]);
	test_barrier_init(&g_ar.bar, 2);
	pthread_t a = test_spawn(absorb_thread, (void *)0),
		  b = test_spawn(absorb_thread, (void *)1);
	test_join(a);
	test_join(b);
	oplog_synchronize(&g_ar.l.obj);
	size_t cnt = 0;
	for (struct oplog_list_node *n = g_ar.l.head.next; n != &g_ar.l.head; n = n->next, cnt++) {
		unsigned t = n >= g_ar.n[1] ? 1 : 0;
		g_ar.final_mask |= 1ull << ((unsigned)(n - g_ar.n[t]) + 32 * t);
	}
	CHECK_EQ(cnt, g_ar.l.count);
	oplog_unlock(&g_ar.l.obj);
	for (unsigned t = 0; t < 2; t++)
		for (unsigned i = 0; i < AN; i++)
			CHECK_EQ((g_ar.final_mask >> (i + 32 * t)) & 1, g_ar.present[t][i]);
	CHECK(oplog_domain_stats(d, st) == 0);
	oplog_list_fini(&g_ar.l);
	oplog_domain_destroy(d);
	test_barrier_destroy(&g_ar.bar);
}

static void t_absorb(void)
{
	/* One thread: a fixed script gives the same reads in every mode. */
	for (int m = 0; m < 3; m++) {
		struct oplog_domain *d = oplog_list_domain_create((enum oplog_list_mode)m, 0, NULL);
		struct oplog_list l;
		struct oplog_list_node n[4];
		CHECK(oplog_list_init(&l, d) == 0);
		for (int i = 0; i < 4; i++)
			oplog_list_node_init(&n[i]);
		CHECK(oplog_list_add(&l, &n[0]) == OPLOG_PUSHED);
		CHECK(oplog_list_add(&l, &n[1]) == OPLOG_PUSHED);
		int rc = oplog_list_remove(&l, &n[0]);
		CHECK(rc == (m == OPLOG_LIST_LOCAL_ABSORB ? OPLOG_ABSORBED : OPLOG_PUSHED));
		CHECK(!oplog_list_contains(&l, &n[0]));
		CHECK(oplog_list_contains(&l, &n[1]));
		CHECK_EQ(oplog_list_size(&l), 1);
		/* remove of a node added in an earlier batch: never absorbed */
		CHECK(oplog_list_remove(&l, &n[1]) == OPLOG_PUSHED);
		CHECK(oplog_list_add(&l, &n[2]) == OPLOG_PUSHED);
		CHECK(oplog_list_add(&l, &n[3]) == OPLOG_PUSHED);
		CHECK(oplog_list_remove(&l, &n[2]) >= 0);
		CHECK_EQ(oplog_list_size(&l), 1);
		CHECK(oplog_list_contains(&l, &n[3]));
		struct oplog_stats st;
		CHECK(oplog_domain_stats(d, &st) == 0);
		if (m == OPLOG_LIST_BASIC)
			CHECK_EQ(st.absorbed_local + st.absorbed_global, 0);
		if (m == OPLOG_LIST_GLOBAL_ABSORB)
			CHECK_EQ(st.absorbed_global, 4); /* two add/remove pairs */
		if (m == OPLOG_LIST_LOCAL_ABSORB)
			CHECK_EQ(st.absorbed_local, 2);
		oplog_list_fini(&l);
		oplog_domain_destroy(d);
	}
	/* Two threads with hand-offs: same reads and final state in all modes. */
	uint64_t seed = test_seed(7);
	for (int rep = 0; rep < 3; rep++) {
		size_t cap = rep == 2 ? OPLOG_OP_MAX : 0; /* rep 2: full logs too */
		size_t sizes[3][64];
		uint64_t masks[3];
		struct oplog_stats st[3];
		for (int m = 0; m < 3; m++) {
			absorb_one((enum oplog_list_mode)m, seed + (uint64_t)rep, cap, &st[m]);
			memcpy(sizes[m], g_ar.sizes, sizeof(g_ar.sizes));
			masks[m] = g_ar.final_mask;
		}
		CHECK(memcmp(sizes[0], sizes[1], sizeof(sizes[0])) == 0);
		CHECK(memcmp(sizes[0], sizes[2], sizeof(sizes[0])) == 0);
		CHECK_EQ(masks[0], masks[1]);
		CHECK_EQ(masks[0], masks[2]);
		CHECK_EQ(st[0].absorbed_global + st[0].absorbed_local, 0);
		CHECK_GT(st[1].absorbed_global, 0);
		CHECK_GT(st[2].absorbed_local, 0);
		/* fewer ops reach the shared list with absorption */
		CHECK_LT(st[1].executed, st[0].executed);
		CHECK_LE(st[2].executed, st[1].executed);
		test_log("absorb rep %d: executed basic %" PRIu64 " global %" PRIu64
			 " local %" PRIu64,
			 rep, st[0].executed, st[1].executed, st[2].executed);
	}
}

TEST_CASES_MAIN(oplog_test_main, {"absorb", t_absorb})
