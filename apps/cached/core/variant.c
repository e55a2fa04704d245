/*
 * apps/cached/core/variant.c - the studies' variants (cache.h, enum cache_variant) as one
 * choice on each of three axes (struct cache_ops, cache_internal.h): the stripe lock; how
 * a get protects the item it hands out and how an unlinked item ends; the replacement
 * policy and its list locks. ParSec (EuroSys 2016) §5.2 compares ps against mcs-clock
 * ("modified memcached"); locked is stock memcached's scheme; RT-SMR (RTAS 2018) §VII-C
 * compares RT-ParSec (ps-nocrp on an RT ps) against mcs and pf-rw, both without
 * replacement.
 */
#include "cache_internal.h"

/* ---- stripe locks ----------------------------------------------------------------------- */

static void tstripe_init(struct stripe *s)
{
	ps_lock_init(&s->u.t);
}

static void tstripe_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ps_lock_lock(&s->u.t);
}

static bool tstripe_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	return ps_lock_trylock(&s->u.t);
}

static void tstripe_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ps_lock_unlock(&s->u.t);
}

/* Concurrency Kit's MCS orders through inline assembly that ThreadSanitizer does not see:
 * tell it that the lock word carries the happens-before edge from holder to holder. */
#if defined(__SANITIZE_THREAD__)
#define CACHE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CACHE_TSAN 1
#endif
#endif
#ifdef CACHE_TSAN
#include <sanitizer/tsan_interface.h>
#define TSAN_ACQUIRE(p) __tsan_acquire(p)
#define TSAN_RELEASE(p) __tsan_release(p)
#else
#define TSAN_ACQUIRE(p) ((void)(p))
#define TSAN_RELEASE(p) ((void)(p))
#endif

static void mstripe_init(struct stripe *s)
{
	ck_spinlock_mcs_init(&s->u.m);
}

static void mstripe_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	ck_spinlock_mcs_lock(&s->u.m, n);
	TSAN_ACQUIRE(&s->u.m);
}

static bool mstripe_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	if (!ck_spinlock_mcs_trylock(&s->u.m, n))
		return false;
	TSAN_ACQUIRE(&s->u.m);
	return true;
}

static void mstripe_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	TSAN_RELEASE(&s->u.m);
	ck_spinlock_mcs_unlock(&s->u.m, n);
}

/* Concurrency Kit's phase-fair reader-writer lock (Brandenburg & Anderson, RTSS 2009 /
 * RTS 2010; RT-SMR (RTAS 2018) [24]): FIFO between phases, a writer waits for at most one
 * read phase and a reader for at most one write phase. Its ordering is inline assembly
 * too: a writer acquires what the last writer and every reader since released; a reader
 * acquires what the last writer released. Two annotation addresses keep readers from
 * ordering each other (which would hide races between them): writers release on the
 * lock word, readers on the byte after it, and a writer acquires both. */
#define PF_RD(s) ((char *)&(s)->u.p + 1)

static void pstripe_init(struct stripe *s)
{
	ck_pflock_init(&s->u.p);
}

static void pstripe_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ck_pflock_write_lock(&s->u.p);
	TSAN_ACQUIRE(&s->u.p);
	TSAN_ACQUIRE(PF_RD(s));
}

/* ck_pflock has no trylock. Only eviction uses one (I4), and pf-rw has no lists. */
static bool pstripe_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)s;
	(void)n;
	return false;
}

static void pstripe_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	TSAN_RELEASE(&s->u.p);
	ck_pflock_write_unlock(&s->u.p);
}

static void pstripe_rdlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ck_pflock_read_lock(&s->u.p);
	TSAN_ACQUIRE(&s->u.p);
}

static void pstripe_rdunlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	TSAN_RELEASE(PF_RD(s));
	ck_pflock_read_unlock(&s->u.p);
}

static void xstripe_init(struct stripe *s)
{
	pthread_mutex_init(&s->u.x, NULL);
}

static void xstripe_fini(struct stripe *s)
{
	pthread_mutex_destroy(&s->u.x);
}

static void xstripe_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	pthread_mutex_lock(&s->u.x);
}

static bool xstripe_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	return pthread_mutex_trylock(&s->u.x) == 0;
}

static void xstripe_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	pthread_mutex_unlock(&s->u.x);
}

/* ---- list locks ------------------------------------------------------------------------- */

static void tlist_lock(struct plist *l)
{
	ps_lock_lock(&l->t);
}

static void tlist_unlock(struct plist *l)
{
	ps_lock_unlock(&l->t);
}

/* locked: the global LRU lock */
static void xlist_lock(struct plist *l)
{
	pthread_mutex_lock(&l->x);
}

static void xlist_unlock(struct plist *l)
{
	pthread_mutex_unlock(&l->x);
}

/* ---- read-side protection and the end of an item ---------------------------------------- */

/* ps, ps-nocrp: the section keeps the item; ps_free defers its reuse past it (I3). */
static void ps_pin(struct cache *c, struct item *it)
{
	(void)it;
	ps_enter(c->ps);
}

static void ps_unpin(struct cache *c, struct item *it)
{
	(void)it;
	ps_exit(c->ps);
}

/* mcs-clock, locked: one reference for the table, one per cache_ref; the last frees. */
static void ref_pin(struct cache *c, struct item *it)
{
	(void)c;
	atomic_fetch_add_explicit(&it->refcount, 1, RELAXED);
}

static void ref_put(struct cache *c, struct item *it)
{
	if (atomic_fetch_sub_explicit(&it->refcount, 1, ACQ_REL) == 1)
		cache__item_retire(c, it);
}

/* ---- replacement: the mark a hit leaves ------------------------------------------------- */

/* CLOCK: set the reference bit, storing only if it is clear. */
static void clock_bump(struct cache *c, struct item *it)
{
	(void)c;
	uint8_t r = atomic_load_explicit(&it->refbit, RELAXED);
	if (!(r & REF_BIT))
		atomic_store_explicit(&it->refbit, r | REF_BIT, RELAXED);
}

/* ps-nocrp: no replacement policy. */
static void no_bump(struct cache *c, struct item *it)
{
	(void)c;
	(void)it;
}

/* ---- the axes, one table per choice ------------------------------------------------------ */

/* ps_lock tickets (ps, ps-nocrp) */
static const struct cache_stripe_ops stripe_ticket = {
	.init = tstripe_init,
	.lock = tstripe_lock,
	.trylock = tstripe_trylock,
	.unlock = tstripe_unlock,
	.rdlock = tstripe_lock,
	.rdunlock = tstripe_unlock,
};

/* MCS, in gets too (mcs-clock, mcs) */
static const struct cache_stripe_ops stripe_mcs = {
	.init = mstripe_init,
	.lock = mstripe_lock,
	.trylock = mstripe_trylock,
	.unlock = mstripe_unlock,
	.rdlock = mstripe_lock,
	.rdunlock = mstripe_unlock,
};

/* pthread mutexes, in gets too (locked) */
static const struct cache_stripe_ops stripe_mutex = {
	.init = xstripe_init,
	.fini = xstripe_fini,
	.lock = xstripe_lock,
	.trylock = xstripe_trylock,
	.unlock = xstripe_unlock,
	.rdlock = xstripe_lock,
	.rdunlock = xstripe_unlock,
};

/* phase-fair reader-writer locks, gets on the read side (pf-rw) */
static const struct cache_stripe_ops stripe_pf = {
	.init = pstripe_init,
	.lock = pstripe_lock,
	.trylock = pstripe_trylock,
	.unlock = pstripe_unlock,
	.shared_reads = true,
	.rdlock = pstripe_rdlock,
	.rdunlock = pstripe_rdunlock,
};

/* ParSec sections; unlinked items are ps_free()d */
static const struct cache_pin_ops pin_parsec = {
	.parsec = true,
	.pin = ps_pin,
	.unpin = ps_unpin,
	.drop = cache__item_retire,
};

/* reference counts */
static const struct cache_pin_ops pin_ref = {
	.pin = ref_pin,
	.unpin = ref_put,
	.drop = ref_put,
};

/* CLOCK over CACHE_CLOCK_LISTS lists, ticket list locks (ps) */
static const struct cache_repl_ops repl_clock_lists = {
	.has_list = true,
	.nlists = CACHE_CLOCK_LISTS,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = clock_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* one CLOCK list (mcs-clock) */
static const struct cache_repl_ops repl_clock_one = {
	.has_list = true,
	.nlists = 1,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = clock_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* one LRU list under one mutex, the item moved to its head on every access (locked) */
static const struct cache_repl_ops repl_lru = {
	.has_list = true,
	.lru = true,
	.nlists = 1,
	.list_lock = xlist_lock,
	.list_unlock = xlist_unlock,
	.bump = cache__lru_bump,
	.evict_scan = cache__lru_evict_locked,
};

/* no lists and no reference bits: no eviction (ps-nocrp, mcs, pf-rw) */
static const struct cache_repl_ops repl_none = {
	.nlists = 1,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = no_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* ---- the variants: one choice per axis ---------------------------------------------------- */

static const struct {
	const struct cache_stripe_ops *stripe;
	const struct cache_pin_ops *pin;
	const struct cache_repl_ops *repl;
} variants[CACHE_PF_RW + 1] = {
	/* ParSec sections, ticket stripe locks, CLOCK over CACHE_CLOCK_LISTS lists */
	[CACHE_PS] = {&stripe_ticket, &pin_parsec, &repl_clock_lists},
	/* ps without lists and reference bits: no eviction */
	[CACHE_PS_NOCRP] = {&stripe_ticket, &pin_parsec, &repl_none},
	/* "modified memcached": MCS stripe locks in gets too, reference counts, one CLOCK
	 * list */
	[CACHE_MCS_CLOCK] = {&stripe_mcs, &pin_ref, &repl_clock_one},
	/* stock memcached: mutex stripe locks, reference counts, one LRU list */
	[CACHE_LOCKED] = {&stripe_mutex, &pin_ref, &repl_lru},
	/* RT-SMR (RTAS 2018) §VII-C's "MCS lock": MCS stripe locks in gets too, reference
	 * counts, no replacement (the study disables it) */
	[CACHE_MCS] = {&stripe_mcs, &pin_ref, &repl_none},
	/* its "RW lock": phase-fair stripe locks, gets on the read side, reference counts,
	 * no replacement */
	[CACHE_PF_RW] = {&stripe_pf, &pin_ref, &repl_none},
};

void cache__variant_ops(enum cache_variant v, struct cache_ops *out)
{
	out->stripe = *variants[v].stripe;
	out->pin = *variants[v].pin;
	out->repl = *variants[v].repl;
}
