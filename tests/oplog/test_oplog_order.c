/*
 * tests/oplog/test_oplog_order.c - OpLog's ordering (OpLog (MIT TR 2014) §3,
 * <tsync/oplog.h>'s order policies): ping-pong between threads (optionally migrating): the
 * merged execution order is the causal order, under every order policy and clock
 * (tests/oplog/CMakeLists.txt runs it with each).
 */
#include "oplog_test.h"

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
			/* (CLOCK may or may not have to wait: that depends on speed, not checked)
			 */
			if (order != OPLOG_ORDER_CLOCK)
				CHECK_EQ(st.commit_waits, 0);
			test_log("order %s%s: %" PRIu64 " ops in causal order, %" PRIu64
				 " commit waits",
				 oplog_order_name((enum oplog_order)order),
				 mig ? " (migrating)" : "", g_pp_n, st.commit_waits);
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
	enum oplog_order want = env && strcmp(env, "trust") == 0              ? OPLOG_ORDER_TRUST
				: env && strcmp(env, "counter") == 0          ? OPLOG_ORDER_COUNTER
				: env && strcmp(env, "clock") == 0            ? OPLOG_ORDER_CLOCK
				: tsync_clock_source() == TSYNC_CLOCK_COUNTER ? OPLOG_ORDER_CLOCK
									      : OPLOG_ORDER_COUNTER;
	CHECK_EQ(oplog_domain_order(d), want);
	oplog_domain_destroy(d);
}

TEST_CASES_MAIN(oplog_test_main, {"order", t_order})
