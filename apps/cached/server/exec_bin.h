/*
 * apps/cached/server/exec_bin.h - the binary protocol's executor as the connection layer
 * calls it (exec_bin.c).
 */
#ifndef TSYNC_CACHED_EXEC_BIN_H
#define TSYNC_CACHED_EXEC_BIN_H

#include <stdint.h>

#include "conn_ctx.h"
#include "proto.h"

struct evbuffer;

/* Execute one parsed binary request and append the response to out; as exec_ascii
 * (exec.h). */
void exec_bin(struct conn_ctx *cx, const struct mc_bin_req *req, struct evbuffer *out);

/* Respond to a binary request the parser rejected (res from a failed parse; opcode and
 * opaque as the parser filled them in). */
void exec_bin_error(struct conn_ctx *cx, uint8_t opcode, uint32_t opaque,
		    const struct mc_parse_res *res, struct evbuffer *out);

#endif /* TSYNC_CACHED_EXEC_BIN_H */
