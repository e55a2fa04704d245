/*
 * tests/ps_mem/test_ps_mem_policy_alg1.c - Prudence (ASPLOS 2016)'s policies as its
 * Algorithm 1 states them (issue 27): the slab a refill takes, the merge into a full cache
 * stopping, the pre-movement of a thread's own and the pool's slabs, the pre-flush a free
 * schedules.
 */
#include "ps_mem_test.h"

/* ---- Prudence's policies as Algorithm 1 states them (issue 27) ----------------------- */

/* A ps_mem of 100-byte objects in 4096-byte slabs, a one-object cache (a refill takes 1,
 * the latent cache holds 1) and the given policies. */
static struct ps_mem *one_cache_mem(struct ps *ps, unsigned prudence)
{
	struct ps_mem_config c = small_cfg();
	c.cache_size = 1;
	c.prudence = prudence;
	struct ps_mem *m = ps_mem_create(ps, 100, &c);
	CHECK(m != NULL);
	return m;
}

/* Slabs built by one thread (build_slabs), each with a role and the objects it keeps
 * allocated (kept[r][0..nkept[r]-1]); the rest of each slab is free. */
#define ROLES 3
struct slabs_built {
	struct ps_mem *m;
	unsigned nroles;
	unsigned keep[ROLES]; /* objects role r keeps allocated */
	void **kept[ROLES];
	uintptr_t slab[ROLES];
};

/*
 * In the calling thread (one_cache_mem, nothing allocated yet): fill nroles fresh slabs
 * (a refill takes one object, from the fullest slab: they fill one by one), keep keep[r]
 * objects of the r-th, and free the others with ps_free_now, role 0's first: each flush
 * (of the one cached object) puts its slab at the head of the thread's partly free list,
 * so the last role's slab ends at the head there (and, once the thread exits, the first
 * role's at the head of the pool's). The last object freed stays in the cache: it is
 * allocated again and kept as its slab's last kept object (keep[last] counts it).
 */
static void build_slabs(struct slabs_built *b)
{
	unsigned n = ps_mem_slab_objects(b->m), total = b->nroles * n;
	void **p = calloc(total, sizeof(void *));
	CHECK(p != NULL);
	for (unsigned i = 0; i < total; i++)
		CHECK((p[i] = ps_alloc(b->m)) != NULL);
	unsigned nslab = 0, got[ROLES] = {0};
	for (unsigned i = 0; i < total; i++) {
		unsigned r = 0;
		while (r < nslab && b->slab[r] != slab_of(p[i]))
			r++;
		if (r == nslab) {
			CHECK_LT(nslab, b->nroles);
			b->slab[nslab++] = slab_of(p[i]);
		}
		got[r]++;
	}
	for (unsigned r = 0; r < b->nroles; r++) {
		CHECK_EQ(got[r], n); /* each slab filled whole */
		b->kept[r] = calloc(b->keep[r], sizeof(void *));
		CHECK(b->kept[r] != NULL);
	}
	unsigned last = b->nroles - 1, nk[ROLES] = {0};
	for (unsigned r = 0; r < b->nroles; r++)
		for (unsigned i = 0; i < total; i++) {
			if (slab_of(p[i]) != b->slab[r])
				continue;
			/* the last role keeps one less here: the object left in the cache */
			if (nk[r] < b->keep[r] - (r == last))
				b->kept[r][nk[r]++] = p[i];
			else
				ps_free_now(b->m, p[i]);
		}
	void *again = ps_alloc(b->m); /* the cache's one object: the last role's */
	CHECK(again != NULL && slab_of(again) == b->slab[last]);
	b->kept[last][nk[last]++] = again;
	CHECK_EQ(mstats(b->m).cached, 0);
	free(p);
}

static void *build_slabs_and_exit(void *arg)
{
	CHECK_EQ(tsync_thread_register(), 0);
	build_slabs(arg);
	CHECK_EQ(tsync_thread_unregister(), 0); /* its slabs go to the pool */
	return NULL;
}

/* Free every kept object (deferred), reclaim and destroy. */
static void slabs_built_free(struct slabs_built *b)
{
	for (unsigned r = 0; r < b->nroles; r++) {
		for (unsigned i = 0; i < b->keep[r]; i++)
			if (b->kept[r][i] != NULL)
				ps_free(b->m, b->kept[r][i]);
		free(b->kept[r]);
	}
	reclaim_all(b->m);
	CHECK_EQ(mstats(b->m).in_use, 0);
	ps_mem_destroy(b->m);
}

/* Inside our section: allocate once (a refill: our cache is empty), leave the section,
 * free everything (slabs_built_free) and return the role whose slab the refill took;
 * *premoves (if not NULL): ps_mem_stats.slab_premoves after the refill. */
static int refill_role(struct ps *ps, struct slabs_built *b, uint64_t *premoves)
{
	void *q = ps_alloc(b->m);
	CHECK(q != NULL);
	if (premoves)
		*premoves = mstats(b->m).slab_premoves;
	ps_exit(ps);
	int role = -1;
	for (unsigned r = 0; r < b->nroles; r++)
		if (b->slab[r] == slab_of(q))
			role = (int)r;
	CHECK_MSG(role >= 0, "the refill took a slab none of the %u built", b->nroles);
	ps_free(b->m, q);
	slabs_built_free(b);
	return role;
}

/*
 * Fragmentation-aware refill (Algorithm 1 lines 17-19, §4.2): slabs B (1 free object;
 * 14 of its n - 1 allocated ones then freed deferred into its latent slab: MOSTLY latent,
 * not all), A (2 free) and C (5 free). A refill must take A, the fullest slab not mostly
 * latent: B is fuller but mostly latent; C has more free objects. `pool`: the slabs
 * were built by a thread that exited (the pool's, with B at the head of its partly free
 * list); else by us (ours, with C at the head of our partly free list). Returns the role
 * the refill took (0: B, 1: A, 2: C).
 */
static int frag_pick(struct ps *ps, unsigned prudence, bool pool)
{
	struct ps_mem *m = one_cache_mem(ps, prudence);
	unsigned n = ps_mem_slab_objects(m);
	CHECK_GE(n, 16);
	struct slabs_built b = {m, 3, {n - 1, n - 2, n - 5}, {NULL}, {0}};
	if (pool) {
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, build_slabs_and_exit, &b), 0);
		CHECK_EQ(pthread_join(th, NULL), 0);
	} else {
		build_slabs(&b);
	}
	ps_enter(ps);             /* nothing freed below is reclaimed before the refill */
	ps_free(m, b.kept[2][0]); /* our latent cache: now full */
	b.kept[2][0] = NULL;
	for (int i = 0; i < 14; i++) { /* 14 of B's n - 1: most, not all */
		ps_free(m, b.kept[0][i]);
		b.kept[0][i] = NULL;
	}
	CHECK_EQ(mstats(m).latent_slab, 14);
	return refill_role(ps, &b, NULL);
}

static void test_frag_refill(struct ps *ps)
{
	const unsigned base = PS_MEM_PRUDENCE_LATENT_SLAB;
	const unsigned frag = base | PS_MEM_PRUDENCE_FRAG_REFILL;
	/* the fullest slab not mostly latent, the pool's and our own (B: fuller, mostly
	 * latent; C: emptier) */
	for (int pool = 0; pool < 2; pool++) {
		const char *whose = pool ? "the pool's" : "our own";
		int r = frag_pick(ps, frag, pool);
		CHECK_MSG(r == 1, "fragmentation-aware refill from %s slabs took %s", whose,
			  r == 0 ? "the mostly latent B" : "C, not the fullest");
		CHECK_MSG(frag_pick(ps, 0, pool) == 1, "default policies, %s slabs: not A", whose);
		CHECK_MSG(frag_pick(ps, base, pool) != 1,
			  "with the fragmentation-aware refill off, %s A was still taken", whose);
	}
}

/* The latent cache's merge stops at a full cache (Algorithm 1, lines 60-65): a full cache
 * and 4 latent-cache objects coming. With the latent-slab policy they go to their slabs
 * after their grace period, without a flush; the cache keeps its 4. */
static void test_merge_stop(struct ps *ps)
{
	void *p[8];
	for (int on = 0; on < 2; on++) {
		struct ps_mem *m =
			prudent_mem(ps, on ? PS_MEM_PRUDENCE_LATENT_SLAB : PS_MEM_PRUDENCE_NONE);
		full_cache_in_section(ps, m, p);
		struct ps_mem_stats s = mstats(m);
		CHECK_EQ(s.latent_cache, 4);
		uint64_t f0 = s.cache_flushes;
		ps_exit(ps);
		reclaim_all(m);
		s = mstats(m);
		CHECK_MSG(on ? s.cache_flushes == f0 && s.cached == 4 : s.cache_flushes > f0,
			  "merge into a full cache, latent slab %s: %" PRIu64 " flushes, %" PRIu64
			  " cached",
			  on ? "on" : "off", s.cache_flushes - f0, s.cached);
		CHECK_EQ(s.pending, 0);
		CHECK_EQ(s.in_use, 0);
		ps_mem_destroy(m);
	}
}

/*
 * Pre-movement of a thread's own slab (Algorithm 1, lines 52-57): our slabs A (1 object
 * kept) and B (3 kept; at the head of our partly free list). B's 3 are freed deferred
 * into its latent slab - by us (`by_other` false: ps_free moves it at the third), or by
 * another thread (which may not touch our lists: our refill moves it). Then every
 * allocated object of B is latent; pre-movement hands B to the pool's draining list, so
 * our next refill takes A. Returns the role the refill took (0: A, 1: B); *premoves: the
 * slab pre-movements counted (ps_mem_stats.slab_premoves) before the refill and after.
 */
struct latent_free {
	struct ps_mem *m;
	void **p;
	int n;
};

static void free_deferred_all(void *arg)
{
	struct latent_free *l = arg;
	for (int i = 0; i < l->n; i++)
		ps_free(l->m, l->p[i]);
}

static int own_premove(struct ps *ps, unsigned prudence, bool by_other, uint64_t premoves[2])
{
	struct ps_mem *m = one_cache_mem(ps, prudence);
	struct slabs_built b = {m, 2, {2, 3}, {NULL}, {0}};
	build_slabs(&b);
	ps_enter(ps); /* nothing freed below is reclaimed before the refill */
	void *fill_then_b[4] = {b.kept[0][0], b.kept[1][0], b.kept[1][1], b.kept[1][2]};
	struct latent_free l = {m, fill_then_b, 4}; /* a latent cache's worth, then B's 3 */
	if (by_other) {
		struct holder h;
		holder_start(&h, ps);
		holder_do(&h, HOLD_REGISTER);
		CHECK_EQ(h.ret, 0);
		h.fn = free_deferred_all;
		h.arg = &l;
		holder_do(&h, HOLD_CALL);
		holder_stop(&h, HOLD_QUIT); /* its queue is orphaned, still pending */
	} else {
		free_deferred_all(&l);
	}
	b.kept[0][0] = b.kept[1][0] = b.kept[1][1] = b.kept[1][2] = NULL;
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.pending, 4);
	CHECK_GE(s.latent_slab, 3);
	premoves[0] = s.slab_premoves;
	return refill_role(ps, &b, &premoves[1]);
}

/* A thread fills one slab whole and exits: the slab is on the pool's full list. */
static void *fill_slab_and_exit(void *arg)
{
	struct latent_free *l = arg;
	CHECK_EQ(tsync_thread_register(), 0);
	for (int i = 0; i < l->n; i++)
		CHECK((l->p[i] = ps_alloc(l->m)) != NULL);
	CHECK_EQ(mstats(l->m).cached, 0);
	CHECK_EQ(tsync_thread_unregister(), 0);
	return NULL;
}

/* Pre-movement full -> partial (Algorithm 1, lines 54-55): the deferred free of an object
 * of a full pool slab into its latent slab moves the slab to the partial list at once.
 * Returns the slab pre-movements counted. */
static uint64_t pool_full_premove(struct ps *ps, unsigned prudence)
{
	struct ps_mem *m = one_cache_mem(ps, prudence);
	int n = (int)ps_mem_slab_objects(m);
	void **p = calloc((size_t)n, sizeof(void *));
	CHECK(p != NULL);
	struct latent_free l = {m, p, n};
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, fill_slab_and_exit, &l), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(mstats(m).slabs, 1);
	ps_enter(ps);
	ps_free(m, p[0]); /* our latent cache: now full */
	ps_free(m, p[1]); /* the slab's latent slab */
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.latent_slab, 1);
	ps_exit(ps);
	for (int i = 2; i < n; i++)
		ps_free(m, p[i]);
	reclaim_all(m);
	free(p);
	ps_mem_destroy(m);
	return s.slab_premoves;
}

static void test_premove(struct ps *ps)
{
	const unsigned base = PS_MEM_PRUDENCE_LATENT_SLAB;
	const unsigned premove = base | PS_MEM_PRUDENCE_PREMOVE;
	/* our own slab, made all latent by our free or another thread's */
	for (int other = 0; other < 2; other++) {
		const char *by = other ? "another thread's" : "our";
		uint64_t pm[2];
		int r = own_premove(ps, premove, other, pm);
		CHECK_MSG(r == 0,
			  "pre-movement left our all-latent slab B (%s frees) where the "
			  "refill took it",
			  by);
		/* moved at our free, or - never by the other thread - at our refill */
		CHECK_MSG(pm[0] == (other ? 0u : 1u) && pm[1] == 1,
			  "pre-movements (%s frees): %" PRIu64 " before the refill, %" PRIu64
			  " after",
			  by, pm[0], pm[1]);
		CHECK_EQ(own_premove(ps, base, other, pm), 1);
		CHECK_EQ(pm[1], 0);
	}
	/* a full pool slab made partial */
	CHECK_MSG(pool_full_premove(ps, premove) == 1, "a full pool slab with a latent object "
						       "was not pre-moved to the partial list");
	CHECK_EQ(pool_full_premove(ps, base), 0);
}

/* Pre-flush, scheduled by a free (Algorithm 1, lines 41-43) and run by the idle hook,
 * ps_mem_reclaim. Returns the latent-slab objects after a ps_mem_reclaim that no free
 * scheduled a pre-flush for, and (*after) after one a free did. */
static uint64_t preflush_scheduled(struct ps *ps, unsigned prudence, uint64_t *after)
{
	struct ps_mem_config c = small_cfg(); /* a refill without partial refill takes 2 */
	c.prudence = prudence;
	struct ps_mem *m = ps_mem_create(ps, 100, &c);
	CHECK(m != NULL);
	void *p[8];
	alloc_n(m, p, 6); /* 3 refills of 2: the cache is empty */
	ps_enter(ps);
	for (int i = 0; i < 4; i++) /* latent cache 4, cache 0: no overflow foreseen */
		ps_free(m, p[i]);
	CHECK((p[6] = ps_alloc(m)) != NULL);
	struct ps_mem_stats s = mstats(m);
	/* the refill left an object in the cache: cache + latent cache = 5 > 4, but no
	 * free saw it */
	CHECK_MSG(s.cached == 1 && s.latent_cache == 4, "%" PRIu64 " cached, %" PRIu64 " latent",
		  s.cached, s.latent_cache);
	CHECK_EQ(ps_mem_reclaim(m), 0);
	uint64_t before = mstats(m).latent_slab;
	ps_free(m, p[4]); /* cache 1 + latent cache 5 > 4: a flush foreseen */
	CHECK_EQ(ps_mem_reclaim(m), 0);
	s = mstats(m);
	*after = s.latent_slab;
	if (*after)
		CHECK_MSG(s.cached + s.latent_cache <= c.cache_size,
			  "a pre-flush left %" PRIu64 " cached + %" PRIu64 " latent", s.cached,
			  s.latent_cache);
	ps_exit(ps);
	ps_free(m, p[5]);
	ps_free(m, p[6]);
	reclaim_all(m);
	ps_mem_destroy(m);
	return before;
}

/*
 * The pre-flush resumes at its cursor, and an untagged object merged in before the
 * cursor resets it. A holder thread frees 4 objects deferred (its latent cache) and
 * idles; we fill our cache (4 immediate frees) and free 4 deferred (a flush foreseen).
 * The first ps_mem_reclaim pre-flushes our 4 (the cursor ends at our last) and looks at
 * the holder once; a later one takes the idle holder's queue (steal_idle), whose objects
 * are older than ours and join our latent cache: they land before the cursor, and the
 * pre-flush must still find them. Returns the latent-slab objects after each of up to 4
 * ps_mem_reclaim calls (until all 8 are there).
 */
static uint64_t preflush_cursor(struct ps *ps, unsigned prudence)
{
	struct ps_mem *m = prudent_mem(ps, prudence);
	void *p[12];
	alloc_n(m, p, 12);
	ps_enter(ps); /* holds back every free below */
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_REGISTER);
	CHECK_EQ(h.ret, 0);
	struct latent_free l = {m, p, 4};
	h.fn = free_deferred_all;
	h.arg = &l;
	holder_do(&h, HOLD_CALL); /* stamped: 2 batches of stamp_batch = 2 */
	for (int i = 4; i < 8; i++)
		ps_free_now(m, p[i]);
	for (int i = 8; i < 12; i++)
		ps_free(m, p[i]);
	uint64_t lat = 0;
	for (int i = 0; i < 4 && lat < 8; i++) {
		ps_mem_reclaim(m);
		struct ps_mem_stats s = mstats(m);
		CHECK_EQ(s.pending, 8);
		lat = s.latent_slab;
	}
	ps_exit(ps);
	holder_stop(&h, HOLD_QUIT);
	reclaim_all(m);
	CHECK_EQ(mstats(m).latent_slab, 0);
	/* The cursor's object was reclaimed (it links a freelist or a cache now, or is out
	 * again): the next pre-flush walks what is queued now, from its head. */
	full_cache_in_section(ps, m, p);
	ps_mem_reclaim(m);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.pending, 4);
	CHECK_MSG(s.latent_slab == (lat ? 4u : 0u) && s.cached == 4,
		  "pre-flush after the cursor's object left: %" PRIu64
		  " latent-slab objects, %" PRIu64 " cached",
		  s.latent_slab, s.cached);
	ps_exit(ps);
	reclaim_all(m);
	s = mstats(m);
	CHECK_EQ(s.latent_slab, 0);
	CHECK_EQ(s.in_use, 0);
	ps_mem_destroy(m);
	return lat;
}

static void test_preflush(struct ps *ps)
{
	/* scheduled by a free, not by a refill */
	uint64_t after = 0;
	CHECK_MSG(preflush_scheduled(ps, PS_MEM_PRUDENCE_PREFLUSH, &after) == 0,
		  "pre-flush ran without a free scheduling it");
	CHECK_MSG(after > 0, "the pre-flush a free scheduled did not run");
	CHECK_EQ(preflush_scheduled(ps, PS_MEM_PRUDENCE_NONE, &after), 0);
	CHECK_EQ(after, 0);
	/* resumes at its cursor, restarted by a merge */
	uint64_t lat = preflush_cursor(ps, PS_MEM_PRUDENCE_PREFLUSH);
	CHECK_MSG(lat == 8,
		  "pre-flush after a merge: %" PRIu64 " of 8 latent-cache objects "
		  "moved",
		  lat);
	CHECK_EQ(preflush_cursor(ps, PS_MEM_PRUDENCE_NONE), 0);
}

static void test_algorithm1(struct ps *ps)
{
	test_frag_refill(ps);
	test_merge_stop(ps);
	test_premove(ps);
	test_preflush(ps);
}

PS_MEM_TEST_MAIN("policy alg1", test_algorithm1)
