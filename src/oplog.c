/*
 * src/oplog.c - OpLog (MIT TR 2014): per-thread log tables, log, synchronize, eviction.
 *
 * Layout. A domain owns one table per thread id that has logged into it (allocated on
 * the thread's first oplog_log, kept until the domain is destroyed, inherited by a later
 * thread that gets the same id). A table is `slots` slots, each on its own cache lines:
 *   lock      the slot lock (the paper's per-core log lock): taken by the owning thread
 *             to push, by synchronizers to read and empty the log, by fini to detach
 *   owner     the object whose log this is (NULL: free), written under the lock
 *   evicting  the object this thread is evicting from the slot right now (see fini)
 *   last_ts   the newest timestamp pushed, to keep each log strictly increasing
 *   log       the type's per-thread state (default: an array of ops)
 * Object o may only have a log in slot (hash(o) & mask) of each table.
 *
 * Lock order: object lock, then slot locks in increasing thread id. A thread never holds
 * its slot lock while taking an object lock (eviction and full-log synchronizes drop it
 * first), so there is no cycle.
 *
 * The synchronize cut (docs/oplog.md, "Linearizability"): oplog_synchronize holds every
 * table's slot hash(o) at the same time before it decides what to apply, so the set of
 * applied ops is exactly those whose push finished before that instant. A table created
 * during the scan could escape it: table creation publishes the table and then bumps the
 * domain's generation (seq_cst); the synchronizer reads the generation before the scan
 * and again after the last lock, and rescans if it changed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/oplog.h>
#include <tsync/thread.h>
#include "util.h"
#include "wait.h"

/* Sanitizer builds (TSYNC_TEST_SMALL) widen race windows that tests hunt: here, the
 * time an evictor holds x only through its evicting mark (see oplog_object_fini). */
#ifdef TSYNC_TEST_SMALL
#include <time.h>
#define TEST_WINDOW() nanosleep(&(struct timespec){0, 20000}, NULL)
#else
#define TEST_WINDOW() ((void)0)
#endif

/* struct oplog__slot is in <tsync/oplog.h> (the inline fast path reads it); the log
 * follows it, 8-byte aligned. */
#define SLOT_HDR sizeof(struct oplog__slot)
_Static_assert(sizeof(struct oplog__slot) % 8 == 0, "log must be 8-byte aligned");

/* Counters written only by the table's thread (relaxed load + store, no RMW). */
struct oplog__table {
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t logged;
	_Atomic uint64_t absorbed_local;
	_Atomic uint64_t full_syncs;
	_Atomic uint64_t evictions;
	_Atomic uint64_t commit_waits;
	_Alignas(TSYNC_CACHE_LINE) unsigned char slots[];
};
_Static_assert(offsetof(struct oplog__table, slots) == OPLOG__TABLE_HDR, "table layout");

/* The default op log. */
struct op_log {
	uint32_t used; /* bytes of ops appended (live and dead) */
	uint32_t cap;  /* bytes of buf */
	_Alignas(8) unsigned char buf[];
};

struct oplog_domain {
	struct oplog__domain_fast fast; /* first: read by oplog_log_acquire */
	const struct oplog_type *type;  /* = &type_copy */
	struct oplog_type type_copy;
	int (*push)(struct oplog_object *, void *, struct oplog_op *);
	void (*apply)(struct oplog_object *, void *const *, unsigned);
	bool default_log;
	bool ordered; /* the type wants timestamps */
	bool wait;    /* commit wait after each logged op */
	enum oplog_order order;
	uint64_t wait_ticks; /* S */
	unsigned slots, mask;
	size_t log_bytes, capacity, slot_stride, table_bytes;
	unsigned ntables; /* thread capacity */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t gen;
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t counter; /* OPLOG_ORDER_COUNTER */
	_Alignas(TSYNC_CACHE_LINE) _Atomic uint64_t syncs;
	_Atomic uint64_t executed;
	_Atomic uint64_t absorbed_global;
	_Atomic uint64_t ntables_alloc;
};

/* ---- small locks ---------------------------------------------------------------- */

/* Test-and-test-and-set; a hand-off wait (src/wait.h) whose rounds count across retries. */
static inline void spin_lock(_Atomic uint32_t *l)
{
	struct tsync__wait w = TSYNC__WAIT_INIT;
	while (atomic_exchange_explicit(l, 1, memory_order_acquire) != 0)
		while (atomic_load_explicit(l, memory_order_relaxed) != 0)
			tsync__wait_round(&w, TSYNC__SPIN_HANDOFF);
}

static inline void spin_unlock(_Atomic uint32_t *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

static inline void bump(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* ---- domains -------------------------------------------------------------------- */

static enum oplog_order order_from_env(void)
{
	const char *e = getenv("TSYNC_OPLOG_ORDER");
	if (e && strcmp(e, "clock") == 0)
		return OPLOG_ORDER_CLOCK;
	if (e && strcmp(e, "trust") == 0)
		return OPLOG_ORDER_TRUST;
	if (e && strcmp(e, "counter") == 0)
		return OPLOG_ORDER_COUNTER;
	return tsync_clock_source() == TSYNC_CLOCK_COUNTER ? OPLOG_ORDER_CLOCK
							   : OPLOG_ORDER_COUNTER;
}

const char *oplog_order_name(enum oplog_order o)
{
	switch (o) {
	case OPLOG_ORDER_CLOCK: return "clock";
	case OPLOG_ORDER_TRUST: return "trust";
	case OPLOG_ORDER_COUNTER: return "counter";
	default: return "auto";
	}
}

struct oplog_domain *oplog_domain_create(const struct oplog_type *type,
					 const struct oplog_config *cfg)
{
	struct oplog_config c = OPLOG_CONFIG_INIT;
	if (type == NULL || type->size != sizeof(struct oplog_type) ||
	    (cfg != NULL && cfg->size != sizeof(struct oplog_config))) {
		errno = EINVAL;
		return NULL;
	}
	if (cfg)
		c = *cfg;
	if (c.slots == 0)
		c.slots = 64;
	if ((c.slots & (c.slots - 1)) != 0 || c.slots > (1u << 20) || c.order < 0 ||
	    c.order > OPLOG_ORDER_COUNTER) {
		errno = EINVAL;
		return NULL;
	}
	bool deflt = type->log_bytes == 0;
	if (!deflt && (type->push == NULL || type->apply == NULL)) {
		errno = EINVAL; /* a custom log state needs its own push and apply */
		return NULL;
	}
	size_t capacity = type->capacity ? type->capacity : 4096;
	if (deflt && (capacity < sizeof(struct oplog_op) || capacity > (1u << 30))) {
		errno = EINVAL;
		return NULL;
	}
	if (tsync_clock_init() != 0)
		return NULL;
	struct oplog_domain *d =
		aligned_alloc(TSYNC_CACHE_LINE, tsync__round_up(sizeof(*d), TSYNC_CACHE_LINE));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	memset(d, 0, sizeof(*d));
	d->type_copy = *type;
	d->type = &d->type_copy;
	d->default_log = deflt;
	type = d->type;
	d->push = type->push ? type->push : oplog_ops_append;
	d->apply = type->apply ? type->apply : oplog_ops_apply;
	d->ordered = (type->flags & OPLOG_TYPE_UNORDERED) == 0;
	d->order = c.order == OPLOG_ORDER_AUTO ? order_from_env() : (enum oplog_order)c.order;
	d->wait_ticks = tsync_clock_skew();
	/* A counter that ticks on every read and whose cross-CPU offset is bounded by 0 needs
	 * no wait; CLOCK_MONOTONIC may return equal values, so wait for it to move. */
	d->wait = d->ordered && d->order == OPLOG_ORDER_CLOCK &&
		  (d->wait_ticks > 0 || tsync_clock_source() != TSYNC_CLOCK_COUNTER);
	d->slots = c.slots;
	d->mask = c.slots - 1;
	d->capacity = deflt ? capacity : 0;
	d->log_bytes = deflt ? sizeof(struct op_log) + capacity : type->log_bytes;
	d->slot_stride = tsync__round_up(SLOT_HDR + d->log_bytes, TSYNC_CACHE_LINE);
	d->table_bytes = sizeof(struct oplog__table) + (size_t)c.slots * d->slot_stride;
	d->fast.slot_stride = d->slot_stride;
	d->fast.mask = d->mask;
	d->fast.direct_ok = !deflt && !d->ordered;
	d->ntables = tsync_thread_capacity();
	d->fast.tables = calloc(d->ntables, sizeof(*d->fast.tables));
	if (!d->fast.tables) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

void oplog_domain_destroy(struct oplog_domain *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < d->ntables; i++)
		free(atomic_load_explicit(&d->fast.tables[i], memory_order_acquire));
	free(d->fast.tables);
	free(d);
}

const struct oplog_type *oplog_domain_type(const struct oplog_domain *d)
{
	return d->type;
}

enum oplog_order oplog_domain_order(const struct oplog_domain *d)
{
	return d->order;
}

int oplog_domain_stats(struct oplog_domain *d, struct oplog_stats *out)
{
	if (!d || !out) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < d->ntables; i++) {
		struct oplog__table *t =
			atomic_load_explicit(&d->fast.tables[i], memory_order_acquire);
		if (!t)
			continue;
		out->tables++;
		out->logged += atomic_load_explicit(&t->logged, memory_order_relaxed);
		out->absorbed_local +=
			atomic_load_explicit(&t->absorbed_local, memory_order_relaxed);
		out->full_syncs += atomic_load_explicit(&t->full_syncs, memory_order_relaxed);
		out->evictions += atomic_load_explicit(&t->evictions, memory_order_relaxed);
		out->commit_waits += atomic_load_explicit(&t->commit_waits, memory_order_relaxed);
	}
	out->table_bytes = out->tables * d->table_bytes;
	out->slot_bytes = d->slot_stride;
	out->syncs = atomic_load_explicit(&d->syncs, memory_order_relaxed);
	out->executed = atomic_load_explicit(&d->executed, memory_order_relaxed);
	out->absorbed_global = atomic_load_explicit(&d->absorbed_global, memory_order_relaxed);
	return 0;
}

static inline struct oplog__slot *slot_at(const struct oplog_domain *d, struct oplog__table *t,
					  unsigned idx)
{
	return (struct oplog__slot *)(void *)(t->slots + (size_t)idx * d->slot_stride);
}

/* Thread t's slot idx in d, or NULL while t has no table (acquire: a table is published
 * with release, initialised). */
static inline struct oplog__slot *slot_of_thread(const struct oplog_domain *d, unsigned t,
						 unsigned idx)
{
	struct oplog__table *tab = atomic_load_explicit(&d->fast.tables[t], memory_order_acquire);
	return tab ? slot_at(d, tab, idx) : NULL;
}

static inline void *slot_log(struct oplog__slot *s)
{
	return (unsigned char *)s + SLOT_HDR;
}

/* Give slot s (locked, free, its log empty) to obj. */
static void slot_install(const struct oplog_domain *d, struct oplog__slot *s,
			 struct oplog_object *obj)
{
	s->owner = obj;
	if (d->default_log) {
		struct op_log *l = slot_log(s);
		l->used = 0;
		l->cap = (uint32_t)d->capacity;
	} else {
		memset(slot_log(s), 0, d->log_bytes);
	}
}

/* Does s (locked, owned) hold anything to apply? A custom log without an empty hook
 * always might. */
static inline bool slot_pending(const struct oplog_domain *d, struct oplog__slot *s)
{
	if (d->default_log)
		return ((struct op_log *)slot_log(s))->used != 0;
	return d->type->empty == NULL || !d->type->empty(slot_log(s));
}

static struct oplog__table *table_create(struct oplog_domain *d, unsigned tid)
{
	struct oplog__table *t = aligned_alloc(TSYNC_CACHE_LINE, d->table_bytes);
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	memset(t, 0, d->table_bytes);
	/* Only thread tid creates tables[tid], and a table outlives its thread, so the slot
	 * is NULL here. Publish, then bump the generation (seq_cst): a synchronizer that
	 * reads the bumped generation also sees the table; one that read the old generation
	 * before its scan and the new one after rescans (see the top of the file). */
	atomic_store_explicit(&d->fast.tables[tid], t, memory_order_release);
	atomic_fetch_add_explicit(&d->gen, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&d->ntables_alloc, 1, memory_order_relaxed);
	return t;
}

int oplog_object_init(struct oplog_object *obj, struct oplog_domain *d)
{
	if (!obj || !d) {
		errno = EINVAL;
		return -1;
	}
	atomic_init(&obj->lock, 0);
	uint64_t h = ((uint64_t)(uintptr_t)obj >> 4) * 0x9e3779b97f4a7c15ull;
	obj->hash = (uint32_t)(h >> 32);
	obj->dom = d;
	return 0;
}

/* ---- synchronize ---------------------------------------------------------------- */

#define HELD_STACK 32

void oplog_synchronize(struct oplog_object *obj)
{
	struct oplog_domain *d = obj->dom;
	unsigned idx = obj->hash & d->mask;
	struct oplog__slot *held_stack[HELD_STACK], **held = held_stack;
	void *logs_stack[HELD_STACK], **logs = logs_stack;
	size_t held_cap = HELD_STACK;

	spin_lock(&obj->lock);
	unsigned n;
	for (;;) {
		uint64_t g1 = atomic_load_explicit(&d->gen, memory_order_seq_cst);
		unsigned hw = tsync_thread_high_water();
		if (hw > d->ntables)
			hw = d->ntables;
		if (hw > held_cap) {
			struct oplog__slot **nh = malloc(hw * sizeof(*nh));
			void **nl = malloc(hw * sizeof(*nl));
			if (!nh || !nl)
				tsync__fatal("oplog_synchronize: out of memory (%u threads)", hw);
			if (held != held_stack) {
				free(held);
				free(logs);
			}
			held = nh;
			logs = nl;
			held_cap = hw;
		}
		n = 0;
		for (unsigned t = 0; t < hw; t++) {
			struct oplog__slot *s = slot_of_thread(d, t, idx);
			if (!s)
				continue;
			spin_lock(&s->lock);
			held[n++] = s;
		}
		if (atomic_load_explicit(&d->gen, memory_order_seq_cst) == g1)
			break;
		for (unsigned i = 0; i < n; i++)
			spin_unlock(&held[i]->lock);
	}
	/* The cut: every log of obj is locked. Keep those with pending ops; release the rest
	 * (their threads' later pushes come after the cut). */
	unsigned nl = 0;
	for (unsigned i = 0; i < n; i++) {
		struct oplog__slot *s = held[i];
		if (s->owner == obj && slot_pending(d, s)) {
			held[nl] = s;
			logs[nl++] = slot_log(s);
		} else {
			spin_unlock(&s->lock);
		}
	}
	if (nl > 0) {
		d->apply(obj, (void *const *)logs, nl);
		for (unsigned i = 0; i < nl; i++)
			spin_unlock(&held[i]->lock);
		atomic_fetch_add_explicit(&d->syncs, 1, memory_order_relaxed);
	}
	if (held != held_stack) {
		free(held);
		free(logs);
	}
}

void oplog_unlock(struct oplog_object *obj)
{
	spin_unlock(&obj->lock);
	void (*hook)(struct oplog_object *) = obj->dom->type->unlocked;
	if (hook)
		hook(obj);
}

void oplog_object_fini(struct oplog_object *obj)
{
	struct oplog_domain *d = obj->dom;
	unsigned idx = obj->hash & d->mask;
	int self = tsync_thread_id();
	oplog_synchronize(obj);
	unsigned hw = tsync_thread_high_water();
	if (hw > d->ntables)
		hw = d->ntables;
	for (unsigned t = 0; t < hw; t++) {
		struct oplog__slot *s = slot_of_thread(d, t, idx);
		if (!s)
			continue;
		spin_lock(&s->lock);
		if (s->owner == obj)
			s->owner = NULL; /* its log is empty: synchronize applied it */
		spin_unlock(&s->lock);
	}
	spin_unlock(&obj->lock);
	/* An evictor that chose obj (under its slot lock, before our pass above cleared the
	 * owner) may still be about to synchronize it: wait until it has finished. Our own
	 * thread may be that evictor (fini called from an unlocked hook during an eviction);
	 * it touches obj no more after the hook returns. */
	for (unsigned t = 0; t < hw; t++) {
		struct oplog__slot *s = slot_of_thread(d, t, idx);
		if (!s || (int)t == self)
			continue;
		tsync__wait_until(atomic_load_explicit(&s->evicting, memory_order_acquire) != obj,
				  TSYNC__SPIN_HANDOFF);
	}
}

/* ---- log ------------------------------------------------------------------------ */

/* s (locked, thread's own) belongs to another object or to none: free it - evicting its
 * owner, which drops and retakes the lock - or give it to obj. Returns with s locked;
 * the caller loops until s->owner == obj. */
static void slot_take(struct oplog_domain *d, struct oplog__table *tab, struct oplog__slot *s,
		      struct oplog_object *obj)
{
	struct oplog_object *x = s->owner;
	if (x == NULL) {
		slot_install(d, s, obj);
		return;
	}
	bump(&tab->evictions);
	if (!slot_pending(d, s)) {
		/* Nothing of x is logged here: take the slot without synchronizing. */
		slot_install(d, s, obj);
		return;
	}
	/* Evict x (§6): synchronize it, which empties this log too. x stays valid meanwhile:
	 * oplog_object_fini(x) waits while our evicting field names it. */
	atomic_store_explicit(&s->evicting, x, memory_order_relaxed);
	spin_unlock(&s->lock);
	TEST_WINDOW();
	oplog_synchronize(x);
	oplog_unlock(x);
	spin_lock(&s->lock);
	if (s->owner == x)
		s->owner = NULL;
	atomic_store_explicit(&s->evicting, NULL, memory_order_release);
}

static inline uint64_t stamp(struct oplog_domain *d, struct oplog__slot *s)
{
	uint64_t ts;
	if (d->order == OPLOG_ORDER_COUNTER)
		ts = atomic_fetch_add_explicit(&d->counter, 1, memory_order_seq_cst) + 1;
	else
		ts = tsync_now_ordered(); /* after the slot lock's xchg and every earlier load */
	if (TSYNC_UNLIKELY(ts <= s->last_ts))
		ts = s->last_ts + 1; /* migrated to a CPU whose counter reads lower, or a new
				      * thread reusing an exited thread's table */
	return ts;
}

int oplog_log(struct oplog_object *obj, struct oplog_op *op)
{
	struct oplog_domain *d = obj->dom;
	if (TSYNC_UNLIKELY(op->size < sizeof(*op) || op->size > OPLOG_OP_MAX ||
			   (d->default_log &&
			    (op->exec == NULL || ((op->size + 7u) & ~7u) > d->capacity)))) {
		errno = EINVAL;
		return -1;
	}
	int tid = tsync_thread_id();
	if (TSYNC_UNLIKELY(tid < 0))
		return -1;
	struct oplog__table *tab = atomic_load_explicit(&d->fast.tables[tid], memory_order_acquire);
	if (TSYNC_UNLIKELY(tab == NULL)) {
		tab = table_create(d, (unsigned)tid);
		if (!tab)
			return -1;
	}
	struct oplog__slot *s = slot_at(d, tab, obj->hash & d->mask);
	spin_lock(&s->lock);
	for (;;) {
		if (TSYNC_UNLIKELY(s->owner != obj)) {
			slot_take(d, tab, s, obj);
			continue;
		}
		uint64_t ts = 0;
		if (d->ordered) {
			ts = stamp(d, s);
			s->last_ts = ts;
		}
		op->ts = ts;
		int r = d->push(obj, slot_log(s), op);
		if (TSYNC_UNLIKELY(r == OPLOG_FULL)) {
			spin_unlock(&s->lock);
			bump(&tab->full_syncs);
			oplog_synchronize(obj);
			oplog_unlock(obj);
			spin_lock(&s->lock);
			continue;
		}
		spin_unlock(&s->lock);
		if (r == OPLOG_PUSHED) {
			bump(&tab->logged);
			if (d->wait) {
				/* Commit wait: return only once every CPU's clock has passed ts, so
				 * an op that starts after we return gets a larger timestamp. It
				 * waits for the clock, not for another thread (at most the skew
				 * bound S), so it spins without yielding (unlike src/wait.h's
				 * waits). */
				uint64_t until = ts + d->wait_ticks;
				if (tsync_now() <= until) {
					bump(&tab->commit_waits);
					while (tsync_now() <= until)
						tsync_arch_relax();
				}
			}
		} else {
			bump(&tab->absorbed_local);
		}
		return r;
	}
}

void *oplog__log_acquire_slow(struct oplog_object *obj)
{
	struct oplog_domain *d = obj->dom;
	if (!d->fast.direct_ok) {
		errno = EINVAL;
		return NULL;
	}
	int tid = tsync_thread_id();
	if (TSYNC_UNLIKELY(tid < 0))
		return NULL;
	struct oplog__table *tab = atomic_load_explicit(&d->fast.tables[tid], memory_order_acquire);
	if (tab == NULL) {
		tab = table_create(d, (unsigned)tid);
		if (!tab)
			return NULL;
	}
	struct oplog__slot *s = slot_at(d, tab, obj->hash & d->mask);
	spin_lock(&s->lock);
	while (s->owner != obj)
		slot_take(d, tab, s, obj);
	return slot_log(s);
}

/* ---- the default op log --------------------------------------------------------- */

static inline uint32_t op_stride(const struct oplog_op *op)
{
	return ((uint32_t)op->size + 7u) & ~7u;
}

int oplog_ops_append(struct oplog_object *obj, void *log, struct oplog_op *op)
{
	(void)obj;
	struct op_log *l = log;
	uint32_t len = op_stride(op);
	if (l->used + len > l->cap)
		return OPLOG_FULL;
	struct oplog_op *dst = (struct oplog_op *)(void *)(l->buf + l->used);
	memcpy(dst, op, op->size);
	dst->flags = 0;
	l->used += len;
	return OPLOG_PUSHED;
}

struct oplog_op *oplog_ops_find_last(void *log,
				     bool (*match)(const struct oplog_op *op, const void *arg),
				     const void *arg)
{
	struct op_log *l = log;
	struct oplog_op *found = NULL;
	for (uint32_t pos = 0; pos < l->used;) {
		struct oplog_op *op = (struct oplog_op *)(void *)(l->buf + pos);
		if (!(op->flags & OPLOG_OP_DEAD) && match(op, arg))
			found = op;
		pos += op_stride(op);
	}
	return found;
}

struct oplog_op *oplog_ops_next(void *log)
{
	struct op_log *l = log;
	return (struct oplog_op *)(void *)(l->buf + l->used);
}

bool oplog_ops_live_at(void *log, const struct oplog_op *op, size_t stride)
{
	struct op_log *l = log;
	uintptr_t b = (uintptr_t)l->buf, p = (uintptr_t)op;
	if (p < b || p >= b + l->used || stride == 0 || (p - b) % stride != 0)
		return false;
	return !(op->flags & OPLOG_OP_DEAD);
}

void oplog_ops_pop(void *log, struct oplog_op *op)
{
	struct op_log *l = log;
	if ((unsigned char *)op + op_stride(op) == l->buf + l->used)
		l->used -= op_stride(op);
}

void oplog_op_cancel(struct oplog_op *op)
{
	op->flags |= OPLOG_OP_DEAD;
}

size_t oplog_ops_used(const void *log)
{
	const struct op_log *l = log;
	size_t live = 0;
	for (uint32_t pos = 0; pos < l->used;) {
		const struct oplog_op *op = (const struct oplog_op *)(const void *)(l->buf + pos);
		if (!(op->flags & OPLOG_OP_DEAD))
			live += op_stride(op);
		pos += op_stride(op);
	}
	return live;
}

struct merge_ent {
	uint64_t ts;
	uint32_t logi, pos;
	struct oplog_op *op;
};

static int merge_cmp(const void *a, const void *b)
{
	const struct merge_ent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->logi != y->logi)
		return x->logi < y->logi ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

#define MERGE_STACK 256
#define MERGE_LINEAR 16 /* up to this many logs: k-way merge by linear selection */

static inline bool ent_before(const struct merge_ent *x, const struct merge_ent *y)
{
	return x->ts < y->ts || (x->ts == y->ts && x->logi < y->logi);
}

void oplog_ops_apply(struct oplog_object *obj, void *const *logs, unsigned n)
{
	struct oplog_domain *d = obj->dom;
	size_t total = 0;
	for (unsigned i = 0; i < n; i++) {
		struct op_log *l = logs[i];
		for (uint32_t pos = 0; pos < l->used;) {
			struct oplog_op *op = (struct oplog_op *)(void *)(l->buf + pos);
			total += !(op->flags & OPLOG_OP_DEAD);
			pos += op_stride(op);
		}
	}
	struct merge_ent stack_ents[2 * MERGE_STACK], *e = stack_ents, *runs;
	if (total > MERGE_STACK) {
		e = malloc(2 * total * sizeof(*e));
		if (!e)
			tsync__fatal("oplog_synchronize: out of memory merging %zu ops", total);
	}
	runs = e + (total > MERGE_STACK ? total : MERGE_STACK);
	/* Each log's live ops, in append order = timestamp order, as one run. */
	size_t k = 0, run_start[MERGE_LINEAR + 1], run_pos[MERGE_LINEAR];
	for (unsigned i = 0; i < n; i++) {
		struct op_log *l = logs[i];
		if (i < MERGE_LINEAR)
			run_start[i] = k;
		for (uint32_t pos = 0; pos < l->used;) {
			struct oplog_op *op = (struct oplog_op *)(void *)(l->buf + pos);
			if (!(op->flags & OPLOG_OP_DEAD))
				runs[k++] = (struct merge_ent){op->ts, i, pos, op};
			pos += op_stride(op);
		}
		l->used = 0; /* the ops stay in place until we return (the lock is held) */
	}
	if (n <= MERGE_LINEAR) {
		run_start[n] = total;
		for (unsigned i = 0; i < n; i++)
			run_pos[i] = run_start[i];
		for (size_t out = 0; out < total; out++) {
			unsigned best = n;
			for (unsigned i = 0; i < n; i++)
				if (run_pos[i] < run_start[i + 1] &&
				    (best == n ||
				     ent_before(&runs[run_pos[i]], &runs[run_pos[best]])))
					best = i;
			e[out] = runs[run_pos[best]++];
		}
	} else {
		memcpy(e, runs, total * sizeof(*e));
		qsort(e, total, sizeof(*e), merge_cmp);
	}
	bool (*absorb)(struct oplog_object *, struct oplog_op *) = d->type->try_absorb;
	if (absorb)
		for (size_t i = 0; i < total; i++)
			if (!(e[i].op->flags & OPLOG_OP_DEAD) && absorb(obj, e[i].op))
				e[i].op->flags |= OPLOG_OP_DEAD;
	uint64_t executed = 0;
	for (size_t i = 0; i < total; i++) {
		if (e[i].op->flags & OPLOG_OP_DEAD)
			continue;
		e[i].op->exec(obj, e[i].op);
		executed++;
	}
	atomic_fetch_add_explicit(&d->executed, executed, memory_order_relaxed);
	atomic_fetch_add_explicit(&d->absorbed_global, total - executed, memory_order_relaxed);
	if (e != stack_ents)
		free(e);
}
