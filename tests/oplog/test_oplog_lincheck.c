/*
 * tests/oplog/test_oplog_lincheck.c - the linearizability checker (lincheck.h, Wing & Gong)
 * itself rejects a history that is not linearizable and accepts one that is.
 */
#include "oplog_test.h"

/* ---- the checker itself must reject what is not linearizable ---- */
static bool lc_counter_step(void *st, const struct lc_op *op)
{
	int64_t *v = st;
	if (op->kind == 0) {
		++*v;
		return true;
	}
	return *v == op->ret;
}

static void t_lincheck(void)
{
	const struct lc_spec spec = {sizeof(int64_t), lc_counter_step};
	int64_t zero = 0;
	uint64_t S = tsync_clock_skew() + 10;
	/* inc [0,10], read -> 0 starting well after: stale read, not linearizable */
	struct lc_op h[3] = {{1000, 1010, 0, 0, 0, 0, 0},
			     {1020 + 2 * S, 1030 + 2 * S, 1, 1, 0, 0, 0}};
	CHECK(!lc_check(&spec, &zero, h, 2));
	h[1].ret = 1;
	CHECK(lc_check(&spec, &zero, h, 2));
	/* overlapping: read may see 0 or 1 */
	h[1].inv = 1005;
	h[1].ret = 0;
	CHECK(lc_check(&spec, &zero, h, 2));
	/* two reads in sequence cannot see 1 then 0 */
	h[0] = (struct lc_op){1000, 5000 + 10 * S, 0, 0, 0, 0, 0};
	h[1] = (struct lc_op){1010, 1020, 1, 1, 0, 0, 1};
	h[2] = (struct lc_op){1030 + 2 * S, 1040 + 2 * S, 2, 1, 0, 0, 0};
	CHECK(!lc_check(&spec, &zero, h, 3));
	h[2].ret = 1;
	CHECK(lc_check(&spec, &zero, h, 3));
}

TEST_CASES_MAIN(oplog_test_main, {"lincheck", t_lincheck})
