/*
 * tests/ps_lock/test_ps_lock.c - <tsync/ps_lock.h>: take/release, take fails on a node
 * freed by ps_lock_release_free or by ps_free, the mark is gone once the memory is
 * reused, and mutual exclusion under contention; the plain lock without a node
 * (ps_lock_lock/trylock/unlock): exclusion, trylock, FIFO order.
 */
#include <tsync/tsync.h>

#include "check.h"

struct lnode {
	uint64_t before[3]; /* the lock need not be the first member */
	struct ps_lock lock;
	uint64_t value;
	_Atomic int inside;
};

static struct ps *ps;
static struct ps_mem *m;

static struct lnode *new_node(void)
{
	struct lnode *n = ps_alloc(m);
	CHECK(n != NULL);
	ps_lock_init(&n->lock);
	n->value = 0;
	atomic_store_explicit(&n->inside, 0, memory_order_relaxed);
	return n;
}

static void test_basic(void)
{
	struct ps_lock stat = PS_LOCK_INIT;
	(void)stat;
	ps_enter(ps);
	struct lnode *n = new_node();
	CHECK(!ps_lock_is_freed(n));
	CHECK(ps_lock_take(n, &n->lock));
	n->value++;
	ps_lock_release(n, &n->lock);
	CHECK(ps_lock_take(n, &n->lock));
	ps_lock_release(n, &n->lock);
	CHECK(!ps_lock_is_freed(n));

	struct ps_mem_stats s0, s1;
	ps_mem_stats(m, &s0);
	CHECK(ps_lock_take(n, &n->lock));
	ps_lock_release_free(n, &n->lock);
	ps_mem_stats(m, &s1);
	CHECK_EQ(s1.frees, s0.frees + 1); /* release_free frees into n's ps_mem */
	CHECK_EQ(s1.in_use + 1, s0.in_use);
	CHECK(ps_lock_is_freed(n)); /* still readable: we are inside the section */
	for (int i = 0; i < 3; i++)
		CHECK_MSG(!ps_lock_take(n, &n->lock), "ps_lock_take succeeded on a freed node");
	CHECK_EQ(s1.pending, s0.pending + 1);

	/* a node freed with plain ps_free is also refused */
	struct lnode *f = new_node();
	ps_free(m, f);
	CHECK(ps_lock_is_freed(f));
	CHECK(!ps_lock_take(f, &f->lock));
	ps_exit(ps);
	/* past the skew bound of the frees, so that one scan proves them quiescent */
	tsync_tick_t tf = tsync_now_ordered() + tsync_clock_skew() + tsync_ns_to_ticks(10000);
	while (!tsync_clock_before(tf, tsync_now_ordered()))
		sched_yield();
	ps_mem_reclaim(m);

	/* once reused, the memory is a fresh node: not freed, lockable */
	bool seen_n = false, seen_f = false;
	struct lnode *keep[256];
	int k;
	for (k = 0; k < 256 && !(seen_n && seen_f); k++) {
		keep[k] = ps_alloc(m);
		CHECK(keep[k] != NULL);
		CHECK_MSG(!ps_lock_is_freed(keep[k]), "a reallocated node still carries the mark");
		seen_n |= keep[k] == n;
		seen_f |= keep[k] == f;
	}
	CHECK_MSG(seen_n || seen_f, "freed nodes not reused after quiescence");
	ps_enter(ps);
	for (int i = 0; i < k; i++) {
		ps_lock_init(&keep[i]->lock);
		CHECK(ps_lock_take(keep[i], &keep[i]->lock));
		ps_lock_release(keep[i], &keep[i]->lock);
	}
	ps_exit(ps);
	for (int i = 0; i < k; i++)
		ps_free(m, keep[i]);
}

/* Mutual exclusion: a counter protected by one lock, from more threads than cores.
 * Time-bounded rather than iteration-bounded: a FIFO spin lock hands the lock to the
 * next ticket even when that thread is preempted, so throughput under oversubscription
 * depends on the scheduler (see the summary line). The time counts from the moment every
 * thread has held the lock once, so that all of them contend, however late they start. */
/* Run fn(arg) in n threads (at most 8) for ms milliseconds, counted from the moment each
 * has counted itself in *started; then set *stop and join them. */
static void run_for(void *(*fn)(void *), void *arg, int n, _Atomic unsigned *started,
		    _Atomic int *stop, unsigned ms)
{
	pthread_t t[8];
	CHECK(n <= 8);
	for (int i = 0; i < n; i++)
		t[i] = test_spawn(fn, arg);
	test_wait_flag(started, (unsigned)n, 30000);
	test_sleep_ms(ms);
	atomic_store(stop, 1);
	for (int i = 0; i < n; i++)
		test_join(t[i]);
}

struct excl {
	struct lnode *n;
	_Atomic int stop;
	_Atomic unsigned started; /* threads that held the lock at least once */
	_Atomic uint64_t overlaps;
	_Atomic uint64_t acquired;
};

static void *excl_thread(void *p)
{
	struct excl *e = p;
	uint64_t mine = 0;
	while (!atomic_load_explicit(&e->stop, memory_order_relaxed)) {
		ps_enter(ps);
		CHECK(ps_lock_take(e->n, &e->n->lock));
		if (atomic_fetch_add_explicit(&e->n->inside, 1, memory_order_relaxed) != 0)
			atomic_fetch_add(&e->overlaps, 1);
		e->n->value++;
		if ((mine & 255) == 255)
			sched_yield(); /* get preempted while holding it, now and then */
		atomic_fetch_sub_explicit(&e->n->inside, 1, memory_order_relaxed);
		ps_lock_release(e->n, &e->n->lock);
		ps_exit(ps);
		if (mine++ == 0)
			atomic_fetch_add(&e->started, 1);
	}
	atomic_fetch_add(&e->acquired, mine);
	return NULL;
}

static void test_exclusion(int nthreads, unsigned ms)
{
	static struct excl e;
	memset(&e, 0, sizeof e);
	e.n = new_node();
	uint64_t t0 = test_now_ns();
	run_for(excl_thread, &e, nthreads, &e.started, &e.stop, ms);
	double el = (double)(test_now_ns() - t0) / 1e9;
	CHECK_EQ(atomic_load(&e.overlaps), 0);
	CHECK_EQ(e.n->value, atomic_load(&e.acquired));
	CHECK_GE(e.n->value, (uint64_t)nthreads);
	test_log("ps_lock: %d threads on one lock: %" PRIu64 " acquisitions in %.2f s (%.0f/s)",
		 nthreads, e.n->value, el, (double)e.n->value / el);
	ps_enter(ps);
	CHECK(ps_lock_take(e.n, &e.n->lock));
	ps_lock_release_free(e.n, &e.n->lock);
	ps_exit(ps);
}

/* Waiters queued behind a deleter all fail. */
struct waiter {
	struct lnode *n;
	int result;
};

static void *waiter_thread(void *p)
{
	struct waiter *w = p;
	ps_enter(ps);
	w->result = ps_lock_take(w->n, &w->n->lock);
	if (w->result)
		ps_lock_release(w->n, &w->n->lock);
	ps_exit(ps);
	return NULL;
}

static void test_waiters_fail(void)
{
	for (int round = 0; round < 20; round++) {
		ps_enter(ps);
		struct lnode *n = new_node();
		CHECK(ps_lock_take(n, &n->lock));
		struct waiter w[3];
		pthread_t t[3];
		for (int i = 0; i < 3; i++) {
			w[i] = (struct waiter){.n = n};
			t[i] = test_spawn(waiter_thread, &w[i]);
		}
		/* all three queued in the lock behind us: next counts the tickets taken */
		test_wait_flag(&n->lock.next, 4u, 30000);
		ps_lock_release_free(n, &n->lock);
		ps_exit(ps);
		for (int i = 0; i < 3; i++) {
			test_join(t[i]);
			CHECK_MSG(w[i].result == 0,
				  "a waiter got the lock of a node freed by its holder");
		}
	}
}

/* ---- the plain lock (no node) ---------------------------------------------------------- */

static void test_plain_basic(void)
{
	struct ps_lock l = PS_LOCK_INIT;
	ps_lock_lock(&l);
	CHECK_MSG(!ps_lock_trylock(&l), "trylock succeeded on a held lock");
	ps_lock_unlock(&l);
	CHECK(ps_lock_trylock(&l));
	CHECK_MSG(!ps_lock_trylock(&l), "trylock succeeded on a lock held by trylock");
	ps_lock_unlock(&l);
	ps_lock_lock(&l); /* after a trylock/unlock pair the tickets still line up */
	ps_lock_unlock(&l);
	/* outside any section, on a lock in ordinary memory */
	struct ps_lock *h = malloc(sizeof *h);
	CHECK(h != NULL);
	ps_lock_init(h);
	CHECK(ps_lock_trylock(h));
	ps_lock_unlock(h);
	free(h);
}

/* Mutual exclusion: lock or trylock (half the iterations), from more threads than cores;
 * timed from the moment every thread has held the lock once (as test_exclusion). */
struct pexcl {
	struct ps_lock lock;
	uint64_t value;
	_Atomic int inside;
	_Atomic int stop;
	_Atomic unsigned started;
	_Atomic uint64_t overlaps;
	_Atomic uint64_t acquired;
	_Atomic uint64_t try_fails;
};

static void *pexcl_thread(void *p)
{
	struct pexcl *e = p;
	uint64_t mine = 0, fails = 0;
	while (!atomic_load_explicit(&e->stop, memory_order_relaxed)) {
		if (mine & 1) {
			if (!ps_lock_trylock(&e->lock)) {
				fails++;
				continue;
			}
		} else {
			ps_lock_lock(&e->lock);
		}
		if (atomic_fetch_add_explicit(&e->inside, 1, memory_order_relaxed) != 0)
			atomic_fetch_add(&e->overlaps, 1);
		e->value++;
		if ((mine & 255) == 254)
			sched_yield(); /* get preempted while holding it, now and then */
		atomic_fetch_sub_explicit(&e->inside, 1, memory_order_relaxed);
		ps_lock_unlock(&e->lock);
		if (mine++ == 0)
			atomic_fetch_add(&e->started, 1);
	}
	atomic_fetch_add(&e->acquired, mine);
	atomic_fetch_add(&e->try_fails, fails);
	return NULL;
}

static void test_plain_exclusion(int nthreads, unsigned ms)
{
	static struct pexcl e;
	memset(&e, 0, sizeof e);
	ps_lock_init(&e.lock);
	run_for(pexcl_thread, &e, nthreads, &e.started, &e.stop, ms);
	CHECK_EQ(atomic_load(&e.overlaps), 0);
	CHECK_EQ(e.value, atomic_load(&e.acquired));
	CHECK_GE(e.value, (uint64_t)nthreads);
	/* all tickets served: the lock is free */
	CHECK(ps_lock_trylock(&e.lock));
	ps_lock_unlock(&e.lock);
	test_log("ps_lock plain: %d threads: %" PRIu64 " acquisitions, %" PRIu64
		 " trylock failures",
		 nthreads, e.value, atomic_load(&e.try_fails));
}

/* FIFO: waiters queued one after another (each takes its ticket before the next starts)
 * get the lock in that order. */
#define FIFO_N 5
struct fifo {
	struct ps_lock lock;
	_Atomic unsigned served;
	unsigned order[FIFO_N];
};
struct fifo_arg {
	struct fifo *f;
	unsigned id;
};

static void *fifo_thread(void *p)
{
	struct fifo_arg *a = p;
	ps_lock_lock(&a->f->lock);
	unsigned k = atomic_load_explicit(&a->f->served, memory_order_relaxed);
	a->f->order[k] = a->id;
	atomic_store_explicit(&a->f->served, k + 1, memory_order_relaxed);
	ps_lock_unlock(&a->f->lock);
	return NULL;
}

static void test_plain_fifo(void)
{
	for (int round = 0; round < 10; round++) {
		static struct fifo f;
		memset(&f, 0, sizeof f);
		ps_lock_init(&f.lock);
		struct fifo_arg a[FIFO_N];
		pthread_t t[FIFO_N];
		ps_lock_lock(&f.lock);
		for (unsigned i = 0; i < FIFO_N; i++) {
			a[i] = (struct fifo_arg){.f = &f, .id = i};
			t[i] = test_spawn(fifo_thread, &a[i]);
			/* wait until thread i holds its ticket: next counts the takers */
			while (atomic_load(&f.lock.next) != i + 2)
				sched_yield();
			CHECK_MSG(!ps_lock_trylock(&f.lock),
				  "trylock succeeded with waiters queued");
		}
		ps_lock_unlock(&f.lock);
		for (unsigned i = 0; i < FIFO_N; i++)
			test_join(t[i]);
		CHECK_EQ(atomic_load(&f.served), FIFO_N);
		for (unsigned i = 0; i < FIFO_N; i++)
			CHECK_MSG(f.order[i] == i, "waiter %u served %u-th: not FIFO", f.order[i],
				  i);
	}
}

int main(void)
{
	test_watchdog(50); /* inside ctest's TIMEOUT (60 s): the watchdog's message is printed */
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	m = ps_mem_create(ps, sizeof(struct lnode), NULL);
	CHECK(m != NULL);
	test_basic();
	test_exclusion(2, 300);
	test_exclusion(3, 300);
	test_waiters_fail();
	test_plain_basic();
	test_plain_exclusion(2, 300);
	test_plain_exclusion(3, 300);
	test_plain_fifo();
	ps_mem_reclaim(m);
	ps_mem_destroy(m);
	ps_destroy(ps);
	test_log("ps_lock: ok");
	return 0;
}
