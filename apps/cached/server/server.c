/*
 * apps/cached/server/server.c - tsync-cached: a memcached-compatible server on the tsync
 * cache core (apps/cached/core/cache.h, ParSec (EuroSys 2016) §5.2).
 *
 * Threads (as memcached's thread.c): the main thread owns the listening socket and an
 * event base; each accepted connection is handed, round robin, to one of -t worker
 * threads, each running its own libevent event base. The hand-off is a queue per worker
 * (a mutex-protected list, memcached's CQ) and a notify event the main thread activates
 * (libevent's pthread locking is enabled, so event_active() is safe across threads and
 * wakes the worker). A connection (a read event,
 * a write event armed only when the socket is full, input and output evbuffers) lives on
 * its worker until it closes; its parse/execute loop runs there only.
 *
 * Per connection: the input evbuffer is parsed with the pure parsers (proto.h); a request
 * that is not complete leaves the bytes in place and records how many are needed, so a
 * large value is parsed once when it has arrived. At most -R requests are served per
 * read event, then the connection yields to the others (a zero-timeout event resumes it).
 * Output past 4 MiB stops reading that connection until the client reads its replies.
 * Malformed input gets memcached's error reply and the connection either continues
 * (swallowing a rejected value) or is closed; nothing a client sends can make the server
 * buffer more than -I plus one command line per connection.
 *
 * SIGINT/SIGTERM: the main loop exits and the listener is freed, so no accept callback
 * runs again; then each worker is told to stop through its notify event (a flag, then
 * event_active(): unlike event_base_loopbreak() from outside, this cannot be lost if the
 * worker has not entered its loop yet). A stopping worker closes its queue, closes every
 * socket still queued there (accepted, never adopted), frees its connections, and exits;
 * then the cache is destroyed; exit status 0, with every descriptor closed and every
 * allocation freed (tests/test_server.py races accepts against shutdown under ASan).
 */
#include "conn_ctx.h"
#include "connreg.h"
#include "exec.h"
#include "exec_bin.h"
#include "srv_state.h"
#include "watch.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <tsync/thread.h>

#define OUT_HIGH (4u << 20) /* stop reading a connection with this much unsent */
#define OUT_LOW (1u << 20)  /* ... until its output drains below this */

struct worker;

struct conn {
	struct worker *w;
	evutil_socket_t fd;
	struct event *rev;    /* EV_READ|EV_PERSIST while reading */
	struct event *wev;    /* EV_WRITE, added only when a write would block */
	struct event *resume; /* zero-timeout: continue after yielding */
	struct evbuffer *in, *out;
	struct conn_ctx cx;
	int proto;                /* 0 not yet known, 1 ASCII, 2 binary */
	size_t need;              /* parse again once the input holds this many bytes */
	size_t swallow;           /* input bytes still to discard */
	bool reading;             /* rev is added */
	bool closing;             /* close once output is written */
	bool reset;               /* ... with a reset (SO_LINGER 0), as memcached's close
				   * with input left unread */
	struct watch_sink *sink;  /* non-NULL once "watch" made this a log watcher */
	const char *close_reason; /* conn_close log: normal, error, shutdown */
	char rip[64];             /* peer address and port, for conn_new/conn_close */
	unsigned rport;
	struct conn *prev, *next; /* worker's list, for shutdown */
};

/* An accepted socket on its way from the main thread to a worker. */
struct handoff {
	evutil_socket_t fd;
	struct handoff *next;
};

struct worker {
	pthread_t thread;
	struct event_base *base;
	struct server *srv;
	struct wstats *ws;
	struct conn *conns;              /* list of open connections (worker thread only) */
	struct event *notify;            /* activated by the main thread: queue or stop */
	pthread_mutex_t q_lock;          /* protects q_head, q_tail, q_closed, stop */
	struct handoff *q_head, *q_tail; /* accepted sockets not yet adopted */
	bool q_closed;                   /* the worker is gone: refuse hand-offs */
	bool stop;                       /* shutdown asked */
};

static struct server g_srv;
static struct worker *g_workers;
static struct event_base *g_main_base;
static struct evconnlistener *g_listener;
static struct event *g_accept_retry;

/* ---- connections ------------------------------------------------------------------------
 * Like memcached's conn state machine, on libevent: one persistent read event; replies
 * go to an output evbuffer that is written with writev right after a batch of requests
 * (no epoll change per reply); a write event is armed only when the socket is full.
 */

static void conn_free(struct conn *c)
{
	struct worker *w = c->w;
	if (c->sink) { /* before the buffer and event go: no logger may touch them after */
		watch_remove(w->srv, c->sink);
		free(c->sink);
	}
	connreg_del(c->fd);
	if (watch_wants(w->srv, WATCH_CONNEVENTS))
		watch_log(w->srv, WATCH_CONNEVENTS,
			  "type=conn_close rip=%s rport=%u transport=tcp reason=%s cfd=%d", c->rip,
			  c->rport, c->close_reason ? c->close_reason : "normal", (int)c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	event_free(c->rev);
	event_free(c->wev);
	event_free(c->resume);
	evbuffer_free(c->in);
	evbuffer_free(c->out);
	if (c->reset) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		(void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	}
	evutil_closesocket(c->fd);
	free(c);
	atomic_fetch_sub(&w->srv->curr_conns, 1);
}

static void set_reading(struct conn *c, bool on)
{
	if (on && !c->reading)
		event_add(c->rev, NULL);
	else if (!on && c->reading)
		event_del(c->rev);
	c->reading = on;
}

/*
 * Write what is queued. Returns false if the connection was freed (error, or closing
 * and done). With output left over (socket full) arms the write event; with more than
 * OUT_HIGH left stops reading the client's requests until it reads its replies.
 */
static bool conn_flush(struct conn *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		int n = evbuffer_write(c->out, c->fd);
		if (n > 0) {
			atomic_fetch_add_explicit(&c->w->ws->bytes_written, (uint64_t)n,
						  memory_order_relaxed);
			continue;
		}
		int err = EVUTIL_SOCKET_ERROR();
		if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) {
			if (err == EINTR)
				continue;
			event_add(c->wev, NULL);
			if (evbuffer_get_length(c->out) >= OUT_HIGH && c->reading) {
				atomic_fetch_add_explicit(&c->w->ws->read_pauses, 1,
							  memory_order_relaxed);
				set_reading(c, false);
			}
			return true;
		}
		c->close_reason = "error";
		conn_free(c); /* peer gone */
		return false;
	}
	if (c->closing) {
		conn_free(c);
		return false;
	}
	return true;
}

/* Parse and execute what the input holds. Returns false if the connection was freed. */
static bool conn_process(struct conn *c)
{
	struct server *srv = c->w->srv;
	struct evbuffer *in = c->in, *out = c->out;
	unsigned served = 0;

	if (c->sink) { /* a watcher sends nothing more: what it sends is dropped */
		evbuffer_drain(in, evbuffer_get_length(in));
		return true;
	}
	connreg_touch(c->fd, CONN_PARSE_CMD);

	for (;;) {
		bool out_full = false;
		while (!c->closing) {
			size_t len = evbuffer_get_length(in);
			if (c->swallow) {
				size_t n = len < c->swallow ? len : c->swallow;
				evbuffer_drain(in, n);
				c->swallow -= n;
				if (c->swallow)
					break;
				continue;
			}
			if (len == 0 || len < c->need)
				break;
			if (evbuffer_get_length(out) >= OUT_HIGH) {
				out_full = true;
				break;
			}
			if (served >= srv->set.reqs_per_event) {
				atomic_fetch_add_explicit(&c->w->ws->conn_yields, 1,
							  memory_order_relaxed);
				event_active(c->resume, EV_TIMEOUT, 1);
				break;
			}
			const uint8_t *buf = evbuffer_pullup(in, -1);
			if (!buf)
				break;
			if (c->proto == 0)
				c->proto = buf[0] == MC_BIN_REQ_MAGIC ? 2 : 1;
			struct mc_parse_res res;
			enum mc_parse pr;
			if (c->proto == 1) {
				struct mc_ascii_req req;
				pr = mc_ascii_parse((const char *)buf, len, srv->set.item_max, &req,
						    &res);
				if (pr == MC_PARSE_OK) {
					if (atomic_load_explicit(&srv->verbosity,
								 memory_order_relaxed) > 1) {
						const char *nl = memchr(buf, '\n', len);
						fprintf(stderr, "<%d %.*s\n", (int)c->fd,
							(int)(nl - (const char *)buf),
							(const char *)buf);
					}
					exec_ascii(&c->cx, &req, out);
				} else if (pr == MC_PARSE_ERROR) {
					exec_ascii_error(&c->cx, &res, out);
				}
			} else {
				struct mc_bin_req req;
				pr = mc_bin_parse(buf, len, srv->set.item_max, &req, &res);
				if (pr == MC_PARSE_OK)
					exec_bin(&c->cx, &req, out);
				else if (pr == MC_PARSE_ERROR)
					exec_bin_error(&c->cx, req.opcode, req.opaque, &res, out);
			}
			if (pr == MC_PARSE_NEED_MORE) {
				c->need = res.need > len ? res.need : len + 1;
				break;
			}
			c->need = 0;
			evbuffer_drain(in, res.consumed);
			atomic_fetch_add_explicit(&c->w->ws->bytes_read, res.consumed,
						  memory_order_relaxed);
			if (pr == MC_PARSE_ERROR) {
				c->swallow = res.swallow;
				c->reset = res.close && res.reset;
			}
			if (c->cx.close_after) {
				c->closing = true;
				set_reading(c, false);
			}
			served++;
			if (c->cx.watch_flags && !c->sink) {
				/* "watch" answered OK: from now on log lines (watch.c) */
				struct watch_sink *ws = calloc(1, sizeof *ws);
				if (!ws) {
					c->closing = true;
					break;
				}
				ws->out = out;
				ws->wake = c->wev;
				ws->flags = c->cx.watch_flags;
				c->sink = ws;
				watch_add(srv, ws);
				connreg_touch(c->fd, CONN_WATCH);
				evbuffer_drain(in, evbuffer_get_length(in));
				break;
			}
		}
		if (!c->sink)
			connreg_touch(c->fd, CONN_WAITING);
		/* memcached sends nothing while it swallows a rejected value (its replies go
		 * out when it next waits for a command): the error and the replies before it
		 * leave once the value has arrived */
		if (c->swallow && !c->closing)
			return true;
		if (!conn_flush(c))
			return false;
		/* Stopped because the output was full, and the socket took enough of it: go on
		 * (no read event will announce requests already buffered). If it did not, the
		 * write event resumes us (conn_write_cb). */
		if (!out_full || evbuffer_get_length(out) >= OUT_HIGH)
			return true;
	}
}

static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct conn *c = arg;
	/* read into reserved space: no FIONREAD ioctl per read as evbuffer_read makes */
	size_t want = 16384;
	size_t have = evbuffer_get_length(c->in);
	if (c->need > have && c->need - have > want)
		want = c->need - have < (1u << 20) ? c->need - have : (1u << 20);
	struct evbuffer_iovec v;
	if (evbuffer_reserve_space(c->in, (ev_ssize_t)want, &v, 1) < 1) {
		conn_free(c);
		return;
	}
	ssize_t n = recv(fd, v.iov_base, v.iov_len, 0);
	if (n <= 0) {
		int err = EVUTIL_SOCKET_ERROR();
		if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR))
			return;
		conn_free(c); /* EOF or error */
		return;
	}
	v.iov_len = (size_t)n;
	evbuffer_commit_space(c->in, &v, 1);
	conn_process(c);
}

static void conn_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_process(arg);
}

static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct conn *c = arg;
	if (!conn_flush(c))
		return;
	if (c->sink) { /* log lines: flushed; keep reading only to see the client go */
		set_reading(c, true);
		return;
	}
	if (c->closing || evbuffer_get_length(c->out) > OUT_LOW)
		return; /* the write event is armed again; come back when more is out */
	set_reading(c, true);
	/* requests that arrived while the output was full are still in the input, and no
	 * read event will announce them: serve them now */
	if (evbuffer_get_length(c->in) > 0 && evbuffer_get_length(c->in) >= c->need)
		conn_process(c);
}

/* ip text and port of a socket address */
static void addr_text(const struct sockaddr *sa, char *ip, size_t cap, unsigned *port)
{
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
		evutil_inet_ntop(AF_INET6, &a->sin6_addr, ip, cap);
		*port = ntohs(a->sin6_port);
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
		evutil_inet_ntop(AF_INET, &a->sin_addr, ip, cap);
		*port = ntohs(a->sin_port);
	}
}

/* Runs on the worker: adopt an accepted socket. */
static void conn_adopt(struct worker *w, evutil_socket_t fd)
{
	struct conn *c = calloc(1, sizeof *c);
	if (c) {
		c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
		c->wev = event_new(w->base, fd, EV_WRITE, conn_write_cb, c);
		c->resume = event_new(w->base, -1, 0, conn_resume_cb, c);
		c->in = evbuffer_new();
		c->out = evbuffer_new();
	}
	if (!c || !c->rev || !c->wev || !c->resume || !c->in || !c->out) {
		if (c) {
			if (c->rev)
				event_free(c->rev);
			if (c->wev)
				event_free(c->wev);
			if (c->resume)
				event_free(c->resume);
			if (c->in)
				evbuffer_free(c->in);
			if (c->out)
				evbuffer_free(c->out);
			free(c);
		}
		evutil_closesocket(fd);
		atomic_fetch_sub(&w->srv->curr_conns, 1);
		atomic_fetch_add_explicit(&w->ws->malloc_fails, 1, memory_order_relaxed);
		return;
	}
	c->w = w;
	c->fd = fd;
	c->cx.srv = w->srv;
	c->cx.ws = w->ws;
	c->cx.fd = (int)fd;
	char addr[96], laddr[96];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		addr_text((struct sockaddr *)&ss, c->rip, sizeof c->rip, &c->rport);
	snprintf(addr, sizeof addr, strchr(c->rip, ':') ? "tcp6:[%s]:%u" : "tcp:%s:%u", c->rip,
		 c->rport);
	sl = sizeof ss;
	char lip[64] = "";
	unsigned lport = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		addr_text((struct sockaddr *)&ss, lip, sizeof lip, &lport);
	snprintf(laddr, sizeof laddr, strchr(lip, ':') ? "tcp6:[%s]:%u" : "tcp:%s:%u", lip, lport);
	connreg_add((int)fd, false, addr, laddr);
	if (watch_wants(w->srv, WATCH_CONNEVENTS))
		watch_log(w->srv, WATCH_CONNEVENTS,
			  "type=conn_new rip=%s rport=%u transport=tcp cfd=%d", c->rip, c->rport,
			  (int)fd);
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	set_reading(c, true);
}

/* Runs on the worker when the main thread activated its notify event: adopt what was
 * queued, or stop the loop. */
static void worker_notify_cb(evutil_socket_t fd_unused, short what, void *arg)
{
	(void)fd_unused;
	(void)what;
	struct worker *w = arg;
	pthread_mutex_lock(&w->q_lock);
	struct handoff *h = w->q_head;
	w->q_head = w->q_tail = NULL;
	bool stop = w->stop;
	pthread_mutex_unlock(&w->q_lock);
	while (h) {
		struct handoff *next = h->next;
		if (stop) {
			evutil_closesocket(h->fd);
			atomic_fetch_sub(&w->srv->curr_conns, 1);
			atomic_fetch_add(&w->srv->unadopted_closed, 1);
		} else {
			conn_adopt(w, h->fd);
		}
		free(h);
		h = next;
	}
	if (stop)
		event_base_loopbreak(w->base);
}

/* Main thread: queue fd for worker w. Returns false (nothing queued) if w is gone. */
static bool worker_handoff(struct worker *w, evutil_socket_t fd)
{
	struct handoff *h = malloc(sizeof *h);
	if (!h)
		return false;
	h->fd = fd;
	h->next = NULL;
	pthread_mutex_lock(&w->q_lock);
	bool ok = !w->q_closed;
	if (ok) {
		if (w->q_tail)
			w->q_tail->next = h;
		else
			w->q_head = h;
		w->q_tail = h;
	}
	pthread_mutex_unlock(&w->q_lock);
	if (!ok) {
		free(h);
		return false;
	}
	event_active(w->notify, EV_READ, 1);
	return true;
}

/* ---- accept (main thread) -------------------------------------------------------------- */

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	static unsigned next;
	struct server *srv = &g_srv;
	if (atomic_fetch_add(&srv->curr_conns, 1) >= srv->set.maxconns) {
		/* memcached (maxconns_fast): refuse at once with an error line */
		static const char msg[] = "ERROR Too many open connections\r\n";
		ssize_t wr = send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)wr;
		evutil_closesocket(fd);
		atomic_fetch_sub(&srv->curr_conns, 1);
		atomic_fetch_add(&srv->rejected_conns, 1);
		return;
	}
	atomic_fetch_add(&srv->total_conns, 1);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct worker *w = &g_workers[next++ % srv->nworkers];
	if (!worker_handoff(w, fd)) {
		evutil_closesocket(fd);
		atomic_fetch_sub(&srv->curr_conns, 1);
	}
}

static struct timespec g_listen_disabled_at;

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t us = (uint64_t)(now.tv_sec - g_listen_disabled_at.tv_sec) * 1000000u +
		      (uint64_t)((now.tv_nsec - g_listen_disabled_at.tv_nsec) / 1000);
	atomic_fetch_add(&g_srv.time_in_listen_disabled_us, us);
	atomic_store(&g_srv.accepting, true);
	evconnlistener_enable(g_listener);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	(void)arg;
	int err = EVUTIL_SOCKET_ERROR();
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		/* out of descriptors: stop accepting for 10 ms rather than spin */
		if (g_srv.set.verbose)
			fprintf(stderr, "accept: %s; pausing\n",
				evutil_socket_error_to_string(err));
		evconnlistener_disable(l);
		atomic_store(&g_srv.accepting, false);
		atomic_fetch_add(&g_srv.listen_disabled_num, 1);
		clock_gettime(CLOCK_MONOTONIC, &g_listen_disabled_at);
		struct timeval tv = {0, 10000};
		event_add(g_accept_retry, &tv);
	}
}

/* ---- workers, signals --------------------------------------------------------------------- */

/* Every RECLAIM_MS a worker reclaims the garbage its own updates left (items whose grace
 * period has passed): otherwise a worker that goes idle after a burst of sets or deletes
 * keeps their memory charged against -m until its next request (cache_reclaim). */
#define RECLAIM_MS 10

static void reclaim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct worker *w = arg;
	cache_reclaim(w->srv->cache);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct event *rec = event_new(w->base, -1, EV_PERSIST, reclaim_cb, w);
	struct timeval tv = {0, RECLAIM_MS * 1000};
	if (rec)
		event_add(rec, &tv);
	event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
	if (rec)
		event_free(rec);
	/* close the queue: what the main thread handed off and we never adopted is closed
	 * here (the listener is gone by now, so nothing more arrives) */
	pthread_mutex_lock(&w->q_lock);
	w->q_closed = true;
	struct handoff *h = w->q_head;
	w->q_head = w->q_tail = NULL;
	pthread_mutex_unlock(&w->q_lock);
	while (h) {
		struct handoff *next = h->next;
		evutil_closesocket(h->fd);
		atomic_fetch_sub(&w->srv->curr_conns, 1);
		atomic_fetch_add(&w->srv->unadopted_closed, 1);
		free(h);
		h = next;
	}
	while (w->conns) {
		w->conns->close_reason = "shutdown";
		conn_free(w->conns);
	}
	tsync_thread_unregister();
	return NULL;
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	if (g_srv.set.verbose)
		fprintf(stderr, "signal %d: shutting down\n", (int)sig);
	event_base_loopbreak(g_main_base);
}

/* ---- options ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"tsync-cached " TSYNC_CACHED_VERSION
		" - a memcached-compatible cache on tsync's ParSec\n"
		"usage: tsync-cached [options]\n"
		"-p, --port=<num>            TCP port to listen on (default: 11211); -1 or 0: a\n"
		"                            free port, written to $MEMCACHED_PORT_FILENAME\n"
		"-l, --listen=<addr>         interface to listen on (default: 127.0.0.1)\n"
		"-t, --threads=<num>         number of worker threads (default: 4)\n"
		"-m, --memory-limit=<num>    item memory in megabytes (default: 64)\n"
		"-c, --conn-limit=<num>      max simultaneous connections (default: 1024)\n"
		"-I, --max-item-size=<num>   max item size, k/m suffix allowed (default: 1m,\n"
		"                            min: 1k, max: 128m)\n"
		"-M, --disable-evictions     return an error on memory exhausted instead of "
		"evicting\n"
		"-f, --slab-growth-factor=<num> size class growth factor (default: 1.25)\n"
		"-n, --slab-min-size=<bytes> min space for key+value+flags (default: 48)\n"
		"-b, --listen-backlog=<num>  listen backlog (default: 1024)\n"
		"-R, --max-reqs-per-event=<num> requests served per event (default: 20)\n"
		"-v, --verbose               print errors; -vv also commands\n"
		"    --variant=<name>        cache core: ps (default), ps-nocrp, mcs-clock, "
		"locked\n"
		"-V, --version               print version and exit\n"
		"-h, --help                  print this help and exit\n"
		"Accepted and ignored for drop-in use: -U 0, -u <user>.\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct settings *st)
{
	static const struct option opts[] = {
		{"port", required_argument, NULL, 'p'},
		{"listen", required_argument, NULL, 'l'},
		{"threads", required_argument, NULL, 't'},
		{"memory-limit", required_argument, NULL, 'm'},
		{"conn-limit", required_argument, NULL, 'c'},
		{"max-item-size", required_argument, NULL, 'I'},
		{"disable-evictions", no_argument, NULL, 'M'},
		{"slab-growth-factor", required_argument, NULL, 'f'},
		{"slab-min-size", required_argument, NULL, 'n'},
		{"listen-backlog", required_argument, NULL, 'b'},
		{"max-reqs-per-event", required_argument, NULL, 'R'},
		{"verbose", no_argument, NULL, 'v'},
		{"variant", required_argument, NULL, 1},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{"udp-port", required_argument, NULL, 'U'},
		{"user", required_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	int o;
	unsigned long v;
	uint64_t sz;
	while ((o = getopt_long(argc, argv, "p:l:t:m:c:I:Mf:n:b:R:vVhU:u:", opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			/* memcached's -p -1: any free port (reported through
			 * MEMCACHED_PORT_FILENAME); 0 binds one too */
			if (strcmp(optarg, "-1") == 0)
				v = 0;
			else if (parse_uint(optarg, 65535, &v))
				goto bad;
			st->port = (unsigned)v;
			break;
		case 'l': st->addr = optarg; break;
		case 't':
			if (parse_uint(optarg, 256, &v) || v == 0)
				goto bad;
			st->threads = (unsigned)v;
			break;
		case 'm':
			if (parse_uint(optarg, 1ul << 30, &v) || v == 0)
				goto bad;
			st->mem_mb = v;
			break;
		case 'c':
			if (parse_uint(optarg, 1ul << 20, &v) || v == 0)
				goto bad;
			st->maxconns = (unsigned)v;
			break;
		case 'I':
			if (parse_size(optarg, &sz) || sz < 1024 || sz > (128u << 20))
				goto bad;
			st->item_max = (uint32_t)sz;
			break;
		case 'M': st->no_evict = true; break;
		case 'f': {
			char *end;
			st->growth_factor = strtod(optarg, &end);
			if (*end || !(st->growth_factor > 1.0))
				goto bad;
			break;
		}
		case 'n':
			if (parse_uint(optarg, 1u << 20, &v) || v == 0)
				goto bad;
			st->chunk_min = (uint32_t)v;
			break;
		case 'b':
			if (parse_uint(optarg, 1u << 20, &v) || v == 0)
				goto bad;
			st->backlog = (unsigned)v;
			break;
		case 'R':
			if (parse_uint(optarg, 1u << 20, &v) || v == 0)
				goto bad;
			st->reqs_per_event = (unsigned)v;
			break;
		case 'v': st->verbose++; break;
		case 1:
			if (cache_variant_parse(optarg, &st->variant) != 0) {
				fprintf(stderr,
					"tsync-cached: unknown --variant '%s' "
					"(ps, ps-nocrp, mcs-clock, locked)\n",
					optarg);
				return 2;
			}
			break;
		case 'V': printf("tsync-cached " TSYNC_CACHED_VERSION "\n"); return 1;
		case 'h': usage(stdout); return 1;
		case 'U':
			if (strcmp(optarg, "0") != 0) {
				fprintf(stderr, "tsync-cached: UDP is not supported (-U 0 only)\n");
				return 2;
			}
			break;
		case 'u': break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tsync-cached: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return 0;
bad:
	fprintf(stderr, "tsync-cached: bad value '%s' for -%c\n", optarg, o);
	return 2;
}

/*
 * memcached's MEMCACHED_PORT_FILENAME: write "TCP INET: <port>" (INET6 for an IPv6
 * listener) to that file once the port is open - to <file>.lck, renamed into place, so a
 * reader sees the whole file or none. With -p -1 the kernel picks the port: a test
 * harness starts the server without guessing a free port (which another process may take
 * between the guess and the bind). Returns 0, or -1 with a message.
 */
static int write_port_file(const struct sockaddr *sa)
{
	const char *path = getenv("MEMCACHED_PORT_FILENAME");
	if (path == NULL || *path == '\0')
		return 0;
	char ip[64], tmp[4096];
	unsigned port;
	addr_text(sa, ip, sizeof ip, &port);
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.lck", path) >= sizeof tmp) {
		fprintf(stderr, "tsync-cached: MEMCACHED_PORT_FILENAME too long\n");
		return -1;
	}
	FILE *f = fopen(tmp, "w");
	if (f == NULL ||
	    fprintf(f, "TCP INET%s: %u\n", sa->sa_family == AF_INET6 ? "6" : "", port) < 0 ||
	    fclose(f) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "tsync-cached: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* memcached's eviction log line, for watchers of "evictions" */
static void log_eviction(void *arg, const struct cache_evicted *e)
{
	struct server *srv = arg;
	if (!watch_wants(srv, WATCH_EVICTIONS))
		return;
	char k[3 * CACHE_KEY_MAX + 1];
	watch_uriencode(e->key, e->nkey, k, sizeof k);
	watch_log(srv, WATCH_EVICTIONS,
		  "type=eviction key=%s fetch=%s ttl=%lld la=%u clsid=%u size=%u", k,
		  e->fetched ? "yes" : "no", (long long)e->ttl, e->idle, e->cls + 1, e->nbytes);
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	struct server *srv = &g_srv;
	struct settings *st = &srv->set;
	*st = (struct settings){.port = 11211,
				.addr = "127.0.0.1",
				.threads = 4,
				.mem_mb = 64,
				.maxconns = 1024,
				.item_max = CACHE_ITEM_SIZE_MAX_DEFAULT,
				.backlog = 1024,
				.reqs_per_event = 20,
				.variant = CACHE_PS};
	int rc = parse_args(argc, argv, st);
	if (rc)
		return rc == 1 ? 0 : rc;
	atomic_store(&srv->verbosity, st->verbose);
	atomic_store(&srv->slab_automove, 1); /* memcached's default */
	signal(SIGPIPE, SIG_IGN);

	/* room for -c connections plus the listener, pipes and the cache's own files */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)st->maxconns + 64) {
		rl.rlim_cur = (rlim_t)st->maxconns + 64;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	if (tsync_thread_capacity() < st->threads + 8) {
		fprintf(stderr,
			"tsync-cached: -t %u needs a tsync thread capacity of at least %u "
			"(TSYNC_MAX_THREADS)\n",
			st->threads, st->threads + 8);
		return 1;
	}
	struct cache_config cfg = CACHE_CONFIG_INIT;
	cfg.variant = st->variant;
	cfg.mem_limit = st->mem_mb << 20;
	cfg.item_size_max = st->item_max;
	cfg.growth_factor = st->growth_factor;
	cfg.chunk_min = st->chunk_min;
	cfg.no_evict = st->no_evict;
	cfg.evict_fn = log_eviction;
	cfg.evict_arg = srv;
	srv->cache = cache_create(&cfg);
	if (!srv->cache) {
		fprintf(stderr, "tsync-cached: cannot create the cache (-m %llu -I %u): %s\n",
			(unsigned long long)st->mem_mb, st->item_max, strerror(errno));
		return 1;
	}
	if (cache_sweeper_start(srv->cache, 0) != 0) {
		fprintf(stderr, "tsync-cached: cannot start the sweeper: %s\n", strerror(errno));
		cache_destroy(srv->cache);
		return 1;
	}
	srv->started = time(NULL);

	if (evthread_use_pthreads() != 0) {
		fprintf(stderr, "tsync-cached: libevent has no pthreads support\n");
		return 1;
	}
	g_main_base = event_base_new();
	if (!g_main_base) {
		fprintf(stderr, "tsync-cached: event_base_new failed\n");
		return 1;
	}

	struct sockaddr_storage ss;
	int sslen = sizeof ss;
	char addrport[300];
	snprintf(addrport, sizeof addrport, strchr(st->addr, ':') ? "[%s]:%u" : "%s:%u", st->addr,
		 st->port);
	/* libevent refuses port 0 in "addr:port"; without a port it parses as port 0 */
	if (evutil_parse_sockaddr_port(st->port ? addrport : st->addr, (struct sockaddr *)&ss,
				       &sslen) != 0) {
		fprintf(stderr, "tsync-cached: bad listen address '%s'\n", st->addr);
		return 1;
	}
	/* SIGINT/SIGTERM are caught before the port opens: a client may signal the server as
	 * soon as it can connect, and the default action would kill it uncleanly */
	struct event *sigint = evsignal_new(g_main_base, SIGINT, signal_cb, NULL);
	struct event *sigterm = evsignal_new(g_main_base, SIGTERM, signal_cb, NULL);
	if (!sigint || !sigterm || event_add(sigint, NULL) != 0 || event_add(sigterm, NULL) != 0) {
		fprintf(stderr, "tsync-cached: cannot catch SIGINT/SIGTERM\n");
		return 1;
	}
	g_listener = evconnlistener_new_bind(g_main_base, accept_cb, NULL,
					     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
						     LEV_OPT_CLOSE_ON_EXEC,
					     (int)st->backlog, (struct sockaddr *)&ss, sslen);
	if (!g_listener) {
		fprintf(stderr, "tsync-cached: cannot listen on %s: %s\n", addrport,
			strerror(errno));
		return 1;
	}
	evconnlistener_set_error_cb(g_listener, accept_error_cb);
	/* the port bound (-p 0 / -1: the kernel's choice), for the texts below */
	struct sockaddr_storage bound;
	socklen_t boundlen = sizeof bound;
	if (getsockname((int)evconnlistener_get_fd(g_listener), (struct sockaddr *)&bound,
			&boundlen) != 0) {
		fprintf(stderr, "tsync-cached: getsockname: %s\n", strerror(errno));
		return 1;
	}
	{
		char ip[64];
		unsigned port;
		addr_text((struct sockaddr *)&bound, ip, sizeof ip, &port);
		snprintf(addrport, sizeof addrport, strchr(st->addr, ':') ? "[%s]:%u" : "%s:%u",
			 st->addr, port);
	}
	/* descriptors are numbered lowest-first: -c connections and the server's own fit
	 * below this (a higher one, if ever, is just not listed by "stats conns") */
	if (connreg_init(st->maxconns + 256) != 0) {
		fprintf(stderr, "tsync-cached: cannot allocate the connection registry\n");
		return 1;
	}
	{
		char laddr[340];
		snprintf(laddr, sizeof laddr, strchr(st->addr, ':') ? "tcp6:%s" : "tcp:%s",
			 addrport);
		connreg_add((int)evconnlistener_get_fd(g_listener), true, laddr, NULL);
	}
	atomic_store(&srv->accepting, true);
	srv->reserved_fds = 64;
	g_accept_retry = evtimer_new(g_main_base, accept_retry_cb, NULL);

	srv->nworkers = st->threads;
	srv->ws = calloc(st->threads, sizeof *srv->ws);
	g_workers = calloc(st->threads, sizeof *g_workers);
	if (!srv->ws || !g_workers)
		return 1;
	for (unsigned i = 0; i < st->threads; i++) {
		struct worker *w = &g_workers[i];
		w->srv = srv;
		w->ws = &srv->ws[i];
		w->base = event_base_new();
		pthread_mutex_init(&w->q_lock, NULL);
		w->notify = w->base ? event_new(w->base, -1, 0, worker_notify_cb, w) : NULL;
		if (!w->base || !w->notify ||
		    pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			fprintf(stderr, "tsync-cached: cannot start worker %u\n", i);
			return 1;
		}
	}

	if (write_port_file((struct sockaddr *)&bound) != 0)
		return 1;
	if (st->verbose)
		fprintf(stderr,
			"tsync-cached %s listening on %s, %u threads, -m %llu, variant %s\n",
			TSYNC_CACHED_VERSION, addrport, st->threads, (unsigned long long)st->mem_mb,
			cache_variant_name(st->variant));

	event_base_dispatch(g_main_base);

	/* shutdown: stop accepting, stop the workers (their connections are freed), then
	 * the cache */
	evconnlistener_free(g_listener);
	for (unsigned i = 0; i < st->threads; i++) {
		struct worker *w = &g_workers[i];
		pthread_mutex_lock(&w->q_lock);
		w->stop = true;
		pthread_mutex_unlock(&w->q_lock);
		event_active(w->notify, EV_READ, 1);
	}
	for (unsigned i = 0; i < st->threads; i++) {
		struct worker *w = &g_workers[i];
		pthread_join(w->thread, NULL);
		event_free(w->notify);
		event_base_free(w->base);
		pthread_mutex_destroy(&w->q_lock);
	}
	event_free(sigint);
	event_free(sigterm);
	event_free(g_accept_retry);
	event_base_free(g_main_base);
	cache_sweeper_stop(srv->cache);
	cache_destroy(srv->cache);
	free(g_workers);
	free(srv->ws);
	connreg_free();
	libevent_global_shutdown();
	/* every accepted descriptor was counted in curr_conns and is closed by now: by
	 * conn_free, by a worker closing its hand-off queue, or on a refused accept */
	unsigned left = atomic_load(&srv->curr_conns);
	if (left != 0) {
		fprintf(stderr, "tsync-cached: %u connection(s) not closed at shutdown\n", left);
		return 1;
	}
	if (st->verbose)
		fprintf(stderr,
			"tsync-cached: clean shutdown (%u handed-off connection(s) closed before "
			"a worker adopted them)\n",
			atomic_load(&srv->unadopted_closed));
	return 0;
}
