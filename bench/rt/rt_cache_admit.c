/*
 * bench/rt/rt_cache_admit.c - `tsync-bench rt-cache`: the admission interface (strict,
 * relaxed). Measures the costs (a calibrate run, then a probe at the admitted periods),
 * writes them as an admission task set (YAML, python/tsync_rta/admission.py's format),
 * runs `tsync-rta admission FILE --json` and reads back the periods, σ's q and the
 * memory bound G* (RT-SMR (RTAS 2018) §VII-C, Eq. 5); then runs it once more on the same
 * costs under the zero-slack rule (mean costs, slack 1, no cap: what the study admitted
 * before issue 29) for the rate that rule would admit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "rt_cache_internal.h"

/* A cost's statistics as the admission's map, into buf: {mean, p99, p99.9, max} and the
 * --cost-percentile one. Floored at 1 ns: a zero cost would be refused, and the clock's
 * resolution is far below a request. */
static const char *stats_yaml(char *buf, size_t n, const struct cost_stats *c, const char *stat)
{
	double v[5] = {c->mean, c->p99, c->p999, c->max, c->pick};
	for (int i = 0; i < 5; i++)
		v[i] = v[i] > 0.001 ? v[i] : 0.001;
	int k = snprintf(buf, n, "{mean: %.6g, p99: %.6g, p99.9: %.6g, max: %.6g", v[0], v[1], v[2],
			 v[3]);
	bool listed = !strcmp(stat, "mean") || !strcmp(stat, "p99") || !strcmp(stat, "p99.9") ||
		      !strcmp(stat, "max");
	if (!listed && k > 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, ", %s: %.6g", stat, v[4]);
	if (k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, "}");
	return buf;
}

/* The admission task set of design d on `cores` cores with the costs of `cal`. */
static int write_yaml(const char *path, const struct opts *o, enum design d, unsigned cores,
		      const struct result *cal)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, WHO ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	/* obj_size: the item's chunk (header + 16-byte key + 32-byte value, class size) */
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.item_size_max = 1024; /* as rtc_run_one's */
	struct cache *c = cache_create(&cfg);
	uint32_t obj = 0;
	if (c) {
		int k = cache_class_for(c, KEY_LEN, VAL_LEN);
		struct cache_class_stats cs;
		if (k >= 0 && cache_class_stats(c, (unsigned)k, &cs) == 0)
			obj = cs.chunk_size;
		cache_destroy(c);
	}
	fprintf(f,
		"# tsync-bench rt-cache: admission for %s on %u core(s) (RT-SMR (RTAS 2018)\n"
		"# sec. VII-C). e, gamma, alpha, beta: statistics of the measured costs (us;\n"
		"# a job's from its dispatch decision to the end of its bookkeeping); the\n"
		"# admission takes `cost` of each, and keeps `slack` of every period free.\n",
		rtc_dname[d], cores);
	char ge[256], se[256], al[256], be[256];
	stats_yaml(ge, sizeof ge, &cal->get_e, o->cost_stat);
	stats_yaml(se, sizeof se, &cal->set_e, o->cost_stat);
	stats_yaml(al, sizeof al, &cal->alpha, o->cost_stat);
	stats_yaml(be, sizeof be, &cal->beta, o->cost_stat);
	bool smr = d == D_RTPARSEC && cal->alpha.n && cal->beta.n;
	fprintf(f, "cores: %u\n", cores);
	fprintf(f, "alpha: %s\n", smr ? al : "0");
	fprintf(f, "beta: %s\n", smr ? be : "0");
	fprintf(f, "obj_size: %u\n", obj ? obj : 128u);
	fprintf(f, "policy: %s\n", rtc_dpolicy[d]);
	/* the executive runs σ's activation to completion, as it runs every job */
	if (d == D_RTPARSEC)
		fprintf(f, "sigma_nonpreemptive: true\n");
	/* the executive's release jitter, where the costs come from a periodic run (the
	 * probe): its poll (rt_cache_exec.c, run_periodic) */
	char jt[256];
	if (cal->jitter.n)
		fprintf(f, "release_jitter: %s\n",
			stats_yaml(jt, sizeof jt, &cal->jitter, o->cost_stat));
	/* the timer tick and interrupts as calibrate's bare spin saw them (irq_probe) */
	char ir[256];
	if (cal->irq.n && cal->irq.max < cal->irq_period_us)
		fprintf(f, "%sinterference: [{name: platform, e: %s, p: %.6g}]\n",
			o->interference ? "" : "# measured, not modelled (--model-interference): ",
			stats_yaml(ir, sizeof ir, &cal->irq, o->cost_stat), cal->irq_period_us);
	fprintf(f, "tasks:\n");
	/* γ = e: a job runs to completion without preemption, so the whole job is the
	 * section that blocks (and, for gets, delays quiescence) */
	for (unsigned c2 = 0; c2 < cores; c2++) {
		fprintf(f, "  - {name: get%u, e: %s, p: read, core: %u, prio: 2, gamma_r: %s}\n",
			c2, ge, c2, ge);
		fprintf(f,
			"  - {name: set%u, e: %s, p: update, core: %u, prio: 1, gamma_w: %s, "
			"a: 1}\n",
			c2, se, c2, se);
	}
	double rmin = strcmp(o->cost_stat, "mean") ? cal->get_e.pick : cal->get_e.mean;
	rmin = rmin > 0.001 ? rmin : 0.001;
	fprintf(f, "admission:\n");
	fprintf(f, "  update_periods: {min: %g, max: %g, steps: %d}\n", ADM_UPDATE_MIN,
		ADM_UPDATE_MAX, ADM_UPDATE_STEPS);
	fprintf(f, "  read_period: {min: %.6g, max: %g}\n", rmin, ADM_READ_MAX);
	fprintf(f, "  cost: %s\n", o->cost_stat);
	fprintf(f, "  slack: %.6g\n", o->slack);
	if (o->util_cap > 0)
		fprintf(f, "  util_cap: %.6g\n", o->util_cap);
	if (o->q_us > 0)
		fprintf(f, "  q: %.6g\n", o->q_us);
	return fclose(f) == 0 ? 0 : -1;
}

/* Run `<rta> admission YAML --json` and parse its JSON. 0, or -1 (reported). */
static int run_admission(const char *rta, const char *yaml, struct admission *a)
{
	/* the path goes to the shell single-quoted */
	size_t n = strlen(rta) + 4 * strlen(yaml) + 64;
	char *cmd = malloc(n), *p;
	if (!cmd)
		return -1;
	p = cmd + sprintf(cmd, "%s admission '", rta);
	for (const char *s = yaml; *s; s++)
		p = *s == '\'' ? stpcpy(p, "'\\''") : (*p = *s, p + 1);
	/* inflation: one write request per core and job here, where the ILP found the same
	 * periods in every case compared, at a tenth of the time */
	strcpy(p, "' --json --blocking inflation");
	FILE *f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, WHO ": cannot run %s: %s\n", cmd, strerror(errno));
		free(cmd);
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	int st = pclose(f);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (!buf || (code != 0 && code != 1)) {
		fprintf(stderr, WHO ": `%s` exited with %d (set --rta or TSYNC_RTA)\n", cmd, code);
		free(buf);
		free(cmd);
		return -1;
	}
	buf[len] = '\0';
	json_error_t err;
	a->json = json_loads(buf, 0, &err);
	free(buf);
	if (!a->json || !json_is_object(a->json)) {
		fprintf(stderr, WHO ": `%s`: no JSON object on stdout (%s)\n", cmd, err.text);
		free(cmd);
		return -1;
	}
	free(cmd);
	json_t *j = a->json;
	a->schedulable = json_is_true(json_object_get(j, "schedulable"));
	if (a->schedulable != (code == 0)) {
		fprintf(stderr, WHO ": admission: exit status %d but schedulable %s\n", code,
			a->schedulable ? "true" : "false");
		return -1;
	}
	if (!a->schedulable)
		return 0;
	json_t *u = json_object_get(j, "update_period_us"),
	       *r = json_object_get(j, "read_period_us");
	json_t *q = json_object_get(j, "q_us"), *b = json_object_get(j, "bound_objects");
	json_t *t = json_object_get(j, "throughput_rps");
	if (!json_is_number(u) || !json_is_number(r)) {
		fprintf(stderr, WHO ": admission: update_period_us / read_period_us missing\n");
		return -1;
	}
	a->set_p_us = json_number_value(u);
	a->get_p_us = json_number_value(r);
	a->q_us = json_is_number(q) ? json_number_value(q) : 0;
	a->kops = json_is_number(t) ? json_number_value(t) / 1000.0 : 0;
	a->have_bound = json_is_number(b);
	a->bound = a->have_bound ? (long long)llround(json_number_value(b)) : 0;
	return 0;
}

/* Write the admission task set of `cost` (its get_e, set_e, alpha, beta) as
 * OUT/NAME.yaml, run the tool on it, keep its output as OUT/NAME.out.json. */
static int admission_step(const struct opts *o, struct outs *out, enum design d, unsigned cores,
			  const struct result *cost, const char *name, const char *tmpdir,
			  struct admission *a)
{
	char yaml[4096];
	rtc_admission_free(a);
	a->q_us = o->q_us;
	snprintf(yaml, sizeof yaml, "%s/%s.yaml", out->dir ? out->dir : tmpdir, name);
	if (write_yaml(yaml, o, d, cores, cost) != 0)
		return -1;
	const char *rta = o->rta;
	if (!rta || !*rta)
		rta = getenv("TSYNC_RTA");
	if (!rta || !*rta)
		rta = "python3 -m tsync_rta";
	if (run_admission(rta, yaml, a) != 0)
		return -1;
	if (out->dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.out.json", out->dir, name);
		rtc_write_json_file(path, a->json);
	}
	if (a->schedulable)
		fprintf(stderr,
			"  %s (%s, slack %g): get period %.3f us, set period %.3f us, "
			"q %.3f us, %.1f kops\n",
			name, o->cost_stat, o->slack, a->get_p_us, a->set_p_us, a->q_us, a->kops);
	else
		fprintf(stderr, "  %s (%s, slack %g): no candidate schedulable\n", name,
			o->cost_stat, o->slack);
	return 0;
}

void rtc_admission_free(struct admission *a)
{
	json_decref(a->json);
	json_decref(a->zero_slack);
	memset(a, 0, sizeof *a);
	a->zero_slack_kops = NAN;
}

/* After the last admission step of design d (NAME, on `cost`): the zero-slack rule on
 * the same costs (NAME-zero-slack, the same code path) - the request rate the study's
 * admission before issue 29 (average costs, no slack, no cap) would admit from this
 * calibration, beside the rate admitted (a->zero_slack_kops, a->zero_slack). */
static int zero_slack(const struct opts *o, struct outs *out, enum design d, unsigned cores,
		      const struct result *cost, const char *name, const char *tmpdir,
		      struct admission *a)
{
	struct opts zo = *o;
	zo.cost_stat = "mean";
	zo.slack = 1.0;
	zo.util_cap = 0;
	struct admission z = {.json = NULL, .zero_slack = NULL};
	char zname[300];
	snprintf(zname, sizeof zname, "%s-zero-slack", name);
	int rc = admission_step(&zo, out, d, cores, cost, zname, tmpdir, &z);
	if (rc == 0) {
		a->zero_slack_kops = z.schedulable ? z.kops : 0;
		a->zero_slack = json_pack("{s:s, s:f, s:b, s:f, s:f, s:f, s:f}", "cost", "mean",
					  "slack", 1.0, "schedulable", z.schedulable,
					  "get_period_us", z.get_p_us, "set_period_us", z.set_p_us,
					  "q_us", z.q_us, "kops", a->zero_slack_kops);
	}
	rtc_admission_free(&z);
	return rc;
}

/* σ's period for design d under admission a: --q-us, else the admission's q, else the
 * set period (0: no σ). */
double rtc_sigma_q_us(const struct opts *o, enum design d, const struct admission *a)
{
	if (d != D_RTPARSEC)
		return 0;
	return o->q_us > 0 ? o->q_us : a->q_us > 0 ? a->q_us : a->set_p_us;
}

/*
 * The periods of design d on `cores` cores: given (--get-period-us/--set-period-us), or
 * chosen by `tsync-rta admission` from measured costs (the --cost-percentile statistic,
 * --slack, --util-cap), in two steps:
 *  1. calibrate: requests back to back (get, set, α, β), and admit with those costs;
 *  2. probe: run the tasks at the admitted periods for as long as calibrate ran, and
 *     admit again with the JOB costs measured there - from the executive's dispatch
 *     decision to completion, so the clock reads and the priority decision that every
 *     job of this schedule pays are in e - that run's α and β, and its release jitter.
 *     The same requests cost more in the periodic schedule than back to back (each job
 *     starts after a wait, its lines gone cold; measured here up to 2x for sets), so
 *     step 1's periods alone overload the cores. Step 2's are the ones that run: the
 *     admission rests on the overheads of the schedule it admits.
 * After the last step (step 1 when it admitted nothing), the zero-slack rule on the same
 * costs (zero_slack()). sfx ends the names of the files written ("-r2" for a repeat).
 */
int rtc_admit(const struct opts *o, struct outs *out, enum design d, unsigned cores,
	      const uint32_t *trace, uint64_t records, const char *tmpdir, const char *sfx,
	      struct admission *a)
{
	memset(a, 0, sizeof *a);
	a->zero_slack_kops = NAN;
	a->q_us = o->q_us;
	if (o->set_p_us > 0 && (o->mode != M_STRICT || o->get_p_us > 0)) {
		a->set_p_us = o->set_p_us;
		a->get_p_us = o->get_p_us;
		a->schedulable = true;
		a->have_bound = d == D_RTPARSEC; /* -1: not computed */
		a->bound = -1;
		return 0;
	}
	struct plan cp = {.mode = M_CAL};
	double cq = 0;
	if (d == D_RTPARSEC) {
		cq = o->q_us > 0 ? o->q_us : CAL_Q_US;
		cp.pq = rtc_us_ticks(cq);
	}
	struct result cal;
	double cs = o->seconds < CAL_SECONDS ? o->seconds : CAL_SECONDS;
	if (rtc_run_one(d, cores, trace, o->requests, records, &cp, cs, &cal) != 0)
		return -1;
	fprintf(stderr,
		"  calibrate %-9s %u core(s): get %.3f us, set %.3f us, alpha %.3f us, "
		"beta %.4f us\n",
		rtc_dname[d], cores, cal.get_us, cal.set_us, cal.alpha_us, cal.beta_us);
	char name[256];
	snprintf(name, sizeof name, "admission-%s-%u%s", rtc_dname[d], cores, sfx);
	if (rtc_emit_json(out, rtc_run_json(M_CAL, d, cores, 0, 0, cq, 0, cs, &cal), name) != 0)
		return -1;
	if (admission_step(o, out, d, cores, &cal, name, tmpdir, a) != 0)
		return -1;
	if (!a->schedulable) /* what the zero-slack rule admits on these costs */
		return zero_slack(o, out, d, cores, &cal, name, tmpdir, a);
	/* step 2: the probe */
	double pq = rtc_sigma_q_us(o, d, a);
	struct plan pp = {.mode = M_STRICT,
			  .pg = rtc_us_ticks(a->get_p_us),
			  .ps = rtc_us_ticks(a->set_p_us),
			  .pq = pq > 0 ? rtc_us_ticks(pq) : 0};
	struct result pr;
	if (rtc_run_one(d, cores, trace, o->requests, records, &pp, cs, &pr) != 0)
		return -1;
	struct result cost = pr;
	cost.irq = cal.irq; /* measured by calibrate only */
	cost.irq_period_us = cal.irq_period_us;
	if (d == D_RTPARSEC && (!pr.alpha.n || !pr.beta.n)) {
		/* no σ activation (or collection) in the probe: calibrate's */
		cost.alpha = cal.alpha;
		cost.beta = cal.beta;
	}
	if (!pr.get_e.n || !pr.set_e.n) {
		/* no get (or set) job ran in the probe - its executive did not get the CPU
		 * (another task had it): calibrate's request costs, not none (costs of 1 ns
		 * admit periods of nanoseconds, where tsync-rta's fixed point, Eq. 6, gives
		 * up after 100000 steps) */
		const char *what = pr.get_e.n ? "set" : pr.set_e.n ? "get" : "get or set";
		fprintf(stderr, "  probe     %-9s %u core(s): no %s job ran: calibrate's cost\n",
			rtc_dname[d], cores, what);
		if (!pr.get_e.n)
			cost.get_e = cal.get_e;
		if (!pr.set_e.n)
			cost.set_e = cal.set_e;
	}
	fprintf(stderr,
		"  probe     %-9s %u core(s): %s get job %.3f us, set job %.3f us, alpha "
		"%.3f us, beta %.4f us, misses %" PRIu64 "\n",
		rtc_dname[d], cores, o->cost_stat, cost.get_e.pick, cost.set_e.pick,
		cost.alpha.pick, cost.beta.pick, pr.misses);
	snprintf(name, sizeof name, "admission-%s-%u%s-probe", rtc_dname[d], cores, sfx);
	json_t *pj = rtc_run_json(M_STRICT, d, cores, a->get_p_us, a->set_p_us, pq, 0, cs, &pr);
	json_object_set_new(pj, "get_job_us", json_real(pr.get_job_us));
	json_object_set_new(pj, "set_job_us", json_real(pr.set_job_us));
	if (rtc_emit_json(out, pj, name) != 0)
		return -1;
	if (admission_step(o, out, d, cores, &cost, name, tmpdir, a) != 0)
		return -1;
	return zero_slack(o, out, d, cores, &cost, name, tmpdir, a);
}
