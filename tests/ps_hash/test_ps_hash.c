/*
 * tests/ps_hash/test_ps_hash.c - <tsync/ps_hash.h>'s contract, single-threaded where it
 * can be: create's EINVAL cases; insert / insert-unique / replace / delete /
 * lookup-then-delete with fixed 8-byte keys, fixed 12-byte keys and user keys (strings);
 * each reclamation mode retires exactly the nodes unlinked (PS_FREE: ps_mem frees; CALL:
 * callbacks after ps_barrier; NONE: none); explicit resizes both ways and automatic
 * growth and shrink keep every node; foreach visits each node once, also with a resize
 * published and not yet migrated (the locked walk); an allocation failure during a resize
 * leaves the table as it was and usable; misuse: a double insert and a self-replace abort
 * with a one-line diagnostic, a delete of a node not in the table is ENOENT, a resize
 * inside a section aborts.
 */
#include <tsync/tsync.h>

#include "check.h"
#include "ps_hash_test.h"

struct obj {
	uint64_t pad; /* the node need not be first */
	struct ps_hash_node node;
	uint64_t key;
	uint64_t value;
	struct ps_head head; /* CALL mode */
};

static struct ps *ps;
static struct ps_mem *mem;

static struct obj *new_obj(uint64_t key, uint64_t value)
{
	struct obj *o = ps_alloc(mem);
	CHECK(o != NULL);
	memset(o, 0, sizeof(*o));
	o->key = key;
	o->value = value;
	return o;
}

static struct ps_hash *new_u64(size_t minb, bool no_auto)
{
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.key_size = 8;
	cfg.key_offset =
		(ptrdiff_t)offsetof(struct obj, key) - (ptrdiff_t)offsetof(struct obj, node);
	cfg.node_offset = offsetof(struct obj, node);
	cfg.min_buckets = minb;
	cfg.no_auto_resize = no_auto;
	struct ps_hash *h = ps_hash_create(ps, &cfg);
	CHECK(h != NULL);
	return h;
}

#define OBJ(n) ((struct obj *)((char *)(n)-offsetof(struct obj, node)))

static uint64_t lookup_val(struct ps_hash *h, uint64_t key)
{
	ps_enter(ps);
	struct ps_hash_node *n = ps_hash_lookup(h, &key);
	uint64_t v = n ? OBJ(n)->value : UINT64_MAX;
	if (n)
		CHECK_EQ(OBJ(n)->key, key);
	ps_exit(ps);
	return v;
}

static uint64_t stat_count(struct ps_hash *h)
{
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	return st.count;
}

static uint64_t stat_buckets(struct ps_hash *h)
{
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	return st.buckets;
}

/* ---- create ------------------------------------------------------------------------- */
static uint64_t dummy_hash(const void *k, void *a)
{
	(void)k;
	(void)a;
	return 0;
}
static bool dummy_match(const struct ps_hash_node *n, const void *k, void *a)
{
	(void)n;
	(void)k;
	(void)a;
	return false;
}

static void test_create(void)
{
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	errno = 0;
	CHECK(ps_hash_create(ps, NULL) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL); /* no key, no hash */
	cfg.hash = dummy_hash;
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL); /* no match */
	cfg.match = dummy_match;
	cfg.min_buckets = 48;
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL);
	cfg.min_buckets = 8;
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL);
	cfg.min_buckets = 0;
	cfg.reclaim = PS_HASH_RECLAIM_CALL; /* without call_fn */
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL);
	cfg.reclaim = 7;
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL);
	cfg.reclaim = PS_HASH_RECLAIM_NONE;
	cfg.size = sizeof(cfg) - 1;
	errno = 0;
	CHECK(ps_hash_create(ps, &cfg) == NULL && errno == EINVAL);
	cfg.size = sizeof(cfg);
	cfg.initial_buckets = 1000;
	struct ps_hash *h = ps_hash_create(ps, &cfg);
	CHECK(h != NULL);
	CHECK_EQ(stat_buckets(h), 1024);
	ps_hash_destroy(h);
}

/* ---- the operations, fixed 8-byte keys, PS_FREE ------------------------------------ */
static void test_ops_u64(void)
{
	struct ps_hash *h = new_u64(16, true);
	struct ps_mem_stats m0, m1;
	CHECK_EQ(ps_mem_stats(mem, &m0), 0);
	struct obj *a = new_obj(1, 10), *b = new_obj(1, 11), *c = new_obj(2, 20);
	CHECK_EQ(lookup_val(h, 1), UINT64_MAX);
	CHECK(ps_hash_insert_unique(h, &a->node, &a->key) == NULL);
	CHECK_EQ(lookup_val(h, 1), 10);
	ps_enter(ps);
	CHECK(ps_hash_insert_unique(h, &b->node, &b->key) == &a->node); /* not inserted */
	ps_exit(ps);
	CHECK_EQ(stat_count(h), 1);
	/* replace: returns the old one, which goes to ps_free */
	ps_enter(ps);
	CHECK(ps_hash_replace(h, &b->node, &b->key) == &a->node);
	CHECK_EQ(OBJ(&a->node)->value, 10); /* readable until the section ends */
	ps_exit(ps);
	CHECK_EQ(lookup_val(h, 1), 11);
	CHECK_EQ(stat_count(h), 1);
	/* replace of an absent key inserts */
	CHECK(ps_hash_replace(h, &c->node, &c->key) == NULL);
	CHECK_EQ(lookup_val(h, 2), 20);
	CHECK_EQ(stat_count(h), 2);
	/* delete by node; a second delete of it is ENOENT and retires nothing */
	CHECK_EQ(ps_hash_delete(h, &c->node), 0);
	CHECK_EQ(lookup_val(h, 2), UINT64_MAX);
	ps_enter(ps); /* c is in its grace period: its memory is still ours to read */
	errno = 0;
	CHECK(ps_hash_delete(h, &c->node) == -1 && errno == ENOENT);
	ps_exit(ps);
	/* a node never inserted */
	struct obj *d = new_obj(3, 30);
	errno = 0;
	CHECK(ps_hash_delete(h, &d->node) == -1 && errno == ENOENT);
	/* lookup-then-delete */
	uint64_t k = 1;
	ps_enter(ps);
	CHECK(ps_hash_delete_key(h, &k) == &b->node);
	CHECK(ps_hash_delete_key(h, &k) == NULL);
	ps_exit(ps);
	CHECK_EQ(stat_count(h), 0);
	CHECK_EQ(ps_mem_stats(mem, &m1), 0);
	CHECK_EQ(m1.frees - m0.frees, 3); /* a (replaced), c, b: nothing else */
	/* duplicates: ps_hash_insert allows them, delete_key removes one at a time */
	struct obj *e = new_obj(5, 50), *f = new_obj(5, 51);
	CHECK_EQ(ps_hash_insert(h, &e->node, &e->key), 0);
	CHECK_EQ(ps_hash_insert(h, &f->node, &f->key), 0);
	CHECK_EQ(stat_count(h), 2);
	k = 5;
	CHECK(ps_hash_delete_key(h, &k) != NULL);
	CHECK(lookup_val(h, 5) == 50 || lookup_val(h, 5) == 51);
	CHECK(ps_hash_delete_key(h, &k) != NULL);
	CHECK(ps_hash_delete_key(h, &k) == NULL);
	ps_free(mem, d);
	ps_hash_destroy(h);
}

/* ---- 12-byte fixed keys ------------------------------------------------------------- */
struct obj12 {
	struct ps_hash_node node;
	char key[12];
};

static void test_fixed12(void)
{
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.key_size = 12;
	cfg.key_offset = offsetof(struct obj12, key);
	cfg.reclaim = PS_HASH_RECLAIM_NONE;
	struct ps_hash *h = ps_hash_create(ps, &cfg);
	CHECK(h);
	enum { N = 500 };
	static struct obj12 o[N];
	for (int i = 0; i < N; i++) {
		snprintf(o[i].key, sizeof(o[i].key) + 1, "k%010d", i); /* 11 chars + NUL */
		CHECK(ps_hash_insert_unique(h, &o[i].node, o[i].key) == NULL);
	}
	ps_enter(ps);
	for (int i = 0; i < N; i++)
		CHECK(ps_hash_lookup(h, o[i].key) == &o[i].node);
	char miss[12] = "k0000000000";
	miss[11] = 'x';
	CHECK(ps_hash_lookup(h, miss) == NULL);
	ps_exit(ps);
	CHECK_EQ(stat_count(h), N);
	CHECK_GE(stat_buckets(h), N); /* grew automatically */
	for (int i = 0; i < N; i++)
		CHECK_EQ(ps_hash_delete(h, &o[i].node), 0);
	CHECK_EQ(stat_count(h), 0);
	CHECK_EQ(stat_buckets(h), 64); /* shrank back to min_buckets */
	ps_hash_destroy(h);
}

/* ---- user keys: strings, CALL mode with malloc'd objects --------------------------- */
struct sobj {
	struct ps_hash_node node;
	struct ps_head head;
	char *key;
};
static _Atomic int called;
static void sobj_free(struct ps_head *hd)
{
	struct sobj *s = (struct sobj *)((char *)hd - offsetof(struct sobj, head));
	free(s->key);
	free(s);
	atomic_fetch_add(&called, 1);
}
static uint64_t str_hash(const void *key, void *arg)
{
	CHECK(arg == (void *)&called);
	return ps_hash_bytes(key, strlen(key), 7);
}
static bool str_match(const struct ps_hash_node *n, const void *key, void *arg)
{
	(void)arg;
	return strcmp(((const struct sobj *)n)->key, key) == 0;
}

static void test_user_keys_call(void)
{
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.hash = str_hash;
	cfg.match = str_match;
	cfg.arg = (void *)&called;
	cfg.reclaim = PS_HASH_RECLAIM_CALL;
	cfg.head_offset = offsetof(struct sobj, head);
	cfg.call_fn = sobj_free;
	struct ps_hash *h = ps_hash_create(ps, &cfg);
	CHECK(h);
	enum { N = 2000 };
	char buf[32];
	for (int i = 0; i < N; i++) {
		struct sobj *s = calloc(1, sizeof(*s));
		snprintf(buf, sizeof(buf), "key-%d", i);
		s->key = strdup(buf);
		CHECK(ps_hash_insert_unique(h, &s->node, s->key) == NULL);
	}
	ps_enter(ps);
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "key-%d", i);
		struct ps_hash_node *n = ps_hash_lookup(h, buf);
		CHECK(n != NULL && strcmp(((struct sobj *)n)->key, buf) == 0);
	}
	CHECK(ps_hash_lookup(h, "key-x") == NULL);
	ps_exit(ps);
	atomic_store(&called, 0);
	for (int i = 0; i < N; i += 2) {
		snprintf(buf, sizeof(buf), "key-%d", i);
		CHECK(ps_hash_delete_key(h, buf) != NULL);
	}
	ps_barrier(ps);
	CHECK_EQ(atomic_load(&called), N / 2); /* exactly the nodes deleted */
	for (int i = 1; i < N; i += 2) {
		snprintf(buf, sizeof(buf), "key-%d", i);
		CHECK(ps_hash_delete_key(h, buf) != NULL);
	}
	ps_hash_destroy(h); /* its ps_barrier runs the rest */
	CHECK_EQ(atomic_load(&called), N);
}

/* ---- resizes keep every node; foreach visits each once ------------------------------ */
struct visit {
	uint8_t *seen;
	size_t n;
};
static bool visit_fn(struct ps_hash_node *node, void *arg)
{
	struct visit *v = arg;
	uint64_t k = OBJ(node)->key;
	CHECK_LT(k, v->n);
	v->seen[k]++;
	return true;
}
static void check_all(struct ps_hash *h, size_t n)
{
	struct visit v = {calloc(n, 1), n};
	ps_enter(ps);
	CHECK_EQ(ps_hash_foreach(h, visit_fn, &v), n);
	ps_exit(ps);
	for (size_t i = 0; i < n; i++)
		CHECK_MSG(v.seen[i] == 1, "key %zu visited %u times", i, v.seen[i]);
	free(v.seen);
	for (uint64_t i = 0; i < n; i += 7)
		CHECK_EQ(lookup_val(h, i), i * 3);
}
static bool stop_after_3(struct ps_hash_node *n, void *arg)
{
	(void)n;
	return ++*(int *)arg < 3;
}

static void test_resize_foreach(void)
{
	struct ps_hash *h = new_u64(16, true);
	size_t n = test_scale(20000, 4);
	for (uint64_t i = 0; i < n; i++) {
		struct obj *o = new_obj(i, i * 3);
		CHECK_EQ(ps_hash_insert(h, &o->node, &o->key), 0);
	}
	CHECK_EQ(stat_buckets(h), 16); /* no_auto_resize */
	check_all(h, n);
	size_t sizes[] = {1 << 16, 1000, 16, 1 << 12, 64, 1 << 15};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK_EQ(ps_hash_resize(h, sizes[i]), 0);
		size_t want = 16;
		while (want < sizes[i])
			want <<= 1;
		CHECK_EQ(stat_buckets(h), want);
		check_all(h, n);
	}
	int k = 0;
	ps_enter(ps);
	CHECK_EQ(ps_hash_foreach(h, stop_after_3, &k), 3);
	ps_exit(ps);
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_EQ(st.resizes, 6);
	CHECK_EQ(st.grows, 3);
	CHECK_EQ(st.shrinks, 3);
	CHECK(!st.resizing);
	CHECK_EQ(ps_hash_resize(h, 0), 0); /* the policy: 20000 nodes in 32768 buckets: keep */
	CHECK_EQ(stat_buckets(h), 1 << 15);
	/* delete all through foreach's collected list, then the table is empty */
	for (uint64_t i = 0; i < n; i++)
		CHECK(ps_hash_delete_key(h, &i) != NULL);
	CHECK_EQ(stat_count(h), 0);
	ps_hash_destroy(h);
}

/* A resize published but not migrated: a section that began before the publication
 * holds the migration back (H4); a foreach in a section begun after it takes the locked
 * walk over both arrays and still visits each node once; lookups find every node. */
static struct ps_hash *pub_h;
static _Atomic int pub_done;
static void *resizer(void *arg)
{
	(void)arg;
	CHECK_EQ(ps_hash_resize(pub_h, 1 << 12), 0);
	atomic_store(&pub_done, 1);
	return NULL;
}

static void test_foreach_published(void)
{
	struct ps_hash *h = pub_h = new_u64(16, true);
	size_t n = 3000;
	for (uint64_t i = 0; i < n; i++) {
		struct obj *o = new_obj(i, i * 3);
		CHECK_EQ(ps_hash_insert(h, &o->node, &o->key), 0);
	}
	ps_enter(ps); /* holds the migration */
	pthread_t t = test_spawn(resizer, NULL);
	struct ps_hash_stats st;
	do {
		CHECK_EQ(ps_hash_stats(h, &st), 0);
	} while (st.buckets != (1 << 12));
	CHECK(st.resizing);
	/* our own outer section is older than the publication: the resizer must wait */
	test_sleep_ms(20);
	CHECK_EQ(atomic_load(&pub_done), 0);
	CHECK(ps_hash_poll(h)); /* from inside our section: no progress, still resizing */
	check_all(h, n);        /* the locked walk of old + new */
	ps_exit(ps);
	test_join(t);
	CHECK_EQ(atomic_load(&pub_done), 1);
	check_all(h, n);
	for (uint64_t i = 0; i < n; i++)
		CHECK(ps_hash_delete_key(h, &i) != NULL);
	ps_hash_destroy(h);
}

/* ---- automatic growth and shrink ----------------------------------------------------- */
static void test_auto(void)
{
	struct ps_hash *h = new_u64(64, false);
	size_t n = test_scale(100000, 10);
	for (uint64_t i = 0; i < n; i++) {
		struct obj *o = new_obj(i, i * 3);
		CHECK(ps_hash_insert_unique(h, &o->node, &o->key) == NULL);
	}
	while (ps_hash_poll(h))
		;
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_EQ(st.count, n);
	CHECK_GE(st.buckets * PS_HASH_GROW_LOAD + st.buckets / 16, n); /* load <= 1 + error */
	CHECK_GT(st.grows, 0);
	check_all(h, n);
	for (uint64_t i = 0; i < n; i++)
		CHECK(ps_hash_delete_key(h, &i) != NULL);
	while (ps_hash_poll(h))
		;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_EQ(st.count, 0);
	CHECK_EQ(st.buckets, 64);
	CHECK_GT(st.shrinks, 0);
	ps_hash_destroy(h);
}

/* ---- allocation failure -------------------------------------------------------------- */
static _Atomic int fail_alloc;
static _Atomic int alloc_calls;
static void *test_alloc(size_t bytes, void *arg)
{
	CHECK(arg == (void *)&fail_alloc);
	atomic_fetch_add(&alloc_calls, 1);
	if (atomic_load(&fail_alloc))
		return NULL;
	return poisoned_buckets(bytes);
}

static void test_alloc_failure(void)
{
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.key_size = 8;
	cfg.key_offset =
		(ptrdiff_t)offsetof(struct obj, key) - (ptrdiff_t)offsetof(struct obj, node);
	cfg.node_offset = offsetof(struct obj, node);
	cfg.min_buckets = 16;
	cfg.alloc = test_alloc;
	cfg.free = buckets_free;
	cfg.alloc_arg = (void *)&fail_alloc;
	struct ps_hash *h = ps_hash_create(ps, &cfg);
	CHECK(h);
	atomic_store(&fail_alloc, 1);
	size_t n = 2000;
	for (uint64_t i = 0; i < n; i++) { /* every automatic growth fails */
		struct obj *o = new_obj(i, i * 3);
		CHECK(ps_hash_insert_unique(h, &o->node, &o->key) == NULL);
	}
	struct ps_hash_stats st;
	CHECK_EQ(ps_hash_stats(h, &st), 0);
	CHECK_EQ(st.buckets, 16);
	CHECK_GT(st.resize_failures, 0);
	CHECK(!st.resizing);
	errno = 0;
	CHECK(ps_hash_resize(h, 4096) == -1 && errno == ENOMEM);
	check_all(h, n);
	atomic_store(&fail_alloc, 0);
	CHECK_EQ(ps_hash_resize(h, 4096), 0);
	CHECK_EQ(stat_buckets(h), 4096);
	check_all(h, n);
	for (uint64_t i = 0; i < n; i++)
		CHECK(ps_hash_delete_key(h, &i) != NULL);
	ps_hash_destroy(h);
}

/* ---- misuse -------------------------------------------------------------------------- */
static void double_insert(void *arg)
{
	struct ps_hash *h = new_u64(16, true);
	struct obj *o = new_obj(1, 1), *p = new_obj(2, 2);
	CHECK_EQ(ps_hash_insert(h, &p->node, &p->key), 0);
	CHECK_EQ(ps_hash_insert(h, &o->node, &o->key), 0);
	if (arg == NULL)
		ps_hash_insert(h, &o->node, &o->key);
	else
		ps_hash_insert_unique(h, &o->node, &o->key);
}
static void self_replace(void *arg)
{
	(void)arg;
	struct ps_hash *h = new_u64(16, true);
	struct obj *o = new_obj(1, 1);
	CHECK_EQ(ps_hash_insert(h, &o->node, &o->key), 0);
	ps_hash_replace(h, &o->node, &o->key);
}
static void resize_inside(void *arg)
{
	(void)arg;
	struct ps_hash *h = new_u64(16, true);
	ps_enter(ps);
	ps_hash_resize(h, 128);
}

static void test_misuse(void)
{
	if (!test_can_fork())
		return;
	CHECK(test_dies_saying(double_insert, NULL, "tsync: ps_hash_insert: node 0x"));
	CHECK(test_dies_saying(double_insert, (void *)1, "is already in the table"));
	CHECK(test_dies_saying(self_replace, NULL, "ps_hash_replace: node"));
	CHECK(test_dies_saying(resize_inside, NULL, "ps_hash_resize: called inside a section"));
}

int main(void)
{
	test_watchdog(120);
	ps = ps_create(NULL);
	CHECK(ps);
	mem = ps_mem_create(ps, sizeof(struct obj), NULL);
	CHECK(mem);
	test_create();
	test_ops_u64();
	test_fixed12();
	test_user_keys_call();
	test_resize_foreach();
	test_foreach_published();
	test_auto();
	test_alloc_failure();
	test_misuse();
	ps_barrier(ps);
	ps_mem_destroy(mem);
	ps_destroy(ps);
	printf("test_ps_hash: ok\n");
	return 0;
}
