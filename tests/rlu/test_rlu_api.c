/*
 * tests/rlu/test_rlu_api.c - the RLU contract of <tsync/rlu.h>, one behaviour at a time:
 * copies are private until commit; a commit is seen whole by sections that begin after
 * it and not at all by older ones; try_lock conflicts and aborts; deferral (commits
 * visible before the sync; a peer's request forces the sync); log overflow; rlu_free
 * after the grace period (poisoned: a reader that still held the object would see it).
 */
#include "check.h"

#include <tsync/rlu.h>

struct obj {
	uint64_t a, b;
	struct obj *next;
};

static struct rlu *R;
static _Atomic int phase;
/* A peer is about to end the section the writer's synchronize must wait for: set just
 * before its rlu_reader_unlock, so a writer that returns from its own synchronize and
 * finds it unset did not wait (deterministic, whatever the scheduling). */
static _Atomic int left;
/* The writer is about to commit and synchronize: a peer's checks that its old section is
 * not disturbed meanwhile start from here (then the peer keeps its section open a while:
 * the window in which a writer that does not wait would show). */
static _Atomic int committing;
#define WINDOW_MS 50

/* ---- single thread: own copies, commit, abort, cmp, free ---- */
static void test_basic(void)
{
	struct rlu *r = rlu_create(NULL);
	CHECK(r);
	struct rlu_thread *self = rlu_thread_get(r);
	CHECK(self && rlu_thread_get(r) == self);
	struct obj *o = rlu_alloc(sizeof *o);
	CHECK(o && o->a == 0 && o->next == NULL);

	rlu_reader_lock(self);
	struct obj *c = rlu_deref(self, o);
	CHECK(c == o);
	CHECK(rlu_try_lock(self, (void **)&c, sizeof *c));
	CHECK(c != o);
	CHECK(rlu_cmp_objs(c, o) && rlu_actual(c) == o);
	c->a = 7;
	CHECK(rlu_deref(self, o) == c); /* own copy */
	struct obj *c2 = o;
	CHECK(rlu_try_lock(self, (void **)&c2, sizeof *c2)); /* already held: same copy */
	CHECK(c2 == c);
	rlu_assign_ptr(self, (void **)&c->next, c); /* stores the original */
	CHECK(c->next == o);
	rlu_reader_unlock(self); /* commit, sync, write back */
	CHECK_EQ(o->a, 7);
	CHECK(o->next == o);

	/* abort discards */
	rlu_reader_lock(self);
	c = o;
	CHECK(rlu_try_lock(self, (void **)&c, sizeof *c));
	c->a = 99;
	rlu_abort(self);
	CHECK_EQ(o->a, 7);
	rlu_reader_lock(self);
	CHECK(rlu_deref(self, o) == o);
	c = o;
	CHECK(rlu_try_lock(self, (void **)&c, sizeof *c)); /* the abort unlocked it */
	rlu_assign_ptr(self, (void **)&c->next, NULL);
	rlu_free(self, c);
	rlu_reader_unlock(self);
	struct rlu_stats st, sum;
	CHECK_EQ(rlu_stats_thread(self, &st), 0);
	CHECK_EQ(st.commits, 2);
	CHECK_EQ(st.aborts, 1);
	CHECK_EQ(st.frees, 1);
	CHECK_EQ(st.syncs, 2);
	/* one thread: the sum over all records is its own counters */
	CHECK_EQ(rlu_stats(r, &sum), 0);
	CHECK(memcmp(&sum, &st, sizeof st) == 0);
	CHECK_ERRNO(rlu_stats(NULL, &sum), -1, EINVAL);
	CHECK_ERRNO(rlu_stats_thread(self, NULL), -1, EINVAL);
	rlu_destroy(r);
}

/* ---- two threads: visibility by local clock, conflicts ---- */
static struct obj *X, *Y;

static void *peer_reader(void *arg)
{
	(void)arg;
	struct rlu_thread *self = rlu_thread_get(R);
	/* phase 1: begin a section before the writer commits */
	rlu_reader_lock(self);
	atomic_store(&phase, 1);
	test_wait_flag(&phase, 2, 10000); /* the writer has locked X and Y and modified them */
	struct obj *x = rlu_deref(self, X);
	CHECK(x == X && x->a == 0);
	/* lock conflict: X is held by the writer */
	CHECK(!rlu_try_lock(self, (void **)&x, sizeof *x));
	rlu_abort(self);
	/* still phase 2: a new section does not see the uncommitted copies */
	rlu_reader_lock(self);
	CHECK(rlu_deref(self, X) == X && ((struct obj *)rlu_deref(self, Y))->b == 0);
	atomic_store(&phase, 3); /* writer may commit; its sync waits for this section */
	test_wait_flag(&committing, 1, 30000);
	test_sleep_ms(WINDOW_MS);
	/* our section began before the commit: we still see the originals, unmodified
	 * (the writer cannot write back while we are inside) */
	x = rlu_deref(self, X);
	struct obj *y = rlu_deref(self, Y);
	CHECK(x == X && y == Y);
	CHECK_EQ(x->a + y->b, 0);
	atomic_store(&left, 1);
	rlu_reader_unlock(self);
	test_wait_flag(&phase, 4, 10000);
	rlu_reader_lock(self);
	x = rlu_deref(self, X);
	y = rlu_deref(self, Y);
	CHECK_EQ(x->a, 1);
	CHECK_EQ(y->b, 1);
	rlu_reader_unlock(self);
	return NULL;
}

static void test_two_threads(void)
{
	R = rlu_create(NULL);
	X = rlu_alloc(sizeof *X);
	Y = rlu_alloc(sizeof *Y);
	atomic_store(&phase, 0);
	atomic_store(&left, 0);
	atomic_store(&committing, 0);
	pthread_t t = test_spawn(peer_reader, NULL);
	struct rlu_thread *self = rlu_thread_get(R);
	test_wait_flag(&phase, 1, 10000);
	rlu_reader_lock(self);
	struct obj *x = X, *y = Y;
	CHECK(rlu_try_lock(self, (void **)&x, sizeof *x));
	CHECK(rlu_try_lock(self, (void **)&y, sizeof *y));
	x->a = 1;
	y->b = 1;
	atomic_store(&phase, 2);
	test_wait_flag(&phase, 3, 10000);
	atomic_store(&committing, 1);
	rlu_reader_unlock(self); /* waits for the peer's older section */
	CHECK_MSG(atomic_load(&left), "the commit's synchronize returned while an older "
				      "section was still open");
	CHECK_EQ(X->a, 1);
	atomic_store(&phase, 4);
	test_join(t);
	rlu_destroy(R);
	rlu_free_unsafe(X);
	rlu_free_unsafe(Y);
}

/* ---- deferral: commits visible at once, locks kept, peers force the sync ---- */
static void *defer_peer(void *arg)
{
	(void)arg;
	struct rlu_thread *self = rlu_thread_get(R);
	test_wait_flag(&phase, 1, 10000);
	rlu_reader_lock(self);
	struct obj *x = rlu_deref(self, X);
	CHECK(x != X); /* stolen copy of a committed, deferred write set */
	CHECK_EQ(x->a, 5);
	CHECK_EQ(X->a, 0);                                  /* not written back yet */
	CHECK(!rlu_try_lock(self, (void **)&x, sizeof *x)); /* still locked: asks for a sync */
	rlu_abort(self);
	atomic_store(&phase, 2);
	test_wait_flag(&phase, 3, 10000);
	rlu_reader_lock(self);
	x = X;
	CHECK(rlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 6;
	rlu_reader_unlock(self);
	rlu_flush(self);
	return NULL;
}

static void test_deferral(void)
{
	struct rlu_config cfg = RLU_CONFIG_INIT;
	cfg.max_write_sets = 8;
	R = rlu_create(&cfg);
	CHECK(R);
	X = rlu_alloc(sizeof *X);
	atomic_store(&phase, 0);
	pthread_t t = test_spawn(defer_peer, NULL);
	struct rlu_thread *self = rlu_thread_get(R);
	rlu_reader_lock(self);
	struct obj *x = X;
	CHECK(rlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 5;
	rlu_reader_unlock(self);
	struct rlu_stats st;
	rlu_stats_thread(self, &st);
	CHECK_EQ(st.syncs, 0); /* deferred */
	/* the same object again in a later write set: must sync first (abort path) */
	atomic_store(&phase, 1);
	test_wait_flag(&phase, 2, 10000);
	rlu_reader_lock(self); /* the peer's request: syncs before the section */
	rlu_stats_thread(self, &st);
	CHECK_EQ(st.syncs, 1);
	CHECK_EQ(X->a, 5);
	rlu_reader_unlock(self);
	atomic_store(&phase, 3);
	test_join(t);
	CHECK_EQ(X->a, 6);
	/* own re-lock of a deferred object: try_lock fails, abort syncs, retry works */
	rlu_reader_lock(self);
	x = X;
	CHECK(rlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 7;
	rlu_reader_unlock(self);
	rlu_reader_lock(self);
	x = X;
	CHECK(!rlu_try_lock(self, (void **)&x, sizeof *x));
	rlu_abort(self);
	CHECK_EQ(X->a, 7);
	rlu_reader_lock(self);
	x = X;
	CHECK(rlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 8;
	rlu_reader_unlock(self);
	rlu_flush(self);
	CHECK_EQ(X->a, 8);
	rlu_destroy(R);
	rlu_free_unsafe(X);
}

/* ---- log space of aborted sections and of stolen copies: not reused under a reader ----
 * A section that loaded hdr.copy while a writer held the object reads the copy's meta
 * (owner, clock word). If the writer aborts, the next section of the writer must not
 * write its own entries over that meta while the slow section can still read it: under
 * TSan the overwrite is reported as a data race (the reader signals with a relaxed store,
 * i.e. no happens-before edge, as a reader that is merely slow would). */
static struct obj *A1, *A2;
static _Atomic int slow_read;

static void *abort_peer(void *arg)
{
	(void)arg;
	struct rlu_thread *self = rlu_thread_get(R);
	CHECK(self);
	test_wait_flag(&phase, 1, 10000); /* the writer holds A1, not committed */
	rlu_reader_lock(self);
	CHECK(rlu_deref(self, A1) == A1); /* reads the meta of the writer's copy: INF */
	atomic_store_explicit(&slow_read, 1, memory_order_relaxed);
	test_wait_flag(&phase, 2, 10000); /* the writer aborted and locked A2 */
	CHECK(rlu_deref(self, A1) == A1);
	CHECK(rlu_deref(self, A2) == A2); /* A2's commit is later than our section */
	rlu_reader_unlock(self);
	return NULL;
}

static void test_abort_reuse(void)
{
	R = rlu_create(NULL);
	A1 = rlu_alloc(sizeof *A1);
	A2 = rlu_alloc(sizeof *A2);
	CHECK(A1 && A2);
	atomic_store(&phase, 0);
	atomic_store(&slow_read, 0);
	pthread_t t = test_spawn(abort_peer, NULL);
	struct rlu_thread *self = rlu_thread_get(R);
	rlu_reader_lock(self);
	struct obj *c = A1;
	CHECK(rlu_try_lock(self, (void **)&c, sizeof *c)); /* entry at log offset 0 */
	c->a = 1;
	atomic_store(&phase, 1);
	while (!atomic_load_explicit(&slow_read, memory_order_relaxed))
		sched_yield();
	rlu_abort(self);
	rlu_reader_lock(self);
	c = A2;
	CHECK(rlu_try_lock(self, (void **)&c, sizeof *c)); /* must not reuse offset 0 */
	c->a = 2;
	atomic_store(&phase, 2);
	rlu_reader_unlock(self); /* commit; the sync waits for the peer */
	test_join(t);
	CHECK_EQ(A1->a, 0);
	CHECK_EQ(A2->a, 2);
	rlu_destroy(R);
	rlu_free_unsafe(A1);
	rlu_free_unsafe(A2);
}

/* A reader that steals a copy after its commit (local clock >= the commit's clock, so
 * the commit's own sync does not wait for it) may read it until it ends: the writer's
 * next commit and sync, and a third section that needs that log again, must not
 * overwrite it first (docs/rlu.md §2(c)). Deferral keeps the first commit unsynced. */
static void *steal_peer(void *arg)
{
	(void)arg;
	struct rlu_thread *self = rlu_thread_get(R);
	CHECK(self);
	test_wait_flag(&phase, 1, 10000); /* A1 committed (a = 1), not yet written back */
	rlu_reader_lock(self);
	struct obj *c = rlu_deref(self, A1);
	CHECK(c != A1 && rlu_actual(c) == A1); /* stolen */
	CHECK_EQ(c->a, 1);
	atomic_store_explicit(&slow_read, 1, memory_order_relaxed);
	/* the writer syncs, commits A2 (then syncs: that waits for us, or it would go on to
	 * reuse the log we read) */
	test_wait_flag(&committing, 1, 30000);
	test_sleep_ms(WINDOW_MS);
	CHECK_EQ(c->a, 1); /* the copy is intact */
	CHECK(rlu_actual(c) == A1);
	atomic_store(&left, 1);
	rlu_reader_unlock(self);
	return NULL;
}

static void test_steal_reuse(void)
{
	struct rlu_config cfg = RLU_CONFIG_INIT;
	cfg.max_write_sets = 4;
	R = rlu_create(&cfg);
	A1 = rlu_alloc(sizeof *A1);
	A2 = rlu_alloc(sizeof *A2);
	CHECK(A1 && A2);
	atomic_store(&phase, 0);
	atomic_store(&slow_read, 0);
	atomic_store(&left, 0);
	atomic_store(&committing, 0);
	pthread_t t = test_spawn(steal_peer, NULL);
	struct rlu_thread *self = rlu_thread_get(R);
	rlu_reader_lock(self);
	struct obj *c = A1;
	CHECK(rlu_try_lock(self, (void **)&c, sizeof *c)); /* generation g, offset 0 */
	c->a = 1;
	rlu_reader_unlock(self); /* commit v1, deferred */
	atomic_store(&phase, 1);
	while (!atomic_load_explicit(&slow_read, memory_order_relaxed))
		sched_yield();
	rlu_flush(self); /* sync of g: the peer (L >= v1) is not waited for */
	CHECK_EQ(A1->a, 1);
	for (uint64_t i = 2; i <= 3; i++) {
		/* i = 2: generation g ^ 1; its sync waits for the peer. i = 3: g again. */
		rlu_reader_lock(self);
		c = A2;
		CHECK(rlu_try_lock(self, (void **)&c, sizeof *c));
		c->a = i;
		c->b = 0xdbdbdbdbdbdbdbdbull;
		atomic_store(&committing, 1);
		rlu_reader_unlock(self);
		rlu_flush(self);
		if (i == 2)
			CHECK_MSG(atomic_load(&left), "the sync of the log a stolen copy lives in "
						      "returned while its reader was inside");
	}
	test_join(t);
	CHECK_EQ(A2->a, 3);
	rlu_destroy(R);
	rlu_free_unsafe(A1);
	rlu_free_unsafe(A2);
}

/* ---- log overflow ---- */
static void test_overflow(void)
{
	struct rlu_config cfg = RLU_CONFIG_INIT;
	cfg.log_bytes = 1024;
	R = rlu_create(&cfg);
	struct rlu_thread *self = rlu_thread_get(R);
	struct obj *o[64];
	for (int i = 0; i < 64; i++)
		o[i] = rlu_alloc(sizeof(struct obj));
	rlu_reader_lock(self);
	int locked = 0;
	errno = 0;
	for (int i = 0; i < 64; i++) {
		struct obj *c = o[i];
		if (!rlu_try_lock(self, (void **)&c, sizeof *c))
			break;
		locked++;
	}
	CHECK(locked > 0 && locked < 64);
	CHECK_EQ(errno, ENOSPC);
	rlu_abort(self);
	for (int i = 0; i < 64; i++)
		CHECK(rlu_deref(self, o[i]) == o[i]); /* all unlocked again */
	/* aborted entries stay in the log (a concurrent section may still read their meta):
	 * when they fill it, try_lock fails without ENOSPC, the abort recycles the log after
	 * a grace period, and the retry succeeds; a set that fits an empty log always fits */
	unsigned refills = 0;
	for (int round = 0; round < 40; round++) {
		int n = round % 2 ? 12 : 6; /* entries are 80 bytes: 12 fit in 1024 */
		for (int attempt = 0;; attempt++) {
			CHECK(attempt < 2);
			rlu_reader_lock(self);
			bool ok = true;
			errno = 0;
			for (int i = 0; i < n && ok; i++) {
				struct obj *c = o[i];
				ok = rlu_try_lock(self, (void **)&c, sizeof *c);
				if (ok)
					c->b = (uint64_t)round;
			}
			if (ok && round % 3 == 2) {
				rlu_reader_unlock(self); /* commit */
				break;
			}
			CHECK(ok || errno != ENOSPC);
			rlu_abort(self);
			if (ok)
				break;
			refills++;
		}
	}
	CHECK(refills > 0);
	for (int i = 0; i < 12; i++)
		CHECK_EQ(o[i]->b, i < 6 ? 38u : 35u); /* the last commits: rounds 38 (6), 35 (12) */
	/* deferral: a full log makes try_lock fail; the abort syncs; the retry succeeds */
	rlu_destroy(R);
	cfg.max_write_sets = 64;
	R = rlu_create(&cfg);
	self = rlu_thread_get(R);
	/* entries are 80 bytes: a first write set of 6 (480 bytes, under the half-full sync
	 * threshold) stays deferred; a second one of 7 cannot fit behind it */
	unsigned fails = 0;
	for (int lo = 0, n = 6; lo + n <= 64; lo += n, n = 7) {
		for (;;) {
			rlu_reader_lock(self);
			bool ok = true;
			errno = 0;
			for (int i = lo; i < lo + n && ok; i++) {
				struct obj *c = o[i];
				ok = rlu_try_lock(self, (void **)&c, sizeof *c);
				if (ok)
					c->a = (uint64_t)i + 100;
			}
			if (ok) {
				rlu_reader_unlock(self);
				break;
			}
			CHECK_NE(errno, ENOSPC);
			fails++;
			rlu_abort(self);
			CHECK(fails < 1000);
		}
	}
	CHECK(fails > 0);
	rlu_flush(self);
	for (int i = 0; i < 64; i++) {
		CHECK_EQ(o[i]->a, i < 62 ? (uint64_t)i + 100 : 0u);
		rlu_free_unsafe(o[i]);
	}
	rlu_destroy(R);
}

/* ---- rlu_free: poisoned after the grace period, not before ---- */
static struct obj *F;
static void *free_reader(void *arg)
{
	(void)arg;
	struct rlu_thread *self = rlu_thread_get(R);
	rlu_reader_lock(self);
	struct obj *f = rlu_deref(self, F);
	atomic_store(&phase, 1);
	test_wait_flag(&committing, 1, 30000); /* the writer has unlinked and freed F */
	test_sleep_ms(WINDOW_MS);
	CHECK_EQ(f->a, 42); /* not yet poisoned: our section holds it */
	atomic_store(&left, 1);
	rlu_reader_unlock(self);
	return NULL;
}

static void test_free(void)
{
	struct rlu_config cfg = RLU_CONFIG_INIT;
	cfg.poison_on_free = true;
	R = rlu_create(&cfg);
	F = rlu_alloc(sizeof *F);
	F->a = 42;
	atomic_store(&phase, 0);
	atomic_store(&left, 0);
	atomic_store(&committing, 0);
	pthread_t t = test_spawn(free_reader, NULL);
	test_wait_flag(&phase, 1, 10000);
	struct rlu_thread *self = rlu_thread_get(R);
	rlu_reader_lock(self);
	struct obj *f = F;
	CHECK(rlu_try_lock_const(self, (void **)&f, sizeof *f));
	rlu_free(self, f);
	atomic_store(&committing, 1);
	rlu_reader_unlock(self); /* waits for the reader, then frees */
	CHECK_MSG(atomic_load(&left), "rlu_free's object freed while a reader held it");
	test_join(t);
	rlu_destroy(R);
}

int main(void)
{
	test_watchdog(50); /* inside ctest's TIMEOUT (60 s): the watchdog's message is printed */
	test_basic();
	test_two_threads();
	test_deferral();
	test_overflow();
	test_free();
	test_abort_reuse();
	test_steal_reuse();
	test_log("rlu api: OK");
	return 0;
}
