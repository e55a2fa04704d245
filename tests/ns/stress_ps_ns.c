/*
 * tests/ns/stress_ps_ns.c - the id-reuse hunt for <tsync/ps_ns.h> (ParSec (EuroSys 2016)
 * §3.6): no id re-bound and no object reused under a reader, no id handed out twice.
 *
 * Readers loop { ps_enter; look an id up; record the object, the id it stores and its
 * incarnation; park (spin, sched_yield, now and then a sleep inside the section); look the
 * id up again; ps_exit } and fail when, within one section, the id is bound to another
 * object (an id re-bound under a reader), the first object's id or incarnation changed (the
 * object was reused under a reader), a lookup returned an object not yet published (its
 * `pub` mark is still 0) or one holding another id. They also walk short ranges with
 * ps_ns_next (only published objects, in id order). Writers churn a table of slots:
 * ps_ns_alloc, ps_ns_alloc_at of random or recently used ids, extents of random size; each
 * object gets its id and a fresh incarnation, is published, and freed later by whichever
 * writer displaces or takes it (so frees are often remote). Every allocation claims its ids
 * in a per-id owner array with a CAS from 0 (an extent also claims its unbound tail), every
 * free releases them with a CAS back: a failed CAS is an id handed out twice, or extents
 * that overlap each other or single ids. A free inside the writer's own section is followed
 * by ps_ns_alloc_at of the same id, which must say EBUSY (EEXIST is allowed for an id of an
 * extent that is still out).
 * End: after everything is freed and drained, the counters match what the threads did
 * (allocs, frees, extents; live and grace 0), and in spaces up to 2^16 ids every id can
 * be allocated again (ids cached by exited threads or split extents are not lost).
 * Arguments, the tlb hook and the duration: stress_ps_ns.h.
 */
#include "stress_ps_ns.h"

static _Atomic uint64_t inc_counter; /* incarnations and extent tags handed out */
static _Atomic(struct sobj *) *slots;
static size_t nslots;
#define HINTS 1024u
static _Atomic uint64_t hint[HINTS];
static _Atomic uint64_t hint_pos;

/* Phase 1 did what it is for: some id was freed, some reader lookup found an object. */
static _Atomic bool p1_freed, p1_hit;

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
		violation("id %" PRIu64 " handed out while held (holder tag %" PRIu64 ")%s", id, z,
			  e ? " (by an extent)" : "");
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
			  ")",
			  id, l, (void *)o, inc);
	uint64_t expect = inc;
	if (!atomic_compare_exchange_strong(&owner[id], &expect, 0))
		violation("id %" PRIu64 " (inc %" PRIu64 ") was taken over by %" PRIu64
			  " while bound",
			  id, inc, expect);
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
			  " or outside the space",
			  n, base, span);
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
						  "after its free",
						  base + j);
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
						  " (start %" PRIu64 ")",
						  last, id, start);
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
						  ") was reused inside the section",
						  sid[i]);
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
				violation("id %" PRIu64
					  " re-bound inside a section: %p (inc %" PRIu64
					  ") then %p (inc %" PRIu64 ")",
					  id, (void *)o1, inc1, (void *)o2, o2->inc);
			if (o1->id != id || o1->inc != inc1)
				violation("the object of id %" PRIu64 " (inc %" PRIu64
					  ") was reused inside a section: now id %" PRIu64
					  " inc %" PRIu64,
					  id, inc1, o1->id, o1->inc);
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
				  "(frees %" PRIu64 ", reclaimed %" PRIu64 ", refusals %" PRIu64
				  ")",
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

int main(int argc, char **argv)
{
	pthread_t flusher;
	double secs = ns_stress_begin(argc, argv, &flusher);
	nslots = cap / 4 < 4096 ? (size_t)(cap / 4) : 4096;
	slots = calloc(nslots, sizeof *slots);
	CHECK(slots != NULL);
	NS = make_ns();

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
	       " checked EBUSY in-section), %" PRIu64 " ENOSPC; readers %" PRIu64
	       " lookups, %" PRIu64 " hits re-checked, %" PRIu64 " sleeps in sections, %" PRIu64
	       " walks (%" PRIu64 " objects); hook %" PRIu64 " calls %" PRIu64
	       " refusals; stale %" PRIu64 " splits %" PRIu64 " trie nodes %" PRIu64 "\n",
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
	free(slots);
	free(w);
	free(r);
	return ns_stress_end(flusher);
}
