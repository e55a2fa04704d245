/*
 * src/oplog_list.c - an intrusive list on OpLog with local and global absorption
 * (OpLog (MIT TR 2014) §4.2, §5.2, §7.3).
 */
#include <errno.h>
#include <string.h>

#include <tsync/oplog_list.h>

#define LIST_ADD OPLOG_LIST_OP_ADD
#define LIST_REMOVE OPLOG_LIST_OP_REMOVE
#define list_op oplog_list_op

static inline struct oplog_list *oplog_list_of(struct oplog_object *obj)
{
	return (struct oplog_list *)(void *)obj;
}

static void list_add_exec(struct oplog_object *obj, struct oplog_op *op)
{
	struct oplog_list *l = oplog_list_of(obj);
	struct oplog_list_node *n = ((struct list_op *)(void *)op)->node;
	n->pending = NULL;
	if (n->next != NULL)
		return; /* already present: add is a no-op */
	n->prev = l->head.prev;
	n->next = &l->head;
	l->head.prev->next = n;
	l->head.prev = n;
	l->count++;
}

static void list_remove_exec(struct oplog_object *obj, struct oplog_op *op)
{
	struct oplog_list *l = oplog_list_of(obj);
	struct oplog_list_node *n = ((struct list_op *)(void *)op)->node;
	n->pending = NULL;
	if (n->next == NULL)
		return; /* absent: remove is a no-op */
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
	l->count--;
}

/* Global absorption (Fig. 12 "OpLog global absorption"): in timestamp order, an add
 * records itself in its node; a remove whose node holds a pending add of this batch
 * cancels it and is dropped. Under P1 the add is the node's previous op, the node was
 * absent before it and is absent after the remove: the pair is the identity. */
static bool list_try_absorb(struct oplog_object *obj, struct oplog_op *op)
{
	(void)obj;
	struct oplog_list_node *n = ((struct list_op *)(void *)op)->node;
	if (op->kind == LIST_ADD) {
		n->pending = op;
		return false;
	}
	if (n->pending != NULL) {
		oplog_op_cancel(n->pending);
		n->pending = NULL;
		return true;
	}
	return false;
}

/* Local absorption (§4.2): a remove whose node's add is still live in this thread's own
 * log cancels it. The node remembers where its last add was logged (a hint: any thread
 * may have overwritten it, and the log may have been applied and reused since), so it
 * is checked against this log first: inside its used part, at an op boundary (every op
 * of a list has one size), live, an add of this node. A live add(n) found there is this
 * thread's newest op on n (a later remove would have cancelled it), and under P2 the
 * node's previous op overall. */
static int list_local_push(struct oplog_object *obj, void *log, struct oplog_op *op)
{
	struct oplog_list_node *n = ((struct list_op *)(void *)op)->node;
	if (op->kind == LIST_REMOVE) {
		struct oplog_op *h = atomic_load_explicit(&n->local, memory_order_relaxed);
		if (h != NULL && oplog_ops_live_at(log, h, sizeof(struct list_op)) &&
		    h->kind == LIST_ADD && ((struct list_op *)(void *)h)->node == n) {
			oplog_op_cancel(h);
			oplog_ops_pop(log, h);
			atomic_store_explicit(&n->local, NULL, memory_order_relaxed);
			return OPLOG_ABSORBED;
		}
		return oplog_ops_append(obj, log, op);
	}
	struct oplog_op *at = oplog_ops_next(log);
	int r = oplog_ops_append(obj, log, op);
	if (r == OPLOG_PUSHED)
		atomic_store_explicit(&n->local, at, memory_order_relaxed);
	return r;
}

int oplog_list_type(enum oplog_list_mode mode, size_t capacity, struct oplog_type *out)
{
	if (!out || (unsigned)mode > OPLOG_LIST_LOCAL_ABSORB) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	out->capacity = capacity;
	out->name = mode == OPLOG_LIST_BASIC           ? "oplog_list_basic"
		    : mode == OPLOG_LIST_GLOBAL_ABSORB ? "oplog_list_global_absorb"
						       : "oplog_list_local_absorb";
	if (mode != OPLOG_LIST_BASIC)
		out->try_absorb = list_try_absorb;
	if (mode == OPLOG_LIST_LOCAL_ABSORB)
		out->push = list_local_push;
	return 0;
}

struct oplog_domain *oplog_list_domain_create(enum oplog_list_mode mode, size_t capacity,
					      const struct oplog_config *cfg)
{
	struct oplog_type t;
	if (oplog_list_type(mode, capacity, &t) != 0)
		return NULL;
	return oplog_domain_create(&t, cfg);
}

int oplog_list_init(struct oplog_list *l, struct oplog_domain *d)
{
	if (!l || oplog_object_init(&l->obj, d) != 0) {
		errno = EINVAL;
		return -1;
	}
	l->head.next = l->head.prev = &l->head;
	l->head.pending = NULL;
	atomic_init(&l->head.local, NULL);
	l->count = 0;
	return 0;
}

void oplog_list_fini(struct oplog_list *l)
{
	oplog_object_fini(&l->obj);
}

void oplog_list_node_init(struct oplog_list_node *n)
{
	n->next = n->prev = NULL;
	n->pending = NULL;
	atomic_init(&n->local, NULL);
}

int oplog_list_add(struct oplog_list *l, struct oplog_list_node *n)
{
	struct list_op op = {OPLOG_OP_INIT(struct list_op, list_add_exec, LIST_ADD), n};
	return oplog_log(&l->obj, &op.op);
}

int oplog_list_remove(struct oplog_list *l, struct oplog_list_node *n)
{
	struct list_op op = {OPLOG_OP_INIT(struct list_op, list_remove_exec, LIST_REMOVE), n};
	return oplog_log(&l->obj, &op.op);
}

size_t oplog_list_size(struct oplog_list *l)
{
	oplog_synchronize(&l->obj);
	size_t c = l->count;
	oplog_unlock(&l->obj);
	return c;
}

bool oplog_list_contains(struct oplog_list *l, struct oplog_list_node *n)
{
	oplog_synchronize(&l->obj);
	bool in = n->next != NULL;
	oplog_unlock(&l->obj);
	return in;
}

void oplog_list_flush(struct oplog_list *l)
{
	oplog_synchronize(&l->obj);
	oplog_unlock(&l->obj);
}
