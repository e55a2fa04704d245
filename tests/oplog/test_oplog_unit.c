/*
 * tests/oplog/test_oplog_unit.c - OpLog's contract, case by case:
 *   errors            bad arguments fail with EINVAL
 *   absorb            the three list variants give the same results (absorption never
 *                     changes them) and do absorb (one thread, then two with hand-offs)
 *   full              a bounded log that fills up synchronizes its object
 *   evict             one slot per thread: a second object evicts (synchronizes) the first;
 *                     many objects over few slots from two threads keep exact counts
 *   release           counter zero detection: the callback runs once, also from an
 *                     eviction, and may finalise and free the counter
 *   fini_race         finalising and freeing an object while another thread evicts it
 *   rmap              truncate semantics and sort order
 *   order             ping-pong between two threads (optionally migrating): the merged
 *                     execution order is the causal order, under every order policy
 *   exit              a thread's logged ops outlive it
 *   memory            dynamic logs: table memory does not grow with the number of objects
 * Run one case by name, or all without arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>

#include "check.h"
#include "lincheck.h"

#include <tsync/oplog.h>
#include <tsync/oplog_counter.h>
#include <tsync/oplog_list.h>
#include <tsync/oplog_rmap.h>
#include <tsync/thread.h>

/* ---- errors ---- */
static void t_errors(void)
{
	struct oplog_type t;
	memset(&t, 0, sizeof(t));
	CHECK_ERRNO(oplog_domain_create(NULL, NULL), 0, EINVAL);
	CHECK_ERRNO(oplog_domain_create(&t, NULL), 0, EINVAL); /* size 0 */
	t.size = sizeof(t);
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 3;
	CHECK_ERRNO(oplog_domain_create(&t, &cfg), 0, EINVAL);
	cfg.slots = 4;
	cfg.order = 17;
	CHECK_ERRNO(oplog_domain_create(&t, &cfg), 0, EINVAL);
	t.log_bytes = 8; /* custom state without push/apply */
	CHECK_ERRNO(oplog_domain_create(&t, NULL), 0, EINVAL);
	t.log_bytes = 0;
	t.capacity = 16; /* smaller than one op */
	CHECK_ERRNO(oplog_domain_create(&t, NULL), 0, EINVAL);
	CHECK_ERRNO(oplog_list_domain_create((enum oplog_list_mode)7, 0, NULL), 0, EINVAL);

	struct oplog_domain *ld = oplog_list_domain_create(OPLOG_LIST_BASIC, 0, NULL);
	CHECK(ld);
	struct oplog_counter c;
	CHECK_ERRNO(oplog_counter_init(&c, ld, 0, NULL, NULL), -1, EINVAL);
	struct oplog_list l;
	CHECK(oplog_list_init(&l, ld) == 0);
	struct oplog_op bad = {NULL, 0, 4, 0, 0};
	CHECK_ERRNO(oplog_log(&l.obj, &bad), -1, EINVAL);
	bad.size = OPLOG_OP_MAX + 8;
	CHECK_ERRNO(oplog_log(&l.obj, &bad), -1, EINVAL);
	bad.size = sizeof(bad); /* exec NULL on an op log */
	CHECK_ERRNO(oplog_log(&l.obj, &bad), -1, EINVAL);
	struct oplog_rmap_mapping m;
	CHECK_ERRNO(oplog_rmap_mapping_init(&m, 5, 4), -1, EINVAL);
	CHECK_ERRNO(oplog_object_init(NULL, ld), -1, EINVAL);
	oplog_list_fini(&l);
	oplog_domain_destroy(ld);
	oplog_domain_destroy(NULL);
}

/* ---- absorption never changes results ---- */
#define AN 16
struct absorb_run {
	struct oplog_list l;
	struct oplog_list_node n[2][AN];
	bool present[2][AN];
	test_barrier bar;
	uint64_t seed;
	size_t sizes[64]; /* results of reads, per round */
	uint64_t final_mask;
};

static struct absorb_run g_ar;

/* Thread t: rounds of toggling its own nodes (no reads, so adds and removes meet in the
 * logs), a read by thread 0 every other round, and a hand-off: in odd rounds each thread
 * removes the nodes the other thread added (P2 holds: the add and the remove of a node
 * are separated by a barrier and the adder does nothing more with it). */
static void *absorb_thread(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t s = g_ar.seed + t;
	for (unsigned r = 0; r < 64; r++) {
		test_barrier_wait(&g_ar.bar);
		if (r % 2 == 0) {
			for (unsigned k = 0; k < 40; k++) {
				unsigned i = (unsigned)(test_rand(&s) % AN);
				if (g_ar.present[t][i])
					CHECK(oplog_list_remove(&g_ar.l, &g_ar.n[t][i]) >= 0);
				else
					CHECK(oplog_list_add(&g_ar.l, &g_ar.n[t][i]) >= 0);
				g_ar.present[t][i] = !g_ar.present[t][i];
			}
		} else {
			unsigned o = 1 - t; /* hand-off: remove the other thread's nodes */
			for (unsigned i = 0; i < AN; i++) {
				if (g_ar.present[o][i] && (test_rand(&s) & 1)) {
					CHECK(oplog_list_remove(&g_ar.l, &g_ar.n[o][i]) >= 0);
					g_ar.present[o][i] = false;
				}
			}
		}
		test_barrier_wait(&g_ar.bar);
		if (t == 0 && r % 4 == 1)
			g_ar.sizes[r] = oplog_list_size(&g_ar.l);
		test_barrier_wait(&g_ar.bar);
	}
	return NULL;
}

static void absorb_one(enum oplog_list_mode mode, uint64_t seed, size_t cap, struct oplog_stats *st)
{
	memset(&g_ar, 0, sizeof(g_ar));
	g_ar.seed = seed;
	struct oplog_domain *d = oplog_list_domain_create(mode, cap, NULL);
	CHECK(d);
	CHECK(oplog_list_init(&g_ar.l, d) == 0);
	for (unsigned t = 0; t < 2; t++)
		for (unsigned i = 0; i < AN; i++)
			oplog_list_node_init(&g_ar.n[t][i]);
	test_barrier_init(&g_ar.bar, 2);
	pthread_t a = test_spawn(absorb_thread, (void *)0), b = test_spawn(absorb_thread, (void *)1);
	test_join(a);
	test_join(b);
	oplog_synchronize(&g_ar.l.obj);
	size_t cnt = 0;
	for (struct oplog_list_node *n = g_ar.l.head.next; n != &g_ar.l.head; n = n->next, cnt++) {
		unsigned t = n >= g_ar.n[1] ? 1 : 0;
		g_ar.final_mask |= 1ull << ((unsigned)(n - g_ar.n[t]) + 32 * t);
	}
	CHECK_EQ(cnt, g_ar.l.count);
	oplog_unlock(&g_ar.l.obj);
	for (unsigned t = 0; t < 2; t++)
		for (unsigned i = 0; i < AN; i++)
			CHECK_EQ((g_ar.final_mask >> (i + 32 * t)) & 1, g_ar.present[t][i]);
	CHECK(oplog_domain_stats(d, st) == 0);
	oplog_list_fini(&g_ar.l);
	oplog_domain_destroy(d);
	test_barrier_destroy(&g_ar.bar);
}

static void t_absorb(void)
{
	/* One thread: a fixed script gives the same reads in every mode. */
	for (int m = 0; m < 3; m++) {
		struct oplog_domain *d = oplog_list_domain_create((enum oplog_list_mode)m, 0, NULL);
		struct oplog_list l;
		struct oplog_list_node n[4];
		CHECK(oplog_list_init(&l, d) == 0);
		for (int i = 0; i < 4; i++)
			oplog_list_node_init(&n[i]);
		CHECK(oplog_list_add(&l, &n[0]) == OPLOG_PUSHED);
		CHECK(oplog_list_add(&l, &n[1]) == OPLOG_PUSHED);
		int rc = oplog_list_remove(&l, &n[0]);
		CHECK(rc == (m == OPLOG_LIST_LOCAL_ABSORB ? OPLOG_ABSORBED : OPLOG_PUSHED));
		CHECK(!oplog_list_contains(&l, &n[0]));
		CHECK(oplog_list_contains(&l, &n[1]));
		CHECK_EQ(oplog_list_size(&l), 1);
		/* remove of a node added in an earlier batch: never absorbed */
		CHECK(oplog_list_remove(&l, &n[1]) == OPLOG_PUSHED);
		CHECK(oplog_list_add(&l, &n[2]) == OPLOG_PUSHED);
		CHECK(oplog_list_add(&l, &n[3]) == OPLOG_PUSHED);
		CHECK(oplog_list_remove(&l, &n[2]) >= 0);
		CHECK_EQ(oplog_list_size(&l), 1);
		CHECK(oplog_list_contains(&l, &n[3]));
		struct oplog_stats st;
		CHECK(oplog_domain_stats(d, &st) == 0);
		if (m == OPLOG_LIST_BASIC)
			CHECK_EQ(st.absorbed_local + st.absorbed_global, 0);
		if (m == OPLOG_LIST_GLOBAL_ABSORB)
			CHECK_EQ(st.absorbed_global, 4); /* two add/remove pairs */
		if (m == OPLOG_LIST_LOCAL_ABSORB)
			CHECK_EQ(st.absorbed_local, 2);
		oplog_list_fini(&l);
		oplog_domain_destroy(d);
	}
	/* Two threads with hand-offs: same reads and final state in all modes. */
	uint64_t seed = test_seed(7);
	for (int rep = 0; rep < 3; rep++) {
		size_t cap = rep == 2 ? OPLOG_OP_MAX : 0; /* rep 2: full logs too */
		size_t sizes[3][64];
		uint64_t masks[3];
		struct oplog_stats st[3];
		for (int m = 0; m < 3; m++) {
			absorb_one((enum oplog_list_mode)m, seed + (uint64_t)rep, cap, &st[m]);
			memcpy(sizes[m], g_ar.sizes, sizeof(g_ar.sizes));
			masks[m] = g_ar.final_mask;
		}
		CHECK(memcmp(sizes[0], sizes[1], sizeof(sizes[0])) == 0);
		CHECK(memcmp(sizes[0], sizes[2], sizeof(sizes[0])) == 0);
		CHECK_EQ(masks[0], masks[1]);
		CHECK_EQ(masks[0], masks[2]);
		CHECK_EQ(st[0].absorbed_global + st[0].absorbed_local, 0);
		CHECK_GT(st[1].absorbed_global, 0);
		CHECK_GT(st[2].absorbed_local, 0);
		/* fewer ops reach the shared list with absorption */
		CHECK_LT(st[1].executed, st[0].executed);
		CHECK_LE(st[2].executed, st[1].executed);
		test_log("absorb rep %d: executed basic %" PRIu64 " global %" PRIu64 " local %" PRIu64,
			 rep, st[0].executed, st[1].executed, st[2].executed);
	}
}

/* ---- full logs ---- */
static void t_full(void)
{
	struct oplog_domain *d = oplog_list_domain_create(OPLOG_LIST_BASIC, OPLOG_OP_MAX, NULL);
	struct oplog_list l;
	struct oplog_list_node n[40];
	CHECK(oplog_list_init(&l, d) == 0);
	for (int i = 0; i < 40; i++) {
		oplog_list_node_init(&n[i]);
		CHECK(oplog_list_add(&l, &n[i]) == OPLOG_PUSHED);
	}
	/* No read yet, but full logs forced synchronizes: the shared list already holds most
	 * nodes (read directly: this thread is the only one). */
	size_t per_log = OPLOG_OP_MAX / sizeof(struct oplog_list_op);
	CHECK_GE(l.count, 40 - per_log);
	struct oplog_stats st;
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_GE(st.full_syncs, 40 / per_log - 1);
	CHECK_EQ(oplog_list_size(&l), 40);
	oplog_list_fini(&l);
	oplog_domain_destroy(d);
}

/* ---- eviction ---- */
#define EV_OBJS 16
static struct oplog_counter g_ev[EV_OBJS];
static int64_t g_ev_exp[2][EV_OBJS];

static void *evict_thread(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t s = test_seed(t + 11);
	uint64_t n = test_scale(200000, 20);
	for (uint64_t k = 0; k < n; k++) {
		unsigned o = (unsigned)(test_rand(&s) % EV_OBJS);
		int64_t dlt = (test_rand(&s) & 1) ? 1 : -1;
		CHECK(oplog_counter_add(&g_ev[o], dlt) == 0);
		g_ev_exp[t][o] += dlt;
		if (k % 1000 == 0) {
			int64_t v = oplog_counter_read(&g_ev[o]);
			(void)v;
		}
	}
	return NULL;
}

static void t_evict(void)
{
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 1;
	struct oplog_domain *d = oplog_counter_domain_create(&cfg);
	struct oplog_counter a, b;
	CHECK(oplog_counter_init(&a, d, 0, NULL, NULL) == 0);
	CHECK(oplog_counter_init(&b, d, 0, NULL, NULL) == 0);
	for (int i = 0; i < 5; i++)
		CHECK(oplog_counter_inc(&a) == 0);
	CHECK_EQ_I(a.value, 0); /* still in this thread's log */
	CHECK(oplog_counter_inc(&b) == 0); /* evicts a: synchronizes it */
	CHECK_EQ_I(a.value, 5);
	struct oplog_stats st;
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_EQ(st.evictions, 1);
	CHECK_EQ_I(oplog_counter_read(&a), 5);
	CHECK_EQ_I(oplog_counter_read(&b), 1);
	/* fini detaches: the slot is free again, the next object takes it without eviction */
	oplog_counter_fini(&b);
	CHECK(oplog_counter_inc(&a) == 0);
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_EQ(st.evictions, 1);
	CHECK_EQ_I(oplog_counter_read(&a), 6);
	oplog_counter_fini(&a);
	oplog_domain_destroy(d);

	/* Pressure: 16 counters, 4 slots per thread, 2 threads. */
	cfg.slots = 4;
	d = oplog_counter_domain_create(&cfg);
	for (int i = 0; i < EV_OBJS; i++)
		CHECK(oplog_counter_init(&g_ev[i], d, 100, NULL, NULL) == 0);
	memset(g_ev_exp, 0, sizeof(g_ev_exp));
	pthread_t x = test_spawn(evict_thread, (void *)0), y = test_spawn(evict_thread, (void *)1);
	test_join(x);
	test_join(y);
	for (int i = 0; i < EV_OBJS; i++) {
		CHECK_EQ_I(oplog_counter_read(&g_ev[i]), 100 + g_ev_exp[0][i] + g_ev_exp[1][i]);
		oplog_counter_fini(&g_ev[i]);
	}
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_GT(st.evictions, 100);
	test_log("evict: %" PRIu64 " evictions", st.evictions);
	oplog_domain_destroy(d);
}

/* ---- zero detection ---- */
static _Atomic int g_released;
static void on_release(struct oplog_counter *c, void *arg)
{
	CHECK(arg == &g_released);
	CHECK_EQ_I(c->value, 0);
	atomic_fetch_add(&g_released, 1);
}
static void on_release_free(struct oplog_counter *c, void *arg)
{
	(void)arg;
	atomic_fetch_add(&g_released, 1);
	oplog_counter_fini(c);
	memset(c, 0xa5, sizeof(*c));
	free(c);
}

static struct oplog_counter g_rc;
static void *rc_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		CHECK(oplog_counter_inc(&g_rc) == 0);
		if (i % 100 == 0)
			CHECK_GT(oplog_counter_read(&g_rc), 0); /* we hold a reference */
		CHECK(oplog_counter_dec(&g_rc) == 0);
	}
	return NULL;
}

static void t_release(void)
{
	struct oplog_domain *d = oplog_counter_domain_create(NULL);
	atomic_store(&g_released, 0);
	CHECK(oplog_counter_init(&g_rc, d, 1, on_release, &g_released) == 0);
	pthread_t a = test_spawn(rc_thread, NULL), b = test_spawn(rc_thread, NULL);
	test_join(a);
	test_join(b);
	CHECK_EQ(atomic_load(&g_released), 0); /* the creator's reference is still there */
	CHECK_EQ_I(oplog_counter_read(&g_rc), 1);
	CHECK(oplog_counter_dec(&g_rc) == 0);
	CHECK_EQ(atomic_load(&g_released), 0); /* not detected before a synchronize */
	CHECK_EQ_I(oplog_counter_read(&g_rc), 0);
	CHECK_EQ(atomic_load(&g_released), 1);
	CHECK_EQ_I(oplog_counter_read(&g_rc), 0);
	CHECK_EQ(atomic_load(&g_released), 1); /* once */
	oplog_counter_fini(&g_rc);
	oplog_domain_destroy(d);

	/* Released from an eviction; the callback finalises and frees the counter. */
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 1;
	d = oplog_counter_domain_create(&cfg);
	atomic_store(&g_released, 0);
	struct oplog_counter *c = malloc(sizeof(*c)), other;
	CHECK(c);
	CHECK(oplog_counter_init(c, d, 1, on_release_free, NULL) == 0);
	CHECK(oplog_counter_init(&other, d, 0, NULL, NULL) == 0);
	CHECK(oplog_counter_dec(c) == 0);
	CHECK(oplog_counter_inc(&other) == 0); /* evicts c: sum 0, released and freed */
	CHECK_EQ(atomic_load(&g_released), 1);
	CHECK_EQ_I(oplog_counter_read(&other), 1);
	oplog_counter_fini(&other);
	oplog_domain_destroy(d);
}

/* ---- fini racing an eviction ----
 * Thread A logs to X, tells the main thread, then logs to Y: with one slot per thread
 * that evicts X, i.e. synchronizes X from A. Meanwhile the main thread finalises X and
 * frees it (poisoned first). oplog_object_fini must wait for A's eviction; ASan reports a
 * use after free if it does not, and X's value must include A's increment. */
static struct oplog_counter *_Atomic g_fx;
static struct oplog_counter g_fy;
static test_barrier g_fbar;
static test_gate g_flogged;         /* rounds in which A has logged to X */
static _Atomic unsigned g_fevicted; /* rounds in which A's eviction of X has returned */
static unsigned g_frounds;

static void *fini_race_thread(void *arg)
{
	(void)arg;
	for (unsigned r = 0; r < g_frounds; r++) {
		test_barrier_wait(&g_fbar);
		CHECK(oplog_counter_inc(atomic_load(&g_fx)) == 0);
		test_gate_set(&g_flogged, r + 1);
		CHECK(oplog_counter_inc(&g_fy) == 0); /* evicts X */
		atomic_store_explicit(&g_fevicted, r + 1, memory_order_release);
		test_barrier_wait(&g_fbar);
	}
	return NULL;
}

static void t_fini_race(void)
{
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 1;
	struct oplog_domain *d = oplog_counter_domain_create(&cfg);
	CHECK(oplog_counter_init(&g_fy, d, 0, NULL, NULL) == 0);
	g_frounds = (unsigned)test_scale(20000, 20);
	test_barrier_init(&g_fbar, 2);
	test_gate_init(&g_flogged, 0);
	atomic_store(&g_fevicted, 0);
	unsigned overlaps = 0;
	pthread_t a = test_spawn(fini_race_thread, NULL);
	for (unsigned r = 0; r < g_frounds; r++) {
		struct oplog_counter *x = malloc(sizeof(*x));
		CHECK(x && oplog_counter_init(x, d, 0, NULL, NULL) == 0);
		atomic_store(&g_fx, x);
		test_barrier_wait(&g_fbar);
		/* Spins while A runs (the race needs fini to start during A's eviction), then
		 * sleeps if A was preempted. */
		test_gate_wait(&g_flogged, r + 1, 40000);
		overlaps += atomic_load_explicit(&g_fevicted, memory_order_relaxed) <= r;
		oplog_counter_fini(x);
		CHECK_EQ_I(x->value, 1);
		memset(x, 0xa5, sizeof(*x));
		free(x);
		test_barrier_wait(&g_fbar);
	}
	test_join(a);
	test_barrier_destroy(&g_fbar);
	test_gate_destroy(&g_flogged);
	struct oplog_stats st;
	CHECK(oplog_domain_stats(d, &st) == 0);
	/* overlaps: rounds in which fini began before A's eviction had returned (the race
	 * this case hunts; how many depends on scheduling, so it is reported, not checked) */
	test_log("fini_race: %u rounds, %" PRIu64 " evictions, %u overlaps", g_frounds,
		 st.evictions, overlaps);
	CHECK_GT(st.evictions, 0);
	CHECK_EQ_I(oplog_counter_read(&g_fy), g_frounds);
	oplog_counter_fini(&g_fy);
	oplog_domain_destroy(d);
}

/* ---- rmap ---- */
static void t_rmap(void)
{
	for (int mode = 0; mode < 3; mode++) {
		struct oplog_domain *d = oplog_rmap_domain_create((enum oplog_list_mode)mode, 0, NULL);
		struct oplog_rmap r;
		struct oplog_rmap_mapping m[4];
		CHECK(oplog_rmap_init(&r, d) == 0);
		CHECK(oplog_rmap_mapping_init(&m[0], 20, 30) == 0);
		CHECK(oplog_rmap_mapping_init(&m[1], 0, 10) == 0);
		CHECK(oplog_rmap_mapping_init(&m[2], 5, 8) == 0);
		CHECK(oplog_rmap_mapping_init(&m[3], 2, 3) == 0);
		for (int i = 0; i < 4; i++)
			CHECK(oplog_rmap_add(&r, &m[i]) == OPLOG_PUSHED);
		CHECK(oplog_rmap_remove(&r, &m[3]) >= 0);
		CHECK_EQ(oplog_rmap_count(&r), 3);
		/* [0,10)->[0,6): 4, [5,8)->[5,6): 2, [20,30)->[20,20): 10 */
		CHECK_EQ(oplog_rmap_truncate(&r, 6), 16);
		CHECK_EQ(oplog_rmap_truncate(&r, 6), 0);
		CHECK_EQ(oplog_rmap_truncate(&r, 5), 2);
		oplog_synchronize(&r.obj);
		uint64_t prev = 0;
		for (struct oplog_list_node *n = r.head.next; n != &r.head; n = n->next) {
			struct oplog_rmap_mapping *mp = (struct oplog_rmap_mapping *)(void *)n;
			CHECK_GE(mp->start, prev);
			prev = mp->start;
		}
		oplog_unlock(&r.obj);
		CHECK_EQ(m[1].end, 5);
		CHECK_EQ(m[2].end, 5);
		CHECK_EQ(m[0].end, 20);
		CHECK_EQ(m[3].end, 3); /* removed before the truncates */
		oplog_rmap_fini(&r);
		oplog_domain_destroy(d);
	}
}

/* ---- ordering: ping-pong ---- */
struct seq_op {
	struct oplog_op op;
	uint64_t seq;
};
struct seq_obj {
	struct oplog_object obj;
	uint64_t next, errors;
};
static void seq_exec(struct oplog_object *o, struct oplog_op *op)
{
	struct seq_obj *s = (struct seq_obj *)(void *)o;
	if (((struct seq_op *)(void *)op)->seq != s->next)
		s->errors++;
	s->next++;
}
static struct seq_obj g_seq;
/* The token: thread t may log op k (k = t, t + n, ...) once turn[t] reaches k; it then
 * hands the token on by setting the next thread's gate to k + 1. The op of turn k + 1
 * starts after the op of turn k returned, so the merged order must be the turn order.
 * A waiter blocks (check.h's gates), so a hand-off costs a wake-up, not a time slice,
 * when the thread that holds the token is preempted or shares the waiter's CPU.
 *
 * Migrating: before handing the token on, the holder pins the next thread (asleep, as
 * a rule) to one of two CPUs, at one hand-off in 32: it wakes there and logs its op
 * there (a counter that reads lower on that CPU must not reorder it), then widens its
 * affinity again before it passes the token on. Moves are rationed: on a busy machine
 * each one waits for the target CPU's run queue (milliseconds beside busy loops), while
 * two unpinned threads hand the token over on one CPU at once; and a waiter left pinned
 * beside a busy loop would wait for that loop's time slice at every turn. */
#define PP_MAX_THR 20
static test_gate g_turn[PP_MAX_THR];
static pthread_t g_pp_th[PP_MAX_THR];
static bool g_pp_pinned[PP_MAX_THR]; /* by the token's previous holder, before its hand-off */
static test_barrier g_pp_bar;        /* g_pp_th[] is filled */
static uint64_t g_pp_n;
static unsigned g_pp_nthr = 2;
static bool g_pp_migrate;
static int g_pp_cpus[2], g_pp_ncpus;
static cpu_set_t g_pp_allowed; /* the process's CPUs */

static void pp_run(unsigned nthr, void *(*fn)(void *))
{
	g_pp_nthr = nthr;
	test_barrier_init(&g_pp_bar, nthr + 1);
	for (unsigned t = 0; t < nthr; t++) {
		test_gate_init(&g_turn[t], 0);
		g_pp_pinned[t] = false;
	}
	for (unsigned t = 0; t < nthr; t++)
		g_pp_th[t] = test_spawn(fn, (void *)(uintptr_t)t);
	test_barrier_wait(&g_pp_bar);
	for (unsigned t = 0; t < nthr; t++)
		test_join(g_pp_th[t]);
	for (unsigned t = 0; t < nthr; t++)
		test_gate_destroy(&g_turn[t]);
	test_barrier_destroy(&g_pp_bar);
}

static void *pp_thread(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t s = test_seed(t + 5);
	test_barrier_wait(&g_pp_bar);
	for (uint64_t k = t; k < g_pp_n; k += g_pp_nthr) {
		test_gate_wait(&g_turn[t], k, 40000);
		struct seq_op op = {OPLOG_OP_INIT(struct seq_op, seq_exec, 0), k};
		CHECK(oplog_log(&g_seq.obj, &op.op) == OPLOG_PUSHED);
		if (g_pp_pinned[t]) {
			CHECK_PT(pthread_setaffinity_np(pthread_self(), sizeof(g_pp_allowed),
							&g_pp_allowed));
			g_pp_pinned[t] = false;
		}
		unsigned nx = (t + 1) % g_pp_nthr;
		if (g_pp_migrate && g_pp_ncpus > 1 && k + 1 < g_pp_n && (test_rand(&s) & 31) == 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(g_pp_cpus[test_rand(&s) % 2], &set);
			CHECK_PT(pthread_setaffinity_np(g_pp_th[nx], sizeof(set), &set));
			g_pp_pinned[nx] = true;
		}
		test_gate_set(&g_turn[nx], k + 1);
	}
	return NULL;
}

static void t_order(void)
{
	CHECK(sched_getaffinity(0, sizeof(g_pp_allowed), &g_pp_allowed) == 0);
	g_pp_ncpus = 0;
	for (int c = 0; c < CPU_SETSIZE && g_pp_ncpus < 2; c++)
		if (CPU_ISSET(c, &g_pp_allowed))
			g_pp_cpus[g_pp_ncpus++] = c;
	/* The token lets one thread log at a time: runs differ only in where and when each
	 * op is logged. 2000 turns give dozens of full-log synchronizes (a 1024-byte log
	 * holds a few dozen of these ops) and, migrating, ~60 moves. */
	g_pp_n = test_scale(2000, 2);
	for (int order = OPLOG_ORDER_CLOCK; order <= OPLOG_ORDER_COUNTER; order++) {
		for (int mig = 0; mig < 2; mig++) {
			struct oplog_type t;
			memset(&t, 0, sizeof(t));
			t.size = sizeof(t);
			t.capacity = 1024; /* full logs synchronize mid-run, too */
			struct oplog_config cfg = OPLOG_CONFIG_INIT;
			cfg.order = order;
			struct oplog_domain *d = oplog_domain_create(&t, &cfg);
			CHECK(d);
			CHECK_EQ(oplog_domain_order(d), order);
			CHECK(oplog_object_init(&g_seq.obj, d) == 0);
			g_seq.next = g_seq.errors = 0;
			g_pp_migrate = mig;
			pp_run(2, pp_thread);
			oplog_synchronize(&g_seq.obj);
			CHECK_EQ(g_seq.next, g_pp_n);
			CHECK_EQ(g_seq.errors, 0);
			oplog_unlock(&g_seq.obj);
			struct oplog_stats st;
			CHECK(oplog_domain_stats(d, &st) == 0);
			CHECK_GT(st.full_syncs, 0);
			/* (CLOCK may or may not have to wait: that depends on speed, not checked) */
			if (order != OPLOG_ORDER_CLOCK)
				CHECK_EQ(st.commit_waits, 0);
			test_log("order %s%s: %" PRIu64 " ops in causal order, %" PRIu64 " commit waits",
				 oplog_order_name((enum oplog_order)order), mig ? " (migrating)" : "",
				 g_pp_n, st.commit_waits);
			oplog_object_fini(&g_seq.obj);
			oplog_domain_destroy(d);
		}
	}
	/* Many logs (more than the linear k-way merge handles): token passed round-robin
	 * among PP_MAX_THR threads, merged order must still be the causal order. */
	{
		struct oplog_type t;
		memset(&t, 0, sizeof(t));
		t.size = sizeof(t);
		struct oplog_domain *d = oplog_domain_create(&t, NULL);
		CHECK(d);
		CHECK(oplog_object_init(&g_seq.obj, d) == 0);
		g_seq.next = g_seq.errors = 0;
		g_pp_migrate = false;
		g_pp_n = PP_MAX_THR * test_scale(40, 4);
		pp_run(PP_MAX_THR, pp_thread);
		oplog_synchronize(&g_seq.obj);
		CHECK_EQ(g_seq.next, g_pp_n);
		CHECK_EQ(g_seq.errors, 0);
		oplog_unlock(&g_seq.obj);
		oplog_object_fini(&g_seq.obj);
		oplog_domain_destroy(d);
	}
	/* AUTO follows TSYNC_OPLOG_ORDER when set, else the clock source. */
	struct oplog_domain *d = oplog_counter_domain_create(NULL);
	const char *env = getenv("TSYNC_OPLOG_ORDER");
	enum oplog_order want = env && strcmp(env, "trust") == 0     ? OPLOG_ORDER_TRUST
				: env && strcmp(env, "counter") == 0 ? OPLOG_ORDER_COUNTER
				: env && strcmp(env, "clock") == 0   ? OPLOG_ORDER_CLOCK
				: tsync_clock_source() == TSYNC_CLOCK_COUNTER ? OPLOG_ORDER_CLOCK
									      : OPLOG_ORDER_COUNTER;
	CHECK_EQ(oplog_domain_order(d), want);
	oplog_domain_destroy(d);
}

/* ---- thread exit ---- */
static struct oplog_list g_xl;
static struct oplog_list_node g_xn[8];
static void *exit_thread(void *arg)
{
	unsigned base = (unsigned)(uintptr_t)arg;
	for (unsigned i = base; i < base + 4; i++)
		CHECK(oplog_list_add(&g_xl, &g_xn[i]) == OPLOG_PUSHED);
	return NULL; /* exits (and unregisters) with its ops still logged */
}

static void t_exit(void)
{
	struct oplog_domain *d = oplog_list_domain_create(OPLOG_LIST_GLOBAL_ABSORB, 0, NULL);
	CHECK(oplog_list_init(&g_xl, d) == 0);
	for (int i = 0; i < 8; i++)
		oplog_list_node_init(&g_xn[i]);
	test_join(test_spawn(exit_thread, (void *)0));
	test_join(test_spawn(exit_thread, (void *)4)); /* likely reuses the first thread's id */
	CHECK_EQ(oplog_list_size(&g_xl), 8);
	oplog_list_fini(&g_xl);
	oplog_domain_destroy(d);
}

/* ---- memory: dynamic logs ---- */
#define MEM_OBJS 4096
static struct oplog_counter *g_mem;
static test_barrier g_mem_bar;
static void *mem_thread(void *arg)
{
	(void)arg;
	test_barrier_wait(&g_mem_bar); /* both threads registered at once: two tables */
	for (int rep = 0; rep < 3; rep++)
		for (int i = 0; i < MEM_OBJS; i++)
			CHECK(oplog_counter_inc(&g_mem[i]) == 0);
	test_barrier_wait(&g_mem_bar);
	return NULL;
}

static void t_memory(void)
{
	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.slots = 64;
	struct oplog_domain *d = oplog_counter_domain_create(&cfg);
	g_mem = calloc(MEM_OBJS, sizeof(*g_mem));
	CHECK(g_mem);
	for (int i = 0; i < MEM_OBJS; i++)
		CHECK(oplog_counter_init(&g_mem[i], d, 0, NULL, NULL) == 0);
	test_barrier_init(&g_mem_bar, 2);
	pthread_t a = test_spawn(mem_thread, NULL), b = test_spawn(mem_thread, NULL);
	test_join(a);
	test_join(b);
	test_barrier_destroy(&g_mem_bar);
	struct oplog_stats st;
	CHECK(oplog_domain_stats(d, &st) == 0);
	CHECK_EQ(st.tables, 2);
	CHECK_LE(st.table_bytes, st.tables * (64 * st.slot_bytes + 2 * TSYNC_CACHE_LINE));
	/* Every object was updated by both threads; a design with a log per object per
	 * thread would hold MEM_OBJS * 2 logs (each on its own line). */
	uint64_t statik = (uint64_t)MEM_OBJS * 2 * st.slot_bytes;
	test_log("memory: %d counters x 2 threads: dynamic tables %" PRIu64
		 " B + objects %zu B; per-object logs would need %" PRIu64 " B more",
		 MEM_OBJS, st.table_bytes, MEM_OBJS * sizeof(struct oplog_counter), statik);
	CHECK_LT(st.table_bytes, statik / 16);
	for (int i = 0; i < MEM_OBJS; i++) {
		CHECK_EQ_I(oplog_counter_read(&g_mem[i]), 6);
		oplog_counter_fini(&g_mem[i]);
	}
	free(g_mem);
	oplog_domain_destroy(d);
}

/* ---- the checker itself must reject what is not linearizable ---- */
static bool lc_counter_step(void *st, const struct lc_op *op)
{
	int64_t *v = st;
	if (op->kind == 0) {
		++*v;
		return true;
	}
	return *v == op->ret;
}

static void t_lincheck(void)
{
	const struct lc_spec spec = {sizeof(int64_t), lc_counter_step};
	int64_t zero = 0;
	uint64_t S = tsync_clock_skew() + 10;
	/* inc [0,10], read -> 0 starting well after: stale read, not linearizable */
	struct lc_op h[3] = {{1000, 1010, 0, 0, 0, 0, 0}, {1020 + 2 * S, 1030 + 2 * S, 1, 1, 0, 0, 0}};
	CHECK(!lc_check(&spec, &zero, h, 2));
	h[1].ret = 1;
	CHECK(lc_check(&spec, &zero, h, 2));
	/* overlapping: read may see 0 or 1 */
	h[1].inv = 1005;
	h[1].ret = 0;
	CHECK(lc_check(&spec, &zero, h, 2));
	/* two reads in sequence cannot see 1 then 0 */
	h[0] = (struct lc_op){1000, 5000 + 10 * S, 0, 0, 0, 0, 0};
	h[1] = (struct lc_op){1010, 1020, 1, 1, 0, 0, 1};
	h[2] = (struct lc_op){1030 + 2 * S, 1040 + 2 * S, 2, 1, 0, 0, 0};
	CHECK(!lc_check(&spec, &zero, h, 3));
	h[2].ret = 1;
	CHECK(lc_check(&spec, &zero, h, 3));
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{"errors", t_errors}, {"absorb", t_absorb}, {"full", t_full},   {"evict", t_evict},
	{"release", t_release}, {"fini_race", t_fini_race}, {"rmap", t_rmap},   {"order", t_order}, {"exit", t_exit},
	{"memory", t_memory}, {"lincheck", t_lincheck},
};

int main(int argc, char **argv)
{
	/* Shorter than ctest's TIMEOUT (60 s for one case, 120 s for all: CMakeLists.txt),
	 * so that a hang fails with the watchdog's message. */
	test_watchdog(argc > 1 ? 50 : 110);
	bool any = false;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
			continue;
		any = true;
		cases[i].fn();
		test_log("%s: ok", cases[i].name);
	}
	CHECK_MSG(any, "unknown case '%s'", argc > 1 ? argv[1] : "");
	return 0;
}
