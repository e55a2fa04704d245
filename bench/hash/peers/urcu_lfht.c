/*
 * bench/hash/peers/urcu_lfht.c - the peer "urcu-lfht" of `tsync-bench hash`: liburcu's
 * resizable lock-free hash table (rculfhash) over urcu-memb, objects freed with call_rcu.
 * Hooks declared in peers.h.
 */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#include "peers.h"
struct uobj {
	struct cds_lfht_node node;
	uint64_t key;
	struct rcu_head rcu;
};
static struct cds_lfht *u_ht;
static _Atomic uint64_t u_resizes_seen;

static int u_match(struct cds_lfht_node *n, const void *key)
{
	return caa_container_of(n, struct uobj, node)->key == *(const uint64_t *)key;
}
static void u_free(struct rcu_head *h)
{
	free(caa_container_of(h, struct uobj, rcu));
}
void hash_urcu_init(uint64_t keys, unsigned n)
{
	(void)keys;
	(void)n;
	u_ht = cds_lfht_new_flavor(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				   &urcu_memb_flavor, NULL);
	if (!u_ht) {
		fprintf(stderr, WHO ": cds_lfht_new failed\n");
		exit(1);
	}
}
void hash_urcu_thread(unsigned id)
{
	(void)id;
	urcu_memb_register_thread();
}
void hash_urcu_thread_fini(unsigned id)
{
	(void)id;
	urcu_memb_unregister_thread();
}
bool hash_urcu_lookup(unsigned id, uint64_t key)
{
	(void)id;
	struct cds_lfht_iter it;
	urcu_memb_read_lock();
	cds_lfht_lookup(u_ht, bench_mix64(key), u_match, &key, &it);
	struct cds_lfht_node *n = cds_lfht_iter_get_node(&it);
	bool f = n != NULL && caa_container_of(n, struct uobj, node)->key == key;
	urcu_memb_read_unlock();
	return f;
}
bool hash_urcu_insert(unsigned id, uint64_t key)
{
	(void)id;
	struct uobj *o = malloc(sizeof(*o));
	o->key = key;
	cds_lfht_node_init(&o->node);
	urcu_memb_read_lock();
	struct cds_lfht_node *r =
		cds_lfht_add_unique(u_ht, bench_mix64(key), u_match, &key, &o->node);
	urcu_memb_read_unlock();
	if (r != &o->node) {
		free(o);
		return false;
	}
	return true;
}
bool hash_urcu_remove(unsigned id, uint64_t key)
{
	(void)id;
	struct cds_lfht_iter it;
	bool done = false;
	urcu_memb_read_lock();
	cds_lfht_lookup(u_ht, bench_mix64(key), u_match, &key, &it);
	struct cds_lfht_node *n = cds_lfht_iter_get_node(&it);
	if (n && cds_lfht_del(u_ht, n) == 0) {
		urcu_memb_call_rcu(&caa_container_of(n, struct uobj, node)->rcu, u_free);
		done = true;
	}
	urcu_memb_read_unlock();
	return done;
}
uint64_t hash_urcu_resizes(void)
{
	return atomic_load(&u_resizes_seen); /* rculfhash does not count its resizes */
}
