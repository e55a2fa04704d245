/*
 * bench/prudence/peers/peer.h - `tsync-bench prudence`'s peers as the harness sees them:
 * malloc + liburcu's call_rcu (urcu.c) and malloc + Concurrency Kit's ck_epoch_call
 * (ck_epoch.c), each a set of hooks for a row of the harness's table (struct palloc in
 * prudence_bench.c), and what they share with the harness (peer.c): the count of
 * deferred frees their callbacks completed, against the writers' issued count, which
 * the harness hands in. Calls run one way: prudence_bench.c -> the peers -> peer.c.
 */
#ifndef TSYNC_BENCH_PRUDENCE_PEER_H
#define TSYNC_BENCH_PRUDENCE_PEER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tsync/ps_mem.h>

/* ck_epoch_poll once per this many ck_epoch_call. */
#define PRUDENCE_POLL_EVERY 64u

/* peer.c: deferred frees completed by the peers' callbacks; the writers' issued count
 * (set by the harness before its writers start); issued - completed. */
extern _Atomic uint64_t prudence__done;
extern uint64_t (*prudence__issued)(void);
uint64_t prudence__peer_pending(void);
/* The hooks every malloc-based row shares: malloc, nothing, no ps_mem statistics. */
void *prudence_libc_alloc(size_t size);
void prudence_nothing(void);
bool prudence_no_stats(struct ps_mem_stats *out);

/* urcu.c: glibc (or a preloaded) malloc + liburcu call_rcu (memb); _all: a call_rcu
 * worker per CPU. */
int prudence_rcu_init(size_t size, unsigned n);
int prudence_rcu_init_all(size_t size, unsigned n);
void prudence_rcu_fini(void);
void prudence_rcu_fini_all(void);
void prudence_rcu_thread_init(unsigned idx);
void prudence_rcu_thread_fini(void);
void prudence_rcu_free_deferred(void *p);
void prudence_rcu_lock(void);
void prudence_rcu_unlock(void);

/* ck_epoch.c: glibc malloc + ck_epoch_call, ck_epoch_poll every PRUDENCE_POLL_EVERY calls. */
int prudence_cke_init(size_t size, unsigned n);
void prudence_cke_fini(void);
void prudence_cke_thread_init(unsigned idx);
void prudence_cke_thread_fini(void);
void prudence_cke_free_deferred(void *p);
void prudence_cke_lock(void);
void prudence_cke_unlock(void);
void prudence_cke_drain(void);

#endif
