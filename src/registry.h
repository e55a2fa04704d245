/*
 * src/registry.h - the thread registry's exit hooks for modules that keep per-thread
 * state (not installed). Defined in src/thread.c; included by thread.c and by every
 * module whose instances are registry clients: ps.c, ps_mem_internal.h (struct ps_mem),
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
	struct tsync__client *prev, *next;
};
/* Add/remove a client (registry mutex). After remove returns, thread_exit is not
 * running for c and will not run again. */
void tsync__client_add(struct tsync__client *c);
void tsync__client_remove(struct tsync__client *c);

#endif
