/*
 * apps/cached/server/exec_stats.c - the administrative commands: "stats" in both
 * protocols (general, settings, items, slabs, sizes, conns, cachedump, detail, reset),
 * "slabs reassign|automove" and "watch", with memcached 1.6.18's names and replies.
 */
#include "exec_stats.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "connreg.h"
#include "stats_prefix.h"
#include "watch.h"

static pthread_mutex_t reset_lock = PTHREAD_MUTEX_INITIALIZER;

static void stats_general(struct conn_ctx *cx, struct reply_stats *so)
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
	reply_stat(so, "pid", "%ld", (long)getpid());
	reply_stat(so, "uptime", "%" PRIu32, cache_now(s->cache));
	reply_stat(so, "time", "%lld", (long long)now);
	reply_stat(so, "version", "%s", TSYNC_CACHED_VERSION);
	reply_stat(so, "libevent", "%s", event_get_version());
	reply_stat(so, "pointer_size", "%d", (int)(8 * sizeof(void *)));
	reply_stat(so, "rusage_user", "%ld.%06ld", (long)ru.ru_utime.tv_sec,
		   (long)ru.ru_utime.tv_usec);
	reply_stat(so, "rusage_system", "%ld.%06ld", (long)ru.ru_stime.tv_sec,
		   (long)ru.ru_stime.tv_usec);
	reply_stat(so, "max_connections", "%u", s->set.maxconns);
	reply_stat(so, "curr_connections", "%u", curr);
	reply_stat(so, "total_connections", "%" PRIu64, atomic_load(&s->total_conns));
	reply_stat(so, "rejected_connections", "%" PRIu64, atomic_load(&s->rejected_conns));
	reply_stat(so, "connection_structures", "%u", curr + 1); /* + the listener */
	reply_stat(so, "response_obj_oom", "0");
	reply_stat(so, "response_obj_count", "0");
	reply_stat(so, "response_obj_bytes", "0");
	reply_stat(so, "read_buf_count", "0");
	reply_stat(so, "read_buf_bytes", "0");
	reply_stat(so, "read_buf_bytes_free", "0");
	reply_stat(so, "read_buf_oom", "0");
	reply_stat(so, "reserved_fds", "%u", s->reserved_fds);
	reply_stat(so, "cmd_get", "%" PRIu64, D(cmd_get));
	reply_stat(so, "cmd_set", "%" PRIu64, D(cmd_set));
	reply_stat(so, "cmd_flush", "%" PRIu64, D(cmd_flush));
	reply_stat(so, "cmd_touch", "%" PRIu64, D(cmd_touch));
	reply_stat(so, "cmd_meta", "%" PRIu64, cmd_meta);
	reply_stat(so, "get_hits", "%" PRIu64, D(get_hits));
	reply_stat(so, "get_misses", "%" PRIu64, D(get_misses));
	reply_stat(so, "get_expired", "%" PRIu64, D(get_expired));
	reply_stat(so, "get_flushed", "%" PRIu64, D(get_flushed));
	reply_stat(so, "delete_misses", "%" PRIu64, D(delete_misses));
	reply_stat(so, "delete_hits", "%" PRIu64, D(delete_hits));
	reply_stat(so, "incr_misses", "%" PRIu64, D(incr_misses));
	reply_stat(so, "incr_hits", "%" PRIu64, D(incr_hits));
	reply_stat(so, "decr_misses", "%" PRIu64, D(decr_misses));
	reply_stat(so, "decr_hits", "%" PRIu64, D(decr_hits));
	reply_stat(so, "cas_misses", "%" PRIu64, D(cas_misses));
	reply_stat(so, "cas_hits", "%" PRIu64, D(cas_hits));
	reply_stat(so, "cas_badval", "%" PRIu64, D(cas_badval));
	reply_stat(so, "touch_hits", "%" PRIu64, D(touch_hits));
	reply_stat(so, "touch_misses", "%" PRIu64, D(touch_misses));
	reply_stat(so, "store_too_large", "%" PRIu64, D(store_too_large));
	reply_stat(so, "store_no_memory", "%" PRIu64, D(store_no_memory));
	reply_stat(so, "auth_cmds", "0");
	reply_stat(so, "auth_errors", "0");
	reply_stat(so, "bytes_read", "%" PRIu64, br);
	reply_stat(so, "bytes_written", "%" PRIu64, bw);
	reply_stat(so, "limit_maxbytes", "%" PRIu64, st.limit_maxbytes);
	reply_stat(so, "accepting_conns", "%d", atomic_load(&s->accepting) ? 1 : 0);
	reply_stat(so, "listen_disabled_num", "%" PRIu64, atomic_load(&s->listen_disabled_num));
	reply_stat(so, "time_in_listen_disabled_us", "%" PRIu64,
		   atomic_load(&s->time_in_listen_disabled_us));
	reply_stat(so, "threads", "%u", s->set.threads);
	reply_stat(so, "conn_yields", "%" PRIu64, yields);
	reply_stat(so, "hash_power_level", "%" PRIu64, st.hash_power_level);
	reply_stat(so, "hash_bytes", "%" PRIu64, st.hash_bytes);
	reply_stat(so, "hash_is_expanding", "%" PRIu64, st.hash_is_expanding);
	static const char *const zero1[] = {
		"slab_reassign_rescues",         "slab_reassign_chunk_rescues",
		"slab_reassign_evictions_nomem", "slab_reassign_inline_reclaim",
		"slab_reassign_busy_items",      "slab_reassign_busy_deletes",
		"slab_reassign_running",         "slabs_moved",
		"lru_crawler_running",           "lru_crawler_starts",
		"lru_maintainer_juggles"};
	for (size_t i = 0; i < sizeof zero1 / sizeof *zero1; i++)
		reply_stat(so, zero1[i], "0");
	reply_stat(so, "malloc_fails", "%" PRIu64, mfails);
	reply_stat(so, "log_worker_dropped", "0");
	reply_stat(so, "log_worker_written", "%" PRIu64, atomic_load(&s->log_watcher_sent));
	reply_stat(so, "log_watcher_skipped", "%" PRIu64, atomic_load(&s->log_watcher_skipped));
	reply_stat(so, "log_watcher_sent", "%" PRIu64, atomic_load(&s->log_watcher_sent));
	reply_stat(so, "log_watchers", "%" PRIu64, atomic_load(&s->log_watchers));
	reply_stat(so, "unexpected_napi_ids", "0");
	reply_stat(so, "round_robin_fallback", "0");
	reply_stat(so, "bytes", "%" PRIu64, st.bytes);
	reply_stat(so, "curr_items", "%" PRIu64, st.curr_items);
	reply_stat(so, "total_items", "%" PRIu64, D(total_items));
	reply_stat(so, "slab_global_page_pool", "0");
	reply_stat(so, "expired_unfetched", "%" PRIu64, D(expired_unfetched));
	reply_stat(so, "evicted_unfetched", "0");
	reply_stat(so, "evicted_active", "0");
	reply_stat(so, "evictions", "%" PRIu64, D(evictions));
	reply_stat(so, "reclaimed", "%" PRIu64, D(reclaimed));
	static const char *const zero3[] = {"crawler_reclaimed", "crawler_items_checked",
					    "lrutail_reflocked", "moves_to_cold",
					    "moves_to_warm",     "moves_within_lru",
					    "direct_reclaims",   "lru_bumps_dropped"};
	for (size_t i = 0; i < sizeof zero3 / sizeof *zero3; i++)
		reply_stat(so, zero3[i], "0");
	/* tsync's own: the variant, the ParSec allocator and quiescence counters */
	reply_stat(so, "tsync_variant", "%s", cache_variant_name(s->set.variant));
	reply_stat(so, "tsync_hash_expansions", "%" PRIu64, st.hash_expansions);
	reply_stat(so, "tsync_sweeper_runs", "%" PRIu64, st.sweeper_runs);
	reply_stat(so, "tsync_total_malloced", "%" PRIu64, st.total_malloced);
	reply_stat(so, "tsync_slabs", "%" PRIu64, st.slabs);
	reply_stat(so, "tsync_peak_slabs", "%" PRIu64, st.peak_slabs);
	reply_stat(so, "tsync_mem_in_use", "%" PRIu64, st.mem_in_use);
	reply_stat(so, "tsync_mem_pending", "%" PRIu64, st.mem_pending);
	reply_stat(so, "tsync_mem_charged", "%" PRIu64, st.mem_charged);
	reply_stat(so, "tsync_garbage_bytes", "%" PRIu64, st.mem_garbage_bytes);
	reply_stat(so, "tsync_mem_cached", "%" PRIu64, st.mem_cached);
	reply_stat(so, "tsync_mem_frees", "%" PRIu64, st.mem_frees);
	reply_stat(so, "tsync_mem_reclaimed", "%" PRIu64, st.mem_reclaimed);
	reply_stat(so, "tsync_mem_max_wait_ns", "%" PRIu64, st.mem_max_wait_ns);
	reply_stat(so, "tsync_quiesce_calls", "%" PRIu64, st.quiesce_calls);
	reply_stat(so, "tsync_quiesce_true", "%" PRIu64, st.quiesce_true);
	/* why stores answered "out of memory" (cache.h, cache_store), and their waits */
	reply_stat(so, "tsync_nomem_full", "%" PRIu64, st.nomem_full);
	reply_stat(so, "tsync_nomem_garbage", "%" PRIu64, st.nomem_garbage);
	reply_stat(so, "tsync_nomem_busy", "%" PRIu64, st.nomem_busy);
	reply_stat(so, "tsync_nomem_system", "%" PRIu64, st.nomem_system);
	reply_stat(so, "tsync_evict_waits", "%" PRIu64, st.evict_waits);
	reply_stat(so, "tsync_mem_waits", "%" PRIu64, st.mem_waits);
	/* connections whose reading stopped with OUT_HIGH of replies unsent (server.c) */
	reply_stat(so, "tsync_read_pauses", "%" PRIu64, pauses);
#undef D
}

static void stats_settings(struct conn_ctx *cx, struct reply_stats *so)
{
	/* memcached 1.6.18's names and order, for the settings tsync-cached has or whose
	 * fixed value it shares (no unix socket, no SASL, flush and dump enabled); the
	 * settings of memcached-only machinery (extstore, TLS, LRU crawler and
	 * maintainer, segmented LRU, logging) are left out */
	const struct settings *t = &cx->srv->set;
	struct cache_config cfg;
	cache_config_get(cx->srv->cache, &cfg);
	reply_stat(so, "maxbytes", "%" PRIu64, cfg.mem_limit);
	reply_stat(so, "maxconns", "%u", t->maxconns);
	reply_stat(so, "tcpport", "%u", t->port);
	reply_stat(so, "udpport", "0");
	reply_stat(so, "inter", "%s", t->addr);
	reply_stat(so, "verbosity", "%u", atomic_load(&cx->srv->verbosity));
	reply_stat(so, "oldest", "0");
	reply_stat(so, "evictions", "%s", cfg.no_evict ? "off" : "on");
	reply_stat(so, "domain_socket", "NULL");
	reply_stat(so, "umask", "700");
	reply_stat(so, "shutdown_command", "no");
	reply_stat(so, "growth_factor", "%.2f", cfg.growth_factor);
	reply_stat(so, "chunk_size", "%" PRIu32, cfg.chunk_min);
	reply_stat(so, "num_threads", "%u", t->threads);
	reply_stat(so, "num_threads_per_udp", "%u", t->threads);
	reply_stat(so, "stat_key_prefix", ":");
	reply_stat(so, "detail_enabled", "%s",
		   atomic_load(&cx->srv->detail_enabled) ? "yes" : "no");
	reply_stat(so, "reqs_per_event", "%u", t->reqs_per_event);
	reply_stat(so, "cas_enabled", "yes");
	reply_stat(so, "tcp_backlog", "%u", t->backlog);
	reply_stat(so, "binding_protocol", "auto-negotiate");
	reply_stat(so, "auth_enabled_sasl", "no");
	reply_stat(so, "auth_enabled_ascii", "no");
	reply_stat(so, "item_size_max", "%" PRIu32, cfg.item_size_max);
	reply_stat(so, "maxconns_fast", "yes");
	reply_stat(so, "hashpower_init", "%u", cfg.hash_power);
	reply_stat(so, "slab_reassign", "yes");
	reply_stat(so, "slab_automove", "%u", atomic_load(&cx->srv->slab_automove));
	reply_stat(so, "flush_enabled", "yes");
	reply_stat(so, "dump_enabled", "yes");
	reply_stat(so, "hash_algorithm", "xxh3");
	reply_stat(so, "idle_timeout", "0");
	reply_stat(so, "tsync_variant", "%s", cache_variant_name(cfg.variant));
}

static void stats_classes(struct conn_ctx *cx, struct reply_stats *so, bool items)
{
	struct cache *c = cx->srv->cache;
	unsigned n = cache_nclasses(c), active = 0;
	uint64_t malloced = 0;
	for (unsigned i = 0; i < n; i++) {
		struct cache_class_stats cs;
		if (cache_class_stats(c, i, &cs) != 0 ||
		    (cs.used_chunks == 0 && cs.total_slabs == 0))
			continue;
		active++;
		malloced += cs.total_slabs * cs.slab_bytes;
		/* "stats items": items:<id>:<name>; "stats slabs": <id>:<name>, in memcached's
		 * order (its class ids start at 1) */
		const struct {
			const char *name;
			uint64_t v;
		} item_rows[] = {{"number", cs.used_chunks},
				 {"mem_requested", cs.mem_requested},
				 {"evicted", cs.evicted},
				 {"reclaimed", cs.reclaimed},
				 {"chunk_size", cs.chunk_size}},
		  slab_rows[] = {
			  {"chunk_size", cs.chunk_size},   {"charged_size", cs.charged},
			  {"total_pages", cs.total_slabs}, {"page_size", cs.slab_bytes},
			  {"used_chunks", cs.used_chunks}, {"mem_requested", cs.mem_requested}};
		size_t nrows = items ? sizeof item_rows / sizeof item_rows[0]
				     : sizeof slab_rows / sizeof slab_rows[0];
		for (size_t r = 0; r < nrows; r++) {
			char name[64];
			snprintf(name, sizeof name, "%s%u:%s", items ? "items:" : "", i + 1,
				 items ? item_rows[r].name : slab_rows[r].name);
			reply_stat(so, name, "%" PRIu64, items ? item_rows[r].v : slab_rows[r].v);
		}
	}
	if (!items) {
		reply_stat(so, "active_slabs", "%u", active);
		reply_stat(so, "total_malloced", "%" PRIu64, malloced);
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
	stats_prefix_clear();
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
	int n = snprintf(line, sizeof line, "ITEM %.*s [%" PRIu32 " b; %lld s]\r\n", (int)nkey, key,
			 nbytes, ttl < 0 ? 0LL : (long long)(d->now + ttl));
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
	reply_stat(arg, key, "%s", val);
}

/* "stats detail on|off|dump" (ASCII) - memcached's replies */
static void stats_detail_ascii(struct conn_ctx *cx, const char *sub, size_t n, struct evbuffer *out)
{
	if (n == 2 && memcmp(sub, "on", 2) == 0) {
		atomic_store(&cx->srv->detail_enabled, true);
		reply_str(out, "OK\r\n");
	} else if (n == 3 && memcmp(sub, "off", 3) == 0) {
		atomic_store(&cx->srv->detail_enabled, false);
		reply_str(out, "OK\r\n");
	} else if (n == 4 && memcmp(sub, "dump", 4) == 0) {
		size_t len;
		char *d = stats_prefix_dump(&len);
		if (!d) {
			reply_str(out, "SERVER_ERROR out of memory writing stats\r\n");
			return;
		}
		evbuffer_add(out, d, len);
		free(d);
	} else {
		reply_str(out, "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
	}
}

/*
 * One stats request: arg[0..n) is what follows "stats" (ASCII: the rest of the line;
 * binary: the key). Replies as memcached 1.6.18 does, including its errors: ASCII answers
 * an unknown group "ERROR", binary KEY_ENOENT.
 */
void exec_stats(struct conn_ctx *cx, const char *arg, size_t n, struct reply_stats *so)
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
				char *d = stats_prefix_dump(&len);
				if (!d) {
					reply_bin_error(out, MC_BIN_STAT, so->opaque,
							MC_BIN_ENOMEM);
					return;
				}
				reply_bin_header(out, MC_BIN_STAT, 8, 0, MC_BIN_OK,
						 (uint32_t)(8 + len), so->opaque, 0);
				evbuffer_add(out, "detailed", 8);
				evbuffer_add(out, d, len);
				free(d);
			} else if (sn >= 3 && memcmp(sub, " on", 3) == 0) {
				atomic_store(&cx->srv->detail_enabled, true);
			} else if (sn >= 4 && memcmp(sub, " off", 4) == 0) {
				atomic_store(&cx->srv->detail_enabled, false);
			} else {
				reply_bin_error(out, MC_BIN_STAT, so->opaque, MC_BIN_KEY_ENOENT);
				return;
			}
		} else if (n == 5 && memcmp(arg, "items", 5) == 0) {
			stats_classes(cx, so, true);
		} else if (n == 5 && memcmp(arg, "slabs", 5) == 0) {
			stats_classes(cx, so, false);
		} else if (n == 5 && memcmp(arg, "sizes", 5) == 0) {
			reply_stat(so, "sizes_status", "disabled");
		} else {
			reply_bin_error(out, MC_BIN_STAT, so->opaque, MC_BIN_KEY_ENOENT);
			return;
		}
#undef PFX
		reply_stat_end(so);
		return;
	}
	if (nt == 0) {
		stats_general(cx, so);
	} else if (TOK_IS(0, "reset")) {
		stats_reset(cx->srv);
		reply_str(out, "RESET\r\n");
		return;
	} else if (TOK_IS(0, "detail")) {
		stats_detail_ascii(cx, tk[1], nt > 1 ? tn[1] : 0, out);
		return;
	} else if (TOK_IS(0, "settings")) {
		stats_settings(cx, so);
	} else if (TOK_IS(0, "cachedump")) {
		uint32_t id, limit;
		if (nt < 3) {
			reply_str(out, "CLIENT_ERROR bad command line\r\n");
			return;
		}
		if (!tok_u32(tk[1], tn[1], &id) || !tok_u32(tk[2], tn[2], &limit)) {
			reply_str(out, "CLIENT_ERROR bad command line format\r\n");
			return;
		}
		if (id >= 64) { /* memcached's MAX_NUMBER_OF_SLAB_CLASSES */
			reply_str(out, "CLIENT_ERROR Illegal slab id\r\n");
			return;
		}
		struct dump_out d = {.out = out, .now = time(NULL)};
		if (id > 0) /* memcached's class ids start at 1 */
			cache_dump_class(cx->srv->cache, id - 1, limit, dump_item, &d);
		reply_str(out, "END\r\n");
		return;
	} else if (TOK_IS(0, "conns")) {
		connreg_each(cx->fd, conn_stat, so);
	} else if (TOK_IS(0, "items") && nt == 1) {
		stats_classes(cx, so, true);
	} else if (TOK_IS(0, "slabs") && nt == 1) {
		stats_classes(cx, so, false);
	} else if (TOK_IS(0, "sizes") && nt == 1) {
		reply_stat(so, "sizes_status", "disabled");
	} else {
		reply_str(out, "ERROR\r\n");
		return;
	}
#undef TOK_IS
	reply_stat_end(so);
}

/* "watch [rawcmds|evictions|fetchers|mutations|sysevents|connevents|proxyreqs|
 * proxyevents|proxyuser]..." (no kind: fetchers): answers OK and the connection becomes a
 * log watcher (server.c, watch.c); an unknown kind: ERROR. */
void exec_watch(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	static const struct {
		const char *name;
		unsigned flag;
	} kinds[] = {{"rawcmds", WATCH_RAWCMDS},     {"evictions", WATCH_EVICTIONS},
		     {"fetchers", WATCH_FETCHERS},   {"mutations", WATCH_MUTATIONS},
		     {"sysevents", WATCH_SYSEVENTS}, {"connevents", WATCH_CONNEVENTS},
		     {"proxyreqs", WATCH_PROXY},     {"proxyevents", WATCH_PROXY},
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
			if (strlen(kinds[k].name) == i - b &&
			    memcmp(kinds[k].name, a + b, i - b) == 0)
				break;
		if (k == sizeof kinds / sizeof *kinds) {
			if (i - b == 7 && memcmp(a + b, "noreply", 7) == 0)
				continue;
			reply_str(out, "ERROR\r\n");
			return;
		}
		f |= kinds[k].flag;
	}
	cx->watch_flags = f ? f : WATCH_FETCHERS;
	reply_str(out, "OK\r\n");
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

void exec_slabs(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
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
		reply_str(out, r);
}
