/*
 * tests/rlu/stress_sets.c - every structure x mechanism of ds/sets.h against a
 * sequential model under concurrent random operations.
 *
 *   stress_sets MECH list|hash [THREADS]
 *
 * Keys 0..R-1 are split by owner (k % THREADS): only the owner inserts or deletes its
 * keys, so its private model (a bitmap) is exact, and every insert/delete/lookup of an
 * own key must agree with it (a lost insert, a lost delete or a stale read fails).
 * Lookups of other threads' keys run concurrently, on shared predecessors. Every node a
 * reader visits has its magic checked (freed nodes are poisoned: premature reuse fails).
 * Mechanisms with insert2/remove2 (rlu, rlu-defer, mvrlu) also move pairs (2i, 2i+1) of
 * a second key range in and out in one section, and one more thread takes snapshots in
 * one section and checks that no pair is ever half present: a commit that updates four
 * pointers in two places is seen entirely or not at all. At the end the structure holds
 * exactly the union of the models, every worker finished an operation and (with pairs)
 * the snapshot thread a snapshot (both promised by the scaffold, stress.h: a worker
 * finishes one before it stops). Duration: TSYNC_STRESS_SECONDS (default 1).
 */
#include "check.h"

#include <tsync/tsync.h>

#include "sets.h"
#include "stress.h"

#define RANGE 512u        /* single keys 0..RANGE-1 */
#define PAIR_BASE 100000u /* pair keys PAIR_BASE + 2i, + 2i + 1 */
#define NPAIRS 128u

static const struct set_ops *ops;
static void *set;
static unsigned nthreads;
static uint8_t model[RANGE], pmodel[NPAIRS];

struct worker {
	struct stress_worker sw; /* sw.idx: the owner id of its keys; sw.ops: operations */
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	const unsigned id = w->sw.idx;
	uint64_t s = w->sw.seed;
	ops->thread_init(set);
	while (!stress_stopping()) {
		uint64_t r = test_rand(&s);
		unsigned op = (unsigned)(r % 100);
		if (ops->insert2 && op < 20) {
			/* own pair: both or neither */
			unsigned p = (unsigned)((r >> 8) % (NPAIRS / nthreads)) * nthreads + id;
			if (p >= NPAIRS)
				continue;
			uint64_t a = PAIR_BASE + 2u * p;
			if (pmodel[p]) {
				CHECK_MSG(ops->remove2(set, a, a + 1),
					  "%s: remove2 of present pair %u failed", ops->name, p);
				pmodel[p] = 0;
			} else {
				CHECK_MSG(ops->insert2(set, a, a + 1),
					  "%s: insert2 of absent pair %u failed", ops->name, p);
				pmodel[p] = 1;
			}
		} else if (op < 70) {
			/* own key: insert or delete, then check the answer against the model */
			uint64_t k = ((r >> 8) % (RANGE / nthreads)) * nthreads + id;
			if (k >= RANGE)
				continue;
			if ((r >> 40) & 1) {
				bool ok = ops->insert(set, k);
				CHECK_MSG(ok == !model[k],
					  "%s: insert(%llu) returned %d, model says %s", ops->name,
					  (unsigned long long)k, ok,
					  model[k] ? "present" : "absent");
				model[k] = 1;
			} else {
				bool ok = ops->remove(set, k);
				CHECK_MSG(ok == model[k],
					  "%s: remove(%llu) returned %d, model says %s", ops->name,
					  (unsigned long long)k, ok,
					  model[k] ? "present" : "absent");
				model[k] = 0;
			}
			bool found = ops->lookup(set, k);
			CHECK_MSG(found == (model[k] != 0), "%s: lookup(%llu) after own update: %d",
				  ops->name, (unsigned long long)k, found);
		} else {
			/* any key: concurrent traversal; only own keys have a known answer */
			uint64_t k = (r >> 8) % RANGE;
			bool found = ops->lookup(set, k);
			if (k % nthreads == id)
				CHECK_MSG(found == (model[k] != 0),
					  "%s: lookup(%llu) = %d, model %d", ops->name,
					  (unsigned long long)k, found, model[k]);
		}
		w->sw.ops++;
	}
	ops->thread_fini(set);
	return NULL;
}

static uint64_t snap_buf[RANGE + 2 * NPAIRS + 16];

/* Snapshots in one section: no pair may be half present. A worker of the scaffold
 * (sw.ops: snapshots), so it takes at least one. */
static void *snapper(void *arg)
{
	struct worker *w = arg;
	ops->thread_init(set);
	static uint8_t seen[2 * NPAIRS];
	while (!stress_stopping()) {
		size_t n = ops->snapshot(set, snap_buf, sizeof snap_buf / sizeof snap_buf[0]);
		CHECK_LE(n, sizeof snap_buf / sizeof snap_buf[0]);
		memset(seen, 0, sizeof seen);
		for (size_t i = 0; i < n; i++)
			if (snap_buf[i] >= PAIR_BASE) {
				CHECK_LT(snap_buf[i] - PAIR_BASE, 2 * NPAIRS);
				CHECK_MSG(!seen[snap_buf[i] - PAIR_BASE], "duplicate key %llu",
					  (unsigned long long)snap_buf[i]);
				seen[snap_buf[i] - PAIR_BASE] = 1;
			} else {
				CHECK_LT(snap_buf[i], RANGE);
			}
		for (unsigned p = 0; p < NPAIRS; p++)
			CHECK_MSG(seen[2 * p] == seen[2 * p + 1],
				  "%s: a snapshot saw half of pair %u (%d, %d): torn multi-pointer "
				  "commit",
				  ops->name, p, seen[2 * p], seen[2 * p + 1]);
		w->sw.ops++;
	}
	ops->thread_fini(set);
	return NULL;
}

int main(int argc, char **argv)
{
	CHECK_MSG(argc >= 3, "usage: %s MECH list|hash [THREADS]", argv[0]);
	ops = set_find(argv[1]);
	CHECK_MSG(ops != NULL, "unknown mechanism %s", argv[1]);
	bool hash = strcmp(argv[2], "hash") == 0;
	CHECK(hash || strcmp(argv[2], "list") == 0);
	nthreads = argc > 3 ? (unsigned)atoi(argv[3]) : 3;
	CHECK(nthreads >= 1 && nthreads <= 16);
	double seconds = stress_begin(1.0, 20, 60);
	set = ops->create(hash ? 16u : 1u);
	CHECK(set != NULL);

	/* Initial contents: every other key, every other pair (in the models too). */
	ops->thread_init(set);
	for (uint64_t k = 0; k < RANGE; k += 2) {
		CHECK(ops->insert(set, k));
		model[k] = 1;
	}
	if (ops->insert2)
		for (unsigned p = 0; p < NPAIRS; p += 2) {
			CHECK(ops->insert2(set, PAIR_BASE + 2u * p, PAIR_BASE + 2u * p + 1));
			CHECK(!ops->insert2(set, PAIR_BASE + 2u * p, PAIR_BASE + 2u * p + 1));
			pmodel[p] = 1;
		}
	ops->thread_fini(set);

	struct worker w[16], snap;
	stress_spawn_workers(worker, w, nthreads, 1);
	if (ops->insert2)
		stress_spawn_workers(snapper, &snap, 1, 100);
	stress_run(seconds, NULL, NULL, NULL);
	stress_end(NULL);
	stress_check_progress("worker", w, nthreads, 1);
	uint64_t snapshots = ops->insert2 ? snap.sw.ops : 0;
	CHECK_MSG(!ops->insert2 || snapshots > 0,
		  "%s: no snapshot was taken: pair atomicity was never checked", ops->name);

	/* Final contents = union of the models. */
	ops->thread_init(set);
	size_t n = ops->snapshot(set, snap_buf, sizeof snap_buf / sizeof snap_buf[0]);
	ops->thread_fini(set);
	static uint8_t have[RANGE], phave[2 * NPAIRS];
	for (size_t i = 0; i < n; i++) {
		uint64_t k = snap_buf[i];
		if (k >= PAIR_BASE) {
			CHECK(!phave[k - PAIR_BASE]);
			phave[k - PAIR_BASE] = 1;
		} else {
			CHECK_MSG(k < RANGE && !have[k], "unexpected or duplicate key %llu",
				  (unsigned long long)k);
			have[k] = 1;
		}
	}
	for (unsigned k = 0; k < RANGE; k++)
		CHECK_MSG(have[k] == model[k], "%s: final key %u: structure %d model %d", ops->name,
			  k, have[k], model[k]);
	for (unsigned p = 0; p < NPAIRS; p++)
		CHECK_MSG(phave[2 * p] == pmodel[p] && phave[2 * p + 1] == pmodel[p],
			  "%s: final pair %u: structure %d%d model %d", ops->name, p, phave[2 * p],
			  phave[2 * p + 1], pmodel[p]);
	uint64_t ab = ops->aborts(set);
	ops->destroy(set);
	test_log("%s %s: %u threads, %llu ops, %llu snapshots, %llu aborts: OK", ops->name, argv[2],
		 nthreads, (unsigned long long)stress_ops_total(w, nthreads),
		 (unsigned long long)snapshots, (unsigned long long)ab);
	return 0;
}
