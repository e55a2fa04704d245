/*
 * tests/ps/stress_oversub.c - premature-reuse hunt (3): more threads than cores,
 * thread churn, and threads that exit inside a section.
 *
 * N workers (half readers, half writers) run the list/hash workload of slist.h on a
 * 2-core machine, so sections are preempted all the time. Beside them a churner keeps
 * starting short-lived threads that register (explicitly or lazily), do a few
 * operations and leave: normally, with pthread_exit inside a section, by returning
 * inside a nested section, or by tsync_thread_unregister inside a section. After each
 * exit inside a section the churner records a time t taken after it and waits for
 * ps_quiesce(t) (or the end of the run) before the next pair. At the end, with every
 * thread joined and none inside a section, ps_quiesce of every recorded t must be true at
 * once (an exit inside a section left no section open behind it), ids must have stayed
 * dense (high water bounded), the registry count back to its base, and every pending
 * object, including those of exited threads, reclaimable.
 *
 *   stress_oversub <threads> [small]     Duration: TSYNC_STRESS_SECONDS (default 2).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "slist.h"
#include "stress.h"

static struct wl W;
static pthread_mutex_t tot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wl_counts tot;
static _Atomic uint64_t churned, exits_inside, unregs_inside, max_quiesce_wait_ns;
/* The times taken after exits inside sections (the churner's; main reads them after the
 * join). The last MAX_TIMES are kept, enough to cover every exit of a short run. */
#define MAX_TIMES 4096
static tsync_tick_t exit_times[MAX_TIMES];
static uint64_t nexit_times;

static void add_counts(const struct wl_counts *c)
{
	pthread_mutex_lock(&tot_lock);
	wl_counts_add(&tot, c);
	pthread_mutex_unlock(&tot_lock);
}

struct worker {
	struct stress_worker sw;
	bool writer;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct wl_counts c = {0};
	uint64_t rng = w->sw.seed;
	unsigned n = 0;
	while (!stress_stopping() && !atomic_load_explicit(&wl_violations, memory_order_relaxed)) {
		if (!w->writer || (test_rand(&rng) & 7) == 0)
			wl_read_op(&W, &rng, &c);
		else
			wl_write_op(&W, &rng, &c);
		w->sw.ops++;
		if ((++n & 1023) == 0 && w->writer)
			ps_mem_reclaim(W.mem);
	}
	add_counts(&c);
	return NULL;
}

enum { END_NORMAL, END_PTHREAD_EXIT, END_RETURN_INSIDE, END_UNREGISTER_INSIDE, END_UNREGISTER };

struct child {
	pthread_t t;
	int mode;
	bool explicit_register;
	uint64_t seed;
};

static void *child_main(void *p)
{
	struct child *ch = p;
	struct wl_counts c = {0};
	uint64_t rng = ch->seed;
	if (ch->explicit_register)
		CHECK_EQ(tsync_thread_register(), 0);
	int ops = 5 + (int)(test_rand(&rng) % 60);
	for (int i = 0; i < ops; i++) {
		if (test_rand(&rng) & 1)
			wl_read_op(&W, &rng, &c);
		else
			wl_write_op(&W, &rng, &c);
	}
	add_counts(&c);
	struct wl_seen rec[64];
	size_t nrec;
	switch (ch->mode) {
	case END_PTHREAD_EXIT:
		ps_enter(W.ps);
		slist_walk(&W, &W.lists[0], UINT64_MAX, rec, 64, &nrec);
		pthread_exit(NULL); /* inside a section, holding references */
	case END_RETURN_INSIDE:
		ps_enter(W.ps);
		ps_enter(W.ps);
		slist_walk(&W, &W.lists[1], UINT64_MAX, rec, 64, &nrec);
		return NULL; /* inside a nested section */
	case END_UNREGISTER_INSIDE:
		ps_enter(W.ps);
		slist_walk(&W, &W.buckets[0], UINT64_MAX, rec, 64, &nrec);
		CHECK_EQ(tsync_thread_unregister(), 0);
		atomic_fetch_add(&unregs_inside, 1);
		return NULL;
	case END_UNREGISTER: CHECK_EQ(tsync_thread_unregister(), 0); return NULL;
	default: return NULL;
	}
}

/* At least one pair of children, however late the churner is first scheduled. */
static void *churner_main(void *p)
{
	uint64_t rng = test_seed((uint64_t)(uintptr_t)p + 1000);
	do {
		struct child ch[2];
		bool inside = false;
		for (int i = 0; i < 2; i++) {
			uint64_t r = test_rand(&rng);
			ch[i] = (struct child){.mode = (int)(r % 6),
					       .explicit_register = (r >> 8) & 1,
					       .seed = test_rand(&rng)};
			if (ch[i].mode > END_UNREGISTER)
				ch[i].mode = END_NORMAL;
			inside |= ch[i].mode == END_PTHREAD_EXIT ||
				  ch[i].mode == END_RETURN_INSIDE ||
				  ch[i].mode == END_UNREGISTER_INSIDE;
			ch[i].t = test_spawn(child_main, &ch[i]);
		}
		for (int i = 0; i < 2; i++) {
			test_join(ch[i].t);
			if (ch[i].mode == END_PTHREAD_EXIT || ch[i].mode == END_RETURN_INSIDE)
				atomic_fetch_add(&exits_inside, 1);
		}
		atomic_fetch_add(&churned, 2);
		if (!inside)
			continue;
		/* a thread left inside a section: a time after that must still quiesce (how
		 * soon depends on the workers' sections and the scheduler: main checks it
		 * once nobody is inside) */
		tsync_tick_t t = tsync_now_ordered();
		exit_times[nexit_times++ % MAX_TIMES] = t;
		uint64_t t0 = test_now_ns();
		while (!ps_quiesce(W.ps, t) && !stress_stopping())
			sched_yield();
		uint64_t waited = test_now_ns() - t0;
		if (waited > atomic_load(&max_quiesce_wait_ns))
			atomic_store(&max_quiesce_wait_ns, waited);
	} while (!stress_stopping() && !atomic_load_explicit(&wl_violations, memory_order_relaxed));
	return NULL;
}

/* Sampled every 10 ms: the most nodes ever pending, the registry's high water. */
struct sample {
	struct stress_pending pending;
	unsigned max_hw;
};

static void sample_run(void *arg)
{
	struct sample *smp = arg;
	stress_sample_pending(&smp->pending);
	unsigned hw = tsync_thread_high_water();
	if (hw > smp->max_hw)
		smp->max_hw = hw;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 8;
	bool small = argc > 2 && strcmp(argv[2], "small") == 0;
	double secs = stress_begin(2.0, 10, 120);
	CHECK(nthreads >= 2 && nthreads <= 256);

	struct ps *ps;
	struct ps_mem *mem = wl_create_mem(&ps, sizeof(struct tnode), small);
	W.read_work = 500;
	wl_init(&W, ps, mem, 2, 256, 128, 4096);
	unsigned count0 = tsync_thread_count();

	struct worker *w = calloc((size_t)nthreads, sizeof *w);
	CHECK(w != NULL);
	/* half writers up to 8 threads, a quarter beyond: node locks are FIFO spin locks,
	 * and a convoy behind a preempted waiter keeps sections open for seconds when many
	 * writers share 2 cores */
	for (int i = 0; i < nthreads; i++)
		w[i].writer = nthreads <= 8 ? (i & 1) : (i % 4 == 1);
	stress_spawn_workers(worker_main, w, (unsigned)nthreads, 1);
	stress_spawn(churner_main, NULL);

	struct sample smp = {{mem, 0}, 0};
	stress_run(secs, &wl_violations, sample_run, &smp);
	uint64_t max_pending = smp.pending.max;
	unsigned max_hw = smp.max_hw;
	double el = stress_end(&wl_violations);

	/* nobody is inside a section now: every time taken after an exit inside one has
	 * quiesced (the exited threads' sections were closed by their exit) */
	uint64_t nt = nexit_times < MAX_TIMES ? nexit_times : MAX_TIMES;
	for (uint64_t i = 0; i < nt; i++)
		if (!ps_quiesce(ps, exit_times[i])) {
			wl_violation("ps_quiesce(t) false with every thread joined, t taken after "
				     "threads exited inside sections: a section left open");
			break;
		}

	/* ids stayed dense: at most workers + churner + 2 children + main (+ slack) */
	unsigned hw = tsync_thread_high_water();
	CHECK_MSG(hw <= (unsigned)nthreads + 8,
		  "high water %u with at most %d threads registered at once: ids not reused", hw,
		  nthreads + 4);
	CHECK_MSG(tsync_thread_count() <= count0 + 1, "%u threads still registered (base %u)",
		  tsync_thread_count(), count0);

	/* every pending object, including those of exited threads, can be reclaimed now:
	 * each ps_mem_reclaim adopts one orphaned queue and, with no thread inside a section,
	 * collects the caller's whole queue - so a round per thread that ever ran (and a few
	 * more) is enough, however long the rounds take */
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(mem, &s), 0);
	uint64_t pending_at_end = s.pending;
	void *batch[512];
	const uint64_t max_rounds = (uint64_t)nthreads + atomic_load(&churned) + 16;
	for (uint64_t round = 0;; round++) {
		ps_mem_reclaim(mem);
		CHECK_EQ(ps_mem_stats(mem, &s), 0);
		if (s.pending <= 64)
			break;
		if (round >= max_rounds) {
			wl_violation("%" PRIu64 " objects still pending (%" PRIu64
				     " when the threads "
				     "stopped) after %" PRIu64 " rounds with no thread inside a "
				     "section: frees of exited threads are never reclaimed",
				     s.pending, pending_at_end, round);
			break;
		}
		/* allocation traffic: refills, remote lists, orphaned queues */
		for (int i = 0; i < 512; i++)
			CHECK((batch[i] = ps_alloc(mem)) != NULL);
		for (int i = 0; i < 512; i++)
			ps_free(mem, batch[i]);
	}
	CHECK_EQ(ps_mem_stats(mem, &s), 0);
	uint64_t live = wl_destroy(&W);
	CHECK_MSG(s.in_use == live, "in_use %" PRIu64 ", %" PRIu64 " nodes linked", s.in_use, live);

	uint64_t v = atomic_load(&wl_violations);
	printf("stress_oversub%s: %d threads, %.2f s: reads %" PRIu64 " updates %" PRIu64
	       ", %" PRIu64 " short-lived threads (%" PRIu64 " exited inside a section, %" PRIu64
	       " unregistered inside), max quiesce wait after such exits %.1f ms (%" PRIu64
	       " times quiesced at the end), high water %u"
	       " (max %u), max pending %" PRIu64 ", pending at end %" PRIu64 " -> %" PRIu64
	       ", peak slabs %" PRIu64 ", reuses detected %" PRIu64 "\n",
	       small ? " (small)" : "", nthreads, el, tot.reads,
	       tot.inserts + tot.deletes + tot.replaces, atomic_load(&churned),
	       atomic_load(&exits_inside), atomic_load(&unregs_inside),
	       (double)atomic_load(&max_quiesce_wait_ns) / 1e6, nt, hw, max_hw, max_pending,
	       pending_at_end, s.pending, s.peak_slabs, v);
	CHECK_MSG(atomic_load(&churned) > 0, "no thread churn happened");
	free(w);
	ps_mem_destroy(mem);
	ps_destroy(ps);
	return v ? 1 : 0;
}
