/*
 * apps/cached/server/srv_state.h - tsync-cached's server-wide state: the settings from the
 * command line, the per-worker counters and struct server, which every layer reads. It
 * declares no function, so it sits below both the connection layer (server.c) and the
 * command layer (exec*.c): neither reaches the other through it.
 *
 * Threads: the main thread accepts and hands each connection to one worker; a connection
 * lives on that worker's event base until it closes, so everything in struct conn is
 * touched by one thread only. Counters shared across threads are atomics.
 */
#ifndef TSYNC_CACHED_SRV_STATE_H
#define TSYNC_CACHED_SRV_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cache.h"

#define TSYNC_CACHED_VERSION "1.6.18-tsync-0.1.0"

struct settings {
	unsigned port;              /* -p, default 11211 */
	const char *addr;           /* -l, default 127.0.0.1 */
	unsigned threads;           /* -t, default 4 */
	uint64_t mem_mb;            /* -m, default 64 */
	unsigned maxconns;          /* -c, default 1024 */
	uint32_t item_max;          /* -I, default 1 MiB */
	unsigned verbose;           /* -v count */
	bool no_evict;              /* -M */
	double growth_factor;       /* -f */
	uint32_t chunk_min;         /* -n */
	unsigned backlog;           /* -b */
	unsigned reqs_per_event;    /* -R, default 20 */
	enum cache_variant variant; /* --variant */
};

/* Per-worker counters (written by the worker, read by any thread's stats). */
struct wstats {
	_Atomic uint64_t bytes_read, bytes_written;
	_Atomic uint64_t cmd_touch_ascii, cmd_meta;
	_Atomic uint64_t conn_yields;
	_Atomic uint64_t malloc_fails; /* a connection's buffers could not be allocated */
	_Atomic uint64_t read_pauses;  /* a connection stopped being read: OUT_HIGH unsent */
};

/* Server-wide state. */
struct server {
	struct settings set;
	struct cache *cache;
	time_t started; /* wall clock at start */
	_Atomic unsigned curr_conns;
	_Atomic uint64_t total_conns, rejected_conns;
	_Atomic unsigned verbosity;
	struct wstats *ws; /* one per worker */
	unsigned nworkers;
	struct cache_stats reset_base; /* counters at the last "stats reset" */
	_Atomic uint64_t reset_bytes_read, reset_bytes_written;
	_Atomic int reset_gen;
	_Atomic bool detail_enabled;          /* "stats detail on": count per key prefix */
	_Atomic unsigned slab_automove;       /* "slabs automove N" (0, 1, 2): kept and reported;
					       * tsync's slabs go back to one shared pool when
					       * empty, so there is no mover to steer */
	_Atomic bool accepting;               /* the listener is enabled */
	_Atomic uint64_t listen_disabled_num; /* times accepting was paused */
	_Atomic uint64_t time_in_listen_disabled_us;
	unsigned reserved_fds;             /* descriptors kept beyond -c (listener, pipes, ...) */
	_Atomic unsigned unadopted_closed; /* at shutdown: hand-offs closed before a worker
					    * adopted them (reported with -v) */
	_Atomic unsigned watch_mask;       /* WATCH_* kinds some watcher asked for (watch.c) */
	_Atomic uint64_t log_watchers, log_watcher_sent, log_watcher_skipped;
};

#endif /* TSYNC_CACHED_SRV_STATE_H */
