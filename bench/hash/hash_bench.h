/*
 * bench/hash/hash_bench.h - `tsync-bench hash`: ps_hash against liburcu's rculfhash,
 * CK's ck_hs and a pthread rwlock table (issue 31; bench/hash/hash_bench.c).
 */
#ifndef TSYNC_BENCH_HASH_H
#define TSYNC_BENCH_HASH_H

#define HASH_CSV_HEADER                                                                 \
	"table,threads,update_pct,keys,mops,lookup_p50_ns,lookup_p99_ns,update_p99_ns," \
	"resizes,peak_rss_kib"
#define HASH_RESIZE_CSV_HEADER \
	"table,phase,keys,lookups,lookup_p50_ns,lookup_p99_ns,seconds,resizes,peak_rss_kib"

int hash_main(int argc, char **argv, const char *cmdline);

#endif
