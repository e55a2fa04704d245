/*
 * apps/cached/core/variant.c - the studies' variants (cache.h, enum cache_variant) as
 * operations tables (struct cache_ops, cache_internal.h): their stripe and list locks,
 * how a get protects the item it hands out, how an unlinked item ends, and the
 * replacement policy. ParSec (EuroSys 2016) §5.2 compares ps against mcs-clock ("modified
 * memcached"); locked is stock memcached's scheme; RT-SMR (RTAS 2018) §VII-C compares
 * RT-ParSec (ps-nocrp on an RT ps) against mcs and pf-rw, both without replacement.
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

/* ---- the tables ------------------------------------------------------------------------- */

/* ParSec sections, ticket stripe locks, CLOCK over CACHE_CLOCK_LISTS lists. */
static const struct cache_ops ops_ps = {
	.stripe_init = tstripe_init,
	.stripe_lock = tstripe_lock,
	.stripe_trylock = tstripe_trylock,
	.stripe_unlock = tstripe_unlock,
	.stripe_rdlock = tstripe_lock,
	.stripe_rdunlock = tstripe_unlock,
	.parsec = true,
	.pin = ps_pin,
	.unpin = ps_unpin,
	.drop = cache__item_retire,
	.has_list = true,
	.nlists = CACHE_CLOCK_LISTS,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = clock_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* ps without lists and reference bits: no eviction. */
static const struct cache_ops ops_ps_nocrp = {
	.stripe_init = tstripe_init,
	.stripe_lock = tstripe_lock,
	.stripe_trylock = tstripe_trylock,
	.stripe_unlock = tstripe_unlock,
	.stripe_rdlock = tstripe_lock,
	.stripe_rdunlock = tstripe_unlock,
	.parsec = true,
	.pin = ps_pin,
	.unpin = ps_unpin,
	.drop = cache__item_retire,
	.nlists = 1,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = no_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* "modified memcached": MCS stripe locks in gets too, reference counts, one CLOCK list. */
static const struct cache_ops ops_mcs_clock = {
	.stripe_init = mstripe_init,
	.stripe_lock = mstripe_lock,
	.stripe_trylock = mstripe_trylock,
	.stripe_unlock = mstripe_unlock,
	.stripe_rdlock = mstripe_lock,
	.stripe_rdunlock = mstripe_unlock,
	.pin = ref_pin,
	.unpin = ref_put,
	.drop = ref_put,
	.has_list = true,
	.nlists = 1,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = clock_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* stock memcached: mutex stripe locks, reference counts, one LRU list under one mutex. */
static const struct cache_ops ops_locked = {
	.stripe_init = xstripe_init,
	.stripe_fini = xstripe_fini,
	.stripe_lock = xstripe_lock,
	.stripe_trylock = xstripe_trylock,
	.stripe_unlock = xstripe_unlock,
	.stripe_rdlock = xstripe_lock,
	.stripe_rdunlock = xstripe_unlock,
	.pin = ref_pin,
	.unpin = ref_put,
	.drop = ref_put,
	.has_list = true,
	.lru = true,
	.nlists = 1,
	.list_lock = xlist_lock,
	.list_unlock = xlist_unlock,
	.bump = cache__lru_bump,
	.evict_scan = cache__lru_evict_locked,
};

/* RT-SMR (RTAS 2018) §VII-C's "MCS lock": MCS stripe locks in gets too, reference counts,
 * no replacement (the study disables it). */
static const struct cache_ops ops_mcs = {
	.stripe_init = mstripe_init,
	.stripe_lock = mstripe_lock,
	.stripe_trylock = mstripe_trylock,
	.stripe_unlock = mstripe_unlock,
	.stripe_rdlock = mstripe_lock,
	.stripe_rdunlock = mstripe_unlock,
	.pin = ref_pin,
	.unpin = ref_put,
	.drop = ref_put,
	.nlists = 1,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = no_bump,
	.evict_scan = cache__clock_evict_locked,
};

/* Its "RW lock": phase-fair stripe locks, gets on the read side, reference counts, no
 * replacement. */
static const struct cache_ops ops_pf_rw = {
	.stripe_init = pstripe_init,
	.stripe_lock = pstripe_lock,
	.stripe_trylock = pstripe_trylock,
	.stripe_unlock = pstripe_unlock,
	.shared_reads = true,
	.stripe_rdlock = pstripe_rdlock,
	.stripe_rdunlock = pstripe_rdunlock,
	.pin = ref_pin,
	.unpin = ref_put,
	.drop = ref_put,
	.nlists = 1,
	.list_lock = tlist_lock,
	.list_unlock = tlist_unlock,
	.bump = no_bump,
	.evict_scan = cache__clock_evict_locked,
};

const struct cache_ops *const cache__variant_ops[CACHE_PF_RW + 1] = {
	[CACHE_PS] = &ops_ps,
	[CACHE_PS_NOCRP] = &ops_ps_nocrp,
	[CACHE_MCS_CLOCK] = &ops_mcs_clock,
	[CACHE_LOCKED] = &ops_locked,
	[CACHE_MCS] = &ops_mcs,
	[CACHE_PF_RW] = &ops_pf_rw,
};
