/*
 * tests/ps/test_ps_call.c - deferred callbacks for any object (<tsync/ps.h>: ps_call,
 * ps_call_free, ps_barrier, ps_call_poll): each callback runs exactly once, never while
 * a section active at its ps_call is still running, ps_barrier waits for every callback
 * queued before it (other threads' and exited threads' included), and ps_destroy runs
 * what is left.
 *
 * The hunt (test_reuse_hunt) is the failure this API exists to prevent: readers walk a
 * list of malloc'd nodes inside sections and check each node's marker; writers replace
 * nodes and hand the old ones to ps_call, whose callback poisons the marker and frees.
 * A callback that ran under a reader shows as a poisoned marker (or, under ASan, a
 * use-after-free).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

#define LIVE 0x11fe11fe11fe11feull
#define DEAD 0xdeaddeaddeaddeadull

struct obj {
	uint64_t marker;
	uint64_t value;
	_Atomic unsigned runs; /* times its callback ran */
	struct ps_head head;
};

static _Atomic uint64_t g_runs; /* callbacks run, all tests */

static void obj_cb(struct ps_head *h)
{
	struct obj *o = (struct obj *)((char *)h - offsetof(struct obj, head));
	atomic_fetch_add_explicit(&o->runs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g_runs, 1, memory_order_relaxed);
}

/* ---- one thread: exactly once, barrier, poll, stats ---------------------------------- */
static void test_basic(void)
{
	struct ps *ps = ps_create(NULL);
	CHECK(ps);
	enum { N = 1000 };
	struct obj *o = calloc(N, sizeof(*o));
	CHECK(o);
	uint64_t r0 = atomic_load(&g_runs);
	for (int i = 0; i < N; i++)
		ps_call(ps, &o[i].head, obj_cb);
	ps_barrier(ps);
	for (int i = 0; i < N; i++)
		CHECK_EQ(atomic_load(&o[i].runs), 1);
	CHECK_EQ(atomic_load(&g_runs) - r0, N);
	struct ps_call_stats st;
	CHECK_EQ(ps_call_stats(ps, &st), 0);
	CHECK_EQ(st.queued, N);
	CHECK_EQ(st.run, N);
	CHECK_EQ(st.pending, 0);
	CHECK_GE(st.batches, N / PS_CALL_BATCH);
	/* a second barrier has nothing to run and runs nothing twice */
	ps_barrier(ps);
	for (int i = 0; i < N; i++)
		CHECK_EQ(atomic_load(&o[i].runs), 1);

	/* fewer than a batch: nothing closes by itself; a poll with no section anywhere
	 * proves the stamp at once (its read barrier) and runs them */
	for (int i = 0; i < 10; i++) {
		atomic_store(&o[i].runs, 0);
		ps_call(ps, &o[i].head, obj_cb);
	}
	CHECK_EQ(ps_call_poll(ps), 10);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(atomic_load(&o[i].runs), 1);
	CHECK_EQ(ps_call_poll(ps), 0);
	CHECK_ERRNO(ps_call_stats(ps, NULL), -1, EINVAL);
	CHECK_ERRNO(ps_call_stats(NULL, &st), -1, EINVAL);
	ps_destroy(ps);
	free(o);
}

/* ---- ps_call_free: the object is freed (ASan/LSan see a leak or a bad free otherwise) */
struct mobj {
	char pad[40];
	struct ps_head head;
	char tail[24];
};

static void test_call_free(void)
{
	struct ps *ps = ps_create(NULL);
	CHECK(ps);
	enum { N = 500 };
	for (int i = 0; i < N; i++) {
		struct mobj *m = malloc(sizeof(*m));
		CHECK(m);
		memset(m, 0x5a, sizeof(*m));
		ps_call_free(ps, &m->head, offsetof(struct mobj, head));
	}
	/* mixed with callbacks in the same batches */
	struct obj o[3] = {{0}};
	for (int i = 0; i < 3; i++)
		ps_call(ps, &o[i].head, obj_cb);
	ps_barrier(ps);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(atomic_load(&o[i].runs), 1);
	struct ps_call_stats st;
	CHECK_EQ(ps_call_stats(ps, &st), 0);
	CHECK_EQ(st.run, N + 3);
	CHECK_EQ(st.pending, 0);
	ps_destroy(ps);
}

/* ---- the grace period: a section active at ps_call holds the callback back ----------- */
static void test_grace(void)
{
	struct ps *ps = ps_create(NULL);
	CHECK(ps);
	struct holder r;
	holder_start(&r, ps);
	holder_do(&r, HOLD_ENTER); /* a reader inside, begun before the calls */
	struct obj o[2 * PS_CALL_BATCH];
	memset(o, 0, sizeof(o));
	for (unsigned i = 0; i < 2 * PS_CALL_BATCH; i++)
		ps_call(ps, &o[i].head, obj_cb); /* two polls of the caller's own queue */
	for (int k = 0; k < 50; k++) {
		CHECK_EQ(ps_call_poll(ps), 0);
		for (unsigned i = 0; i < 2 * PS_CALL_BATCH; i++)
			CHECK_MSG(
				atomic_load(&o[i].runs) == 0,
				"callback %u ran while a section active at its ps_call was running",
				i);
	}
	struct ps_call_stats st;
	CHECK_EQ(ps_call_stats(ps, &st), 0);
	CHECK_EQ(st.pending, 2 * PS_CALL_BATCH);
	holder_do(&r, HOLD_EXIT);
	ps_barrier(ps);
	for (unsigned i = 0; i < 2 * PS_CALL_BATCH; i++)
		CHECK_EQ(atomic_load(&o[i].runs), 1);
	/* the caller's own section holds back its own calls too */
	struct obj mine = {0};
	ps_enter(ps);
	ps_call(ps, &mine.head, obj_cb);
	CHECK_EQ(ps_call_poll(ps), 0);
	CHECK_EQ(atomic_load(&mine.runs), 0);
	ps_exit(ps);
	ps_barrier(ps);
	CHECK_EQ(atomic_load(&mine.runs), 1);
	holder_stop(&r, HOLD_QUIT);
	ps_destroy(ps);
}

/* ---- exited threads' queues run: by a barrier, and by other threads' polls ------------ */
struct exiter_arg {
	struct ps *ps;
	struct obj *o;
	unsigned n;
	test_barrier *all; /* every exiter registered at once: distinct ids, distinct queues */
};

static void *exiter(void *p)
{
	struct exiter_arg *a = p;
	CHECK_EQ(tsync_thread_register(), 0);
	for (unsigned i = 0; i < a->n; i++)
		ps_call(a->ps, &a->o[i].head, obj_cb);
	test_barrier_wait(a->all);
	return NULL; /* exits with its calls queued (n < PS_CALL_BATCH: none closed) */
}

/* Start T exiters at once and join them all. */
static void run_exiters(struct exiter_arg *a, int T)
{
	test_barrier all;
	test_barrier_init(&all, (unsigned)T);
	pthread_t th[16];
	CHECK(T <= 16);
	for (int t = 0; t < T; t++) {
		a[t].all = &all;
		th[t] = test_spawn(exiter, &a[t]);
	}
	for (int t = 0; t < T; t++)
		test_join(th[t]);
	test_barrier_destroy(&all);
}

static void test_exited(void)
{
	struct ps *ps = ps_create(NULL);
	CHECK(ps);
	enum { T = 4, N = 10 };
	struct obj o[T][N];
	memset(o, 0, sizeof(o));
	struct exiter_arg a[T];
	for (int t = 0; t < T; t++)
		a[t] = (struct exiter_arg){ps, o[t], N, NULL};
	run_exiters(a, T);
	/* ps_call_poll runs every queue, exited threads' included */
	CHECK_EQ(ps_call_poll(ps), T * N);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < N; i++)
			CHECK_EQ(atomic_load(&o[t][i].runs), 1);

	/* the same with only this thread's ps_calls: each of its polls helps one other queue
	 * with work, so after (threads) polls every exited queue ran - no call of
	 * ps_call_poll, ps_barrier or ps_mem_reclaim needed */
	memset(o, 0, sizeof(o));
	run_exiters(a, T);
	/* A poll's quiescence is lazy (at most one read barrier per read interval), and each
	 * poll helps the next queue with work in turn: so the bound is rounds of one batch
	 * of calls each, a read interval apart; ROUNDS is far beyond what T queues need. */
	enum { ROUNDS = 400 };
	struct obj *mine = calloc((size_t)PS_CALL_BATCH * ROUNDS, sizeof(*mine));
	CHECK(mine);
	int round;
	for (round = 0; round < ROUNDS; round++) {
		bool all = true;
		for (int t = 0; t < T; t++)
			for (int i = 0; i < N; i++)
				all &= atomic_load(&o[t][i].runs) == 1;
		if (all)
			break;
		for (unsigned i = 0; i < PS_CALL_BATCH; i++)
			ps_call(ps, &mine[(size_t)round * PS_CALL_BATCH + i].head, obj_cb);
		test_sleep_ns(2 * PS_READ_INTERVAL_NS);
	}
	printf("exited queues ran after %d polls of another thread\n", round);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < N; i++)
			CHECK_MSG(atomic_load(&o[t][i].runs) == 1,
				  "exited thread %d's callback %d ran %u times", t, i,
				  atomic_load(&o[t][i].runs));
	struct ps_call_stats st;
	CHECK_EQ(ps_call_stats(ps, &st), 0);
	CHECK_EQ(st.helped, 2 * T * N); /* no exiter ran its own: N < PS_CALL_BATCH */
	ps_barrier(ps);
	CHECK_EQ(ps_call_stats(ps, &st), 0);
	CHECK_EQ(st.pending, 0);
	ps_destroy(ps);
	free(mine);
}

/* ---- callbacks may queue callbacks; ps_destroy runs what is left ---------------------- */
static struct ps *chain_ps;
static _Atomic unsigned chain_left;
static void chain_cb(struct ps_head *h)
{
	if (atomic_fetch_sub(&chain_left, 1) > 1)
		ps_call(chain_ps, h, chain_cb); /* requeue itself: only queues, never recurses */
}

static void test_chain_destroy(void)
{
	chain_ps = ps_create(NULL);
	CHECK(chain_ps);
	struct ps_head h;
	atomic_store(&chain_left, 5);
	ps_call(chain_ps, &h, chain_cb);
	for (int i = 0; i < 5; i++)
		ps_barrier(chain_ps); /* each barrier runs one generation */
	CHECK_EQ(atomic_load(&chain_left), 0);

	/* ps_destroy with callbacks pending runs them */
	struct ps *ps = ps_create(NULL);
	CHECK(ps);
	struct obj o[7];
	memset(o, 0, sizeof(o));
	for (int i = 0; i < 7; i++)
		ps_call(ps, &o[i].head, obj_cb);
	ps_destroy(ps);
	for (int i = 0; i < 7; i++)
		CHECK_EQ(atomic_load(&o[i].runs), 1);
	ps_destroy(chain_ps);
}

/* ---- ps_barrier against concurrent callers --------------------------------------------- */
enum { BW = 2 };
struct bar_arg {
	struct ps *ps;
	_Atomic uint64_t returned; /* ps_call calls that returned */
	_Atomic uint64_t ran;      /* their callbacks that ran */
	_Atomic int *stop;
};
struct bobj {
	struct ps_head head;
	struct bar_arg *owner;
};
static void bobj_cb(struct ps_head *h)
{
	struct bobj *b = (struct bobj *)((char *)h - offsetof(struct bobj, head));
	atomic_fetch_add_explicit(&b->owner->ran, 1, memory_order_relaxed);
	free(b);
}

static void *bar_writer(void *p)
{
	struct bar_arg *a = p;
	while (!atomic_load_explicit(a->stop, memory_order_relaxed)) {
		struct bobj *b = malloc(sizeof(*b));
		CHECK(b);
		b->owner = a;
		ps_enter(a->ps); /* sometimes from inside a section */
		ps_call(a->ps, &b->head, bobj_cb);
		ps_exit(a->ps);
		atomic_fetch_add_explicit(&a->returned, 1, memory_order_release);
	}
	return NULL;
}

static void test_barrier_concurrent(void)
{
	struct ps *ps = ps_create(NULL);
	CHECK(ps);
	_Atomic int stop = 0;
	struct bar_arg a[BW];
	pthread_t th[BW];
	for (int i = 0; i < BW; i++) {
		a[i] = (struct bar_arg){.ps = ps, .stop = &stop};
		th[i] = test_spawn(bar_writer, &a[i]);
	}
	unsigned rounds = TEST_TSAN ? 30 : 200;
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t before[BW];
		for (int i = 0; i < BW; i++)
			before[i] = atomic_load_explicit(&a[i].returned, memory_order_acquire);
		ps_barrier(ps);
		for (int i = 0; i < BW; i++)
			CHECK_MSG(atomic_load(&a[i].ran) >= before[i],
				  "barrier returned before callbacks queued earlier ran: writer %d "
				  "%llu returned, %llu ran",
				  i, (unsigned long long)before[i],
				  (unsigned long long)atomic_load(&a[i].ran));
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < BW; i++)
		test_join(th[i]);
	ps_barrier(ps);
	for (int i = 0; i < BW; i++)
		CHECK_EQ(atomic_load(&a[i].ran), atomic_load(&a[i].returned));
	ps_destroy(ps);
}

/* ---- the hunt: readers never see a node whose callback ran --------------------------- */
struct node {
	_Atomic uint64_t marker;
	uint64_t key;
	struct node *_Atomic next;
	struct ps_head head;
};
enum { SLOTS = 64 };
struct hunt {
	struct ps *ps;
	struct node *_Atomic slot[SLOTS];
	_Atomic int stop;
	_Atomic uint64_t reads, replaced, freed;
};
static struct hunt H;

static void node_cb(struct ps_head *h)
{
	struct node *n = (struct node *)((char *)h - offsetof(struct node, head));
	atomic_store_explicit(&n->marker, DEAD, memory_order_relaxed);
	atomic_fetch_add_explicit(&H.freed, 1, memory_order_relaxed);
	free(n);
}

static struct node *node_new(uint64_t key)
{
	struct node *n = malloc(sizeof(*n));
	CHECK(n);
	atomic_store_explicit(&n->marker, LIVE, memory_order_relaxed);
	n->key = key;
	atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
	return n;
}

static void *hunt_reader(void *p)
{
	(void)p;
	uint64_t seed = test_seed((uint64_t)(uintptr_t)&p);
	while (!atomic_load_explicit(&H.stop, memory_order_relaxed)) {
		ps_enter(H.ps);
		for (int k = 0; k < 8; k++) {
			unsigned s = (unsigned)(test_rand(&seed) % SLOTS);
			struct node *n = atomic_load_explicit(&H.slot[s], memory_order_acquire);
			uint64_t m1 = atomic_load_explicit(&n->marker, memory_order_relaxed);
			test_spin(20);
			uint64_t m2 = atomic_load_explicit(&n->marker, memory_order_relaxed);
			CHECK_MSG(m1 == LIVE && m2 == LIVE && n->key % SLOTS == s,
				  "a reader saw a node whose callback ran (marker %llx/%llx)",
				  (unsigned long long)m1, (unsigned long long)m2);
		}
		ps_exit(H.ps);
		atomic_fetch_add_explicit(&H.reads, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *hunt_writer(void *p)
{
	unsigned id = (unsigned)(uintptr_t)p;
	uint64_t seed = test_seed(id + 77), k = id;
	while (!atomic_load_explicit(&H.stop, memory_order_relaxed)) {
		unsigned s = (unsigned)(test_rand(&seed) % SLOTS);
		struct node *fresh = node_new(s + SLOTS * (k++));
		struct node *old =
			atomic_exchange_explicit(&H.slot[s], fresh, memory_order_acq_rel);
		ps_call(H.ps, &old->head, node_cb);
		atomic_fetch_add_explicit(&H.replaced, 1, memory_order_relaxed);
	}
	return NULL;
}

/* A writer that replaces a few nodes and exits: its queue is left to others. */
static void *hunt_short_writer(void *p)
{
	uint64_t seed = test_seed((uint64_t)(uintptr_t)p);
	for (int i = 0; i < 20; i++) {
		unsigned s = (unsigned)(test_rand(&seed) % SLOTS);
		struct node *old =
			atomic_exchange_explicit(&H.slot[s], node_new(s), memory_order_acq_rel);
		ps_call(H.ps, &old->head, node_cb);
		atomic_fetch_add_explicit(&H.replaced, 1, memory_order_relaxed);
	}
	return NULL;
}

static void test_reuse_hunt(void)
{
	H.ps = ps_create(NULL);
	CHECK(H.ps);
	for (unsigned s = 0; s < SLOTS; s++)
		atomic_store(&H.slot[s], node_new(s));
	enum { R = 2, W = 2 };
	pthread_t r[R], w[W];
	for (int i = 0; i < R; i++)
		r[i] = test_spawn(hunt_reader, NULL);
	for (int i = 0; i < W; i++)
		w[i] = test_spawn(hunt_writer, (void *)(uintptr_t)i);
	double secs = test_stress_seconds(TEST_SMALL ? 1.0 : 2.0);
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9);
	unsigned shorts = 0;
	while (test_now_ns() < end) {
		test_join(test_spawn(hunt_short_writer, (void *)(uintptr_t)(shorts++)));
		test_sleep_ms(20);
	}
	/* every thread made progress: the scaffold's promise, not a rate */
	while (atomic_load(&H.reads) == 0 || atomic_load(&H.replaced) == 0)
		sched_yield();
	atomic_store(&H.stop, 1);
	for (int i = 0; i < R; i++)
		test_join(r[i]);
	for (int i = 0; i < W; i++)
		test_join(w[i]);
	ps_barrier(H.ps);
	CHECK_EQ(atomic_load(&H.freed), atomic_load(&H.replaced));
	struct ps_call_stats st;
	CHECK_EQ(ps_call_stats(H.ps, &st), 0);
	CHECK_EQ(st.pending, 0);
	CHECK_EQ(st.queued, atomic_load(&H.replaced));
	printf("hunt: %.1f s, %llu reader sections, %llu replaced, %u short-lived writers, "
	       "%llu batches, %llu merged, %llu run by helpers\n",
	       secs, (unsigned long long)atomic_load(&H.reads),
	       (unsigned long long)atomic_load(&H.replaced), shorts, (unsigned long long)st.batches,
	       (unsigned long long)st.merges, (unsigned long long)st.helped);
	for (unsigned s = 0; s < SLOTS; s++)
		free(atomic_load(&H.slot[s]));
	ps_destroy(H.ps);
}

/* ---- misuse aborts ---------------------------------------------------------------------- */
static struct ps *death_ps;
static void barrier_inside(void *arg)
{
	(void)arg;
	ps_enter(death_ps);
	ps_barrier(death_ps);
}
static void barrier_cb(struct ps_head *h)
{
	(void)h;
	ps_barrier(death_ps);
}
static void barrier_from_callback(void *arg)
{
	(void)arg;
	static struct ps_head h;
	ps_call(death_ps, &h, barrier_cb);
	ps_barrier(death_ps);
}
static void call_free_bad_offset(void *arg)
{
	(void)arg;
	static struct ps_head h;
	ps_call_free(death_ps, &h, 4096);
}

static void test_misuse(void)
{
	if (!test_can_fork())
		return;
	death_ps = ps_create(NULL);
	CHECK(death_ps);
	CHECK(test_dies_saying(barrier_inside, NULL, "ps_barrier called inside a section"));
	CHECK(test_dies_saying(barrier_from_callback, NULL, "ps_barrier called from a ps_call"));
	CHECK(test_dies_saying(call_free_bad_offset, NULL, "is not below 4096"));
	ps_destroy(death_ps);
}

int main(void)
{
	test_watchdog(TEST_TSAN ? 240 : 120);
	test_basic();
	test_call_free();
	test_grace();
	test_exited();
	test_chain_destroy();
	test_barrier_concurrent();
	test_reuse_hunt();
	test_misuse();
	printf("test_ps_call: ok\n");
	return 0;
}
