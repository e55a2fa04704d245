/*
 * bench/hash/peers/ck_hs.c - the peer "ck-hs" of `tsync-bench hash`: Concurrency Kit's
 * ck_hs (one writer at a time under a spinlock, readers lock-free), its blocks and the
 * objects freed through ck_epoch. Hooks declared in peers.h.
 */
#include <ck_epoch.h>
#include <ck_hs.h>
#include <ck_spinlock.h>

#include "peers.h"
struct cobj {
	uint64_t key; /* first: a lookup's key pointer compares as an object */
	ck_epoch_entry_t entry;
};
struct cmap_hdr { /* ahead of each block ck_hs allocates, for deferred frees */
	ck_epoch_entry_t entry;
	size_t size;
	uint64_t pad;
};
static ck_hs_t c_hs;
static ck_epoch_t c_epoch;
static ck_epoch_record_t c_rec[MAXT];
static ck_spinlock_mcs_t c_lock = CK_SPINLOCK_MCS_INITIALIZER;
static _Thread_local unsigned c_id;
static _Atomic uint64_t c_grows;

static unsigned long c_hf(const void *key, unsigned long seed)
{
	return (unsigned long)bench_mix64(*(const uint64_t *)key ^ seed);
}
static bool c_cmp(const void *a, const void *b)
{
	return *(const uint64_t *)a == *(const uint64_t *)b;
}
static void *c_malloc(size_t r)
{
	struct cmap_hdr *h = malloc(sizeof(*h) + r);
	if (!h)
		return NULL;
	h->size = r;
	return h + 1;
}
static void c_map_free_cb(ck_epoch_entry_t *e)
{
	free(e);
}
static void c_free(void *p, size_t b, bool defer)
{
	(void)b;
	if (!p)
		return;
	struct cmap_hdr *h = (struct cmap_hdr *)p - 1;
	if (defer) {
		atomic_fetch_add(&c_grows, 1);
		ck_epoch_call(&c_rec[c_id], &h->entry, c_map_free_cb);
	} else {
		free(h);
	}
}
static struct ck_malloc c_allocator = {.malloc = c_malloc, .free = c_free};
static void c_obj_free(ck_epoch_entry_t *e)
{
	free((char *)e - offsetof(struct cobj, entry));
}
void hash_ck_init(uint64_t keys, unsigned n)
{
	(void)keys;
	(void)n;
	ck_epoch_init(&c_epoch);
	if (!ck_hs_init(&c_hs, CK_HS_MODE_SPMC | CK_HS_MODE_OBJECT | CK_HS_MODE_DELETE, c_hf, c_cmp,
			&c_allocator, 64, 0x9e3779b9)) {
		fprintf(stderr, WHO ": ck_hs_init failed\n");
		exit(1);
	}
}
void hash_ck_thread(unsigned id)
{
	c_id = id;
	ck_epoch_register(&c_epoch, &c_rec[id], NULL);
}
void hash_ck_thread_fini(unsigned id)
{
	ck_epoch_barrier(&c_rec[id]);
}
bool hash_ck_lookup(unsigned id, uint64_t key)
{
	ck_epoch_begin(&c_rec[id], NULL);
	struct cobj *o = ck_hs_get(&c_hs, CK_HS_HASH(&c_hs, c_hf, &key), &key);
	bool f = o != NULL && o->key == key;
	ck_epoch_end(&c_rec[id], NULL);
	return f;
}
bool hash_ck_insert(unsigned id, uint64_t key)
{
	struct cobj *o = malloc(sizeof(*o));
	o->key = key;
	ck_spinlock_mcs_context_t ctx;
	ck_epoch_begin(&c_rec[id], NULL);
	ck_spinlock_mcs_lock(&c_lock, &ctx);
	bool ok = ck_hs_put(&c_hs, CK_HS_HASH(&c_hs, c_hf, &key), o);
	ck_spinlock_mcs_unlock(&c_lock, &ctx);
	ck_epoch_end(&c_rec[id], NULL);
	if (!ok)
		free(o);
	ck_epoch_poll(&c_rec[id]);
	return ok;
}
bool hash_ck_remove(unsigned id, uint64_t key)
{
	ck_spinlock_mcs_context_t ctx;
	ck_epoch_begin(&c_rec[id], NULL);
	ck_spinlock_mcs_lock(&c_lock, &ctx);
	struct cobj *o = ck_hs_remove(&c_hs, CK_HS_HASH(&c_hs, c_hf, &key), &key);
	/* ck_hs grows by itself and never shrinks: its map stays at its largest size. */
	ck_spinlock_mcs_unlock(&c_lock, &ctx);
	ck_epoch_end(&c_rec[id], NULL);
	if (o)
		ck_epoch_call(&c_rec[id], &o->entry, c_obj_free);
	ck_epoch_poll(&c_rec[id]);
	return o != NULL;
}
uint64_t hash_ck_resizes(void)
{
	return atomic_load(&c_grows);
}
