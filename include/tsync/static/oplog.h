/*
 * include/tsync/static/oplog.h - the inline tier of <tsync/oplog.h>: the per-thread log slot's
 * layout and the direct-access fast path (OpLog (MIT TR 2014) §5.2, Fig. 8). Not API: the names
 * here (double underscores) and the layout may change in any release; include <tsync/oplog.h>,
 * which includes this file at its end. The contracts are in <tsync/oplog.h>; the reasoning in
 * docs/design.md.
 */
#ifndef TSYNC_STATIC_OPLOG_H
#define TSYNC_STATIC_OPLOG_H

#include <tsync/oplog.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal layout shared with the inline fast path below; do not use directly. */
struct oplog__slot {
	TSYNC_ATOMIC(uint32_t) lock;
	uint32_t pad_;
	struct oplog_object *owner;                   /* under lock */
	TSYNC_ATOMIC(struct oplog_object *) evicting; /* see oplog_object_fini */
	uint64_t last_ts;                             /* under lock */
};
struct oplog__domain_fast {
	TSYNC_ATOMIC(void *) * tables; /* per thread id: the table, or NULL */
	size_t slot_stride;
	uint32_t mask;
	uint32_t direct_ok; /* the type is OPLOG_TYPE_UNORDERED with a custom log */
};
#define OPLOG__TABLE_HDR TSYNC_CACHE_LINE
void *oplog__log_acquire_slow(struct oplog_object *obj);

static inline void *oplog_log_acquire(struct oplog_object *obj)
{
	unsigned t = tsync__tid1; /* id + 1 of a registered thread, else 0 (slow path) */
	const struct oplog__domain_fast *d =
		(const struct oplog__domain_fast *)(const void *)obj->dom;
	if (TSYNC_LIKELY(t != 0 && d->direct_ok)) {
		unsigned char *tab = (unsigned char *)atomic_load_explicit(&d->tables[t - 1],
									   memory_order_acquire);
		if (TSYNC_LIKELY(tab != NULL)) {
			struct oplog__slot *s =
				(struct oplog__slot *)(void *)(tab + OPLOG__TABLE_HDR +
							       (size_t)(obj->hash & d->mask) *
								       d->slot_stride);
			if (TSYNC_LIKELY(atomic_exchange_explicit(&s->lock, 1,
								  memory_order_acquire) == 0)) {
				if (TSYNC_LIKELY(s->owner == obj))
					return s + 1;
				atomic_store_explicit(&s->lock, 0, memory_order_release);
			}
		}
	}
	return oplog__log_acquire_slow(obj);
}

static inline void oplog_log_release(void *log)
{
	atomic_store_explicit(&((struct oplog__slot *)log - 1)->lock, 0, memory_order_release);
}

#ifdef __cplusplus
}
#endif
#endif
