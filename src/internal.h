/*
 * src/internal.h - what tsync's modules share and users do not see: the registry's
 * thread-exit hooks and lazily allocated per-thread record arrays.
 */
#ifndef TSYNC_INTERNAL_H
#define TSYNC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <tsync/thread.h>
#include "tdir.h"

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
	struct tsync__client *prev, *next;
};
/* Add/remove a client (registry mutex). add first runs thread_prepare (if set) for
 * every explicitly registered thread: 0, or -1 with errno = ENOMEM and c not added.
 * After remove returns, thread_exit is not running for c and will not run again. */
int tsync__client_add(struct tsync__client *c);
void tsync__client_remove(struct tsync__client *c);
/* Register the calling thread lazily (no thread_prepare) unless it is registered:
 * 0, or -1 with errno = EAGAIN (capacity) or ENOMEM. For calls that can return it. */
int tsync__thread_try_lazy(void);

/* Print "tsync: <msg>" to stderr and abort: documented programming errors only. */
_Noreturn void tsync__fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ps_mem object header, immediately before every object (seed 000 §3.4): the free time
 * (0 while live), the link used by queues, caches and freelists, and the owning slab. */
struct ps_mem_hdr {
	_Atomic uint64_t free_tsc; /* 0: live; PS_MEM_MARKED: marked by ps_lock_release_free;
				    * otherwise the free time (> PS_MEM_MARKED) */
	struct ps_mem_hdr *next;
	/* the owning slab (page aligned); its low bit tags a queued object for its latent
	 * slab (src/ps_mem_internal.h, hdr_slab). Atomic: readers may call ps_mem_of on an
	 * object while its freeing thread tags it. */
	_Atomic uintptr_t slab;
};
#define PS_MEM_MARKED 1u
#define HDR(obj) ((struct ps_mem_hdr *)((char *)(obj) - sizeof(struct ps_mem_hdr)))
#define OBJ(h) ((void *)((char *)(h) + sizeof(struct ps_mem_hdr)))

/* ps internals for ps_mem's diagnostics (src/ps.c). */
struct ps;
/* The thread whose section made the caller's last failed quiescence computation on ps
 * fail (its enter time in *enter), or -1 if none is known (no failure yet, TEMPORAL, or
 * a point held back by the skew margin only). Caller's own state: wait-free. */
int ps__last_blocker(struct ps *ps, uint64_t *enter);
/* Scan every record of ps now: the thread inside a section with the earliest enter time
 * (its enter in *enter), -1 if none; *inside = number of threads inside a section. */
int ps__oldest_section(struct ps *ps, uint64_t *enter, unsigned *inside);
/* Thread tid's slot and quiescence cache in ps, allocated if missing (owner-only fields:
 * thread tid, or the registry's thread_prepare); 0, or -1 with errno = ENOMEM. */
int ps__thread_prepare(struct ps *ps, unsigned tid);

struct ps_mem;
/* ps_free's body; marked: the header may carry PS_MEM_MARKED (ps_lock_release_free). */
void ps__free(struct ps_mem *m, void *obj, int marked, const char *call);

static inline size_t tsync__round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#endif
