/* bench/hist.c - log-linear histogram: bucket bounds, merge, quantiles. */
#include "hist.h"

#include <math.h>

uint64_t hist_bucket_low(unsigned i)
{
	if (i < HIST_SUB)
		return i;
	unsigned e = i / HIST_SUB + HIST_SUB_BITS - 1u;
	return (uint64_t)(HIST_SUB + i % HIST_SUB) << (e - HIST_SUB_BITS);
}

uint64_t hist_bucket_width(unsigned i)
{
	if (i < HIST_SUB)
		return 1;
	return (uint64_t)1 << (i / HIST_SUB - 1u);
}

uint64_t hist_count(const struct hist *h)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		n += h->b[i];
	return n;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t n = hist_count(h);
	if (n == 0)
		return 0;
	uint64_t rank = (uint64_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank)
			return hist_bucket_low(i) + (hist_bucket_width(i) - 1u) / 2u;
	}
	return hist_bucket_low(HIST_BUCKETS - 1u);
}
