/*
 * ds/sets_rlu_tmpl.h - the list / hash table over an RLU-style API, included once
 * per mechanism (rlu, mvrlu) with:
 *   P(x)        the API name, e.g. rlu_##x
 *   T(x)        this instance's static names
 *   DOMAIN      the domain type (struct rlu), SELF the handle type (struct rlu_thread)
 *   MK_DOMAIN() create a domain; FLUSH(self) end-of-thread hook (may be empty)
 *   MECH        the mechanism's name
 * The operations follow the RLU study (Appl. Sci. 2022) Fig. 4: traverse with deref,
 * lock the predecessor (and, for delete, the victim) with try_lock, abort and restart
 * on failure, link with assign_ptr, free the victim with free.
 */
struct T(node) {
	uint64_t key;
	uint64_t magic;
	struct T(node) * next;
};

struct T(set) {
	DOMAIN *d;
	unsigned nb;
	struct T(node) * *heads; /* per-bucket sentinels (never freed before destroy) */
};

static _Thread_local SELF *T(self);

static void *T(create)(unsigned nb)
{
	struct T(set) *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->d = MK_DOMAIN();
	s->nb = nb;
	s->heads = calloc(nb, sizeof(*s->heads));
	if (!s->d || !s->heads)
		goto fail;
	for (unsigned i = 0; i < nb; i++) {
		if (!(s->heads[i] = P(alloc)(sizeof(struct T(node)))))
			goto fail;
		s->heads[i]->magic = SET_MAGIC_LIVE;
	}
	return s;
fail:
	fprintf(stderr, "%s: cannot create the set\n", MECH);
	exit(1);
}

static void T(destroy)(void *set)
{
	struct T(set) *s = set;
	P(destroy)(s->d); /* writes back pending versions first */
	for (unsigned i = 0; i < s->nb; i++) {
		struct T(node) *n = s->heads[i];
		while (n) {
			struct T(node) *nx = n->next;
			P(free_unsafe)(n);
			n = nx;
		}
	}
	free(s->heads);
	free(s);
}

static void T(thread_init)(void *set)
{
	struct T(set) *s = set;
	T(self) = P(thread_get)(s->d);
	if (!T(self)) {
		fprintf(stderr, "%s: thread_get failed\n", MECH);
		exit(1);
	}
}

static void T(thread_fini)(void *set)
{
	(void)set;
	FLUSH(T(self));
	T(self) = NULL;
}

static inline struct T(node) * T(check)(struct T(node) * n)
{
	if (TSYNC_UNLIKELY(n->magic != SET_MAGIC_LIVE))
		set_fail(MECH, "a reader reached a freed or corrupt node", n->key, n->magic);
	return n;
}

/* prev: last node with key < k (a sentinel at worst); cur: its successor. Both are the
 * versions this section sees (rlu_deref), own copies included. */
static inline void T(find)(SELF *self, struct T(set) * s, uint64_t k, struct T(node) * *pprev,
			   struct T(node) * *pcur)
{
	struct T(node) *prev = P(deref)(self, s->heads[set_bucket(k, s->nb)]);
	struct T(node) *cur = P(deref)(self, prev->next);
	while (cur && T(check)(cur)->key < k) {
		prev = cur;
		cur = P(deref)(self, cur->next);
	}
	*pprev = prev;
	*pcur = cur;
}

static bool T(lookup)(void *set, uint64_t k)
{
	struct T(set) *s = set;
	SELF *self = T(self);
	struct T(node) * prev, *cur;
	P(reader_lock)(self);
	T(find)(self, s, k, &prev, &cur);
	bool found = cur && cur->key == k;
	P(reader_unlock)(self);
	return found;
}

/* Inside a section: link a new node with key k, or return NULL to abort. *present is
 * set when k is already there (nothing done). */
static struct T(node) * T(do_insert)(SELF *self, struct T(set) * s, uint64_t k, bool *present)
{
	struct T(node) * prev, *cur;
	T(find)(self, s, k, &prev, &cur);
	*present = cur && cur->key == k;
	if (*present)
		return NULL;
	if (!P(try_lock)(self, (void **)&prev, sizeof(*prev)))
		return NULL;
	struct T(node) *n = P(alloc)(sizeof(*n));
	if (!n)
		set_fail(MECH, "out of memory", k, 0);
	n->key = k;
	n->magic = SET_MAGIC_LIVE;
	P(assign_ptr)(self, (void **)&n->next, cur);
	P(assign_ptr)(self, (void **)&prev->next, n);
	return n;
}

/* Inside a section: unlink and free the node with key k; false to abort (or, with
 * *absent, because k is not there). */
static bool T(do_remove)(SELF *self, struct T(set) * s, uint64_t k, bool *absent)
{
	struct T(node) * prev, *cur;
	T(find)(self, s, k, &prev, &cur);
	*absent = !(cur && cur->key == k);
	if (*absent)
		return false;
	if (!P(try_lock)(self, (void **)&prev, sizeof(*prev)) ||
	    !P(try_lock_const)(self, (void **)&cur, sizeof(*cur)))
		return false;
	P(assign_ptr)(self, (void **)&prev->next, cur->next);
	P(free)(self, cur);
	return true;
}

static bool T(insert)(void *set, uint64_t k)
{
	struct T(set) *s = set;
	SELF *self = T(self);
	for (;;) {
		bool present;
		P(reader_lock)(self);
		if (T(do_insert)(self, s, k, &present)) {
			P(reader_unlock)(self);
			return true;
		}
		if (present) {
			P(reader_unlock)(self);
			return false;
		}
		P(abort)(self);
	}
}

static bool T(remove)(void *set, uint64_t k)
{
	struct T(set) *s = set;
	SELF *self = T(self);
	for (;;) {
		bool absent;
		P(reader_lock)(self);
		if (T(do_remove)(self, s, k, &absent)) {
			P(reader_unlock)(self);
			return true;
		}
		if (absent) {
			P(reader_unlock)(self);
			return false;
		}
		P(abort)(self);
	}
}

static bool T(present)(SELF *self, struct T(set) * s, uint64_t k)
{
	struct T(node) * prev, *cur;
	T(find)(self, s, k, &prev, &cur);
	return cur && cur->key == k;
}

/* Both or neither, in one section: four pointer updates that readers see all at once. */
static bool T(insert2)(void *set, uint64_t a, uint64_t b)
{
	struct T(set) *s = set;
	SELF *self = T(self);
	for (;;) {
		bool present;
		P(reader_lock)(self);
		if (T(present)(self, s, a) || T(present)(self, s, b)) {
			P(reader_unlock)(self);
			return false;
		}
		struct T(node) *na = T(do_insert)(self, s, a, &present);
		if (na) {
			if (T(do_insert)(self, s, b, &present)) {
				P(reader_unlock)(self);
				return true;
			}
			P(abort)(self);
			P(free_unsafe)(na); /* never visible: the section was discarded */
			continue;
		}
		P(abort)(self);
	}
}

static bool T(remove2)(void *set, uint64_t a, uint64_t b)
{
	struct T(set) *s = set;
	SELF *self = T(self);
	for (;;) {
		bool absent;
		P(reader_lock)(self);
		if (!T(present)(self, s, a) || !T(present)(self, s, b)) {
			P(reader_unlock)(self);
			return false;
		}
		if (T(do_remove)(self, s, a, &absent) && T(do_remove)(self, s, b, &absent)) {
			P(reader_unlock)(self);
			return true;
		}
		P(abort)(self);
	}
}

static size_t T(snapshot)(void *set, uint64_t *out, size_t max)
{
	struct T(set) *s = set;
	SELF *self = T(self);
	size_t n = 0;
	P(reader_lock)(self);
	for (unsigned i = 0; i < s->nb; i++) {
		uint64_t last = 0;
		bool first = true;
		struct T(node) *h = P(deref)(self, s->heads[i]);
		for (struct T(node) *c = P(deref)(self, h->next); c; c = P(deref)(self, c->next)) {
			T(check)(c);
			if (!first && c->key <= last)
				set_fail(MECH, "keys out of order in a snapshot", c->key, c->magic);
			if (set_bucket(c->key, s->nb) != i)
				set_fail(MECH, "key in the wrong bucket", c->key, c->magic);
			first = false;
			last = c->key;
			if (n < max)
				out[n] = c->key;
			n++;
		}
	}
	P(reader_unlock)(self);
	return n;
}
