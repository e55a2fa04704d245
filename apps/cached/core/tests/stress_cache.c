/*
 * apps/cached/core/tests/stress_cache.c - concurrent get/set/delete/incr/cas with value
 * integrity checks: a get never returns a torn, mixed or reused value; a held ref never
 * changes; no increment is lost; during table growth no present key is ever missed.
 *
 *   stress_cache VARIANT [grow|evict]      Duration: TSYNC_STRESS_SECONDS (default 2).
 *
 * Every value is self-describing: {key id, length, version} then bytes that are a
 * function of (key id, version, offset). A reader that got memory of another item (a
 * reuse before the end of its section, a freed item, a half-written one) sees a wrong
 * key id, length or pattern.
 *   default  400 keys, sets of 16..600-byte values, deletes, appends, incr/decr
 *            counters and a CAS-loop counter; final counts must be exact.
 *   grow     hash_power 4 and a stream of new keys: the table doubles again and again
 *            under the readers; 64 "stable" keys (overwritten, never deleted) must be
 *            found by every get. The locked variant grows in the maintenance thread.
 *   evict    a 2 MiB limit under a set storm over 20000 keys: constant eviction while
 *            readers check integrity; memory stays within the limit.
 */
#include "cache.h"
#include "check.h"

#define NKEYS 400
#define NSTABLE 64
#define NCTR 4
#define MAXV 600

struct vhdr {
	uint32_t key;
	uint32_t len;
	uint64_t ver;
};

static struct cache *c;
static enum cache_variant variant;
static int mode; /* 0 default, 1 grow, 2 evict */
static _Atomic int stop;
static _Atomic uint64_t next_ver;
static _Atomic uint64_t next_key; /* grow: keys created so far */
static unsigned nthreads;
static uint64_t nkeys;

static size_t mkkey(char *k, uint64_t id)
{
	return (size_t)snprintf(k, 32, "key:%" PRIu64, id);
}

static uint8_t pat(uint64_t key, uint64_t ver, size_t i)
{
	return (uint8_t)(key * 31u + ver * 7u + i * 13u + (i >> 8));
}

static size_t mkval(uint8_t *v, uint64_t key, uint64_t ver, size_t len)
{
	struct vhdr h = {(uint32_t)key, (uint32_t)len, ver};
	memcpy(v, &h, sizeof h);
	for (size_t i = sizeof h; i < len; i++)
		v[i] = pat(key, ver, i);
	return len;
}

/* A value is one or more whole records (appends concatenate records). */
static void check_val(const uint8_t *v, size_t n, uint64_t key)
{
	size_t off = 0;
	CHECK_MSG(n >= sizeof(struct vhdr), "key %" PRIu64 ": value of %zu bytes", key, n);
	while (off < n) {
		struct vhdr h;
		CHECK_MSG(n - off >= sizeof h, "key %" PRIu64 ": torn record", key);
		memcpy(&h, v + off, sizeof h);
		CHECK_MSG(h.key == (uint32_t)key, "key %" PRIu64 ": value of key %u", key, h.key);
		CHECK_MSG(h.len >= sizeof h && h.len <= n - off, "key %" PRIu64 ": bad length %u",
			  key, h.len);
		for (size_t i = sizeof h; i < h.len; i++)
			CHECK_MSG(v[off + i] == pat(key, h.ver, i),
				  "key %" PRIu64 " ver %" PRIu64 ": byte %zu differs", key, h.ver,
				  i);
		off += h.len;
	}
}

struct counts {
	uint64_t gets, hits, sets, dels, incrs, cas_ok, refs_held, stable_checks;
};

static uint64_t incr_done[64], cas_done[64];
static _Atomic int cas_any; /* a CAS-loop increment has succeeded */

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	struct counts n = {0};
	uint64_t rng = 0x9e3779b97f4a7c15ull * (id + 1);
	uint8_t val[MAXV];
	char key[32];
	struct cache_ref held = {0};
	uint64_t held_key = 0;
	bool holding = false;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = test_rand(&rng);
		uint64_t kid;
		if (mode == 1)
			kid = r % (atomic_load_explicit(&next_key, memory_order_relaxed) + 1);
		else
			kid = r % nkeys;
		size_t nk = mkkey(key, kid);
		unsigned dice = (unsigned)(r >> 40) % 100;
		if (mode == 1 && id == 0 && dice < 30) {
			/* the growing key space */
			uint64_t nid = atomic_fetch_add(&next_key, 1) + 1;
			nk = mkkey(key, nid);
			uint64_t ver = atomic_fetch_add(&next_ver, 1);
			size_t len = mkval(val, nid, ver, 16 + (r % 48));
			enum cache_status st =
				cache_store(c, CACHE_SET, key, nk, val, len, 0, 0, 0, NULL);
			CHECK_MSG(st == CACHE_STORED, "set: %s", cache_status_name(st));
			n.sets++;
			continue;
		}
		if (mode == 1 && dice < 50) {
			/* stable keys: present throughout, so every get must hit */
			uint64_t sid = r % NSTABLE;
			nk = (size_t)snprintf(key, sizeof key, "stable:%" PRIu64, sid);
			if (dice < 40) {
				uint8_t buf[MAXV];
				uint32_t len = 0;
				enum cache_status st = cache_get_copy(c, key, nk, buf, sizeof buf,
								      &len, NULL, NULL);
				CHECK_MSG(st == CACHE_OK, "stable key %" PRIu64 " missed (%s)", sid,
					  cache_status_name(st));
				check_val(buf, len, 1000000000u + sid);
				n.stable_checks++;
			} else {
				uint64_t ver = atomic_fetch_add(&next_ver, 1);
				size_t len = mkval(val, 1000000000u + sid, ver, 24 + (r % 100));
				CHECK_EQ(
					cache_store(c, CACHE_SET, key, nk, val, len, 0, 0, 0, NULL),
					CACHE_STORED);
			}
			continue;
		}
		if (dice < 55) { /* get (copy) */
			uint8_t buf[4 * MAXV];
			uint32_t len = 0;
			enum cache_status st =
				cache_get_copy(c, key, nk, buf, sizeof buf, &len, NULL, NULL);
			n.gets++;
			if (st == CACHE_OK) {
				n.hits++;
				check_val(buf, len, kid);
			} else {
				CHECK(st == CACHE_NOT_FOUND || st == CACHE_BUF_SMALL);
			}
		} else if (dice < 62) { /* get a ref and hold it across later operations */
			if (holding) {
				check_val((const uint8_t *)held.value, held.nbytes, held_key);
				cache_release(c, &held);
				holding = false;
			} else if (cache_get(c, key, nk, &held) == CACHE_OK) {
				check_val((const uint8_t *)held.value, held.nbytes, kid);
				held_key = kid;
				holding = true;
				n.refs_held++;
			}
		} else if (dice < 85) { /* set */
			uint64_t ver = atomic_fetch_add(&next_ver, 1);
			size_t len = mkval(val, kid, ver, 16 + (r % (MAXV - 16)));
			enum cache_status st = cache_store(c, CACHE_SET, key, nk, val, len,
							   (uint32_t)ver, 0, 0, NULL);
			CHECK_MSG(st == CACHE_STORED || (mode == 2 && st == CACHE_NO_MEMORY),
				  "set: %s", cache_status_name(st));
			n.sets++;
		} else if (dice < 90) { /* append a whole record */
			uint64_t ver = atomic_fetch_add(&next_ver, 1);
			size_t len = mkval(val, kid, ver, 16 + (r % 64));
			enum cache_status st =
				cache_store(c, CACHE_APPEND, key, nk, val, len, 0, 0, 0, NULL);
			CHECK(st == CACHE_STORED || st == CACHE_NOT_STORED ||
			      st == CACHE_NO_MEMORY || st == CACHE_TOO_LARGE);
			if (st == CACHE_STORED && dice == 89) /* keep values short */
				cache_delete(c, key, nk, 0);
		} else if (dice < 95) { /* delete */
			enum cache_status st = cache_delete(c, key, nk, 0);
			CHECK(st == CACHE_OK || st == CACHE_NOT_FOUND);
			n.dels++;
		} else if (mode == 0 && dice < 98) { /* incr/decr pairs on shared counters */
			char ck[16];
			size_t cn = (size_t)snprintf(ck, sizeof ck, "ctr%u", (unsigned)(r % NCTR));
			uint64_t v;
			CHECK_EQ(cache_incr(c, ck, cn, false, 3, 0, &v, NULL), CACHE_OK);
			CHECK_EQ(cache_incr(c, ck, cn, true, 1, 0, &v, NULL), CACHE_OK);
			incr_done[id]++;
			n.incrs++;
		} else if (mode == 0) { /* CAS-loop increment */
			for (;;) {
				char buf[32];
				uint32_t len;
				uint64_t cas;
				CHECK_EQ(cache_get_copy(c, "casctr", 6, buf, sizeof buf - 1, &len,
							NULL, &cas),
					 CACHE_OK);
				buf[len] = '\0';
				uint64_t v = strtoull(buf, NULL, 10);
				char nb[32];
				int nl = snprintf(nb, sizeof nb, "%" PRIu64, v + 1);
				enum cache_status st = cache_store(c, CACHE_CAS, "casctr", 6, nb,
								   (size_t)nl, 0, 0, cas, NULL);
				if (st == CACHE_STORED)
					break;
				CHECK_EQ(st, CACHE_EXISTS);
			}
			cas_done[id]++;
			n.cas_ok++;
			atomic_store_explicit(&cas_any, 1, memory_order_relaxed);
		}
	}
	if (holding) {
		check_val((const uint8_t *)held.value, held.nbytes, held_key);
		cache_release(c, &held);
	}
	test_log("thread %u: gets %" PRIu64 " hits %" PRIu64 " sets %" PRIu64 " dels %" PRIu64
		 " incrs %" PRIu64 " cas %" PRIu64 " refs %" PRIu64 " stable %" PRIu64 "",
		 id, n.gets, n.hits, n.sets, n.dels, n.incrs, n.cas_ok, n.refs_held,
		 n.stable_checks);
	return NULL;
}

int main(int argc, char **argv)
{
	test_watchdog(120);
	CHECK(argc >= 2 && cache_variant_parse(argv[1], &variant) == 0);
	if (argc >= 3)
		mode = strcmp(argv[2], "grow") == 0 ? 1 : strcmp(argv[2], "evict") == 0 ? 2 : -1;
	CHECK(mode >= 0);
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = variant;
	cfg.mem_limit = mode == 2 ? 2u << 20 : 256u << 20;
	cfg.item_size_max = 64u << 10;
	cfg.hash_power = mode == 1 ? 4 : 10;
	c = cache_create(&cfg);
	CHECK(c != NULL);
	nkeys = mode == 2 ? 20000 : NKEYS;
	nthreads = TEST_SMALL ? 3 : 4;
	if (mode == 1 && variant == CACHE_LOCKED)
		CHECK_EQ(cache_sweeper_start(c, 5), 0);
	char key[32];
	uint8_t val[MAXV];
	for (unsigned i = 0; i < NCTR; i++) {
		size_t n = (size_t)snprintf(key, sizeof key, "ctr%u", i);
		CHECK_EQ(cache_store(c, CACHE_SET, key, n, "1000", 4, 0, 0, 0, NULL), CACHE_STORED);
	}
	CHECK_EQ(cache_store(c, CACHE_SET, "casctr", 6, "0", 1, 0, 0, 0, NULL), CACHE_STORED);
	for (uint64_t s = 0; s < NSTABLE; s++) {
		size_t n = (size_t)snprintf(key, sizeof key, "stable:%" PRIu64, s);
		size_t len = mkval(val, 1000000000u + s, 0, 40);
		CHECK_EQ(cache_store(c, CACHE_SET, key, n, val, len, 0, 0, 0, NULL), CACHE_STORED);
	}
	pthread_t th[8];
	for (unsigned i = 0; i < nthreads; i++)
		CHECK_PT(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i));
	double secs = test_stress_seconds(2);
	uint64_t end = test_now_ns() + (uint64_t)(secs * 1e9);
	struct cache_stats s = {0};
	/* At least secs, and on until the workload has done what each mode is about - a
	 * CAS-loop increment, three table doublings, an eviction: the workers bring each
	 * about, though by no deadline on a loaded machine (the watchdog ends a hang). */
	for (bool done = false; test_now_ns() < end || !done;) {
		test_sleep_ms(20);
		cache_stats(c, &s);
		CHECK_MSG(s.bytes <= cfg.mem_limit, "charged %" PRIu64 " > limit", s.bytes);
		done = mode == 0   ? atomic_load_explicit(&cas_any, memory_order_relaxed)
		       : mode == 1 ? s.hash_expansions > 2
				   : s.evictions > 0 || variant == CACHE_PS_NOCRP;
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < nthreads; i++)
		CHECK_PT(pthread_join(th[i], NULL));
	cache_sweeper_stop(c);
	cache_stats(c, &s);
	test_log("%s mode %d: items %" PRIu64 " bytes %" PRIu64 " evictions %" PRIu64
		 " hash_power %" PRIu64 " expansions %" PRIu64 " malloced %" PRIu64 "",
		 argv[1], mode, s.curr_items, s.bytes, s.evictions, s.hash_power_level,
		 s.hash_expansions, s.total_malloced);
	if (mode == 0) {
		uint64_t incrs = 0, cases = 0;
		for (unsigned i = 0; i < nthreads; i++) {
			incrs += incr_done[i];
			cases += cas_done[i];
		}
		uint64_t total = 0;
		for (unsigned i = 0; i < NCTR; i++) {
			size_t n = (size_t)snprintf(key, sizeof key, "ctr%u", i);
			char buf[32];
			uint32_t len;
			CHECK_EQ(cache_get_copy(c, key, n, buf, sizeof buf - 1, &len, NULL, NULL),
				 CACHE_OK);
			buf[len] = '\0';
			total += strtoull(buf, NULL, 10) - 1000;
		}
		CHECK_EQ(total, 2 * incrs); /* +3 -1 per pair: no lost update */
		char buf[32];
		uint32_t len;
		CHECK_EQ(cache_get_copy(c, "casctr", 6, buf, sizeof buf - 1, &len, NULL, NULL),
			 CACHE_OK);
		buf[len] = '\0';
		CHECK_EQ(strtoull(buf, NULL, 10), cases);
		CHECK_GT(cases, 0);
	}
	if (mode == 1) {
		CHECK_GT(s.hash_expansions, 2);
		for (uint64_t sid = 0; sid < NSTABLE; sid++) {
			size_t n = (size_t)snprintf(key, sizeof key, "stable:%" PRIu64, sid);
			struct cache_ref r;
			CHECK_EQ(cache_get(c, key, n, &r), CACHE_OK);
			check_val((const uint8_t *)r.value, r.nbytes, 1000000000u + sid);
			cache_release(c, &r);
		}
		/* every key ever created and never deleted is either present or was deleted:
		 * count that the table holds what the counters say */
		CHECK_EQ(s.hash_is_expanding, 0);
	}
	if (mode == 2 && variant != CACHE_PS_NOCRP)
		CHECK_GT(s.evictions, 0);
	cache_destroy(c);
	test_log("stress_cache %s: ok", argv[1]);
	return 0;
}
