/*
 * tests/oplog/test_oplog_lin.c - linearizability of the OpLog structures, checked by a
 * Wing & Gong search (lincheck.h) over many short recorded histories.
 *
 *   test_oplog_lin STRUCT MODE [migrate] [evict] [small] [trust|counter]
 *     STRUCT  counter | list | rmap
 *     MODE    basic | global | local   (absorption; ignored for counter)
 *     migrate every thread moves to a random allowed CPU before each op
 *     evict   3 objects share a domain with 1 slot per thread: every switch of object
 *             evicts (synchronizes) the previous one
 *     small   logs of 3 ops: full-log synchronizes all the time
 *     trust / counter   the order policy (default: the domain's default)
 *
 * Each round, 3 threads run 6 random ops each on the objects, recording invocation and
 * response times; then the main thread synchronizes every object, reads its whole state
 * (appended to the history as a final op that must match), and checks each object's
 * history against the sequential specification. The state each owner thread expects
 * (nodes and mappings are owned by one thread per round, ownership rotates between
 * rounds so that adds and removes of a node come from different threads' logs) must
 * equal the state read. In basic mode (no absorption, no precondition) any thread adds
 * or removes any node, so a batch holds ops on one node from several threads' logs and
 * only the timestamp merge order makes the history linearizable. Rounds run for
 * test_stress_seconds(2).
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

#define NTHR 3
#define OPS 6
#define MAXOBJ 3
#define NNODES 12 /* per list / rmap object; < 64 */
#define NMAP 8    /* rmap mappings per object */

enum { S_COUNTER, S_LIST, S_RMAP };
enum { K_INC, K_DEC, K_READ, K_ADD, K_REM, K_CONTAINS, K_SIZE, K_TRUNC, K_SNAP };

static int g_struct, g_mode;
static bool g_migrate, g_evict, g_small;
static int g_order = OPLOG_ORDER_AUTO;
static unsigned g_nobj = 1;
static struct oplog_domain *g_dom;
static struct oplog_counter g_ctr[MAXOBJ];
static struct oplog_list g_list[MAXOBJ];
static struct oplog_list_node g_nodes[MAXOBJ][NNODES];
static struct oplog_rmap g_rmap[MAXOBJ];
static struct oplog_rmap_mapping g_maps[MAXOBJ][NMAP];
static bool g_present[MAXOBJ][NNODES];     /* owner's knowledge, per round */
static int64_t g_expect_ctr[MAXOBJ][NTHR]; /* each thread's net delta this round */

struct rec {
	struct lc_op op;
	unsigned obj;
};
static struct rec g_hist[NTHR][OPS];
static unsigned g_round;
static _Atomic int g_stop;
static test_barrier g_bar;
static int g_cpus[CPU_SETSIZE], g_ncpus;
static _Atomic uint64_t g_cpu_seen; /* bitmask of CPUs ops ran on (first 64) */

/* ---- sequential specifications ---- */

struct rmap_state {
	uint32_t present;
	uint8_t end[NMAP];
};

static bool step_counter(void *st, const struct lc_op *op)
{
	int64_t *v = st;
	switch (op->kind) {
	case K_INC: ++*v; return true;
	case K_DEC: --*v; return true;
	case K_READ:
	case K_SNAP: return *v == op->ret;
	}
	return false;
}

static bool step_list(void *st, const struct lc_op *op)
{
	uint64_t *m = st;
	switch (op->kind) {
	case K_ADD: *m |= 1ull << op->arg; return true;
	case K_REM: *m &= ~(1ull << op->arg); return true;
	case K_CONTAINS: return ((*m >> op->arg) & 1) == (uint64_t)op->ret;
	case K_SIZE: return (int64_t)__builtin_popcountll(*m) == op->ret;
	case K_SNAP: return (int64_t)*m == op->ret;
	}
	return false;
}

static uint64_t rmap_pack(const struct rmap_state *s)
{
	uint64_t v = s->present;
	for (int i = 0; i < NMAP; i++)
		v |= (uint64_t)(s->end[i] & 0xf) << (16 + 4 * i);
	return v;
}

static bool step_rmap(void *st, const struct lc_op *op)
{
	struct rmap_state *s = st;
	switch (op->kind) {
	case K_ADD: s->present |= 1u << op->arg; return true;
	case K_REM: s->present &= ~(1u << op->arg); return true;
	case K_SIZE: return (int64_t)__builtin_popcount(s->present) == op->ret;
	case K_TRUNC: {
		int64_t pages = 0;
		for (int i = 0; i < NMAP; i++) {
			if (!(s->present & (1u << i)) || s->end[i] <= op->arg)
				continue;
			uint64_t ne =
				(uint64_t)i > (uint64_t)op->arg ? (uint64_t)i : (uint64_t)op->arg;
			pages += s->end[i] - (int64_t)ne;
			s->end[i] = (uint8_t)ne;
		}
		return pages == op->ret;
	}
	case K_SNAP: return rmap_pack(s) == (uint64_t)op->ret;
	}
	return false;
}

/* ---- the threads ---- */

static unsigned owner_of(unsigned node, unsigned round)
{
	return (node + round) % NTHR;
}

static void maybe_migrate(uint64_t *seed)
{
	if (g_migrate && g_ncpus > 1) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(g_cpus[test_rand(seed) % (unsigned)g_ncpus], &set);
		CHECK_PT(pthread_setaffinity_np(pthread_self(), sizeof(set), &set));
	}
	int cpu = sched_getcpu();
	if (cpu >= 0 && cpu < 64)
		atomic_fetch_or(&g_cpu_seen, 1ull << cpu);
}

static void one_op(unsigned tid, struct rec *r, uint64_t *seed)
{
	unsigned o = g_nobj > 1 ? (unsigned)(test_rand(seed) % g_nobj) : 0;
	unsigned x = (unsigned)(test_rand(seed) % 10);
	struct lc_op *op = &r->op;
	r->obj = o;
	op->thread = (int)tid;
	op->ret = 0;
	op->arg = 0;
	if (g_struct == S_COUNTER) {
		op->kind = x < 4 ? K_INC : x < 8 ? K_DEC : K_READ;
		op->inv = tsync_now_before_loads();
		if (op->kind == K_INC)
			CHECK(oplog_counter_inc(&g_ctr[o]) == 0);
		else if (op->kind == K_DEC)
			CHECK(oplog_counter_dec(&g_ctr[o]) == 0);
		else
			op->ret = oplog_counter_read(&g_ctr[o]);
		op->resp = tsync_now_ordered();
		if (op->kind != K_READ)
			g_expect_ctr[o][tid] += op->kind == K_INC ? 1 : -1;
		return;
	}
	/* list / rmap: toggle one of our own nodes, or read */
	unsigned nn = g_struct == S_LIST ? NNODES : NMAP;
	unsigned mine[NNODES], nmine = 0;
	for (unsigned i = 0; i < nn; i++)
		if (owner_of(i, g_round) == tid)
			mine[nmine++] = i;
	if (x < 6 && (nmine > 0 || g_mode == OPLOG_LIST_BASIC)) {
		/* BASIC needs no precondition: any thread adds or removes any node (adds of
		 * present and removes of absent nodes are no-ops), so ops on one node come from
		 * several logs in one batch and their merge order matters. With absorption,
		 * P1/P2 hold: a node is toggled only by its owner this round. */
		bool any = g_mode == OPLOG_LIST_BASIC;
		unsigned i = any ? (unsigned)(test_rand(seed) % nn) : mine[test_rand(seed) % nmine];
		bool add = any ? (test_rand(seed) & 1) != 0 : !g_present[o][i];
		op->kind = add ? K_ADD : K_REM;
		op->arg = i;
		op->inv = tsync_now_before_loads();
		int rc;
		if (g_struct == S_LIST)
			rc = add ? oplog_list_add(&g_list[o], &g_nodes[o][i])
				 : oplog_list_remove(&g_list[o], &g_nodes[o][i]);
		else
			rc = add ? oplog_rmap_add(&g_rmap[o], &g_maps[o][i])
				 : oplog_rmap_remove(&g_rmap[o], &g_maps[o][i]);
		op->resp = tsync_now_ordered();
		CHECK(rc == OPLOG_PUSHED || rc == OPLOG_ABSORBED);
		if (rc == OPLOG_ABSORBED)
			CHECK(g_mode == OPLOG_LIST_LOCAL_ABSORB && !add);
		if (!any)
			g_present[o][i] = add;
		return;
	}
	if (g_struct == S_LIST) {
		if (x < 8) {
			unsigned i = (unsigned)(test_rand(seed) % NNODES);
			op->kind = K_CONTAINS;
			op->arg = i;
			op->inv = tsync_now_before_loads();
			op->ret = oplog_list_contains(&g_list[o], &g_nodes[o][i]);
		} else {
			op->kind = K_SIZE;
			op->inv = tsync_now_before_loads();
			op->ret = (int64_t)oplog_list_size(&g_list[o]);
		}
	} else {
		if (x < 8) {
			op->kind = K_TRUNC;
			op->arg = 4 + (int64_t)(test_rand(seed) % 12);
			op->inv = tsync_now_before_loads();
			op->ret = (int64_t)oplog_rmap_truncate(&g_rmap[o], (uint64_t)op->arg);
		} else {
			op->kind = K_SIZE;
			op->inv = tsync_now_before_loads();
			op->ret = (int64_t)oplog_rmap_count(&g_rmap[o]);
		}
	}
	op->resp = tsync_now_ordered();
}

static void *worker(void *arg)
{
	unsigned tid = (unsigned)(uintptr_t)arg;
	uint64_t seed = test_seed(tid + 1);
	for (;;) {
		test_barrier_wait(&g_bar); /* round start */
		if (atomic_load(&g_stop))
			break;
		for (unsigned k = 0; k < OPS; k++) {
			maybe_migrate(&seed);
			test_spin((unsigned)(test_rand(&seed) % 300));
			one_op(tid, &g_hist[tid][k], &seed);
		}
		test_barrier_wait(&g_bar); /* round end */
	}
	return NULL;
}

/* ---- main: rounds and checks ---- */

static void snapshot(unsigned o, struct lc_op *op, void *state_out)
{
	op->kind = K_SNAP;
	op->thread = -1;
	op->inv = tsync_now_before_loads();
	if (g_struct == S_COUNTER) {
		int64_t v = oplog_counter_read(&g_ctr[o]);
		op->ret = v;
		memcpy(state_out, &v, sizeof(v));
	} else if (g_struct == S_LIST) {
		uint64_t m = 0;
		oplog_synchronize(&g_list[o].obj);
		size_t cnt = 0;
		for (struct oplog_list_node *n = g_list[o].head.next; n != &g_list[o].head;
		     n = n->next) {
			m |= 1ull << (n - g_nodes[o]);
			cnt++;
		}
		CHECK_EQ(cnt, g_list[o].count);
		oplog_unlock(&g_list[o].obj);
		op->ret = (int64_t)m;
		memcpy(state_out, &m, sizeof(m));
	} else {
		struct rmap_state s;
		memset(&s, 0, sizeof(s));
		oplog_synchronize(&g_rmap[o].obj);
		uint64_t prev_start = 0;
		for (struct oplog_list_node *n = g_rmap[o].head.next; n != &g_rmap[o].head;
		     n = n->next) {
			struct oplog_rmap_mapping *m = (struct oplog_rmap_mapping *)(void *)n;
			CHECK(m->start >= prev_start); /* sorted by start */
			prev_start = m->start;
			s.present |= 1u << (m - g_maps[o]);
		}
		for (int i = 0; i < NMAP; i++)
			s.end[i] = (uint8_t)g_maps[o][i].end;
		op->ret = (int64_t)rmap_pack(&s);
		oplog_unlock(&g_rmap[o].obj);
		memcpy(state_out, &s, sizeof(s));
	}
	op->resp = tsync_now_ordered();
}

/* Re-extend every mapping's end (ends only shrink under truncate): quiescent, all logs
 * applied, under the object lock. */
static void rmap_refresh(unsigned o, uint64_t *seed, struct rmap_state *s)
{
	oplog_synchronize(&g_rmap[o].obj);
	for (int i = 0; i < NMAP; i++) {
		g_maps[o][i].end = (uint64_t)i + 4 + test_rand(seed) % 8;
		s->end[i] = (uint8_t)g_maps[o][i].end;
	}
	oplog_unlock(&g_rmap[o].obj);
}

static void usage(void)
{
	fprintf(stderr, "usage: test_oplog_lin counter|list|rmap basic|global|local "
			"[migrate] [evict] [small] [trust|counter]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	g_struct = strcmp(argv[1], "counter") == 0 ? S_COUNTER
		   : strcmp(argv[1], "list") == 0  ? S_LIST
		   : strcmp(argv[1], "rmap") == 0  ? S_RMAP
						   : -1;
	g_mode = strcmp(argv[2], "basic") == 0    ? OPLOG_LIST_BASIC
		 : strcmp(argv[2], "global") == 0 ? OPLOG_LIST_GLOBAL_ABSORB
		 : strcmp(argv[2], "local") == 0  ? OPLOG_LIST_LOCAL_ABSORB
						  : -1;
	if (g_struct < 0 || g_mode < 0)
		usage();
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "migrate") == 0)
			g_migrate = true;
		else if (strcmp(argv[i], "evict") == 0)
			g_evict = true;
		else if (strcmp(argv[i], "small") == 0)
			g_small = true;
		else if (strcmp(argv[i], "trust") == 0)
			g_order = OPLOG_ORDER_TRUST;
		else if (strcmp(argv[i], "counter") == 0)
			g_order = OPLOG_ORDER_COUNTER;
		else
			usage();
	}
	test_watchdog(120);
	cpu_set_t set;
	CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			g_cpus[g_ncpus++] = c;

	struct oplog_config cfg = OPLOG_CONFIG_INIT;
	cfg.order = g_order;
	if (g_evict) {
		cfg.slots = 1;
		g_nobj = 3;
	}
	size_t cap = g_small ? 3 * sizeof(struct oplog_list_op) : 0; /* 3 ops */
	if (g_struct == S_COUNTER)
		g_dom = oplog_counter_domain_create(&cfg);
	else if (g_struct == S_LIST)
		g_dom = oplog_list_domain_create((enum oplog_list_mode)g_mode, cap, &cfg);
	else
		g_dom = oplog_rmap_domain_create((enum oplog_list_mode)g_mode, cap, &cfg);
	CHECK(g_dom != NULL);
	test_log("oplog lin: %s %s order=%s skew=%" PRIu64 " objects=%u%s%s", argv[1], argv[2],
		 oplog_order_name(oplog_domain_order(g_dom)), (uint64_t)tsync_clock_skew(), g_nobj,
		 g_migrate ? " migrate" : "", g_small ? " small" : "");

	uint64_t seed = test_seed(99);
	unsigned char init[MAXOBJ][LC_MAX_STATE];
	memset(init, 0, sizeof(init));
	for (unsigned o = 0; o < g_nobj; o++) {
		if (g_struct == S_COUNTER) {
			CHECK(oplog_counter_init(&g_ctr[o], g_dom, 0, NULL, NULL) == 0);
		} else if (g_struct == S_LIST) {
			CHECK(oplog_list_init(&g_list[o], g_dom) == 0);
			for (int i = 0; i < NNODES; i++)
				oplog_list_node_init(&g_nodes[o][i]);
		} else {
			CHECK(oplog_rmap_init(&g_rmap[o], g_dom) == 0);
			for (int i = 0; i < NMAP; i++)
				CHECK(oplog_rmap_mapping_init(&g_maps[o][i], (uint64_t)i,
							      (uint64_t)i + 8) == 0);
			rmap_refresh(o, &seed, (struct rmap_state *)(void *)init[o]);
		}
	}

	const struct lc_spec spec = {g_struct == S_COUNTER ? sizeof(int64_t)
				     : g_struct == S_LIST  ? sizeof(uint64_t)
							   : sizeof(struct rmap_state),
				     g_struct == S_COUNTER ? step_counter
				     : g_struct == S_LIST  ? step_list
							   : step_rmap};

	test_barrier_init(&g_bar, NTHR + 1);
	pthread_t th[NTHR];
	for (unsigned t = 0; t < NTHR; t++)
		th[t] = test_spawn(worker, (void *)(uintptr_t)t);

	double secs = test_stress_seconds(2);
	uint64_t deadline = test_now_ns() + (uint64_t)(secs * 1e9);
	unsigned rounds = 0;
	uint64_t checked_ops = 0;
	for (;;) {
		memset(g_expect_ctr, 0, sizeof(g_expect_ctr));
		test_barrier_wait(&g_bar); /* start */
		test_barrier_wait(&g_bar); /* end */
		for (unsigned o = 0; o < g_nobj; o++) {
			struct lc_op h[NTHR * OPS + 1];
			unsigned n = 0;
			for (unsigned t = 0; t < NTHR; t++)
				for (unsigned k = 0; k < OPS; k++)
					if (g_hist[t][k].obj == o)
						h[n++] = g_hist[t][k].op;
			unsigned char final_state[LC_MAX_STATE];
			snapshot(o, &h[n], final_state);
			n++;
			if (!lc_check(&spec, init[o], h, n)) {
				fprintf(stderr, "round %u object %u: history not linearizable:\n",
					g_round, o);
				for (unsigned i = 0; i < n; i++)
					fprintf(stderr,
						"  t%d kind %d arg %" PRId64 " ret %" PRId64
						" [%" PRIu64 ", %" PRIu64 "]\n",
						h[i].thread, h[i].kind, h[i].arg, h[i].ret,
						h[i].inv, h[i].resp);
				CHECK_MSG(false, "linearizability violation");
			}
			checked_ops += n;
			/* The owners' knowledge must be the final state. */
			if (g_struct == S_COUNTER) {
				int64_t exp = *(int64_t *)(void *)init[o];
				for (unsigned t = 0; t < NTHR; t++)
					exp += g_expect_ctr[o][t];
				CHECK_EQ_I(*(int64_t *)(void *)final_state, exp);
			} else if (g_mode != OPLOG_LIST_BASIC) {
				uint64_t m = g_struct == S_LIST
						     ? *(uint64_t *)(void *)final_state
						     : ((struct rmap_state *)(void *)final_state)
							       ->present;
				unsigned nn = g_struct == S_LIST ? NNODES : NMAP;
				for (unsigned i = 0; i < nn; i++)
					CHECK_EQ((m >> i) & 1, g_present[o][i]);
			}
			memcpy(init[o], final_state, LC_MAX_STATE);
			if (g_struct == S_RMAP && rounds % 4 == 3)
				rmap_refresh(o, &seed, (struct rmap_state *)(void *)init[o]);
		}
		rounds++;
		g_round++;
		if (test_now_ns() > deadline && rounds >= 20)
			break;
	}
	atomic_store(&g_stop, 1);
	test_barrier_wait(&g_bar);
	for (unsigned t = 0; t < NTHR; t++)
		test_join(th[t]);

	struct oplog_stats st;
	CHECK(oplog_domain_stats(g_dom, &st) == 0);
	test_log("rounds %u, ops checked %" PRIu64 "; logged %" PRIu64 " absorbed local %" PRIu64
		 " global %" PRIu64 " executed %" PRIu64 " syncs %" PRIu64 " full %" PRIu64
		 " evictions %" PRIu64 " commit waits %" PRIu64,
		 rounds, checked_ops, st.logged, st.absorbed_local, st.absorbed_global, st.executed,
		 st.syncs, st.full_syncs, st.evictions, st.commit_waits);
	/* The paths this configuration is meant to exercise were taken. */
	if (g_struct != S_COUNTER && g_mode == OPLOG_LIST_LOCAL_ABSORB)
		CHECK_GT(st.absorbed_local, 0);
	if (g_struct != S_COUNTER && g_mode == OPLOG_LIST_GLOBAL_ABSORB)
		CHECK_GT(st.absorbed_global, 0);
	if (g_struct != S_COUNTER && g_mode == OPLOG_LIST_BASIC)
		CHECK_EQ(st.absorbed_global + st.absorbed_local, 0);
	if (g_small)
		CHECK_GT(st.full_syncs, 0);
	if (g_evict)
		CHECK_GT(st.evictions, 0);
	if (g_migrate && g_ncpus > 1)
		CHECK_GT(__builtin_popcountll(atomic_load(&g_cpu_seen)), 1);

	for (unsigned o = 0; o < g_nobj; o++) {
		if (g_struct == S_COUNTER)
			oplog_counter_fini(&g_ctr[o]);
		else if (g_struct == S_LIST)
			oplog_list_fini(&g_list[o]);
		else
			oplog_rmap_fini(&g_rmap[o]);
	}
	oplog_domain_destroy(g_dom);
	test_barrier_destroy(&g_bar);
	test_log("ok");
	return 0;
}
