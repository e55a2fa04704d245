/*
 * src/ps_life.c - an instance's life: ps_create, ps_destroy and the fork hooks, which
 * compose the quiescence core (src/ps.c) and ps_call's queues (src/ps_call.c), so that
 * calls run one way (ps_life.c -> ps_call.c -> ps.c). Contracts in include/tsync/ps.h;
 * fork in docs/design.md §8.
 */
#include <errno.h>
#include <stddef.h>

#include <tsync/ps.h>
#include "ps_internal.h"
#include "registry.h"
#include "tdir.h"

/* fork (registry hooks, src/registry.h): the queues' mutexes are taken in phase 0 (the
 * locks a callback may run under come before the pools'), released after the fork; the
 * child also closes the vanished threads' sections and drops their open call lists. */
static void ps_fork_prepare(struct tsync__client *c, int phase)
{
	if (phase == 0)
		ps__calls_fork_prepare(ps__calls(ps__of_client(c)));
}

static void ps_fork_parent(struct tsync__client *c)
{
	ps__calls_fork_parent(ps__calls(ps__of_client(c)));
}

static void ps_fork_child(struct tsync__client *c, const unsigned char *ids, unsigned n)
{
	struct ps *ps = ps__of_client(c);
	ps__fork_child_sections(ps, ids, n);
	ps__calls_fork_child(ps__calls(ps), ids, n);
}

struct ps *ps_create(const struct ps_config *cfg)
{
	struct ps *ps = ps__new(cfg); /* checks cfg first: EINVAL allocates nothing */
	if (ps == NULL)
		return NULL;
	struct ps_calls *calls = ps__calls_new(tsync__chunk_count());
	if (calls == NULL) {
		ps__delete(ps);
		errno = ENOMEM;
		return NULL;
	}
	ps__set_calls(ps, calls);
	struct tsync__client *client = ps__client(ps);
	client->fork_prepare = ps_fork_prepare;
	client->fork_parent = ps_fork_parent;
	client->fork_child = ps_fork_child;
	if (tsync__client_add(client) != 0) { /* records of registered threads */
		ps__delete(ps);
		ps__calls_destroy(calls);
		errno = ENOMEM;
		return NULL;
	}
	return ps;
}

void ps_destroy(struct ps *ps)
{
	if (ps == NULL)
		return;
	ps__calls_drain(ps); /* runs what ps_call queued (as ps_barrier) */
	tsync__client_remove(ps__client(ps));
	struct ps_calls *calls = ps__calls(ps);
	ps__delete(ps);
	ps__calls_destroy(calls); /* nothing queued: the drain ran it */
}
