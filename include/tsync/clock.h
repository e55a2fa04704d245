/*
 * tsync/clock.h - a globally ordered, core-local clock and its measured skew bound.
 *
 * Every tsync module orders events across threads by reading a clock that needs no
 * shared cache line: the invariant time-stamp counter on x86-64, the generic timer
 * (cntvct_el0) on aarch64, CLOCK_MONOTONIC elsewhere (ParSec (EuroSys 2016) §3.2,
 * "Using rdtsc for globally ordering events"). Counters on different cores may be offset
 * from each other; at initialisation tsync measures that offset the way ORDO does (the
 * RLU study (Appl. Sci. 2022) §6): threads pinned to each pair of CPUs exchange
 * timestamps through one cache line, and for each
 * direction the smallest observed (receiver - sender) difference bounds the offset from
 * above (it is the offset plus a positive one-way latency). The largest of those minima
 * over all ordered pairs is the skew bound S. Two timestamps a, b taken on any two
 * threads are ordered a-before-b only when a + S < b (tsync_clock_before()); every
 * cross-thread comparison in tsync goes through that rule.
 *
 * Units: ticks of the chosen source. tsync_ticks_to_ns()/tsync_ns_to_ticks() convert
 * with a rate calibrated against CLOCK_MONOTONIC at initialisation, to within 0.1 %.
 *
 * Initialisation is lazy (first call of any function here, or of any tsync call) and
 * runs once per process; it takes a few tens of milliseconds (calibration plus the
 * pairwise measurement, which pins a helper thread to each CPU in the caller's affinity
 * mask). On a busy machine the measurement takes longer, since each exchange needs both
 * threads of a pair on their CPUs at once; a helper whose partner does not answer within
 * 200 us sleeps until it does, rather than spin away its CPU's time slice.
 * Environment overrides, read once at initialisation:
 *   TSYNC_CLOCK=rdtsc|monotonic   force the source (rdtsc: the hardware counter)
 *   TSYNC_SKEW=<ticks>            skip the measurement and use this bound
 *
 * Thread safety: every function may be called from any thread, registered or not.
 */
#ifndef TSYNC_CLOCK_H
#define TSYNC_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <tsync/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t tsync_tick_t;

enum tsync_clock_source {
	TSYNC_CLOCK_UNINIT = 0,    /* before initialisation (never returned by the API) */
	TSYNC_CLOCK_COUNTER = 1,   /* rdtsc (x86-64, invariant TSC) or cntvct_el0 (aarch64) */
	TSYNC_CLOCK_MONOTONIC = 2, /* clock_gettime(CLOCK_MONOTONIC), in nanoseconds */
};

/*
 * tsync_now - the current time.
 *
 * Returns:    the time in ticks. Monotonic per thread only within the skew bound: a
 *             thread that migrates may read a value up to tsync_clock_skew() below one
 *             it read earlier.
 * Progress:   wait-free; no shared store.
 * Ordering:   NONE: the counter read may execute before earlier loads/stores complete
 *             and after later ones start. Use it where an early or late reading is
 *             harmless (e.g. the enter time of a parallel section, which a full fence
 *             orders after the fact).
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2.
 */
static inline tsync_tick_t tsync_now(void);

/*
 * tsync_now_ordered - the current time, read after every earlier load and store of the
 * calling thread is globally visible.
 *
 * This is the reading a reclaimer needs: the free time of an unlinked object must not be
 * taken before the unlinking store is visible to other threads (an early timestamp could
 * overlap an access that a reader made after it, so the node could be reused under the
 * reader).
 *
 * Returns:    the time in ticks.
 * Progress:   wait-free; costs a full fence.
 * Ordering:   after every earlier load and store (x86-64: MFENCE; LFENCE; RDTSC).
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2, "compensating for micro-architectural effects".
 */
static inline tsync_tick_t tsync_now_ordered(void);

/*
 * tsync_now_before_loads - the current time, read before any later load of the calling
 * thread is performed.
 *
 * A scanner that reads other threads' records uses it so that what it reads reflects
 * their state at or after the returned time.
 *
 * Returns:    the time in ticks.
 * Progress:   wait-free.
 * Ordering:   before every later load (x86-64: RDTSC; LFENCE).
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2.
 */
static inline tsync_tick_t tsync_now_before_loads(void);

/*
 * tsync_clock_init - choose the source, calibrate, measure the skew bound.
 *
 * Called lazily by every tsync entry point; call it explicitly to keep the cost (a few
 * milliseconds) off a latency-critical first operation.
 *
 * Returns:    0 (the fallback source, CLOCK_MONOTONIC, always works, so the call has no
 *             failing case; the int is kept for one).
 * Progress:   blocking on the first call (the first caller does the work, others wait
 *             for it); idempotent and thread-safe.
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2; the measurement: ORDO as in the RLU study
 *             (Appl. Sci. 2022) §6.
 */
int tsync_clock_init(void);

/*
 * tsync_clock_source, tsync_clock_source_name - the chosen source.
 *
 * Returns:    the source (never TSYNC_CLOCK_UNINIT); its name: "rdtsc", "cntvct" or
 *             "monotonic".
 * Progress:   initialises the clock if needed, then wait-free.
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2.
 */
enum tsync_clock_source tsync_clock_source(void);
const char *tsync_clock_source_name(void);

/*
 * tsync_clock_skew - the cross-CPU ordering bound S (see the top of this file).
 *
 * Returns:    S in ticks; 0 for CLOCK_MONOTONIC (one kernel clock) and when only one CPU
 *             is usable.
 * Progress:   initialises the clock if needed, then wait-free.
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2; the RLU study (Appl. Sci. 2022) §6 (ORDO).
 */
tsync_tick_t tsync_clock_skew(void);

/*
 * tsync_clock_inversion - the largest inversion actually observed during the
 * measurement.
 *
 * Diagnostic: a large value means the counters are offset and S is doing real work.
 *
 * Returns:    ticks: max over ordered CPU pairs of (sender time - receiver time) for a
 *             message that was sent before it was received; 0 if no reading ever went
 *             backwards.
 * Progress:   initialises the clock if needed, then wait-free.
 * Caller:     any thread, registered or not.
 * Implements: the experiment of OpLog (MIT TR 2014) §6.1, measured by ORDO's method.
 */
tsync_tick_t tsync_clock_inversion(void);

/*
 * tsync_clock_before - does timestamp a (taken on any thread) certainly precede b?
 *
 * Arguments:  a, b: times in ticks.
 * Returns:    true iff a + S < b.
 * Progress:   initialises the clock if needed, then one load and a compare.
 * Caller:     any thread, registered or not.
 * Implements: ParSec (EuroSys 2016) §3.2.
 */
static inline bool tsync_clock_before(tsync_tick_t a, tsync_tick_t b);

/*
 * tsync_ticks_per_ns, tsync_ticks_to_ns, tsync_ns_to_ticks - unit conversion.
 *
 * Arguments:  ticks: a duration in ticks; ns: a duration in nanoseconds.
 * Returns:    the source's rate in ticks per nanosecond (1.0 for monotonic), calibrated
 *             against CLOCK_MONOTONIC at initialisation to within 0.1 % (how:
 *             docs/design.md §9.1); the duration converted with it (truncated).
 * Progress:   initialises the clock if needed, then wait-free.
 * Caller:     any thread, registered or not.
 * Implements: infrastructure (no paper section).
 */
double tsync_ticks_per_ns(void);
uint64_t tsync_ticks_to_ns(tsync_tick_t ticks);
tsync_tick_t tsync_ns_to_ticks(uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_CLOCK_H */

/* The inline bodies (not API). */
#include <tsync/static/clock.h>
