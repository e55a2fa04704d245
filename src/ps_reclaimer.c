/*
 * src/ps_reclaimer.c - the reclamation task σ_i = (α, q) of RT-SMR (RTAS 2018) §V-C: a
 * thread released every period q that takes the hand-off lists of the ps_mem attached
 * to it, computes quiescence once per ps (α) and collects every object that quiesced
 * (β each), back to its slab. One σ per ps_mem, or one shared by many (RT-SMR (RTAS
 * 2018) Fig. 13's RT-PARSEC-single). The per-ps_mem work is in ps_mem_task.c
 * (ps_mem__task_*); the contract in include/tsync/ps_reclaimer.h; the argument in
 * docs/design.md §3 ("The reclamation task σ"); the analysis in docs/rt.md §10.
 *
 * Locking: r->mu (priority-inheriting) serialises activations with attach, detach, run,
 * stats and stop; σ's thread sleeps on r->cv without it. No freeing or allocating
 * thread ever takes r->mu: they meet σ only through their hand-off lists (a CAS against
 * σ's exchange). A ps_mem's task_pt queue is touched only under the mutex of the σ it
 * is attached to (attach and detach included).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tsync/ps_reclaimer.h>
#include "ps_mem_types.h"
#include "ps_mem_task.h"
#include "util.h"

#define DEF_PERIOD_NS 1000000u

struct target {
	struct ps_mem *m;
	struct target *next;
};

struct ps_reclaimer {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	pthread_t thread;
	bool has_thread;
	bool stop; /* r->mu */
	uint64_t period_ns;
	struct target *targets;       /* r->mu */
	struct ps_reclaimer_stats st; /* r->mu */
};

static struct timespec ns_ts(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	return ts;
}

/* One activation (r->mu held): sweep the hand-off lists, one quiescence computation per
 * distinct ps (α), collect every attached ps_mem. Returns the objects collected. */
static size_t activate(struct ps_reclaimer *r)
{
	uint64_t t0 = tsync__mono_ns(), taken = 0;
	for (struct target *t = r->targets; t; t = t->next)
		taken += ps_mem__task_sweep(t->m, false);
	uint64_t a0 = tsync__mono_ns();
	for (struct target *t = r->targets; t; t = t->next) {
		bool seen = false;
		for (struct target *u = r->targets; u != t && !seen; u = u->next)
			seen = u->m->ps == t->m->ps;
		if (!seen)
			ps_quiesce_time(t->m->ps); /* publishes the caller's point of that ps */
	}
	uint64_t alpha = tsync__mono_ns() - a0;
	size_t n = 0;
	for (struct target *t = r->targets; t; t = t->next)
		n += ps_mem__task_collect(t->m);
	uint64_t e = tsync__mono_ns() - t0;
	r->st.activations++;
	r->st.collected += n;
	r->st.taken += taken;
	if (e > r->st.max_activation_ns)
		r->st.max_activation_ns = e;
	if (alpha > r->st.max_quiesce_ns)
		r->st.max_quiesce_ns = alpha;
	if (n > r->st.max_collected)
		r->st.max_collected = n;
	return n;
}

static void *sigma_main(void *arg)
{
	struct ps_reclaimer *r = arg;
	pthread_mutex_lock(&r->mu);
	uint64_t next = tsync__mono_ns() + r->period_ns;
	while (!r->stop) {
		struct timespec ts = ns_ts(next);
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		if (r->stop)
			break;
		uint64_t now = tsync__mono_ns();
		if (now < next)
			continue; /* woken early (a signal or a spurious wake-up) */
		if (now - next > r->st.max_release_lag_ns)
			r->st.max_release_lag_ns = now - next;
		activate(r);
		uint64_t end = tsync__mono_ns();
		next += r->period_ns;
		if (end >= next) { /* overrun: the next activation starts at once */
			r->st.overruns++;
			next = end;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

struct ps_reclaimer *ps_reclaimer_start(const struct ps_reclaimer_config *cfg)
{
	struct ps_reclaimer_config c = PS_RECLAIMER_CONFIG_INIT;
	if (cfg) {
		if (cfg->size < sizeof(size_t) || cfg->size > 4096) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	}
	int maxprio = sched_get_priority_max(SCHED_FIFO);
	if (c.cpu < -1 || c.cpu >= CPU_SETSIZE || c.sched_fifo_prio < 0 ||
	    (c.sched_fifo_prio > 0 && c.sched_fifo_prio > maxprio)) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_reclaimer *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->period_ns = c.period_ns ? c.period_ns : DEF_PERIOD_NS;
	r->st.period_ns = r->period_ns;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	/* σ may run at a high SCHED_FIFO priority: a low-priority attach/stats caller that
	 * holds the mutex inherits it instead of being starved by a middle one */
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&r->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (r->period_ns == PS_RECLAIMER_MANUAL)
		return r;
	pthread_attr_t at;
	pthread_attr_init(&at);
	if (c.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((unsigned)c.cpu, &set);
		pthread_attr_setaffinity_np(&at, sizeof(set), &set);
	}
	if (c.sched_fifo_prio > 0) {
		struct sched_param sp = {.sched_priority = c.sched_fifo_prio};
		pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&at, SCHED_FIFO);
		pthread_attr_setschedparam(&at, &sp);
	}
	int rc = pthread_create(&r->thread, &at, sigma_main, r);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
		errno = rc;
		return NULL;
	}
	r->has_thread = true;
	return r;
}

int ps_reclaimer_attach(struct ps_reclaimer *r, struct ps_mem *m)
{
	if (r == NULL || m == NULL || m->mode == PS_MEM_RECLAIM_INLINE) {
		errno = EINVAL;
		return -1;
	}
	struct target *t = malloc(sizeof(*t));
	if (t == NULL)
		return -1;
	t->m = m;
	pthread_mutex_lock(&r->mu);
	struct ps_reclaimer *none = NULL;
	/* seq_cst: freeing threads start handing off; acquire: a previous σ's detach
	 * (its last touch of task_pt) happens-before our activations */
	if (!atomic_compare_exchange_strong_explicit(&m->sigma, &none, r, memory_order_seq_cst,
						     memory_order_seq_cst)) {
		pthread_mutex_unlock(&r->mu);
		free(t);
		errno = EBUSY;
		return -1;
	}
	t->next = r->targets;
	r->targets = t;
	r->st.attached++;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/* Detach t's ps_mem (r->mu held, t unlinked): the Dekker store, the final sweep, one
 * quiescence computation, a last collection, orphans for the rest, then no σ. */
static void detach_locked(struct ps_reclaimer *r, struct ps_mem *m)
{
	atomic_store_explicit(&m->sigma, PS_MEM_SIGMA_DETACHING, memory_order_seq_cst);
	r->st.taken += ps_mem__task_sweep(m, true);
	ps_quiesce_time(m->ps);
	r->st.collected += ps_mem__task_collect(m);
	ps_mem__task_release(m);
	r->st.attached--;
	/* release: our writes to task_pt happen-before the next attach's activations */
	atomic_store_explicit(&m->sigma, NULL, memory_order_seq_cst);
}

int ps_reclaimer_detach(struct ps_reclaimer *r, struct ps_mem *m)
{
	if (r == NULL || m == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	struct target **pp = &r->targets;
	while (*pp && (*pp)->m != m)
		pp = &(*pp)->next;
	struct target *t = *pp;
	if (t == NULL) {
		pthread_mutex_unlock(&r->mu);
		errno = ENOENT;
		return -1;
	}
	*pp = t->next;
	detach_locked(r, m);
	pthread_mutex_unlock(&r->mu);
	free(t);
	return 0;
}

size_t ps_reclaimer_run(struct ps_reclaimer *r)
{
	if (r == NULL)
		return 0;
	pthread_mutex_lock(&r->mu);
	size_t n = activate(r);
	pthread_mutex_unlock(&r->mu);
	return n;
}

void ps_reclaimer_stop(struct ps_reclaimer *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->has_thread)
		pthread_join(r->thread, NULL);
	pthread_mutex_lock(&r->mu);
	while (r->targets) {
		struct target *t = r->targets;
		r->targets = t->next;
		detach_locked(r, t->m);
		free(t);
	}
	pthread_mutex_unlock(&r->mu);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

int ps_reclaimer_stats(struct ps_reclaimer *r, struct ps_reclaimer_stats *out)
{
	if (r == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	*out = r->st;
	pthread_mutex_unlock(&r->mu);
	return 0;
}
