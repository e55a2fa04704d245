/*
 * tests/ps/stress_sleeper.c - premature-reuse hunt (2): a reader sleeps inside a section
 * while writers keep replacing and deleting nodes.
 *
 * The sleeper holds its section until the writers have freed at least MIN_FREES objects
 * since its enter (however long the scheduler makes that take), then SLEEP_MS more.
 * Meanwhile: every object freed after the reader's enter stays pending (checked exactly,
 * with the writers paused outside their sections for a quiet snapshot), the writers keep
 * going on fresh memory (they allocate inside their sections, where ps_alloc never waits
 * for a grace period - not even past the pending bound: they would never reach MIN_FREES
 * otherwise), ps_alloc never hands out a node unlinked after the enter (pin generation,
 * tests/common/slist.h), and the nodes the sleeper holds keep their incarnations. After
 * the sleeper exits, reclamation resumes: pending falls back below a bound while updates
 * continue, and the objects freed before the last SLEEP_MS waited at least that long.
 *
 *   stress_sleeper [small]      Duration: TSYNC_STRESS_SECONDS (default 2; at least
 *                               one sleep).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "slist.h"
#include "stress.h"

#define NWRITERS 2
#define SLEEP_MS 300
/* Frees while the sleeper is inside before its last SLEEP_MS: more than NWRITERS x 16
 * (stamp_batch: reclaim_batch, 16 by default, 2 small), so that some writer stamped
 * objects freed after the enter before that SLEEP_MS began. */
#define MIN_FREES (NWRITERS * 16 + 1)
/* The longest the writers may take for MIN_FREES frees, or reclamation to resume after
 * the sleeper: a real stall (a writer blocked by the sleeper), far beyond any scheduling
 * delay, and inside the watchdog of stress_begin. */
#define STALL_NS 60000000000ull

static struct wl W;
struct worker {
	struct stress_worker sw;
	bool writer;
	struct wl_counts c;
};

/* The pause protocol: quiet_stats asks (pause_req) and counts the parked workers. */
static _Atomic int pause_req, paused;

/* The workers' side: park here, outside any section, while a pause is asked. */
static void pause_point(void)
{
	if (!atomic_load_explicit(&pause_req, memory_order_acquire))
		return;
	atomic_fetch_add(&paused, 1);
	while (atomic_load_explicit(&pause_req, memory_order_acquire))
		sched_yield();
	atomic_fetch_sub(&paused, 1);
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	uint64_t rng = w->sw.seed;
	for (unsigned n = 1; !stress_stopping(); n++) {
		pause_point();
		if (!w->writer) {
			wl_read_op(&W, &rng, &w->c);
			w->sw.ops++;
			continue;
		}
		wl_write_op(&W, &rng, &w->c);
		w->sw.ops++;
		if ((n & 255) == 0)
			ps_mem_reclaim(W.mem);
	}
	return NULL;
}

/* A quiet snapshot: every worker parked outside its sections. */
static struct ps_mem_stats quiet_stats(int nworkers)
{
	atomic_store(&pause_req, 1);
	uint64_t dl = test_now_ns() + STALL_NS; /* a worker stuck in an operation */
	while (atomic_load(&paused) != nworkers) {
		CHECK_MSG(test_now_ns() < dl, "workers did not pause");
		sched_yield();
	}
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(W.mem, &s), 0);
	atomic_store(&pause_req, 0);
	return s;
}

/* What the rounds share: the number of workers, the rounds so far and their totals. */
struct rounds {
	int nworkers, rounds;
	uint64_t pinned_total, drained_rounds;
};

/* One round: a reader holds a section until MIN_FREES frees, then SLEEP_MS more; then
 * reclamation must resume. */
static void sleeper_round(void *arg)
{
	struct rounds *rd = arg;
	const int nworkers = rd->nworkers, rounds = rd->rounds;
	struct ps *ps = W.ps;

	/* ---- the sleeping reader ---- */
	struct wl_seen rec[256];
	size_t nrec = 0, k;
	ps_enter(ps);
	wl_pin_begin();
	struct ps_mem_stats s1 = quiet_stats(nworkers);
	slist_walk(&W, &W.lists[rounds % 2], UINT64_MAX, rec, 128, &nrec);
	for (unsigned b = 0; b < 8; b++) {
		slist_walk(&W, &W.buckets[(rounds * 8 + b) % W.nbuckets], UINT64_MAX, rec + nrec,
			   256 - nrec, &k);
		nrec += k;
	}
	/* the writers must get on without the sleeper: MIN_FREES frees while it is inside */
	uint64_t t0 = test_now_ns();
	struct ps_mem_stats sm;
	for (;;) {
		test_sleep_ms(10);
		sm = quiet_stats(nworkers);
		if (sm.frees - s1.frees >= MIN_FREES)
			break;
		CHECK_MSG(test_now_ns() - t0 < STALL_NS,
			  "writers stalled while a reader slept: %" PRIu64 " frees in %.0f s",
			  sm.frees - s1.frees, (double)STALL_NS / 1e9);
	}
	/* every object stamped by now waits at least SLEEP_MS more (max_wait_ticks, main) */
	test_sleep_ms(SLEEP_MS);
	struct ps_mem_stats s2 = quiet_stats(nworkers);
	size_t bad = wl_recheck(rec, nrec, "sleeping reader");
	wl_pin_end();
	ps_exit(ps);

	uint64_t freed = s2.frees - s1.frees;
	CHECK_MSG(s2.pending >= freed,
		  "pending %" PRIu64 " < %" PRIu64 " objects freed after the sleeper's enter: "
		  "some were reclaimed under it",
		  s2.pending, freed);
	CHECK_MSG(s2.reclaimed - s1.reclaimed <= s1.pending,
		  "reclaimed %" PRIu64 " while only %" PRIu64 " were pending at the enter",
		  s2.reclaimed - s1.reclaimed, s1.pending);
	CHECK_EQ(bad, 0);
	rd->pinned_total += freed;

	/* ---- after the exit, reclamation resumes (each writer's ps_mem_reclaim, at least
	 * every 256 of its operations, collects its queue: nobody else holds it back) ---- */
	uint64_t bound = s2.pending / 4 + 256;
	uint64_t dl = test_now_ns() + STALL_NS;
	struct ps_mem_stats s3;
	for (;;) {
		test_sleep_ms(10);
		s3 = quiet_stats(nworkers);
		if (s3.pending <= bound)
			break;
		CHECK_MSG(test_now_ns() < dl,
			  "pending still %" PRIu64 " (bound %" PRIu64 ", %" PRIu64
			  " at the end of the sleep) %.0f s after the sleeper exited",
			  s3.pending, bound, s2.pending, (double)STALL_NS / 1e9);
	}
	rd->drained_rounds++;
	printf("stress_sleeper: round %d: %zu nodes held, %" PRIu64 " frees pinned during "
	       "the sleep (%" PRIu64 " before its last %d ms), pending %" PRIu64 " -> %" PRIu64
	       " -> %" PRIu64 ", slabs %" PRIu64 " -> %" PRIu64 "\n",
	       rounds, nrec, freed, sm.frees - s1.frees, SLEEP_MS, s1.pending, s2.pending,
	       s3.pending, s1.slabs, s2.slabs);
	fflush(stdout);
	rd->rounds++;
}

int main(int argc, char **argv)
{
	bool small = argc > 1 && strcmp(argv[1], "small") == 0;
	double secs = stress_begin(2.0, 10, 90);
	struct ps *ps;
	struct ps_mem *mem = wl_create_mem(&ps, sizeof(struct tnode), small);
	wl_init(&W, ps, mem, 2, 128, 64, 2048);

	const int nworkers = NWRITERS + 1;
	struct worker w[NWRITERS + 1];
	for (int i = 0; i < nworkers; i++)
		w[i] = (struct worker){.writer = i < NWRITERS};
	stress_spawn_workers(worker_main, w, (unsigned)nworkers, 7);
	test_sleep_ms(50); /* warm up */

	struct rounds rd = {.nworkers = nworkers};
	stress_rounds(secs, &wl_violations, sleeper_round, &rd);
	stress_end(&wl_violations);
	struct wl_counts tot = {0};
	for (int i = 0; i < nworkers; i++)
		wl_counts_add(&tot, &w[i].c);
	int rounds = rd.rounds;
	uint64_t pinned_total = rd.pinned_total, drained_rounds = rd.drained_rounds;
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(mem, &s), 0);
	uint64_t live = wl_destroy(&W);
	CHECK_EQ(s.in_use, live);
	uint64_t v = atomic_load(&wl_violations);
	printf("stress_sleeper%s: %d sleeps of %d ms, %" PRIu64 " frees pinned, updates %" PRIu64
	       ", reads %" PRIu64 ", max_wait %" PRIu64 " ns, peak slabs %" PRIu64
	       ", reuses detected %" PRIu64 "\n",
	       small ? " (small)" : "", rounds, SLEEP_MS, pinned_total,
	       tot.inserts + tot.deletes + tot.replaces, tot.reads,
	       tsync_ticks_to_ns(s.max_wait_ticks), s.peak_slabs, v);
	CHECK(drained_rounds == (uint64_t)rounds);
	/* objects stamped before the sleeper's last SLEEP_MS were reclaimed after its exit
	 * (the margin is for the tick rate's calibration, not for timing) */
	CHECK_MSG(tsync_ticks_to_ns(s.max_wait_ticks) >= (uint64_t)SLEEP_MS * 1000000u * 2 / 3,
		  "max_wait_ticks (%" PRIu64 " ns) does not show the %d ms sleep",
		  tsync_ticks_to_ns(s.max_wait_ticks), SLEEP_MS);
	ps_mem_destroy(mem);
	ps_destroy(ps);
	return v ? 1 : 0;
}
