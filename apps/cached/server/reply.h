/*
 * apps/cached/server/reply.h - the reply builders the executors share (reply.c): bytes
 * appended to a connection's output evbuffer, in memcached 1.6.18's ASCII and binary
 * formats.
 */
#ifndef TSYNC_CACHED_REPLY_H
#define TSYNC_CACHED_REPLY_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "proto.h"

struct evbuffer;

/* Append the NUL-terminated s. */
void reply_str(struct evbuffer *out, const char *s);

/* memcached's ASCII reply line to a storage command that ended with st. */
const char *reply_store(enum cache_status st);

/* A binary response header (24 bytes); the body, bodylen bytes, follows it. */
void reply_bin_header(struct evbuffer *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
		      uint16_t status, uint32_t bodylen, uint32_t opaque, uint64_t cas);
/* A binary error response: status st with memcached's text as the body. */
void reply_bin_error(struct evbuffer *out, uint8_t opcode, uint32_t opaque, uint16_t st);

/* Where STAT lines go: "STAT <name> <value>\r\n" (ASCII) or one binary STAT response per
 * line, echoing opaque (bin). */
struct reply_stats {
	struct evbuffer *out;
	bool bin;
	uint32_t opaque;
};
/* One stat, its value printf-formatted (at most 127 bytes). */
__attribute__((format(printf, 3, 4))) void reply_stat(struct reply_stats *so, const char *name,
						      const char *fmt, ...);
/* The end of a stats reply: "END\r\n", or an empty binary STAT response. */
void reply_stat_end(struct reply_stats *so);

#endif /* TSYNC_CACHED_REPLY_H */
