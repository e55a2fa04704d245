/*
 * ds/lazy_list.c - the ParSec lazy list's updates (lazy_list.h has the
 * algorithm and the argument; lazy_find is inline there).
 */
#include "lazy_list.h"

bool lazy_link(struct lazy_node *pred, struct lazy_node *succ, struct lazy_node *n)
{
	if (!ps_lock_take(pred, &pred->lock))
		return false; /* pred was unlinked and freed */
	if (atomic_load_explicit(&pred->next, memory_order_relaxed) != succ) {
		ps_lock_release(pred, &pred->lock);
		return false;
	}
	atomic_store_explicit(&n->next, succ, memory_order_relaxed);
	atomic_store_explicit(&pred->next, n, memory_order_release);
	ps_lock_release(pred, &pred->lock);
	return true;
}

enum lazy_lock_result lazy_lock_pair(const struct lazy_check *chk, struct lazy_node *head,
				     uint64_t key, struct lazy_node **predp,
				     struct lazy_node **nodep)
{
	struct lazy_node *p, *n = lazy_find(chk, head, key, &p);
	if (n == NULL || n->key != key)
		return LAZY_ABSENT;
	if (!ps_lock_take(p, &p->lock))
		return LAZY_RETRY;
	if (atomic_load_explicit(&p->next, memory_order_relaxed) != n) {
		ps_lock_release(p, &p->lock);
		return LAZY_RETRY;
	}
	/* Hand over hand: pred, then the node (list order, so no deadlock). */
	if (!ps_lock_take(n, &n->lock)) {
		ps_lock_release(p, &p->lock);
		return LAZY_NODE_FREED;
	}
	*predp = p;
	*nodep = n;
	return LAZY_LOCKED;
}

void lazy_unlink(struct lazy_node *pred, struct lazy_node *node, struct lazy_node *repl)
{
	struct lazy_node *succ = atomic_load_explicit(&node->next, memory_order_relaxed);
	if (repl != NULL) {
		atomic_store_explicit(&repl->next, succ, memory_order_relaxed);
		succ = repl;
	}
	atomic_store_explicit(&pred->next, succ, memory_order_release);
	ps_lock_release(pred, &pred->lock);
	ps_lock_release_free(node, &node->lock);
}
