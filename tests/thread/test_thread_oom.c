/*
 * tests/thread/test_thread_oom.c - per-thread state allocation failure (issue 14): the
 * contract at the top of <tsync/thread.h>.
 *
 *  - Explicit registration (tsync_thread_register) allocates the thread's records in
 *    every instance up front: under allocation failure it returns -1 with errno = ENOMEM
 *    and leaves the thread unregistered; a retry succeeds.
 *  - Instances created while explicitly registered threads exist allocate their records
 *    at creation: under failure, ps_create / ps_mem_create / ps_ns_create fail with
 *    ENOMEM.
 *  - So an explicitly registered thread's ps_enter/ps_exit, ps_quiesce and ps_alloc
 *    allocate no per-thread state: they work while every allocation fails.
 *  - A lazily registered thread allocates its records on first use: ps_alloc and
 *    ps_ns_alloc return NULL with errno = ENOMEM when that fails (they used to abort),
 *    and work once memory is back.
 *
 * Failure is injected by this executable's own malloc, calloc, aligned_alloc,
 * posix_memalign and memalign (the library is linked statically, so its calls land
 * here): they forward to glibc's __libc_* functions and fail with ENOMEM while the
 * calling thread's countdown `fail_after` has run out. Thread-local, so that only the
 * thread under test is affected. Not built under ASan/TSan (their allocators do not
 * let a program interpose malloc): see tests/CMakeLists.txt.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/clock.h>
#include <tsync/ps.h>
/* White-box: whether the thread holds an id (tsync__tid1) is not API. */
#include <tsync/static/thread.h>
#include <tsync/ps_mem.h>
#include <tsync/ps_ns.h>
#include <tsync/thread.h>

#include "check.h"

/* ---- failure injection ----------------------------------------------------------------- */

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_memalign(size_t align, size_t n);
void *memalign(size_t align, size_t n); /* <malloc.h> */

/* -1: never fail; k >= 0: allow k more allocations on this thread, then fail each. */
static _Thread_local long fail_after = -1;
static _Thread_local long failed; /* allocations refused on this thread */

static bool refuse(void)
{
	if (fail_after < 0)
		return false;
	if (fail_after > 0) {
		fail_after--;
		return false;
	}
	failed++;
	errno = ENOMEM;
	return true;
}

void *malloc(size_t n)
{
	return refuse() ? NULL : __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	return refuse() ? NULL : __libc_calloc(k, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	return refuse() ? NULL : __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
	return refuse() ? NULL : __libc_memalign(align, n);
}

int posix_memalign(void **p, size_t align, size_t n)
{
	if (refuse())
		return ENOMEM;
	void *r = __libc_memalign(align, n);
	if (r == NULL)
		return ENOMEM;
	*p = r;
	return 0;
}

static void fail_from(long k)
{
	failed = 0;
	fail_after = k;
}

static void fail_off(void)
{
	fail_after = -1;
}

/* Create with `expr` while the k-th allocation from now fails, k = 0, 1, ... until it
 * succeeds: every failed attempt must report ENOMEM. */
#define CREATE_UNDER_FAILURE(var, expr)                                   \
	do {                                                              \
		for (unsigned k_ = 0; k_ < 1000 && (var) == NULL; k_++) { \
			fail_from(k_);                                    \
			errno = 0;                                        \
			(var) = (expr);                                   \
			fail_off();                                       \
			if ((var) == NULL)                                \
				CHECK(errno == ENOMEM);                   \
		}                                                         \
		CHECK((var) != NULL);                                     \
	} while (0)

/* ---- the cases ------------------------------------------------------------------------ */

struct inst {
	struct ps *ps;
	struct ps_mem *mem;
	struct ps_ns *ns;
};

static void inst_create(struct inst *in)
{
	in->ps = ps_create(NULL);
	CHECK(in->ps != NULL);
	in->mem = ps_mem_create(in->ps, 48, NULL);
	CHECK(in->mem != NULL);
	in->ns = ps_ns_create(in->ps, 32, NULL);
	CHECK(in->ns != NULL);
}

static void inst_destroy(struct inst *in)
{
	ps_ns_destroy(in->ns);
	ps_mem_destroy(in->mem);
	ps_destroy(in->ps);
}

/*
 * A lazily registered thread (never calls tsync_thread_register): its first ps_alloc on
 * each instance must allocate its record there; under failure that returns NULL/ENOMEM
 * (ps_alloc and ps_ns_alloc can return an error) rather than aborting.
 */
static void *lazy_thread(void *arg)
{
	struct inst *in = arg;
	CHECK(tsync__tid1 == 0);
	fail_from(0);
	errno = 0;
	CHECK(ps_alloc(in->mem) == NULL);
	CHECK(errno == ENOMEM);
	CHECK(failed > 0);
	uint64_t id;
	errno = 0;
	CHECK(ps_ns_alloc(in->ns, &id) == NULL);
	CHECK(errno == ENOMEM);
	/* every countdown, each allocation on the path failing in turn: NULL/ENOMEM or an
	 * object, never an abort */
	bool got = false;
	for (long k = 0; k < 64 && !got; k++) {
		fail_from(k);
		errno = 0;
		void *o = ps_alloc(in->mem);
		fail_off();
		if (o == NULL) {
			CHECK(errno == ENOMEM);
			continue;
		}
		got = true;
		ps_free(in->mem, o);
	}
	CHECK(got);
	CHECK(tsync__tid1 != 0); /* registered lazily by those calls */
	/* memory back: it works */
	void *o = ps_alloc(in->mem);
	CHECK(o != NULL);
	ps_free(in->mem, o);
	void *no = ps_ns_alloc(in->ns, &id);
	CHECK(no != NULL);
	ps_ns_free(in->ns, no);
	ps_mem_collect(in->mem);
	return NULL;
}

/*
 * A lazily registered thread that registers explicitly later: under failure the upgrade
 * returns -1/ENOMEM and the thread stays registered (lazily), with the same id; once
 * memory is back it succeeds.
 */
static void *upgrade_thread(void *arg)
{
	struct inst *in = arg;
	ps_enter(in->ps); /* registers lazily */
	ps_exit(in->ps);
	int id = tsync_thread_id();
	CHECK(id >= 0);
	fail_from(0);
	errno = 0;
	CHECK(tsync_thread_register() == -1);
	CHECK(errno == ENOMEM);
	fail_off();
	CHECK(tsync_thread_id() == id);
	CHECK(tsync_thread_register() == 0);
	CHECK(tsync_thread_id() == id);
	/* now prepared: no allocation in any call below */
	fail_from(0);
	void *o = ps_alloc(in->mem);
	CHECK(o != NULL);
	ps_enter(in->ps);
	ps_exit(in->ps);
	CHECK(failed == 0);
	fail_off();
	ps_free(in->mem, o);
	return NULL;
}

/* Everything an explicitly registered thread does without allocating per-thread state. */
static void explicit_ops(struct inst *in)
{
	fail_from(0);
	ps_enter(in->ps);
	ps_enter(in->ps);
	ps_exit(in->ps);
	ps_exit(in->ps);
	CHECK(failed == 0);
	(void)ps_quiesce(in->ps, ps_quiesce_time(in->ps));
	void *o = ps_alloc(in->mem); /* slabs come from mmap: no malloc on this path */
	CHECK(o != NULL);
	ps_free(in->mem, o);
	ps_mem_collect(in->mem);
	/* ps_ns: its per-thread state exists; the trie may still need a node (not per
	 * thread): an object, or NULL/ENOMEM, never an abort */
	uint64_t id;
	errno = 0;
	void *no = ps_ns_alloc(in->ns, &id);
	CHECK(no != NULL || errno == ENOMEM);
	if (no)
		ps_ns_free(in->ns, no);
	fail_off();
}

int main(void)
{
	CHECK(tsync_clock_init() == 0); /* its helper threads, outside any failure window */

	/* 1. lazy registration: ps_alloc/ps_ns_alloc return ENOMEM instead of aborting */
	struct inst a;
	inst_create(&a);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, lazy_thread, &a) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(tsync_thread_count() == 0);

	/* 2. explicit registration under failure: -1/ENOMEM, the thread left unregistered,
	 * until enough allocations succeed; instances b were never used by any thread, so
	 * registering must allocate records in them */
	struct inst b;
	inst_create(&b);
	long k;
	for (k = 0; k < 1000; k++) {
		fail_from(k);
		errno = 0;
		int rc = tsync_thread_register();
		fail_off();
		if (rc == 0)
			break;
		CHECK(rc == -1);
		CHECK(errno == ENOMEM);
		CHECK(tsync__tid1 == 0);
		CHECK(tsync_thread_count() == 0);
	}
	CHECK(k < 1000);
	CHECK(k > 0); /* at least one failed: registration allocated the records */
	CHECK(tsync_thread_count() == 1);
	CHECK(tsync_thread_register() == 0); /* idempotent */

	/* 3. an explicitly registered thread allocates no per-thread state, in instances
	 * that existed before it registered */
	explicit_ops(&a);
	explicit_ops(&b);

	/* 4. creation while an explicitly registered thread exists allocates its records:
	 * under failure it fails with ENOMEM; once created, the thread's calls allocate
	 * nothing */
	struct ps *ps = NULL;
	CREATE_UNDER_FAILURE(ps, ps_create(NULL));
	struct ps_mem *mem = NULL;
	CREATE_UNDER_FAILURE(mem, ps_mem_create(ps, 48, NULL));
	struct ps_ns *ns = NULL;
	CREATE_UNDER_FAILURE(ns, ps_ns_create(ps, 32, NULL));
	struct inst c = {ps, mem, ns};
	explicit_ops(&c);

	/* 5. lazy, then explicit */
	CHECK(pthread_create(&th, NULL, upgrade_thread, &c) == 0);
	CHECK(pthread_join(th, NULL) == 0);

	inst_destroy(&c);
	inst_destroy(&b);
	inst_destroy(&a);
	CHECK(tsync_thread_unregister() == 0);
	CHECK(tsync_thread_count() == 0);
	printf("test_thread_oom: ok\n");
	return 0;
}
