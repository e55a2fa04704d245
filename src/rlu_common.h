/*
 * src/rlu_common.h - what RLU (src/rlu.c) and MV-RLU (src/mvrlu.c) share (not installed).
 *
 * The two differ in their algorithms - RLU (Matveev et al., SOSP 2015; the RLU study
 * (Appl. Sci. 2022) §3.2): one global clock, a writer waits for older sections and writes
 * its copies back; MV-RLU (Kim et al., ASPLOS 2019; the RLU study §3.3): version chains,
 * clock-ordered commits, concurrent log reclamation - and those stay in their files. What
 * is the same is the frame around them:
 *
 *   - an instance: a zeroed, cache-line aligned struct whose per-thread records live in a
 *     directory (src/tdir.h), created from a versioned config struct (first member: its
 *     size) and freed with every chunk of records;
 *   - a thread's record: found by its registry id, its chunk allocated on first use, its
 *     logs allocated (all or none) the first time the thread uses the instance;
 *   - statistics: each record holds a struct of uint64_t counters (struct rlu_stats,
 *     struct mvrlu_stats), copied for one thread or summed word by word over all records;
 *   - objects: [16-byte header][data], the header's first word an atomic pointer that is
 *     TSYNC__RLU_IS_COPY in the header of a copy (a version), so a copy is told from an
 *     object without knowing the module's layout; freed objects may be poisoned;
 *   - a write set's clock word: TSYNC__RLU_INF while its section runs, TSYNC__RLU_COMMITTING
 *     for the few instructions in which its commit takes a clock, then the commit clock;
 *     a reader that meets COMMITTING spins until the clock is published.
 */
#ifndef TSYNC_RLU_COMMON_H
#define TSYNC_RLU_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <tsync/arch.h>
#include <tsync/thread.h>

#include "tdir.h"

#define TSYNC__RLU_INF UINT64_MAX
#define TSYNC__RLU_COMMITTING (UINT64_MAX - 1)
#define TSYNC__RLU_ALIGN 16u /* object header bytes; alignment of data in the logs */
#define TSYNC__RLU_IS_COPY ((void *)(uintptr_t)1)

/* An instance's per-thread records (src/tdir.h). */
struct tsync__rlu_dir {
	void *_Atomic *chunks;
	unsigned nchunks;
};

/*
 * Take the caller's config: *c (bytes long, holding the defaults) := *cfg if cfg is
 * non-NULL. Both config structs start with `size_t size` = their sizeof. Returns 0, or -1
 * with errno = EINVAL if cfg->size != bytes.
 */
int tsync__rlu_config(void *c, const void *cfg, size_t bytes);

/* A zeroed, cache-line aligned instance of `bytes` whose directory (the struct
 * tsync__rlu_dir at offset dir_off) is allocated. NULL with errno = ENOMEM. */
void *tsync__rlu_new(size_t bytes, size_t dir_off);

/* Free every chunk of records of dir, the directory, then the instance inst. The caller
 * has released what the records point to (tsync__rlu_each). */
void tsync__rlu_delete(void *inst, struct tsync__rlu_dir *dir);

/* The record of thread tid, or NULL if its chunk was never allocated. Wait-free: one
 * acquire load (rec_bytes is a sizeof at every call site). */
static inline void *tsync__rlu_at(struct tsync__rlu_dir *dir, unsigned tid, size_t rec_bytes)
{
	return tsync__tdir_at(dir->chunks, tid, rec_bytes);
}

/*
 * The calling thread's record: registers the thread, allocates the chunk of its record
 * (chunk_init(chunk, arg) on the fresh chunk) on first use, and, the first time the record
 * serves a thread (its bool at inited_off is false), runs first_use(record) (the module's
 * log allocation, with tsync__rlu_all_or_none) and then sets that flag. NULL with errno =
 * EAGAIN (registry full) or ENOMEM (chunk or first_use). Wait-free after the first call:
 * a thread-local load, an acquire load, a test.
 */
static inline void *tsync__rlu_thread(struct tsync__rlu_dir *dir, size_t rec_bytes,
				      size_t inited_off, int (*first_use)(void *rec),
				      void (*chunk_init)(void *chunk, void *arg), void *arg)
{
	int id = tsync_thread_id();
	if (id < 0)
		return NULL;
	char *t = tsync__tdir_get(dir->chunks, (unsigned)id, rec_bytes, chunk_init, arg);
	if (TSYNC_UNLIKELY(t != NULL && !*(bool *)(t + inited_off))) {
		if (first_use(t) != 0)
			return NULL;
		*(bool *)(t + inited_off) = true;
	}
	return t;
}
#define TSYNC__RLU_THREAD(dir, rec_type, inited, first_use, chunk_init, arg)                \
	((rec_type *)tsync__rlu_thread((dir), sizeof(rec_type), offsetof(rec_type, inited), \
				       (first_use), (chunk_init), (arg)))

/* A record's first-use allocations buf[0..n-1], all or none: true if none is NULL; else
 * every one is freed and set to NULL, errno = ENOMEM, false. */
bool tsync__rlu_all_or_none(void **buf, unsigned n);

/* fn(record, arg) for every record of every allocated chunk (destroy paths). */
static inline void tsync__rlu_each(struct tsync__rlu_dir *dir, size_t rec_bytes,
				   void (*fn)(void *rec, void *arg), void *arg)
{
	tsync__tdir_each(dir->chunks, dir->nchunks, rec_bytes, fn, arg);
}

/* *out := *st (one thread's counters, bytes long). 0, or -1 with errno = EINVAL if out or
 * st is NULL. */
int tsync__rlu_stats_copy(void *out, const void *st, size_t bytes);

/*
 * out := the sum over every record of dir (rec_bytes each) of its counters at offset
 * st_off, a struct of bytes / 8 uint64_t. Approximate while threads run (each word is
 * read once, racily: the owner updates it with plain stores). 0, or -1 with errno =
 * EINVAL if dir or out is NULL.
 */
int tsync__rlu_stats_sum(struct tsync__rlu_dir *dir, size_t rec_bytes, size_t st_off, void *out,
			 size_t bytes);
#define TSYNC__RLU_STATS_SUM(dir, rec_type, member, out)                                 \
	tsync__rlu_stats_sum((dir), sizeof(rec_type), offsetof(rec_type, member), (out), \
			     sizeof(((rec_type *)0)->member))

/* A new object of size bytes (zeroed) after a zeroed TSYNC__RLU_ALIGN-byte header: the
 * header, NULL with errno = ENOMEM. The caller records the size in its header. */
void *tsync__rlu_obj_alloc(size_t size);

/* Give an object back to malloc (its header precedes it); fill its size data bytes with
 * 0xdb first if poison (tests). */
void tsync__rlu_obj_release(void *obj, size_t size, bool poison);

/* Is a (not NULL) a copy - a write-log copy (RLU) or a version (MV-RLU) - rather than an
 * object? A copy's own header holds TSYNC__RLU_IS_COPY in its first word. */
static inline bool tsync__rlu_is_copy(void *a)
{
	return atomic_load_explicit((void *_Atomic *)(void *)((char *)a - TSYNC__RLU_ALIGN),
				    memory_order_relaxed) == TSYNC__RLU_IS_COPY;
}

/* The object a denotes: a itself, or, if a is a copy, its original, whose address the
 * module stores `back` bytes before the copy's data (a may be NULL). Wait-free. */
static inline void *tsync__rlu_actual(void *a, size_t back)
{
	if (a && tsync__rlu_is_copy(a))
		return *(void **)(void *)((char *)a - back);
	return a;
}

/* The clock of the write set whose clock word is *wclk, waiting out COMMITTING (a window
 * of a few instructions in the committer: a pure spin, as before). Acquire. */
static inline uint64_t tsync__rlu_commit_clock(_Atomic uint64_t *wclk)
{
	uint64_t w = atomic_load_explicit(wclk, memory_order_acquire);
	while (TSYNC_UNLIKELY(w == TSYNC__RLU_COMMITTING)) {
		tsync_arch_relax();
		w = atomic_load_explicit(wclk, memory_order_acquire);
	}
	return w;
}

#endif
