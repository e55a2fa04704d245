/*
 * apps/vmdb/vmdb.c - the mapping database (vmdb.h; ParSec (EuroSys 2016) §4, §5.3).
 *
 * Objects:
 *   pid namespace    id = pid,   object struct vm_pid  -> struct vm_space (malloc'd)
 *   page namespace   id = vaddr, object struct vm_va   -> its mapping node (one per space)
 *   frame namespace  id = frame, object struct vm_frame -> the root mapping node
 *   mapping nodes    ps_mem objects: frame, space, vaddr, parent, children, a ps_lock
 * Pages and frames carry the TLB grace hook (tlb_grace): reusable only after quiescence
 * and a TLB flush later than their free time. Nodes are reused after quiescence alone.
 *
 * VMDB_SYNC_PS: an operation finds its node through the namespaces inside a section
 * and locks only that node (and, to unlink it, its parent first: parent before child,
 * the only lock order anywhere). The locked peers (GLOBAL, FRAME) run the same code
 * with node locks replaced by their coarser locks: each design is a table of operations
 * (struct vm_ops) that the shared code calls where it synchronises. docs/vmdb.md argues
 * correctness.
 */
#include "vmdb.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <tsync/arch.h>
#include <tsync/ps_lock.h>
#include <tsync/ps_ns.h>

#define ORDER_MAX 10u /* extents up to 1024 pages */
/* Fully free slabs each of the database's allocators keeps before unmapping (ps_mem's
 * slabs_kept; 1024 x 64 KiB at most): a mapping database keeps its memory as a kernel's
 * slab caches do, instead of giving it back after every large unmap and faulting it in
 * again at the next grant (the study: 41 K page faults in 3 rounds with ps_mem's default
 * of 4, 17 K with this; docs/vmdb.md §5). */
#define SLABS_KEPT 1024u

struct vm_space;
struct vm_frame;

struct vm_node {
	struct ps_lock lock;         /* VMDB_SYNC_PS: guards child list and removal */
	struct vm_frame *frame;      /* the frame (root of this tree) */
	struct vm_space *space;      /* where this mapping is */
	struct vm_va *va;            /* its page namespace entry */
	struct vm_node *parent;      /* NULL for the root (granted) mapping; never changes */
	struct vm_node *child;       /* first child; under this node's lock */
	struct vm_node *next, *prev; /* siblings; under the parent's lock */
	vmdb_vaddr_t vaddr;
	int pid;
	unsigned depth;
	uint64_t incarnation;
};

struct vm_va {
	_Atomic(struct vm_node *) node;
};

/* The per-frame lock of the designs that take one (their ops' frame_lock bytes follow
 * root; the frame namespace's objects are only as large as the design needs). */
union vm_frame_lock {
	pthread_mutex_t mx; /* VMDB_SYNC_FRAME: guards the whole mapping tree */
	struct ps_lock tk;  /* VMDB_SYNC_FRAME_TICKET: likewise, FIFO */
};

/* A FIFO ("task-fair") reader-writer ticket lock (Mellor-Crummey & Scott, PPoPP 1991,
 * the centralised fair reader-writer lock): a writer waits for every earlier reader and
 * writer, a reader for every earlier writer, so nobody is overtaken. req packs the read
 * and write requests so that one atomic step both takes a ticket and reads the other. */
struct tk_rw {
	_Atomic uint64_t req;          /* write requests << 32 | read requests, each mod 2^32 */
	_Atomic uint32_t rdone, wdone; /* completed reads and writes */
	_Atomic uint32_t sleepers;     /* waiters asleep on rdone or wdone (tk_wait) */
};

struct vm_frame {
	_Atomic(struct vm_node *) root;
	union vm_frame_lock lk[];
};

struct vm_pid {
	_Atomic(struct vm_space *) sp;
};

struct vm_space {
	struct ps_ns *va;
	int pid;
	_Atomic int dying;
	_Atomic uint64_t *pt; /* model: page table, frame + 1 per page (0: none) */
	char *region;         /* memfd: 2^va_bits pages of address space */
	union {
		pthread_rwlock_t rw; /* VMDB_SYNC_FRAME, VMDB_SYNC_RWLOCK */
		struct tk_rw tk;     /* VMDB_SYNC_FRAME_TICKET */
	} lk;
	struct vm_pid *entry;
};

struct vm_ops;

struct vmdb {
	struct vmdb_config cfg;
	const struct vm_ops *ops; /* the design's (cfg.sync) */
	struct ps *ps;
	struct ps_ns *pids, *frames;
	struct ps_mem *nodes;
	pthread_mutex_t global; /* VMDB_SYNC_GLOBAL */
	pthread_mutex_t rmap;   /* VMDB_SYNC_RWLOCK: every mapping tree */
	int fd;                 /* memfd */
	tsync_tick_t skew;
	_Atomic uint64_t last_flush, epoch, tlb_refusals, lock_failures;
	_Atomic unsigned nspaces; /* spaces alive or being created (max_spaces) */
	pthread_t flusher;
	bool has_flusher;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stop;
};

static _Thread_local uint64_t incarnations;

/* ---- grace and the TLB flusher ----------------------------------------------------------- */

static bool tlb_grace(struct ps_ns *ns, void *obj, uint64_t id, tsync_tick_t free_time, void *arg)
{
	(void)ns, (void)obj, (void)id;
	struct vmdb *db = arg;
	if (atomic_load_explicit(&db->last_flush, memory_order_acquire) > free_time + db->skew)
		return true;
	atomic_fetch_add_explicit(&db->tlb_refusals, 1, memory_order_relaxed);
	return false;
}

void vmdb_tlb_flush(struct vmdb *db)
{
	/* ordered: every unmap whose free time is below this reading happened before it */
	atomic_store_explicit(&db->last_flush, tsync_now_ordered(), memory_order_release);
	atomic_fetch_add_explicit(&db->epoch, 1, memory_order_relaxed);
}

uint64_t vmdb_tlb_epoch(struct vmdb *db)
{
	return atomic_load_explicit(&db->epoch, memory_order_relaxed);
}

static void *flusher_main(void *arg)
{
	struct vmdb *db = arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&db->stop_lock);
	while (!db->stop) {
		uint64_t ns = (uint64_t)next.tv_nsec + db->cfg.tlb_period_ns;
		next.tv_sec += (time_t)(ns / 1000000000u);
		next.tv_nsec = (long)(ns % 1000000000u);
		while (!db->stop &&
		       pthread_cond_timedwait(&db->stop_cond, &db->stop_lock, &next) != ETIMEDOUT)
			;
		if (!db->stop)
			vmdb_tlb_flush(db);
	}
	pthread_mutex_unlock(&db->stop_lock);
	return NULL;
}

/* ---- the designs: one table of operations each ---------------------------------------- */

/*
 * What a design does at each point where the shared code synchronises. A NULL hook does
 * nothing. Every operation runs inside a section (op_begin); then:
 *   op_lock/op_unlock      around the whole operation, lookups included (GLOBAL)
 *   sp_rd/sp_wr ... _done  around a look at / a change of one space's page namespace
 *                          entries and page table (never two spaces at once)
 *   tree_lock/tree_unlock  around a change of a frame's mapping tree, before any space
 *                          lock (the order: tree, then space)
 *   node_take/node_release a node found by lookup: false if it was freed meanwhile
 *   node_free              a removed node (held by node_take)
 * frame_lock: bytes of per-frame lock that frames carry (frame_init makes one unlocked
 * when a grant creates the frame's tree); sp_init/sp_fini: a space's lock.
 */
struct vm_ops {
	size_t frame_lock;
	void (*op_lock)(struct vmdb *db);
	void (*op_unlock)(struct vmdb *db);
	void (*sp_init)(struct vm_space *sp);
	void (*sp_fini)(struct vm_space *sp);
	void (*sp_rd)(struct vmdb *db, struct vm_space *sp);
	void (*sp_rd_done)(struct vm_space *sp);
	void (*sp_wr)(struct vmdb *db, struct vm_space *sp);
	void (*sp_wr_done)(struct vm_space *sp);
	void (*frame_init)(struct vm_frame *f);
	void (*tree_lock)(struct vmdb *db, struct vm_frame *f);
	void (*tree_unlock)(struct vmdb *db, struct vm_frame *f);
	bool (*node_take)(struct vm_node *n);
	void (*node_release)(struct vm_node *n);
	void (*node_free)(struct vmdb *db, struct vm_node *n);
};

/* VMDB_SYNC_PS: the node's own ticket lock, which fails on a freed node (§3.5). */
static bool ps_node_take(struct vm_node *n)
{
	return ps_lock_take(n, &n->lock);
}

static void ps_node_release(struct vm_node *n)
{
	ps_lock_release(n, &n->lock);
}

static void ps_node_free(struct vmdb *db, struct vm_node *n)
{
	(void)db;
	ps_lock_release_free(n, &n->lock); /* marks it: later ps_lock_take fails */
}

/* The locked designs: a coarser lock is held; a freed node is recognised by its mark. */
static bool mark_node_take(struct vm_node *n)
{
	return !ps_lock_is_freed(n);
}

static void mark_node_free(struct vmdb *db, struct vm_node *n)
{
	ps_free(db->nodes, n); /* marks it too (ps_lock_is_freed) */
}

/*
 * Lock acquisitions of the locked designs. With cfg.lock_wait, an acquisition that could
 * not take its lock at once reports how long it waited (the study's longest wait: where
 * an unfair lock starves a thread, the mean and p99.9 move, not the p99); without it,
 * the plain lock call.
 */
static void waited(struct vmdb *db, tsync_tick_t t0)
{
	db->cfg.lock_wait(db->cfg.lock_wait_arg, tsync_now() - t0);
}

/* Take lock l with take(l). With a lock_wait callback, try(l) first: a lock that was free
 * costs no clock read, and only a take that blocked is reported, with how long it took.
 * One macro for the mutexes and both sides of the rwlocks (the pthread calls differ only
 * in their types). */
#define TIMED_TAKE(db, take, try, l)               \
	do {                                       \
		if ((db)->cfg.lock_wait == NULL) { \
			take(l);                   \
			break;                     \
		}                                  \
		if (try(l) == 0)                   \
			break;                     \
		tsync_tick_t tt_t0_ = tsync_now(); \
		take(l);                           \
		waited((db), tt_t0_);              \
	} while (0)

static void mx_take(struct vmdb *db, pthread_mutex_t *m)
{
	TIMED_TAKE(db, pthread_mutex_lock, pthread_mutex_trylock, m);
}

/* VMDB_SYNC_GLOBAL */
static void global_lock(struct vmdb *db)
{
	mx_take(db, &db->global);
}

static void global_unlock(struct vmdb *db)
{
	pthread_mutex_unlock(&db->global);
}

/* VMDB_SYNC_FRAME: pthread reader-writer lock per space, mutex per frame tree */
static void rw_init(struct vm_space *sp)
{
	pthread_rwlock_init(&sp->lk.rw, NULL);
}

static void rw_fini(struct vm_space *sp)
{
	pthread_rwlock_destroy(&sp->lk.rw);
}

static void rw_rd(struct vmdb *db, struct vm_space *sp)
{
	TIMED_TAKE(db, pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, &sp->lk.rw);
}

static void rw_wr(struct vmdb *db, struct vm_space *sp)
{
	TIMED_TAKE(db, pthread_rwlock_wrlock, pthread_rwlock_trywrlock, &sp->lk.rw);
}

static void rw_done(struct vm_space *sp)
{
	pthread_rwlock_unlock(&sp->lk.rw);
}

static void fmx_init(struct vm_frame *f)
{
	pthread_mutex_init(&f->lk[0].mx, NULL);
}

static void fmx_lock(struct vmdb *db, struct vm_frame *f)
{
	mx_take(db, &f->lk[0].mx);
}

static void fmx_unlock(struct vmdb *db, struct vm_frame *f)
{
	(void)db;
	pthread_mutex_unlock(&f->lk[0].mx);
}

/* VMDB_SYNC_RWLOCK: the pthread rwlock per space, and one mutex for every tree */
static void rmap_lock(struct vmdb *db, struct vm_frame *f)
{
	(void)f;
	mx_take(db, &db->rmap);
}

static void rmap_unlock(struct vmdb *db, struct vm_frame *f)
{
	(void)f;
	pthread_mutex_unlock(&db->rmap);
}

/* VMDB_SYNC_FRAME_TICKET: struct tk_rw per space, a ticket lock per frame tree */
static void tk_init(struct vm_space *sp)
{
	atomic_init(&sp->lk.tk.req, 0);
	atomic_init(&sp->lk.tk.rdone, 0);
	atomic_init(&sp->lk.tk.wdone, 0);
	atomic_init(&sp->lk.tk.sleepers, 0);
}

/*
 * Wait until *word == want: spin briefly, then sleep on the word (futex). A FIFO lock
 * cannot let a waiter overtake the thread whose turn it is, so a waiter that yields
 * instead of sleeping keeps a CPU from that thread whenever there are more runnable
 * threads than CPUs: every hand-off then costs a scheduler time slice (seen: a release of
 * a few thousand pages took over a minute beside two busy loops). Asleep, the waiter
 * leaves the CPU to whoever holds the turn, and the store that passes the turn wakes it.
 * No lost wake-up: the waiter counts itself in `sleepers` before it reads the word it
 * sleeps on, the releaser stores the word before it reads `sleepers`, both seq_cst (so
 * one of them sees the other), and the kernel sleeps only while the word still holds the
 * value read.
 */
static void tk_wait(struct tk_rw *l, _Atomic uint32_t *word, uint32_t want)
{
	for (unsigned k = 0; k < 128u; k++) {
		if (atomic_load_explicit(word, memory_order_acquire) == want)
			return;
		tsync_arch_relax();
	}
	for (;;) {
		atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
		uint32_t v = atomic_load_explicit(word, memory_order_seq_cst);
		if (v != want)
			syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
		atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
		if (atomic_load_explicit(word, memory_order_acquire) == want)
			return;
	}
}

/* After a store to rdone or wdone: wake every sleeper on it (each re-checks its turn). */
static void tk_wake(struct tk_rw *l, _Atomic uint32_t *word)
{
	if (atomic_load_explicit(&l->sleepers, memory_order_seq_cst) != 0)
		syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void tk_rd(struct vmdb *db, struct vm_space *sp)
{
	struct tk_rw *l = &sp->lk.tk;
	uint64_t o = atomic_load_explicit(&l->req, memory_order_relaxed), n;
	do /* one more read request, without carrying into the write half */
		n = (o & ~(uint64_t)UINT32_MAX) | (uint32_t)(o + 1);
	while (!atomic_compare_exchange_weak_explicit(&l->req, &o, n, memory_order_relaxed,
						      memory_order_relaxed));
	uint32_t w = (uint32_t)(o >> 32); /* the writers before us */
	/* acquire: the last writer's critical section happens-before ours */
	if (atomic_load_explicit(&l->wdone, memory_order_acquire) == w)
		return;
	tsync_tick_t t0 = tsync_now();
	tk_wait(l, &l->wdone, w);
	if (db->cfg.lock_wait)
		waited(db, t0);
}

static void tk_rd_done(struct vm_space *sp)
{
	/* seq_cst: ordered before tk_wake's load of sleepers (tk_wait) */
	atomic_fetch_add_explicit(&sp->lk.tk.rdone, 1, memory_order_seq_cst);
	tk_wake(&sp->lk.tk, &sp->lk.tk.rdone);
}

static inline bool tk_wr_ready(struct tk_rw *l, uint32_t w, uint32_t r)
{
	/* acquire both: every earlier writer's and reader's critical section comes first */
	return atomic_load_explicit(&l->wdone, memory_order_acquire) == w &&
	       atomic_load_explicit(&l->rdone, memory_order_acquire) == r;
}

static void tk_wr(struct vmdb *db, struct vm_space *sp)
{
	struct tk_rw *l = &sp->lk.tk;
	uint64_t o = atomic_fetch_add_explicit(&l->req, (uint64_t)1 << 32, memory_order_relaxed);
	uint32_t w = (uint32_t)(o >> 32), r = (uint32_t)o;
	if (tk_wr_ready(l, w, r))
		return;
	tsync_tick_t t0 = tsync_now();
	/* earlier writers first (wdone reaches w only after them), then earlier readers: no
	 * reader that waits for us can complete, so rdone stops at r */
	tk_wait(l, &l->wdone, w);
	tk_wait(l, &l->rdone, r);
	if (db->cfg.lock_wait)
		waited(db, t0);
}

static void tk_wr_done(struct vm_space *sp)
{
	struct tk_rw *l = &sp->lk.tk;
	/* only the writer holding the lock stores wdone */
	uint32_t w = atomic_load_explicit(&l->wdone, memory_order_relaxed);
	/* seq_cst: ordered before tk_wake's load of sleepers (tk_wait) */
	atomic_store_explicit(&l->wdone, w + 1, memory_order_seq_cst);
	tk_wake(l, &l->wdone);
}

static void ftk_init(struct vm_frame *f)
{
	ps_lock_init(&f->lk[0].tk);
}

static void ftk_lock(struct vmdb *db, struct vm_frame *f)
{
	if (ps_lock_trylock(&f->lk[0].tk))
		return;
	tsync_tick_t t0 = tsync_now();
	ps_lock_lock(&f->lk[0].tk);
	if (db->cfg.lock_wait)
		waited(db, t0);
}

static void ftk_unlock(struct vmdb *db, struct vm_frame *f)
{
	(void)db;
	ps_lock_unlock(&f->lk[0].tk);
}

/* The space's pthread rwlock, shared by FRAME and RWLOCK. */
#define RW_SPACE_OPS                                                                   \
	.sp_init = rw_init, .sp_fini = rw_fini, .sp_rd = rw_rd, .sp_rd_done = rw_done, \
	.sp_wr = rw_wr, .sp_wr_done = rw_done

/* indexed by enum vmdb_sync */
static const struct vm_ops vm_ops[] = {
	[VMDB_SYNC_PS] = {.node_take = ps_node_take,
			  .node_release = ps_node_release,
			  .node_free = ps_node_free},
	[VMDB_SYNC_GLOBAL] = {.op_lock = global_lock,
			      .op_unlock = global_unlock,
			      .node_take = mark_node_take,
			      .node_free = mark_node_free},
	[VMDB_SYNC_FRAME] = {.frame_lock = sizeof(pthread_mutex_t),
			     RW_SPACE_OPS,
			     .frame_init = fmx_init,
			     .tree_lock = fmx_lock,
			     .tree_unlock = fmx_unlock,
			     .node_take = mark_node_take,
			     .node_free = mark_node_free},
	[VMDB_SYNC_RWLOCK] = {RW_SPACE_OPS, .tree_lock = rmap_lock, .tree_unlock = rmap_unlock,
			      .node_take = mark_node_take, .node_free = mark_node_free},
	[VMDB_SYNC_FRAME_TICKET] = {.frame_lock = sizeof(struct ps_lock),
				    .sp_init = tk_init,
				    .sp_rd = tk_rd,
				    .sp_rd_done = tk_rd_done,
				    .sp_wr = tk_wr,
				    .sp_wr_done = tk_wr_done,
				    .frame_init = ftk_init,
				    .tree_lock = ftk_lock,
				    .tree_unlock = ftk_unlock,
				    .node_take = mark_node_take,
				    .node_free = mark_node_free},
};

static void op_begin(struct vmdb *db)
{
	ps_enter(db->ps);
	if (db->ops->op_lock)
		db->ops->op_lock(db);
}

static void op_end(struct vmdb *db)
{
	if (db->ops->op_unlock)
		db->ops->op_unlock(db);
	ps_exit(db->ps);
}

/* sp_rd, sp_rd_done, sp_wr and sp_wr_done: the variant's hook of that name, where it has
 * one (the variants without a lock per space have none), called with the given arguments. */
#define VM_SPACE_HOOK(name, ...)                                      \
	static inline void name(struct vmdb *db, struct vm_space *sp) \
	{                                                             \
		if (db->ops->name)                                    \
			db->ops->name(__VA_ARGS__);                   \
	}
VM_SPACE_HOOK(sp_rd, db, sp)
VM_SPACE_HOOK(sp_rd_done, sp)
VM_SPACE_HOOK(sp_wr, db, sp)
VM_SPACE_HOOK(sp_wr_done, sp)

/* The end of an operation that claimed n entries (vmdb_grant, vmdb_alias): op_end, the
 * entry array freed unless it is the one on the stack, and rc returned with errno = err
 * when it failed (set last: free may change errno). */
static int op_finish(struct vmdb *db, void **vas, void **vas_on_stack, int rc, int err)
{
	op_end(db);
	if (vas != vas_on_stack)
		free(vas);
	if (rc)
		errno = err;
	return rc;
}

/* Take a node found by lookup, unless it was freed; counts the failures. */
static bool node_take(struct vmdb *db, struct vm_node *n)
{
	bool ok = db->ops->node_take(n);
	if (!ok)
		atomic_fetch_add_explicit(&db->lock_failures, 1, memory_order_relaxed);
	return ok;
}

static void node_release(struct vmdb *db, struct vm_node *n)
{
	if (db->ops->node_release)
		db->ops->node_release(n);
}

/* ---- backends ---------------------------------------------------------------------------- */

static inline uint64_t frame_no(struct vmdb *db, struct vm_frame *f)
{
	return ps_ns_id(db->frames, f);
}

/* Map n pages at v to frames f0.. (contiguous). */
static int backend_map(struct vmdb *db, struct vm_space *sp, vmdb_vaddr_t v, uint64_t f0, size_t n)
{
	if (db->cfg.backend == VMDB_BACKEND_MEMFD) {
		char *a = sp->region + v * VMDB_PAGE_SIZE;
		if (mmap(a, n * VMDB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 db->fd, (off_t)(f0 * VMDB_PAGE_SIZE)) == MAP_FAILED)
			return -1;
		if (db->cfg.touch)
			for (size_t i = 0; i < n; i++)
				*(volatile char *)(a + i * VMDB_PAGE_SIZE) = 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		atomic_store_explicit(&sp->pt[v + i], f0 + i + 1, memory_order_relaxed);
		if (db->cfg.touch) /* the study's "touch": read the entry back as a fault would */
			(void)atomic_load_explicit(&sp->pt[v + i], memory_order_relaxed);
	}
	return 0;
}

static void backend_unmap(struct vmdb *db, struct vm_space *sp, vmdb_vaddr_t v, size_t n)
{
	if (db->cfg.backend == VMDB_BACKEND_MEMFD) {
		if (mmap(sp->region + v * VMDB_PAGE_SIZE, n * VMDB_PAGE_SIZE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
			 0) == MAP_FAILED)
			abort(); /* cannot leave a stale mapping behind */
		return;
	}
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&sp->pt[v + i], 0, memory_order_relaxed);
}

/* ---- spaces ---------------------------------------------------------------------------- */

/* The space of pid, inside a section (NULL: errno = ESRCH). */
static struct vm_space *space_get(struct vmdb *db, int pid)
{
	struct vm_pid *e = pid < 0 ? NULL : ps_ns_lookup(db->pids, (uint64_t)pid);
	struct vm_space *sp = e ? atomic_load_explicit(&e->sp, memory_order_acquire) : NULL;
	if (sp == NULL)
		errno = ESRCH;
	return sp;
}

static void space_free(struct vmdb *db, struct vm_space *sp)
{
	ps_ns_destroy(sp->va);
	size_t pages = (size_t)1 << db->cfg.va_bits;
	if (sp->pt)
		munmap(sp->pt, pages * sizeof(uint64_t));
	if (sp->region)
		munmap(sp->region, pages * VMDB_PAGE_SIZE);
	if (db->ops->sp_fini)
		db->ops->sp_fini(sp);
	free(sp);
}

int vmdb_space_create(struct vmdb *db, int *pid)
{
	/* max_spaces alive at once (the pid namespace is the next power of two) */
	if (atomic_fetch_add_explicit(&db->nspaces, 1, memory_order_relaxed) >=
	    db->cfg.max_spaces) {
		atomic_fetch_sub_explicit(&db->nspaces, 1, memory_order_relaxed);
		errno = ENOSPC;
		return -1;
	}
	struct vm_space *sp = calloc(1, sizeof(*sp));
	if (sp == NULL) {
		atomic_fetch_sub_explicit(&db->nspaces, 1, memory_order_relaxed);
		return -1;
	}
	if (db->ops->sp_init)
		db->ops->sp_init(sp);
	struct ps_ns_config nc = PS_NS_CONFIG_INIT;
	nc.id_bits = db->cfg.va_bits;
	nc.max_order = db->cfg.va_bits < ORDER_MAX ? db->cfg.va_bits : ORDER_MAX;
	nc.extent_policy = PS_NS_EXTENT_SINGLY; /* a page released from a grant is reusable */
	if (db->cfg.tlb_period_ns) {
		nc.grace_fn = tlb_grace;
		nc.grace_arg = db;
	}
	size_t pages = (size_t)1 << db->cfg.va_bits;
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.slabs_kept = SLABS_KEPT;
	nc.mem = &mc;
	sp->va = ps_ns_create(db->ps, sizeof(struct vm_va), &nc);
	if (sp->va == NULL)
		goto fail;
	if (db->cfg.backend == VMDB_BACKEND_MEMFD) {
		void *r = mmap(NULL, pages * VMDB_PAGE_SIZE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (r == MAP_FAILED)
			goto fail;
		sp->region = r;
	} else {
		void *t = mmap(NULL, pages * sizeof(uint64_t), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (t == MAP_FAILED)
			goto fail;
		sp->pt = t;
	}
	uint64_t id;
	struct vm_pid *e = ps_ns_alloc(db->pids, &id);
	if (e == NULL)
		goto fail;
	sp->pid = (int)id;
	sp->entry = e;
	atomic_store_explicit(&e->sp, sp, memory_order_relaxed);
	ps_ns_publish(db->pids, e);
	*pid = (int)id;
	return 0;
fail:;
	int err = errno;
	space_free(db, sp);
	atomic_fetch_sub_explicit(&db->nspaces, 1, memory_order_relaxed);
	errno = err;
	return -1;
}

/* The node mapped at sp's page v (inside a section; under sp's read lock for FRAME). */
static struct vm_node *node_at(struct vmdb *db, struct vm_space *sp, vmdb_vaddr_t v)
{
	(void)db;
	struct vm_va *va = ps_ns_lookup(sp->va, v);
	return va ? atomic_load_explicit(&va->node, memory_order_acquire) : NULL;
}

/* ---- removal ------------------------------------------------------------------------- */

/*
 * A run of pages of one space that a release unmapped, whose page-table change (one
 * mmap for the run, memfd) and page frees are made together at the end: the pages
 * already resolve to nothing (their entries' node pointers are NULL), and their ids are
 * still bound, so nobody can map them meanwhile. Lives within one section.
 */
struct unmap_run {
	struct vm_space *sp;
	vmdb_vaddr_t start;
	size_t n;
	struct vm_va *va[64];
};

static void run_flush(struct vmdb *db, struct unmap_run *r)
{
	if (r->n == 0)
		return;
	sp_wr(db, r->sp);
	backend_unmap(db, r->sp, r->start, r->n);
	sp_wr_done(db, r->sp);
	for (size_t i = 0; i < r->n; i++)
		ps_ns_free(r->sp->va, r->va[i]); /* after quiescence and the next TLB flush */
	r->n = 0;
}

/* Undo n's mapping: page table, page id (TLB grace), frame id if n is the root. The
 * caller holds n (and, FRAME, its tree's mutex) and has unlinked it. With a run r, the
 * page-table change and the page free join r (flushed by the caller). */
static void unmap_node(struct vmdb *db, struct vm_node *n, struct unmap_run *r)
{
	struct vm_space *sp = n->space;
	sp_wr(db, sp);
	atomic_store_explicit(&n->va->node, NULL, memory_order_relaxed);
	if (r == NULL)
		backend_unmap(db, sp, n->vaddr, 1);
	sp_wr_done(db, sp);
	if (r == NULL) {
		ps_ns_free(sp->va, n->va); /* the page: after quiescence and the next TLB flush */
	} else {
		if (r->n && (r->sp != sp || r->start + r->n != n->vaddr || r->n == 64))
			run_flush(db, r);
		if (r->n == 0) {
			r->sp = sp;
			r->start = n->vaddr;
		}
		r->va[r->n++] = n->va;
	}
	if (n->parent == NULL) {
		atomic_store_explicit(&n->frame->root, NULL, memory_order_relaxed);
		ps_ns_free(db->frames, n->frame); /* the frame: likewise */
	}
}

static void node_free(struct vmdb *db, struct vm_node *n)
{
	db->ops->node_free(db, n);
}

/* Remove every descendant of n (held). Children are locked parent-first; a child
 * cannot be freed by anyone else meanwhile (that needs n's lock). Returns the count. */
static long remove_children(struct vmdb *db, struct vm_node *n)
{
	long count = 0;
	struct vm_node *c;
	while ((c = n->child) != NULL) {
		/* cannot fail: freeing c needs n's lock (or the coarser lock), which we hold */
		if (!db->ops->node_take(c))
			abort();
		count += remove_children(db, c);
		n->child = c->next;
		if (c->next)
			c->next->prev = NULL;
		unmap_node(db, c, NULL);
		node_free(db, c);
		count++;
	}
	return count;
}

static void unlink_child(struct vm_node *p, struct vm_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		p->child = n->next;
	if (n->next)
		n->next->prev = n->prev;
}

/* Lock the tree of n's frame after finding n (the design's tree lock, if it has one);
 * the caller then re-checks n with node_take. The frame stays valid within the section. */
static struct vm_frame *tree_lock(struct vmdb *db, struct vm_node *n)
{
	struct vm_frame *f = n->frame;
	if (db->ops->tree_lock)
		db->ops->tree_lock(db, f);
	return f;
}

static void tree_unlock(struct vmdb *db, struct vm_frame *f)
{
	if (db->ops->tree_unlock)
		db->ops->tree_unlock(db, f);
}

/* Remove the mapping at sp's page v: with_self: it and its descendants (release), else
 * the descendants only (revoke). Inside op_begin. Returns the count removed. */
static long remove_at(struct vmdb *db, struct vm_space *sp, vmdb_vaddr_t v, bool with_self,
		      struct unmap_run *r)
{
	sp_rd(db, sp);
	struct vm_node *n = node_at(db, sp, v);
	sp_rd_done(db, sp);
	if (n == NULL)
		return 0;
	struct vm_frame *f = tree_lock(db, n);
	struct vm_node *p = with_self ? n->parent : NULL;
	long count = 0;
	/* parent before child: the one lock order (docs/vmdb.md) */
	if (p && !node_take(db, p))
		goto out; /* p is being removed with its subtree, n included */
	if (!node_take(db, n))
		goto out_p; /* removed by a racing call */
	count = remove_children(db, n);
	if (with_self) {
		if (p)
			unlink_child(p, n);
		unmap_node(db, n, r);
		node_free(db, n);
		count++;
	} else {
		node_release(db, n);
	}
out_p:
	if (p)
		node_release(db, p);
out:
	tree_unlock(db, f);
	return count;
}

static long remove_range(struct vmdb *db, int pid, vmdb_vaddr_t mapat, size_t npages,
			 bool with_self)
{
	if (npages == 0 || mapat >= ((uint64_t)1 << db->cfg.va_bits) ||
	    npages > ((uint64_t)1 << db->cfg.va_bits) - mapat) {
		errno = EINVAL;
		return -1;
	}
	long count = 0;
	struct unmap_run run = {.n = 0};
	op_begin(db); /* one section (and, GLOBAL, one lock hold) per call, as one syscall */
	struct vm_space *sp = space_get(db, pid);
	if (sp == NULL) {
		op_end(db);
		return -1;
	}
	for (size_t i = 0; i < npages; i++)
		count += remove_at(db, sp, mapat + i, with_self, &run);
	run_flush(db, &run);
	op_end(db);
	return count;
}

long vmdb_revoke(struct vmdb *db, int pid, vmdb_vaddr_t mapat, size_t npages)
{
	return remove_range(db, pid, mapat, npages, false);
}

long vmdb_release(struct vmdb *db, int pid, vmdb_vaddr_t mapat, size_t npages)
{
	return remove_range(db, pid, mapat, npages, true);
}

/* ---- grant and alias --------------------------------------------------------------------- */

static struct vm_node *node_new(struct vmdb *db, struct vm_space *sp, struct vm_va *va,
				vmdb_vaddr_t v, struct vm_frame *f, struct vm_node *parent)
{
	struct vm_node *n = ps_alloc(db->nodes);
	if (n == NULL)
		return NULL;
	ps_lock_init(&n->lock);
	n->frame = f;
	n->space = sp;
	n->va = va;
	n->parent = parent;
	n->child = n->next = n->prev = NULL;
	n->vaddr = v;
	n->pid = sp->pid;
	n->depth = parent ? parent->depth + 1 : 0;
	n->incarnation = ((uint64_t)tsync_thread_id() << 40) | ++incarnations;
	return n;
}

int vmdb_grant(struct vmdb *db, int pid, size_t npages, vmdb_vaddr_t *vaddr)
{
	if (npages == 0 || npages > (1u << ORDER_MAX) || vaddr == NULL) {
		errno = EINVAL;
		return -1;
	}
	void *vas_s[64], *frs_s[64], **vas = vas_s, **frs = frs_s;
	if (npages > 64) {
		vas = malloc(2 * npages * sizeof(void *));
		if (vas == NULL)
			return -1;
		frs = vas + npages;
	}
	int rc = -1, err = 0;
	op_begin(db);
	struct vm_space *sp = space_get(db, pid);
	uint64_t vbase, fbase;
	if (sp == NULL || atomic_load_explicit(&sp->dying, memory_order_acquire)) {
		err = ESRCH;
		goto out;
	}
	if (ps_ns_alloc_extent(sp->va, npages, &vbase, vas) != 0) {
		err = errno;
		goto out;
	}
	if (ps_ns_alloc_extent(db->frames, npages, &fbase, frs) != 0) {
		err = errno;
		for (size_t i = 0; i < npages; i++)
			ps_ns_free(sp->va, vas[i]);
		goto out;
	}
	sp_wr(db, sp);
	size_t i;
	for (i = 0; i < npages; i++) {
		struct vm_frame *f = frs[i];
		struct vm_node *n = node_new(db, sp, vas[i], vbase + i, f, NULL);
		if (n == NULL)
			break;
		if (db->ops->frame_init)
			db->ops->frame_init(f);
		atomic_store_explicit(&f->root, n, memory_order_relaxed);
		atomic_store_explicit(&((struct vm_va *)vas[i])->node, n, memory_order_relaxed);
	}
	if (i < npages || backend_map(db, sp, vbase, fbase, npages) != 0) {
		err = i < npages ? ENOMEM : errno;
		for (size_t j = 0; j < i; j++)
			ps_free_now(db->nodes, atomic_load_explicit(&((struct vm_va *)vas[j])->node,
								    memory_order_relaxed));
		sp_wr_done(db, sp);
		for (size_t j = 0; j < npages; j++) {
			ps_ns_free(sp->va, vas[j]);
			ps_ns_free(db->frames, frs[j]);
		}
		goto out;
	}
	/* publish: the nodes' fields happen-before a lookup that finds them */
	for (i = 0; i < npages; i++) {
		ps_ns_publish(db->frames, frs[i]);
		ps_ns_publish(sp->va, vas[i]);
	}
	sp_wr_done(db, sp);
	*vaddr = vbase;
	rc = 0;
out:
	return op_finish(db, vas, vas_s, rc, err);
}

/* One page of an alias: src (found at from's page) -> a child at `to`'s page d (its
 * claimed, unpublished entry va). Inside op_begin. 0, or -1 with errno = ENOENT. */
static int alias_one(struct vmdb *db, struct vm_space *from, vmdb_vaddr_t s, struct vm_space *to,
		     vmdb_vaddr_t d, struct vm_va *va)
{
	sp_rd(db, from);
	struct vm_node *src = node_at(db, from, s);
	sp_rd_done(db, from);
	if (src == NULL) {
		errno = ENOENT;
		return -1;
	}
	struct vm_frame *f = tree_lock(db, src);
	if (!node_take(db, src)) {
		tree_unlock(db, f);
		errno = ENOENT;
		return -1;
	}
	struct vm_node *n = node_new(db, to, va, d, src->frame, src);
	if (n == NULL) {
		node_release(db, src);
		tree_unlock(db, f);
		errno = ENOMEM;
		return -1;
	}
	n->next = src->child;
	if (src->child)
		src->child->prev = n;
	src->child = n;
	sp_wr(db, to);
	atomic_store_explicit(&va->node, n, memory_order_relaxed);
	int rc = backend_map(db, to, d, frame_no(db, src->frame), 1);
	if (rc == 0)
		ps_ns_publish(to->va, va);
	sp_wr_done(db, to);
	if (rc != 0) { /* undo: unlink and free the node; the caller frees va */
		int e = errno;
		src->child = n->next;
		if (n->next)
			n->next->prev = NULL;
		atomic_store_explicit(&va->node, NULL, memory_order_relaxed);
		ps_free_now(db->nodes, n);
		errno = e;
	}
	node_release(db, src);
	tree_unlock(db, f);
	return rc;
}

int vmdb_alias(struct vmdb *db, int from, vmdb_vaddr_t mapfrom, int to, vmdb_vaddr_t *mapto,
	       size_t npages)
{
	if (npages == 0 || npages > (1u << ORDER_MAX) || mapto == NULL) {
		errno = EINVAL;
		return -1;
	}
	void *vas_s[64], **vas = vas_s;
	if (npages > 64 && (vas = malloc(npages * sizeof(void *))) == NULL)
		return -1;
	int rc = -1, err = 0;
	size_t claimed = 0, done = 0;
	uint64_t d0 = *mapto;
	op_begin(db);
	struct vm_space *sf = space_get(db, from), *st = space_get(db, to);
	if (sf == NULL || st == NULL || atomic_load_explicit(&st->dying, memory_order_acquire)) {
		err = ESRCH;
		goto out;
	}
	if (d0 == VMDB_ANY) {
		if (ps_ns_alloc_extent(st->va, npages, &d0, vas) != 0) {
			err = errno;
			goto out;
		}
		claimed = npages;
	} else {
		for (; claimed < npages; claimed++)
			if ((vas[claimed] = ps_ns_alloc_at(st->va, d0 + claimed)) == NULL) {
				err = errno;
				goto undo;
			}
	}
	for (; done < npages; done++)
		if (alias_one(db, sf, mapfrom + done, st, d0 + done, vas[done]) != 0) {
			err = errno;
			goto undo;
		}
	*mapto = d0;
	rc = 0;
	goto out;
undo:
	for (size_t j = done; j < claimed; j++) /* claimed, never published */
		ps_ns_free(st->va, vas[j]);
	op_end(db);
	if (done)
		vmdb_release(db, to, d0, done); /* may race with a revoke: either removes them */
	op_begin(db);
out:
	return op_finish(db, vas, vas_s, rc, err);
}

/* ---- lookup ------------------------------------------------------------------------------ */

/* The lookup, inside one section: the frame, and with m the node's record as well. */
static inline int lookup_at(struct vmdb *db, int pid, vmdb_vaddr_t vaddr, vmdb_frame_t *frame,
			    struct vmdb_mapping *m)
{
	int rc = -1;
	op_begin(db);
	struct vm_space *sp = space_get(db, pid);
	if (sp) {
		sp_rd(db, sp);
		struct vm_node *n = node_at(db, sp, vaddr);
		if (n) {
			*frame = frame_no(db, n->frame);
			if (m) {
				m->pid = n->pid;
				m->vaddr = n->vaddr;
				m->parent_pid = n->parent ? n->parent->pid : -1;
				m->parent_vaddr = n->parent ? n->parent->vaddr : 0;
				m->incarnation = n->incarnation;
				m->depth = n->depth;
			}
			rc = 0;
		} else {
			errno = ENOENT;
		}
		sp_rd_done(db, sp);
	}
	op_end(db);
	return rc;
}

int vmdb_lookup_mapping(struct vmdb *db, int pid, vmdb_vaddr_t vaddr, struct vmdb_mapping *out)
{
	return lookup_at(db, pid, vaddr, &out->frame, out);
}

int vmdb_lookup(struct vmdb *db, int pid, vmdb_vaddr_t vaddr, vmdb_frame_t *frame)
{
	return lookup_at(db, pid, vaddr, frame, NULL);
}

void *vmdb_page(struct vmdb *db, int pid, vmdb_vaddr_t vaddr)
{
	if (db->cfg.backend != VMDB_BACKEND_MEMFD || vaddr >> db->cfg.va_bits)
		return NULL;
	ps_enter(db->ps);
	struct vm_space *sp = space_get(db, pid);
	char *a = sp ? sp->region + vaddr * VMDB_PAGE_SIZE : NULL;
	ps_exit(db->ps);
	return a;
}

/* ---- whole spaces, create, destroy, stats -------------------------------------------- */

int vmdb_space_destroy(struct vmdb *db, int pid)
{
	ps_enter(db->ps);
	struct vm_space *sp = space_get(db, pid);
	if (sp == NULL || atomic_exchange(&sp->dying, 1)) {
		ps_exit(db->ps);
		errno = ESRCH;
		return -1;
	}
	/* the pid stops naming sp; grants and aliases into sp that did not see `dying`
	 * began their section before this point, and end before ps_synchronize returns */
	atomic_store_explicit(&sp->entry->sp, NULL, memory_order_release);
	ps_exit(db->ps);
	ps_synchronize(db->ps);
	uint64_t v = 0;
	for (;;) {
		ps_enter(db->ps);
		struct vm_va *va = ps_ns_next(sp->va, &v);
		ps_exit(db->ps);
		if (va == NULL)
			break;
		op_begin(db);
		remove_at(db, sp, v, true, NULL);
		op_end(db);
		v++;
	}
	/* no node of sp is linked anywhere now; wait for walkers that still saw one */
	ps_synchronize(db->ps);
	ps_ns_free(db->pids, sp->entry);
	space_free(db, sp);
	atomic_fetch_sub_explicit(&db->nspaces, 1, memory_order_relaxed);
	return 0;
}

struct vmdb *vmdb_create(const struct vmdb_config *cfg)
{
	struct vmdb_config c = VMDB_CONFIG_INIT;
	if (cfg) {
		if (cfg->size != sizeof(c)) {
			errno = EINVAL;
			return NULL;
		}
		c = *cfg;
	}
	if (c.va_bits == 0)
		c.va_bits = 20;
	if (c.frame_bits == 0)
		c.frame_bits = 22;
	if (c.max_spaces == 0)
		c.max_spaces = 1024;
	if (c.sync < 0 || (size_t)c.sync >= sizeof vm_ops / sizeof vm_ops[0] ||
	    vm_ops[c.sync].node_take == NULL ||
	    (c.backend != VMDB_BACKEND_MODEL && c.backend != VMDB_BACKEND_MEMFD) ||
	    c.va_bits > 36 || c.frame_bits > 36 || c.max_spaces > (1u << 20)) {
		errno = EINVAL;
		return NULL;
	}
	struct vmdb *db = calloc(1, sizeof(*db));
	if (db == NULL)
		return NULL;
	db->cfg = c;
	db->ops = &vm_ops[c.sync];
	db->fd = -1;
	pthread_mutex_init(&db->global, NULL);
	pthread_mutex_init(&db->rmap, NULL);
	pthread_mutex_init(&db->stop_lock, NULL);
	pthread_cond_init(&db->stop_cond, NULL);
	/* pids: twice max_spaces, so that as many destroyed pids can wait for quiescence */
	unsigned pid_bits = 1;
	while ((1u << pid_bits) < 2 * c.max_spaces)
		pid_bits++;
	struct ps_ns_config pc = PS_NS_CONFIG_INIT, fc = PS_NS_CONFIG_INIT;
	pc.id_bits = pid_bits;
	pc.max_order = 0;
	fc.id_bits = c.frame_bits;
	fc.max_order = c.frame_bits < ORDER_MAX ? c.frame_bits : ORDER_MAX;
	fc.extent_policy = PS_NS_EXTENT_SINGLY; /* so is a frame */
	if (c.tlb_period_ns) {
		fc.grace_fn = tlb_grace;
		fc.grace_arg = db;
	}
	struct ps_mem_config mc = PS_MEM_CONFIG_INIT;
	mc.slabs_kept = SLABS_KEPT;
	fc.mem = &mc;
	int err = ENOMEM;
	if ((db->ps = ps_create(NULL)) == NULL ||
	    (db->pids = ps_ns_create(db->ps, sizeof(struct vm_pid), &pc)) == NULL ||
	    (db->frames = ps_ns_create(db->ps, sizeof(struct vm_frame) + db->ops->frame_lock,
				       &fc)) == NULL ||
	    (db->nodes = ps_mem_create(db->ps, sizeof(struct vm_node), &mc)) == NULL)
		goto fail;
	db->skew = ps_skew_ticks(db->ps);
	if (c.backend == VMDB_BACKEND_MEMFD) {
		db->fd = memfd_create("tsync-vmdb", MFD_CLOEXEC);
		if (db->fd < 0 || ftruncate(db->fd, (off_t)(((uint64_t)1 << c.frame_bits) *
							    VMDB_PAGE_SIZE)) != 0) {
			err = errno;
			goto fail;
		}
	}
	if (c.tlb_period_ns && !c.no_tlb_thread) {
		if ((err = pthread_create(&db->flusher, NULL, flusher_main, db)) != 0)
			goto fail;
		db->has_flusher = true;
	}
	return db;
fail:
	vmdb_destroy(db);
	errno = err;
	return NULL;
}

void vmdb_destroy(struct vmdb *db)
{
	if (db == NULL)
		return;
	if (db->has_flusher) {
		pthread_mutex_lock(&db->stop_lock);
		db->stop = true;
		pthread_cond_signal(&db->stop_cond);
		pthread_mutex_unlock(&db->stop_lock);
		pthread_join(db->flusher, NULL);
	}
	if (db->pids) {
		uint64_t id = 0;
		struct vm_pid *e;
		ps_enter(db->ps);
		while ((e = ps_ns_next(db->pids, &id)) != NULL) {
			struct vm_space *sp = atomic_load_explicit(&e->sp, memory_order_relaxed);
			if (sp)
				space_free(db, sp);
			id++;
		}
		ps_exit(db->ps);
	}
	ps_ns_destroy(db->pids);
	ps_ns_destroy(db->frames);
	ps_mem_destroy(db->nodes);
	ps_destroy(db->ps);
	if (db->fd >= 0)
		close(db->fd);
	pthread_mutex_destroy(&db->global);
	pthread_mutex_destroy(&db->rmap);
	pthread_mutex_destroy(&db->stop_lock);
	pthread_cond_destroy(&db->stop_cond);
	free(db);
}

int vmdb_stats(struct vmdb *db, struct vmdb_stats *out)
{
	if (db == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	struct ps_ns_stats s;
	struct ps_mem_stats m;
	ps_ns_stats(db->pids, &s);
	out->spaces = s.live;
	ps_ns_stats(db->frames, &s);
	out->frames_live = s.live;
	out->frames_grace = s.grace;
	ps_mem_stats(db->nodes, &m);
	out->mappings = m.in_use;
	out->nodes_pending = m.pending;
	uint64_t id = 0;
	struct vm_pid *e;
	ps_enter(db->ps);
	while ((e = ps_ns_next(db->pids, &id)) != NULL) {
		struct vm_space *sp = atomic_load_explicit(&e->sp, memory_order_acquire);
		if (sp) {
			ps_ns_stats(sp->va, &s);
			out->pages_live += s.live;
			out->pages_grace += s.grace;
		}
		id++;
	}
	ps_exit(db->ps);
	out->tlb_refusals = atomic_load_explicit(&db->tlb_refusals, memory_order_relaxed);
	out->lock_failures = atomic_load_explicit(&db->lock_failures, memory_order_relaxed);
	out->tlb_epoch = atomic_load_explicit(&db->epoch, memory_order_relaxed);
	return 0;
}
