/*
 * apps/vmdb/tests/vmdb_test.h - helpers shared by the vmdb tests: argument parsing
 * (sync mode, backend), a configuration helper, the stress tests' start, and the
 * whole-database scan that checks the structural invariants of vmdb.h at a quiescent
 * point:
 *
 *  - every mapping found by vmdb_lookup_mapping names itself (out.pid/out.vaddr are the
 *    pid/vaddr looked up);
 *  - a root (depth 0) has parent_pid -1; every other mapping's parent is mapped, maps the
 *    same frame, and is one level shallower (so a removed subtree left no orphan);
 *  - each frame has exactly one root mapping;
 *  - vmdb_stats: mappings equals the mappings found and frames_live the distinct frames
 *    found (only when every live space is scanned and nothing runs concurrently).
 *
 * Everything is static inline: each test is one translation unit (tests/common/check.h).
 */
#ifndef TSYNC_VMDB_TEST_H
#define TSYNC_VMDB_TEST_H

#include "check.h"
#include "vmdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a released page, frame or pid may take to come back (quiescence, and with
 * tlb_period_ns the flusher thread) or the flusher thread to advance, before that counts as
 * a hang: a loaded machine may not run the threads involved for a while, so this is a
 * watchdog with a message, not a deadline; it stays well inside each program's watchdog. */
#define EVENTUALLY_S 30
#define EVENTUALLY_NS (EVENTUALLY_S * 1000000000ull)

static inline int vt_parse_sync(const char *s)
{
	if (strcmp(s, "ps") == 0)
		return VMDB_SYNC_PS;
	if (strcmp(s, "global") == 0)
		return VMDB_SYNC_GLOBAL;
	if (strcmp(s, "frame") == 0)
		return VMDB_SYNC_FRAME;
	if (strcmp(s, "rwlock") == 0)
		return VMDB_SYNC_RWLOCK;
	if (strcmp(s, "frame-ticket") == 0)
		return VMDB_SYNC_FRAME_TICKET;
	test_fail_(__FILE__, __LINE__,
		   "unknown sync mode '%s' (ps|global|frame|rwlock|frame-ticket)", s);
}

static inline int vt_parse_backend(const char *s)
{
	if (strcmp(s, "model") == 0)
		return VMDB_BACKEND_MODEL;
	if (strcmp(s, "memfd") == 0)
		return VMDB_BACKEND_MEMFD;
	test_fail_(__FILE__, __LINE__, "unknown backend '%s' (model|memfd)", s);
}

/* The start of a stress test: the run length in *secs (TSYNC_STRESS_SECONDS, else 3 s)
 * with its watchdog, and a default configuration of the named sync variant and backend. */
static inline struct vmdb_config vt_stress_begin(const char *sync, const char *backend,
						 double *secs)
{
	*secs = test_stress_seconds(3);
	test_watchdog((unsigned)(*secs * 10) + 120);
	struct vmdb_config c = VMDB_CONFIG_INIT;
	c.sync = vt_parse_sync(sync);
	c.backend = vt_parse_backend(backend);
	return c;
}

static inline const char *vt_sync_name(int s)
{
	static const char *const names[] = {"ps", "global", "frame", "rwlock", "frame-ticket"};
	return s >= 0 && s < (int)(sizeof names / sizeof names[0]) ? names[s] : "?";
}

static inline const char *vt_backend_name(int b)
{
	return b == VMDB_BACKEND_MODEL ? "model" : b == VMDB_BACKEND_MEMFD ? "memfd" : "?";
}

static inline struct vmdb *vt_create(const struct vmdb_config *cfg)
{
	errno = 0;
	struct vmdb *db = vmdb_create(cfg);
	CHECK_MSG(db != NULL, "vmdb_create(sync %s backend %s va_bits %u frame_bits %u): %s",
		  vt_sync_name(cfg->sync), vt_backend_name(cfg->backend), cfg->va_bits,
		  cfg->frame_bits, strerror(errno));
	return db;
}

static inline int vt_space(struct vmdb *db)
{
	int pid = -1;
	errno = 0;
	int rc = vmdb_space_create(db, &pid);
	CHECK_MSG(rc == 0, "vmdb_space_create: rc %d errno %s", rc, strerror(errno));
	CHECK(pid >= 0);
	return pid;
}

static inline vmdb_vaddr_t vt_grant(struct vmdb *db, int pid, size_t n)
{
	vmdb_vaddr_t v = 0xdeadbeef;
	errno = 0;
	int rc = vmdb_grant(db, pid, n, &v);
	CHECK_MSG(rc == 0, "vmdb_grant(pid %d, %zu): rc %d errno %s", pid, n, rc, strerror(errno));
	return v;
}

static inline vmdb_vaddr_t vt_alias(struct vmdb *db, int from, vmdb_vaddr_t mapfrom, int to,
				    vmdb_vaddr_t mapto, size_t n)
{
	vmdb_vaddr_t d = mapto;
	errno = 0;
	int rc = vmdb_alias(db, from, mapfrom, to, &d, n);
	CHECK_MSG(rc == 0, "vmdb_alias(%d:%" PRIu64 " -> %d:%" PRId64 ", %zu): rc %d errno %s",
		  from, mapfrom, to, mapto == VMDB_ANY ? (int64_t)-1 : (int64_t)mapto, n, rc,
		  strerror(errno));
	if (mapto != VMDB_ANY)
		CHECK_EQ(d, mapto);
	return d;
}

static inline struct vmdb_mapping vt_lookup(struct vmdb *db, int pid, vmdb_vaddr_t v)
{
	struct vmdb_mapping m;
	memset(&m, 0xa5, sizeof m);
	errno = 0;
	int rc = vmdb_lookup_mapping(db, pid, v, &m);
	CHECK_MSG(rc == 0, "vmdb_lookup_mapping(%d, %" PRIu64 "): rc %d errno %s", pid, v, rc,
		  strerror(errno));
	CHECK_EQ_I(m.pid, pid);
	CHECK_EQ(m.vaddr, v);
	vmdb_frame_t f = 0xabcdef;
	CHECK_EQ_I(vmdb_lookup(db, pid, v, &f), 0);
	CHECK_EQ(f, m.frame);
	return m;
}

/* The page is not mapped: both lookups fail with ENOENT. */
#define VT_UNMAPPED(db, pid, v)                                                         \
	do {                                                                            \
		struct vmdb_mapping vt_m_;                                              \
		vmdb_frame_t vt_f_;                                                     \
		CHECK_ERRNO(vmdb_lookup_mapping((db), (pid), (v), &vt_m_), -1, ENOENT); \
		CHECK_ERRNO(vmdb_lookup((db), (pid), (v), &vt_f_), -1, ENOENT);         \
	} while (0)

static inline struct vmdb_stats vt_stats(struct vmdb *db)
{
	struct vmdb_stats s;
	memset(&s, 0xff, sizeof s);
	CHECK_EQ_I(vmdb_stats(db, &s), 0);
	return s;
}

/* ---- the scan ---------------------------------------------------------------------- */
struct vt_map {
	int pid;
	vmdb_vaddr_t vaddr;
	struct vmdb_mapping m;
};

struct vt_scan {
	struct vt_map *v;
	size_t n, cap;
	size_t frames; /* distinct frames */
	size_t roots;
};

static inline int vt_map_cmp(const void *a, const void *b)
{
	const struct vt_map *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr ? 1 : 0;
}

static inline int vt_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y ? 1 : 0;
}

static inline const struct vt_map *vt_scan_find(const struct vt_scan *s, int pid, vmdb_vaddr_t v)
{
	struct vt_map key;
	key.pid = pid;
	key.vaddr = v;
	if (s->n == 0) /* an empty scan has no array (bsearch wants one) */
		return NULL;
	return bsearch(&key, s->v, s->n, sizeof *s->v, vt_map_cmp);
}

static inline void vt_scan_free(struct vt_scan *s)
{
	free(s->v);
	memset(s, 0, sizeof *s);
}

/*
 * Look every page [0, npages) of every pid up and check the structural invariants
 * (above). Returns the scan (sorted by pid, vaddr). Not the stats: vt_check_stats.
 */
static inline void vt_scan_spaces(struct vmdb *db, const int *pids, size_t npids, uint64_t npages,
				  struct vt_scan *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < npids; i++) {
		for (uint64_t v = 0; v < npages; v++) {
			struct vmdb_mapping m;
			errno = 0;
			int rc = vmdb_lookup_mapping(db, pids[i], v, &m);
			if (rc != 0) {
				CHECK_MSG(rc == -1 && errno == ENOENT,
					  "scan: lookup_mapping(%d, %" PRIu64 "): rc %d errno %s",
					  pids[i], v, rc, strerror(errno));
				continue;
			}
			CHECK_MSG(m.pid == pids[i] && m.vaddr == v,
				  "scan: lookup_mapping(%d, %" PRIu64
				  ") reports pid %d vaddr %" PRIu64,
				  pids[i], v, m.pid, m.vaddr);
			if (s->n == s->cap) {
				s->cap = s->cap ? 2 * s->cap : 256;
				s->v = realloc(s->v, s->cap * sizeof *s->v);
				CHECK(s->v != NULL);
			}
			s->v[s->n].pid = pids[i];
			s->v[s->n].vaddr = v;
			s->v[s->n].m = m;
			s->n++;
		}
	}
	if (s->n > 1)
		qsort(s->v, s->n, sizeof *s->v, vt_map_cmp);
	uint64_t *fr = malloc((s->n + 1) * sizeof *fr);
	CHECK(fr != NULL);
	size_t nroots = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct vt_map *x = &s->v[i];
		if (x->m.depth == 0) {
			CHECK_MSG(x->m.parent_pid == -1,
				  "scan: root %d:%" PRIu64 " (depth 0) has parent %d:%" PRIu64,
				  x->pid, x->vaddr, x->m.parent_pid, x->m.parent_vaddr);
			fr[nroots++] = x->m.frame;
			continue;
		}
		CHECK_MSG(x->m.parent_pid != -1, "scan: %d:%" PRIu64 " at depth %u has no parent",
			  x->pid, x->vaddr, x->m.depth);
		const struct vt_map *p = vt_scan_find(s, x->m.parent_pid, x->m.parent_vaddr);
		CHECK_MSG(p != NULL,
			  "scan: orphan: %d:%" PRIu64 " (frame %" PRIu64
			  ", depth %u) has parent %d:%" PRIu64 " which is not mapped",
			  x->pid, x->vaddr, x->m.frame, x->m.depth, x->m.parent_pid,
			  x->m.parent_vaddr);
		CHECK_MSG(p->m.frame == x->m.frame,
			  "scan: %d:%" PRIu64 " maps frame %" PRIu64 " but its parent %d:%" PRIu64
			  " maps frame %" PRIu64,
			  x->pid, x->vaddr, x->m.frame, p->pid, p->vaddr, p->m.frame);
		CHECK_MSG(p->m.depth + 1 == x->m.depth,
			  "scan: %d:%" PRIu64 " depth %u, parent %d:%" PRIu64 " depth %u", x->pid,
			  x->vaddr, x->m.depth, p->pid, p->vaddr, p->m.depth);
	}
	s->roots = nroots;
	if (nroots > 1)
		qsort(fr, nroots, sizeof *fr, vt_u64_cmp);
	for (size_t i = 1; i < nroots; i++)
		CHECK_MSG(fr[i] != fr[i - 1], "scan: frame %" PRIu64 " has two root mappings",
			  fr[i]);
	/* every mapping's frame has a root (follows from the parent chain, checked anyway) */
	for (size_t i = 0; i < s->n; i++) {
		uint64_t f = s->v[i].m.frame;
		CHECK_MSG(nroots > 0 && bsearch(&f, fr, nroots, sizeof *fr, vt_u64_cmp) != NULL,
			  "scan: %d:%" PRIu64 " maps frame %" PRIu64 " which has no root mapping",
			  s->v[i].pid, s->v[i].vaddr, f);
	}
	s->frames = nroots;
	free(fr);
}

/* The stats agree with a scan of every live space (quiescent database). */
static inline void vt_check_stats(struct vmdb *db, const struct vt_scan *s, size_t nspaces)
{
	struct vmdb_stats st = vt_stats(db);
	CHECK_MSG(st.mappings == s->n, "stats.mappings %" PRIu64 " but %zu mappings found",
		  st.mappings, s->n);
	CHECK_MSG(st.frames_live == s->frames,
		  "stats.frames_live %" PRIu64 " but %zu distinct frames found", st.frames_live,
		  s->frames);
	CHECK_MSG(st.spaces == nspaces, "stats.spaces %" PRIu64 " but %zu spaces are alive",
		  st.spaces, nspaces);
	CHECK_MSG(st.pages_live >= s->n, "stats.pages_live %" PRIu64 " < %zu mappings",
		  st.pages_live, s->n);
	CHECK_LE(st.tlb_epoch, vmdb_tlb_epoch(db)); /* a flusher may run */
}

/* Scan, check the invariants and the stats, return the number of mappings. */
static inline size_t vt_check_all(struct vmdb *db, const int *pids, size_t npids, uint64_t npages)
{
	struct vt_scan s;
	vt_scan_spaces(db, pids, npids, npages, &s);
	vt_check_stats(db, &s, npids);
	size_t n = s.n;
	vt_scan_free(&s);
	return n;
}

#endif /* TSYNC_VMDB_TEST_H */
