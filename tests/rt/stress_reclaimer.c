/*
 * tests/rt/stress_reclaimer.c - premature-reuse hunt with the reclamation task σ
 * (RT-SMR (RTAS 2018) §V-C): readers traverse a table of nodes inside sections and
 * check each node's magic word and generation twice, with a pause between, while
 * writers replace nodes (ps_alloc a new one, publish it, ps_free the old one) and σ
 * reclaims every 100 us. A node reused under a reader changes its generation (the
 * allocating writer rewrites it): the reader fails the test. A pinning reader also holds
 * a section open for ~1 ms at a time.
 *
 *   stress_reclaimer [task|both|shared] [selftest]
 *     task: TASK mode, one σ; both: BOTH mode; shared: two ps_mem (on one ps) with one
 *     σ (RT-PARSEC-single). selftest: writers use ps_free_now (immediate reuse) under
 *     the readers, whose check may or may not catch it (that depends on how the threads
 *     interleave: reported); then a reuse staged in one section must be caught by the
 *     same check, and the selftest succeeds (proves the detector works).
 * Duration: TSYNC_STRESS_SECONDS (default 2).
 */
#include <pthread.h>
#include <string.h>

#include <tsync/tsync.h>

#include "check.h"
#include "stress.h"

#define NSLOTS 64
#define LIVE 0x4c4956454c495645ull

struct node {
	uint64_t magic;
	uint64_t gen;
	uint64_t payload[6];
};

static struct ps *ps;
static struct ps_mem *mems[2];
static unsigned nmems = 1;
static _Atomic(struct node *) slots[2][NSLOTS];
static _Atomic uint64_t reuse_seen, pins_done;
static bool selftest;

struct worker {
	struct stress_worker h; /* ops: reads (readers), writes (writers) */
};

/* The readers' check: has n changed since it was seen live with generation gen? A node
 * reused under the reader was rewritten by its allocating writer (mknode). */
static bool node_changed(const struct node *n, uint64_t gen)
{
	return n->gen != gen || n->magic != LIVE;
}

static void *reader(void *p)
{
	struct worker *w = p;
	uint64_t *seed = &w->h.seed;
	bool pinner = (w->h.idx & 1) != 0;
	while (!stress_stopping()) {
		ps_enter(ps);
		unsigned k = (unsigned)(test_rand(seed) % nmems);
		unsigned hold = pinner && test_rand(seed) % 64 == 0 ? 1000 : 8;
		struct node *seen[8];
		uint64_t gens[8];
		for (int j = 0; j < 8; j++) {
			seen[j] = atomic_load_explicit(&slots[k][test_rand(seed) % NSLOTS],
						       memory_order_acquire);
			gens[j] = seen[j]->gen;
			if (seen[j]->magic != LIVE)
				atomic_fetch_add(&reuse_seen, 1);
		}
		if (hold > 8) {
			test_sleep_ns(1000000); /* a long section */
			atomic_fetch_add(&pins_done, 1);
		} else {
			for (volatile int s = 0; s < 200; s++)
				;
		}
		for (int j = 0; j < 8; j++)
			if (node_changed(seen[j], gens[j]))
				atomic_fetch_add(&reuse_seen, 1);
		ps_exit(ps);
		w->h.ops += 8;
	}
	return NULL;
}

static _Atomic uint64_t gen_next = 1;

static struct node *mknode(struct ps_mem *m)
{
	struct node *n = ps_alloc(m);
	CHECK(n != NULL);
	n->gen = atomic_fetch_add_explicit(&gen_next, 1, memory_order_relaxed);
	n->magic = LIVE;
	return n;
}

static void *writer(void *p)
{
	struct worker *w = p;
	uint64_t *seed = &w->h.seed;
	while (!stress_stopping()) {
		unsigned k = (unsigned)(test_rand(seed) % nmems);
		struct node *n = mknode(mems[k]);
		struct node *old = atomic_exchange_explicit(&slots[k][test_rand(seed) % NSLOTS], n,
							    memory_order_acq_rel);
		if (selftest)
			ps_free_now(mems[k], old); /* wrong on purpose: reused under readers */
		else
			ps_free(mems[k], old);
		if (++w->h.ops % 64 == 0)
			sched_yield();
	}
	ps_mem_reclaim(mems[0]);
	return NULL;
}

/* The selftest's proof that the readers' check catches a reuse, whatever the interleaving:
 * inside one section a node is seen, replaced, freed with ps_free_now (the wrong free: the
 * caller's next ps_alloc may hand it out at once) and allocated again by the same thread;
 * the check must then see the change. */
static void selftest_staged_reuse(void)
{
	struct ps_mem *m = mems[0];
	ps_enter(ps);
	struct node *n = atomic_load_explicit(&slots[0][0], memory_order_acquire);
	uint64_t gen = n->gen;
	CHECK(!node_changed(n, gen));
	atomic_store_explicit(&slots[0][0], mknode(m), memory_order_release);
	ps_free_now(m, n);
	struct node *got[64];
	int k = 0;
	bool back = false;
	while (k < 64 && !back) {
		got[k] = mknode(m);
		back = got[k++] == n;
	}
	CHECK_MSG(back, "selftest: ps_free_now's object not handed out by 64 ps_alloc");
	CHECK_MSG(node_changed(n, gen), "selftest: a node reused under a section went unnoticed");
	ps_exit(ps);
	for (int i = 0; i < k; i++)
		ps_free_now(m, got[i]); /* never published */
}

/* Every 10 ms: the counters' invariants hold at every instant (EXACT word). */
static void sample(void *arg)
{
	(void)arg;
	for (unsigned k = 0; k < nmems; k++) {
		struct ps_mem_stats s;
		CHECK_EQ(ps_mem_stats(mems[k], &s), 0);
		CHECK_EQ(s.zombie + s.garbage, s.pending);
		CHECK_LE(s.peak_pending, s.peak_zombie + s.peak_garbage);
	}
}

int main(int argc, char **argv)
{
	double secs = stress_begin(2.0, 10, 100); /* watchdog 120 s at the default 2 s */
	const char *mode = argc > 1 ? argv[1] : "task";
	selftest = argc > 2 && strcmp(argv[2], "selftest") == 0;
	int rmode = strcmp(mode, "both") == 0 ? PS_MEM_RECLAIM_BOTH : PS_MEM_RECLAIM_TASK;
	if (strcmp(mode, "shared") == 0)
		nmems = 2;
	struct ps_config pc = PS_CONFIG_INIT;
	pc.policy = PS_POLICY_RT;
	ps = ps_create(&pc);
	CHECK(ps != NULL);
	struct ps_reclaimer_config rc = PS_RECLAIMER_CONFIG_INIT;
	rc.period_ns = 100000; /* q = 100 us */
	struct ps_reclaimer *r = ps_reclaimer_start(&rc);
	CHECK(r != NULL);
	for (unsigned k = 0; k < nmems; k++) {
		struct ps_mem_config c = PS_MEM_CONFIG_INIT;
		c.reclaim_mode = rmode;
		c.accounting = PS_MEM_ACCOUNT_EXACT;
		c.prudence = PS_MEM_PRUDENCE_ALL; /* every Prudence policy, whatever the default */
		if (TEST_SMALL) {
			c.cache_size = 4;
			c.reclaim_batch = 2;
			c.slab_size = 4096;
		}
		mems[k] = ps_mem_create(ps, sizeof(struct node), &c);
		CHECK(mems[k] != NULL);
		CHECK_EQ(ps_reclaimer_attach(r, mems[k]), 0);
		for (unsigned i = 0; i < NSLOTS; i++)
			atomic_store(&slots[k][i], mknode(mems[k]));
	}
	enum { NR = 3, NW = 2 };
	struct worker rw[NR], ww[NW];
	memset(rw, 0, sizeof rw);
	memset(ww, 0, sizeof ww);
	stress_spawn_workers(reader, rw, NR, 1);
	stress_spawn_workers(writer, ww, NW, 11);
	/* a reuse seen ends the run early (the selftest's goal, any other run's failure) */
	stress_run(secs, &reuse_seen, sample, NULL);
	stress_end(selftest ? NULL : &reuse_seen);
	uint64_t bad = atomic_load(&reuse_seen);
	struct ps_reclaimer_stats rs;
	CHECK_EQ(ps_reclaimer_stats(r, &rs), 0);
	test_log("stress_reclaimer %s%s: %llu reads, %llu writes, %llu pins, %llu reuses seen; "
		 "σ: %llu activations, %llu collected, max e %llu ns, max α %llu ns, max %llu "
		 "per activation, %llu overruns, max release lag %llu ns",
		 mode, selftest ? " selftest" : "", (unsigned long long)stress_ops_total(rw, NR),
		 (unsigned long long)stress_ops_total(ww, NW),
		 (unsigned long long)atomic_load(&pins_done), (unsigned long long)bad,
		 (unsigned long long)rs.activations, (unsigned long long)rs.collected,
		 (unsigned long long)rs.max_activation_ns, (unsigned long long)rs.max_quiesce_ns,
		 (unsigned long long)rs.max_collected, (unsigned long long)rs.overruns,
		 (unsigned long long)rs.max_release_lag_ns);
	if (selftest) {
		if (bad == 0)
			test_log("stress_reclaimer selftest: the racing readers saw no reuse "
				 "in this run (it depends on the interleaving)");
		selftest_staged_reuse();
		_exit(0); /* readers may have seen garbage; do not tear down */
	}
	CHECK_EQ(bad, 0);
	stress_check_progress("readers", rw, NR, 1);
	stress_check_progress("writers", ww, NW, 1);
	/* σ runs every q: it activates, and in TASK mode collects what the writers handed it
	 * (each wrote at least once): with nobody inside a section now, its next activation
	 * does if none did yet - however late σ's thread got a CPU */
	uint64_t dl = test_now_ns() + 60000000000ull;
	while (rs.activations == 0 || (rmode == PS_MEM_RECLAIM_TASK && rs.collected == 0)) {
		CHECK_MSG(test_now_ns() < dl, "σ: %llu activations, %llu collected in 60 s",
			  (unsigned long long)rs.activations, (unsigned long long)rs.collected);
		test_sleep_ms(1);
		CHECK_EQ(ps_reclaimer_stats(r, &rs), 0);
	}
	/* quiet: unlink everything, let σ's last detach and the threads collect it */
	for (unsigned k = 0; k < nmems; k++)
		for (unsigned i = 0; i < NSLOTS; i++)
			ps_free(mems[k], atomic_exchange(&slots[k][i], NULL));
	ps_reclaimer_stop(r);
	for (unsigned k = 0; k < nmems; k++) {
		ps_mem_reclaim(mems[k]);
		struct ps_mem_stats s;
		CHECK_EQ(ps_mem_stats(mems[k], &s), 0);
		CHECK_EQ(s.live, 0);
		CHECK_EQ(s.pending, 0);
		CHECK_EQ(s.zombie + s.garbage, 0);
		CHECK_EQ(s.handoff, 0);
		CHECK_LE(s.peak_pending, s.peak_zombie + s.peak_garbage);
		ps_mem_destroy(mems[k]);
	}
	ps_destroy(ps);
	return 0;
}
