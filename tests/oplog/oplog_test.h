/*
 * tests/oplog/oplog_test.h - what the test_oplog_*.c unit files share: their includes and
 * the main that runs a file's cases (all of them, or the ones named).
 */
#ifndef TSYNC_TEST_OPLOG_TEST_H
#define TSYNC_TEST_OPLOG_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>

#include "check.h"
#include "lincheck.h"

#include <tsync/oplog.h>
#include <tsync/oplog_counter.h>
#include <tsync/oplog_list.h>
#include <tsync/oplog_rmap.h>
#include <tsync/thread.h>

/* The main of each test_oplog_* file (TEST_CASES_MAIN(oplog_test_main, ...)):
 * `test_oplog_NAME [CASE...]` runs every case of the file, or the ones named. */
static inline int oplog_test_main(int argc, char **argv, const struct test_case *cases, size_t n)
{
	/* Shorter than ctest's TIMEOUT (60 s for one case, 120 s for all: CMakeLists.txt),
	 * so that a hang fails with the watchdog's message. */
	test_watchdog(argc > 1 ? 50 : 110);
	test_run_cases(argc, argv, cases, n);
	return 0;
}

#endif
