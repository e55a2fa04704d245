/*
 * bench/rt/rt_cache_bench.h - `tsync-bench rt-cache`: the memcached application study of RT-SMR
 * (RTAS 2018) §VII-C (Figs. 14-15) on the tsync-cached core: rt-parsec, mcs and pf-rw
 * under partitioned fixed-priority periodic get/set tasks (bench/README.md, "rt-cache").
 */
#ifndef TSYNC_BENCH_RT_CACHE_H
#define TSYNC_BENCH_RT_CACHE_H

int rt_cache_main(int argc, char **argv, const char *cmdline);

#endif
