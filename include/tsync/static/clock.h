/*
 * include/tsync/static/clock.h - the inline tier of <tsync/clock.h>: the clock source read on every
 * tsync_now, and the inline clock reads. Not API: the names here (double underscores) and the
 * layout may change in any release; include <tsync/clock.h>, which includes this file at its end.
 * The contracts are in <tsync/clock.h>; the reasoning in docs/design.md.
 */
#ifndef TSYNC_STATIC_CLOCK_H
#define TSYNC_STATIC_CLOCK_H

#include <tsync/clock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Internal: the source chosen at initialisation; read on every tsync_now(). */
extern TSYNC_ATOMIC(int) tsync__clock_source;
tsync_tick_t tsync__now_slow(int ordered);

/* Internal: is the source the hardware counter? The test every reading starts with. */
static inline bool tsync__counter_on(void)
{
#if TSYNC_ARCH_HAS_COUNTER
	return atomic_load_explicit(&tsync__clock_source, memory_order_relaxed) ==
	       TSYNC_CLOCK_COUNTER;
#else
	return false;
#endif
}

static inline tsync_tick_t tsync_now(void)
{
	if (TSYNC_LIKELY(tsync__counter_on()))
		return tsync_arch_counter();
	return tsync__now_slow(0);
}

static inline tsync_tick_t tsync_now_ordered(void)
{
	if (TSYNC_LIKELY(tsync__counter_on()))
		return tsync_arch_counter_ordered();
	return tsync__now_slow(1);
}

static inline tsync_tick_t tsync_now_before_loads(void)
{
	if (TSYNC_LIKELY(tsync__counter_on()))
		return tsync_arch_counter_before_loads();
	return tsync__now_slow(1);
}

static inline bool tsync_clock_before(tsync_tick_t a, tsync_tick_t b)
{
	return a + tsync_clock_skew() < b;
}

#ifdef __cplusplus
}
#endif
#endif
