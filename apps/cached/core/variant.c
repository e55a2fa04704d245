/*
 * apps/cached/core/variant.c - the studies' variants (cache.h, enum cache_variant) as one
 * choice on each of three axes (struct cache_ops, cache_types.h): the stripe lock; how
 * a get protects the item it hands out and how an unlinked item ends; the replacement
 * policy and its list locks. ParSec (EuroSys 2016) §5.2 compares ps against mcs-clock
 * ("modified memcached"); locked is stock memcached's scheme; RT-SMR (RTAS 2018) §VII-C
 * compares RT-ParSec (ps-nocrp on an RT ps) against mcs and pf-rw, both without
 * replacement.
 */
#include "cache_types.h"

/* ---- stripe locks ----------------------------------------------------------------------- */

static void tk_init(struct stripe *s)
{
	ps_lock_init(&s->u.t);
}

static void tk_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ps_lock_lock(&s->u.t);
}

static bool tk_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	return ps_lock_trylock(&s->u.t);
}

static void tk_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
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

static void mcs_init(struct stripe *s)
{
	ck_spinlock_mcs_init(&s->u.m);
}

static void mcs_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	ck_spinlock_mcs_lock(&s->u.m, n);
	TSAN_ACQUIRE(&s->u.m);
}

static bool mcs_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	if (!ck_spinlock_mcs_trylock(&s->u.m, n))
		return false;
	TSAN_ACQUIRE(&s->u.m);
	return true;
}

static void mcs_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
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

static void pf_init(struct stripe *s)
{
	ck_pflock_init(&s->u.p);
}

static void pf_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ck_pflock_write_lock(&s->u.p);
	TSAN_ACQUIRE(&s->u.p);
	TSAN_ACQUIRE(PF_RD(s));
}

/* ck_pflock has no trylock. Only eviction uses one (I4), and pf-rw has no lists. */
static bool pf_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)s;
	(void)n;
	return false;
}

static void pf_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	TSAN_RELEASE(&s->u.p);
	ck_pflock_write_unlock(&s->u.p);
}

static void pf_rdlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	ck_pflock_read_lock(&s->u.p);
	TSAN_ACQUIRE(&s->u.p);
}

static void pf_rdunlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	TSAN_RELEASE(PF_RD(s));
	ck_pflock_read_unlock(&s->u.p);
}

static void mx_init(struct stripe *s)
{
	pthread_mutex_init(&s->u.x, NULL);
}

static void mx_fini(struct stripe *s)
{
	pthread_mutex_destroy(&s->u.x);
}

static void mx_lock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	pthread_mutex_lock(&s->u.x);
}

static bool mx_trylock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	return pthread_mutex_trylock(&s->u.x) == 0;
}

static void mx_unlock(struct stripe *s, struct ck_spinlock_mcs *n)
{
	(void)n;
	pthread_mutex_unlock(&s->u.x);
}

/* ---- list locks ------------------------------------------------------------------------- */

static void tl_lock(struct plist *l)
{
	ps_lock_lock(&l->t);
}

static void tl_unlock(struct plist *l)
{
	ps_lock_unlock(&l->t);
}

/* locked: the global LRU lock */
static void xl_lock(struct plist *l)
{
	pthread_mutex_lock(&l->x);
}

static void xl_unlock(struct plist *l)
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

/* ---- the axes: one table each, one row per choice ------------------------------------- */

enum { LK_TICKET, LK_MCS, LK_MUTEX, LK_PF };
static const struct cache_stripe_ops stripe_ops[] = {
	/*           init     fini     lock     trylock     unlock  shared_reads rdlock rdunlock */
	[LK_TICKET] = {tk_init, NULL, tk_lock, tk_trylock, tk_unlock, false, tk_lock, tk_unlock},
	[LK_MCS] = {mcs_init, NULL, mcs_lock, mcs_trylock, mcs_unlock, false, mcs_lock, mcs_unlock},
	[LK_MUTEX] = {mx_init, mx_fini, mx_lock, mx_trylock, mx_unlock, false, mx_lock, mx_unlock},
	[LK_PF] = {pf_init, NULL, pf_lock, pf_trylock, pf_unlock, true, pf_rdlock, pf_rdunlock},
};

enum { PIN_PARSEC, PIN_REF };
static const struct cache_pin_ops pin_ops[] = {
	/*             parsec pin    unpin     drop */
	[PIN_PARSEC] = {true, ps_pin, ps_unpin, cache__item_retire},
	[PIN_REF] = {false, ref_pin, ref_put, ref_put},
};

enum { REPL_CLOCK, REPL_LRU, REPL_NONE };
static const struct cache_repl_ops repl_ops[] = {
	/*           has_list lru list_lock/unlock   bump        evict_scan */
	[REPL_CLOCK] = {true, false, tl_lock, tl_unlock, clock_bump, cache__clock_evict_locked},
	[REPL_LRU] = {true, true, xl_lock, xl_unlock, cache__lru_bump, cache__lru_evict_locked},
	[REPL_NONE] = {false, false, tl_lock, tl_unlock, no_bump, cache__clock_evict_locked},
};

/* ---- the variants: a choice per axis, and the number of lists ----------------------------- */

static const struct {
	unsigned char stripe, pin, repl;
	unsigned nlists;
} variants[CACHE_PF_RW + 1] = {
	/* ParSec sections, ticket stripe locks, CLOCK over CACHE_CLOCK_LISTS lists */
	[CACHE_PS] = {LK_TICKET, PIN_PARSEC, REPL_CLOCK, CACHE_CLOCK_LISTS},
	/* ps without lists and reference bits: no eviction */
	[CACHE_PS_NOCRP] = {LK_TICKET, PIN_PARSEC, REPL_NONE, 1},
	/* "modified memcached": MCS stripe locks in gets too, reference counts, one CLOCK
	 * list */
	[CACHE_MCS_CLOCK] = {LK_MCS, PIN_REF, REPL_CLOCK, 1},
	/* stock memcached: mutex stripe locks, reference counts, one LRU list under one
	 * mutex, the item moved to its head on every access */
	[CACHE_LOCKED] = {LK_MUTEX, PIN_REF, REPL_LRU, 1},
	/* RT-SMR (RTAS 2018) §VII-C's "MCS lock": MCS stripe locks in gets too, reference
	 * counts, no replacement (the study disables it) */
	[CACHE_MCS] = {LK_MCS, PIN_REF, REPL_NONE, 1},
	/* its "RW lock": phase-fair stripe locks, gets on the read side, reference counts,
	 * no replacement */
	[CACHE_PF_RW] = {LK_PF, PIN_REF, REPL_NONE, 1},
};

void cache__variant_ops(enum cache_variant v, struct cache_ops *out)
{
	out->stripe = stripe_ops[variants[v].stripe];
	out->pin = pin_ops[variants[v].pin];
	out->repl = repl_ops[variants[v].repl];
	out->nlists = variants[v].nlists;
}
