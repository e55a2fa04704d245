/*
 * apps/cached/server/exec_meta.h - the meta commands' executor (exec_meta.c).
 */
#ifndef TSYNC_CACHED_EXEC_META_H
#define TSYNC_CACHED_EXEC_META_H

#include "conn_ctx.h"
#include "proto.h"

struct evbuffer;

/* Execute one meta request (req->op one of MC_OP_MG, MS, MD, MA, MN, ME) and append its
 * reply to out; every one but mn counts in the worker's cmd_meta. */
void exec_meta(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out);

#endif /* TSYNC_CACHED_EXEC_META_H */
