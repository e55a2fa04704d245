/*
 * tsync/atomic.h - the C/C++ shim under every public header: atomics, alignment and
 * thread-local storage spelled so that one header text compiles as C11 and as C++17 or
 * later.
 *
 * tsync is a C11 library; its headers declare atomic fields and extern thread-locals
 * and define inline fast paths (ps_enter, ps_exit, tsync_now, oplog_log_acquire, ...)
 * that C++ translation units compile too. C++ before C++23 has no <stdatomic.h> and no
 * _Atomic, so a header never writes the C keywords directly; it writes:
 *
 *   TSYNC_ATOMIC(T)       C: _Atomic(T)                C++: std::atomic<T>
 *   TSYNC_ALIGNAS(n)      C: _Alignas(n)               C++: alignas(n)
 *   TSYNC_THREAD_LOCAL    C: _Thread_local             C++: __thread (see below)
 *   TSYNC_STATIC_ASSERT   C: _Static_assert            C++: static_assert
 *
 * and calls the C11 generic functions (atomic_load_explicit, atomic_store_explicit,
 * atomic_fetch_add_explicit, atomic_compare_exchange_*_explicit, atomic_thread_fence,
 * atomic_signal_fence, ...) and memory_order_* constants by their C names: in C they
 * come from <stdatomic.h>, in C++ from <atomic>, brought into the global namespace by
 * using-declarations below (as C++23's <stdatomic.h> does). Only the type-specifier
 * form TSYNC_ATOMIC(T) exists: the qualifier form `_Atomic T x;` has no C++ spelling.
 *
 * Layout (why a C++ TU and the C library agree on every struct): the library is built
 * as C, so a struct a C++ TU sees must have the C layout. On the supported compilers
 * (GCC and Clang) and targets (x86-64 and aarch64; their psABIs give atomic types the
 * size and alignment of the plain type), _Atomic(T) and std::atomic<T> for the types
 * the headers use (int, uint32_t, uint64_t, uintptr_t and object pointers) are both
 * exactly T: same size, same alignment, no lock or padding inside, lock-free, and
 * both compilers lower C's atomic_*_explicit and std::atomic's operations to the same
 * instructions on the same memory (libstdc++'s and libc++'s std::atomic<T> hold one T
 * and call the __atomic builtins that C's <stdatomic.h> calls). The static assertions
 * at the end check size, alignment and lock-freedom in each language, so a target on
 * which this argument fails stops at compile time instead of sharing a wrong layout.
 *
 * Object lifetime in C++: a struct with TSYNC_ATOMIC fields (struct ps_lock in a user
 * object, struct oplog_object, ...) is initialised by the library's C init function or
 * its *_INIT macro, as in C; it cannot be copied in C++ (std::atomic is not copyable),
 * which is also the contract in C.
 *
 * Thread-locals: C++ `thread_local` on an extern variable makes every access go through
 * a TLS wrapper call (the defining TU might run a dynamic initializer); the library's
 * variables are C, have none, and are read on the fast paths, so C++ sees them as GNU
 * __thread: one %fs-relative load, the same code as in C.
 *
 * Names here beginning with tsync_ or TSYNC_ are public; this header is included by
 * <tsync/arch.h> and so by every other.
 */
#ifndef TSYNC_ATOMIC_H
#define TSYNC_ATOMIC_H

#ifdef __cplusplus

#if __cplusplus < 201703L
#error "tsync's headers need C++17 or later"
#endif
#include <atomic>
#include <stdint.h>

#define TSYNC_ATOMIC(T) std::atomic<T>
#define TSYNC_ALIGNAS(n) alignas(n)
#define TSYNC_THREAD_LOCAL __thread
#define TSYNC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

using std::atomic_compare_exchange_strong;
using std::atomic_compare_exchange_strong_explicit;
using std::atomic_compare_exchange_weak;
using std::atomic_compare_exchange_weak_explicit;
using std::atomic_exchange;
using std::atomic_exchange_explicit;
using std::atomic_fetch_add;
using std::atomic_fetch_add_explicit;
using std::atomic_fetch_and;
using std::atomic_fetch_and_explicit;
using std::atomic_fetch_or;
using std::atomic_fetch_or_explicit;
using std::atomic_fetch_sub;
using std::atomic_fetch_sub_explicit;
using std::atomic_fetch_xor;
using std::atomic_fetch_xor_explicit;
using std::atomic_load;
using std::atomic_load_explicit;
using std::atomic_signal_fence;
using std::atomic_store;
using std::atomic_store_explicit;
using std::atomic_thread_fence;
using std::memory_order;
using std::memory_order_acq_rel;
using std::memory_order_acquire;
using std::memory_order_consume;
using std::memory_order_relaxed;
using std::memory_order_release;
using std::memory_order_seq_cst;

#define TSYNC__ATOMIC_SAME_AS_PLAIN(T)                                           \
	static_assert(sizeof(std::atomic<T>) == sizeof(T) &&                     \
			      alignof(std::atomic<T>) == alignof(T) &&           \
			      std::atomic<T>::is_always_lock_free,               \
		      "tsync: std::atomic<" #T "> must be a lock-free plain " #T \
		      " (the C library's _Atomic(" #T ") layout)")

#else /* C */

#include <stdatomic.h>
#include <stdint.h>

#define TSYNC_ATOMIC(T) _Atomic(T)
#define TSYNC_ALIGNAS(n) _Alignas(n)
#define TSYNC_THREAD_LOCAL _Thread_local
#define TSYNC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

/* Lock-freedom in C is the ATOMIC_*_LOCK_FREE macros (checked below). */
#define TSYNC__ATOMIC_SAME_AS_PLAIN(T)                                                         \
	_Static_assert(sizeof(_Atomic(T)) == sizeof(T) && _Alignof(_Atomic(T)) == _Alignof(T), \
		       "tsync: _Atomic(" #T ") must be a plain " #T)
#if (defined(__x86_64__) || defined(__aarch64__)) &&                                               \
	(ATOMIC_INT_LOCK_FREE != 2 || ATOMIC_LONG_LOCK_FREE != 2 || ATOMIC_LLONG_LOCK_FREE != 2 || \
	 ATOMIC_POINTER_LOCK_FREE != 2)
#error "tsync: int, long, long long and pointer atomics must be lock-free"
#endif

#endif /* __cplusplus */

#if defined(__x86_64__) || defined(__aarch64__)
/* The types the public headers make atomic (pointers: one check covers every object
 * pointer type, which share one representation on these targets). */
TSYNC__ATOMIC_SAME_AS_PLAIN(int);
TSYNC__ATOMIC_SAME_AS_PLAIN(uint32_t);
TSYNC__ATOMIC_SAME_AS_PLAIN(uint64_t);
TSYNC__ATOMIC_SAME_AS_PLAIN(uintptr_t);
TSYNC__ATOMIC_SAME_AS_PLAIN(void *);
#endif

#endif /* TSYNC_ATOMIC_H */
