/*
 * bench/hash/peers/peers.h - `tsync-bench hash`'s peers as the harness (hash_bench.c) sees
 * them: the hooks of one row of its table each (struct table_ops there): init, per-thread
 * init and fini, lookup, insert, remove (each reporting whether it found, inserted or
 * removed), and the count of resizes.
 */
#ifndef TSYNC_BENCH_HASH_PEERS_H
#define TSYNC_BENCH_HASH_PEERS_H

/* What every peer file uses besides its own library. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define WHO "tsync-bench hash"

/* Most worker threads (ids 0..MAXT-1; the harness prefills with id MAXT - 1). */
#define MAXT 64

/* One peer's hooks, as the harness's table (struct table_ops in hash_bench.c) takes them:
 * init, per-thread init and fini, lookup, insert and remove (each true if it found,
 * inserted or removed), and the count of resizes. A peer without per-thread state leaves
 * the thread hooks undefined (the harness passes its no-op). */
#define HASH_PEER_HOOKS(p)                              \
	void p##init(uint64_t keys, unsigned nthreads); \
	void p##thread(unsigned id);                    \
	void p##thread_fini(unsigned id);               \
	bool p##lookup(unsigned id, uint64_t key);      \
	bool p##insert(unsigned id, uint64_t key);      \
	bool p##remove(unsigned id, uint64_t key);      \
	uint64_t p##resizes(void);

HASH_PEER_HOOKS(hash_urcu_) /* urcu_lfht.c: liburcu's rculfhash */
HASH_PEER_HOOKS(hash_ck_)   /* ck_hs.c: Concurrency Kit's ck_hs */
HASH_PEER_HOOKS(hash_rw_)   /* rwlock.c: a chained table under a pthread rwlock */

#endif
