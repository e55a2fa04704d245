/*
 * include/tsync/static/ps_ns.h - the inline tier of <tsync/ps_ns.h>: the radix tree's layout and
 * the wait-free lookup (ParSec (EuroSys 2016) §3.6). Not API: the names here (double underscores)
 * and the layout may change in any release; include <tsync/ps_ns.h>, which includes this file at
 * its end. The contracts are in <tsync/ps_ns.h>; the reasoning in docs/design.md.
 */
#ifndef TSYNC_STATIC_PS_NS_H
#define TSYNC_STATIC_PS_NS_H

#include <tsync/ps_ns.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inline lookup (internal layout; do not use the ps_ns__ names directly) ---- */

#define PS_NS__FANOUT_SHIFT 9u
#define PS_NS__FANOUT (1u << PS_NS__FANOUT_SHIFT)
/* Leaf word values that are not objects (objects are at least 8-byte aligned). */
#define PS_NS__FREE 0u
#define PS_NS__GRACE 1u
#define PS_NS__RESERVED 2u
#define PS_NS__CLAIM 3u /* transient: an extent claim in progress */
struct ps_ns__node {
	TSYNC_ATOMIC(uintptr_t) slot[PS_NS__FANOUT];
};
struct ps_ns__head {
	struct ps_ns__node *root; /* never changes */
	uint64_t nids;            /* 2^id_bits */
	unsigned height;          /* levels, >= 1; the root's slots select the top bits */
};

static inline void *ps_ns_lookup(struct ps_ns *ns, uint64_t id)
{
	struct ps_ns__head *h = (struct ps_ns__head *)ns;
	if (TSYNC_UNLIKELY(id >= h->nids)) {
		errno = ERANGE;
		return NULL;
	}
	struct ps_ns__node *n = h->root;
	for (unsigned l = h->height - 1; l > 0; l--) {
		uintptr_t v = atomic_load_explicit(
			&n->slot[(id >> (PS_NS__FANOUT_SHIFT * l)) & (PS_NS__FANOUT - 1)],
			memory_order_acquire);
		if (v == 0)
			return NULL;
		n = (struct ps_ns__node *)v;
	}
	uintptr_t v =
		atomic_load_explicit(&n->slot[id & (PS_NS__FANOUT - 1)], memory_order_acquire);
	return v > PS_NS__CLAIM ? (void *)v : NULL;
}

#ifdef __cplusplus
}
#endif
#endif
