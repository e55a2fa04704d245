/*
 * bench/cached-net/cached_net_bench.c - `tsync-bench cached-net`: runs cached_net.py (the
 * network comparison of tsync-cached with stock memcached, driven by memcaslap) with this
 * build's tsync-cached as --server unless the arguments name one. The script does the
 * work: it starts two server processes and an external load generator, which is a job
 * for a script, not for this process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cached_net_bench.h"
#include "common.h"

#ifndef TSYNC_CACHED_NET_PY
#define TSYNC_CACHED_NET_PY "bench/cached-net/cached_net.py"
#endif
#ifndef TSYNC_CACHED_BIN
#define TSYNC_CACHED_BIN "build/tsync-cached"
#endif

int cached_net_main(int argc, char **argv, const char *cmdline)
{
	(void)cmdline; /* the script writes its own COMMAND.txt */
	const char *py = bench_python();
	int has_server = 0;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--server") == 0 || strncmp(argv[i], "--server=", 9) == 0)
			has_server = 1;
	char **av = calloc((size_t)argc + 5, sizeof(*av));
	if (av == NULL) {
		perror("tsync-bench cached-net");
		return 1;
	}
	int n = 0;
	av[n++] = (char *)py;
	av[n++] = (char *)TSYNC_CACHED_NET_PY;
	if (!has_server) {
		av[n++] = (char *)"--server";
		av[n++] = (char *)TSYNC_CACHED_BIN;
	}
	for (int i = 1; i < argc; i++)
		av[n++] = argv[i];
	av[n] = NULL;
	fflush(NULL);
	execvp(py, av);
	fprintf(stderr, "tsync-bench cached-net: cannot run %s %s: %s\n", py, TSYNC_CACHED_NET_PY,
		strerror(errno));
	free(av);
	return 1;
}
