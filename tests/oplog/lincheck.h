/*
 * tests/oplog/lincheck.h - a small Wing & Gong linearizability checker (with Lowe's
 * memoisation of (linearized set, state) pairs) for short recorded histories.
 *
 * A history is up to LC_MAX_OPS completed operations, each with an invocation time and
 * a response time from tsync's clock, recorded by the thread that ran it:
 *   inv  = tsync_now_before_loads() before the call (the op's accesses come after it),
 *   resp = tsync_now_ordered() after the call (the op's stores are visible before it).
 * Operation a precedes b in real time only if tsync_clock_before(a.resp, b.inv), i.e.
 * a.resp + S < b.inv with the clock's skew bound S: timestamps from different CPUs are
 * compared with the same margin the library uses, so the checker never invents an order
 * the clocks cannot prove (it may miss a violation inside the margin, never report a
 * false one).
 *
 * The sequential specification is a step function over a fixed-size state: step(state,
 * op) applies op to state and returns whether the result op recorded is the one the
 * specification gives. lc_check() searches for a total order that respects real-time
 * precedence and makes every step succeed.
 */
#ifndef TSYNC_TEST_LINCHECK_H
#define TSYNC_TEST_LINCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/clock.h>

#define LC_MAX_OPS 32
#define LC_MAX_STATE 64
#define LC_MEMO_BITS 16

struct lc_op {
	uint64_t inv, resp; /* ticks */
	int thread;
	int kind;
	int64_t arg, arg2;
	int64_t ret;
};

struct lc_spec {
	size_t state_size; /* <= LC_MAX_STATE */
	bool (*step)(void *state, const struct lc_op *op);
};

struct lc_memo_ent {
	uint64_t key; /* mask ^ state hash, 0 = empty */
	uint64_t gen;
};

struct lc_ctx {
	const struct lc_spec *spec;
	const struct lc_op *ops;
	unsigned n;
	uint64_t prec[LC_MAX_OPS]; /* prec[i]: bit j set if op j must precede op i */
	struct lc_memo_ent *memo;
	uint64_t gen;
	uint64_t explored;
};

static inline uint64_t lc_hash(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

/* true if (mask, state) was seen before (and failed); records it otherwise. */
static inline bool lc_memo_seen(struct lc_ctx *c, uint64_t mask, const void *state)
{
	uint64_t key = lc_hash(state, c->spec->state_size, mask * 0x9e3779b97f4a7c15ull) | 1;
	size_t sz = (size_t)1 << LC_MEMO_BITS;
	for (size_t i = key & (sz - 1), probes = 0; probes < 64; i = (i + 1) & (sz - 1), probes++) {
		struct lc_memo_ent *e = &c->memo[i];
		if (e->gen != c->gen) {
			e->gen = c->gen;
			e->key = key;
			return false;
		}
		if (e->key == key)
			return true;
	}
	return false; /* table crowded: just search again */
}

static inline bool lc_search(struct lc_ctx *c, uint64_t done, const unsigned char *state)
{
	if (done == (c->n == 64 ? ~0ull : (1ull << c->n) - 1))
		return true;
	if (lc_memo_seen(c, done, state))
		return false;
	c->explored++;
	for (unsigned i = 0; i < c->n; i++) {
		if (done & (1ull << i))
			continue;
		if ((c->prec[i] & ~done) != 0)
			continue; /* some op that must precede i is not linearized yet */
		unsigned char next[LC_MAX_STATE];
		memcpy(next, state, c->spec->state_size);
		if (!c->spec->step(next, &c->ops[i]))
			continue;
		if (lc_search(c, done | (1ull << i), next))
			return true;
	}
	return false;
}

/*
 * lc_check: is the history ops[0..n) linearizable with respect to spec, starting from
 * init? n <= LC_MAX_OPS. Returns true if some order exists.
 */
static inline bool lc_check(const struct lc_spec *spec, const void *init, const struct lc_op *ops,
			    unsigned n)
{
	static struct lc_memo_ent *memo;
	static uint64_t gen;
	if (!memo)
		memo = calloc((size_t)1 << LC_MEMO_BITS, sizeof(*memo));
	if (!memo || n > LC_MAX_OPS || spec->state_size > LC_MAX_STATE)
		abort();
	struct lc_ctx c = {.spec = spec, .ops = ops, .n = n, .memo = memo, .gen = ++gen};
	for (unsigned i = 0; i < n; i++) {
		c.prec[i] = 0;
		for (unsigned j = 0; j < n; j++)
			if (j != i && tsync_clock_before(ops[j].resp, ops[i].inv))
				c.prec[i] |= 1ull << j;
	}
	unsigned char st[LC_MAX_STATE];
	memcpy(st, init, spec->state_size);
	return lc_search(&c, 0, st);
}

#endif /* TSYNC_TEST_LINCHECK_H */
