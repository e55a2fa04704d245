/*
 * tests/oplog/test_oplog_errors.c - OpLog (MIT TR 2014)'s bad arguments fail with EINVAL
 * (<tsync/oplog.h>, oplog_counter.h, oplog_list.h, oplog_rmap.h).
 */
#include "oplog_test.h"

/* ---- errors ---- */
static void t_errors(void)
{
	struct oplog_type t;
	memset(&t, 0, sizeof(t));
	CHECK_ERRNO(oplog_domain_create(NULL, NULL), 0, EINVAL);
	CHECK_ERRNO(oplog_domain_create(&t, NULL), 0, EINVAL); /* size 0 */
	t.size = sizeof(t);
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 3;
	CHECK_ERRNO(oplog_domain_create(&t, &cfg), 0, EINVAL);
	cfg.slots = 4;
	cfg.order = 17;
	CHECK_ERRNO(oplog_domain_create(&t, &cfg), 0, EINVAL);
	t.log_bytes = 8; /* custom state without push/apply */
	CHECK_ERRNO(oplog_domain_create(&t, NULL), 0, EINVAL);
	t.log_bytes = 0;
	t.capacity = 16; /* smaller than one op */
	CHECK_ERRNO(oplog_domain_create(&t, NULL), 0, EINVAL);
	CHECK_ERRNO(oplog_list_domain_create((enum oplog_list_mode)7, 0, NULL), 0, EINVAL);

	struct oplog_domain *ld = oplog_list_domain_create(OPLOG_LIST_BASIC, 0, NULL);
	CHECK(ld);
	struct oplog_counter c;
	CHECK_ERRNO(oplog_counter_init(&c, ld, 0, NULL, NULL), -1, EINVAL);
	struct oplog_list l;
	CHECK(oplog_list_init(&l, ld) == 0);
	struct oplog_op bad = {NULL, 0, 4, 0, 0};
	CHECK_ERRNO(oplog_log(&l.obj, &bad), -1, EINVAL);
	bad.size = OPLOG_OP_MAX + 8;
	CHECK_ERRNO(oplog_log(&l.obj, &bad), -1, EINVAL);
	bad.size = sizeof(bad); /* exec NULL on an op log */
	CHECK_ERRNO(oplog_log(&l.obj, &bad), -1, EINVAL);
	struct oplog_rmap_mapping m;
	CHECK_ERRNO(oplog_rmap_mapping_init(&m, 5, 4), -1, EINVAL);
	CHECK_ERRNO(oplog_object_init(NULL, ld), -1, EINVAL);
	oplog_list_fini(&l);
	oplog_domain_destroy(ld);
	oplog_domain_destroy(NULL);
}

TEST_CASES_MAIN(oplog_test_main, {"errors", t_errors})
