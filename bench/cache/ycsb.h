/*
 * bench/cache/ycsb.h - YCSB's key generators, bit for bit, for the in-process cache
 * studies (`tsync-bench cache`, ParSec (EuroSys 2016) §5.2; `tsync-bench rt-cache`,
 * RT-SMR (RTAS 2018) §VII-C): ScrambledZipfianGenerator (theta 0.99 over 10^10 items,
 * then FNV-1a-64 hashed modulo the record count) and the splitmix64 stream behind it.
 */
#ifndef TSYNC_BENCH_YCSB_H
#define TSYNC_BENCH_YCSB_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>

/* YCSB Utils.fnvhash64: FNV-1a over the 8 bytes of val, low byte first; Math.abs. */
static inline uint64_t fnvhash64(uint64_t val)
{
	int64_t h = (int64_t)0xCBF29CE484222325ull;
	for (int i = 0; i < 8; i++) {
		uint64_t octet = val & 0xff;
		val >>= 8;
		h ^= (int64_t)octet;
		h = (int64_t)((uint64_t)h * 1099511628211ull);
	}
	return h < 0 ? (uint64_t)(-(h + 1)) + 1 : (uint64_t)h;
}

/* YCSB ScrambledZipfianGenerator: ZipfianGenerator(0, 10^10, 0.99, zetan = 26.469...)
 * scrambled by fnvhash64 modulo the record count. */
struct zipf {
	double theta, zetan, alpha, eta, zeta2;
	uint64_t items, records;
	uint64_t rng;
};

static inline void zipf_init(struct zipf *z, uint64_t records, uint64_t seed)
{
	z->items = 10000000000ull; /* YCSB ScrambledZipfianGenerator.ITEM_COUNT */
	z->theta = 0.99;
	z->zetan = 26.46902820178302; /* YCSB's precomputed zeta(10^10, 0.99) */
	z->zeta2 = 1.0 + pow(0.5, z->theta);
	z->alpha = 1.0 / (1.0 - z->theta);
	z->eta = (1.0 - pow(2.0 / (double)z->items, 1.0 - z->theta)) / (1.0 - z->zeta2 / z->zetan);
	z->records = records;
	z->rng = seed;
}

static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline double unif(uint64_t *s)
{
	return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}

static inline uint64_t zipf_next(struct zipf *z)
{
	double u = unif(&z->rng);
	double uz = u * z->zetan;
	uint64_t v;
	if (uz < 1.0)
		v = 0;
	else if (uz < 1.0 + pow(0.5, z->theta))
		v = 1;
	else
		v = (uint64_t)((double)z->items * pow(z->eta * u - z->eta + 1.0, z->alpha));
	return fnvhash64(v) % z->records;
}

/* A request trace: n requests over `records` keys drawn by Zipf, each a set with
 * probability pct % (YCSB_SET_BIT set in the entry) or a get; the seeds depend on pct
 * only, so every study that asks for the same pct replays the same trace. malloc'd;
 * NULL when out of memory. */
#define YCSB_SET_BIT 0x80000000u
static inline uint32_t *ycsb_trace(size_t n, unsigned pct, uint64_t records)
{
	uint32_t *t = malloc(n * sizeof *t);
	if (!t)
		return NULL;
	struct zipf z;
	zipf_init(&z, records, 0x5eed0000ull + pct);
	uint64_t r = 0xc0ffee00ull + pct;
	for (size_t i = 0; i < n; i++) {
		uint32_t k = (uint32_t)zipf_next(&z);
		bool set = (splitmix(&r) % 100) < pct;
		t[i] = k | (set ? YCSB_SET_BIT : 0);
	}
	return t;
}

#endif /* TSYNC_BENCH_YCSB_H */
