/*
 * src/ps_kmem.c - allocation by size: geometric size classes, each a ps_mem
 * (include/tsync/ps_kmem.h; Prudence (ASPLOS 2016) §4's kmalloc over slab caches).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/ps_kmem.h>
#include "ps_mem_types.h"
#include "util.h"

/* Sizes up to this many bytes find their class in one table load (ps_kmem_class_of). */
#define LOOKUP_MAX 8192u

struct ps_kmem {
	unsigned n;
	size_t lookup_max; /* sizes <= this use lookup[] */
	size_t size[PS_KMEM_MAX_CLASSES];
	struct ps_mem *mem[PS_KMEM_MAX_CLASSES];
	/* lookup[j]: the class of every size in (8(j - 1), 8j], for 8j <= lookup_max */
	unsigned char lookup[LOOKUP_MAX / 8 + 1];
};
_Static_assert(PS_KMEM_MAX_CLASSES <= 256, "lookup[] holds class numbers in a byte");

#define DEF_MIN 16u
#define DEF_MAX (64u * 1024u)
#define DEF_FACTOR 1.25
#define MAX_MAX ((size_t)1 << 30)
/* A class's object cache holds about this many bytes per thread (1 to 64 objects). */
#define CACHE_BYTES (64u * 1024u)
/* Objects up to this size share slabs (at least 8 per slab); larger ones get their own. */
#define SHARED_MAX 8192u
#define PAGE 4096u
/* ps_mem's per-object overhead and slab header, upper bounds for choosing slab sizes
 * (ps_mem_create checks that the objects fit). */
#define OBJ_HDR 32u
#define SLAB_HDR 128u

static int class_search(const struct ps_kmem *k, size_t size);

/* The ps_mem configuration of a class of `size`-byte objects. */
static struct ps_mem_config class_config(const struct ps_mem_config *tmpl, size_t size,
					 size_t cache_bytes)
{
	struct ps_mem_config mc = *tmpl;
	size_t align = tmpl->align ? tmpl->align : 16;
	size_t stride = tsync__round_up(OBJ_HDR + size, align);
	if (!tmpl->slab_size) {
		/* shared classes: ps_mem's rule from the class's object and cache sizes
		 * (<tsync/ps_mem.h>: a page multiple holding a refill, 4 to 64 KiB) */
		if (stride > SHARED_MAX) {
			mc.slab_size = tsync__round_up(
				(align > SLAB_HDR ? align : SLAB_HDR) + stride, PAGE);
		}
	}
	if (!tmpl->cache_size) {
		size_t cs = cache_bytes / stride;
		mc.cache_size = (unsigned)(cs < 1 ? 1 : cs > 64 ? 64 : cs);
	}
	if (!tmpl->slabs_kept)
		mc.slabs_kept = 1;
	return mc;
}

struct ps_kmem *ps_kmem_create(struct ps *ps, const struct ps_kmem_config *cfg)
{
	struct ps_kmem_config def = PS_KMEM_CONFIG_INIT, c = def;
	if (cfg) {
		if (cfg->size < sizeof(size_t) || cfg->size > 4096) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
		if (cfg->size < sizeof(c)) /* an older caller: the template's defaults */
			c.mem = def.mem;
	}
	size_t lo = c.min_size ? c.min_size : DEF_MIN;
	size_t hi = c.max_size ? c.max_size : DEF_MAX;
	double f = c.growth_factor != 0.0 ? c.growth_factor : DEF_FACTOR;
	size_t align = c.mem.align ? c.mem.align : 16;
	if (ps == NULL || lo > hi || hi > MAX_MAX || !(f > 1.0 && f <= 4.0) ||
	    c.mem.size < sizeof(size_t) || (align & (align - 1)) || c.cache_bytes > MAX_MAX ||
	    c.max_classes == 1 || c.max_classes > PS_KMEM_MAX_CLASSES) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_kmem *k = calloc(1, sizeof(*k));
	if (k == NULL)
		return NULL;
	/* memcached's sequence: grow by f (8-byte multiples) while a class is at most hi / f,
	 * then the largest class is hi itself */
	size_t sz = tsync__round_up(lo, 8);
	size_t cache_bytes = c.cache_bytes ? c.cache_bytes : CACHE_BYTES;
	unsigned maxc = c.max_classes ? c.max_classes : PS_KMEM_MAX_CLASSES;
	for (;;) {
		bool last = sz >= hi || sz > (size_t)((double)hi / f) || k->n == maxc - 1;
		if (last)
			sz = hi;
		struct ps_mem_config mc = class_config(&c.mem, sz, cache_bytes);
		k->mem[k->n] = ps_mem_create(ps, sz, &mc);
		if (k->mem[k->n] == NULL) {
			int e = errno;
			ps_kmem_destroy(k);
			errno = e;
			return NULL;
		}
		k->mem[k->n]->kmem = k;
		k->size[k->n++] = sz;
		if (last)
			break;
		size_t nx = tsync__round_up((size_t)((double)sz * f), 8);
		sz = nx > sz ? nx : sz + 8;
	}
	/* Every class but perhaps the last (max_size) is a multiple of 8, so all sizes in
	 * (8(j - 1), 8j] share the class of 8j - or of max_size, where 8j exceeds it. */
	k->lookup_max = hi < LOOKUP_MAX ? hi : LOOKUP_MAX; /* never above max_size */
	for (size_t j = 1; j <= (k->lookup_max + 7) / 8; j++)
		k->lookup[j] = (unsigned char)class_search(k, 8 * j < hi ? 8 * j : hi);
	return k;
}

void ps_kmem_destroy(struct ps_kmem *k)
{
	if (k == NULL)
		return;
	for (unsigned i = 0; i < k->n; i++)
		ps_mem_destroy(k->mem[i]);
	free(k);
}

/* ps_kmem_class_of's body, inline in ps_kmalloc: sizes up to lookup_max (which is at
 * most max_size) in one table load, 0 and sizes above max_size -1, the rest searched. */
static inline int class_of(const struct ps_kmem *k, size_t size)
{
	if (TSYNC_LIKELY(size - 1 < k->lookup_max)) /* 0 < size <= lookup_max */
		return k->lookup[(size + 7) / 8];
	if (size == 0 || size > k->size[k->n - 1])
		return -1;
	return class_search(k, size);
}

int ps_kmem_class_of(const struct ps_kmem *k, size_t size)
{
	return class_of(k, size);
}

/* The smallest class of at least size bytes, 0 < size <= max_size: a binary search. */
static int class_search(const struct ps_kmem *k, size_t size)
{
	unsigned lo = 0, hi = k->n - 1; /* the answer is in [lo, hi] */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (k->size[mid] >= size)
			hi = mid;
		else
			lo = mid + 1;
	}
	return (int)lo;
}

void *ps_kmalloc(struct ps_kmem *k, size_t size)
{
	int i = class_of(k, size);
	if (TSYNC_UNLIKELY(i < 0)) {
		errno = EINVAL;
		return NULL;
	}
	return ps_alloc(k->mem[i]);
}

/* obj's class, which must be one of k's: a pointer no ps_mem handed out, or an object
 * of another ps_kmem, aborts naming the call. Two loads past the header check: the
 * slab's ps_mem and that ps_mem's ps_kmem. */
static inline struct ps_mem *own_class(struct ps_kmem *k, void *obj, const char *call)
{
	if (TSYNC_UNLIKELY(!hdr_plausible(HDR(obj))))
		tsync__fatal("%s: %p was not allocated by a ps_kmem", call, obj);
	struct ps_mem *m = hdr_slab(HDR(obj))->m; /* ps_mem_of, inline */
	if (TSYNC_UNLIKELY(m->kmem != k))
		tsync__fatal("%s: %p does not belong to this ps_kmem", call, obj);
	return m;
}

void ps_kfree(struct ps_kmem *k, void *obj)
{
	if (obj != NULL)
		ps__free(own_class(k, obj, "ps_kfree"), obj, 0, "ps_kfree");
}

void ps_kfree_now(struct ps_kmem *k, void *obj)
{
	if (obj != NULL)
		ps_free_now(own_class(k, obj, "ps_kfree_now"), obj);
}

size_t ps_kmem_usable_size(const void *obj)
{
	return ps_mem_obj_size(ps_mem_of(obj));
}

unsigned ps_kmem_nclasses(const struct ps_kmem *k)
{
	return k->n;
}

size_t ps_kmem_class_size(const struct ps_kmem *k, unsigned i)
{
	return i < k->n ? k->size[i] : 0;
}

struct ps_mem *ps_kmem_class(struct ps_kmem *k, unsigned i)
{
	return i < k->n ? k->mem[i] : NULL;
}

static void max_into(uint64_t *a, uint64_t b)
{
	if (b > *a)
		*a = b;
}

int ps_kmem_stats(struct ps_kmem *k, struct ps_mem_stats *out)
{
	if (k == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->exact = 1;
	for (unsigned i = 0; i < k->n; i++) {
		struct ps_mem_stats s;
		ps_mem_stats(k->mem[i], &s);
		out->in_use += s.in_use;
		out->pending += s.pending;
		out->cached += s.cached;
		out->allocs += s.allocs;
		out->frees += s.frees;
		out->reclaimed += s.reclaimed;
		out->slabs += s.slabs;
		out->cache_refills += s.cache_refills;
		out->cache_flushes += s.cache_flushes;
		out->slab_grows += s.slab_grows;
		out->slab_shrinks += s.slab_shrinks;
		out->remote_frees += s.remote_frees;
		out->live += s.live;
		out->freed += s.freed;
		out->grace_refusals += s.grace_refusals;
		out->frees_now += s.frees_now;
		out->cache_misses += s.cache_misses;
		out->cache_hits += s.cache_hits;
		out->merge_hits += s.merge_hits;
		out->alloc_waits += s.alloc_waits;
		out->wait_timeouts += s.wait_timeouts;
		out->cache_churn += s.cache_churn;
		out->slab_churn += s.slab_churn;
		out->slab_bytes += s.slab_bytes;
		out->live_bytes += s.live_bytes;
		out->latent_slab += s.latent_slab;
		out->latent_cache += s.latent_cache;
		out->preflushed += s.preflushed;
		out->slab_premoves += s.slab_premoves;
		max_into(&out->peak_slabs, s.peak_slabs);
		max_into(&out->max_wait_ticks, s.max_wait_ticks);
		max_into(&out->peak_live, s.peak_live);
		max_into(&out->peak_pending, s.peak_pending);
		max_into(&out->peak_footprint, s.peak_footprint);
		out->exact &= s.exact;
	}
	return 0;
}

size_t ps_kmem_reclaim(struct ps_kmem *k)
{
	size_t n = 0;
	for (unsigned i = 0; i < k->n; i++)
		n += ps_mem_reclaim(k->mem[i]);
	return n;
}
