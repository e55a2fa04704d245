/*
 * apps/cached/server/connreg.h - the connection registry: which descriptors are open, with
 * their addresses, states and last-command times, for memcached's "stats conns"
 * (connreg.c). It knows nothing of the server or the commands: server.c fills it, the
 * stats command (exec_stats.c) reads it.
 */
#ifndef TSYNC_CACHED_CONNREG_H
#define TSYNC_CACHED_CONNREG_H

#include <stdbool.h>

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

#endif /* TSYNC_CACHED_CONNREG_H */
