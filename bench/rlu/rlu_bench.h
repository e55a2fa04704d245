/* bench/rlu/rlu_bench.h - `tsync-bench rlu` (RLU study (Appl. Sci. 2022) §5). */
#ifndef TSYNC_BENCH_RLU_H
#define TSYNC_BENCH_RLU_H
int rlu_main(int argc, char **argv, const char *cmdline);
#endif
