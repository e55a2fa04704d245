/*
 * include/tsync/static/thread.h - the inline tier of <tsync/thread.h>: the calling thread's id + 1
 * in a thread-local word, and the inline id lookups. Not API: the names here (double underscores)
 * and the layout may change in any release; include <tsync/thread.h>, which includes this file at
 * its end. The contracts are in <tsync/thread.h>; the reasoning in docs/design.md.
 */
#ifndef TSYNC_STATIC_THREAD_H
#define TSYNC_STATIC_THREAD_H

#include <tsync/thread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal: id + 1 of the calling thread, 0 when unregistered. */
extern TSYNC_THREAD_LOCAL unsigned tsync__tid1 __attribute__((tls_model("initial-exec")));
unsigned tsync__thread_lazy_register(void);

/* Internal: the calling thread's id; registers lazily and aborts if it cannot. */
static inline unsigned tsync__self(void)
{
	unsigned t = tsync__tid1;
	if (TSYNC_LIKELY(t != 0))
		return t - 1;
	return tsync__thread_lazy_register();
}

static inline int tsync_thread_id(void)
{
	unsigned t = tsync__tid1;
	if (TSYNC_LIKELY(t != 0))
		return (int)(t - 1);
	return tsync_thread_register() == 0 ? (int)(tsync__tid1 - 1) : -1;
}

static inline unsigned tsync_thread_self(void)
{
	return tsync__self();
}

#ifdef __cplusplus
}
#endif
#endif
