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
#include <stdatomic.h>

/* Cache-line size used for padding per-thread records. 64 on every supported target;
 * 128 would double memory with no benefit on the x86-64 parts we measure (adjacent-line
 * prefetch pairs lines, but the records are written by one thread only). */
#define TSYNC_CACHE_LINE 64

#if defined(__GNUC__) || defined(__clang__)
#define TSYNC_LIKELY(x) __builtin_expect(!!(x), 1)
#define TSYNC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TSYNC_LIKELY(x) (x)
#define TSYNC_UNLIKELY(x) (x)
#endif

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
#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L || defined(__STDC_NO_ATOMICS__)
#error "tsync needs a C11 compiler with <stdatomic.h>"
#endif
static inline uint64_t tsync_arch_counter(void) { return 0; }
static inline uint64_t tsync_arch_counter_ordered(void) { return 0; }
static inline uint64_t tsync_arch_counter_before_loads(void) { return 0; }
static inline void tsync_arch_relax(void) { atomic_signal_fence(memory_order_seq_cst); }
#endif

#endif /* TSYNC_ARCH_H */
