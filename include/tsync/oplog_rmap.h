/*
 * tsync/oplog_rmap.h - the reverse map of OpLog (MIT TR 2014) §4.3 (Fig. 7) on OpLog: the
 * set of mappings of one file, kept in a list sorted by start offset.
 *
 * add(m) and remove(m) (a process maps or unmaps part of the file) are logged: they are
 * frequent and return nothing. truncate(off) (the file shrinks to off pages) reads: it
 * synchronizes, then for every mapping [start, end) with end > off, unmaps the pages
 * [max(start, off), end) by setting end = max(start, off), and returns the number of
 * pages unmapped. A mapping truncated to nothing stays in the rmap until removed (as a
 * vm_area_struct stays mapped after its file is truncated).
 *
 * Absorption as for <tsync/oplog_list.h> (same modes, same preconditions P1 and P2 with
 * "node" read as "mapping"): a mapping added and removed on the same thread never
 * reaches the shared list under OPLOG_LIST_LOCAL_ABSORB (§4.3: "mappings that are added
 * and deleted on the same core will be particularly efficient"), and an add and remove
 * from different threads cancel at synchronize under global absorption (§5.2).
 * start/end of a mapping in the rmap are written by truncate under the object lock:
 * read them inside oplog_synchronize/oplog_unlock, or after oplog_rmap_fini.
 * A mapping may be freed once its remove has been applied (as for list nodes).
 */
#ifndef TSYNC_OPLOG_RMAP_H
#define TSYNC_OPLOG_RMAP_H

#include <stdint.h>
#include <tsync/oplog_list.h>

#ifdef __cplusplus
extern "C" {
#endif

struct oplog_rmap_mapping {
	struct oplog_list_node link; /* the rmap's */
	uint64_t start, end;         /* pages [start, end) of the file; start <= end */
};

struct oplog_rmap {
	struct oplog_object obj;
	struct oplog_list_node head; /* circular, sorted by start */
	size_t count;
};

/*
 * oplog_rmap_domain_create, oplog_rmap_init, oplog_rmap_fini - a domain for rmaps (mode
 * and capacity as for oplog_list_domain_create), an empty rmap in it, and its teardown
 * (as oplog_list_fini).
 *
 * Returns:    the domain, or NULL with errno as oplog_list_domain_create; init: 0, or -1
 *             with errno = EINVAL (r or d NULL).
 * Progress:   create and fini block; init is wait-free.
 * Caller:     any thread; init on an rmap not in use; fini as oplog_object_fini.
 * Implements: OpLog (MIT TR 2014) §4.3.
 */
struct oplog_domain *oplog_rmap_domain_create(enum oplog_list_mode mode, size_t capacity,
					      const struct oplog_config *cfg);
int oplog_rmap_init(struct oplog_rmap *r, struct oplog_domain *d);
void oplog_rmap_fini(struct oplog_rmap *r);

/*
 * oplog_rmap_mapping_init - a mapping of pages [start, end) not in any rmap.
 *
 * Arguments:  start, end: page offsets in the file.
 * Returns:    0, or -1 with errno = EINVAL if start > end.
 * Caller:     any thread, before m is shared.
 * Implements: OpLog (MIT TR 2014) §4.3.
 */
int oplog_rmap_mapping_init(struct oplog_rmap_mapping *m, uint64_t start, uint64_t end);

/*
 * oplog_rmap_add, oplog_rmap_remove - log an add or remove (as oplog_list_add).
 *
 * Returns:    OPLOG_PUSHED, OPLOG_ABSORBED, or -1 with errno from oplog_log.
 * Progress:   as oplog_log.
 * Caller:     any thread, within preconditions P1 and P2 of <tsync/oplog_list.h>.
 * Implements: OpLog (MIT TR 2014) §4.3, Fig. 7.
 */
int oplog_rmap_add(struct oplog_rmap *r, struct oplog_rmap_mapping *m);
int oplog_rmap_remove(struct oplog_rmap *r, struct oplog_rmap_mapping *m);

/*
 * oplog_rmap_truncate - synchronize and unmap everything at or past page off.
 *
 * Returns:    the number of pages unmapped.
 * Progress:   blocking (as oplog_synchronize).
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §4.3, Fig. 7.
 */
uint64_t oplog_rmap_truncate(struct oplog_rmap *r, uint64_t off);

/*
 * oplog_rmap_count - the number of mappings (synchronizes).
 *
 * Progress:   blocking (as oplog_synchronize).
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §4.3.
 */
size_t oplog_rmap_count(struct oplog_rmap *r);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_OPLOG_RMAP_H */
