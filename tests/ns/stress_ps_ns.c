/*
 * tests/ns/stress_ps_ns.c - id-reuse hunt for <tsync/ps_ns.h>.
 *
 * Phase 1 (about 70% of the time): readers loop { ps_enter; look an id up; record the
 * object, the id it stores and its incarnation; park (spin, sched_yield, now and then
 * a sleep inside the section); look the id up again; ps_exit } and fail when, within one
 * section, the id is bound to another object (an id re-bound under a reader), the first
 * object's id or incarnation changed (the object was reused under a reader), a lookup
 * returned an object not yet published (its `pub` mark is still 0) or one holding
 * another id. They also walk short ranges with ps_ns_next (only published objects, in
 * id order). Writers churn a table of slots: ps_ns_alloc, ps_ns_alloc_at of random or
 * recently used ids, extents of random size; each object gets its id and a fresh
 * incarnation, is published, and freed later by whichever writer displaces or takes it
 * (so frees are often remote). Every allocation claims its ids in a per-id owner array
 * with a CAS from 0 (an extent also claims its unbound tail), every free releases them
 * with a CAS back: a failed CAS is an id handed out twice, or extents that overlap each
 * other or single ids. A free inside the writer's own section is followed by
 * ps_ns_alloc_at of the same id, which must say EBUSY (EEXIST is allowed for an id of an
 * extent that is still out).
 *   tlb: the namespace's grace hook simulates a TLB flush epoch (a flusher thread
 *   advances it every ~1 ms; an id freed in epoch e is refused until the epoch is past
 *   e): a side array keeps each id's free epoch, and every allocation checks that the
 *   epoch has moved past the free epoch of each id it got.
 * Phase 2: alloc_at races. In each round three threads ps_ns_alloc_at the same 32 ids
 * (each in its own order) while a fourth allocates with ps_ns_alloc and small extents,
 * taking ids from its cache that the others are claiming: every id that was free at the
 * start of the round is won exactly once; every loser sees EEXIST. Then every id is
 * freed and, after quiescence (and the next two flushes with tlb), must be free again.
 * Phase 3: extent claims that fail on a taken id and give the others back must not make
 * a concurrent ps_ns_alloc_at of those ids fail with EEXIST (nobody holds them).
 * End: after everything is freed and drained, the counters match what the threads did
 * (allocs, frees, extents; live and grace 0), and in spaces up to 2^16 ids every id can
 * be allocated again (ids cached by exited threads or split extents are not lost).
 *
 *   stress_ps_ns [bits=N] [cache=N] [order=N] [cyclic] [tlb] [mem=small]
 *                [readers=N] [writers=N]
 *   Duration: TSYNC_STRESS_SECONDS (default 2): phase 1 0.65 of it, phase 2 0.2 + 0.1 s,
 *   phase 3 0.15 + 0.1 s, each on the stress scaffold (stress.h); the tlb flusher runs
 *   across the phases, beside them.
 */
#include <tsync/ps_ns.h>
#include <tsync/tsync.h>

#include "check.h"
#include "stress.h"

struct ext {
	uint64_t base, span;
	size_t n;
	uint64_t tag; /* owner tag of the unbound tail */
	_Atomic size_t remaining;
};

struct sobj {
	uint64_t id;         /* the id it is bound to (written before publish) */
	uint64_t inc;        /* incarnation, unique per allocation */
	uint64_t pub;        /* 1 just before ps_ns_publish */
	uint64_t free_epoch; /* tlb: the flush epoch when it was freed */
	struct ext *ext;     /* its extent, NULL for a single id */
};

/* ---- configuration ------------------------------------------------------------------ */
static unsigned bits = 16, cache, order;
static int policy = PS_NS_ID_LOWEST;
static bool tlb, small_mem;
static int nreaders = 2, nwriters = 2;
static uint64_t cap;

static struct ps *PS;
static struct ps_ns *NS;
static _Atomic uint64_t *owner;    /* per id: incarnation / tag of its holder, or 0 */
static _Atomic uint64_t *side_fe;  /* per id: flush epoch of its last free */
static _Atomic uint64_t epoch = 1; /* tlb: flushes so far + 1 */
static _Atomic int flusher_stop;
static _Atomic uint64_t inc_counter;
static _Atomic uint64_t hook_calls, hook_refusals;

static struct ps_ns *p3_ns; /* phase 3's namespace (same hook) */
static _Atomic(struct sobj *) *slots;
static size_t nslots;
#define HINTS 1024u
static _Atomic uint64_t hint[HINTS];
static _Atomic uint64_t hint_pos;

static _Atomic uint64_t violations;
/* Phase 1 did what it is for: some id was freed, some reader lookup found an object. */
static _Atomic bool p1_freed, p1_hit;

__attribute__((format(printf, 1, 2))) static void violation(const char *fmt, ...)
{
	uint64_t n = atomic_fetch_add(&violations, 1);
	stress_stop();
	if (n < 20) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "VIOLATION: ");
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, "\n");
		va_end(ap);
		fflush(stderr);
	}
	if (n == 0)
		test_bail_soon(20);
}

/* ---- the grace hook: a simulated TLB flush ----------------------------------------- */
static bool tlb_hook(struct ps_ns *ns, void *obj, uint64_t id, tsync_tick_t free_time, void *arg)
{
	struct sobj *o = obj;
	(void)arg;
	if ((ns != NS && ns != p3_ns) || arg != (void *)&epoch)
		violation("grace hook: namespace %p, expected %p", (void *)ns, (void *)NS);
	if (o->id != id || ps_ns_id(ns, o) != id || free_time == 0)
		violation("grace hook: id %" PRIu64 " for an object holding id %" PRIu64
			  " (ps_ns_id %" PRIu64 "), free time %" PRIu64,
			  id, o->id, ps_ns_id(ns, o), (uint64_t)free_time);
	atomic_fetch_add_explicit(&hook_calls, 1, memory_order_relaxed);
	if (atomic_load_explicit(&epoch, memory_order_acquire) > o->free_epoch)
		return true;
	atomic_fetch_add_explicit(&hook_refusals, 1, memory_order_relaxed);
	return false;
}

static struct ps_ns *make_ns(void)
{
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	c.id_bits = bits;
	c.id_cache = cache;
	c.max_order = order;
	c.id_policy = policy;
	if (tlb) {
		c.grace_fn = tlb_hook;
		c.grace_arg = (void *)&epoch;
	}
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	if (small_mem) {
		stress_small_mem(&mc);
		c.mem = &mc;
	}
	struct ps_ns *ns = ps_ns_create(PS, sizeof(struct sobj), &c);
	CHECK_MSG(ns != NULL, "ps_ns_create: errno %d", errno);
	return ns;
}

static void *flusher_main(void *p)
{
	(void)p;
	while (!atomic_load(&flusher_stop)) {
		test_sleep_ns(1000000);
		atomic_fetch_add_explicit(&epoch, 1, memory_order_release);
	}
	return NULL;
}

static void wait_flushes(unsigned n)
{
	if (!tlb)
		return;
	uint64_t e = atomic_load(&epoch) + n;
	uint64_t dl = test_now_ns() + 10000000000ull;
	while (atomic_load(&epoch) < e) {
		CHECK_MSG(test_now_ns() < dl, "the flusher stopped");
		test_sleep_ns(200000);
	}
}

/* ---- per-thread counts ------------------------------------------------------------- */
struct counts {
	uint64_t allocs, ats, at_fail, extents, extent_ids, frees, enospc, busy_checks;
	uint64_t lookups, hits, rebinds_checked, sleeps, walks, walked;
};

/* ---- writers ---------------------------------------------------------------------- */
struct writer {
	struct stress_worker sw;
	struct counts c;
};

/* A new object bound (reserved) to id: claim the id, fill the object, publish it. */
static void claim(struct ps_ns *ns, struct sobj *o, uint64_t id, struct ext *e, uint64_t *rng)
{
	if (id >= cap) {
		violation("an allocation returned id %" PRIu64 " >= capacity %" PRIu64, id, cap);
		return;
	}
	if (ps_ns_id(ns, o) != id)
		violation("ps_ns_id = %" PRIu64 " for an object allocated with id %" PRIu64,
			  ps_ns_id(ns, o), id);
	uint64_t inc = atomic_fetch_add(&inc_counter, 1) + 1, z = 0;
	if (!atomic_compare_exchange_strong(&owner[id], &z, inc))
		violation("id %" PRIu64 " handed out while held (holder tag %" PRIu64
			  ")%s", id, z, e ? " (by an extent)" : "");
	if (tlb) {
		uint64_t fe = atomic_load_explicit(&side_fe[id], memory_order_acquire);
		uint64_t now = atomic_load_explicit(&epoch, memory_order_acquire);
		if (now <= fe)
			violation("id %" PRIu64 " re-bound in flush epoch %" PRIu64
				  ", it was freed in epoch %" PRIu64 " (the hook refuses that)",
				  id, now, fe);
	}
	o->id = id;
	o->inc = inc;
	o->pub = 0;
	o->free_epoch = 0;
	o->ext = e;
	/* while it is reserved, lookups must return NULL */
	ps_enter(PS);
	if (ps_ns_lookup(ns, id) != NULL)
		violation("lookup of reserved id %" PRIu64 " returned an object", id);
	ps_exit(PS);
	if (test_rand(rng) % 16 == 0)
		sched_yield();
	o->pub = 1;
	ps_ns_publish(ns, o);
	uint64_t p = atomic_fetch_add_explicit(&hint_pos, 1, memory_order_relaxed);
	atomic_store_explicit(&hint[p % HINTS], id, memory_order_relaxed);
}

/* Free o (held exclusively by the caller): release its claims, then ps_ns_free. */
static void release(struct ps_ns *ns, struct sobj *o, struct counts *c)
{
	uint64_t id = o->id, inc = o->inc;
	if (ps_ns_id(ns, o) != id)
		violation("ps_ns_id = %" PRIu64 " for an object holding id %" PRIu64,
			  ps_ns_id(ns, o), id);
	ps_enter(PS);
	void *l = ps_ns_lookup(ns, id);
	ps_exit(PS);
	if (l != (void *)o)
		violation("published id %" PRIu64 " looks up %p, not its object %p (inc %" PRIu64
			  ")", id, l, (void *)o, inc);
	uint64_t expect = inc;
	if (!atomic_compare_exchange_strong(&owner[id], &expect, 0))
		violation("id %" PRIu64 " (inc %" PRIu64 ") was taken over by %" PRIu64
			  " while bound", id, inc, expect);
	struct ext *e = o->ext;
	if (e && atomic_fetch_sub(&e->remaining, 1) == 1) {
		for (uint64_t j = e->n; j < e->span; j++) {
			uint64_t t = e->tag;
			if (!atomic_compare_exchange_strong(&owner[e->base + j], &t, 0))
				violation("tail id %" PRIu64 " of extent %" PRIu64 "+%" PRIu64
					  " was handed out (holder %" PRIu64 ")",
					  e->base + j, e->base, e->span, t);
		}
		free(e);
	}
	if (tlb) {
		uint64_t fe = atomic_load_explicit(&epoch, memory_order_acquire);
		o->free_epoch = fe;
		atomic_store_explicit(&side_fe[id], fe, memory_order_release);
	}
	ps_ns_free(ns, o);
	if (c->frees++ == 0)
		atomic_store_explicit(&p1_freed, true, memory_order_relaxed);
}

static void put(struct sobj *o, struct counts *c, uint64_t *rng)
{
	size_t s = test_rand(rng) % nslots;
	struct sobj *old = atomic_exchange(&slots[s], o);
	if (old)
		release(NS, old, c);
}

static void op_take(struct writer *w, uint64_t *rng)
{
	size_t s = test_rand(rng) % nslots;
	struct sobj *o = atomic_exchange(&slots[s], NULL);
	if (!o)
		return;
	if (test_rand(rng) % 8 != 0) {
		release(NS, o, &w->c);
		return;
	}
	/* freed inside our own section: the id is in grace until we leave */
	bool in_ext = o->ext != NULL;
	uint64_t id = o->id;
	ps_enter(PS);
	release(NS, o, &w->c);
	if (ps_ns_lookup(NS, id) != NULL)
		violation("id %" PRIu64 " still bound after ps_ns_free", id);
	errno = 0;
	void *x = ps_ns_alloc_at(NS, id);
	int err = errno;
	if (x != NULL || !(err == EBUSY || (in_ext && err == EEXIST)))
		violation("ps_ns_alloc_at(%" PRIu64 ") just after its free, inside the freeing "
			  "thread's section: %p errno %d (%s)%s",
			  id, x, err, strerror(err), in_ext ? " (an extent id)" : "");
	w->c.busy_checks++;
	if (test_rand(rng) % 4 == 0)
		test_spin(2000);
	ps_exit(PS);
}

static void on_enospc(struct writer *w, uint64_t *rng)
{
	w->c.enospc++;
	for (int i = 0; i < 4; i++)
		op_take(w, rng);
	ps_mem_reclaim(ps_ns_mem(NS));
	if (tlb || (test_rand(rng) % 4) == 0)
		sched_yield();
}

static void op_single(struct writer *w, uint64_t *rng)
{
	uint64_t id = UINT64_MAX;
	errno = 0;
	struct sobj *o = ps_ns_alloc(NS, &id);
	if (!o) {
		if (errno != ENOSPC)
			violation("ps_ns_alloc: errno %d (%s)", errno, strerror(errno));
		on_enospc(w, rng);
		return;
	}
	claim(NS, o, id, NULL, rng);
	w->c.allocs++;
	put(o, &w->c, rng);
}

static uint64_t pick_id(uint64_t *rng)
{
	uint64_t r = test_rand(rng);
	if (r % 10 < 6) {
		uint64_t p = atomic_load_explicit(&hint_pos, memory_order_relaxed);
		if (p)
			return atomic_load_explicit(&hint[(r >> 8) % (p < HINTS ? p : HINTS)],
						    memory_order_relaxed);
	}
	uint64_t dense = 4 * (uint64_t)nslots + 64;
	return (r >> 8) % (dense < cap ? dense : cap);
}

static void op_at(struct writer *w, uint64_t *rng)
{
	uint64_t id = pick_id(rng);
	if (test_rand(rng) % 64 == 0)
		id = cap + test_rand(rng) % 1000; /* outside */
	errno = 0;
	struct sobj *o = ps_ns_alloc_at(NS, id);
	if (!o) {
		int err = errno;
		if (id >= cap ? err != ERANGE : (err != EEXIST && err != EBUSY))
			violation("ps_ns_alloc_at(%" PRIu64 "): errno %d (%s)", id, err,
				  strerror(err));
		w->c.at_fail++;
		return;
	}
	if (id >= cap)
		violation("ps_ns_alloc_at(%" PRIu64 ") outside the space succeeded", id);
	claim(NS, o, id, NULL, rng);
	w->c.ats++;
	put(o, &w->c, rng);
}

static unsigned max_order_eff(void)
{
	unsigned mo = order ? order : (bits < 10 ? bits : 10);
	return mo;
}

static void op_extent(struct writer *w, uint64_t *rng)
{
	unsigned mo = max_order_eff();
	uint64_t r = test_rand(rng) % 100;
	size_t lim = r < 75 ? 8 : r < 97 ? 32 : 128;
	if (lim > ((size_t)1 << mo))
		lim = (size_t)1 << mo;
	size_t n = 1 + (size_t)(test_rand(rng) % lim);
	void *objs[128];
	uint64_t base = UINT64_MAX;
	errno = 0;
	if (ps_ns_alloc_extent(NS, n, &base, objs) != 0) {
		if (errno != ENOSPC)
			violation("ps_ns_alloc_extent(%zu): errno %d (%s)", n, errno,
				  strerror(errno));
		on_enospc(w, rng);
		return;
	}
	uint64_t span = 1;
	while (span < n)
		span <<= 1;
	if (base % span != 0 || base + span > cap) {
		violation("extent of %zu at %" PRIu64 ": not aligned to %" PRIu64
			  " or outside the space", n, base, span);
		return;
	}
	struct ext *e = NULL;
	if (n > 1) {
		e = malloc(sizeof *e);
		CHECK(e != NULL);
		e->base = base;
		e->span = span;
		e->n = n;
		e->tag = atomic_fetch_add(&inc_counter, 1) + 1;
		atomic_init(&e->remaining, n);
		for (uint64_t j = n; j < span; j++) {
			uint64_t z = 0;
			if (!atomic_compare_exchange_strong(&owner[base + j], &z, e->tag))
				violation("the tail id %" PRIu64 " of a new extent %" PRIu64
					  "+%" PRIu64 " is held (holder %" PRIu64 ")",
					  base + j, base, span, z);
			if (tlb) {
				uint64_t fe = atomic_load(&side_fe[base + j]);
				if (atomic_load(&epoch) <= fe)
					violation("tail id %" PRIu64 " reused before the flush "
						  "after its free", base + j);
			}
		}
		w->c.extents++;
	}
	for (size_t i = 0; i < n; i++)
		claim(NS, objs[i], base + i, e, rng);
	w->c.extent_ids += n;
	for (size_t i = 0; i < n; i++)
		put(objs[i], &w->c, rng);
}

static void *writer_main(void *p)
{
	struct writer *w = p;
	uint64_t rng = w->sw.seed;
	unsigned n = 0;
	while (!stress_stopping()) {
		uint64_t r = test_rand(&rng) % 100;
		if (r < 30)
			op_single(w, &rng);
		else if (r < 42)
			op_at(w, &rng);
		else if (r < 47)
			op_extent(w, &rng);
		else
			op_take(w, &rng);
		w->sw.ops++;
		if ((++n & 127) == 0)
			ps_mem_reclaim(ps_ns_mem(NS));
	}
	return NULL;
}

/* ---- readers ---------------------------------------------------------------------- */
struct reader {
	struct stress_worker sw;
	struct counts c;
};

static void check_obj(const struct sobj *o, uint64_t id, const char *what)
{
	uint64_t oid = o->id, inc = o->inc, pub = o->pub;
	if (oid != id || pub != 1 || inc == 0)
		violation("%s: id %" PRIu64 " returned an object holding id %" PRIu64
			  " inc %" PRIu64 " pub %" PRIu64 " (unpublished, or bound to another id)",
			  what, id, oid, inc, pub);
	if (ps_ns_id(NS, o) != id)
		violation("%s: ps_ns_id = %" PRIu64 " for the object of id %" PRIu64, what,
			  ps_ns_id(NS, o), id);
}

static void park(struct reader *r, uint64_t *rng)
{
	uint64_t x = test_rand(rng) % 1024;
	if (x < 700) {
		test_spin((unsigned)(x * 4));
	} else if (x < 1010) {
		for (uint64_t k = x % 8; k-- > 0;)
			sched_yield();
	} else {
		r->c.sleeps++;
		test_sleep_ns(50000 + test_rand(rng) % (TEST_SMALL ? 500000 : 2000000));
	}
}

static void *reader_main(void *p)
{
	struct reader *r = p;
	uint64_t rng = r->sw.seed;
	while (!stress_stopping()) {
		if (test_rand(&rng) % 32 == 0) {
			/* a short walk: published objects only, in id order, kept in the section */
			uint64_t start = pick_id(&rng), id = start, last = 0;
			const struct sobj *seen[16];
			uint64_t sid[16], sinc[16];
			int ns = 0;
			bool first = true;
			ps_enter(PS);
			const struct sobj *o;
			while (ns < 16 && (o = ps_ns_next(NS, &id)) != NULL) {
				if (id < start || (!first && id <= last))
					violation("ps_ns_next went from %" PRIu64 " to %" PRIu64
						  " (start %" PRIu64 ")", last, id, start);
				check_obj(o, id, "ps_ns_next");
				seen[ns] = o;
				sid[ns] = id;
				sinc[ns] = o->inc;
				ns++;
				first = false;
				last = id;
				if (++id >= cap)
					break;
			}
			park(r, &rng);
			for (int i = 0; i < ns; i++) {
				if (seen[i]->id != sid[i] || seen[i]->inc != sinc[i])
					violation("an object found by ps_ns_next (id %" PRIu64
						  ") was reused inside the section", sid[i]);
				void *again = ps_ns_lookup(NS, sid[i]);
				if (again && again != seen[i])
					violation("id %" PRIu64 " re-bound inside a section (walk)",
						  sid[i]);
			}
			ps_exit(PS);
			r->c.walks++;
			r->c.walked += (uint64_t)ns;
			r->sw.ops++;
			continue;
		}
		uint64_t id = pick_id(&rng);
		ps_enter(PS);
		struct sobj *o1 = ps_ns_lookup(NS, id);
		uint64_t inc1 = 0;
		r->c.lookups++;
		if (o1) {
			if (r->c.hits++ == 0)
				atomic_store_explicit(&p1_hit, true, memory_order_relaxed);
			check_obj(o1, id, "lookup");
			inc1 = o1->inc;
		}
		park(r, &rng);
		struct sobj *o2 = ps_ns_lookup(NS, id);
		if (o1) {
			r->c.rebinds_checked++;
			if (o2 && o2 != o1)
				violation("id %" PRIu64 " re-bound inside a section: %p (inc %" PRIu64
					  ") then %p (inc %" PRIu64 ")",
					  id, (void *)o1, inc1, (void *)o2, o2->inc);
			if (o1->id != id || o1->inc != inc1)
				violation("the object of id %" PRIu64 " (inc %" PRIu64
					  ") was reused inside a section: now id %" PRIu64
					  " inc %" PRIu64, id, inc1, o1->id, o1->inc);
		}
		if (o2)
			check_obj(o2, id, "second lookup");
		ps_exit(PS);
		r->sw.ops++;
	}
	return NULL;
}

/* ---- drain: every writer frees what it holds and reclaims until nothing is in grace */
static test_barrier wbar;

static void drain_until_clean(struct ps_ns *ns, const char *phase)
{
	uint64_t dl = test_now_ns() + 30000000000ull;
	for (;;) {
		ps_synchronize(PS);
		ps_mem_reclaim(ps_ns_mem(ns));
		struct ps_ns_stats s;
		CHECK_EQ(ps_ns_stats(ns, &s), 0);
		if (s.grace == 0 || atomic_load(&violations))
			break;
		if (test_now_ns() > dl) {
			violation("%s: %" PRIu64 " ids still in grace 30 s after the last free "
				  "(frees %" PRIu64 ", reclaimed %" PRIu64 ", refusals %" PRIu64 ")",
				  phase, s.grace, s.frees, s.reclaimed, s.grace_refusals);
			break;
		}
		test_sleep_ns(500000);
	}
}

static void *writer_drain_main(void *p)
{
	struct writer *w = p;
	test_barrier_wait(&wbar); /* every writer has stopped putting */
	for (size_t s = (size_t)w->sw.idx; s < nslots; s += (size_t)nwriters) {
		struct sobj *o = atomic_exchange(&slots[s], NULL);
		if (o)
			release(NS, o, &w->c);
	}
	test_barrier_wait(&wbar);
	drain_until_clean(NS, "phase 1");
	test_barrier_wait(&wbar);
	return NULL;
}

static void *writer_thread(void *p)
{
	writer_main(p);
	return writer_drain_main(p);
}

/* After a quiet drain: every id of a small space can be allocated again. */
static void check_all_ids_free(struct ps_ns *ns, const char *phase)
{
	if (cap > (1u << 16))
		return;
	struct sobj **all = calloc(cap, sizeof *all);
	CHECK(all != NULL);
	uint64_t got = 0, id;
	for (;;) {
		errno = 0;
		struct sobj *o = ps_ns_alloc(ns, &id);
		if (!o) {
			CHECK_MSG(errno == ENOSPC, "ps_ns_alloc: errno %d", errno);
			break;
		}
		CHECK_LT(got, cap);
		o->id = id;
		o->inc = 1;
		o->pub = 0;
		o->free_epoch = 0;
		o->ext = NULL;
		uint64_t z = 0;
		if (!atomic_compare_exchange_strong(&owner[id], &z, 1))
			violation("%s end: id %" PRIu64 " allocated while held (%" PRIu64 ")", phase,
				  id, z);
		all[got++] = o;
	}
	if (got != cap) {
		struct ps_ns_stats s;
		CHECK_EQ(ps_ns_stats(ns, &s), 0);
		violation("%s end: with every id freed and drained, only %" PRIu64 " of %" PRIu64
			  " ids could be allocated (ENOSPC): ids were lost (live %" PRIu64
			  " grace %" PRIu64 " pool_ids %" PRIu64 " stale %" PRIu64 ")",
			  phase, got, cap, s.live, s.grace, s.pool_ids, s.stale);
	}
	for (uint64_t i = 0; i < got; i++) {
		uint64_t one = 1;
		atomic_compare_exchange_strong(&owner[ps_ns_id(ns, all[i])], &one, 0);
		ps_ns_free(ns, all[i]);
	}
	free(all);
}

/* ---- phase 2: alloc_at races ------------------------------------------------------- */
#define RACERS 3
#define K 32
static test_barrier rbar;
static uint64_t targets[K];
static int res[RACERS][K];
static _Atomic int race_stop;
static uint64_t race_rounds, race_contested, race_alloc_won;
static _Atomic uint64_t alloc_last; /* the allocating racer's last id (CYCLIC targets) */

struct racer {
	struct stress_worker sw; /* sw.idx 0..RACERS-1: alloc_at; RACERS: ps_ns_alloc */
	void *held[4 * K + 8]; /* the allocating racer: up to K extents of 4 */
	int nheld;
	struct counts c;
};

static void race_claim(struct racer *r, void *o, uint64_t id)
{
	uint64_t z = 0;
	if (!atomic_compare_exchange_strong(&owner[id], &z, (uint64_t)r->sw.idx + 1))
		violation("alloc_at race: id %" PRIu64 " won by thread %u and held by %" PRIu64,
			  id, r->sw.idx, z - 1);
	((struct sobj *)o)->id = id;
	((struct sobj *)o)->inc = 1;
	((struct sobj *)o)->pub = 1;
	((struct sobj *)o)->free_epoch = 0;
	((struct sobj *)o)->ext = NULL;
	ps_ns_publish(NS, o);
	r->held[r->nheld++] = o;
}

static void *racer_main(void *p)
{
	struct racer *r = p;
	uint64_t rng = r->sw.seed;
	for (;;) {
		if (r->sw.idx == 0) {
			/* pick K distinct targets: low ids (what LOWEST hands out) and, for
			 * CYCLIC, the ids just past the allocating thread's last one */
			uint64_t lim = cap < 128 ? cap : 128;
			for (int k = 0; k < K; k++) {
				uint64_t id;
				bool dup;
				do {
					if (policy == PS_NS_ID_CYCLIC && k % 2)
						id = (atomic_load(&alloc_last) + 1 +
						      test_rand(&rng) % (2 * K)) % cap;
					else
						id = test_rand(&rng) % lim;
					dup = false;
					for (int j = 0; j < k; j++)
						dup |= targets[j] == id;
				} while (dup);
				targets[k] = id;
			}
		}
		test_barrier_wait(&rbar); /* A */
		if (atomic_load(&race_stop))
			break;
		r->nheld = 0;
		if (r->sw.idx < RACERS) {
			int ord[K];
			for (int k = 0; k < K; k++)
				ord[k] = k;
			for (int k = K - 1; k > 0; k--) {
				int j = (int)(test_rand(&rng) % (uint64_t)(k + 1)), t = ord[k];
				ord[k] = ord[j];
				ord[j] = t;
			}
			for (int i = 0; i < K; i++) {
				int k = ord[i];
				errno = 0;
				void *o = ps_ns_alloc_at(NS, targets[k]);
				res[r->sw.idx][k] = o ? 0 : errno;
				if (o) {
					race_claim(r, o, targets[k]);
					r->c.ats++;
				} else {
					r->c.at_fail++;
				}
			}
		} else {
			for (int i = 0; i < K; i++) {
				if (test_rand(&rng) % 4 == 0) {
					void *objs[4];
					uint64_t base;
					size_t n = test_rand(&rng) % 2 ? 2 : 4;
					errno = 0;
					if (ps_ns_alloc_extent(NS, n, &base, objs) != 0) {
						/* free extents are not merged: once alloc_at
						 * broke them up, ENOSPC is allowed */
						if (errno != ENOSPC)
							violation("race: ps_ns_alloc_extent(%zu): "
								  "errno %d", n, errno);
						r->c.enospc++;
						continue;
					}
					if (base % n)
						violation("race: extent of %zu at %" PRIu64, n, base);
					for (size_t j = 0; j < n; j++) {
						if (ps_ns_id(NS, objs[j]) != base + j)
							violation("race: extent object %zu has id %" PRIu64,
								  j, ps_ns_id(NS, objs[j]));
						race_claim(r, objs[j], base + j);
					}
					r->c.extents++;
					r->c.extent_ids += n;
					atomic_store(&alloc_last, base + n - 1);
				} else {
					uint64_t id;
					errno = 0;
					void *o = ps_ns_alloc(NS, &id);
					if (!o) {
						violation("race: ps_ns_alloc: errno %d", errno);
						continue;
					}
					race_claim(r, o, id);
					r->c.allocs++;
					atomic_store(&alloc_last, id);
				}
			}
		}
		test_barrier_wait(&rbar); /* B */
		if (r->sw.idx == 0) {
			for (int k = 0; k < K; k++) {
				uint64_t id = targets[k], h = atomic_load(&owner[id]);
				int winners = 0;
				for (int t = 0; t < RACERS; t++)
					winners += res[t][k] == 0;
				bool alloc_won = h == RACERS + 1;
				if (winners + alloc_won != 1 || h == 0)
					violation("alloc_at race, round %" PRIu64 ": id %" PRIu64
						  " won %d times by alloc_at and %d by ps_ns_alloc "
						  "(holder %" PRIu64 "; errnos %d %d %d)",
						  race_rounds, id, winners, (int)alloc_won, h, res[0][k],
						  res[1][k], res[2][k]);
				for (int t = 0; t < RACERS; t++)
					if (res[t][k] != 0 && res[t][k] != EEXIST)
						violation("alloc_at race: a loser for id %" PRIu64
							  " (free at the start of the round) saw errno "
							  "%d (%s), not EEXIST",
							  id, res[t][k], strerror(res[t][k]));
				race_alloc_won += alloc_won;
				race_contested++;
			}
		}
		test_barrier_wait(&rbar); /* C */
		for (int i = 0; i < r->nheld; i++) {
			struct sobj *o = r->held[i];
			uint64_t id = o->id, t = (uint64_t)r->sw.idx + 1;
			if (!atomic_compare_exchange_strong(&owner[id], &t, 0))
				violation("race: id %" PRIu64 " changed holder", id);
			if (tlb) {
				uint64_t fe = atomic_load(&epoch);
				o->free_epoch = fe;
			}
			ps_ns_free(NS, o);
			r->c.frees++;
		}
		test_barrier_wait(&rbar); /* D */
		wait_flushes(2);
		ps_synchronize(PS);
		ps_mem_reclaim(ps_ns_mem(NS));
		test_barrier_wait(&rbar); /* E */
		r->sw.ops++; /* rounds: racer 0 stops after one at least */
		if (r->sw.idx == 0) {
			race_rounds++;
			struct ps_ns_stats s;
			CHECK_EQ(ps_ns_stats(NS, &s), 0);
			if (s.live != 0 || s.grace != 0)
				violation("race round %" PRIu64 ": after every thread freed and "
					  "reclaimed: live %" PRIu64 " grace %" PRIu64,
					  race_rounds, s.live, s.grace);
			if (stress_stopping())
				atomic_store(&race_stop, 1);
		}
	}
	return NULL;
}

/* ---- phase 3: a failed extent claim must not make alloc_at fail ------------------------
 * A fresh namespace per round: the last id of each of the first P3J extents of 4 is
 * taken, so every claim of one of them by ps_ns_alloc_extent fails on its last id and
 * gives the others back. Meanwhile another thread keeps asking ps_ns_alloc_at for the
 * second id of those extents (and frees what it gets at once): nobody ever holds such
 * an id, so EEXIST ("bound or reserved") is wrong whenever it comes. */
#define P3J 256
static _Atomic int p3_done;
static uint64_t p3_rounds, p3_asks;

static void *p3_extents(void *p)
{
	(void)p;
	for (int i = 0; i < P3J; i++) {
		void *o[4];
		uint64_t b;
		errno = 0;
		if (ps_ns_alloc_extent(p3_ns, 4, &b, o) != 0) {
			if (errno != ENOSPC)
				violation("phase 3: ps_ns_alloc_extent: errno %d", errno);
			break;
		}
		if (b < 4 * P3J)
			violation("phase 3: an extent of 4 at %" PRIu64 ", whose id %" PRIu64
				  " is taken", b, b + 3);
	}
	atomic_store(&p3_done, 1);
	return NULL;
}

/* One round of phase 3 on a fresh namespace. */
static void p3_round(void *arg)
{
	(void)arg;
	p3_ns = make_ns();
	for (uint64_t j = 0; j < P3J; j++) {
		struct sobj *o = ps_ns_alloc_at(p3_ns, 4 * j + 3);
		CHECK_MSG(o != NULL, "phase 3: alloc_at(%" PRIu64 ") in a fresh namespace: "
			  "errno %d", 4 * j + 3, errno);
		o->id = 4 * j + 3;
		o->free_epoch = 0;
	}
	atomic_store(&p3_done, 0);
	pthread_t t = test_spawn(p3_extents, NULL); /* one round long */
	while (!atomic_load(&p3_done) && !atomic_load(&violations))
		for (uint64_t j = 0; j < P3J; j++) {
			errno = 0;
			struct sobj *x = ps_ns_alloc_at(p3_ns, 4 * j + 1);
			p3_asks++;
			if (x) {
				x->id = 4 * j + 1;
				x->free_epoch = atomic_load(&epoch);
				ps_ns_free(p3_ns, x);
			} else if (errno == EEXIST) {
				violation("phase 3: ps_ns_alloc_at(%" PRIu64 ") = EEXIST, but "
					  "nobody holds it (an extent claim that failed on "
					  "id %" PRIu64 " reserved it for a moment)",
					  4 * j + 1, 4 * j + 3);
			} else if (errno != EBUSY) {
				violation("phase 3: ps_ns_alloc_at: errno %d", errno);
			}
		}
	test_join(t);
	ps_ns_destroy(p3_ns);
}

static void phase3(double secs)
{
	unsigned saved_bits = bits, saved_order = order;
	bits = 12;
	order = 2;
	p3_rounds = stress_rounds(secs, &violations, p3_round, NULL);
	bits = saved_bits;
	order = saved_order;
	printf("stress_ps_ns phase 3: %" PRIu64 " rounds of broken extent claims against %" PRIu64
	       " alloc_at\n", p3_rounds, p3_asks);
}

/* ---- main --------------------------------------------------------------------------- */
static void parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "bits=", 5) == 0)
			bits = (unsigned)atoi(a + 5);
		else if (strncmp(a, "cache=", 6) == 0)
			cache = (unsigned)atoi(a + 6);
		else if (strncmp(a, "order=", 6) == 0)
			order = (unsigned)atoi(a + 6);
		else if (strcmp(a, "cyclic") == 0)
			policy = PS_NS_ID_CYCLIC;
		else if (strcmp(a, "tlb") == 0)
			tlb = true;
		else if (strcmp(a, "mem=small") == 0)
			small_mem = true;
		else if (strncmp(a, "readers=", 8) == 0)
			nreaders = atoi(a + 8);
		else if (strncmp(a, "writers=", 8) == 0)
			nwriters = atoi(a + 8);
		else {
			fprintf(stderr, "stress_ps_ns: unknown argument '%s'\n", a);
			exit(2);
		}
	}
	CHECK(bits >= 10 && bits <= 24);
	CHECK(nreaders >= 0 && nreaders <= 16 && nwriters >= 1 && nwriters <= 16);
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	double secs = stress_begin(2.0, 10, 120);
	CHECK_EQ(tsync_clock_init(), 0);
	PS = ps_create(NULL);
	CHECK(PS != NULL);
	cap = (uint64_t)1 << bits;
	owner = calloc(cap, sizeof *owner);
	side_fe = calloc(cap, sizeof *side_fe);
	CHECK(owner && side_fe);
	nslots = cap / 4 < 4096 ? (size_t)(cap / 4) : 4096;
	slots = calloc(nslots, sizeof *slots);
	CHECK(slots != NULL);
	NS = make_ns();

	pthread_t flusher = 0;
	if (tlb) /* across all three phases: not one of a phase's workers */
		flusher = test_spawn(flusher_main, NULL);

	/* ---- phase 1: readers against churning writers ---- */
	struct writer *w = calloc((size_t)nwriters, sizeof *w);
	struct reader *r = calloc((size_t)nreaders + 1, sizeof *r);
	CHECK(w && r);
	test_barrier_init(&wbar, (unsigned)nwriters);
	stress_spawn_workers(writer_thread, w, (unsigned)nwriters, 1);
	stress_spawn_workers(reader_main, r, (unsigned)nreaders, 101);
	stress_run(secs * 0.65, &violations, NULL, NULL);
	/* then on until some id was freed and some lookup hit (writers and readers keep at
	 * it: both come, however late the threads were scheduled; the watchdog bounds it) */
	while (!(atomic_load(&p1_freed) && (nreaders == 0 || atomic_load(&p1_hit))) &&
	       !atomic_load(&violations))
		test_sleep_ms(10);
	stress_end(&violations);
	struct counts tot = {0};
	for (int i = 0; i < nreaders; i++)
		stress_counts_add(&tot, &r[i].c);
	for (int i = 0; i < nwriters; i++)
		stress_counts_add(&tot, &w[i].c);
	test_barrier_destroy(&wbar);
	struct ps_ns_stats s;
	CHECK_EQ(ps_ns_stats(NS, &s), 0);
	uint64_t ids_alloc = tot.allocs + tot.ats + tot.extent_ids;
	if (!atomic_load(&violations)) {
		CHECK_MSG(s.allocs == ids_alloc && s.frees == tot.frees && s.extents == tot.extents,
			  "phase 1 counters: allocs %" PRIu64 " (did %" PRIu64 "), frees %" PRIu64
			  " (did %" PRIu64 "), extents %" PRIu64 " (did %" PRIu64 ")",
			  s.allocs, ids_alloc, s.frees, tot.frees, s.extents, tot.extents);
		CHECK_EQ(s.live, 0);
		CHECK_EQ(s.grace, 0);
		CHECK_EQ(s.reclaimed, s.frees);
		if (tlb)
			CHECK_EQ(s.grace_refusals, atomic_load(&hook_refusals));
		for (uint64_t id = 0; id < cap; id++)
			CHECK_MSG(atomic_load(&owner[id]) == 0, "id %" PRIu64 " still claimed", id);
		check_all_ids_free(NS, "phase 1");
	}
	printf("stress_ps_ns phase 1 (bits %u, %s, cache %u, order %u%s%s): %" PRIu64
	       " ids allocated (%" PRIu64 " single, %" PRIu64 " at, %" PRIu64 " in %" PRIu64
	       " extents), %" PRIu64 " alloc_at refused, %" PRIu64 " frees (%" PRIu64
	       " checked EBUSY in-section), %" PRIu64 " ENOSPC; readers %" PRIu64 " lookups, %"
	       PRIu64 " hits re-checked, %" PRIu64 " sleeps in sections, %" PRIu64 " walks (%"
	       PRIu64 " objects); hook %" PRIu64 " calls %" PRIu64 " refusals; stale %" PRIu64
	       " splits %" PRIu64 " trie nodes %" PRIu64 "\n",
	       bits, policy == PS_NS_ID_CYCLIC ? "cyclic" : "lowest", cache, order,
	       tlb ? ", tlb hook" : "", small_mem ? ", small mem" : "", ids_alloc, tot.allocs,
	       tot.ats, tot.extent_ids, tot.extents, tot.at_fail, tot.frees, tot.busy_checks,
	       tot.enospc, tot.lookups, tot.rebinds_checked, tot.sleeps, tot.walks, tot.walked,
	       atomic_load(&hook_calls), atomic_load(&hook_refusals), s.stale, s.splits,
	       s.trie_nodes);
	fflush(stdout);
	if (!atomic_load(&violations)) {
		CHECK_MSG(tot.frees > 0 && (nreaders == 0 || tot.hits > 0),
			  "no churn or no hits: the test did nothing");
	}
	ps_ns_destroy(NS);

	/* ---- phase 2: alloc_at races on a fresh namespace ---- */
	if (!atomic_load(&violations)) {
		memset(owner, 0, cap * sizeof *owner);
		NS = make_ns();
		struct racer rc[RACERS + 1];
		memset(rc, 0, sizeof rc);
		test_barrier_init(&rbar, RACERS + 1);
		stress_spawn_workers(racer_main, rc, RACERS + 1, 1001);
		stress_run(secs * 0.2 + 0.1, &violations, NULL, NULL);
		stress_end(&violations);
		struct counts rt = {0};
		for (int i = 0; i <= RACERS; i++)
			stress_counts_add(&rt, &rc[i].c);
		test_barrier_destroy(&rbar);
		CHECK_EQ(ps_ns_stats(NS, &s), 0);
		if (!atomic_load(&violations)) {
			CHECK_EQ(s.allocs, rt.allocs + rt.ats + rt.extent_ids);
			CHECK_EQ(s.frees, rt.frees);
			CHECK_EQ(s.live, 0);
			CHECK_EQ(s.grace, 0);
			check_all_ids_free(NS, "phase 2");
		}
		printf("stress_ps_ns phase 2: %" PRIu64 " rounds, %" PRIu64
		       " contested ids (%" PRIu64 " won by ps_ns_alloc/extents), %" PRIu64
		       " alloc_at wins, %" PRIu64 " losses; stale %" PRIu64 "\n",
		       race_rounds, race_contested, race_alloc_won, rt.ats, rt.at_fail,
		       s.stale);
		ps_ns_destroy(NS);
	}
	/* ---- phase 3: extent claims that fail and give their ids back ---- */
	if (!atomic_load(&violations))
		phase3(secs * 0.15 + 0.1);
	if (tlb) {
		atomic_store(&flusher_stop, 1);
		test_join(flusher);
	}
	uint64_t v = atomic_load(&violations);
	free(owner);
	free(side_fe);
	free(slots);
	free(w);
	free(r);
	ps_destroy(PS);
	if (v) {
		fprintf(stderr, "stress_ps_ns: %" PRIu64 " violations\n", v);
		return 1;
	}
	printf("stress_ps_ns: ok\n");
	return 0;
}
