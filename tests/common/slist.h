/*
 * tests/common/slist.h - the stress workload: sorted linked lists and a chained hash
 * table whose nodes come from one ps_mem, read without locks inside parallel sections
 * and updated with per-node ps_locks exactly as in ParSec (EuroSys 2016) Fig. 1: the
 * lazy list of ds/lazy_list.h (the one implementation `tsync-bench rlu`'s
 * `ps` set uses too), with this workload's checks around it.
 *
 * Writers (inside a section of w->ps):
 *   insert:  lazy_find pred; lazy_link (take pred, validate pred->next, link).
 *   delete:  lazy_lock_pair (take pred, then node); lazy_unlink (unlink, release pred,
 *            ps_lock_release_free the node).
 *   replace: copy-replace: as delete, but a fresh copy (new incarnation, same key) is
 *            linked in place of the node before it is freed.
 * Nodes are marked freed (state, freed_gen) before their unlink.
 *
 * Readers walk a list (or one bucket) and record every node's (incarnation, key, owner)
 * when they first reach it; after some work inside the same section they re-read every
 * recorded node. Any change means the node was reused while a reader could still see it
 * (premature reuse); an owner tag of another list means freed memory was reused as a
 * node of another structure and reached. Keys along a walk must increase strictly.
 *
 * Allocation checks: a node handed out by ps_alloc must not look live (two live
 * objects at one address), and must not carry the current "pinned generation" (see
 * wl_pin_begin(): reused while a reader that began before its free is still inside).
 */
#ifndef TSYNC_TEST_SLIST_H
#define TSYNC_TEST_SLIST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/tsync.h>

#include "lazy_list.h"

#define TNODE_LIVE 0x4c4956454c495645ull  /* "LIVELIVE" */
#define TNODE_FREED 0x4445414444454144ull /* "DEADDEAD" */
#define TNODE_MAGIC 0x9e3779b97f4a7c15ull

/*
 * Payload fields are deliberately plain (not _Atomic): they are written once before the
 * node is published (release) and read by readers that reached the node through an
 * acquire load. A premature reuse therefore shows up under ThreadSanitizer as a data
 * race between the reader's read and the new incarnation's initialisation, and in every
 * build as a changed incarnation.
 */
struct tnode {
	struct lazy_node ln; /* lock, next, key, and the owner: the tag of its structure */
	uint64_t inc;        /* incarnation: a global counter, set at allocation */
	uint64_t check;      /* inc ^ key ^ owner ^ TNODE_MAGIC */
	uint64_t state;      /* TNODE_LIVE while allocated, TNODE_FREED once unlinked;
			      * written by the lock holder, read only by allocators */
	uint64_t freed_gen;  /* pin generation observed before the unlink */
	uint64_t payload[2];
};

struct slist {
	struct tnode *head; /* sentinel, key 0, tag, never freed while the list lives */
	uint64_t tag;
};

/* Counters a thread accumulates (plain, thread-local; summed at the end). */
struct wl_counts {
	uint64_t reads, read_nodes, rechecks;
	uint64_t inserts, deletes, replaces, misses, retries;
	uint64_t allocs, frees;
};

struct wl {
	struct ps *ps;
	struct ps_mem *mem;
	unsigned nlists;
	struct slist *lists;
	uint64_t list_keys; /* keys 1..list_keys */
	unsigned nbuckets;
	struct slist *buckets;
	uint64_t hash_keys;    /* keys 1..hash_keys */
	unsigned read_work;    /* max spin between first read and re-read */
	struct lazy_check chk; /* the writers' walk checks (wl_init sets them) */
};

/* Global violation counter of the workload (premature reuse, corruption, ...). */
extern _Atomic uint64_t wl_violations;
/* Pin generation: odd while a pinning reader (wl_pin_begin) is inside its section. */
extern _Atomic uint64_t wl_pin_gen;
/* Incarnation counter. */
extern _Atomic uint64_t wl_incarnation;

/* Report a violation (printed for the first few), counted in wl_violations. */
void wl_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Set up nlists lists of list_keys keys and a table of nbuckets buckets of hash_keys
 * keys, each about half full. Call outside any section. */
/* A new ps (stored in *ps_out) and a ps_mem of obj_size-byte objects on it; small: a
 * 4-object cache, batches of 2, 4 KiB slabs, 1 slab kept - to provoke races. Fails the
 * test on error. */
struct ps_mem *wl_create_mem(struct ps **ps_out, size_t obj_size, bool small);

void wl_init(struct wl *w, struct ps *ps, struct ps_mem *mem, unsigned nlists, uint64_t list_keys,
	     unsigned nbuckets, uint64_t hash_keys);
/* Check every structure (quiet: no concurrent writer), free every node and sentinel.
 * Returns the number of nodes freed. */
uint64_t wl_destroy(struct wl *w);

/* A fresh node (ps_alloc + checks + initialisation); NULL never (fails the test). */
struct tnode *wl_node_new(struct wl *w, uint64_t key, uint64_t tag, struct wl_counts *c);

/* Structure operations; the caller is inside a section of w->ps. Return 1 when the
 * operation took effect, 0 when the key was absent (delete/replace) or present
 * (insert). */
int slist_insert(struct wl *w, struct slist *l, uint64_t key, struct wl_counts *c);
int slist_delete(struct wl *w, struct slist *l, uint64_t key, struct wl_counts *c);
int slist_replace(struct wl *w, struct slist *l, uint64_t key, struct wl_counts *c);
/* Walk l checking invariants; record up to max nodes in rec (may be NULL). Returns the
 * number of nodes walked. Caller inside a section. */
struct wl_seen {
	const struct tnode *n;
	uint64_t inc, key, owner;
};
size_t slist_walk(struct wl *w, struct slist *l, uint64_t stop_key, struct wl_seen *rec, size_t max,
		  size_t *nrec);
/* Re-read recorded nodes; counts a violation for each change. Returns changes. */
size_t wl_recheck(const struct wl_seen *rec, size_t n, const char *what);

/* One random update in its own section: insert, delete or replace on a random list or
 * bucket. */
void wl_write_op(struct wl *w, uint64_t *rng, struct wl_counts *c);
/* One random read in its own section (sometimes nested): a whole-list walk or a few
 * bucket lookups, some work, then a re-check of everything seen. */
void wl_read_op(struct wl *w, uint64_t *rng, struct wl_counts *c);

/* A reader that pins: enter a section (the caller does ps_enter first), then mark the
 * generation odd; every node unlinked from now on must not be handed out by ps_alloc
 * before wl_pin_end() (which must come before ps_exit). */
void wl_pin_begin(void);
void wl_pin_end(void);

void wl_counts_add(struct wl_counts *dst, const struct wl_counts *src);

#endif
