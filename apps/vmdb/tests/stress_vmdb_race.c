/*
 * apps/vmdb/tests/stress_vmdb_race.c - races between revoke, release and alias (stress).
 *
 *   stress_vmdb_race revoke|alias|shared SYNC BACKEND   Duration: TSYNC_STRESS_SECONDS
 *                                                     (default 3)
 *
 * revoke (race test (a)): each round builds an alias tree of depth 3 and fan-out 2 whose
 *   nodes are P-page mappings (P in 1..4, one per run: see run_revoke) in four spaces (15P
 *   mappings), then NT threads start together and remove overlapping parts of it:
 *     variant 0: every thread releases the root (the same mapping);
 *     variant 1: one thread releases the root, the others revoke or release random
 *                nodes, whole or part of their P pages;
 *     variant 2: one thread releases the root, one revokes it, the others as in 1;
 *     variant 3: every thread revokes the root (14P between them); the main thread then
 *                releases it (P).
 *   Checks: the sum of the returned counts is 15P (each mapping removed by exactly one
 *   call); nothing remains (stats.mappings and frames_live every round, a scan of the four
 *   spaces every round - every 16th in sanitizer builds). TLB flusher every 100 us, so
 *   pages, frames and nodes are reused from round to round.
 *
 * alias (race test (b)): each round grants a 2-page root R in A and aliases a chain
 *   R -> C1 (B) -> C2 (C) -> C3 (B); one remover thread revokes or releases R, C1 or C2
 *   while NA aliaser threads keep aliasing R, C1, C2, C3 and their own earlier aliases
 *   into their own spaces (VMDB_ANY). An alias must succeed or fail with ENOENT. After the
 *   round (a quiescent point):
 *     - the remover's target set is gone, the rest of the chain is not;
 *     - every page of a successful alias is either gone or still the alias made (same
 *       parent) under a live parent with the same frame: never a dangling child;
 *     - accounting: the remover's count = its target set + the pages of successful
 *       aliases that are gone (+ at most P - 1 per alias that failed part-way: pages it
 *       made and then undid may have been removed, and counted, by the remover first);
 *     - stats.mappings = what is left of the chain + the surviving alias pages (nothing
 *       else exists); every round in release builds (every 8th in sanitizer builds) a full
 *       scan of all spaces checks the structural invariants of vmdb_test.h as well.
 *   Multi-page calls are not atomic with respect to each other (vmdb.h says nothing), so
 *   a successful 2-page alias of R may lose one page to a racing revoke and keep the
 *   other: counted per page. The TLB epoch advances only between rounds (no_tlb_thread,
 *   the main thread flushes), so no page is reused within a round.
 *
 * shared (the layout of `tsync-bench vmdb --layout shared`, ParSec's Metis: one address
 *   space for every thread): NS threads work in one space S[0]. Each round, phase A:
 *   every thread grants NREG regions of 1 or 2 pages (concurrent maps of one space);
 *   phase B: thread i builds alias trees (depth 2, fan-out 2, single pages, VMDB_ANY into
 *   the same space) on the first page of a region of thread i+1 (cross-thread aliases)
 *   while, by variant:
 *     variant 0: nobody removes anything meanwhile; thread i then revokes its tree: it
 *                must remove exactly the 6 aliases it made, and every lookup of thread
 *                i+1's pages and of the tree's must give the granted frame;
 *     variant 1: every thread releases its own regions one by one between its alias
 *                steps (the owner unmaps the roots of the trees a neighbour is building:
 *                an alias must succeed or fail with ENOENT);
 *     variant 2: likewise with revokes of its own regions, and thread i revokes its tree
 *                root at the end (concurrent revokes of one tree split its mappings);
 *   phase C: every thread releases the regions it has not released (variant 0: exactly
 *   their pages). Checks after each round (a quiescent point): the mappings created
 *   (pages granted, aliases made) equal the mappings the calls removed (each removed by
 *   exactly one call), no mapping or frame is left (stats every round; a scan of S[0]
 *   every round, every 16th in sanitizer builds); a deadlock trips the watchdog. The
 *   flusher runs every 100 us, so pages and frames come back through the TLB grace from
 *   one thread to another within a run.
 */
#include "vmdb_test.h"

#define NT 4 /* revoke: threads */
#define NA 3 /* alias: aliasers */
#define MAXREC 12
#define NS 4   /* shared: threads */
#define NREG 6 /* shared: regions per thread and round */

static struct vmdb *db;
static uint64_t npages;
static int S[4];
/* Worker threads live for the whole run and meet the main thread at two barriers per
 * round (threads that exit after each round would hit the thread-exit leak that
 * test_vmdb's reuse_exit part reports, instead of testing the race). */
static test_barrier bar_go, bar_done;
static _Atomic int finished;

/* ---- revoke ------------------------------------------------------------------------ */
struct tnode {
	int pid;
	vmdb_vaddr_t v;
};
static struct tnode tree[15];
static size_t P;
static int variant;

struct rthread {
	int id;
	uint64_t rng;
	long sum;
	uint64_t calls;
};

/* one call on node j, pages [a, b) of its P */
static long remove_part(struct rthread *t, bool self, int j, size_t a, size_t b)
{
	errno = 0;
	long got = self ? vmdb_release(db, tree[j].pid, tree[j].v + a, b - a)
			: vmdb_revoke(db, tree[j].pid, tree[j].v + a, b - a);
	CHECK_MSG(got >= 0, "%s(%d, %" PRIu64 ", %zu): %ld errno %s", self ? "release" : "revoke",
		  tree[j].pid, tree[j].v + a, b - a, got, strerror(errno));
	t->calls++;
	return got;
}

static void revoke_round(struct rthread *t)
{
	test_spin((unsigned)(test_rand(&t->rng) % 2000));
	switch (variant) {
	case 0: t->sum += remove_part(t, true, 0, 0, P); break;
	case 3: t->sum += remove_part(t, false, 0, 0, P); break;
	default:
		if (t->id == 0) {
			t->sum += remove_part(t, true, 0, 0, P);
			break;
		}
		if (variant == 2 && t->id == 1) {
			t->sum += remove_part(t, false, 0, 0, P);
			break;
		}
		for (int k = 0; k < 3; k++) {
			int j = (int)(test_rand(&t->rng) % 15);
			size_t a = (size_t)(test_rand(&t->rng) % P);
			size_t b = a + 1 + (size_t)(test_rand(&t->rng) % (P - a));
			t->sum += remove_part(t, test_rand(&t->rng) % 2, j, a, b);
		}
	}
}

static void *revoke_thread(void *arg)
{
	struct rthread *t = arg;
	for (;;) {
		test_barrier_wait(&bar_go);
		if (atomic_load(&finished))
			return NULL;
		revoke_round(t);
		test_barrier_wait(&bar_done);
	}
}

/* grant or alias, waiting out ENOSPC (pages and frames in their grace period) */
static vmdb_vaddr_t build_one(int from, vmdb_vaddr_t src, int to, size_t n, bool grant)
{
	uint64_t dl = test_now_ns() + EVENTUALLY_NS;
	for (;;) {
		vmdb_vaddr_t d = VMDB_ANY;
		errno = 0;
		int rc = grant ? vmdb_grant(db, to, n, &d) : vmdb_alias(db, from, src, to, &d, n);
		if (rc == 0)
			return d;
		CHECK_MSG(errno == ENOSPC, "%s: errno %s", grant ? "grant" : "alias",
			  strerror(errno));
		if (test_now_ns() >= dl) {
			struct vmdb_stats st = vt_stats(db);
			test_fail_(__FILE__, __LINE__,
				   "%s of %zu pages into pid %d: ENOSPC for %d s (pages or frames "
				   "never come back): mappings %" PRIu64 " pages_live %" PRIu64
				   " pages_grace %" PRIu64 " frames_live %" PRIu64
				   " frames_grace %" PRIu64 " tlb epoch %" PRIu64,
				   grant ? "grant" : "alias", n, to, EVENTUALLY_S, st.mappings,
				   st.pages_live, st.pages_grace, st.frames_live, st.frames_grace,
				   st.tlb_epoch);
		}
		test_sleep_ms(1);
	}
}

static void run_revoke(double secs)
{
	uint64_t rng = test_seed(7);
	uint64_t rounds = 0, calls = 0, removed = 0, vcount[4] = {0};
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9);
	test_barrier_init(&bar_go, NT + 1);
	test_barrier_init(&bar_done, NT + 1);
	atomic_store(&finished, 0);
	struct rthread th[NT];
	pthread_t pt[NT];
	for (int i = 0; i < NT; i++) {
		memset(&th[i], 0, sizeof th[i]);
		th[i].id = i;
		th[i].rng = test_seed(1000 + (uint64_t)i);
		pt[i] = test_spawn(revoke_thread, &th[i]);
	}
	/* One P per run: the page and frame namespaces never merge freed extents, so mixing
	 * extent sizes would fragment them until grants fail (reported separately). */
	P = 1 + (size_t)(test_rand(&rng) % 4);
	while (test_now_ns() < end || rounds < 8) {
		variant = (int)(rounds % 4);
		tree[0].pid = S[0];
		tree[0].v = build_one(0, 0, S[0], P, true);
		for (int i = 1; i < 15; i++) {
			int p = (i - 1) / 2;
			tree[i].pid = S[test_rand(&rng) % 4];
			tree[i].v = build_one(tree[p].pid, tree[p].v, tree[i].pid, P, false);
		}
		for (int i = 0; i < NT; i++)
			th[i].sum = 0;
		test_barrier_wait(&bar_go);
		test_barrier_wait(&bar_done);
		long sum = 0;
		for (int i = 0; i < NT; i++)
			sum += th[i].sum;
		if (variant == 3) {
			CHECK_MSG(sum == (long)(14 * P),
				  "round %" PRIu64
				  ": %d concurrent revokes of the root removed %ld, expected %zu",
				  rounds, NT, sum, 14 * P);
			long r = vmdb_release(db, S[0], tree[0].v, P);
			CHECK_EQ_I(r, (long)P);
			sum += r;
		}
		CHECK_MSG(sum == (long)(15 * P),
			  "round %" PRIu64
			  " (variant %d, P %zu): the calls removed %ld mappings in all, "
			  "the tree had %zu",
			  rounds, variant, P, sum, 15 * P);
		struct vmdb_stats rs = vt_stats(db);
		CHECK_MSG(rs.mappings == 0 && rs.frames_live == 0,
			  "round %" PRIu64 " (variant %d): %" PRIu64 " mappings and %" PRIu64
			  " frames remain",
			  rounds, variant, rs.mappings, rs.frames_live);
		if (!TEST_SMALL || rounds % 16 == 0) {
			struct vt_scan sc;
			vt_scan_spaces(db, S, 4, npages, &sc);
			CHECK_MSG(sc.n == 0, "round %" PRIu64 " (variant %d): %zu mappings remain",
				  rounds, variant, sc.n);
			vt_check_stats(db, &sc, 4);
			vt_scan_free(&sc);
		}
		removed += (uint64_t)sum;
		vcount[variant]++;
		rounds++;
	}
	atomic_store(&finished, 1);
	test_barrier_wait(&bar_go);
	for (int i = 0; i < NT; i++) {
		test_join(pt[i]);
		calls += th[i].calls;
	}
	test_barrier_destroy(&bar_go);
	test_barrier_destroy(&bar_done);
	struct vmdb_stats st = vt_stats(db);
	test_log("revoke: %" PRIu64 " rounds (variants %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
		 "), P %zu, %" PRIu64 " racing calls, %" PRIu64
		 " mappings removed; lock failures %" PRIu64 ", tlb epoch %" PRIu64,
		 rounds, vcount[0], vcount[1], vcount[2], vcount[3], P, calls, removed,
		 st.lock_failures, st.tlb_epoch);
}

/* ---- alias ------------------------------------------------------------------------- */
struct rec {
	int pid;
	vmdb_vaddr_t v;
	int src_pid;
	vmdb_vaddr_t src_v;
};

struct athread {
	int id;
	int D;
	uint64_t rng;
	struct rec ok[MAXREC];
	int nok;
	uint64_t tries, enoent, round_enoent, enospc;
};

static struct tnode chain[4]; /* R, C1, C2, C3 */
static _Atomic int remover_done;
static int target; /* 0 revoke R, 1 release R, 2 revoke C1, 3 release C1, 4 release C2 */
static long remover_got;

static void remover_round(uint64_t *rng)
{
	test_spin((unsigned)(test_rand(rng) % 20000));
	int node = target <= 1 ? 0 : target <= 3 ? 1 : 2;
	bool self = target == 1 || target == 3 || target == 4;
	errno = 0;
	remover_got = self ? vmdb_release(db, chain[node].pid, chain[node].v, P)
			   : vmdb_revoke(db, chain[node].pid, chain[node].v, P);
	CHECK_MSG(remover_got >= 0, "remover: %ld errno %s", remover_got, strerror(errno));
	atomic_store(&remover_done, 1);
}

static void *remover_thread(void *arg)
{
	for (;;) {
		test_barrier_wait(&bar_go);
		if (atomic_load(&finished))
			return NULL;
		remover_round(arg);
		test_barrier_wait(&bar_done);
	}
}

static void aliaser_round(struct athread *t)
{
	int after = 1;
	while (t->nok < MAXREC && (!atomic_load(&remover_done) || after-- > 0)) {
		int k = (int)(test_rand(&t->rng) % (uint64_t)(4 + t->nok));
		int sp;
		vmdb_vaddr_t sv;
		if (k < 4) {
			sp = chain[k].pid;
			sv = chain[k].v;
		} else {
			sp = t->ok[k - 4].pid;
			sv = t->ok[k - 4].v;
		}
		vmdb_vaddr_t d = VMDB_ANY;
		errno = 0;
		int rc = vmdb_alias(db, sp, sv, t->D, &d, P);
		t->tries++;
		if (rc == 0) {
			t->ok[t->nok++] = (struct rec){t->D, d, sp, sv};
		} else if (errno == ENOSPC) {
			/* VMDB_ANY in a 4096-page space: pages of D removed in this round (an
			 * alias undone part-way, aliases revoked with their parent) stay in their
			 * grace period until the TLB epoch moves, and in this test it moves only
			 * between rounds (no_tlb_thread: the main thread flushes), so the free
			 * pages of D can run out within a round. Nothing was mapped; pages must
			 * be in grace. */
			struct vmdb_stats st = vt_stats(db);
			CHECK_MSG(st.pages_grace > 0,
				  "alias into VMDB_ANY: ENOSPC with no page in its grace period "
				  "(pages live %" PRIu64 ")",
				  st.pages_live);
			t->enospc++;
			test_sleep_ns(100000);
		} else {
			CHECK_MSG(errno == ENOENT,
				  "alias racing a removal: errno %s (only ENOENT, or ENOSPC while "
				  "freed pages wait for their grace period)",
				  strerror(errno));
			t->enoent++;
			t->round_enoent++;
		}
		if (test_rand(&t->rng) % 4 == 0)
			sched_yield();
	}
}

static void *aliaser_thread(void *arg)
{
	for (;;) {
		test_barrier_wait(&bar_go);
		if (atomic_load(&finished))
			return NULL;
		aliaser_round(arg);
		test_barrier_wait(&bar_done);
	}
}

/* pid's page v: from the scan when there is one, else looked up */
static bool find_map(const struct vt_scan *sc, int pid, vmdb_vaddr_t v, struct vmdb_mapping *out)
{
	if (sc) {
		const struct vt_map *x = vt_scan_find(sc, pid, v);
		if (x)
			*out = x->m;
		return x != NULL;
	}
	errno = 0;
	if (vmdb_lookup_mapping(db, pid, v, out) != 0) {
		CHECK_MSG(errno == ENOENT, "lookup_mapping(%d, %" PRIu64 "): %s", pid, v,
			  strerror(errno));
		return false;
	}
	CHECK(out->pid == pid && out->vaddr == v);
	return true;
}

static void run_alias(double secs)
{
	int A = S[0], B = S[1], C = S[2];
	int D[NA];
	for (int i = 0; i < NA; i++)
		D[i] = vt_space(db);
	int all[3 + NA] = {A, B, C};
	for (int i = 0; i < NA; i++)
		all[3 + i] = D[i];
	size_t nall = 3 + NA;
	/* S[3] is alive too: scans include it (it stays empty) */
	int scan_pids[4 + NA];
	memcpy(scan_pids, all, sizeof all);
	scan_pids[3 + NA] = S[3];
	uint64_t rng = test_seed(11);
	uint64_t rounds = 0, succ = 0, gone = 0, split = 0, gone_pages = 0, survived = 0,
		 enoent = 0, tcount[5] = {0}, transient_seen = 0;
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9);
	test_barrier_init(&bar_go, NA + 2);
	test_barrier_init(&bar_done, NA + 2);
	atomic_store(&finished, 0);
	struct athread th[NA];
	pthread_t pt[NA];
	for (int i = 0; i < NA; i++) {
		memset(&th[i], 0, sizeof th[i]);
		th[i].id = i;
		th[i].D = D[i];
		th[i].rng = test_seed(5000 + (uint64_t)i);
		pt[i] = test_spawn(aliaser_thread, &th[i]);
	}
	uint64_t rrng = test_seed(17);
	pthread_t rem = test_spawn(remover_thread, &rrng);
	P = 2; /* one extent size (see run_revoke) */
	while (test_now_ns() < end || rounds < 10) {
		target = (int)(test_rand(&rng) % 5);
		chain[0].pid = A;
		chain[0].v = build_one(0, 0, A, P, true);
		chain[1].pid = B;
		chain[1].v = build_one(A, chain[0].v, B, P, false);
		chain[2].pid = C;
		chain[2].v = build_one(B, chain[1].v, C, P, false);
		chain[3].pid = B;
		chain[3].v = build_one(C, chain[2].v, B, P, false);
		atomic_store(&remover_done, 0);
		for (int i = 0; i < NA; i++) {
			th[i].nok = 0;
			th[i].round_enoent = 0;
		}
		test_barrier_wait(&bar_go);
		test_barrier_wait(&bar_done);

		/* quiescent: scan (every round; every 8th in sanitizer builds, targeted lookups
		 * and the stats in the others) and account */
		bool full = !TEST_SMALL || rounds % 8 == 0;
		struct vt_scan scan, *sc = NULL;
		if (full) {
			sc = &scan;
			vt_scan_spaces(db, scan_pids, nall + 1, npages, sc);
			vt_check_stats(db, sc, nall + 1);
		}
		struct vmdb_mapping xm;
		bool in_target[4];
		for (int k = 0; k < 4; k++) {
			switch (target) {
			case 0: in_target[k] = k >= 1; break;
			case 1: in_target[k] = true; break;
			case 2: in_target[k] = k >= 2; break;
			case 3: in_target[k] = k >= 1; break;
			default: in_target[k] = k >= 2; break;
			}
		}
		long expect = 0;
		for (int k = 0; k < 4; k++) {
			for (size_t i = 0; i < P; i++) {
				bool x = find_map(sc, chain[k].pid, chain[k].v + i, &xm);
				if (in_target[k]) {
					CHECK_MSG(!x,
						  "round %" PRIu64
						  " (target %d): chain node %d page %zu "
						  "survived its removal",
						  rounds, target, k, i);
					expect++;
				} else {
					CHECK_MSG(x,
						  "round %" PRIu64
						  " (target %d): chain node %d page %zu "
						  "removed but not targeted",
						  rounds, target, k, i);
				}
			}
		}
		/* per page: a multi-page alias and a multi-page revoke are not atomic with
		 * respect to each other (vmdb.h promises nothing), so a successful alias of
		 * R's pages may lose page 0 to the revoke and keep page 1 */
		size_t survivors = 0;
		for (int i = 0; i < NA; i++) {
			for (int j = 0; j < th[i].nok; j++) {
				struct rec *r = &th[i].ok[j];
				size_t present = 0;
				for (size_t p = 0; p < P; p++) {
					if (!find_map(sc, r->pid, r->v + p, &xm)) {
						expect++;
						gone_pages++;
						continue;
					}
					present++;
					/* it is the alias made (no page reuse within a round) */
					CHECK_MSG(xm.parent_pid == r->src_pid &&
							  xm.parent_vaddr == r->src_v + p,
						  "round %" PRIu64 ": alias %d:%" PRIu64
						  " of %d:%" PRIu64 " now has parent %d:%" PRIu64,
						  rounds, r->pid, r->v + p, r->src_pid,
						  r->src_v + p, xm.parent_pid, xm.parent_vaddr);
					/* never a dangling child (the full scan checks every
					 * mapping) */
					struct vmdb_mapping pm;
					CHECK_MSG(
						find_map(sc, xm.parent_pid, xm.parent_vaddr, &pm) &&
							pm.frame == xm.frame &&
							pm.depth + 1 == xm.depth,
						"round %" PRIu64 " (target %d): alias %d:%" PRIu64
						" survives but its parent %d:%" PRIu64 " is gone",
						rounds, target, r->pid, r->v + p, xm.parent_pid,
						xm.parent_vaddr);
				}
				survivors += present;
				if (present == 0)
					gone++;
				else if (present < P)
					split++;
			}
			succ += (uint64_t)th[i].nok;
			enoent += th[i].round_enoent;
		}
		survived += survivors;
		/* An alias that fails part-way (ENOENT at page k) undoes pages 0..k-1, and the
		 * racing remover may have removed (and counted) them first: at most P - 1 per
		 * such failure. */
		long transient = 0;
		for (int i = 0; i < NA; i++)
			transient += (long)th[i].round_enoent * (long)(P - 1);
		CHECK_MSG(remover_got >= expect && remover_got <= expect + transient,
			  "round %" PRIu64
			  " (target %d, P %zu): the remover removed %ld mappings; its target "
			  "set and the successful aliases' pages that are gone add up to %ld (+ at "
			  "most %ld "
			  "pages of aliases that failed part-way)",
			  rounds, target, P, remover_got, expect, transient);
		transient_seen += (uint64_t)(remover_got - expect);
		size_t chain_left = 0;
		for (int k = 0; k < 4; k++)
			chain_left += in_target[k] ? 0 : P;
		/* nothing else exists */
		CHECK_EQ(vt_stats(db).mappings, chain_left + survivors);
		if (sc) {
			CHECK_EQ(sc->n, chain_left + survivors);
			vt_scan_free(sc);
		}
		/* clean up: everything left descends from R */
		long r = vmdb_release(db, A, chain[0].v, P);
		CHECK_EQ_I(r, (long)(chain_left + survivors));
		CHECK_EQ(vt_stats(db).mappings, 0);
		vmdb_tlb_flush(db);
		tcount[target]++;
		rounds++;
	}
	atomic_store(&finished, 1);
	test_barrier_wait(&bar_go);
	test_join(rem);
	for (int i = 0; i < NA; i++)
		test_join(pt[i]);
	test_barrier_destroy(&bar_go);
	test_barrier_destroy(&bar_done);
	uint64_t enospc_total = 0;
	for (int i = 0; i < NA; i++) {
		enospc_total += th[i].enospc;
		CHECK_EQ_I(vmdb_space_destroy(db, D[i]), 0);
	}
	struct vmdb_stats st = vt_stats(db);
	test_log(
		"alias: %" PRIu64 " rounds (targets %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64
		"/%" PRIu64 "), %" PRIu64 " racing %zu-page aliases succeeded (%" PRIu64
		" then removed whole, %" PRIu64 " in part; %" PRIu64 " pages removed, %" PRIu64
		" survived), %" PRIu64 " ENOENT (%" PRIu64 " pages of part-way failures removed by "
		"the remover); %" PRIu64
		" ENOSPC (pages waiting for a TLB flush); lock failures %" PRIu64,
		rounds, tcount[0], tcount[1], tcount[2], tcount[3], tcount[4], succ, P, gone, split,
		gone_pages, survived, enoent, transient_seen, enospc_total, st.lock_failures);
}

/* ---- shared ------------------------------------------------------------------------ */
struct sreg {
	vmdb_vaddr_t v;
	size_t n;
	vmdb_frame_t f; /* the frame of its first page */
	bool gone;      /* released this round */
};

struct sthread {
	int id;
	uint64_t rng;
	struct sreg reg[NREG];
	long created, removed; /* this round: mappings made, mappings the calls removed */
	uint64_t aliases, enoent, lookups;
};

static struct sthread sth[NS];
static test_barrier bar_phase; /* the NS workers, between the phases of a round */

/* vmdb_config.lock_wait: the locked designs report their waits; ps takes no lock, so it
 * must never call it. Counted and logged (how often threads wait is not a promise). */
static int s_sync;
static _Atomic uint64_t s_waits, s_wait_max;

static void s_on_wait(void *arg, uint64_t ticks)
{
	(void)arg;
	CHECK_MSG(s_sync != VMDB_SYNC_PS, "lock_wait called under VMDB_SYNC_PS (no locks)");
	atomic_fetch_add(&s_waits, 1);
	uint64_t m = atomic_load(&s_wait_max);
	while (ticks > m && !atomic_compare_exchange_weak(&s_wait_max, &m, ticks))
		;
}

static long s_remove(bool self, vmdb_vaddr_t v, size_t n)
{
	errno = 0;
	long got = self ? vmdb_release(db, S[0], v, n) : vmdb_revoke(db, S[0], v, n);
	CHECK_MSG(got >= 0, "shared: %s(%d, %" PRIu64 ", %zu): %ld errno %s",
		  self ? "release" : "revoke", S[0], v, n, got, strerror(errno));
	return got;
}

/* A single-page alias of S[0]'s page src into S[0] (VMDB_ANY): 0 with its page in *out,
 * or -1 when the source was removed (ENOENT); ENOSPC (pages in their grace period) is
 * waited out. */
static int s_alias(struct sthread *t, vmdb_vaddr_t src, vmdb_vaddr_t *out)
{
	uint64_t dl = test_now_ns() + EVENTUALLY_NS;
	for (;;) {
		vmdb_vaddr_t d = VMDB_ANY;
		errno = 0;
		if (vmdb_alias(db, S[0], src, S[0], &d, 1) == 0) {
			t->created++;
			t->aliases++;
			*out = d;
			return 0;
		}
		if (errno == ENOENT) {
			t->enoent++;
			return -1;
		}
		CHECK_MSG(errno == ENOSPC,
			  "shared: alias of %" PRIu64 ": errno %s (ENOENT or ENOSPC)", src,
			  strerror(errno));
		CHECK_MSG(test_now_ns() < dl, "shared: alias: ENOSPC for %d s", EVENTUALLY_S);
		test_sleep_ms(1);
	}
}

/* Remove (variant 1: release, 2: revoke) own region k, once. */
static void s_own(struct sthread *t, int k, int v)
{
	struct sreg *r = &t->reg[k];
	if (r->gone)
		return;
	t->removed += s_remove(v == 1, r->v, r->n);
	r->gone = v == 1;
}

static void shared_round(struct sthread *t, int v)
{
	/* phase A: grants into the one space */
	for (int k = 0; k < NREG; k++) {
		struct sreg *r = &t->reg[k];
		r->n = 1 + (size_t)(test_rand(&t->rng) % 2);
		r->v = build_one(0, 0, S[0], r->n, true);
		r->f = vt_lookup(db, S[0], r->v).frame;
		r->gone = false;
		t->created += (long)r->n;
	}
	test_barrier_wait(&bar_phase);
	/* phase B: a tree on a page of the next thread's */
	const struct sthread *nb = &sth[(t->id + 1) % NS];
	const struct sreg *root = &nb->reg[test_rand(&t->rng) % NREG];
	vmdb_vaddr_t node[7];
	bool ok[7];
	node[0] = root->v;
	ok[0] = true;
	int made = 0;
	for (int i = 1; i < 7; i++) {
		int p = (i - 1) / 2;
		ok[i] = ok[p] && s_alias(t, node[p], &node[i]) == 0;
		made += ok[i];
		if (v != 0)
			s_own(t, i - 1, v);
		if (test_rand(&t->rng) % 4 == 0)
			sched_yield();
	}
	if (v == 0) {
		CHECK_EQ_I(made, 6); /* nobody removed anything: ENOENT is impossible */
		for (int k = 0; k < NREG; k++) {
			CHECK_EQ(vt_lookup(db, S[0], nb->reg[k].v).frame, nb->reg[k].f);
			t->lookups++;
		}
		for (int i = 1; i < 7; i++) {
			struct vmdb_mapping m = vt_lookup(db, S[0], node[i]);
			CHECK_EQ(m.frame, root->f);
			CHECK_EQ(m.parent_vaddr, node[(i - 1) / 2]);
			t->lookups++;
		}
		long got = s_remove(false, root->v, 1);
		CHECK_MSG(got == 6, "shared: revoke of a tree of 6 aliases removed %ld", got);
		t->removed += got;
	} else if (v == 2) {
		t->removed += s_remove(false, root->v, 1);
	}
	test_barrier_wait(&bar_phase);
	/* phase C: unmap what is left of the own regions */
	for (int k = 0; k < NREG; k++) {
		struct sreg *r = &t->reg[k];
		if (r->gone)
			continue;
		long got = s_remove(true, r->v, r->n);
		if (v == 0)
			CHECK_MSG(got == (long)r->n, "shared: release of %zu pages removed %ld",
				  r->n, got);
		t->removed += got;
		r->gone = true;
	}
}

static _Atomic int s_variant;

static void *shared_thread(void *arg)
{
	struct sthread *t = arg;
	for (;;) {
		test_barrier_wait(&bar_go);
		if (atomic_load(&finished))
			return NULL;
		shared_round(t, atomic_load(&s_variant));
		test_barrier_wait(&bar_done);
	}
}

static void run_shared(double secs)
{
	uint64_t rounds = 0, vcount[3] = {0}, created = 0;
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9);
	test_barrier_init(&bar_go, NS + 1);
	test_barrier_init(&bar_done, NS + 1);
	test_barrier_init(&bar_phase, NS);
	atomic_store(&finished, 0);
	pthread_t pt[NS];
	for (int i = 0; i < NS; i++) {
		memset(&sth[i], 0, sizeof sth[i]);
		sth[i].id = i;
		sth[i].rng = test_seed(3000 + (uint64_t)i);
		pt[i] = test_spawn(shared_thread, &sth[i]);
	}
	while (test_now_ns() < end || rounds < 9) {
		int v = (int)(rounds % 3);
		atomic_store(&s_variant, v);
		for (int i = 0; i < NS; i++)
			sth[i].created = sth[i].removed = 0;
		test_barrier_wait(&bar_go);
		test_barrier_wait(&bar_done);
		long made = 0, gone = 0;
		for (int i = 0; i < NS; i++) {
			made += sth[i].created;
			gone += sth[i].removed;
		}
		CHECK_MSG(made == gone,
			  "shared round %" PRIu64 " (variant %d): %ld mappings made, the calls "
			  "removed %ld (each must be removed by exactly one call)",
			  rounds, v, made, gone);
		struct vmdb_stats rs = vt_stats(db);
		CHECK_MSG(rs.mappings == 0 && rs.frames_live == 0,
			  "shared round %" PRIu64 " (variant %d): %" PRIu64 " mappings and %" PRIu64
			  " frames remain",
			  rounds, v, rs.mappings, rs.frames_live);
		if (!TEST_SMALL || rounds % 16 == 0) {
			struct vt_scan sc;
			vt_scan_spaces(db, S, 1, npages, &sc);
			CHECK_MSG(sc.n == 0, "shared round %" PRIu64 ": %zu mappings remain",
				  rounds, sc.n);
			vt_scan_free(&sc);
		}
		created += (uint64_t)made;
		vcount[v]++;
		rounds++;
	}
	atomic_store(&finished, 1);
	test_barrier_wait(&bar_go);
	uint64_t aliases = 0, enoent = 0, lookups = 0;
	for (int i = 0; i < NS; i++) {
		test_join(pt[i]);
		aliases += sth[i].aliases;
		enoent += sth[i].enoent;
		lookups += sth[i].lookups;
	}
	test_barrier_destroy(&bar_go);
	test_barrier_destroy(&bar_done);
	test_barrier_destroy(&bar_phase);
	struct vmdb_stats st = vt_stats(db);
	test_log("shared: %" PRIu64 " rounds (variants %" PRIu64 "/%" PRIu64 "/%" PRIu64
		 "), %" PRIu64 " mappings made and removed, %" PRIu64
		 " cross-thread aliases (%" PRIu64 " ENOENT), %" PRIu64
		 " lookups; lock failures %" PRIu64 ", tlb refusals %" PRIu64 ", tlb epoch %" PRIu64
		 "; %" PRIu64 " lock waits, the longest %" PRIu64 " ticks",
		 rounds, vcount[0], vcount[1], vcount[2], created, aliases, enoent, lookups,
		 st.lock_failures, st.tlb_refusals, st.tlb_epoch, atomic_load(&s_waits),
		 atomic_load(&s_wait_max));
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr,
			"usage: %s revoke|alias|shared ps|global|frame|rwlock|frame-ticket "
			"model|memfd\n",
			argv[0]);
		return 2;
	}
	bool alias = strcmp(argv[1], "alias") == 0, shared = strcmp(argv[1], "shared") == 0;
	CHECK(alias || shared || strcmp(argv[1], "revoke") == 0);
	double secs;
	struct vmdb_config c = vt_stress_begin(argv[2], argv[3], &secs);
	c.va_bits = 12;
	c.frame_bits = 16;
	c.max_spaces = 16;
	c.tlb_period_ns = alias ? 1000000 : 100000;
	c.no_tlb_thread = alias;
	if (shared) {
		c.lock_wait = s_on_wait;
		s_sync = c.sync;
	}
	npages = 1ull << c.va_bits;
	db = vt_create(&c);
	for (int i = 0; i < 4; i++)
		S[i] = vt_space(db);
	if (alias)
		run_alias(secs);
	else if (shared)
		run_shared(secs);
	else
		run_revoke(secs);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_I(vmdb_space_destroy(db, S[i]), 0);
	struct vmdb_stats st = vt_stats(db);
	CHECK_EQ(st.spaces, 0);
	CHECK_EQ(st.mappings, 0);
	CHECK_EQ(st.frames_live, 0);
	vmdb_destroy(db);
	test_log("stress_vmdb_race %s %s %s: ok", argv[1], argv[2], argv[3]);
	return 0;
}
