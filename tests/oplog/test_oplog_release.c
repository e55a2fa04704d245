/*
 * tests/oplog/test_oplog_release.c - OpLog's counter zero detection
 * (<tsync/oplog_counter.h>): the release callback runs once, also from an eviction, and may
 * finalise and free the counter.
 */
#include "oplog_test.h"

/* ---- zero detection ---- */
static _Atomic int g_released;
static void on_release(struct oplog_counter *c, void *arg)
{
	CHECK(arg == &g_released);
	CHECK_EQ_I(c->value, 0);
	atomic_fetch_add(&g_released, 1);
}
static void on_release_free(struct oplog_counter *c, void *arg)
{
	(void)arg;
	atomic_fetch_add(&g_released, 1);
	oplog_counter_fini(c);
	memset(c, 0xa5, sizeof(*c));
	free(c);
}

static struct oplog_counter g_rc;
static void *rc_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		CHECK(oplog_counter_inc(&g_rc) == 0);
		if (i % 100 == 0)
			CHECK_GT(oplog_counter_read(&g_rc), 0); /* we hold a reference */
		CHECK(oplog_counter_dec(&g_rc) == 0);
	}
	return NULL;
}

static void t_release(void)
{
	struct oplog_domain *d = oplog_counter_domain_create(NULL);
	atomic_store(&g_released, 0);
	CHECK(oplog_counter_init(&g_rc, d, 1, on_release, &g_released) == 0);
	pthread_t a = test_spawn(rc_thread, NULL), b = test_spawn(rc_thread, NULL);
	test_join(a);
	test_join(b);
	CHECK_EQ(atomic_load(&g_released), 0); /* the creator's reference is still there */
	CHECK_EQ_I(oplog_counter_read(&g_rc), 1);
	CHECK(oplog_counter_dec(&g_rc) == 0);
	CHECK_EQ(atomic_load(&g_released), 0); /* not detected before a synchronize */
	CHECK_EQ_I(oplog_counter_read(&g_rc), 0);
	CHECK_EQ(atomic_load(&g_released), 1);
	CHECK_EQ_I(oplog_counter_read(&g_rc), 0);
	CHECK_EQ(atomic_load(&g_released), 1); /* once */
	oplog_counter_fini(&g_rc);
	oplog_domain_destroy(d);

	/* Released from an eviction; the callback finalises and frees the counter. */
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 1;
	d = oplog_counter_domain_create(&cfg);
	atomic_store(&g_released, 0);
	struct oplog_counter *c = malloc(sizeof(*c)), other;
	CHECK(c);
	CHECK(oplog_counter_init(c, d, 1, on_release_free, NULL) == 0);
	CHECK(oplog_counter_init(&other, d, 0, NULL, NULL) == 0);
	CHECK(oplog_counter_dec(c) == 0);
	CHECK(oplog_counter_inc(&other) == 0); /* evicts c: sum 0, released and freed */
	CHECK_EQ(atomic_load(&g_released), 1);
	CHECK_EQ_I(oplog_counter_read(&other), 1);
	oplog_counter_fini(&other);
	oplog_domain_destroy(d);
}

TEST_CASES_MAIN(oplog_test_main, {"release", t_release})
