/*
 * apps/cached/server/watch.h - memcached's log watchers ("watch fetchers mutations ..."):
 * the kinds, a watching connection's sink, and the log call any thread makes (watch.c).
 */
#ifndef TSYNC_CACHED_WATCH_H
#define TSYNC_CACHED_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "srv_state.h"

struct evbuffer;
struct event;

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
__attribute__((format(printf, 3, 4))) void watch_log(struct server *srv, unsigned kind,
						     const char *fmt, ...);
/* memcached's uriencode for keys in log lines; dst of cap >= 3 * n + 1 bytes. */
size_t watch_uriencode(const char *src, size_t n, char *dst, size_t cap);
static inline bool watch_wants(struct server *srv, unsigned kind)
{
	return (atomic_load_explicit(&srv->watch_mask, memory_order_relaxed) & kind) != 0;
}

#endif /* TSYNC_CACHED_WATCH_H */
