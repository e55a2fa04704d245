/*
 * src/tdir.h - a module's per-thread records, found by thread id (not installed).
 *
 * Each instance that keeps state per thread (struct ps, ps_mem, rlu, mvrlu, ps_ns) owns
 * a directory: an array of tsync__chunk_count() pointers, each NULL until some thread
 * whose id falls in its range of TSYNC__CHUNK ids needs its record; then a chunk of
 * TSYNC__CHUNK records is allocated (cache-line aligned, zeroed, then passed to the
 * module's init) and published with a release CAS. A chunk is freed only when its
 * instance is destroyed, so a record pointer stays valid for the instance's life, and
 * a record is handed back at thread exit by the module's registry hook
 * (struct tsync__client in src/registry.h), not freed: the next thread given that id
 * reuses it.
 *
 * Lookup (tsync__tdir_at) is one acquire load plus an index: wait-free, and it never
 * allocates. tsync__tdir_get allocates on a thread's first use; it is the only call
 * here that can fail (NULL, errno = ENOMEM). Walks (tsync__tdir_next, tsync__tdir_each)
 * and tsync__tdir_free_chunks serve statistics and destroy paths.
 *
 * Included by thread.c (which defines the two functions declared here), ps.c,
 * ps_mem_types.h (ps_mem*.c), ps_ns.c, rlu.c and mvrlu.c. struct ps's directory is
 * one too, with its layout repeated in <tsync/ps.h> for the inline read path (ps.c
 * asserts that the two agree).
 */
#ifndef TSYNC_TDIR_H
#define TSYNC_TDIR_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>

#define TSYNC__CHUNK_SHIFT 6u
#define TSYNC__CHUNK (1u << TSYNC__CHUNK_SHIFT)

/* Number of chunk pointers a directory needs: the registry's capacity / TSYNC__CHUNK,
 * rounded up (src/thread.c). */
unsigned tsync__chunk_count(void);

/*
 * Return dir[idx], allocating it (chunk_bytes, aligned to a cache line, zeroed, then
 * init(chunk, arg) if init is non-NULL) and publishing it with a release CAS if it is
 * NULL. Returns NULL only if the allocation failed (errno = ENOMEM).
 */
void *tsync__chunk_get(void *_Atomic *dir, unsigned idx, size_t chunk_bytes,
		       void (*init)(void *chunk, void *arg), void *arg);

/* The record of thread tid in dir (records of rec_bytes each), or NULL if its chunk was
 * never allocated. rec_bytes is a sizeof at every call site, so this compiles to a load,
 * a test and an index. */
static inline void *tsync__tdir_at(void *_Atomic *dir, unsigned tid, size_t rec_bytes)
{
	char *c = atomic_load_explicit(&dir[tid >> TSYNC__CHUNK_SHIFT], memory_order_acquire);
	return c ? c + (size_t)(tid & (TSYNC__CHUNK - 1)) * rec_bytes : NULL;
}

/* The record of thread tid, allocating its chunk (init(chunk, arg) on the fresh chunk)
 * on first use. NULL only if that allocation failed (errno = ENOMEM). */
static inline void *tsync__tdir_get(void *_Atomic *dir, unsigned tid, size_t rec_bytes,
				    void (*init)(void *chunk, void *arg), void *arg)
{
	void *r = tsync__tdir_at(dir, tid, rec_bytes);
	if (__builtin_expect(r != NULL, 1))
		return r;
	char *c = tsync__chunk_get(dir, tid >> TSYNC__CHUNK_SHIFT, rec_bytes * TSYNC__CHUNK, init,
				   arg);
	return c ? c + (size_t)(tid & (TSYNC__CHUNK - 1)) * rec_bytes : NULL;
}

/* The first record of an allocated chunk of dir (nchunks entries) at or after position
 * *pos (a thread id; start at 0), or NULL at the end; *pos moves past the record
 * returned. For loops that visit every record without a callback (statistics, destroy
 * paths): the caller excludes concurrent allocation or tolerates missing a chunk being
 * published. */
static inline void *tsync__tdir_next(void *_Atomic *dir, unsigned nchunks, size_t rec_bytes,
				     unsigned *pos)
{
	while (*pos < nchunks * TSYNC__CHUNK) {
		unsigned ci = *pos >> TSYNC__CHUNK_SHIFT;
		char *c = atomic_load_explicit(&dir[ci], memory_order_acquire);
		if (c != NULL)
			return c + (size_t)((*pos)++ & (TSYNC__CHUNK - 1)) * rec_bytes;
		*pos = (ci + 1) << TSYNC__CHUNK_SHIFT; /* the whole chunk is absent */
	}
	return NULL;
}

/* Call fn(record, arg) for every record of every allocated chunk of dir (nchunks
 * entries), in thread-id order; same caveat as tsync__tdir_next. */
static inline void tsync__tdir_each(void *_Atomic *dir, unsigned nchunks, size_t rec_bytes,
				    void (*fn)(void *rec, void *arg), void *arg)
{
	unsigned pos = 0;
	for (void *r; (r = tsync__tdir_next(dir, nchunks, rec_bytes, &pos)) != NULL;)
		fn(r, arg);
}

/* Free every chunk of dir (nchunks entries; not dir itself): the instance's destroy,
 * when no thread uses it any more. */
static inline void tsync__tdir_free_chunks(void *_Atomic *dir, unsigned nchunks)
{
	for (unsigned ci = 0; ci < nchunks; ci++)
		free(atomic_load_explicit(&dir[ci], memory_order_relaxed));
}

#endif
