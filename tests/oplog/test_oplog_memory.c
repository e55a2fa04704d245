/*
 * tests/oplog/test_oplog_memory.c - OpLog's dynamic logs (<tsync/oplog.h>): the table's
 * memory does not grow with the number of objects.
 */
#include "oplog_test.h"

/* ---- memory: dynamic logs ---- */
#define MEM_OBJS 4096
static struct oplog_counter *g_mem;
static test_barrier g_mem_bar;
static void *mem_thread(void *arg)
{
	(void)arg;
	test_barrier_wait(&g_mem_bar); /* both threads registered at once: two tables */
	for (int rep = 0; rep < 3; rep++)
		for (int i = 0; i < MEM_OBJS; i++)
			CHECK(oplog_counter_inc(&g_mem[i]) == 0);
	test_barrier_wait(&g_mem_bar);
	return NULL;
}

static void t_memory(void)
{
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 64;
	struct oplog_domain *d = oplog_counter_domain_create(&cfg);
	g_mem = calloc(MEM_OBJS, sizeof(*g_mem));
	CHECK(g_mem);
	for (int i = 0; i < MEM_OBJS; i++)
		CHECK(oplog_counter_init(&g_mem[i], d, 0, NULL, NULL) == 0);
	test_barrier_init(&g_mem_bar, 2);
	pthread_t a = test_spawn(mem_thread, NULL), b = test_spawn(mem_thread, NULL);
	test_join(a);
	test_join(b);
	test_barrier_destroy(&g_mem_bar);
	struct oplog_stats st;
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_EQ(st.tables, 2);
	CHECK_LE(st.table_bytes, st.tables * (64 * st.slot_bytes + 2 * TSYNC_CACHE_LINE));
	/* Every object was updated by both threads; a design with a log per object per
	 * thread would hold MEM_OBJS * 2 logs (each on its own line). */
	uint64_t statik = (uint64_t)MEM_OBJS * 2 * st.slot_bytes;
	test_log("memory: %d counters x 2 threads: dynamic tables %" PRIu64
		 " B + objects %zu B; per-object logs would need %" PRIu64 " B more",
		 MEM_OBJS, st.table_bytes, MEM_OBJS * sizeof(struct oplog_counter), statik);
	CHECK_LT(st.table_bytes, statik / 16);
	for (int i = 0; i < MEM_OBJS; i++) {
		CHECK_EQ_I(oplog_counter_read(&g_mem[i]), 6);
		oplog_counter_fini(&g_mem[i]);
	}
	free(g_mem);
	oplog_domain_destroy(d);
}

TEST_CASES_MAIN(oplog_test_main, {"memory", t_memory})
