/*
 * tests/ns/stress_ps_ns_claim.c - extent claims that fail on a taken id and give the
 * others back must not make a concurrent ps_ns_alloc_at of those ids fail with EEXIST
 * (<tsync/ps_ns.h>: nobody holds them). Arguments, the tlb hook and the duration:
 * stress_ps_ns.h.
 */
#include "stress_ps_ns.h"

/* ---- phase 3: a failed extent claim must not make alloc_at fail ------------------------
 * A fresh namespace per round: the last id of each of the first P3J extents of 4 is
 * taken, so every claim of one of them by ps_ns_alloc_extent fails on its last id and
 * gives the others back. Meanwhile another thread keeps asking ps_ns_alloc_at for the
 * second id of those extents (and frees what it gets at once): nobody ever holds such
 * an id, so EEXIST ("bound or reserved") is wrong whenever it comes. */
#define P3J 256
static _Atomic int p3_done;
static uint64_t p3_rounds, p3_asks;

static void *p3_extents(void *p)
{
	(void)p;
	for (int i = 0; i < P3J; i++) {
		void *o[4];
		uint64_t b;
		errno = 0;
		if (ps_ns_alloc_extent(p3_ns, 4, &b, o) != 0) {
			if (errno != ENOSPC)
				violation("phase 3: ps_ns_alloc_extent: errno %d", errno);
			break;
		}
		if (b < 4 * P3J)
			violation("phase 3: an extent of 4 at %" PRIu64 ", whose id %" PRIu64
				  " is taken",
				  b, b + 3);
	}
	atomic_store(&p3_done, 1);
	return NULL;
}

/* One round of phase 3 on a fresh namespace. */
static void p3_round(void *arg)
{
	(void)arg;
	p3_ns = make_ns();
	for (uint64_t j = 0; j < P3J; j++) {
		struct sobj *o = ps_ns_alloc_at(p3_ns, 4 * j + 3);
		CHECK_MSG(o != NULL,
			  "phase 3: alloc_at(%" PRIu64 ") in a fresh namespace: "
			  "errno %d",
			  4 * j + 3, errno);
		o->id = 4 * j + 3;
		o->free_epoch = 0;
	}
	atomic_store(&p3_done, 0);
	pthread_t t = test_spawn(p3_extents, NULL); /* one round long */
	while (!atomic_load(&p3_done) && !atomic_load(&violations))
		for (uint64_t j = 0; j < P3J; j++) {
			errno = 0;
			struct sobj *x = ps_ns_alloc_at(p3_ns, 4 * j + 1);
			p3_asks++;
			if (x) {
				x->id = 4 * j + 1;
				x->free_epoch = atomic_load(&epoch);
				ps_ns_free(p3_ns, x);
			} else if (errno == EEXIST) {
				violation("phase 3: ps_ns_alloc_at(%" PRIu64 ") = EEXIST, but "
					  "nobody holds it (an extent claim that failed on "
					  "id %" PRIu64 " reserved it for a moment)",
					  4 * j + 1, 4 * j + 3);
			} else if (errno != EBUSY) {
				violation("phase 3: ps_ns_alloc_at: errno %d", errno);
			}
		}
	test_join(t);
	ps_ns_destroy(p3_ns);
}

static void phase3(double secs)
{
	unsigned saved_bits = bits, saved_order = order;
	bits = 12;
	order = 2;
	p3_rounds = stress_rounds(secs, &violations, p3_round, NULL);
	bits = saved_bits;
	order = saved_order;
	printf("stress_ps_ns phase 3: %" PRIu64 " rounds of broken extent claims against %" PRIu64
	       " alloc_at\n",
	       p3_rounds, p3_asks);
}

int main(int argc, char **argv)
{
	pthread_t flusher;
	double secs = ns_stress_begin(argc, argv, &flusher);
	phase3(secs * 0.15 + 0.1);
	return ns_stress_end(flusher);
}
