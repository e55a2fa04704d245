/*
 * ds/sets.c - the list / hash table of the RLU study (Appl. Sci. 2022) in every
 * mechanism (sets.h).
 */
#define _LGPL_SOURCE /* liburcu's inline read-side fast paths */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-memb.h>

#include <tsync/arch.h>
#include <tsync/ps.h>
#include <tsync/ps_lock.h>
#include <tsync/ps_mem.h>
#include <tsync/mvrlu.h>
#include <tsync/rlu.h>

#include "lazy_list.h"
#include "sets.h"

#define SET_MAGIC_DEAD 0xdeadbeefdeadbeefull

_Noreturn void set_fail(const char *mech, const char *why, uint64_t key, uint64_t magic)
{
	fprintf(stderr, "FATAL: %s: %s (key %" PRIu64 ", magic %#" PRIx64 ")\n", mech, why, key,
		magic);
	abort();
}

/* Per-thread abort counts, added to the set's total at thread_fini. */
static _Thread_local uint64_t tl_aborts;

/* ================================ rcu, rcu-sync ================================= */

struct rnode {
	uint64_t key;
	uint64_t magic;
	struct rnode *next;
	struct rcu_head rh;
};

struct rbucket {
	_Alignas(64) pthread_spinlock_t lock;
	struct rnode *head;
};

struct rset {
	unsigned nb;
	bool sync;
	struct rbucket *b;
};

static void *rcu_create_common(unsigned nb, bool sync)
{
	struct rset *s = calloc(1, sizeof(*s));
	if (!s || !(s->b = aligned_alloc(64, sizeof(struct rbucket) * nb)))
		return NULL;
	memset(s->b, 0, sizeof(struct rbucket) * nb);
	s->nb = nb;
	s->sync = sync;
	for (unsigned i = 0; i < nb; i++)
		pthread_spin_init(&s->b[i].lock, PTHREAD_PROCESS_PRIVATE);
	return s;
}
static void *rcu_create_call(unsigned nb)
{
	return rcu_create_common(nb, false);
}
static void *rcu_create_sync(unsigned nb)
{
	return rcu_create_common(nb, true);
}

static void rnode_poison_free(struct rnode *n)
{
	n->magic = SET_MAGIC_DEAD;
	free(n);
}

static void rcu_free_cb(struct rcu_head *h)
{
	rnode_poison_free(caa_container_of(h, struct rnode, rh));
}

static void rcu_destroy(void *set)
{
	struct rset *s = set;
	urcu_memb_barrier(); /* every call_rcu callback has run */
	for (unsigned i = 0; i < s->nb; i++) {
		for (struct rnode *n = s->b[i].head, *nx; n; n = nx) {
			nx = n->next;
			free(n);
		}
		pthread_spin_destroy(&s->b[i].lock);
	}
	free(s->b);
	free(s);
}

static void rcu_thread_init(void *set)
{
	(void)set;
	urcu_memb_register_thread();
}

static void rcu_thread_fini(void *set)
{
	(void)set;
	urcu_memb_unregister_thread();
}

static bool rcu_lookup(void *set, uint64_t k)
{
	struct rset *s = set;
	urcu_memb_read_lock();
	struct rnode *n = rcu_dereference(s->b[set_bucket(k, s->nb)].head);
	while (n) {
		if (TSYNC_UNLIKELY(n->magic != SET_MAGIC_LIVE))
			set_fail(s->sync ? "rcu-sync" : "rcu", "a reader reached a freed node",
				 n->key, n->magic);
		if (n->key >= k)
			break;
		n = rcu_dereference(n->next);
	}
	bool found = n && n->key == k;
	urcu_memb_read_unlock();
	return found;
}

static bool rcu_insert(void *set, uint64_t k)
{
	struct rset *s = set;
	struct rbucket *b = &s->b[set_bucket(k, s->nb)];
	struct rnode *n = malloc(sizeof(*n));
	if (!n)
		set_fail("rcu", "out of memory", k, 0);
	n->key = k;
	n->magic = SET_MAGIC_LIVE;
	pthread_spin_lock(&b->lock);
	struct rnode **pp = &b->head, *c;
	while ((c = *pp) && c->key < k)
		pp = &c->next;
	if (c && c->key == k) {
		pthread_spin_unlock(&b->lock);
		free(n);
		return false;
	}
	n->next = c;
	rcu_assign_pointer(*pp, n);
	pthread_spin_unlock(&b->lock);
	return true;
}

static bool rcu_remove(void *set, uint64_t k)
{
	struct rset *s = set;
	struct rbucket *b = &s->b[set_bucket(k, s->nb)];
	pthread_spin_lock(&b->lock);
	struct rnode **pp = &b->head, *c;
	while ((c = *pp) && c->key < k)
		pp = &c->next;
	if (!c || c->key != k) {
		pthread_spin_unlock(&b->lock);
		return false;
	}
	rcu_assign_pointer(*pp, c->next);
	pthread_spin_unlock(&b->lock);
	if (s->sync) {
		urcu_memb_synchronize_rcu();
		rnode_poison_free(c);
	} else {
		urcu_memb_call_rcu(&c->rh, rcu_free_cb);
	}
	return true;
}

static size_t rcu_snapshot(void *set, uint64_t *out, size_t max)
{
	struct rset *s = set;
	size_t n = 0;
	urcu_memb_read_lock();
	for (unsigned i = 0; i < s->nb; i++)
		for (struct rnode *c = rcu_dereference(s->b[i].head); c;
		     c = rcu_dereference(c->next)) {
			if (n < max)
				out[n] = c->key;
			n++;
		}
	urcu_memb_read_unlock();
	return n;
}

static uint64_t zero_aborts(void *set)
{
	(void)set;
	return 0;
}

const struct set_ops set_rcu = {
	"rcu",
	"liburcu urcu-memb readers, spinlock per list/bucket, call_rcu frees",
	rcu_create_call,
	rcu_destroy,
	rcu_thread_init,
	rcu_thread_fini,
	rcu_lookup,
	rcu_insert,
	rcu_remove,
	NULL,
	NULL,
	rcu_snapshot,
	zero_aborts,
};
const struct set_ops set_rcu_sync = {
	"rcu-sync",
	"liburcu urcu-memb readers, spinlock per list/bucket, synchronize_rcu + free",
	rcu_create_sync,
	rcu_destroy,
	rcu_thread_init,
	rcu_thread_fini,
	rcu_lookup,
	rcu_insert,
	rcu_remove,
	NULL,
	NULL,
	rcu_snapshot,
	zero_aborts,
};

/* ==================================== rwlock ==================================== */

struct wnode {
	uint64_t key;
	uint64_t magic;
	struct wnode *next;
};

struct wbucket {
	_Alignas(64) pthread_rwlock_t lock;
	struct wnode *head;
};

struct wset {
	unsigned nb;
	struct wbucket *b;
};

static void *rw_create(unsigned nb)
{
	struct wset *s = calloc(1, sizeof(*s));
	if (!s || !(s->b = aligned_alloc(64, sizeof(struct wbucket) * nb)))
		return NULL;
	memset(s->b, 0, sizeof(struct wbucket) * nb);
	s->nb = nb;
	for (unsigned i = 0; i < nb; i++)
		pthread_rwlock_init(&s->b[i].lock, NULL);
	return s;
}

static void rw_destroy(void *set)
{
	struct wset *s = set;
	for (unsigned i = 0; i < s->nb; i++) {
		for (struct wnode *n = s->b[i].head, *nx; n; n = nx) {
			nx = n->next;
			free(n);
		}
		pthread_rwlock_destroy(&s->b[i].lock);
	}
	free(s->b);
	free(s);
}

static void nop_thread(void *set)
{
	(void)set;
}

static bool rw_lookup(void *set, uint64_t k)
{
	struct wset *s = set;
	struct wbucket *b = &s->b[set_bucket(k, s->nb)];
	pthread_rwlock_rdlock(&b->lock);
	struct wnode *n = b->head;
	while (n && n->key < k)
		n = n->next;
	bool found = n && n->key == k;
	pthread_rwlock_unlock(&b->lock);
	return found;
}

static bool rw_insert(void *set, uint64_t k)
{
	struct wset *s = set;
	struct wbucket *b = &s->b[set_bucket(k, s->nb)];
	struct wnode *n = malloc(sizeof(*n));
	if (!n)
		set_fail("rwlock", "out of memory", k, 0);
	n->key = k;
	n->magic = SET_MAGIC_LIVE;
	pthread_rwlock_wrlock(&b->lock);
	struct wnode **pp = &b->head, *c;
	while ((c = *pp) && c->key < k)
		pp = &c->next;
	bool ok = !(c && c->key == k);
	if (ok) {
		n->next = c;
		*pp = n;
	}
	pthread_rwlock_unlock(&b->lock);
	if (!ok)
		free(n);
	return ok;
}

static bool rw_remove(void *set, uint64_t k)
{
	struct wset *s = set;
	struct wbucket *b = &s->b[set_bucket(k, s->nb)];
	pthread_rwlock_wrlock(&b->lock);
	struct wnode **pp = &b->head, *c;
	while ((c = *pp) && c->key < k)
		pp = &c->next;
	bool ok = c && c->key == k;
	if (ok)
		*pp = c->next;
	pthread_rwlock_unlock(&b->lock);
	if (ok)
		free(c);
	return ok;
}

static size_t rw_snapshot(void *set, uint64_t *out, size_t max)
{
	struct wset *s = set;
	size_t n = 0;
	for (unsigned i = 0; i < s->nb; i++) {
		pthread_rwlock_rdlock(&s->b[i].lock);
		for (struct wnode *c = s->b[i].head; c; c = c->next) {
			if (n < max)
				out[n] = c->key;
			n++;
		}
		pthread_rwlock_unlock(&s->b[i].lock);
	}
	return n;
}

const struct set_ops set_rwlock = {
	"rwlock",    "pthread rwlock per list/bucket (blocking baseline)",
	rw_create,   rw_destroy,
	nop_thread,  nop_thread,
	rw_lookup,   rw_insert,
	rw_remove,   NULL,
	NULL,        rw_snapshot,
	zero_aborts,
};

/* ====================================== ps ====================================== */

/* The ParSec lazy list of ds/lazy_list.h (the premature-reuse hunts' list),
 * one section per attempt. Every node carries the tag SET_MAGIC_LIVE: a reader that
 * reaches memory reused as something else fails its tag check. */
struct pset {
	unsigned nb;
	struct ps *ps;
	struct ps_mem *mem;
	struct lazy_node **heads; /* sentinels */
	_Atomic uint64_t aborts;
};

static void ps_corrupt(const struct lazy_node *head, const struct lazy_node *n,
		       enum lazy_corruption what, uint64_t steps)
{
	(void)head;
	(void)what;
	(void)steps;
	set_fail("ps", "a reader reached a corrupt node", n->key, n->tag);
}

static const struct lazy_check ps_check = {UINT64_MAX, ps_corrupt};

static struct lazy_node *pnode_new(struct pset *s, uint64_t k)
{
	struct lazy_node *n = ps_alloc(s->mem);
	if (!n)
		set_fail("ps", "out of memory", k, 0);
	lazy_node_init(n, k, SET_MAGIC_LIVE);
	return n;
}

static void *ps_set_create(unsigned nb)
{
	struct pset *s = calloc(1, sizeof(*s));
	if (!s || !(s->ps = ps_create(NULL)) ||
	    !(s->mem = ps_mem_create(s->ps, sizeof(struct lazy_node), NULL)) ||
	    !(s->heads = calloc(nb, sizeof(*s->heads))))
		return NULL;
	s->nb = nb;
	for (unsigned i = 0; i < nb; i++)
		s->heads[i] = pnode_new(s, 0);
	return s;
}

static void ps_set_destroy(void *set)
{
	struct pset *s = set;
	ps_mem_destroy(s->mem); /* every node, live or pending */
	ps_destroy(s->ps);
	free(s->heads);
	free(s);
}

static void ps_thread_fini(void *set)
{
	struct pset *s = set;
	atomic_fetch_add_explicit(&s->aborts, tl_aborts, memory_order_relaxed);
	tl_aborts = 0;
}

static inline struct lazy_node *ps_head(struct pset *s, uint64_t k)
{
	return s->heads[set_bucket(k, s->nb)];
}

static bool ps_lookup(void *set, uint64_t k)
{
	struct pset *s = set;
	struct lazy_node *prev;
	ps_enter(s->ps);
	struct lazy_node *cur = lazy_find(&ps_check, ps_head(s, k), k, &prev);
	bool found = cur && cur->key == k;
	ps_exit(s->ps);
	return found;
}

static bool ps_insert(void *set, uint64_t k)
{
	struct pset *s = set;
	struct lazy_node *n = NULL, *prev, *cur;
	for (;;) {
		ps_enter(s->ps);
		cur = lazy_find(&ps_check, ps_head(s, k), k, &prev);
		if (cur && cur->key == k) {
			ps_exit(s->ps);
			if (n)
				ps_free(s->mem, n); /* never published */
			return false;
		}
		if (!n) {
			ps_exit(s->ps);
			n = pnode_new(s, k);
			continue;
		}
		if (lazy_link(prev, cur, n)) {
			ps_exit(s->ps);
			return true;
		}
		tl_aborts++;
		ps_exit(s->ps);
	}
}

static bool ps_remove(void *set, uint64_t k)
{
	struct pset *s = set;
	struct lazy_node *prev, *cur;
	for (;;) {
		ps_enter(s->ps);
		enum lazy_lock_result r = lazy_lock_pair(&ps_check, ps_head(s, k), k, &prev, &cur);
		if (r == LAZY_ABSENT) {
			ps_exit(s->ps);
			return false;
		}
		if (r == LAZY_LOCKED) {
			lazy_unlink(prev, cur, NULL);
			ps_exit(s->ps);
			return true;
		}
		tl_aborts++;
		ps_exit(s->ps);
	}
}

static size_t ps_snapshot(void *set, uint64_t *out, size_t max)
{
	struct pset *s = set;
	size_t n = 0;
	ps_enter(s->ps);
	for (unsigned i = 0; i < s->nb; i++)
		for (struct lazy_node *c =
			     atomic_load_explicit(&s->heads[i]->next, memory_order_acquire);
		     c; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
			if (n < max)
				out[n] = c->key;
			n++;
		}
	ps_exit(s->ps);
	return n;
}

static uint64_t ps_aborts(void *set)
{
	return atomic_load(&((struct pset *)set)->aborts);
}

const struct set_ops set_ps = {
	"ps",          "ParSec sections, ps_mem nodes, ps_lock per node (hand-over-hand delete)",
	ps_set_create, ps_set_destroy,
	nop_thread,    ps_thread_fini,
	ps_lookup,     ps_insert,
	ps_remove,     NULL,
	NULL,          ps_snapshot,
	ps_aborts,
};

/* ================================= rlu, rlu-defer =============================== */

#define P(x) rlu_##x
#define T(x) rlu_set_##x
#define DOMAIN struct rlu
#define SELF struct rlu_thread
#define MECH "rlu"
/* Freed nodes are poisoned (as rcu's are): a reader reaching one fails its magic check. */
static struct rlu *rlu_mk(void)
{
	struct rlu_config c = RLU_CONFIG_INIT;
	c.poison_on_free = true;
	return rlu_create(&c);
}
#define MK_DOMAIN() rlu_mk()
#define FLUSH(self) rlu_flush(self)
#include "sets_rlu_tmpl.h"
#undef T
#undef MECH
#undef MK_DOMAIN

/* rlu-defer: the same code over a domain that batches 8 commits per synchronize. */
#define T(x) rlud_set_##x
#define MECH "rlu-defer"
static struct rlu *rlud_mk(void)
{
	struct rlu_config c = RLU_CONFIG_INIT;
	c.max_write_sets = 8;
	c.poison_on_free = true;
	return rlu_create(&c);
}
#define MK_DOMAIN() rlud_mk()
#include "sets_rlu_tmpl.h"
#undef P
#undef T
#undef DOMAIN
#undef SELF
#undef MECH
#undef MK_DOMAIN
#undef FLUSH

/* ==================================== mvrlu ===================================== */

#define P(x) mvrlu_##x
#define T(x) mvrlu_set_##x
#define DOMAIN struct mvrlu
#define SELF struct mvrlu_thread
#define MECH "mvrlu"
static struct mvrlu *mvrlu_mk(void)
{
	struct mvrlu_config c = MVRLU_CONFIG_INIT;
	c.poison_on_free = true;
	return mvrlu_create(&c);
}
#define MK_DOMAIN() mvrlu_mk()
#define FLUSH(self) ((void)(self)) /* the log stays; mvrlu_destroy writes it back */
#include "sets_rlu_tmpl.h"
#undef P
#undef T
#undef DOMAIN
#undef SELF
#undef MECH
#undef MK_DOMAIN
#undef FLUSH

static uint64_t mvrlu_set_aborts(void *set)
{
	struct mvrlu_stats st;
	mvrlu_stats(((struct mvrlu_set_set *)set)->d, &st);
	return st.aborts;
}

static uint64_t rlu_set_aborts(void *set)
{
	struct rlu_stats st;
	rlu_stats(((struct rlu_set_set *)set)->d, &st);
	return st.aborts;
}

static uint64_t rlud_set_aborts(void *set)
{
	struct rlu_stats st;
	rlu_stats(((struct rlud_set_set *)set)->d, &st);
	return st.aborts;
}

const struct set_ops set_rlu = {
	"rlu",
	"tsync RLU, synchronize at every commit",
	rlu_set_create,
	rlu_set_destroy,
	rlu_set_thread_init,
	rlu_set_thread_fini,
	rlu_set_lookup,
	rlu_set_insert,
	rlu_set_remove,
	rlu_set_insert2,
	rlu_set_remove2,
	rlu_set_snapshot,
	rlu_set_aborts,
};
const struct set_ops set_rlu_defer = {
	"rlu-defer",          "tsync RLU, deferred synchronize (8 write sets per sync)",
	rlud_set_create,      rlud_set_destroy,
	rlud_set_thread_init, rlud_set_thread_fini,
	rlud_set_lookup,      rlud_set_insert,
	rlud_set_remove,      rlud_set_insert2,
	rlud_set_remove2,     rlud_set_snapshot,
	rlud_set_aborts,
};

const struct set_ops set_mvrlu = {
	"mvrlu",
	"tsync MV-RLU, version chains, concurrent log reclamation",
	mvrlu_set_create,
	mvrlu_set_destroy,
	mvrlu_set_thread_init,
	mvrlu_set_thread_fini,
	mvrlu_set_lookup,
	mvrlu_set_insert,
	mvrlu_set_remove,
	mvrlu_set_insert2,
	mvrlu_set_remove2,
	mvrlu_set_snapshot,
	mvrlu_set_aborts,
};

const struct set_ops *const set_all[] = {
	&set_rcu, &set_rcu_sync, &set_rlu, &set_rlu_defer, &set_mvrlu, &set_ps, &set_rwlock, NULL,
};

const struct set_ops *set_find(const char *name)
{
	for (size_t i = 0; set_all[i]; i++)
		if (strcmp(set_all[i]->name, name) == 0)
			return set_all[i];
	return NULL;
}
