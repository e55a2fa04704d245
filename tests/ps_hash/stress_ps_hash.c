/*
 * tests/ps_hash/stress_ps_hash.c - <tsync/ps_hash.h> under concurrency.
 *
 *   stress_ps_hash lin [threads]     linearisability: threads run lookup, insert-unique,
 *                                    replace, lookup-then-delete and delete-by-node on a
 *                                    few overlapping keys while a resizer thread resizes
 *                                    the table at random (and the automatic policy runs).
 *                                    Every call is logged with its invocation and response
 *                                    on one global counter; afterwards a checker tests every
 *                                    result against the history of its key: a node found
 *                                    was inserted before the call returned and not removed
 *                                    before it began; a miss has an instant with no node of
 *                                    the key certainly present; every node is removed at
 *                                    most once; the final contents are exactly the nodes
 *                                    inserted and not removed. Every node seen is also
 *                                    checked for reuse (its key and a live mark) inside the
 *                                    section that found it.
 *   stress_ps_hash torture [readers] resize torture: a resizer grows and shrinks the table
 *                                    in a loop (16 to 64k buckets) while readers look up
 *                                    every one of S static keys (each must be found) and
 *                                    walk the table with foreach (each static node exactly
 *                                    once, no node twice), and a writer churns other keys
 *                                    with insert/delete through an allocator that fails one
 *                                    array allocation in three (a failed resize must leave
 *                                    the table usable: the checks above go on).
 *
 * TSYNC_STRESS_SECONDS sets the length (default 2 s).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "ps_hash_test.h"
#include "stress.h"

#define LIVE 0x11facadeull
#define DEAD 0xdeadull

struct obj {
	struct ps_hash_node node;
	uint64_t key;
	uint64_t id; /* lin: index in infos */
	_Atomic uint64_t live;
};
#define OBJ(n) ((struct obj *)(n))

static struct ps *ps;
static struct ps_mem *mem;
static struct ps_hash *h;
static _Atomic int stop;

static struct ps_hash_config u64_cfg(void)
{
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.key_size = 8;
	cfg.key_offset = offsetof(struct obj, key);
	cfg.node_offset = 0;
	cfg.min_buckets = 16;
	return cfg;
}

static struct obj *new_obj(uint64_t key, uint64_t id)
{
	struct obj *o = ps_alloc(mem);
	CHECK(o != NULL);
	o->key = key;
	o->id = id;
	atomic_store_explicit(&o->live, LIVE, memory_order_relaxed);
	return o;
}

/* A node reached in a section: not reused (its grace period cannot have ended). */
static void check_node(struct ps_hash_node *n, uint64_t key)
{
	CHECK_MSG(atomic_load_explicit(&OBJ(n)->live, memory_order_relaxed) == LIVE,
		  "node %p reused under a reader (key %" PRIu64 ")", (void *)n, key);
	CHECK_EQ(OBJ(n)->key, key);
}

/* ps_free hook: mark objects dead only when ps_mem hands them out again is not
 * observable; instead mark them at retirement's end through the grace hook. */
static bool grace_mark(struct ps_mem *m, void *obj, tsync_tick_t t, void *arg)
{
	(void)m;
	(void)t;
	(void)arg;
	atomic_store_explicit(&((struct obj *)obj)->live, DEAD, memory_order_relaxed);
	return true;
}

/* ============================== linearisability ============================== */
enum { OP_LOOKUP, OP_INS, OP_REPL, OP_DELKEY, OP_DELNODE };
struct rec {
	uint64_t key, inv, resp, id; /* id: node found/removed/inserted, or UINT64_MAX */
	uint64_t id2;                /* replace: the node inserted */
	int op, ok;
};
struct info {
	uint64_t key, ins_inv, ins_resp, rem_inv, rem_resp;
	_Atomic int removed;
	int inserted;
};

#define LIN_KEYS 24
static _Atomic uint64_t clk;
static struct info *infos;
static _Atomic uint64_t next_id;
static uint64_t max_ids;

struct lw {
	struct stress_worker sw;
	struct rec *r;
	size_t n, cap;
};

static void add_rec(struct lw *w, struct rec r)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 4096;
		w->r = realloc(w->r, w->cap * sizeof(*w->r));
		CHECK(w->r);
	}
	w->r[w->n++] = r;
}

static void mark_removed(uint64_t id, uint64_t inv, uint64_t resp)
{
	CHECK_MSG(atomic_exchange(&infos[id].removed, 1) == 0, "node %" PRIu64 " removed twice",
		  id);
	infos[id].rem_inv = inv;
	infos[id].rem_resp = resp;
}

static void *lin_worker(void *arg)
{
	struct lw *w = arg;
	uint64_t seed = w->sw.seed;
	while (!stress_stopping()) {
		uint64_t r = test_rand(&seed);
		uint64_t key = r % LIN_KEYS;
		int op = (int)((r >> 8) % 10);
		struct rec rc = {key, 0, 0, UINT64_MAX, UINT64_MAX, 0, 0};
		ps_enter(ps);
		if (op < 4) {
			rc.op = OP_LOOKUP;
			rc.inv = atomic_fetch_add(&clk, 1);
			struct ps_hash_node *n = ps_hash_lookup(h, &key);
			rc.resp = atomic_fetch_add(&clk, 1);
			if (n) {
				check_node(n, key);
				rc.id = OBJ(n)->id;
			}
		} else if (op <= 6) {
			uint64_t id = atomic_fetch_add(&next_id, 1);
			if (id >= max_ids) {
				ps_exit(ps);
				break;
			}
			struct obj *o = new_obj(key, id);
			infos[id].key = key;
			rc.op = op == 6 ? OP_REPL : OP_INS;
			rc.inv = atomic_fetch_add(&clk, 1);
			struct ps_hash_node *e =
				op == 6 ? ps_hash_replace(h, &o->node, &o->key)
					: ps_hash_insert_unique(h, &o->node, &o->key);
			rc.resp = atomic_fetch_add(&clk, 1);
			if (e)
				check_node(e, key);
			if (op == 6 || e == NULL) {
				infos[id].ins_inv = rc.inv;
				infos[id].ins_resp = rc.resp;
				infos[id].inserted = 1;
				rc.id2 = id;
			}
			if (e)
				rc.id = OBJ(e)->id;
			if (op == 6 && e)
				mark_removed(rc.id, rc.inv, rc.resp);
			if (op != 6 && e)
				ps_free_now(mem, o); /* never published */
		} else if (op < 9) {
			rc.op = OP_DELKEY;
			rc.inv = atomic_fetch_add(&clk, 1);
			struct ps_hash_node *n = ps_hash_delete_key(h, &key);
			rc.resp = atomic_fetch_add(&clk, 1);
			if (n) {
				check_node(n, key);
				rc.id = OBJ(n)->id;
				mark_removed(rc.id, rc.inv, rc.resp);
			}
		} else {
			rc.op = OP_DELNODE;
			struct ps_hash_node *n = ps_hash_lookup(h, &key);
			if (n) {
				check_node(n, key);
				rc.inv = atomic_fetch_add(&clk, 1);
				int x = ps_hash_delete(h, n);
				rc.resp = atomic_fetch_add(&clk, 1);
				CHECK(x == 0 || errno == ENOENT);
				rc.id = OBJ(n)->id;
				rc.ok = x == 0;
				if (x == 0)
					mark_removed(rc.id, rc.inv, rc.resp);
			}
		}
		ps_exit(ps);
		if (rc.inv || rc.resp)
			add_rec(w, rc);
		w->sw.ops++;
	}
	return NULL;
}

static void *lin_resizer(void *arg)
{
	uint64_t seed = test_seed((uintptr_t)arg);
	while (!atomic_load(&stop)) {
		size_t b = (size_t)16 << (test_rand(&seed) % 8);
		CHECK_EQ(ps_hash_resize(h, b), 0);
		test_sleep_ns(100000);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct iv {
	uint64_t ins_resp, rem_inv; /* the node is certainly present in (ins_resp, rem_inv) */
};
static int cmp_iv(const void *a, const void *b)
{
	return cmp_u64(a, b);
}

static bool collect_visit(struct ps_hash_node *n, void *arg)
{
	uint8_t *in = arg;
	CHECK_LT(OBJ(n)->id, max_ids);
	CHECK_EQ(in[OBJ(n)->id], 0);
	in[OBJ(n)->id] = 1;
	return true;
}

static void run_lin(unsigned nthreads)
{
	double secs = stress_begin(2.0, 10, 60);
	max_ids = test_scale(4000000, 8);
	infos = calloc(max_ids, sizeof(*infos));
	CHECK(infos);
	struct ps_hash_config cfg = u64_cfg();
	h = ps_hash_create(ps, &cfg);
	CHECK(h);
	struct lw *w = calloc(nthreads, sizeof(*w));
	pthread_t rz = test_spawn(lin_resizer, (void *)1);
	stress_spawn_workers(lin_worker, w, nthreads, 1);
	_Atomic uint64_t viol = 0;
	stress_run(secs, &viol, NULL, NULL);
	stress_end(&viol);
	atomic_store(&stop, 1);
	test_join(rz);
	stress_check_progress("workers", w, nthreads, 1);
	uint64_t ids = atomic_load(&next_id);
	if (ids > max_ids)
		ids = max_ids;

	/* Per key: the intervals in which a node is certainly present, sorted by start,
	 * with the running maximum of their ends. */
	struct iv *ivs[LIN_KEYS];
	size_t niv[LIN_KEYS] = {0};
	uint64_t *pmax[LIN_KEYS];
	for (int k = 0; k < LIN_KEYS; k++)
		ivs[k] = malloc((ids + 1) * sizeof(struct iv));
	for (uint64_t id = 0; id < ids; id++) {
		struct info *in = &infos[id];
		if (!in->inserted)
			continue;
		uint64_t end = atomic_load(&in->removed) ? in->rem_inv : UINT64_MAX;
		ivs[in->key][niv[in->key]++] = (struct iv){in->ins_resp, end};
	}
	for (int k = 0; k < LIN_KEYS; k++) {
		qsort(ivs[k], niv[k], sizeof(struct iv), cmp_iv);
		pmax[k] = malloc((niv[k] + 1) * sizeof(uint64_t));
		uint64_t m = 0;
		for (size_t i = 0; i < niv[k]; i++) {
			if (ivs[k][i].rem_inv > m)
				m = ivs[k][i].rem_inv;
			pmax[k][i] = m;
		}
	}
	/* Is a node of key certainly present through [a, b]? (inserted, responded, before a
	 * and its removal invoked after b) */
	uint64_t checked = 0;
	for (unsigned t = 0; t < nthreads; t++) {
		for (size_t i = 0; i < w[t].n; i++) {
			struct rec *r = &w[t].r[i];
			bool miss = r->id == UINT64_MAX;
			bool absent_claim = (r->op == OP_LOOKUP || r->op == OP_DELKEY) && miss;
			if (r->op == OP_REPL && miss)
				absent_claim = true; /* replace inserted: key absent at its point */
			if (r->op == OP_INS && miss)
				absent_claim = true; /* insert-unique succeeded */
			if (absent_claim) {
				size_t lo = 0, hi = niv[r->key];
				while (lo < hi) { /* first interval starting at or after inv */
					size_t mid = (lo + hi) / 2;
					if (ivs[r->key][mid].ins_resp < r->inv)
						lo = mid + 1;
					else
						hi = mid;
				}
				/* an interval that started before inv and ends after resp */
				CHECK_MSG(lo == 0 || pmax[r->key][lo - 1] <= r->resp,
					  "op %d on key %" PRIu64 " [%" PRIu64 ",%" PRIu64
					  "] found no node, but one was present throughout",
					  r->op, r->key, r->inv, r->resp);
			} else if (!miss) {
				struct info *in = &infos[r->id];
				CHECK_EQ(in->key, r->key);
				CHECK_MSG(in->inserted && in->ins_inv < r->resp,
					  "op %d found node %" PRIu64 " before its insert", r->op,
					  r->id);
				/* a node found (not removed by this very op) was not removed
				 * before the op began */
				bool by_me = (r->op == OP_DELKEY || r->op == OP_REPL ||
					      (r->op == OP_DELNODE && r->ok)) &&
					     in->rem_inv == r->inv;
				if (!by_me && r->op != OP_DELNODE)
					CHECK_MSG(!atomic_load(&in->removed) ||
							  in->rem_resp > r->inv,
						  "op %d on key %" PRIu64 " found node %" PRIu64
						  " removed before it began",
						  r->op, r->key, r->id);
				if (r->op == OP_DELNODE && !r->ok)
					CHECK_MSG(atomic_load(&in->removed) &&
							  in->rem_inv < r->resp,
						  "delete of node %" PRIu64 " said ENOENT, but no "
						  "one removed it",
						  r->id);
			}
			checked++;
		}
	}
	/* The final contents: exactly the nodes inserted and not removed. */
	uint8_t *in = calloc(ids + 1, 1);
	ps_enter(ps);
	size_t visited = ps_hash_foreach(h, collect_visit, in);
	ps_exit(ps);
	size_t want = 0;
	for (uint64_t id = 0; id < ids; id++) {
		bool present = infos[id].inserted && !atomic_load(&infos[id].removed);
		want += present;
		CHECK_MSG(in[id] == present, "node %" PRIu64 ": in table %d, history says %d", id,
			  in[id], present);
	}
	CHECK_EQ(visited, want);
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_EQ(st.count, want);
	for (uint64_t k = 0; k < LIN_KEYS; k++)
		while (ps_hash_delete_key(h, &k) != NULL)
			;
	printf("stress_ps_hash lin: %u threads, %" PRIu64 " ops checked, %" PRIu64
	       " nodes, %" PRIu64 " resizes, %.1f s\n",
	       nthreads, checked, ids, st.resizes, secs);
	ps_hash_destroy(h);
	for (int k = 0; k < LIN_KEYS; k++) {
		free(ivs[k]);
		free(pmax[k]);
	}
	for (unsigned t = 0; t < nthreads; t++)
		free(w[t].r);
	free(w);
	free(in);
	free(infos);
}

/* ============================== resize torture ============================== */
#define STATIC_KEYS 2000u
#define CHURN_KEYS 4000u
static struct obj *statics[STATIC_KEYS];
static _Atomic uint64_t alloc_n;

static void *fail_alloc(size_t bytes, void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&alloc_n, 1) % 3 == 2)
		return NULL;
	return poisoned_buckets(bytes);
}

struct tw {
	struct stress_worker sw;
	uint16_t *seen;
	uint64_t walks;
};

static bool torture_visit(struct ps_hash_node *n, void *arg)
{
	struct tw *w = arg;
	uint64_t k = OBJ(n)->key;
	check_node(n, k);
	CHECK_LT(k, STATIC_KEYS + CHURN_KEYS);
	w->seen[k]++;
	CHECK_MSG(w->seen[k] == 1, "foreach visited key %" PRIu64 " twice", k);
	return true;
}

static void *torture_writer(void *arg);
static unsigned n_readers;

static void *torture_reader(void *arg)
{
	struct tw *w = arg;
	if (w->sw.idx >= n_readers)
		return torture_writer(arg);
	while (!stress_stopping()) {
		/* short sections, so that resizes (which wait for them) come often */
		for (uint64_t k = 0; k < STATIC_KEYS; k++) {
			if (k % 16 == 0)
				ps_enter(ps);
			struct ps_hash_node *n = ps_hash_lookup(h, &k);
			CHECK_MSG(n != NULL, "static key %" PRIu64 " not found", k);
			CHECK(n == &statics[k]->node);
			check_node(n, k);
			if (k % 16 == 15 || k + 1 == STATIC_KEYS)
				ps_exit(ps);
		}
		memset(w->seen, 0, (STATIC_KEYS + CHURN_KEYS) * sizeof(*w->seen));
		ps_enter(ps);
		ps_hash_foreach(h, torture_visit, w);
		ps_exit(ps);
		for (uint64_t k = 0; k < STATIC_KEYS; k++)
			CHECK_MSG(w->seen[k] == 1, "foreach saw static key %" PRIu64 " %u times", k,
				  w->seen[k]);
		w->walks++;
		w->sw.ops++;
	}
	return NULL;
}

static void *torture_writer(void *arg)
{
	struct tw *w = arg;
	uint64_t seed = w->sw.seed;
	while (!stress_stopping()) {
		uint64_t k = STATIC_KEYS + test_rand(&seed) % CHURN_KEYS;
		if (test_rand(&seed) & 1) {
			struct obj *o = new_obj(k, 0);
			if (ps_hash_insert_unique(h, &o->node, &o->key) != NULL)
				ps_free_now(mem, o);
		} else {
			(void)ps_hash_delete_key(h, &k);
		}
		w->sw.ops++;
	}
	return NULL;
}

static void *torture_resizer(void *arg)
{
	(void)arg;
	uint64_t ok = 0;
	while (!atomic_load(&stop)) {
		for (size_t b = 16; b <= 65536 && !atomic_load(&stop); b <<= 2)
			ok += ps_hash_resize(h, b) == 0;
		for (size_t b = 65536; b >= 16 && !atomic_load(&stop); b >>= 2)
			ok += ps_hash_resize(h, b) == 0 || errno == ENOMEM;
	}
	return (void *)(uintptr_t)ok;
}

static void run_torture(unsigned readers)
{
	double secs = stress_begin(2.0, 10, 60);
	struct ps_hash_config cfg = u64_cfg();
	cfg.alloc = fail_alloc;
	cfg.free = buckets_free;
	h = ps_hash_create(ps, &cfg);
	CHECK(h);
	for (uint64_t k = 0; k < STATIC_KEYS; k++) {
		statics[k] = new_obj(k, 0);
		CHECK(ps_hash_insert_unique(h, &statics[k]->node, &statics[k]->key) == NULL);
	}
	unsigned n = readers + 1;
	struct tw *w = calloc(n, sizeof(*w));
	for (unsigned i = 0; i < n; i++)
		w[i].seen = calloc(STATIC_KEYS + CHURN_KEYS, sizeof(uint16_t));
	atomic_store(&stop, 0);
	pthread_t rz = test_spawn(torture_resizer, NULL);
	n_readers = readers;
	stress_spawn_workers(torture_reader, w, n, 2);
	_Atomic uint64_t viol = 0;
	stress_run(secs, &viol, NULL, NULL);
	stress_end(&viol);
	atomic_store(&stop, 1);
	test_join(rz);
	stress_check_progress("readers and writer", w, n, 1);
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_GT(st.resizes, 0);
	/* still usable: every static key is there and can be deleted */
	for (uint64_t k = 0; k < STATIC_KEYS; k++)
		CHECK_EQ(ps_hash_delete(h, &statics[k]->node), 0);
	for (uint64_t k = STATIC_KEYS; k < STATIC_KEYS + CHURN_KEYS; k++)
		(void)ps_hash_delete_key(h, &k);
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_EQ(st.count, 0);
	uint64_t walks = 0;
	for (unsigned i = 0; i < readers; i++)
		walks += w[i].walks;
	printf("stress_ps_hash torture: %u readers, %" PRIu64 " walks, %" PRIu64
	       " resizes, %" PRIu64 " failed allocations, %.1f s\n",
	       readers, walks, st.resizes, st.resize_failures, secs);
	ps_hash_destroy(h);
	for (unsigned i = 0; i < n; i++)
		free(w[i].seen);
	free(w);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "lin";
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 3;
	ps = ps_create(NULL);
	CHECK(ps);
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	stress_small_mem(&mc); /* reuse as early as allowed */
	mc.grace_fn = grace_mark;
	mem = ps_mem_create(ps, sizeof(struct obj), &mc);
	CHECK(mem);
	if (strcmp(mode, "lin") == 0)
		run_lin(n);
	else if (strcmp(mode, "torture") == 0)
		run_torture(n);
	else
		CHECK_MSG(0, "usage: stress_ps_hash lin|torture [threads]");
	ps_barrier(ps);
	ps_mem_destroy(mem);
	ps_destroy(ps);
	return 0;
}
