/*
 * src/mvrlu.c - Multi-Version Read-Log-Update (RLU study (Appl. Sci. 2022) §3.3; Kim et
 * al., ASPLOS 2019).
 *
 * Layout. A master object is [struct mv_hdr][data]; hdr.head is NULL or the newest
 * version of the object. A version lives in its writer's circular log as
 * [struct mv_ver (its own mv_hdr last, head = MV_IS_COPY)][data], linked to the version
 * it replaced through `older`. Every version points to its write set's clock word (a
 * slot of the owner's ring of write-set records): INF while the section runs,
 * COMMITTING for the instructions in which the commit takes its time, then the commit
 * time c, or ABORTED. A version's dead_at is INF while it may be the newest version of
 * its object, the commit time of the version that replaced it, or (detached, aborted)
 * a time one skew bound after it was unlinked; the version can be recycled once every
 * active section's local clock is >= dead_at.
 *
 * Clocks. Local clocks and commit times are tsync clock readings (ORDO's role). S is the
 * measured skew bound: a reading a taken really before a reading b satisfies a <= b + S.
 * docs/rlu.md §6 gives the whole argument; the comments name its steps (a)-(g). What
 * MV-RLU shares with RLU (instance, thread records, statistics, object headers) is in
 * src/rlu_common.h.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <tsync/clock.h>
#include <tsync/mvrlu.h>
#include <tsync/thread.h>

#include "rlu_common.h"
#include "tdir.h"
#include "util.h"
#include "wait.h"

#define INF TSYNC__RLU_INF
#define COMMITTING TSYNC__RLU_COMMITTING
#define ABORTED (UINT64_MAX - 2)
#define MARK (UINT64_MAX - 1) /* local_clock: a section is reading its clock */
#define MV_IS_COPY ((struct mv_ver *)TSYNC__RLU_IS_COPY)
#define ALIGN TSYNC__RLU_ALIGN
#define DEFAULT_LOG (256u * 1024u)
#define SLOTS 1024u /* write-set records per thread */
/* min_clock's wait for a thread seen at MARK (between two of its instructions): rounds
 * of tsync__wait_round before it gives up and reclaims nothing this pass. */
#define MARK_GIVE_UP 4096u
/* reclaim_until's wait between passes: 32 << min(i, 8) relaxes after pass i, for the first
 * RECLAIM_SPIN_PASSES passes, then a yield after each. */
#define RECLAIM_RELAX_BASE 32u
#define RECLAIM_RELAX_SHIFT_MAX 8u
#define RECLAIM_SPIN_PASSES 16u

struct mv_ver;

struct mv_hdr {
	_Atomic(struct mv_ver *) head;
	_Atomic uint32_t wb; /* write-back flag (1: a reclaimer owns the master's data) */
	uint32_t size;
};
_Static_assert(sizeof(struct mv_hdr) == ALIGN, "header keeps data 16-byte aligned");
_Static_assert(sizeof(struct mvrlu_stats) % sizeof(uint64_t) == 0,
	       "mvrlu_stats sums uint64_t words");
_Static_assert(sizeof(struct mv_hdr) == MVRLU__OBJ_HDR && offsetof(struct mv_hdr, head) == 0,
	       "mvrlu.h's inline mvrlu_deref reads the header's first word");

enum { REC_VER = 1, REC_SKIP = 2 };
enum { FREE_NONE = 0, FREE_PENDING = 1, FREE_DONE = 2 };

struct mv_ver {
	_Atomic(struct mv_ver *) older;
	_Atomic uint64_t *wclk; /* the write set's clock word */
	struct mvrlu_thread *owner;
	void *master; /* the master's data */
	_Atomic uint64_t dead_at;
	uint32_t bytes; /* record bytes (this header + data, rounded) */
	uint32_t size;  /* data bytes */
	uint8_t kind, freed;
	uint8_t pad[14];
	struct mv_hdr hdr; /* hdr.head == MV_IS_COPY */
};
_Static_assert(sizeof(struct mv_ver) % ALIGN == 0, "versions keep data aligned");

#define MHDR(p) ((struct mv_hdr *)((char *)(p) - sizeof(struct mv_hdr)))
#define VER(p) ((struct mv_ver *)((char *)(p) - sizeof(struct mv_ver)))
/* From a version's data back to its `master` (tsync__rlu_actual). */
#define MASTER_BACK (sizeof(struct mv_ver) - offsetof(struct mv_ver, master))
#define VDATA(v) ((void *)((char *)(v) + sizeof(struct mv_ver)))

struct mv_ws {
	_Atomic uint64_t clock;
	uint64_t first, end; /* log positions of its records */
	uint64_t free_at;    /* its freed objects may go back to malloc when m >= free_at */
	uint32_t nfree;
};

struct mvrlu_thread {
	/* owner only (the ws clocks and log records are read through versions); first: the
	 * inline mvrlu_deref counts through a struct mvrlu__thread_head * */
	_Alignas(TSYNC_CACHE_LINE) struct mvrlu__thread_head head;
	struct mvrlu *d;
	bool inited, is_writer, in_section;
	uint64_t L;
	_Atomic uint64_t *cur_clk; /* the current write set's clock word, NULL if none */
	struct mv_ws *cur;
	char *log;
	uint64_t lhead, ltail; /* positions (bytes ever allocated / recycled) */
	struct mv_ws *ws;
	uint64_t ws_head, ws_tail;
	size_t need; /* bytes a failed try_lock needed (abort reclaims) */
	unsigned streak;
	uint64_t wb_seen; /* the last d->wb_hint this thread reclaimed for */
	struct mvrlu_stats st;
	/* read by other threads */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t local_clock; /* INF: outside */
};

struct mvrlu {
	struct tsync__rlu_dir dir;
	size_t lb;        /* log bytes */
	size_t threshold; /* reclaim above this many bytes in use */
	uint64_t skew;
	bool poison;
	/* Bumped by a section whose derefs mostly met versions: every writer runs a
	 * reclamation pass at its next commit (write back, so objects return to the
	 * version-free fast path of mvrlu_deref). */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t wb_hint;
};
/* The dereference watermark: at least DEREF_MARK_MIN derefs, more than 1 in
 * DEREF_MARK of them versioned (the published MV-RLU's MVRLU_DEREF_MARK is 3). */
#define DEREF_MARK_MIN 50u
#define DEREF_MARK 3u

static void mvrlu_chunk_init(void *chunk, void *arg)
{
	struct mvrlu_thread *t = chunk;
	for (unsigned i = 0; i < TSYNC__CHUNK; i++) {
		t[i].d = arg;
		atomic_init(&t[i].local_clock, INF);
	}
}

static struct mvrlu_thread *mvrlu_thread_at(struct mvrlu *d, unsigned tid)
{
	return tsync__rlu_at(&d->dir, tid, sizeof(struct mvrlu_thread));
}

struct mvrlu *mvrlu_create(const struct mvrlu_config *cfg)
{
	struct mvrlu_config c = MVRLU_CONFIG_INIT;
	if (tsync__rlu_config(&c, cfg, sizeof(c)) != 0)
		return NULL;
	if (c.log_bytes == 0)
		c.log_bytes = DEFAULT_LOG;
	if (c.reclaim_pct == 0)
		c.reclaim_pct = 50;
	if (c.log_bytes < 4096 || c.log_bytes > (1u << 30) || c.reclaim_pct > 95) {
		errno = EINVAL;
		return NULL;
	}
	if (tsync_clock_init() != 0)
		return NULL;
	struct mvrlu *d = tsync__rlu_new(sizeof(*d), offsetof(struct mvrlu, dir));
	if (!d)
		return NULL;
	d->lb = tsync__round_up(c.log_bytes, ALIGN);
	d->threshold = d->lb / 100 * c.reclaim_pct;
	d->skew = tsync_clock_skew();
	d->poison = c.poison_on_free;
	return d;
}

/* A thread's first use of d: its log and its ring of write-set records. */
static int mvrlu_thread_first_use(void *rec)
{
	struct mvrlu_thread *t = rec;
	void *buf[2] = {aligned_alloc(ALIGN, t->d->lb), calloc(SLOTS, sizeof(*t->ws))};
	if (!tsync__rlu_all_or_none(buf, 2))
		return -1;
	t->log = buf[0];
	t->ws = buf[1];
	for (unsigned i = 0; i < SLOTS; i++)
		atomic_init(&t->ws[i].clock, INF);
	return 0;
}

struct mvrlu_thread *mvrlu_thread_get(struct mvrlu *d)
{
	return TSYNC__RLU_THREAD(&d->dir, struct mvrlu_thread, inited, mvrlu_thread_first_use,
				 mvrlu_chunk_init, d);
}

/* ---- objects ---- */

static void mvrlu_release_obj(struct mvrlu *d, void *obj)
{
	tsync__rlu_obj_release(obj, MHDR(obj)->size, d->poison);
}

void *mvrlu_alloc(size_t size)
{
	if (size > UINT32_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	struct mv_hdr *h = tsync__rlu_obj_alloc(size);
	if (!h)
		return NULL;
	h->size = (uint32_t)size;
	return h + 1;
}

void mvrlu_free_unsafe(void *obj)
{
	if (obj)
		free(MHDR(obj));
}

void *mvrlu_actual(void *a)
{
	return tsync__rlu_actual(a, MASTER_BACK);
}

bool mvrlu_cmp_objs(const void *a, const void *b)
{
	return tsync__rlu_actual((void *)a, MASTER_BACK) ==
	       tsync__rlu_actual((void *)b, MASTER_BACK);
}

void mvrlu_assign_ptr(struct mvrlu_thread *self, void **p_ptr, void *obj)
{
	(void)self;
	*p_ptr = mvrlu_actual(obj);
}

/* ---- the log ---- */

/* The record at *pos, skipping fillers (a gap too small for a header is implicit). */
static struct mv_ver *rec_at(struct mvrlu_thread *t, uint64_t *pos)
{
	const size_t lb = t->d->lb;
	for (;;) {
		size_t off = (size_t)(*pos % lb), rem = lb - off;
		if (rem < sizeof(struct mv_ver)) {
			*pos += rem;
			continue;
		}
		struct mv_ver *v = (struct mv_ver *)(t->log + off);
		if (v->kind == REC_SKIP) {
			*pos += v->bytes;
			continue;
		}
		return v;
	}
}

/* Would `bytes` fit at the head (contiguously, with a filler up to the end if needed)? */
static bool log_fits(const struct mvrlu_thread *t, size_t bytes)
{
	const size_t lb = t->d->lb;
	size_t rem = lb - (size_t)(t->lhead % lb);
	size_t pad = rem < bytes ? rem : 0;
	return t->lhead + pad + bytes - t->ltail <= lb && t->ws_head - t->ws_tail < SLOTS;
}

static struct mv_ver *log_alloc(struct mvrlu_thread *t, size_t bytes)
{
	const size_t lb = t->d->lb;
	size_t off = (size_t)(t->lhead % lb), rem = lb - off;
	size_t pad = rem < bytes ? rem : 0;
	if (t->lhead + pad + bytes - t->ltail > lb)
		return NULL;
	if (pad) {
		if (pad >= sizeof(struct mv_ver)) {
			struct mv_ver *f = (struct mv_ver *)(t->log + off);
			f->kind = REC_SKIP;
			f->bytes = (uint32_t)pad;
		}
		t->lhead += pad;
	}
	struct mv_ver *v = (struct mv_ver *)(t->log + (size_t)(t->lhead % lb));
	t->lhead += bytes;
	return v;
}

/* ---- clocks ---- */

/* Publish "starting", then read the clock after that store is visible (seq_cst fence;
 * LFENCE; RDTSC), then publish it with a seq_cst store. That store depends on the
 * reading, and no later load of the section (all of them acquire loads) is performed
 * before it (x86-64: a locked instruction; aarch64: STLR then LDAR): the section's
 * loads follow its clock reading. (b) */
static uint64_t publish_clock(struct mvrlu_thread *self)
{
	atomic_store_explicit(&self->local_clock, MARK, memory_order_relaxed);
	uint64_t l = tsync_now_ordered();
	if (TSYNC_UNLIKELY(l >= ABORTED))
		l = ABORTED - 1;
	atomic_store_explicit(&self->local_clock, l, memory_order_seq_cst);
	return l;
}

/*
 * m: a lower bound on the local clock of every section that is active now or begins
 * later (c). t0 is read before the scan's loads; a thread seen outside (or with a stale
 * clock) publishes its next MARK after our load, so that section reads its clock after
 * t0 and gets >= t0 - S. A thread seen at MARK is between two instructions: wait for it,
 * boundedly (then give up: 0 reclaims nothing).
 */
static uint64_t min_clock(struct mvrlu *d)
{
	const uint64_t S = d->skew;
	uint64_t t0 = tsync_now_before_loads();
	uint64_t m = t0 > S + 1 ? t0 - S - 1 : 0;
	unsigned hw = tsync_thread_high_water();
	for (unsigned j = 0; j < hw; j++) {
		struct mvrlu_thread *t = mvrlu_thread_at(d, j);
		if (!t)
			continue;
		uint64_t x = atomic_load_explicit(&t->local_clock, memory_order_acquire);
		struct tsync__wait w = TSYNC__WAIT_INIT;
		for (unsigned spins = 0; x == MARK; spins++) {
			if (spins > MARK_GIVE_UP)
				return 0;
			/* the scan of a quiescence check: TSYNC__SPIN_QUIESCE relaxes, then yields
			 */
			tsync__wait_round(&w, TSYNC__SPIN_QUIESCE);
			x = atomic_load_explicit(&t->local_clock, memory_order_acquire);
		}
		if (x < m)
			m = x;
	}
	return m;
}

/* ---- reclamation ---- */

/*
 * One pass over the caller's log, oldest write set first, over every committed (or
 * aborted) set with c <= m: write back and detach the versions that are still the newest
 * of their object (e), free the objects freed by write sets that no section can reach
 * (g), and recycle the leading write sets whose versions are all dead (f) - recycling
 * stops at the first set that is not dead yet (the log is FIFO), write-back does not:
 * (d)-(g) hold set by set, whatever the state of older sets, and a pass that stopped at
 * the first set just written back (its versions die only after the detach + S + 1) left
 * every newer set's versions in place until the next pass - one set per pass, so on a
 * list most nodes of a walk kept a version. The caller is inside a section (its own L
 * holds m down) or brackets the pass with one (pseudo): that protects the master headers
 * the pass reads (g).
 */
static void reclaim_pass(struct mvrlu_thread *self)
{
	struct mvrlu *d = self->d;
	bool pseudo = !self->in_section;
	if (pseudo)
		(void)publish_clock(self);
	const uint64_t m = min_clock(d);
	self->st.reclaims++;
	bool recycling = true;
	for (uint64_t t = self->ws_tail; t < self->ws_head; t++) {
		struct mv_ws *w = &self->ws[t % SLOTS];
		if (w == self->cur)
			break;
		uint64_t c = atomic_load_explicit(&w->clock, memory_order_acquire);
		bool aborted = c == ABORTED;
		if (!aborted && c > m)
			break;
		bool all_dead = true;
		uint64_t n = 0;
		for (uint64_t p = w->first; p < w->end;) {
			struct mv_ver *v = rec_at(self, &p);
			p += v->bytes;
			n++;
			uint64_t da = atomic_load_explicit(&v->dead_at, memory_order_acquire);
			if (da <= m)
				continue;
			all_dead = false;
			if (aborted)
				continue;
			struct mv_hdr *h = MHDR(v->master);
			if (v->freed == FREE_PENDING) {
				/* (g): unreachable for sections (c <= m) and for passes that could
				 * still read its header (free_at <= m); take the write-back flag
				 * for good so that no pass is inside a write-back of it. */
				if (w->free_at > m)
					continue;
				uint32_t z = 0;
				if (!atomic_compare_exchange_strong_explicit(&h->wb, &z, 1,
									     memory_order_acquire,
									     memory_order_relaxed))
					continue;
				v->freed = FREE_DONE;
				mvrlu_release_obj(d, v->master);
				self->st.frees++;
				atomic_store_explicit(&v->dead_at, 0, memory_order_release);
				continue;
			}
			if (v->freed == FREE_DONE || da != INF)
				continue; /* replaced by a commit not yet <= m */
			if (atomic_load_explicit(&h->head, memory_order_acquire) != v)
				continue; /* a writer holds the object: its commit will stamp v */
			uint32_t z = 0;
			if (!atomic_compare_exchange_strong_explicit(
				    &h->wb, &z, 1, memory_order_acquire, memory_order_relaxed))
				continue;
			struct mv_ver *e = v;
			if (atomic_load_explicit(&h->head, memory_order_acquire) == v) {
				/* (e): every section selects v (c <= m <= L): nobody reads the
				 * master. */
				memcpy(v->master, VDATA(v), v->size);
				self->st.writebacks++;
				if (atomic_compare_exchange_strong_explicit(&h->head, &e, NULL,
									    memory_order_release,
									    memory_order_relaxed))
					atomic_store_explicit(&v->dead_at,
							      tsync_now_ordered() + d->skew + 1,
							      memory_order_release);
			}
			atomic_store_explicit(&h->wb, 0, memory_order_release);
		}
		if (recycling && all_dead) {
			self->ltail = w->end;
			self->ws_tail++;
			self->st.recycled += n;
		} else {
			recycling = false;
		}
	}
	if (self->ws_tail == self->ws_head)
		self->ltail = self->lhead; /* empty: nothing between them */
	if (pseudo)
		atomic_store_explicit(&self->local_clock, INF, memory_order_release);
}

static bool log_empty(const struct mvrlu_thread *t)
{
	return t->ws_tail == t->ws_head;
}

/* Last resort: reclaim until `bytes` fit (0: until the log is empty), waiting for
 * readers and for lock holders between passes. Outside a section. */
static void reclaim_until(struct mvrlu_thread *self, size_t bytes)
{
	for (unsigned i = 0;; i++) {
		reclaim_pass(self);
		if (bytes ? log_fits(self, bytes) : log_empty(self))
			return;
		if (i == 0)
			self->st.waits++;
		if (i < RECLAIM_SPIN_PASSES) {
			unsigned shift = i < RECLAIM_RELAX_SHIFT_MAX ? i : RECLAIM_RELAX_SHIFT_MAX;
			for (unsigned k = 0; k < (RECLAIM_RELAX_BASE << shift); k++)
				tsync_arch_relax();
		} else {
			sched_yield();
		}
	}
}

void mvrlu_flush(struct mvrlu_thread *self)
{
	reclaim_until(self, 0);
}

/* ---- sections ---- */

void mvrlu_reader_lock(struct mvrlu_thread *self)
{
	self->L = publish_clock(self);
	self->in_section = true;
	self->is_writer = false;
	self->head.sec_derefs = self->head.sec_versioned = 0;
	self->st.sections++;
}

/*
 * After a section: if most of its derefs met versions (a version chain costs a reader
 * two or three dependent loads per object, into other threads' logs), ask every writer
 * to reclaim at its next commit, and reclaim our own log now. Without it versions are
 * written back only when a log passes its threshold, so on a list at low update rates
 * most nodes of a walk keep a version for thousands of commits (RLU study's (Appl. Sci. 2022)
 * §3.3.2 MV-RLU reclaims "on demand" for the same reason; the published code's dereference
 * watermark).
 */
static void deref_watermark(struct mvrlu_thread *self)
{
	if (TSYNC_LIKELY(self->head.sec_derefs < DEREF_MARK_MIN ||
			 self->head.sec_versioned * DEREF_MARK <= self->head.sec_derefs))
		return;
	self->st.wb_hints++;
	self->wb_seen = atomic_fetch_add_explicit(&self->d->wb_hint, 1, memory_order_relaxed) + 1;
	if (!log_empty(self))
		reclaim_pass(self);
}

static void mvrlu_end_section(struct mvrlu_thread *self)
{
	self->in_section = false;
	atomic_store_explicit(&self->local_clock, INF, memory_order_release);
}

/* Forget an allocated write-set record that holds no version (never visible). */
static void drop_empty_ws(struct mvrlu_thread *self)
{
	if (self->cur && self->cur->first == self->lhead) {
		self->ws_head--;
		self->cur = NULL;
		self->cur_clk = NULL;
	}
}

void mvrlu_reader_unlock(struct mvrlu_thread *self)
{
	if (!self->is_writer) {
		drop_empty_ws(self);
		mvrlu_end_section(self);
		deref_watermark(self);
		return;
	}
	struct mvrlu *d = self->d;
	struct mv_ws *w = self->cur;
	w->end = self->lhead;
	/* (a) Commit: COMMITTING, then the time, then publish it. */
	atomic_store_explicit(&w->clock, COMMITTING, memory_order_seq_cst);
	uint64_t c = tsync_now_ordered() + d->skew + 1;
	atomic_store_explicit(&w->clock, c, memory_order_release);
	/* (d) The versions this commit replaced die when c <= m. */
	for (uint64_t p = w->first; p < w->end;) {
		struct mv_ver *v = rec_at(self, &p);
		p += v->bytes;
		struct mv_ver *o = atomic_load_explicit(&v->older, memory_order_relaxed);
		if (o)
			atomic_store_explicit(&o->dead_at, c, memory_order_release);
	}
	/* (g) A pass that read dead_at == INF of such a version before the stores above may
	 * still read its master's header: freed masters wait until those passes ended. */
	if (w->nfree)
		w->free_at = tsync_now_ordered() + d->skew + 1;
	self->cur = NULL;
	self->cur_clk = NULL;
	self->is_writer = false;
	self->streak = 0;
	self->st.commits++;
	mvrlu_end_section(self);
	/* Real-time order: every section that begins after we return reads a clock >= c. */
	while (tsync_now() <= c + d->skew)
		tsync_arch_relax();
	uint64_t hint = atomic_load_explicit(&d->wb_hint, memory_order_relaxed);
	if (self->lhead - self->ltail > d->threshold || hint != self->wb_seen) {
		self->wb_seen = hint;
		reclaim_pass(self);
	} else {
		deref_watermark(self);
	}
}

void mvrlu_abort(struct mvrlu_thread *self)
{
	struct mvrlu *d = self->d;
	drop_empty_ws(self);
	struct mv_ws *w = self->cur;
	if (w) {
		w->end = self->lhead;
		w->nfree = 0;
		/* We hold every object of the set: nobody else moves their heads. */
		for (uint64_t p = w->first; p < w->end;) {
			struct mv_ver *v = rec_at(self, &p);
			p += v->bytes;
			v->freed = FREE_NONE;
			atomic_store_explicit(&MHDR(v->master)->head,
					      atomic_load_explicit(&v->older, memory_order_relaxed),
					      memory_order_release);
		}
		atomic_store_explicit(&w->clock, ABORTED, memory_order_release);
		/* Sections that loaded one of these versions before the unlink may still walk
		 * through it: recycle after they end (f). */
		uint64_t da = tsync_now_ordered() + d->skew + 1;
		for (uint64_t p = w->first; p < w->end;) {
			struct mv_ver *v = rec_at(self, &p);
			p += v->bytes;
			atomic_store_explicit(&v->dead_at, da, memory_order_release);
		}
		self->cur = NULL;
		self->cur_clk = NULL;
	}
	self->is_writer = false;
	self->st.aborts++;
	mvrlu_end_section(self);
	if (self->need) {
		size_t need = self->need;
		self->need = 0;
		reclaim_until(self, need);
	}
	tsync__backoff(++self->streak);
}

/* mvrlu_deref's slow path (the inline part counted the deref and found a head). */
void *mvrlu__deref_slow(struct mvrlu_thread *self, void *obj)
{
	struct mv_ver *v = atomic_load_explicit(&MHDR(obj)->head, memory_order_acquire);
	if (v == NULL || v == MV_IS_COPY)
		return obj;
	self->head.sec_versioned++;
	do {
		if (v->wclk == self->cur_clk)
			return VDATA(v); /* our own, uncommitted */
		if (tsync__rlu_commit_clock(v->wclk) <= self->L)
			return VDATA(v);
		self->st.chain_steps++;
		v = atomic_load_explicit(&v->older, memory_order_acquire);
	} while (v);
	return obj;
}

static bool mvrlu_lock_common(struct mvrlu_thread *self, void **pobj, size_t size)
{
	struct mvrlu *d = self->d;
	void *obj = mvrlu_actual(*pobj);
	struct mv_hdr *h = MHDR(obj);
	struct mv_ver *top = atomic_load_explicit(&h->head, memory_order_acquire);
	if (top) {
		if (top->wclk == self->cur_clk) {
			*pobj = VDATA(top);
			return true;
		}
		/* Held by another section (INF, COMMITTING, ABORTED not yet unlinked), or
		 * committed after this section's clock: conflict. */
		if (atomic_load_explicit(top->wclk, memory_order_acquire) > self->L)
			return false;
	}
	size_t bytes = sizeof(struct mv_ver) + tsync__round_up(size, ALIGN);
	if (!self->cur) {
		if (self->ws_head - self->ws_tail >= SLOTS) {
			reclaim_pass(self);
			if (self->ws_head - self->ws_tail >= SLOTS) {
				self->need = bytes;
				self->st.log_full++;
				return false;
			}
		}
		struct mv_ws *w = &self->ws[self->ws_head % SLOTS];
		self->ws_head++;
		atomic_store_explicit(&w->clock, INF, memory_order_relaxed);
		w->first = w->end = self->lhead;
		w->nfree = 0;
		w->free_at = 0;
		self->cur = w;
		self->cur_clk = &w->clock;
	}
	if ((self->lhead - self->cur->first) + bytes > d->lb / 2) {
		errno = ENOSPC; /* the write set alone would not fit */
		return false;
	}
	uint64_t save = self->lhead;
	struct mv_ver *v = log_alloc(self, bytes);
	if (!v) {
		reclaim_pass(self);
		v = log_alloc(self, bytes);
		if (!v) {
			self->need = bytes;
			self->st.log_full++;
			return false;
		}
	}
	atomic_init(&v->older, top);
	v->wclk = self->cur_clk;
	v->owner = self;
	v->master = obj;
	atomic_init(&v->dead_at, INF);
	v->bytes = (uint32_t)bytes;
	v->size = (uint32_t)size;
	v->kind = REC_VER;
	v->freed = FREE_NONE;
	atomic_init(&v->hdr.head, MV_IS_COPY);
	atomic_init(&v->hdr.wb, 0);
	v->hdr.size = (uint32_t)size;
	memcpy(VDATA(v), top ? VDATA(top) : obj, size);
	/* Release: publishes the version; fails if the head moved since we read it. */
	if (!atomic_compare_exchange_strong_explicit(&h->head, &top, v, memory_order_release,
						     memory_order_relaxed)) {
		self->lhead = save;
		return false;
	}
	self->cur->end = self->lhead;
	self->is_writer = true;
	*pobj = VDATA(v);
	return true;
}

bool mvrlu_try_lock(struct mvrlu_thread *self, void **pobj, size_t size)
{
	return mvrlu_lock_common(self, pobj, size);
}

bool mvrlu_try_lock_const(struct mvrlu_thread *self, void **pobj, size_t size)
{
	return mvrlu_lock_common(self, pobj, size);
}

void mvrlu_free(struct mvrlu_thread *self, void *obj)
{
	if (!obj)
		return;
	void *m = mvrlu_actual(obj);
	struct mv_ver *v = atomic_load_explicit(&MHDR(m)->head, memory_order_relaxed);
	if (!v || v == MV_IS_COPY || v->wclk != self->cur_clk)
		tsync__fatal("mvrlu_free: the caller does not hold the object's lock");
	if (v->freed == FREE_NONE) {
		v->freed = FREE_PENDING;
		self->cur->nfree++;
	}
}

size_t mvrlu_log_used(struct mvrlu_thread *self)
{
	return (size_t)(self->lhead - self->ltail);
}

/* ---- teardown and statistics ---- */

/* Teardown, pass 0: write v back if it is committed and still the newest version of its
 * object (every master is live until pass 1). */
static void destroy_write_back(struct mv_ver *v)
{
	if (v->freed != FREE_NONE || atomic_load_explicit(&v->dead_at, memory_order_relaxed) != INF)
		return;
	struct mv_hdr *h = MHDR(v->master);
	if (atomic_load_explicit(&h->head, memory_order_relaxed) == v) {
		memcpy(v->master, VDATA(v), v->size);
		atomic_store_explicit(&h->head, NULL, memory_order_relaxed);
	}
}

/* Teardown, pass 1: free the object v's committed write set mvrlu_free'd. */
static void destroy_free(struct mvrlu *d, struct mv_ver *v)
{
	if (v->freed == FREE_PENDING) {
		v->freed = FREE_DONE;
		mvrlu_release_obj(d, v->master);
	}
}

struct destroy_arg {
	struct mvrlu *d;
	int pass;
};

/* One teardown pass over one record: every version of its committed write sets. */
static void destroy_pass(void *rec, void *arg)
{
	const struct destroy_arg *a = arg;
	struct mvrlu_thread *t = rec;
	if (!t->inited)
		return;
	for (uint64_t s = t->ws_tail; s < t->ws_head; s++) {
		struct mv_ws *w = &t->ws[s % SLOTS];
		if (atomic_load_explicit(&w->clock, memory_order_relaxed) >= ABORTED)
			continue;
		for (uint64_t p = w->first; p < w->end;) {
			struct mv_ver *v = rec_at(t, &p);
			p += v->bytes;
			if (a->pass == 0)
				destroy_write_back(v);
			else
				destroy_free(a->d, v);
		}
	}
}

/* Last: the record's log and write-set ring. */
static void mvrlu_destroy_thread(void *rec, void *arg)
{
	struct mvrlu_thread *t = rec;
	(void)arg;
	free(t->log);
	free(t->ws);
}

void mvrlu_destroy(struct mvrlu *d)
{
	if (!d)
		return;
	/* Write back the newest versions first (their masters are all live), then free. */
	for (int pass = 0; pass < 2; pass++) {
		struct destroy_arg a = {d, pass};
		tsync__rlu_each(&d->dir, sizeof(struct mvrlu_thread), destroy_pass, &a);
	}
	tsync__rlu_each(&d->dir, sizeof(struct mvrlu_thread), mvrlu_destroy_thread, NULL);
	tsync__rlu_delete(d, &d->dir);
}

int mvrlu_stats_thread(struct mvrlu_thread *self, struct mvrlu_stats *out)
{
	return tsync__rlu_stats_copy(out, self ? &self->st : NULL, sizeof(*out));
}

int mvrlu_stats(struct mvrlu *d, struct mvrlu_stats *out)
{
	return TSYNC__RLU_STATS_SUM(d ? &d->dir : NULL, struct mvrlu_thread, st, out);
}
