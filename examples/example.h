/*
 * examples/example.h - what the threaded examples (rcu_list.c, node_lock.c, ns_fd.c)
 * share, as Concurrency Kit's regressions share common.h: POSIX 2008, the C library
 * headers they use, and CHECK, a condition checked in every build (the examples are
 * built with -DNDEBUG too) that prints file, line and condition, then aborts.
 * Include it first: _POSIX_C_SOURCE must come before any system header.
 */
#ifndef TSYNC_EXAMPLE_H
#define TSYNC_EXAMPLE_H

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                              \
		}                                                                             \
	} while (0)

#endif
