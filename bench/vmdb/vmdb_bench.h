/*
 * bench/vmdb/vmdb_bench.h - `tsync-bench vmdb`: the virtual-memory mapping database of
 * apps/vmdb against its lock-based peers, a liburcu design and Linux mmap/munmap, on a
 * synthetic Metis-like trace (ParSec (EuroSys 2016) §5.3, Figs. 9-10).
 */
#ifndef TSYNC_BENCH_VMDB_H
#define TSYNC_BENCH_VMDB_H

#include <stdio.h>

int vmdb_main(int argc, char **argv, const char *cmdline);

/* ns_lookup.c: ps_ns_lookup with and without a section per lookup against a bare
 * radix-trie walk, at `threads` threads, `rounds` recorded rounds; rows to outs[0..1]
 * (either may be NULL) with the backend and layout columns `backend` and `layout` (the
 * run's: the walk itself shares nothing). 0, or 1 on failure. */
int ns_lookup_bench(unsigned threads, unsigned rounds, const char *backend, const char *layout,
		    FILE *const outs[2]);

#endif
