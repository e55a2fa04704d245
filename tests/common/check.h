/*
 * tests/common/check.h - the whole test "framework": CHECK macros, a barrier, time and
 * duration helpers, a watchdog, a per-thread PRNG, a fork-based death test.
 *
 * A failed CHECK prints "FAIL file:line: ..." and ends the process with _exit(1) (not
 * exit(): other threads may still be running and must not run atexit handlers under
 * us). Everything here is static inline so that every test is one translation unit plus
 * libtsync_testutil, and -Wmissing-prototypes stays quiet.
 *
 * Scaling: sanitizer builds define TSYNC_TEST_SMALL=1 (top-level CMakeLists.txt);
 * test_scale() divides iteration counts there. Stress durations come from the
 * environment variable TSYNC_STRESS_SECONDS (test_stress_seconds()).
 */
#ifndef TSYNC_TEST_CHECK_H
#define TSYNC_TEST_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- which build are we? ------------------------------------------------------------ */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifndef TEST_TSAN
#define TEST_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifndef TEST_ASAN
#define TEST_ASAN 0
#endif

#ifdef TSYNC_TEST_SMALL
#define TEST_SMALL 1
#else
#define TEST_SMALL 0
#endif

/* ---- failing ------------------------------------------------------------------------ */
__attribute__((format(printf, 3, 4), noreturn)) static inline void
test_fail_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
	_exit(1);
}

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond))                                                               \
			test_fail_(__FILE__, __LINE__, "CHECK(%s)", #cond);                \
	} while (0)

#define CHECK_MSG(cond, ...)                                                               \
	do {                                                                               \
		if (!(cond))                                                               \
			test_fail_(__FILE__, __LINE__, __VA_ARGS__);                       \
	} while (0)

#define CHECK_OP_U_(a, op, b)                                                              \
	do {                                                                               \
		uint64_t chk_a_ = (uint64_t)(a), chk_b_ = (uint64_t)(b);                   \
		if (!(chk_a_ op chk_b_))                                                   \
			test_fail_(__FILE__, __LINE__, "CHECK(%s %s %s): %" PRIu64         \
				   " vs %" PRIu64, #a, #op, #b, chk_a_, chk_b_);           \
	} while (0)
#define CHECK_EQ(a, b) CHECK_OP_U_(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP_U_(a, !=, b)
#define CHECK_LE(a, b) CHECK_OP_U_(a, <=, b)
#define CHECK_LT(a, b) CHECK_OP_U_(a, <, b)
#define CHECK_GE(a, b) CHECK_OP_U_(a, >=, b)
#define CHECK_GT(a, b) CHECK_OP_U_(a, >, b)

#define CHECK_EQ_I(a, b)                                                                   \
	do {                                                                               \
		long long chk_a_ = (long long)(a), chk_b_ = (long long)(b);                \
		if (chk_a_ != chk_b_)                                                      \
			test_fail_(__FILE__, __LINE__, "CHECK(%s == %s): %lld vs %lld", #a, \
				   #b, chk_a_, chk_b_);                                    \
	} while (0)

/* expr must evaluate to ret with errno == err (errno is cleared first). */
#define CHECK_ERRNO(expr, ret, err)                                                        \
	do {                                                                               \
		errno = 0;                                                                 \
		long long chk_r_ = (long long)(expr);                                      \
		int chk_e_ = errno;                                                        \
		if (chk_r_ != (long long)(ret) || chk_e_ != (err))                         \
			test_fail_(__FILE__, __LINE__,                                     \
				   "%s: returned %lld errno %d (%s), expected %lld errno %d", \
				   #expr, chk_r_, chk_e_, strerror(chk_e_), (long long)(ret), \
				   (int)(err));                                            \
	} while (0)

/* pthread calls: 0 or die. */
#define CHECK_PT(call)                                                                     \
	do {                                                                               \
		int chk_rc_ = (call);                                                      \
		if (chk_rc_ != 0)                                                          \
			test_fail_(__FILE__, __LINE__, "%s: %s", #call, strerror(chk_rc_)); \
	} while (0)

/* ---- log lines ---------------------------------------------------------------------- */
__attribute__((format(printf, 1, 2))) static inline void test_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ---- time --------------------------------------------------------------------------- */
static inline uint64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void test_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static inline void test_sleep_ms(unsigned ms)
{
	test_sleep_ns((uint64_t)ms * 1000000u);
}

/* Seconds each stress test runs: TSYNC_STRESS_SECONDS, else def. */
static inline double test_stress_seconds(double def)
{
	const char *s = getenv("TSYNC_STRESS_SECONDS");
	if (s && *s) {
		char *end;
		double v = strtod(s, &end);
		if (end != s && v > 0 && v < 1e6)
			return v;
	}
	return def;
}

/* Iteration counts: n in release builds, n / div (at least 1) in sanitizer builds. */
static inline uint64_t test_scale(uint64_t n, uint64_t div)
{
	if (TEST_SMALL) {
		n /= div;
		if (n == 0)
			n = 1;
	}
	return n;
}

/* ---- watchdog: a hung test fails with a message instead of waiting for ctest ------- */
static inline void test_watchdog_handler_(int sig)
{
	static const char msg[] =
	    "FAIL: watchdog: time limit reached (a hang, or threads stuck after a violation)\n";
	(void)sig;
	ssize_t r = write(2, msg, sizeof msg - 1);
	(void)r;
	_exit(3);
}

static inline void test_watchdog(unsigned seconds)
{
	signal(SIGALRM, test_watchdog_handler_);
	alarm(seconds);
}

/* After a violation, memory may be corrupted and threads may spin forever on a reused
 * lock: give them a few seconds to stop, then end the process with the watchdog. */
static inline void test_bail_soon(unsigned seconds)
{
	fprintf(stderr, "violation detected: stopping (at most %u s)\n", seconds);
	fflush(stderr);
	alarm(seconds);
}

/* ---- barrier ------------------------------------------------------------------------ */
typedef struct {
	pthread_barrier_t b;
} test_barrier;

static inline void test_barrier_init(test_barrier *b, unsigned n)
{
	CHECK_PT(pthread_barrier_init(&b->b, NULL, n));
}

static inline void test_barrier_wait(test_barrier *b)
{
	int rc = pthread_barrier_wait(&b->b);
	CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

static inline void test_barrier_destroy(test_barrier *b)
{
	pthread_barrier_destroy(&b->b);
}

/* Spin (yielding) until *flag >= value, or fail after timeout_ms. */
#define test_wait_flag(flag, value, timeout_ms)                                            \
	do {                                                                               \
		uint64_t wf_dl_ = test_now_ns() + (uint64_t)(timeout_ms) * 1000000u;       \
		while (atomic_load_explicit((flag), memory_order_acquire) < (value)) {     \
			if (test_now_ns() > wf_dl_)                                        \
				test_fail_(__FILE__, __LINE__,                             \
					   "timed out waiting for %s >= %s", #flag, #value); \
			sched_yield();                                                     \
		}                                                                          \
	} while (0)

/* ---- threads ------------------------------------------------------------------------ */
static inline pthread_t test_spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	CHECK_PT(pthread_create(&t, NULL, fn, arg));
	return t;
}

static inline void test_join(pthread_t t)
{
	CHECK_PT(pthread_join(t, NULL));
}

/* ---- PRNG (xorshift64*) ------------------------------------------------------------- */
static inline uint64_t test_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t test_seed(uint64_t salt)
{
	uint64_t s = (test_now_ns() ^ (salt * 0x9E3779B97F4A7C15ull)) | 1;
	test_rand(&s);
	return s;
}

/* Burn a few cycles without touching shared memory (widens race windows). */
static inline void test_spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

/* ---- death tests -------------------------------------------------------------------- */
/* Can this build fork a child that keeps running? TSan does not support threads started
 * after a fork of a multi-threaded process, so death tests are skipped there. */
static inline bool test_can_fork(void)
{
	return !TEST_TSAN;
}

/* Run fn(arg) in a child process and return its exit status (or 128 + signal). */
static inline int test_in_child(void (*fn)(void *), void *arg)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* Run fn(arg) in a child process; true iff the child died (signal or non-zero exit).
 * The child's stderr is kept (the diagnostic is part of the log). */
static inline bool test_dies(void (*fn)(void *), void *arg)
{
	return test_in_child(fn, arg) != 0;
}

/* Run fn(arg) in a child process whose stderr goes to a temporary file; true iff the
 * child died and its stderr contains one of want[0..nwant-1] (the one-line diagnostic
 * names the call). The child's stderr is copied to ours afterwards, so it stays in the
 * log. */
static inline bool test_dies_saying_any(void (*fn)(void *), void *arg, const char *const *want,
					int nwant)
{
	FILE *tmp = tmpfile();
	CHECK(tmp != NULL);
	fflush(stdout);
	fflush(stderr);
	int saved = dup(2);
	CHECK(saved >= 0);
	CHECK(dup2(fileno(tmp), 2) >= 0);
	int st = test_in_child(fn, arg);
	CHECK(dup2(saved, 2) >= 0);
	close(saved);
	char buf[8192];
	rewind(tmp);
	size_t n = fread(buf, 1, sizeof buf - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	fputs(buf, stderr);
	if (st == 0)
		return false;
	for (int i = 0; i < nwant; i++)
		if (strstr(buf, want[i]) != NULL)
			return true;
	return false;
}

/* test_dies_saying_any with one expected text. */
static inline bool test_dies_saying(void (*fn)(void *), void *arg, const char *want)
{
	return test_dies_saying_any(fn, arg, &want, 1);
}

#endif /* TSYNC_TEST_CHECK_H */
