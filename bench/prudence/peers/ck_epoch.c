/*
 * bench/prudence/peers/ck_epoch.c - the peer "malloc + ck_epoch_call" of `tsync-bench
 * prudence`: glibc malloc, each deferred free a ck_epoch_call whose callback free()s,
 * ck_epoch_poll every PRUDENCE_POLL_EVERY calls, ck_epoch_barrier at a writer's end.
 * Hooks declared in peer.h.
 */
#include <ck_epoch.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

static ck_epoch_t g_epoch;
static ck_epoch_record_t *g_records;
static _Thread_local ck_epoch_record_t *t_rec;
static _Thread_local unsigned t_calls;

static void ck_free_cb(ck_epoch_entry_t *e)
{
	atomic_fetch_add_explicit(&prudence__done, 1, memory_order_relaxed);
	free(e);
}

int prudence_cke_init(size_t size, unsigned n)
{
	(void)size;
	g_records = aligned_alloc(64, (n + 1) * sizeof(ck_epoch_record_t) + 64);
	if (g_records == NULL)
		return -1;
	memset(g_records, 0, (n + 1) * sizeof(ck_epoch_record_t));
	ck_epoch_init(&g_epoch);
	return 0;
}
void prudence_cke_fini(void)
{
	free(g_records);
	g_records = NULL;
}
void prudence_cke_thread_init(unsigned idx)
{
	t_rec = &g_records[idx];
	t_calls = 0;
	ck_epoch_register(&g_epoch, t_rec, NULL);
}
void prudence_cke_thread_fini(void)
{
	ck_epoch_unregister(t_rec);
}
void prudence_cke_free_deferred(void *p)
{
	ck_epoch_call(t_rec, (ck_epoch_entry_t *)p, ck_free_cb);
	if (++t_calls % PRUDENCE_POLL_EVERY == 0)
		ck_epoch_poll(t_rec);
}
void prudence_cke_lock(void)
{
	ck_epoch_begin(t_rec, NULL);
}
void prudence_cke_unlock(void)
{
	ck_epoch_end(t_rec, NULL);
}
void prudence_cke_drain(void)
{
	ck_epoch_barrier(t_rec);
}
