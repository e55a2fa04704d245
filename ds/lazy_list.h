/*
 * ds/lazy_list.h - the ParSec lazy list: a sorted singly linked list read
 * without locks inside parallel sections and updated under per-node ps_locks, exactly
 * as in ParSec (EuroSys 2016) Fig. 1. One implementation serves the premature-reuse
 * hunts (tests/common/slist.h wraps it with its checks) and the `ps` set of
 * `tsync-bench rlu` (ds/sets.c); the library target is tsync_lazy_list.
 *
 *   find:    walk from the sentinel to the first node with key >= key (lock-free).
 *   insert:  find; lazy_link: take pred's lock, check pred still links to succ, link.
 *   delete:  find; lazy_lock_pair: take pred, check it links to the node, take the
 *            node (list order: no deadlock); lazy_unlink: unlink (or put a fresh copy in
 *            its place), release pred, release the node's lock freeing it.
 * A node is unlinked only by the holder of its lock and of its predecessor's lock, and
 * is marked freed (ps_lock_release_free) before its lock is released, so a successful
 * ps_lock_take(pred) means pred is still linked: the lazy-list argument with "freed" as
 * the deletion mark. Every operation here is one attempt inside one section of the
 * nodes' ps; the caller decides whether to retry in the same section or a new one.
 *
 * Checks on the read path: every node carries the tag of its list (the sentinel's); a
 * walk that reaches a node with another tag (memory reused as something else), or
 * walks more than max_steps nodes (a cycle), calls the check's corrupt() and stops
 * there. The tag is a plain field, written before the node is published: a premature
 * reuse is a data race ThreadSanitizer reports, and in every build a changed tag.
 */
#ifndef TSYNC_TEST_LAZY_LIST_H
#define TSYNC_TEST_LAZY_LIST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <tsync/arch.h>
#include <tsync/ps_lock.h>

/* The first member of each ps_mem object that is a node (the lock functions take the
 * object's address, and ps_lock_release_free frees it into its ps_mem). */
struct lazy_node {
	struct ps_lock lock;
	struct lazy_node *_Atomic next;
	uint64_t key; /* the sentinel's is 0; keys along a list increase strictly */
	uint64_t tag; /* the list's (its sentinel's tag) */
};

enum lazy_corruption {
	LAZY_BAD_TAG, /* reached a node with another list's tag */
	LAZY_CYCLE,   /* walked more than max_steps nodes */
};

/* What a walk checks, shared by every list of one structure. */
struct lazy_check {
	uint64_t max_steps; /* a walk longer than this is a cycle; UINT64_MAX: no bound */
	/* Called on the first bad node a walk reaches (the walk then ends there, returning
	 * that node); it may report and return, or not return. */
	void (*corrupt)(const struct lazy_node *head, const struct lazy_node *n,
			enum lazy_corruption what, uint64_t steps);
};

/* Initialise a fresh, unpublished node (or a sentinel: key 0, the list's tag). */
static inline void lazy_node_init(struct lazy_node *n, uint64_t key, uint64_t tag)
{
	ps_lock_init(&n->lock);
	atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
	n->key = key;
	n->tag = tag;
}

/*
 * lazy_find: the first node of the list at head with key >= key (NULL: none), and in
 * *predp its predecessor (head when none). Inside a section of the nodes' ps; no lock
 * taken. Inline: it is every operation's walk.
 */
static inline struct lazy_node *lazy_find(const struct lazy_check *chk, struct lazy_node *head,
					  uint64_t key, struct lazy_node **predp)
{
	struct lazy_node *p = head;
	struct lazy_node *n = atomic_load_explicit(&p->next, memory_order_acquire);
	uint64_t steps = 0;
	while (n != NULL) {
		if (TSYNC_UNLIKELY(n->tag != head->tag)) {
			chk->corrupt(head, n, LAZY_BAD_TAG, steps);
			break;
		}
		if (TSYNC_UNLIKELY(++steps > chk->max_steps)) {
			chk->corrupt(head, n, LAZY_CYCLE, steps);
			break;
		}
		if (n->key >= key)
			break;
		p = n;
		n = atomic_load_explicit(&n->next, memory_order_acquire);
	}
	*predp = p;
	return n;
}

/*
 * lazy_link: link n (initialised, unpublished, n->key between pred's and succ's) after
 * pred, where lazy_find left pred and succ: takes pred's lock and checks pred still
 * links to succ. False, with no lock held and n unpublished, when pred was freed or its
 * next changed (find again). Inside a section.
 */
bool lazy_link(struct lazy_node *pred, struct lazy_node *succ, struct lazy_node *n);

enum lazy_lock_result {
	LAZY_LOCKED,     /* *predp and *nodep locked; *nodep has the key */
	LAZY_ABSENT,     /* no node with the key; no lock held */
	LAZY_RETRY,      /* pred freed or relinked under us; no lock held: find again */
	LAZY_NODE_FREED, /* pred locked and linking to the node, yet the node's lock said
			  * freed: impossible in a correct ParSec (unlinking needs pred's
			  * lock); no lock held */
};

/* lazy_lock_pair: find key and lock its predecessor, then the node. Inside a section. */
enum lazy_lock_result lazy_lock_pair(const struct lazy_check *chk, struct lazy_node *head,
				     uint64_t key, struct lazy_node **predp,
				     struct lazy_node **nodep);

/*
 * lazy_unlink: with pred and node locked by lazy_lock_pair, unlink node, putting repl in
 * its place when repl is not NULL (a fresh unpublished node with the same key: a
 * copy-replace) or node's successor otherwise; release pred; release node's lock,
 * marking it freed and ps_free()ing it into its ps_mem. Inside a section.
 */
void lazy_unlink(struct lazy_node *pred, struct lazy_node *node, struct lazy_node *repl);

#endif
