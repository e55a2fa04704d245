/*
 * bench/sys.c - what the studies ask of the system (contracts in bench/sys.h): the
 * monotonic clock, steal time, real-time throttling, resident memory, memory cgroups.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"

uint64_t bench_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_steal_ns(const int *cpus, unsigned n)
{
	FILE *f = fopen("/proc/stat", "r");
	if (f == NULL)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	char line[512];
	uint64_t sum = 0;
	while (fgets(line, sizeof line, f)) {
		int cpu;
		unsigned long long v[8];
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
			continue;
		for (unsigned i = 0; i < n; i++)
			if (cpus[i] == cpu)
				sum += v[7];
	}
	fclose(f);
	return hz > 0 ? sum * (1000000000ull / (uint64_t)hz) : 0;
}

bool bench_rt_throttled(void)
{
	FILE *f = fopen("/proc/sys/kernel/sched_rt_runtime_us", "r");
	if (f == NULL)
		return false;
	long long rt = -1;
	if (fscanf(f, "%lld", &rt) != 1)
		rt = -1;
	fclose(f);
	return rt >= 0;
}

uint64_t bench_rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE) / 1024u;
}

long bench_peak_rss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* ---- memory cgroups ---- */

/* The memory cgroup this process is in, as a directory, and the file that limits it:
 * cgroup v1 (memory.limit_in_bytes) or v2 (memory.max). 0, or -1 with a message. */
static int cgroup_base(char *dir, size_t len, const char **limit_file)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (f == NULL)
		return -1;
	char line[4096], v2[4096] = "";
	int rc = -1;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		const char *ctrl = c1 + 1, *path = c2 + 1;
		if (strcmp(ctrl, "memory") == 0 || (strncmp(ctrl, "memory,", 7) == 0) ||
		    strstr(ctrl, ",memory")) {
			snprintf(dir, len, "/sys/fs/cgroup/memory%s", path);
			*limit_file = "memory.limit_in_bytes";
			rc = 0;
			break;
		}
		if (ctrl[0] == '\0')
			snprintf(v2, sizeof v2, "%s", path);
	}
	fclose(f);
	if (rc != 0 && v2[0]) {
		snprintf(dir, len, "/sys/fs/cgroup%s", strcmp(v2, "/") ? v2 : "");
		*limit_file = "memory.max";
		rc = 0;
	}
	return rc;
}

static int write_file(const char *dir, const char *name, const char *val)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	int rc = fputs(val, f) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

int bench_cgroup_make(const char *who, const char *prefix, unsigned limit_mib, unsigned serial,
		      char *dir, size_t len)
{
	char base[4096];
	const char *limit_file;
	if (cgroup_base(base, sizeof base, &limit_file) != 0) {
		fprintf(stderr, "%s: --limit-mib: no memory cgroup found in /proc/self/cgroup\n",
			who);
		return -1;
	}
	if (strcmp(limit_file, "memory.max") == 0)
		write_file(base, "cgroup.subtree_control", "+memory"); /* may be on already */
	snprintf(dir, len, "%s/%s-%d-%u", base, prefix, (int)getpid(), serial);
	char val[32];
	snprintf(val, sizeof val, "%llu", (unsigned long long)limit_mib << 20);
	if (mkdir(dir, 0755) != 0 || write_file(dir, limit_file, val) != 0) {
		fprintf(stderr, "%s: --limit-mib: cannot make a memory cgroup at %s: %s\n", who,
			dir, strerror(errno));
		rmdir(dir);
		return -1;
	}
	if (strcmp(limit_file, "memory.limit_in_bytes") == 0)
		write_file(dir, "memory.oom_control",
			   "0"); /* v1: kill, never freeze, at the limit */
	char sw[4300];
	snprintf(sw, sizeof sw, "%s/memory.memsw.limit_in_bytes", dir);
	if (access(sw, W_OK) == 0) /* v1 with swap accounting: no escape into swap */
		write_file(dir, "memory.memsw.limit_in_bytes", val);
	else if (strcmp(limit_file, "memory.max") == 0)
		write_file(dir, "memory.swap.max", "0");
	return 0;
}

int bench_cgroup_enter(const char *dir)
{
	char me[32];
	snprintf(me, sizeof me, "%d", (int)getpid());
	return write_file(dir, "cgroup.procs", me);
}

void bench_cgroup_remove(const char *dir)
{
	for (int i = 0; i < 100 && rmdir(dir) != 0 && errno == EBUSY; i++) {
		struct timespec nap = {0, 10000000L};
		nanosleep(&nap, NULL);
	}
}
