/*
 * src/ps_mem_slab.c - ps_mem's slab layer (ParSec (EuroSys 2016) §3.4, with the remote
 * frees of RT-SMR (RTAS 2018) Appendix A): a thread's object cache <-> the slabs it owns
 * <-> the instance's slab pool (a mutex, slow path only) <-> the system (mmap/munmap).
 * How much a flush or refill moves, which pool slab a refill takes, and latent slabs
 * are Prudence's policies (ps_mem_policy.c). The layer map: ps_mem.c; structures,
 * ownership rules and the slab lists: ps_mem_types.h.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>

#include "ps_mem_types.h"
#include "ps_mem_slab.h"
#include "util.h"

/* ---- slabs from and to the system (pool mutex held) ------------------------------- */

static struct slab *slab_map(struct ps_mem *m)
{
	/* A power-of-two slab is aligned to its size (map twice the size and trim: a 2 MiB
	 * slab can then be one transparent huge page); any other page multiple is mapped
	 * as it is - objects find their slab through their header, never by masking. */
	if (m->max_slabs && m->slabs >= m->max_slabs) {
		errno = ENOSPC; /* at cfg->max_bytes: alloc_slow may wait */
		return NULL;
	}
	size_t sz = m->slab_size;
	bool pow2 = (sz & (sz - 1)) == 0;
	size_t len = pow2 ? 2 * sz : sz;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	char *base = pow2 ? (char *)tsync__round_up((uintptr_t)raw, sz) : raw;
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	if (base + sz < raw + len)
		munmap(base + sz, (size_t)(raw + len - (base + sz)));

	struct slab *s = (struct slab *)base;
	s->m = m;
	atomic_init(&s->owner, OWNER_POOL);
	s->nobj = m->nobj;
	s->nfree = m->nobj;
	atomic_init(&s->nlatent, 0);
	s->list = L_NONE;
	struct ps_mem_hdr *prev = NULL;
	for (unsigned i = m->nobj; i-- > 0;) {
		char *obj = base + m->first + (size_t)i * m->stride + m->hdr_area;
		struct ps_mem_hdr *h = HDR(obj);
		atomic_init(&h->free_tsc, 0);
		atomic_init(&h->slab, (uintptr_t)s);
		h->next = prev;
		prev = h;
	}
	s->free = prev;
	s->all_prev = NULL;
	s->all_next = m->all;
	if (m->all)
		m->all->all_prev = s;
	m->all = s;
	m->slabs++;
	m->grows++;
	if (m->slabs > m->peak_slabs)
		m->peak_slabs = m->slabs;
	return s;
}

/*
 * Detach up to `max` fully free slabs beyond slabs_kept from the pool (pool mutex held)
 * and return them chained through `next`; slabs_unmap() gives them back to the system
 * after the mutex is released, so munmap and its TLB shootdowns stall no other thread.
 */
static struct slab *pool_trim(struct ps_mem *m, unsigned max)
{
	struct slab *out = NULL;
	for (unsigned i = 0; i < max && m->pool_empty.n > m->slabs_kept; i++) {
		struct slab *s = m->pool_empty.head;
		if (s->nfree != s->nobj) /* the invariant that keeps queued objects mapped */
			tsync__fatal("ps_mem: slab %p on the empty list with %u of %u free",
				     (void *)s, s->nfree, s->nobj);
		list_del(m, NULL, s);
		if (s->all_prev)
			s->all_prev->all_next = s->all_next;
		else
			m->all = s->all_next;
		if (s->all_next)
			s->all_next->all_prev = s->all_prev;
		m->slabs--;
		m->shrinks++;
		s->next = out;
		out = s;
	}
	atomic_store_explicit(&m->pool_excess, m->pool_empty.n > m->slabs_kept,
			      memory_order_relaxed);
	return out;
}

static void slabs_unmap(struct ps_mem *m, struct slab *s)
{
	while (s) {
		struct slab *next = s->next;
		munmap(s, m->slab_size);
		s = next;
	}
}

/* A slab went to the pool's empty list (pool mutex held). It is not unmapped here: a
 * burst of releases (say, the end of a long section that pinned thousands of slabs)
 * would put thousands of munmap calls into one ps_alloc or ps_free. */
static void pool_note_empty(struct ps_mem *m)
{
	if (m->pool_empty.n > m->slabs_kept)
		atomic_store_explicit(&m->pool_excess, true, memory_order_relaxed);
}

/*
 * Return at most trim_max = 4 x cache_size (at least 16) excess empty slabs to the
 * system. Called once per allocator slow path (refill, flush, explicit reclaim, and a
 * reclamation that sent objects to their slabs: a merge past a full cache). A flush
 * or a refill moves cache_size / 2 objects, so it can empty at most that many slabs: in
 * steady state every empty slab goes back in the call that emptied it, as before (the
 * factor 8 of headroom covers slabs emptied by other threads' frees into pool-owned
 * slabs); after a burst (a drain of thousands of remote frees), the pool shrinks back to
 * slabs_kept at a bounded cost per call (256 munmaps, a few ms, with the defaults), and
 * meanwhile serves refills first.
 */
void ps_mem__pool_shrink(struct ps_mem *m)
{
	if (!atomic_load_explicit(&m->pool_excess, memory_order_relaxed))
		return;
	pthread_mutex_lock(&m->pool_lock);
	struct slab *s = pool_trim(m, m->trim_max);
	pthread_mutex_unlock(&m->pool_lock);
	slabs_unmap(m, s);
}

/* ---- returning objects to slabs ---------------------------------------------------- */

/* Give an owned slab (in one of pt's lists) to the pool: its free objects become
 * available to every thread's refill. */
static void slab_to_pool(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s)
{
	pthread_mutex_lock(&m->pool_lock);
	slab_give_locked(m, pt, s);
	pool_note_empty(m);
	pthread_mutex_unlock(&m->pool_lock);
}

/*
 * A slab owned by `me` got objects back: fix its list. A thread keeps at most one fully
 * free slab and PS_MEM_PARTIAL_KEPT partially free ones of its own; a slab beyond that
 * goes to the pool, where any thread's refill takes it before mapping a new one.
 * Without the cap, free memory strands: a thread whose allocations are all served by
 * its own reclaimed garbage never refills from its slabs, while other threads' frees
 * (evictions, remote flushes) keep filling them - a three-thread cache storm held 6,000
 * free objects in one thread's 42 partial slabs while the others mapped new ones.
 */
static void own_slab_gained(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s, unsigned was)
{
	if (was == 0) {
		list_del(m, pt, s);
		list_add(m, pt, s, L_OWN_PARTIAL);
		if (pt->partial.n > PS_MEM_PARTIAL_KEPT && s->nfree < s->nobj) {
			slab_to_pool(m, pt, s);
			return;
		}
	}
	if (s->nfree == s->nobj && was != s->nobj) {
		if (pt->nempty == 0) {
			pt->nempty = 1;
			return;
		}
		slab_to_pool(m, pt, s);
	}
}

/* Return one free object to its slab, wherever that slab is owned. */
void ps_mem__free_to_slab(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, struct ps_mem_hdr *h)
{
	struct slab *s = hdr_slab(h);
	for (;;) {
		int o = atomic_load_explicit(&s->owner, memory_order_acquire);
		if (o == (int)me) {
			unsigned was = s->nfree;
			h->next = s->free;
			s->free = h;
			s->nfree++;
			own_slab_gained(m, pt, s, was);
			return;
		}
		if (o == OWNER_POOL) {
			pthread_mutex_lock(&m->pool_lock);
			if (atomic_load_explicit(&s->owner, memory_order_relaxed) != OWNER_POOL) {
				pthread_mutex_unlock(&m->pool_lock); /* adopted meanwhile: retry */
				continue;
			}
			list_del(m, NULL, s);
			h->next = s->free;
			s->free = h;
			s->nfree++;
			list_add(m, NULL, s, pool_list_for(m, s));
			m->pool_remote++;
			pool_note_empty(m);
			pthread_mutex_unlock(&m->pool_lock);
			return;
		}
		/* Remote free (RT-SMR (RTAS 2018) App. A): onto the owner's list for our line. */
		struct ps_mem_pt *opt = pt_if_exists(m, (unsigned)o);
		_Atomic(struct ps_mem_hdr *) *head = &opt->remote[me % PS_MEM_REMOTE_LINES].head;
		struct ps_mem_hdr *old = atomic_load_explicit(head, memory_order_relaxed);
		do
			h->next = old;
		while (!atomic_compare_exchange_weak_explicit(head, &old, h, memory_order_release,
							      memory_order_relaxed));
		cnt_add(&pt->c_remote, 1);
		return;
	}
}

/* An object back from its latent slab (Prudence (ASPLOS 2016) §4.1) after its grace
 * period: uncounted there, then freed to the slab as any reclaimed object. */
void ps_mem__latent_slab_take(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
			      struct ps_mem_hdr *h)
{
	struct slab *s = hdr_slab(h);
	atomic_store_explicit(&h->slab, (uintptr_t)s, memory_order_relaxed);
	/* uncounted before it is back: a slab never looks empty with an object queued */
	atomic_fetch_sub_explicit(&s->nlatent, 1, memory_order_relaxed);
	ps_mem__free_to_slab(m, me, pt, h);
}

/* Empty our remote lists: one exchange per line. */
void ps_mem__drain_remote(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt)
{
	for (unsigned i = 0; i < PS_MEM_REMOTE_LINES; i++) {
		if (atomic_load_explicit(&pt->remote[i].head, memory_order_relaxed) == NULL)
			continue;
		struct ps_mem_hdr *h =
			atomic_exchange_explicit(&pt->remote[i].head, NULL, memory_order_acquire);
		while (h) {
			struct ps_mem_hdr *next = h->next;
			ps_mem__free_to_slab(m, me, pt, h);
			h = next;
		}
	}
}

/* Flush n objects from the cache back to their slabs. */
void ps_mem__cache_flush(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, unsigned n)
{
	if (n == 0)
		return;
	for (unsigned i = 0; i < n && pt->cache; i++) {
		struct ps_mem_hdr *h = pt->cache;
		pt->cache = h->next;
		pt->ncache--;
		ps_mem__free_to_slab(m, me, pt, h);
	}
	cnt_add(&pt->c_flushes, 1);
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	ps_mem__pool_shrink(m);
}

/* ---- refill ------------------------------------------------------------------------- */

/* Take up to `want` objects from our partial slabs, the slab each time by
 * ps_mem__pick_slab (latent_ok as there). Returns the count. */
static unsigned take_from_own(struct ps_mem *m, struct ps_mem_pt *pt, unsigned want, bool latent_ok)
{
	unsigned got = 0;
	struct slab *s;
	while (got < want && (s = ps_mem__pick_slab(m, &pt->partial, latent_ok)) != NULL) {
		if (s->nfree == s->nobj && pt->nempty)
			pt->nempty--;
		while (got < want && s->free) {
			struct ps_mem_hdr *h = s->free;
			s->free = h->next;
			s->nfree--;
			h->next = pt->cache;
			pt->cache = h;
			pt->ncache++;
			got++;
		}
		if (s->nfree == 0) {
			if (s->nobj == 1) {
				/* A one-object slab (a large object) goes back to the pool once
				 * handed out, and its object, once reclaimed, skips the object
				 * cache (cache_push): it then empties in the pool, where every
				 * thread's refill finds it and pool_shrink can unmap it, instead
				 * of waiting on this thread's remote list, or in the reclaiming
				 * thread's cache, until that thread allocates that size again. */
				slab_to_pool(m, pt, s);
				continue;
			}
			list_del(m, pt, s);
			list_add(m, pt, s, L_OWN_FULL);
		}
	}
	return got;
}

/*
 * Get a slab from the pool or the system, in the order of Prudence (ASPLOS 2016)
 * Algorithm 1 lines 17-22 and §4.2: a partly free slab (the fullest that is not mostly
 * latent, with the fragmentation-aware policy), else an empty one (keeps partly free
 * ones from stranding); then - only when `grow` - a mostly latent partly free one, a
 * draining one (pre-movement), and last a new one. Returns 0, or -1 (errno: ENOSPC at
 * max_bytes, else from mmap; with !grow, nothing fitted).
 */
static int acquire_slab(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, bool grow)
{
	pthread_mutex_lock(&m->pool_lock);
	struct slab *s = ps_mem__pick_slab(m, &m->pool_partial, false);
	if (s == NULL)
		s = m->pool_empty.head;
	if (s == NULL && grow && PRUDENT(m, PS_MEM_PRUDENCE_FRAG_REFILL))
		s = ps_mem__pick_slab(m, &m->pool_partial, true);
	if (s == NULL && grow)
		s = ps_mem__pick_slab(m, &m->pool_draining, true);
	if (s)
		list_del(m, NULL, s);
	else if (grow)
		s = slab_map(m);
	if (s)
		atomic_store_explicit(&s->owner, (int)me, memory_order_relaxed);
	pthread_mutex_unlock(&m->pool_lock);
	if (s == NULL)
		return -1;
	if (s->nfree == s->nobj)
		pt->nempty++;
	list_add(m, pt, s, L_OWN_PARTIAL);
	return 0;
}

/*
 * The refill, slab by slab: our partly free slabs, then the pool's, then fresh memory.
 * With the fragmentation-aware policy a mostly latent slab - ours or the pool's - is
 * taken only before growing (Prudence (ASPLOS 2016) §4.2): ours that fit, then the
 * pool's that fit (partly free or empty), then our mostly latent ones, then the pool's
 * mostly latent and draining ones, then a new slab. With pre-movement, our slabs that
 * other threads' frees left all latent go to the pool first (ps_mem__premove_own).
 */
unsigned ps_mem__refill(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt)
{
	if (PRUDENT(m, PS_MEM_PRUDENCE_PREMOVE))
		ps_mem__premove_own(m, pt);
	unsigned want = ps_mem__refill_want(m, pt), got = take_from_own(m, pt, want, false);
	/* nothing quiesced and no free object: fresh memory, never wait (ParSec (EuroSys 2016)
	 * §3.2) */
	if (got == 0) {
		/* with only mostly latent slabs of our own, the pool's that fit come first */
		if (pt->partial.head != NULL && acquire_slab(m, me, pt, false) == 0)
			got = take_from_own(m, pt, want, false);
		if (got == 0)
			got = take_from_own(m, pt, want, true);
	}
	if (got == 0) {
		if (acquire_slab(m, me, pt, true) != 0) {
			if (errno != ENOSPC)
				errno = ENOMEM;
			return 0;
		}
		got = take_from_own(m, pt, want, true);
	}
	if (got)
		cnt_add(&pt->c_refills, 1);
	return got;
}

void ps_mem__slabs_release(struct ps_mem *m, struct ps_mem_pt *pt)
{
	pthread_mutex_lock(&m->pool_lock);
	struct slab_list *lists[2] = {&pt->partial, &pt->full};
	for (int i = 0; i < 2; i++) {
		while (lists[i]->head)
			slab_give_locked(m, pt, lists[i]->head);
	}
	pt->nempty = 0;
	struct slab *excess = pool_trim(m, UINT_MAX); /* not a hot path: all of it */
	pthread_mutex_unlock(&m->pool_lock);
	slabs_unmap(m, excess);
}

void ps_mem__slabs_destroy(struct ps_mem *m)
{
	while (m->all) {
		struct slab *s = m->all;
		m->all = s->all_next;
		munmap(s, m->slab_size);
	}
}
