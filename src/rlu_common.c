/*
 * src/rlu_common.c - the cold parts of what RLU and MV-RLU share (src/rlu_common.h):
 * instances, first-use allocation, statistics, objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rlu_common.h"

int tsync__rlu_config(void *c, const void *cfg, size_t bytes)
{
	if (cfg == NULL)
		return 0;
	if (*(const size_t *)cfg != bytes) {
		errno = EINVAL;
		return -1;
	}
	memcpy(c, cfg, bytes);
	return 0;
}

void *tsync__rlu_new(size_t bytes, size_t dir_off)
{
	size_t rounded = (bytes + TSYNC_CACHE_LINE - 1) & ~(size_t)(TSYNC_CACHE_LINE - 1);
	char *inst = aligned_alloc(TSYNC_CACHE_LINE, rounded);
	struct tsync__rlu_dir *dir = inst ? (struct tsync__rlu_dir *)(inst + dir_off) : NULL;
	if (dir) {
		memset(inst, 0, bytes);
		dir->nchunks = tsync__chunk_count();
		dir->chunks = calloc(dir->nchunks, sizeof(*dir->chunks));
		if (dir->chunks)
			return inst;
	}
	free(inst);
	errno = ENOMEM;
	return NULL;
}

void tsync__rlu_delete(void *inst, struct tsync__rlu_dir *dir)
{
	for (unsigned ci = 0; ci < dir->nchunks; ci++)
		free(atomic_load_explicit(&dir->chunks[ci], memory_order_acquire));
	free(dir->chunks);
	free(inst);
}

bool tsync__rlu_all_or_none(void **buf, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (buf[i] == NULL)
			goto fail;
	return true;
fail:
	for (unsigned i = 0; i < n; i++) {
		free(buf[i]);
		buf[i] = NULL;
	}
	errno = ENOMEM;
	return false;
}

int tsync__rlu_stats_copy(void *out, const void *st, size_t bytes)
{
	if (out == NULL || st == NULL) {
		errno = EINVAL;
		return -1;
	}
	memcpy(out, st, bytes);
	return 0;
}

struct stats_sum {
	size_t st_off, bytes;
	unsigned char *out;
};

/* Add one record's counters to the sum, word by word (memcpy: the structs are read as
 * what they are, arrays of uint64_t, without type punning). */
static void stats_add(void *rec, void *arg)
{
	const struct stats_sum *s = arg;
	const unsigned char *st = (const unsigned char *)rec + s->st_off;
	for (size_t k = 0; k < s->bytes; k += sizeof(uint64_t)) {
		uint64_t a, b;
		memcpy(&a, s->out + k, sizeof(a));
		memcpy(&b, st + k, sizeof(b));
		a += b;
		memcpy(s->out + k, &a, sizeof(a));
	}
}

int tsync__rlu_stats_sum(struct tsync__rlu_dir *dir, size_t rec_bytes, size_t st_off, void *out,
			 size_t bytes)
{
	if (dir == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	struct stats_sum s = {st_off, bytes, out};
	memset(out, 0, bytes);
	tsync__rlu_each(dir, rec_bytes, stats_add, &s);
	return 0;
}

void *tsync__rlu_obj_alloc(size_t size)
{
	void *h = calloc(1, TSYNC__RLU_ALIGN + size);
	if (h == NULL)
		errno = ENOMEM;
	return h;
}

void tsync__rlu_obj_release(void *obj, size_t size, bool poison)
{
	if (poison)
		memset(obj, 0xdb, size);
	free((char *)obj - TSYNC__RLU_ALIGN);
}
