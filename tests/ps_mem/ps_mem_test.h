/*
 * tests/ps_mem/ps_mem_test.h - what the test_ps_mem_*.c files share: the start and end of
 * their main (watchdog, clock, skew bound S, a ps, the thread registered), a quiet
 * statistics snapshot with its invariants, the small configuration, waiting past a clock
 * reading, the configuration-error check, the address-space-limited child of the ENOMEM
 * tests and the helpers of Prudence's policy tests.
 */
#ifndef TSYNC_TEST_PS_MEM_TEST_H
#define TSYNC_TEST_PS_MEM_TEST_H

#include <sys/resource.h>
#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

/* The clock's skew bound (tsync_clock_skew), set by ps_mem_test_begin. */
static tsync_tick_t S;

static inline struct ps_mem_stats mstats(struct ps_mem *m)
{
	struct ps_mem_stats s;
	CHECK_STATS(ps_mem_stats, m, s);
	/* invariants of any quiet snapshot */
	CHECK_EQ(s.slabs, s.slab_grows - s.slab_shrinks);
	CHECK_GE(s.peak_slabs, s.slabs);
	return s;
}

static inline struct ps_mem_config small_cfg(void)
{
	struct ps_mem_config c = PS_MEM_CONFIG_INIT;
	c.cache_size = 4;
	c.reclaim_batch = 2;
	c.slab_size = 4096;
	c.slabs_kept = 1;
	return c;
}

/* Wait until the clock has passed t + extra. The deadline is a watchdog: the wall time
 * is read before the clock, so only a clock that is still short of the mark 5 s later
 * fails, not a preemption between the two reads. */
static inline void wait_past(tsync_tick_t t, tsync_tick_t extra)
{
	uint64_t dl = test_now_ns() + 5000000000ull;
	extra += tsync_ns_to_ticks(10000) + 2; /* margin: ps adds a tick or so to the bound */
	for (;;) {
		uint64_t w = test_now_ns();
		if (tsync_clock_before(t + extra, tsync_now_ordered()))
			break;
		CHECK(w < dl);
		sched_yield();
	}
}

static inline int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

/* ---- configuration errors ------------------------------------------------------------ */
#define CHECK_CREATE_FAILS(ps, size, cfgp, err)                                \
	do {                                                                   \
		errno = 0;                                                     \
		struct ps_mem *bad_ = ps_mem_create((ps), (size), (cfgp));     \
		CHECK_MSG(bad_ == NULL, "ps_mem_create(%s) succeeded", #cfgp); \
		CHECK_EQ_I(errno, (err));                                      \
	} while (0)

/* ---- ENOMEM under an address-space limit (child process, release builds only): the
 * ENOMEM and bound tests ------------------------------------------------------------ */

/* The child's address space limited to what it maps now + 64 MiB; exit status 77 (skip)
 * when that cannot be done. */
static inline void limit_address_space(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;
	if (f == NULL || fscanf(f, "%lu", &pages) != 1)
		_exit(77);
	fclose(f);
	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		_exit(77);
}

#define KEEP_CAP ((size_t)1 << 20)

/* A child's allocator of 1000-byte objects (cfg may be NULL) and an array of KEEP_CAP
 * pointers in *keep; exit status 10 or 11 when either cannot be had. */
static inline struct ps_mem *child_mem(struct ps *ps, const struct ps_mem_config *cfg, void ***keep)
{
	struct ps_mem *m = ps_mem_create(ps, 1000, cfg);
	if (m == NULL)
		_exit(10);
	if ((*keep = calloc(KEEP_CAP, sizeof **keep)) == NULL)
		_exit(11);
	return m;
}

/* Allocate from m into keep[] until ps_alloc fails (errno kept); exit status 12 when
 * KEEP_CAP objects fit (the limit did not bite). Returns the count. */
static inline size_t fill_until_null(struct ps_mem *m, void **keep)
{
	size_t n = 0;
	for (;;) {
		errno = 0;
		void *p = ps_alloc(m);
		if (p == NULL)
			return n;
		keep[n++] = p;
		if (n == KEEP_CAP)
			_exit(12);
	}
}

/* ---- Prudence's policies (test_ps_mem_policy*.c) ------------------------------------- */

/* Reclaim until nothing of m is pending (past the clock skew margin; 5 s at most). */
static inline void reclaim_all(struct ps_mem *m)
{
	uint64_t dl = test_now_ns() + 5000000000ull;
	for (;;) {
		uint64_t w = test_now_ns(); /* before the try: see wait_past */
		if (ps_mem_reclaim(m), mstats(m).pending == 0)
			break;
		CHECK_MSG(w < dl, "pending objects never reclaimed");
		test_sleep_ms(1);
	}
}

/* cache 4 (a refill without the partial-refill policy takes 2), 100-byte objects */
static inline struct ps_mem *prudent_mem(struct ps *ps, unsigned prudence)
{
	struct ps_mem_config c = small_cfg();
	c.prudence = prudence;
	struct ps_mem *m = ps_mem_create(ps, 100, &c);
	CHECK(m != NULL);
	return m;
}

static inline void alloc_n(struct ps_mem *m, void **p, int n)
{
	for (int i = 0; i < n; i++)
		CHECK((p[i] = ps_alloc(m)) != NULL);
}

/* Inside a section of ours (the caller leaves it): 4 objects freed deferred, held back
 * in the latent cache, and a full cache of 4 immediately freed ones. */
static inline void full_cache_in_section(struct ps *ps, struct ps_mem *m, void **p)
{
	alloc_n(m, p, 8);
	ps_enter(ps);
	for (int i = 0; i < 4; i++)
		ps_free(m, p[i]);
	for (int i = 4; i < 8; i++)
		ps_free_now(m, p[i]);
	CHECK_EQ(mstats(m).cached, 4);
}

static inline uintptr_t slab_of(const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)4095; /* 4096-byte slabs are aligned to it */
}

/* The main of each test_ps_mem_* file (PS_MEM_TEST_MAIN): a watchdog shorter than ctest's
 * TIMEOUT (120 s, CMakeLists.txt) so that a hang fails with a message, the clock and S, a
 * ps and the calling thread registered; then fn(ps), and "ps_mem <what>: ok". */
static inline int ps_mem_test_run(const char *what, void (*fn)(struct ps *))
{
	test_watchdog(110);
	CHECK_EQ(tsync_clock_init(), 0);
	S = tsync_clock_skew();
	struct ps *ps = ps_create(NULL);
	CHECK(ps != NULL);
	CHECK_EQ(tsync_thread_register(), 0);
	fn(ps);
	ps_destroy(ps);
	test_log("ps_mem %s: ok", what);
	return 0;
}

#define PS_MEM_TEST_MAIN(what, fn)                    \
	int main(void)                                \
	{                                             \
		return ps_mem_test_run((what), (fn)); \
	}

#endif
