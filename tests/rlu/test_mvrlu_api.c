/*
 * tests/rlu/test_mvrlu_api.c - the MV-RLU contract of <tsync/mvrlu.h>, one behaviour at a
 * time: own versions are private until commit; each section reads the newest version
 * committed before its clock, so three sections see three different versions at once and
 * a commit never waits for them; conflicts (a held lock, a stale view) fail try_lock;
 * a small log wraps around and is reclaimed (write-back, recycling) under pressure, and
 * an old reader pins exactly the versions it can still read; a full log fails try_lock
 * and mvrlu_abort waits for the reader as a last resort; mvrlu_free'd objects are
 * poisoned only after no section can reach them; ENOSPC for an oversized write set.
 */
#include "check.h"

#include <tsync/clock.h>
#include <tsync/mvrlu.h>

struct obj {
	uint64_t a, b;
	struct obj *next;
};

static struct mvrlu *D;
static _Atomic int phase;
/* The pinning reader is about to leave its section (set just before its unlock). */
static _Atomic int pin_left;

/* ---- single thread: own versions, commit, abort, cmp, free, flush ---- */
static void test_basic(void)
{
	struct mvrlu *d = mvrlu_create(NULL);
	CHECK(d);
	struct mvrlu_thread *self = mvrlu_thread_get(d);
	CHECK(self && mvrlu_thread_get(d) == self);
	struct obj *o = mvrlu_alloc(sizeof *o);
	CHECK(o && o->a == 0 && o->next == NULL);

	mvrlu_reader_lock(self);
	struct obj *c = mvrlu_deref(self, o);
	CHECK(c == o);
	CHECK(mvrlu_try_lock(self, (void **)&c, sizeof *c));
	CHECK(c != o);
	CHECK(mvrlu_cmp_objs(c, o) && mvrlu_actual(c) == o);
	c->a = 7;
	CHECK(mvrlu_deref(self, o) == c); /* own version */
	struct obj *c2 = o;
	CHECK(mvrlu_try_lock(self, (void **)&c2, sizeof *c2)); /* already held: same version */
	CHECK(c2 == c);
	mvrlu_assign_ptr(self, (void **)&c->next, c); /* stores the master */
	CHECK(c->next == o);
	mvrlu_reader_unlock(self); /* commit: no write-back yet */
	CHECK_EQ(o->a, 0);
	mvrlu_reader_lock(self);
	struct obj *v = mvrlu_deref(self, o);
	CHECK(v != o && v->a == 7 && v->next == o); /* the committed version */
	mvrlu_reader_unlock(self);

	/* abort discards */
	mvrlu_reader_lock(self);
	c = o;
	CHECK(mvrlu_try_lock(self, (void **)&c, sizeof *c));
	c->a = 99;
	mvrlu_abort(self);
	mvrlu_reader_lock(self);
	CHECK_EQ(((struct obj *)mvrlu_deref(self, o))->a, 7);
	mvrlu_reader_unlock(self);

	/* flush writes the newest version back and empties the log */
	CHECK_GT(mvrlu_log_used(self), 0u);
	mvrlu_flush(self);
	CHECK_EQ(mvrlu_log_used(self), 0u);
	CHECK_EQ(o->a, 7);
	CHECK(o->next == o);
	mvrlu_reader_lock(self);
	CHECK(mvrlu_deref(self, o) == o);
	c = o;
	CHECK(mvrlu_try_lock(self, (void **)&c, sizeof *c)); /* the abort unlocked it */
	mvrlu_assign_ptr(self, (void **)&c->next, NULL);
	mvrlu_free(self, c);
	mvrlu_reader_unlock(self);
	mvrlu_flush(self);
	struct mvrlu_stats st, sum;
	CHECK_EQ(mvrlu_stats_thread(self, &st), 0);
	CHECK_EQ(st.commits, 2);
	CHECK_EQ(st.aborts, 1);
	CHECK_EQ(st.frees, 1);
	/* one thread: the sum over all records is its own counters */
	CHECK_EQ(mvrlu_stats(d, &sum), 0);
	CHECK(memcmp(&sum, &st, sizeof st) == 0);
	CHECK_ERRNO(mvrlu_stats(NULL, &sum), -1, EINVAL);
	CHECK_ERRNO(mvrlu_stats_thread(NULL, &sum), -1, EINVAL);
	CHECK_EQ(st.writebacks, 1);
	CHECK_EQ(mvrlu_log_used(self), 0u);
	mvrlu_destroy(d);
}

/* ---- version selection by clock: three sections, three versions, no waiting ---- */
static struct obj *X;

struct viewer {
	int start_phase; /* begin the section when phase reaches this */
	uint64_t expect; /* the value of X->a this section must read */
};

static void *viewer(void *arg)
{
	struct viewer *vw = arg;
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	test_wait_flag(&phase, vw->start_phase, 10000);
	mvrlu_reader_lock(self);
	atomic_fetch_add(&phase, 1); /* started */
	test_wait_flag(&phase, 10, 10000);
	struct obj *x = mvrlu_deref(self, X);
	CHECK_EQ(x->a, vw->expect);
	CHECK_EQ(x->b, vw->expect * 10);
	/* a version newer than this section's clock exists: the view is stale */
	if (vw->expect < 2) {
		CHECK(!mvrlu_try_lock(self, (void **)&x, sizeof *x));
		mvrlu_abort(self);
	} else {
		mvrlu_reader_unlock(self);
	}
	return NULL;
}

static void commit_value(struct mvrlu_thread *self, uint64_t val)
{
	mvrlu_reader_lock(self);
	struct obj *x = mvrlu_deref(self, X);
	CHECK(mvrlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = val;
	x->b = val * 10;
	mvrlu_reader_unlock(self);
}

static void test_versions(void)
{
	D = mvrlu_create(NULL);
	X = mvrlu_alloc(sizeof *X);
	atomic_store(&phase, 0);
	struct viewer v0 = {0, 0}, v1 = {2, 1}, v2 = {4, 2};
	pthread_t t0 = test_spawn(viewer, &v0);
	pthread_t t1 = test_spawn(viewer, &v1);
	pthread_t t2 = test_spawn(viewer, &v2);
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	test_wait_flag(&phase, 1, 10000); /* v0's section is open */
	struct mvrlu_stats s0, s1;
	mvrlu_stats_thread(self, &s0);
	commit_value(self, 1);
	atomic_store(&phase, 2);
	test_wait_flag(&phase, 3, 10000); /* v1's section is open */
	commit_value(self, 2);
	/* neither commit waited for the open sections (RLU's would: they stay open until
	 * phase 10, so a commit that waited for them would hang here) */
	mvrlu_stats_thread(self, &s1);
	CHECK_EQ(s1.commits - s0.commits, 2);
	CHECK_EQ(s1.waits, s0.waits);
	atomic_store(&phase, 4);
	test_wait_flag(&phase, 5, 10000); /* v2's section is open */
	/* a pending lock is invisible to others; a third version coexists */
	mvrlu_reader_lock(self);
	struct obj *x = mvrlu_deref(self, X);
	CHECK_EQ(x->a, 2);
	CHECK(mvrlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 3;
	x->b = 30;
	atomic_store(&phase, 10);
	test_join(t0);
	test_join(t1);
	test_join(t2);
	mvrlu_reader_unlock(self);
	mvrlu_reader_lock(self);
	CHECK_EQ(((struct obj *)mvrlu_deref(self, X))->a, 3);
	mvrlu_reader_unlock(self);
	struct mvrlu_stats st;
	mvrlu_stats(D, &st);
	CHECK_GE(st.chain_steps, 1u); /* v0 and v1 walked past newer versions */
	mvrlu_flush(self);
	CHECK_EQ(X->a, 3);
	CHECK_EQ(X->b, 30);
	mvrlu_destroy(D);
	mvrlu_free_unsafe(X);
}

/* ---- conflicts: a pending lock fails try_lock; its abort frees the object ---- */
static void *conflict_peer(void *arg)
{
	(void)arg;
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	test_wait_flag(&phase, 1, 10000);
	mvrlu_reader_lock(self);
	struct obj *x = mvrlu_deref(self, X);
	CHECK(x == X && x->a == 0); /* the holder's version is not committed */
	CHECK(!mvrlu_try_lock(self, (void **)&x, sizeof *x));
	mvrlu_abort(self);
	atomic_store(&phase, 2);
	test_wait_flag(&phase, 3, 10000);
	mvrlu_reader_lock(self);
	x = mvrlu_deref(self, X);
	CHECK(mvrlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 6;
	mvrlu_reader_unlock(self);
	return NULL;
}

static void test_conflict(void)
{
	D = mvrlu_create(NULL);
	X = mvrlu_alloc(sizeof *X);
	atomic_store(&phase, 0);
	pthread_t t = test_spawn(conflict_peer, NULL);
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	mvrlu_reader_lock(self);
	struct obj *x = X;
	CHECK(mvrlu_try_lock(self, (void **)&x, sizeof *x));
	x->a = 5;
	atomic_store(&phase, 1);
	test_wait_flag(&phase, 2, 10000);
	mvrlu_abort(self);
	atomic_store(&phase, 3);
	test_join(t);
	mvrlu_reader_lock(self);
	CHECK_EQ(((struct obj *)mvrlu_deref(self, X))->a, 6);
	mvrlu_reader_unlock(self);
	mvrlu_destroy(D); /* writes the peer's version back */
	CHECK_EQ(X->a, 6);
	mvrlu_free_unsafe(X);
}

/* ---- a small log under pressure: wrap-around, reclamation, a pinning reader ---- */
#define NOBJ 4
static struct obj *O[NOBJ];

static void *pin_reader(void *arg)
{
	(void)arg;
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	mvrlu_reader_lock(self);
	uint64_t seen[NOBJ];
	for (int i = 0; i < NOBJ; i++) {
		struct obj *o = mvrlu_deref(self, O[i]);
		seen[i] = o->a;
		CHECK_EQ(o->b, o->a * 3);
	}
	atomic_store(&phase, 1);
	test_wait_flag(&phase, 2, 10000); /* the writer has filled its log meanwhile */
	for (int i = 0; i < NOBJ; i++) {
		struct obj *o = mvrlu_deref(self, O[i]); /* still our versions, intact */
		CHECK_EQ(o->a, seen[i]);
		CHECK_EQ(o->b, seen[i] * 3);
	}
	/* the writer is calling mvrlu_abort: stay a while, so that its first reclamation
	 * pass finds us here and it has to wait (st.waits) */
	test_wait_flag(&phase, 3, 10000);
	test_sleep_ms(100);
	atomic_store(&pin_left, 1);
	mvrlu_reader_unlock(self);
	return NULL;
}

static void bump(struct mvrlu_thread *self, int i, uint64_t val)
{
	for (;;) {
		mvrlu_reader_lock(self);
		struct obj *o = mvrlu_deref(self, O[i]);
		if (mvrlu_try_lock(self, (void **)&o, sizeof *o)) {
			o->a = val;
			o->b = val * 3;
			mvrlu_reader_unlock(self);
			return;
		}
		mvrlu_abort(self);
	}
}

static void test_pressure(void)
{
	struct mvrlu_config cfg = MVRLU_CONFIG_INIT;
	cfg.log_bytes = 4096;
	D = mvrlu_create(&cfg);
	CHECK(D);
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	for (int i = 0; i < NOBJ; i++)
		O[i] = mvrlu_alloc(sizeof(struct obj));
	/* alone: the log wraps many times and never needs to wait */
	uint64_t n = test_scale(20000, 4);
	for (uint64_t k = 1; k <= n; k++) {
		bump(self, (int)(k % NOBJ), k);
		CHECK_LE(mvrlu_log_used(self), 4096u);
	}
	struct mvrlu_stats st;
	mvrlu_stats_thread(self, &st);
	CHECK_EQ(st.commits, n);
	CHECK_GT(st.recycled, n - 64); /* everything but what is still in the log */
	CHECK_GT(st.writebacks, 0u);
	CHECK_EQ(st.waits, 0u);
	mvrlu_reader_lock(self);
	for (int i = 0; i < NOBJ; i++) {
		struct obj *o = mvrlu_deref(self, O[i]);
		CHECK_EQ(o->b, o->a * 3);
		CHECK_EQ(o->a % NOBJ, (uint64_t)i);
		CHECK_GT(o->a, n - NOBJ);
	}
	mvrlu_reader_unlock(self);

	/* an old reader pins the versions it reads: the log fills up, try_lock fails, and
	 * abort waits (last resort) until the reader leaves */
	atomic_store(&phase, 0);
	atomic_store(&pin_left, 0);
	pthread_t t = test_spawn(pin_reader, NULL);
	test_wait_flag(&phase, 1, 10000);
	uint64_t k = n + 1, full_at = 0;
	for (; k < n + 1000 && !full_at; k++) {
		mvrlu_reader_lock(self);
		struct obj *o = mvrlu_deref(self, O[k % NOBJ]);
		if (!mvrlu_try_lock(self, (void **)&o, sizeof *o)) {
			full_at = k;
			break;
		}
		o->a = k;
		o->b = k * 3;
		mvrlu_reader_unlock(self);
	}
	CHECK_MSG(full_at, "the log never filled up behind a pinning reader");
	mvrlu_stats_thread(self, &st);
	CHECK_GE(st.log_full, 1u);
	atomic_store(&phase, 3); /* the log is full (2) and we abort now (3) */
	mvrlu_abort(self);       /* waits for the reader */
	CHECK_MSG(atomic_load(&pin_left), "mvrlu_abort returned while the reader that pins "
					  "the log was still inside");
	mvrlu_stats_thread(self, &st);
	CHECK_GE(st.waits, 1u);
	test_join(t);
	bump(self, (int)(full_at % NOBJ), full_at);
	mvrlu_flush(self);
	CHECK_EQ(mvrlu_log_used(self), 0u);
	for (int i = 0; i < NOBJ; i++) {
		CHECK_EQ(O[i]->b, O[i]->a * 3); /* written back */
		CHECK_GT(O[i]->a, full_at - NOBJ);
	}
	mvrlu_destroy(D);
	for (int i = 0; i < NOBJ; i++)
		mvrlu_free_unsafe(O[i]);
}

/* ---- mvrlu_free: poisoned only after no section can reach the object ---- */
static struct obj *F, *G;
static void *free_reader(void *arg)
{
	(void)arg;
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	mvrlu_reader_lock(self);
	struct obj *f = mvrlu_deref(self, F);
	atomic_store(&phase, 1);
	test_wait_flag(&phase, 2, 10000); /* the writer has freed F and reclaimed since */
	CHECK_EQ(f->a, 42);               /* not poisoned: our section can still reach it */
	mvrlu_reader_unlock(self);
	atomic_store(&phase, 3);
	return NULL;
}

static void test_free(void)
{
	struct mvrlu_config cfg = MVRLU_CONFIG_INIT;
	cfg.poison_on_free = true;
	cfg.log_bytes = 4096;
	D = mvrlu_create(&cfg);
	F = mvrlu_alloc(sizeof *F);
	G = mvrlu_alloc(sizeof *G);
	F->a = 42;
	atomic_store(&phase, 0);
	pthread_t t = test_spawn(free_reader, NULL);
	test_wait_flag(&phase, 1, 10000);
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	mvrlu_reader_lock(self);
	struct obj *f = F;
	CHECK(mvrlu_try_lock_const(self, (void **)&f, sizeof *f));
	mvrlu_free(self, f);
	mvrlu_reader_unlock(self);
	/* many commits on G: reclamation passes run, but F must stay */
	struct mvrlu_stats st;
	for (uint64_t k = 0; k < 30; k++) {
		mvrlu_reader_lock(self);
		struct obj *g = G;
		CHECK(mvrlu_try_lock(self, (void **)&g, sizeof *g));
		g->a = k;
		mvrlu_reader_unlock(self);
	}
	mvrlu_stats_thread(self, &st);
	CHECK_GT(st.reclaims, 0u);
	CHECK_EQ(st.frees, 0u);
	atomic_store(&phase, 2);
	test_wait_flag(&phase, 3, 10000);
	mvrlu_flush(self); /* now F goes */
	mvrlu_stats_thread(self, &st);
	CHECK_EQ(st.frees, 1u);
	test_join(t);
	mvrlu_destroy(D);
	mvrlu_free_unsafe(G);
}

/* ---- a write set larger than half the log: ENOSPC ---- */
static void test_enospc(void)
{
	struct mvrlu_config cfg = MVRLU_CONFIG_INIT;
	cfg.log_bytes = 4096;
	D = mvrlu_create(&cfg);
	struct mvrlu_thread *self = mvrlu_thread_get(D);
	struct obj *o[64];
	for (int i = 0; i < 64; i++)
		o[i] = mvrlu_alloc(sizeof(struct obj));
	mvrlu_reader_lock(self);
	int locked = 0;
	errno = 0;
	for (int i = 0; i < 64; i++) {
		struct obj *c = o[i];
		if (!mvrlu_try_lock(self, (void **)&c, sizeof *c))
			break;
		locked++;
	}
	CHECK(locked > 0 && locked < 64);
	CHECK_EQ(errno, ENOSPC);
	mvrlu_abort(self);
	mvrlu_reader_lock(self);
	for (int i = 0; i < 64; i++)
		CHECK(mvrlu_deref(self, o[i]) == o[i]); /* all unlocked again */
	mvrlu_reader_unlock(self);
	mvrlu_flush(self);
	CHECK_EQ(mvrlu_log_used(self), 0u);
	mvrlu_destroy(D);
	for (int i = 0; i < 64; i++)
		mvrlu_free_unsafe(o[i]);
}

int main(void)
{
	test_watchdog(50); /* inside ctest's TIMEOUT (60 s): the watchdog's message is printed */
	CHECK_EQ(tsync_clock_init(), 0);
	test_basic();
	test_versions();
	test_conflict();
	test_pressure();
	test_free();
	test_enospc();
	test_log("mvrlu api: OK (clock %s, skew bound %llu ticks)", tsync_clock_source_name(),
		 (unsigned long long)tsync_clock_skew());
	return 0;
}
