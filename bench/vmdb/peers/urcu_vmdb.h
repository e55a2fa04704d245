/*
 * bench/vmdb/peers/urcu_vmdb.h - the `urcu` peer of `tsync-bench vmdb`: a virtual-memory mapping
 * database with the API of apps/vmdb/vmdb.h, built the way a user-space program would
 * build it on liburcu today.
 *
 *  - One global RCU lock-free hash table (rculfhash, memb flavour) maps the key (pid,
 *    vaddr) to the mapping node. Lookups run in rcu_read_lock; nothing else.
 *  - Every physical frame's mappings form a tree whose root is the granted mapping; the
 *    root carries a pthread mutex that alias, revoke and release take (one tree at a
 *    time, so they cannot deadlock). A node found in the hash is re-checked under that
 *    mutex (removed meanwhile: the alias fails with ENOENT, revoke/release skip it).
 *  - Removed nodes leave the hash with cds_lfht_del under the tree's mutex and are freed
 *    with call_rcu (liburcu's call_rcu worker thread runs the frees).
 *  - Virtual pages: per address space, extents of 2^k pages aligned to 2^k (k <= 10), a
 *    bump pointer over never-used pages and a free stack per order, under a mutex per
 *    address space; an extent is pushed back when its last page is unmapped (no
 *    coalescing, no splitting back: like ps_ns). Pages that the bump pointer skips to
 *    align an extent go to the free stacks of their orders.
 *  - Frames: a global atomic bump counter over never-used frames; a grant of 2^k pages
 *    takes 2^k contiguous frames. Freed frame extents go to a free stack per order of the
 *    address space that was granted them (under its mutex).
 *  - Pages and frames are reused as soon as they are unmapped: no grace period, no TLB
 *    flush epoch (a user-space map has no TLB to shoot down; the kernel's munmap does
 *    that). Only the mapping nodes wait for RCU.
 *  - memfd backend (uvm_config.memfd): frames are pages of a memfd of 2^frame_bits
 *    pages; every address space reserves 2^va_bits pages (PROT_NONE); a grant maps its
 *    contiguous frames with one mmap(MAP_SHARED | MAP_FIXED), an alias maps one page, an
 *    unmap maps PROT_NONE anonymous memory over the page range (one call per contiguous
 *    run). Frames are never punched out of the memfd: reused frames stay committed.
 *  - touch: memfd: writes a word in every granted page; model: stores the frame number
 *    into the node again (the page-table write of vmdb's model backend).
 *
 * Threads: every thread that calls anything here must be a registered liburcu (memb)
 * thread (uvm_thread_online); uvm_create/uvm_destroy included. Blocking: every update
 * takes mutexes; uvm_lookup is wait-free apart from rculfhash's lookup itself.
 */
#ifndef TSYNC_BENCH_URCU_VMDB_H
#define TSYNC_BENCH_URCU_VMDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct uvm;

#define UVM_ANY UINT64_MAX  /* uvm_alias: the only destination supported (see there) */
#define UVM_MAX_PAGES 1024u /* the largest grant / alias */

struct uvm_config {
	bool memfd;          /* real memory (see the top of this file); false: the model */
	bool touch;          /* write every granted page after mapping it */
	unsigned va_bits;    /* pages per address space: 2^va_bits (12..36) */
	unsigned frame_bits; /* frames: 2^frame_bits (12..40) */
	unsigned max_spaces; /* address spaces (pids 0..max_spaces-1) */
	size_t size_hint;    /* mappings expected at once: the hash table's initial and
			      * smallest bucket count (at least 1024, at most 2^24) */
};

/* Register / unregister the calling thread with liburcu (memb). */
void uvm_thread_online(void);
void uvm_thread_offline(void);

/* NULL with errno set (EINVAL, ENOMEM, or memfd_create/ftruncate's). */
struct uvm *uvm_create(const struct uvm_config *cfg);
/* Removes every mapping, waits for the RCU callbacks and frees everything. */
void uvm_destroy(struct uvm *db);

/* A new empty address space; -1 with errno = ENOSPC or ENOMEM. */
int uvm_space_create(struct uvm *db, int *pid);

/* vmdb_grant: npages (1..1024) new frames at an aligned extent of new pages. -1 with
 * errno = ESRCH, EINVAL, ENOSPC or ENOMEM (nothing mapped then). */
int uvm_grant(struct uvm *db, int pid, size_t npages, uint64_t *vaddr);

/* vmdb_alias with *mapto == UVM_ANY (an explicit destination is refused with EINVAL:
 * the benchmark never asks for one): maps from's pages [mapfrom, mapfrom + npages) at a
 * new aligned extent of `to`, each a child of its source mapping. -1 with errno = ESRCH,
 * EINVAL, ENOENT (a source page not mapped, or removed while aliased), ENOSPC or ENOMEM;
 * nothing is left mapped then. */
int uvm_alias(struct uvm *db, int from, uint64_t mapfrom, int to, uint64_t *mapto, size_t npages);

/* vmdb_revoke / vmdb_release: the number of mappings removed, or -1 with errno = ESRCH
 * or EINVAL. Pages not mapped are skipped. */
long uvm_revoke(struct uvm *db, int pid, uint64_t mapat, size_t npages);
long uvm_release(struct uvm *db, int pid, uint64_t mapat, size_t npages);

/* vmdb_lookup: 0 with the frame, or -1 with errno = ENOENT or ESRCH. */
int uvm_lookup(struct uvm *db, int pid, uint64_t vaddr, uint64_t *frame);

/* Mapping nodes in the hash table now (a sanity check: 0 once everything is unmapped). */
uint64_t uvm_mappings(struct uvm *db);

#endif
