/*
 * apps/cached/core/cache.c - the tsync-cached cache core's public API (ParSec, EuroSys 2016,
 * §5.2): get, store, delete, incr, touch, the meta protocol's tokens, flush, create and
 * destroy, statistics. Contracts in cache.h; the design and the correctness argument in
 * docs/cached.md ("Cache core"); the structures and invariants I1-I4 in cache_types.h.
 * Items and memory: item.c; the table and its growth: table.c; the CLOCK/LRU lists:
 * lists.c; eviction: evict.c; the maintenance thread: sweep.c.
 */
#include "cache_types.h"

/* ---- time ------------------------------------------------------------------------------- */

uint32_t cache_now(const struct cache *c)
{
	return cache__now(c);
}

void cache_time_advance(struct cache *c, uint32_t seconds)
{
	atomic_fetch_add_explicit(&c->time_offset, seconds, RELEASE);
}

/* memcached's realtime(): exptime convention -> cache_now() units (0 = never). */
static uint32_t rel_time(const struct cache *c, int64_t e)
{
	if (e == 0)
		return 0;
	if (e < 0)
		return 1; /* already expired: cache_now() >= 2 */
	if (e > CACHE_REALTIME_MAXDELTA) {
		if (e <= c->start_unix)
			return 1;
		int64_t r = e - c->start_unix + 2;
		return r > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)r;
	}
	uint64_t r = (uint64_t)cache_now(c) + (uint64_t)e;
	return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

/* ---- names ------------------------------------------------------------------------------ */

const char *cache_status_name(enum cache_status s)
{
	switch (s) {
	case CACHE_OK: return "OK";
	case CACHE_STORED: return "STORED";
	case CACHE_NOT_STORED: return "NOT_STORED";
	case CACHE_EXISTS: return "EXISTS";
	case CACHE_NOT_FOUND: return "NOT_FOUND";
	case CACHE_TOO_LARGE: return "TOO_LARGE";
	case CACHE_NO_MEMORY: return "NO_MEMORY";
	case CACHE_NON_NUMERIC: return "NON_NUMERIC";
	case CACHE_BAD_KEY: return "BAD_KEY";
	case CACHE_BUF_SMALL: return "BUF_SMALL";
	}
	return "UNKNOWN";
}

static const char *const variant_names[] = {"ps",     "ps-nocrp", "mcs-clock",
					    "locked", "mcs",      "pf-rw"};

const char *cache_variant_name(enum cache_variant v)
{
	if ((unsigned)v >= sizeof variant_names / sizeof variant_names[0])
		return NULL;
	return variant_names[v];
}

int cache_variant_parse(const char *name, enum cache_variant *out)
{
	for (unsigned i = 0; i < sizeof variant_names / sizeof variant_names[0]; i++)
		if (name && strcmp(name, variant_names[i]) == 0) {
			*out = (enum cache_variant)i;
			return 0;
		}
	return -1;
}

/* ---- reads ------------------------------------------------------------------------------ */

static inline void fill_ref(const struct cache *c, struct cache_ref *ref, struct item *it,
			    bool update)
{
	ref->value = cache__item_value(it);
	ref->nbytes = it->nbytes;
	ref->flags = it->flags;
	ref->cas = it->cas;
	uint32_t e = atomic_load_explicit(&it->exptime, RELAXED);
	if (e == 0) {
		ref->exptime = 0;
	} else {
		int64_t left = (int64_t)e - (int64_t)cache_now(c);
		ref->exptime = left > 0 ? left : 1;
	}
	ref->item_ = it;
	/* Access tracking (mg h, mg l): the fetched bit is stored once per item, the access
	 * time at most once per tick (a second); both only when they change. */
	uint8_t f = atomic_load_explicit(&it->mflags, RELAXED);
	ref->hit_before = (f & M_FETCHED) != 0;
	ref->key_binary = (f & M_KEYB) != 0;
	if (update && !(f & M_FETCHED))
		atomic_fetch_or_explicit(&it->mflags, M_FETCHED, RELAXED);
	uint32_t now = atomic_load_explicit(&c->tick, RELAXED);
	uint32_t at = atomic_load_explicit(&it->atime, RELAXED);
	ref->idle = now > at ? now - at : 0;
	if (update && at != now)
		atomic_store_explicit(&it->atime, now, RELAXED);
}

static inline void count_state(struct cache *c, int st)
{
	ST_INC(c, S_GET_MISSES);
	if (st == EXPIRED)
		ST_INC(c, S_GET_EXPIRED);
	else if (st == FLUSHED)
		ST_INC(c, S_GET_FLUSHED);
}

/* update: a normal read (fetched bit, access time, CLOCK/LRU reference); false for
 * meta's no-update flag (mg u), which reads the item and leaves its state alone. */
static inline enum cache_status get_impl(struct cache *c, const void *key, size_t nkey,
					 struct cache_ref *ref, bool update)
{
	if (TSYNC_UNLIKELY(!cache__key_ok(nkey)))
		return CACHE_BAD_KEY;
	uint64_t h = cache__key_hash(key, nkey);
	const struct cache_ops *ops = &c->ops;
	if (ops->pin.parsec) {
		ps_enter(c->ps);
		struct item *it = cache__lookup(c, h, key, nkey);
		int st = it ? cache__item_state(c, it) : LIVE;
		if (it && st == LIVE) {
			/* The only store of a get (ps: clock_bump): once per CLOCK period, to
			 * the item's line. */
			if (update)
				ops->repl.bump(c, it);
			fill_ref(c, ref, it, update);
			ST_INC(c, S_GET_HITS);
			return CACHE_OK; /* the section stays open until cache_release */
		}
		ps_exit(c->ps);
		if (it)
			count_state(c, st);
		else
			ST_INC(c, S_GET_MISSES);
		return CACHE_NOT_FOUND;
	}
	/* the stripe's lock, or its read side (pf-rw) */
	struct ck_spinlock_mcs qn;
	struct stripe *s = cache__stripe_of(c, h);
	ops->stripe.rdlock(s, &qn);
	struct item *_Atomic *pp;
	struct item *it = cache__find_locked(c, h, key, nkey, &pp);
	int st = it ? cache__item_state(c, it) : LIVE;
	if (it && st == LIVE) {
		ops->pin.pin(c, it);
		if (update)
			ops->repl.bump(c, it);
		ops->stripe.rdunlock(s, &qn);
		fill_ref(c, ref, it, update);
		ST_INC(c, S_GET_HITS);
		return CACHE_OK;
	}
	/* lazy expiry: memcached unlinks what a get finds dead; a reader on the read side
	 * leaves it to the next update */
	bool unlink = it && !ops->stripe.shared_reads;
	if (unlink)
		cache__unlink_locked(c, it, pp);
	ops->stripe.rdunlock(s, &qn);
	if (unlink)
		cache__item_drop_dead(c, it);
	if (it)
		count_state(c, st);
	else
		ST_INC(c, S_GET_MISSES);
	return CACHE_NOT_FOUND;
}

enum cache_status cache_get(struct cache *c, const void *key, size_t nkey, struct cache_ref *ref)
{
	return get_impl(c, key, nkey, ref, true);
}

void cache_release(struct cache *c, struct cache_ref *ref)
{
	c->ops.pin.unpin(c, ref->item_);
	ref->item_ = NULL;
	ref->value = NULL;
}

enum cache_status cache_get_copy(struct cache *c, const void *key, size_t nkey, void *buf,
				 size_t cap, uint32_t *nbytes, uint32_t *flags, uint64_t *cas)
{
	struct cache_ref r;
	enum cache_status st = cache_get(c, key, nkey, &r);
	if (st != CACHE_OK)
		return st;
	if (nbytes)
		*nbytes = r.nbytes;
	if (r.nbytes > cap) {
		cache_release(c, &r);
		return CACHE_BUF_SMALL;
	}
	memcpy(buf, r.value, r.nbytes);
	if (flags)
		*flags = r.flags;
	if (cas)
		*cas = r.cas;
	cache_release(c, &r);
	return CACHE_OK;
}

/* Under the stripe lock: the live item for key, unlinking (and collecting in *dead) a
 * dead one met on the way. */
static struct item *find_live_locked(struct cache *c, uint64_t h, const void *key, size_t nkey,
				     struct item *_Atomic **pp, struct item **dead)
{
	struct item *it = cache__find_locked(c, h, key, nkey, pp);
	*dead = NULL;
	if (it && cache__item_state(c, it) != LIVE) {
		cache__unlink_locked(c, it, *pp);
		*dead = it;
		it = NULL;
	}
	return it;
}

static void drop_dead(struct cache *c, struct item *dead)
{
	if (dead)
		cache__item_drop_dead(c, dead);
}

/* An update's hold on a key: its stripe, locked with qn (on the caller's stack from the
 * lock to the unlock), the link to its item and the dead item met on the way. */
struct keyed {
	struct stripe *s;
	struct ck_spinlock_mcs qn;
	struct item *_Atomic *pp;
	struct item *dead;
};

/* Lock the stripe of hash h and find key's live item (find_live_locked). */
static struct item *key_lock(struct cache *c, struct keyed *k, uint64_t h, const void *key,
			     size_t nkey)
{
	k->s = cache__stripe_of(c, h);
	cache__stripe_lock(c, k->s, &k->qn);
	return find_live_locked(c, h, key, nkey, &k->pp, &k->dead);
}

/* Unlock, then drop the dead item met and `gone` (an item the update unlinked or
 * replaced, or NULL). */
static void key_unlock(struct cache *c, struct keyed *k, struct item *gone)
{
	cache__stripe_unlock(c, k->s, &k->qn);
	drop_dead(c, k->dead);
	if (gone)
		cache__item_drop(c, gone);
}

/*
 * gat and touch: find key's live item under its stripe lock and set its exptime. With
 * take_ref, also pin it as cache_get does (ps variants: enter the section before
 * unlocking - while we hold the lock nobody can free it; others: a reference count) and
 * mark it referenced for the replacement policy; without, only LOCKED's LRU position
 * moves. Counts the touch; returns the item or NULL, with the stripe unlocked.
 */
static struct item *touch_item(struct cache *c, const void *key, size_t nkey, int64_t exptime,
			       bool take_ref)
{
	uint32_t e = rel_time(c, exptime);
	struct keyed k;
	ST_INC(c, S_CMD_TOUCH);
	struct item *it = key_lock(c, &k, cache__key_hash(key, nkey), key, nkey);
	if (it) {
		atomic_store_explicit(&it->exptime, e, RELAXED);
		if (!take_ref) {
			/* memcached's touch is an access: the item counts as fetched (mg h) */
			if (!(atomic_load_explicit(&it->mflags, RELAXED) & M_FETCHED))
				atomic_fetch_or_explicit(&it->mflags, M_FETCHED, RELAXED);
			if (c->ops.repl.lru)
				c->ops.repl.bump(c, it);
		} else {
			c->ops.pin.pin(c, it);
			c->ops.repl.bump(c, it);
		}
	}
	key_unlock(c, &k, NULL);
	ST_INC(c, it ? S_TOUCH_HITS : S_TOUCH_MISSES);
	return it;
}

/* update false: mg u T, which sets the TTL without marking the item fetched */
static enum cache_status gat_impl(struct cache *c, const void *key, size_t nkey, int64_t exptime,
				  struct cache_ref *ref, bool update)
{
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	struct item *it = touch_item(c, key, nkey, exptime, true);
	if (it) {
		fill_ref(c, ref, it, update);
		ST_INC(c, S_GET_HITS);
		return CACHE_OK;
	}
	ST_INC(c, S_GET_MISSES);
	return CACHE_NOT_FOUND;
}

enum cache_status cache_gat(struct cache *c, const void *key, size_t nkey, int64_t exptime,
			    struct cache_ref *ref)
{
	return gat_impl(c, key, nkey, exptime, ref, true);
}

enum cache_status cache_peek(struct cache *c, const void *key, size_t nkey, struct cache_ref *ref)
{
	return get_impl(c, key, nkey, ref, false);
}

/* ---- updates ---------------------------------------------------------------------------- */

/* store_impl's xflags: the new item's initial M_* bits (not for APPEND/PREPEND), and: */
#define STORE_INVALIDATING 0x100u /* CAS: an older cas_in stores a stale item instead */

/* cache_store, with the meta protocol's extras (xflags). */
static enum cache_status store_impl(struct cache *c, enum cache_store_op op, const void *key,
				    size_t nkey, const void *data, size_t nbytes, uint32_t flags,
				    int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				    unsigned xflags)
{
	uint8_t mflags = (uint8_t)(xflags & 0xffu);
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	if (op == CACHE_SET && cas_in != 0)
		op = CACHE_CAS;
	ST_INC(c, S_CMD_SET);
	uint64_t h = cache__key_hash(key, nkey);
	uint32_t e = rel_time(c, exptime);
	bool concat = op == CACHE_APPEND || op == CACHE_PREPEND;
	struct item *nw = NULL;
	enum cache_status st;
	if (!concat) {
		/* Allocate and fill before taking the lock: the common path holds it briefly. */
		st = cache__item_alloc(c, h, key, nkey, nbytes, flags, true, &nw);
		if (st != CACHE_OK) {
			ST_INC(c, st == CACHE_TOO_LARGE ? S_TOO_LARGE : S_NO_MEMORY);
			if (op == CACHE_SET) /* memcached: do not keep serving the stale value */
				cache_delete(c, key, nkey, 0);
			if (op == CACHE_CAS)
				ST_INC(c, S_CAS_MISSES);
			return st;
		}
		memcpy(nw->data + nkey, data, nbytes);
		nw->flags = flags;
		atomic_store_explicit(&nw->exptime, e, RELAXED);
		nw->time = cache__clock_tick(c);
		atomic_store_explicit(&nw->atime, nw->time, RELAXED);
		atomic_store_explicit(&nw->mflags, mflags, RELAXED);
	}
	struct keyed k;
	struct item *old = key_lock(c, &k, h, key, nkey);
	st = CACHE_STORED;
	switch (op) {
	case CACHE_SET: break;
	case CACHE_ADD:
		if (old) {
			c->ops.repl.bump(c, old);
			st = CACHE_NOT_STORED;
		}
		break;
	case CACHE_REPLACE:
		if (!old)
			st = CACHE_NOT_STORED;
		else if (cas_in && old->cas != cas_in)
			st = CACHE_EXISTS;
		break;
	case CACHE_CAS:
		if (!old) {
			st = CACHE_NOT_FOUND;
			ST_INC(c, S_CAS_MISSES);
		} else if (old->cas != cas_in && (xflags & STORE_INVALIDATING) &&
			   cas_in < old->cas) {
			/* memcached's ms I: a writer with an older view still stores, but
			 * the result is stale, keeps the item's exptime and its token state */
			atomic_store_explicit(
				&nw->mflags,
				(uint8_t)(M_STALE | (mflags & M_KEYB) |
					  (atomic_load_explicit(&old->mflags, RELAXED) & M_TOKEN)),
				RELAXED);
			atomic_store_explicit(&nw->exptime,
					      atomic_load_explicit(&old->exptime, RELAXED),
					      RELAXED);
			ST_INC(c, S_CAS_HITS);
		} else if (old->cas != cas_in) {
			st = CACHE_EXISTS;
			ST_INC(c, S_CAS_BADVAL);
		} else {
			ST_INC(c, S_CAS_HITS);
		}
		break;
	case CACHE_APPEND:
	case CACHE_PREPEND:
		if (!old) {
			st = CACHE_NOT_STORED;
			break;
		}
		if (cas_in && old->cas != cas_in) {
			st = CACHE_EXISTS;
			break;
		}
		st = cache__item_alloc(c, h, key, nkey, (size_t)old->nbytes + nbytes, old->flags,
				       false, &nw);
		if (st != CACHE_OK) {
			ST_INC(c, st == CACHE_TOO_LARGE ? S_TOO_LARGE : S_NO_MEMORY);
			nw = NULL;
			break;
		}
		st = CACHE_STORED;
		if (op == CACHE_APPEND) {
			memcpy(nw->data + nkey, cache__item_value(old), old->nbytes);
			memcpy(nw->data + nkey + old->nbytes, data, nbytes);
		} else {
			memcpy(nw->data + nkey, data, nbytes);
			memcpy(nw->data + nkey + nbytes, cache__item_value(old), old->nbytes);
		}
		nw->flags = old->flags;
		atomic_store_explicit(&nw->exptime, atomic_load_explicit(&old->exptime, RELAXED),
				      RELAXED);
		nw->time = old->time;
		break;
	}
	if (st == CACHE_STORED) {
		cache__link_locked(c, nw, old, k.pp);
		if (cas_out)
			*cas_out = nw->cas;
	}
	key_unlock(c, &k, st == CACHE_STORED ? old : NULL);
	if (st == CACHE_STORED) {
		if (!old)
			cache__maybe_grow(c);
	} else if (nw) {
		cache__item_retire(c, nw); /* never published: no reader holds it */
	}
	return st;
}

enum cache_status cache_store(struct cache *c, enum cache_store_op op, const void *key, size_t nkey,
			      const void *data, size_t nbytes, uint32_t flags, int64_t exptime,
			      uint64_t cas_in, uint64_t *cas_out)
{
	return store_impl(c, op, key, nkey, data, nbytes, flags, exptime, cas_in, cas_out, 0);
}

enum cache_status cache_store_meta(struct cache *c, enum cache_store_op op, const void *key,
				   size_t nkey, const void *data, size_t nbytes, uint32_t flags,
				   int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				   bool key_binary)
{
	return store_impl(c, op, key, nkey, data, nbytes, flags, exptime, cas_in, cas_out,
			  key_binary ? M_KEYB : 0);
}

enum cache_status cache_cas_invalidating(struct cache *c, const void *key, size_t nkey,
					 const void *data, size_t nbytes, uint32_t flags,
					 int64_t exptime, uint64_t cas_in, uint64_t *cas_out)
{
	return store_impl(c, CACHE_CAS, key, nkey, data, nbytes, flags, exptime, cas_in, cas_out,
			  STORE_INVALIDATING);
}

/* ---- meta protocol: the recache token and invalidation ---------------------------------- */

enum cache_status cache_mget(struct cache *c, const void *key, size_t nkey, struct cache_meta *m,
			     struct cache_ref *ref)
{
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	m->won = m->stale = m->token_sent = m->created = false;
	(void)cache__clock_tick(c); /* a fresh tick: mg l is measured against it */
	for (unsigned tries = 0;; tries++) {
		enum cache_status st = m->touch ? gat_impl(c, key, nkey, m->ttl, ref, !m->no_update)
						: get_impl(c, key, nkey, ref, !m->no_update);
		if (st == CACHE_OK) {
			struct item *it = ref->item_;
			uint8_t f = atomic_load_explicit(&it->mflags, RELAXED);
			m->stale = (f & M_STALE) != 0;
			bool due = m->stale || (m->recache && ref->exptime != 0 &&
						ref->exptime < m->recache_ttl);
			if (f & M_TOKEN)
				m->token_sent = true;
			else if (due)
				/* one winner: the first to set the bit */
				m->won = !(atomic_fetch_or_explicit(&it->mflags, M_TOKEN, ACQ_REL) &
					   M_TOKEN);
			if (due && !m->won)
				m->token_sent = true;
			return CACHE_OK;
		}
		if (st != CACHE_NOT_FOUND || !m->vivify || tries >= 8)
			return st;
		/* Vivify: an empty item, already fetched (unless no_update: memcached's
		 * "mg k N u" leaves it unfetched) and with its token handed to us; a
		 * concurrent vivify that added first makes our ADD fail, and the retry finds
		 * its item (token sent: Z). */
		st = store_impl(c, CACHE_ADD, key, nkey, "", 0, 0, m->vivify_ttl, 0, NULL,
				(m->no_update ? 0 : M_FETCHED) | M_TOKEN);
		if (st == CACHE_STORED) {
			if (get_impl(c, key, nkey, ref, !m->no_update) != CACHE_OK)
				continue; /* evicted or replaced already: look again */
			m->won = true;
			m->token_sent = false;
			m->stale = false;
			ref->hit_before = false; /* created by this request (memcached: h0) */
			m->created = true;
			return CACHE_OK;
		}
		if (st != CACHE_NOT_STORED)
			return st;
	}
}

enum cache_status cache_invalidate(struct cache *c, const void *key, size_t nkey, uint64_t cas_in,
				   bool set_ttl, int64_t exptime)
{
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	uint64_t h = cache__key_hash(key, nkey);
	struct keyed k;
	struct item *nw = NULL, *old = key_lock(c, &k, h, key, nkey);
	enum cache_status st = CACHE_NOT_FOUND;
	if (old && cas_in && old->cas != cas_in) {
		st = CACHE_EXISTS;
	} else if (old) {
		/* A copy, as every update makes (items are immutable once published): same
		 * value, flags and store time, a new CAS id, stale, its token not yet sent. */
		st = cache__item_alloc(c, h, key, nkey, old->nbytes, old->flags, false, &nw);
		if (st == CACHE_OK) {
			memcpy(nw->data + nkey, cache__item_value(old), old->nbytes);
			nw->flags = old->flags;
			atomic_store_explicit(
				&nw->exptime,
				set_ttl ? rel_time(c, exptime)
					: atomic_load_explicit(&old->exptime, RELAXED),
				RELAXED);
			nw->time = old->time;
			atomic_store_explicit(&nw->atime,
					      atomic_load_explicit(&old->atime, RELAXED), RELAXED);
			atomic_store_explicit(
				&nw->mflags,
				(uint8_t)((atomic_load_explicit(&old->mflags, RELAXED) &
					   M_FETCHED) |
					  M_STALE),
				RELAXED);
			cache__link_locked(c, nw, old, k.pp);
		} else {
			ST_INC(c, st == CACHE_TOO_LARGE ? S_TOO_LARGE : S_NO_MEMORY);
			nw = NULL;
		}
	}
	key_unlock(c, &k, nw ? old : NULL);
	if (st == CACHE_OK || st == CACHE_NOT_FOUND)
		ST_INC(c, st == CACHE_OK ? S_DELETE_HITS : S_DELETE_MISSES);
	return st;
}

enum cache_status cache_delete(struct cache *c, const void *key, size_t nkey, uint64_t cas_in)
{
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	struct keyed k;
	struct item *it = key_lock(c, &k, cache__key_hash(key, nkey), key, nkey);
	enum cache_status st = CACHE_NOT_FOUND;
	if (it && cas_in && it->cas != cas_in) {
		st = CACHE_EXISTS;
		it = NULL;
	} else if (it) {
		cache__unlink_locked(c, it, k.pp);
		st = CACHE_OK;
	}
	key_unlock(c, &k, it);
	ST_INC(c, st == CACHE_OK ? S_DELETE_HITS : S_DELETE_MISSES);
	return st;
}

/* memcached's safe_strtoull on a value: optional leading spaces, 1-20 digits, optional
 * trailing spaces (a decremented value may have been padded), no sign, no overflow. */
/* The number an item's value holds for incr/decr, read as memcached reads it (strtoull on
 * the value, which it stores followed by "\r\n"): leading white space and a sign are
 * skipped, the digits must be followed by the end or white space ("12 apples" is 12), and
 * a minus sign is refused unless the wrapped result is not negative as a signed number. */
static bool parse_u64(const char *p, size_t n, uint64_t *out)
{
	size_t i = 0;
	while (i < n && (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r')))
		i++;
	bool neg = false;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	size_t d0 = i;
	uint64_t v = 0;
	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (i == d0)
		return false;
	if (i < n && !(p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r') || p[i] == '\0'))
		return false;
	if (neg) {
		v = (uint64_t)0 - v;
		if ((int64_t)v < 0)
			return false;
	}
	*out = v;
	return true;
}

enum cache_status cache_incr(struct cache *c, const void *key, size_t nkey, bool decr,
			     uint64_t delta, uint64_t cas_in, uint64_t *result, uint64_t *cas_out)
{
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	uint64_t h = cache__key_hash(key, nkey);
	struct keyed k;
	struct item *nw = NULL, *old = key_lock(c, &k, h, key, nkey);
	enum cache_status st;
	uint64_t v = 0;
	if (!old) {
		st = CACHE_NOT_FOUND;
	} else if (cas_in && old->cas != cas_in) {
		st = CACHE_EXISTS;
	} else if (!parse_u64(cache__item_value(old), old->nbytes, &v)) {
		st = CACHE_NON_NUMERIC;
	} else {
		if (decr)
			v = v < delta ? 0 : v - delta;
		else
			v += delta; /* wraps at 2^64, as memcached */
		char buf[24];
		size_t n = 0;
		char tmp[24];
		uint64_t x = v;
		do {
			tmp[n++] = (char)('0' + x % 10);
			x /= 10;
		} while (x);
		for (size_t i = 0; i < n; i++)
			buf[i] = tmp[n - 1 - i];
		st = cache__item_alloc(c, h, key, nkey, n, old->flags, false, &nw);
		if (st == CACHE_OK) {
			memcpy(nw->data + nkey, buf, n);
			nw->flags = old->flags;
			atomic_store_explicit(&nw->exptime,
					      atomic_load_explicit(&old->exptime, RELAXED),
					      RELAXED);
			nw->time = old->time;
			cache__link_locked(c, nw, old, k.pp);
			if (result)
				*result = v;
			if (cas_out)
				*cas_out = nw->cas;
		} else {
			ST_INC(c, S_NO_MEMORY);
			nw = NULL;
		}
	}
	key_unlock(c, &k, nw ? old : NULL);
	if (st == CACHE_NOT_FOUND)
		ST_INC(c, decr ? S_DECR_MISSES : S_INCR_MISSES);
	else if (st == CACHE_OK)
		ST_INC(c, decr ? S_DECR_HITS : S_INCR_HITS);
	return st;
}

enum cache_status cache_touch(struct cache *c, const void *key, size_t nkey, int64_t exptime)
{
	if (!cache__key_ok(nkey))
		return CACHE_BAD_KEY;
	return touch_item(c, key, nkey, exptime, false) ? CACHE_OK : CACHE_NOT_FOUND;
}

enum cache_status cache_flush_all(struct cache *c, int64_t delay)
{
	ST_INC(c, S_CMD_FLUSH);
	if (delay <= 0) {
		/* Every item with a CAS id handed out so far is dead (ids are unique and
		 * increasing: a store that linearises after this gets a larger one). */
		atomic_store_explicit(&c->flush_at, 0, RELEASE);
		atomic_store_explicit(&c->oldest_cas, atomic_load_explicit(&c->cas_next, ACQUIRE),
				      RELEASE);
	} else {
		atomic_store_explicit(&c->flush_at, rel_time(c, delay), RELEASE);
	}
	return CACHE_OK;
}

/* ---- reclamation as the caller's own task ---------------------------------------------- */

struct ps *cache_ps(const struct cache *c)
{
	return c->ps;
}

struct ps_mem *cache_class_mem(const struct cache *c, unsigned cls)
{
	return cls < c->nclasses ? c->cls[cls].mem : NULL;
}

size_t cache_collect(struct cache *c)
{
	size_t n = 0;
	for (unsigned i = 0; i < c->nclasses; i++)
		n += ps_mem_collect(c->cls[i].mem);
	return n;
}

/* ---- create / destroy ------------------------------------------------------------------- */

void cache_config_get(const struct cache *c, struct cache_config *out)
{
	*out = c->cfg;
}

struct cache *cache_create(const struct cache_config *cfg)
{
	struct cache_config g = CACHE_CONFIG_INIT;
	if (cfg) {
		if (cfg->size != sizeof(struct cache_config)) {
			errno = EINVAL;
			return NULL;
		}
		g = *cfg;
	}
	if (!g.mem_limit)
		g.mem_limit = CACHE_MEM_LIMIT_DEFAULT;
	if (g.mem_limit < (1u << 20))
		g.mem_limit = 1u << 20;
	if (!g.item_size_max)
		g.item_size_max = CACHE_ITEM_SIZE_MAX_DEFAULT;
	if (g.growth_factor == 0.0)
		g.growth_factor = 1.25;
	if (!g.chunk_min)
		g.chunk_min = 48;
	if (!g.hash_power)
		g.hash_power = 16;
	if (g.mem_wait_ms == 0)
		g.mem_wait_ms = 100;
	if (g.evict_window == 0)
		g.evict_window = 4;
	if ((unsigned)g.variant > CACHE_PF_RW || g.growth_factor <= 1.0 ||
	    g.growth_factor > 100.0 || g.item_size_max < 1024 || g.item_size_max > (128u << 20) ||
	    g.item_size_max > g.mem_limit / 2 || g.chunk_min > g.item_size_max / 2 ||
	    g.hash_power < 4 || g.hash_power > MAX_POWER || g.mem_wait_ms > 60000 ||
	    g.evict_window > EVICT_WINDOW_MAX || (unsigned)g.evict_policy > CACHE_EVICT_CLOCK ||
	    (g.ps_policy != PS_POLICY_GENERAL && g.ps_policy != PS_POLICY_RT)) {
		errno = EINVAL;
		return NULL;
	}
	struct cache *c =
		aligned_alloc(TSYNC_CACHE_LINE, cache__round_up(sizeof(*c), TSYNC_CACHE_LINE));
	if (c == NULL)
		return NULL;
	memset(c, 0, sizeof(*c));
	cache__variant_ops(g.variant, &c->ops);
	c->cfg = g;
	c->cfg.size = sizeof(struct cache_config);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	c->start_sec = ts.tv_sec;
	c->start_unix = (int64_t)time(NULL);
	atomic_store_explicit(&c->tick, cache_now(c), RELAXED);
	pthread_mutex_init(&c->grow_mx, NULL);
	pthread_mutex_init(&c->mmx, NULL);
	pthread_cond_init(&c->mcv, NULL);
	struct ps_config pc = PS_CONFIG_INIT;
	pc.policy = g.ps_policy;
	c->ps = ps_create(&pc);
	if (c->ps == NULL)
		goto fail;
	if (cache__make_classes(c) != 0)
		goto fail;
	uint64_t ns = (uint64_t)1 << g.hash_power;
	if (ns > MAX_STRIPES)
		ns = MAX_STRIPES;
	c->smask = ns - 1;
	c->stripes = aligned_alloc(TSYNC_CACHE_LINE, ns * sizeof(struct stripe));
	if (c->stripes == NULL)
		goto fail;
	memset(c->stripes, 0, ns * sizeof(struct stripe));
	for (uint64_t i = 0; i < ns; i++)
		c->ops.stripe.init(&c->stripes[i]);
	c->nlists = c->ops.nlists;
	c->lists = aligned_alloc(TSYNC_CACHE_LINE, c->nlists * sizeof(struct plist));
	if (c->lists == NULL)
		goto fail;
	memset(c->lists, 0, c->nlists * sizeof(struct plist));
	for (unsigned i = 0; i < c->nlists; i++) {
		ps_lock_init(&c->lists[i].t);
		pthread_mutex_init(&c->lists[i].x, NULL);
	}
	c->nts = tsync_thread_capacity() + 1; /* the last slot is shared by overflow ids */
	c->ts = aligned_alloc(TSYNC_CACHE_LINE, c->nts * sizeof(struct tstats));
	if (c->ts == NULL)
		goto fail;
	memset(c->ts, 0, c->nts * sizeof(struct tstats));
	struct table *t = cache__table_new(g.hash_power);
	if (t == NULL)
		goto fail;
	atomic_store_explicit(&c->tab, t, RELEASE);
	return c;
fail:
	cache_destroy(c);
	errno = ENOMEM;
	return NULL;
}

void cache_destroy(struct cache *c)
{
	if (c == NULL)
		return;
	if (c->mrunning)
		cache_sweeper_stop(c);
	/* Items live in the ps_mem slabs: destroying the allocators frees them all. */
	ps_kmem_destroy(c->kmem);
	ps_mem_budget_destroy(c->budget); /* its members gone with the classes */
	free(atomic_load_explicit(&c->tab, RELAXED));
	free(atomic_load_explicit(&c->old, RELAXED));
	if (c->stripes && c->ops.stripe.fini)
		for (uint64_t i = 0; i <= c->smask; i++)
			c->ops.stripe.fini(&c->stripes[i]);
	free(c->stripes);
	if (c->lists)
		for (unsigned i = 0; i < c->nlists; i++)
			pthread_mutex_destroy(&c->lists[i].x);
	free(c->lists);
	free(c->ts);
	if (c->ps)
		ps_destroy(c->ps);
	pthread_cond_destroy(&c->mcv);
	pthread_mutex_destroy(&c->mmx);
	pthread_mutex_destroy(&c->grow_mx);
	free(c);
}

/* ---- statistics ------------------------------------------------------------------------- */

int cache_class_for(const struct cache *c, size_t nkey, size_t nbytes)
{
	if (!cache__size_ok(c, nkey, nbytes, 0))
		return -1;
	return cache__class_of(c, ITEM_HDR + nkey + nbytes);
}

unsigned cache_nclasses(const struct cache *c)
{
	return c->nclasses;
}

int cache_mem_stats(struct cache *c, struct ps_mem_stats *out)
{
	return ps_kmem_stats(c->kmem, out);
}

int cache_class_stats(struct cache *c, unsigned cls, struct cache_class_stats *out)
{
	if (cls >= c->nclasses)
		return -1;
	struct ps_mem_stats ms;
	ps_mem_stats(c->cls[cls].mem, &ms);
	memset(out, 0, sizeof(*out));
	out->chunk_size = c->cls[cls].size;
	out->charged = c->cls[cls].charge;
	out->used_chunks = ms.in_use;
	out->total_slabs = ms.slabs;
	out->slab_bytes = c->cls[cls].slab;
	out->evicted = atomic_load_explicit(&c->cls[cls].evicted, RELAXED);
	out->mem_requested = atomic_load_explicit(&c->cls[cls].requested, RELAXED);
	out->reclaimed = atomic_load_explicit(&c->cls[cls].reclaimed, RELAXED);
	return 0;
}

void cache_stats(struct cache *c, struct cache_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->limit_maxbytes = c->cfg.mem_limit;
	struct ps_mem_budget_stats b;
	ps_mem_budget_stats(c->budget, &b);
	o->bytes = b.charged > b.garbage ? b.charged - b.garbage : 0;
	o->mem_charged = b.charged;
	o->mem_garbage_bytes = b.garbage;
	o->mem_waits = b.waits;
	o->total_items = cache__st_sum(c, S_TOTAL_ITEMS);
	o->evictions = cache__st_sum(c, S_EVICTIONS);
	o->reclaimed = cache__st_sum(c, S_RECLAIMED);
	o->sweeper_runs = atomic_load_explicit(&c->sweeper_runs, RELAXED);
	o->get_hits = cache__st_sum(c, S_GET_HITS);
	o->get_misses = cache__st_sum(c, S_GET_MISSES);
	o->cmd_get = o->get_hits + o->get_misses;
	o->get_expired = cache__st_sum(c, S_GET_EXPIRED);
	o->get_flushed = cache__st_sum(c, S_GET_FLUSHED);
	o->cmd_set = cache__st_sum(c, S_CMD_SET);
	o->cmd_touch = cache__st_sum(c, S_CMD_TOUCH);
	o->touch_hits = cache__st_sum(c, S_TOUCH_HITS);
	o->touch_misses = cache__st_sum(c, S_TOUCH_MISSES);
	o->delete_hits = cache__st_sum(c, S_DELETE_HITS);
	o->delete_misses = cache__st_sum(c, S_DELETE_MISSES);
	o->incr_hits = cache__st_sum(c, S_INCR_HITS);
	o->incr_misses = cache__st_sum(c, S_INCR_MISSES);
	o->decr_hits = cache__st_sum(c, S_DECR_HITS);
	o->decr_misses = cache__st_sum(c, S_DECR_MISSES);
	o->cas_hits = cache__st_sum(c, S_CAS_HITS);
	o->cas_misses = cache__st_sum(c, S_CAS_MISSES);
	o->cas_badval = cache__st_sum(c, S_CAS_BADVAL);
	o->cmd_flush = cache__st_sum(c, S_CMD_FLUSH);
	o->store_too_large = cache__st_sum(c, S_TOO_LARGE);
	o->store_no_memory = cache__st_sum(c, S_NO_MEMORY);
	o->nomem_full = cache__st_sum(c, S_NOMEM_FULL);
	o->nomem_garbage = cache__st_sum(c, S_NOMEM_GARBAGE);
	o->nomem_busy = cache__st_sum(c, S_NOMEM_BUSY);
	o->nomem_system = cache__st_sum(c, S_NOMEM_SYSTEM);
	o->evict_waits = cache__st_sum(c, S_EVICT_WAITS);
	int64_t linked = (int64_t)cache__st_sum(c, S_LINKED);
	o->curr_items = linked > 0 ? (uint64_t)linked : 0;
	ps_enter(c->ps); /* the table is freed only after a grace period */
	struct table *t = atomic_load_explicit(&c->tab, ACQUIRE);
	o->hash_power_level = t->power;
	o->hash_bytes = (t->mask + 1) * sizeof(void *);
	o->hash_is_expanding = atomic_load_explicit(&c->old, RELAXED) != NULL;
	ps_exit(c->ps);
	o->hash_expansions = atomic_load_explicit(&c->expansions, RELAXED);
	uint64_t max_wait = 0;
	for (unsigned i = 0; i < c->nclasses; i++) {
		struct ps_mem_stats ms;
		struct cache_class_stats cs;
		ps_mem_stats(c->cls[i].mem, &ms);
		cache_class_stats(c, i, &cs);
		o->total_malloced += ms.slabs * cs.slab_bytes;
		o->slabs += ms.slabs;
		o->peak_slabs += ms.peak_slabs;
		o->mem_in_use += ms.in_use;
		o->mem_pending += ms.pending;
		o->mem_cached += ms.cached;
		o->mem_frees += ms.frees;
		o->mem_reclaimed += ms.reclaimed;
		if (ms.max_wait_ticks > max_wait)
			max_wait = ms.max_wait_ticks;
	}
	o->mem_max_wait_ns = tsync_ticks_to_ns(max_wait);
	struct ps_stats ps;
	ps_stats_thread(c->ps, &ps);
	o->quiesce_calls = ps.quiesce_calls;
	o->quiesce_true = ps.quiesce_true;
}
