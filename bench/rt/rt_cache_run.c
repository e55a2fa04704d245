/*
 * bench/rt/rt_cache_run.c - `tsync-bench rt-cache`: one run - the cache of one design,
 * preloaded; one executive thread per core (rt_cache_exec.c) over its partition of the
 * trace; their results merged (misses explained or not, costs, response-time
 * percentiles, the allocators' peak of pending objects); and the run's CSV row and JSON.
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
#include <unistd.h>

#include <tsync/clock.h>
#include <tsync/ps.h>
#include <tsync/ps_mem.h>

#include "rt_cache_internal.h"

double rtc_ticks_us(double t)
{
	return t / tsync_ticks_per_ns() / 1000.0;
}

uint64_t rtc_us_ticks(double us)
{
	uint64_t t = tsync_ns_to_ticks((uint64_t)llround(us * 1000.0));
	return t ? t : 1;
}

/* The largest value of the bucket that holds the q-quantile (rank ceil(q x count)), ticks:
 * a cost statistic never below the costs it stands for. 0 when empty. */
static uint64_t hist_upper(const struct hist *h, double q)
{
	uint64_t n = hist_count(h), rank = (uint64_t)ceil(q * (double)n), c = 0;
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; n && i < HIST_BUCKETS; i++) {
		c += h->b[i];
		if (c >= rank)
			return hist_bucket_low(i) + hist_bucket_width(i) - 1;
	}
	return 0;
}

/* A cost's statistics (us) from its histogram (ticks) and the sum of its samples. */
static struct cost_stats cost_of(const struct hist *h, uint64_t sum)
{
	struct cost_stats c = {.n = hist_count(h)};
	if (!c.n)
		return c;
	c.mean = rtc_ticks_us((double)sum / (double)c.n);
	c.p99 = rtc_ticks_us((double)hist_upper(h, 0.99));
	c.p999 = rtc_ticks_us((double)hist_upper(h, 0.999));
	c.max = rtc_ticks_us((double)hist_upper(h, 1.0));
	c.pick = rtc_cost_q < 0 ? c.mean : rtc_ticks_us((double)hist_upper(h, rtc_cost_q));
	return c;
}

/*
 * RT-SMR (RTAS 2018) Eq. 5 (Theorem 6.3) with measured inputs, the bound that holds for
 * the run as it happened: G = Σ_i (1 + ⌈(δ + r_σ* + r_i) / p_i⌉) a_i over the set tasks
 * (one per core, a_i = 1), δ = L* + Δ* + q* (Eq. 3), with Δ* the longest section
 * measured (a get: rt-parsec's read-side section), L* = r_i the longest set response and
 * r_σ* σ's longest response. The admission's G* is the same formula on the analysed
 * values, so it holds only while no section is longer than its Δ*: a get stalled by
 * an interrupt or the hypervisor holds back every σ for the whole stall.
 * python/tsync_rta/analysis.py, garbage_bound, is the reference.
 */
static long long measured_bound(unsigned cores, uint64_t ps, uint64_t pq, uint64_t section,
				uint64_t set_resp, uint64_t sigma_resp)
{
	uint64_t w = set_resp + section + pq + sigma_resp + set_resp;
	return (long long)cores * (long long)(1 + (w + ps - 1) / ps);
}

static uint64_t hist_ns(const struct hist *h, double q)
{
	return hist_count(h) ? tsync_ticks_to_ns(hist_quantile(h, q)) : 0;
}

int rtc_run_one(enum design d, unsigned ncores, const uint32_t *trace, uint64_t nreq,
		uint64_t records, const struct plan *plan, double seconds, struct result *r)
{
	memset(r, 0, sizeof *r);
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = d == D_RTPARSEC ? CACHE_PS_NOCRP : d == D_MCS ? CACHE_MCS : CACHE_PF_RW;
	if (d == D_RTPARSEC) {
		cfg.ps_policy = PS_POLICY_RT;
		cfg.reclaim_period_ns = RT_HOLD_NS;
		cfg.reclaim_fn = rtc_on_reclaim;
	}
	/* every record, the garbage of the run, and slack: nothing is ever evicted */
	cfg.mem_limit = records * 256 + (256ull << 20);
	unsigned hp = 4;
	while (hp < 30 && ((uint64_t)1 << hp) < records)
		hp++;
	cfg.hash_power = hp;
	cfg.no_grow = true;
	/* every item is one size (16-byte key, 32-byte value): the smallest item_size_max
	 * keeps the size classes - each one a ps_mem that σ's collection visits - few */
	cfg.item_size_max = 1024;
	rtc_cache = cache_create(&cfg);
	if (!rtc_cache) {
		fprintf(stderr, WHO ": cache_create: %s\n", strerror(errno));
		return -1;
	}
	char val[VAL_LEN];
	memset(val, 'v', sizeof val);
	for (uint64_t k = 0; k < records; k++)
		if (cache_store(rtc_cache, CACHE_SET, rtc_keys + k * KEY_LEN, KEY_LEN, val, VAL_LEN,
				0, 0, 0, NULL) != CACHE_STORED) {
			fprintf(stderr, WHO ": preload failed\n");
			cache_destroy(rtc_cache);
			return -1;
		}
	rtc_trace = trace;
	rtc_plan = *plan;
	struct exec *xs = calloc(ncores, sizeof *xs);
	pthread_t *th = calloc(ncores, sizeof *th);
	if (!xs || !th) {
		free(xs);
		free(th);
		cache_destroy(rtc_cache);
		return -1;
	}
	bench_run_init(&rtc_run, WHO, ncores);
	int rc = 0;
	unsigned started = 0;
	for (unsigned i = 0; i < ncores; i++) {
		struct exec *x = &xs[i];
		x->core = i;
		x->cpu = rtc_pin ? rtc_cpus[i % rtc_ncpus] : -1;
		x->lo = (size_t)(nreq * i / ncores);
		x->hi = (size_t)(nreq * (i + 1) / ncores);
		x->gi = x->si = x->lo;
		x->hg = calloc(1, sizeof(struct hist));
		x->hs = calloc(1, sizeof(struct hist));
		x->hgs = calloc(1, sizeof(struct hist));
		x->hss = calloc(1, sizeof(struct hist));
		x->hgj = calloc(1, sizeof(struct hist));
		x->hsj = calloc(1, sizeof(struct hist));
		x->hqa = calloc(1, sizeof(struct hist));
		x->hqb = calloc(1, sizeof(struct hist));
		x->hirq = calloc(1, sizeof(struct hist));
		x->hjit = calloc(1, sizeof(struct hist));
		x->dist = calloc(DIST_LOG, sizeof(struct span));
		x->miss = calloc(MISS_LOG, sizeof(struct span));
		if (!x->hg || !x->hs || !x->hgs || !x->hss || !x->hgj || !x->hsj || !x->hqa ||
		    !x->hqb || !x->hirq || !x->hjit || !x->dist || !x->miss ||
		    pthread_create(&th[i], NULL, rtc_exec_main, x) != 0) {
			fprintf(stderr, WHO ": cannot start executive %u\n", i);
			abort(); /* the barriers count on every thread */
		}
		started++;
	}
	bench_run_ready(&rtc_run);
	/* periodic: first release in 20 ms, when every executive is past the barrier and
	 * spinning */
	rtc_t0 = tsync_now() + (plan->mode == M_CAL ? 0 : tsync_ns_to_ticks(20000000u));
	rtc_end = rtc_t0 + tsync_ns_to_ticks((uint64_t)(seconds * 1e9));
	uint64_t steal0 = bench_steal_ns(rtc_cpus, started < rtc_ncpus ? started : rtc_ncpus);
	bench_run_go(&rtc_run, rtc_end);
	struct hist hg = {{0}}, hs = {{0}}, hgs = {{0}}, hss = {{0}};
	struct hist hgj = {{0}}, hsj = {{0}}, hqa = {{0}}, hqb = {{0}}, hirq = {{0}};
	struct hist hjit = {{0}};
	uint64_t irq_n = 0, irq_ticks = 0, irq_probe = 0, jit_ticks = 0, jit_max = 0;
	uint64_t gt = 0, st = 0, at = 0, an = 0, bt = 0, bn = 0, gjt = 0, sjt = 0;
	uint64_t sec_max = 0, set_max = 0, sig_max = 0; /* ticks */
	double cal_gk = 0, cal_sk = 0; /* calibrate: per-core rates over active time, summed */
	r->fifo = true;
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	uint64_t steal1 = bench_steal_ns(rtc_cpus, started < rtc_ncpus ? started : rtc_ncpus);
	r->steal_ns = steal1 > steal0 ? steal1 - steal0 : 0;
	/* a miss is explained by a disturbance on any core that overlaps its window */
	for (unsigned i = 0; i < started; i++) {
		struct exec *x = &xs[i];
		r->unexplained += x->miss_unlogged;
		for (unsigned m = 0; m < x->nmiss; m++) {
			bool ok = false;
			for (unsigned j = 0; j < started && !ok; j++)
				for (unsigned k = 0; k < xs[j].ndist && !ok; k++)
					ok = xs[j].dist[k].a < x->miss[m].b &&
					     xs[j].dist[k].b > x->miss[m].a;
			r->unexplained += !ok;
			if (!ok && getenv("TSYNC_RT_CACHE_DEBUG")) {
				FILE *df = fopen(getenv("TSYNC_RT_CACHE_DEBUG"), "a");
				fprintf(df, "unexplained miss core %u: [%+.1f, %+.1f] us\n", i,
					rtc_ticks_us((double)(x->miss[m].a - rtc_t0)),
					rtc_ticks_us((double)(x->miss[m].b - rtc_t0)));
				for (unsigned k = 0; k < x->ndist; k++)
					fprintf(df, "   dist [%+.1f, %+.1f]\n",
						rtc_ticks_us((double)x->dist[k].a - (double)rtc_t0),
						rtc_ticks_us((double)x->dist[k].b -
							     (double)rtc_t0));
				fclose(df);
			}
		}
	}
	/* the sums and maxima, and free each executive's logs (the loop above reads every
	 * executive's disturbances for each one's misses) */
	uint64_t late_max = 0, gap_max = 0; /* ticks */
	for (unsigned i = 0; i < started; i++) {
		struct exec *x = &xs[i];
		r->disturbances += x->ndist_total;
		r->jobs += x->jobs;
		r->run_delay_ns += x->run_delay_ns;
		r->nivcsw += x->nivcsw;
		late_max = x->late_max > late_max ? x->late_max : late_max;
		r->slow_requests += x->slow_requests;
		gap_max = x->gap_max > gap_max ? x->gap_max : gap_max;
		hist_merge(&hg, x->hg);
		hist_merge(&hs, x->hs);
		hist_merge(&hgs, x->hgs);
		hist_merge(&hss, x->hss);
		hist_merge(&hgj, x->hgj);
		hist_merge(&hsj, x->hsj);
		hist_merge(&hqa, x->hqa);
		hist_merge(&hqb, x->hqb);
		hist_merge(&hirq, x->hirq);
		hist_merge(&hjit, x->hjit);
		jit_ticks += x->jit_ticks;
		r->jitter_long += x->jit_long;
		jit_max = x->jit_max > jit_max ? x->jit_max : jit_max;
		irq_n += x->irq_n;
		irq_ticks += x->irq_ticks;
		irq_probe += x->irq_probe_ticks;
		r->irq_long += x->irq_long;
		r->gets += x->gets;
		r->sets += x->sets;
		r->sigmas += x->sigmas;
		r->get_misses += x->get_misses;
		r->misses += x->miss_g + x->miss_s + x->miss_q;
		r->miss_g += x->miss_g;
		r->miss_s += x->miss_s;
		r->miss_q += x->miss_q;
		r->dropped += x->dropped;
		r->dropped_g += x->dropped_g;
		r->dropped_s += x->dropped_s;
		sig_max = x->sigma_max > sig_max ? x->sigma_max : sig_max;
		sec_max = x->get_svc_max > sec_max ? x->get_svc_max : sec_max;
		set_max = x->set_resp_max > set_max ? x->set_resp_max : set_max;
		r->backlog += x->backlog;
		r->peak_queue = x->peak_queue > r->peak_queue ? x->peak_queue : r->peak_queue;
		gt += x->get_ticks;
		st += x->set_ticks;
		gjt += x->get_job_ticks;
		sjt += x->set_job_ticks;
		at += x->alpha_ticks;
		an += x->alpha_n;
		bt += x->beta_ticks;
		bn += x->beta_n;
		r->fifo = r->fifo && x->fifo;
		if (x->fifo_err)
			r->fifo_err = x->fifo_err;
		r->pinned += x->pinned;
		uint64_t stop = x->end_tick > rtc_end ? x->end_tick : rtc_end;
		double active = (double)tsync_ticks_to_ns(stop - rtc_t0 - x->paused) / 1e9;
		if (active > 0) {
			cal_gk += (double)x->gets / active / 1000.0;
			cal_sk += (double)x->sets / active / 1000.0;
		}
		free(x->hg);
		free(x->hs);
		free(x->hgs);
		free(x->hss);
		free(x->hgj);
		free(x->hsj);
		free(x->hqa);
		free(x->hqb);
		free(x->hirq);
		free(x->hjit);
		free(x->dist);
		free(x->miss);
	}
	r->max_lateness_ns = tsync_ticks_to_ns(late_max);
	r->gap_max_ns = tsync_ticks_to_ns(gap_max);
	r->sigma_max_ns = tsync_ticks_to_ns(sig_max);
	r->get_us = r->gets ? rtc_ticks_us((double)gt / (double)r->gets) : 0;
	r->get_e = cost_of(&hgj, gjt);
	r->set_e = cost_of(&hsj, sjt);
	r->alpha = cost_of(&hqa, at);
	/* β's mean is per object over every batch; its tail statistics are per batch */
	r->beta = cost_of(&hqb, 0);
	r->beta.mean = bn ? rtc_ticks_us((double)bt / (double)bn) : 0;
	if (rtc_cost_q < 0)
		r->beta.pick = r->beta.mean;
	r->irq = cost_of(&hirq, irq_ticks);
	r->irq_period_us = irq_n ? rtc_ticks_us((double)irq_probe / (double)irq_n) : 0;
	r->jitter = cost_of(&hjit, jit_ticks);
	r->jitter_max_ns = tsync_ticks_to_ns(jit_max);
	r->get_job_us = r->get_e.mean;
	r->set_job_us = r->set_e.mean;
	r->set_us = r->sets ? rtc_ticks_us((double)st / (double)r->sets) : 0;
	r->alpha_us = d == D_RTPARSEC && an ? rtc_ticks_us((double)at / (double)an) : NAN;
	r->beta_us = d == D_RTPARSEC && bn ? rtc_ticks_us((double)bt / (double)bn) : NAN;
	r->get_kops = (double)r->gets / seconds / 1000.0;
	r->set_kops = (double)r->sets / seconds / 1000.0;
	if (plan->mode == M_CAL) {
		r->get_kops = cal_gk;
		r->set_kops = cal_sk;
		r->get_p99_ns = hist_ns(&hgs, 0.99);
		r->set_p99_ns = hist_ns(&hss, 0.99);
		r->get_max_ns = hist_ns(&hgs, 1.0);
		r->set_max_ns = hist_ns(&hss, 1.0);
	} else {
		r->get_p99_ns = hist_ns(&hg, 0.99);
		r->set_p99_ns = hist_ns(&hs, 0.99);
		r->get_max_ns = hist_ns(&hg, 1.0);
		r->set_max_ns = hist_ns(&hs, 1.0);
	}
	r->section_max_ns = tsync_ticks_to_ns(sec_max);
	r->set_resp_max_ns = tsync_ticks_to_ns(set_max);
	r->q_ns = tsync_ticks_to_ns(plan->pq);
	r->bound_measured = -1;
	if (d == D_RTPARSEC && plan->mode != M_CAL && plan->ps && plan->pq)
		r->bound_measured =
			measured_bound(started, plan->ps, plan->pq, sec_max, set_max, sig_max);
	r->get_svc_p99_ns = hist_ns(&hgs, 0.99);
	r->set_svc_p99_ns = hist_ns(&hss, 0.99);
	/* the allocators' exact peaks (EXACT accounting under PS_POLICY_RT), summed over the
	 * size classes */
	if (d == D_RTPARSEC)
		for (unsigned i = 0; i < cache_nclasses(rtc_cache); i++) {
			struct ps_mem_stats ms;
			if (ps_mem_stats(cache_class_mem(rtc_cache, i), &ms) == 0)
				r->peak_pending += ms.peak_pending;
		}
	if (r->get_misses) {
		fprintf(stderr, WHO ": %" PRIu64 " gets missed a preloaded key\n", r->get_misses);
		rc = -1;
	}
	bench_run_destroy(&rtc_run);
	free(xs);
	free(th);
	cache_destroy(rtc_cache);
	rtc_cache = NULL;
	return rc;
}

/* ---- output --------------------------------------------------------------------------- */

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

int rtc_write_json_file(const char *path, json_t *j)
{
	if (json_dump_file(j, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
		fprintf(stderr, WHO ": cannot write %s\n", path);
		return -1;
	}
	return 0;
}

const char *rtc_sched_line(const struct result *r, char *buf, size_t n)
{
	if (!rtc_try_fifo)
		snprintf(buf, n, "SCHED_OTHER (SCHED_FIFO not tried: %s)", rtc_no_fifo_why);
	else if (r->fifo)
		snprintf(buf, n, "SCHED_FIFO");
	else
		snprintf(buf, n, "SCHED_OTHER (SCHED_FIFO refused: %s)", strerror(r->fifo_err));
	return buf;
}

/* The run delay of the executives (ms) when another task preempted one of them (an
 * involuntary context switch), else 0: the idle sleeps' wake-up latency is run delay
 * too, but no co-tenant's. */
double rtc_shared_cpu_ms(const struct result *r)
{
	return r->nivcsw ? (double)r->run_delay_ns / 1e6 : 0.0;
}

/* One CSV row of run r under admission a (NULL: calibrate), repeat rep. Empty fields:
 * not applicable (periods in calibrate, the offered load outside overload, bound_objects
 * for the lock designs, zero_slack_kops where the periods were given); get_period_us is
 * 0 in relaxed (gets are not periodic there). r NULL: the admission found nothing
 * schedulable - every period and result empty, the zero-slack rate and repeat given. */
void rtc_csv_row(struct outs *o, enum mode m, enum design d, unsigned cores, double gp, double sp,
		 double offered, const struct result *r, const struct admission *a, unsigned rep)
{
	char gps[32] = "", sps[32] = "", off[32] = "", bnd[32] = "", bm[32] = "";
	char jobs[32] = "", unx[32] = "", late[32] = "", zs[32] = "";
	if (a && !isnan(a->zero_slack_kops))
		snprintf(zs, sizeof zs, "%.6g", a->zero_slack_kops);
	if (!r) {
		for (int k = 0; k < 2; k++)
			if (o->csv[k]) {
				fprintf(o->csv[k], "%s,%s,%u,,,,,,,,,,,,,,,,%s,%u\n", rtc_mname[m],
					rtc_dname[d], cores, zs, rep);
				fflush(o->csv[k]);
			}
		return;
	}
	if (m != M_CAL) {
		snprintf(gps, sizeof gps, "%.6g", gp);
		snprintf(sps, sizeof sps, "%.6g", sp);
		snprintf(jobs, sizeof jobs, "%" PRIu64, r->jobs);
		snprintf(unx, sizeof unx, "%" PRIu64, r->unexplained);
		snprintf(late, sizeof late, "%" PRIu64, r->max_lateness_ns);
	}
	if (m == M_OVERLOAD)
		snprintf(off, sizeof off, "%.6g", offered);
	if (a && a->have_bound)
		snprintf(bnd, sizeof bnd, "%lld", a->bound);
	if (r->bound_measured >= 0)
		snprintf(bm, sizeof bm, "%lld", r->bound_measured);
	for (int k = 0; k < 2; k++)
		if (o->csv[k]) {
			fprintf(o->csv[k],
				"%s,%s,%u,%s,%s,%s,%.6g,%.6g,%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%s,%" PRIu64 ",%s,%s,%s,%s,%.3f,%s,%u\n",
				rtc_mname[m], rtc_dname[d], cores, gps, sps, off, r->get_kops,
				r->set_kops, r->get_p99_ns, r->set_p99_ns, r->peak_pending, bnd,
				r->misses, jobs, unx, late, bm, rtc_shared_cpu_ms(r), zs, rep);
			fflush(o->csv[k]);
		}
}

static json_t *cost_json(const struct cost_stats *c)
{
	json_t *j = json_object();
	json_object_set_new(j, "n", json_integer((json_int_t)c->n));
	json_object_set_new(j, "mean", json_real(c->mean));
	json_object_set_new(j, "p99", json_real(c->p99));
	json_object_set_new(j, "p99.9", json_real(c->p999));
	json_object_set_new(j, "max", json_real(c->max));
	return j;
}

json_t *rtc_run_json(enum mode m, enum design d, unsigned cores, double gp, double sp, double q,
		     double offered, double seconds, const struct result *r)
{
	char sb[512];
	json_t *j = json_object();
	json_object_set_new(j, "mode", json_string(rtc_mname[m]));
	json_object_set_new(j, "design", json_string(rtc_dname[d]));
	json_object_set_new(j, "cores", json_integer(cores));
	json_object_set_new(j, "seconds", json_real(seconds));
	if (m != M_CAL) {
		json_object_set_new(j, "get_period_us", json_real(gp));
		json_object_set_new(j, "set_period_us", json_real(sp));
	}
	json_object_set_new(j, "q_us", q > 0 ? json_real(q) : json_null());
	if (m == M_OVERLOAD)
		json_object_set_new(j, "offered_get_kops", json_real(offered));
	json_object_set_new(j, "get_us", json_real(r->get_us));
	json_object_set_new(j, "set_us", json_real(r->set_us));
	json_object_set_new(j, "alpha_us", num_or_null(r->alpha_us));
	json_object_set_new(j, "beta_us", num_or_null(r->beta_us));
	/* the admission's inputs: job costs (dispatch and bookkeeping included), α, β (us) */
	json_t *costs = json_object();
	json_object_set_new(costs, "get_job_us", cost_json(&r->get_e));
	json_object_set_new(costs, "set_job_us", cost_json(&r->set_e));
	if (d == D_RTPARSEC) {
		json_object_set_new(costs, "alpha_us", cost_json(&r->alpha));
		json_object_set_new(costs, "beta_us", cost_json(&r->beta));
	}
	if (m != M_CAL) {
		json_t *jit = cost_json(&r->jitter);
		json_object_set_new(jit, "interrupted", json_integer((json_int_t)r->jitter_long));
		json_object_set_new(jit, "max_all_us", json_real((double)r->jitter_max_ns / 1e3));
		json_object_set_new(costs, "release_jitter_us", jit);
	}
	if (m == M_CAL) {
		json_t *irq = cost_json(&r->irq);
		json_object_set_new(irq, "period_us", json_real(r->irq_period_us));
		json_object_set_new(irq, "too_long", json_integer((json_int_t)r->irq_long));
		json_object_set_new(costs, "interference_us", irq);
	}
	json_object_set_new(j, "costs", costs);
	json_object_set_new(j, "gets", json_integer((json_int_t)r->gets));
	json_object_set_new(j, "sets", json_integer((json_int_t)r->sets));
	json_object_set_new(j, "sigmas", json_integer((json_int_t)r->sigmas));
	json_object_set_new(j, "get_kops", json_real(r->get_kops));
	json_object_set_new(j, "set_kops", json_real(r->set_kops));
	json_object_set_new(j, "get_p99_ns", json_integer((json_int_t)r->get_p99_ns));
	json_object_set_new(j, "set_p99_ns", json_integer((json_int_t)r->set_p99_ns));
	json_object_set_new(j, "get_max_ns", json_integer((json_int_t)r->get_max_ns));
	json_object_set_new(j, "set_max_ns", json_integer((json_int_t)r->set_max_ns));
	json_object_set_new(j, "get_service_p99_ns", json_integer((json_int_t)r->get_svc_p99_ns));
	json_object_set_new(j, "set_service_p99_ns", json_integer((json_int_t)r->set_svc_p99_ns));
	json_object_set_new(j, "peak_pending", json_integer((json_int_t)r->peak_pending));
	json_object_set_new(j, "deadline_misses", json_integer((json_int_t)r->misses));
	json_object_set_new(j, "deadline_misses_get", json_integer((json_int_t)r->miss_g));
	json_object_set_new(j, "deadline_misses_set", json_integer((json_int_t)r->miss_s));
	json_object_set_new(j, "deadline_misses_sigma", json_integer((json_int_t)r->miss_q));
	json_object_set_new(j, "jobs_dropped", json_integer((json_int_t)r->dropped));
	json_object_set_new(j, "jobs_dropped_get", json_integer((json_int_t)r->dropped_g));
	json_object_set_new(j, "jobs_dropped_set", json_integer((json_int_t)r->dropped_s));
	json_object_set_new(j, "sigma_max_ns", json_integer((json_int_t)r->sigma_max_ns));
	if (r->bound_measured >= 0) {
		json_t *b = json_object();
		json_object_set_new(b, "objects", json_integer(r->bound_measured));
		json_object_set_new(b, "section_max_ns",
				    json_integer((json_int_t)r->section_max_ns));
		json_object_set_new(b, "L_star_ns", json_integer((json_int_t)r->set_resp_max_ns));
		json_object_set_new(b, "r_sigma_ns", json_integer((json_int_t)r->sigma_max_ns));
		json_object_set_new(b, "q_ns", json_integer((json_int_t)r->q_ns));
		json_object_set_new(j, "bound_measured", b);
	}
	if (m != M_CAL) {
		json_object_set_new(j, "misses_unexplained",
				    json_integer((json_int_t)r->unexplained));
		json_object_set_new(j, "jobs", json_integer((json_int_t)r->jobs));
		json_object_set_new(j, "max_lateness_ns",
				    json_integer((json_int_t)r->max_lateness_ns));
		json_object_set_new(j, "disturbances", json_integer((json_int_t)r->disturbances));
		json_object_set_new(j, "steal_ms", json_real((double)r->steal_ns / 1e6));
		json_object_set_new(j, "run_delay_ms", json_real((double)r->run_delay_ns / 1e6));
		json_object_set_new(j, "involuntary_switches", json_integer((json_int_t)r->nivcsw));
		json_object_set_new(j, "shared_cpu_ms", json_real(rtc_shared_cpu_ms(r)));
		json_object_set_new(j, "slow_requests", json_integer((json_int_t)r->slow_requests));
		json_object_set_new(j, "gap_max_ns", json_integer((json_int_t)r->gap_max_ns));
	}
	if (m == M_OVERLOAD) {
		json_object_set_new(j, "get_backlog", json_integer((json_int_t)r->backlog));
		json_object_set_new(j, "peak_queue", json_integer((json_int_t)r->peak_queue));
	}
	json_object_set_new(j, "pinned", json_integer(r->pinned));
	json_object_set_new(j, "sched", json_string(rtc_sched_line(r, sb, sizeof sb)));
	return j;
}

/* Record a run's JSON (taking j): kept for calibrate's stdout, and DIR/<name>.json with
 * --out. */
int rtc_emit_json(struct outs *o, json_t *j, const char *name)
{
	int rc = 0;
	if (o->dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.json", o->dir, name);
		rc = rtc_write_json_file(path, j);
	}
	json_array_append_new(o->runs, j);
	return rc;
}
