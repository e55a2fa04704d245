/*
 * tests/oplog/example_oplog.c - the worked example of docs/oplog.md §1, compiled and run
 * (ctest oplog_example): a set of waiters updated on every request (add, then remove on
 * the same thread: absorbed locally), read when an event fires.
 */
#include "check.h"

#include <tsync/oplog_list.h>

struct waiter {
	struct oplog_list_node link; /* first: the list hands back this pointer */
	int fd;
};

static struct oplog_domain *dom; /* one per log type: the per-thread tables */
static struct oplog_list waiters;
static _Atomic int woken;

static void setup(void)
{
	dom = oplog_list_domain_create(OPLOG_LIST_LOCAL_ABSORB, 0, NULL);
	CHECK(dom != NULL);
	CHECK(oplog_list_init(&waiters, dom) == 0);
}

/* any thread, very often; w was set up once with oplog_list_node_init(&w->link) */
static void on_request(struct waiter *w)
{
	CHECK(oplog_list_add(&waiters, &w->link) == OPLOG_PUSHED); /* this thread's log */
	/* ... serve the request ... */
	CHECK(oplog_list_remove(&waiters, &w->link) == OPLOG_ABSORBED); /* nothing shared */
}

static void wake(int fd)
{
	(void)fd;
	atomic_fetch_add(&woken, 1);
}

/* rarely */
static void on_event(void)
{
	oplog_synchronize(&waiters.obj); /* every thread's pending ops applied */
	for (struct oplog_list_node *n = waiters.head.next; n != &waiters.head; n = n->next)
		wake(((struct waiter *)(void *)n)->fd);
	oplog_unlock(&waiters.obj);
}

static void *worker(void *arg)
{
	struct waiter *w = arg;
	oplog_list_node_init(&w->link);
	for (int i = 0; i < 10000; i++)
		on_request(w);
	/* leave one registered */
	CHECK(oplog_list_add(&waiters, &w->link) == OPLOG_PUSHED);
	return NULL;
}

int main(void)
{
	/* shorter than ctest's TIMEOUT (60 s, CMakeLists.txt): a hang fails with a message */
	test_watchdog(50);
	setup();
	struct waiter w[3] = {{.fd = 3}, {.fd = 4}, {.fd = 5}};
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		t[i] = test_spawn(worker, &w[i]);
	for (int i = 0; i < 3; i++)
		test_join(t[i]);
	on_event();
	CHECK_EQ(atomic_load(&woken), 3); /* the three left registered, nothing else */
	struct oplog_stats st;
	CHECK(oplog_domain_stats(dom, &st) == 0);
	CHECK_EQ(st.absorbed_local, 30000);
	CHECK_EQ(st.executed, 3); /* only the three final adds reached the shared list */
	oplog_list_fini(&waiters);
	oplog_domain_destroy(dom);
	test_log("example: ok (%" PRIu64 " removes absorbed, %" PRIu64 " ops executed)",
		 st.absorbed_local, st.executed);
	return 0;
}
