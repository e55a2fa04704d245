/*
 * src/ps_mem.c - the SMR-integrated slab allocator (seed 000 §3.4, seed 004 App. A).
 *
 * Layers (include/tsync/ps_mem.h):
 *   quiescence queue --reclaim--> object cache --flush/refill--> owned slabs
 *   owned slabs <--> slab pool (mutex) <--> system (mmap/munmap)
 * Ownership rules (docs/design.md §3):
 *  - a thread's queue, cache and owned-slab lists are touched only by that thread (and by
 *    the registry hook that runs in it when it exits);
 *  - a slab's freelist is touched only by its owner, or under the pool mutex while the
 *    pool owns it; ownership changes only under the pool mutex;
 *  - anyone may push onto an owner's remote lists (CAS); only the owner empties them.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tsync/ps_mem.h>
#include <tsync/ps_lock.h>
#include "internal.h"

enum slab_list_id { L_NONE, L_OWN_PARTIAL, L_OWN_FULL, L_POOL_PARTIAL, L_POOL_EMPTY, L_POOL_FULL };
#define OWNER_POOL (-1)
/* Partially free slabs a thread keeps before it gives more to the pool (own_slab_gained). */
#define PS_MEM_PARTIAL_KEPT 4u

struct slab {
	struct ps_mem *m;
	_Atomic int owner;          /* thread id, or OWNER_POOL */
	struct ps_mem_hdr *free;    /* objects free in this slab */
	unsigned nfree, nobj;
	enum slab_list_id list;
	struct slab *prev, *next;   /* in the list `list` */
	struct slab *all_prev, *all_next; /* every slab of m (pool mutex) */
};

struct slab_list {
	struct slab *head;
	size_t n;
};

/* Per-thread state, per ps_mem. remote[] heads are written by other threads, each on its
 * own line; the rest is written only by the owning thread (counters are atomics only so
 * that ps_mem_stats may read them while it runs). */
struct ps_mem_pt {
	struct {
		_Alignas(TSYNC_CACHE_LINE) _Atomic(struct ps_mem_hdr *) head;
	} remote[PS_MEM_REMOTE_LINES];
	_Alignas(TSYNC_CACHE_LINE) struct ps_mem_hdr *cache; /* object cache (LIFO) */
	unsigned ncache;
	unsigned nempty;                   /* owned slabs with every object free */
	struct ps_mem_hdr *qhead, *qtail;  /* quiescence queue, by free time */
	struct ps_mem_hdr *unstamped;      /* first queued object not yet stamped (a suffix) */
	unsigned nunstamped;
	uint64_t last_stamp;               /* the newest free time stamp() wrote */
	struct slab_list partial, full;    /* owned slabs with / without free objects */
	uint64_t last_reclaim;             /* when the schedule last let us reclaim */
	_Atomic uint64_t c_cached, c_pending, c_allocs, c_frees, c_reclaimed, c_refills,
	    c_flushes, c_remote, c_max_wait;
	/* Stall summary of the last reclamation attempt (ps_stall_report): blocker id + 1
	 * (0: none), its enter time, objects it left queued; objects the hook held back. */
	_Atomic uint64_t c_blocker1, c_blocker_enter, c_blocked, c_hook_blocked, c_refused;
	_Atomic uint64_t c_head_tsc;       /* free time of the queue head, 0 if unknown */
};
struct ps_mem_pt_chunk {
	struct ps_mem_pt pt[TSYNC__CHUNK];
};

struct orphan {
	struct ps_mem_hdr *head, *tail;
	uint64_t n;
	struct orphan *next;
};

struct ps_mem {
	struct ps *ps;
	size_t obj_size, align, hdr_area, stride, first, slab_size;
	unsigned nobj, cache_size, batch, slabs_kept, stamp_batch;
	unsigned trim_max; /* excess empty slabs unmapped per slow path: 4 x cache_size (>= 16) */
	unsigned nchunks;
	bool rt;          /* ps is RT or TEMPORAL: collect all quiesced (seed 004 Fig. 8) */
	bool exact;       /* PS_MEM_ACCOUNT_EXACT */
	bool ext;         /* any of rt, exact, period, hooks: the paths of reclaim_ext */
	uint64_t period;  /* reclamation period q in ticks, 0: every free */
	ps_mem_grace_fn grace_fn;
	void *grace_arg;
	uint64_t threshold;
	ps_mem_pending_fn pending_fn;
	void *pending_arg;
	ps_mem_reclaim_fn reclaim_fn;
	void *reclaim_arg;
	struct ps_mem_pt_chunk *_Atomic *chunks;
	struct tsync__client client;

	/* Set when the pool holds more than slabs_kept empty slabs; pool_shrink() then
	 * returns a few of them to the system. */
	_Atomic bool pool_excess;
	pthread_mutex_t pool_lock; /* protects everything below */
	struct slab_list pool_partial, pool_empty, pool_full;
	struct slab *all;
	uint64_t slabs, peak_slabs, grows, shrinks, pool_remote;
	struct orphan *orphans;
	_Atomic uint64_t orphan_pending;

	/* EXACT accounting: live in the low 32 bits, pending in the high 32 bits, so one
	 * atomic add moves an object between the two states, and peaks over it. */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t acct;
	_Atomic uint64_t peak_live, peak_pending, peak_foot;
};

#define ACCT_LIVE(v) ((v) & 0xffffffffu)
#define ACCT_PENDING(v) ((v) >> 32)
#define ACCT_ALLOC 1u                      /* live + 1 */
#define ACCT_FREE 0xffffffffu              /* live - 1, pending + 1 (the carry) */
#define ACCT_RECLAIM(n) ((uint64_t)(n) << 32) /* subtracted: pending - n */

static inline void peak_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (v > cur && !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

/* Apply one accounting event; returns the word after it. */
static uint64_t acct_add(struct ps_mem *m, uint64_t delta, int sub)
{
	uint64_t v = sub ? atomic_fetch_sub_explicit(&m->acct, delta, memory_order_relaxed) - delta
			 : atomic_fetch_add_explicit(&m->acct, delta, memory_order_relaxed) + delta;
	if (!sub) {
		peak_max(&m->peak_live, ACCT_LIVE(v));
		peak_max(&m->peak_pending, ACCT_PENDING(v));
		peak_max(&m->peak_foot, ACCT_LIVE(v) + ACCT_PENDING(v));
	}
	return v;
}

static inline void cnt_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}
static inline void cnt_sub(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) - v,
			      memory_order_relaxed);
}

/* ---- slab lists ------------------------------------------------------------------ */

static struct slab_list *list_of(struct ps_mem *m, struct ps_mem_pt *pt, enum slab_list_id id)
{
	switch (id) {
	case L_OWN_PARTIAL: return &pt->partial;
	case L_OWN_FULL: return &pt->full;
	case L_POOL_PARTIAL: return &m->pool_partial;
	case L_POOL_EMPTY: return &m->pool_empty;
	case L_POOL_FULL: return &m->pool_full;
	default: return NULL;
	}
}

static void list_del(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s)
{
	struct slab_list *l = list_of(m, pt, s->list);
	if (l == NULL)
		return;
	if (s->prev)
		s->prev->next = s->next;
	else
		l->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	s->list = L_NONE;
	l->n--;
}

static void list_add(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s, enum slab_list_id id)
{
	struct slab_list *l = list_of(m, pt, id);
	s->prev = NULL;
	s->next = l->head;
	if (l->head)
		l->head->prev = s;
	l->head = s;
	l->n++;
	s->list = id;
}

static enum slab_list_id pool_list_for(const struct slab *s)
{
	if (s->nfree == s->nobj)
		return L_POOL_EMPTY;
	return s->nfree ? L_POOL_PARTIAL : L_POOL_FULL;
}

/* ---- slabs from and to the system (pool mutex held) ------------------------------- */

static struct slab *slab_map(struct ps_mem *m)
{
	/* A power-of-two slab is aligned to its size (map twice the size and trim: a 2 MiB
	 * slab can then be one transparent huge page); any other page multiple is mapped
	 * as it is - objects find their slab through their header, never by masking. */
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
	s->list = L_NONE;
	struct ps_mem_hdr *prev = NULL;
	for (unsigned i = m->nobj; i-- > 0;) {
		char *obj = base + m->first + (size_t)i * m->stride + m->hdr_area;
		struct ps_mem_hdr *h = HDR(obj);
		atomic_init(&h->free_tsc, 0);
		h->slab = s;
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
 * system. Called once per allocator slow path (refill, flush, explicit reclaim). A flush
 * or a refill moves cache_size / 2 objects, so it can empty at most that many slabs: in
 * steady state every empty slab goes back in the call that emptied it, as before (the
 * factor 8 of headroom covers slabs emptied by other threads' frees into pool-owned
 * slabs); after a burst (a drain of thousands of remote frees), the pool shrinks back to
 * slabs_kept at a bounded cost per call (256 munmaps, a few ms, with the defaults), and
 * meanwhile serves refills first.
 */
static void pool_shrink(struct ps_mem *m)
{
	if (!atomic_load_explicit(&m->pool_excess, memory_order_relaxed))
		return;
	pthread_mutex_lock(&m->pool_lock);
	struct slab *s = pool_trim(m, m->trim_max);
	pthread_mutex_unlock(&m->pool_lock);
	slabs_unmap(m, s);
}

/* ---- per-thread state ------------------------------------------------------------- */

static struct ps_mem_pt *pt_get(struct ps_mem *m, unsigned tid)
{
	struct ps_mem_pt_chunk *c = atomic_load_explicit(&m->chunks[tid >> TSYNC__CHUNK_SHIFT],
							 memory_order_acquire);
	if (TSYNC_UNLIKELY(c == NULL)) {
		c = tsync__chunk_get((void *_Atomic *)m->chunks, tid >> TSYNC__CHUNK_SHIFT,
				     sizeof(struct ps_mem_pt_chunk), NULL, NULL);
		if (c == NULL)
			return NULL;
	}
	return &c->pt[tid & (TSYNC__CHUNK - 1)];
}

static struct ps_mem_pt *pt_if_exists(struct ps_mem *m, unsigned tid)
{
	struct ps_mem_pt_chunk *c = atomic_load_explicit(&m->chunks[tid >> TSYNC__CHUNK_SHIFT],
							 memory_order_acquire);
	return c ? &c->pt[tid & (TSYNC__CHUNK - 1)] : NULL;
}

/* ---- returning objects to slabs ---------------------------------------------------- */

/* Give an owned slab (in one of pt's lists) to the pool: its free objects become
 * available to every thread's refill. */
static void slab_to_pool(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s)
{
	pthread_mutex_lock(&m->pool_lock);
	list_del(m, pt, s);
	atomic_store_explicit(&s->owner, OWNER_POOL, memory_order_release);
	list_add(m, NULL, s, pool_list_for(s));
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
static void free_to_slab(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, struct ps_mem_hdr *h)
{
	struct slab *s = h->slab;
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
			list_add(m, NULL, s, pool_list_for(s));
			m->pool_remote++;
			pool_note_empty(m);
			pthread_mutex_unlock(&m->pool_lock);
			return;
		}
		/* Remote free (seed 004 App. A): onto the owner's list for our line. */
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

/* Empty our remote lists: one exchange per line. */
static void drain_remote(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt)
{
	for (unsigned i = 0; i < PS_MEM_REMOTE_LINES; i++) {
		if (atomic_load_explicit(&pt->remote[i].head, memory_order_relaxed) == NULL)
			continue;
		struct ps_mem_hdr *h = atomic_exchange_explicit(&pt->remote[i].head, NULL,
								memory_order_acquire);
		while (h) {
			struct ps_mem_hdr *next = h->next;
			free_to_slab(m, me, pt, h);
			h = next;
		}
	}
}

/* Flush n objects from the cache back to their slabs. */
static void cache_flush(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, unsigned n)
{
	if (n == 0)
		return;
	for (unsigned i = 0; i < n && pt->cache; i++) {
		struct ps_mem_hdr *h = pt->cache;
		pt->cache = h->next;
		pt->ncache--;
		free_to_slab(m, me, pt, h);
	}
	cnt_add(&pt->c_flushes, 1);
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	pool_shrink(m);
}

static inline void cache_push(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, struct ps_mem_hdr *h)
{
	if (TSYNC_UNLIKELY(pt->ncache >= m->cache_size))
		cache_flush(m, me, pt, (m->cache_size + 1) / 2);
	h->next = pt->cache;
	pt->cache = h;
	pt->ncache++;
}

/* ---- quiescence queue -------------------------------------------------------------- */

/*
 * Move up to `limit` quiesced objects from the head of our queue into our cache.
 * Objects freed before our own published quiescence point cost one comparison each.
 * A scan of the other threads (ps_quiesce beyond that point: for the newest stamp, then
 * if that fails for the head) is made once per call at most, and by ps_free only once
 * the queue holds reclaim_batch objects: a longer queue
 * means one scan proves more objects quiesced (seed 000 §3.4), so a scan's remote loads
 * are amortised over about a batch of frees. `scan`: RECLAIM_FREE (ps_free: scan only past
 * the threshold), RECLAIM_ALLOC (allocation slow path: scan regardless), RECLAIM_ALL
 * (explicit reclaim, thread exit: stamp everything, scan for the newest stamp first).
 */
enum { RECLAIM_FREE, RECLAIM_ALLOC, RECLAIM_ALL, RECLAIM_COLLECT };
/*
 * Stamp every queued, not yet stamped object with one ordered clock reading. It is read
 * after each of their ps_free calls, hence after each unlink was visible: a valid free
 * time for all of them, at most reclaim_batch frees late (docs/design.md §3).
 */
static void stamp(struct ps_mem_pt *pt)
{
	if (pt->unstamped == NULL)
		return;
	uint64_t t = tsync_now_ordered();
	if (t <= PS_MEM_MARKED)
		t = PS_MEM_MARKED + 1;
	for (struct ps_mem_hdr *h = pt->unstamped; h; h = h->next)
		atomic_store_explicit(&h->free_tsc, t, memory_order_relaxed);
	pt->last_stamp = t;
	pt->unstamped = NULL;
	pt->nunstamped = 0;
}

/* Publish the queue head's free time (stall report: oldest pending). */
static inline void head_published(struct ps_mem_pt *pt)
{
	uint64_t t = 0;
	if (pt->qhead && pt->qhead != pt->unstamped)
		t = atomic_load_explicit(&pt->qhead->free_tsc, memory_order_relaxed);
	atomic_store_explicit(&pt->c_head_tsc, t, memory_order_relaxed);
}

/* Record, on a quiescence computation that failed, which section held the queue back. */
static void note_blocked(struct ps_mem *m, struct ps_mem_pt *pt)
{
	uint64_t be = 0;
	int b = ps__last_blocker(m->ps, &be);
	atomic_store_explicit(&pt->c_blocker1, b >= 0 ? (uint64_t)b + 1 : 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocker_enter, be, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocked, atomic_load_explicit(&pt->c_pending, memory_order_relaxed),
			      memory_order_relaxed);
	head_published(pt);
}

static void note_unblocked(struct ps_mem_pt *pt)
{
	if (atomic_load_explicit(&pt->c_blocked, memory_order_relaxed) == 0)
		return;
	atomic_store_explicit(&pt->c_blocker1, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocked, 0, memory_order_relaxed);
	head_published(pt);
}

/* Move the queue's head h (free time t, quiesced) into the cache; track the longest
 * wait among the objects moved by this call (*now: read once, lazily). */
static inline void reclaim_take(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
				struct ps_mem_hdr *h, uint64_t t, uint64_t *now, uint64_t *max_wait)
{
	pt->qhead = h->next;
	if (pt->qhead == NULL)
		pt->qtail = NULL;
	if (*now == 0)
		*now = tsync_now();
	if (*now > t && *now - t > *max_wait)
		*max_wait = *now - t;
	if (TSYNC_UNLIKELY(m->nobj == 1))
		free_to_slab(m, me, pt, h); /* a whole slab: to the pool, not one thread's cache */
	else
		cache_push(m, me, pt, h);
}

/* The owner's counters after a call that reclaimed n > 0 objects. */
static inline void reclaim_count(struct ps_mem_pt *pt, size_t n, uint64_t max_wait)
{
	cnt_sub(&pt->c_pending, n);
	cnt_add(&pt->c_reclaimed, n);
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	if (max_wait > atomic_load_explicit(&pt->c_max_wait, memory_order_relaxed))
		atomic_store_explicit(&pt->c_max_wait, max_wait, memory_order_relaxed);
}

/*
 * The foundation's reclamation, for GENERAL instances without any of issue 6's options
 * (no hook, observer, schedule or exact accounting): kept apart from reclaim_ext so that
 * the common ps_free pays nothing for them. The stall summary is written only on the
 * scan path (about once per reclaim_batch frees), and only when it changes.
 */
static size_t reclaim_general(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt,
			      size_t limit, int scan)
{
	size_t n = 0;
	if (scan != RECLAIM_FREE)
		stamp(pt);
	uint64_t max_wait = 0, now = 0;
	uint64_t q = ps_quiescence_point(m->ps);
	int scanned = 0;
	if ((scan == RECLAIM_FREE &&
	     atomic_load_explicit(&pt->c_pending, memory_order_relaxed) < m->batch) ||
	    scan == RECLAIM_COLLECT)
		scanned = 1; /* queue too short to be worth a scan: own point only */
	while (n < limit && pt->qhead) {
		struct ps_mem_hdr *h = pt->qhead;
		if (h == pt->unstamped)
			break; /* the rest has no free time yet */
		uint64_t t = atomic_load_explicit(&h->free_tsc, memory_order_relaxed);
		if (t > q) {
			if (scanned)
				break;
			scanned = 1;
			/* RECLAIM_ALL: ask for the newest stamp first - if it has quiesced, so
			 * has everything stamped before it - then for the head. Not on the hot
			 * paths: no cached view is newer than a fresh stamp, so that query always
			 * reads the other threads' lines, which optimisation 3 exists to avoid
			 * (on the allocation slow path it cut 2-thread throughput by half). */
			uint64_t newest = pt->last_stamp;
			if (!(scan == RECLAIM_ALL && newest > t && ps_quiesce(m->ps, newest)) &&
			    !ps_quiesce(m->ps, t)) {
				note_blocked(m, pt);
				break;
			}
			note_unblocked(pt);
			q = ps_quiescence_point(m->ps);
		}
		reclaim_take(m, me, pt, h, t, &now, &max_wait);
		n++;
	}
	if (n) {
		reclaim_count(pt, n, max_wait);
	}
	return n;
}

/* Everything else: RT/TEMPORAL collection of all quiesced objects (seed 004 Fig. 8),
 * the grace hook, the observer, exact accounting. */
static size_t reclaim_ext(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			  int scan)
{
	size_t n = 0;
	if (scan != RECLAIM_FREE)
		stamp(pt);
	uint64_t max_wait = 0, now = 0, t0 = 0, alpha = 0;
	if (TSYNC_UNLIKELY(m->reclaim_fn != NULL))
		t0 = tsync_now();
	uint64_t q = ps_quiescence_point(m->ps);
	int scanned = 0, attempted = 0, blocked = 0, refused = 0;
	if (m->rt) {
		limit = SIZE_MAX; /* seed 004 Fig. 8, lines 27-30: collect all quiesced */
		if (scan == RECLAIM_COLLECT)
			scanned = 1;
	} else if ((scan == RECLAIM_FREE &&
		    atomic_load_explicit(&pt->c_pending, memory_order_relaxed) < m->batch) ||
		   scan == RECLAIM_COLLECT) {
		scanned = 1; /* queue too short to be worth a scan: own point only */
	}
	while (n < limit && pt->qhead) {
		struct ps_mem_hdr *h = pt->qhead;
		if (h == pt->unstamped)
			break; /* the rest has no free time yet */
		uint64_t t = atomic_load_explicit(&h->free_tsc, memory_order_relaxed);
		if (t > q) {
			if (scanned)
				break;
			scanned = 1;
			attempted = 1;
			if (m->rt) {
				/* One exact computation (RT) or clock reading (TEMPORAL). */
				uint64_t a0 = m->reclaim_fn ? tsync_now() : 0;
				q = ps_quiesce_time(m->ps);
				if (m->reclaim_fn)
					alpha = tsync_now() - a0;
				if (t > q) {
					blocked = 1;
					break;
				}
			} else {
				/* RECLAIM_ALL: ask for the newest stamp first - if it has
				 * quiesced, so has everything stamped before it - then for the
				 * head. Not on the hot paths: no cached view is newer than a fresh
				 * stamp, so that query always reads the other threads' lines,
				 * which optimisation 3 exists to avoid (on the allocation slow
				 * path it cut 2-thread throughput by half). */
				uint64_t newest = pt->last_stamp;
				uint64_t a0 = m->reclaim_fn ? tsync_now() : 0;
				bool ok = (scan == RECLAIM_ALL && newest > t &&
					   ps_quiesce(m->ps, newest)) ||
					  ps_quiesce(m->ps, t);
				if (m->reclaim_fn)
					alpha = tsync_now() - a0;
				if (!ok) {
					blocked = 1;
					break;
				}
				q = ps_quiescence_point(m->ps);
			}
		}
		/* Custom grace period (seed 000 §3.7): asked last, in free-time order. */
		if (m->grace_fn && !m->grace_fn(m, OBJ(h), t, m->grace_arg)) {
			refused = 1;
			break;
		}
		reclaim_take(m, me, pt, h, t, &now, &max_wait);
		n++;
	}
	if (n) {
		reclaim_count(pt, n, max_wait);
		if (m->exact)
			acct_add(m, ACCT_RECLAIM(n), 1);
	}
	if (blocked || refused ||
	    ((attempted || n) && (atomic_load_explicit(&pt->c_blocked, memory_order_relaxed) |
				  atomic_load_explicit(&pt->c_hook_blocked, memory_order_relaxed)))) {
		/* Stall summary (ps_stall_report): who kept the rest of the queue waiting,
		 * and the free time of the head it kept waiting. Written when a quiescence
		 * computation failed or the hook refused, and cleared by the next
		 * reclamation that gets past that; reclamations with nothing to report (the
		 * common case) add two loads of the owner's own line, no store. */
		uint64_t left = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
		uint64_t b1 = 0, be = 0;
		if (blocked) {
			int b = ps__last_blocker(m->ps, &be);
			b1 = b >= 0 ? (uint64_t)b + 1 : 0;
		}
		atomic_store_explicit(&pt->c_blocker1, b1, memory_order_relaxed);
		atomic_store_explicit(&pt->c_blocker_enter, be, memory_order_relaxed);
		atomic_store_explicit(&pt->c_blocked, blocked ? left : 0, memory_order_relaxed);
		atomic_store_explicit(&pt->c_hook_blocked, refused ? left : 0, memory_order_relaxed);
		if (refused)
			cnt_add(&pt->c_refused, 1);
		head_published(pt);
	}
	if (TSYNC_UNLIKELY(m->reclaim_fn != NULL) && (n || attempted)) {
		uint64_t t1 = tsync_now();
		struct ps_mem_reclaim_info info = {
		    .quiesce_ticks = alpha,
		    .collect_ticks = t1 - t0 > alpha ? t1 - t0 - alpha : 0,
		    .collected = n,
		    .queued = atomic_load_explicit(&pt->c_pending, memory_order_relaxed),
		    .quiesced = attempted != 0,
		};
		m->reclaim_fn(m, &info, m->reclaim_arg);
	}
	return n;
}

static inline size_t reclaim(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt, size_t limit,
			     int scan)
{
	if (TSYNC_LIKELY(!m->ext))
		return reclaim_general(m, me, pt, limit, scan);
	return reclaim_ext(m, me, pt, limit, scan);
}

/* Merge a queue segment (sorted by free time) into ours. */
static void queue_merge(struct ps_mem_pt *pt, struct ps_mem_hdr *b)
{
	struct ps_mem_hdr *a = pt->qhead, head = {0}, *tail = &head;
	while (a && b) {
		uint64_t ta = atomic_load_explicit(&a->free_tsc, memory_order_relaxed);
		uint64_t tb = atomic_load_explicit(&b->free_tsc, memory_order_relaxed);
		if (ta <= tb) {
			tail->next = a;
			a = a->next;
		} else {
			tail->next = b;
			b = b->next;
		}
		tail = tail->next;
	}
	tail->next = a ? a : b;
	while (tail->next)
		tail = tail->next;
	pt->qhead = head.next;
	pt->qtail = pt->qhead ? tail : NULL;
}

/* Take over one queue left behind by an exited thread. */
static void adopt_orphan(struct ps_mem *m, struct ps_mem_pt *pt)
{
	pthread_mutex_lock(&m->pool_lock);
	struct orphan *o = m->orphans;
	if (o) {
		m->orphans = o->next;
		atomic_store_explicit(&m->orphan_pending,
				      atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) - o->n,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&m->pool_lock);
	if (o == NULL)
		return;
	stamp(pt); /* merging needs every free time */
	queue_merge(pt, o->head);
	cnt_add(&pt->c_pending, o->n);
	free(o);
}

/* ---- refill ------------------------------------------------------------------------- */

/* Take up to half a cache of objects from our partial slabs. Returns the count. */
static unsigned take_from_own(struct ps_mem *m, struct ps_mem_pt *pt)
{
	unsigned want = (m->cache_size + 1) / 2, got = 0;
	while (got < want && pt->partial.head) {
		struct slab *s = pt->partial.head;
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
				 * cache (reclaim_take): it then empties in the pool, where every
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

/* Get a slab from the pool (partial first: keeps empty ones returnable) or the system. */
static int acquire_slab(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt)
{
	pthread_mutex_lock(&m->pool_lock);
	struct slab *s = m->pool_partial.head ? m->pool_partial.head : m->pool_empty.head;
	if (s)
		list_del(m, NULL, s);
	else
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

/* Hand out the cache's top object (the cache must not be empty). */
static inline void *cache_pop(struct ps_mem_pt *pt)
{
	struct ps_mem_hdr *h = pt->cache;
	pt->cache = h->next;
	pt->ncache--;
	atomic_store_explicit(&pt->c_cached, pt->ncache, memory_order_relaxed);
	atomic_store_explicit(&h->free_tsc, 0, memory_order_relaxed);
	cnt_add(&pt->c_allocs, 1);
	return OBJ(h);
}

/* May this thread reclaim now under the schedule (cfg->reclaim_period_ns)? */
static inline bool reclaim_due(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (TSYNC_LIKELY(m->period == 0))
		return true;
	uint64_t now = tsync_now();
	if (pt->last_reclaim != 0 && now - pt->last_reclaim < m->period)
		return false;
	pt->last_reclaim = now ? now : 1;
	return true;
}

static void *alloc_slow(struct ps_mem *m, unsigned me, struct ps_mem_pt *pt)
{
	/* 1. quiesced memory first: reuse is the point of the queue */
	bool due = reclaim_due(m, pt);
	if (!due || reclaim(m, me, pt, m->batch, RECLAIM_ALLOC) == 0 || pt->cache == NULL) {
		/* 2. objects others returned to our slabs, then our slabs */
		drain_remote(m, me, pt);
		if (atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) != 0) {
			adopt_orphan(m, pt);
			if (due)
				reclaim(m, me, pt, m->batch, RECLAIM_ALLOC);
		}
		if (pt->cache == NULL) {
			unsigned got = take_from_own(m, pt);
			/* 3. nothing quiesced and no free object: fresh memory, never wait */
			if (got == 0) {
				if (acquire_slab(m, me, pt) != 0) {
					errno = ENOMEM;
					return NULL;
				}
				got = take_from_own(m, pt);
			}
			if (got)
				cnt_add(&pt->c_refills, 1);
		}
		pool_shrink(m);
	}
	return cache_pop(pt);
}

static struct ps_mem_pt *self_pt(struct ps_mem *m, unsigned *me)
{
	*me = tsync__self();
	struct ps_mem_pt *pt = pt_get(m, *me);
	if (TSYNC_UNLIKELY(pt == NULL))
		tsync__fatal("out of memory allocating per-thread allocator state");
	return pt;
}

void *ps_alloc(struct ps_mem *m)
{
	unsigned me;
	struct ps_mem_pt *pt = self_pt(m, &me);
	void *obj;
	if (TSYNC_LIKELY(pt->cache != NULL)) {
		obj = cache_pop(pt);
		if (TSYNC_LIKELY(!m->exact))
			return obj;
	} else {
		obj = alloc_slow(m, me, pt);
		if (!m->exact || obj == NULL)
			return obj;
	}
	acct_add(m, ACCT_ALLOC, 0);
	return obj;
}

/* Shared by ps_free and ps_lock_release_free (which marked the header first). */
void ps__free(struct ps_mem *m, void *obj, int marked)
{
	struct ps_mem_hdr *h = HDR(obj);
	uint64_t old = atomic_load_explicit(&h->free_tsc, memory_order_relaxed);
	if (TSYNC_UNLIKELY(old != 0 && !(marked && old == PS_MEM_MARKED)))
		tsync__fatal("ps_free: double free of %p", obj);
	if (TSYNC_UNLIKELY(h->slab->m != m))
		tsync__fatal("ps_free: %p does not belong to this ps_mem", obj);
	unsigned me;
	struct ps_mem_pt *pt = self_pt(m, &me);
	/* Freed from now on for ps_lock_take and the double-free check; the free time is
	 * stamped below, once per reclaim_batch frees, by one ordered clock reading that
	 * follows every earlier store of ours, the unlinks included. */
	atomic_store_explicit(&h->free_tsc, PS_MEM_MARKED, memory_order_release);
	h->next = NULL;
	if (pt->qtail)
		pt->qtail->next = h;
	else
		pt->qhead = h;
	pt->qtail = h;
	if (pt->unstamped == NULL)
		pt->unstamped = h;
	if (++pt->nunstamped >= m->stamp_batch)
		stamp(pt);
	cnt_add(&pt->c_pending, 1);
	cnt_add(&pt->c_frees, 1);
	if (TSYNC_LIKELY(!m->ext)) {
		reclaim_general(m, me, pt, m->batch, RECLAIM_FREE);
		return;
	}
	uint64_t crossed = 0;
	if (m->exact) {
		uint64_t v = acct_add(m, ACCT_FREE, 0);
		if (m->pending_fn && ACCT_PENDING(v) == m->threshold)
			crossed = ACCT_PENDING(v);
	}
	if (reclaim_due(m, pt))
		reclaim(m, me, pt, m->batch, RECLAIM_FREE);
	if (TSYNC_UNLIKELY(crossed))
		m->pending_fn(m, crossed, m->pending_arg);
}

void ps_free(struct ps_mem *m, void *obj)
{
	if (obj != NULL)
		ps__free(m, obj, 0);
}

size_t ps_mem_reclaim(struct ps_mem *m)
{
	unsigned me;
	struct ps_mem_pt *pt = self_pt(m, &me);
	size_t n = reclaim(m, me, pt, SIZE_MAX, RECLAIM_ALL);
	pool_shrink(m);
	return n;
}

size_t ps_mem_collect(struct ps_mem *m)
{
	unsigned me;
	struct ps_mem_pt *pt = self_pt(m, &me);
	stamp(pt);
	return reclaim(m, me, pt, SIZE_MAX, RECLAIM_COLLECT);
}

/* ---- thread exit --------------------------------------------------------------------- */

/* Runs in the exiting thread (registry mutex held): give everything back. */
static void ps_mem_thread_exit(struct tsync__client *c, unsigned tid)
{
	struct ps_mem *m = (struct ps_mem *)((char *)c - offsetof(struct ps_mem, client));
	struct ps_mem_pt *pt = pt_if_exists(m, tid);
	if (pt == NULL)
		return;
	reclaim(m, tid, pt, SIZE_MAX, RECLAIM_ALL); /* stamps the whole queue first */
	cache_flush(m, tid, pt, pt->ncache);
	drain_remote(m, tid, pt);

	struct orphan *o = NULL;
	if (pt->qhead) {
		o = malloc(sizeof(*o));
		if (o == NULL) /* cannot hand it over: keep it with the id; its next user adopts it */
			return;
		o->head = pt->qhead;
		o->tail = pt->qtail;
		o->n = atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
		pt->qhead = pt->qtail = NULL;
		atomic_store_explicit(&pt->c_pending, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&pt->c_blocker1, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_hook_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&pt->c_head_tsc, 0, memory_order_relaxed);
	pt->last_reclaim = 0;
	pthread_mutex_lock(&m->pool_lock);
	if (o) {
		o->next = m->orphans;
		m->orphans = o;
		atomic_store_explicit(&m->orphan_pending,
				      atomic_load_explicit(&m->orphan_pending, memory_order_relaxed) + o->n,
				      memory_order_relaxed);
	}
	struct slab_list *lists[2] = {&pt->partial, &pt->full};
	for (int i = 0; i < 2; i++) {
		while (lists[i]->head) {
			struct slab *s = lists[i]->head;
			list_del(m, pt, s);
			atomic_store_explicit(&s->owner, OWNER_POOL, memory_order_release);
			list_add(m, NULL, s, pool_list_for(s));
		}
	}
	pt->nempty = 0;
	struct slab *excess = pool_trim(m, UINT_MAX); /* not a hot path: all of it */
	pthread_mutex_unlock(&m->pool_lock);
	slabs_unmap(m, excess);
}

/* ---- create / destroy / stats ---------------------------------------------------------- */

#ifdef TSYNC_TEST_SMALL
#define DEF_CACHE 4u
#define DEF_BATCH 2u
#define DEF_KEPT 1u
#define DEF_SLAB 4096u
#else
#define DEF_CACHE 64u
#define DEF_BATCH 16u
#define DEF_KEPT 4u
#define DEF_SLAB (64u * 1024u)
#endif

struct ps_mem *ps_mem_create(struct ps *ps, size_t obj_size, const struct ps_mem_config *cfg)
{
	struct ps_mem_config def = PS_MEM_CONFIG_INIT, c = def;
	if (cfg) {
		if (cfg->size < sizeof(size_t) || cfg->size > 4096) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	}
	if (ps == NULL || obj_size == 0 || obj_size > ((size_t)1 << 30)) {
		errno = EINVAL;
		return NULL;
	}
	size_t align = c.align ? c.align : 16;
	if ((align & (align - 1)) || align > 4096 || (c.slab_size % 4096) ||
	    c.slab_size > ((size_t)1 << 31)) {
		errno = EINVAL;
		return NULL;
	}
	if (align < sizeof(void *))
		align = sizeof(void *);
	/* Slot: [pad][header][object], header immediately before the object; the object is
	 * aligned to `align` because first and stride are multiples of it. */
	size_t hdr_area = tsync__round_up(sizeof(struct ps_mem_hdr), align);
	size_t stride = tsync__round_up(hdr_area + obj_size, align);
	size_t first = tsync__round_up(sizeof(struct slab), align > TSYNC_CACHE_LINE ? align : TSYNC_CACHE_LINE);
	size_t slab = c.slab_size ? c.slab_size : DEF_SLAB;
	if (!c.slab_size)
		while (first + 8 * stride > slab)
			slab <<= 1;
	if (first + stride > slab) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_mem *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->ps = ps;
	m->obj_size = obj_size;
	m->align = align;
	m->hdr_area = hdr_area;
	m->stride = stride;
	m->first = first;
	m->slab_size = slab;
	m->nobj = (unsigned)((slab - first) / stride);
	m->cache_size = c.cache_size ? c.cache_size : DEF_CACHE;
	m->trim_max = m->cache_size > 4 ? 4 * m->cache_size : 16;
	m->batch = c.reclaim_batch ? c.reclaim_batch : DEF_BATCH;
	m->slabs_kept = c.slabs_kept ? c.slabs_kept : DEF_KEPT;
	m->rt = ps_policy(ps) != PS_POLICY_GENERAL;
	m->stamp_batch = c.stamp_batch ? c.stamp_batch : m->rt ? 1 : m->batch;
	if (c.accounting < PS_MEM_ACCOUNT_AUTO || c.accounting > PS_MEM_ACCOUNT_EXACT ||
	    (c.pending_fn && c.pending_threshold == 0) ||
	    (c.pending_threshold && c.pending_fn == NULL) ||
	    (c.pending_fn && c.accounting == PS_MEM_ACCOUNT_PER_THREAD)) {
		free(m);
		errno = EINVAL;
		return NULL;
	}
	m->exact = c.accounting == PS_MEM_ACCOUNT_EXACT ||
		   (c.accounting == PS_MEM_ACCOUNT_AUTO && (m->rt || c.pending_fn));
	m->period = c.reclaim_period_ns ? tsync_ns_to_ticks(c.reclaim_period_ns) : 0;
	if (c.reclaim_period_ns && m->period == 0)
		m->period = 1;
	m->grace_fn = c.grace_fn;
	m->grace_arg = c.grace_arg;
	m->threshold = c.pending_threshold;
	m->pending_fn = c.pending_fn;
	m->pending_arg = c.pending_arg;
	m->reclaim_fn = c.reclaim_fn;
	m->reclaim_arg = c.reclaim_arg;
	m->ext = m->rt || m->exact || m->period || m->grace_fn || m->pending_fn || m->reclaim_fn;
	m->nchunks = tsync__chunk_count();
	m->chunks = calloc(m->nchunks, sizeof(*m->chunks));
	if (m->chunks == NULL) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&m->pool_lock, NULL);
	m->client.thread_exit = ps_mem_thread_exit;
	tsync__client_add(&m->client);
	return m;
}

void ps_mem_destroy(struct ps_mem *m)
{
	if (m == NULL)
		return;
	tsync__client_remove(&m->client);
	pthread_mutex_lock(&m->pool_lock);
	while (m->all) {
		struct slab *s = m->all;
		m->all = s->all_next;
		munmap(s, m->slab_size);
	}
	while (m->orphans) {
		struct orphan *o = m->orphans;
		m->orphans = o->next;
		free(o);
	}
	pthread_mutex_unlock(&m->pool_lock);
	for (unsigned i = 0; i < m->nchunks; i++)
		free(atomic_load_explicit(&m->chunks[i], memory_order_relaxed));
	free(m->chunks);
	pthread_mutex_destroy(&m->pool_lock);
	free(m);
}

struct ps_mem *ps_mem_of(const void *obj)
{
	return HDR(obj)->slab->m;
}

struct ps *ps_mem_ps(const struct ps_mem *m)
{
	return m->ps;
}

size_t ps_mem_obj_size(const struct ps_mem *m)
{
	return m->obj_size;
}

int ps_mem_stats(struct ps_mem *m, struct ps_mem_stats *out)
{
	if (m == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	uint64_t allocs = 0, frees = 0;
	for (unsigned i = 0; i < m->nchunks; i++) {
		struct ps_mem_pt_chunk *c = atomic_load_explicit(&m->chunks[i], memory_order_acquire);
		if (c == NULL)
			continue;
		for (unsigned j = 0; j < TSYNC__CHUNK; j++) {
			struct ps_mem_pt *pt = &c->pt[j];
			allocs += atomic_load_explicit(&pt->c_allocs, memory_order_relaxed);
			frees += atomic_load_explicit(&pt->c_frees, memory_order_relaxed);
			out->pending += atomic_load_explicit(&pt->c_pending, memory_order_relaxed);
			out->cached += atomic_load_explicit(&pt->c_cached, memory_order_relaxed);
			out->reclaimed += atomic_load_explicit(&pt->c_reclaimed, memory_order_relaxed);
			out->cache_refills += atomic_load_explicit(&pt->c_refills, memory_order_relaxed);
			out->cache_flushes += atomic_load_explicit(&pt->c_flushes, memory_order_relaxed);
			out->remote_frees += atomic_load_explicit(&pt->c_remote, memory_order_relaxed);
			out->grace_refusals += atomic_load_explicit(&pt->c_refused, memory_order_relaxed);
			uint64_t w = atomic_load_explicit(&pt->c_max_wait, memory_order_relaxed);
			if (w > out->max_wait_ticks)
				out->max_wait_ticks = w;
		}
	}
	out->allocs = allocs;
	out->frees = frees;
	out->in_use = allocs > frees ? allocs - frees : 0;
	out->pending += atomic_load_explicit(&m->orphan_pending, memory_order_relaxed);
	if (m->exact) {
		/* One word: live and pending at one instant. */
		uint64_t v = atomic_load_explicit(&m->acct, memory_order_relaxed);
		out->live = ACCT_LIVE(v);
		out->pending = ACCT_PENDING(v);
		out->in_use = out->live;
		out->peak_live = atomic_load_explicit(&m->peak_live, memory_order_relaxed);
		out->peak_pending = atomic_load_explicit(&m->peak_pending, memory_order_relaxed);
		out->peak_footprint = atomic_load_explicit(&m->peak_foot, memory_order_relaxed);
		out->exact = 1;
	} else {
		out->live = out->in_use;
	}
	pthread_mutex_lock(&m->pool_lock);
	out->slabs = m->slabs;
	out->peak_slabs = m->peak_slabs;
	out->slab_grows = m->grows;
	out->slab_shrinks = m->shrinks;
	out->remote_frees += m->pool_remote;
	pthread_mutex_unlock(&m->pool_lock);
	uint64_t cap = out->slabs * m->nobj, used = out->live + out->pending;
	out->freed = cap > used ? cap - used : 0;
	return 0;
}

int ps_stall_report(struct ps *ps, struct ps_mem *m, struct ps_stall *out)
{
	if (ps == NULL || out == NULL || (m != NULL && m->ps != ps)) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	uint64_t enter = 0;
	unsigned inside = 0;
	out->tid = ps__oldest_section(ps, &enter, &inside);
	uint64_t now = tsync_now();
	out->inside = inside;
	if (out->tid >= 0) {
		out->enter = enter;
		out->section_ticks = now > enter ? now - enter : 0;
		out->section_ns = tsync_ticks_to_ns(out->section_ticks);
		out->over_grace = ps_policy(ps) == PS_POLICY_TEMPORAL &&
				  out->section_ticks > ps_grace_ticks(ps);
	}
	if (m == NULL)
		return 0;
	uint64_t oldest = UINT64_MAX;
	for (unsigned i = 0; i < m->nchunks; i++) {
		struct ps_mem_pt_chunk *c = atomic_load_explicit(&m->chunks[i], memory_order_acquire);
		if (c == NULL)
			continue;
		for (unsigned j = 0; j < TSYNC__CHUNK; j++) {
			struct ps_mem_pt *pt = &c->pt[j];
			uint64_t b1 = atomic_load_explicit(&pt->c_blocker1, memory_order_relaxed);
			uint64_t be = atomic_load_explicit(&pt->c_blocker_enter, memory_order_relaxed);
			if (out->tid >= 0 && b1 == (uint64_t)out->tid + 1 && be == enter)
				out->waiting += atomic_load_explicit(&pt->c_blocked, memory_order_relaxed);
			out->waiting_hook += atomic_load_explicit(&pt->c_hook_blocked, memory_order_relaxed);
			uint64_t h = atomic_load_explicit(&pt->c_head_tsc, memory_order_relaxed);
			bool held = atomic_load_explicit(&pt->c_blocked, memory_order_relaxed) ||
				    atomic_load_explicit(&pt->c_hook_blocked, memory_order_relaxed);
			if (held && h > PS_MEM_MARKED && h < oldest)
				oldest = h;
		}
	}
	if (oldest != UINT64_MAX && now > oldest)
		out->oldest_pending_ticks = now - oldest;
	struct ps_mem_stats st;
	ps_mem_stats(m, &st);
	out->pending = st.pending;
	return 0;
}
