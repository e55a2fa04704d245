/*
 * bench/cache/cache_missing.c - `tsync-bench cache` when the cache core was not built
 * (apps/cached/core needs xxhash.h from Debian libxxhash-dev).
 */
#include <stdio.h>

#include "cache_bench.h"

int cache_main(int argc, char **argv, const char *cmdline)
{
	(void)argc;
	(void)argv;
	(void)cmdline;
	fputs("tsync-bench cache: not built: the cache core needs xxhash.h "
	      "(install libxxhash-dev and reconfigure)\n",
	      stderr);
	return 2;
}
