/*
 * bench/rt/rt_bench.c - `tsync-bench rt` (contract: docs/rt.md §5): one thread per task of a
 * periodic task set; every period_us a task releases a job that makes `reads` read
 * requests (a section that traverses the shared structure), `allocs` write requests
 * (ps_lock the structure's lock, ps_alloc a node, replace a random slot's node with it,
 * ps_free the old one) and busy-spins for the rest of wcet_us. The ps is created with the
 * chosen policy and the ps_mem with the reclamation period q; the library's reclamation
 * observer (ps_mem_config.reclaim_fn) times every quiescence computation (α) and every
 * collection (β per object). Peak pending/live objects are the allocator's exact peaks.
 * The result is one JSON object (jansson).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tsync/tsync.h>

#include "../common.h"
#include "../sys.h"
#include "../hist.h"
#include "rt_bench.h"

#define RT_SLOTS 64u
#define RT_MAX_TASKS 256
#define RT_MAGIC 0x5bd1e9955bd1e995ull

struct rt_task {
	/* parameters */
	uint64_t period_us, wcet_us, allocs, reads;
	int core, prio;
	/* results */
	pthread_t thread;
	bool pinned, fifo;
	uint64_t jobs, misses, resp_max_ns;
	struct hist rd, wr, alpha, beta;         /* ticks; beta: ticks per object */
	uint64_t rd_max, wr_max, al_max, be_max; /* exact maxima, ticks */
	uint64_t reclaims, quiesces, collected;
	uint64_t violations;
	uint64_t rng;
};

struct rt_node {
	struct ps_lock lock; /* the sentinel's lock serialises writers */
	uint64_t inc;
	uint64_t check; /* inc ^ RT_MAGIC */
};

static struct {
	struct ps *ps;
	struct ps_mem *mem;
	int policy;
	size_t obj_size;
	struct rt_node *sentinel;
	struct rt_node *_Atomic slot[RT_SLOTS];
	_Atomic uint64_t inc;
	uint64_t t0_ns, end_ns;
	bool use_sections; /* false for TEMPORAL: enter/exit do no work (Fig. 9) */
	bool fifo;
	_Atomic int start;
} G;

static _Thread_local struct rt_task *self_task;

/* The library's reclamation observer: α and β samples of the reclaiming task. */
static void on_reclaim(struct ps_mem *m, const struct ps_mem_reclaim_info *i, void *arg)
{
	(void)m;
	(void)arg;
	struct rt_task *t = self_task;
	if (t == NULL)
		return;
	t->reclaims++;
	if (i->quiesced) {
		t->quiesces++;
		hist_add(&t->alpha, i->quiesce_ticks);
		if (i->quiesce_ticks > t->al_max)
			t->al_max = i->quiesce_ticks;
	}
	if (i->collected) {
		uint64_t b = (i->collect_ticks + i->collected - 1) / i->collected;
		t->collected += i->collected;
		hist_add(&t->beta, b);
		if (b > t->be_max)
			t->be_max = b;
	}
}

static void sleep_until_ns(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static struct rt_node *node_new(void)
{
	struct rt_node *n = ps_alloc(G.mem);
	if (n == NULL) {
		fprintf(stderr, "tsync-bench rt: ps_alloc: %s\n", strerror(errno));
		exit(1);
	}
	ps_lock_init(&n->lock);
	n->inc = atomic_fetch_add_explicit(&G.inc, 1, memory_order_relaxed) + 1;
	n->check = n->inc ^ RT_MAGIC;
	return n;
}

/* A read request: traverse every slot, validate each node, re-read the first ones. */
static void read_request(struct rt_task *t)
{
	struct rt_node *seen[4];
	uint64_t inc[4];
	if (G.use_sections)
		ps_enter(G.ps);
	for (unsigned i = 0; i < RT_SLOTS; i++) {
		struct rt_node *n = atomic_load_explicit(&G.slot[i], memory_order_acquire);
		uint64_t a = *(volatile uint64_t *)&n->inc, c = *(volatile uint64_t *)&n->check;
		if ((a ^ RT_MAGIC) != c)
			t->violations++;
		if (i < 4) {
			seen[i] = n;
			inc[i] = a;
		}
	}
	for (unsigned i = 0; i < 4; i++)
		if (*(volatile uint64_t *)&seen[i]->inc != inc[i])
			t->violations++; /* reused while we could still see it */
	if (G.use_sections)
		ps_exit(G.ps);
}

/* A write request: take the structure's FIFO lock, replace one slot's node, free it. */
static void write_request(struct rt_task *t)
{
	struct rt_node *n = node_new();
	unsigned i = (unsigned)(xorshift(&t->rng) % RT_SLOTS);
	if (G.use_sections)
		ps_enter(G.ps);
	if (!ps_lock_take(G.sentinel, &G.sentinel->lock)) {
		fprintf(stderr, "tsync-bench rt: the sentinel was freed\n");
		exit(1);
	}
	struct rt_node *old = atomic_exchange_explicit(&G.slot[i], n, memory_order_acq_rel);
	ps_lock_release(G.sentinel, &G.sentinel->lock);
	if (G.use_sections)
		ps_exit(G.ps);
	ps_free(G.mem, old);
}

static void *task_main(void *p)
{
	struct rt_task *t = p;
	self_task = t;
	if (t->core >= 0)
		t->pinned = bench_pin_self(t->core) == 0;
	if (G.fifo) {
		struct sched_param sp = {.sched_priority = t->prio < 1    ? 1
							   : t->prio > 98 ? 98
									  : t->prio};
		t->fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	}
	tsync_thread_register();
	while (!atomic_load_explicit(&G.start, memory_order_acquire))
		sched_yield();
	const uint64_t P = t->period_us * 1000u, E = t->wcet_us * 1000u;
	for (uint64_t k = 0;; k++) {
		uint64_t rel = G.t0_ns + k * P;
		if (rel >= G.end_ns)
			break;
		sleep_until_ns(rel);
		uint64_t start = bench_mono_ns();
		for (uint64_t r = 0; r < t->reads; r++) {
			uint64_t a = tsync_now();
			read_request(t);
			uint64_t d = tsync_now() - a;
			hist_add(&t->rd, d);
			if (d > t->rd_max)
				t->rd_max = d;
		}
		for (uint64_t w = 0; w < t->allocs; w++) {
			uint64_t a = tsync_now();
			write_request(t);
			uint64_t d = tsync_now() - a;
			hist_add(&t->wr, d);
			if (d > t->wr_max)
				t->wr_max = d;
		}
		while (bench_mono_ns() - start < E)
			tsync_arch_relax();
		uint64_t done = bench_mono_ns();
		uint64_t resp = done - rel;
		if (resp > t->resp_max_ns)
			t->resp_max_ns = resp;
		if (resp > P)
			t->misses++;
		t->jobs++;
	}
	return NULL;
}

/* ---- options ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fputs("usage: tsync-bench rt --policy rt|temporal|general [--grace-us G] [--q-us Q]\n"
	      "                      [--obj-size B] --task "
	      "period_us=P,wcet_us=E,allocs=A,reads=R,\n"
	      "                      core=C,prio=K [--task ...] [--seconds S] [--json FILE|-]\n"
	      "                      [--fifo]\n"
	      "\n"
	      "A periodic task set on one ps/ps_mem (RT-SMR (RTAS 2018) sec. VII; docs/rt.md). One "
	      "thread\n"
	      "per task, pinned to CPU `core` when it exists. Every period_us a job is released:\n"
	      "`reads` read requests (a section that traverses the 64-slot shared structure),\n"
	      "`allocs` write requests (FIFO ps_lock, ps_alloc a node, replace a random slot's\n"
	      "node, ps_free the old one), then a busy-spin to wcet_us after the job's start.\n"
	      "TEMPORAL readers do not call ps_enter/ps_exit (RT-SMR (RTAS 2018) Fig. 9).\n"
	      "\n"
	      "  --policy P      rt, temporal or general\n"
	      "  --grace-us G    TEMPORAL's grace period (required for temporal)\n"
	      "  --q-us Q        reclamation period q (default 0: reclaim on every free)\n"
	      "  --obj-size B    object size in bytes (default 64, at least 24)\n"
	      "  --task SPEC     a task (repeatable); keys period_us and wcet_us are required,\n"
	      "                  allocs, reads (default 0), core (default -1: unpinned), prio\n"
	      "                  (default 0; informational unless --fifo)\n"
	      "  --seconds S     how long jobs are released (default 2)\n"
	      "  --json FILE|-   where the JSON result goes (default -: stdout)\n"
	      "  --fifo          run tasks under SCHED_FIFO at their prio (1..98) when\n"
	      "                  permitted (off by default: busy-spinning FIFO threads starve\n"
	      "                  everything else on their CPU)\n"
	      "\n"
	      "JSON: policy, q_us, grace_us, obj_size, seconds, ticks_per_us, skew_ticks,\n"
	      "alpha_ns_max/p99 (one quiescence computation), beta_ns_max/p99 (collecting one\n"
	      "object), read_ns_max, write_ns_max (request times), peak_pending, peak_live,\n"
	      "max_wait_us, tasks[] {period_us, wcet_us, allocs, reads, core, prio, jobs,\n"
	      "deadline_misses, response_us_max}, and more (docs/rt.md).\n",
	      f);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_task(char *spec, struct rt_task *t)
{
	memset(t, 0, sizeof(*t));
	t->core = -1;
	bool have_p = false, have_e = false;
	for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		if (eq == NULL) {
			fprintf(stderr, "tsync-bench rt: --task: '%s' is not key=value\n", tok);
			return -1;
		}
		*eq = '\0';
		const char *k = tok, *v = eq + 1;
		uint64_t x;
		if (strcmp(k, "core") == 0 || strcmp(k, "prio") == 0) {
			char *end;
			long l = strtol(v, &end, 10);
			if (end == v || *end || l < -1 || l > 100000) {
				fprintf(stderr, "tsync-bench rt: --task: bad %s '%s'\n", k, v);
				return -1;
			}
			if (k[0] == 'c')
				t->core = (int)l;
			else
				t->prio = (int)l;
			continue;
		}
		if (parse_u64(v, &x) != 0) {
			fprintf(stderr, "tsync-bench rt: --task: bad %s '%s'\n", k, v);
			return -1;
		}
		if (strcmp(k, "period_us") == 0) {
			t->period_us = x;
			have_p = true;
		} else if (strcmp(k, "wcet_us") == 0) {
			t->wcet_us = x;
			have_e = true;
		} else if (strcmp(k, "allocs") == 0) {
			t->allocs = x;
		} else if (strcmp(k, "reads") == 0) {
			t->reads = x;
		} else {
			fprintf(stderr, "tsync-bench rt: --task: unknown key '%s'\n", k);
			return -1;
		}
	}
	if (!have_p || !have_e || t->period_us == 0 || t->period_us > 60000000u) {
		fprintf(stderr, "tsync-bench rt: --task needs period_us (1..6e7) and wcet_us\n");
		return -1;
	}
	if (t->allocs > 1000000 || t->reads > 1000000) {
		fprintf(stderr, "tsync-bench rt: --task: allocs/reads too large\n");
		return -1;
	}
	return 0;
}

/* --task, repeated: the task set so far. */
struct task_list {
	struct rt_task *t;
	int n;
};

static int opt_task(const char *arg, void *ctx)
{
	struct task_list *tl = ctx;
	if (tl->n == RT_MAX_TASKS) {
		fprintf(stderr, "tsync-bench rt: at most %d tasks\n", RT_MAX_TASKS);
		return -1;
	}
	char *spec = strdup(arg);
	int rc = spec ? parse_task(spec, &tl->t[tl->n]) : -1;
	free(spec);
	if (rc != 0)
		return -1;
	tl->n++;
	return 0;
}

static double ticks_ns(uint64_t ticks)
{
	return (double)ticks / tsync_ticks_per_ns();
}

int rt_main(int argc, char **argv, const char *cmdline)
{
	static struct rt_task tasks[RT_MAX_TASKS];
	const char *policy_s = NULL, *json_path = "-";
	uint64_t grace_us = 0, q_us = 0, obj_size = 64;
	double seconds = 2.0;
	bool fifo = false;
	struct task_list tl = {tasks, 0};
	const struct bench_opt opts[] = {
		BENCH_O_STR("policy", 0, &policy_s),
		BENCH_O_NUM("grace-us", 0, BENCH_OPT_U64, &grace_us, 0, UINT64_MAX),
		BENCH_O_NUM("q-us", 0, BENCH_OPT_U64, &q_us, 0, UINT64_MAX),
		BENCH_O_NUM("obj-size", 0, BENCH_OPT_U64, &obj_size, 0, UINT64_MAX),
		BENCH_O_FN("task", 0, BENCH_OPT_CALL, opt_task),
		/* 0 < S < 1e5: the largest double below 1e5 is the inclusive bound */
		BENCH_O_DBL("seconds", 0, BENCH_OPT_SECONDS, &seconds, nextafter(1e5, 0)),
		BENCH_O_STR("json", 0, &json_path),
		BENCH_O_SET("fifo", 0, &fifo),
		BENCH_O_END,
	};
	int prc = bench_getopt("tsync-bench rt", argc, argv, opts, usage, &tl);
	if (prc != 0)
		return prc == BENCH_GETOPT_DONE ? 0 : 2;
	int ntasks = tl.n;
	if (policy_s == NULL || ntasks == 0) {
		fprintf(stderr, "tsync-bench rt: --policy and at least one --task are required\n");
		usage(stderr);
		return 2;
	}
	int policy;
	if (strcmp(policy_s, "rt") == 0)
		policy = PS_POLICY_RT;
	else if (strcmp(policy_s, "temporal") == 0)
		policy = PS_POLICY_TEMPORAL;
	else if (strcmp(policy_s, "general") == 0)
		policy = PS_POLICY_GENERAL;
	else {
		fprintf(stderr, "tsync-bench rt: unknown policy '%s' (rt|temporal|general)\n",
			policy_s);
		return 2;
	}
	if ((policy == PS_POLICY_TEMPORAL) != (grace_us != 0)) {
		fprintf(stderr,
			"tsync-bench rt: --grace-us is required for, and only for, temporal\n");
		return 2;
	}
	if (obj_size < sizeof(struct rt_node) || obj_size > (1u << 20)) {
		fprintf(stderr, "tsync-bench rt: --obj-size must be %zu..1048576\n",
			sizeof(struct rt_node));
		return 2;
	}

	struct ps_config pc = PS_CONFIG_INIT;
	pc.policy = policy;
	pc.grace_ns = grace_us * 1000u;
	G.ps = ps_create(&pc);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.reclaim_period_ns = q_us * 1000u;
	mc.accounting = PS_MEM_ACCOUNT_EXACT;
	mc.reclaim_fn = on_reclaim;
	G.mem = G.ps ? ps_mem_create(G.ps, obj_size, &mc) : NULL;
	if (G.mem == NULL) {
		fprintf(stderr, "tsync-bench rt: ps_create/ps_mem_create: %s\n", strerror(errno));
		return 1;
	}
	G.policy = policy;
	G.obj_size = obj_size;
	G.use_sections = policy != PS_POLICY_TEMPORAL;
	G.fifo = fifo;
	G.sentinel = node_new();
	for (unsigned i = 0; i < RT_SLOTS; i++)
		atomic_store(&G.slot[i], node_new());

	uint64_t seed = bench_mono_ns() | 1;
	for (int i = 0; i < ntasks; i++) {
		tasks[i].rng = seed + (uint64_t)i * 0x9E3779B97F4A7C15ull;
		if (pthread_create(&tasks[i].thread, NULL, task_main, &tasks[i]) != 0) {
			fprintf(stderr, "tsync-bench rt: pthread_create failed\n");
			return 1;
		}
	}
	G.t0_ns = bench_mono_ns() + 20000000u; /* first release in 20 ms: every thread is set up */
	G.end_ns = G.t0_ns + (uint64_t)(seconds * 1e9);
	atomic_store_explicit(&G.start, 1, memory_order_release);
	for (int i = 0; i < ntasks; i++)
		pthread_join(tasks[i].thread, NULL);

	struct ps_mem_stats st;
	ps_mem_stats(G.mem, &st);
	struct hist rd = {{0}}, wr = {{0}}, al = {{0}}, be = {{0}};
	uint64_t viol = 0, reclaims = 0, quiesces = 0, collected = 0;
	uint64_t rd_max = 0, wr_max = 0, al_max = 0, be_max = 0;
	json_t *jt = json_array();
	for (int i = 0; i < ntasks; i++) {
		struct rt_task *t = &tasks[i];
		hist_merge(&rd, &t->rd);
		hist_merge(&wr, &t->wr);
		hist_merge(&al, &t->alpha);
		hist_merge(&be, &t->beta);
		viol += t->violations;
		reclaims += t->reclaims;
		quiesces += t->quiesces;
		collected += t->collected;
		rd_max = t->rd_max > rd_max ? t->rd_max : rd_max;
		wr_max = t->wr_max > wr_max ? t->wr_max : wr_max;
		al_max = t->al_max > al_max ? t->al_max : al_max;
		be_max = t->be_max > be_max ? t->be_max : be_max;
		json_array_append_new(
			jt,
			json_pack("{s:I, s:I, s:I, s:I, s:i, s:i, s:I, s:I, s:f, s:b, s:b}",
				  "period_us", (json_int_t)t->period_us, "wcet_us",
				  (json_int_t)t->wcet_us, "allocs", (json_int_t)t->allocs, "reads",
				  (json_int_t)t->reads, "core", t->core, "prio", t->prio, "jobs",
				  (json_int_t)t->jobs, "deadline_misses", (json_int_t)t->misses,
				  "response_us_max", (double)t->resp_max_ns / 1000.0, "pinned",
				  t->pinned, "fifo", t->fifo));
	}
	json_t *root = json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:I, s:I}", "policy", policy_s,
				 "q_us", (json_int_t)q_us, "grace_us", (json_int_t)grace_us,
				 "obj_size", (json_int_t)obj_size, "seconds", seconds,
				 "ticks_per_us", tsync_ticks_per_ns() * 1000.0, "skew_ticks",
				 (json_int_t)tsync_clock_skew(), "ps_skew_ticks",
				 (json_int_t)ps_skew_ticks(G.ps));
	json_object_set_new(root, "alpha_ns_max", json_real(ticks_ns(al_max)));
	json_object_set_new(root, "alpha_ns_p99", json_real(ticks_ns(hist_quantile(&al, 0.99))));
	json_object_set_new(root, "beta_ns_max", json_real(ticks_ns(be_max)));
	json_object_set_new(root, "beta_ns_p99", json_real(ticks_ns(hist_quantile(&be, 0.99))));
	json_object_set_new(root, "read_ns_max", json_real(ticks_ns(rd_max)));
	json_object_set_new(root, "read_ns_p99", json_real(ticks_ns(hist_quantile(&rd, 0.99))));
	json_object_set_new(root, "write_ns_max", json_real(ticks_ns(wr_max)));
	json_object_set_new(root, "write_ns_p99", json_real(ticks_ns(hist_quantile(&wr, 0.99))));
	json_object_set_new(root, "peak_pending", json_integer((json_int_t)st.peak_pending));
	json_object_set_new(root, "peak_live", json_integer((json_int_t)st.peak_live));
	json_object_set_new(root, "peak_footprint", json_integer((json_int_t)st.peak_footprint));
	json_object_set_new(root, "max_wait_us", json_real(ticks_ns(st.max_wait_ticks) / 1000.0));
	json_object_set_new(root, "alpha_samples", json_integer((json_int_t)hist_count(&al)));
	json_object_set_new(root, "beta_samples", json_integer((json_int_t)hist_count(&be)));
	json_object_set_new(root, "reclamations", json_integer((json_int_t)reclaims));
	json_object_set_new(root, "quiescences", json_integer((json_int_t)quiesces));
	json_object_set_new(root, "collected", json_integer((json_int_t)collected));
	json_object_set_new(root, "allocs", json_integer((json_int_t)st.allocs));
	json_object_set_new(root, "frees", json_integer((json_int_t)st.frees));
	json_object_set_new(root, "live_objects_static", json_integer(RT_SLOTS + 1));
	json_object_set_new(root, "violations", json_integer((json_int_t)viol));
	json_object_set_new(root, "clock", json_string(tsync_clock_source_name()));
	json_object_set_new(root, "command", json_string(cmdline));
	json_object_set_new(root, "tasks", jt);

	int rc = 0;
	FILE *f = strcmp(json_path, "-") == 0 ? stdout : fopen(json_path, "w");
	if (f == NULL) {
		fprintf(stderr, "tsync-bench rt: %s: %s\n", json_path, strerror(errno));
		rc = 1;
	} else {
		if (json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
			rc = 1;
		fputc('\n', f);
		if (f != stdout && fclose(f) != 0)
			rc = 1;
	}
	json_decref(root);
	ps_mem_destroy(G.mem);
	ps_destroy(G.ps);
	fprintf(stderr,
		"rt: policy %s q=%" PRIu64 " us: alpha max %.0f ns, beta max %.0f ns, read max "
		"%.0f ns, write max %.0f ns, peak pending %" PRIu64 ", peak live %" PRIu64
		", violations %" PRIu64 "\n",
		policy_s, q_us, ticks_ns(al_max), ticks_ns(be_max), ticks_ns(rd_max),
		ticks_ns(wr_max), st.peak_pending, st.peak_live, viol);
	if (viol) {
		fprintf(stderr, "tsync-bench rt: %" PRIu64 " readers saw a reused node\n", viol);
		rc = 1;
	}
	return rc;
}
