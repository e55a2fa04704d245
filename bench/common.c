/*
 * bench/common.c - helpers shared by the tsync-bench subcommands (see common.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_* */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common.h"

#ifndef TSYNC_BENCH_PYTHON
#define TSYNC_BENCH_PYTHON "python3"
#endif

extern char **environ;

int bench_parse_seconds(const char *who, const char *arg, double max, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(arg, &end);
	if (end == arg || *end || errno || !(*out > 0) || *out > max) {
		fprintf(stderr, "%s: bad --seconds '%s'\n", who, arg);
		return -1;
	}
	return 0;
}

/* The one list parser: values go to out64 or out32, whichever is not NULL. */
static int parse_list(const char *arg, uint64_t *out64, unsigned *out32, unsigned max,
		      uint64_t lo, uint64_t hi, unsigned flags)
{
	unsigned n = 0;
	const char *s = arg;
	for (;;) {
		if ((flags & BENCH_LIST_SKIP_EMPTY) && (*s == ',' || *s == '\0')) {
			if (*s == '\0')
				return n ? (int)n : BENCH_LIST_BAD;
			s++;
			continue;
		}
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (end == s || errno || v < lo || v > hi || (*end != ',' && *end != '\0'))
			return BENCH_LIST_BAD;
		if (n == max)
			return BENCH_LIST_TOO_MANY;
		if (out64)
			out64[n++] = v;
		else
			out32[n++] = (unsigned)v;
		if (*end == '\0')
			return (int)n;
		s = end + 1;
	}
}

int bench_parse_u64_list(const char *arg, uint64_t *out, unsigned max, uint64_t lo,
			 uint64_t hi, unsigned flags)
{
	return parse_list(arg, out, NULL, max, lo, hi, flags);
}

int bench_parse_uint_list(const char *arg, unsigned *out, unsigned max, unsigned lo,
			  unsigned hi, unsigned flags)
{
	return parse_list(arg, NULL, out, max, lo, hi, flags);
}

unsigned bench_affinity_cpus(int *cpus)
{
	cpu_set_t set;
	unsigned n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				cpus[n++] = i;
	return n;
}

int bench_pin_self(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int bench_mkdir_p(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		return -1;
	/* every prefix that ends before a '/', then the whole path; a leading '/' is no
	 * prefix of its own */
	for (char *s = p + (*p != '\0');; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST) {
				int e = errno;
				free(p);
				errno = e;
				return -1;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	free(p);
	return 0;
}

const char *bench_python(void)
{
	const char *py = getenv("TSYNC_BENCH_PYTHON");
	return py && *py ? py : TSYNC_BENCH_PYTHON;
}

int bench_run_script(char *const argv[])
{
	pid_t pid;
	int err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (err)
		return -err;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return BENCH_SCRIPT_KILLED;
	return WIFEXITED(st) ? WEXITSTATUS(st) : BENCH_SCRIPT_KILLED;
}

int bench_plot_dir(const char *who, const char *script, const char *dir)
{
	char *argv[] = {(char *)bench_python(), (char *)script, (char *)dir, NULL};
	int rc = bench_run_script(argv);
	if (rc == BENCH_SCRIPT_NO_MATPLOTLIB) {
		fprintf(stderr, "%s: matplotlib missing: %s has the CSV and tables, no plots\n", who,
			dir);
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, "%s: %s exited with %d\n", who, script, rc);
	return rc == 0 ? 0 : 1;
}
