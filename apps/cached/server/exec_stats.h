/*
 * apps/cached/server/exec_stats.h - the administrative commands (exec_stats.c): stats in
 * both protocols, slabs and watch.
 */
#ifndef TSYNC_CACHED_EXEC_STATS_H
#define TSYNC_CACHED_EXEC_STATS_H

#include <stddef.h>

#include "conn_ctx.h"
#include "proto.h"
#include "reply.h"

struct evbuffer;

/*
 * One stats request: arg[0..n) is what follows "stats" (ASCII: the rest of the line;
 * binary: the key); so says where the lines go and in which protocol. Replies as
 * memcached 1.6.18 does, including its errors: ASCII answers an unknown group "ERROR",
 * binary KEY_ENOENT.
 */
void exec_stats(struct conn_ctx *cx, const char *arg, size_t n, struct reply_stats *so);

/* "slabs reassign|automove ..." (ASCII), memcached 1.6.18's replies. */
void exec_slabs(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out);

/* "watch [kinds]" (ASCII): answers OK and sets cx->watch_flags, which makes server.c turn
 * the connection into a log watcher; an unknown kind: ERROR. */
void exec_watch(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out);

#endif /* TSYNC_CACHED_EXEC_STATS_H */
