/*
 * tests/ns/stress_ps_ns_race.c - ps_ns_alloc_at races for <tsync/ps_ns.h>: in each round
 * three threads ps_ns_alloc_at the same 32 ids (each in its own order) while a fourth
 * allocates with ps_ns_alloc and small extents, taking ids from its cache that the
 * others are claiming: every id that was free at the start of the round is won exactly
 * once; every loser sees EEXIST. Then every id is freed and, after quiescence (and the
 * next two flushes with tlb), must be free again; at the end the counters match what
 * the threads did. Arguments, the tlb hook and the duration: stress_ps_ns.h.
 */
#include "stress_ps_ns.h"

/* ---- phase 2: alloc_at races ------------------------------------------------------- */
#define RACERS 3
#define K 32
static test_barrier rbar;
static uint64_t targets[K];
static int res[RACERS][K];
static _Atomic int race_stop;
static uint64_t race_rounds, race_contested, race_alloc_won;
static _Atomic uint64_t alloc_last; /* the allocating racer's last id (CYCLIC targets) */

struct racer {
	struct stress_worker sw; /* sw.idx 0..RACERS-1: alloc_at; RACERS: ps_ns_alloc */
	void *held[4 * K + 8];   /* the allocating racer: up to K extents of 4 */
	int nheld;
	struct counts c;
};

static void race_claim(struct racer *r, void *o, uint64_t id)
{
	uint64_t z = 0;
	if (!atomic_compare_exchange_strong(&owner[id], &z, (uint64_t)r->sw.idx + 1))
		violation("alloc_at race: id %" PRIu64 " won by thread %u and held by %" PRIu64, id,
			  r->sw.idx, z - 1);
	((struct sobj *)o)->id = id;
	((struct sobj *)o)->inc = 1;
	((struct sobj *)o)->pub = 1;
	((struct sobj *)o)->free_epoch = 0;
	((struct sobj *)o)->ext = NULL;
	ps_ns_publish(NS, o);
	r->held[r->nheld++] = o;
}

static void *racer_main(void *p)
{
	struct racer *r = p;
	uint64_t rng = r->sw.seed;
	for (;;) {
		if (r->sw.idx == 0) {
			/* pick K distinct targets: low ids (what LOWEST hands out) and, for
			 * CYCLIC, the ids just past the allocating thread's last one */
			uint64_t lim = cap < 128 ? cap : 128;
			for (int k = 0; k < K; k++) {
				uint64_t id;
				bool dup;
				do {
					if (policy == PS_NS_ID_CYCLIC && k % 2)
						id = (atomic_load(&alloc_last) + 1 +
						      test_rand(&rng) % (2 * K)) %
						     cap;
					else
						id = test_rand(&rng) % lim;
					dup = false;
					for (int j = 0; j < k; j++)
						dup |= targets[j] == id;
				} while (dup);
				targets[k] = id;
			}
		}
		test_barrier_wait(&rbar); /* A */
		if (atomic_load(&race_stop))
			break;
		r->nheld = 0;
		if (r->sw.idx < RACERS) {
			int ord[K];
			for (int k = 0; k < K; k++)
				ord[k] = k;
			for (int k = K - 1; k > 0; k--) {
				int j = (int)(test_rand(&rng) % (uint64_t)(k + 1)), t = ord[k];
				ord[k] = ord[j];
				ord[j] = t;
			}
			for (int i = 0; i < K; i++) {
				int k = ord[i];
				errno = 0;
				void *o = ps_ns_alloc_at(NS, targets[k]);
				res[r->sw.idx][k] = o ? 0 : errno;
				if (o) {
					race_claim(r, o, targets[k]);
					r->c.ats++;
				} else {
					r->c.at_fail++;
				}
			}
		} else {
			for (int i = 0; i < K; i++) {
				if (test_rand(&rng) % 4 == 0) {
					void *objs[4];
					uint64_t base;
					size_t n = test_rand(&rng) % 2 ? 2 : 4;
					errno = 0;
					if (ps_ns_alloc_extent(NS, n, &base, objs) != 0) {
						/* free extents are not merged: once alloc_at
						 * broke them up, ENOSPC is allowed */
						if (errno != ENOSPC)
							violation("race: ps_ns_alloc_extent(%zu): "
								  "errno %d",
								  n, errno);
						r->c.enospc++;
						continue;
					}
					if (base % n)
						violation("race: extent of %zu at %" PRIu64, n,
							  base);
					for (size_t j = 0; j < n; j++) {
						if (ps_ns_id(NS, objs[j]) != base + j)
							violation("race: extent object %zu has id "
								  "%" PRIu64,
								  j, ps_ns_id(NS, objs[j]));
						race_claim(r, objs[j], base + j);
					}
					r->c.extents++;
					r->c.extent_ids += n;
					atomic_store(&alloc_last, base + n - 1);
				} else {
					uint64_t id;
					errno = 0;
					void *o = ps_ns_alloc(NS, &id);
					if (!o) {
						violation("race: ps_ns_alloc: errno %d", errno);
						continue;
					}
					race_claim(r, o, id);
					r->c.allocs++;
					atomic_store(&alloc_last, id);
				}
			}
		}
		test_barrier_wait(&rbar); /* B */
		if (r->sw.idx == 0) {
			for (int k = 0; k < K; k++) {
				uint64_t id = targets[k], h = atomic_load(&owner[id]);
				int winners = 0;
				for (int t = 0; t < RACERS; t++)
					winners += res[t][k] == 0;
				bool alloc_won = h == RACERS + 1;
				if (winners + alloc_won != 1 || h == 0)
					violation("alloc_at race, round %" PRIu64 ": id %" PRIu64
						  " won %d times by alloc_at and %d by ps_ns_alloc "
						  "(holder %" PRIu64 "; errnos %d %d %d)",
						  race_rounds, id, winners, (int)alloc_won, h,
						  res[0][k], res[1][k], res[2][k]);
				for (int t = 0; t < RACERS; t++)
					if (res[t][k] != 0 && res[t][k] != EEXIST)
						violation("alloc_at race: a loser for id %" PRIu64
							  " (free at the start of the round) saw "
							  "errno "
							  "%d (%s), not EEXIST",
							  id, res[t][k], strerror(res[t][k]));
				race_alloc_won += alloc_won;
				race_contested++;
			}
		}
		test_barrier_wait(&rbar); /* C */
		for (int i = 0; i < r->nheld; i++) {
			struct sobj *o = r->held[i];
			uint64_t id = o->id, t = (uint64_t)r->sw.idx + 1;
			if (!atomic_compare_exchange_strong(&owner[id], &t, 0))
				violation("race: id %" PRIu64 " changed holder", id);
			if (tlb) {
				uint64_t fe = atomic_load(&epoch);
				o->free_epoch = fe;
			}
			ps_ns_free(NS, o);
			r->c.frees++;
		}
		test_barrier_wait(&rbar); /* D */
		wait_flushes(2);
		ps_synchronize(PS);
		ps_mem_reclaim(ps_ns_mem(NS));
		test_barrier_wait(&rbar); /* E */
		r->sw.ops++;              /* rounds: racer 0 stops after one at least */
		if (r->sw.idx == 0) {
			race_rounds++;
			struct ps_ns_stats s;
			CHECK_EQ(ps_ns_stats(NS, &s), 0);
			if (s.live != 0 || s.grace != 0)
				violation("race round %" PRIu64 ": after every thread freed and "
					  "reclaimed: live %" PRIu64 " grace %" PRIu64,
					  race_rounds, s.live, s.grace);
			if (stress_stopping())
				atomic_store(&race_stop, 1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t flusher;
	double secs = ns_stress_begin(argc, argv, &flusher);
	struct ps_ns_stats s;
	NS = make_ns();
	struct racer rc[RACERS + 1];
	memset(rc, 0, sizeof rc);
	test_barrier_init(&rbar, RACERS + 1);
	stress_spawn_workers(racer_main, rc, RACERS + 1, 1001);
	stress_run(secs * 0.2 + 0.1, &violations, NULL, NULL);
	stress_end(&violations);
	struct counts rt = {0};
	for (int i = 0; i <= RACERS; i++)
		stress_counts_add(&rt, &rc[i].c);
	test_barrier_destroy(&rbar);
	CHECK_EQ(ps_ns_stats(NS, &s), 0);
	if (!atomic_load(&violations)) {
		CHECK_EQ(s.allocs, rt.allocs + rt.ats + rt.extent_ids);
		CHECK_EQ(s.frees, rt.frees);
		CHECK_EQ(s.live, 0);
		CHECK_EQ(s.grace, 0);
		check_all_ids_free(NS, "phase 2");
	}
	printf("stress_ps_ns phase 2: %" PRIu64 " rounds, %" PRIu64 " contested ids (%" PRIu64
	       " won by ps_ns_alloc/extents), %" PRIu64 " alloc_at wins, %" PRIu64
	       " losses; stale %" PRIu64 "\n",
	       race_rounds, race_contested, race_alloc_won, rt.ats, rt.at_fail, s.stale);
	ps_ns_destroy(NS);
	return ns_stress_end(flusher);
}
