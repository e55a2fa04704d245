/*
 * include/tsync/static/rlu.h - the inline tier of <tsync/rlu.h>: the handle's dereference flag and
 * the inline dereference. Not API: the names here (double underscores) and the layout may change in
 * any release; include <tsync/rlu.h>, which includes this file at its end. The contracts are in
 * <tsync/rlu.h>; the reasoning in docs/design.md.
 */
#ifndef TSYNC_STATIC_RLU_H
#define TSYNC_STATIC_RLU_H

#include <tsync/rlu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rlu__thread_head {
	bool deref_fast; /* private: set by rlu_reader_lock, cleared by rlu_try_lock */
};
void *rlu__deref_slow(struct rlu_thread *self, void *obj);

static inline void *rlu_deref(struct rlu_thread *self, void *obj)
{
	if (TSYNC_LIKELY(((const struct rlu__thread_head *)(const void *)self)->deref_fast))
		return obj;
	return rlu__deref_slow(self, obj);
}

#ifdef __cplusplus
}
#endif
#endif
