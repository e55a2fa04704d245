/*
 * bench/hist.h - a log-linear latency histogram (no allocation, O(1) insert).
 *
 * Values below 16 have a bucket each; above, every power of two [2^e, 2^(e+1)) is split
 * into 16 equal buckets, so a bucket's width is at most 1/16 of its lower bound (6.25%
 * relative precision) over the whole uint64_t range with 976 buckets (7.6 KiB).
 */
#ifndef TSYNC_BENCH_HIST_H
#define TSYNC_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 4u
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64u - HIST_SUB_BITS + 1u) * HIST_SUB)

struct hist {
	uint64_t b[HIST_BUCKETS];
};

static inline unsigned hist_bucket(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* e >= HIST_SUB_BITS */
	return (e - HIST_SUB_BITS + 1u) * HIST_SUB +
	       (unsigned)((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1u));
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->b[hist_bucket(v)]++;
}

/* Smallest value that falls into bucket i, and the bucket's width. */
uint64_t hist_bucket_low(unsigned i);
uint64_t hist_bucket_width(unsigned i);
/* Number of values recorded. */
uint64_t hist_count(const struct hist *h);
/* dst += src. */
void hist_merge(struct hist *dst, const struct hist *src);
/* The q-quantile (0 < q <= 1) as the midpoint of the bucket that holds the value of rank
 * ceil(q * count); 0 for an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);

#endif /* TSYNC_BENCH_HIST_H */
