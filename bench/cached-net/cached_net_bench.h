/* bench/cached-net/cached_net_bench.h - `tsync-bench cached-net` (runs cached_net.py). */
#ifndef TSYNC_BENCH_CACHED_NET_CMD_H
#define TSYNC_BENCH_CACHED_NET_CMD_H
int cached_net_main(int argc, char **argv, const char *cmdline);
#endif
