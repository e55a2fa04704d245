/*
 * tests/thread/test_thread.c - <tsync/thread.h>: lazy and explicit registration, dense ids
 * reused lowest first, automatic unregistration at thread exit (also inside a section).
 * Capacity limits are in test_thread_capacity.c (they must run first in a process).
 */
#include <tsync/tsync.h>

#include "check.h"
#include "holder.h"

static struct ps *ps;

static void no_tsync_call(void *arg)
{
	(void)arg;
}

/* A thread that made no tsync call is not registered; ps_enter registers it. */
static void test_lazy(void)
{
	unsigned c0 = tsync_thread_count();
	struct holder h;
	holder_start(&h, ps);
	h.fn = no_tsync_call;
	holder_do(&h, HOLD_CALL); /* it runs (it answered), and made no tsync call */
	CHECK_EQ(tsync_thread_count(), c0);
	holder_do(&h, HOLD_ENTER);
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	holder_do(&h, HOLD_EXIT);
	holder_do(&h, HOLD_ID);
	CHECK(h.id >= 0 && (unsigned)h.id < tsync_thread_capacity());
	CHECK_LT((unsigned)h.id, tsync_thread_high_water());
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	holder_stop(&h, HOLD_QUIT);
	CHECK_EQ(tsync_thread_count(), c0); /* unregistered at exit */

	/* tsync_thread_id registers lazily too */
	holder_start(&h, ps);
	holder_do(&h, HOLD_ID);
	CHECK(h.id >= 0);
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	holder_stop(&h, HOLD_PTHREAD_EXIT);
	CHECK_EQ(tsync_thread_count(), c0);
}

static void test_explicit(void)
{
	unsigned c0 = tsync_thread_count();
	struct holder h;
	holder_start(&h, ps);
	holder_do(&h, HOLD_REGISTER);
	CHECK_EQ_I(h.ret, 0);
	int id = h.id;
	CHECK(id >= 0);
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	holder_do(&h, HOLD_REGISTER); /* idempotent */
	CHECK_EQ_I(h.ret, 0);
	CHECK_EQ_I(h.id, id);
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	holder_do(&h, HOLD_UNREGISTER);
	CHECK_EQ_I(h.ret, 0);
	CHECK_EQ(tsync_thread_count(), c0);
	holder_do(&h, HOLD_UNREGISTER); /* not registered any more */
	CHECK_EQ_I(h.ret, -1);
	CHECK_EQ_I(h.err, EINVAL);
	CHECK_EQ(tsync_thread_count(), c0);
	/* a later tsync call registers it again */
	holder_do(&h, HOLD_ENTER);
	holder_do(&h, HOLD_EXIT);
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	/* unregister inside a section: the section is closed, the thread may go on */
	holder_do(&h, HOLD_ENTER);
	holder_do(&h, HOLD_UNREGISTER);
	CHECK_EQ_I(h.ret, 0);
	CHECK_EQ(tsync_thread_count(), c0);
	holder_do(&h, HOLD_ENTER); /* re-registers; a fresh section */
	holder_do(&h, HOLD_EXIT);
	CHECK_EQ(tsync_thread_count(), c0 + 1);
	holder_stop(&h, HOLD_QUIT);
	CHECK_EQ(tsync_thread_count(), c0);

	/* an unregistered thread's unregister: EINVAL, nothing else */
	holder_start(&h, ps);
	holder_do(&h, HOLD_UNREGISTER);
	CHECK_EQ_I(h.ret, -1);
	CHECK_EQ_I(h.err, EINVAL);
	CHECK_EQ(tsync_thread_count(), c0);
	holder_stop(&h, HOLD_QUIT);
}

/* The k smallest ids not in used[]. */
static int nth_free(const bool *used, int k)
{
	for (int i = 0;; i++)
		if (!used[i] && k-- == 0)
			return i;
}

#define NH 8
static void test_dense_ids(void)
{
	/* The only registered thread is main (every other thread has exited). */
	CHECK_EQ(tsync_thread_register(), 0);
	CHECK_EQ(tsync_thread_count(), 1);
	int mid = tsync_thread_id();
	CHECK(mid >= 0);
	bool used[64] = {0};
	used[mid] = true;
	unsigned hw0 = tsync_thread_high_water();
	CHECK_GT(hw0, (unsigned)mid);

	struct holder h[NH];
	for (int i = 0; i < NH; i++) {
		holder_start(&h[i], ps);
		holder_do(&h[i], HOLD_REGISTER);
		CHECK_EQ_I(h[i].ret, 0);
		/* registration is sequential, so ids are handed out lowest first */
		CHECK_EQ_I(h[i].id, nth_free(used, 0));
		used[h[i].id] = true;
	}
	CHECK_EQ(tsync_thread_count(), NH + 1);
	unsigned hw1 = tsync_thread_high_water();
	for (int i = 0; i < NH; i++)
		CHECK_LT((unsigned)h[i].id, hw1);
	CHECK_GE(hw1, hw0);

	/* free two ids in the middle: the next registrations take them, lowest first */
	int a = h[5].id, b = h[2].id;
	holder_do(&h[5], HOLD_UNREGISTER);
	CHECK_EQ_I(h[5].ret, 0);
	holder_stop(&h[2], HOLD_QUIT); /* exit: automatic unregistration */
	used[a] = used[b] = false;
	CHECK_EQ(tsync_thread_count(), NH - 1);
	struct holder n1, n2, n3;
	holder_start(&n1, ps);
	holder_do(&n1, HOLD_REGISTER);
	CHECK_EQ_I(n1.id, a < b ? a : b);
	holder_start(&n2, ps);
	holder_do(&n2, HOLD_ID); /* lazy */
	CHECK_EQ_I(n2.id, a < b ? b : a);
	used[a] = used[b] = true;
	holder_start(&n3, ps);
	holder_do(&n3, HOLD_REGISTER);
	CHECK_EQ_I(n3.id, nth_free(used, 0));
	used[n3.id] = true;
	/* h[5] registers again: lowest free id */
	holder_do(&h[5], HOLD_REGISTER);
	CHECK_EQ_I(h[5].id, nth_free(used, 0));
	CHECK_EQ(tsync_thread_count(), NH + 3);

	unsigned hw2 = tsync_thread_high_water();
	CHECK_GE(hw2, hw1);
	CHECK_LE(hw2, NH + 4u); /* dense: never more ids than threads at once (+ main) */

	/* everyone exits (some inside a section): the count drops back to main alone */
	for (int i = 0; i < NH; i++) {
		if (i == 2)
			continue;
		if (i % 3 == 0) {
			holder_do(&h[i], HOLD_ENTER);
			holder_stop(&h[i], HOLD_PTHREAD_EXIT);
		} else {
			holder_stop(&h[i], i % 2 ? HOLD_QUIT : HOLD_PTHREAD_EXIT);
		}
	}
	holder_do(&n1, HOLD_ENTER);
	holder_stop(&n1, HOLD_QUIT);
	holder_stop(&n2, HOLD_QUIT);
	holder_stop(&n3, HOLD_QUIT);
	CHECK_EQ(tsync_thread_count(), 1);
	CHECK_GE(tsync_thread_high_water(), hw2); /* never decreases */

	/* ids are reused lowest first after the exits */
	memset(used, 0, sizeof used);
	used[mid] = true;
	struct holder x;
	holder_start(&x, ps);
	holder_do(&x, HOLD_REGISTER);
	CHECK_EQ_I(x.id, nth_free(used, 0));
	holder_stop(&x, HOLD_QUIT);

	/* main unregisters: its id is the lowest free one again */
	CHECK_EQ(tsync_thread_unregister(), 0);
	CHECK_EQ(tsync_thread_count(), 0);
	holder_start(&x, ps);
	holder_do(&x, HOLD_REGISTER);
	CHECK_EQ_I(x.id, mid < nth_free(used, 0) ? mid : nth_free(used, 0));
	holder_stop(&x, HOLD_QUIT);
	CHECK_EQ(tsync_thread_count(), 0);
}

/* Many short-lived threads: count returns to its base, ids stay dense. */
static void *churn_thread(void *arg)
{
	(void)arg;
	ps_enter(ps);
	ps_exit(ps);
	return NULL;
}

static void test_churn(void)
{
	unsigned c0 = tsync_thread_count();
	unsigned n = (unsigned)test_scale(400, 4);
	for (unsigned i = 0; i < n; i++) {
		pthread_t t[4];
		for (int j = 0; j < 4; j++)
			t[j] = test_spawn(churn_thread, NULL);
		for (int j = 0; j < 4; j++)
			test_join(t[j]);
	}
	CHECK_EQ(tsync_thread_count(), c0);
	CHECK_LE(tsync_thread_high_water(), NH + 8u);
	test_log("thread: %u short-lived threads, high water %u", n * 4, tsync_thread_high_water());
}

int main(void)
{
	test_watchdog(50); /* inside ctest's TIMEOUT (60 s): the watchdog's message is printed */
	if (getenv("TSYNC_MAX_THREADS") == NULL)
		CHECK_EQ(tsync_thread_capacity(), TSYNC_THREADS_DEFAULT);
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	test_lazy();
	test_explicit();
	test_dense_ids();
	test_churn();
	ps_destroy(ps);
	test_log("thread: ok");
	return 0;
}
