/*
 * bench/vmdb/peers/urcu_vmdb.c - the `urcu` peer of `tsync-bench vmdb`: a mapping database on
 * liburcu's RCU lock-free hash table (rculfhash) with a mutex per frame tree. The design
 * is described in urcu_vmdb.h.
 *
 * Correctness, in brief. A node is in the hash table exactly while it is not `dead`;
 * both change together under its tree's mutex (root->lock), and so do the tree links
 * (parent, child, sibling). An update finds a node in a read-side section, locks its
 * root's mutex (the root's memory stays valid inside the section even if the root was
 * removed meanwhile: nodes are freed by call_rcu), and re-checks `dead`. The removed
 * nodes of one call are collected on a list and, after the mutexes are dropped, their
 * pages are unmapped (memfd), their extents handed back and the nodes passed to
 * call_rcu; a page is handed back only after it was unmapped, so a new grant can never
 * map over a page that an unmap is about to clear.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#include "common.h"
#include "urcu_vmdb.h"

#define PAGE 4096u
#define ORDERS 11u /* extents of 2^0 .. 2^10 pages */
#define NO_FRAME UINT64_MAX
#define KEY_SHIFT 40u /* key = pid << 40 | vaddr (va_bits <= 36) */

struct vec {
	uint64_t *v;
	size_t n, cap;
};

struct uspace {
	pthread_mutex_t lock;           /* next, free_pages, free_frames */
	uint64_t next;                  /* first never-used page */
	struct vec free_pages[ORDERS];  /* free page extents by order */
	struct vec free_frames[ORDERS]; /* free frame extents granted to this space */
	unsigned char *base;            /* memfd: the reserved region; NULL: model */
};

/* An extent of pages of one space (a grant's also owns as many frames). */
struct uext {
	_Atomic size_t live; /* pages of it still mapped */
	uint64_t vbase, fbase;
	unsigned order;
	int pid;
};

struct uroot;
struct unode {
	struct cds_lfht_node hn;
	uint64_t key;
	uint64_t frame;
	struct uroot *root;                     /* the frame tree's root (self for a root) */
	struct unode *parent, *child, *sibling; /* under root->lock */
	struct unode *next_removed;             /* the remover's list / work stack */
	struct uext *ext;
	bool dead; /* removed from the hash (under root->lock) */
	bool is_root;
	struct rcu_head rcu;
};

struct uroot {
	struct unode n;
	pthread_mutex_t lock; /* the frame tree's mutex */
};

struct uvm {
	struct uvm_config cfg;
	struct cds_lfht *ht;
	int memfd;
	_Atomic uint64_t next_frame; /* first never-used frame */
	pthread_mutex_t spaces_lock;
	unsigned nspaces;
	_Atomic(struct uspace *) *spaces;
};

struct rlist {
	struct unode *head, *tail;
};

/* ---- small helpers ---- */

static int vec_push(struct vec *v, uint64_t x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		uint64_t *nv = realloc(v->v, cap * sizeof *nv);
		if (nv == NULL)
			return -1;
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return 0;
}

static bool vec_pop(struct vec *v, uint64_t *x)
{
	if (v->n == 0)
		return false;
	*x = v->v[--v->n];
	return true;
}

static unsigned order_of(size_t npages)
{
	unsigned k = 0;
	while (((size_t)1 << k) < npages)
		k++;
	return k;
}

static unsigned long hash_key(uint64_t k)
{
	return (unsigned long)bench_mix64(k);
}

static uint64_t key_of(int pid, uint64_t vaddr)
{
	return (uint64_t)pid << KEY_SHIFT | vaddr;
}

static int match_key(struct cds_lfht_node *hn, const void *key)
{
	const struct unode *n = caa_container_of(hn, struct unode, hn);
	return n->key == *(const uint64_t *)key;
}

static struct uspace *space_of(struct uvm *db, int pid)
{
	if (pid < 0 || (unsigned)pid >= db->cfg.max_spaces)
		return NULL;
	return atomic_load_explicit(&db->spaces[pid], memory_order_acquire);
}

/* Inside a read-side section: the live node mapped at key, or NULL. */
static struct unode *find(struct uvm *db, uint64_t key)
{
	struct cds_lfht_iter it;
	cds_lfht_lookup(db->ht, hash_key(key), match_key, &key, &it);
	struct cds_lfht_node *hn = cds_lfht_iter_get_node(&it);
	return hn ? caa_container_of(hn, struct unode, hn) : NULL;
}

static void node_free_cb(struct rcu_head *h)
{
	struct unode *n = caa_container_of(h, struct unode, rcu);
	if (n->is_root)
		pthread_mutex_destroy(&((struct uroot *)n)->lock);
	free(n);
}

/* ---- allocation of pages and frames (under the space's lock) ---- */

/* Skipped pages [p, end) go to the free stacks as aligned power-of-two extents. */
static void give_back_range(struct vec *free, uint64_t p, uint64_t end)
{
	while (p < end) {
		unsigned j = p ? (unsigned)__builtin_ctzll(p) : ORDERS - 1;
		if (j > ORDERS - 1)
			j = ORDERS - 1;
		while ((1ull << j) > end - p)
			j--;
		(void)vec_push(&free[j], p); /* out of memory: the pages are lost */
		p += 1ull << j;
	}
}

/* Splits a free extent of a larger order than k; its other pieces go to order k. */
static bool split_larger(struct vec *free, unsigned k, uint64_t *out)
{
	uint64_t size = 1ull << k, b;
	for (unsigned j = k + 1; j < ORDERS; j++) {
		if (!vec_pop(&free[j], &b))
			continue;
		for (uint64_t q = b + size; q < b + (1ull << j); q += size)
			(void)vec_push(&free[k], q);
		*out = b;
		return true;
	}
	return false;
}

static int pages_alloc(struct uvm *db, struct uspace *s, unsigned k, uint64_t *out)
{
	uint64_t size = 1ull << k, lim = 1ull << db->cfg.va_bits;
	if (vec_pop(&s->free_pages[k], out))
		return 0;
	uint64_t a = (s->next + size - 1) & ~(size - 1);
	if (a + size <= lim) {
		give_back_range(s->free_pages, s->next, a);
		s->next = a + size;
		*out = a;
		return 0;
	}
	if (split_larger(s->free_pages, k, out))
		return 0;
	errno = ENOSPC;
	return -1;
}

static int frames_alloc(struct uvm *db, struct uspace *s, unsigned k, uint64_t *out)
{
	uint64_t size = 1ull << k, lim = 1ull << db->cfg.frame_bits;
	if (vec_pop(&s->free_frames[k], out))
		return 0;
	uint64_t f = atomic_fetch_add_explicit(&db->next_frame, size, memory_order_relaxed);
	if (f < lim && size <= lim - f) {
		*out = f;
		return 0;
	}
	if (split_larger(s->free_frames, k, out))
		return 0;
	errno = ENOSPC;
	return -1;
}

/* Hands back an extent's pages (and frames) once n more of its pages are unmapped. */
static void ext_put(struct uvm *db, struct uext *e, size_t n)
{
	if (atomic_fetch_sub_explicit(&e->live, n, memory_order_acq_rel) != n)
		return;
	struct uspace *s = space_of(db, e->pid);
	pthread_mutex_lock(&s->lock);
	(void)vec_push(&s->free_pages[e->order], e->vbase);
	if (e->fbase != NO_FRAME)
		(void)vec_push(&s->free_frames[e->order], e->fbase);
	pthread_mutex_unlock(&s->lock);
	free(e);
}

/* ---- memfd ---- */

static int map_frames(struct uvm *db, struct uspace *s, uint64_t vaddr, uint64_t frame,
		      size_t npages)
{
	void *p = mmap(s->base + vaddr * PAGE, npages * PAGE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED, db->memfd, (off_t)(frame * PAGE));
	return p == MAP_FAILED ? -1 : 0;
}

static void unmap_pages(struct uspace *s, uint64_t vaddr, size_t npages)
{
	/* PROT_NONE anonymous memory over the range keeps the reservation */
	(void)mmap(s->base + vaddr * PAGE, npages * PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* ---- removal ---- */

static void rlist_add(struct rlist *l, struct unode *n)
{
	n->next_removed = NULL;
	if (l->tail)
		l->tail->next_removed = n;
	else
		l->head = n;
	l->tail = n;
}

static void kill_node(struct uvm *db, struct unode *n, struct rlist *l)
{
	(void)cds_lfht_del(db->ht, &n->hn); /* cannot fail: n is live under the lock */
	n->dead = true;
	rlist_add(l, n);
}

/* Under n's tree mutex, in a read-side section: removes n's descendants (and n itself
 * when self) from the hash and the tree onto l. Returns how many. */
static long cut(struct uvm *db, struct unode *n, bool self, struct rlist *l)
{
	long cnt = 0;
	struct unode *work = NULL;
	for (struct unode *c = n->child; c; c = c->sibling) {
		c->next_removed = work;
		work = c;
	}
	n->child = NULL;
	while (work) {
		struct unode *x = work;
		work = x->next_removed;
		for (struct unode *c = x->child; c; c = c->sibling) {
			c->next_removed = work;
			work = c;
		}
		x->child = NULL;
		kill_node(db, x, l);
		cnt++;
	}
	if (self) {
		struct unode *p = n->parent;
		if (p) {
			struct unode **pp = &p->child;
			while (*pp != n)
				pp = &(*pp)->sibling;
			*pp = n->sibling;
		}
		kill_node(db, n, l);
		cnt++;
	}
	return cnt;
}

/* Outside every mutex: unmaps the removed nodes' pages (memfd: one call per contiguous
 * run), hands their extents back and frees them after a grace period. */
static void finish(struct uvm *db, struct rlist *l)
{
	if (db->memfd >= 0) {
		struct uspace *rs = NULL;
		uint64_t rstart = 0, rlen = 0;
		int rpid = -1;
		for (struct unode *n = l->head; n; n = n->next_removed) {
			int pid = (int)(n->key >> KEY_SHIFT);
			uint64_t va = n->key & ((1ull << KEY_SHIFT) - 1);
			if (rlen && pid == rpid && va == rstart + rlen) {
				rlen++;
				continue;
			}
			if (rlen)
				unmap_pages(rs, rstart, rlen);
			rpid = pid;
			rs = space_of(db, pid);
			rstart = va;
			rlen = 1;
		}
		if (rlen)
			unmap_pages(rs, rstart, rlen);
	}
	for (struct unode *n = l->head, *next; n; n = next) {
		next = n->next_removed;
		ext_put(db, n->ext, 1);
		urcu_memb_call_rcu(&n->rcu, node_free_cb);
	}
	l->head = l->tail = NULL;
}

/* ---- the API ---- */

void uvm_thread_online(void)
{
	urcu_memb_register_thread();
}

void uvm_thread_offline(void)
{
	urcu_memb_unregister_thread();
}

struct uvm *uvm_create(const struct uvm_config *cfg)
{
	if (cfg->va_bits < 12 || cfg->va_bits > 36 || cfg->frame_bits < 12 ||
	    cfg->frame_bits > 40 || cfg->max_spaces == 0 || cfg->max_spaces > (1u << 23)) {
		errno = EINVAL;
		return NULL;
	}
	struct uvm *db = calloc(1, sizeof *db);
	if (db == NULL)
		return NULL;
	db->cfg = *cfg;
	db->memfd = -1;
	db->spaces = calloc(cfg->max_spaces, sizeof *db->spaces);
	if (db->spaces == NULL)
		goto fail;
	pthread_mutex_init(&db->spaces_lock, NULL);
	if (cfg->memfd) {
		db->memfd = memfd_create("tsync-bench-vmdb-urcu", MFD_CLOEXEC);
		if (db->memfd < 0 ||
		    ftruncate(db->memfd, (off_t)((1ull << cfg->frame_bits) * PAGE)))
			goto fail;
	}
	/* Buckets: room for size_hint mappings from the start, so the table does not
	 * resize (or shrink again) every round; auto-resize grows it beyond. */
	unsigned long b = 1ul << 10;
	while (b < cfg->size_hint && b < (1ul << 24))
		b <<= 1;
	db->ht = cds_lfht_new_flavor(b, b, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				     &urcu_memb_flavor, NULL);
	if (db->ht == NULL) {
		errno = ENOMEM;
		goto fail;
	}
	return db;
fail:;
	int e = errno;
	if (db->memfd >= 0)
		close(db->memfd);
	free(db->spaces);
	free(db);
	errno = e;
	return NULL;
}

void uvm_destroy(struct uvm *db)
{
	struct rlist l = {NULL, NULL};
	struct cds_lfht_iter it;
	urcu_memb_read_lock();
	for (cds_lfht_first(db->ht, &it); cds_lfht_iter_get_node(&it); cds_lfht_next(db->ht, &it)) {
		struct unode *n = caa_container_of(cds_lfht_iter_get_node(&it), struct unode, hn);
		(void)cds_lfht_del(db->ht, &n->hn);
		rlist_add(&l, n);
	}
	urcu_memb_read_unlock();
	urcu_memb_synchronize_rcu();
	for (struct unode *n = l.head, *next; n; n = next) {
		next = n->next_removed;
		ext_put(db, n->ext, 1);
		node_free_cb(&n->rcu);
	}
	urcu_memb_barrier(); /* every call_rcu callback has run */
	(void)cds_lfht_destroy(db->ht, NULL);
	for (unsigned i = 0; i < db->nspaces; i++) {
		struct uspace *s = atomic_load_explicit(&db->spaces[i], memory_order_relaxed);
		if (s == NULL)
			continue;
		for (unsigned k = 0; k < ORDERS; k++) {
			free(s->free_pages[k].v);
			free(s->free_frames[k].v);
		}
		if (s->base)
			munmap(s->base, (1ull << db->cfg.va_bits) * PAGE);
		pthread_mutex_destroy(&s->lock);
		free(s);
	}
	if (db->memfd >= 0)
		close(db->memfd);
	pthread_mutex_destroy(&db->spaces_lock);
	free(db->spaces);
	free(db);
}

int uvm_space_create(struct uvm *db, int *pid)
{
	struct uspace *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -1;
	pthread_mutex_init(&s->lock, NULL);
	if (db->memfd >= 0) {
		void *p = mmap(NULL, (1ull << db->cfg.va_bits) * PAGE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			free(s);
			return -1;
		}
		s->base = p;
	}
	pthread_mutex_lock(&db->spaces_lock);
	if (db->nspaces == db->cfg.max_spaces) {
		pthread_mutex_unlock(&db->spaces_lock);
		if (s->base)
			munmap(s->base, (1ull << db->cfg.va_bits) * PAGE);
		free(s);
		errno = ENOSPC;
		return -1;
	}
	*pid = (int)db->nspaces++;
	atomic_store_explicit(&db->spaces[*pid], s, memory_order_release);
	pthread_mutex_unlock(&db->spaces_lock);
	return 0;
}

int uvm_grant(struct uvm *db, int pid, size_t npages, uint64_t *vaddr)
{
	struct uspace *s = space_of(db, pid);
	if (s == NULL) {
		errno = ESRCH;
		return -1;
	}
	if (npages == 0 || npages > UVM_MAX_PAGES) {
		errno = EINVAL;
		return -1;
	}
	unsigned k = order_of(npages);
	struct uroot *nodes[UVM_MAX_PAGES];
	struct uext *e = malloc(sizeof *e);
	if (e == NULL)
		return -1;
	size_t made = 0;
	for (; made < npages; made++) {
		nodes[made] = malloc(sizeof *nodes[made]);
		if (nodes[made] == NULL)
			goto nomem;
	}
	uint64_t vb, fb;
	pthread_mutex_lock(&s->lock);
	if (pages_alloc(db, s, k, &vb) != 0) {
		pthread_mutex_unlock(&s->lock);
		goto fail;
	}
	if (frames_alloc(db, s, k, &fb) != 0) {
		(void)vec_push(&s->free_pages[k], vb);
		pthread_mutex_unlock(&s->lock);
		goto fail;
	}
	pthread_mutex_unlock(&s->lock);
	atomic_init(&e->live, npages);
	e->vbase = vb;
	e->fbase = fb;
	e->order = k;
	e->pid = pid;
	if (s->base) {
		if (map_frames(db, s, vb, fb, npages) != 0) {
			int err = errno;
			atomic_store_explicit(&e->live, 1, memory_order_relaxed);
			ext_put(db, e, 1); /* hands vb and fb back, frees e */
			e = NULL;
			errno = err;
			goto fail;
		}
		if (db->cfg.touch)
			for (size_t i = 0; i < npages; i++)
				*(volatile uint64_t *)(void *)(s->base + (vb + i) * PAGE) = fb + i;
	}
	for (size_t i = 0; i < npages; i++) {
		struct unode *n = &nodes[i]->n;
		memset(n, 0, sizeof *n);
		pthread_mutex_init(&nodes[i]->lock, NULL);
		cds_lfht_node_init(&n->hn);
		n->key = key_of(pid, vb + i);
		n->frame = fb + i;
		n->root = nodes[i];
		n->ext = e;
		n->is_root = true;
		if (db->cfg.touch && !s->base)
			*(volatile uint64_t *)&n->frame = fb + i; /* the model's page-table write */
	}
	urcu_memb_read_lock();
	for (size_t i = 0; i < npages; i++)
		cds_lfht_add(db->ht, hash_key(nodes[i]->n.key), &nodes[i]->n.hn);
	urcu_memb_read_unlock();
	*vaddr = vb;
	return 0;
nomem:
	errno = ENOMEM;
fail:;
	int err = errno;
	for (size_t i = 0; i < made; i++)
		free(nodes[i]);
	free(e);
	errno = err;
	return -1;
}

int uvm_alias(struct uvm *db, int from, uint64_t mapfrom, int to, uint64_t *mapto, size_t npages)
{
	struct uspace *sf = space_of(db, from), *st = space_of(db, to);
	if (sf == NULL || st == NULL) {
		errno = ESRCH;
		return -1;
	}
	if (*mapto != UVM_ANY || npages == 0 || npages > UVM_MAX_PAGES) {
		errno = EINVAL;
		return -1;
	}
	unsigned k = order_of(npages);
	struct unode *nodes[UVM_MAX_PAGES];
	struct uext *e = malloc(sizeof *e);
	if (e == NULL)
		return -1;
	size_t made = 0;
	for (; made < npages; made++) {
		nodes[made] = calloc(1, sizeof *nodes[made]);
		if (nodes[made] == NULL) {
			for (size_t i = 0; i < made; i++)
				free(nodes[i]);
			free(e);
			errno = ENOMEM;
			return -1;
		}
	}
	uint64_t vb;
	pthread_mutex_lock(&st->lock);
	int rc = pages_alloc(db, st, k, &vb);
	pthread_mutex_unlock(&st->lock);
	if (rc != 0) {
		int err = errno;
		for (size_t i = 0; i < npages; i++)
			free(nodes[i]);
		free(e);
		errno = err;
		return -1;
	}
	atomic_init(&e->live, npages);
	e->vbase = vb;
	e->fbase = NO_FRAME;
	e->order = k;
	e->pid = to;
	size_t done = 0;
	int err = 0;
	urcu_memb_read_lock();
	for (; done < npages; done++) {
		struct unode *src = find(db, key_of(from, mapfrom + done));
		if (src == NULL) {
			err = ENOENT;
			break;
		}
		struct uroot *r = src->root;
		pthread_mutex_lock(&r->lock);
		if (src->dead) {
			pthread_mutex_unlock(&r->lock);
			err = ENOENT;
			break;
		}
		struct unode *c = nodes[done];
		cds_lfht_node_init(&c->hn);
		c->key = key_of(to, vb + done);
		c->frame = src->frame;
		c->root = r;
		c->parent = src;
		c->ext = e;
		if (st->base && map_frames(db, st, vb + done, c->frame, 1) != 0) {
			err = errno;
			pthread_mutex_unlock(&r->lock);
			break;
		}
		c->sibling = src->child;
		src->child = c;
		cds_lfht_add(db->ht, hash_key(c->key), &c->hn);
		pthread_mutex_unlock(&r->lock);
	}
	urcu_memb_read_unlock();
	if (done == npages) {
		*mapto = vb;
		return 0;
	}
	for (size_t i = done; i < npages; i++)
		free(nodes[i]);
	if (done)
		(void)uvm_release(db, to, vb, done); /* each removed node puts one page of e */
	ext_put(db, e, npages - done);
	errno = err;
	return -1;
}

static long remove_range(struct uvm *db, int pid, uint64_t mapat, size_t npages, bool self)
{
	if (space_of(db, pid) == NULL) {
		errno = ESRCH;
		return -1;
	}
	if (npages == 0) {
		errno = EINVAL;
		return -1;
	}
	uint64_t lim = 1ull << db->cfg.va_bits;
	uint64_t end = mapat >= lim ? mapat : npages > lim - mapat ? lim : mapat + npages;
	struct rlist l = {NULL, NULL};
	long cnt = 0;
	urcu_memb_read_lock();
	for (uint64_t p = mapat; p < end; p++) {
		struct unode *n = find(db, key_of(pid, p));
		if (n == NULL)
			continue;
		struct uroot *r = n->root;
		pthread_mutex_lock(&r->lock);
		if (!n->dead)
			cnt += cut(db, n, self, &l);
		pthread_mutex_unlock(&r->lock);
	}
	urcu_memb_read_unlock();
	finish(db, &l);
	return cnt;
}

long uvm_revoke(struct uvm *db, int pid, uint64_t mapat, size_t npages)
{
	return remove_range(db, pid, mapat, npages, false);
}

long uvm_release(struct uvm *db, int pid, uint64_t mapat, size_t npages)
{
	return remove_range(db, pid, mapat, npages, true);
}

int uvm_lookup(struct uvm *db, int pid, uint64_t vaddr, uint64_t *frame)
{
	if (space_of(db, pid) == NULL) {
		errno = ESRCH;
		return -1;
	}
	urcu_memb_read_lock();
	struct unode *n = find(db, key_of(pid, vaddr));
	if (n)
		*frame = n->frame;
	urcu_memb_read_unlock();
	if (n == NULL) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

uint64_t uvm_mappings(struct uvm *db)
{
	long before, after;
	unsigned long count;
	urcu_memb_read_lock();
	cds_lfht_count_nodes(db->ht, &before, &count, &after);
	urcu_memb_read_unlock();
	return count;
}
