/* bench/oplog/oplog_bench.h - `tsync-bench oplog list|counter|rmap` (OpLog (MIT TR 2014) §7). */
#ifndef TSYNC_BENCH_OPLOG_H
#define TSYNC_BENCH_OPLOG_H
int oplog_main(int argc, char **argv, const char *cmdline);
#endif
