/*
 * apps/cached/server/exec_common.c - what the ASCII, meta and binary executors share
 * around the cache: the store every protocol's storage commands go through (a failed set
 * drops the old value, as memcached's; watchers see the lookup and the outcome), the
 * mapping of a storage command to its cache operation, and what a get records (the
 * "stats detail" count, the watchers' item_get line in memcached's format).
 */
#include "exec_common.h"

#include "stats_prefix.h"
#include "watch.h"

/* memcached's class ids start at 1; 0 = none */
static unsigned clsid_of(struct conn_ctx *cx, size_t nkey, size_t nbytes)
{
	int k = cache_class_for(cx->srv->cache, nkey, nbytes);
	return k < 0 ? 0 : (unsigned)k + 1;
}

void exec_log_get(struct conn_ctx *cx, const char *key, size_t nkey, bool found, uint32_t nbytes)
{
	char k[3 * MC_KEY_MAX + 1];
	watch_uriencode(key, nkey, k, sizeof k);
	watch_log(cx->srv, WATCH_FETCHERS, "type=item_get key=%s status=%s clsid=%u cfd=%d size=%u",
		  k, found ? "found" : "not_found", found ? clsid_of(cx, nkey, nbytes) : 0, cx->fd,
		  found ? nbytes : 0);
}

void exec_record_get(struct conn_ctx *cx, const char *key, size_t nkey, bool hit, uint32_t nbytes)
{
	if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
		stats_prefix_record(key, nkey, PREFIX_GET, hit);
	if (watch_wants(cx->srv, WATCH_FETCHERS))
		exec_log_get(cx, key, nkey, hit, hit ? nbytes : 0);
}

/* A store as memcached's do_store_item logs it: the lookup of the old item (fetchers),
 * then the outcome (mutations). */
static void log_store_lookup(struct conn_ctx *cx, const char *key, size_t nkey)
{
	struct cache_ref ref;
	bool found = cache_peek(cx->srv->cache, key, nkey, &ref) == CACHE_OK;
	uint32_t nb = found ? ref.nbytes : 0;
	if (found)
		cache_release(cx->srv->cache, &ref);
	exec_log_get(cx, key, nkey, found, nb);
}

static void log_store(struct conn_ctx *cx, enum cache_store_op op, const char *key, size_t nkey,
		      enum cache_status st, int64_t exptime, uint32_t nbytes)
{
	static const char *const cmds[] = {
		[CACHE_SET] = "set",       [CACHE_ADD] = "add",         [CACHE_REPLACE] = "replace",
		[CACHE_APPEND] = "append", [CACHE_PREPEND] = "prepend", [CACHE_CAS] = "cas"};
	const char *status;
	switch (st) {
	case CACHE_STORED: status = "stored"; break;
	case CACHE_EXISTS: status = "exists"; break;
	case CACHE_NOT_FOUND: status = "not_found"; break;
	case CACHE_TOO_LARGE: status = "too_large"; break;
	case CACHE_NO_MEMORY: status = "no_memory"; break;
	default: status = "not_stored"; break;
	}
	char k[3 * MC_KEY_MAX + 1];
	watch_uriencode(key, nkey, k, sizeof k);
	watch_log(cx->srv, WATCH_MUTATIONS,
		  "type=item_store key=%s status=%s cmd=%s ttl=%lld clsid=%u cfd=%d size=%u", k,
		  status, (unsigned)op < sizeof cmds / sizeof *cmds && cmds[op] ? cmds[op] : "na",
		  (long long)(exptime < 0 ? 0 : exptime), clsid_of(cx, nkey, nbytes), cx->fd,
		  nbytes);
}

/* cache_store, logged for watchers when any watches */
enum cache_status exec_store_logged(struct conn_ctx *cx, enum cache_store_op op, const void *key,
				    size_t nkey, const void *data, uint32_t nbytes, uint32_t flags,
				    int64_t exptime, uint64_t cas_in, uint64_t *cas_out,
				    bool key_binary)
{
	if (watch_wants(cx->srv, WATCH_FETCHERS))
		log_store_lookup(cx, key, nkey);
	enum cache_status st = cache_store_meta(cx->srv->cache, op, key, nkey, data, nbytes, flags,
						exptime, cas_in, cas_out, key_binary);
	/* memcached: a set that cannot be stored (too large, no memory) removes the key's
	 * old value, so no stale value is served */
	if (op == CACHE_SET && (st == CACHE_TOO_LARGE || st == CACHE_NO_MEMORY))
		cache_delete(cx->srv->cache, key, nkey, 0);
	if (watch_wants(cx->srv, WATCH_MUTATIONS))
		log_store(cx, op, key, nkey, st, exptime, nbytes);
	return st;
}

enum cache_store_op exec_store_op(enum mc_op op)
{
	switch (op) {
	case MC_OP_ADD: return CACHE_ADD;
	case MC_OP_REPLACE: return CACHE_REPLACE;
	case MC_OP_APPEND: return CACHE_APPEND;
	case MC_OP_PREPEND: return CACHE_PREPEND;
	case MC_OP_CAS: return CACHE_CAS;
	default: return CACHE_SET;
	}
}
