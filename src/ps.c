/*
 * src/ps.c - ParSec quiescence (ParSec (EuroSys 2016) §3.2-3.3). The inline read path
 * (ps_enter, ps_exit) is in include/tsync/ps.h; the argument for why no reader can
 * observe reused memory is in docs/design.md §2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/ps.h>
#include "ps_internal.h"
#include "registry.h"
#include "tdir.h"
#include "util.h"
#include "wait.h"

/* ps's directory of slots is a src/tdir.h directory whose layout <tsync/ps.h> spells out
 * for the inline ps_enter/ps_exit (a public header cannot include tdir.h): the same
 * chunking, and a chunk is an array of records. */
_Static_assert(PS__CHUNK_SHIFT == TSYNC__CHUNK_SHIFT, "ps chunks are tdir chunks");
_Static_assert(sizeof(struct ps__chunk) == TSYNC__CHUNK * sizeof(struct ps__slot),
	       "a ps chunk is TSYNC__CHUNK slots");
_Static_assert(sizeof(struct ps__slot) == TSYNC_CACHE_LINE, "one slot per cache line");

struct ps {
	struct ps__head head; /* first: the inline fast path casts struct ps * to it */
	unsigned nchunks;
	int policy;           /* enum ps_policy */
	uint64_t skew;        /* clock skew bound + cfg->skew_margin + 1 */
	uint64_t grace;       /* PS_POLICY_TEMPORAL: grace period in ticks */
	struct tsync__client client;
};

/* What a quiescer last read of another thread's slot, and when (optimisation 3). */
struct ps_view {
	uint64_t enter, exit;
	uint64_t at; /* tsync_now_before_loads() taken before the two loads */
};
/* A quiescer's private state, hung off its own slot (owner only). */
struct ps_qcache {
	struct ps_stats stats;
	int blocker;            /* thread that made the last failed quiescence fail, or -1 */
	uint64_t blocker_enter; /* ... and the enter time of its section */
	void *_Atomic views[]; /* tdir directory of struct ps_view (nchunks entries) */
};

static void slot_chunk_init(void *chunk, void *arg)
{
	(void)arg;
	struct ps__chunk *c = chunk;
	for (unsigned i = 0; i < PS__CHUNK; i++)
		atomic_store_explicit(&c->slot[i].exit, 1, memory_order_relaxed); /* outside */
}

/* ps_enter's (ps__slot's) first use of ps by a thread whose records were not allocated
 * up front (lazily registered, <tsync/thread.h>): ps_enter cannot return an error, so a
 * failed allocation aborts. */
struct ps__slot *ps__slot_slow(struct ps *ps, unsigned tid)
{
	struct ps__slot *s = tsync__tdir_get((void *_Atomic *)ps->head.chunks, tid,
					     sizeof(struct ps__slot), slot_chunk_init, NULL);
	if (s == NULL)
		tsync__fatal("out of memory allocating parallel-section records (a thread "
			     "registered with tsync_thread_register() has them allocated up front)");
	return s;
}

void ps__exit_unbalanced(void)
{
	tsync__fatal("ps_exit without a matching ps_enter");
}

static struct ps__slot *slot_if_exists(struct ps *ps, unsigned tid)
{
	return tsync__tdir_at((void *_Atomic *)ps->head.chunks, tid, sizeof(struct ps__slot));
}

/* Registry hook: the exiting thread closes its sections (it can hold no references
 * any more) and forgets its statistics; its caches stay with the id (still true). */
static void ps_thread_exit(struct tsync__client *c, unsigned tid)
{
	struct ps *ps = (struct ps *)((char *)c - offsetof(struct ps, client));
	struct ps__slot *s = slot_if_exists(ps, tid);
	if (s == NULL)
		return;
	if (s->depth != 0) {
		s->depth = 0;
		atomic_store_explicit(&s->exit, atomic_load_explicit(&s->enter, memory_order_relaxed) + 1,
				      memory_order_release);
	}
	struct ps_qcache *qc = s->qcache;
	if (qc)
		memset(&qc->stats, 0, sizeof(qc->stats));
}

/* Registry hook: an explicitly registered thread's slot and quiescence cache, allocated
 * up front so that its ps_enter and ps_quiesce never allocate. */
static int ps_thread_prepare(struct tsync__client *c, unsigned tid)
{
	return ps__thread_prepare((struct ps *)((char *)c - offsetof(struct ps, client)), tid);
}

static void qcache_free(void *slot, void *arg)
{
	struct ps *ps = arg;
	struct ps_qcache *qc = ((struct ps__slot *)slot)->qcache;
	if (qc == NULL)
		return;
	tsync__tdir_free_chunks(qc->views, ps->nchunks);
	free(qc);
}

/* Free everything ps owns (ps_destroy, after the client is removed; ps_create's failure). */
static void ps_free_all(struct ps *ps)
{
	tsync__tdir_each((void *_Atomic *)ps->head.chunks, ps->nchunks, sizeof(struct ps__slot),
			 qcache_free, ps);
	tsync__tdir_free_chunks((void *_Atomic *)ps->head.chunks, ps->nchunks);
	free(ps->head.chunks);
	free(ps);
}

struct ps *ps_create(const struct ps_config *cfg)
{
	struct ps_config def = PS_CONFIG_INIT;
	if (cfg == NULL)
		cfg = &def;
	if (cfg->size < sizeof(size_t) || cfg->size > 4096) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_config c = def;
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	if ((c.policy != PS_POLICY_GENERAL && c.policy != PS_POLICY_RT &&
	     c.policy != PS_POLICY_TEMPORAL) ||
	    ((c.policy == PS_POLICY_TEMPORAL) != (c.grace_ns != 0))) {
		errno = EINVAL;
		return NULL;
	}

	tsync_clock_init();
	struct ps *ps = calloc(1, sizeof(*ps));
	if (ps == NULL)
		return NULL;
	ps->nchunks = tsync__chunk_count();
	ps->head.chunks = calloc(ps->nchunks, sizeof(*ps->head.chunks));
	if (ps->head.chunks == NULL) {
		free(ps);
		errno = ENOMEM;
		return NULL;
	}
	/* +1: an enter time may be the previous one + 1 rather than a counter reading (see
	 * ps_enter); one more tick keeps it a lower bound under the a + S < b rule. */
	ps->skew = tsync_clock_skew() + c.skew_margin + 1;
	ps->policy = c.policy;
	if (c.policy == PS_POLICY_TEMPORAL) {
		ps->grace = tsync_ns_to_ticks(c.grace_ns);
		if (ps->grace == 0)
			ps->grace = 1;
	}
	ps->client.thread_exit = ps_thread_exit;
	ps->client.thread_prepare = ps_thread_prepare;
	if (tsync__client_add(&ps->client) != 0) { /* records of registered threads */
		ps_free_all(ps);
		errno = ENOMEM;
		return NULL;
	}
	return ps;
}

void ps_destroy(struct ps *ps)
{
	if (ps == NULL)
		return;
	tsync__client_remove(&ps->client);
	ps_free_all(ps);
}

static struct ps_qcache *qcache_new(struct ps *ps)
{
	struct ps_qcache *qc = calloc(1, sizeof(*qc) + ps->nchunks * sizeof(qc->views[0]));
	if (qc == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qc->blocker = -1;
	return qc;
}

/* The caller's quiescence cache; allocated on its first quiescence computation unless
 * ps__thread_prepare did it (ps_quiesce cannot return an error: a failure aborts). */
static struct ps_qcache *qcache_of(struct ps *ps, struct ps__slot *me)
{
	if (TSYNC_LIKELY(me->qcache != NULL))
		return me->qcache;
	struct ps_qcache *qc = qcache_new(ps);
	if (qc == NULL)
		tsync__fatal("out of memory allocating quiescence caches");
	me->qcache = qc;
	return qc;
}

int ps__thread_prepare(struct ps *ps, unsigned tid)
{
	struct ps__slot *s = tsync__tdir_get((void *_Atomic *)ps->head.chunks, tid,
					     sizeof(struct ps__slot), slot_chunk_init, NULL);
	if (s == NULL)
		return -1;
	if (s->qcache == NULL && (s->qcache = qcache_new(ps)) == NULL)
		return -1;
	return 0;
}

/* The cached view of thread j, or NULL if its chunk cannot be allocated (then the
 * scan simply reads j's slot every time: the cache is an optimisation only). */
static struct ps_view *view_of(struct ps_qcache *qc, unsigned j)
{
	return tsync__tdir_get(qc->views, j, sizeof(struct ps_view), NULL, NULL);
}

static void publish(struct ps__slot *me, uint64_t q)
{
	if (q > atomic_load_explicit(&me->quiesced, memory_order_relaxed))
		atomic_store_explicit(&me->quiesced, q, memory_order_release);
}

/*
 * RT-ParSec's quiescence point (RT-SMR (RTAS 2018) Fig. 8, lines 15-22), exact: every
 * thread's record is read now. Loads follow `now` (RDTSC; LFENCE), so a thread seen
 * outside was outside at a time after `now`, and one seen inside with enter time e has
 * been inside since e: every section active at any time before min(now, e_min) - S has
 * ended or began after it (docs/design.md §2, reasons 2-4, and docs/rt.md §2). The
 * caller's own record counts like any other. The thread with the earliest enter time is
 * remembered as the blocker (for ps_stall_report).
 */
static uint64_t point_exact(struct ps *ps, unsigned me_id, struct ps__slot *me,
			    struct ps_qcache *qc)
{
	const uint64_t S = ps->skew;
	const uint64_t now = tsync_now_before_loads();
	const unsigned hw = tsync_thread_high_water();
	uint64_t min = now;
	int blocker = -1;
	for (unsigned j = 0; j < hw; j++) {
		struct ps__slot *s = j == me_id ? me : slot_if_exists(ps, j);
		if (s == NULL)
			continue; /* never entered a section of ps before `now` */
		if (j != me_id)
			qc->stats.remote_reads++;
		uint64_t x = atomic_load_explicit(&s->exit, memory_order_acquire);
		uint64_t e = atomic_load_explicit(&s->enter, memory_order_acquire);
		if (x > e)
			continue;
		if (e < min) {
			min = e;
			blocker = (int)j;
		}
	}
	qc->blocker = blocker;
	qc->blocker_enter = blocker >= 0 ? min : 0;
	return min > S + 1 ? min - S - 1 : 0;
}

/* Temporal quiescence (RT-SMR (RTAS 2018) Fig. 9): now - grace - S - 1. `now` is read
 * before any later load or store of the caller (RDTSC; LFENCE), so reuse follows it. */
static uint64_t point_temporal(struct ps *ps, struct ps_qcache *qc)
{
	const uint64_t now = tsync_now_before_loads();
	const uint64_t d = ps->grace + ps->skew + 1;
	qc->blocker = -1;
	return now > d ? now - d : 0;
}

/* The policy's point now (GENERAL uses the exact scan too), published (opt. 2). */
static uint64_t point_now(struct ps *ps, unsigned me_id, struct ps__slot *me,
			  struct ps_qcache *qc)
{
	uint64_t q = ps->policy == PS_POLICY_TEMPORAL ? point_temporal(ps, qc)
						       : point_exact(ps, me_id, me, qc);
	publish(me, q);
	uint64_t p = atomic_load_explicit(&me->quiesced, memory_order_relaxed);
	return p > q ? p : q;
}

tsync_tick_t ps_quiesce_time(struct ps *ps)
{
	unsigned me_id = tsync__self();
	struct ps__slot *me = ps__slot(ps);
	struct ps_qcache *qc = qcache_of(ps, me);
	qc->stats.quiesce_calls++;
	return point_now(ps, me_id, me, qc);
}

enum ps_policy ps_policy(const struct ps *ps)
{
	return (enum ps_policy)ps->policy;
}

tsync_tick_t ps_grace_ticks(const struct ps *ps)
{
	return ps->grace;
}

tsync_tick_t ps_skew_ticks(const struct ps *ps)
{
	return ps->skew;
}

int ps__last_blocker(struct ps *ps, uint64_t *enter)
{
	struct ps__slot *me = ps__slot(ps);
	struct ps_qcache *qc = me->qcache;
	if (qc == NULL || qc->blocker < 0)
		return -1;
	*enter = qc->blocker_enter;
	return qc->blocker;
}

int ps__oldest_section(struct ps *ps, uint64_t *enter, unsigned *inside)
{
	const unsigned hw = tsync_thread_high_water();
	uint64_t min = UINT64_MAX;
	int who = -1;
	unsigned n = 0;
	for (unsigned j = 0; j < hw; j++) {
		struct ps__slot *s = slot_if_exists(ps, j);
		if (s == NULL)
			continue;
		uint64_t x = atomic_load_explicit(&s->exit, memory_order_acquire);
		uint64_t e = atomic_load_explicit(&s->enter, memory_order_acquire);
		if (x > e)
			continue;
		n++;
		if (e < min) {
			min = e;
			who = (int)j;
		}
	}
	*inside = n;
	*enter = who >= 0 ? min : 0;
	return who;
}

/*
 * ps_quiesce. Each thread j is quiescent with respect to t when it was seen, at a time
 * that certainly follows t, outside any section or inside one that certainly began
 * after t. While checking, compute the quiescence point q this scan proves - the
 * earliest of (the scan's start, every observed in-section enter time, every cached
 * view's time), less the skew bound - and publish it on the caller's line (opt. 2).
 */
bool ps_quiesce(struct ps *ps, tsync_tick_t t)
{
	unsigned me_id = tsync__self();
	struct ps__slot *me = ps__slot(ps);
	struct ps_qcache *qc = qcache_of(ps, me);
	const uint64_t S = ps->skew;
	qc->stats.quiesce_calls++;

	/* Optimisation 2, own point: every section active at or before it has ended. */
	if (t <= atomic_load_explicit(&me->quiesced, memory_order_acquire)) {
		qc->stats.own_point_hits++;
		qc->stats.quiesce_true++;
		return true;
	}
	if (ps->policy != PS_POLICY_GENERAL) {
		/* RT / TEMPORAL (RT-SMR (RTAS 2018) Figs. 8-9): compare with a fresh point. */
		uint64_t q = point_now(ps, me_id, me, qc);
		if (t <= q) {
			qc->stats.quiesce_true++;
			return true;
		}
		return false;
	}

	/* Loads below observe the other threads at or after `now` (RDTSC; LFENCE). */
	const uint64_t now = tsync_now_before_loads();
	uint64_t min = now;
	const unsigned hw = tsync_thread_high_water();

	/* Optimisation 4: start at our own id (and check ourselves first, for free). */
	for (unsigned k = 0; k < hw; k++) {
		unsigned j = me_id + k;
		if (j >= hw)
			j -= hw;
		struct ps__slot *s = j == me_id ? me : slot_if_exists(ps, j);
		if (s == NULL) {
			/* No record: j never entered a section of ps before `now` (its record is
			 * published before its first enter store, docs/design.md §2.3). */
			continue;
		}
		struct ps_view *v = NULL;
		if (j != me_id) {
			v = view_of(qc, j);
			/* Optimisation 3: a view taken certainly after t answers for t. */
			if (v && v->at > t + S) {
				if (v->exit > v->enter) {
					qc->stats.cache_hits++;
					if (v->at < min)
						min = v->at;
					continue;
				}
				if (v->enter > t + S) {
					qc->stats.cache_hits++;
					if (v->enter < min)
						min = v->enter;
					continue;
				}
			}
			/* Optimisation 2, peer's point: it is on the line we are about to read. */
			uint64_t qj = atomic_load_explicit(&s->quiesced, memory_order_acquire);
			if (qj >= t) {
				qc->stats.peer_point_hits++;
				qc->stats.quiesce_true++;
				publish(me, qj);
				return true;
			}
			qc->stats.remote_reads++;
		}
		/* exit before enter: if we see exit == enter + 1 for the enter we then read,
		 * j was outside between the two loads (docs/design.md §2.2). */
		uint64_t x = atomic_load_explicit(&s->exit, memory_order_acquire);
		uint64_t e = atomic_load_explicit(&s->enter, memory_order_acquire);
		if (v) {
			v->enter = e;
			v->exit = x;
			v->at = now;
		}
		if (x > e)
			continue; /* outside at a time after `now`: bounded by min = now already */
		if (e > t + S) {
			if (e < min)
				min = e;
			continue;
		}
		qc->blocker = (int)j;
		qc->blocker_enter = e;
		return false; /* j is (or may be) inside a section that began by t */
	}
	qc->stats.quiesce_true++;
	/* Both are quiescence points (docs/design.md §2, reason 4): min - S - 1, and
	 * t - S - 1 (a free time that low was read before t). Not t itself: a free time
	 * t' <= t read after this scan on a CPU whose counter lags may belong to an object
	 * that a section begun after the scan still holds (tests/model/ps.pml found it; its
	 * mutant model_ps_publish_t keeps the old max(q, t)). */
	uint64_t q = min > S + 1 ? min - S - 1 : 0;
	uint64_t tq = t > S + 1 ? t - S - 1 : 0;
	publish(me, q > tq ? q : tq);
	return true;
}

void ps_synchronize(struct ps *ps)
{
	if (ps_in_section(ps))
		tsync__fatal("ps_synchronize called inside a parallel section of the same ps");
	uint64_t t = tsync_now_ordered();
	tsync__wait_until(ps_quiesce(ps, t), TSYNC__SPIN_QUIESCE);
}

tsync_tick_t ps_quiescence_point(struct ps *ps)
{
	return ps__quiescence_point(ps);
}

int ps_stats_thread(struct ps *ps, struct ps_stats *out)
{
	struct ps__slot *me = ps__slot(ps);
	if (me->qcache)
		*out = ((struct ps_qcache *)me->qcache)->stats;
	else
		memset(out, 0, sizeof(*out));
	return 0;
}
