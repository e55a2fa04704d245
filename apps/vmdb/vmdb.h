/*
 * apps/vmdb/vmdb.h - a virtual-memory mapping database on parallel sections (ParSec (EuroSys 2016)
 * §4, evaluated in §5.3).
 *
 * The recursive address-space model of µ-kernels: a process is granted pages backed by
 * physical frames, aliases them into other address spaces (shared memory), and revokes
 * every mapping derived from its own, recursively. Each physical frame is the root of a
 * tree of mapping nodes: grant creates the root mapping, every alias a child of the
 * mapping it was made from. Three ParSec namespaces (<tsync/ps_ns.h>) name everything:
 * address spaces by pid, virtual pages per address space, physical frames. Mapping
 * nodes come from a ps_mem and carry a ps_lock each.
 *
 * Synchronisation (VMDB_SYNC_PS, the seed's design): lookups go through the namespaces
 * inside a parallel section - no lock, no reference count, no store to a shared line -
 * and an update locks only the node it found (ps_lock_take, which fails when the node
 * was freed meanwhile: the update then reports that it lost the race). The tree is
 * walked only under the lock of the node where the walk starts; locks are taken parent
 * before child, so revoke cannot deadlock (docs/vmdb.md, "Correctness").
 *
 * Two grace periods (§5.3, SPECK's): mapping nodes are reused after quiescence; the
 * virtual pages and frames of an unmapped region only after quiescence *and* the next
 * TLB flush - a flusher thread advances a flush epoch every tlb_period_ns, and the
 * page and frame namespaces' grace hook refuses ids freed after the last flush.
 *
 * Peers, for the study (cfg->sync): the same database under one global mutex
 * (VMDB_SYNC_GLOBAL); with a reader-writer lock per address space and one mutex for
 * every mapping tree (VMDB_SYNC_RWLOCK, as Linux's mmap_lock); and with a reader-writer
 * lock per address space and a lock per frame tree (the "reasonable" design §4
 * describes), with pthread locks (VMDB_SYNC_FRAME) or FIFO ticket locks
 * (VMDB_SYNC_FRAME_TICKET). cfg->lock_wait reports the locked designs' waits.
 *
 * Backends (cfg->backend): VMDB_BACKEND_MODEL keeps a page table per address space as
 * an array of frame numbers (it isolates synchronisation: the default for the study);
 * VMDB_BACKEND_MEMFD backs frames with pages of a memfd and really maps them with
 * mmap(MAP_FIXED | MAP_SHARED) into a reserved region of this process per address
 * space, so the database manages real memory; its scalability is bounded by the
 * kernel's mmap lock (docs/vmdb.md). The memfd file keeps a frame's memory once it was
 * touched (a sparse file as large as the most frames used at once).
 *
 * Pages and addresses are page numbers (vmdb_vaddr_t: the page index in the address
 * space; vmdb_frame_t: the frame index), not byte addresses. Every function may be
 * called by any thread; all return 0 (or a count) on success and -1 with errno set on
 * failure.
 */
#ifndef TSYNC_VMDB_H
#define TSYNC_VMDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vmdb;
typedef uint64_t vmdb_vaddr_t; /* a page number in an address space */
typedef uint64_t vmdb_frame_t; /* a physical frame number */
#define VMDB_ANY UINT64_MAX    /* vmdb_alias: let the database choose the destination */
#define VMDB_PAGE_SIZE 4096u

enum vmdb_sync {
	VMDB_SYNC_PS = 0,           /* ParSec: wait-free lookups, node locks (the default) */
	VMDB_SYNC_GLOBAL = 1,       /* every operation, lookups included, under one mutex */
	VMDB_SYNC_FRAME = 2,        /* rwlock per address space (lookups read-lock it) and a
				     * mutex per frame's mapping tree; lock order frame, then
				     * one address space at a time (pthread locks) */
	VMDB_SYNC_RWLOCK = 3,       /* pthread rwlock per address space (lookups read-lock it,
				     * page-table changes write-lock it) and one mutex for
				     * every mapping tree (alias, revoke, release), taken first */
	VMDB_SYNC_FRAME_TICKET = 4, /* VMDB_SYNC_FRAME with FIFO locks: a ticket
				     * reader-writer lock per space, a ticket lock
				     * (ps_lock_lock) per frame tree */
};
enum vmdb_backend {
	VMDB_BACKEND_MODEL = 0, /* page tables are arrays */
	VMDB_BACKEND_MEMFD = 1, /* frames are memfd pages mapped into this process */
};

struct vmdb_config {
	size_t size;            /* sizeof(struct vmdb_config) */
	int sync;               /* enum vmdb_sync */
	int backend;            /* enum vmdb_backend */
	unsigned va_bits;       /* pages per address space: 2^va_bits (default 20: 4 GiB) */
	unsigned frame_bits;    /* frames: 2^frame_bits (default 22: 16 GiB; memfd: a sparse
				 * file of that size) */
	unsigned max_spaces;    /* address spaces alive at once (default 1024) */
	uint64_t tlb_period_ns; /* simulated TLB flush period (VMDB_CONFIG_INIT and a NULL
				 * cfg: 10 ms); 0: no flusher and no TLB grace, pages and
				 * frames are reused after quiescence alone */
	bool touch;             /* write every page after mapping it (memfd: commits memory;
				 * model: writes its page-table entry again) */
	bool no_tlb_thread;     /* tests: no flusher thread; vmdb_tlb_flush advances the
				 * epoch by hand */
	/* The locked designs (not VMDB_SYNC_PS): called by a thread that had to wait for a
	 * lock, once it holds it, with the wait in tsync_now() ticks (NULL: no timing). */
	void (*lock_wait)(void *arg, uint64_t ticks);
	void *lock_wait_arg;
};
#define VMDB_CONFIG_INIT                                                                          \
	{                                                                                         \
		sizeof(struct vmdb_config), VMDB_SYNC_PS, VMDB_BACKEND_MODEL, 0, 0, 0, 10000000u, \
			false, false, NULL, NULL                                                  \
	}

/* vmdb_create: a database (and its TLB flusher thread unless tlb_period_ns is 0 or
 * no_tlb_thread). NULL with errno = EINVAL (bad field) or ENOMEM (or the memfd/mmap
 * errno). vmdb_destroy: stop the flusher, unmap and free everything (no thread may use
 * db any more). */
struct vmdb *vmdb_create(const struct vmdb_config *cfg);
void vmdb_destroy(struct vmdb *db);

/* vmdb_space_create: a new, empty address space; its pid in *pid. -1 with errno =
 * ENOSPC (max_spaces alive; or more than max_spaces destroyed pids still wait for
 * quiescence) or ENOMEM. vmdb_space_destroy: release every mapping of
 * pid (and their descendants elsewhere) and free the pid (reused after quiescence).
 * -1 with errno = ESRCH (no such pid). Blocking (a walk of the space). */
int vmdb_space_create(struct vmdb *db, int *pid);
int vmdb_space_destroy(struct vmdb *db, int pid);

/*
 * vmdb_grant: map npages new frames at npages contiguous new pages of pid (an extent of
 * its page namespace of 2^k pages, k the smallest with 2^k >= npages, aligned to 2^k).
 * The first page's number in *vaddr. npages in [1, 1024] (the page namespace's largest
 * extent). -1 with errno = ESRCH (pid), EINVAL (npages), ENOSPC (no pages or frames
 * left), ENOMEM. On failure nothing is mapped.
 */
int vmdb_grant(struct vmdb *db, int pid, size_t npages, vmdb_vaddr_t *vaddr);

/*
 * vmdb_alias: map the frames behind from's pages [mapfrom, mapfrom + npages) into
 * to's pages [*mapto, ...), each a child of the mapping it came from. *mapto ==
 * VMDB_ANY: the database picks a free extent of `to` and stores its first page there.
 * -1 with errno = ESRCH (pid), ENOENT (a source page is not mapped, or its mapping was
 * removed while we aliased it: we lost a race with revoke/release), EEXIST/EBUSY (a
 * destination page is mapped, or was unmapped and waits for its grace period), ENOSPC
 * (*mapto == VMDB_ANY and `to` has no free extent of that size: its pages are mapped or
 * wait for their grace period), EINVAL (npages 0 or > 1024). On failure nothing is
 * mapped (pages done so far are undone).
 */
int vmdb_alias(struct vmdb *db, int from, vmdb_vaddr_t mapfrom, int to, vmdb_vaddr_t *mapto,
	       size_t npages);

/*
 * vmdb_revoke: remove every mapping derived (recursively) from pid's mappings of pages
 * [mapat, mapat + npages); pid keeps its own. vmdb_release: remove pid's mappings of
 * those pages and everything derived from them (the unmap: a granted page's frame is
 * freed too). Pages not mapped are skipped. Returns the number of mappings this call
 * removed (racing calls split them: each mapping is removed by exactly one), or -1 with
 * errno = ESRCH (pid) or EINVAL (npages 0). The removed pages and frames are reusable
 * after quiescence and the next TLB flush.
 */
long vmdb_revoke(struct vmdb *db, int pid, vmdb_vaddr_t mapat, size_t npages);
long vmdb_release(struct vmdb *db, int pid, vmdb_vaddr_t mapat, size_t npages);

/*
 * vmdb_lookup: the frame mapped at pid's page vaddr (the page-fault path). 0 with the
 * frame in *frame, or -1 with errno = ENOENT (not mapped) or ESRCH (no such pid).
 * VMDB_SYNC_PS: wait-free - a parallel section, three namespace lookups and the node's
 * fields; no store to a shared line.
 */
int vmdb_lookup(struct vmdb *db, int pid, vmdb_vaddr_t vaddr, vmdb_frame_t *frame);

/* What vmdb_lookup_mapping reports, read inside one section. */
struct vmdb_mapping {
	vmdb_frame_t frame;
	int pid;            /* the node's own record of where it maps: equal to the pid */
	vmdb_vaddr_t vaddr; /* and vaddr looked up, unless the node was reused under us */
	int parent_pid;     /* -1 for a granted (root) mapping */
	vmdb_vaddr_t parent_vaddr;
	uint64_t incarnation; /* the node's allocation count: changes when it is reused */
	unsigned depth;       /* 0 for a root mapping */
};
/* vmdb_lookup_mapping: vmdb_lookup with the node's identity, for tests and tools. */
int vmdb_lookup_mapping(struct vmdb *db, int pid, vmdb_vaddr_t vaddr, struct vmdb_mapping *out);

/* vmdb_page: memfd backend: the address in this process where pid's page vaddr is
 * mapped (a PROT_NONE page when nothing is); NULL for the model backend. */
void *vmdb_page(struct vmdb *db, int pid, vmdb_vaddr_t vaddr);

/* vmdb_tlb_flush: advance the TLB flush epoch now (the flusher thread calls it every
 * tlb_period_ns). vmdb_tlb_epoch: flushes so far. */
void vmdb_tlb_flush(struct vmdb *db);
uint64_t vmdb_tlb_epoch(struct vmdb *db);

struct vmdb_stats {
	uint64_t spaces;        /* address spaces alive */
	uint64_t mappings;      /* mapping nodes alive */
	uint64_t pages_live;    /* pages reserved or mapped in all address spaces */
	uint64_t pages_grace;   /* pages unmapped, waiting for quiescence + TLB flush */
	uint64_t frames_live;   /* frames in use */
	uint64_t frames_grace;  /* frames freed, waiting for quiescence + TLB flush */
	uint64_t tlb_refusals;  /* times the TLB grace hook held a page or frame back */
	uint64_t lock_failures; /* ps_lock_take failures (node freed under a racing update) */
	uint64_t nodes_pending; /* mapping nodes waiting for quiescence */
	uint64_t tlb_epoch;
};
int vmdb_stats(struct vmdb *db, struct vmdb_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_VMDB_H */
