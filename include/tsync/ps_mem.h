/*
 * tsync/ps_mem.h - the SMR-integrated slab allocator (ParSec memory, ParSec (EuroSys
 * 2016) §3.4, with the predictable remote frees of RT-SMR (RTAS 2018) Appendix A).
 *
 * A struct ps_mem hands out objects of one size. ps_free() does not make an object
 * reusable: it appends it to the calling thread's quiescence queue with a free time (one
 * ordered clock reading per cfg->stamp_batch frees stamps every object freed since the
 * previous one; a later reading only delays reuse, so the queue stays ordered by free
 * time). Objects leave that queue - a bounded batch per call, never waiting on another
 * thread - once quiescence (<tsync/ps.h>) says every section active at their free time
 * has ended. When nothing has quiesced, ps_alloc takes fresh memory rather than wait
 * (ParSec (EuroSys 2016) §3.2) - unless the objects waiting for their grace period (with
 * the free slots out of the caller's reach) pass the pending bound
 * (cfg->pending_bound_pct, on by default): then it first waits for a grace period, for a
 * bounded time (Prudence (ASPLOS 2016) Algorithm 1 lines 31-32).
 *
 * Layers, each with countable events (Prudence (ASPLOS 2016) §4's policies, enum
 * ps_mem_prudence, act on them):
 *   quiescence queue (per thread)  --reclaim-->  object cache (per thread, capacity C)
 *        (its latent cache: at most C)                 or, for the objects beyond the
 *                                       latent cache, --reclaim--> their own slab
 *   object cache  --flush / refill (sizes: the policies)-->  slabs owned by the thread
 *   slabs  <-->  the instance's slab pool (a mutex, slow path only)  <-->  the system
 *
 * A slab is one page-aligned chunk of cfg->slab_size bytes (a slab_size that is a power
 * of two is also aligned to its size) whose objects each carry a header: the free time,
 * the queue link and the owning slab. Each slab is owned by one thread; an object
 * returned to a slab owned by another thread ("remote free") goes onto one of that
 * owner's PS_MEM_REMOTE_LINES remote lists, each head on its own cache line, pushed with
 * a compare-and-swap that only freeing threads sharing that line contend on; the owner
 * takes whole lists with one exchange when it refills. A slab that holds one object (an
 * object too large for two in its slab_size) belongs to the pool while its object is
 * out, and the object, once reclaimed, returns to it directly, bypassing the object
 * cache: no thread strands a whole slab. A thread keeps a bounded number of fully free
 * and of partly free slabs of its own (the bounds are implementation constants); a slab
 * that gets objects back beyond them goes to the pool, whose partly free slabs every
 * thread's refill takes before mapping a new one (so free objects do not strand in a
 * thread that never refills). Fully free slabs beyond cfg->slabs_kept go back to the
 * system - a bounded number per allocator slow path (refill, cache flush,
 * ps_mem_reclaim), proportional to cfg->cache_size, and never under the pool mutex - so
 * when a long section ends and thousands of slabs empty at once, the pool serves refills
 * from them and shrinks over the following calls instead of one call making thousands
 * of munmaps.
 *
 * Threads: any thread may allocate and free any object of any ps_mem.
 */
#ifndef TSYNC_PS_MEM_H
#define TSYNC_PS_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/ps.h>
#include <tsync/ps_reclaimer.h> /* the reclamation task σ (reclaim_mode TASK, BOTH) */

#ifdef __cplusplus
extern "C" {
#endif

struct ps_mem;

/* Remote-free lists per slab owner (one cache line each); a freeing thread pushes onto
 * the list of its thread id modulo this. */
#define PS_MEM_REMOTE_LINES 8

/*
 * ps_mem_grace_fn - a custom grace period: may obj, past normal quiescence, be reused?
 *
 * Arguments:  m; obj (as the freeing thread left it; do not write it); free_time, its
 *             stamp in ticks; arg, cfg->grace_arg.
 * Returns:    true to let obj be reused; false to keep it (e.g. "not before the next TLB
 *             flush"), which ends that reclamation: obj and every later free of the same
 *             thread wait, and obj is asked again first next time (docs/design.md §9.4).
 * Progress:   runs inside allocator calls: it must not block for long.
 * Caller:     the reclaiming thread's ps_free/ps_alloc/ps_mem_reclaim/ps_mem_collect
 *             (or σ), in free-time order per freeing thread, once obj has quiesced; it
 *             must not call ps_alloc, ps_free, ps_mem_reclaim or ps_mem_collect on m.
 * Implements: ParSec (EuroSys 2016) §3.7.
 */
typedef bool (*ps_mem_grace_fn)(struct ps_mem *m, void *obj, tsync_tick_t free_time, void *arg);

/*
 * ps_mem_pending_fn - the pending-garbage threshold was reached.
 *
 * Arguments:  m; pending, the pending count just reached (objects); arg,
 *             cfg->pending_arg.
 * Caller:     called once each time m's pending count rises to cfg->pending_threshold
 *             from below (edge-triggered: again only after it fell below), in the thread
 *             whose ps_free made it cross, after that ps_free finished its work. It may
 *             call ps_mem_stats and ps_stall_report; it must not call ps_free on m.
 *             Requires exact accounting (setting it enables it under AUTO).
 * Implements: RT-SMR (RTAS 2018) §II-E (pending memory).
 */
typedef void (*ps_mem_pending_fn)(struct ps_mem *m, uint64_t pending, void *arg);

/* What one reclamation did, for measuring RT-SMR (RTAS 2018)'s α and β (§V-C, Fig. 10). */
struct ps_mem_reclaim_info {
	tsync_tick_t quiesce_ticks; /* ticks spent in the quiescence computation, if one
				     * was made (α) */
	tsync_tick_t collect_ticks; /* ticks spent on the rest of the reclamation: moving
				     * `collected` objects to the object cache
				     * (collected x β) */
	uint64_t collected;         /* objects made reusable */
	uint64_t queued;            /* objects left in the caller's queue */
	bool quiesced;              /* a quiescence computation was made */
};
/*
 * ps_mem_reclaim_fn - the reclamation observer.
 *
 * Arguments:  m; info, what the reclamation did; arg, cfg->reclaim_arg.
 * Progress:   setting it adds two clock reads per reclamation.
 * Caller:     called at the end of every reclamation that computed quiescence or
 *             collected an object, in the reclaiming thread. It must not call ps_alloc,
 *             ps_free or ps_mem_reclaim on m.
 * Implements: RT-SMR (RTAS 2018) §V-C (measures α and β).
 */
typedef void (*ps_mem_reclaim_fn)(struct ps_mem *m, const struct ps_mem_reclaim_info *info,
				  void *arg);

/* Accounting modes (cfg->accounting). */
enum ps_mem_accounting {
	PS_MEM_ACCOUNT_AUTO = 0,       /* EXACT if m's ps is RT or TEMPORAL or a pending
					* threshold is set, else PER_THREAD */
	PS_MEM_ACCOUNT_PER_THREAD = 1, /* per-thread counters only: no shared store on the
					* allocation paths; no peaks (reported as 0) */
	PS_MEM_ACCOUNT_EXACT = 2,      /* also one shared counter word updated with one
					* atomic add per ps_alloc, ps_free and reclamation:
					* exact live/pending counts at every instant, and
					* exact peaks; at most 2^32 - 1 objects live and
					* 2^32 - 1 pending at once */
};

/*
 * Prudence's policies (Prudence (ASPLOS 2016) §4, Algorithm 1), each a bit of
 * cfg->prudence so that any of them can be switched off (docs/prudence.md measures each
 * one's effect). They decide where objects go and when; none decides when an object is
 * reusable - that stays quiescence and the grace hook (docs/design.md §3).
 */
enum ps_mem_prudence {
	/* Latent cache bound (§4.1): a thread's queue holds at most cache_size deferred
	 * objects destined for its object cache (its latent cache); the ones freed beyond
	 * that are counted in their slab (its latent slab) and go back to that slab, not to
	 * a cache, after their grace period; and the merge of the latent cache into the
	 * object cache stops at a full cache (Algorithm 1 lines 64-65), the rest going to
	 * their slabs - so reclaimed objects never overflow the cache into a flush. */
	PS_MEM_PRUDENCE_LATENT_SLAB = 1u << 0,
	/* Partial refill (Algorithm 1 line 14): a refill takes cache_size minus the latent
	 * cache's objects, not half a cache, so the latent ones fit when they arrive. */
	PS_MEM_PRUDENCE_PARTIAL_REFILL = 1u << 1,
	/* Latent-aware flush (§4.2): a full cache flushes as many objects as its latent
	 * cache still holds (at least half a cache), so their arrival needs no second flush. */
	PS_MEM_PRUDENCE_LATENT_FLUSH = 1u << 2,
	/* Pre-flush (lines 41-43): a free that leaves cache + latent cache past cache_size
	 * schedules it; ps_mem_reclaim (the idle hook) runs it: latent-cache objects move to
	 * their latent slabs ahead of their grace period, oldest first, resuming where the
	 * last one stopped; down to cache_size while the thread allocates at least as fast
	 * as it frees, down to half a cache otherwise (Prudence's aggressiveness from the
	 * recent allocation and deferred-free rates). */
	PS_MEM_PRUDENCE_PREFLUSH = 1u << 3,
	/* Slab pre-movement (lines 52-57): at a deferred free into a slab's latent slab, a
	 * full pool slab moves to the partial list, and a pool slab or the freeing thread's
	 * own slab with every allocated object latent to a pool list that refills take
	 * last, so it empties and can be returned; another thread's slab is moved by its
	 * owner, at its next refill. */
	PS_MEM_PRUDENCE_PREMOVE = 1u << 4,
	/* Fragmentation-aware refill (lines 17-21, Fig. 5): a refill picks, among the first
	 * few partly free slabs (a bound fixed in the implementation, Prudence (ASPLOS 2016) §5's
	 * 10) - its own first, then the pool's - the fullest (fewest objects free now), passing
	 * over slabs most of whose allocated objects are latent (more than half) unless the
	 * alternative is a new slab. */
	PS_MEM_PRUDENCE_FRAG_REFILL = 1u << 5,
	PS_MEM_PRUDENCE_ALL = (1u << 6) - 1,
	/* cfg->prudence = PS_MEM_PRUDENCE_NONE: every policy off (0 means the default). */
	PS_MEM_PRUDENCE_NONE = 1u << 30,
};

/*
 * Who reclaims (cfg->reclaim_mode; RT-SMR (RTAS 2018) §V-C). Whatever the mode, an
 * object is made reusable only after its grace period. Each mode's term in RT-SMR
 * (RTAS 2018) Eq. 5 and how σ is fed: docs/design.md §9.4.
 *  INLINE: each thread reclaims its own queue in its ps_free and allocation slow path.
 *  TASK: while a σ (struct ps_reclaimer) is attached, ps_free stamps the object and
 *    hands it to σ, and never reclaims; only σ reclaims, once per period. With no σ
 *    attached, TASK behaves as INLINE.
 *  BOTH: INLINE, plus: when a thread's reclamation leaves reclaim_batch or more objects
 *    queued (a section held them back), it hands its queue to σ.
 */
enum ps_mem_reclaim_mode {
	PS_MEM_RECLAIM_INLINE = 0,
	PS_MEM_RECLAIM_TASK = 1,
	PS_MEM_RECLAIM_BOTH = 2,
};

/* The policies on by default: the fastest safe set (docs/prudence.md, "Ablation"). */
#define PS_MEM_PRUDENCE_DEFAULT PS_MEM_PRUDENCE_ALL

/* Configuration for ps_mem_create(); PS_MEM_CONFIG_INIT gives the defaults (0 = default
 * for every field but size). */
struct ps_mem_config {
	size_t size;            /* sizeof(struct ps_mem_config) */
	size_t align;           /* object alignment, a power of two <= 4096 (default 16) */
	size_t slab_size;       /* bytes per slab, a multiple of 4096 up to 2 GiB; a size
				 * that is not a power of two lets large objects waste less
				 * than a page per slab. 0 (default): chosen from the object
				 * size - the smallest multiple of 4096 that holds
				 * max(cache_size, 8) objects (after the slab's header, one
				 * cache line or two), at least 4 KiB and at most 64 KiB;
				 * where 64 KiB cannot hold that many, 64 KiB if it holds 8,
				 * else the power of two above it that holds 8. Why C
				 * objects: a refill takes at most C (Prudence's partial
				 * refill: C minus the latent cache, at least C / 4), so one
				 * fresh slab serves a whole refill and each slab mapping is
				 * amortised over C allocations, while a small program
				 * holds a few pages per thread and class, not 64 KiB
				 * (ps_mem_slab_size tells the result) */
	unsigned cache_size;    /* per-thread object cache capacity C (default 64) */
	unsigned reclaim_batch; /* most objects reclaimed per ps_free/ps_alloc (default 16) */
	unsigned slabs_kept;    /* fully free slabs kept in the pool before unmapping (def. 4) */
	unsigned stamp_batch;   /* frees per ordered clock reading (default reclaim_batch;
				 * 1 when m's ps is RT or TEMPORAL); 1: every free gets its
				 * own time (the precise contract that real-time analysis
				 * assumes, at ~23 ns per free) */
	/* Reclamation schedule (RT-SMR (RTAS 2018) §V-C, the quiescence period q): 0 (default):
	 * every ps_free reclaims (and the allocation slow path does); > 0: a thread's
	 * ps_free and allocation slow path reclaim at most once per reclaim_period_ns
	 * (its first call always may), and otherwise only queue (ps_free) or take other
	 * memory (ps_alloc). ps_mem_reclaim always reclaims. */
	uint64_t reclaim_period_ns;
	int accounting;           /* enum ps_mem_accounting (default AUTO) */
	ps_mem_grace_fn grace_fn; /* custom grace period hook, or NULL */
	void *grace_arg;
	uint64_t pending_threshold; /* > 0 with pending_fn: pending objects that trigger
				     * it (see ps_mem_pending_fn) */
	ps_mem_pending_fn pending_fn;
	void *pending_arg;
	ps_mem_reclaim_fn reclaim_fn; /* reclamation observer, or NULL */
	void *reclaim_arg;
	/* Memory limit (Prudence (ASPLOS 2016) §4, "wait instead of failing"): 0 (default):
	 * none (the pending bound below still applies). > 0: m holds at most max_bytes of
	 * slabs (rounded down to whole slabs, at least one); at the limit, while objects
	 * freed with ps_free still wait for their grace period, ps_alloc waits for them (up
	 * to limit_wait_ms) instead of failing. See ps_alloc. */
	size_t max_bytes;
	int limit_wait_ms; /* longest wait of one ps_alloc for a grace period, ms, at
			    * max_bytes, at the pending bound or after the system refused
			    * a slab (default 100; -1: never wait - at max_bytes fail at
			    * once, at the pending bound map a slab) */
	/* Prudence's policies on (enum ps_mem_prudence bits; bits outside
	 * PS_MEM_PRUDENCE_ALL are ignored): 0 (default): PS_MEM_PRUDENCE_DEFAULT;
	 * PS_MEM_PRUDENCE_NONE: none. */
	unsigned prudence;
	/* Who reclaims: enum ps_mem_reclaim_mode (default PS_MEM_RECLAIM_INLINE). TASK and
	 * BOTH need a σ attached (ps_reclaimer_attach) to differ from INLINE. */
	int reclaim_mode;
	/* The pending bound (Prudence (ASPLOS 2016) Algorithm 1 lines 31-32; memory bounded
	 * by default): when an allocation would map a new slab while what m holds beyond
	 * its live objects - the objects waiting for their grace period, and free slots out
	 * of the caller's reach (other threads' caches, slabs and remote lists) - exceeds
	 * pending_bound_pct percent of its live objects (and PS_MEM_BOUND_FLOOR_SLABS
	 * slabs' worth), ps_alloc first waits for a grace period (see ps_alloc: how long,
	 * and when it maps anyway); so does an allocation that the system refused a slab.
	 * 0 (default):
	 * PS_MEM_PENDING_BOUND_DEFAULT (10 %); PS_MEM_PENDING_BOUND_OFF (-1): no bound -
	 * take fresh memory rather than wait (ParSec (EuroSys 2016) §3.2), and fail at
	 * once when the system refuses it; < -1: EINVAL. Applies to instances of a GENERAL
	 * ps with reclaim_mode INLINE and no reclaim_period_ns; the others (RT, TEMPORAL,
	 * σ, a reclamation period: docs/rt.md's analysis) have no bound whatever it says. */
	int pending_bound_pct;
};
#define PS_MEM_CONFIG_INIT                                                                    \
	{                                                                                     \
		sizeof(struct ps_mem_config), 0, 0, 0, 0, 0, 0, 0, PS_MEM_ACCOUNT_AUTO, NULL, \
			NULL, 0, NULL, NULL, NULL, NULL, 0, 0, 0, PS_MEM_RECLAIM_INLINE, 0    \
	}
/* cfg->pending_bound_pct: the default (beyond the live objects, at most 10 % more held as
 * pending objects and free slots out of reach before a wait; why 10: docs/prudence.md
 * §2), and no bound. */
#define PS_MEM_PENDING_BOUND_DEFAULT 10
#define PS_MEM_PENDING_BOUND_OFF (-1)
/* The pending bound applies only once m holds this many slabs' worth of objects beyond
 * its live ones: an instance with almost nothing live (one object per thread) does not
 * wait for every grace period to save a slab. */
#define PS_MEM_BOUND_FLOOR_SLABS 16

/*
 * ps_mem_create - an allocator of obj_size-byte objects reclaimed through ps.
 *
 * Arguments:  ps: the parallel-section domain whose quiescence decides reuse.
 *             obj_size: bytes per object (1 to 1 GiB, and at least one object must fit
 *             in a slab). cfg: the configuration, or NULL for the defaults.
 * Returns:    the allocator; NULL with errno = EINVAL (ps NULL, obj_size out of range,
 *             or a cfg field out of range or at odds with another: docs/design.md §9.4)
 *             or ENOMEM (also for the records of the explicitly registered threads).
 * Progress:   blocking (allocates, also every explicitly registered thread's record;
 *             takes the registry mutex).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.4.
 */
struct ps_mem *ps_mem_create(struct ps *ps, size_t obj_size, const struct ps_mem_config *cfg);

/*
 * ps_mem_destroy - return every slab to the system, objects still pending in quiescence
 * queues included.
 *
 * Arguments:  m: the allocator, or NULL (ignored).
 * Progress:   blocking. A σ still attached (ps_reclaimer_attach) is detached first
 *             (ps_reclaimer_detach: waits for its running activation).
 * Caller:     any thread, once (not checked) no thread uses m or any of its objects any
 *             more and none is inside a section holding one; not concurrently with
 *             ps_reclaimer_stop of m's σ.
 * Implements: ParSec (EuroSys 2016) §3.4.
 */
void ps_mem_destroy(struct ps_mem *m);

/*
 * ps_alloc - an object of m's size (ParSec's name, although the argument is a ps_mem).
 *
 * Returns:    the object, contents unspecified (no reader can still see an earlier
 *             incarnation); NULL with errno = ENOMEM (no memory, even after waiting for
 *             a grace period; or the thread's records could not be allocated), EDEADLK
 *             (at cfg->max_bytes, inside a section of m's ps) or EAGAIN (registry full).
 * Progress:   wait-free on the fast path (a pop from the thread's object cache); the
 *             slow path refills, and may wait up to cfg->limit_wait_ms for a grace
 *             period, never inside a section (docs/design.md §3, "The slow paths").
 * Ordering:   every access to the previous incarnation happens-before the return.
 * Caller:     any thread, inside or outside a section.
 * Implements: ParSec (EuroSys 2016) §3.4; the bound and the limit: Prudence (ASPLOS
 *             2016) §4, Algorithm 1 lines 31-32.
 */
void *ps_alloc(struct ps_mem *m);

/*
 * ps_free - defer reuse of obj until every section of m's ps active now has ended,
 * including the caller's own.
 *
 * Arguments:  obj: from ps_alloc(m), live, already unreachable for new readers; NULL is
 *             ignored; a double free or a foreign pointer aborts with a diagnostic.
 * Progress:   never waits for another thread: stamps obj, then reclaims at most
 *             reclaim_batch quiesced objects of the caller's queue; may take the pool
 *             mutex (docs/design.md §3, "The slow paths").
 * Ordering:   the free time is read with tsync_now_ordered(), after all the caller's
 *             earlier stores (the unlinking one included) are visible.
 * Caller:     any thread, inside or outside a section; ps_lock_take fails on obj from
 *             this call on.
 * Implements: ParSec (EuroSys 2016) §3.4; RT-SMR (RTAS 2018) Fig. 8, lines 23-30.
 */
void ps_free(struct ps_mem *m, void *obj);

/*
 * ps_free_now - the immediate free: obj goes straight back to the caller's object cache,
 * reusable by its next ps_alloc (no grace period; counted in ps_mem_stats.frees_now).
 *
 * Arguments:  obj: from ps_alloc(m), live, and never reachable by any reader: never
 *             published, or every publication undone before any section that could load
 *             it began (docs/design.md §9.4). Anything else needs ps_free: here it is a
 *             use-after-free no check catches. A double free or a foreign object aborts
 *             with a diagnostic, as ps_free does; NULL is ignored.
 * Progress:   wait-free except when the cache is full (a flush of half of it, which may
 *             take the pool mutex).
 * Caller:     any thread, inside or outside a section (a lazily registered one aborts if
 *             its record in m cannot be allocated).
 * Implements: Prudence (ASPLOS 2016) §4 ("two frees").
 */
void ps_free_now(struct ps_mem *m, void *obj);

/*
 * ps_mem_reclaim - reclaim the caller's quiesced objects now, without the per-call bound.
 *
 * Adopts exited threads' queues (and, on instances without options, idle threads'),
 * stamps the caller's frees, reclaims every quiesced object at the head of its queue
 * with one scan, runs a scheduled pre-flush, then the due callbacks of m's ps (as
 * ps_call_poll). Call it from idle threads: their own queues wait otherwise
 * (docs/design.md §3, "Idle and exited threads", "The slow paths").
 *
 * Returns:    the number of objects reclaimed.
 * Progress:   never waits for quiescence; the pool mutex for a moment.
 * Caller:     any thread (a lazily registered one without a record aborts if it cannot
 *             get one).
 * Implements: ParSec (EuroSys 2016) §3.4; Prudence (ASPLOS 2016) §4.2 (the pre-flush).
 */
size_t ps_mem_reclaim(struct ps_mem *m);

/*
 * ps_mem_of, ps_mem_ps, ps_mem_obj_size, ps_mem_slab_size, ps_mem_slab_objects -
 * an allocator's properties.
 *
 * Returns:    ps_mem_of: the ps_mem obj came from (read from its slab header; obj from
 *             ps_alloc). ps_mem_ps: the ps m reclaims through. ps_mem_obj_size: bytes
 *             per object, as asked for. ps_mem_slab_size: bytes per slab.
 *             ps_mem_slab_objects: objects per slab (what each object costs in slab
 *             memory: slab_size / slab_objects).
 * Progress:   wait-free (fields fixed at creation).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §3.4.
 */
struct ps_mem *ps_mem_of(const void *obj);
struct ps *ps_mem_ps(const struct ps_mem *m);
size_t ps_mem_obj_size(const struct ps_mem *m);
size_t ps_mem_slab_size(const struct ps_mem *m);
unsigned ps_mem_slab_objects(const struct ps_mem *m);

/*
 * Counters of an allocator. Per-thread counters are summed without stopping the threads,
 * so a snapshot taken while others run is approximate (each counter is exact, their sum
 * is not atomic); taken with all threads quiet, it is exact. Counts of calls and events
 * are totals since creation; object counts are "now" unless named peak_.
 */
struct ps_mem_stats {
	uint64_t in_use;         /* objects allocated and not freed, now */
	uint64_t pending;        /* objects freed, waiting for quiescence (queues + orphaned
				  * queues), now */
	uint64_t cached;         /* objects in per-thread object caches, now */
	uint64_t allocs;         /* ps_alloc calls that returned an object */
	uint64_t frees;          /* ps_free calls (deferred frees) */
	uint64_t reclaimed;      /* objects moved from a queue to a cache after quiescence */
	uint64_t slabs;          /* slabs held now (owned by threads or in the pool) */
	uint64_t peak_slabs;     /* most slabs held at once */
	uint64_t cache_refills;  /* object-cache refills from slabs, count */
	uint64_t cache_flushes;  /* object-cache flushes to slabs, count */
	uint64_t slab_grows;     /* slabs obtained from the system, count */
	uint64_t slab_shrinks;   /* slabs returned to the system, count */
	uint64_t remote_frees;   /* objects returned to a slab owned by another thread */
	uint64_t max_wait_ticks; /* longest free-to-reclaim time seen, in ticks (from the
				  * free's stamp to the reclamation that made it reusable,
				  * grace-hook delays included) */
	/* Memory states of RT-SMR (RTAS 2018) §II-E, in objects. live == in_use; pending =
	 * zombie + garbage. EXACT accounting: live and pending are read from one counter
	 * word (a consistent pair at one instant) and the peaks are the exact maxima over
	 * every instant since creation. PER_THREAD: sums as above, peaks 0. */
	uint64_t live;           /* objects allocated, not freed */
	uint64_t freed;          /* objects reusable now: slab capacity - live - pending
				  * (object caches and slab free lists) */
	uint64_t peak_live;      /* most objects live at once */
	uint64_t peak_pending;   /* most objects pending at once */
	uint64_t peak_footprint; /* most objects live + pending at once (not reusable) */
	uint64_t grace_refusals; /* custom grace hook refusals, count */
	uint64_t exact;          /* 1 if accounting is EXACT, else 0 */
	uint64_t frees_now;      /* ps_free_now calls (immediate frees); the deferred share
				  * of frees is frees / (frees + frees_now) (Prudence
				  * (ASPLOS 2016) Fig. 12) */
	/* Prudence (ASPLOS 2016) §5's measures: */
	uint64_t cache_misses; /* ps_alloc calls that found the object cache empty */
	uint64_t cache_hits;   /* ps_alloc calls served by the cache: allocs -
				* cache_misses */
	uint64_t cache_churn;  /* refill/flush pairs: per thread min(refills, flushes),
				* summed; count */
	uint64_t slab_churn;   /* grow/shrink pairs: min(slab_grows, slab_shrinks); count */
	uint64_t slab_bytes;   /* bytes of slabs held now: slabs x slab size */
	uint64_t live_bytes;   /* bytes of live objects: live x object size; total
				* fragmentation f_t = slab_bytes / live_bytes (Prudence
				* (ASPLOS 2016) §4.2) */
	/* Where the pending objects go after their grace period (Prudence (ASPLOS 2016)
	 * §4.1), in objects: */
	uint64_t latent_slab;  /* to their slabs: the objects counted in latent slabs */
	uint64_t latent_cache; /* to object caches: pending - latent_slab */
	/* Zombie and garbage (RT-SMR (RTAS 2018) §II-E), objects; pending = zombie +
	 * garbage. garbage: pending objects whose free time is <= the quiescence point
	 * last learnt by the queue holding them (a thread's own queue: that thread's last
	 * reclamation; σ's queue: σ's last activation) - their grace period is over and the
	 * custom grace hook, if any, is asked next (objects it refused count here). zombie:
	 * the other pending objects (queued beyond that point, not yet stamped, in hand-off
	 * lists or orphaned queues). A queue's owner learns a point only when it reclaims,
	 * and a learnt point never passes the true one, so garbage is a LOWER bound on the
	 * objects whose grace period is over at that instant and zombie an UPPER bound on
	 * those whose grace period is not; their sum is exact. EXACT accounting: both come
	 * from one word updated with one atomic add per free and per reclamation (a
	 * consistent pair at one instant); clamped so that garbage <= pending. */
	uint64_t zombie;  /* objects, now */
	uint64_t garbage; /* objects, now */
	/* EXACT accounting: the maxima over every instant since creation of that word's
	 * zombie and garbage counts (0 otherwise). The garbage count rises only when a
	 * reclamation learns a quiescence point, so peak_garbage is the most garbage ever
	 * KNOWN at once: it is observed at reclamation instants only, and true garbage may
	 * have been higher in between (counted as zombie). peak_pending <= peak_zombie +
	 * peak_garbage (the word is updated before pending rises and after it falls). */
	uint64_t peak_zombie;  /* objects */
	uint64_t peak_garbage; /* objects */
	uint64_t handoff;      /* objects in hand-off lists, not yet taken by σ (zombie) */
	uint64_t task_queued;  /* objects in σ's queue of m (zombie or garbage) */
	/* Prudence (ASPLOS 2016) §4.2's hints at work, counts: */
	uint64_t preflushed;    /* objects the pre-flush moved from latent caches to their
				 * latent slabs */
	uint64_t slab_premoves; /* slabs pre-movement moved between lists ahead of their
				 * latent objects' return */
	/* Prudence (ASPLOS 2016) Fig. 7's object-cache hits, with the merge of the latent
	 * cache counted as Prudence counts it (its merge runs when the grace period ends,
	 * before the allocation that finds the objects): the share of allocations served
	 * without a refill is (cache_hits + merge_hits) / allocs. */
	uint64_t merge_hits; /* ps_alloc calls that found the object cache empty and were
			      * served, without a refill from slabs, by objects that their
			      * own reclamation had just moved into it */
	/* Waiting for a grace period (ps_alloc: the pending bound, max_bytes, a refused
	 * slab): */
	uint64_t alloc_waits;   /* allocation slow paths that waited, count */
	uint64_t wait_timeouts; /* of those, waits that reached limit_wait_ms (at the
				 * pending bound a slab was then mapped; otherwise ENOMEM) */
};
/*
 * ps_mem_stats - m's counters.
 *
 * Arguments:  out: filled with the counters.
 * Returns:    0, or -1 with errno = EINVAL (m or out NULL).
 * Progress:   blocking: takes the pool mutex briefly.
 * Caller:     any thread.
 * Implements: RT-SMR (RTAS 2018) §II-E (memory states); Prudence (ASPLOS 2016) §5
 *             (measures).
 */
int ps_mem_stats(struct ps_mem *m, struct ps_mem_stats *out);

/*
 * ps_mem_collect - reclaim without computing quiescence.
 *
 * Moves the objects at the head of the caller's queue freed at or before the caller's
 * last computed quiescence point (ps_quiescence_point of m's ps, e.g. just set by
 * ps_quiesce_time) - subject to the grace hook - to its object cache. For callers that
 * run quiescence as their own task.
 *
 * Returns:    the number of objects collected.
 * Progress:   never waits (bounded by the queue length). Called by a lazily
 *             registered thread that has no record in m (or in m's ps) yet, it allocates
 *             one and aborts if that fails (<tsync/thread.h>).
 * Caller:     any thread; it collects its own queue only.
 * Implements: the second half of RT-SMR (RTAS 2018) Fig. 8's ps_smr (lines 27-30).
 */
size_t ps_mem_collect(struct ps_mem *m);

/* What ps_stall_report found: which thread holds back quiescence of ps now, and what
 * waits because of it. */
struct ps_stall {
	int tid;                           /* registry id (tsync_thread_id()) of the thread inside a
					    * section of ps with the earliest enter time, -1 if no
					    * thread is inside one */
	unsigned inside;                   /* threads inside a section of ps now, count */
	tsync_tick_t enter;                /* that thread's enter time, ticks */
	tsync_tick_t section_ticks;        /* how long it has been inside its section, ticks */
	uint64_t section_ns;               /* the same, ns */
	bool over_grace;                   /* TEMPORAL: it has been inside for longer than the grace
					    * period - the policy's contract is broken and objects it
					    * reads may be reused under it */
	uint64_t waiting;                  /* objects of m that this section held back: the objects
					    * each thread's last reclamation attempt left queued
					    * because this section (this tid, this enter time) was the
					    * one its quiescence computation stopped at */
	uint64_t waiting_hook;             /* objects that the grace hook held back at each thread's
					    * last reclamation attempt */
	uint64_t pending;                  /* all pending objects of m (zombie + garbage) */
	tsync_tick_t oldest_pending_ticks; /* age in ticks of the oldest object held back (by
					    * a section or the hook) at its owner's last
					    * reclamation attempt; 0 if none */
};
/*
 * ps_stall_report - which thread holds back quiescence of ps now, and what waits.
 *
 * Arguments:  m: the allocator whose waiting objects to count, or NULL (object counts
 *             0). out: filled with the report.
 * Returns:    0, or -1 with errno = EINVAL (ps or out NULL, or m not on ps). Counts are
 *             snapshots of per-thread summaries written by their owners at their last
 *             reclamation: exact while the threads are quiet.
 * Progress:   wait-free apart from ps_mem_stats' pool mutex; reads every thread's record
 *             of ps (like ps_quiesce_time) and, with m, its reclamation summary of m.
 * Caller:     any thread.
 * Implements: diagnostics for RT-SMR (RTAS 2018) §IV (a section that overruns its
 *             bound); no paper section.
 */
int ps_stall_report(struct ps *ps, struct ps_mem *m, struct ps_stall *out);

/* ---- a budget shared by several allocators -------------------------------------------- */

/*
 * struct ps_mem_budget - one memory limit over the objects of several ps_mem (a program's
 * size classes: ps_kmem_class), with Prudence (ASPLOS 2016) §4's "wait instead of failing"
 * at it. A member charges each object ceil(ps_mem_slab_size / ps_mem_slab_objects) bytes
 * from its allocation until its memory is reusable again: while it is live and while,
 * freed by ps_free, it waits for its grace period (garbage). So charged bytes bound the
 * slab memory the members' objects occupy, whatever readers do; the budget never makes an
 * object reusable sooner - quiescence alone decides that (docs/design.md §3, "A budget
 * across allocators").
 */
struct ps_mem_budget;
struct ps_mem_budget_stats {
	uint64_t limit;    /* bytes, as created */
	uint64_t charged;  /* bytes charged now: live objects + garbage */
	uint64_t garbage;  /* of those, bytes of objects freed and waiting for a grace period */
	uint64_t waits;    /* ps_mem_budget_alloc calls that napped, count */
	uint64_t timeouts; /* of those, waits that reached wait_ms, count */
};
/* ps_mem_budget_alloc's flags: fail instead of waiting (a caller holding a lock that a
 * reader's grace period may need). */
#define PS_MEM_BUDGET_NOWAIT 1u
/* A budget wait's nap between tries, ns (fixed: a member's garbage returns at once when
 * a grace period ends, so a short nap ends a wait soon after). */
#define PS_MEM_BUDGET_NAP_NS 50000u

/*
 * ps_mem_room_fn - make room at the limit (evict, free): called by ps_mem_budget_alloc
 * when bytes do not fit, before it reclaims the members and waits.
 *
 * Arguments:  arg, the caller's; bytes, the charge wanted; naps, the naps this call made
 *             so far (per-nap retry counts restart when it grows).
 * Returns:    true if it may have made room (the charge is tried again at once), else
 *             false. It may call ps_free and ps_mem_reclaim on members, not allocate.
 */
typedef bool (*ps_mem_room_fn)(void *arg, size_t bytes, unsigned naps);

/*
 * ps_mem_budget_create, ps_mem_budget_destroy - a budget of limit bytes on ps.
 *
 * Arguments:  wait_ms: longest wait of one allocation for a grace period (0: 100;
 *             -1: never wait; at most 60000).
 * Returns:    the budget; NULL with errno = EINVAL (ps NULL, limit 0, wait_ms out of
 *             range) or ENOMEM. destroy: 0; -1 with errno = EBUSY while members remain.
 * Progress:   blocking (allocates / frees). Caller: any thread; destroy once no thread
 *             uses it and its members are destroyed (ps_mem_destroy detaches).
 */
struct ps_mem_budget *ps_mem_budget_create(struct ps *ps, uint64_t limit, int wait_ms);
int ps_mem_budget_destroy(struct ps_mem_budget *b);

/*
 * ps_mem_budget_attach - make m a member of b: from now on every object of m is charged,
 * ps_alloc(m) included (as ps_mem_budget_alloc(m, 0, NULL, NULL)).
 *
 * Returns:    0; -1 with errno = EINVAL (NULL, m on another ps than b, m a member
 *             already) or EBUSY (m has live or pending objects).
 * Caller:     any thread, before any other thread uses m (not checked).
 */
int ps_mem_budget_attach(struct ps_mem_budget *b, struct ps_mem *m);

/*
 * ps_mem_budget_alloc - ps_alloc(m) within m's budget; at the limit, make room and wait.
 *
 * Until the charge fits: room(arg, ...) if not NULL, else (or when it made none)
 * ps_mem_reclaim every member; then, while garbage exists, nap PS_MEM_BUDGET_NAP_NS and
 * retry, up to wait_ms from the first nap. Never waits with PS_MEM_BUDGET_NOWAIT, wait_ms
 * -1 or inside a section of b's ps (that section may hold the grace period back).
 * Returns:    the object; NULL with errno = ENOSPC (full, no garbage: waiting cannot
 *             help), ETIMEDOUT (garbage did not return within the wait, or no wait was
 *             allowed), EDEADLK (garbage, caller inside a section), EINVAL (m no member,
 *             unknown flags), or ps_alloc's errno (the charge is then given back).
 * Ordering:   as ps_alloc; the charge is a relaxed counter: it orders nothing.
 * Caller:     any thread. Implements: Prudence (ASPLOS 2016) §4, across allocators.
 */
void *ps_mem_budget_alloc(struct ps_mem *m, unsigned flags, ps_mem_room_fn room, void *arg);

/*
 * ps_mem_budget_stats - b's counters (snapshots of relaxed counters: exact while quiet).
 * Returns 0, or -1 with errno = EINVAL (NULL). Wait-free; any thread.
 */
int ps_mem_budget_stats(const struct ps_mem_budget *b, struct ps_mem_budget_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_MEM_H */
