/*
 * tsync/ps_hash.h - a resizable concurrent hash table of user objects on ParSec sections
 * (ParSec (EuroSys 2016) §2.2-§3.5; the resize is the relativistic one of Triplett,
 * McKenney and Walpole, "Resizable, Scalable, Concurrent Hash Tables via Relativistic
 * Programming", USENIX ATC 2011, in its two-table form; docs/hash.md gives the design and
 * the argument).
 *
 * Objects embed a struct ps_hash_node (intrusive, like liburcu's cds_lfht_node). Keys
 * are any bytes: either a fixed-size key stored in the object at a fixed offset from its
 * node (cfg->key_size > 0: the table hashes and compares the bytes itself; 8-byte keys
 * compare as one word), or a key the user describes, with cfg->hash and cfg->match.
 *
 * Layout. A bucket array of pointers to singly linked chains, and cfg-fixed stripes of
 * writer locks (struct ps_lock, tsync's FIFO ticket lock): stripe s guards every bucket
 * whose index is s modulo the number of stripes, in every bucket array in use, so one
 * lock covers a key's chain in the old and the new array during a resize.
 *
 * Readers (ps_hash_lookup, ps_hash_foreach outside a resize) run inside a section of the
 * table's ps and store nothing: they load the current array, the array being migrated
 * from (if any), and follow chain links with acquire loads. Writers take the key's
 * stripe lock, edit chains with release stores, and retire what they unlink through the
 * table's reclamation mode (ps_free, ps_call, or the caller).
 *
 * Resize (both ways, automatic at load-factor thresholds and on request) allocates a new
 * array, publishes it with a pointer to the old one, waits - by polling ps_quiesce from
 * writers' calls, never by blocking a reader or a writer - until every section that could
 * have loaded only the old array has ended, then migrates the old chains bucket by
 * bucket, tail first, each node linked into the new array before it is unlinked from the
 * old; writers migrate PS_HASH_HELP_BUCKETS buckets per update, and the last one retires
 * the old array with ps_call. Lookups search the old chain and then the new one.
 *
 * Threads: any thread may call any function; the functions enter sections of the
 * table's ps themselves where they need one (sections nest).
 */
#ifndef TSYNC_PS_HASH_H
#define TSYNC_PS_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tsync/ps.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ps_hash;

/* Embed one in every object the table holds. Its fields belong to the table from an
 * insert until the object's retirement (its grace period) is over. */
struct ps_hash_node {
	TSYNC_ATOMIC(struct ps_hash_node *) next; /* chain link */
	uint64_t hash;                            /* the key's hash, set by the insert */
};

/* A user key's hash (cfg->key_size == 0): any 64-bit function of the key's bytes; the
 * table uses its low bits for the bucket, so mix them (ps_hash_bytes does). */
typedef uint64_t (*ps_hash_hash_fn)(const void *key, void *arg);
/* Does node's object have key? (cfg->key_size == 0). Called only for nodes whose stored
 * hash equals the key's, inside a section, possibly on a node being deleted or replaced
 * concurrently (its object stays valid until the section ends): read, do not write. */
typedef bool (*ps_hash_match_fn)(const struct ps_hash_node *node, const void *key, void *arg);
/* ps_hash_foreach's visitor: return false to stop the walk. */
typedef bool (*ps_hash_visit_fn)(struct ps_hash_node *node, void *arg);

/*
 * What happens to a node the table unlinks (delete, replace, lookup-then-delete).
 *  PS_FREE  ps_free(ps_mem_of(obj), obj) with obj = (char *)node - cfg->node_offset: for
 *           objects from a ps_mem or ps_kmem whose ps is the table's ps (ParSec
 *           (EuroSys 2016) §3.4). The default.
 *  CALL     ps_call(ps, (struct ps_head *)((char *)node + cfg->head_offset),
 *           cfg->call_fn): for objects from anywhere (malloc, a pool); the object embeds
 *           a struct ps_head that is not the node.
 *  NONE     nothing: the caller retires the node returned to it (ps_hash_replace,
 *           ps_hash_delete_key; ps_hash_delete's caller holds it already) after unlinking,
 *           with a grace period of the table's ps.
 */
enum ps_hash_reclaim {
	PS_HASH_RECLAIM_PS_FREE = 0,
	PS_HASH_RECLAIM_CALL = 1,
	PS_HASH_RECLAIM_NONE = 2,
};

/* Configuration for ps_hash_create(). Zero-initialise, set size = sizeof(struct
 * ps_hash_config), then set what you need; PS_HASH_CONFIG_INIT gives the defaults. */
struct ps_hash_config {
	size_t size;            /* sizeof(struct ps_hash_config) */
	size_t key_size;        /* > 0: fixed-size keys of this many bytes at key_offset
				 * from the node; hash and match are then the table's own */
	ptrdiff_t key_offset;   /* key_size > 0: the key's offset from the node, bytes */
	ps_hash_hash_fn hash;   /* key_size == 0: the key's hash (required) */
	ps_hash_match_fn match; /* key_size == 0: the comparison (required) */
	void *arg;              /* passed to hash and match */
	int reclaim;            /* enum ps_hash_reclaim */
	size_t node_offset;     /* PS_FREE: the node's offset in its object, bytes */
	ptrdiff_t head_offset;  /* CALL: the struct ps_head's offset from the node, bytes */
	void (*call_fn)(struct ps_head *head); /* CALL: the callback */
	size_t min_buckets;     /* a power of two >= 16, the smallest array (0: 64); also
				 * the number of stripes, up to PS_HASH_MAX_STRIPES */
	size_t initial_buckets; /* the first array, rounded up to a power of two and at
				 * least min_buckets (0: min_buckets) */
	bool no_auto_resize;    /* true: only ps_hash_resize changes the array */
	/* Bucket-array allocator (CK's ck_malloc idea): NULL means malloc/free. alloc returns
	 * bytes of memory, aligned as malloc's, or NULL; the table writes every bucket
	 * before it publishes an array, so the memory need not be zeroed. Its failure during a
	 * resize leaves the table as it was (ps_hash_resize: ENOMEM). */
	void *(*alloc)(size_t bytes, void *alloc_arg);
	void (*free)(void *p, size_t bytes, void *alloc_arg);
	void *alloc_arg;
};
#define PS_HASH_CONFIG_INIT                                                                        \
	{                                                                                          \
		sizeof(struct ps_hash_config), 0, 0, NULL, NULL, NULL, PS_HASH_RECLAIM_PS_FREE, 0, \
			0, NULL, 0, 0, false, NULL, NULL, NULL                                     \
	}

/* Stripes (writer locks) at most; a table has min(min_buckets, this). */
#define PS_HASH_MAX_STRIPES 64u
/* Buckets a writer migrates per update while a resize is migrating. */
#define PS_HASH_HELP_BUCKETS 32u
/* Automatic resize: grow when the table holds more than buckets * 1 nodes, shrink (not
 * below min_buckets) when fewer than buckets / 8; the new array has the smallest power
 * of two of buckets >= 2 * nodes (load factor in (1/4, 1/2] after the resize). The count
 * the thresholds see is exact up to buckets / 16 (per-stripe batches, docs/hash.md). */
#define PS_HASH_GROW_LOAD 1u
#define PS_HASH_SHRINK_DIV 8u

/*
 * ps_hash_create - a new, empty table on ps.
 *
 * Arguments:  ps: the parallel-section domain its readers use (outlives the table).
 *             cfg: as struct ps_hash_config documents.
 * Returns:    the table; NULL with errno = EINVAL (cfg NULL or bad size, key_size 0
 *             without hash or match, min_buckets not a power of two >= 16, unknown
 *             reclaim mode, CALL without call_fn, only one of alloc/free) or ENOMEM.
 * Progress:   blocking (allocates).
 * Caller:     any thread.
 * Implements: ParSec (EuroSys 2016) §2.2 (sections protect the chains).
 */
struct ps_hash *ps_hash_create(struct ps *ps, const struct ps_hash_config *cfg);

/*
 * ps_hash_destroy - free the table (not the nodes still in it: walk them first with
 * ps_hash_foreach if they must be freed).
 *
 * Progress:   blocking: ps_barrier(ps) first, so that every bucket array the table
 *             retired with ps_call is freed (runs other callbacks of ps too).
 * Caller:     any thread outside every section of ps, once no other thread uses the table.
 * Implements: -
 */
void ps_hash_destroy(struct ps_hash *h);

/*
 * ps_hash_lookup - a node whose key is key.
 *
 * Returns:    such a node, or NULL; if several nodes have key, any one of them. Valid
 *             until the caller's section ends.
 * Progress:   wait-free, never blocked by a writer or a resize: at most three chains'
 *             worth of links (docs/hash.md §3); no store to shared memory.
 * Ordering:   acquire: the stores that initialised a node before the insert that
 *             published it happen-before the return. Linearisable per key with the
 *             updates (docs/hash.md §4): a node present for the whole call is found.
 * Caller:     any thread inside a section of the table's ps.
 * Implements: ParSec (EuroSys 2016) §2.2 (lookups in sections, no synchronisation with
 *             updaters); relativistic readers: Triplett et al. (USENIX ATC 2011) §3.
 */
struct ps_hash_node *ps_hash_lookup(struct ps_hash *h, const void *key);

/*
 * ps_hash_insert, ps_hash_insert_unique - add node, with key key.
 *
 * Arguments:  node: initialised (its key included) and in no table; key: the node's key
 *             (fixed-size keys: may point at the node's own copy).
 * Returns:    ps_hash_insert: 0 (duplicate keys allowed). ps_hash_insert_unique: NULL if
 *             node was inserted, else the node already holding key (valid until the
 *             caller's section ends). A node already in the table aborts.
 * Progress:   blocking: takes the key's stripe lock (FIFO) and walks the key's chain(s);
 *             then at most one bounded help step of a resize (docs/design.md §9.8).
 * Ordering:   release: the caller's stores to the object happen-before a lookup that
 *             finds it. Linearisation point: the store that links node.
 * Caller:     any thread, inside or outside a section of the table's ps.
 * Implements: ParSec (EuroSys 2016) §3.5 (locks for writers, sections for readers).
 */
int ps_hash_insert(struct ps_hash *h, struct ps_hash_node *node, const void *key);
struct ps_hash_node *ps_hash_insert_unique(struct ps_hash *h, struct ps_hash_node *node,
					   const void *key);

/*
 * ps_hash_replace - insert node, or replace the node holding key with it, atomically.
 *
 * Returns:    the node replaced (retired as cfg->reclaim says: under PS_FREE and CALL it
 *             may be read until the caller's section ends, never written), or NULL if no
 *             node held key and node was inserted. Replacing a node by itself (node
 *             already in the table) aborts with a one-line diagnostic.
 * Progress:   as ps_hash_insert.
 * Ordering:   as ps_hash_insert; a lookup of key concurrent with the replace finds the
 *             old node or the new one, never neither (one store swaps them).
 * Caller:     any thread, inside or outside a section.
 * Implements: ParSec (EuroSys 2016) §3.5; Triplett et al. (USENIX ATC 2011) §3 (the
 *             one-store swap).
 */
struct ps_hash_node *ps_hash_replace(struct ps_hash *h, struct ps_hash_node *node, const void *key);

/*
 * ps_hash_delete - unlink node and retire it (cfg->reclaim).
 *
 * Arguments:  node: a node the caller found (by lookup, inside a section) or owns.
 * Returns:    0; or -1 with errno = ENOENT if node is not in the table (never inserted,
 *             or already deleted or replaced: of two concurrent deletes of one node,
 *             exactly one returns 0). Nothing is retired on -1.
 * Progress:   as ps_hash_insert (the lock, a walk of the chain(s) for node, one help
 *             step; a delete may start a shrink).
 * Ordering:   release store of the unlink: a lookup that begins after it does not find
 *             node. Linearisation point: that store.
 * Caller:     any thread; inside a section if node was found by a lookup (so that it
 *             cannot be freed under the caller).
 * Implements: ParSec (EuroSys 2016) §3.5 (unlink, then ps_free).
 */
int ps_hash_delete(struct ps_hash *h, struct ps_hash_node *node);

/*
 * ps_hash_delete_key - lookup-then-delete: unlink a node with key, atomically.
 *
 * Returns:    the node unlinked (retired as cfg->reclaim says; readable until the
 *             caller's section ends), or NULL if no node had key.
 * Progress, Ordering, Caller: as ps_hash_delete.
 * Implements: ParSec (EuroSys 2016) §3.5.
 */
struct ps_hash_node *ps_hash_delete_key(struct ps_hash *h, const void *key);

/*
 * ps_hash_foreach - visit nodes of the table: every node present for the whole walk
 * exactly once, a node inserted, deleted or replaced during it at most once per
 * incarnation (docs/hash.md §5). visit must not update h nor call ps_hash_resize.
 *
 * Returns:    the number of nodes visited.
 * Progress:   lock-free (no store) when no resize is migrating; while one is, it takes
 *             each stripe lock in turn for that stripe's chains (blocking, bounded by
 *             the writers queued there). O(buckets + nodes); never waits for a resize.
 * Ordering:   as ps_hash_lookup for every node visited.
 * Caller:     any thread inside a section of the table's ps.
 * Implements: Triplett et al. (USENIX ATC 2011) §3 (readers traverse while the table
 *             resizes); the per-stripe walk during migration is tsync's (docs/hash.md §5).
 */
size_t ps_hash_foreach(struct ps_hash *h, ps_hash_visit_fn visit, void *arg);

/*
 * ps_hash_resize - resize to nbuckets now, and wait until the resize is over.
 *
 * Arguments:  nbuckets: rounded up to a power of two and to at least min_buckets; 0:
 *             what the automatic policy wants now (grow, shrink or keep).
 * Returns:    0 once the table has that many buckets and no resize in progress; -1 with
 *             errno = ENOMEM (the table is left as it was) or ERANGE (nbuckets > 2^40).
 * Progress:   blocking: finishes a resize in progress, polls ps_quiesce for the grace
 *             period (no reader or writer waits for it), migrates what is left under
 *             stripe locks, waits for helpers (docs/hash.md §3).
 * Ordering:   every node present at the call is in the new array at the return.
 * Caller:     any thread outside every section of the table's ps (else it aborts).
 * Implements: Triplett et al. (USENIX ATC 2011) §3, as a two-array migration.
 */
int ps_hash_resize(struct ps_hash *h, size_t nbuckets);

/*
 * ps_hash_poll - drive a resize in progress: one help step (as an update makes).
 *
 * Returns:    true if a resize is still in progress after the step.
 * Progress:   as one update's help step; never waits.
 * Caller:     any thread (outside a section, so that the grace period can be proven).
 * Implements: -
 */
bool ps_hash_poll(struct ps_hash *h);

/* Counters of a table. */
struct ps_hash_stats {
	uint64_t count;           /* nodes in the table (exact once updates are quiet) */
	uint64_t buckets;         /* buckets of the current array */
	uint64_t resizes;         /* resizes completed, count */
	uint64_t grows, shrinks;  /* ... of which growths, shrinks, count */
	uint64_t resize_failures; /* resizes that could not allocate their array, count */
	bool resizing;            /* a resize is in progress */
};
/*
 * ps_hash_stats - a snapshot of h's counters.
 *
 * Returns:    0, or -1 with errno = EINVAL (h or out NULL).
 * Progress:   wait-free: O(stripes) loads.
 * Caller:     any thread.
 * Implements: instrumentation.
 */
int ps_hash_stats(struct ps_hash *h, struct ps_hash_stats *out);

/*
 * ps_hash_bytes - the table's own hash of n bytes (the fixed-size-key hash), for users'
 * cfg->hash: 64-bit, with well-mixed low bits.
 *
 * Progress:   wait-free, O(n).
 * Caller:     any thread.
 * Implements: -
 */
uint64_t ps_hash_bytes(const void *p, size_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* TSYNC_PS_HASH_H */
