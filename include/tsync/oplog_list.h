/*
 * tsync/oplog_list.h - an intrusive list (a set of nodes) on OpLog, with the three
 * variants of OpLog (MIT TR 2014) §7.3 / Fig. 12:
 *   OPLOG_LIST_BASIC          add and remove are logged; synchronize executes them all.
 *   OPLOG_LIST_GLOBAL_ABSORB  synchronize drops an add whose node is removed later in the
 *                             same batch, and that remove (try_absorb, §5.2).
 *   OPLOG_LIST_LOCAL_ABSORB   also: a remove logged by the thread whose own log holds the
 *                             node's add cancels that add at once (§4.2); such pairs never
 *                             reach the shared list. Global absorption stays on.
 *
 * Sequential specification: a set of nodes; add(n) inserts n (no-op if present),
 * remove(n) deletes n (no-op if absent), size() and contains(n) read.
 * Preconditions that make absorption equal to execution (docs/oplog.md, "Absorption"):
 *   P1 (all variants with absorption): add(n) is called only when n is not in the list
 *      and remove(n) only when it is, in the order the calls are linearized - the usage
 *      of an intrusive list, where a node is in the list or not and its owner knows which.
 *   P2 (local absorption): between a thread's add(n) and its remove(n), no other thread
 *      adds or removes n (e.g. a node is added and removed by the thread that owns it).
 * Without absorption (BASIC) the list is linearizable with no precondition.
 * Lifetime: a node may be freed or reused for another list once its remove has been
 * applied: after a read (oplog_list_size/contains) or oplog_list_flush that follows the
 * remove, or oplog_list_fini. Under local absorption, a remove that returned
 * OPLOG_ABSORBED needs no read.
 *
 * Threads: any. Reads block (synchronize); updates append to the caller's log.
 */
#ifndef TSYNC_OPLOG_LIST_H
#define TSYNC_OPLOG_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <tsync/oplog.h>

#ifdef __cplusplus
extern "C" {
#endif

enum oplog_list_mode {
	OPLOG_LIST_BASIC = 0,
	OPLOG_LIST_GLOBAL_ABSORB = 1,
	OPLOG_LIST_LOCAL_ABSORB = 2,
};

/* Embed in the element. Fields are the list's (under the list's object lock). */
struct oplog_list_node {
	struct oplog_list_node *next, *prev; /* NULL when not in the list */
	struct oplog_op *pending;            /* global absorption: the batch's pending add */
	/* local absorption: where the last thread that logged an add of this node put it
	 * in its log (a hint, validated against the remover's own log before use) */
	TSYNC_ATOMIC(struct oplog_op *) local;
};
#define OPLOG_LIST_NODE_INIT           \
	{                              \
		NULL, NULL, NULL, NULL \
	}

/* The logged op of a list-like structure (also used by oplog_rmap): kind is
 * OPLOG_LIST_OP_ADD or OPLOG_LIST_OP_REMOVE; the absorption hooks of oplog_list_type()
 * work on any structure whose ops have this layout and whose elements embed a node. */
enum { OPLOG_LIST_OP_ADD = 1, OPLOG_LIST_OP_REMOVE = 2 };
struct oplog_list_op {
	struct oplog_op op;
	struct oplog_list_node *node;
};

struct oplog_list {
	struct oplog_object obj;
	struct oplog_list_node head; /* circular, sentinel */
	size_t count;
};

/*
 * oplog_list_type - the log type of a mode.
 *
 * Arguments:  capacity: bytes of op log per thread, 0 for the default op log size
 *             (tests use small values to force full-log synchronizes). out: the
 *             caller's storage for the type.
 * Returns:    0 with *out filled, or -1 with errno = EINVAL (bad mode, out NULL).
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §7.3, Fig. 12.
 */
int oplog_list_type(enum oplog_list_mode mode, size_t capacity, struct oplog_type *out);

/*
 * oplog_list_domain_create - a domain for lists of the given mode (capacity as above).
 *
 * Returns:    the domain; NULL with errno as oplog_list_type or oplog_domain_create.
 * Progress:   blocking (allocates).
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §7.3.
 */
struct oplog_domain *oplog_list_domain_create(enum oplog_list_mode mode, size_t capacity,
					      const struct oplog_config *cfg);

/*
 * oplog_list_init - an empty list in domain d.
 *
 * Returns:    0, or -1 with errno = EINVAL (l or d NULL).
 * Caller:     any thread; l must not be in use.
 * Implements: OpLog (MIT TR 2014) §7.3.
 */
int oplog_list_init(struct oplog_list *l, struct oplog_domain *d);
/*
 * oplog_list_fini - apply pending ops and detach from OpLog (oplog_object_fini).
 *
 * Nodes still in the list stay linked (the caller may walk l->head).
 *
 * Progress:   blocking.
 * Caller:     as oplog_object_fini.
 * Implements: OpLog (MIT TR 2014) §6.
 */
void oplog_list_fini(struct oplog_list *l);

/*
 * oplog_list_node_init - make n a node not in any list.
 *
 * Caller:     any thread, before n is shared.
 * Implements: OpLog (MIT TR 2014) §7.3.
 */
void oplog_list_node_init(struct oplog_list_node *n);

/*
 * oplog_list_add, oplog_list_remove - log the update.
 *
 * Returns:    OPLOG_PUSHED, OPLOG_ABSORBED (remove under local absorption), or -1 with
 *             errno from oplog_log.
 * Progress:   as oplog_log (costs and blocking).
 * Ordering:   as oplog_log.
 * Caller:     any thread, within preconditions P1 and P2 above.
 * Implements: OpLog (MIT TR 2014) §7.3, Fig. 12; absorption §4.2 and §5.2.
 */
int oplog_list_add(struct oplog_list *l, struct oplog_list_node *n);
int oplog_list_remove(struct oplog_list *l, struct oplog_list_node *n);

/*
 * oplog_list_size, oplog_list_contains, oplog_list_flush - reads: synchronize, read,
 * unlock (flush: apply every pending op, a synchronize with no read).
 *
 * Returns:    the number of nodes; whether n is in the list.
 * Progress:   blocking (as oplog_synchronize).
 * Ordering:   acquire, as oplog_synchronize.
 * Caller:     any thread.
 * Implements: OpLog (MIT TR 2014) §7.3.
 */
size_t oplog_list_size(struct oplog_list *l);
bool oplog_list_contains(struct oplog_list *l, struct oplog_list_node *n);
void oplog_list_flush(struct oplog_list *l);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_OPLOG_LIST_H */
