/*
 * tests/oplog/oplog_test.h - what the test_oplog_*.c unit files share: their includes and
 * the main that runs a file's cases (all of them, or the one named).
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

struct oplog_test_case {
	const char *name;
	void (*fn)(void);
};

/* test_oplog_NAME [CASE]: every case of the file, or the one named. */
static inline int oplog_test_main(int argc, char **argv, const struct oplog_test_case *cases,
				  size_t n)
{
	/* Shorter than ctest's TIMEOUT (60 s for one case, 120 s for all: CMakeLists.txt),
	 * so that a hang fails with the watchdog's message. */
	test_watchdog(argc > 1 ? 50 : 110);
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
			continue;
		any = true;
		cases[i].fn();
		test_log("%s: ok", cases[i].name);
	}
	CHECK_MSG(any, "unknown case '%s'", argc > 1 ? argv[1] : "");
	return 0;
}

#endif

