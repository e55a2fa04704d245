/*
 * apps/cached/server/conn_ctx.h - one connection's protocol state as the command layer
 * sees it: what server.c hands to every executor (exec.h, exec_bin.h) and what they
 * hand each other. A type only: no function.
 */
#ifndef TSYNC_CACHED_CONN_CTX_H
#define TSYNC_CACHED_CONN_CTX_H

#include <stdbool.h>

#include "srv_state.h"

/* One connection's protocol state, as the command layer sees it. */
struct conn_ctx {
	struct server *srv;
	struct wstats *ws;
	bool close_after;     /* close once the reply is written (quit, errors) */
	int fd;               /* the socket (memcached's cfd in log lines and stats conns) */
	unsigned watch_flags; /* set by "watch": the connection becomes a log watcher */
};

#endif /* TSYNC_CACHED_CONN_CTX_H */
