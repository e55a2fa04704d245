/*
 * tests/cxx/layout.h - the layout of every struct in the public headers, as one list that
 * a C translation unit (layout.c, compiled as the library is) and a C++ one
 * (test_cxx_ps.cpp) both evaluate: test_cxx_ps compares the two tables entry by entry.
 * A difference means a C++ program and the C library disagree on where a field is (the
 * shim's claim in <tsync/atomic.h>), which no compile-time check inside one language
 * can see. New public structs belong here.
 *
 * TSYNC_CXX_LAYOUT(S, F): S(type) for each struct (its size and alignment), F(type,
 * field) for each field an inline function or a user touches (its offset).
 */
#ifndef TSYNC_TEST_CXX_LAYOUT_H
#define TSYNC_TEST_CXX_LAYOUT_H

#include <stddef.h>
#include <tsync/tsync.h>
/* White-box: the inline tier's structs (ps__slot, ps__chunk, ps__head) are what the inline
 * read path and the library must agree on, so they are listed with the public ones. */
#include <tsync/static/ps.h>

/* A table, one group of entries per line: not for the formatter to pack. */
/* clang-format off */
#define TSYNC_CXX_LAYOUT(S, F)                                                          \
	S(struct ps_config) F(struct ps_config, grace_ns) F(struct ps_config, read_interval_ns) \
	S(struct ps_stats) F(struct ps_stats, fence_switches)                             \
	S(struct ps__slot) F(struct ps__slot, state) F(struct ps__slot, quiesced)         \
	F(struct ps__slot, qcache)                                                        \
	S(struct ps__chunk) F(struct ps__chunk, slot[1])                                  \
	S(struct ps__head) F(struct ps__head, chunks) F(struct ps__head, key)             \
	F(struct ps__head, base) F(struct ps__head, read) F(struct ps__head, clock)       \
	S(struct ps_mem_reclaim_info) S(struct ps_mem_config)                             \
	F(struct ps_mem_config, reclaim_period_ns) F(struct ps_mem_config, grace_fn)     \
	F(struct ps_mem_config, max_bytes) F(struct ps_mem_config, reclaim_mode)         \
	S(struct ps_mem_stats) S(struct ps_reclaimer_config) S(struct ps_reclaimer_stats) \
	S(struct ps_stall)                                                                \
	S(struct ps_kmem_config) F(struct ps_kmem_config, growth_factor)                  \
	F(struct ps_kmem_config, mem)                                                     \
	S(struct ps_lock) F(struct ps_lock, next) F(struct ps_lock, owner)                \
	S(struct ps_ns_config) F(struct ps_ns_config, mem) F(struct ps_ns_config, extent_policy) \
	S(struct ps_ns_stats) S(struct ps_ns__node) F(struct ps_ns__node, slot[3])        \
	S(struct ps_ns__head) F(struct ps_ns__head, nids) F(struct ps_ns__head, height)   \
	S(struct rlu_config) S(struct rlu__thread_head) S(struct rlu_stats)               \
	S(struct mvrlu_config) S(struct mvrlu__thread_head)                               \
	F(struct mvrlu__thread_head, sec_versioned) S(struct mvrlu_stats)                 \
	S(struct oplog_op) F(struct oplog_op, ts) F(struct oplog_op, size)                \
	F(struct oplog_op, kind)                                                          \
	S(struct oplog_type) S(struct oplog_config) S(struct oplog_stats)                 \
	S(struct oplog_object) F(struct oplog_object, hash) F(struct oplog_object, dom)   \
	S(struct oplog__slot) F(struct oplog__slot, owner) F(struct oplog__slot, evicting) \
	F(struct oplog__slot, last_ts)                                                    \
	S(struct oplog__domain_fast) F(struct oplog__domain_fast, slot_stride)            \
	F(struct oplog__domain_fast, mask) F(struct oplog__domain_fast, direct_ok)       \
	S(struct oplog_counter) F(struct oplog_counter, value)                            \
	F(struct oplog_counter, zero_seen) F(struct oplog_counter, released)              \
	S(struct oplog_list_node) F(struct oplog_list_node, pending)                      \
	F(struct oplog_list_node, local)                                                  \
	S(struct oplog_list_op) S(struct oplog_list) F(struct oplog_list, count)          \
	S(struct oplog_rmap_mapping) F(struct oplog_rmap_mapping, end)                    \
	S(struct oplog_rmap) F(struct oplog_rmap, count)
/* clang-format on */

/* One entry per S (two: size, alignment) and per F (one: offset). */
struct tsync_cxx_layout_entry {
	const char *what;
	size_t value;
};

#ifdef __cplusplus
extern "C" {
#endif
/* The table as the C compiler sees it: fills at most n entries, returns how many. */
size_t tsync_cxx_layout_c(struct tsync_cxx_layout_entry *out, size_t n);
#ifdef __cplusplus
}
#endif

/* The body of both tables (the same text in both languages). */
#define TSYNC_CXX_LAYOUT_S_(T)                         \
	if (i + 2 <= n) {                              \
		out[i].what = "sizeof(" #T ")";        \
		out[i++].value = sizeof(T);            \
		out[i].what = "alignof(" #T ")";       \
		out[i++].value = TSYNC_CXX_ALIGNOF(T); \
	}
#define TSYNC_CXX_LAYOUT_F_(T, f)                         \
	if (i < n) {                                      \
		out[i].what = "offsetof(" #T ", " #f ")"; \
		out[i++].value = offsetof(T, f);          \
	}
#ifdef __cplusplus
#define TSYNC_CXX_ALIGNOF(T) alignof(T)
#else
#define TSYNC_CXX_ALIGNOF(T) _Alignof(T)
#endif

#endif /* TSYNC_TEST_CXX_LAYOUT_H */
