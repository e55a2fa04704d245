/*
 * bench/rt/rt_cache_missing.c - `tsync-bench rt-cache` when the cache core was not built
 * (apps/cached/core needs xxhash.h from Debian libxxhash-dev).
 */
#include <stdio.h>

#include "rt_cache_bench.h"

int rt_cache_main(int argc, char **argv, const char *cmdline)
{
	(void)argc;
	(void)argv;
	(void)cmdline;
	fputs("tsync-bench rt-cache: not built: the cache core needs xxhash.h "
	      "(install libxxhash-dev and reconfigure)\n",
	      stderr);
	return 2;
}
