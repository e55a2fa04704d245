/*
 * apps/cached/server/exec_common.h - what the ASCII, meta and binary executors share
 * around the cache (exec_common.c): the logged store, a storage command's cache
 * operation, a get's bookkeeping.
 */
#ifndef TSYNC_CACHED_EXEC_COMMON_H
#define TSYNC_CACHED_EXEC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "conn_ctx.h"
#include "proto.h"

/* memcached's item_get line for watchers of fetchers (found: the value had nbytes).
 * Call only when watch_wants(cx->srv, WATCH_FETCHERS), and with no cache_ref held: it takes
 * the watchers' lock. */
void exec_log_get(struct conn_ctx *cx, const char *key, size_t nkey, bool found, uint32_t nbytes);

/* A get's bookkeeping, once its read section has ended (no cache_ref held: both take a
 * lock): the "stats detail" count when it is on, and the item_get line when anyone
 * watches fetchers. hit: the key was found, its value nbytes long. */
void exec_record_get(struct conn_ctx *cx, const char *key, size_t nkey, bool hit, uint32_t nbytes);

/* cache_store_meta as memcached's do_store_item: the old item's lookup logged for
 * watchers of fetchers, the outcome for watchers of mutations, and a set that cannot be
 * stored (too large, no memory) removes the key's old value. Returns cache_store's
 * status. */
enum cache_status exec_store_logged(struct conn_ctx *cx, enum cache_store_op op, const void *key,
				    size_t nkey, const void *data, uint32_t nbytes, uint32_t flags,
				    int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				    bool key_binary);

/* The cache operation of a storage command (set for anything not add, replace, append,
 * prepend or cas). */
enum cache_store_op exec_store_op(enum mc_op op);

#endif /* TSYNC_CACHED_EXEC_COMMON_H */
