/*
 * tsync/arch.h - the architecture layer: timestamps, fences, cpu_relax, cache-line size.
 *
 * This is the only file in tsync with inline assembly. Everything above it uses
 * <stdatomic.h> and the four primitives below. Supported targets: x86-64 (rdtsc),
 * aarch64 (cntvct_el0), and any other target with a C11 <stdatomic.h>, on which the
 * hardware counter is unavailable and tsync's clock uses CLOCK_MONOTONIC.
 *
 * Names beginning with tsync_arch_ are public but low level: most users want
 * tsync_now() from <tsync/clock.h>.
 */
#ifndef TSYNC_ARCH_H
#define TSYNC_ARCH_H

#include <stdint.h>
#include <tsync/atomic.h> /* C: <stdatomic.h>; C++: <atomic> (the shim) */

/* Cache-line size used for padding per-thread records, in bytes. 64 on every supported
 * target; 128 would double memory with no benefit on the x86-64 parts we measure
 * (adjacent-line prefetch pairs lines, but the records are written by one thread only). */
#define TSYNC_CACHE_LINE 64

/* TSYNC_LIKELY(x), TSYNC_UNLIKELY(x): branch hints (__builtin_expect where available);
 * the value is !!(x) with GCC and Clang, x itself elsewhere. */
#if defined(__GNUC__) || defined(__clang__)
#define TSYNC_LIKELY(x) __builtin_expect(!!(x), 1)
#define TSYNC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TSYNC_LIKELY(x) (x)
#define TSYNC_UNLIKELY(x) (x)
#endif

/*
 * The primitives, defined below once per target (TSYNC_ARCH_HAS_COUNTER says whether the
 * target has a user-mode counter, TSYNC_ARCH_NAME names it):
 *
 * tsync_arch_counter - the raw hardware counter.
 *   Returns:    counter ticks (0 on the generic target).
 *   Progress:   wait-free.
 *   Ordering:   none: not ordered against surrounding loads or stores.
 *   Caller:     any thread.
 *   Implements: ParSec (EuroSys 2016) §3.2 ("Using rdtsc").
 *
 * tsync_arch_counter_ordered - the counter, read after every earlier load and store of
 * the calling thread is globally visible.
 *   Returns:    counter ticks (0 on the generic target).
 *   Progress:   wait-free; costs a full fence.
 *   Ordering:   a C11 seq_cst fence (what the language model and ThreadSanitizer see),
 *               then x86-64: LFENCE; RDTSC, aarch64: DSB SY; ISB; MRS.
 *   Caller:     any thread.
 *   Implements: ParSec (EuroSys 2016) §3.2 ("compensating for micro-architectural
 *               effects").
 *
 * tsync_arch_counter_before_loads - the counter, read before every later load.
 *   Returns:    counter ticks (0 on the generic target).
 *   Progress:   wait-free.
 *   Ordering:   x86-64: RDTSC; LFENCE. aarch64: ISB; MRS; ISB.
 *   Caller:     any thread.
 *   Implements: ParSec (EuroSys 2016) §3.2.
 *
 * tsync_arch_relax - the spin-wait hint (x86-64: PAUSE, aarch64: YIELD, generic: a
 * compiler barrier).
 *   Progress:   wait-free.
 *   Ordering:   a compiler barrier only.
 *   Caller:     any thread.
 *   Implements: infrastructure (no paper section).
 */
#if defined(__x86_64__)
#define TSYNC_ARCH_HAS_COUNTER 1
#define TSYNC_ARCH_NAME "x86_64"

/* Raw time-stamp counter. Not ordered against surrounding loads or stores. */
static inline uint64_t tsync_arch_counter(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Counter read that happens after every earlier load and store is globally visible.
 * The C11 seq_cst fence is what the language model (and ThreadSanitizer) sees; on x86-64
 * it is a locked instruction or MFENCE, which drains the store buffer. LFENCE then
 * keeps RDTSC from executing before the fence has completed (Intel SDM vol. 2B, RDTSC;
 * AMD documents LFENCE as dispatch-serializing when the "LFENCE serializing" MSR bit is
 * set, which every Linux kernel since 4.15 sets). */
static inline uint64_t tsync_arch_counter_ordered(void)
{
	uint32_t lo, hi;
	atomic_thread_fence(memory_order_seq_cst);
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Counter read that happens before every later load: RDTSC then LFENCE. */
static inline uint64_t tsync_arch_counter_before_loads(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline void tsync_arch_relax(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

#elif defined(__aarch64__)
#define TSYNC_ARCH_HAS_COUNTER 1
#define TSYNC_ARCH_NAME "aarch64"

/* The generic timer's virtual count. The ISB keeps it from being read early. */
static inline uint64_t tsync_arch_counter(void)
{
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

/* The C11 fence for the language model; DSB SY completes every earlier memory access;
 * ISB then orders the counter read after it. */
static inline uint64_t tsync_arch_counter_ordered(void)
{
	uint64_t v;
	atomic_thread_fence(memory_order_seq_cst);
	__asm__ __volatile__("dsb sy\n\tisb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

/* ISB after the read keeps later loads from being performed before it. */
static inline uint64_t tsync_arch_counter_before_loads(void)
{
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
	return v;
}

static inline void tsync_arch_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

#else
/* Generic C11 target: no usable user-mode counter; tsync_now() uses CLOCK_MONOTONIC
 * (a system call or vDSO read, which is ordered by the full fences around it). */
#define TSYNC_ARCH_HAS_COUNTER 0
#define TSYNC_ARCH_NAME "generic"
#if !defined(__cplusplus) && \
	(!defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L || defined(__STDC_NO_ATOMICS__))
#error "tsync needs a C11 compiler with <stdatomic.h>"
#endif
static inline uint64_t tsync_arch_counter(void)
{
	return 0;
}
static inline uint64_t tsync_arch_counter_ordered(void)
{
	return 0;
}
static inline uint64_t tsync_arch_counter_before_loads(void)
{
	return 0;
}
static inline void tsync_arch_relax(void)
{
	atomic_signal_fence(memory_order_seq_cst);
}
#endif

#endif /* TSYNC_ARCH_H */
