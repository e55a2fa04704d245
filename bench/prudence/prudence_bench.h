/*
 * bench/prudence/prudence_bench.h - `tsync-bench prudence pairs|endurance`: allocation
 * with deferred frees, ps_mem and ps_kmem against malloc + liburcu call_rcu (glibc,
 * jemalloc, tcmalloc, mimalloc) and ck_epoch (Prudence (ASPLOS 2016) §5, Figs. 3 and 6).
 */
#ifndef TSYNC_BENCH_PRUDENCE_H
#define TSYNC_BENCH_PRUDENCE_H

int prudence_main(int argc, char **argv, const char *cmdline);

#endif
