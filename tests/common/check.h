/*
 * tests/common/check.h - the whole test "framework": CHECK macros, a barrier, time and
 * duration helpers, a watchdog, a per-thread PRNG, a fork-based death test, a main.
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
__attribute__((format(printf, 3, 4), noreturn)) static inline void test_fail_(const char *file,
									      int line,
									      const char *fmt, ...)
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

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond))                                                \
			test_fail_(__FILE__, __LINE__, "CHECK(%s)", #cond); \
	} while (0)

#define CHECK_MSG(cond, ...)                                         \
	do {                                                         \
		if (!(cond))                                         \
			test_fail_(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define CHECK_OP_U_(a, op, b)                                                                      \
	do {                                                                                       \
		uint64_t chk_a_ = (uint64_t)(a), chk_b_ = (uint64_t)(b);                           \
		if (!(chk_a_ op chk_b_))                                                           \
			test_fail_(__FILE__, __LINE__, "CHECK(%s %s %s): %" PRIu64 " vs %" PRIu64, \
				   #a, #op, #b, chk_a_, chk_b_);                                   \
	} while (0)
#define CHECK_EQ(a, b) CHECK_OP_U_(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP_U_(a, !=, b)
#define CHECK_LE(a, b) CHECK_OP_U_(a, <=, b)
#define CHECK_LT(a, b) CHECK_OP_U_(a, <, b)
#define CHECK_GE(a, b) CHECK_OP_U_(a, >=, b)
#define CHECK_GT(a, b) CHECK_OP_U_(a, >, b)

#define CHECK_EQ_I(a, b)                                                                        \
	do {                                                                                    \
		long long chk_a_ = (long long)(a), chk_b_ = (long long)(b);                     \
		if (chk_a_ != chk_b_)                                                           \
			test_fail_(__FILE__, __LINE__, "CHECK(%s == %s): %lld vs %lld", #a, #b, \
				   chk_a_, chk_b_);                                             \
	} while (0)

/* expr must evaluate to ret with errno == err (errno is cleared first). */
#define CHECK_ERRNO(expr, ret, err)                                                           \
	do {                                                                                  \
		errno = 0;                                                                    \
		long long chk_r_ = (long long)(expr);                                         \
		int chk_e_ = errno;                                                           \
		if (chk_r_ != (long long)(ret) || chk_e_ != (err))                            \
			test_fail_(__FILE__, __LINE__,                                        \
				   "%s: returned %lld errno %d (%s), expected %lld errno %d", \
				   #expr, chk_r_, chk_e_, strerror(chk_e_), (long long)(ret), \
				   (int)(err));                                               \
	} while (0)

/* s = the statistics call fn(obj, &s), which must return 0; s is filled with 0xff first,
 * so that a field the call leaves unwritten cannot pass for a zero. */
#define CHECK_STATS(fn, obj, s)                \
	do {                                   \
		memset(&(s), 0xff, sizeof(s)); \
		CHECK_EQ(fn((obj), &(s)), 0);  \
	} while (0)

/* pthread calls: 0 or die. */
#define CHECK_PT(call)                                                                      \
	do {                                                                                \
		int chk_rc_ = (call);                                                       \
		if (chk_rc_ != 0)                                                           \
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

/* ---- waiting for another thread ----------------------------------------------------
 * A wait that spins only while the other thread is likely running, then sleeps, so that
 * a waiter never burns the CPU time of the thread it waits for: on a loaded machine (the
 * suite runs beside busy loops, more threads than CPUs) a yield loop only hands the CPU to
 * whoever else is runnable and gets it back a time slice later, every round. */

/* How long a waiter spins before it sleeps: a hand-off between two running threads takes
 * well under a microsecond; 10 us of spinning covers a partner that still had a short
 * step to finish, and costs little when the partner is not running at all. */
#define TEST_WAIT_SPIN_NS 10000u

static inline void test_relax_(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A gate: a value that only grows (a turn, a round, a command number) and threads that
 * block until it reaches a target. test_gate_set() wakes the sleepers; a waiter spins
 * for TEST_WAIT_SPIN_NS, then sleeps on a condition variable. Destroy a gate only after
 * every thread that sets it has been joined (a setter may still be waking sleepers just
 * after a waiter saw its value). */
typedef struct {
	_Atomic uint64_t value;
	_Atomic unsigned sleepers;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} test_gate;

static inline void test_gate_init(test_gate *g, uint64_t value)
{
	pthread_condattr_t a;
	atomic_init(&g->value, value);
	atomic_init(&g->sleepers, 0);
	CHECK_PT(pthread_mutex_init(&g->mu, NULL));
	CHECK_PT(pthread_condattr_init(&a));
	CHECK_PT(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
	CHECK_PT(pthread_cond_init(&g->cv, &a));
	pthread_condattr_destroy(&a);
}

static inline void test_gate_destroy(test_gate *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

static inline uint64_t test_gate_get(test_gate *g)
{
	return atomic_load_explicit(&g->value, memory_order_acquire);
}

/* Publish value (release: what the caller did before is visible to a waiter that sees
 * it) and wake the sleepers. The seq_cst store and load pair with the waiter's seq_cst
 * increment and load (Dekker): either we see its sleepers count, or it sees our value. */
static inline void test_gate_set(test_gate *g, uint64_t value)
{
	atomic_store_explicit(&g->value, value, memory_order_seq_cst);
	if (atomic_load_explicit(&g->sleepers, memory_order_seq_cst) != 0) {
		CHECK_PT(pthread_mutex_lock(&g->mu));
		CHECK_PT(pthread_cond_broadcast(&g->cv));
		CHECK_PT(pthread_mutex_unlock(&g->mu));
	}
}

/* Wait until the gate's value is >= value; false if timeout_ms (0: no limit) passed
 * first. Acquire: what the setter did before test_gate_set is visible afterwards. */
static inline bool test_gate_wait_ms(test_gate *g, uint64_t value, uint64_t timeout_ms)
{
	if (test_gate_get(g) >= value)
		return true;
	uint64_t t0 = test_now_ns();
	while (test_now_ns() - t0 < TEST_WAIT_SPIN_NS) {
		for (int i = 0; i < 16; i++)
			test_relax_();
		if (test_gate_get(g) >= value)
			return true;
	}
	uint64_t dl = t0 + timeout_ms * 1000000u;
	struct timespec ts = {(time_t)(dl / 1000000000u), (long)(dl % 1000000000u)};
	bool ok = true;
	CHECK_PT(pthread_mutex_lock(&g->mu));
	atomic_fetch_add_explicit(&g->sleepers, 1, memory_order_seq_cst);
	while (atomic_load_explicit(&g->value, memory_order_seq_cst) < value) {
		int rc = timeout_ms ? pthread_cond_timedwait(&g->cv, &g->mu, &ts)
				    : pthread_cond_wait(&g->cv, &g->mu);
		if (rc == ETIMEDOUT) {
			ok = atomic_load_explicit(&g->value, memory_order_seq_cst) >= value;
			break;
		}
		CHECK(rc == 0);
	}
	atomic_fetch_sub_explicit(&g->sleepers, 1, memory_order_relaxed);
	CHECK_PT(pthread_mutex_unlock(&g->mu));
	return ok;
}

/* Wait until the gate's value is >= value; fail (naming the gate) after timeout_ms. Keep
 * timeout_ms generous (a watchdog for a hang, not a deadline) and shorter than the test's
 * own watchdog and ctest TIMEOUT, so that this message is the one printed. */
#define test_gate_wait(g, value, timeout_ms)                                                       \
	do {                                                                                       \
		uint64_t tg_v_ = (value);                                                          \
		if (!test_gate_wait_ms((g), tg_v_, (timeout_ms)))                                  \
			test_fail_(__FILE__, __LINE__,                                             \
				   "timed out waiting for %s >= %" PRIu64 " (at %" PRIu64 ")", #g, \
				   tg_v_, test_gate_get(g));                                       \
	} while (0)

/* Wait until *flag >= value (an atomic that other threads set with plain stores), or fail
 * after timeout_ms. Its setters do not wake anyone, so after the short spin the waiter
 * sleeps in naps that grow from 20 us to 1 ms between checks: it reacts within about a
 * millisecond and leaves the CPU to the thread it waits for. */
#define test_wait_flag(flag, value, timeout_ms)                                                  \
	do {                                                                                     \
		uint64_t wf_t0_ = test_now_ns(), wf_nap_ = 20000;                                \
		uint64_t wf_dl_ = wf_t0_ + (uint64_t)(timeout_ms)*1000000u;                      \
		while (atomic_load_explicit((flag), memory_order_acquire) < (value)) {           \
			uint64_t wf_now_ = test_now_ns();                                        \
			if (wf_now_ > wf_dl_ &&                                                  \
			    atomic_load_explicit((flag), memory_order_acquire) < (value))        \
				test_fail_(__FILE__, __LINE__, "timed out waiting for %s >= %s", \
					   #flag, #value);                                       \
			if (wf_now_ - wf_t0_ < TEST_WAIT_SPIN_NS) {                              \
				test_relax_();                                                   \
				continue;                                                        \
			}                                                                        \
			test_sleep_ns(wf_nap_);                                                  \
			if (wf_nap_ < 1000000u)                                                  \
				wf_nap_ *= 2;                                                    \
		}                                                                                \
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

/* ---- main ----------------------------------------------------------------------------- */
/* A test's main: fn under a watchdog of watchdog_s seconds (shorter than the ctest
 * TIMEOUT, so that a hang fails with a message), then "<what>: ok" in the log. */
static inline int test_main_run(unsigned watchdog_s, const char *what, void (*fn)(void))
{
	test_watchdog(watchdog_s);
	fn();
	test_log("%s: ok", what);
	return 0;
}

#define TEST_MAIN(watchdog_s, what, fn)                           \
	int main(void)                                            \
	{                                                         \
		return test_main_run((watchdog_s), (what), (fn)); \
	}

/* A test of named cases: `test_x [NAME...]` runs every case, or the ones named (so that
 * CMakeLists.txt can give each case a ctest of its own). */
struct test_case {
	const char *name;
	void (*fn)(void);
};

/* Run every case of cases[0..n-1] when argv names none, else the named ones (an unknown
 * name fails the test); "<name>: ok" in the log after each. */
static inline void test_run_cases(int argc, char **argv, const struct test_case *cases, size_t n)
{
	for (int a = 1; a < argc; a++) {
		bool known = false;
		for (size_t i = 0; i < n; i++)
			known |= strcmp(argv[a], cases[i].name) == 0;
		CHECK_MSG(known, "unknown case '%s'", argv[a]);
	}
	for (size_t i = 0; i < n; i++) {
		bool run = argc == 1;
		for (int a = 1; a < argc; a++)
			run |= strcmp(argv[a], cases[i].name) == 0;
		if (run) {
			cases[i].fn();
			test_log("%s: ok", cases[i].name);
		}
	}
}

/* main(argc, argv) of a test of named cases: run(argc, argv, cases, n) sets up what its
 * cases share and calls test_run_cases; the cases are the remaining arguments, each
 * {"name", fn}. */
#define TEST_CASES_MAIN(run, ...)                                                 \
	int main(int argc, char **argv)                                           \
	{                                                                         \
		static const struct test_case cases_[] = {__VA_ARGS__};           \
		return run(argc, argv, cases_, sizeof cases_ / sizeof cases_[0]); \
	}

#endif /* TSYNC_TEST_CHECK_H */
