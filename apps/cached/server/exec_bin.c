/*
 * apps/cached/server/exec_bin.c - the binary protocol's executor: a parsed binary request
 * (proto.h) becomes cache.h calls and memcached 1.6's binary response; a request the
 * parser rejected gets its error response.
 */
#include "exec_bin.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exec_common.h"
#include "exec_stats.h"
#include "reply.h"
#include "stats_prefix.h"

void exec_bin_error(struct conn_ctx *cx, uint8_t opcode, uint32_t opaque,
		    const struct mc_parse_res *res, struct evbuffer *out)
{
	if (res->drop_key)
		cache_delete(cx->srv->cache, res->drop_key, res->ndrop_key, 0);
	if (res->close)
		cx->close_after = true;
	if (res->close && res->bin_status == 0)
		return; /* bad magic: close without a reply, as memcached */
	reply_bin_error(out, opcode, opaque, res->bin_status);
}

static uint16_t bin_status_of(enum cache_status st)
{
	switch (st) {
	case CACHE_OK:
	case CACHE_STORED: return MC_BIN_OK;
	case CACHE_NOT_STORED: return MC_BIN_NOT_STORED;
	case CACHE_EXISTS: return MC_BIN_KEY_EEXISTS;
	case CACHE_NOT_FOUND: return MC_BIN_KEY_ENOENT;
	case CACHE_TOO_LARGE: return MC_BIN_E2BIG;
	case CACHE_NO_MEMORY: return MC_BIN_ENOMEM;
	case CACHE_NON_NUMERIC: return MC_BIN_DELTA_BADVAL;
	default: return MC_BIN_EINVAL;
	}
}

void exec_bin(struct conn_ctx *cx, const struct mc_bin_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	uint8_t opc = req->opcode;
	uint32_t opq = req->opaque;
	switch (req->op) {
	case MC_OP_GET:
	case MC_OP_GAT:
	case MC_OP_TOUCH: {
		struct cache_ref ref;
		enum cache_status st =
			req->op == MC_OP_GET
				? cache_get(c, req->key, req->keylen, &ref)
				: cache_gat(c, req->key, req->keylen, req->exptime, &ref);
		bool record = req->op != MC_OP_TOUCH; /* a get's bookkeeping: not TOUCH's */
		if (st != CACHE_OK) {
			if (record)
				exec_record_get(cx, (const char *)req->key, req->keylen, false, 0);
			if (req->quiet)
				return;
			if (req->with_key) { /* GETK miss: the key in the body, as memcached */
				reply_bin_header(out, opc, req->keylen, 0, MC_BIN_KEY_ENOENT,
						 req->keylen, opq, 0);
				evbuffer_add(out, req->key, req->keylen);
			} else {
				reply_bin_error(out, opc, opq, bin_status_of(st));
			}
			return;
		}
		/* TOUCH answers like GAT without the value: the flags as extras (memcached) */
		uint16_t kl = req->with_key ? req->keylen : 0;
		uint32_t vl = req->op == MC_OP_TOUCH ? 0 : ref.nbytes;
		reply_bin_header(out, opc, kl, 4, MC_BIN_OK, 4u + kl + vl, opq, ref.cas);
		uint8_t fl[4] = {(uint8_t)(ref.flags >> 24), (uint8_t)(ref.flags >> 16),
				 (uint8_t)(ref.flags >> 8), (uint8_t)ref.flags};
		evbuffer_add(out, fl, 4);
		if (kl)
			evbuffer_add(out, req->key, kl);
		evbuffer_add(out, ref.value, vl);
		uint32_t nbytes = ref.nbytes;
		cache_release(c, &ref);
		if (record)
			exec_record_get(cx, (const char *)req->key, req->keylen, true, nbytes);
		return;
	}
	case MC_OP_SET:
	case MC_OP_ADD:
	case MC_OP_REPLACE:
	case MC_OP_APPEND:
	case MC_OP_PREPEND: {
		enum cache_store_op op = exec_store_op(req->op);
		/* memcached: a CAS value makes set, add and replace a CAS store (a missing
		 * key is then ENOENT, even for add) */
		if (req->cas != 0 && (op == CACHE_SET || op == CACHE_ADD || op == CACHE_REPLACE))
			op = CACHE_CAS;
		uint64_t cas_out = 0;
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			stats_prefix_record((const char *)req->key, req->keylen, PREFIX_SET, false);
		enum cache_status st =
			exec_store_logged(cx, op, req->key, req->keylen, req->value, req->vlen,
					  req->flags, req->exptime, req->cas, &cas_out, false);
		if (st == CACHE_STORED) {
			if (!req->quiet)
				reply_bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, cas_out);
			return;
		}
		/* memcached: a failed add is EEXISTS; a replace of a missing key ENOENT, an
		 * append/prepend NOT_STORED (with or without a CAS); a CAS store of a missing
		 * key ENOENT, a CAS mismatch EEXISTS */
		uint16_t bs = bin_status_of(st);
		if (st == CACHE_NOT_STORED && op == CACHE_ADD)
			bs = MC_BIN_KEY_EEXISTS;
		else if (st == CACHE_NOT_STORED && op == CACHE_REPLACE)
			bs = MC_BIN_KEY_ENOENT;
		reply_bin_error(out, opc, opq, bs);
		return;
	}
	case MC_OP_DELETE: {
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			stats_prefix_record((const char *)req->key, req->keylen, PREFIX_DELETE,
					    false);
		enum cache_status st = cache_delete(c, req->key, req->keylen, req->cas);
		if (st == CACHE_OK) {
			if (!req->quiet)
				reply_bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
			return;
		}
		reply_bin_error(out, opc, opq, bin_status_of(st));
		return;
	}
	case MC_OP_INCR:
	case MC_OP_DECR: {
		uint64_t v = 0, cas = 0;
		enum cache_status st;
		for (int tries = 0;; tries++) {
			st = cache_incr(c, req->key, req->keylen, req->op == MC_OP_DECR, req->delta,
					req->cas, &v, &cas);
			/* a missing key is created even when a CAS was given (memcached) */
			if (st != CACHE_NOT_FOUND || req->exptime == 0xffffffffLL || tries > 8)
				break;
			char num[24];
			int n = snprintf(num, sizeof num, "%" PRIu64, req->initial);
			st = cache_store(c, CACHE_ADD, req->key, req->keylen, num, (size_t)n, 0,
					 req->exptime, 0, &cas);
			if (st == CACHE_STORED) {
				v = req->initial;
				st = CACHE_OK;
				break;
			}
			if (st != CACHE_NOT_STORED)
				break;
		}
		if (st == CACHE_EXISTS) {
			/* memcached finds an empty value not numeric before it compares the CAS */
			struct cache_ref ref;
			if (cache_peek(c, req->key, req->keylen, &ref) == CACHE_OK) {
				if (ref.nbytes == 0)
					st = CACHE_NON_NUMERIC;
				cache_release(c, &ref);
			}
		}
		if (st != CACHE_OK) {
			reply_bin_error(out, opc, opq, bin_status_of(st));
			return;
		}
		if (req->quiet)
			return;
		reply_bin_header(out, opc, 0, 0, MC_BIN_OK, 8, opq, cas);
		uint8_t b[8];
		for (int i = 0; i < 8; i++)
			b[i] = (uint8_t)(v >> (56 - 8 * i));
		evbuffer_add(out, b, 8);
		return;
	}
	case MC_OP_QUIT:
		if (!req->quiet)
			reply_bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
		cx->close_after = true;
		return;
	case MC_OP_FLUSH_ALL:
		cache_flush_all(c, req->exptime);
		if (!req->quiet)
			reply_bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
		return;
	case MC_OP_NOOP: reply_bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0); return;
	case MC_OP_VERSION: {
		const char *v = TSYNC_CACHED_VERSION;
		reply_bin_header(out, opc, 0, 0, MC_BIN_OK, (uint32_t)strlen(v), opq, 0);
		reply_str(out, v);
		return;
	}
	case MC_OP_STATS: {
		struct reply_stats so = {.out = out, .bin = true, .opaque = opq};
		exec_stats(cx, (const char *)req->key, req->keylen, &so);
		return;
	}
	default: reply_bin_error(out, opc, opq, MC_BIN_UNKNOWN_COMMAND); return;
	}
}
