/*
 * bench/cache/cache_bench.h - `tsync-bench cache`: the in-process memcached study of
 * ParSec (EuroSys 2016) §5.2 (Figs. 7-8) on apps/cached/core. See cache_bench.c.
 */
#ifndef TSYNC_BENCH_CACHE_H
#define TSYNC_BENCH_CACHE_H

/* Entry point of the subcommand (argv[0] = "cache"); returns the exit status. */
int cache_main(int argc, char **argv, const char *cmdline);

#endif
