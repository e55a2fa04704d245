/*
 * apps/cached/server/stats_prefix.c - memcached's "stats detail": per-prefix counts of
 * gets, hits, sets and deletes, collected while "stats detail on" is in force.
 *
 * A key's prefix is what comes before its first ':' (memcached's default
 * stat_key_prefix); a key without one is not counted. Counting is off by default and
 * then costs one relaxed atomic load per command (srv_state.h, srv->detail_enabled). When
 * on, every counted command takes one process-wide mutex, as memcached's STATS_LOCK does:
 * this is a diagnostic mode, not a fast path. The table is bounded: past
 * PREFIX_MAX distinct prefixes, new ones are not counted (memcached's grows without
 * bound).
 */
#include "stats_prefix.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX_HASH_SIZE 256
#define PREFIX_MAX 65536u
#define PREFIX_DELIM ':'

struct prefix_stats {
	struct prefix_stats *next;
	uint64_t gets, hits, sets, dels;
	size_t len;
	char prefix[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct prefix_stats *table[PREFIX_HASH_SIZE];
static unsigned nprefixes;
static size_t total_len;

static unsigned hash(const char *p, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h % PREFIX_HASH_SIZE;
}

/* Under lock: the entry for key's prefix, created if new; NULL if the key has none or the
 * table is full. */
static struct prefix_stats *find(const char *key, size_t nkey)
{
	const char *d = memchr(key, PREFIX_DELIM, nkey);
	if (!d)
		return NULL;
	size_t len = (size_t)(d - key);
	unsigned b = hash(key, len);
	for (struct prefix_stats *p = table[b]; p; p = p->next)
		if (p->len == len && memcmp(p->prefix, key, len) == 0)
			return p;
	if (nprefixes >= PREFIX_MAX)
		return NULL;
	struct prefix_stats *p = calloc(1, sizeof *p + len + 1);
	if (!p)
		return NULL;
	memcpy(p->prefix, key, len);
	p->len = len;
	p->next = table[b];
	table[b] = p;
	nprefixes++;
	total_len += len;
	return p;
}

void stats_prefix_record(const char *key, size_t nkey, enum prefix_op op, bool hit)
{
	pthread_mutex_lock(&lock);
	struct prefix_stats *p = find(key, nkey);
	if (p) {
		switch (op) {
		case PREFIX_GET:
			p->gets++;
			p->hits += hit;
			break;
		case PREFIX_SET: p->sets++; break;
		case PREFIX_DELETE: p->dels++; break;
		}
	}
	pthread_mutex_unlock(&lock);
}

void stats_prefix_clear(void)
{
	pthread_mutex_lock(&lock);
	for (unsigned b = 0; b < PREFIX_HASH_SIZE; b++) {
		struct prefix_stats *p = table[b];
		while (p) {
			struct prefix_stats *n = p->next;
			free(p);
			p = n;
		}
		table[b] = NULL;
	}
	nprefixes = 0;
	total_len = 0;
	pthread_mutex_unlock(&lock);
}

char *stats_prefix_dump(size_t *len)
{
	static const char fmt[] = "PREFIX %s get %llu hit %llu set %llu del %llu\r\n";
	pthread_mutex_lock(&lock);
	size_t cap = total_len + (size_t)nprefixes * (sizeof fmt + 4 * 20) + sizeof "END\r\n";
	char *buf = malloc(cap);
	size_t pos = 0;
	if (buf) {
		for (unsigned b = 0; b < PREFIX_HASH_SIZE; b++)
			for (struct prefix_stats *p = table[b]; p; p = p->next)
				pos += (size_t)snprintf(
					buf + pos, cap - pos, fmt, p->prefix,
					(unsigned long long)p->gets, (unsigned long long)p->hits,
					(unsigned long long)p->sets, (unsigned long long)p->dels);
		memcpy(buf + pos, "END\r\n", 5);
		pos += 5;
	}
	pthread_mutex_unlock(&lock);
	*len = pos;
	return buf;
}
