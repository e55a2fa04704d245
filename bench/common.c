/*
 * bench/common.c - helpers shared by the tsync-bench subcommands (see common.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_*, asprintf */
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tsync/clock.h>

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
static int parse_list(const char *arg, uint64_t *out64, unsigned *out32, unsigned max, uint64_t lo,
		      uint64_t hi, unsigned flags)
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
		if (end == s || *s == '-' || errno || v < lo || v > hi ||
		    (*end != ',' && *end != '\0'))
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

int bench_parse_u64_list(const char *arg, uint64_t *out, unsigned max, uint64_t lo, uint64_t hi,
			 unsigned flags)
{
	return parse_list(arg, out, NULL, max, lo, hi, flags);
}

int bench_parse_uint_list(const char *arg, unsigned *out, unsigned max, unsigned lo, unsigned hi,
			  unsigned flags)
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

unsigned bench_cpus(int *cpus)
{
	unsigned n = bench_affinity_cpus(cpus);
	if (n == 0)
		cpus[n++] = 0;
	return n;
}

unsigned bench_thread_counts(unsigned *list, unsigned max, unsigned ncpus)
{
	unsigned n = 0;
	for (unsigned i = 1; i <= ncpus && n < max; i++)
		list[n++] = i;
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

int bench_run_report(const char *who, const char *csv, char *const argv[])
{
	if (access(argv[1], R_OK) != 0) {
		fprintf(stderr, "%s: warning: %s not found; wrote %s only\n", who, argv[1], csv);
		return BENCH_SCRIPT_MISSING;
	}
	return bench_run_script(argv);
}

int bench_plot_dir(const char *who, const char *script, const char *dir)
{
	char *argv[] = {(char *)bench_python(), (char *)script, (char *)dir, NULL};
	int rc = bench_run_script(argv);
	if (rc == BENCH_SCRIPT_NO_MATPLOTLIB) {
		fprintf(stderr, "%s: matplotlib missing: %s has the CSV and tables, no plots\n",
			who, dir);
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, "%s: %s exited with %d\n", who, script, rc);
	return rc == 0 ? 0 : 1;
}

/* ---- options ---- */

#define MAX_OPTS 48

static int bad_value(const char *who, const struct bench_opt *o, const char *arg)
{
	fprintf(stderr, "%s: bad --%s '%s' (%" PRIu64 "..%" PRIu64 ")\n", who, o->name, arg, o->lo,
		o->hi);
	return -1;
}

/* One option's argument into its destination: 0, or -1 (printed) or a CALL's stop. */
static int apply_opt(const char *who, const struct bench_opt *o, const char *arg, void *ctx)
{
	switch (o->kind) {
	case BENCH_OPT_STR: *(const char **)o->dst = arg; return 0;
	case BENCH_OPT_SET:
	case BENCH_OPT_CLEAR: *(bool *)o->dst = o->kind == BENCH_OPT_SET; return 0;
	case BENCH_OPT_UINT:
	case BENCH_OPT_U64:
	case BENCH_OPT_SIZE: {
		uint64_t v;
		if (bench_parse_u64_list(arg, &v, 1, o->lo, o->hi, 0) != 1)
			return bad_value(who, o, arg);
		if (o->kind == BENCH_OPT_UINT)
			*(unsigned *)o->dst = (unsigned)v;
		else if (o->kind == BENCH_OPT_U64)
			*(uint64_t *)o->dst = v;
		else
			*(size_t *)o->dst = (size_t)v;
		return 0;
	}
	case BENCH_OPT_UINTS:
	case BENCH_OPT_U64S: {
		int n = o->kind == BENCH_OPT_UINTS
				? bench_parse_uint_list(arg, o->dst, o->max, (unsigned)o->lo,
							(unsigned)o->hi, o->flags)
				: bench_parse_u64_list(arg, o->dst, o->max, o->lo, o->hi, o->flags);
		if (n == BENCH_LIST_TOO_MANY) {
			fprintf(stderr, "%s: --%s: at most %u values\n", who, o->name, o->max);
			return -1;
		}
		if (n < 0) {
			fprintf(stderr, "%s: bad --%s '%s' (values %" PRIu64 "..%" PRIu64 ")\n",
				who, o->name, arg, o->lo, o->hi);
			return -1;
		}
		*o->n = (unsigned)n;
		return 0;
	}
	case BENCH_OPT_SECONDS: return bench_parse_seconds(who, arg, o->dmax, o->dst);
	case BENCH_OPT_POS: {
		char *end;
		errno = 0;
		double v = strtod(arg, &end);
		if (end == arg || *end || errno || !(v > 0) || v > o->dmax) {
			fprintf(stderr, "%s: bad --%s '%s' (0 < x <= %g)\n", who, o->name, arg,
				o->dmax);
			return -1;
		}
		*(double *)o->dst = v;
		return 0;
	}
	case BENCH_OPT_CALL:
	case BENCH_OPT_CALL0: return o->fn(arg, ctx);
	}
	return -1;
}

int bench_getopt(const char *who, int argc, char **argv, const struct bench_opt *opts,
		 void (*usage)(FILE *), void *ctx)
{
	struct option lo[MAX_OPTS + 2];
	char optstring[3 * MAX_OPTS + 2], *p = optstring;
	size_t n = 0;
	for (; opts[n].name; n++) {
		if (n == MAX_OPTS) {
			fprintf(stderr, "%s: more than %d options in the table\n", who, MAX_OPTS);
			return -1;
		}
		bool arg = opts[n].kind != BENCH_OPT_SET && opts[n].kind != BENCH_OPT_CLEAR &&
			   opts[n].kind != BENCH_OPT_CALL0;
		lo[n] = (struct option){opts[n].name, arg ? required_argument : no_argument, NULL,
					opts[n].letter ? opts[n].letter : 256 + (int)n};
		if (opts[n].letter) {
			*p++ = opts[n].letter;
			if (arg)
				*p++ = ':';
		}
	}
	lo[n] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n + 1] = (struct option){NULL, 0, NULL, 0};
	*p++ = 'h';
	*p = '\0';
	optind = 1;
	for (int c; (c = getopt_long(argc, argv, optstring, lo, NULL)) != -1;) {
		if (c == 'h') {
			usage(stdout);
			return BENCH_GETOPT_DONE;
		}
		const struct bench_opt *o = NULL;
		for (size_t i = 0; i < n && !o; i++)
			if (opts[i].letter ? c == opts[i].letter : c == 256 + (int)i)
				o = &opts[i];
		if (!o) {
			usage(stderr);
			return -1;
		}
		int rc = apply_opt(who, o, optarg, ctx);
		if (rc != 0)
			return rc == BENCH_GETOPT_DONE ? rc : -1;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", who, argv[optind]);
		return -1;
	}
	return 0;
}

int bench_each_item(const char *arg, int (*fn)(const char *item, void *ctx), void *ctx)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		return -1;
	int rc = 0;
	for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save))
		rc = fn(t, ctx);
	free(copy);
	return rc;
}

/* ---- name lists ---- */

struct name_list {
	const char *who;
	const struct bench_names *t;
	unsigned *out, max, n;
};

static int name_item(const char *item, void *ctx)
{
	struct name_list *l = ctx;
	const struct bench_names *t = l->t;
	unsigned i = 0;
	while (i < t->n &&
	       strcmp(*(const char *const *)((const char *)t->name + i * t->stride), item) != 0)
		i++;
	if (i == t->n) {
		fprintf(stderr, "%s: unknown %s '%s' (%s)\n", l->who, t->what, item, t->hint);
		return -1;
	}
	if (t->check && t->check(i, item) != 0)
		return -1;
	for (unsigned j = 0; t->unique && j < l->n; j++)
		if (l->out[j] == i) {
			fprintf(stderr, "%s: %s '%s' named twice\n", l->who, t->what, item);
			return -1;
		}
	if (l->n == l->max) {
		fprintf(stderr, "%s: too many %ss\n", l->who, t->what);
		return -1;
	}
	l->out[l->n++] = i;
	return 0;
}

int bench_name_list(const char *who, const struct bench_names *t, const char *arg, unsigned *out,
		    unsigned *n, unsigned max)
{
	struct name_list l = {who, t, out, max, 0};
	if (bench_each_item(arg, name_item, &l) != 0)
		return -1;
	if (l.n == 0) {
		fprintf(stderr, "%s: no %s in '%s'\n", who, t->what, arg);
		return -1;
	}
	*n = l.n;
	return 0;
}

/* ---- a timed run ---- */

void bench_run_init(struct bench_run *r, const char *who, unsigned nthr)
{
	atomic_init(&r->deadline, 0);
	int err = pthread_barrier_init(&r->ready, NULL, nthr + 1);
	if (err == 0 && (err = pthread_barrier_init(&r->go, NULL, nthr + 1)) != 0)
		pthread_barrier_destroy(&r->ready);
	if (err) {
		fprintf(stderr, "%s: pthread_barrier_init: %s\n", who, strerror(err));
		exit(1);
	}
}

void bench_run_destroy(struct bench_run *r)
{
	pthread_barrier_destroy(&r->ready);
	pthread_barrier_destroy(&r->go);
}

uint64_t bench_run_wait(struct bench_run *r)
{
	pthread_barrier_wait(&r->ready);
	pthread_barrier_wait(&r->go); /* main has set the deadline */
	return atomic_load_explicit(&r->deadline, memory_order_acquire);
}

void bench_run_ready(struct bench_run *r)
{
	pthread_barrier_wait(&r->ready);
}

void bench_run_go(struct bench_run *r, uint64_t deadline)
{
	atomic_store_explicit(&r->deadline, deadline, memory_order_release);
	pthread_barrier_wait(&r->go);
}

uint64_t bench_run_start(struct bench_run *r, double seconds)
{
	bench_run_ready(r);
	uint64_t start = tsync_now();
	bench_run_go(r, start + tsync_ns_to_ticks((uint64_t)(seconds * 1e9)));
	return start;
}

/* ---- CSV outputs ---- */

FILE *bench_out_open(const char *who, const char *dir, const char *name, const char *header,
		     char **path)
{
	char *p = NULL;
	FILE *f = NULL;
	if (bench_mkdir_p(dir) != 0) {
		fprintf(stderr, "%s: mkdir %s: %s\n", who, dir, strerror(errno));
		return NULL;
	}
	if (asprintf(&p, "%s/%s", dir, name) < 0) {
		fprintf(stderr, "%s: %s/%s: %s\n", who, dir, name, strerror(ENOMEM));
		return NULL;
	}
	if (!(f = fopen(p, "w"))) {
		fprintf(stderr, "%s: %s: %s\n", who, p, strerror(errno));
		free(p);
		return NULL;
	}
	if (header) {
		fprintf(f, "%s\n", header);
		fflush(f);
	}
	if (path)
		*path = p;
	else
		free(p);
	return f;
}

int bench_csv_open(struct bench_csv *c, const char *who, const char *csv, const char *dir,
		   const char *name, const char *header)
{
	*c = (struct bench_csv){{NULL, NULL}, NULL};
	if ((csv && strcmp(csv, "-") == 0) || (!csv && !dir)) {
		c->f[0] = stdout;
	} else if (csv && !(c->f[0] = fopen(csv, "w"))) {
		fprintf(stderr, "%s: %s: %s\n", who, csv, strerror(errno));
		return -1;
	}
	if (c->f[0]) {
		fprintf(c->f[0], "%s\n", header);
		fflush(c->f[0]);
	}
	if (dir && !(c->f[1] = bench_out_open(who, dir, name, header, &c->path))) {
		bench_csv_close(c);
		return -1;
	}
	return 0;
}

void bench_csv_printf(struct bench_csv *c, const char *fmt, ...)
{
	for (int k = 0; k < 2; k++) {
		if (!c->f[k])
			continue;
		va_list ap;
		va_start(ap, fmt);
		vfprintf(c->f[k], fmt, ap);
		va_end(ap);
		fflush(c->f[k]);
	}
}

void bench_csv_close(struct bench_csv *c)
{
	for (int k = 0; k < 2; k++)
		if (c->f[k] && c->f[k] != stdout)
			fclose(c->f[k]);
	c->f[0] = c->f[1] = NULL;
	free(c->path);
	c->path = NULL;
}
