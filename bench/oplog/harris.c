/*
 * bench/oplog/harris.c - the Harris/Michael lock-free list (see harris.h).
 */
#include <stdlib.h>

#include "harris.h"

#define MARK 1u
static inline struct hl_node *ptr(uintptr_t v)
{
	return (struct hl_node *)(v & ~(uintptr_t)MARK);
}

int hl_init(struct hl_list *l)
{
	atomic_init(&l->head, 0);
	l->ps = ps_create(NULL);
	if (!l->ps)
		return -1;
	l->mem = ps_mem_create(l->ps, sizeof(struct hl_node), NULL);
	if (!l->mem) {
		ps_destroy(l->ps);
		return -1;
	}
	return 0;
}

void hl_fini(struct hl_list *l)
{
	ps_mem_destroy(l->mem); /* returns every slab, live nodes included */
	ps_destroy(l->ps);
}

/* Find the first node with key >= key; *prevp is the link pointing at it. Unlinks (and
 * frees) marked nodes on the way. Inside a section. */
static struct hl_node *search(struct hl_list *l, uint64_t key, _Atomic uintptr_t **prevp)
{
retry:;
	_Atomic uintptr_t *prev = &l->head;
	struct hl_node *cur = ptr(atomic_load_explicit(prev, memory_order_acquire));
	while (cur) {
		uintptr_t next = atomic_load_explicit(&cur->next, memory_order_acquire);
		if (next & MARK) {
			uintptr_t exp = (uintptr_t)cur;
			if (!atomic_compare_exchange_strong_explicit(
				    prev, &exp, next & ~(uintptr_t)MARK, memory_order_acq_rel,
				    memory_order_acquire))
				goto retry;
			ps_free(l->mem, cur);
			cur = ptr(next);
			continue;
		}
		if (cur->key >= key) {
			*prevp = prev;
			return cur;
		}
		prev = &cur->next;
		cur = ptr(next);
	}
	*prevp = prev;
	return NULL;
}

bool hl_insert(struct hl_list *l, uint64_t key, uint64_t start, uint64_t end)
{
	struct hl_node *n = ps_alloc(l->mem);
	if (!n)
		abort();
	n->key = key;
	n->start = start;
	atomic_store_explicit(&n->end, end, memory_order_relaxed);
	bool ok;
	ps_enter(l->ps);
	for (;;) {
		_Atomic uintptr_t *prev;
		struct hl_node *cur = search(l, key, &prev);
		if (cur && cur->key == key) {
			ok = false;
			break;
		}
		atomic_store_explicit(&n->next, (uintptr_t)cur, memory_order_relaxed);
		uintptr_t exp = (uintptr_t)cur;
		if (atomic_compare_exchange_strong_explicit(
			    prev, &exp, (uintptr_t)n, memory_order_release, memory_order_relaxed)) {
			ok = true;
			break;
		}
	}
	ps_exit(l->ps);
	if (!ok)
		ps_free(l->mem, n); /* never published */
	return ok;
}

bool hl_delete(struct hl_list *l, uint64_t key)
{
	bool ok = false;
	ps_enter(l->ps);
	for (;;) {
		_Atomic uintptr_t *prev;
		struct hl_node *cur = search(l, key, &prev);
		if (!cur || cur->key != key)
			break;
		uintptr_t next = atomic_load_explicit(&cur->next, memory_order_acquire);
		if (next & MARK)
			continue;
		if (!atomic_compare_exchange_strong_explicit(&cur->next, &next, next | MARK,
							     memory_order_acq_rel,
							     memory_order_relaxed))
			continue;
		ok = true;
		uintptr_t exp = (uintptr_t)cur;
		if (atomic_compare_exchange_strong_explicit(prev, &exp, next, memory_order_acq_rel,
							    memory_order_relaxed))
			ps_free(l->mem, cur);
		else
			(void)search(l, key, &prev); /* someone else's traversal unlinks it */
		break;
	}
	ps_exit(l->ps);
	return ok;
}

uint64_t hl_truncate(struct hl_list *l, uint64_t off)
{
	uint64_t pages = 0;
	ps_enter(l->ps);
	for (struct hl_node *cur = ptr(atomic_load_explicit(&l->head, memory_order_acquire));
	     cur;) {
		uintptr_t next = atomic_load_explicit(&cur->next, memory_order_acquire);
		if (!(next & MARK)) {
			uint64_t e = atomic_load_explicit(&cur->end, memory_order_relaxed);
			uint64_t ne = cur->start > off ? cur->start : off;
			while (e > ne && !atomic_compare_exchange_weak_explicit(
						 &cur->end, &e, ne, memory_order_relaxed,
						 memory_order_relaxed))
				;
			if (e > ne)
				pages += e - ne;
		}
		cur = ptr(next);
	}
	ps_exit(l->ps);
	return pages;
}
