/*
 * bench/tsync_bench.c - `tsync-bench`: benchmarks of tsync against its peers.
 * Subcommands are listed in cmds[] below; each parses its own options.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smr/smr_run.h"
#include "rlu/rlu_bench.h"
#include "rt/rt_bench.h"
#include "rt/rt_cache_bench.h"
#include "cache/cache_bench.h"
#include "oplog/oplog_bench.h"
#include "cached-net/cached_net_bench.h"
#include "prudence/prudence_bench.h"
#include "vmdb/vmdb_bench.h"
#include "hash/hash_bench.h"

/* One row per subcommand; each parses its own options from argv[0] = its name. */
struct bench_cmd {
	const char *name;
	int (*main)(int argc, char **argv, const char *cmdline);
	const char *help;
};

static const struct bench_cmd cmds[] = {
	{"smr", smr_main,
	 "ParSec SMR micro-benchmark against liburcu, ck_epoch, ck_brlock and\n"
	 "             pthread_rwlock (ParSec, EuroSys 2016, sec. 5.1); see\n"
	 "             tsync-bench smr --help"},
	{"rlu", rlu_main,
	 "list / hash table with RCU, RLU, MV-RLU, ParSec and rwlock (the RLU\n"
	 "             study, Appl. Sci. 2022, sec. 5); see tsync-bench rlu --help"},
	{"rt", rt_main,
	 "periodic task set on the rt/temporal policies: alpha, beta, request\n"
	 "             times, peak pending (RT-SMR, RTAS 2018, sec. VII); see\n"
	 "             tsync-bench rt --help"},
	{"rt-cache", rt_cache_main,
	 "memcached under periodic get/set tasks: rt-parsec, mcs, pf-rw; calibrate,\n"
	 "             strict and relaxed admission (RT-SMR, RTAS 2018, sec. VII-C);\n"
	 "             see tsync-bench rt-cache --help"},
	{"cache", cache_main,
	 "in-process memcached study on the tsync-cached core: ps, ps-nocrp,\n"
	 "             mcs-clock, locked (ParSec, EuroSys 2016, sec. 5.2); see\n"
	 "             tsync-bench cache --help"},
	{"oplog", oplog_main,
	 "OpLog list / counter / rmap against lock-free, atomic, per-CPU and mutex\n"
	 "             peers (OpLog, MIT TR 2014, sec. 7); see tsync-bench oplog --help"},
	{"prudence", prudence_main,
	 "alloc + deferred-free pairs and a copy-on-write endurance run: ps_mem,\n"
	 "             ps_kmem, malloc/jemalloc/tcmalloc/mimalloc + call_rcu, ck_epoch\n"
	 "             (Prudence, ASPLOS 2016, sec. 5); see tsync-bench prudence --help"},
	{"vmdb", vmdb_main,
	 "the virtual-memory mapping database (apps/vmdb: ps, global-lock,\n"
	 "             frame-lock) against liburcu and Linux mmap/munmap on a Metis-like\n"
	 "             trace (ParSec, EuroSys 2016, sec. 5.3); see tsync-bench vmdb --help"},
	{"hash", hash_main,
	 "resizable hash tables: ps-hash (<tsync/ps_hash.h>) against urcu-lfht,\n"
	 "             ck-hs and a pthread rwlock table (issue 31, docs/hash.md); see\n"
	 "             tsync-bench hash --help"},
	{"cached-net", cached_net_main,
	 "tsync-cached against stock memcached over TCP, driven by memcaslap\n"
	 "             (bench/cached-net/cached_net.py); see tsync-bench cached-net --help"},
};

static void usage(FILE *f)
{
	fputs("usage: tsync-bench COMMAND [options]\ncommands:\n", f);
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
}

/* The command line, shell-quoted where needed, for the report's header. */
static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += 4 * strlen(argv[i]) + 3;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool plain =
			*a != '\0' && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
						"UVWXYZ0123456789-_.,/=:+@%") == strlen(a);
		if (i)
			*p++ = ' ';
		if (plain) {
			p = stpcpy(p, a);
			continue;
		}
		*p++ = '\'';
		for (; *a; a++) {
			if (*a == '\'')
				p = stpcpy(p, "'\\''");
			else
				*p++ = *a;
		}
		*p++ = '\'';
	}
	*p = '\0';
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		char *cmdline = join_args(argc, argv);
		int rc = cmds[i].main(argc - 1, argv + 1, cmdline ? cmdline : cmds[i].name);
		free(cmdline);
		return rc;
	}
	fprintf(stderr, "tsync-bench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
