/*
 * src/ps_mem_budget.c - one memory limit over several ps_mem (struct ps_mem_budget,
 * include/tsync/ps_mem.h): each member's objects are charged from their allocation to
 * their reuse, and an allocation at the limit makes room, reclaims and waits for a grace
 * period instead of failing (Prudence (ASPLOS 2016) §4). The argument that no reader
 * sees reused memory under it: docs/design.md §3, "A budget across allocators".
 */
#include <errno.h>
#include <stdlib.h>

#include "ps_mem_types.h"

#define RELAXED memory_order_relaxed

/* struct ps_mem_budget and the charge's inlines: ps_mem_types.h. */

struct ps_mem_budget *ps_mem_budget_create(struct ps *ps, uint64_t limit, int wait_ms)
{
	struct ps_mem_budget *b = NULL;
	if (ps == NULL || limit == 0 || wait_ms < -1 || wait_ms > 60000)
		errno = EINVAL;
	else if ((b = aligned_alloc(TSYNC_CACHE_LINE, sizeof(*b))) == NULL)
		errno = ENOMEM;
	if (b == NULL)
		return NULL;
	b->ps = ps;
	b->limit = limit;
	b->wait_ms = wait_ms ? wait_ms : 100;
	pthread_mutex_init(&b->lock, NULL);
	atomic_init(&b->members, NULL);
	atomic_init(&b->charged, 0);
	atomic_init(&b->garbage, 0);
	atomic_init(&b->waits, 0);
	atomic_init(&b->timeouts, 0);
	return b;
}

int ps_mem_budget_destroy(struct ps_mem_budget *b)
{
	if (b == NULL)
		return 0;
	if (atomic_load_explicit(&b->members, memory_order_acquire) != NULL) {
		errno = EBUSY;
		return -1;
	}
	pthread_mutex_destroy(&b->lock);
	free(b);
	return 0;
}

/* m's budget_alloc hook: ps_alloc(m) of a member. */
static void *member_alloc(struct ps_mem *m)
{
	return ps_mem_budget_alloc(m, 0, NULL, NULL);
}

static void member_detach(struct ps_mem *m);

int ps_mem_budget_attach(struct ps_mem_budget *b, struct ps_mem *m)
{
	if (b == NULL || m == NULL || m->ps != b->ps || m->budget != NULL) {
		errno = EINVAL;
		return -1;
	}
	struct ps_mem_stats st;
	ps_mem_stats(m, &st);
	if (st.in_use != 0 || st.pending != 0) { /* objects nobody charged */
		errno = EBUSY;
		return -1;
	}
	m->budget_charge = (m->slab_size + m->nobj - 1) / m->nobj;
	m->budget_alloc = member_alloc;
	m->budget_detach = member_detach;
	/* every free and reclamation of m now takes the paths that charge (ps_mem__reclaim_ext) */
	m->ext = true;
	m->budget = b;
	pthread_mutex_lock(&b->lock);
	atomic_store_explicit(&m->budget_next, atomic_load_explicit(&b->members, RELAXED), RELAXED);
	atomic_store_explicit(&b->members, m, memory_order_release);
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* m's budget_detach hook (ps_mem_destroy): m leaves its budget, returning what its
 * objects were charged. */
static void member_detach(struct ps_mem *m)
{
	struct ps_mem_budget *b = m->budget;
	struct ps_mem_stats st;
	ps_mem_stats(m, &st); /* exact: no thread uses m any more */
	pthread_mutex_lock(&b->lock);
	struct ps_mem *_Atomic *pp = &b->members;
	while (atomic_load_explicit(pp, RELAXED) != m)
		pp = &atomic_load_explicit(pp, RELAXED)->budget_next;
	atomic_store_explicit(pp, atomic_load_explicit(&m->budget_next, RELAXED), RELAXED);
	pthread_mutex_unlock(&b->lock);
	/* its objects end with it: their charge returns */
	atomic_fetch_sub_explicit(&b->garbage, st.pending * m->budget_charge, RELAXED);
	atomic_fetch_sub_explicit(&b->charged, (st.in_use + st.pending) * m->budget_charge,
				  RELAXED);
	m->budget = NULL;
}

/* Take n bytes under the limit. */
static bool take(struct ps_mem_budget *b, uint64_t n)
{
	uint64_t u = atomic_load_explicit(&b->charged, RELAXED);
	while (u + n <= b->limit)
		if (atomic_compare_exchange_weak_explicit(&b->charged, &u, u + n, RELAXED, RELAXED))
			return true;
	return false;
}

/* Reclaim the caller's quiesced garbage of every member. */
static size_t reclaim_members(struct ps_mem_budget *b)
{
	size_t n = 0;
	for (struct ps_mem *m = atomic_load_explicit(&b->members, memory_order_acquire); m;
	     m = atomic_load_explicit(&m->budget_next, memory_order_acquire))
		n += ps_mem_reclaim(m);
	return n;
}

/*
 * Charge n bytes to b (ps_mem_budget_alloc's contract): 0, or the errno of the refusal.
 * The deadline starts at the first nap, so a call that room or a reclamation serves
 * never reads the clock.
 */
static int reserve(struct ps_mem_budget *b, uint64_t n, unsigned flags, ps_mem_room_fn room,
		   void *arg)
{
	uint64_t deadline = 0;
	unsigned naps = 0;
	for (;;) {
		if (take(b, n))
			return 0;
		if (room != NULL && room(arg, n, naps))
			continue;
		if (reclaim_members(b) > 0)
			continue;
		if (atomic_load_explicit(&b->garbage, RELAXED) == 0)
			return ENOSPC; /* no grace period can bring anything back */
		if ((flags & PS_MEM_BUDGET_NOWAIT) || b->wait_ms < 0)
			return ETIMEDOUT;
		if (ps_in_section(b->ps)) /* its own section may hold that grace period back */
			return EDEADLK;
		uint64_t t = tsync__mono_ns();
		if (deadline == 0) {
			deadline = t + (uint64_t)b->wait_ms * 1000000u;
			atomic_fetch_add_explicit(&b->waits, 1, RELAXED);
		} else if (t >= deadline) {
			atomic_fetch_add_explicit(&b->timeouts, 1, RELAXED);
			return ETIMEDOUT;
		}
		struct timespec nap = {0, PS_MEM_BUDGET_NAP_NS};
		nanosleep(&nap, NULL);
		naps++;
	}
}

void *ps_mem_budget_alloc(struct ps_mem *m, unsigned flags, ps_mem_room_fn room, void *arg)
{
	if (m == NULL || m->budget == NULL || (flags & ~PS_MEM_BUDGET_NOWAIT) != 0) {
		errno = EINVAL;
		return NULL;
	}
	struct ps_mem_budget *b = m->budget;
	int e = reserve(b, m->budget_charge, flags, room, arg);
	if (e != 0) {
		errno = e;
		return NULL;
	}
	void *obj = ps_mem__alloc_plain(m);
	if (obj == NULL) {
		e = errno;
		atomic_fetch_sub_explicit(&b->charged, m->budget_charge, RELAXED);
		errno = e;
	}
	return obj;
}

int ps_mem_budget_stats(const struct ps_mem_budget *b, struct ps_mem_budget_stats *out)
{
	if (b == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	out->limit = b->limit;
	out->charged = atomic_load_explicit(&b->charged, RELAXED);
	out->garbage = atomic_load_explicit(&b->garbage, RELAXED);
	out->waits = atomic_load_explicit(&b->waits, RELAXED);
	out->timeouts = atomic_load_explicit(&b->timeouts, RELAXED);
	return 0;
}
