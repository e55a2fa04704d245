/*
 * src/rlu.c - Read-Log-Update (RLU study (Appl. Sci. 2022) §3.2; Matveev et al., SOSP 2015).
 *
 * Layout. An object is [struct rlu_hdr][data]; hdr.copy is NULL (unlocked), or the data
 * pointer of the copy that locks it, or RLU_IS_COPY in the header of a copy. A copy lives
 * in its owner's write log as [struct rlu_meta][struct rlu_hdr][data].
 *
 * Clocks. g_clock counts commits. A write set's clock word (ws_clock[gen][ws]) is INF
 * while the section runs, COMMITTING for the two instructions in which the commit takes
 * its clock, then the commit clock v, then INF again after write-back. Readers that
 * find COMMITTING wait for v (see rlu_deref): without that state a reader whose local
 * clock equals a concurrent committer's clock could see one of its copies before the
 * clock word is stored and another after (a torn commit).
 *
 * Generations. Each thread has two logs and two rows of clock words; a sync writes back
 * and unlocks generation g, then starts writing generation g ^ 1. A reader may still be
 * reading a copy of g (it loaded hdr.copy before the unlock); g is reused only after
 * the *next* sync, which waits for that reader (it began before the next commit).
 *
 * Aborts. An aborted section's entries were published (its CAS) and a section that
 * loaded hdr.copy before the abort's unlock may still read their meta; so an abort
 * does not rewind log_used: the entries stay, marked dead (skipped by write-back and
 * unlock), until the log is recycled like any other (after the next sync that has a
 * commit later than the abort), or, when the log fills with dead entries and no
 * write set is pending, after a plain grace period (reclaim_dead).
 * docs/rlu.md gives the full argument. What RLU shares with MV-RLU (instance, thread
 * records, statistics, object headers) is in src/rlu_common.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/clock.h>
#include <tsync/rlu.h>
#include <tsync/thread.h>

#include "registry.h"
#include "rlu_common.h"
#include "tdir.h"
#include "util.h"
#include "wait.h"

#define INF TSYNC__RLU_INF
#define COMMITTING TSYNC__RLU_COMMITTING
#define RLU_IS_COPY TSYNC__RLU_IS_COPY
#define ALIGN TSYNC__RLU_ALIGN
#define DEFAULT_LOG (64u * 1024u)
#define FREES_INIT 64u /* first capacity of a thread's free list (doubles when full) */

struct rlu_hdr {
	_Atomic(void *) copy;
	uint64_t size; /* data bytes (objects from rlu_alloc; for poisoning) */
};
_Static_assert(sizeof(struct rlu_hdr) == ALIGN, "header keeps data 16-byte aligned");
_Static_assert(offsetof(struct rlu_hdr, copy) == 0, "tsync__rlu_is_copy reads the first word");
_Static_assert(sizeof(struct rlu_stats) % sizeof(uint64_t) == 0, "rlu_stats sums uint64_t words");

struct rlu_meta {
	struct rlu_thread *owner;
	void *actual;           /* the original object's data */
	_Atomic uint64_t *wclk; /* the write set's clock word */
	uint32_t size;          /* data bytes */
	uint16_t ws;            /* write set index within the generation */
	uint8_t gen;            /* generation (log) index */
	uint8_t flags;          /* M_CONST, M_DEAD; owner only (readers never read it) */
};
#define M_CONST 1u /* locked with rlu_try_lock_const: not written back */
#define M_DEAD 2u  /* from an aborted section: neither written back nor unlocked */
_Static_assert(sizeof(struct rlu_meta) % ALIGN == 0, "meta keeps data aligned");

#define RHDR(p) ((struct rlu_hdr *)((char *)(p) - sizeof(struct rlu_hdr)))
#define RMETA(p) \
	((struct rlu_meta *)((char *)(p) - sizeof(struct rlu_hdr) - sizeof(struct rlu_meta)))
/* From a copy's data back to its meta's `actual` (tsync__rlu_actual). */
#define ACTUAL_BACK \
	(sizeof(struct rlu_meta) + sizeof(struct rlu_hdr) - offsetof(struct rlu_meta, actual))
#define ENTRY_BYTES(sz) \
	(sizeof(struct rlu_meta) + sizeof(struct rlu_hdr) + tsync__round_up((sz), ALIGN))

struct rlu_free_ent {
	void *obj;
};

struct rlu_thread {
	/* first: rlu.h's inline rlu_deref reads it through a struct rlu__thread_head * */
	_Alignas(TSYNC_CACHE_LINE) struct rlu__thread_head head; /* owner only */
	/* read by other threads */
	_Atomic uint64_t run_counter; /* odd inside a section */
	_Atomic uint64_t local_clock;
	_Atomic int sync_request;
	/* owner only, except ws_clock (read by stealers) */
	_Alignas(TSYNC_CACHE_LINE) struct rlu *r;
	bool inited, is_writer, need_sync;
	uint8_t gen;
	unsigned ws_cur;           /* write sets committed (and pending) in this generation */
	size_t log_used, ws_start; /* bytes used in log[gen]; start of the current set */
	char *log[2];
	struct rlu_free_ent *frees;
	size_t nfrees, frees_cap, frees_ws_start;
	uint64_t local;  /* copy of local_clock */
	unsigned streak; /* consecutive aborts (backoff) */
	struct rlu_stats st;
	_Atomic uint64_t ws_clock[2][RLU_MAX_WRITE_SETS];
};

struct rlu {
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t g_clock;
	/* Committed write sets not yet written back and unlocked (sync_now). Same line as
	 * g_clock: a commit writes both, rlu_reader_lock reads both. */
	_Atomic uint64_t g_unsynced;
	_Alignas(TSYNC_CACHE_LINE) struct tsync__client client;
	struct tsync__rlu_dir dir;
	unsigned max_ws;
	size_t log_bytes;
	bool poison;
};

static void sync_now(struct rlu_thread *self);

static void rlu_chunk_init(void *chunk, void *arg)
{
	struct rlu_thread *t = chunk;
	for (unsigned i = 0; i < TSYNC__CHUNK; i++) {
		t[i].r = arg;
		for (unsigned g = 0; g < 2; g++)
			for (unsigned w = 0; w < RLU_MAX_WRITE_SETS; w++)
				atomic_init(&t[i].ws_clock[g][w], INF);
	}
}

static struct rlu_thread *rlu_thread_at(struct rlu *r, unsigned tid)
{
	return tsync__rlu_at(&r->dir, tid, sizeof(struct rlu_thread));
}

static void thread_exit_hook(struct tsync__client *c, unsigned tid)
{
	struct rlu *r = (struct rlu *)((char *)c - offsetof(struct rlu, client));
	struct rlu_thread *t = rlu_thread_at(r, tid);
	if (t && t->inited && t->ws_cur > 0)
		sync_now(t);
}

struct rlu *rlu_create(const struct rlu_config *cfg)
{
	struct rlu_config c = RLU_CONFIG_INIT;
	if (tsync__rlu_config(&c, cfg, sizeof(c)) != 0)
		return NULL;
	if (c.max_write_sets == 0)
		c.max_write_sets = 1;
	if (c.log_bytes == 0)
		c.log_bytes = DEFAULT_LOG;
	if (c.max_write_sets > RLU_MAX_WRITE_SETS || c.log_bytes < 1024 ||
	    c.log_bytes > (1u << 30)) {
		errno = EINVAL;
		return NULL;
	}
	struct rlu *r = tsync__rlu_new(sizeof(*r), offsetof(struct rlu, dir));
	if (!r)
		return NULL;
	atomic_init(&r->g_clock, 0);
	r->max_ws = c.max_write_sets;
	r->log_bytes = tsync__round_up(c.log_bytes, ALIGN);
	r->poison = c.poison_on_free;
	r->client.thread_exit = thread_exit_hook;
	tsync__client_add(&r->client);
	return r;
}

static void rlu_release_obj(struct rlu *r, void *obj)
{
	tsync__rlu_obj_release(obj, RHDR(obj)->size, r->poison);
}

/* Teardown of one record: write back its deferred write sets, free its logs. */
static void rlu_destroy_thread(void *rec, void *arg)
{
	struct rlu_thread *t = rec;
	(void)arg;
	if (!t->inited)
		return;
	if (t->ws_cur > 0)
		sync_now(t);
	free(t->log[0]);
	free(t->log[1]);
	free(t->frees);
}

void rlu_destroy(struct rlu *r)
{
	if (!r)
		return;
	tsync__client_remove(&r->client);
	tsync__rlu_each(&r->dir, sizeof(struct rlu_thread), rlu_destroy_thread, NULL);
	tsync__rlu_delete(r, &r->dir);
}

/* A thread's first use of r: its two logs and its free list. */
static int rlu_thread_first_use(void *rec)
{
	struct rlu_thread *t = rec;
	void *buf[3] = {aligned_alloc(ALIGN, t->r->log_bytes),
			aligned_alloc(ALIGN, t->r->log_bytes),
			malloc(FREES_INIT * sizeof(*t->frees))};
	if (!tsync__rlu_all_or_none(buf, 3))
		return -1;
	t->log[0] = buf[0];
	t->log[1] = buf[1];
	t->frees = buf[2];
	t->frees_cap = FREES_INIT;
	return 0;
}

struct rlu_thread *rlu_thread_get(struct rlu *r)
{
	return TSYNC__RLU_THREAD(&r->dir, struct rlu_thread, inited, rlu_thread_first_use,
				 rlu_chunk_init, r);
}

/* ---- the grace period, write-back, unlock ---- */

/* Wait until every other thread that is inside a section begun with a local clock
 * < wc has left it. Reader: run_counter++ (odd); seq_cst fence; load g_clock. Writer:
 * COMMITTING store and g_clock increment (seq_cst), then load run_counter. Either we
 * see the odd counter, or the reader's g_clock load follows our increment and its
 * local clock is >= wc (it steals our copies and needs no waiting). */
static void wait_for_readers(struct rlu_thread *self, uint64_t wc)
{
	struct rlu *r = self->r;
	unsigned hw = tsync_thread_high_water();
	for (unsigned j = 0; j < hw; j++) {
		struct rlu_thread *t = rlu_thread_at(r, j);
		if (!t || t == self)
			continue;
		uint64_t rc = atomic_load_explicit(&t->run_counter, memory_order_acquire);
		if (!(rc & 1))
			continue;
		/* The clock may be that of a later section of t (t ended the section we saw
		 * and began another between our two loads): skip only if the section is
		 * still the same one; if it ended, the loop below sees the change at once
		 * and its acquire load orders that section's reads before our write-back
		 * and frees (without it they would race: the skip alone is no
		 * happens-before edge). */
		if (atomic_load_explicit(&t->local_clock, memory_order_acquire) >= wc &&
		    atomic_load_explicit(&t->run_counter, memory_order_acquire) == rc)
			continue;
		/* A stale local clock (the store of the new one not yet seen) is older than
		 * any commit after that section's previous start: we only wait longer. */
		tsync__wait_until(atomic_load_explicit(&t->run_counter, memory_order_acquire) != rc,
				  TSYNC__SPIN_HANDOFF);
	}
}

static void sync_now(struct rlu_thread *self)
{
	struct rlu *r = self->r;
	unsigned g = self->gen;
	self->need_sync = false;
	atomic_store_explicit(&self->sync_request, 0, memory_order_relaxed);
	if (self->ws_cur == 0)
		return;
	uint64_t wc =
		atomic_load_explicit(&self->ws_clock[g][self->ws_cur - 1], memory_order_relaxed);
	wait_for_readers(self, wc);
	/* Write back in log order (an object appears once per generation). */
	char *p = self->log[g], *end = p + self->log_used;
	for (; p < end;) {
		struct rlu_meta *m = (struct rlu_meta *)p;
		void *data = p + sizeof(struct rlu_meta) + sizeof(struct rlu_hdr);
		if (!(m->flags & (M_CONST | M_DEAD))) {
			memcpy(m->actual, data, m->size);
			self->st.writebacks++;
		}
		p += ENTRY_BYTES(m->size);
	}
	/* Unlock: readers that now load NULL read the original, written back above. */
	for (p = self->log[g]; p < end;) {
		struct rlu_meta *m = (struct rlu_meta *)p;
		if (!(m->flags & M_DEAD)) /* a dead entry's object may be another's now */
			atomic_store_explicit(&RHDR(m->actual)->copy, NULL, memory_order_release);
		p += ENTRY_BYTES(m->size);
	}
	/* Readers that loaded a copy pointer before the unlock now find INF and read the
	 * original; the copies (and the dead entries of aborted sections, which readers
	 * may likewise still inspect) stay intact until generation g is reused after the
	 * next sync (which waits for those readers: its commit follows this unlock and
	 * every abort in g). */
	for (unsigned w = 0; w < self->ws_cur; w++)
		atomic_store_explicit(&self->ws_clock[g][w], INF, memory_order_release);
	/* release: a section that reads the count after this (rlu_reader_lock) reads the
	 * originals without looking at their headers and must see the write-back */
	atomic_fetch_sub_explicit(&r->g_unsynced, self->ws_cur, memory_order_release);
	for (size_t i = 0; i < self->nfrees; i++)
		rlu_release_obj(r, self->frees[i].obj);
	self->st.frees += self->nfrees;
	self->st.syncs++;
	self->nfrees = self->frees_ws_start = 0;
	self->ws_cur = 0;
	self->log_used = self->ws_start = 0;
	self->gen = (uint8_t)(g ^ 1u);
}

/* The log holds only dead entries (no write set pending) and is full: recycle it in
 * place. A section that loaded hdr.copy of one of them before the abort's unlock may
 * still read its meta; wait for every section now running (not only those with an old
 * local clock: without a commit since the abort the clocks say nothing). Dekker as in
 * wait_for_readers, with our unlock stores and this fence on the writer's side. */
static void reclaim_dead(struct rlu_thread *self)
{
	atomic_thread_fence(memory_order_seq_cst);
	wait_for_readers(self, INF);
	self->log_used = self->ws_start = 0;
	self->st.syncs++;
}

void rlu_flush(struct rlu_thread *self)
{
	sync_now(self);
}

/* ---- sections ---- */

void rlu_reader_lock(struct rlu_thread *self)
{
	if (TSYNC_UNLIKELY(atomic_load_explicit(&self->sync_request, memory_order_relaxed)))
		sync_now(self);
	uint64_t rc = atomic_load_explicit(&self->run_counter, memory_order_relaxed);
	/* release: a writer that reads this odd value has seen the previous section end
	 * (wait_for_readers relies on it, not on C11's same-thread release sequences) */
	atomic_store_explicit(&self->run_counter, rc + 1, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	uint64_t l = atomic_load_explicit(&self->r->g_clock, memory_order_seq_cst);
	self->local = l;
	atomic_store_explicit(&self->local_clock, l, memory_order_relaxed);
	/* No committed write set awaits write-back: every commit this section could steal
	 * from takes its clock after our load of g_clock (its increment of g_unsynced
	 * precedes its clock in the seq_cst order), so rlu_deref may return originals
	 * without checking; and a count that returned to 0 was decremented (release) after
	 * the write-back, which the load therefore sees. */
	self->head.deref_fast =
		atomic_load_explicit(&self->r->g_unsynced, memory_order_seq_cst) == 0;
	self->is_writer = false;
	self->st.sections++;
}

static void rlu_end_section(struct rlu_thread *self)
{
	uint64_t rc = atomic_load_explicit(&self->run_counter, memory_order_relaxed);
	atomic_store_explicit(&self->run_counter, rc + 1, memory_order_release);
}

void rlu_reader_unlock(struct rlu_thread *self)
{
	rlu_end_section(self);
	if (!self->is_writer) {
		if (TSYNC_UNLIKELY(self->ws_cur > 0 &&
				   atomic_load_explicit(&self->sync_request, memory_order_relaxed)))
			sync_now(self);
		return;
	}
	struct rlu *r = self->r;
	_Atomic uint64_t *wclk = &self->ws_clock[self->gen][self->ws_cur];
	/* Commit: count the write set as unsynced, COMMITTING (seq_cst), then take the
	 * clock, then publish it. */
	atomic_fetch_add_explicit(&r->g_unsynced, 1, memory_order_seq_cst);
	atomic_store_explicit(wclk, COMMITTING, memory_order_seq_cst);
	uint64_t v = atomic_fetch_add_explicit(&r->g_clock, 1, memory_order_seq_cst) + 1;
	atomic_store_explicit(wclk, v, memory_order_release);
	self->is_writer = false;
	self->streak = 0;
	self->st.commits++;
	self->ws_cur++;
	self->ws_start = self->log_used;
	self->frees_ws_start = self->nfrees;
	if (self->ws_cur >= r->max_ws || self->need_sync || self->log_used > r->log_bytes / 2 ||
	    atomic_load_explicit(&self->sync_request, memory_order_relaxed))
		sync_now(self);
}

void rlu_abort(struct rlu_thread *self)
{
	/* Unlock this section's copies. Nobody used their data (the clock word is INF),
	 * but a section that loaded hdr.copy before this unlock may still be reading
	 * their meta (owner, wclk): the entries stay, dead, and log_used is not rewound
	 * (writing the next section's entries over them would race with that read, and
	 * with other sizes would make it read copy data as a meta). */
	char *p = self->log[self->gen] + self->ws_start,
	     *end = self->log[self->gen] + self->log_used;
	for (; p < end;) {
		struct rlu_meta *m = (struct rlu_meta *)p;
		m->flags |= M_DEAD;
		atomic_store_explicit(&RHDR(m->actual)->copy, NULL, memory_order_release);
		p += ENTRY_BYTES(m->size);
	}
	self->ws_start = self->log_used;
	self->nfrees = self->frees_ws_start;
	self->is_writer = false;
	self->st.aborts++;
	rlu_end_section(self);
	if (self->ws_cur > 0) {
		if (self->need_sync ||
		    atomic_load_explicit(&self->sync_request, memory_order_relaxed))
			sync_now(self);
	} else if (self->need_sync && self->log_used > 0) {
		reclaim_dead(self); /* the log is full of dead entries */
	}
	self->need_sync = false;
	/* Back off: the holder of the lock we hit is usually waiting for a grace period;
	 * retrying at once only burns the CPU it may need (threads > cores). */
	tsync__backoff(++self->streak);
}

/* ---- objects ---- */

void *rlu__deref_slow(struct rlu_thread *self, void *obj)
{
	if (!obj)
		return NULL;
	void *c = atomic_load_explicit(&RHDR(obj)->copy, memory_order_acquire);
	if (TSYNC_LIKELY(c == NULL) || c == RLU_IS_COPY)
		return obj;
	struct rlu_meta *m = RMETA(c);
	if (m->owner == self)
		return c;
	return tsync__rlu_commit_clock(m->wclk) <= self->local ? c : obj;
}

void *rlu_actual(void *a)
{
	return tsync__rlu_actual(a, ACTUAL_BACK);
}

bool rlu_cmp_objs(const void *a, const void *b)
{
	return tsync__rlu_actual((void *)a, ACTUAL_BACK) ==
	       tsync__rlu_actual((void *)b, ACTUAL_BACK);
}

static bool rlu_lock_common(struct rlu_thread *self, void **pobj, size_t size, bool is_const)
{
	void *obj = *pobj;
	void *c = atomic_load_explicit(&RHDR(obj)->copy, memory_order_acquire);
	if (c == RLU_IS_COPY) {
		obj = RMETA(obj)->actual;
		c = atomic_load_explicit(&RHDR(obj)->copy, memory_order_acquire);
	}
	if (c != NULL) {
		struct rlu_meta *m = RMETA(c);
		if (m->owner == self) {
			if (m->gen == self->gen && m->ws == self->ws_cur) {
				if (!is_const)
					m->flags &= (uint8_t)~M_CONST;
				*pobj = c;
				return true;
			}
			self->need_sync = true; /* held from an earlier deferred write set */
			return false;
		}
		/* Held by another thread: ask it to synchronize if it is deferring. */
		if (!atomic_load_explicit(&m->owner->sync_request, memory_order_relaxed)) {
			atomic_store_explicit(&m->owner->sync_request, 1, memory_order_relaxed);
			self->st.sync_requests++;
		}
		return false;
	}
	struct rlu *r = self->r;
	size_t need = ENTRY_BYTES(size);
	if (self->log_used + need > r->log_bytes) {
		if (self->ws_start == 0) {
			errno = ENOSPC;
			return false;
		}
		self->need_sync = true;
		return false;
	}
	char *p = self->log[self->gen] + self->log_used;
	struct rlu_meta *m = (struct rlu_meta *)p;
	struct rlu_hdr *h = (struct rlu_hdr *)(p + sizeof(*m));
	void *data = h + 1;
	m->owner = self;
	m->actual = obj;
	m->wclk = &self->ws_clock[self->gen][self->ws_cur];
	m->size = (uint32_t)size;
	m->ws = (uint16_t)self->ws_cur;
	m->gen = self->gen;
	m->flags = is_const ? M_CONST : 0;
	atomic_store_explicit(&h->copy, RLU_IS_COPY, memory_order_relaxed);
	h->size = size;
	void *expect = NULL;
	/* acq_rel: publishes the meta above; acquires the previous holder's write-back. */
	if (!atomic_compare_exchange_strong_explicit(&RHDR(obj)->copy, &expect, data,
						     memory_order_acq_rel, memory_order_acquire))
		return false;
	memcpy(data, obj, size);
	self->log_used += need;
	self->is_writer = true;
	self->head.deref_fast = false; /* from now on derefs look for our own copies */
	*pobj = data;
	return true;
}

bool rlu_try_lock(struct rlu_thread *self, void **pobj, size_t size)
{
	return rlu_lock_common(self, pobj, size, false);
}

bool rlu_try_lock_const(struct rlu_thread *self, void **pobj, size_t size)
{
	return rlu_lock_common(self, pobj, size, true);
}

void rlu_assign_ptr(struct rlu_thread *self, void **p_ptr, void *obj)
{
	(void)self;
	*p_ptr = rlu_actual(obj);
}

void *rlu_alloc(size_t size)
{
	struct rlu_hdr *h = tsync__rlu_obj_alloc(size);
	if (!h)
		return NULL;
	h->size = size;
	return h + 1;
}

void rlu_free(struct rlu_thread *self, void *obj)
{
	if (!obj)
		return;
	if (self->nfrees == self->frees_cap) {
		size_t cap = self->frees_cap * 2;
		struct rlu_free_ent *n = realloc(self->frees, cap * sizeof(*n));
		if (!n)
			tsync__fatal("rlu_free: out of memory for the free list");
		self->frees = n;
		self->frees_cap = cap;
	}
	self->frees[self->nfrees++].obj = rlu_actual(obj);
}

void rlu_free_unsafe(void *obj)
{
	if (obj)
		free(RHDR(obj));
}

int rlu_stats_thread(struct rlu_thread *self, struct rlu_stats *out)
{
	return tsync__rlu_stats_copy(out, self ? &self->st : NULL, sizeof(*out));
}

int rlu_stats(struct rlu *r, struct rlu_stats *out)
{
	return TSYNC__RLU_STATS_SUM(r ? &r->dir : NULL, struct rlu_thread, st, out);
}
