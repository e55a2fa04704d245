/*
 * apps/cached/server/reply.c - the reply builders every executor shares: memcached's
 * ASCII line for a store's result, the binary protocol's response header and error
 * response, and STAT lines in either protocol. Bytes only: no cache call, no state.
 */
#include "reply.h"

#include <event2/buffer.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void reply_str(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, s, strlen(s));
}

const char *reply_store(enum cache_status st)
{
	switch (st) {
	case CACHE_STORED: return "STORED\r\n";
	case CACHE_NOT_STORED: return "NOT_STORED\r\n";
	case CACHE_EXISTS: return "EXISTS\r\n";
	case CACHE_NOT_FOUND: return "NOT_FOUND\r\n";
	case CACHE_TOO_LARGE: return "SERVER_ERROR object too large for cache\r\n";
	case CACHE_NO_MEMORY: return "SERVER_ERROR out of memory storing object\r\n";
	case CACHE_BAD_KEY: return "CLIENT_ERROR bad command line format\r\n";
	default: return "SERVER_ERROR unhandled storage result\r\n";
	}
}

void reply_bin_header(struct evbuffer *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
		      uint16_t status, uint32_t bodylen, uint32_t opaque, uint64_t cas)
{
	uint8_t h[MC_BIN_HDR_LEN];
	h[0] = MC_BIN_RES_MAGIC;
	h[1] = opcode;
	h[2] = (uint8_t)(keylen >> 8);
	h[3] = (uint8_t)keylen;
	h[4] = extlen;
	h[5] = 0;
	h[6] = (uint8_t)(status >> 8);
	h[7] = (uint8_t)status;
	for (int i = 0; i < 4; i++)
		h[8 + i] = (uint8_t)(bodylen >> (24 - 8 * i));
	for (int i = 0; i < 4; i++) /* opaque: echoed as received (parsed big-endian) */
		h[12 + i] = (uint8_t)(opaque >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		h[16 + i] = (uint8_t)(cas >> (56 - 8 * i));
	evbuffer_add(out, h, sizeof h);
}

void reply_bin_error(struct evbuffer *out, uint8_t opcode, uint32_t opaque, uint16_t st)
{
	const char *t = mc_bin_status_text(st);
	size_t n = strlen(t);
	reply_bin_header(out, opcode, 0, 0, st, (uint32_t)n, opaque, 0);
	evbuffer_add(out, t, n);
}

void reply_stat(struct reply_stats *so, const char *name, const char *fmt, ...)
{
	char val[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(val, sizeof val, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof val)
		n = sizeof val - 1;
	size_t nl = strlen(name);
	if (so->bin) {
		reply_bin_header(so->out, MC_BIN_STAT, (uint16_t)nl, 0, MC_BIN_OK,
				 (uint32_t)(nl + (size_t)n), so->opaque, 0);
		evbuffer_add(so->out, name, nl);
		evbuffer_add(so->out, val, (size_t)n);
	} else {
		evbuffer_add_printf(so->out, "STAT %s %s\r\n", name, val);
	}
}

void reply_stat_end(struct reply_stats *so)
{
	if (so->bin)
		reply_bin_header(so->out, MC_BIN_STAT, 0, 0, MC_BIN_OK, 0, so->opaque, 0);
	else
		evbuffer_add(so->out, "END\r\n", 5);
}
