/*
 * ds/sets.h - the RLU study's (Appl. Sci. 2022) data structures (§4.1, §4.3) in
 * every mechanism: a sorted singly linked list and a chained hash table of sorted buckets (a list
 * is a table of one bucket), with lookup, insert and delete.
 *
 *   rcu       liburcu urcu-memb readers, one spinlock per list/bucket for writers,
 *             call_rcu to free (the study's kernel-style variant)
 *   rcu-sync  the same with synchronize_rcu before each free (the study's user-level one)
 *   rlu       tsync RLU (<tsync/rlu.h>), hand-over-hand try_lock as in the RLU study Fig. 4
 *   rlu-defer tsync RLU with deferred synchronization (8 write sets per sync)
 *   mvrlu     tsync MV-RLU (<tsync/mvrlu.h>), same code as rlu
 *   ps        ParSec sections, ps_mem nodes, ps_lock per node (hand-over-hand delete):
 *             the lazy list of ds/lazy_list.h, which the stress tests hunt on
 *   rwlock    one pthread rwlock per list/bucket (the blocking baseline)
 *
 * rlu, rlu-defer and mvrlu also offer insert2/remove2: two keys inserted or removed
 * in one section (four pointer updates, possibly in two buckets), all or nothing; and
 * snapshot: every key, read in one section (a consistent cut for those mechanisms).
 *
 * Threads: call thread_init(set) in a thread before its first operation on set and
 * thread_fini(set) after its last; a thread works on one set at a time. Every visited
 * node's magic word is checked: a node that was freed (poisoned) while a reader could
 * still reach it ends the process through set_fail().
 */
#ifndef TSYNC_BENCH_RLU_SETS_H
#define TSYNC_BENCH_RLU_SETS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SET_MAGIC_LIVE 0x1ee71ee71ee71ee7ull

struct set_ops {
	const char *name;
	const char *what;
	void *(*create)(unsigned nbuckets); /* NULL on failure */
	void (*destroy)(void *set);         /* quiescent: no thread uses set */
	void (*thread_init)(void *set);
	void (*thread_fini)(void *set);
	bool (*lookup)(void *set, uint64_t key);
	bool (*insert)(void *set, uint64_t key); /* false: already present */
	bool (*remove)(void *set, uint64_t key); /* false: absent */
	/* Optional (NULL): both keys or neither; false if a is present (insert2) / absent
	 * (remove2) or b is. */
	bool (*insert2)(void *set, uint64_t a, uint64_t b);
	bool (*remove2)(void *set, uint64_t a, uint64_t b);
	/* Keys in bucket order; returns the count (at most max written). Consistent cut
	 * only where insert2 exists; otherwise call it while no thread updates. */
	size_t (*snapshot)(void *set, uint64_t *out, size_t max);
	/* Aborted/retried attempts so far (call after the threads' thread_fini). */
	uint64_t (*aborts)(void *set);
};

extern const struct set_ops set_rcu, set_rcu_sync, set_rlu, set_rlu_defer, set_mvrlu, set_ps,
	set_rwlock;
/* Every mechanism, canonical order; NULL-terminated. */
extern const struct set_ops *const set_all[];
const struct set_ops *set_find(const char *name);

/* Report a corrupted or freed node seen by a reader (prints and aborts). */
_Noreturn void set_fail(const char *mech, const char *why, uint64_t key, uint64_t magic);

static inline unsigned set_bucket(uint64_t key, unsigned nbuckets)
{
	return (unsigned)(key % nbuckets);
}
#endif
