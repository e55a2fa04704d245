/*
 * bench/hash/hash_bench.c - `tsync-bench hash`: <tsync/ps_hash.h> against liburcu's
 * rculfhash and Concurrency Kit's ck_hs, with a pthread rwlock over a plain chained table
 * as the floor (issue 31; docs/hash.md §7).
 *
 * Tables (--tables):
 *   ps-hash    ps_hash on one struct ps; objects from a ps_mem, deleted nodes ps_free'd;
 *              lookups in ps_enter/ps_exit. The ps has the default configuration.
 *   ps-hash-1ms the same with a read interval of 1 ms (struct ps_config's
 *              read_interval_ns; the default is 50 us): fewer read barriers for
 *              ps_free's reclamation to make, and more memory pending (docs/hash.md §8).
 *   urcu-lfht  liburcu's rculfhash (split-ordered lists, Shalev & Shavit), memb flavour,
 *              CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING; deleted nodes freed by
 *              urcu_memb_call_rcu; lookups in urcu_memb_read_lock/unlock.
 *   ck-hs      CK's ck_hs (open addressing, CK_HS_MODE_SPMC | OBJECT | DELETE): single
 *              writer, so writers take one ck_spinlock_mcs; lookups in
 *              ck_epoch_begin/end; deleted objects and retired maps freed by
 *              ck_epoch_call + ck_epoch_poll.
 *   rwlock     a pthread_rwlock_t (writer-preferring) over a chained table that doubles
 *              and halves at the same load factors as ps-hash (resized under the write
 *              lock).
 *
 * Steady runs: a table of K keys out of a key space of 2K (so half the lookups hit);
 * each op of each thread is a lookup, or with probability U% an update - an
 * insert-unique or a delete of a random key, alternately - so the size stays about K.
 * The workload first runs --warmup seconds (default 0.25) unmeasured - long enough for
 * the growth the prefill left due and the allocators' first refills - then --seconds
 * measured. One op in SAMPLE (16) is timed (tsync_now) into a per-thread histogram;
 * throughput counts every op over each worker's own measured window.
 *
 * Resize runs (--resize): one writer and one reader. The writer grows the table from
 * empty to K keys (inserts), then shrinks it back to empty (deletes); then, as the
 * steady reference, deletes and reinserts K/2 keys at a constant size. The reader
 * times lookups of random keys of the K throughout; its histograms are kept per phase.
 *
 * Each run is a forked child, so that peak_rss_kib (getrusage's ru_maxrss) is its own.
 *
 * CSV (steady): table,threads,update_pct,keys,mops,lookup_p50_ns,lookup_p99_ns,
 *               update_p99_ns,resizes,peak_rss_kib
 * CSV (resize, hash_resize.csv under --out, or after the steady rows with --csv):
 *               table,phase,keys,lookups,lookup_p50_ns,lookup_p99_ns,seconds,resizes,
 *               peak_rss_kib
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tsync/tsync.h>

#include "common.h"
#include "sys.h"
#include "hist.h"
#include "hash/hash_bench.h"
#include "hash/peers/peers.h"

/* ---- the adapter interface ---- */
struct table_ops {
	const char *name;
	void (*init)(uint64_t keys, unsigned nthreads);
	void (*thread_init)(unsigned id);
	void (*thread_fini)(unsigned id);
	bool (*lookup)(unsigned id, uint64_t key); /* found? */
	bool (*insert)(unsigned id, uint64_t key); /* inserted (was absent)? */
	bool (*remove)(unsigned id, uint64_t key); /* removed (was present)? */
	uint64_t (*resizes)(void);
};

/* =============================== ps-hash =============================== */
struct pobj {
	struct ps_hash_node node;
	uint64_t key;
};
static struct ps *p_ps;
static struct ps_mem *p_mem;
static struct ps_hash *p_h;

static void p_init_interval(uint64_t read_interval_ns)
{
	struct ps_config pc = PS_CONFIG_INIT;
	pc.read_interval_ns = read_interval_ns;
	p_ps = ps_create(&pc);
	p_mem = ps_mem_create(p_ps, sizeof(struct pobj), NULL);
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.key_size = 8;
	cfg.key_offset = offsetof(struct pobj, key);
	p_h = ps_hash_create(p_ps, &cfg);
	if (!p_ps || !p_mem || !p_h) {
		perror(WHO ": ps-hash");
		exit(1);
	}
}
static void p_init(uint64_t keys, unsigned n)
{
	(void)keys;
	(void)n;
	p_init_interval(0); /* the default read interval, PS_READ_INTERVAL_NS */
}
static void p_init_1ms(uint64_t keys, unsigned n)
{
	(void)keys;
	(void)n;
	p_init_interval(1000000);
}
static void p_thread(unsigned id)
{
	(void)id;
}
static bool p_lookup(unsigned id, uint64_t key)
{
	(void)id;
	ps_enter(p_ps);
	struct ps_hash_node *n = ps_hash_lookup(p_h, &key);
	bool f = n != NULL && ((struct pobj *)n)->key == key;
	ps_exit(p_ps);
	return f;
}
static bool p_insert(unsigned id, uint64_t key)
{
	(void)id;
	struct pobj *o = ps_alloc(p_mem);
	o->key = key;
	if (ps_hash_insert_unique(p_h, &o->node, &o->key) != NULL) {
		ps_free_now(p_mem, o);
		return false;
	}
	return true;
}
static bool p_remove(unsigned id, uint64_t key)
{
	(void)id;
	return ps_hash_delete_key(p_h, &key) != NULL;
}
static uint64_t p_resizes(void)
{
	struct ps_hash_stats st;
	ps_hash_stats(p_h, &st);
	return st.resizes;
}

static const struct table_ops tables[] = {
	{"ps-hash", p_init, p_thread, p_thread, p_lookup, p_insert, p_remove, p_resizes},
	{"ps-hash-1ms", p_init_1ms, p_thread, p_thread, p_lookup, p_insert, p_remove, p_resizes},
	{"urcu-lfht", hash_urcu_init, hash_urcu_thread, hash_urcu_thread_fini, hash_urcu_lookup,
	 hash_urcu_insert, hash_urcu_remove, hash_urcu_resizes},
	{"ck-hs", hash_ck_init, hash_ck_thread, hash_ck_thread_fini, hash_ck_lookup, hash_ck_insert,
	 hash_ck_remove, hash_ck_resizes},
	{"rwlock", hash_rw_init, p_thread, p_thread, hash_rw_lookup, hash_rw_insert, hash_rw_remove,
	 hash_rw_resizes},
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

/* =============================== the runs =============================== */
/* One op in SAMPLE is timed: two clock readings and a histogram add per op cost about as
 * much as a cached lookup, and the same harness cost added to every table would pull
 * their throughput ratios towards 1. The ops are random, so every SAMPLE-th one is an
 * unbiased sample for the latency quantiles. */
#define SAMPLE 16u
static tsync_tick_t warm_end; /* steady runs: the end of the warm-up (untimed, uncounted) */

struct worker {
	_Alignas(64) unsigned id;
	const struct table_ops *t;
	unsigned upd_pct;
	uint64_t keys, ops, seed;
	tsync_tick_t t0, t1; /* this worker's measured window */
	struct hist *lk, *up;
	struct bench_run *run;
	pthread_t th;
};

static inline void steady_op(const struct worker *w, uint64_t key, bool upd, unsigned *flip)
{
	if (!upd)
		(void)w->t->lookup(w->id, key);
	else if ((*flip)++ & 1)
		(void)w->t->insert(w->id, key);
	else
		(void)w->t->remove(w->id, key);
}

static void *steady_worker(void *arg)
{
	struct worker *w = arg;
	w->t->thread_init(w->id);
	uint64_t s = w->seed, space = 2 * w->keys;
	uint64_t deadline = bench_run_wait(w->run);
	unsigned flip = 0;
	bool warm = true;
	uint64_t ops = 0;
	for (uint64_t i = 0;; i++) {
		uint64_t r = bench_xorshift64s(&s);
		uint64_t key = r % space;
		bool upd = (r >> 40) % 100 < w->upd_pct;
		if ((i & (SAMPLE - 1)) != 0) {
			steady_op(w, key, upd, &flip);
			ops++;
			continue;
		}
		tsync_tick_t a = tsync_now();
		steady_op(w, key, upd, &flip);
		tsync_tick_t b = tsync_now();
		if (TSYNC_UNLIKELY(warm)) {
			if (b < warm_end)
				continue;
			warm = false; /* measure from here: this op is the window's first */
			w->t0 = a;
			ops = 0;
		}
		hist_add(upd ? w->up : w->lk, b - a);
		ops++;
		if (b >= deadline) {
			w->t1 = b;
			break;
		}
	}
	w->ops = ops;
	w->t->thread_fini(w->id);
	return NULL;
}

/* Fill with keys 0, 2, 4, ... (K of them, from the 2K space). */
static void prefill(const struct table_ops *t, uint64_t keys)
{
	t->thread_init(MAXT - 1);
	for (uint64_t k = 0; k < keys; k++)
		(void)t->insert(MAXT - 1, 2 * k);
	t->thread_fini(MAXT - 1);
}

static void steady_child(int fd, const struct table_ops *t, unsigned n, unsigned upd, uint64_t keys,
			 double secs, double warmup)
{
	t->init(keys, n);
	prefill(t, keys);
	uint64_t r0 = t->resizes();
	struct bench_run run;
	bench_run_init(&run, WHO, n);
	struct worker *w = aligned_alloc(64, sizeof(*w) * n);
	memset(w, 0, sizeof(*w) * n);
	for (unsigned i = 0; i < n; i++) {
		w[i].id = i;
		w[i].t = t;
		w[i].upd_pct = upd;
		w[i].keys = keys;
		w[i].seed = bench_mix64(i + 1 + (uint64_t)getpid() * 31) | 1;
		w[i].lk = calloc(1, sizeof(struct hist));
		w[i].up = calloc(1, sizeof(struct hist));
		w[i].run = &run;
		pthread_create(&w[i].th, NULL, steady_worker, &w[i]);
	}
	bench_run_ready(&run);
	tsync_tick_t start = tsync_now();
	warm_end = start + tsync_ns_to_ticks((uint64_t)(warmup * 1e9));
	bench_run_go(&run, warm_end + tsync_ns_to_ticks((uint64_t)(secs * 1e9)));
	for (unsigned i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	struct hist *lk = calloc(1, sizeof(*lk)), *up = calloc(1, sizeof(*up));
	double mops = 0; /* the workers' rates over their own windows, summed */
	for (unsigned i = 0; i < n; i++) {
		hist_merge(lk, w[i].lk);
		hist_merge(up, w[i].up);
		uint64_t ns = tsync_ticks_to_ns(w[i].t1 - w[i].t0);
		mops += (double)w[i].ops * 1e3 / (double)(ns ? ns : 1);
	}
	char line[256];
	int len = snprintf(line, sizeof line,
			   "%s,%u,%u,%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%ld\n",
			   t->name, n, upd, keys, mops, tsync_ticks_to_ns(hist_quantile(lk, 0.50)),
			   tsync_ticks_to_ns(hist_quantile(lk, 0.99)),
			   hist_count(up) ? tsync_ticks_to_ns(hist_quantile(up, 0.99)) : 0,
			   t->resizes() - r0, bench_peak_rss_kib());
	if (write(fd, line, (size_t)len) != len)
		_exit(1);
	_exit(0);
}

/* ---- resize runs ---- */
enum { PH_GROW, PH_SHRINK, PH_STEADY, PH_N };
static const char *const phase_name[PH_N] = {"grow", "shrink", "steady"};
static _Atomic int phase = -1;
static _Atomic uint64_t phase_resizes[PH_N];
static double phase_secs[PH_N];

struct rz {
	const struct table_ops *t;
	uint64_t keys;
	struct hist *h[PH_N];
	uint64_t n[PH_N];
};

static void *resize_reader(void *arg)
{
	struct rz *z = arg;
	z->t->thread_init(0);
	uint64_t s = 0x1234567 | 1;
	int ph;
	while ((ph = atomic_load_explicit(&phase, memory_order_acquire)) != PH_N) {
		if (ph < 0)
			continue;
		uint64_t key = bench_xorshift64s(&s) % z->keys;
		tsync_tick_t a = tsync_now();
		(void)z->t->lookup(0, key);
		tsync_tick_t b = tsync_now();
		hist_add(z->h[ph], b - a);
		z->n[ph]++;
	}
	z->t->thread_fini(0);
	return NULL;
}

static void resize_child(int fd, const struct table_ops *t, uint64_t keys)
{
	t->init(keys, 2);
	struct rz z = {t, keys, {0}, {0}};
	for (int i = 0; i < PH_N; i++)
		z.h[i] = calloc(1, sizeof(struct hist));
	pthread_t rd;
	pthread_create(&rd, NULL, resize_reader, &z);
	t->thread_init(1);
	for (int ph = 0; ph < PH_N; ph++) {
		uint64_t r0 = t->resizes();
		tsync_tick_t a = tsync_now();
		atomic_store_explicit(&phase, ph, memory_order_release);
		if (ph == PH_GROW) {
			for (uint64_t k = 0; k < keys; k++)
				(void)t->insert(1, k);
		} else if (ph == PH_SHRINK) {
			for (uint64_t k = 0; k < keys; k++)
				(void)t->remove(1, k);
			phase_resizes[ph] = t->resizes() - r0;
			phase_secs[ph] = (double)tsync_ticks_to_ns(tsync_now() - a) / 1e9;
			/* refill for the steady phase, outside any measured phase */
			atomic_store_explicit(&phase, -1, memory_order_release);
			for (uint64_t k = 0; k < keys; k++)
				(void)t->insert(1, k);
			continue;
		} else {
			uint64_t s = 99;
			for (uint64_t i = 0; i < keys; i++) { /* constant size: delete + reinsert */
				uint64_t k = bench_xorshift64s(&s) % keys;
				(void)t->remove(1, k);
				(void)t->insert(1, k);
			}
		}
		phase_resizes[ph] = t->resizes() - r0;
		phase_secs[ph] = (double)tsync_ticks_to_ns(tsync_now() - a) / 1e9;
	}
	atomic_store_explicit(&phase, PH_N, memory_order_release);
	pthread_join(rd, NULL);
	t->thread_fini(1);
	char buf[1024];
	int len = 0;
	for (int ph = 0; ph < PH_N; ph++)
		len += snprintf(buf + len, sizeof buf - (size_t)len,
				"%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%.3f,%" PRIu64 ",%ld\n",
				t->name, phase_name[ph], keys, z.n[ph],
				tsync_ticks_to_ns(hist_quantile(z.h[ph], 0.50)),
				tsync_ticks_to_ns(hist_quantile(z.h[ph], 0.99)), phase_secs[ph],
				phase_resizes[ph], bench_peak_rss_kib());
	if (write(fd, buf, (size_t)len) != len)
		_exit(1);
	_exit(0);
}

/* Run fn in a forked child; its CSV lines come back through a pipe. */
static int in_child(char *out, size_t cap, void (*fn)(int, void *), void *arg)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		fn(p[1], arg);
		_exit(0);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < cap && (r = read(p[0], out + got, cap - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && got > 0 ? 0 : -1;
}

struct steady_arg {
	const struct table_ops *t;
	unsigned n, upd;
	uint64_t keys;
	double secs, warmup;
};
static void steady_fn(int fd, void *a)
{
	struct steady_arg *s = a;
	steady_child(fd, s->t, s->n, s->upd, s->keys, s->secs, s->warmup);
}
struct resize_arg {
	const struct table_ops *t;
	uint64_t keys;
};
static void resize_fn(int fd, void *a)
{
	struct resize_arg *s = a;
	resize_child(fd, s->t, s->keys);
}

/* =============================== main =============================== */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: tsync-bench hash [--tables LIST] [--threads LIST] [--updates LIST]\n"
		"                        [--keys LIST] [--seconds S] [--warmup S] [--repeat R]\n"
		"                        [--resize] [--resize-keys N] [--csv FILE|-] [--out DIR]\n"
		"  tables: ps-hash,ps-hash-1ms,urcu-lfht,ck-hs,rwlock (default all)\n"
		"  threads 2, updates 0,10,50 (%%), keys 1000,65536,1048576, seconds 1\n"
		"  (measured, after warmup 0.25 unmeasured),\n"
		"  repeat 1; --resize adds the grow/shrink runs (resize-keys 1048576)\n"
		"  --out DIR: DIR/hash.csv, DIR/hash_resize.csv, then plot_hash.py\n");
}

static char *tables_arg;
static int set_tables(const char *a, void *ctx)
{
	(void)ctx;
	tables_arg = (char *)a;
	return 0;
}

int hash_main(int argc, char **argv, const char *cmdline)
{
	(void)cmdline;
	unsigned threads[16] = {2}, nthreads = 1, upds[16] = {0, 10, 50}, nupds = 3;
	uint64_t keys[16] = {1000, 65536, 1048576};
	unsigned nkeys = 3, repeat = 1;
	uint64_t rkeys = 1048576;
	double secs = 1, warmup = 0.25;
	bool resize = false;
	char *csv = NULL, *out = NULL;
	const struct bench_opt opts[] = {
		BENCH_O_FN("tables", 0, BENCH_OPT_CALL, set_tables),
		BENCH_O_LIST("threads", 't', BENCH_OPT_UINTS, threads, &nthreads, 1, MAXT - 1, 0),
		BENCH_O_LIST("updates", 'u', BENCH_OPT_UINTS, upds, &nupds, 0, 100, 0),
		BENCH_O_LIST("keys", 'k', BENCH_OPT_U64S, keys, &nkeys, 1, 1ull << 26, 0),
		BENCH_O_DBL("seconds", 's', BENCH_OPT_SECONDS, &secs, 3600),
		BENCH_O_DBL("warmup", 0, BENCH_OPT_SECONDS, &warmup, 3600),
		BENCH_O_NUM("repeat", 'r', BENCH_OPT_UINT, &repeat, 1, 100),
		BENCH_O_SET("resize", 0, &resize),
		BENCH_O_NUM("resize-keys", 0, BENCH_OPT_U64, &rkeys, 16, 1ull << 26),
		BENCH_O_STR("csv", 0, &csv),
		BENCH_O_STR("out", 'o', &out),
		BENCH_O_END,
	};
	int r = bench_getopt(WHO, argc, argv, opts, usage, NULL);
	if (r != 0)
		return r == BENCH_GETOPT_DONE ? 0 : 2;
	unsigned sel[NTABLES], nsel = NTABLES;
	for (unsigned i = 0; i < NTABLES; i++)
		sel[i] = i;
	if (tables_arg) {
		struct bench_names names = {
			.what = "table",
			.hint = "ps-hash, ps-hash-1ms, urcu-lfht, ck-hs, rwlock",
			BENCH_NAMES_OF(tables, name),
			.unique = true};
		if (bench_name_list(WHO, &names, tables_arg, sel, &nsel, NTABLES) != 0)
			return 2;
	}
	tsync_clock_init();
	struct bench_csv c, cr;
	if (bench_csv_open(&c, WHO, csv, out, "hash.csv", HASH_CSV_HEADER) != 0)
		return 1;
	bool rsep = out != NULL;
	if (resize && rsep &&
	    bench_csv_open(&cr, WHO, NULL, out, "hash_resize.csv", HASH_RESIZE_CSV_HEADER) != 0)
		return 1;
	char buf[2048];
	for (unsigned rep = 0; rep < repeat; rep++)
		for (unsigned ki = 0; ki < nkeys; ki++)
			for (unsigned ui = 0; ui < nupds; ui++)
				for (unsigned ti = 0; ti < nthreads; ti++)
					for (unsigned s = 0; s < nsel; s++) {
						struct steady_arg a = {
							&tables[sel[s]], threads[ti], upds[ui],
							keys[ki],        secs,        warmup};
						if (in_child(buf, sizeof buf,
							     (void (*)(int, void *))steady_fn,
							     &a) != 0) {
							fprintf(stderr, WHO ": %s run failed\n",
								tables[sel[s]].name);
							return 1;
						}
						bench_csv_printf(&c, "%s", buf);
					}
	if (resize) {
		if (!rsep)
			bench_csv_printf(&c, "%s\n", HASH_RESIZE_CSV_HEADER);
		for (unsigned rep = 0; rep < repeat; rep++)
			for (unsigned s = 0; s < nsel; s++) {
				struct resize_arg a = {&tables[sel[s]], rkeys};
				if (in_child(buf, sizeof buf, (void (*)(int, void *))resize_fn,
					     &a) != 0) {
					fprintf(stderr, WHO ": %s resize run failed\n",
						tables[sel[s]].name);
					return 1;
				}
				bench_csv_printf(rsep ? &cr : &c, "%s", buf);
			}
		if (rsep)
			bench_csv_close(&cr);
	}
	bench_csv_close(&c);
	if (out)
		return bench_plot_dir(WHO, TSYNC_HASH_REPORT_PY, out);
	return 0;
}
