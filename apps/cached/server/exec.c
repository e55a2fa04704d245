/*
 * apps/cached/server/exec.c - tsync-cached's command layer, its ASCII side: a parsed
 * ASCII request (proto.h) is dispatched here; the classic commands (get/gets/gat/gats,
 * the storage commands, delete, incr/decr, touch, flush_all, version, verbosity, quit)
 * become cache.h calls and memcached's reply bytes, appended to the connection's output
 * evbuffer. The meta commands are exec_meta.c's, stats/slabs/watch exec_stats.c's, the
 * binary protocol exec_bin.c's; the reply builders are reply.c's.
 *
 * Reads (here and in exec_meta.c, exec_bin.c): a cache_ref is held only while its value
 * is copied into the output buffer (evbuffer_add copies), then released at once - the
 * worker never waits on a socket with a ref held, so in the ps variants it never sits
 * inside a parallel section while blocked (cache.h, struct cache_ref). What a get
 * records - the "stats detail" count (a mutex) and the watchers' line (their lock) - is
 * done after the release, from values copied out of the ref (exec_record_get).
 */
#include "exec.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exec_common.h"
#include "exec_meta.h"
#include "exec_stats.h"
#include "reply.h"
#include "stats_prefix.h"

#define GET_REPLY_MAX (64u << 20) /* output one get request may queue (plus one value) */

/* memcached 1.6 answers nothing to a noreply command, errors included, except running out
 * of memory (its out_errstring path). */
static bool sent_despite_noreply(const char *r)
{
	return strncmp(r, "SERVER_ERROR out of memory", 26) == 0;
}

static void exec_get(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	bool touch = req->op == MC_OP_GAT || req->op == MC_OP_GATS;
	bool with_cas = req->op == MC_OP_GETS || req->op == MC_OP_GATS;
	size_t pos = 0;
	const char *key;
	size_t nkey;
	/* A multi-get copies every value into the output: bound what one request may queue
	 * (a 4 MiB line of keys naming 1 MiB values would otherwise ask for gigabytes) and
	 * answer as memcached does when it cannot build a get response. */
	size_t cap = (size_t)GET_REPLY_MAX + cx->srv->set.item_max;
	while (mc_next_key(req, &pos, &key, &nkey)) {
		if (evbuffer_get_length(out) > cap) {
			evbuffer_add(out, "SERVER_ERROR out of memory writing get response\r\n",
				     49);
			return;
		}
		struct cache_ref ref;
		enum cache_status st = touch ? cache_gat(c, key, nkey, req->exptime, &ref)
					     : cache_get(c, key, nkey, &ref);
		if (st != CACHE_OK) {
			exec_record_get(cx, key, nkey, false, 0);
			continue;
		}
		char hdr[64];
		int n = with_cas ? snprintf(hdr, sizeof hdr,
					    " %" PRIu32 " %" PRIu32 " %" PRIu64 "\r\n", ref.flags,
					    ref.nbytes, ref.cas)
				 : snprintf(hdr, sizeof hdr, " %" PRIu32 " %" PRIu32 "\r\n",
					    ref.flags, ref.nbytes);
		evbuffer_add(out, "VALUE ", 6);
		evbuffer_add(out, key, nkey);
		evbuffer_add(out, hdr, (size_t)n);
		evbuffer_add(out, ref.value, ref.nbytes);
		uint32_t nbytes = ref.nbytes;
		cache_release(c, &ref);
		evbuffer_add(out, "\r\n", 2);
		exec_record_get(cx, key, nkey, true, nbytes);
	}
	evbuffer_add(out, "END\r\n", 5);
}

/* ---- ASCII dispatch -------------------------------------------------------------------- */

void exec_ascii(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const char *r = NULL;
	switch (req->op) {
	case MC_OP_GET:
	case MC_OP_GETS:
	case MC_OP_GAT:
	case MC_OP_GATS: exec_get(cx, req, out); return;
	case MC_OP_SET:
	case MC_OP_ADD:
	case MC_OP_REPLACE:
	case MC_OP_APPEND:
	case MC_OP_PREPEND:
	case MC_OP_CAS: {
		uint64_t cas_in = req->op == MC_OP_CAS ? (req->cas ? req->cas : UINT64_MAX) : 0;
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			stats_prefix_record(req->key, req->nkey, PREFIX_SET, false);
		r = reply_store(exec_store_logged(cx, exec_store_op(req->op), req->key, req->nkey,
						  req->data, req->nbytes, req->flags, req->exptime,
						  cas_in, NULL, false));
		break;
	}
	case MC_OP_DELETE: {
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			stats_prefix_record(req->key, req->nkey, PREFIX_DELETE, false);
		enum cache_status st = cache_delete(c, req->key, req->nkey, 0);
		r = st == CACHE_OK          ? "DELETED\r\n"
		    : st == CACHE_NOT_FOUND ? "NOT_FOUND\r\n"
					    : reply_store(st);
		break;
	}
	case MC_OP_INCR:
	case MC_OP_DECR: {
		uint64_t v;
		enum cache_status st = cache_incr(c, req->key, req->nkey, req->op == MC_OP_DECR,
						  req->delta, 0, &v, NULL);
		if (st == CACHE_OK) {
			if (!req->noreply)
				evbuffer_add_printf(out, "%" PRIu64 "\r\n", v);
			return;
		}
		r = st == CACHE_NOT_FOUND ? "NOT_FOUND\r\n"
		    : st == CACHE_NON_NUMERIC
			    ? "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
		    : st == CACHE_NO_MEMORY ? "SERVER_ERROR out of memory\r\n"
					    : reply_store(st);
		break;
	}
	case MC_OP_TOUCH: {
		enum cache_status st = cache_touch(c, req->key, req->nkey, req->exptime);
		r = st == CACHE_OK          ? "TOUCHED\r\n"
		    : st == CACHE_NOT_FOUND ? "NOT_FOUND\r\n"
					    : reply_store(st);
		break;
	}
	case MC_OP_FLUSH_ALL:
		cache_flush_all(c, req->delay);
		r = "OK\r\n";
		break;
	case MC_OP_STATS: {
		struct reply_stats so = {.out = out};
		exec_stats(cx, req->args, req->args_len, &so);
		return;
	}
	case MC_OP_SLABS: {
		exec_slabs(cx, req, out);
		return;
	}
	case MC_OP_WATCH: {
		exec_watch(cx, req, out);
		return;
	}
	case MC_OP_VERSION: reply_str(out, "VERSION " TSYNC_CACHED_VERSION "\r\n"); return;
	case MC_OP_VERBOSITY:
		atomic_store(&cx->srv->verbosity, (unsigned)req->delta);
		r = "OK\r\n";
		break;
	case MC_OP_QUIT: cx->close_after = true; return;
	case MC_OP_MG:
	case MC_OP_MS:
	case MC_OP_MD:
	case MC_OP_MA:
	case MC_OP_MN:
	case MC_OP_ME: exec_meta(cx, req, out); return;
	default: r = "ERROR\r\n"; break;
	}
	if (r && (!req->noreply || sent_despite_noreply(r)))
		reply_str(out, r);
}

void exec_ascii_error(struct conn_ctx *cx, const struct mc_parse_res *res, struct evbuffer *out)
{
	if (res->drop_key)
		cache_delete(cx->srv->cache, res->drop_key, res->ndrop_key, 0);
	if (!res->noreply || res->close)
		reply_str(out, res->err);
	if (res->close)
		cx->close_after = true;
}
