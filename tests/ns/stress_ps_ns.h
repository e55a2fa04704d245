/*
 * tests/ns/stress_ps_ns.h - what the three stress_ps_ns* hunts for <tsync/ps_ns.h> share:
 * the object and extent records, the configuration from the arguments, the ps, the
 * per-id owner and free-epoch arrays, the violation report, the tlb grace hook with its
 * flusher thread, making a namespace, the per-thread counts, the check that every id is
 * free again, and the start and end of a main.
 *
 *   stress_ps_ns[_race|_claim] [bits=N] [cache=N] [order=N] [cyclic] [tlb] [mem=small]
 *                              [readers=N] [writers=N]
 *   tlb: the namespace's grace hook simulates a TLB flush epoch (a flusher thread
 *   advances it every ~1 ms; an id freed in epoch e is refused until the epoch is past
 *   e): a side array keeps each id's free epoch, and every allocation checks that the
 *   epoch has moved past the free epoch of each id it got.
 *   Duration: TSYNC_STRESS_SECONDS (default 2): stress_ps_ns runs 0.65 of it,
 *   stress_ps_ns_race 0.2 + 0.1 s, stress_ps_ns_claim 0.15 + 0.1 s (the shares of the
 *   one process that ran all three before), each on the stress scaffold (stress.h); the
 *   tlb flusher runs beside the workers.
 */
#ifndef TSYNC_TEST_STRESS_PS_NS_H
#define TSYNC_TEST_STRESS_PS_NS_H

#include <tsync/ps_ns.h>
#include <tsync/tsync.h>

#include "check.h"
#include "stress.h"

struct ext {
	uint64_t base, span;
	size_t n;
	uint64_t tag; /* owner tag of the unbound tail */
	_Atomic size_t remaining;
};

struct sobj {
	uint64_t id;         /* the id it is bound to (written before publish) */
	uint64_t inc;        /* incarnation, unique per allocation */
	uint64_t pub;        /* 1 just before ps_ns_publish */
	uint64_t free_epoch; /* tlb: the flush epoch when it was freed */
	struct ext *ext;     /* its extent, NULL for a single id */
};

/* ---- configuration ------------------------------------------------------------------ */
static unsigned bits = 16, cache, order;
static int policy = PS_NS_ID_LOWEST;
static bool tlb, small_mem;
static int nreaders = 2, nwriters = 2;
static uint64_t cap;

static struct ps *PS;
static struct ps_ns *NS;
static _Atomic uint64_t *owner;    /* per id: incarnation / tag of its holder, or 0 */
static _Atomic uint64_t *side_fe;  /* per id: flush epoch of its last free */
static _Atomic uint64_t epoch = 1; /* tlb: flushes so far + 1 */
static _Atomic int flusher_stop;
static _Atomic uint64_t hook_calls, hook_refusals;

static struct ps_ns *p3_ns; /* stress_ps_ns_claim's namespace of the round (same hook) */

static _Atomic uint64_t violations;

__attribute__((format(printf, 1, 2))) static void violation(const char *fmt, ...)
{
	uint64_t n = atomic_fetch_add(&violations, 1);
	stress_stop();
	if (n < 20) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "VIOLATION: ");
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, "\n");
		va_end(ap);
		fflush(stderr);
	}
	if (n == 0)
		test_bail_soon(20);
}

/* ---- the grace hook: a simulated TLB flush ----------------------------------------- */
static inline bool tlb_hook(struct ps_ns *ns, void *obj, uint64_t id, tsync_tick_t free_time,
			    void *arg)
{
	struct sobj *o = obj;
	(void)arg;
	if ((ns != NS && ns != p3_ns) || arg != (void *)&epoch)
		violation("grace hook: namespace %p, expected %p", (void *)ns, (void *)NS);
	if (o->id != id || ps_ns_id(ns, o) != id || free_time == 0)
		violation("grace hook: id %" PRIu64 " for an object holding id %" PRIu64
			  " (ps_ns_id %" PRIu64 "), free time %" PRIu64,
			  id, o->id, ps_ns_id(ns, o), (uint64_t)free_time);
	atomic_fetch_add_explicit(&hook_calls, 1, memory_order_relaxed);
	if (atomic_load_explicit(&epoch, memory_order_acquire) > o->free_epoch)
		return true;
	atomic_fetch_add_explicit(&hook_refusals, 1, memory_order_relaxed);
	return false;
}

static inline struct ps_ns *make_ns(void)
{
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	c.id_bits = bits;
	c.id_cache = cache;
	c.max_order = order;
	c.id_policy = policy;
	if (tlb) {
		c.grace_fn = tlb_hook;
		c.grace_arg = (void *)&epoch;
	}
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	if (small_mem) {
		stress_small_mem(&mc);
		c.mem = &mc;
	}
	struct ps_ns *ns = ps_ns_create(PS, sizeof(struct sobj), &c);
	CHECK_MSG(ns != NULL, "ps_ns_create: errno %d", errno);
	return ns;
}

static inline void *flusher_main(void *p)
{
	(void)p;
	while (!atomic_load(&flusher_stop)) {
		test_sleep_ns(1000000);
		atomic_fetch_add_explicit(&epoch, 1, memory_order_release);
	}
	return NULL;
}

static inline void wait_flushes(unsigned n)
{
	if (!tlb)
		return;
	uint64_t e = atomic_load(&epoch) + n;
	uint64_t dl = test_now_ns() + 10000000000ull;
	while (atomic_load(&epoch) < e) {
		CHECK_MSG(test_now_ns() < dl, "the flusher stopped");
		test_sleep_ns(200000);
	}
}

/* ---- per-thread counts ------------------------------------------------------------- */
struct counts {
	uint64_t allocs, ats, at_fail, extents, extent_ids, frees, enospc, busy_checks;
	uint64_t lookups, hits, rebinds_checked, sleeps, walks, walked;
};

/* After a quiet drain: every id of a small space can be allocated again. */
static inline void check_all_ids_free(struct ps_ns *ns, const char *phase)
{
	if (cap > (1u << 16))
		return;
	struct sobj **all = calloc(cap, sizeof *all);
	CHECK(all != NULL);
	uint64_t got = 0, id;
	for (;;) {
		errno = 0;
		struct sobj *o = ps_ns_alloc(ns, &id);
		if (!o) {
			CHECK_MSG(errno == ENOSPC, "ps_ns_alloc: errno %d", errno);
			break;
		}
		CHECK_LT(got, cap);
		o->id = id;
		o->inc = 1;
		o->pub = 0;
		o->free_epoch = 0;
		o->ext = NULL;
		uint64_t z = 0;
		if (!atomic_compare_exchange_strong(&owner[id], &z, 1))
			violation("%s end: id %" PRIu64 " allocated while held (%" PRIu64 ")",
				  phase, id, z);
		all[got++] = o;
	}
	if (got != cap) {
		struct ps_ns_stats s;
		CHECK_EQ(ps_ns_stats(ns, &s), 0);
		violation("%s end: with every id freed and drained, only %" PRIu64 " of %" PRIu64
			  " ids could be allocated (ENOSPC): ids were lost (live %" PRIu64
			  " grace %" PRIu64 " pool_ids %" PRIu64 " stale %" PRIu64 ")",
			  phase, got, cap, s.live, s.grace, s.pool_ids, s.stale);
	}
	for (uint64_t i = 0; i < got; i++) {
		uint64_t one = 1;
		atomic_compare_exchange_strong(&owner[ps_ns_id(ns, all[i])], &one, 0);
		ps_ns_free(ns, all[i]);
	}
	free(all);
}

/* ---- main --------------------------------------------------------------------------- */
static inline void parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "bits=", 5) == 0)
			bits = (unsigned)atoi(a + 5);
		else if (strncmp(a, "cache=", 6) == 0)
			cache = (unsigned)atoi(a + 6);
		else if (strncmp(a, "order=", 6) == 0)
			order = (unsigned)atoi(a + 6);
		else if (strcmp(a, "cyclic") == 0)
			policy = PS_NS_ID_CYCLIC;
		else if (strcmp(a, "tlb") == 0)
			tlb = true;
		else if (strcmp(a, "mem=small") == 0)
			small_mem = true;
		else if (strncmp(a, "readers=", 8) == 0)
			nreaders = atoi(a + 8);
		else if (strncmp(a, "writers=", 8) == 0)
			nwriters = atoi(a + 8);
		else {
			fprintf(stderr, "stress_ps_ns: unknown argument '%s'\n", a);
			exit(2);
		}
	}
	CHECK(bits >= 10 && bits <= 24);
	CHECK(nreaders >= 0 && nreaders <= 16 && nwriters >= 1 && nwriters <= 16);
}

/* The start of each stress_ps_ns* main: the arguments, the run length and its watchdog,
 * the clock, the ps, the per-id arrays, and with tlb the flusher (beside the workers, not
 * one of them). Returns the run length in seconds. */
static inline double ns_stress_begin(int argc, char **argv, pthread_t *flusher)
{
	parse(argc, argv);
	double secs = stress_begin(2.0, 10, 120);
	CHECK_EQ(tsync_clock_init(), 0);
	PS = ps_create(NULL);
	CHECK(PS != NULL);
	cap = (uint64_t)1 << bits;
	owner = calloc(cap, sizeof *owner);
	side_fe = calloc(cap, sizeof *side_fe);
	CHECK(owner && side_fe);
	*flusher = tlb ? test_spawn(flusher_main, NULL) : 0;
	return secs;
}

/* The end of each main: the flusher stopped, the arrays and the ps freed; the exit
 * status, 1 after a violation. */
static inline int ns_stress_end(pthread_t flusher)
{
	if (tlb) {
		atomic_store(&flusher_stop, 1);
		test_join(flusher);
	}
	uint64_t v = atomic_load(&violations);
	free(owner);
	free(side_fe);
	ps_destroy(PS);
	if (v) {
		fprintf(stderr, "stress_ps_ns: %" PRIu64 " violations\n", v);
		return 1;
	}
	printf("stress_ps_ns: ok\n");
	return 0;
}

#endif
