/*
 * src/oplog_rmap.c - the logging rmap of OpLog (MIT TR 2014) §4.3 over a sorted list.
 */
#include <errno.h>
#include <stddef.h>

#include <tsync/oplog_rmap.h>

#define MAPPING(n)                                                                             \
	((struct oplog_rmap_mapping *)(void *)((char *)(n)-offsetof(struct oplog_rmap_mapping, \
								    link)))

static inline struct oplog_rmap *rmap_of(struct oplog_object *obj)
{
	return (struct oplog_rmap *)(void *)obj;
}

static void rmap_add_exec(struct oplog_object *obj, struct oplog_op *op)
{
	struct oplog_rmap *r = rmap_of(obj);
	struct oplog_list_node *n = ((struct oplog_list_op *)(void *)op)->node;
	n->pending = NULL;
	if (n->next != NULL)
		return;
	uint64_t start = MAPPING(n)->start;
	struct oplog_list_node *at = r->head.next; /* first mapping starting after start */
	while (at != &r->head && MAPPING(at)->start <= start)
		at = at->next;
	n->next = at;
	n->prev = at->prev;
	at->prev->next = n;
	at->prev = n;
	r->count++;
}

static void rmap_remove_exec(struct oplog_object *obj, struct oplog_op *op)
{
	struct oplog_rmap *r = rmap_of(obj);
	struct oplog_list_node *n = ((struct oplog_list_op *)(void *)op)->node;
	n->pending = NULL;
	if (n->next == NULL)
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
	r->count--;
}

struct oplog_domain *oplog_rmap_domain_create(enum oplog_list_mode mode, size_t capacity,
					      const struct oplog_config *cfg)
{
	struct oplog_type t;
	if (oplog_list_type(mode, capacity, &t) != 0)
		return NULL;
	t.name = "oplog_rmap";
	return oplog_domain_create(&t, cfg);
}

int oplog_rmap_init(struct oplog_rmap *r, struct oplog_domain *d)
{
	if (!r || oplog_object_init(&r->obj, d) != 0) {
		errno = EINVAL;
		return -1;
	}
	r->head.next = r->head.prev = &r->head;
	r->head.pending = NULL;
	atomic_init(&r->head.local, NULL);
	r->count = 0;
	return 0;
}

void oplog_rmap_fini(struct oplog_rmap *r)
{
	oplog_object_fini(&r->obj);
}

int oplog_rmap_mapping_init(struct oplog_rmap_mapping *m, uint64_t start, uint64_t end)
{
	if (!m || start > end) {
		errno = EINVAL;
		return -1;
	}
	oplog_list_node_init(&m->link);
	m->start = start;
	m->end = end;
	return 0;
}

int oplog_rmap_add(struct oplog_rmap *r, struct oplog_rmap_mapping *m)
{
	struct oplog_list_op op = {
		OPLOG_OP_INIT(struct oplog_list_op, rmap_add_exec, OPLOG_LIST_OP_ADD), &m->link};
	return oplog_log(&r->obj, &op.op);
}

int oplog_rmap_remove(struct oplog_rmap *r, struct oplog_rmap_mapping *m)
{
	struct oplog_list_op op = {
		OPLOG_OP_INIT(struct oplog_list_op, rmap_remove_exec, OPLOG_LIST_OP_REMOVE),
		&m->link};
	return oplog_log(&r->obj, &op.op);
}

uint64_t oplog_rmap_truncate(struct oplog_rmap *r, uint64_t off)
{
	uint64_t pages = 0;
	oplog_synchronize(&r->obj);
	for (struct oplog_list_node *n = r->head.next; n != &r->head; n = n->next) {
		struct oplog_rmap_mapping *m = MAPPING(n);
		if (m->end > off) {
			uint64_t ne = m->start > off ? m->start : off;
			pages += m->end - ne;
			m->end = ne;
		}
	}
	oplog_unlock(&r->obj);
	return pages;
}

size_t oplog_rmap_count(struct oplog_rmap *r)
{
	oplog_synchronize(&r->obj);
	size_t c = r->count;
	oplog_unlock(&r->obj);
	return c;
}
