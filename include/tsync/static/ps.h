/*
 * include/tsync/static/ps.h - the inline tier of <tsync/ps.h>: a thread's slot, the instance's
 * first line, and the read path (ps_enter, ps_exit, ps_in_section); why it is correct:
 * docs/design.md §2. Not API: the names here (double underscores) and the layout may change in any
 * release; include <tsync/ps.h>, which includes this file at its end. The contracts are in
 * <tsync/ps.h>; the reasoning in docs/design.md.
 */
#ifndef TSYNC_STATIC_PS_H
#define TSYNC_STATIC_PS_H

#include <tsync/ps.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inline fast path (internal layout; do not use the ps__ names directly) ---- */

/* One per thread per instance, on its own cache line. state and quiesced are written
 * only by the owning thread (or by the registry when the owner exits). */
struct ps__slot {
	/* (e << 4) | depth: depth (0..15) is the caller's nesting depth, 0 outside any
	 * section; e is the start of the outermost section (or of the last one), in ticks
	 * since the instance's base, at or before its true start. One word, so one load
	 * sees a state the thread was in (docs/design.md §2). */
	TSYNC_ALIGNAS(TSYNC_CACHE_LINE) TSYNC_ATOMIC(uint64_t) state;
	TSYNC_ATOMIC(uint64_t) quiesced; /* owner's last computed quiescence point (opt. 2) */
	void *qcache;                    /* owner only: cache of other threads' values (opt. 3) */
};
#define PS__DEPTH_BITS 4u
#define PS__DEPTH_MASK ((1u << PS__DEPTH_BITS) - 1u) /* most nested sections: 15 */
#define PS__CHUNK_SHIFT 6u
#define PS__CHUNK (1u << PS__CHUNK_SHIFT)
struct ps__chunk {
	struct ps__slot slot[PS__CHUNK];
};
/* The first cache line of a struct ps: what ps_enter reads. chunks, key and base are
 * fixed at creation; clock is written by reclaimers, at most once per read interval from
 * ps_free's reclamation (so a reader misses on this line that often); read changes only
 * when the instance switches between its membarrier and fence modes (docs/design.md
 * §2.6), at most twice per fence lease. */
#define PS__READ_FENCE 1u /* a full fence after the enter store */
#define PS__READ_TSC 2u   /* the counter, not the clock word, dates a section */
struct ps__head {
	TSYNC_ATOMIC(struct ps__chunk *) * chunks; /* capacity / PS__CHUNK entries, filled lazily */
	uint64_t key;                              /* unique per instance, never reused */
	uint64_t base;                             /* a counter reading at creation: times in
						    * state words count from it */
	TSYNC_ATOMIC(uint32_t) read;               /* PS__READ_* */
	uint32_t pad_;
	TSYNC_ATOMIC(uint64_t)
	clock; /* the domain clock word, as a state word's
		* start: (reading - base) << PS__DEPTH_BITS */
};
/* Each thread's slot of the instance it used last: (key, slot), set by ps__slot_miss and
 * cleared when the thread unregisters (its slot then belongs to its id, not to it). A
 * key is never reused, so a destroyed instance's entry matches nothing. */
extern TSYNC_THREAD_LOCAL uint64_t tsync__ps_key __attribute__((tls_model("initial-exec")));
extern TSYNC_THREAD_LOCAL struct ps__slot *tsync__ps_slot
	__attribute__((tls_model("initial-exec")));
struct ps__slot *ps__slot_miss(struct ps *ps) __attribute__((cold));
void ps__exit_unbalanced(void) __attribute__((cold, noreturn));
void ps__enter_too_deep(void) __attribute__((cold, noreturn));

static inline struct ps__slot *ps__slot(struct ps *ps)
{
	if (TSYNC_LIKELY(tsync__ps_key == ((struct ps__head *)ps)->key))
		return tsync__ps_slot;
	return ps__slot_miss(ps);
}

/* ps_quiescence_point's body, inline for the library's reclaimers (src/ps_mem_queue.c reads it
 * on every reclamation): one load from the caller's own slot. */
static inline tsync_tick_t ps__quiescence_point(struct ps *ps)
{
	return atomic_load_explicit(&ps__slot(ps)->quiesced, memory_order_relaxed);
}

/* ps_enter's outermost entry when the instance reads the counter (RT, TEMPORAL). */
void ps__enter_counter(struct ps *ps, struct ps__slot *s);

static inline void ps_enter(struct ps *ps)
{
	struct ps__slot *s = ps__slot(ps);
	uint64_t w = atomic_load_explicit(&s->state, memory_order_relaxed);
	struct ps__head *h = (struct ps__head *)ps;
	if (TSYNC_LIKELY((w & PS__DEPTH_MASK) == 0)) {
		/* A time no later than the section's start: the clock word was stored before
		 * this load; acquire keeps the section's loads after it. */
		uint64_t e = atomic_load_explicit(&h->clock, memory_order_acquire);
		atomic_store_explicit(&s->state, e | 1, memory_order_release);
		/* The section's loads stay after the store in program order, and so does the
		 * load of `read`: a reclaimer switching the instance to its fence mode sets
		 * the flag and then makes a read barrier, so a section either is made
		 * visible by that barrier or sees the flag and fences (docs/design.md §2.6). */
		atomic_signal_fence(memory_order_seq_cst);
		uint32_t r = atomic_load_explicit(&h->read, memory_order_relaxed);
		if (TSYNC_UNLIKELY(r != 0)) {
			if (r & PS__READ_TSC)
				ps__enter_counter(ps, s);
			else
				atomic_thread_fence(memory_order_seq_cst);
		}
	} else {
		if (TSYNC_UNLIKELY((w & PS__DEPTH_MASK) == PS__DEPTH_MASK))
			ps__enter_too_deep();
		atomic_store_explicit(&s->state, w + 1, memory_order_relaxed);
	}
}

static inline void ps_exit(struct ps *ps)
{
	struct ps__slot *s = ps__slot(ps);
	uint64_t w = atomic_load_explicit(&s->state, memory_order_relaxed);
	if (TSYNC_UNLIKELY((w & PS__DEPTH_MASK) == 0))
		ps__exit_unbalanced();
	atomic_store_explicit(&s->state, w - 1, memory_order_release);
}

static inline bool ps_in_section(struct ps *ps)
{
	return (atomic_load_explicit(&ps__slot(ps)->state, memory_order_relaxed) &
		PS__DEPTH_MASK) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
