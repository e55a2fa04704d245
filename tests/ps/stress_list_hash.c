/*
 * tests/ps/stress_list_hash.c - premature-reuse hunt (1): readers walk sorted lists
 * and a chained hash table inside parallel sections while writers insert, delete
 * (Fig. 1: lookup, ps_lock_take, unlink, ps_lock_release_free) and copy-replace nodes.
 * Every node carries an incarnation set at allocation; readers re-read what they saw
 * after some work in the same section (tests/common/slist.h lists every check).
 *
 *   stress_list_hash [small] [readers] [writers]
 *     small: ps_mem with cache_size 4, reclaim_batch 2, 4 KiB slabs, slabs_kept 1
 * Duration: TSYNC_STRESS_SECONDS (default 2). Exit status 1 on any violation.
 */
#include <tsync/tsync.h>

#include "check.h"
#include "slist.h"
#include "stress.h"

static struct wl W;

struct worker {
	struct stress_worker sw;
	int role; /* enum stress_role */
	struct wl_counts c;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	uint64_t rng = w->sw.seed;
	unsigned n = 0;
	while (!stress_stopping()) {
		stress_wl_op(&W, w->role, &rng, &w->c);
		w->sw.ops++;
		if ((++n & 1023) == 0 && w->role != STRESS_READER)
			ps_mem_reclaim(W.mem);
		if (atomic_load_explicit(&wl_violations, memory_order_relaxed))
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	bool small = argc > 1 && strcmp(argv[1], "small") == 0;
	int readers = argc > 2 ? atoi(argv[2]) : 2;
	int writers = argc > 3 ? atoi(argv[3]) : 2;
	double secs = stress_begin(2.0, 10, 60);
	CHECK(readers >= 0 && writers >= 1 && readers + writers + 1 <= 64);

	struct ps *ps;
	struct ps_mem *mem = wl_create_mem(&ps, sizeof(struct tnode), small);
	wl_init(&W, ps, mem, 2, 128, 64, 2048);

	struct worker w[64];
	int n = readers + writers + 1;
	for (int i = 0; i < n; i++)
		w[i] = (struct worker){.role = i < readers             ? STRESS_READER
					       : i < readers + writers ? STRESS_WRITER
								       : STRESS_MIXED};
	stress_spawn_workers(worker_main, w, (unsigned)n, 1);
	struct stress_pending smp = {mem, 0};
	stress_run(secs, &wl_violations, stress_sample_pending, &smp);
	stress_run_until_reclaimed(mem, &wl_violations, stress_sample_pending, &smp);
	uint64_t max_pending = smp.max;
	double el = stress_end(&wl_violations);
	struct wl_counts tot = {0};
	for (int i = 0; i < n; i++)
		wl_counts_add(&tot, &w[i].c);

	/* quiet: the structures are intact and the counters exact */
	struct ps_mem_stats s;
	CHECK_EQ(ps_mem_stats(mem, &s), 0);
	uint64_t live = wl_destroy(&W);
	CHECK_MSG(s.in_use == live, "in_use %" PRIu64 " but %" PRIu64 " nodes are linked", s.in_use,
		  live);
	CHECK_EQ(s.allocs - s.frees, s.in_use);
	struct ps_mem_stats e;
	CHECK_EQ(ps_mem_stats(mem, &e), 0);
	CHECK_EQ(e.in_use, 0);
	uint64_t ops = tot.inserts + tot.deletes + tot.replaces + tot.misses;
	uint64_t v = atomic_load(&wl_violations);
	printf("stress_list_hash%s: %.2f s, %d readers %d writers +1 mixed: reads %" PRIu64
	       " (nodes %" PRIu64 ", rechecked %" PRIu64 "), updates %" PRIu64 " (ins %" PRIu64
	       " del %" PRIu64 " repl %" PRIu64 " miss %" PRIu64 " retry %" PRIu64
	       "), allocs %" PRIu64 " reclaimed %" PRIu64 " remote_frees %" PRIu64
	       ", max pending %" PRIu64 ", peak slabs %" PRIu64 ", reuses detected %" PRIu64 "\n",
	       small ? " (small)" : "", el, readers, writers, tot.reads, tot.read_nodes,
	       tot.rechecks, ops, tot.inserts, tot.deletes, tot.replaces, tot.misses, tot.retries,
	       s.allocs, s.reclaimed, s.remote_frees, max_pending, s.peak_slabs, v);
	CHECK_MSG(tot.reads > 0 && ops > 0, "no progress");
	CHECK_MSG(s.reclaimed > 0, "nothing was ever reclaimed");
	ps_mem_destroy(mem);
	ps_destroy(ps);
	return v ? 1 : 0;
}
