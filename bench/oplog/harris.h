/*
 * bench/oplog/harris.h - a Harris lock-free sorted linked list (Harris, DISC 2001, with
 * Michael's unlink-during-search), written for `tsync-bench oplog` as the "lockfree"
 * peer of OpLog (MIT TR 2014) §7.3. Nodes come from a ps_mem and are freed with ps_free by the
 * thread whose CAS unlinks them; every traversal runs inside a ParSec section of the
 * list's ps, so a node is never reused while a traversal can still reach it (ParSec (EuroSys
 * 2016)). Keys are unique 64-bit values; each node also carries a mutable `end` (the rmap's mapping
 * end, updated with a CAS by truncate).
 */
#ifndef TSYNC_BENCH_OPLOG_HARRIS_H
#define TSYNC_BENCH_OPLOG_HARRIS_H

#include <stdbool.h>
#include <stdint.h>

#include <tsync/ps.h>
#include <tsync/ps_mem.h>

struct hl_node {
	_Atomic uintptr_t next; /* low bit: this node is logically deleted */
	uint64_t key;
	uint64_t start;
	_Atomic uint64_t end;
};

struct hl_list {
	_Atomic uintptr_t head;
	struct ps *ps;
	struct ps_mem *mem;
};

/* 0, or -1 (errno from ps_create / ps_mem_create). */
int hl_init(struct hl_list *l);
/* Frees every node and the ps/ps_mem. No concurrent users. */
void hl_fini(struct hl_list *l);
/* Insert key (with start/end); false if present. Lock-free. Any thread. */
bool hl_insert(struct hl_list *l, uint64_t key, uint64_t start, uint64_t end);
/* Delete key; false if absent. Lock-free. */
bool hl_delete(struct hl_list *l, uint64_t key);
/* For every node with end > off: end = max(start, off) (CAS); returns pages unmapped. */
uint64_t hl_truncate(struct hl_list *l, uint64_t off);

#endif
