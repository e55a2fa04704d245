/*
 * tests/thread/test_lifecycle.c - object lifetimes against thread lifetimes: instances
 * (struct ps, struct ps_mem) created and destroyed while other threads register, use
 * other instances and exit (their exit hooks walk every live instance); objects that
 * outlive the thread that allocated them (freed later by another thread into slabs the
 * pool took over); first use of the clock from many threads at once (init-race mode).
 *
 *   test_lifecycle              instances vs. thread churn
 *   test_lifecycle init-race    8 threads make their first tsync call simultaneously
 */
#include <tsync/tsync.h>

#include "check.h"

static _Atomic int stop;

/* ---- first use from many threads at once -------------------------------------------- */
#define NINIT 8
static test_barrier init_barrier;
static struct {
	tsync_tick_t skew, t;
	int source, id;
	double rate;
} seen[NINIT];

static void *init_thread(void *arg)
{
	int i = (int)(uintptr_t)arg;
	test_barrier_wait(&init_barrier);
	switch (i % 4) { /* different first calls */
	case 0: seen[i].t = tsync_now(); break;
	case 1: seen[i].t = tsync_now_ordered(); break;
	case 2: CHECK_EQ(tsync_clock_init(), 0); break;
	default:
		seen[i].id = tsync_thread_id(); /* registration initialises the clock */
		break;
	}
	seen[i].source = (int)tsync_clock_source();
	seen[i].skew = tsync_clock_skew();
	seen[i].rate = tsync_ticks_per_ns();
	return NULL;
}

static int init_race(void)
{
	test_barrier_init(&init_barrier, NINIT);
	pthread_t t[NINIT];
	for (int i = 0; i < NINIT; i++)
		t[i] = test_spawn(init_thread, (void *)(uintptr_t)i);
	for (int i = 0; i < NINIT; i++)
		test_join(t[i]);
	for (int i = 1; i < NINIT; i++) {
		CHECK_EQ_I(seen[i].source, seen[0].source);
		CHECK_EQ(seen[i].skew, seen[0].skew);
		CHECK(seen[i].rate == seen[0].rate);
	}
	CHECK(seen[0].source == TSYNC_CLOCK_COUNTER || seen[0].source == TSYNC_CLOCK_MONOTONIC);
	for (int i = 3; i < NINIT; i += 4)
		CHECK(seen[i].id >= 0);
	/* the readings taken during initialisation are on the same time line as later ones */
	tsync_tick_t now = tsync_now_ordered();
	for (int i = 0; i < NINIT; i += 4)
		CHECK_MSG(!tsync_clock_before(now, seen[i].t),
			  "a reading taken during initialisation is later than one taken after");
	test_barrier_destroy(&init_barrier);
	test_log("lifecycle: init race: ok");
	return 0;
}

/* ---- instances vs. thread churn ----------------------------------------------------- */
static void *churn_thread(void *arg)
{
	(void)arg;
	CHECK_EQ(tsync_thread_register(), 0);
	return NULL; /* exit hooks of every live instance run in this thread */
}

static void *churner(void *arg)
{
	(void)arg;
	uint64_t n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_t t[2] = {test_spawn(churn_thread, NULL), test_spawn(churn_thread, NULL)};
		test_join(t[0]);
		test_join(t[1]);
		n += 2;
	}
	return (void *)(uintptr_t)n;
}

struct owner_arg {
	struct ps *ps;
	struct ps_mem *m;
	void *objs[64];
};

/* Allocates objects and exits with them still live: its slabs go to the pool. */
static void *alloc_and_exit(void *p)
{
	struct owner_arg *a = p;
	for (int i = 0; i < 64; i++) {
		a->objs[i] = ps_alloc(a->m);
		CHECK(a->objs[i] != NULL);
		memset(a->objs[i], i, 48);
	}
	/* and some pending frees, left to the shared layers */
	ps_enter(a->ps);
	for (int i = 0; i < 8; i++)
		ps_free(a->m, ps_alloc(a->m));
	return NULL; /* inside a section, even */
}

static void *instance_worker(void *arg)
{
	uint64_t rng = test_seed((uint64_t)(uintptr_t)arg);
	uint64_t rounds = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		struct ps_config pc = PS_CONFIG_INIT;
		struct ps *ps = ps_create(&pc);
		CHECK(ps != NULL);
		struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
		mc.cache_size = 4;
		mc.slab_size = 4096;
		mc.slabs_kept = 1;
		struct ps_mem *m = ps_mem_create(ps, 48, (test_rand(&rng) & 1) ? &mc : NULL);
		CHECK(m != NULL);

		static _Thread_local struct owner_arg a;
		a.ps = ps;
		a.m = m;
		test_join(test_spawn(alloc_and_exit, &a));
		/* the objects outlived their allocating thread: free them here */
		ps_enter(ps);
		for (int i = 0; i < 64; i++) {
			const unsigned char *b = a.objs[i];
			for (int k = 0; k < 48; k++)
				CHECK_MSG(b[k] == (unsigned char)i,
					  "object of an exited thread changed");
			CHECK(ps_mem_of(a.objs[i]) == m);
			ps_free(m, a.objs[i]);
		}
		ps_exit(ps);
		for (int i = 0; i < 200; i++)
			ps_free(m, ps_alloc(m));
		ps_mem_reclaim(m);
		struct ps_mem_stats s;
		CHECK_EQ(ps_mem_stats(m, &s), 0);
		CHECK_EQ(s.in_use, 0);
		CHECK_EQ(s.allocs, 64 + 8 + 200);
		ps_mem_destroy(m);
		ps_destroy(ps);
		rounds++;
	}
	CHECK_EQ(tsync_thread_unregister(), 0);
	return (void *)(uintptr_t)rounds;
}

int main(int argc, char **argv)
{
	test_watchdog(50); /* inside ctest's TIMEOUT (60 s): the watchdog's message is printed */
	if (argc > 1 && strcmp(argv[1], "init-race") == 0)
		return init_race();
	double secs = test_stress_seconds(2.0) / 4;
	pthread_t ch = test_spawn(churner, NULL);
	pthread_t w[2] = {test_spawn(instance_worker, (void *)1),
			  test_spawn(instance_worker, (void *)2)};
	test_sleep_ns((uint64_t)(secs * 1e9));
	atomic_store(&stop, 1);
	void *r0, *r1, *c;
	CHECK_PT(pthread_join(w[0], &r0));
	CHECK_PT(pthread_join(w[1], &r1));
	CHECK_PT(pthread_join(ch, &c));
	CHECK_EQ(tsync_thread_count(), 0);
	test_log("lifecycle: %" PRIu64 " instance rounds, %" PRIu64 " short-lived threads: ok",
		 (uint64_t)(uintptr_t)r0 + (uint64_t)(uintptr_t)r1, (uint64_t)(uintptr_t)c);
	return 0;
}
