/*
 * apps/cached/server/stats_prefix.h - memcached's "stats detail": per-prefix counters
 * (stats_prefix.c). Standalone: the caller checks srv->detail_enabled.
 */
#ifndef TSYNC_CACHED_STATS_PREFIX_H
#define TSYNC_CACHED_STATS_PREFIX_H

#include <stdbool.h>
#include <stddef.h>

enum prefix_op { PREFIX_GET, PREFIX_SET, PREFIX_DELETE };
/* Count one command on key's prefix (the bytes before its first ':'; none: nothing).
 * Any thread; takes one mutex. Call only while srv->detail_enabled. */
void stats_prefix_record(const char *key, size_t nkey, enum prefix_op op, bool hit);
/* "PREFIX <p> get <n> hit <n> set <n> del <n>\r\n" per prefix, then "END\r\n"; malloc'd
 * (caller frees), NULL if out of memory; *len its length. */
char *stats_prefix_dump(size_t *len);
/* Forget every prefix ("stats reset"). */
void stats_prefix_clear(void);

#endif /* TSYNC_CACHED_STATS_PREFIX_H */
