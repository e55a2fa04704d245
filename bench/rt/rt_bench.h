/*
 * bench/rt/rt_bench.h - `tsync-bench rt`: a periodic real-time workload on the RT-ParSec and
 * temporal policies (RT-SMR (RTAS 2018) §VII), measuring α, β, request times and peak pending
 * objects for the memory bound of Eq. 5 (docs/rt.md).
 */
#ifndef TSYNC_BENCH_RT_H
#define TSYNC_BENCH_RT_H

int rt_main(int argc, char **argv, const char *cmdline);

#endif
