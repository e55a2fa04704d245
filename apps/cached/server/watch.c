/*
 * apps/cached/server/watch.c - memcached's log watchers ("watch fetchers mutations ..."),
 * with memcached 1.6.18's line formats.
 *
 * A watching connection's output buffer is made thread-safe (evbuffer_enable_locking)
 * and its sink is put on a list under watch_lock. A worker that logs an event checks
 * srv->watch_mask first (one relaxed load: nothing else is paid while nobody watches),
 * then formats the line once and, under watch_lock, appends it to every sink that asked
 * for that kind and activates the sink's write event, which its own worker then flushes.
 * A sink whose client does not read keeps at most WATCH_BUF_MAX bytes; lines past that
 * are counted (log_watcher_skipped) and dropped, as memcached's logger does. The owning
 * worker removes a sink (under watch_lock) before freeing its connection, so no other
 * thread touches a freed buffer or event.
 */
#include "watch.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define WATCH_BUF_MAX (256u << 10) /* memcached's watcher_logbuf_size default */

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_sink *sinks;
static _Atomic uint64_t gid;

/* the OR of every sink's flags, kept under watch_lock */
static void update_mask(struct server *srv)
{
	unsigned m = 0;
	for (struct watch_sink *w = sinks; w; w = w->next)
		m |= w->flags;
	atomic_store_explicit(&srv->watch_mask, m, memory_order_relaxed);
}

void watch_add(struct server *srv, struct watch_sink *w)
{
	evbuffer_enable_locking(w->out, NULL);
	pthread_mutex_lock(&watch_lock);
	w->next = sinks;
	sinks = w;
	update_mask(srv);
	atomic_fetch_add(&srv->log_watchers, 1);
	pthread_mutex_unlock(&watch_lock);
}

void watch_remove(struct server *srv, struct watch_sink *w)
{
	pthread_mutex_lock(&watch_lock);
	for (struct watch_sink **pp = &sinks; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			atomic_fetch_sub(&srv->log_watchers, 1);
			break;
		}
	}
	update_mask(srv);
	pthread_mutex_unlock(&watch_lock);
}

void watch_log(struct server *srv, unsigned kind, const char *fmt, ...)
{
	char line[1024];
	struct timeval tv;
	gettimeofday(&tv, NULL);
	int n = snprintf(
		line, sizeof line, "ts=%lld.%d gid=%llu ", (long long)tv.tv_sec, (int)tv.tv_usec,
		(unsigned long long)atomic_fetch_add_explicit(&gid, 1, memory_order_relaxed) + 1);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len = (size_t)n + (size_t)m;
	if (len >= sizeof line - 1)
		len = sizeof line - 2;
	line[len++] = '\n';
	pthread_mutex_lock(&watch_lock);
	for (struct watch_sink *w = sinks; w; w = w->next) {
		if (!(w->flags & kind))
			continue;
		if (evbuffer_get_length(w->out) + len > WATCH_BUF_MAX) {
			atomic_fetch_add_explicit(&srv->log_watcher_skipped, 1,
						  memory_order_relaxed);
			continue;
		}
		evbuffer_add(w->out, line, len);
		atomic_fetch_add_explicit(&srv->log_watcher_sent, 1, memory_order_relaxed);
		event_active(w->wake, EV_WRITE, 1);
	}
	pthread_mutex_unlock(&watch_lock);
}

/* memcached's uriencode: keys in log lines with every byte but [A-Za-z0-9._~-] as %XX */
size_t watch_uriencode(const char *src, size_t n, char *dst, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
			     ch == '~';
		if (d + 4 > cap)
			break;
		if (plain) {
			dst[d++] = (char)ch;
		} else {
			dst[d++] = '%';
			dst[d++] = hex[ch >> 4];
			dst[d++] = hex[ch & 15];
		}
	}
	dst[d] = 0;
	return d;
}
