/*
 * bench/vmdb/vmdb_bench.h - `tsync-bench vmdb`: the virtual-memory mapping database of
 * apps/vmdb against its lock-based peers, a liburcu design and Linux mmap/munmap, on a
 * synthetic Metis-like trace (ParSec (EuroSys 2016) §5.3, Figs. 9-10).
 */
#ifndef TSYNC_BENCH_VMDB_H
#define TSYNC_BENCH_VMDB_H

int vmdb_bench_main(int argc, char **argv, const char *cmdline);

#endif
