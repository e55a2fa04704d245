/*
 * tests/ps_mem/test_ps_mem_budget.c - struct ps_mem_budget (<tsync/ps_mem.h>), one memory
 * limit over several ps_mem with Prudence (ASPLOS 2016) §4's wait: the charge per object
 * and its return at reuse (free_now, reclamation, a member's destroy) and nowhere else,
 * one limit across two instances, the wait that ends when a reader's section does (and
 * not before), the deadline, the refusals without a wait (NOWAIT, wait_ms -1, inside a
 * section, nothing pending), the room callback, the argument checks, and a concurrent
 * run where readers check that no object they hold is reused and the charge never
 * passes the limit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/tsync.h>

#include "check.h"

static struct ps *ps;

static uint64_t charge_of(struct ps_mem *m)
{
	return (ps_mem_slab_size(m) + ps_mem_slab_objects(m) - 1) / ps_mem_slab_objects(m);
}

static struct ps_mem_budget_stats stats_of(struct ps_mem_budget *b)
{
	struct ps_mem_budget_stats s;
	CHECK_EQ(ps_mem_budget_stats(b, &s), 0);
	return s;
}

/* n objects of m's budget into objs. */
static void fill(struct ps_mem *m, void **objs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		objs[i] = ps_mem_budget_alloc(m, 0, NULL, NULL);
		CHECK(objs[i] != NULL);
	}
}

/* A budget of `objs` objects of m's charge with one member, m (size bytes), filled with
 * o[0..objs): every further allocation must be refused. */
static struct ps_mem_budget *full_budget(size_t size, unsigned objs, int wait_ms, struct ps_mem **m,
					 void **o)
{
	*m = ps_mem_create(ps, size, NULL);
	CHECK(*m != NULL);
	struct ps_mem_budget *b = ps_mem_budget_create(ps, objs * charge_of(*m), wait_ms);
	CHECK(b != NULL);
	CHECK_EQ(ps_mem_budget_attach(b, *m), 0);
	fill(*m, o, objs);
	return b;
}

/* Free objs[0..n) of m, reclaim them (no section holds them): nothing stays charged;
 * then m and b go. */
static void free_all(struct ps_mem_budget *b, struct ps_mem *m, void **objs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ps_free(m, objs[i]);
	ps_mem_reclaim(m);
	CHECK_EQ(stats_of(b).charged, 0);
	ps_mem_destroy(m);
	CHECK_EQ(ps_mem_budget_destroy(b), 0);
}

/* ---- accounting ----------------------------------------------------------------------- */

static void test_accounting(void)
{
	struct ps_mem *m;
	void *o[8];
	struct ps_mem_budget *b = full_budget(100, 8, 100, &m, o);
	uint64_t ch = charge_of(m);
	struct ps_mem_budget_stats s = stats_of(b);
	CHECK_EQ(s.limit, 8 * ch);
	CHECK_EQ(s.charged, 8 * ch);
	CHECK_EQ(s.garbage, 0);
	/* full, nothing pending: no wait can help */
	CHECK_ERRNO(ps_mem_budget_alloc(m, 0, NULL, NULL) != NULL, false, ENOSPC);
	CHECK_ERRNO(ps_alloc(m) != NULL, false, ENOSPC); /* ps_alloc of a member is charged */
	CHECK_EQ(stats_of(b).waits, 0);
	/* ps_free_now: the charge returns at once */
	ps_free_now(m, o[0]);
	CHECK_EQ(stats_of(b).charged, 7 * ch);
	o[0] = ps_alloc(m);
	CHECK(o[0] != NULL);
	CHECK_EQ(stats_of(b).charged, 8 * ch);
	/* ps_free: garbage until reclaimed, charged all along */
	for (int i = 0; i < 8; i++)
		ps_free(m, o[i]);
	s = stats_of(b);
	CHECK_EQ(s.charged, s.garbage);
	ps_mem_reclaim(m);
	s = stats_of(b);
	CHECK_EQ(s.charged, 0);
	CHECK_EQ(s.garbage, 0);
	/* a member destroyed with live and pending objects gives their charge back */
	fill(m, o, 8);
	ps_enter(ps); /* holds the frees back */
	ps_free(m, o[0]);
	ps_free(m, o[1]);
	ps_exit(ps);
	CHECK_EQ(stats_of(b).charged, 8 * ch);
	CHECK_ERRNO(ps_mem_budget_destroy(b), -1, EBUSY);
	ps_mem_destroy(m);
	s = stats_of(b);
	CHECK_EQ(s.charged, 0);
	CHECK_EQ(s.garbage, 0);
	CHECK_EQ(ps_mem_budget_destroy(b), 0);
}

/* ---- one limit across two instances ---------------------------------------------------- */

static void test_shared(void)
{
	struct ps_mem *a = ps_mem_create(ps, 64, NULL), *c = ps_mem_create(ps, 3000, NULL);
	CHECK(a != NULL && c != NULL);
	uint64_t ca = charge_of(a), cc = charge_of(c);
	CHECK_NE(ca, cc);
	struct ps_mem_budget *b = ps_mem_budget_create(ps, 4 * cc + 2 * ca, 100);
	CHECK(b != NULL);
	CHECK_EQ(ps_mem_budget_attach(b, a), 0);
	CHECK_EQ(ps_mem_budget_attach(b, c), 0);
	void *oc[4], *oa[64];
	fill(c, oc, 4);
	unsigned na = 0;
	while ((oa[na] = ps_alloc(a)) != NULL) /* what c left: 2 of a's, and its rounding */
		na++;
	CHECK_EQ(errno, ENOSPC);
	CHECK_EQ(na, 2);
	CHECK_EQ(stats_of(b).charged, 4 * cc + 2 * ca);
	/* c's objects make room for a's */
	ps_free(c, oc[0]);
	while (na < 64 && (oa[na] = ps_alloc(a)) != NULL) /* reclaims c for a */
		na++;
	CHECK_EQ(na, 2 + cc / ca);
	CHECK_EQ(stats_of(b).charged, 3 * cc + na * ca);
	CHECK_EQ(stats_of(b).garbage, 0);
	for (unsigned i = 0; i < na; i++)
		ps_free(a, oa[i]);
	for (int i = 1; i < 4; i++)
		ps_free(c, oc[i]);
	ps_mem_reclaim(a);
	ps_mem_reclaim(c);
	CHECK_EQ(stats_of(b).charged, 0);
	ps_mem_destroy(a);
	ps_mem_destroy(c);
	CHECK_EQ(ps_mem_budget_destroy(b), 0);
}

/* ---- waiting for a reader's section ---------------------------------------------------- */

struct reader {
	test_gate in;          /* 1: inside its section */
	test_gate go;          /* 1: may leave */
	unsigned hold_ms;      /* then it leaves after this long */
	_Atomic uint64_t left; /* test_now_ns() just before its ps_exit */
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	ps_enter(ps);
	test_gate_set(&r->in, 1);
	CHECK(test_gate_wait_ms(&r->go, 1, 0));
	test_sleep_ms(r->hold_ms);
	atomic_store_explicit(&r->left, test_now_ns(), memory_order_relaxed);
	ps_exit(ps);
	return NULL;
}

static pthread_t reader_start(struct reader *r, unsigned hold_ms)
{
	memset(r, 0, sizeof *r);
	test_gate_init(&r->in, 0);
	test_gate_init(&r->go, 0);
	r->hold_ms = hold_ms;
	pthread_t t = test_spawn(reader_main, r);
	CHECK(test_gate_wait_ms(&r->in, 1, 0));
	return t;
}

static void reader_end(struct reader *r, pthread_t t)
{
	test_gate_set(&r->go, 1);
	test_join(t);
	test_gate_destroy(&r->in);
	test_gate_destroy(&r->go);
}

/* Full, one object garbage behind a reader that leaves 30 ms later: the allocation waits
 * and succeeds only after the reader left. */
static void test_wait(void)
{
	struct ps_mem *m;
	void *o[4];
	struct ps_mem_budget *b = full_budget(200, 4, 60000, &m, o);
	struct reader r;
	pthread_t t = reader_start(&r, 30);
	ps_free(m, o[0]);
	test_gate_set(&r.go, 1);
	void *p = ps_mem_budget_alloc(m, 0, NULL, NULL);
	uint64_t got = test_now_ns();
	CHECK(p != NULL);
	CHECK_MSG(got >= atomic_load_explicit(&r.left, memory_order_relaxed),
		  "the budget's wait ended before the reader's section did");
	struct ps_mem_budget_stats s = stats_of(b);
	CHECK_EQ(s.waits, 1);
	CHECK_EQ(s.timeouts, 0);
	CHECK_EQ(s.garbage, 0);
	reader_end(&r, t);
	o[0] = p;
	free_all(b, m, o, 4);
}

/* The reader stays: the wait ends at wait_ms with ETIMEDOUT; the refusals that do not
 * wait at all; the charge untouched by every refusal. */
static void test_deadline_and_nowait(void)
{
	struct ps_mem *m;
	void *o[4];
	struct ps_mem_budget *b = full_budget(200, 4, 50, &m, o);
	uint64_t ch = charge_of(m);
	struct reader r;
	pthread_t t = reader_start(&r, 0);
	ps_free(m, o[0]);
	uint64_t t0 = test_now_ns();
	CHECK_ERRNO(ps_mem_budget_alloc(m, 0, NULL, NULL) != NULL, false, ETIMEDOUT);
	CHECK_GE(test_now_ns() - t0, 50 * 1000000ull);
	struct ps_mem_budget_stats s = stats_of(b);
	CHECK_EQ(s.waits, 1);
	CHECK_EQ(s.timeouts, 1);
	CHECK_EQ(s.charged, 4 * ch);
	CHECK_EQ(s.garbage, ch);
	/* no wait: NOWAIT, and inside a section of b's ps (EDEADLK) */
	t0 = test_now_ns();
	CHECK_ERRNO(ps_mem_budget_alloc(m, PS_MEM_BUDGET_NOWAIT, NULL, NULL) != NULL, false,
		    ETIMEDOUT);
	ps_enter(ps);
	CHECK_ERRNO(ps_mem_budget_alloc(m, 0, NULL, NULL) != NULL, false, EDEADLK);
	ps_exit(ps);
	CHECK_LT(test_now_ns() - t0, 40 * 1000000ull); /* neither napped to a deadline */
	s = stats_of(b);
	CHECK_EQ(s.waits, 1);
	CHECK_EQ(s.charged, 4 * ch);
	CHECK_ERRNO(ps_mem_budget_alloc(m, 2, NULL, NULL) != NULL, false, EINVAL);
	reader_end(&r, t);
	/* the reader gone, the garbage comes back without a wait */
	o[0] = ps_mem_budget_alloc(m, PS_MEM_BUDGET_NOWAIT, NULL, NULL);
	CHECK(o[0] != NULL);
	free_all(b, m, o, 4);

	/* wait_ms -1: never waits */
	b = full_budget(200, 2, -1, &m, o);
	t = reader_start(&r, 0);
	ps_free(m, o[0]);
	CHECK_ERRNO(ps_alloc(m) != NULL, false, ETIMEDOUT);
	CHECK_EQ(stats_of(b).waits, 0);
	reader_end(&r, t);
	ps_free(m, o[1]);
	ps_mem_destroy(m);
	CHECK_EQ(ps_mem_budget_destroy(b), 0);
}

/* ---- the room callback ----------------------------------------------------------------- */

struct room {
	struct ps_mem *m;
	void *victim;
	unsigned calls, naps;
	size_t bytes;
};

/* Frees its victim on the first call (as an eviction would); no room after that. */
static bool room_fn(void *arg, size_t bytes, unsigned naps)
{
	struct room *r = arg;
	r->calls++;
	r->bytes = bytes;
	r->naps = naps;
	if (r->victim == NULL)
		return false;
	ps_free(r->m, r->victim);
	r->victim = NULL;
	return true;
}

static void test_room(void)
{
	struct ps_mem *m;
	void *o[3];
	struct ps_mem_budget *b = full_budget(500, 3, 100, &m, o);
	struct room r = {.m = m, .victim = o[1]};
	void *p = ps_mem_budget_alloc(m, 0, room_fn, &r);
	/* the victim freed, the charge still held (garbage); asked again, no more room:
	 * the budget reclaims it (no section holds it) */
	CHECK(p != NULL);
	CHECK_EQ(r.calls, 2);
	CHECK_EQ(r.bytes, charge_of(m));
	CHECK_EQ(r.naps, 0);
	o[1] = p;
	/* no room made, nothing pending: room asked once, then ENOSPC */
	CHECK_ERRNO(ps_mem_budget_alloc(m, 0, room_fn, &r) != NULL, false, ENOSPC);
	CHECK_EQ(r.calls, 3);
	free_all(b, m, o, 3);
}

/* ---- argument checks ------------------------------------------------------------------- */

static void test_args(void)
{
	CHECK_ERRNO(ps_mem_budget_create(NULL, 4096, 0) != NULL, false, EINVAL);
	CHECK_ERRNO(ps_mem_budget_create(ps, 0, 0) != NULL, false, EINVAL);
	CHECK_ERRNO(ps_mem_budget_create(ps, 4096, -2) != NULL, false, EINVAL);
	CHECK_ERRNO(ps_mem_budget_create(ps, 4096, 60001) != NULL, false, EINVAL);
	CHECK_ERRNO(ps_mem_budget_stats(NULL, NULL), -1, EINVAL);
	struct ps_mem_budget *b = ps_mem_budget_create(ps, 1 << 20, 0);
	CHECK(b != NULL);
	struct ps *other = ps_create(NULL);
	CHECK(other != NULL);
	struct ps_mem *mo = ps_mem_create(other, 64, NULL), *m = ps_mem_create(ps, 64, NULL);
	CHECK(mo != NULL && m != NULL);
	CHECK_ERRNO(ps_mem_budget_attach(b, mo), -1, EINVAL);                      /* another ps */
	CHECK_ERRNO(ps_mem_budget_alloc(m, 0, NULL, NULL) != NULL, false, EINVAL); /* no member */
	void *x = ps_alloc(m);
	CHECK(x != NULL);
	CHECK_ERRNO(ps_mem_budget_attach(b, m), -1, EBUSY); /* an uncharged object */
	ps_free_now(m, x);
	CHECK_EQ(ps_mem_budget_attach(b, m), 0);
	CHECK_ERRNO(ps_mem_budget_attach(b, m), -1, EINVAL); /* a member already */
	ps_mem_destroy(m);
	ps_mem_destroy(mo);
	ps_destroy(other);
	CHECK_EQ(ps_mem_budget_destroy(b), 0);
	CHECK_EQ(ps_mem_budget_destroy(NULL), 0);
}

/* ---- concurrent: the limit holds and readers never see reuse --------------------------- */

enum { SLOTS = 64, WRITERS = 2, READERS = 2, GARBAGE = 8 };

struct cobj {
	_Atomic uint64_t mark; /* its slot and incarnation, written once before publication */
	char pad[88];
};

static struct {
	struct ps_mem *m[2];
	struct ps_mem_budget *b;
	_Atomic(struct cobj *) slot[SLOTS];
	atomic_bool stop;
	_Atomic uint64_t stores, refused, reads;
} cr;

static void *cwriter(void *arg)
{
	uint64_t seed = test_seed((uintptr_t)arg), n = 0;
	while (!atomic_load_explicit(&cr.stop, memory_order_relaxed)) {
		unsigned i = (unsigned)(test_rand(&seed) % SLOTS);
		struct ps_mem *m = cr.m[i & 1];
		struct cobj *o = ps_mem_budget_alloc(m, 0, NULL, NULL);
		if (o == NULL) {
			CHECK_MSG(errno == ETIMEDOUT || errno == ENOSPC, "errno %d", errno);
			atomic_fetch_add_explicit(&cr.refused, 1, memory_order_relaxed);
			continue;
		}
		atomic_store_explicit(&o->mark, (uint64_t)i << 32 | (++n & 0xffffffffu),
				      memory_order_relaxed);
		struct cobj *old = atomic_exchange_explicit(&cr.slot[i], o, memory_order_acq_rel);
		if (old != NULL)
			ps_free(m, old);
		struct ps_mem_budget_stats s;
		ps_mem_budget_stats(cr.b, &s);
		CHECK_LE(s.charged, s.limit);
		atomic_fetch_add_explicit(&cr.stores, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *creader(void *arg)
{
	uint64_t seed = test_seed((uintptr_t)arg + 100);
	while (!atomic_load_explicit(&cr.stop, memory_order_relaxed)) {
		ps_enter(ps);
		unsigned i = (unsigned)(test_rand(&seed) % SLOTS);
		struct cobj *o = atomic_load_explicit(&cr.slot[i], memory_order_acquire);
		if (o != NULL) {
			uint64_t a = atomic_load_explicit(&o->mark, memory_order_relaxed);
			for (int k = 0; k < 100; k++)
				tsync_arch_relax();
			uint64_t b = atomic_load_explicit(&o->mark, memory_order_relaxed);
			CHECK_MSG(a == b && a >> 32 == i,
				  "slot %u: object reused under a reader "
				  "(%" PRIx64 ", %" PRIx64 ")",
				  i, a, b);
			atomic_fetch_add_explicit(&cr.reads, 1, memory_order_relaxed);
		}
		ps_exit(ps);
	}
	return NULL;
}

static void test_concurrent(void)
{
	memset(&cr, 0, sizeof cr);
	cr.m[0] = ps_mem_create(ps, sizeof(struct cobj), NULL);
	cr.m[1] = ps_mem_create(ps, 2 * sizeof(struct cobj), NULL);
	CHECK(cr.m[0] != NULL && cr.m[1] != NULL);
	/* the full slots and GARBAGE objects' worth of garbage: the limit binds whenever
	 * readers hold back more than that */
	uint64_t c0 = charge_of(cr.m[0]), c1 = charge_of(cr.m[1]);
	cr.b = ps_mem_budget_create(ps, SLOTS / 2 * (c0 + c1) + GARBAGE * c1, 1000);
	CHECK(cr.b != NULL);
	CHECK_EQ(ps_mem_budget_attach(cr.b, cr.m[0]), 0);
	CHECK_EQ(ps_mem_budget_attach(cr.b, cr.m[1]), 0);
	pthread_t t[WRITERS + READERS];
	for (uintptr_t i = 0; i < WRITERS; i++)
		t[i] = test_spawn(cwriter, (void *)i);
	for (uintptr_t i = 0; i < READERS; i++)
		t[WRITERS + i] = test_spawn(creader, (void *)i);
	test_sleep_ms((unsigned)(test_stress_seconds(0.5) * 1000));
	atomic_store_explicit(&cr.stop, true, memory_order_relaxed);
	for (int i = 0; i < WRITERS + READERS; i++)
		test_join(t[i]);
	CHECK_GT(atomic_load(&cr.stores), 0);
	CHECK_GT(atomic_load(&cr.reads), 0);
	for (unsigned i = 0; i < SLOTS; i++) {
		struct cobj *o = atomic_load(&cr.slot[i]);
		if (o != NULL)
			ps_free(cr.m[i & 1], o);
	}
	/* the writers exited: their queues are adopted by our reclamations */
	for (int k = 0; k < 4; k++) {
		ps_mem_reclaim(cr.m[0]);
		ps_mem_reclaim(cr.m[1]);
	}
	struct ps_mem_budget_stats s = stats_of(cr.b);
	test_log("budget concurrent: %" PRIu64 " stores, %" PRIu64 " refused, %" PRIu64
		 " reads, %" PRIu64 " waits",
		 atomic_load(&cr.stores), atomic_load(&cr.refused), atomic_load(&cr.reads),
		 s.waits);
	CHECK_EQ(s.charged, 0);
	CHECK_EQ(s.garbage, 0);
	ps_mem_destroy(cr.m[0]);
	ps_mem_destroy(cr.m[1]);
	CHECK_EQ(ps_mem_budget_destroy(cr.b), 0);
}

int main(void)
{
	test_watchdog(110);
	CHECK_EQ(tsync_clock_init(), 0);
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	CHECK_EQ(tsync_thread_register(), 0);
	test_accounting();
	test_shared();
	test_wait();
	test_deadline_and_nowait();
	test_room();
	test_args();
	test_concurrent();
	ps_destroy(ps);
	test_log("ps_mem budget: ok");
	return 0;
}
