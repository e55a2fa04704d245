/*
 * tests/common/slist.c - the stress workload (see slist.h for the algorithm and the
 * invariants it checks; the list operations themselves are lazy_list.c's).
 */
#include "slist.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "stress.h"

_Atomic uint64_t wl_violations;
_Atomic uint64_t wl_pin_gen;
_Atomic uint64_t wl_incarnation;

#define WL_REC_MAX 256
#define WL_PRINT_MAX 10

void wl_violation(const char *fmt, ...)
{
	uint64_t n = atomic_fetch_add_explicit(&wl_violations, 1, memory_order_relaxed);
	if (n >= WL_PRINT_MAX)
		return;
	va_list ap;
	fprintf(stderr, "VIOLATION: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
}

static inline uint64_t tnode_sum(uint64_t inc, uint64_t key, uint64_t owner)
{
	return inc ^ key ^ owner ^ TNODE_MAGIC;
}

static uint64_t wl_max_steps(const struct wl *w)
{
	uint64_t m = w->list_keys > w->hash_keys ? w->list_keys : w->hash_keys;
	return m + 2;
}

struct tnode *wl_node_new(struct wl *w, uint64_t key, uint64_t tag, struct wl_counts *c)
{
	struct tnode *n = ps_alloc(w->mem);
	CHECK_MSG(n != NULL, "ps_alloc returned NULL (errno %d)", errno);
	c->allocs++;
	uint64_t g = atomic_load_explicit(&wl_pin_gen, memory_order_acquire);
	if (n->state == TNODE_LIVE)
		wl_violation("ps_alloc returned %p, which is a live node (inc %" PRIu64
			     " key %" PRIu64 " owner %#" PRIx64 "): two live objects at one "
			     "address",
			     (void *)n, n->inc, n->ln.key, n->ln.tag);
	else if ((g & 1) && n->state == TNODE_FREED && n->freed_gen == g)
		wl_violation("ps_alloc returned %p (inc %" PRIu64 "), freed after the enter of a "
			     "reader that is still inside its section (pin generation %" PRIu64
			     "): premature reuse",
			     (void *)n, n->inc, g);
	lazy_node_init(&n->ln, key, tag);
	n->inc = atomic_fetch_add_explicit(&wl_incarnation, 1, memory_order_relaxed) + 1;
	n->check = tnode_sum(n->inc, key, tag);
	n->state = TNODE_LIVE;
	n->freed_gen = 0;
	n->payload[0] = n->inc;
	n->payload[1] = key;
	return n;
}

/* Mark n as unlinked (before it is handed to ps_free). Caller holds n's lock, or n was
 * never published. */
static void tnode_retire(struct tnode *n)
{
	n->freed_gen = atomic_load_explicit(&wl_pin_gen, memory_order_acquire);
	n->state = TNODE_FREED;
}

_Static_assert(offsetof(struct tnode, ln) == 0, "the lazy_node is the object's start");

static struct tnode *tn(const struct lazy_node *n)
{
	return (struct tnode *)n; /* ln is the first member */
}

/* lazy_check.corrupt of the writers' walks: report and let the walk stop there. */
static void slist_corrupt(const struct lazy_node *head, const struct lazy_node *n,
			  enum lazy_corruption what, uint64_t steps)
{
	if (what == LAZY_BAD_TAG)
		wl_violation("writer lookup in list %#" PRIx64 " reached %p with owner %#" PRIx64
			     " (inc %" PRIu64 ")",
			     head->tag, (const void *)n, n->tag, tn(n)->inc);
	else
		wl_violation("writer lookup in list %#" PRIx64 " walked %" PRIu64 " nodes: cycle",
			     head->tag, steps);
}

int slist_insert(struct wl *w, struct slist *l, uint64_t key, struct wl_counts *c)
{
	struct tnode *nn = NULL;
	for (;;) {
		struct lazy_node *p, *n = lazy_find(&w->chk, &l->head->ln, key, &p);
		if (n != NULL && n->key == key) {
			if (nn != NULL) {
				tnode_retire(nn);
				ps_free(w->mem, nn);
				c->frees++;
			}
			c->misses++;
			return 0;
		}
		if (nn == NULL)
			nn = wl_node_new(w, key, l->tag, c);
		if (lazy_link(p, n, &nn->ln)) {
			c->inserts++;
			return 1;
		}
		c->retries++;
	}
}

/* Lock pred and the node with key; returns the node with both locks held, or NULL if
 * the key is absent. */
static struct tnode *lock_pair(struct wl *w, struct slist *l, uint64_t key,
			       struct lazy_node **predp, struct wl_counts *c)
{
	for (;;) {
		struct lazy_node *n;
		switch (lazy_lock_pair(&w->chk, &l->head->ln, key, predp, &n)) {
		case LAZY_ABSENT: return NULL;
		case LAZY_RETRY: c->retries++; continue;
		case LAZY_NODE_FREED:
			wl_violation("ps_lock_take failed on a node with key %" PRIu64 ", linked "
				     "behind a locked, live predecessor",
				     key);
			return NULL;
		case LAZY_LOCKED: break;
		}
		if (tn(n)->state != TNODE_LIVE)
			wl_violation("ps_lock_take succeeded on %p (inc %" PRIu64
				     ") whose state is %#" PRIx64,
				     (void *)n, tn(n)->inc, tn(n)->state);
		return tn(n);
	}
}

int slist_delete(struct wl *w, struct slist *l, uint64_t key, struct wl_counts *c)
{
	struct lazy_node *p;
	struct tnode *n = lock_pair(w, l, key, &p, c);
	if (n == NULL) {
		c->misses++;
		return 0;
	}
	tnode_retire(n);
	lazy_unlink(p, &n->ln, NULL);
	c->deletes++;
	c->frees++;
	return 1;
}

int slist_replace(struct wl *w, struct slist *l, uint64_t key, struct wl_counts *c)
{
	struct lazy_node *p;
	struct tnode *n = lock_pair(w, l, key, &p, c);
	if (n == NULL) {
		c->misses++;
		return 0;
	}
	struct tnode *nn = wl_node_new(w, key, l->tag, c);
	nn->payload[1] = n->payload[1];
	tnode_retire(n);
	lazy_unlink(p, &n->ln, &nn->ln);
	c->replaces++;
	c->frees++;
	return 1;
}

size_t slist_walk(struct wl *w, struct slist *l, uint64_t stop_key, struct wl_seen *rec, size_t max,
		  size_t *nrec)
{
	const struct tnode *n = tn(atomic_load_explicit(&l->head->ln.next, memory_order_acquire));
	uint64_t prev = 0, limit = wl_max_steps(w);
	size_t steps = 0, k = 0;
	while (n != NULL) {
		uint64_t inc = n->inc, key = n->ln.key, owner = n->ln.tag, sum = n->check;
		if (owner != l->tag) {
			wl_violation("reader in %#" PRIx64 " reached %p owned by %#" PRIx64
				     " (inc %" PRIu64 " key %" PRIu64
				     "): memory reused as a node of another structure",
				     l->tag, (void *)n, owner, inc, key);
			break;
		}
		if (sum != tnode_sum(inc, key, owner) || key <= prev || key >= limit) {
			wl_violation("reader in %#" PRIx64 " reached %p: inc %" PRIu64
				     " key %" PRIu64 " (previous key %" PRIu64
				     ") checksum %s: corrupted or reused node",
				     l->tag, (void *)n, inc, key, prev,
				     sum == tnode_sum(inc, key, owner) ? "ok" : "BAD");
			break;
		}
		if (rec != NULL && k < max)
			rec[k++] = (struct wl_seen){n, inc, key, owner};
		steps++;
		if (key >= stop_key)
			break;
		if (steps > limit) {
			wl_violation("reader in %#" PRIx64 " walked %zu nodes: cycle", l->tag,
				     steps);
			break;
		}
		prev = key;
		n = tn(atomic_load_explicit(&n->ln.next, memory_order_acquire));
	}
	if (nrec != NULL)
		*nrec = k;
	return steps;
}

size_t wl_recheck(const struct wl_seen *rec, size_t n, const char *what)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tnode *x = rec[i].n;
		uint64_t inc = x->inc, key = x->ln.key, owner = x->ln.tag;
		if (inc != rec[i].inc || key != rec[i].key || owner != rec[i].owner) {
			bad++;
			wl_violation("%s: node %p changed inside one section: inc %" PRIu64
				     " -> %" PRIu64 ", key %" PRIu64 " -> %" PRIu64
				     ", owner %#" PRIx64 " -> %#" PRIx64 ": premature reuse",
				     what, (const void *)x, rec[i].inc, inc, rec[i].key, key,
				     rec[i].owner, owner);
		}
	}
	return bad;
}

struct ps_mem *wl_create_mem(struct ps **ps_out, size_t obj_size, bool small)
{
	struct ps *ps = ps_create(NULL);
	CHECK(ps != NULL);
	struct ps_mem_config cfg = PS_MEM_CONFIG_INIT;
	/* every Prudence policy, whatever the default: each changes where an object goes
	 * after its grace period, and these hunts check that none makes it reusable sooner */
	cfg.prudence = PS_MEM_PRUDENCE_ALL;
	if (small)
		stress_small_mem(&cfg);
	struct ps_mem *mem = ps_mem_create(ps, obj_size, &cfg);
	CHECK(mem != NULL);
	*ps_out = ps;
	return mem;
}

void wl_init(struct wl *w, struct ps *ps, struct ps_mem *mem, unsigned nlists, uint64_t list_keys,
	     unsigned nbuckets, uint64_t hash_keys)
{
	struct wl_counts c = {0};
	w->ps = ps;
	w->mem = mem;
	w->nlists = nlists;
	w->list_keys = list_keys;
	w->nbuckets = nbuckets;
	w->hash_keys = hash_keys;
	if (w->read_work == 0)
		w->read_work = 2000;
	w->chk = (struct lazy_check){wl_max_steps(w), slist_corrupt};
	w->lists = calloc(nlists ? nlists : 1, sizeof *w->lists);
	w->buckets = calloc(nbuckets ? nbuckets : 1, sizeof *w->buckets);
	CHECK(w->lists && w->buckets);
	for (unsigned i = 0; i < nlists; i++) {
		w->lists[i].tag = 0x1000 + i;
		w->lists[i].head = wl_node_new(w, 0, w->lists[i].tag, &c);
	}
	for (unsigned b = 0; b < nbuckets; b++) {
		w->buckets[b].tag = 0x200000 + b;
		w->buckets[b].head = wl_node_new(w, 0, w->buckets[b].tag, &c);
	}
	ps_enter(ps);
	for (unsigned i = 0; i < nlists; i++)
		for (uint64_t k = 1; k <= list_keys; k += 2)
			CHECK(slist_insert(w, &w->lists[i], k, &c) == 1);
	for (uint64_t k = 1; nbuckets && k <= hash_keys; k += 2)
		CHECK(slist_insert(w, &w->buckets[k % nbuckets], k, &c) == 1);
	ps_exit(ps);
}

static uint64_t slist_destroy(struct wl *w, struct slist *l)
{
	uint64_t n = 0, prev = 0;
	struct tnode *x = tn(atomic_load_explicit(&l->head->ln.next, memory_order_acquire));
	atomic_store_explicit(&l->head->ln.next, NULL, memory_order_release);
	while (x != NULL) {
		struct tnode *next = tn(atomic_load_explicit(&x->ln.next, memory_order_acquire));
		if (x->ln.tag != l->tag || x->ln.key <= prev || x->state != TNODE_LIVE ||
		    x->check != tnode_sum(x->inc, x->ln.key, x->ln.tag) || ps_lock_is_freed(x))
			wl_violation("final check of %#" PRIx64 ": bad node %p (key %" PRIu64
				     " after %" PRIu64 ", owner %#" PRIx64 ", freed %d)",
				     l->tag, (void *)x, x->ln.key, prev, x->ln.tag,
				     (int)ps_lock_is_freed(x));
		prev = x->ln.key;
		tnode_retire(x);
		ps_free(w->mem, x);
		n++;
		x = next;
	}
	tnode_retire(l->head);
	ps_free(w->mem, l->head);
	return n + 1;
}

uint64_t wl_destroy(struct wl *w)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < w->nlists; i++)
		n += slist_destroy(w, &w->lists[i]);
	for (unsigned b = 0; b < w->nbuckets; b++)
		n += slist_destroy(w, &w->buckets[b]);
	free(w->lists);
	free(w->buckets);
	w->lists = w->buckets = NULL;
	return n;
}

void wl_write_op(struct wl *w, uint64_t *rng, struct wl_counts *c)
{
	uint64_t r = test_rand(rng);
	struct slist *l;
	uint64_t key;
	bool use_list = w->nbuckets == 0 || (w->nlists != 0 && (r & 1));
	if (use_list) {
		l = &w->lists[(r >> 8) % w->nlists];
		key = 1 + (r >> 20) % w->list_keys;
	} else {
		key = 1 + (r >> 20) % w->hash_keys;
		l = &w->buckets[key % w->nbuckets];
	}
	ps_enter(w->ps);
	switch ((r >> 4) % 3) {
	case 0: slist_insert(w, l, key, c); break;
	case 1: slist_delete(w, l, key, c); break;
	default: slist_replace(w, l, key, c); break;
	}
	ps_exit(w->ps);
}

void wl_read_op(struct wl *w, uint64_t *rng, struct wl_counts *c)
{
	struct wl_seen rec[WL_REC_MAX];
	size_t nrec = 0, k = 0;
	uint64_t r = test_rand(rng);
	bool nest = (r & 7) == 0;
	bool use_list = w->nbuckets == 0 || (w->nlists != 0 && ((r >> 3) & 1));

	ps_enter(w->ps);
	if (nest)
		ps_enter(w->ps);
	if (use_list) {
		struct slist *l = &w->lists[(r >> 8) % w->nlists];
		c->read_nodes += slist_walk(w, l, UINT64_MAX, rec, WL_REC_MAX, &nrec);
	} else {
		for (int i = 0; i < 8; i++) {
			uint64_t key = 1 + test_rand(rng) % w->hash_keys;
			c->read_nodes += slist_walk(w, &w->buckets[key % w->nbuckets], key,
						    rec + nrec, WL_REC_MAX - nrec, &k);
			nrec += k;
		}
	}
	if (nest)
		ps_exit(w->ps); /* still inside the outer section: records stay valid */
	/* "some work": let writers run while we hold the references */
	test_spin((unsigned)((r >> 32) % (w->read_work + 1)));
	if (((r >> 24) & 15) == 0)
		sched_yield();
	wl_recheck(rec, nrec, use_list ? "list reader" : "hash reader");
	c->rechecks += nrec;
	ps_exit(w->ps);
	c->reads++;
}

void wl_pin_begin(void)
{
	uint64_t g = atomic_fetch_add_explicit(&wl_pin_gen, 1, memory_order_acq_rel);
	CHECK((g & 1) == 0);
}

void wl_pin_end(void)
{
	uint64_t g = atomic_fetch_add_explicit(&wl_pin_gen, 1, memory_order_acq_rel);
	CHECK((g & 1) == 1);
}

void wl_counts_add(struct wl_counts *dst, const struct wl_counts *src)
{
	dst->reads += src->reads;
	dst->read_nodes += src->read_nodes;
	dst->rechecks += src->rechecks;
	dst->inserts += src->inserts;
	dst->deletes += src->deletes;
	dst->replaces += src->replaces;
	dst->misses += src->misses;
	dst->retries += src->retries;
	dst->allocs += src->allocs;
	dst->frees += src->frees;
}
