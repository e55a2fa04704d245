/*
 * tests/ps_mem/test_ps_mem_policy.c - Prudence (ASPLOS 2016)'s policies (§4, struct
 * ps_mem_config.prudence), each on and off against the count or slab it must change:
 * partial refill, the latent cache, pre-flush, pre-movement and the fragmentation-aware
 * refill of Fig. 5.
 */
#include "ps_mem_test.h"

struct exit_free {
	struct ps_mem *m;
	void **p;
	int n;
};

static void *free_and_exit(void *arg)
{
	struct exit_free *e = arg;
	CHECK_EQ(tsync_thread_register(), 0);
	for (int i = 0; i < e->n; i++)
		ps_free(e->m, e->p[i]);
	CHECK_EQ(tsync_thread_unregister(), 0);
	return NULL;
}

/* Fig. 5 of Prudence (ASPLOS 2016): pool slabs A and B each hold 2 allocated objects
 * (keep[1] and keep[0]); both of B's are freed deferred (into its latent slab: main's
 * latent cache, 1 object, is full). The next refill must take A: with pre-movement B
 * moved to the draining list at those frees; with the fragmentation-aware refill B is
 * passed over. fig5_refill returns the slab the refill took: 0 for A, 1 for B. */
struct two_slabs {
	struct ps_mem *m;
	void *keep[2][2]; /* the two objects left allocated in A and in B */
};

static void *make_two_slabs(void *arg)
{
	struct two_slabs *t = arg;
	CHECK_EQ(tsync_thread_register(), 0);
	unsigned n = ps_mem_slab_objects(t->m);
	void **p = calloc(2 * n, sizeof(void *));
	CHECK(p != NULL);
	for (unsigned i = 0; i < 2 * n; i++)
		CHECK((p[i] = ps_alloc(t->m)) != NULL);
	uintptr_t a = slab_of(p[0]);
	unsigned kept[2] = {0, 0};
	for (unsigned i = 0; i < 2 * n; i++) {
		int s = slab_of(p[i]) == a ? 0 : 1;
		if (kept[s] < 2)
			t->keep[s][kept[s]++] = p[i];
		else
			ps_free_now(t->m, p[i]);
	}
	CHECK_EQ(kept[0], 2);
	CHECK_EQ(kept[1], 2);
	free(p);
	CHECK_EQ(tsync_thread_unregister(), 0); /* its slabs go to the pool */
	return NULL;
}

static int fig5_refill(struct ps *ps, unsigned prudence)
{
	struct ps_mem_config c = small_cfg();
	c.cache_size = 1; /* a refill takes 1; the latent cache holds 1 */
	c.prudence = prudence;
	struct two_slabs t = {ps_mem_create(ps, 100, &c), {{NULL}}};
	CHECK(t.m != NULL);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, make_two_slabs, &t), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	ps_enter(ps); /* nothing freed below is reclaimed before the refill */
	/* B is the slab the helper allocated from first: the one that ends at the head of
	 * the pool's partly free list (the thread's lists are handed over in order) */
	ps_free(t.m, t.keep[1][0]); /* main's latent cache: now full */
	ps_free(t.m, t.keep[0][0]); /* B's latent slab */
	ps_free(t.m, t.keep[0][1]);
	CHECK_EQ(mstats(t.m).latent_slab, 2);
	void *q = ps_alloc(t.m);
	CHECK(q != NULL);
	ps_exit(ps);
	int which = slab_of(q) == slab_of(t.keep[1][1])   ? 0
		    : slab_of(q) == slab_of(t.keep[0][0]) ? 1
							  : -1;
	CHECK_MSG(which >= 0, "the refill took neither pool slab");
	ps_free(t.m, q);
	ps_free(t.m, t.keep[1][1]);
	reclaim_all(t.m);
	ps_mem_destroy(t.m);
	return which;
}

static void test_prudence(struct ps *ps)
{
	/* Slab choice (Fig. 5): the latent slab B is refilled from only with both policies
	 * off (the pool's head slab; the construction makes that B). */
	const unsigned base = PS_MEM_PRUDENCE_LATENT_SLAB;
	CHECK_MSG(fig5_refill(ps, base) == 1,
		  "with pre-movement and the fragmentation-aware "
		  "refill off, the refill did not take the pool's first slab");
	CHECK_MSG(fig5_refill(ps, base | PS_MEM_PRUDENCE_PREMOVE) == 0,
		  "pre-movement left the latent slab where the refill took it");
	CHECK_MSG(fig5_refill(ps, base | PS_MEM_PRUDENCE_FRAG_REFILL) == 0,
		  "the fragmentation-aware refill took the latent slab");
	CHECK_EQ(fig5_refill(ps, 0), 0);

	void *p[16];
	for (int on = 0; on < 2; on++) {
		const char *pol = on ? "on" : "off";
		/* Latent cache bound (§4.1): 10 deferred frees inside our own section (which
		 * holds them back): 4 in the latent cache, 6 in latent slabs; afterwards the
		 * 6 go to their slabs, so the cache takes the 4 without a flush. */
		struct ps_mem *m =
			prudent_mem(ps, on ? PS_MEM_PRUDENCE_LATENT_SLAB : PS_MEM_PRUDENCE_NONE);
		alloc_n(m, p, 10);
		ps_enter(ps);
		for (int i = 0; i < 10; i++)
			ps_free(m, p[i]);
		struct ps_mem_stats s = mstats(m);
		CHECK_EQ(s.pending, 10);
		CHECK_MSG(s.latent_slab == (on ? 6u : 0u), "latent slab %s: %" PRIu64, pol,
			  s.latent_slab);
		CHECK_EQ(s.latent_cache, on ? 4 : 10);
		uint64_t f0 = s.cache_flushes;
		ps_exit(ps);
		reclaim_all(m);
		s = mstats(m);
		CHECK_EQ(s.latent_slab, 0);
		CHECK_EQ(s.latent_cache, 0);
		CHECK_MSG(on ? s.cache_flushes == f0 : s.cache_flushes > f0,
			  "latent slab %s: %" PRIu64 " flushes", pol, s.cache_flushes - f0);
		ps_mem_destroy(m);

		/* Partial refill (line 14): with 3 objects in the latent cache, a refill takes
		 * 4 - 3 = 1 (off: half a cache, 2). */
		m = prudent_mem(ps, on ? PS_MEM_PRUDENCE_PARTIAL_REFILL : PS_MEM_PRUDENCE_NONE);
		alloc_n(m, p, 4);
		ps_enter(ps);
		for (int i = 0; i < 3; i++)
			ps_free(m, p[i]);
		CHECK((p[4] = ps_alloc(m)) != NULL);
		s = mstats(m);
		CHECK_MSG(s.cache_refills == (on ? 2u : 3u) && s.cached == (on ? 0u : 1u),
			  "partial refill %s: %" PRIu64 " refills, %" PRIu64 " cached", pol,
			  s.cache_refills, s.cached);
		ps_exit(ps);
		ps_free(m, p[3]);
		ps_free(m, p[4]);
		reclaim_all(m);
		ps_mem_destroy(m);

		/* Latent-aware flush (§4.2): a full cache with 4 latent objects coming flushes
		 * room for all of them at once (off: half a cache, twice). */
		m = prudent_mem(ps, on ? PS_MEM_PRUDENCE_LATENT_FLUSH : PS_MEM_PRUDENCE_NONE);
		full_cache_in_section(ps, m, p);
		s = mstats(m);
		f0 = s.cache_flushes;
		ps_exit(ps);
		reclaim_all(m);
		s = mstats(m);
		CHECK_MSG(s.cache_flushes - f0 == (on ? 1u : 2u),
			  "latent flush %s: %" PRIu64 " flushes", pol, s.cache_flushes - f0);
		ps_mem_destroy(m);

		/* Pre-flush (lines 41-43): a full cache and 4 latent objects would overflow
		 * after the grace period; ps_mem_reclaim (idle time) moves them to their slabs
		 * now, so their arrival flushes nothing. */
		m = prudent_mem(ps, on ? PS_MEM_PRUDENCE_PREFLUSH : PS_MEM_PRUDENCE_NONE);
		full_cache_in_section(ps, m, p);
		CHECK_EQ(ps_mem_reclaim(m), 0); /* our own section holds them */
		s = mstats(m);
		CHECK_EQ(s.latent_slab, on ? 4 : 0);
		CHECK_EQ(s.latent_cache, on ? 0 : 4);
		f0 = s.cache_flushes;
		ps_exit(ps);
		reclaim_all(m);
		s = mstats(m);
		CHECK_MSG(on ? s.cache_flushes == f0 : s.cache_flushes > f0,
			  "pre-flush %s: %" PRIu64 " flushes", pol, s.cache_flushes - f0);
		CHECK_EQ(s.latent_slab, 0);
		ps_mem_destroy(m);
	}

	/* A thread that exits with latent objects hands them on: its queue's objects all go
	 * to their slabs (nothing waits on a latent cache that no thread owns), and the
	 * next allocation adopts and reclaims them. */
	struct ps_mem *m = prudent_mem(ps, 0);
	alloc_n(m, p, 16);
	ps_enter(ps); /* holds the exiting thread's frees back */
	struct exit_free e = {m, p, 16};
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, free_and_exit, &e), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	struct ps_mem_stats s = mstats(m);
	CHECK_EQ(s.pending, 16);
	CHECK_EQ(s.latent_slab, 16);
	CHECK_EQ(s.latent_cache, 0);
	ps_exit(ps);
	uint64_t dl = test_now_ns() + 5000000000ull;
	for (int i = 0;; i++) {
		uint64_t w = test_now_ns(); /* before the try: see wait_past */
		if (mstats(m).pending == 0)
			break;
		CHECK_MSG(w < dl, "an exited thread's latent objects were never reclaimed");
		void *q = ps_alloc(m); /* its slow path adopts the orphaned queue */
		CHECK(q != NULL);
		ps_free_now(m, q);
		ps_mem_reclaim(m);
		if (i > 64)
			test_sleep_ms(1);
	}
	s = mstats(m);
	CHECK_EQ(s.latent_slab, 0);
	CHECK_EQ(s.in_use, 0);
	ps_mem_destroy(m);
}

PS_MEM_TEST_MAIN("policy", test_prudence)
