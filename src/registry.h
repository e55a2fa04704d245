/*
 * src/registry.h - the thread registry's hooks for modules that keep per-thread state
 * (not installed): prepare a thread's records at explicit registration, hand them back
 * at thread exit. Defined in src/thread.c; included by thread.c and by every
 * module whose instances are registry clients: ps.c, ps_mem_types.h (struct ps_mem),
 * ps_ns.c, rlu.c.
 */
#ifndef TSYNC_REGISTRY_H
#define TSYNC_REGISTRY_H

/*
 * A client of the thread registry (each struct ps and struct ps_mem is one). When a
 * registered thread unregisters (explicitly, or at exit through the pthread key
 * destructor), thread_exit(c, tid) runs for every client, in the exiting thread, with
 * the registry mutex held, before tid is released: it must return the thread's
 * per-thread state to shared layers and must not register or unregister clients.
 */
struct tsync__client {
	void (*thread_exit)(struct tsync__client *c, unsigned tid);
	/* Optional (NULL: none). Allocate every per-thread record of thread tid in this
	 * client, so that none of its calls allocates one later; 0, or -1 with errno =
	 * ENOMEM (what it allocated stays with the client, for tid's next user). Runs with
	 * the registry mutex held: in thread tid when it registers explicitly
	 * (tsync_thread_register), and in the creating thread for every explicitly
	 * registered tid when the client is added; it may set tid's owner-only fields. */
	int (*thread_prepare)(struct tsync__client *c, unsigned tid);
	/* Optional fork hooks (NULL: none), run by the registry's pthread_atfork handlers in
	 * the forking thread, with the registry mutex held. fork_prepare(c, phase) takes
	 * every mutex of the client that fork_parent and fork_child then release: phase 0
	 * (for every client first) the locks a callback may be run under (ps's call
	 * queues), phase 1 the others (pools), so that the order is the one every other
	 * path takes: registry, call queue, pool. fork_child(c, ids, n) runs in the child,
	 * which has only the forking thread: ids[i] == TSYNC__ID_VANISHED for every thread
	 * id i < n whose thread does not exist there (never to be reused); the client must
	 * make sure no such id holds anything back (open sections) and must not trust the
	 * vanished threads' owner-only state, which they may have been changing at the
	 * fork (docs/design.md §8). */
	void (*fork_prepare)(struct tsync__client *c, int phase);
	void (*fork_parent)(struct tsync__client *c);
	void (*fork_child)(struct tsync__client *c, const unsigned char *ids, unsigned n);
	struct tsync__client *prev, *next;
};
#define TSYNC__ID_VANISHED 3
/* Add/remove a client (registry mutex). add first runs thread_prepare (if set) for
 * every explicitly registered thread: 0, or -1 with errno = ENOMEM and c not added.
 * After remove returns, thread_exit is not running for c and will not run again. */
int tsync__client_add(struct tsync__client *c);
void tsync__client_remove(struct tsync__client *c);
/* Register the calling thread lazily (no thread_prepare) unless it is registered:
 * 0, or -1 with errno = EAGAIN (capacity) or ENOMEM. For calls that can return it. */
int tsync__thread_try_lazy(void);
/* The number of registered threads, without the registry mutex: a seq_cst load of a
 * count changed by seq_cst read-modify-writes, incremented when a thread registers
 * (before its first section of any instance) and decremented after its exit hooks ran
 * (which close its sections). A caller that is registered and reads 1 is the only
 * registered thread: any other registers after the load, so its sections begin after
 * it (src/ps.c's read barrier relies on this, docs/design.md §2.4). */
unsigned tsync__thread_live(void);

#endif
