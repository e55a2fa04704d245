/*
 * src/ps_mem_types.h - what every file of ps_mem shares: the structures (slab, per-thread
 * record, instance, a budget's charge), the ownership rules, and the small inlines over
 * them that call no file of ps_mem (include/tsync/ps_mem.h draws the layers;
 * docs/design.md §3 argues them). Each layer's functions are declared in its own header,
 * included by the files above it, so calls run one way (top down):
 *   ps_mem_budget.c one limit over several instances;
 *   ps_mem.c        the API (ps_alloc, ps_free, ...), the registry hooks, create/destroy;
 *   ps_mem_wait.h   waiting for a grace period at the pending bound and the limit;
 *   ps_mem_task.h   the hand-off to the reclamation task σ (ps_reclaimer.c drives it);
 *   ps_mem_queue.h  the deferred-free queue: stamping, the reclamation loop, merges,
 *                   orphans, idle-queue stealing;
 *   ps_mem_slab.h   object cache <-> owned slabs <-> pool <-> system;
 *   ps_mem_policy.h Prudence's policies: latent slabs and pre-movement, flush and refill
 *                   sizes, slab choice, pre-flush;
 *   ps_mem_stats.c  counters (ps_mem_stats) and the stall report (ps_stall_report);
 *   ps_mem_acct.h   exact accounting (inline).
 * Also included by ps_reclaimer.c and ps_kmem.c (an object's slab names its size class).
 * The object header is in src/ps_mem_hdr.h. Cross-file functions are named ps_mem__*.
 * Ownership rules (docs/design.md §3):
 *  - a thread's queue, cache and owned-slab lists are touched only by that thread (and by
 *    the registry hook that runs in it when it exits) - except that, in instances
 *    without options (!m->ext), another thread holding the owner's qlock may detach
 *    its stamped queue whole (steal_idle): the owner touches qhead..qtail only under
 *    qlock; its unstamped frees, cache and slabs stay its own;
 *  - a slab's freelist is touched only by its owner, or under the pool mutex while the
 *    pool owns it; ownership changes only under the pool mutex;
 *  - anyone may push onto an owner's remote lists (CAS); only the owner empties them.
 */
#ifndef TSYNC_PS_MEM_TYPES_H
#define TSYNC_PS_MEM_TYPES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <tsync/ps_mem.h>
#include "ps_mem_hdr.h"
#include "registry.h"
#include "tdir.h"
#include "util.h"

/* L_POOL_DRAINING: pool slabs whose every allocated object waits for its grace period
 * (nfree + nlatent == nobj): Prudence's pre-movement (slab_premove) parks them where
 * refills take them last, so they empty and can go back to the system. */
enum slab_list_id {
	L_NONE,
	L_OWN_PARTIAL,
	L_OWN_FULL,
	L_POOL_PARTIAL,
	L_POOL_EMPTY,
	L_POOL_FULL,
	L_POOL_DRAINING
};
#define OWNER_POOL (-1)
/* Partially free slabs a thread keeps before it gives more to the pool (own_slab_gained). */
#define PS_MEM_PARTIAL_KEPT 4u

struct slab {
	struct ps_mem *m;
	_Atomic int owner;       /* thread id, or OWNER_POOL */
	struct ps_mem_hdr *free; /* objects free in this slab */
	unsigned nfree, nobj;
	/* Its latent slab (Prudence (ASPLOS 2016) §4.1): objects of this slab freed with
	 * ps_free beyond their thread's latent cache, which return here (not to a cache)
	 * after their grace period. Any freeing thread adds, the reclaiming one subtracts. */
	_Atomic unsigned nlatent;
	enum slab_list_id list;
	struct slab *prev, *next;         /* in the list `list` */
	struct slab *all_prev, *all_next; /* every slab of m (pool mutex) */
};

struct slab_list {
	struct slab *head;
	size_t n;
};

/* Per-thread state, per ps_mem. remote[] heads are written by other threads, each on its
 * own line; the rest is written only by the owning thread (counters are atomics only so
 * that ps_mem_stats may read them while it runs). */
struct ps_mem_pt {
	struct {
		_Alignas(TSYNC_CACHE_LINE) _Atomic(struct ps_mem_hdr *) head;
	} remote[PS_MEM_REMOTE_LINES];
	_Alignas(TSYNC_CACHE_LINE) struct ps_mem_hdr *cache; /* object cache (LIFO) */
	unsigned ncache;
	/* Latent cache (Prudence (ASPLOS 2016) §4.1): queued objects that go to `cache` after their
	 * grace period; at most cache_size with the latent-slab policy. The other queued objects
	 * carry HDR_LATENT_SLAB and go to their slab. */
	unsigned nlatent;
	/* Pre-flush scheduled (Prudence (ASPLOS 2016) Algorithm 1, lines 41-43): a free saw
	 * cache + latent cache past cache_size; the idle hook (ps_mem_reclaim) runs it. */
	bool pf_due;
	unsigned nempty; /* owned slabs with every object free */
	/* Quiescence queue, by free time: every object in it is stamped. Instances without
	 * options (!m->ext) guard it with qlock (below), so that another thread may take
	 * it from an idle owner (ps_mem__steal_idle in ps_mem_queue.c). */
	struct ps_mem_hdr *qhead, *qtail;
	/* Frees not yet stamped, oldest first (unstamped .. utail): owner only, always;
	 * stamp() gives them one free time and appends them to the queue. */
	struct ps_mem_hdr *unstamped, *utail;
	unsigned nunstamped;
	/* The pre-flush's cursor: the last object it passed in the walk qhead..qtail, then
	 * unstamped..utail; every object before it in that walk is latent-slab tagged. NULL:
	 * start at the head. Reset where the queue loses it or an untagged object joins
	 * before it (reclaim_take, queue_merge, steal_idle, hand-offs); qlock as the queue. */
	struct ps_mem_hdr *pf_tail;
	unsigned steal_pos;             /* steal_idle's round-robin cursor (owner only) */
	unsigned steal_tick;            /* stamped batches since ps_free's last look */
	struct slab_list partial, full; /* owned slabs with / without free objects */
	uint64_t last_reclaim;          /* when the schedule last let us reclaim */
	uint64_t pf_allocs, pf_frees;   /* c_allocs, c_frees at the last pre-flush */
	_Atomic uint64_t c_cached, c_pending, c_allocs, c_frees, c_reclaimed, c_refills, c_flushes,
		c_remote, c_max_wait, c_frees_now, c_misses, c_preflushed;
	/* ps_alloc slow paths served without a refill (Prudence's Fig. 7), that waited for
	 * a grace period, and whose wait timed out */
	_Atomic uint64_t c_merge_hits, c_waits, c_wait_timeouts;
	/* Stall summary of the last reclamation attempt (ps_stall_report): blocker id + 1
	 * (0: none), its enter time, objects it left queued; objects the hook held back. */
	_Atomic uint64_t c_blocker1, c_blocker_enter, c_blocked, c_hook_blocked, c_refused;
	_Atomic uint64_t c_head_tsc; /* free time of the queue head, 0 if unknown */
	/* Memory states (RT-SMR (RTAS 2018) §II-E): the queue's "known garbage" is its
	 * prefix of ngarb objects stamped <= the last quiescence point this queue's owner
	 * learnt (gtail: the last of them, NULL when ngarb == 0); the rest of the queue is
	 * zombie as far as the owner knows. c_garbage mirrors ngarb for ps_mem_stats. */
	uint64_t ngarb;
	struct ps_mem_hdr *gtail;
	_Atomic uint64_t c_garbage;
	_Atomic uint64_t c_handed; /* objects pushed onto `handoff` (owner only) */
	/* The reclamation task's hand-off list (RT-SMR (RTAS 2018) §V-C; ps_reclaimer):
	 * stamped objects the owner gave to m's σ, newest first, pushed by the owner with a
	 * release CAS, taken whole with one acquire exchange by σ (or back by the owner when
	 * no σ is attached). c_taken: objects taken from it (an atomic add by the taker). */
	_Alignas(TSYNC_CACHE_LINE) _Atomic(struct ps_mem_hdr *) handoff;
	_Atomic uint64_t c_taken;
	/* Idle-queue stealing (instances without options; docs/design.md §3, "Idle and
	 * exited threads"). qlock: 1 while the owner works on its queue (qhead..qtail,
	 * ngarb, gtail, its stall summary) or while another thread's steal_idle detaches
	 * that queue; acquire exchange, release store; the owner never waits on it in
	 * ps_free or the allocation slow path (it skips the queue steps). A thief adds the
	 * objects it took to c_stolen and the latent-cache objects among them (which it
	 * moved to their latent slabs) to c_stolen_latent; the owner subtracts both from
	 * c_pending and nlatent when it next takes qlock. idle_seen: 1 + the owner's
	 * activity count (c_frees + c_misses) at the last look of a thief (exchanged by
	 * thieves): a queue is taken only when that count did not change between two
	 * looks. */
	_Atomic int qlock;
	_Atomic uint64_t c_stolen, c_stolen_latent, idle_seen;
};
struct ps_mem_pt_chunk {
	struct ps_mem_pt pt[TSYNC__CHUNK];
};

struct orphan {
	struct ps_mem_hdr *head, *tail;
	uint64_t n;
	struct orphan *next;
};

struct ps_mem {
	struct ps *ps;
	size_t obj_size, align, hdr_area, stride, first, slab_size;
	unsigned nobj, cache_size, batch, slabs_kept, stamp_batch;
	unsigned trim_max; /* excess empty slabs unmapped per slow path: 4 x cache_size (>= 16) */
	unsigned nchunks;
	_Atomic unsigned pt_hw; /* 1 + the highest thread id with a record in m (steal_idle) */
	unsigned prudence;      /* PS_MEM_PRUDENCE_* policies on (cfg->prudence, 0: the default) */
	const struct ps_kmem *kmem; /* the ps_kmem whose class this is, or NULL */
	/* ps_mem_budget_attach: the budget charged budget_charge bytes per object from its
	 * allocation to its reuse (ps_mem_budget.c), and the next member; NULL: none. A
	 * member's ps_alloc and ps_mem_destroy go through the budget's hooks, so that calls
	 * run one way: ps_mem_budget.c -> ps_mem.c. */
	struct ps_mem_budget *budget;
	struct ps_mem *_Atomic budget_next;
	uint64_t budget_charge;
	void *(*budget_alloc)(struct ps_mem *m); /* ps_alloc(m) of a member */
	void (*budget_detach)(struct ps_mem *m); /* ps_mem_destroy(m): m leaves its budget */
	bool rt;    /* ps is RT or TEMPORAL: collect all quiesced (RT-SMR (RTAS 2018) Fig. 8) */
	bool exact; /* PS_MEM_ACCOUNT_EXACT */
	bool ext;   /* any of rt, exact, period, hooks: the paths of reclaim_ext */
	uint64_t period;    /* reclamation period q in ticks, 0: every free */
	uint64_t max_slabs; /* cfg->max_bytes in slabs, 0: no limit */
	int limit_wait_ms;
	unsigned bound_pct; /* the pending bound, % of live objects; 0: none (also RT,
			     * TEMPORAL, TASK/BOTH, a period: cfg->pending_bound_pct) */
	ps_mem_grace_fn grace_fn;
	void *grace_arg;
	uint64_t threshold;
	ps_mem_pending_fn pending_fn;
	void *pending_arg;
	ps_mem_reclaim_fn reclaim_fn;
	void *reclaim_arg;
	struct ps_mem_pt_chunk *_Atomic *chunks;
	struct tsync__client client;

	/* Set when the pool holds more than slabs_kept empty slabs; pool_shrink() then
	 * returns a few of them to the system. */
	_Atomic bool pool_excess;
	pthread_mutex_t pool_lock; /* protects everything below */
	struct slab_list pool_partial, pool_empty, pool_full, pool_draining;
	struct slab *all;
	uint64_t slabs, peak_slabs, grows, shrinks, pool_remote;
	uint64_t premoves; /* slabs moved by pre-movement (ps_mem_stats.slab_premoves) */
	struct orphan *orphans;
	_Atomic uint64_t orphan_pending;

	/* EXACT accounting: live in the low 32 bits, pending in the high 32 bits, so one
	 * atomic add moves an object between the two states, and peaks over it. */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t acct;
	_Atomic uint64_t peak_live, peak_pending, peak_foot;
	/* ... and the pending objects split into zombie (low 32 bits) and known garbage
	 * (high 32 bits), on the same line: a free adds a zombie before it adds to acct's
	 * pending, a collection subtracts from acct before it subtracts here, so at every
	 * instant zombie + garbage >= acct's pending (docs/rt.md §10). */
	_Atomic uint64_t zg;
	_Atomic uint64_t peak_zombie, peak_garbage;

	/* The reclamation task (RT-SMR (RTAS 2018) §V-C, src/ps_reclaimer.c). */
	int mode;                             /* enum ps_mem_reclaim_mode */
	_Atomic(struct ps_reclaimer *) sigma; /* the attached σ, or NULL */
	/* σ's quiescence queue for m: touched only under the attached σ's mutex (by σ's
	 * activation, ps_reclaimer_run, attach and detach); it outlives attachments so that
	 * ps_mem_stats may read its counters at any time. */
	struct ps_mem_pt task_pt;
};

#define ZG_GARBAGE(v) ((v) >> 32)
#define ZG_ZOMBIE(v) ((v)&0xffffffffu)
/* The thread id σ's collections pass to the slab layer: no thread owns a slab under it,
 * so every object σ returns goes to its slab's owner by a remote free, or to the pool. */
#define PS_MEM_TASK_ME ((unsigned)0x7fffffff)
/* m->sigma while a detach runs: no σ for the freeing threads, busy for attach. */
#define PS_MEM_SIGMA_DETACHING ((struct ps_reclaimer *)1)

#define ACCT_LIVE(v) ((v)&0xffffffffu)
#define ACCT_PENDING(v) ((v) >> 32)
#define ACCT_ALLOC 1u                         /* live + 1 */
#define ACCT_FREE 0xffffffffu                 /* live - 1, pending + 1 (the carry) */
#define ACCT_RECLAIM(n) ((uint64_t)(n) << 32) /* subtracted: pending - n */

#define PRUDENT(m, p) (((m)->prudence & (p)) != 0)

static inline void cnt_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}
static inline void cnt_sub(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) - v,
			      memory_order_relaxed);
}

/* Thread tid's record of m, or NULL if its chunk was never allocated. */
static inline struct ps_mem_pt *pt_if_exists(struct ps_mem *m, unsigned tid)
{
	return tsync__tdir_at((void *_Atomic *)m->chunks, tid, sizeof(struct ps_mem_pt));
}

/* The next of m's per-thread records that exist at or after position *pos (start at
 * 0), or NULL at the end: for the readers that sum counters without stopping the
 * threads. */
static inline struct ps_mem_pt *pt_next(struct ps_mem *m, unsigned *pos)
{
	return tsync__tdir_next((void *_Atomic *)m->chunks, m->nchunks, sizeof(struct ps_mem_pt),
				pos);
}

/* ---- a budget's member: the charge (ps_mem_budget.c makes budgets and waits) ------- */

struct ps_mem_budget {
	struct ps *ps;
	uint64_t limit;
	int wait_ms;
	pthread_mutex_t lock;           /* attach and detach */
	struct ps_mem *_Atomic members; /* pushed with release, read with acquire */
	/* charged = live + garbage bytes of every member; a CAS takes a charge under limit */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t charged;
	_Atomic uint64_t garbage;
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t waits, timeouts;
};

/* ps_alloc without the budget (ps_mem_budget_alloc charged it first). */
void *ps_mem__alloc_plain(struct ps_mem *m);
/* One object of m freed (ps_free): its charge becomes garbage. */
static inline void ps_mem__budget_freed(struct ps_mem *m)
{
	atomic_fetch_add_explicit(&m->budget->garbage, m->budget_charge, memory_order_relaxed);
}
/* n objects of m reusable again (a reclamation), or, garbage false, one freed at once
 * (ps_free_now): their charge returns. */
static inline void ps_mem__budget_reusable(struct ps_mem *m, uint64_t n, bool garbage)
{
	uint64_t bytes = n * m->budget_charge;
	if (garbage)
		atomic_fetch_sub_explicit(&m->budget->garbage, bytes, memory_order_relaxed);
	atomic_fetch_sub_explicit(&m->budget->charged, bytes, memory_order_relaxed);
}

/* ---- the queue lock (instances without options: idle queues may be taken) ---------- */

/* Subtract what thieves took from the owner's counts (qlock held). */
static inline void qlock_fold(struct ps_mem_pt *pt)
{
	if (TSYNC_LIKELY((atomic_load_explicit(&pt->c_stolen, memory_order_relaxed) |
			  atomic_load_explicit(&pt->c_stolen_latent, memory_order_relaxed)) == 0))
		return;
	cnt_sub(&pt->c_pending, atomic_exchange_explicit(&pt->c_stolen, 0, memory_order_relaxed));
	pt->nlatent -=
		(unsigned)atomic_exchange_explicit(&pt->c_stolen_latent, 0, memory_order_relaxed);
}

/* The owner takes its queue lock without waiting: false if a thief holds it (for the few
 * loads and stores of a detach). Instances with options have no thieves: always true. */
static inline bool qlock_try(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (m->ext)
		return true;
	if (atomic_exchange_explicit(&pt->qlock, 1, memory_order_acquire) != 0)
		return false;
	qlock_fold(pt);
	return true;
}

/* The owner (or the exit hook) releases its queue lock. */
static inline void qlock_drop(struct ps_mem *m, struct ps_mem_pt *pt)
{
	if (!m->ext)
		atomic_store_explicit(&pt->qlock, 0, memory_order_release);
}

/* h's free time (h stamped). */
static inline uint64_t hdr_tsc(const struct ps_mem_hdr *h)
{
	return atomic_load_explicit(&h->free_tsc, memory_order_relaxed);
}

/* Is a σ attached to m (a seq_cst load: the Dekker pair with the detach's store)? */
static inline bool sigma_on(struct ps_mem *m)
{
	struct ps_reclaimer *r = atomic_load_explicit(&m->sigma, memory_order_seq_cst);
	return r != NULL && r != PS_MEM_SIGMA_DETACHING;
}

/* ---- slab lists (pool mutex held for the pool's): ps_mem_slab.c, and pre-movement in
 * ps_mem_policy.c, which moves pool slabs to the draining list ------------------------ */

static inline struct slab_list *ps_mem__list_of(struct ps_mem *m, struct ps_mem_pt *pt,
						enum slab_list_id id)
{
	switch (id) {
	case L_OWN_PARTIAL: return &pt->partial;
	case L_OWN_FULL: return &pt->full;
	case L_POOL_PARTIAL: return &m->pool_partial;
	case L_POOL_EMPTY: return &m->pool_empty;
	case L_POOL_FULL: return &m->pool_full;
	case L_POOL_DRAINING: return &m->pool_draining;
	default: return NULL;
	}
}

static inline void list_del(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s)
{
	struct slab_list *l = ps_mem__list_of(m, pt, s->list);
	if (l == NULL)
		return;
	if (s->prev)
		s->prev->next = s->next;
	else
		l->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	s->list = L_NONE;
	l->n--;
}

static inline void list_add(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s,
			    enum slab_list_id id)
{
	struct slab_list *l = ps_mem__list_of(m, pt, id);
	s->prev = NULL;
	s->next = l->head;
	if (l->head)
		l->head->prev = s;
	l->head = s;
	l->n++;
	s->list = id;
}

/* Will s empty when its latent objects come back - is every allocated object of it
 * latent (Prudence (ASPLOS 2016) Fig. 5's slab B)? A snapshot: other threads' deferred
 * frees may add to nlatent at any time. Reads nfree: s's owner, or the pool mutex. */
static inline bool slab_all_latent(const struct slab *s)
{
	return s->nfree + atomic_load_explicit(&s->nlatent, memory_order_relaxed) >= s->nobj;
}

/* Are most of s's allocated objects (nobj - nfree: live, cached or queued) waiting in
 * its latent slab - more than half of them? Prudence (ASPLOS 2016) §4.2: "Prudence does
 * not select a slab for object cache refill when most of the allocated objects in that
 * slab are deferred for freeing (unless it needs to grow the slab cache)". A slab with
 * nothing allocated is not. Same snapshot and readers as slab_all_latent. */
static inline bool slab_mostly_latent(const struct slab *s)
{
	unsigned lat = atomic_load_explicit(&s->nlatent, memory_order_relaxed);
	return 2u * lat > s->nobj - s->nfree;
}

/* The pool list for s (pool mutex held). Only a slab with every object in its free list
 * is empty - the one kind pool_trim unmaps: an object still queued (latent) keeps its
 * slab mapped. With pre-movement (Prudence (ASPLOS 2016) Algorithm 1, lines 54-57), a
 * slab whose allocated objects all wait for their grace period drains, and a slab with
 * no free object but one in its latent slab is partial already: it will have one. */
static inline enum slab_list_id pool_list_for(struct ps_mem *m, const struct slab *s)
{
	if (s->nfree == s->nobj)
		return L_POOL_EMPTY;
	if (PRUDENT(m, PS_MEM_PRUDENCE_PREMOVE)) {
		if (slab_all_latent(s))
			return L_POOL_DRAINING;
		if (atomic_load_explicit(&s->nlatent, memory_order_relaxed) != 0)
			return L_POOL_PARTIAL;
	}
	return s->nfree ? L_POOL_PARTIAL : L_POOL_FULL;
}

/* pt's thread gives its slab s (on one of pt's lists) to the pool, onto the pool list for
 * it (pool mutex held): the one way ownership passes to the pool. The release store
 * pairs with free_to_slab's acquire load of the owner. */
static inline void slab_give_locked(struct ps_mem *m, struct ps_mem_pt *pt, struct slab *s)
{
	list_del(m, pt, s);
	atomic_store_explicit(&s->owner, OWNER_POOL, memory_order_release);
	list_add(m, NULL, s, pool_list_for(m, s));
}

#endif
