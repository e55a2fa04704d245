/*
 * src/ps_hash.c - the resizable hash table of <tsync/ps_hash.h>: chains in a bucket array,
 * striped ps_lock writer locks, lock-free readers in ParSec sections (ParSec (EuroSys
 * 2016) §2.2, §3.5), and the relativistic two-array resize (Triplett, McKenney and
 * Walpole, USENIX ATC 2011) driven by writers without blocking anyone. The argument that
 * no reader misses a present node or sees a freed one is docs/hash.md §3-§4; the comments
 * here name the invariant each step keeps:
 *
 *  H1 Every node in the table is on exactly one chain: of the current array, or (while a
 *     resize migrates) of the array it migrates from, `src`.
 *  H2 A chain is changed only under its stripe's lock, and stripe s guards the buckets
 *     b == s (mod nstripes) of every array (nstripes <= the smallest array's size, so a
 *     key's old and new buckets have the same stripe).
 *  H3 A migrated node is linked into its new chain (release) before it is unlinked from
 *     its old one (release). A node's own next link changes only when its successor is
 *     unlinked or replaced (to the successor's successor, or the replacement) or when it
 *     is the old tail being migrated (to its new chain's head) - never when the node
 *     itself is deleted or replaced, so a reader standing on it goes on.
 *  H4 Migration starts only once ps_quiesce proves every section active at the new
 *     array's publication has ended: every section that migration overlaps loaded the
 *     new array (and so searches both).
 *  H5 An array is freed (ps_call) only after it stopped being reachable from h->tab and
 *     from any array's src, so only by sections that began earlier.
 */
#include <errno.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/ps_hash.h>
#include <tsync/ps_lock.h>
#include <tsync/ps_mem.h>
#include "util.h"

#define RELAXED memory_order_relaxed
#define ACQUIRE memory_order_acquire
#define RELEASE memory_order_release
#define ACQ_REL memory_order_acq_rel

#define MAX_POWER 40u

enum { PH_WAIT = 1, PH_MIGRATE = 2, PH_DONE = 3 };

typedef _Atomic(struct ps_hash_node *) link_t;

/* A bucket array; while it is the destination of a resize, also that resize's state. */
struct tab {
	/* line 0: what readers load */
	void *raw;                 /* what alloc returned (t is raw rounded up to a line) */
	_Atomic(struct tab *) src; /* the array being migrated from, or NULL (H1) */
	uint64_t mask;             /* buckets - 1 */
	unsigned power;
	struct ps_hash *h;   /* for the retire callback */
	size_t bytes;        /* this allocation's size */
	struct ps_head head; /* ps_call retirement (H5) */
	/* line 1: the resize, written by helpers */
	alignas(TSYNC_CACHE_LINE) _Atomic int phase;
	_Atomic uint64_t t1;     /* publication stamp (0: not yet stamped) */
	_Atomic uint64_t cursor; /* next src bucket to claim */
	_Atomic uint64_t done;   /* src buckets migrated */
	alignas(TSYNC_CACHE_LINE) link_t b[];
};

struct stripe {
	alignas(TSYNC_CACHE_LINE) struct ps_lock lock;
	_Atomic int64_t delta; /* count change not yet added to h->count (written under
				* the lock, read by ps_hash_stats) */
};

struct ps_hash {
	/* line 0: fixed at creation, and tab (written once per resize) */
	alignas(TSYNC_CACHE_LINE) _Atomic(struct tab *) tab;
	struct ps *ps;
	struct stripe *stripes;
	uint64_t smask; /* nstripes - 1 */
	size_t key_size;
	ptrdiff_t key_offset;
	ps_hash_hash_fn hash;
	ps_hash_match_fn match;
	void *arg;
	/* line 1+: the rest of the configuration */
	alignas(TSYNC_CACHE_LINE) int reclaim;
	size_t node_offset;
	ptrdiff_t head_offset;
	void (*call_fn)(struct ps_head *head);
	unsigned min_power;
	bool no_auto;
	void *(*alloc)(size_t, void *);
	void (*free)(void *, size_t, void *);
	void *alloc_arg;
	/* resize control and counters */
	alignas(TSYNC_CACHE_LINE) _Atomic int resizing; /* a resize owns the slot */
	_Atomic uint64_t resizes, grows, shrinks, failures;
	alignas(TSYNC_CACHE_LINE) _Atomic int64_t count; /* nodes, less the stripes' deltas */
};

/* ---- hashing ------------------------------------------------------------------------ */

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

uint64_t ps_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);
	const uint64_t c1 = 0x87c37b91114253d5ull, c2 = 0x4cf5ad432745937full;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t k;
		memcpy(&k, s + i, 8);
		k *= c1;
		k = rotl64(k, 31);
		k *= c2;
		h ^= k;
		h = rotl64(h, 27) * 5 + 0x52dce729;
	}
	uint64_t k = 0;
	for (size_t j = 0; i + j < n; j++)
		k |= (uint64_t)s[i + j] << (8 * j);
	if (n & 7) {
		k *= c1;
		k = rotl64(k, 31);
		k *= c2;
		h ^= k;
	}
	return fmix64(h ^ n);
}

static inline uint64_t key_hash(const struct ps_hash *h, const void *key)
{
	if (h->key_size == 8) {
		uint64_t k;
		memcpy(&k, key, 8);
		return fmix64(k);
	}
	if (h->key_size != 0)
		return ps_hash_bytes(key, h->key_size, 0);
	return h->hash(key, h->arg);
}

static inline bool key_match(const struct ps_hash *h, const struct ps_hash_node *n, const void *key)
{
	if (h->key_size == 8) {
		uint64_t a, b;
		memcpy(&a, (const char *)n + h->key_offset, 8);
		memcpy(&b, key, 8);
		return a == b;
	}
	if (h->key_size != 0)
		return memcmp((const char *)n + h->key_offset, key, h->key_size) == 0;
	return h->match(n, key, h->arg);
}

/* ---- arrays ------------------------------------------------------------------------- */

static void *def_alloc(size_t bytes, void *arg)
{
	(void)arg;
	return malloc(bytes);
}

static void def_free(void *p, size_t bytes, void *arg)
{
	(void)bytes;
	(void)arg;
	free(p);
}

static struct tab *tab_new(struct ps_hash *h, unsigned power)
{
	/* One line more than the array, so that it can start on a line whatever alloc's
	 * alignment. */
	size_t bytes =
		sizeof(struct tab) + ((size_t)1 << power) * sizeof(link_t) + TSYNC_CACHE_LINE;
	void *raw = h->alloc(bytes, h->alloc_arg);
	if (raw == NULL)
		return NULL;
	struct tab *t = (struct tab *)(((uintptr_t)raw + TSYNC_CACHE_LINE - 1) &
				       ~(uintptr_t)(TSYNC_CACHE_LINE - 1));
	t->raw = raw;
	t->mask = ((uint64_t)1 << power) - 1;
	t->power = power;
	t->h = h;
	t->bytes = bytes;
	atomic_init(&t->src, NULL);
	atomic_init(&t->phase, PH_DONE);
	atomic_init(&t->t1, 0);
	atomic_init(&t->cursor, 0);
	atomic_init(&t->done, 0);
	/* Write every bucket here, before publication, even if alloc zeroed them lazily (a
	 * large calloc maps pages on first touch): a reader's load of an untouched page maps
	 * the shared zero page, and the migration's first store to it is then a copy-on-write
	 * fault that must flush every CPU's TLB (an IPI per page, while both arrays are
	 * searched). Measured on 2 vCPUs: lookups and updates all but stopped for 50-550 ms
	 * while a 2 MiB array filled; written here, its pages are mapped once, by this
	 * thread, with no flush. */
	memset(t->b, 0, ((size_t)1 << power) * sizeof(link_t));
	return t;
}

static void tab_retire_cb(struct ps_head *head)
{
	struct tab *t = (struct tab *)((char *)head - offsetof(struct tab, head));
	t->h->free(t->raw, t->bytes, t->h->alloc_arg);
}

/* ---- create / destroy --------------------------------------------------------------- */

static unsigned log2_ceil(uint64_t v)
{
	unsigned p = 0;
	while (p < 63 && ((uint64_t)1 << p) < v)
		p++;
	return p;
}

struct ps_hash *ps_hash_create(struct ps *ps, const struct ps_hash_config *cfg)
{
	if (ps == NULL || cfg == NULL || cfg->size != sizeof(*cfg) ||
	    (cfg->key_size == 0 && (cfg->hash == NULL || cfg->match == NULL)) ||
	    cfg->reclaim < PS_HASH_RECLAIM_PS_FREE || cfg->reclaim > PS_HASH_RECLAIM_NONE ||
	    (cfg->reclaim == PS_HASH_RECLAIM_CALL && cfg->call_fn == NULL) ||
	    ((cfg->alloc == NULL) != (cfg->free == NULL))) {
		errno = EINVAL;
		return NULL;
	}
	size_t minb = cfg->min_buckets ? cfg->min_buckets : 64;
	if (minb < 16 || (minb & (minb - 1)) != 0 || minb > ((size_t)1 << MAX_POWER)) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_hash *h = aligned_alloc(TSYNC_CACHE_LINE, sizeof(*h));
	if (h == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(h, 0, sizeof(*h));
	h->ps = ps;
	h->key_size = cfg->key_size;
	h->key_offset = cfg->key_offset;
	h->hash = cfg->hash;
	h->match = cfg->match;
	h->arg = cfg->arg;
	h->reclaim = cfg->reclaim;
	h->node_offset = cfg->node_offset;
	h->head_offset = cfg->head_offset;
	h->call_fn = cfg->call_fn;
	h->min_power = log2_ceil(minb);
	h->no_auto = cfg->no_auto_resize;
	h->alloc = cfg->alloc ? cfg->alloc : def_alloc;
	h->free = cfg->free ? cfg->free : def_free;
	h->alloc_arg = cfg->alloc_arg;
	size_t ns = minb < PS_HASH_MAX_STRIPES ? minb : PS_HASH_MAX_STRIPES;
	h->smask = ns - 1;
	h->stripes = aligned_alloc(TSYNC_CACHE_LINE, ns * sizeof(struct stripe));
	unsigned p0 = log2_ceil(cfg->initial_buckets ? cfg->initial_buckets : minb);
	if (p0 < h->min_power)
		p0 = h->min_power;
	if (p0 > MAX_POWER)
		p0 = MAX_POWER;
	struct tab *t = h->stripes ? tab_new(h, p0) : NULL;
	if (t == NULL) {
		free(h->stripes);
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < ns; i++) {
		ps_lock_init(&h->stripes[i].lock);
		atomic_init(&h->stripes[i].delta, 0);
	}
	atomic_init(&h->tab, t);
	return h;
}

void ps_hash_destroy(struct ps_hash *h)
{
	if (h == NULL)
		return;
	if (ps_in_section(h->ps))
		tsync__fatal("ps_hash_destroy: called inside a section of the table's ps");
	/* Finish a resize in progress so that exactly one array is left here. */
	while (ps_hash_poll(h))
		sched_yield();
	/* Arrays retired with ps_call reference h (for the free function): run them. */
	ps_barrier(h->ps);
	struct tab *t = atomic_load_explicit(&h->tab, RELAXED);
	h->free(t->raw, t->bytes, h->alloc_arg);
	free(h->stripes);
	free(h);
}

/* ---- lookup ------------------------------------------------------------------------- */

static inline struct ps_hash_node *chain_find(const struct ps_hash *h, link_t *head, uint64_t hash,
					      const void *key)
{
	for (struct ps_hash_node *n = atomic_load_explicit(head, ACQUIRE); n != NULL;
	     n = atomic_load_explicit(&n->next, ACQUIRE))
		if (n->hash == hash && key_match(h, n, key))
			return n;
	return NULL;
}

struct ps_hash_node *ps_hash_lookup(struct ps_hash *h, const void *key)
{
	uint64_t hash = key_hash(h, key);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	struct tab *o = atomic_load_explicit(&t->src, ACQUIRE);
	/* Old chain first, then new (H3: a node leaves the old chain only after it is on
	 * the new one, so a search that misses it in the old chain finds it in the new). */
	if (TSYNC_UNLIKELY(o != NULL)) {
		struct ps_hash_node *n = chain_find(h, &o->b[hash & o->mask], hash, key);
		if (n != NULL)
			return n;
	}
	return chain_find(h, &t->b[hash & t->mask], hash, key);
}

/* ---- writers ------------------------------------------------------------------------ */

static inline struct stripe *stripe_of(struct ps_hash *h, uint64_t hash)
{
	return &h->stripes[hash & h->smask];
}

/* Under the stripe lock: the link that points to a node matching (node identity if
 * want != NULL, else hash and key) in the old chain, then the new one. */
static link_t *find_link(struct ps_hash *h, struct tab *t, struct tab *o, uint64_t hash,
			 const void *key, const struct ps_hash_node *want,
			 struct ps_hash_node **out)
{
	struct tab *tabs[2] = {o, t};
	for (int i = 0; i < 2; i++) {
		if (tabs[i] == NULL)
			continue;
		link_t *pp = &tabs[i]->b[hash & tabs[i]->mask];
		for (struct ps_hash_node *n = atomic_load_explicit(pp, RELAXED); n != NULL;
		     pp = &n->next, n = atomic_load_explicit(pp, RELAXED)) {
			if (want != NULL ? n == want : (n->hash == hash && key_match(h, n, key))) {
				*out = n;
				return pp;
			}
		}
	}
	*out = NULL;
	return NULL;
}

static void retire(struct ps_hash *h, struct ps_hash_node *n)
{
	switch (h->reclaim) {
	case PS_HASH_RECLAIM_PS_FREE: {
		void *obj = (char *)n - h->node_offset;
		ps_free(ps_mem_of(obj), obj);
		break;
	}
	case PS_HASH_RECLAIM_CALL:
		ps_call(h->ps, (struct ps_head *)((char *)n + h->head_offset), h->call_fn);
		break;
	default: break;
	}
}

/* Count change under the stripe lock: returns the new global count when this change
 * flushed a batch (the resize policy looks at it then), else -1. The batch keeps the
 * count exact to within buckets / 16 (docs/hash.md §6). */
static int64_t count_add(struct ps_hash *h, struct stripe *s, struct tab *t, int64_t d)
{
	int64_t v = atomic_load_explicit(&s->delta, RELAXED) + d;
	int64_t batch = (int64_t)((t->mask + 1) / ((h->smask + 1) * 16));
	if (batch < 1)
		batch = 1;
	if (v >= batch || v <= -batch) {
		atomic_store_explicit(&s->delta, 0, RELAXED);
		return atomic_fetch_add_explicit(&h->count, v, RELAXED) + v;
	}
	atomic_store_explicit(&s->delta, v, RELAXED);
	return -1;
}

static void help(struct ps_hash *h);
static int start_resize(struct ps_hash *h, unsigned power);

/* The automatic policy: the power of two the table should have for count nodes, or the
 * current one. */
static unsigned want_power(struct ps_hash *h, uint64_t buckets, int64_t count, bool force)
{
	unsigned cur = log2_ceil(buckets);
	if (count < 0)
		count = 0;
	bool grow = (uint64_t)count > buckets * PS_HASH_GROW_LOAD;
	bool shrink = (uint64_t)count < buckets / PS_HASH_SHRINK_DIV && cur > h->min_power;
	if (!grow && !shrink && !force)
		return cur;
	unsigned p = log2_ceil(2 * (uint64_t)count);
	if (p < h->min_power)
		p = h->min_power;
	if (p > MAX_POWER)
		p = MAX_POWER;
	if (force)
		return p;
	return (grow && p > cur) || (shrink && p < cur) ? p : cur;
}

/* What an update saw of the array it used, read inside its section (after it, the
 * array may be retired). */
struct seen {
	uint64_t buckets;
	unsigned power;
	bool resizing;
	int64_t count; /* the global count if this update flushed a batch, else -1 */
};

static inline struct seen seen_of(struct tab *t, int64_t count)
{
	struct seen v = {t->mask + 1, t->power, atomic_load_explicit(&t->src, RELAXED) != NULL,
			 count};
	return v;
}

/* After an update, outside its lock and section: start a resize the count calls for,
 * and help the one in progress. */
static inline void after_update(struct ps_hash *h, struct seen v)
{
	if (v.count >= 0 && !h->no_auto && !v.resizing) {
		unsigned p = want_power(h, v.buckets, v.count, false);
		if (p != v.power && atomic_load_explicit(&h->resizing, RELAXED) == 0 &&
		    start_resize(h, p) == 0)
			v.resizing = true;
	}
	if (TSYNC_UNLIKELY(v.resizing))
		help(h);
}

static void link_new(struct tab *t, struct ps_hash_node *node)
{
	link_t *head = &t->b[node->hash & t->mask];
	atomic_store_explicit(&node->next, atomic_load_explicit(head, RELAXED), RELAXED);
	/* release: the node's initialisation happens-before a reader that finds it. */
	atomic_store_explicit(head, node, RELEASE);
}

/* op: 0 insert, 1 insert-unique, 2 replace. */
static struct ps_hash_node *do_insert(struct ps_hash *h, struct ps_hash_node *node, const void *key,
				      int op, const char *fn)
{
	uint64_t hash = key_hash(h, key);
	node->hash = hash;
	struct stripe *s = stripe_of(h, hash);
	ps_enter(h->ps);
	ps_lock_lock(&s->lock);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	struct tab *o = atomic_load_explicit(&t->src, ACQUIRE);
	struct ps_hash_node *dup;
	/* Identity first: a node already in the table is a programming error. */
	if (find_link(h, t, o, hash, key, node, &dup) != NULL) {
		ps_lock_unlock(&s->lock);
		tsync__fatal("%s: node %p is already in the table", fn, (void *)node);
	}
	struct ps_hash_node *found = NULL;
	link_t *pp = NULL;
	if (op != 0)
		pp = find_link(h, t, o, hash, key, NULL, &found);
	int64_t count = -1;
	if (found != NULL && op == 1) {
		ps_lock_unlock(&s->lock);
		ps_exit(h->ps);
		return found; /* valid while the caller's own section lasts */
	}
	if (found != NULL) {
		/* Replace in place, in whichever chain holds it (H2: nobody else edits it):
		 * one release store swaps found for node; readers on found continue past. */
		atomic_store_explicit(&node->next, atomic_load_explicit(&found->next, RELAXED),
				      RELAXED);
		atomic_store_explicit(pp, node, RELEASE);
	} else {
		link_new(t, node);
		count = count_add(h, s, t, 1);
	}
	ps_lock_unlock(&s->lock);
	if (found != NULL)
		retire(h, found);
	struct seen v = seen_of(t, count);
	ps_exit(h->ps);
	after_update(h, v);
	return found;
}

int ps_hash_insert(struct ps_hash *h, struct ps_hash_node *node, const void *key)
{
	(void)do_insert(h, node, key, 0, "ps_hash_insert");
	return 0;
}

struct ps_hash_node *ps_hash_insert_unique(struct ps_hash *h, struct ps_hash_node *node,
					   const void *key)
{
	return do_insert(h, node, key, 1, "ps_hash_insert_unique");
}

struct ps_hash_node *ps_hash_replace(struct ps_hash *h, struct ps_hash_node *node, const void *key)
{
	return do_insert(h, node, key, 2, "ps_hash_replace");
}

static struct ps_hash_node *do_delete(struct ps_hash *h, struct ps_hash_node *want, const void *key)
{
	uint64_t hash = want ? want->hash : key_hash(h, key);
	struct stripe *s = stripe_of(h, hash);
	ps_enter(h->ps);
	ps_lock_lock(&s->lock);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	struct tab *o = atomic_load_explicit(&t->src, ACQUIRE);
	struct ps_hash_node *n;
	link_t *pp = find_link(h, t, o, hash, key, want, &n);
	int64_t count = -1;
	if (n != NULL) {
		/* Unlink; n keeps its next, so a reader standing on n goes on (H3). */
		atomic_store_explicit(pp, atomic_load_explicit(&n->next, RELAXED), RELEASE);
		count = count_add(h, s, t, -1);
	}
	ps_lock_unlock(&s->lock);
	if (n != NULL)
		retire(h, n);
	struct seen v = seen_of(t, count);
	ps_exit(h->ps);
	if (n != NULL)
		after_update(h, v);
	return n;
}

int ps_hash_delete(struct ps_hash *h, struct ps_hash_node *node)
{
	if (node == NULL || do_delete(h, node, NULL) == NULL) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

struct ps_hash_node *ps_hash_delete_key(struct ps_hash *h, const void *key)
{
	return do_delete(h, NULL, key);
}

/* ---- resize ------------------------------------------------------------------------- */

/*
 * Move every node of o's bucket i onto its chain in t, tail first, under the stripe lock
 * (H2). For the tail X with link *pp: X->next := t's head (a reader standing on X has
 * passed every other node of the old chain and only goes on into t's chain, which holds
 * nodes of the same stripe); t's head := X (release); *pp := NULL (release). X is on
 * the new chain before it leaves the old one (H3).
 */
static void migrate_bucket(struct ps_hash *h, struct tab *o, struct tab *t, uint64_t i)
{
	struct stripe *s = &h->stripes[i & h->smask];
	ps_lock_lock(&s->lock);
	for (;;) {
		link_t *pp = &o->b[i];
		struct ps_hash_node *x = atomic_load_explicit(pp, RELAXED);
		if (x == NULL)
			break;
		struct ps_hash_node *nx;
		while ((nx = atomic_load_explicit(&x->next, RELAXED)) != NULL) {
			pp = &x->next;
			x = nx;
		}
		link_t *head = &t->b[x->hash & t->mask];
		atomic_store_explicit(&x->next, atomic_load_explicit(head, RELAXED), RELEASE);
		atomic_store_explicit(head, x, RELEASE);
		atomic_store_explicit(pp, NULL, RELEASE);
	}
	ps_lock_unlock(&s->lock);
}

/* The last migrator: unpublish src (H1 now: all nodes on t's chains) and retire it. */
static void finish(struct ps_hash *h, struct tab *t, struct tab *o)
{
	atomic_store_explicit(&t->src, NULL, RELEASE);
	atomic_store_explicit(&t->phase, PH_DONE, RELEASE);
	/* H5: o is reachable only by sections active now; ps_call frees it after them. */
	ps_call(h->ps, &o->head, tab_retire_cb);
	atomic_fetch_add_explicit(&h->resizes, 1, RELAXED);
	if (t->power > o->power)
		atomic_fetch_add_explicit(&h->grows, 1, RELAXED);
	else
		atomic_fetch_add_explicit(&h->shrinks, 1, RELAXED);
	atomic_store_explicit(&h->resizing, 0, RELEASE);
}

/* The automatic policy, outside a resize: start the one the count calls for. */
static void policy_check(struct ps_hash *h)
{
	if (h->no_auto)
		return;
	int64_t c = atomic_load_explicit(&h->count, RELAXED);
	ps_enter(h->ps);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	bool busy = atomic_load_explicit(&t->src, ACQUIRE) != NULL;
	unsigned cur = t->power, p = want_power(h, t->mask + 1, c, false);
	ps_exit(h->ps);
	if (!busy && p != cur && atomic_load_explicit(&h->resizing, RELAXED) == 0)
		(void)start_resize(h, p);
}

/* The least time between two grace-period polls of one thread (help steps of updates;
 * ps_hash_resize and ps_hash_poll poll every time). */
#define POLL_NS 20000u
static _Thread_local tsync_tick_t poll_next;
static tsync_tick_t poll_ticks(void)
{
	static _Atomic tsync_tick_t ticks;
	tsync_tick_t v = atomic_load_explicit(&ticks, RELAXED);
	if (v == 0) {
		v = tsync_ns_to_ticks(POLL_NS);
		atomic_store_explicit(&ticks, v, RELAXED);
	}
	return v;
}

/* One help step; returns true if a resize is still in progress after it. force: poll
 * the grace period whatever the time since this thread's last poll. */
static bool help_step(struct ps_hash *h, bool *waiting, bool force)
{
	*waiting = false;
	ps_enter(h->ps);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	struct tab *o = atomic_load_explicit(&t->src, ACQUIRE);
	if (o == NULL) {
		ps_exit(h->ps);
		/* A resize may own the slot between its allocation and its publication. */
		*waiting = true;
		return atomic_load_explicit(&h->resizing, ACQUIRE) != 0;
	}
	int ph = atomic_load_explicit(&t->phase, ACQUIRE);
	if (ph == PH_WAIT) {
		uint64_t t1 = atomic_load_explicit(&t->t1, ACQUIRE);
		ps_exit(h->ps);
		/* Outside our section (if the caller is in none), so ours does not count. At
		 * most one poll per POLL_NS per thread: a poll may cost a read barrier (a
		 * system call), and an update stream would otherwise make one per update. */
		tsync_tick_t now = tsync_now();
		if (!force && now < poll_next) {
			*waiting = true;
			return true;
		}
		poll_next = now + poll_ticks();
		if (t1 == 0 || !ps_quiesce(h->ps, t1)) {
			*waiting = true;
			return true;
		}
		ps_enter(h->ps);
		/* t is still current (so not retired) only if h->tab still points to it. */
		if (atomic_load_explicit(&h->tab, ACQUIRE) == t) {
			int w = PH_WAIT;
			atomic_compare_exchange_strong_explicit(&t->phase, &w, PH_MIGRATE, ACQ_REL,
								ACQUIRE);
		}
		ps_exit(h->ps);
		return true;
	}
	if (ph == PH_MIGRATE) {
		uint64_t n = o->mask + 1;
		uint64_t c = atomic_fetch_add_explicit(&t->cursor, PS_HASH_HELP_BUCKETS, RELAXED);
		if (c < n) {
			uint64_t e = c + PS_HASH_HELP_BUCKETS < n ? c + PS_HASH_HELP_BUCKETS : n;
			for (uint64_t i = c; i < e; i++)
				migrate_bucket(h, o, t, i);
			uint64_t d = atomic_fetch_add_explicit(&t->done, e - c, ACQ_REL) + (e - c);
			if (d == n) {
				finish(h, t, o);
				ps_exit(h->ps);
				/* The count may have crossed a threshold while this resize
				 * ran (updates start none meanwhile): look again now. */
				policy_check(h);
				return atomic_load_explicit(&h->resizing, ACQUIRE) != 0;
			}
		} else {
			*waiting = true; /* every bucket claimed: others are finishing theirs */
		}
	}
	ps_exit(h->ps);
	return true;
}

static void help(struct ps_hash *h)
{
	bool waiting;
	(void)help_step(h, &waiting, false);
}

bool ps_hash_poll(struct ps_hash *h)
{
	bool waiting;
	return help_step(h, &waiting, true);
}

/* Take the resize slot and publish an array of 2^power buckets. 0, or -1 with errno:
 * EBUSY (another resize holds the slot), ENOMEM (allocation failed: nothing changed),
 * EALREADY (the table already has that size). */
static int start_resize(struct ps_hash *h, unsigned power)
{
	int z = 0;
	if (!atomic_compare_exchange_strong_explicit(&h->resizing, &z, 1, ACQUIRE, RELAXED)) {
		errno = EBUSY;
		return -1;
	}
	/* Holding the slot: no other resize starts, and the last one has finished (its
	 * finisher released the slot after unpublishing src), so h->tab is stable. */
	struct tab *o = atomic_load_explicit(&h->tab, ACQUIRE);
	if (o->power == power) {
		atomic_store_explicit(&h->resizing, 0, RELEASE);
		errno = EALREADY;
		return -1;
	}
	struct tab *t = tab_new(h, power);
	if (t == NULL) {
		atomic_fetch_add_explicit(&h->failures, 1, RELAXED);
		atomic_store_explicit(&h->resizing, 0, RELEASE);
		errno = ENOMEM;
		return -1;
	}
	atomic_store_explicit(&t->phase, PH_WAIT, RELAXED);
	atomic_store_explicit(&t->src, o, RELAXED);
	/* Publish: a section that loads t finds src = o and searches both (H1). */
	atomic_store_explicit(&h->tab, t, RELEASE);
	/* H4: migration waits until every section active now has ended; the stamp is read
	 * after the publication is visible. */
	tsync_tick_t t1 = tsync_now_ordered();
	atomic_store_explicit(&t->t1, t1 ? t1 : 1, RELEASE);
	return 0;
}

/* ps_hash_resize: help the resize in progress until it is over, yielding once the grace
 * period has kept the helper waiting for more than 16 steps. */
static void resize_finish(struct ps_hash *h)
{
	bool waiting;
	unsigned spins = 0;
	while (help_step(h, &waiting, true))
		if (waiting && ++spins > 16)
			sched_yield();
}

int ps_hash_resize(struct ps_hash *h, size_t nbuckets)
{
	if (ps_in_section(h->ps))
		tsync__fatal("ps_hash_resize: called inside a section of the table's ps");
	unsigned p;
	if (nbuckets == 0) {
		p = 0;
	} else {
		if (nbuckets > ((size_t)1 << MAX_POWER)) {
			errno = ERANGE;
			return -1;
		}
		p = log2_ceil(nbuckets);
		if (p < h->min_power)
			p = h->min_power;
	}
	for (;;) {
		/* Finish whatever is in progress. */
		resize_finish(h);
		unsigned want = p;
		if (want == 0) {
			struct ps_hash_stats st;
			(void)ps_hash_stats(h, &st);
			want = want_power(h, st.buckets, (int64_t)st.count, false);
		}
		if (start_resize(h, want) == 0)
			break;
		if (errno == EALREADY)
			return 0;
		if (errno == ENOMEM)
			return -1;
		/* EBUSY: someone started one meanwhile; finish it and try again. */
	}
	resize_finish(h);
	return 0;
}

/* ---- iteration ---------------------------------------------------------------------- */

static size_t walk_chain(link_t *head, ps_hash_visit_fn visit, void *arg, bool *stop)
{
	size_t k = 0;
	for (struct ps_hash_node *n = atomic_load_explicit(head, ACQUIRE); n != NULL;
	     n = atomic_load_explicit(&n->next, ACQUIRE)) {
		k++;
		if (!visit(n, arg)) {
			*stop = true;
			break;
		}
	}
	return k;
}

size_t ps_hash_foreach(struct ps_hash *h, ps_hash_visit_fn visit, void *arg)
{
	ps_enter(h->ps);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	struct tab *o = atomic_load_explicit(&t->src, ACQUIRE);
	size_t k = 0;
	bool stop = false;
	if (o == NULL) {
		/* No migration can run during this section (H4: the next resize's waits for
		 * it), so every node stays on its chain of t: walk them all, lock-free. */
		for (uint64_t i = 0; i <= t->mask && !stop; i++)
			k += walk_chain(&t->b[i], visit, arg, &stop);
	} else {
		/* A migration may run: per stripe, under its lock, the stripe's old and new
		 * chains together hold each of its nodes exactly once (H1, H2). */
		for (uint64_t s = 0; s <= h->smask && !stop; s++) {
			ps_lock_lock(&h->stripes[s].lock);
			for (uint64_t i = s; i <= o->mask && !stop; i += h->smask + 1)
				k += walk_chain(&o->b[i], visit, arg, &stop);
			for (uint64_t i = s; i <= t->mask && !stop; i += h->smask + 1)
				k += walk_chain(&t->b[i], visit, arg, &stop);
			ps_lock_unlock(&h->stripes[s].lock);
		}
	}
	ps_exit(h->ps);
	return k;
}

/* ---- stats -------------------------------------------------------------------------- */

int ps_hash_stats(struct ps_hash *h, struct ps_hash_stats *out)
{
	if (h == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	int64_t c = atomic_load_explicit(&h->count, RELAXED);
	for (uint64_t s = 0; s <= h->smask; s++)
		c += atomic_load_explicit(&h->stripes[s].delta, RELAXED);
	ps_enter(h->ps);
	struct tab *t = atomic_load_explicit(&h->tab, ACQUIRE);
	out->buckets = t->mask + 1;
	out->resizing = atomic_load_explicit(&t->src, ACQUIRE) != NULL ||
			atomic_load_explicit(&h->resizing, RELAXED) != 0;
	ps_exit(h->ps);
	out->count = c < 0 ? 0 : (uint64_t)c;
	out->resizes = atomic_load_explicit(&h->resizes, RELAXED);
	out->grows = atomic_load_explicit(&h->grows, RELAXED);
	out->shrinks = atomic_load_explicit(&h->shrinks, RELAXED);
	out->resize_failures = atomic_load_explicit(&h->failures, RELAXED);
	return 0;
}
