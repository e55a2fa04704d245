/*
 * tests/common/holder.h - a thread that executes commands on request, so a test can
 * make specific threads register, unregister, enter or leave sections, or exit, in a
 * fixed order, and read back what they saw. An idle holder sleeps (check.h's gates): it
 * takes no CPU from the threads under test while it waits for its next command.
 */
#ifndef TSYNC_TEST_HOLDER_H
#define TSYNC_TEST_HOLDER_H

#include <tsync/tsync.h>

#include "check.h"

enum holder_cmd {
	HOLD_NONE = 0,
	HOLD_REGISTER,     /* tsync_thread_register(); result in ret/err, id in id */
	HOLD_UNREGISTER,   /* tsync_thread_unregister(); result in ret/err */
	HOLD_ID,           /* id = tsync_thread_id() (may register lazily) */
	HOLD_ENTER,        /* ps_enter(ps) */
	HOLD_EXIT,         /* ps_exit(ps) */
	HOLD_QUIESCE,      /* ret = ps_quiesce(ps, t) */
	HOLD_CALL,         /* fn(arg) */
	HOLD_QUIT,         /* return from the thread function (whatever state it is in) */
	HOLD_PTHREAD_EXIT, /* pthread_exit(NULL) */
};

struct holder {
	pthread_t thread;
	_Atomic int cmd;
	test_gate seq; /* commands issued (holder_do), the holder waits on it */
	test_gate ack; /* commands done, holder_do waits on it */
	struct ps *ps;
	tsync_tick_t t;
	void (*fn)(void *);
	void *arg;
	/* results */
	int ret, err, id;
	bool started_registered;
};

static inline void *holder_main_(void *p)
{
	struct holder *h = p;
	uint64_t s = 0;
	for (;;) {
		s++;
		CHECK(test_gate_wait_ms(&h->seq, s, 0));
		int cmd = atomic_load_explicit(&h->cmd, memory_order_relaxed);
		errno = 0;
		switch (cmd) {
		case HOLD_REGISTER:
			h->ret = tsync_thread_register();
			h->err = errno;
			h->id = h->ret == 0 ? tsync_thread_id() : -1;
			break;
		case HOLD_UNREGISTER:
			h->ret = tsync_thread_unregister();
			h->err = errno;
			break;
		case HOLD_ID:
			h->id = tsync_thread_id();
			h->err = errno;
			break;
		case HOLD_ENTER: ps_enter(h->ps); break;
		case HOLD_EXIT: ps_exit(h->ps); break;
		case HOLD_QUIESCE: h->ret = ps_quiesce(h->ps, h->t); break;
		case HOLD_CALL: h->fn(h->arg); break;
		case HOLD_QUIT: test_gate_set(&h->ack, s); return NULL;
		case HOLD_PTHREAD_EXIT: test_gate_set(&h->ack, s); pthread_exit(NULL);
		default: break;
		}
		test_gate_set(&h->ack, s);
	}
}

static inline void holder_start(struct holder *h, struct ps *ps)
{
	memset(h, 0, sizeof *h);
	test_gate_init(&h->seq, 0);
	test_gate_init(&h->ack, 0);
	h->ps = ps;
	h->id = -1;
	h->thread = test_spawn(holder_main_, h);
}

/* Run cmd on h and wait until it is done (30 s: a holder stuck in its command fails the
 * test with the command's number rather than leaving it to the watchdog). */
static inline void holder_do(struct holder *h, int cmd)
{
	uint64_t s = test_gate_get(&h->seq) + 1;
	atomic_store_explicit(&h->cmd, cmd, memory_order_relaxed);
	test_gate_set(&h->seq, s);
	CHECK_MSG(test_gate_wait_ms(&h->ack, s, 30000), "holder did not answer command %d", cmd);
}

/* Make h leave (returning normally, or with pthread_exit) and join it. */
static inline void holder_stop(struct holder *h, int how)
{
	holder_do(h, how);
	test_join(h->thread);
	test_gate_destroy(&h->seq);
	test_gate_destroy(&h->ack);
}

#endif
