/*
 * apps/cached/server/exec.h - the ASCII protocol's executor as the connection layer calls
 * it (exec.c; the binary protocol's is exec_bin.h). server.c calls these; nothing in the
 * command layer calls back into server.c.
 */
#ifndef TSYNC_CACHED_EXEC_H
#define TSYNC_CACHED_EXEC_H

#include "conn_ctx.h"
#include "proto.h"

struct evbuffer;

/*
 * Execute one parsed request against srv->cache and append the reply to out.
 * Called on the connection's worker thread; blocking only as cache.h's updates are
 * (bucket locks); never while holding a cache_ref across a wait.
 */
void exec_ascii(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out);

/* Reply to a request the parser rejected (res from a failed parse). */
void exec_ascii_error(struct conn_ctx *cx, const struct mc_parse_res *res, struct evbuffer *out);

#endif /* TSYNC_CACHED_EXEC_H */
