/*
 * tests/oplog/test_oplog_exit.c - OpLog's thread exit (<tsync/oplog.h>): a thread's logged
 * ops outlive it.
 */
#include "oplog_test.h"

/* ---- thread exit ---- */
static struct oplog_list g_xl;
static struct oplog_list_node g_xn[8];
static void *exit_thread(void *arg)
{
	unsigned base = (unsigned)(uintptr_t)arg;
	for (unsigned i = base; i < base + 4; i++)
		CHECK(oplog_list_add(&g_xl, &g_xn[i]) == OPLOG_PUSHED);
	return NULL; /* exits (and unregisters) with its ops still logged */
}

static void t_exit(void)
{
	struct oplog_domain *d = oplog_list_domain_create(OPLOG_LIST_GLOBAL_ABSORB, 0, NULL);
	CHECK(oplog_list_init(&g_xl, d) == 0);
	for (int i = 0; i < 8; i++)
		oplog_list_node_init(&g_xn[i]);
	test_join(test_spawn(exit_thread, (void *)0));
	test_join(test_spawn(exit_thread, (void *)4)); /* likely reuses the first thread's id */
	CHECK_EQ(oplog_list_size(&g_xl), 8);
	oplog_list_fini(&g_xl);
	oplog_domain_destroy(d);
}

TEST_CASES_MAIN(oplog_test_main, {"exit", t_exit})
