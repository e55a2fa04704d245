/*
 * include/tsync/static/mvrlu.h - the inline tier of <tsync/mvrlu.h>: the handle's watermark counts,
 * the object header's size and the inline dereference. Not API: the names here (double underscores)
 * and the layout may change in any release; include <tsync/mvrlu.h>, which includes this file at
 * its end. The contracts are in <tsync/mvrlu.h>; the reasoning in docs/design.md.
 */
#ifndef TSYNC_STATIC_MVRLU_H
#define TSYNC_STATIC_MVRLU_H

#include <tsync/mvrlu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mvrlu__thread_head {
	uint32_t sec_derefs, sec_versioned; /* private: this section's derefs (watermark) */
};
#define MVRLU__OBJ_HDR 16 /* private: bytes of the header before each object's data */
void *mvrlu__deref_slow(struct mvrlu_thread *self, void *obj);

static inline void *mvrlu_deref(struct mvrlu_thread *self, void *obj)
{
	if (!obj)
		return NULL;
	((struct mvrlu__thread_head *)(void *)self)->sec_derefs++;
	/* the header's first word: the newest version, NULL if none */
	TSYNC_ATOMIC(void *) *head = (TSYNC_ATOMIC(void *) *)(void *)((char *)obj - MVRLU__OBJ_HDR);
	if (TSYNC_LIKELY(atomic_load_explicit(head, memory_order_acquire) == NULL))
		return obj;
	return mvrlu__deref_slow(self, obj);
}

#ifdef __cplusplus
}
#endif
#endif
