/*
 * apps/cached/server/exec.h - the command layer's interface to the connection layer: one
 * connection's protocol state (struct conn_ctx) and the calls that execute a parsed
 * request (exec.c: ASCII, exec_bin.c: binary). server.c calls these; nothing in the
 * command layer calls back into server.c.
 */
#ifndef TSYNC_CACHED_EXEC_H
#define TSYNC_CACHED_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "srv_state.h"

struct evbuffer;

/* One connection's protocol state, as the command layer sees it. */
struct conn_ctx {
	struct server *srv;
	struct wstats *ws;
	bool close_after;         /* close once the reply is written (quit, errors) */
	int fd;                   /* the socket (memcached's cfd in log lines and stats conns) */
	unsigned watch_flags;     /* set by "watch": the connection becomes a log watcher */
};

/*
 * Execute one parsed request against srv->cache and append the reply to out.
 * Called on the connection's worker thread; blocking only as cache.h's updates are
 * (bucket locks); never while holding a cache_ref across a wait.
 */
void exec_ascii(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out);
void exec_bin(struct conn_ctx *cx, const struct mc_bin_req *req, struct evbuffer *out);

/* Reply to a request the parser rejected (res from a failed parse). */
void exec_ascii_error(struct conn_ctx *cx, const struct mc_parse_res *res,
		      struct evbuffer *out);
void exec_bin_error(struct conn_ctx *cx, uint8_t opcode, uint32_t opaque,
		    const struct mc_parse_res *res, struct evbuffer *out);

#endif /* TSYNC_CACHED_EXEC_H */
