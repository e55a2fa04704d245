/*
 * src/oplog_counter.c - the CounterLog of OpLog (MIT TR 2014) Fig. 8.
 */
#include <errno.h>
#include <stddef.h>

#include <tsync/arch.h>

#include <tsync/oplog_counter.h>

struct counter_op {
	struct oplog_op op;
	int64_t delta;
};

/* The per-thread log: one count (oplog_counter_add in the header writes it as an
 * int64_t through oplog_log_acquire). */
struct counter_log {
	int64_t delta;
};
_Static_assert(sizeof(struct counter_log) == sizeof(int64_t), "counter log layout");

static int counter_push(struct oplog_object *obj, void *log, struct oplog_op *op)
{
	(void)obj;
	((struct counter_log *)log)->delta += ((struct counter_op *)(void *)op)->delta;
	return OPLOG_PUSHED;
}

static void counter_apply(struct oplog_object *obj, void *const *logs, unsigned n)
{
	struct oplog_counter *c = (struct oplog_counter *)(void *)obj;
	for (unsigned i = 0; i < n; i++) {
		struct counter_log *l = logs[i];
		c->value += l->delta;
		l->delta = 0;
	}
	if (c->value == 0 && c->release)
		atomic_store_explicit(&c->zero_seen, 1, memory_order_relaxed);
}

static bool counter_empty(const void *log)
{
	return ((const struct counter_log *)log)->delta == 0;
}

static void counter_unlocked(struct oplog_object *obj)
{
	struct oplog_counter *c = (struct oplog_counter *)(void *)obj;
	if (atomic_load_explicit(&c->zero_seen, memory_order_relaxed) == 0)
		return;
	if (atomic_exchange_explicit(&c->zero_seen, 0, memory_order_acquire) == 0)
		return;
	if (atomic_exchange_explicit(&c->released, 1, memory_order_acq_rel) != 0)
		return;
	c->release(c, c->arg);
}

static const struct oplog_type counter_type = {
	.size = sizeof(struct oplog_type),
	.name = "oplog_counter",
	.flags = OPLOG_TYPE_UNORDERED,
	.log_bytes = sizeof(struct counter_log),
	.push = counter_push,
	.apply = counter_apply,
	.empty = counter_empty,
	.unlocked = counter_unlocked,
};

const struct oplog_type *oplog_counter_type(void)
{
	return &counter_type;
}

struct oplog_domain *oplog_counter_domain_create(const struct oplog_config *cfg)
{
	return oplog_domain_create(&counter_type, cfg);
}

int oplog_counter_init(struct oplog_counter *c, struct oplog_domain *d, int64_t initial,
		       oplog_counter_release_fn release, void *arg)
{
	if (!c || !d || oplog_domain_type(d)->push != counter_push) {
		errno = EINVAL;
		return -1;
	}
	if (oplog_object_init(&c->obj, d) != 0)
		return -1;
	c->value = initial;
	c->release = release;
	c->arg = arg;
	atomic_init(&c->zero_seen, 0);
	atomic_init(&c->released, 0);
	return 0;
}

void oplog_counter_fini(struct oplog_counter *c)
{
	atomic_store_explicit(&c->released, 1, memory_order_relaxed);
	oplog_object_fini(&c->obj);
}

int64_t oplog_counter_read(struct oplog_counter *c)
{
	oplog_synchronize(&c->obj);
	int64_t v = c->value;
	if (v == 0 && c->release)
		atomic_store_explicit(&c->zero_seen, 1, memory_order_relaxed);
	oplog_unlock(&c->obj);
	return v;
}
