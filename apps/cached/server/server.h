/*
 * apps/cached/server/server.h - tsync-cached internals shared by the connection layer
 * (server.c: libevent, one event base per worker thread, as memcached) and the command
 * layer (exec.c: parsed requests -> cache.h calls -> reply bytes).
 *
 * Threads: the main thread accepts and hands each connection to one worker; a connection
 * lives on that worker's event base until it closes, so everything in struct conn is
 * touched by one thread only. Counters shared across threads are atomics.
 */
#ifndef TSYNC_CACHED_SERVER_H
#define TSYNC_CACHED_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cache.h"
#include "proto.h"

struct evbuffer;

#define TSYNC_CACHED_VERSION "1.6.18-tsync-0.1.0"

struct settings {
	unsigned port;            /* -p, default 11211 */
	const char *addr;         /* -l, default 127.0.0.1 */
	unsigned threads;         /* -t, default 4 */
	uint64_t mem_mb;          /* -m, default 64 */
	unsigned maxconns;        /* -c, default 1024 */
	uint32_t item_max;        /* -I, default 1 MiB */
	unsigned verbose;         /* -v count */
	bool no_evict;            /* -M */
	double growth_factor;     /* -f */
	uint32_t chunk_min;       /* -n */
	unsigned backlog;         /* -b */
	unsigned reqs_per_event;  /* -R, default 20 */
	enum cache_variant variant; /* --variant */
};

/* Per-worker counters (written by the worker, read by any thread's stats). */
struct wstats {
	_Atomic uint64_t bytes_read, bytes_written;
	_Atomic uint64_t cmd_touch_ascii, cmd_meta;
	_Atomic uint64_t conn_yields;
	_Atomic uint64_t malloc_fails;   /* a connection's buffers could not be allocated */
	_Atomic uint64_t read_pauses;    /* a connection stopped being read: OUT_HIGH unsent */
};

/* Server-wide state. */
struct server {
	struct settings set;
	struct cache *cache;
	time_t started;           /* wall clock at start */
	_Atomic unsigned curr_conns;
	_Atomic uint64_t total_conns, rejected_conns;
	_Atomic unsigned verbosity;
	struct wstats *ws;        /* one per worker */
	unsigned nworkers;
	struct cache_stats reset_base; /* counters at the last "stats reset" */
	_Atomic uint64_t reset_bytes_read, reset_bytes_written;
	_Atomic int reset_gen;
	_Atomic bool detail_enabled;  /* "stats detail on": count per key prefix */
	_Atomic unsigned slab_automove; /* "slabs automove N" (0, 1, 2): kept and reported;
				       * tsync's slabs go back to one shared pool when
				       * empty, so there is no mover to steer */
	_Atomic bool accepting;       /* the listener is enabled */
	_Atomic uint64_t listen_disabled_num;      /* times accepting was paused */
	_Atomic uint64_t time_in_listen_disabled_us;
	unsigned reserved_fds;        /* descriptors kept beyond -c (listener, pipes, ...) */
	_Atomic unsigned unadopted_closed; /* at shutdown: hand-offs closed before a worker
					    * adopted them (reported with -v) */
	_Atomic unsigned watch_mask;  /* WATCH_* kinds some watcher asked for (watch.c) */
	_Atomic uint64_t log_watchers, log_watcher_sent, log_watcher_skipped;
};

/* ---- connection registry and log watchers (watch.c) ------------------------------------ */

/* A connection's state as "stats conns" names it (memcached's conn_* names). */
enum { CONN_LISTENING, CONN_WAITING, CONN_PARSE_CMD, CONN_WATCH };

/* Registry of open descriptors for "stats conns": one slot per fd below max_fd; add and
 * del take one mutex; touch is a relaxed store by the connection's own worker. */
int connreg_init(unsigned max_fd);
void connreg_free(void);
void connreg_add(int fd, bool listener, const char *addr, const char *listen_addr);
void connreg_del(int fd);
void connreg_touch(int fd, int state);
/* Call fn(arg, fd, stat name, value) for each registered descriptor, in fd order, under
 * the registry's mutex (fn must not call back in). self_fd reads "conn_parse_cmd". */
void connreg_each(int self_fd, void (*fn)(void *arg, int fd, const char *name, const char *val),
		  void *arg);

/* memcached's watch kinds */
#define WATCH_RAWCMDS 0x01u
#define WATCH_EVICTIONS 0x02u
#define WATCH_FETCHERS 0x04u
#define WATCH_MUTATIONS 0x08u
#define WATCH_SYSEVENTS 0x10u
#define WATCH_CONNEVENTS 0x20u
#define WATCH_PROXY 0x40u /* proxyreqs, proxyevents, proxyuser: accepted, never emitted */

/* A watching connection's end: its output buffer (made thread-safe by watch_add) and the
 * event its worker flushes it on. Owned by the connection; removed before it is freed. */
struct watch_sink {
	struct evbuffer *out;
	struct event *wake;
	unsigned flags;
	struct watch_sink *next;
};
void watch_add(struct server *srv, struct watch_sink *w);
void watch_remove(struct server *srv, struct watch_sink *w);
/* One log line "ts=<s>.<us> gid=<n> " + fmt + "\n" to every watcher of kind. Any thread;
 * call only when srv->watch_mask & kind (the caller's cheap check). */
__attribute__((format(printf, 3, 4)))
void watch_log(struct server *srv, unsigned kind, const char *fmt, ...);
/* memcached's uriencode for keys in log lines; dst of cap >= 3 * n + 1 bytes. */
size_t watch_uriencode(const char *src, size_t n, char *dst, size_t cap);
static inline bool watching(struct server *srv, unsigned kind)
{
	return (atomic_load_explicit(&srv->watch_mask, memory_order_relaxed) & kind) != 0;
}

/* ---- stats detail (stats_prefix.c): memcached's per-prefix counters -------------------- */
enum prefix_op { PREFIX_GET, PREFIX_SET, PREFIX_DELETE };
/* Count one command on key's prefix (the bytes before its first ':'; none: nothing).
 * Any thread; takes one mutex. Call only while srv->detail_enabled. */
void prefix_stats_record(const char *key, size_t nkey, enum prefix_op op, bool hit);
/* "PREFIX <p> get <n> hit <n> set <n> del <n>\r\n" per prefix, then "END\r\n"; malloc'd
 * (caller frees), NULL if out of memory; *len its length. */
char *prefix_stats_dump(size_t *len);
/* Forget every prefix ("stats reset"). */
void prefix_stats_clear(void);

/* One connection's protocol state, as the command layer sees it. */
struct conn_ctx {
	struct server *srv;
	struct wstats *ws;
	bool close_after;         /* close once the reply is written (quit, errors) */
	int fd;                   /* the socket (memcached's cfd in log lines and stats conns) */
	unsigned watch_flags;     /* set by "watch": the connection becomes a log watcher */
};

/*
 * Execute one parsed request against srv->cache and append the reply to out.
 * Called on the connection's worker thread; blocking only as cache.h's updates are
 * (bucket locks); never while holding a cache_ref across a wait.
 */
void exec_ascii(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out);
void exec_bin(struct conn_ctx *cx, const struct mc_bin_req *req, struct evbuffer *out);

/* Reply to a request the parser rejected (res from a failed parse). */
void exec_ascii_error(struct conn_ctx *cx, const struct mc_parse_res *res,
		      struct evbuffer *out);
void exec_bin_error(struct conn_ctx *cx, uint8_t opcode, uint32_t opaque,
		    const struct mc_parse_res *res, struct evbuffer *out);

#endif /* TSYNC_CACHED_SERVER_H */
