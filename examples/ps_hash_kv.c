/*
 * examples/ps_hash_kv.c - a concurrent key-value store on <tsync/ps_hash.h>.
 *
 * String keys (user hash and compare), values in objects from a ps_kmem (size classes),
 * so the table's default reclamation (ps_free of the object) frees replaced and deleted
 * entries once no reader can hold them. Two readers look keys up inside parallel
 * sections while a writer sets, replaces and deletes them; the table grows and shrinks
 * by itself on the way. Readers check that a value always matches its key; the program
 * exits non-zero on any mismatch or lost key.
 *
 *   cc -std=c11 ps_hash_kv.c $(pkg-config --cflags --libs tsync) -pthread
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/tsync.h>

#define KEYS 5000
#define ROUNDS 4

struct kv {
	struct ps_hash_node node; /* first: node_offset 0 */
	uint64_t version;
	char key[24];
	char value[40]; /* "<key>=<version>" */
};

static struct ps *ps;
static struct ps_kmem *km;
static struct ps_hash *table;
static atomic_int done;
static atomic_long bad;

static uint64_t kv_hash(const void *key, void *arg)
{
	(void)arg;
	return ps_hash_bytes(key, strlen(key), 0);
}

static bool kv_match(const struct ps_hash_node *n, const void *key, void *arg)
{
	(void)arg;
	return strcmp(((const struct kv *)n)->key, key) == 0;
}

static void set(const char *key, uint64_t version)
{
	struct kv *e = ps_kmalloc(km, sizeof(*e));
	if (e == NULL) {
		perror("ps_kmalloc");
		exit(1);
	}
	e->version = version;
	snprintf(e->key, sizeof(e->key), "%s", key);
	snprintf(e->value, sizeof(e->value), "%s=%llu", key, (unsigned long long)version);
	/* insert, or replace the old entry (which goes to ps_free) in one step */
	(void)ps_hash_replace(table, &e->node, e->key);
}

static void *reader(void *arg)
{
	(void)arg;
	char key[24], want[32];
	unsigned i = 0;
	while (!atomic_load(&done)) {
		snprintf(key, sizeof(key), "user:%u", i++ % KEYS);
		ps_enter(ps);
		struct kv *e = (struct kv *)ps_hash_lookup(table, key);
		if (e != NULL) {
			snprintf(want, sizeof(want), "%s=", key);
			if (strncmp(e->value, want, strlen(want)) != 0)
				atomic_fetch_add(&bad, 1);
		}
		ps_exit(ps);
	}
	return NULL;
}

static bool count_visit(struct ps_hash_node *n, void *arg)
{
	(void)n;
	++*(size_t *)arg;
	return true;
}

int main(void)
{
	ps = ps_create(NULL);
	km = ps ? ps_kmem_create(ps, NULL) : NULL;
	struct ps_hash_config cfg = PS_HASH_CONFIG_INIT;
	cfg.hash = kv_hash;
	cfg.match = kv_match;
	cfg.node_offset = offsetof(struct kv, node);
	table = km ? ps_hash_create(ps, &cfg) : NULL;
	if (table == NULL) {
		perror("ps_hash_create");
		return 1;
	}
	pthread_t r[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, NULL);
	char key[24];
	for (uint64_t round = 1; round <= ROUNDS; round++) {
		for (unsigned k = 0; k < KEYS; k++) { /* set every key (grows the table) */
			snprintf(key, sizeof(key), "user:%u", k);
			set(key, round);
		}
		for (unsigned k = 0; k < KEYS; k += 2) { /* delete half */
			snprintf(key, sizeof(key), "user:%u", k);
			if (ps_hash_delete_key(table, key) == NULL)
				atomic_fetch_add(&bad, 1);
		}
	}
	struct ps_hash_stats st;
	ps_hash_stats(table, &st);
	size_t seen = 0;
	ps_enter(ps);
	ps_hash_foreach(table, count_visit, &seen);
	ps_exit(ps);
	printf("ps_hash_kv: %llu entries (walk saw %zu), %llu buckets, %llu grows, %llu shrinks\n",
	       (unsigned long long)st.count, seen, (unsigned long long)st.buckets,
	       (unsigned long long)st.grows, (unsigned long long)st.shrinks);
	for (unsigned k = 1; k < KEYS; k += 2) { /* empty it (shrinks the table) */
		snprintf(key, sizeof(key), "user:%u", k);
		if (ps_hash_delete_key(table, key) == NULL)
			atomic_fetch_add(&bad, 1);
	}
	atomic_store(&done, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	ps_hash_stats(table, &st);
	if (seen != KEYS / 2 || st.count != 0)
		atomic_fetch_add(&bad, 1);
	printf("ps_hash_kv: emptied to %llu buckets; %ld mismatches\n",
	       (unsigned long long)st.buckets, atomic_load(&bad));
	ps_hash_destroy(table);
	ps_kmem_destroy(km);
	ps_destroy(ps);
	return atomic_load(&bad) == 0 ? 0 : 1;
}
