/*
 * bench/vmdb/ns_lookup.c - the cost of a namespace lookup against a bare radix-trie walk
 * (ParSec (EuroSys 2016) §3.6: lookups "bounded by the trie's height", no store to a
 * shared line). Part of `tsync-bench vmdb`, which runs it at every thread count of a
 * run that includes the ps design (rows with op lookup, pages 1):
 *
 *   ns-lookup   per lookup: ps_enter, ps_ns_lookup, a load of the object's field,
 *               ps_exit - what vmdb_lookup pays per namespace level it crosses
 *   ns-walk     ps_ns_lookup and the load, a batch of them inside one section: the walk
 *   bare-trie   the same walk over a plain radix trie that the bench builds with the
 *               same fanout (512), height and ids, holding the same objects: no section,
 *               no state words - the floor a namespace lookup is compared with
 *
 * NIDS ids of a 2^32-id namespace (4 levels) are bound, in 64 dense runs; every
 * thread looks up ids drawn at random from them, in batches of BATCH lookups timed
 * together; a row's avg_ns is the mean cost of one lookup, its p50/p99/p999_ns the
 * quantiles of the per-batch mean (the tail of single lookups is below the clock's
 * resolution). The designs are interleaved round by round; all threads of a round run
 * the same design at once (the lookups share every trie node; a store to one would be
 * a coherence miss for the others).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/clock.h>
#include <tsync/ps.h>
#include <tsync/ps_ns.h>

#include "common.h"
#include "hist.h"
#include "vmdb_bench.h"

#define NIDS (1u << 16)
#define REGIONS 64u
#define BATCH 1024u
#define SUB 16u /* histogram unit: 1/SUB tick */
#define BATCHES_PER_ROUND 512u
#define ID_BITS 32u
#define FANOUT_SHIFT 9u
#define HEIGHT ((ID_BITS + FANOUT_SHIFT - 1) / FANOUT_SHIFT)

enum { L_SECTION, L_WALK, L_BARE, NL };
static const char *const lname[NL] = {"ns-lookup", "ns-walk", "bare-trie"};

struct lobj {
	uint64_t id;
};

struct bare_node {
	void *slot[1u << FANOUT_SHIFT];
};

static struct {
	struct ps *ps;
	struct ps_ns *ns;
	struct bare_node *root;
	uint64_t ids[NIDS];
	unsigned threads;
	pthread_barrier_t bar;
	int cur; /* the design of this round, -1: exit */
	bool record;
	_Atomic uint64_t sink;
} L;

struct lworker {
	pthread_t t;
	uint64_t rng;
	uint64_t sum[NL], n[NL];
	struct hist h[NL];
	int err;
};

/* A zeroed node, page-aligned like the namespace's (so both walks see the same cache
 * and TLB geometry). */
static struct bare_node *bare_node_new(void)
{
	struct bare_node *n = aligned_alloc(4096, sizeof(struct bare_node));
	if (n)
		memset(n, 0, sizeof *n);
	return n;
}

static void *bare_lookup(uint64_t id)
{
	struct bare_node *n = L.root;
	for (unsigned l = HEIGHT - 1; l > 0; l--) {
		n = n->slot[(id >> (FANOUT_SHIFT * l)) & ((1u << FANOUT_SHIFT) - 1)];
		if (n == NULL)
			return NULL;
	}
	return n->slot[id & ((1u << FANOUT_SHIFT) - 1)];
}

static int bare_insert(uint64_t id, void *obj)
{
	struct bare_node *n = L.root;
	for (unsigned l = HEIGHT - 1; l > 0; l--) {
		void **s = &n->slot[(id >> (FANOUT_SHIFT * l)) & ((1u << FANOUT_SHIFT) - 1)];
		if (*s == NULL && (*s = bare_node_new()) == NULL)
			return -1;
		n = *s;
	}
	n->slot[id & ((1u << FANOUT_SHIFT) - 1)] = obj;
	return 0;
}

static void bare_free(struct bare_node *n, unsigned level)
{
	if (level > 0)
		for (unsigned i = 0; i < (1u << FANOUT_SHIFT); i++)
			if (n->slot[i])
				bare_free(n->slot[i], level - 1);
	free(n);
}

/* One batch of BATCH lookups of design d; returns the ticks it took, or 0 on a miss. */
static uint64_t batch(int d, uint64_t *rng)
{
	uint64_t idx[BATCH], acc = 0;
	for (unsigned i = 0; i < BATCH; i++)
		idx[i] = L.ids[bench_xorshift64s(rng) % NIDS];
	uint64_t t0 = tsync_now();
	switch (d) {
	case L_SECTION:
		for (unsigned i = 0; i < BATCH; i++) {
			ps_enter(L.ps);
			struct lobj *o = ps_ns_lookup(L.ns, idx[i]);
			acc += o ? o->id : UINT64_MAX;
			ps_exit(L.ps);
		}
		break;
	case L_WALK:
		ps_enter(L.ps);
		for (unsigned i = 0; i < BATCH; i++) {
			struct lobj *o = ps_ns_lookup(L.ns, idx[i]);
			acc += o ? o->id : UINT64_MAX;
		}
		ps_exit(L.ps);
		break;
	default:
		for (unsigned i = 0; i < BATCH; i++) {
			struct lobj *o = bare_lookup(idx[i]);
			acc += o ? o->id : UINT64_MAX;
		}
		break;
	}
	uint64_t t1 = tsync_now();
	uint64_t want = 0;
	for (unsigned i = 0; i < BATCH; i++)
		want += idx[i];
	atomic_fetch_add_explicit(&L.sink, acc, memory_order_relaxed);
	return acc == want ? (t1 - t0 ? t1 - t0 : 1) : 0;
}

static void *lworker_main(void *arg)
{
	struct lworker *w = arg;
	for (;;) {
		pthread_barrier_wait(&L.bar);
		int d = L.cur;
		if (d < 0)
			break;
		for (unsigned b = 0; b < BATCHES_PER_ROUND; b++) {
			uint64_t t = batch(d, &w->rng);
			if (t == 0) {
				w->err = 1;
				break;
			}
			if (L.record) {
				w->sum[d] += t;
				w->n[d] += BATCH;
				/* sixteenths of a tick per lookup: the batch mean's resolution */
				hist_add(&w->h[d], t * SUB / BATCH ? t * SUB / BATCH : 1);
			}
		}
		pthread_barrier_wait(&L.bar);
	}
	return NULL;
}

int ns_lookup_bench(unsigned threads, unsigned rounds, const char *backend, const char *layout,
		    FILE *const outs[2])
{
	int rc = 1;
	memset(&L, 0, sizeof L);
	L.threads = threads;
	struct ps_ns_config c = PS_NS_CONFIG_INIT;
	c.id_bits = ID_BITS;
	struct lobj **objs = calloc(NIDS, sizeof *objs);
	struct lworker *w = calloc(threads, sizeof *w);
	if (objs == NULL || w == NULL || (L.ps = ps_create(NULL)) == NULL ||
	    (L.ns = ps_ns_create(L.ps, sizeof(struct lobj), &c)) == NULL ||
	    (L.root = bare_node_new()) == NULL) {
		fprintf(stderr, "tsync-bench vmdb: ns lookup: out of memory\n");
		goto out;
	}
	/* NIDS ids in REGIONS dense runs at scattered bases, like the page numbers of an
	 * address space with that many mapped regions: the walks cross distinct interior
	 * nodes, and the trie (2 x REGIONS leaves) fits in the cache as a busy one would */
	for (uint64_t i = 0; i < NIDS; i++) {
		uint64_t r = i / (NIDS / REGIONS), j = i % (NIDS / REGIONS);
		uint64_t id = (((r + 1) * UINT64_C(0x9E3779B97F4A7C15)) >> 32) &
			      ~(uint64_t)(NIDS / REGIONS - 1);
		id = (id | j) & ((UINT64_C(1) << ID_BITS) - 1);
		struct lobj *o = ps_ns_alloc_at(L.ns, id);
		if (o == NULL) { /* a collision of the scattering: take the next free id */
			uint64_t got;
			if ((o = ps_ns_alloc(L.ns, &got)) == NULL)
				goto nomem;
			id = got;
		}
		o->id = id;
		ps_ns_publish(L.ns, o);
		objs[i] = o;
		L.ids[i] = id;
		if (bare_insert(id, o) != 0)
			goto nomem;
	}
	pthread_barrier_init(&L.bar, NULL, threads + 1);
	for (unsigned t = 0; t < threads; t++) {
		w[t].rng = 0x9E3779B97F4A7C15ull * (t + 1);
		if (pthread_create(&w[t].t, NULL, lworker_main, &w[t]) != 0) {
			fprintf(stderr, "tsync-bench vmdb: ns lookup: pthread_create failed\n");
			abort(); /* the barrier counts on every thread */
		}
	}
	/* one warm-up round of each, then `rounds` rounds, the order rotating */
	for (unsigned r = 0; r <= rounds; r++) {
		L.record = r > 0;
		for (int k = 0; k < NL; k++) {
			L.cur = (int)((r + (unsigned)k) % NL);
			pthread_barrier_wait(&L.bar);
			pthread_barrier_wait(&L.bar);
		}
	}
	L.cur = -1;
	pthread_barrier_wait(&L.bar);
	int err = 0;
	for (unsigned t = 0; t < threads; t++) {
		pthread_join(w[t].t, NULL);
		err |= w[t].err;
	}
	pthread_barrier_destroy(&L.bar);
	if (err) {
		fprintf(stderr,
			"tsync-bench vmdb: ns lookup: a lookup returned the wrong object\n");
		goto out;
	}
	double tpn = tsync_ticks_per_ns();
	for (int d = 0; d < NL; d++) {
		struct hist h;
		memset(&h, 0, sizeof h);
		uint64_t sum = 0, n = 0;
		for (unsigned t = 0; t < threads; t++) {
			hist_merge(&h, &w[t].h[d]);
			sum += w[t].sum[d];
			n += w[t].n[d];
		}
		for (int k = 0; k < 2; k++)
			if (outs[k]) {
				fprintf(outs[k],
					"%s,%s,%s,%u,lookup,1,%" PRIu64
					",%.1f,%.1f,%.1f,%.1f,%.1f\n",
					lname[d], backend, layout, threads, n,
					(double)sum / (double)n / tpn,
					(double)hist_quantile(&h, 0.5) / SUB / tpn,
					(double)hist_quantile(&h, 0.99) / SUB / tpn,
					(double)hist_quantile(&h, 0.999) / SUB / tpn,
					(double)hist_quantile(&h, 1.0) / SUB / tpn);
				fflush(outs[k]);
			}
	}
	rc = 0;
	goto out;
nomem:
	fprintf(stderr, "tsync-bench vmdb: ns lookup: out of memory\n");
out:
	if (L.ns) {
		for (unsigned i = 0; i < NIDS; i++)
			if (objs && objs[i])
				ps_ns_free(L.ns, objs[i]);
		ps_ns_destroy(L.ns);
	}
	if (L.root)
		bare_free(L.root, HEIGHT - 1);
	if (L.ps)
		ps_destroy(L.ps);
	free(objs);
	free(w);
	return rc;
}
