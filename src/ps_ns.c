/*
 * src/ps_ns.c - ParSec namespaces (ParSec (EuroSys 2016) §3.6; include/tsync/ps_ns.h).
 *
 * The trie: fixed height, 512-word nodes, interior nodes installed with a CAS and never
 * freed before ps_ns_destroy. Leaf words hold an id's state (PS_NS__FREE, __GRACE,
 * __RESERVED) or its published object; every change of state is one atomic operation
 * on that word, and the CAS from FREE is what claims an id - the free lists below are
 * only hints (an id listed twice, or claimed by ps_ns_alloc_at while listed, fails its
 * CAS and is skipped). An extent is claimed word by word through PS_NS__CLAIM, a
 * transient state that only its claimer moves on (to RESERVED when every word was
 * FREE, back to FREE otherwise); ps_ns_alloc_at and the trie scan wait it out, so a
 * claim that fails never makes an id look taken.
 *
 * ENOSPC: an allocation whose cache and pool are dry collects its own quiescence queue,
 * gives its caches of other sizes back to the pool (which splits them), and last scans
 * the trie for a FREE id, or an aligned run of FREE ids, that some other thread's cache
 * holds; it claims that directly (the owner's cached copy is skipped later as stale).
 * So ENOSPC means that every id, or every aligned run, was seen taken.
 *
 * Free ids: a cache per thread per extent size (order), refilled from and flushed to the
 * pool (one list per order, a min-heap for PS_NS_ID_LOWEST, a FIFO ring for CYCLIC, and
 * the never-used cursor), under the pool mutex. An id comes back to a cache only in the
 * grace hook this file installs on the object allocator: ps_mem calls it after
 * quiescence for the object's free time, and it calls the user's hook first - so an id
 * is reusable exactly when its object is (docs/design.md §5).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/ps_ns.h>

#include "ps_mem_hdr.h"
#include "registry.h"
#include "tdir.h"
#include "util.h"
#include "wait.h"

#define ID_FREED (UINT64_C(1) << 63) /* tail.idw: ps_ns_free has run on this incarnation */
#define NODE_BYTES sizeof(struct ps_ns__node)

/* After every object, at ns->tail_off: its id and extent. */
struct ns_tail {
	_Atomic uint64_t idw; /* the id, | ID_FREED once freed */
	struct ns_ext *ext;   /* NULL for a single id */
	_Atomic uintptr_t *w; /* the id's leaf word (saves publish, free and the hook a walk) */
};

/* An extent of 2^order ids: returned when its last bound id has passed its grace. */
struct ns_ext {
	_Atomic uint64_t live; /* bound ids not yet reclaimed */
	uint64_t base;
	uint64_t n; /* bound ids: base .. base + n - 1 */
	unsigned order;
};

/* A free-id list: a min-heap (LOWEST) or a FIFO ring (CYCLIC). Pool mutex. */
struct idlist {
	uint64_t *a;
	size_t n, cap, head;
};

struct ns_pt {
	_Alignas(TSYNC_CACHE_LINE) uint64_t *ids; /* (max_order + 1) x cap[order] slots */
	unsigned n[PS_NS_ORDER_MAX + 1];
	_Atomic uint64_t allocs, frees, reclaimed, extents, refusals, refills, flushes, stale,
		scans;
};
struct ns_pt_chunk {
	struct ns_pt pt[TSYNC__CHUNK];
};

struct ps_ns {
	struct ps_ns__head h; /* first: ps_ns_lookup reads it through the public type */
	struct ps *ps;
	struct ps_mem *mem;    /* the objects */
	struct ps_mem *extmem; /* extent records */
	size_t obj_size, tail_off;
	unsigned id_bits, max_order;
	int policy;
	bool singly;                       /* PS_NS_EXTENT_SINGLY */
	unsigned cap[PS_NS_ORDER_MAX + 1]; /* id cache capacity per order */
	size_t off[PS_NS_ORDER_MAX + 1];   /* where each order's cache starts in ns_pt.ids */
	size_t ids_per_pt;
	ps_ns_grace_fn grace_fn;
	void *grace_arg;

	pthread_mutex_t lock; /* the pool: lists, cursor and the counters below */
	struct idlist pool[PS_NS_ORDER_MAX + 1];
	uint64_t cursor; /* ids below it were handed out at least once */
	uint64_t fresh, splits, scans;
	_Atomic uint64_t trie_nodes;

	unsigned nchunks;
	struct ns_pt_chunk *_Atomic *chunks;
	struct tsync__client client;
};

static inline struct ns_tail *tail_of(const struct ps_ns *ns, const void *obj)
{
	return (struct ns_tail *)((char *)obj + ns->tail_off);
}

static inline void cnt(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/* ---- trie ------------------------------------------------------------------------------ */

static struct ps_ns__node *node_new(struct ps_ns *ns)
{
	struct ps_ns__node *n = aligned_alloc(4096, NODE_BYTES);
	if (n == NULL)
		return NULL;
	memset(n, 0, NODE_BYTES);
	atomic_fetch_add_explicit(&ns->trie_nodes, 1, memory_order_relaxed);
	return n;
}

/* The leaf word of id; with create, missing interior nodes are allocated (NULL with
 * errno = ENOMEM if that fails), else NULL when the path does not exist. */
static _Atomic uintptr_t *leaf_word(struct ps_ns *ns, uint64_t id, bool create)
{
	struct ps_ns__node *n = ns->h.root;
	for (unsigned l = ns->h.height - 1; l > 0; l--) {
		_Atomic uintptr_t *w =
			&n->slot[(id >> (PS_NS__FANOUT_SHIFT * l)) & (PS_NS__FANOUT - 1)];
		uintptr_t v = atomic_load_explicit(w, memory_order_acquire);
		if (v == 0) {
			if (!create)
				return NULL;
			struct ps_ns__node *nn = node_new(ns);
			if (nn == NULL) {
				errno = ENOMEM;
				return NULL;
			}
			uintptr_t exp = 0;
			/* release: the zeroed node is visible before its pointer */
			if (atomic_compare_exchange_strong_explicit(w, &exp, (uintptr_t)nn,
								    memory_order_acq_rel,
								    memory_order_acquire)) {
				v = (uintptr_t)nn;
			} else {
				free(nn);
				atomic_fetch_sub_explicit(&ns->trie_nodes, 1, memory_order_relaxed);
				v = exp;
			}
		}
		n = (struct ps_ns__node *)v;
	}
	return &n->slot[id & (PS_NS__FANOUT - 1)];
}

static void trie_free(struct ps_ns__node *n, unsigned level)
{
	if (level > 0)
		for (unsigned i = 0; i < PS_NS__FANOUT; i++) {
			uintptr_t v = atomic_load_explicit(&n->slot[i], memory_order_relaxed);
			if (v)
				trie_free((struct ps_ns__node *)v, level - 1);
		}
	free(n);
}

/* ---- the pool (ns->lock held) ----------------------------------------------------------- */

static void list_push(struct ps_ns *ns, struct idlist *l, uint64_t id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		uint64_t *a = malloc(cap * sizeof(*a));
		if (a == NULL)
			tsync__fatal("ps_ns: out of memory growing the free-id pool");
		for (size_t i = 0; i < l->n; i++) /* unroll the ring; a heap is unaffected */
			a[i] = l->a[(l->head + i) % (l->cap ? l->cap : 1)];
		free(l->a);
		l->a = a;
		l->cap = cap;
		l->head = 0;
	}
	if (ns->policy == PS_NS_ID_CYCLIC) {
		l->a[(l->head + l->n++) % l->cap] = id;
	} else { /* sift up */
		size_t i = l->n++;
		while (i > 0 && l->a[(i - 1) / 2] > id) {
			l->a[i] = l->a[(i - 1) / 2];
			i = (i - 1) / 2;
		}
		l->a[i] = id;
	}
}

static uint64_t list_pop(struct ps_ns *ns, struct idlist *l)
{
	uint64_t id;
	if (ns->policy == PS_NS_ID_CYCLIC) {
		id = l->a[l->head];
		l->head = (l->head + 1) % l->cap;
		l->n--;
		return id;
	}
	id = l->a[0];
	uint64_t last = l->a[--l->n];
	size_t i = 0;
	for (;;) { /* sift down */
		size_t c = 2 * i + 1;
		if (c >= l->n)
			break;
		if (c + 1 < l->n && l->a[c + 1] < l->a[c])
			c++;
		if (l->a[c] >= last)
			break;
		l->a[i] = l->a[c];
		i = c;
	}
	if (l->n)
		l->a[i] = last;
	return id;
}

/* Push the ids [lo, hi) as the largest aligned extents that fit. */
static void push_range(struct ps_ns *ns, uint64_t lo, uint64_t hi)
{
	while (lo < hi) {
		unsigned o = ns->max_order;
		while (o > 0 && ((lo & ((UINT64_C(1) << o) - 1)) || lo + (UINT64_C(1) << o) > hi))
			o--;
		list_push(ns, &ns->pool[o], lo);
		lo += UINT64_C(1) << o;
	}
}

/* One free extent of order k from the pool (the policy's order of sources), or false. */
static bool pool_take(struct ps_ns *ns, unsigned k, uint64_t *out)
{
	uint64_t sz = UINT64_C(1) << k;
	bool cyclic = ns->policy == PS_NS_ID_CYCLIC;
	for (int pass = 0; pass < 2; pass++) {
		bool fresh = (pass == 0) == cyclic;
		if (fresh) {
			uint64_t base = (ns->cursor + sz - 1) & ~(sz - 1);
			if (base <= ns->h.nids - sz) {
				push_range(ns, ns->cursor, base); /* the alignment gap */
				ns->cursor = base + sz;
				ns->fresh += sz;
				*out = base;
				return true;
			}
		} else if (ns->pool[k].n) {
			*out = list_pop(ns, &ns->pool[k]);
			return true;
		}
	}
	for (unsigned j = k + 1; j <= ns->max_order; j++) { /* split a larger one */
		if (ns->pool[j].n == 0)
			continue;
		uint64_t b = list_pop(ns, &ns->pool[j]);
		for (unsigned o = k; o < j; o++)
			list_push(ns, &ns->pool[o], b + (UINT64_C(1) << o));
		ns->splits++;
		*out = b;
		return true;
	}
	return false;
}

/* ---- per-thread caches --------------------------------------------------------------- */

static struct ns_pt *nspt_find(struct ps_ns *ns, unsigned tid)
{
	return tsync__tdir_at((void *_Atomic *)ns->chunks, tid, sizeof(struct ns_pt));
}

/* The next existing per-thread record at or after *pos (tsync__tdir_next). */
static struct ns_pt *nspt_next(struct ps_ns *ns, unsigned *pos)
{
	return tsync__tdir_next((void *_Atomic *)ns->chunks, ns->nchunks, sizeof(struct ns_pt),
				pos);
}

/* Thread tid's record and id cache, allocated if missing; 0, or -1 with errno = ENOMEM.
 * ids is owner-only: called by thread tid, or by the registry's thread_prepare. */
static int nspt_prepare(struct ps_ns *ns, unsigned tid)
{
	struct ns_pt *pt =
		tsync__tdir_get((void *_Atomic *)ns->chunks, tid, sizeof(struct ns_pt), NULL, NULL);
	if (pt == NULL)
		return -1;
	if (pt->ids == NULL && (pt->ids = malloc(ns->ids_per_pt * sizeof(uint64_t))) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* Registry hook: an explicitly registered thread's record, allocated up front. */
static int ns_thread_prepare(struct tsync__client *c, unsigned tid)
{
	return nspt_prepare((struct ps_ns *)((char *)c - offsetof(struct ps_ns, client)), tid);
}

/* The caller's record on its first use of ns, if it was not allocated up front (a lazily
 * registered thread): NULL with errno = ENOMEM if that fails. */
static __attribute__((noinline, cold)) struct ns_pt *nspt_first(struct ps_ns *ns, unsigned me)
{
	return nspt_prepare(ns, me) == 0 ? nspt_find(ns, me) : NULL;
}

/* The caller's record, or NULL (errno = ENOMEM) for the calls that can return it. */
static inline struct ns_pt *nspt_try(struct ps_ns *ns)
{
	unsigned me = tsync__self();
	struct ns_pt *pt = nspt_find(ns, me);
	if (TSYNC_LIKELY(pt != NULL && pt->ids != NULL))
		return pt;
	return nspt_first(ns, me);
}

/* For the calls that cannot return an error (ps_ns_free): a failure aborts. */
static struct ns_pt *nspt_self(struct ps_ns *ns)
{
	struct ns_pt *pt = nspt_try(ns);
	if (TSYNC_UNLIKELY(pt == NULL))
		tsync__fatal("ps_ns: out of memory allocating per-thread state (a thread "
			     "registered with tsync_thread_register() has it allocated up front)");
	return pt;
}

static inline uint64_t *cache(struct ps_ns *ns, struct ns_pt *pt, unsigned k)
{
	return pt->ids + ns->off[k];
}

/* How many extents of order k one refill takes: half a cache, but never more than a
 * 64th of the space, so that small spaces are not hoarded by one thread's cache. */
static unsigned refill_want(struct ps_ns *ns, unsigned k)
{
	uint64_t by_space = (ns->h.nids >> k) >> 6;
	unsigned want = ns->cap[k] / 2;
	if (by_space < want)
		want = (unsigned)by_space;
	return want ? want : 1;
}

static unsigned refill(struct ps_ns *ns, struct ns_pt *pt, unsigned k)
{
	unsigned want = refill_want(ns, k), got = 0;
	uint64_t *c = cache(ns, pt, k);
	pthread_mutex_lock(&ns->lock);
	while (got < want && pool_take(ns, k, &c[pt->n[k]]))
		pt->n[k]++, got++;
	pthread_mutex_unlock(&ns->lock);
	/* the cache pops from its top. LOWEST: sort it, lowest on top (a split can hand out
	 * a lower id after a higher one); CYCLIC: the first id taken (the oldest) on top */
	for (unsigned i = 1; ns->policy == PS_NS_ID_LOWEST && i < pt->n[k]; i++)
		for (unsigned j = i; j > 0 && c[j - 1] < c[j]; j--) {
			uint64_t x = c[j];
			c[j] = c[j - 1];
			c[j - 1] = x;
		}
	uint64_t *r = c + pt->n[k] - got; /* the ids just taken */
	for (unsigned i = 0, j = got; ns->policy == PS_NS_ID_CYCLIC && i + 1 < j; i++, j--) {
		uint64_t x = r[i];
		r[i] = r[j - 1];
		r[j - 1] = x;
	}
	cnt(&pt->refills, 1);
	return got;
}

/* Move the oldest n ids of order k's cache to the pool. */
static void flush(struct ps_ns *ns, struct ns_pt *pt, unsigned k, unsigned n)
{
	uint64_t *c = cache(ns, pt, k);
	pthread_mutex_lock(&ns->lock);
	for (unsigned i = 0; i < n; i++)
		list_push(ns, &ns->pool[k], c[i]);
	pthread_mutex_unlock(&ns->lock);
	memmove(c, c + n, (pt->n[k] - n) * sizeof(*c));
	pt->n[k] -= n;
	cnt(&pt->flushes, 1);
}

/* Put id in order k's cache. LOWEST keeps each cache sorted, highest at the bottom, so
 * that an allocation pops the lowest id the thread holds and a flush returns the highest
 * ones; CYCLIC keeps arrival order. */
static void ns_cache_push(struct ps_ns *ns, struct ns_pt *pt, unsigned k, uint64_t id)
{
	if (pt->n[k] == ns->cap[k])
		flush(ns, pt, k, (ns->cap[k] + 1) / 2);
	uint64_t *c = cache(ns, pt, k);
	unsigned i = pt->n[k]++;
	if (ns->policy == PS_NS_ID_LOWEST)
		for (; i > 0 && c[i - 1] < id; i--)
			c[i] = c[i - 1];
	c[i] = id;
}

/* A word in PS_NS__CLAIM belongs to an extent claim in progress, which resolves it (to
 * RESERVED or back to FREE) after at most 2^k CASes of its own and waits for nothing:
 * wait for that. */
static uintptr_t wait_claim(_Atomic uintptr_t *w)
{
	uintptr_t v;
	tsync__wait_until((v = atomic_load_explicit(w, memory_order_acquire)) != PS_NS__CLAIM,
			  TSYNC__SPIN_HANDOFF);
	return v;
}

enum { CLAIM_OK = 0, CLAIM_TAKEN = 1, CLAIM_NOMEM = 2 };

/* Claim the 2^k ids at b for the caller: FREE -> RESERVED, all or none. CLAIM_OK with the
 * first id's word in *w0, CLAIM_TAKEN (some id was not FREE: every word is as it was),
 * or CLAIM_NOMEM (a trie node could not be allocated: nothing is left claimed). */
static int claim_at(struct ps_ns *ns, uint64_t b, unsigned k, _Atomic uintptr_t **w0)
{
	uint64_t sz = UINT64_C(1) << k;
	if (k == 0) {
		_Atomic uintptr_t *w = leaf_word(ns, b, true);
		if (w == NULL)
			return CLAIM_NOMEM;
		uintptr_t exp = PS_NS__FREE;
		if (!atomic_compare_exchange_strong_explicit(
			    w, &exp, PS_NS__RESERVED, memory_order_acquire, memory_order_relaxed))
			return CLAIM_TAKEN;
		*w0 = w;
		return CLAIM_OK;
	}
	/* Look first: a stale extent usually fails here, without touching a word. */
	for (uint64_t i = 0; i < sz; i++) {
		_Atomic uintptr_t *w = leaf_word(ns, b + i, false);
		if (w && atomic_load_explicit(w, memory_order_relaxed) != PS_NS__FREE)
			return CLAIM_TAKEN;
	}
	uint64_t i;
	int r = CLAIM_OK;
	for (i = 0; i < sz; i++) {
		_Atomic uintptr_t *w = leaf_word(ns, b + i, true);
		if (w == NULL) {
			r = CLAIM_NOMEM;
			break;
		}
		uintptr_t exp = PS_NS__FREE;
		if (!atomic_compare_exchange_strong_explicit(
			    w, &exp, PS_NS__CLAIM, memory_order_acquire, memory_order_relaxed)) {
			r = CLAIM_TAKEN;
			break;
		}
	}
	/* Resolve every CLAIM word: to RESERVED (ours now), or back to FREE. */
	uintptr_t to = r == CLAIM_OK ? PS_NS__RESERVED : PS_NS__FREE;
	for (uint64_t j = 0; j < i; j++)
		atomic_store_explicit(leaf_word(ns, b + j, false), to, memory_order_release);
	if (r == CLAIM_OK)
		*w0 = leaf_word(ns, b, false);
	return r;
}

/* The last resort before ENOSPC: scan every id of the space for an aligned run of 2^k
 * FREE ids (the ids other threads' caches hold, never-used ids the cursor cannot align,
 * ids left in the pool's lists as parts of other sizes) and claim the lowest. A missing
 * leaf node is 512 FREE ids. CLAIM_OK with *base and *w0, or CLAIM_TAKEN (none), or
 * CLAIM_NOMEM. Cost: one load per id of the space (this runs only when everything else
 * ran dry). */
static int scan_claim(struct ps_ns *ns, struct ns_pt *pt, unsigned k, uint64_t *base,
		      _Atomic uintptr_t **w0)
{
	uint64_t sz = UINT64_C(1) << k, nids = ns->h.nids;
	cnt(&pt->scans, 1);
	uint64_t b = 0;
	while (b <= nids - sz) {
		uint64_t i = 0;
		_Atomic uintptr_t *leaf = NULL;
		uint64_t leaf_base = UINT64_MAX;
		for (; i < sz; i++) {
			uint64_t id = b + i;
			uint64_t lb = id & ~(uint64_t)(PS_NS__FANOUT - 1);
			if (lb != leaf_base) {
				leaf = leaf_word(ns, lb, false);
				leaf_base = lb;
			}
			if (leaf == NULL) { /* 512 FREE ids */
				i = (lb + PS_NS__FANOUT) - b - 1;
				continue;
			}
			_Atomic uintptr_t *w = leaf + (id - lb);
			uintptr_t v = atomic_load_explicit(w, memory_order_relaxed);
			if (v == PS_NS__CLAIM)
				v = wait_claim(w);
			if (v != PS_NS__FREE)
				break;
		}
		if (i >= sz) {
			int r = claim_at(ns, b, k, w0);
			if (r != CLAIM_TAKEN) {
				*base = b;
				return r;
			}
			b += sz; /* lost a race for it: go on */
			continue;
		}
		/* id b + i is taken: the next aligned run starts after it */
		b = ((b + i) | (sz - 1)) + 1;
		if (b == 0) /* wrapped past the top */
			break;
	}
	return CLAIM_TAKEN;
}

/* Give every id in this thread's caches back to the pool (the pool splits larger
 * extents for smaller requests; a cache cannot). */
static void give_back(struct ps_ns *ns, struct ns_pt *pt)
{
	for (unsigned k = 0; k <= ns->max_order; k++)
		if (pt->n[k])
			flush(ns, pt, k, pt->n[k]);
}

/* Claim one free extent of order k: its words go FREE -> RESERVED. 0 with *base, or -1
 * with errno = ENOSPC or ENOMEM. */
static int claim(struct ps_ns *ns, struct ns_pt *pt, unsigned k, uint64_t *base,
		 _Atomic uintptr_t **w0)
{
	uint64_t sz = UINT64_C(1) << k;
	int dry = 0; /* how often the cache and the pool ran dry */
	for (;;) {
		if (pt->n[k] == 0 && refill(ns, pt, k) == 0) {
			switch (dry++) {
			case 0: /* ids may wait in our own queue past their grace: collect them */
				ps_mem_reclaim(ns->mem);
				continue;
			case 1: /* our caches of other sizes, for the pool to split */
				give_back(ns, pt);
				continue;
			default: {
				int r = scan_claim(ns, pt, k, base, w0);
				if (r == CLAIM_OK)
					return 0;
				errno = r == CLAIM_NOMEM ? ENOMEM : ENOSPC;
				return -1;
			}
			}
		}
		uint64_t b = cache(ns, pt, k)[--pt->n[k]];
		int r = claim_at(ns, b, k, w0);
		if (r == CLAIM_OK) {
			*base = b;
			return 0;
		}
		if (r == CLAIM_NOMEM) {
			ns_cache_push(ns, pt, k, b);
			errno = ENOMEM;
			return -1;
		}
		cnt(&pt->stale, 1);
		if (k > 0) { /* the extent is broken up: its other free ids return singly */
			pthread_mutex_lock(&ns->lock);
			for (uint64_t j = 0; j < sz; j++) {
				_Atomic uintptr_t *w = leaf_word(ns, b + j, false);
				if (w == NULL ||
				    atomic_load_explicit(w, memory_order_relaxed) == PS_NS__FREE)
					list_push(ns, &ns->pool[0], b + j);
			}
			pthread_mutex_unlock(&ns->lock);
		}
	}
}

/* ---- the grace hook: where ids come back ------------------------------------------------ */

/* Words [lo, hi) go back to FREE (they are ours: GRACE of our ids, or RESERVED). */
static void words_free(struct ps_ns *ns, uint64_t lo, uint64_t hi)
{
	for (uint64_t i = lo; i < hi; i++)
		atomic_store_explicit(leaf_word(ns, i, false), PS_NS__FREE, memory_order_release);
}

/* A hint that the 2^k ids at base are free: the caller's cache, or for CYCLIC the back of
 * the pool's FIFO (reused last). */
static void hint_push(struct ps_ns *ns, struct ns_pt *pt, uint64_t base, unsigned k)
{
	if (ns->policy == PS_NS_ID_CYCLIC) {
		pthread_mutex_lock(&ns->lock);
		list_push(ns, &ns->pool[k], base);
		pthread_mutex_unlock(&ns->lock);
	} else {
		ns_cache_push(ns, pt, k, base);
	}
}

static bool ns_grace(struct ps_mem *m, void *obj, tsync_tick_t free_time, void *arg)
{
	(void)m;
	struct ps_ns *ns = arg;
	/* No record and none to be had (out of memory): refuse for now; the object stays
	 * queued and its grace is tried again at a later reclamation. */
	struct ns_pt *pt = nspt_try(ns);
	if (TSYNC_UNLIKELY(pt == NULL))
		return false;
	struct ns_tail *t = tail_of(ns, obj);
	uint64_t id = atomic_load_explicit(&t->idw, memory_order_relaxed) & ~ID_FREED;
	if (ns->grace_fn && !ns->grace_fn(ns, obj, id, free_time, ns->grace_arg)) {
		cnt(&pt->refusals, 1);
		return false;
	}
	struct ns_ext *e = t->ext;
	/* A single id, or (PS_NS_EXTENT_SINGLY) an id of an extent, is free on its own now.
	 * An extent's id gets no hint of its own (ps_ns_alloc_at and the scan find it), so
	 * that the lists keep handing out the extent whole when all of it comes back. */
	if (e == NULL || ns->singly)
		atomic_store_explicit(t->w, PS_NS__FREE, memory_order_release);
	if (e == NULL) {
		hint_push(ns, pt, id, 0);
	} else if (atomic_fetch_sub_explicit(&e->live, 1, memory_order_acq_rel) == 1) {
		/* the last bound id: the extent's words that are still ours go FREE (all of
		 * them; SINGLY: the unbound tail), and the extent is hinted whole - a claim
		 * finds out if one of its ids was taken meanwhile and returns the rest singly */
		uint64_t end = e->base + (UINT64_C(1) << e->order);
		words_free(ns, ns->singly ? e->base + e->n : e->base, end);
		hint_push(ns, pt, e->base, e->order);
		ps_free_now(ns->extmem, e);
	}
	cnt(&pt->reclaimed, 1);
	return true;
}

/* Runs in the exiting thread (registry mutex held), after ps_mem's own exit work (our
 * client was added after the allocator's), so ids its last reclamation returned are
 * here too: hand the whole cache to the pool. */
static void ns_thread_exit(struct tsync__client *c, unsigned tid)
{
	struct ps_ns *ns = (struct ps_ns *)((char *)c - offsetof(struct ps_ns, client));
	struct ns_pt *pt = nspt_find(ns, tid);
	if (pt == NULL || pt->ids == NULL)
		return;
	for (unsigned k = 0; k <= ns->max_order; k++)
		if (pt->n[k])
			flush(ns, pt, k, pt->n[k]);
}

/* fork (registry hooks; docs/design.md §8): the pool mutex is taken before the fork and
 * released after it; in the child the vanished threads' id caches stay as they are,
 * unused (their ids are retired). */
static struct ps_ns *ns_of_client(struct tsync__client *c)
{
	return (struct ps_ns *)((char *)c - offsetof(struct ps_ns, client));
}

static void ns_fork_prepare(struct tsync__client *c, int phase)
{
	if (phase == 1)
		pthread_mutex_lock(&ns_of_client(c)->lock);
}

static void ns_fork_release(struct tsync__client *c)
{
	pthread_mutex_unlock(&ns_of_client(c)->lock);
}

static void ns_fork_child(struct tsync__client *c, const unsigned char *ids, unsigned n)
{
	(void)ids;
	(void)n;
	ns_fork_release(c);
}

/* ---- API ------------------------------------------------------------------------------- */

static void ns_free_all(struct ps_ns *ns);

struct ps_ns *ps_ns_create(struct ps *ps, size_t obj_size, const struct ps_ns_config *cfg)
{
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	if (cfg) {
		if (cfg->size != sizeof(c))
			goto inval;
		c = *cfg;
	}
	if (c.id_bits == 0)
		c.id_bits = 32;
	if (c.max_order == 0 && (cfg == NULL || cfg->max_order == 0))
		c.max_order = c.id_bits < 10 ? c.id_bits : 10;
	if (ps == NULL || obj_size == 0 || obj_size > (SIZE_MAX >> 2) ||
	    c.id_bits > PS_NS_ID_BITS_MAX || c.max_order > PS_NS_ORDER_MAX ||
	    c.max_order > c.id_bits ||
	    (c.id_policy != PS_NS_ID_LOWEST && c.id_policy != PS_NS_ID_CYCLIC) ||
	    (c.extent_policy != PS_NS_EXTENT_WHOLE && c.extent_policy != PS_NS_EXTENT_SINGLY) ||
	    (c.mem && (c.mem->size != sizeof(struct ps_mem_config) || c.mem->grace_fn)))
		goto inval;

	struct ps_ns *ns = calloc(1, sizeof(*ns));
	if (ns == NULL)
		return NULL;
	ns->ps = ps;
	ns->obj_size = obj_size;
	ns->tail_off = tsync__round_up(obj_size, 8);
	ns->id_bits = c.id_bits;
	ns->max_order = c.max_order;
	ns->policy = c.id_policy;
	ns->singly = c.extent_policy == PS_NS_EXTENT_SINGLY;
	ns->grace_fn = c.grace_fn;
	ns->grace_arg = c.grace_arg;
	unsigned base_cap = c.id_cache ? c.id_cache : 64;
	for (unsigned k = 0; k <= ns->max_order; k++) {
		ns->cap[k] = k == 0 ? base_cap : (base_cap / 4 < 4 ? 4 : base_cap / 4);
		ns->off[k] = ns->ids_per_pt;
		ns->ids_per_pt += ns->cap[k];
	}
	ns->h.nids = UINT64_C(1) << c.id_bits;
	ns->h.height = (c.id_bits + PS_NS__FANOUT_SHIFT - 1) / PS_NS__FANOUT_SHIFT;
	pthread_mutex_init(&ns->lock, NULL);
	ns->nchunks = tsync__chunk_count();
	ns->chunks = calloc(ns->nchunks, sizeof(*ns->chunks));
	ns->h.root = node_new(ns);

	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	if (c.mem)
		mc = *c.mem;
	mc.grace_fn = ns_grace;
	mc.grace_arg = ns;
	if (ns->chunks && ns->h.root)
		ns->mem = ps_mem_create(ps, ns->tail_off + sizeof(struct ns_tail), &mc);
	if (ns->mem)
		ns->extmem = ps_mem_create(ps, sizeof(struct ns_ext), NULL);
	if (ns->extmem == NULL) {
		int e = errno ? errno : ENOMEM;
		ps_mem_destroy(ns->mem);
		free(ns->chunks);
		free(ns->h.root);
		pthread_mutex_destroy(&ns->lock);
		free(ns);
		errno = e;
		return NULL;
	}
	/* after ps_mem_create: at thread exit, the allocator's reclamation runs first */
	ns->client.thread_exit = ns_thread_exit;
	ns->client.thread_prepare = ns_thread_prepare;
	ns->client.fork_prepare = ns_fork_prepare;
	ns->client.fork_parent = ns_fork_release;
	ns->client.fork_child = ns_fork_child;
	if (tsync__client_add(&ns->client) != 0) { /* records of registered threads */
		ns_free_all(ns);
		errno = ENOMEM;
		return NULL;
	}
	return ns;
inval:
	errno = EINVAL;
	return NULL;
}

void ps_ns_destroy(struct ps_ns *ns)
{
	if (ns == NULL)
		return;
	tsync__client_remove(&ns->client);
	ns_free_all(ns);
}

/* Free everything ns owns (ps_ns_destroy, after the client is removed; ps_ns_create's
 * failure once every part exists). */
static void ns_free_all(struct ps_ns *ns)
{
	ps_mem_destroy(ns->mem);
	ps_mem_destroy(ns->extmem);
	trie_free(ns->h.root, ns->h.height - 1);
	for (unsigned k = 0; k <= ns->max_order; k++)
		free(ns->pool[k].a);
	unsigned pos = 0;
	for (struct ns_pt *p; (p = nspt_next(ns, &pos)) != NULL;)
		free(p->ids);
	tsync__tdir_free_chunks((void *_Atomic *)ns->chunks, ns->nchunks);
	free(ns->chunks);
	pthread_mutex_destroy(&ns->lock);
	free(ns);
}

static void tail_init(struct ps_ns *ns, void *obj, uint64_t id, struct ns_ext *e,
		      _Atomic uintptr_t *w)
{
	struct ns_tail *t = tail_of(ns, obj);
	atomic_store_explicit(&t->idw, id, memory_order_relaxed);
	t->ext = e;
	t->w = w;
}

void *ps_ns_alloc(struct ps_ns *ns, uint64_t *id)
{
	if (ns == NULL || id == NULL) {
		errno = EINVAL;
		return NULL;
	}
	/* the object first: its allocation may reclaim, and reclamation pushes ids onto
	 * the cache that claim() is about to pop */
	void *obj = ps_alloc(ns->mem);
	if (obj == NULL)
		return NULL;
	struct ns_pt *pt = nspt_try(ns);
	uint64_t b;
	_Atomic uintptr_t *w;
	if (pt == NULL || claim(ns, pt, 0, &b, &w) != 0) {
		int e = errno;
		ps_free_now(ns->mem, obj);
		errno = e;
		return NULL;
	}
	tail_init(ns, obj, b, NULL, w);
	cnt(&pt->allocs, 1);
	*id = b;
	return obj;
}

void *ps_ns_alloc_at(struct ps_ns *ns, uint64_t id)
{
	if (ns == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (id >= ns->h.nids) {
		errno = ERANGE;
		return NULL;
	}
	void *obj = ps_alloc(ns->mem);
	if (obj == NULL)
		return NULL;
	struct ns_pt *pt = nspt_try(ns);
	if (pt == NULL) {
		ps_free_now(ns->mem, obj);
		errno = ENOMEM;
		return NULL;
	}
	_Atomic uintptr_t *w = leaf_word(ns, id, true);
	uintptr_t exp;
	bool reclaimed = false;
	for (;;) {
		exp = PS_NS__FREE;
		if (w == NULL || atomic_compare_exchange_strong_explicit(w, &exp, PS_NS__RESERVED,
									 memory_order_acquire,
									 memory_order_relaxed))
			break;
		if (exp == PS_NS__GRACE && !reclaimed) {
			/* it may wait in our own queue past its grace: collect that, once */
			ps_mem_reclaim(ns->mem);
			reclaimed = true;
			continue;
		}
		if (exp != PS_NS__CLAIM)
			break;
		wait_claim(w); /* an extent claim over id is in progress: its outcome decides */
	}
	if (w == NULL || exp != PS_NS__FREE) {
		ps_free_now(ns->mem, obj);
		errno = w == NULL ? ENOMEM : exp == PS_NS__GRACE ? EBUSY : EEXIST;
		return NULL;
	}
	tail_init(ns, obj, id, NULL, w);
	cnt(&pt->allocs, 1);
	return obj;
}

int ps_ns_alloc_extent(struct ps_ns *ns, size_t n, uint64_t *base, void **objs)
{
	if (ns == NULL || base == NULL || objs == NULL || n == 0 ||
	    n > (size_t)1 << ns->max_order) {
		errno = EINVAL;
		return -1;
	}
	unsigned k = 0;
	while (((size_t)1 << k) < n)
		k++;
	size_t got = 0;
	struct ns_ext *e = NULL;
	for (; got < n; got++)
		if ((objs[got] = ps_alloc(ns->mem)) == NULL)
			goto nomem;
	if (k > 0 && (e = ps_alloc(ns->extmem)) == NULL)
		goto nomem;
	struct ns_pt *pt = nspt_try(ns);
	if (pt == NULL)
		goto nomem;
	uint64_t b;
	_Atomic uintptr_t *w0;
	if (claim(ns, pt, k, &b, &w0) != 0)
		goto fail;
	if (e) {
		atomic_store_explicit(&e->live, n, memory_order_relaxed);
		e->base = b;
		e->n = n;
		e->order = k;
	}
	for (size_t i = 0; i < n; i++)
		tail_init(ns, objs[i], b + i, e, i ? leaf_word(ns, b + i, false) : w0);
	cnt(&pt->allocs, n);
	if (k > 0)
		cnt(&pt->extents, 1);
	*base = b;
	return 0;
nomem:
	errno = ENOMEM;
fail:;
	int err = errno;
	for (size_t i = 0; i < got; i++)
		ps_free_now(ns->mem, objs[i]);
	if (e)
		ps_free_now(ns->extmem, e);
	errno = err;
	return -1;
}

/* obj's tail, after checking that obj is an object of ns (aborts naming `call`). */
static struct ns_tail *checked_tail(struct ps_ns *ns, void *obj, const char *call)
{
	if (!hdr_plausible(HDR(obj)) || ps_mem_of(obj) != ns->mem)
		tsync__fatal("%s: %p is not an object of this namespace", call, obj);
	return tail_of(ns, obj);
}

void ps_ns_publish(struct ps_ns *ns, void *obj)
{
	struct ns_tail *t = checked_tail(ns, obj, "ps_ns_publish");
	uint64_t idw = atomic_load_explicit(&t->idw, memory_order_relaxed);
	_Atomic uintptr_t *w = (idw & ID_FREED) ? NULL : t->w;
	/* Only the allocating thread publishes, and nothing else moves a RESERVED word that
	 * an object holds (ps_ns_alloc_at's CAS needs FREE): a check and a store suffice. */
	if (w == NULL || atomic_load_explicit(w, memory_order_relaxed) != PS_NS__RESERVED)
		tsync__fatal("ps_ns_publish: id %llu of %p is not reserved (published twice, "
			     "or freed)",
			     (unsigned long long)(idw & ~ID_FREED), obj);
	/* release: the caller's initialisation of obj happens-before a lookup that sees it */
	atomic_store_explicit(w, (uintptr_t)obj, memory_order_release);
}

void ps_ns_free(struct ps_ns *ns, void *obj)
{
	if (obj == NULL)
		return;
	struct ns_tail *t = checked_tail(ns, obj, "ps_ns_free");
	uint64_t idw = atomic_load_explicit(&t->idw, memory_order_relaxed);
	if (idw & ID_FREED)
		tsync__fatal("ps_ns_free: double free of id %llu (object %p)",
			     (unsigned long long)(idw & ~ID_FREED), obj);
	atomic_store_explicit(&t->idw, idw | ID_FREED, memory_order_relaxed);
	_Atomic uintptr_t *w = t->w;
	uintptr_t v = atomic_load_explicit(w, memory_order_relaxed);
	if (v != (uintptr_t)obj && v != PS_NS__RESERVED)
		tsync__fatal("ps_ns_free: id %llu is not bound to %p", (unsigned long long)idw,
			     obj);
	/* The id stops naming obj now: lookups that start later find nothing. A plain store:
	 * while the word holds obj (or obj's reservation) only obj's owner changes it. */
	atomic_store_explicit(w, PS_NS__GRACE, memory_order_relaxed);
	cnt(&nspt_self(ns)->frees, 1);
	/* ps_free stamps the free time after the store above is visible
	 * (tsync_now_ordered): a section that began after it cannot find obj by id. */
	ps_free(ns->mem, obj);
}

uint64_t ps_ns_id(const struct ps_ns *ns, const void *obj)
{
	return atomic_load_explicit(&tail_of(ns, obj)->idw, memory_order_relaxed) & ~ID_FREED;
}

static void *next_in(struct ps_ns *ns, struct ps_ns__node *n, unsigned level, uint64_t lo,
		     uint64_t base, uint64_t *out)
{
	unsigned shift = PS_NS__FANOUT_SHIFT * level;
	unsigned start = lo > base ? (unsigned)((lo - base) >> shift) : 0;
	for (unsigned i = start; i < PS_NS__FANOUT; i++) {
		uint64_t sb = base + ((uint64_t)i << shift);
		if (sb >= ns->h.nids)
			break;
		uintptr_t v = atomic_load_explicit(&n->slot[i], memory_order_acquire);
		if (level == 0) {
			if (v > PS_NS__CLAIM) {
				*out = sb;
				return (void *)v;
			}
		} else if (v) {
			void *r = next_in(ns, (struct ps_ns__node *)v, level - 1, lo, sb, out);
			if (r)
				return r;
		}
	}
	return NULL;
}

void *ps_ns_next(struct ps_ns *ns, uint64_t *id)
{
	if (*id >= ns->h.nids)
		return NULL;
	return next_in(ns, ns->h.root, ns->h.height - 1, *id, 0, id);
}

struct ps *ps_ns_ps(const struct ps_ns *ns)
{
	return ns->ps;
}
struct ps_mem *ps_ns_mem(const struct ps_ns *ns)
{
	return ns->mem;
}
size_t ps_ns_obj_size(const struct ps_ns *ns)
{
	return ns->obj_size;
}
uint64_t ps_ns_capacity(const struct ps_ns *ns)
{
	return ns->h.nids;
}

int ps_ns_stats(struct ps_ns *ns, struct ps_ns_stats *out)
{
	if (ns == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	uint64_t refusals = 0;
	unsigned pos = 0;
	for (struct ns_pt *p; (p = nspt_next(ns, &pos)) != NULL;) {
#define S(f) atomic_load_explicit(&p->f, memory_order_relaxed)
		out->allocs += S(allocs);
		out->frees += S(frees);
		out->reclaimed += S(reclaimed);
		out->extents += S(extents);
		refusals += S(refusals);
		out->refills += S(refills);
		out->flushes += S(flushes);
		out->stale += S(stale);
		out->scans += S(scans);
#undef S
	}
	out->grace_refusals = refusals;
	out->live = out->allocs - out->frees;
	out->grace = out->frees - out->reclaimed;
	pthread_mutex_lock(&ns->lock);
	for (unsigned k = 0; k <= ns->max_order; k++)
		out->pool_ids += (uint64_t)ns->pool[k].n << k;
	out->fresh = ns->fresh;
	out->splits = ns->splits;
	pthread_mutex_unlock(&ns->lock);
	out->trie_nodes = atomic_load_explicit(&ns->trie_nodes, memory_order_relaxed);
	out->trie_bytes = out->trie_nodes * NODE_BYTES;
	return 0;
}
