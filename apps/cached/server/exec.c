/*
 * apps/cached/server/exec.c - tsync-cached's command layer: a parsed request (proto.h)
 * becomes cache.h calls and memcached's reply bytes, appended to the connection's output
 * evbuffer.
 *
 * Reads: a cache_ref is held only while its value is copied into the output buffer
 * (evbuffer_add copies), then released at once - the worker never waits on a socket
 * with a ref held, so in the ps variants it never sits inside a parallel section while
 * blocked (cache.h, struct cache_ref).
 */
#include "connreg.h"
#include "exec.h"
#include "srv_state.h"
#include "stats_prefix.h"
#include "watch.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static pthread_mutex_t reset_lock = PTHREAD_MUTEX_INITIALIZER;

static void bin_error(struct evbuffer *out, uint8_t opcode, uint32_t opaque, uint16_t st);

#define GET_REPLY_MAX (64u << 20) /* output one get request may queue (plus one value) */

static void add_str(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, s, strlen(s));
}

/* ---- log lines for watchers (memcached's formats; watch.c) -------------------------- */

/* memcached's class ids start at 1; 0 = none */
static unsigned clsid_of(struct conn_ctx *cx, size_t nkey, size_t nbytes)
{
	int k = cache_class_for(cx->srv->cache, nkey, nbytes);
	return k < 0 ? 0 : (unsigned)k + 1;
}

static void log_get(struct conn_ctx *cx, const char *key, size_t nkey, bool found,
		    uint32_t nbytes)
{
	char k[3 * MC_KEY_MAX + 1];
	watch_uriencode(key, nkey, k, sizeof k);
	watch_log(cx->srv, WATCH_FETCHERS, "type=item_get key=%s status=%s clsid=%u cfd=%d size=%u",
		  k, found ? "found" : "not_found", found ? clsid_of(cx, nkey, nbytes) : 0,
		  cx->fd, found ? nbytes : 0);
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
	log_get(cx, key, nkey, found, nb);
}

static void log_store(struct conn_ctx *cx, enum cache_store_op op, const char *key, size_t nkey,
		      enum cache_status st, int64_t exptime, uint32_t nbytes)
{
	static const char *const cmds[] = {[CACHE_SET] = "set", [CACHE_ADD] = "add",
		[CACHE_REPLACE] = "replace", [CACHE_APPEND] = "append",
		[CACHE_PREPEND] = "prepend", [CACHE_CAS] = "cas"};
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
		  (long long)(exptime < 0 ? 0 : exptime), clsid_of(cx, nkey, nbytes), cx->fd, nbytes);
}

/* cache_store, logged for watchers when any watches */
static enum cache_status store_logged(struct conn_ctx *cx, enum cache_store_op op,
				      const void *key, size_t nkey, const void *data,
				      uint32_t nbytes, uint32_t flags, int64_t exptime,
				      uint64_t cas_in, uint64_t *cas_out, bool key_binary)
{
	if (watching(cx->srv, WATCH_FETCHERS))
		log_store_lookup(cx, key, nkey);
	enum cache_status st = cache_store_meta(cx->srv->cache, op, key, nkey, data, nbytes,
						flags, exptime, cas_in, cas_out, key_binary);
	/* memcached: a set that cannot be stored (too large, no memory) removes the key's
	 * old value, so no stale value is served */
	if (op == CACHE_SET && (st == CACHE_TOO_LARGE || st == CACHE_NO_MEMORY))
		cache_delete(cx->srv->cache, key, nkey, 0);
	if (watching(cx->srv, WATCH_MUTATIONS))
		log_store(cx, op, key, nkey, st, exptime, nbytes);
	return st;
}

/* ---- ASCII replies -------------------------------------------------------------------- */

static const char *store_reply(enum cache_status st)
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

/* memcached 1.6 answers nothing to a noreply command, errors included, except running out
 * of memory (its out_errstring path). */
static bool sent_despite_noreply(const char *r)
{
	return strncmp(r, "SERVER_ERROR out of memory", 26) == 0;
}

static enum cache_store_op store_op(enum mc_op op)
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
			evbuffer_add(out, "SERVER_ERROR out of memory writing get response\r\n", 49);
			return;
		}
		struct cache_ref ref;
		enum cache_status st = touch ? cache_gat(c, key, nkey, req->exptime, &ref)
					     : cache_get(c, key, nkey, &ref);
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			prefix_stats_record(key, nkey, PREFIX_GET, st == CACHE_OK);
		if (watching(cx->srv, WATCH_FETCHERS))
			log_get(cx, key, nkey, st == CACHE_OK, st == CACHE_OK ? ref.nbytes : 0);
		if (st != CACHE_OK)
			continue;
		char hdr[64];
		int n = with_cas ? snprintf(hdr, sizeof hdr, " %" PRIu32 " %" PRIu32 " %" PRIu64 "\r\n",
					    ref.flags, ref.nbytes, ref.cas)
				 : snprintf(hdr, sizeof hdr, " %" PRIu32 " %" PRIu32 "\r\n", ref.flags,
					    ref.nbytes);
		evbuffer_add(out, "VALUE ", 6);
		evbuffer_add(out, key, nkey);
		evbuffer_add(out, hdr, (size_t)n);
		evbuffer_add(out, ref.value, ref.nbytes);
		cache_release(c, &ref);
		evbuffer_add(out, "\r\n", 2);
	}
	evbuffer_add(out, "END\r\n", 5);
}

/* ---- stats ------------------------------------------------------------------------------ */

struct stat_out {
	struct evbuffer *out;
	bool bin;
	uint32_t opaque;
};

static void bin_header(struct evbuffer *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
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

__attribute__((format(printf, 3, 4)))
static void stat_add(struct stat_out *so, const char *name, const char *fmt, ...)
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
		bin_header(so->out, MC_BIN_STAT, (uint16_t)nl, 0, MC_BIN_OK, (uint32_t)(nl + (size_t)n),
			   so->opaque, 0);
		evbuffer_add(so->out, name, nl);
		evbuffer_add(so->out, val, (size_t)n);
	} else {
		evbuffer_add_printf(so->out, "STAT %s %s\r\n", name, val);
	}
}

static void stat_end(struct stat_out *so)
{
	if (so->bin)
		bin_header(so->out, MC_BIN_STAT, 0, 0, MC_BIN_OK, 0, so->opaque, 0);
	else
		evbuffer_add(so->out, "END\r\n", 5);
}

static void stats_general(struct conn_ctx *cx, struct stat_out *so)
{
	struct server *s = cx->srv;
	struct cache_stats st, b;
	cache_stats(s->cache, &st);
	pthread_mutex_lock(&reset_lock);
	b = s->reset_base;
	pthread_mutex_unlock(&reset_lock);
	uint64_t br = 0, bw = 0;
	for (unsigned i = 0; i < s->nworkers; i++) {
		br += atomic_load_explicit(&s->ws[i].bytes_read, memory_order_relaxed);
		bw += atomic_load_explicit(&s->ws[i].bytes_written, memory_order_relaxed);
	}
	br -= atomic_load(&s->reset_bytes_read);
	bw -= atomic_load(&s->reset_bytes_written);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	time_t now = time(NULL);

#define D(f) (st.f - b.f)
	/* memcached 1.6.18's general stats, in its order and with its meanings. Those that
	 * count machinery tsync-cached does not have (response objects and read buffers,
	 * SASL, the slab mover, the LRU crawler and maintainer, segmented LRU moves, log
	 * watchers, NAPI) read 0; tsync's own counters follow under tsync_*. */
	uint64_t cmd_meta = 0, yields = 0, mfails = 0, pauses = 0;
	for (unsigned i = 0; i < s->nworkers; i++) {
		cmd_meta += atomic_load_explicit(&s->ws[i].cmd_meta, memory_order_relaxed);
		yields += atomic_load_explicit(&s->ws[i].conn_yields, memory_order_relaxed);
		mfails += atomic_load_explicit(&s->ws[i].malloc_fails, memory_order_relaxed);
		pauses += atomic_load_explicit(&s->ws[i].read_pauses, memory_order_relaxed);
	}
	unsigned curr = atomic_load(&s->curr_conns);
	stat_add(so, "pid", "%ld", (long)getpid());
	stat_add(so, "uptime", "%" PRIu32, cache_now(s->cache));
	stat_add(so, "time", "%lld", (long long)now);
	stat_add(so, "version", "%s", TSYNC_CACHED_VERSION);
	stat_add(so, "libevent", "%s", event_get_version());
	stat_add(so, "pointer_size", "%d", (int)(8 * sizeof(void *)));
	stat_add(so, "rusage_user", "%ld.%06ld", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
	stat_add(so, "rusage_system", "%ld.%06ld", (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	stat_add(so, "max_connections", "%u", s->set.maxconns);
	stat_add(so, "curr_connections", "%u", curr);
	stat_add(so, "total_connections", "%" PRIu64, atomic_load(&s->total_conns));
	stat_add(so, "rejected_connections", "%" PRIu64, atomic_load(&s->rejected_conns));
	stat_add(so, "connection_structures", "%u", curr + 1); /* + the listener */
	stat_add(so, "response_obj_oom", "0");
	stat_add(so, "response_obj_count", "0");
	stat_add(so, "response_obj_bytes", "0");
	stat_add(so, "read_buf_count", "0");
	stat_add(so, "read_buf_bytes", "0");
	stat_add(so, "read_buf_bytes_free", "0");
	stat_add(so, "read_buf_oom", "0");
	stat_add(so, "reserved_fds", "%u", s->reserved_fds);
	stat_add(so, "cmd_get", "%" PRIu64, D(cmd_get));
	stat_add(so, "cmd_set", "%" PRIu64, D(cmd_set));
	stat_add(so, "cmd_flush", "%" PRIu64, D(cmd_flush));
	stat_add(so, "cmd_touch", "%" PRIu64, D(cmd_touch));
	stat_add(so, "cmd_meta", "%" PRIu64, cmd_meta);
	stat_add(so, "get_hits", "%" PRIu64, D(get_hits));
	stat_add(so, "get_misses", "%" PRIu64, D(get_misses));
	stat_add(so, "get_expired", "%" PRIu64, D(get_expired));
	stat_add(so, "get_flushed", "%" PRIu64, D(get_flushed));
	stat_add(so, "delete_misses", "%" PRIu64, D(delete_misses));
	stat_add(so, "delete_hits", "%" PRIu64, D(delete_hits));
	stat_add(so, "incr_misses", "%" PRIu64, D(incr_misses));
	stat_add(so, "incr_hits", "%" PRIu64, D(incr_hits));
	stat_add(so, "decr_misses", "%" PRIu64, D(decr_misses));
	stat_add(so, "decr_hits", "%" PRIu64, D(decr_hits));
	stat_add(so, "cas_misses", "%" PRIu64, D(cas_misses));
	stat_add(so, "cas_hits", "%" PRIu64, D(cas_hits));
	stat_add(so, "cas_badval", "%" PRIu64, D(cas_badval));
	stat_add(so, "touch_hits", "%" PRIu64, D(touch_hits));
	stat_add(so, "touch_misses", "%" PRIu64, D(touch_misses));
	stat_add(so, "store_too_large", "%" PRIu64, D(store_too_large));
	stat_add(so, "store_no_memory", "%" PRIu64, D(store_no_memory));
	stat_add(so, "auth_cmds", "0");
	stat_add(so, "auth_errors", "0");
	stat_add(so, "bytes_read", "%" PRIu64, br);
	stat_add(so, "bytes_written", "%" PRIu64, bw);
	stat_add(so, "limit_maxbytes", "%" PRIu64, st.limit_maxbytes);
	stat_add(so, "accepting_conns", "%d", atomic_load(&s->accepting) ? 1 : 0);
	stat_add(so, "listen_disabled_num", "%" PRIu64, atomic_load(&s->listen_disabled_num));
	stat_add(so, "time_in_listen_disabled_us", "%" PRIu64,
		 atomic_load(&s->time_in_listen_disabled_us));
	stat_add(so, "threads", "%u", s->set.threads);
	stat_add(so, "conn_yields", "%" PRIu64, yields);
	stat_add(so, "hash_power_level", "%" PRIu64, st.hash_power_level);
	stat_add(so, "hash_bytes", "%" PRIu64, st.hash_bytes);
	stat_add(so, "hash_is_expanding", "%" PRIu64, st.hash_is_expanding);
	static const char *const zero1[] = {
		"slab_reassign_rescues", "slab_reassign_chunk_rescues",
		"slab_reassign_evictions_nomem", "slab_reassign_inline_reclaim",
		"slab_reassign_busy_items", "slab_reassign_busy_deletes", "slab_reassign_running",
		"slabs_moved", "lru_crawler_running", "lru_crawler_starts",
		"lru_maintainer_juggles"};
	for (size_t i = 0; i < sizeof zero1 / sizeof *zero1; i++)
		stat_add(so, zero1[i], "0");
	stat_add(so, "malloc_fails", "%" PRIu64, mfails);
	stat_add(so, "log_worker_dropped", "0");
	stat_add(so, "log_worker_written", "%" PRIu64, atomic_load(&s->log_watcher_sent));
	stat_add(so, "log_watcher_skipped", "%" PRIu64, atomic_load(&s->log_watcher_skipped));
	stat_add(so, "log_watcher_sent", "%" PRIu64, atomic_load(&s->log_watcher_sent));
	stat_add(so, "log_watchers", "%" PRIu64, atomic_load(&s->log_watchers));
	stat_add(so, "unexpected_napi_ids", "0");
	stat_add(so, "round_robin_fallback", "0");
	stat_add(so, "bytes", "%" PRIu64, st.bytes);
	stat_add(so, "curr_items", "%" PRIu64, st.curr_items);
	stat_add(so, "total_items", "%" PRIu64, D(total_items));
	stat_add(so, "slab_global_page_pool", "0");
	stat_add(so, "expired_unfetched", "%" PRIu64, D(expired_unfetched));
	stat_add(so, "evicted_unfetched", "0");
	stat_add(so, "evicted_active", "0");
	stat_add(so, "evictions", "%" PRIu64, D(evictions));
	stat_add(so, "reclaimed", "%" PRIu64, D(reclaimed));
	static const char *const zero3[] = {
		"crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked",
		"moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims",
		"lru_bumps_dropped"};
	for (size_t i = 0; i < sizeof zero3 / sizeof *zero3; i++)
		stat_add(so, zero3[i], "0");
	/* tsync's own: the variant, the ParSec allocator and quiescence counters */
	stat_add(so, "tsync_variant", "%s", cache_variant_name(s->set.variant));
	stat_add(so, "tsync_hash_expansions", "%" PRIu64, st.hash_expansions);
	stat_add(so, "tsync_sweeper_runs", "%" PRIu64, st.sweeper_runs);
	stat_add(so, "tsync_total_malloced", "%" PRIu64, st.total_malloced);
	stat_add(so, "tsync_slabs", "%" PRIu64, st.slabs);
	stat_add(so, "tsync_peak_slabs", "%" PRIu64, st.peak_slabs);
	stat_add(so, "tsync_mem_in_use", "%" PRIu64, st.mem_in_use);
	stat_add(so, "tsync_mem_pending", "%" PRIu64, st.mem_pending);
	stat_add(so, "tsync_mem_charged", "%" PRIu64, st.mem_charged);
	stat_add(so, "tsync_garbage_bytes", "%" PRIu64, st.mem_garbage_bytes);
	stat_add(so, "tsync_mem_cached", "%" PRIu64, st.mem_cached);
	stat_add(so, "tsync_mem_frees", "%" PRIu64, st.mem_frees);
	stat_add(so, "tsync_mem_reclaimed", "%" PRIu64, st.mem_reclaimed);
	stat_add(so, "tsync_mem_max_wait_ns", "%" PRIu64, st.mem_max_wait_ns);
	stat_add(so, "tsync_quiesce_calls", "%" PRIu64, st.quiesce_calls);
	stat_add(so, "tsync_quiesce_true", "%" PRIu64, st.quiesce_true);
	/* why stores answered "out of memory" (cache.h, cache_store), and their waits */
	stat_add(so, "tsync_nomem_full", "%" PRIu64, st.nomem_full);
	stat_add(so, "tsync_nomem_garbage", "%" PRIu64, st.nomem_garbage);
	stat_add(so, "tsync_nomem_busy", "%" PRIu64, st.nomem_busy);
	stat_add(so, "tsync_nomem_system", "%" PRIu64, st.nomem_system);
	stat_add(so, "tsync_evict_waits", "%" PRIu64, st.evict_waits);
	stat_add(so, "tsync_mem_waits", "%" PRIu64, st.mem_waits);
	/* connections whose reading stopped with OUT_HIGH of replies unsent (server.c) */
	stat_add(so, "tsync_read_pauses", "%" PRIu64, pauses);
#undef D
}

static void stats_settings(struct conn_ctx *cx, struct stat_out *so)
{
	/* memcached 1.6.18's names and order, for the settings tsync-cached has or whose
	 * fixed value it shares (no unix socket, no SASL, flush and dump enabled); the
	 * settings of memcached-only machinery (extstore, TLS, LRU crawler and
	 * maintainer, segmented LRU, logging) are left out */
	const struct settings *t = &cx->srv->set;
	struct cache_config cfg;
	cache_config_get(cx->srv->cache, &cfg);
	stat_add(so, "maxbytes", "%" PRIu64, cfg.mem_limit);
	stat_add(so, "maxconns", "%u", t->maxconns);
	stat_add(so, "tcpport", "%u", t->port);
	stat_add(so, "udpport", "0");
	stat_add(so, "inter", "%s", t->addr);
	stat_add(so, "verbosity", "%u", atomic_load(&cx->srv->verbosity));
	stat_add(so, "oldest", "0");
	stat_add(so, "evictions", "%s", cfg.no_evict ? "off" : "on");
	stat_add(so, "domain_socket", "NULL");
	stat_add(so, "umask", "700");
	stat_add(so, "shutdown_command", "no");
	stat_add(so, "growth_factor", "%.2f", cfg.growth_factor);
	stat_add(so, "chunk_size", "%" PRIu32, cfg.chunk_min);
	stat_add(so, "num_threads", "%u", t->threads);
	stat_add(so, "num_threads_per_udp", "%u", t->threads);
	stat_add(so, "stat_key_prefix", ":");
	stat_add(so, "detail_enabled", "%s", atomic_load(&cx->srv->detail_enabled) ? "yes" : "no");
	stat_add(so, "reqs_per_event", "%u", t->reqs_per_event);
	stat_add(so, "cas_enabled", "yes");
	stat_add(so, "tcp_backlog", "%u", t->backlog);
	stat_add(so, "binding_protocol", "auto-negotiate");
	stat_add(so, "auth_enabled_sasl", "no");
	stat_add(so, "auth_enabled_ascii", "no");
	stat_add(so, "item_size_max", "%" PRIu32, cfg.item_size_max);
	stat_add(so, "maxconns_fast", "yes");
	stat_add(so, "hashpower_init", "%u", cfg.hash_power);
	stat_add(so, "slab_reassign", "yes");
	stat_add(so, "slab_automove", "%u", atomic_load(&cx->srv->slab_automove));
	stat_add(so, "flush_enabled", "yes");
	stat_add(so, "dump_enabled", "yes");
	stat_add(so, "hash_algorithm", "xxh3");
	stat_add(so, "idle_timeout", "0");
	stat_add(so, "tsync_variant", "%s", cache_variant_name(cfg.variant));
}

static void stats_classes(struct conn_ctx *cx, struct stat_out *so, bool items)
{
	struct cache *c = cx->srv->cache;
	unsigned n = cache_nclasses(c), active = 0;
	uint64_t malloced = 0;
	for (unsigned i = 0; i < n; i++) {
		struct cache_class_stats cs;
		if (cache_class_stats(c, i, &cs) != 0 || (cs.used_chunks == 0 && cs.total_slabs == 0))
			continue;
		char name[64];
		unsigned id = i + 1; /* memcached's class ids start at 1 */
		active++;
		malloced += cs.total_slabs * cs.slab_bytes;
		if (items) {
			snprintf(name, sizeof name, "items:%u:number", id);
			stat_add(so, name, "%" PRIu64, cs.used_chunks);
			snprintf(name, sizeof name, "items:%u:mem_requested", id);
			stat_add(so, name, "%" PRIu64, cs.mem_requested);
			snprintf(name, sizeof name, "items:%u:evicted", id);
			stat_add(so, name, "%" PRIu64, cs.evicted);
			snprintf(name, sizeof name, "items:%u:reclaimed", id);
			stat_add(so, name, "%" PRIu64, cs.reclaimed);
			snprintf(name, sizeof name, "items:%u:chunk_size", id);
			stat_add(so, name, "%" PRIu32, cs.chunk_size);
		} else {
			snprintf(name, sizeof name, "%u:chunk_size", id);
			stat_add(so, name, "%" PRIu32, cs.chunk_size);
			snprintf(name, sizeof name, "%u:charged_size", id);
			stat_add(so, name, "%" PRIu64, cs.charged);
			snprintf(name, sizeof name, "%u:total_pages", id);
			stat_add(so, name, "%" PRIu64, cs.total_slabs);
			snprintf(name, sizeof name, "%u:page_size", id);
			stat_add(so, name, "%" PRIu64, cs.slab_bytes);
			snprintf(name, sizeof name, "%u:used_chunks", id);
			stat_add(so, name, "%" PRIu64, cs.used_chunks);
			snprintf(name, sizeof name, "%u:mem_requested", id);
			stat_add(so, name, "%" PRIu64, cs.mem_requested);
		}
	}
	if (!items) {
		stat_add(so, "active_slabs", "%u", active);
		stat_add(so, "total_malloced", "%" PRIu64, malloced);
	}
}

static void stats_reset(struct server *s)
{
	struct cache_stats st;
	cache_stats(s->cache, &st);
	uint64_t br = 0, bw = 0;
	for (unsigned i = 0; i < s->nworkers; i++) {
		br += atomic_load(&s->ws[i].bytes_read);
		bw += atomic_load(&s->ws[i].bytes_written);
	}
	pthread_mutex_lock(&reset_lock);
	s->reset_base = st;
	atomic_store(&s->reset_bytes_read, br);
	atomic_store(&s->reset_bytes_written, bw);
	atomic_store(&s->total_conns, 0);
	atomic_store(&s->rejected_conns, 0);
	pthread_mutex_unlock(&reset_lock);
	prefix_stats_clear();
}

struct dump_out {
	struct evbuffer *out;
	size_t bytes;
	time_t now;
};

/* memcached caps a cachedump reply at 2 MB */
#define CACHEDUMP_MAX (2u << 20)

static bool dump_item(void *arg, const char *key, size_t nkey, uint32_t nbytes, int64_t ttl)
{
	struct dump_out *d = arg;
	char line[CACHE_KEY_MAX + 64];
	int n = snprintf(line, sizeof line, "ITEM %.*s [%" PRIu32 " b; %lld s]\r\n", (int)nkey,
			 key, nbytes, ttl < 0 ? 0LL : (long long)(d->now + ttl));
	if (n < 0 || d->bytes + (size_t)n + 5 > CACHEDUMP_MAX)
		return false;
	evbuffer_add(d->out, line, (size_t)n);
	d->bytes += (size_t)n;
	return true;
}

/* A decimal u32 token as memcached's safe_strtoul reads one. */
static bool tok_u32(const char *p, size_t n, uint32_t *out)
{
	if (n == 0 || n > 10)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* The first max space-separated tokens of arg[0..n) (memcached's tokenizer): their
 * starts in tk, lengths in tn; returns how many. */
static size_t split_args(const char *arg, size_t n, const char **tk, size_t *tn, size_t max)
{
	size_t nt = 0;
	for (size_t i = 0; i < n && nt < max;) {
		while (i < n && arg[i] == ' ')
			i++;
		if (i == n)
			break;
		tk[nt] = arg + i;
		while (i < n && arg[i] != ' ')
			i++;
		tn[nt] = (size_t)(arg + i - tk[nt]);
		nt++;
	}
	return nt;
}

/* "stats conns": memcached's "<fd>:<name> <value>" lines */
static void conn_stat(void *arg, int fd, const char *name, const char *val)
{
	char key[64];
	snprintf(key, sizeof key, "%d:%s", fd, name);
	stat_add(arg, key, "%s", val);
}

/* "stats detail on|off|dump" (ASCII) - memcached's replies */
static void stats_detail_ascii(struct conn_ctx *cx, const char *sub, size_t n,
			       struct evbuffer *out)
{
	if (n == 2 && memcmp(sub, "on", 2) == 0) {
		atomic_store(&cx->srv->detail_enabled, true);
		add_str(out, "OK\r\n");
	} else if (n == 3 && memcmp(sub, "off", 3) == 0) {
		atomic_store(&cx->srv->detail_enabled, false);
		add_str(out, "OK\r\n");
	} else if (n == 4 && memcmp(sub, "dump", 4) == 0) {
		size_t len;
		char *d = prefix_stats_dump(&len);
		if (!d) {
			add_str(out, "SERVER_ERROR out of memory writing stats\r\n");
			return;
		}
		evbuffer_add(out, d, len);
		free(d);
	} else {
		add_str(out, "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
	}
}

/*
 * One stats request: arg[0..n) is what follows "stats" (ASCII: the rest of the line;
 * binary: the key). Replies as memcached 1.6.18 does, including its errors: ASCII answers
 * an unknown group "ERROR", binary KEY_ENOENT.
 */
static void do_stats(struct conn_ctx *cx, const char *arg, size_t n, struct stat_out *so)
{
	struct evbuffer *out = so->out;
	const char *tk[4] = {0};
	size_t tn[4] = {0};
	size_t nt = split_args(arg, n, tk, tn, 4);
#define TOK_IS(k, s) (tn[k] == sizeof(s) - 1 && memcmp(tk[k], s, tn[k]) == 0)
	if (so->bin) {
		/* memcached matches binary stat keys by prefix (strncmp) */
#define PFX(s) (n >= sizeof(s) - 1 && memcmp(arg, s, sizeof(s) - 1) == 0)
		if (n == 0) {
			stats_general(cx, so);
		} else if (PFX("reset")) {
			stats_reset(cx->srv);
		} else if (PFX("settings")) {
			stats_settings(cx, so);
		} else if (PFX("detail")) {
			const char *sub = arg + 6;
			size_t sn = n - 6;
			if (sn >= 5 && memcmp(sub, " dump", 5) == 0) {
				size_t len;
				char *d = prefix_stats_dump(&len);
				if (!d) {
					bin_error(out, MC_BIN_STAT, so->opaque, MC_BIN_ENOMEM);
					return;
				}
				bin_header(out, MC_BIN_STAT, 8, 0, MC_BIN_OK, (uint32_t)(8 + len),
					   so->opaque, 0);
				evbuffer_add(out, "detailed", 8);
				evbuffer_add(out, d, len);
				free(d);
			} else if (sn >= 3 && memcmp(sub, " on", 3) == 0) {
				atomic_store(&cx->srv->detail_enabled, true);
			} else if (sn >= 4 && memcmp(sub, " off", 4) == 0) {
				atomic_store(&cx->srv->detail_enabled, false);
			} else {
				bin_error(out, MC_BIN_STAT, so->opaque, MC_BIN_KEY_ENOENT);
				return;
			}
		} else if (n == 5 && memcmp(arg, "items", 5) == 0) {
			stats_classes(cx, so, true);
		} else if (n == 5 && memcmp(arg, "slabs", 5) == 0) {
			stats_classes(cx, so, false);
		} else if (n == 5 && memcmp(arg, "sizes", 5) == 0) {
			stat_add(so, "sizes_status", "disabled");
		} else {
			bin_error(out, MC_BIN_STAT, so->opaque, MC_BIN_KEY_ENOENT);
			return;
		}
#undef PFX
		stat_end(so);
		return;
	}
	if (nt == 0) {
		stats_general(cx, so);
	} else if (TOK_IS(0, "reset")) {
		stats_reset(cx->srv);
		add_str(out, "RESET\r\n");
		return;
	} else if (TOK_IS(0, "detail")) {
		stats_detail_ascii(cx, tk[1], nt > 1 ? tn[1] : 0, out);
		return;
	} else if (TOK_IS(0, "settings")) {
		stats_settings(cx, so);
	} else if (TOK_IS(0, "cachedump")) {
		uint32_t id, limit;
		if (nt < 3) {
			add_str(out, "CLIENT_ERROR bad command line\r\n");
			return;
		}
		if (!tok_u32(tk[1], tn[1], &id) || !tok_u32(tk[2], tn[2], &limit)) {
			add_str(out, "CLIENT_ERROR bad command line format\r\n");
			return;
		}
		if (id >= 64) { /* memcached's MAX_NUMBER_OF_SLAB_CLASSES */
			add_str(out, "CLIENT_ERROR Illegal slab id\r\n");
			return;
		}
		struct dump_out d = {.out = out, .now = time(NULL)};
		if (id > 0) /* memcached's class ids start at 1 */
			cache_dump_class(cx->srv->cache, id - 1, limit, dump_item, &d);
		add_str(out, "END\r\n");
		return;
	} else if (TOK_IS(0, "conns")) {
		connreg_each(cx->fd, conn_stat, so);
	} else if (TOK_IS(0, "items") && nt == 1) {
		stats_classes(cx, so, true);
	} else if (TOK_IS(0, "slabs") && nt == 1) {
		stats_classes(cx, so, false);
	} else if (TOK_IS(0, "sizes") && nt == 1) {
		stat_add(so, "sizes_status", "disabled");
	} else {
		add_str(out, "ERROR\r\n");
		return;
	}
#undef TOK_IS
	stat_end(so);
}

/* "watch [rawcmds|evictions|fetchers|mutations|sysevents|connevents|proxyreqs|
 * proxyevents|proxyuser]..." (no kind: fetchers): answers OK and the connection becomes a
 * log watcher (server.c, watch.c); an unknown kind: ERROR. */
static void exec_watch(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	static const struct { const char *name; unsigned flag; } kinds[] = {
		{"rawcmds", WATCH_RAWCMDS}, {"evictions", WATCH_EVICTIONS},
		{"fetchers", WATCH_FETCHERS}, {"mutations", WATCH_MUTATIONS},
		{"sysevents", WATCH_SYSEVENTS}, {"connevents", WATCH_CONNEVENTS},
		{"proxyreqs", WATCH_PROXY}, {"proxyevents", WATCH_PROXY},
		{"proxyuser", WATCH_PROXY}};
	unsigned f = 0;
	const char *a = req->args;
	size_t n = req->args_len;
	for (size_t i = 0; i < n;) {
		while (i < n && a[i] == ' ')
			i++;
		if (i == n)
			break;
		size_t b = i;
		while (i < n && a[i] != ' ')
			i++;
		size_t k;
		for (k = 0; k < sizeof kinds / sizeof *kinds; k++)
			if (strlen(kinds[k].name) == i - b && memcmp(kinds[k].name, a + b, i - b) == 0)
				break;
		if (k == sizeof kinds / sizeof *kinds) {
			if (i - b == 7 && memcmp(a + b, "noreply", 7) == 0)
				continue;
			add_str(out, "ERROR\r\n");
			return;
		}
		f |= kinds[k].flag;
	}
	cx->watch_flags = f ? f : WATCH_FETCHERS;
	add_str(out, "OK\r\n");
}

/* "slabs reassign <src> <dst>" / "slabs automove <0|1|2>" / "slabs automove ratio <r>",
 * with memcached 1.6.18's replies. tsync's size classes take slabs from one pool and give
 * empty ones back to it at once (ps_mem), so no class ever holds a spare page to move:
 * a valid reassign answers NOSPARE, as memcached does for a class without spare pages
 * (SAME and BADCLASS as memcached); automove is accepted, kept, and shown in
 * "stats settings". */
static bool tok_i32s(const char *p, size_t n, long *out)
{
	bool neg = n > 0 && p[0] == '-';
	uint32_t v;
	if (!tok_u32(p + neg, n - neg, &v) || v > INT32_MAX)
		return false;
	*out = neg ? -(long)v : (long)v;
	return true;
}

static void exec_slabs(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	const char *tk[4] = {0};
	size_t tn[4] = {0};
	size_t nt = split_args(req->args, req->args_len, tk, tn, 4);
	const char *r;
	if (nt == 3 && tn[0] == 8 && memcmp(tk[0], "reassign", 8) == 0) {
		long src, dst, top = (long)cache_nclasses(cx->srv->cache);
		if (!tok_i32s(tk[1], tn[1], &src) || !tok_i32s(tk[2], tn[2], &dst))
			r = "CLIENT_ERROR bad command line format\r\n";
		else if (src == dst)
			r = "SAME src and dst class are identical\r\n";
		else if (src < 0 || src > top || dst < 0 || dst > top)
			r = "BADCLASS invalid src or dst class id\r\n";
		else
			r = "NOSPARE source class has no spare pages\r\n";
	} else if (nt >= 2 && tn[0] == 8 && memcmp(tk[0], "automove", 8) == 0) {
		uint32_t level;
		if (tn[1] == 5 && memcmp(tk[1], "ratio", 5) == 0) {
			char buf[32];
			char *end;
			double ratio = 0;
			bool ok = nt >= 3 && tn[2] < sizeof buf;
			if (ok) {
				memcpy(buf, tk[2], tn[2]);
				buf[tn[2]] = 0;
				ratio = strtod(buf, &end);
				ok = end != buf && *end == 0;
			}
			(void)ratio;
			r = ok ? "OK\r\n" : "ERROR\r\n";
		} else if (!tok_u32(tk[1], tn[1], &level)) {
			r = "CLIENT_ERROR bad command line format\r\n";
		} else if (level > 2) {
			r = "ERROR\r\n";
		} else {
			atomic_store(&cx->srv->slab_automove, level);
			r = "OK\r\n";
		}
	} else {
		r = "ERROR\r\n";
	}
	if (!req->noreply)
		add_str(out, r);
}

/* ---- meta commands -------------------------------------------------------------------- */

/* The key for the 'k' return flag: base64 with " b" when binary (ms/md/ma: as the
 * request sent it; mg: as the item was stored, memcached's ITEM_KEY_BINARY). */
static void meta_key_flag_as(struct evbuffer *out, const struct mc_ascii_req *req, bool binary)
{
	evbuffer_add(out, " k", 2);
	if (binary) {
		char enc[4 * ((MC_KEY_MAX + 2) / 3) + 4];
		size_t n = mc_b64_encode(req->key, req->nkey, enc);
		evbuffer_add(out, enc, n);
		evbuffer_add(out, " b", 2);
	} else {
		evbuffer_add(out, req->key, req->nkey);
	}
}

static void meta_key_flag(struct evbuffer *out, const struct mc_ascii_req *req)
{
	meta_key_flag_as(out, req, req->meta.key_b64);
}

struct meta_vals {
	bool hit;
	uint32_t flags, nbytes;
	uint64_t cas;
	int64_t ttl; /* remaining, -1 = never */
	bool hit_before;  /* h */
	bool key_binary;  /* the item's key was stored base64 (mg k) */
	bool created;     /* mg N made the item */
	bool t_before_T;  /* t came before T: ttl_before is the TTL t reports until T */
	int64_t n_ttl, t_ttl, ttl_before; /* t reports the TTL as of its place in the flags,
					   * where N (created) and T set it (memcached) */
	uint32_t idle;    /* l */
	bool token_sent, stale, won; /* Z, X, W (mg only) */
};

/* Append the return flags the request asked for, in request order. */
static void meta_ret_flags(struct evbuffer *out, const struct mc_ascii_req *req,
			   const struct meta_vals *v)
{
	size_t pos = 0;
	const char *tok;
	size_t ntok;
	char f;
	/* the TTL so far in the flag list: a created item starts with none */
	int64_t cur = v->created ? -1 : v->t_before_T ? v->ttl_before : v->ttl;
	while ((f = mc_meta_next_flag(&req->meta, &pos, &tok, &ntok)) != 0) {
		switch (f) {
		case 'k':
			meta_key_flag_as(out, req, v->hit ? v->key_binary : req->meta.key_b64);
			break;
		case 'N':
			if (v->created)
				cur = v->n_ttl;
			break;
		case 'T':
			cur = v->t_ttl;
			break;
		case 'O':
			evbuffer_add(out, " O", 2);
			evbuffer_add(out, tok, ntok);
			break;
		case 'f':
			if (v->hit)
				evbuffer_add_printf(out, " f%" PRIu32, v->flags);
			break;
		case 's':
			if (v->hit)
				evbuffer_add_printf(out, " s%" PRIu32, v->nbytes);
			break;
		case 't':
			if (v->hit)
				evbuffer_add_printf(out, " t%lld", (long long)cur);
			break;
		case 'c':
			if (v->hit)
				evbuffer_add_printf(out, " c%" PRIu64, v->cas);
			break;
		case 'h':
			if (v->hit)
				evbuffer_add(out, v->hit_before ? " h1" : " h0", 3);
			break;
		case 'l':
			if (v->hit)
				evbuffer_add_printf(out, " l%" PRIu32, v->idle);
			break;
		default:
			break;
		}
	}
	/* the recache state, after the requested flags, in memcached 1.6.18's order */
	if (v->token_sent)
		evbuffer_add(out, " Z", 2);
	if (v->stale)
		evbuffer_add(out, " X", 2);
	if (v->won)
		evbuffer_add(out, " W", 2);
}

static void meta_line(struct evbuffer *out, const char *code, const struct mc_ascii_req *req,
		      const struct meta_vals *v)
{
	evbuffer_add(out, code, 2);
	meta_ret_flags(out, req, v);
	evbuffer_add(out, "\r\n", 2);
}

/* The index of flag letter f among the request's flag tokens (each letter appears once:
 * the parser refuses duplicates), or SIZE_MAX when absent. */
static size_t meta_flag_at(const struct mc_meta *m, char f)
{
	size_t pos = 0, i = 0;
	const char *tok;
	size_t ntok;
	char g;
	while ((g = mc_meta_next_flag(m, &pos, &tok, &ntok)) != 0) {
		if (g == f)
			return i;
		i++;
	}
	return SIZE_MAX;
}

/* mg and ma check the opaque's length only when their reply reaches the O token, after
 * they acted (memcached): the index of a too long O, or SIZE_MAX. Flags before it have
 * taken effect, flags after it have not. */
static size_t meta_bad_opaque_at(const struct mc_meta *m)
{
	if (!(m->flags & MC_MF('O')) || m->nopaque + 1 <= MC_META_OPAQUE_MAX)
		return SIZE_MAX;
	return meta_flag_at(m, 'O');
}

/* An exptime (memcached convention) that is already past: the item it is given to
 * expires at once. */
static bool exptime_past(int64_t e)
{
	return e < 0 || (e > 2592000 && e <= (int64_t)time(NULL));
}

/*
 * What memcached's t flag prints right after T or N set exptime e (memcached convention):
 * its realtime(e) minus its current_time as an unsigned 32-bit number, -1 for none. So a
 * TTL already past prints as a number near 2^32. memcached's clock runs 62 s ahead of its
 * process (process_started = start - 62; current_time = uptime + 60), which is where a
 * past TTL lands (relative time 1).
 */
static int64_t meta_t_of(struct conn_ctx *cx, int64_t e)
{
	if (e == 0)
		return -1;
	int64_t cur = (int64_t)cache_now(cx->srv->cache) + 60;
	int64_t started = (int64_t)cx->srv->started - 62;
	int64_t rel;
	if (e < 0)
		rel = 1;
	else if (e <= 2592000)
		rel = e + cur;
	else if (e <= started)
		rel = 1;
	else
		rel = e - started;
	return (int64_t)(uint32_t)(rel - cur);
}

/* mg whose reply stops at a too long opaque (index bad): memcached has looked the key
 * up (marking it fetched unless a flag made it lock the item: N T R l h), created the
 * empty item of N on a miss (not fetched, no token handed out: the W is never sent) and
 * applied T and N where they came before the O; then it answers the error. */
static void exec_mg_bad_opaque(struct conn_ctx *cx, const struct mc_ascii_req *req,
			       size_t bad, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const struct mc_meta *m = &req->meta;
	uint64_t locking = MC_MF('N') | MC_MF('T') | MC_MF('R') | MC_MF('l') | MC_MF('h');
	size_t at_t = meta_flag_at(m, 'T'), at_n = meta_flag_at(m, 'N');
	struct cache_meta cm = {
	    .touch = at_t < bad,
	    .ttl = m->ttl,
	    .no_update = (m->flags & (locking | MC_MF('u'))) != 0,
	};
	struct cache_ref ref;
	enum cache_status st = cache_mget(c, req->key, req->nkey, &cm, &ref);
	if (st == CACHE_OK) {
		cache_release(c, &ref);
	} else if (st == CACHE_NOT_FOUND && at_n != SIZE_MAX) {
		int64_t exp = 0; /* the last of N and T before the O */
		if (at_n < bad)
			exp = m->vivify_ttl;
		if (at_t < bad && (at_n >= bad || at_t > at_n))
			exp = m->ttl;
		cache_store_meta(c, CACHE_ADD, req->key, req->nkey, "", 0, 0, exp, 0, NULL, false);
	}
	add_str(out, "CLIENT_ERROR opaque token too long\r\n");
}

static void exec_mg(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const struct mc_meta *m = &req->meta;
	size_t bad = meta_bad_opaque_at(m);
	if (bad != SIZE_MAX) {
		exec_mg_bad_opaque(cx, req, bad, out);
		return;
	}
	struct cache_ref ref;
	/* memcached applies N, T and R in token order: R before T compares the TTL the
	 * item had (so T is applied after the lookup here), and a created item keeps the
	 * last of N and T. An N already past still creates the item (created with no
	 * expiry, then given it). */
	size_t at_t = meta_flag_at(m, 'T'), at_n = meta_flag_at(m, 'N');
	bool r_before_t = at_t != SIZE_MAX && meta_flag_at(m, 'R') < at_t;
	bool n_past = at_n != SIZE_MAX && exptime_past(m->vivify_ttl);
	struct cache_meta cm = {
	    .vivify = at_n != SIZE_MAX,
	    .vivify_ttl = n_past ? 0 : m->vivify_ttl,
	    .recache = (m->flags & MC_MF('R')) != 0,
	    .recache_ttl = m->recache_ttl,
	    .touch = at_t != SIZE_MAX && !r_before_t,
	    .ttl = m->ttl,
	    .no_update = (m->flags & MC_MF('u')) != 0,
	};
	/* "t ... T": memcached reports the TTL before T applies it; read it first (this
	 * order is rare, so the extra lookup is only paid then) */
	bool t_before_T = false;
	int64_t ttl_before = -1;
	if ((m->flags & MC_MF('t')) && (m->flags & MC_MF('T'))) {
		size_t p = 0;
		const char *tk;
		size_t ntk;
		char fl;
		while ((fl = mc_meta_next_flag(m, &p, &tk, &ntk)) != 0 && fl != 'T')
			if (fl == 't')
				t_before_T = true;
		struct cache_ref pre; /* a look, not an access */
		if (t_before_T && cache_peek(c, req->key, req->nkey, &pre) == CACHE_OK) {
			ttl_before = pre.exptime == 0 ? -1 : pre.exptime;
			cache_release(c, &pre);
		}
	}
	enum cache_status st = cache_mget(c, req->key, req->nkey, &cm, &ref);
	if (watching(cx->srv, WATCH_FETCHERS))
		log_get(cx, req->key, req->nkey, st == CACHE_OK, st == CACHE_OK ? ref.nbytes : 0);
	struct meta_vals v = {0};
	if (st == CACHE_NO_MEMORY || st == CACHE_TOO_LARGE) { /* vivify found no room */
		add_str(out, "SERVER_ERROR out of memory storing object\r\n");
		return;
	}
	if (st != CACHE_OK) {
		if (!req->noreply)
			meta_line(out, "EN", req, &v);
		return;
	}
	if (cm.created) {
		int64_t fin = at_t != SIZE_MAX && at_t > at_n ? m->ttl : m->vivify_ttl;
		if (fin != cm.vivify_ttl)
			cache_touch(c, req->key, req->nkey, fin);
	} else if (r_before_t) {
		cache_touch(c, req->key, req->nkey, m->ttl);
	}
	v.hit = true;
	v.flags = ref.flags;
	v.nbytes = ref.nbytes;
	v.cas = ref.cas;
	v.ttl = ref.exptime == 0 ? -1 : ref.exptime;
	v.hit_before = ref.hit_before;
	v.key_binary = ref.key_binary;
	v.created = cm.created;
	v.t_before_T = t_before_T;
	v.ttl_before = ttl_before;
	v.n_ttl = meta_t_of(cx, m->vivify_ttl);
	v.t_ttl = meta_t_of(cx, m->ttl);
	v.idle = ref.idle;
	v.token_sent = cm.token_sent;
	v.stale = cm.stale;
	v.won = cm.won;
	if (m->flags & MC_MF('v')) {
		evbuffer_add_printf(out, "VA %" PRIu32, ref.nbytes);
		meta_ret_flags(out, req, &v);
		evbuffer_add(out, "\r\n", 2);
		evbuffer_add(out, ref.value, ref.nbytes);
		evbuffer_add(out, "\r\n", 2);
	} else {
		meta_line(out, "HD", req, &v);
	}
	cache_release(c, &ref);
}

static void exec_ms(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	const struct mc_meta *m = &req->meta;
	enum cache_store_op op;
	switch (m->mode) {
	case 'E': op = CACHE_ADD; break;
	case 'A': op = CACHE_APPEND; break;
	case 'P': op = CACHE_PREPEND; break;
	case 'R': op = CACHE_REPLACE; break;
	default: op = CACHE_SET; break;
	}
	uint64_t cas_in = 0;
	if (m->flags & MC_MF('C')) {
		cas_in = m->cas_cmp;
		/* memcached: a CAS value makes set and replace a CAS store (a missing key is
		 * then NF, not NS) */
		if (op == CACHE_SET || op == CACHE_REPLACE)
			op = CACHE_CAS;
		if (cas_in == 0 && op == CACHE_CAS)
			cas_in = UINT64_MAX; /* C0 matches no item (ids are > 0) */
	}
	uint64_t cas_out = 0;
	int64_t ttl = (m->flags & MC_MF('T')) ? m->ttl : 0;
	/* I: invalidating CAS set (memcached: only with C; otherwise a plain set) */
	enum cache_status st =
	    op == CACHE_CAS && (m->flags & MC_MF('I'))
		? cache_cas_invalidating(cx->srv->cache, req->key, req->nkey, req->data,
					 req->nbytes, m->client_flags, ttl, cas_in, &cas_out)
		: store_logged(cx, op, req->key, req->nkey, req->data, req->nbytes,
			       m->client_flags, ttl, cas_in, &cas_out, m->key_b64);
	struct meta_vals v = {.hit = st == CACHE_STORED, .cas = cas_out};
	const char *code;
	switch (st) {
	case CACHE_STORED:
		if (req->noreply)
			return;
		code = "HD";
		break;
	case CACHE_NOT_STORED: code = "NS"; break;
	case CACHE_EXISTS: code = "EX"; break;
	case CACHE_NOT_FOUND: code = "NF"; break;
	default:
		add_str(out, store_reply(st));
		return;
	}
	/* only c (and k, O) are meaningful after a store */
	v.flags = m->client_flags;
	v.nbytes = req->nbytes;
	v.ttl = -1;
	evbuffer_add(out, code, 2);
	size_t pos = 0;
	const char *tok;
	size_t ntok;
	char f;
	while ((f = mc_meta_next_flag(m, &pos, &tok, &ntok)) != 0) {
		if (f == 'k')
			meta_key_flag(out, req);
		else if (f == 'O') {
			evbuffer_add(out, " O", 2);
			evbuffer_add(out, tok, ntok);
		} else if (f == 'c') /* memcached: c0 when nothing was stored */
			evbuffer_add_printf(out, " c%" PRIu64, v.hit ? v.cas : 0);
	}
	evbuffer_add(out, "\r\n", 2);
}

static void exec_md(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	const struct mc_meta *m = &req->meta;
	uint64_t cas_in = (m->flags & MC_MF('C')) ? (m->cas_cmp ? m->cas_cmp : UINT64_MAX) : 0;
	enum cache_status st =
	    (m->flags & MC_MF('I'))
		? cache_invalidate(cx->srv->cache, req->key, req->nkey, cas_in,
				   (m->flags & MC_MF('T')) != 0, m->ttl)
		: cache_delete(cx->srv->cache, req->key, req->nkey, cas_in);
	struct meta_vals v = {0};
	switch (st) {
	case CACHE_OK:
		if (!req->noreply)
			meta_line(out, "HD", req, &v);
		break;
	case CACHE_EXISTS:
		meta_line(out, "EX", req, &v);
		break;
	case CACHE_NOT_FOUND:
		meta_line(out, "NF", req, &v);
		break;
	default:
		add_str(out, store_reply(st));
		break;
	}
}

/*
 * ma as memcached 1.6.18 answers it: the return flags are c, t, O and k, in request order,
 * where T (and N, for an item this request created) set the TTL at their place in the
 * list, so t reports the TTL as of its position; the item keeps the last one set. q
 * hides the reply of an increment of an existing item only (v included); a created
 * item's reply, NF, NS and EX are always sent.
 */
static void exec_ma(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const struct mc_meta *m = &req->meta;
	bool decr = m->mode == 'D';
	uint64_t cas_in = (m->flags & MC_MF('C')) ? m->cas_cmp : 0; /* C0: no check, as memcached */
	uint64_t result = 0, cas = 0;
	bool created = false;
	/* a too long opaque is found while the reply is built, after the increment: the
	 * flags before it take effect, the reply is the error */
	size_t bad = meta_bad_opaque_at(m);
	/* the TTL a created item ends with: the last of N and T in the flags (before a
	 * too long opaque) */
	int64_t create_exp = 0;
	{
		size_t p = 0, i = 0;
		const char *tk;
		size_t ntk;
		char fl;
		while ((fl = mc_meta_next_flag(m, &p, &tk, &ntk)) != 0 && i++ < bad)
			if (fl == 'N' || fl == 'T')
				create_exp = fl == 'N' ? m->vivify_ttl : m->ttl;
	}
	enum cache_status st;
	for (int tries = 0;; tries++) {
		st = cache_incr(c, req->key, req->nkey, decr, m->delta, cas_in, &result, &cas);
		if (st != CACHE_NOT_FOUND || !(m->flags & MC_MF('N')) || tries > 8)
			break;
		/* auto-create with the initial value J (as memcached: no delta applied) */
		char num[24];
		int n = snprintf(num, sizeof num, "%" PRIu64, m->initial);
		st = cache_store(c, CACHE_ADD, req->key, req->nkey, num, (size_t)n, 0, create_exp,
				 0, &cas);
		if (st == CACHE_STORED) {
			result = m->initial;
			st = CACHE_OK;
			created = true;
			break;
		}
		if (st != CACHE_NOT_STORED) {
			if (st != CACHE_TOO_LARGE && st != CACHE_NO_MEMORY)
				st = CACHE_NOT_STORED;
			break;
		}
	}
	if (st == CACHE_EXISTS && cas_in) {
		/* memcached finds an empty value not numeric before it compares the CAS */
		struct cache_ref ref;
		if (cache_peek(c, req->key, req->nkey, &ref) == CACHE_OK) {
			if (ref.nbytes == 0)
				st = CACHE_NON_NUMERIC;
			cache_release(c, &ref);
		}
	}
	if (st != CACHE_OK && bad != SIZE_MAX && st != CACHE_NON_NUMERIC &&
	    st != CACHE_NO_MEMORY) {
		add_str(out, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (st != CACHE_OK) {
		struct meta_vals v = {.ttl = -1};
		switch (st) {
		case CACHE_NOT_FOUND: meta_line(out, "NF", req, &v); break;
		case CACHE_NOT_STORED: meta_line(out, "NS", req, &v); break;
		case CACHE_EXISTS: meta_line(out, "EX", req, &v); break;
		case CACHE_NON_NUMERIC:
			add_str(out, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
			break;
		case CACHE_NO_MEMORY: add_str(out, "SERVER_ERROR out of memory\r\n"); break;
		default: add_str(out, store_reply(st)); break;
		}
		return;
	}
	/* the TTL before this request's T/N: an existing item's (read back: the increment
	 * does not change it), none for a created one */
	int64_t ttl = -1;
	if (!created && (m->flags & (MC_MF('t') | MC_MF('T')))) {
		struct cache_ref ref;
		if (cache_peek(c, req->key, req->nkey, &ref) == CACHE_OK) {
			ttl = ref.exptime == 0 ? -1 : ref.exptime;
			cache_release(c, &ref);
		}
	}
	bool set_exp = false;
	int64_t exp = 0; /* memcached's exptime convention, for cache_touch */
	struct evbuffer *flags = evbuffer_new();
	if (!flags) {
		add_str(out, "SERVER_ERROR out of memory\r\n");
		return;
	}
	size_t pos = 0, i = 0;
	const char *tok;
	size_t ntok;
	char f;
	while ((f = mc_meta_next_flag(m, &pos, &tok, &ntok)) != 0 && i++ < bad) {
		switch (f) {
		case 'c': evbuffer_add_printf(flags, " c%" PRIu64, cas); break;
		case 't': evbuffer_add_printf(flags, " t%lld", (long long)ttl); break;
		case 'T':
		case 'N':
			if (f == 'N' && !created)
				break;
			exp = f == 'T' ? m->ttl : m->vivify_ttl;
			set_exp = true;
			ttl = meta_t_of(cx, exp);
			break;
		case 'O':
			evbuffer_add(flags, " O", 2);
			evbuffer_add(flags, tok, ntok);
			break;
		case 'k': meta_key_flag(flags, req); break;
		default: break;
		}
	}
	if (set_exp && !created) /* a created item was stored with its final TTL */
		cache_touch(c, req->key, req->nkey, exp);
	if (bad != SIZE_MAX) {
		evbuffer_free(flags);
		add_str(out, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (req->noreply && !created) {
		evbuffer_free(flags);
		return;
	}
	if (m->flags & MC_MF('v')) {
		char num[24];
		int n = snprintf(num, sizeof num, "%" PRIu64, result);
		evbuffer_add_printf(out, "VA %d", n);
		evbuffer_add_buffer(out, flags);
		evbuffer_add(out, "\r\n", 2);
		evbuffer_add(out, num, (size_t)n);
		evbuffer_add(out, "\r\n", 2);
	} else {
		evbuffer_add(out, "HD", 2);
		evbuffer_add_buffer(out, flags);
		evbuffer_add(out, "\r\n", 2);
	}
	evbuffer_free(flags);
}

static void exec_me(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache_ref ref;
	/* a look that leaves the item unfetched, as memcached's me */
	if (cache_peek(cx->srv->cache, req->key, req->nkey, &ref) != CACHE_OK) {
		add_str(out, "EN\r\n");
		return;
	}
	add_str(out, "ME ");
	if (ref.key_binary) { /* as stored, whether or not this request sent it base64 */
		char enc[4 * ((MC_KEY_MAX + 2) / 3) + 4];
		evbuffer_add(out, enc, mc_b64_encode(req->key, req->nkey, enc));
	} else {
		evbuffer_add(out, req->key, req->nkey);
	}
	evbuffer_add_printf(out, " exp=%lld cas=%" PRIu64 " size=%" PRIu32 "\r\n",
			    ref.exptime == 0 ? -1LL : (long long)ref.exptime, ref.cas, ref.nbytes);
	cache_release(cx->srv->cache, &ref);
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
	case MC_OP_GATS:
		exec_get(cx, req, out);
		return;
	case MC_OP_SET:
	case MC_OP_ADD:
	case MC_OP_REPLACE:
	case MC_OP_APPEND:
	case MC_OP_PREPEND:
	case MC_OP_CAS: {
		uint64_t cas_in = req->op == MC_OP_CAS ? (req->cas ? req->cas : UINT64_MAX) : 0;
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			prefix_stats_record(req->key, req->nkey, PREFIX_SET, false);
		r = store_reply(store_logged(cx, store_op(req->op), req->key, req->nkey, req->data,
					     req->nbytes, req->flags, req->exptime, cas_in, NULL,
					     false));
		break;
	}
	case MC_OP_DELETE: {
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			prefix_stats_record(req->key, req->nkey, PREFIX_DELETE, false);
		enum cache_status st = cache_delete(c, req->key, req->nkey, 0);
		r = st == CACHE_OK ? "DELETED\r\n" : st == CACHE_NOT_FOUND ? "NOT_FOUND\r\n"
									  : store_reply(st);
		break;
	}
	case MC_OP_INCR:
	case MC_OP_DECR: {
		uint64_t v;
		enum cache_status st =
			cache_incr(c, req->key, req->nkey, req->op == MC_OP_DECR, req->delta, 0, &v, NULL);
		if (st == CACHE_OK) {
			if (!req->noreply)
				evbuffer_add_printf(out, "%" PRIu64 "\r\n", v);
			return;
		}
		r = st == CACHE_NOT_FOUND ? "NOT_FOUND\r\n"
		    : st == CACHE_NON_NUMERIC
			    ? "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
		    : st == CACHE_NO_MEMORY ? "SERVER_ERROR out of memory\r\n"
					    : store_reply(st);
		break;
	}
	case MC_OP_TOUCH: {
		enum cache_status st = cache_touch(c, req->key, req->nkey, req->exptime);
		r = st == CACHE_OK ? "TOUCHED\r\n" : st == CACHE_NOT_FOUND ? "NOT_FOUND\r\n"
									  : store_reply(st);
		break;
	}
	case MC_OP_FLUSH_ALL:
		cache_flush_all(c, req->delay);
		r = "OK\r\n";
		break;
	case MC_OP_STATS: {
		struct stat_out so = {.out = out};
		do_stats(cx, req->args, req->args_len, &so);
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
	case MC_OP_VERSION:
		add_str(out, "VERSION " TSYNC_CACHED_VERSION "\r\n");
		return;
	case MC_OP_VERBOSITY:
		atomic_store(&cx->srv->verbosity, (unsigned)req->delta);
		r = "OK\r\n";
		break;
	case MC_OP_QUIT:
		cx->close_after = true;
		return;
	case MC_OP_MN:
		add_str(out, "MN\r\n");
		return;
	case MC_OP_MG:
		atomic_fetch_add_explicit(&cx->ws->cmd_meta, 1, memory_order_relaxed);
		exec_mg(cx, req, out);
		return;
	case MC_OP_MS:
		atomic_fetch_add_explicit(&cx->ws->cmd_meta, 1, memory_order_relaxed);
		exec_ms(cx, req, out);
		return;
	case MC_OP_MD:
		atomic_fetch_add_explicit(&cx->ws->cmd_meta, 1, memory_order_relaxed);
		exec_md(cx, req, out);
		return;
	case MC_OP_MA:
		atomic_fetch_add_explicit(&cx->ws->cmd_meta, 1, memory_order_relaxed);
		exec_ma(cx, req, out);
		return;
	case MC_OP_ME:
		atomic_fetch_add_explicit(&cx->ws->cmd_meta, 1, memory_order_relaxed);
		exec_me(cx, req, out);
		return;
	default:
		r = "ERROR\r\n";
		break;
	}
	if (r && (!req->noreply || sent_despite_noreply(r)))
		add_str(out, r);
}

void exec_ascii_error(struct conn_ctx *cx, const struct mc_parse_res *res, struct evbuffer *out)
{
	if (res->drop_key)
		cache_delete(cx->srv->cache, res->drop_key, res->ndrop_key, 0);
	if (!res->noreply || res->close)
		add_str(out, res->err);
	if (res->close)
		cx->close_after = true;
}

/* ---- binary ---------------------------------------------------------------------------- */

static void bin_error(struct evbuffer *out, uint8_t opcode, uint32_t opaque, uint16_t st)
{
	const char *t = mc_bin_status_text(st);
	size_t n = strlen(t);
	bin_header(out, opcode, 0, 0, st, (uint32_t)n, opaque, 0);
	evbuffer_add(out, t, n);
}

void exec_bin_error(struct conn_ctx *cx, uint8_t opcode, uint32_t opaque,
		    const struct mc_parse_res *res, struct evbuffer *out)
{
	if (res->drop_key)
		cache_delete(cx->srv->cache, res->drop_key, res->ndrop_key, 0);
	if (res->close)
		cx->close_after = true;
	if (res->close && res->bin_status == 0)
		return; /* bad magic: close without a reply, as memcached */
	bin_error(out, opcode, opaque, res->bin_status);
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
		enum cache_status st = req->op == MC_OP_GET
					       ? cache_get(c, req->key, req->keylen, &ref)
					       : cache_gat(c, req->key, req->keylen, req->exptime, &ref);
		if (req->op != MC_OP_TOUCH &&
		    atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			prefix_stats_record((const char *)req->key, req->keylen, PREFIX_GET,
					    st == CACHE_OK);
		if (req->op != MC_OP_TOUCH && watching(cx->srv, WATCH_FETCHERS))
			log_get(cx, (const char *)req->key, req->keylen, st == CACHE_OK,
				st == CACHE_OK ? ref.nbytes : 0);
		if (st != CACHE_OK) {
			if (req->quiet)
				return;
			if (req->with_key) { /* GETK miss: the key in the body, as memcached */
				bin_header(out, opc, req->keylen, 0, MC_BIN_KEY_ENOENT, req->keylen,
					   opq, 0);
				evbuffer_add(out, req->key, req->keylen);
			} else {
				bin_error(out, opc, opq, bin_status_of(st));
			}
			return;
		}
		/* TOUCH answers like GAT without the value: the flags as extras (memcached) */
		uint16_t kl = req->with_key ? req->keylen : 0;
		uint32_t vl = req->op == MC_OP_TOUCH ? 0 : ref.nbytes;
		bin_header(out, opc, kl, 4, MC_BIN_OK, 4u + kl + vl, opq, ref.cas);
		uint8_t fl[4] = {(uint8_t)(ref.flags >> 24), (uint8_t)(ref.flags >> 16),
				 (uint8_t)(ref.flags >> 8), (uint8_t)ref.flags};
		evbuffer_add(out, fl, 4);
		if (kl)
			evbuffer_add(out, req->key, kl);
		evbuffer_add(out, ref.value, vl);
		cache_release(c, &ref);
		return;
	}
	case MC_OP_SET:
	case MC_OP_ADD:
	case MC_OP_REPLACE:
	case MC_OP_APPEND:
	case MC_OP_PREPEND: {
		enum cache_store_op op = store_op(req->op);
		/* memcached: a CAS value makes set, add and replace a CAS store (a missing
		 * key is then ENOENT, even for add) */
		if (req->cas != 0 && (op == CACHE_SET || op == CACHE_ADD || op == CACHE_REPLACE))
			op = CACHE_CAS;
		uint64_t cas_out = 0;
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			prefix_stats_record((const char *)req->key, req->keylen, PREFIX_SET, false);
		enum cache_status st = store_logged(cx, op, req->key, req->keylen, req->value,
						    req->vlen, req->flags, req->exptime, req->cas,
						    &cas_out, false);
		if (st == CACHE_STORED) {
			if (!req->quiet)
				bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, cas_out);
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
		bin_error(out, opc, opq, bs);
		return;
	}
	case MC_OP_DELETE: {
		if (atomic_load_explicit(&cx->srv->detail_enabled, memory_order_relaxed))
			prefix_stats_record((const char *)req->key, req->keylen, PREFIX_DELETE,
					    false);
		enum cache_status st = cache_delete(c, req->key, req->keylen, req->cas);
		if (st == CACHE_OK) {
			if (!req->quiet)
				bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
			return;
		}
		bin_error(out, opc, opq, bin_status_of(st));
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
			bin_error(out, opc, opq, bin_status_of(st));
			return;
		}
		if (req->quiet)
			return;
		bin_header(out, opc, 0, 0, MC_BIN_OK, 8, opq, cas);
		uint8_t b[8];
		for (int i = 0; i < 8; i++)
			b[i] = (uint8_t)(v >> (56 - 8 * i));
		evbuffer_add(out, b, 8);
		return;
	}
	case MC_OP_QUIT:
		if (!req->quiet)
			bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
		cx->close_after = true;
		return;
	case MC_OP_FLUSH_ALL:
		cache_flush_all(c, req->exptime);
		if (!req->quiet)
			bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
		return;
	case MC_OP_NOOP:
		bin_header(out, opc, 0, 0, MC_BIN_OK, 0, opq, 0);
		return;
	case MC_OP_VERSION: {
		const char *v = TSYNC_CACHED_VERSION;
		bin_header(out, opc, 0, 0, MC_BIN_OK, (uint32_t)strlen(v), opq, 0);
		add_str(out, v);
		return;
	}
	case MC_OP_STATS: {
		struct stat_out so = {.out = out, .bin = true, .opaque = opq};
		do_stats(cx, (const char *)req->key, req->keylen, &so);
		return;
	}
	default:
		bin_error(out, opc, opq, MC_BIN_UNKNOWN_COMMAND);
		return;
	}
}
