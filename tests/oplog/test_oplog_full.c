/*
 * tests/oplog/test_oplog_full.c - OpLog's bounded logs (<tsync/oplog.h>): a log that fills
 * up synchronizes its object.
 */
#include "oplog_test.h"

/* ---- full logs ---- */
static void t_full(void)
{
	struct oplog_domain *d = oplog_list_domain_create(OPLOG_LIST_BASIC, OPLOG_OP_MAX, NULL);
	struct oplog_list l;
	struct oplog_list_node n[40];
	CHECK(oplog_list_init(&l, d) == 0);
	for (int i = 0; i < 40; i++) {
		oplog_list_node_init(&n[i]);
		CHECK(oplog_list_add(&l, &n[i]) == OPLOG_PUSHED);
	}
	/* No read yet, but full logs forced synchronizes: the shared list already holds most
	 * nodes (read directly: this thread is the only one). */
	size_t per_log = OPLOG_OP_MAX / sizeof(struct oplog_list_op);
	CHECK_GE(l.count, 40 - per_log);
	struct oplog_stats st;
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_GE(st.full_syncs, 40 / per_log - 1);
	CHECK_EQ(oplog_list_size(&l), 40);
	oplog_list_fini(&l);
	oplog_domain_destroy(d);
}

TEST_CASES_MAIN(oplog_test_main, {"full", t_full})
