/*
 * tests/oplog/test_oplog_rmap.c - OpLog's rmap (<tsync/oplog_rmap.h>): truncate semantics
 * and sort order.
 */
#include "oplog_test.h"

/* ---- rmap ---- */
static void t_rmap(void)
{
	for (int mode = 0; mode < 3; mode++) {
		struct oplog_domain *d =
			oplog_rmap_domain_create((enum oplog_list_mode)mode, 0, NULL);
		struct oplog_rmap r;
		struct oplog_rmap_mapping m[4];
		CHECK(oplog_rmap_init(&r, d) == 0);
		CHECK(oplog_rmap_mapping_init(&m[0], 20, 30) == 0);
		CHECK(oplog_rmap_mapping_init(&m[1], 0, 10) == 0);
		CHECK(oplog_rmap_mapping_init(&m[2], 5, 8) == 0);
		CHECK(oplog_rmap_mapping_init(&m[3], 2, 3) == 0);
		for (int i = 0; i < 4; i++)
			CHECK(oplog_rmap_add(&r, &m[i]) == OPLOG_PUSHED);
		CHECK(oplog_rmap_remove(&r, &m[3]) >= 0);
		CHECK_EQ(oplog_rmap_count(&r), 3);
		/* [0,10)->[0,6): 4, [5,8)->[5,6): 2, [20,30)->[20,20): 10 */
		CHECK_EQ(oplog_rmap_truncate(&r, 6), 16);
		CHECK_EQ(oplog_rmap_truncate(&r, 6), 0);
		CHECK_EQ(oplog_rmap_truncate(&r, 5), 2);
		oplog_synchronize(&r.obj);
		uint64_t prev = 0;
		for (struct oplog_list_node *n = r.head.next; n != &r.head; n = n->next) {
			struct oplog_rmap_mapping *mp = (struct oplog_rmap_mapping *)(void *)n;
			CHECK_GE(mp->start, prev);
			prev = mp->start;
		}
		oplog_unlock(&r.obj);
		CHECK_EQ(m[1].end, 5);
		CHECK_EQ(m[2].end, 5);
		CHECK_EQ(m[0].end, 20);
		CHECK_EQ(m[3].end, 3); /* removed before the truncates */
		oplog_rmap_fini(&r);
		oplog_domain_destroy(d);
	}
}

TEST_CASES_MAIN(oplog_test_main, {"rmap", t_rmap})
