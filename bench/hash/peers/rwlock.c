/*
 * bench/hash/peers/rwlock.c - the peer "rwlock" of `tsync-bench hash`: a chained table
 * under one pthread rwlock, resized by its writers. Hooks declared in peers.h.
 */
#include "peers.h"
struct robj {
	struct robj *next;
	uint64_t key;
};
static pthread_rwlock_t r_lock;
static struct robj **r_b;
static uint64_t r_mask, r_n, r_resizes;

void hash_rw_init(uint64_t keys, unsigned n)
{
	(void)keys;
	(void)n;
	r_mask = 63;
	r_b = calloc(r_mask + 1, sizeof(*r_b));
	/* Writer-preferring: glibc's default prefers readers, and one reader that takes the
	 * read lock back to back starved the resize runs' writer (82 s for a 2 s phase on
	 * an idle 2-vCPU machine). */
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&r_lock, &a);
	pthread_rwlockattr_destroy(&a);
}
bool hash_rw_lookup(unsigned id, uint64_t key)
{
	(void)id;
	uint64_t h = bench_mix64(key);
	pthread_rwlock_rdlock(&r_lock);
	struct robj *o = r_b[h & r_mask];
	while (o && o->key != key)
		o = o->next;
	pthread_rwlock_unlock(&r_lock);
	return o != NULL;
}
static void r_rehash(uint64_t nb)
{
	struct robj **nbk = calloc(nb, sizeof(*nbk));
	if (!nbk)
		return;
	for (uint64_t i = 0; i <= r_mask; i++)
		for (struct robj *o = r_b[i], *nx; o; o = nx) {
			nx = o->next;
			uint64_t j = bench_mix64(o->key) & (nb - 1);
			o->next = nbk[j];
			nbk[j] = o;
		}
	free(r_b);
	r_b = nbk;
	r_mask = nb - 1;
	r_resizes++;
}
bool hash_rw_insert(unsigned id, uint64_t key)
{
	(void)id;
	uint64_t h = bench_mix64(key);
	struct robj *n = malloc(sizeof(*n));
	n->key = key;
	pthread_rwlock_wrlock(&r_lock);
	struct robj **pp = &r_b[h & r_mask];
	for (struct robj *o = *pp; o; o = o->next)
		if (o->key == key) {
			pthread_rwlock_unlock(&r_lock);
			free(n);
			return false;
		}
	n->next = *pp;
	*pp = n;
	if (++r_n > r_mask + 1)
		r_rehash((r_mask + 1) * 4);
	pthread_rwlock_unlock(&r_lock);
	return true;
}
bool hash_rw_remove(unsigned id, uint64_t key)
{
	(void)id;
	uint64_t h = bench_mix64(key);
	pthread_rwlock_wrlock(&r_lock);
	struct robj **pp = &r_b[h & r_mask], *o;
	while ((o = *pp) && o->key != key)
		pp = &o->next;
	if (o) {
		*pp = o->next;
		if (--r_n < (r_mask + 1) / 8 && r_mask > 63)
			r_rehash((r_mask + 1) / 4 > 64 ? (r_mask + 1) / 4 : 64);
	}
	pthread_rwlock_unlock(&r_lock);
	free(o);
	return o != NULL;
}
uint64_t hash_rw_resizes(void)
{
	return r_resizes;
}
