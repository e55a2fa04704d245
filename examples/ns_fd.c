/*
 * examples/ns_fd.c - a file-descriptor table on a ParSec namespace (<tsync/ps_ns.h>).
 *
 * A namespace maps small integers to objects, like a process's fd table maps fds to
 * open files. Every operation but open and close is a lookup, and a lookup stores
 * nothing shared and takes no lock:
 *
 *   open:  f = ps_ns_alloc(tab, &fd); fill *f; ps_ns_publish(tab, f)   (fd now visible)
 *   use:   ps_enter(ps); f = ps_ns_lookup(tab, fd); ... read *f ...; ps_exit(ps)
 *   close: ps_enter(ps); f = ps_ns_lookup(tab, fd);
 *          if (f && ps_lock_take(f, &f->lock)) { ps_ns_free(tab, f); ps_lock_release(...) }
 *          ps_exit(ps)
 *
 * A thread may close an fd while another is using it: the user keeps a valid file until
 * its section ends, and the number is not given to another open before then, so a
 * reader can never see fd bound to a different file mid-use (the classic "close races
 * with read" bug). Two closes of one fd race on the file's lock: ps_ns_free marks the
 * file freed, so the loser's ps_lock_take fails and it reports EBADF.
 *
 * Four threads open, use and close files, and also close each other's fds at random.
 */
#include "example.h" /* POSIX 2008, the C library headers, CHECK */

#include <tsync/ps_ns.h>
#include <tsync/tsync.h>

enum { NTHREADS = 4, OPS = 40000, MAX_OPEN = 16 };

struct file {
	struct ps_lock lock; /* taken only by close */
	uint64_t fd;         /* the number it was opened under (checked by every use) */
	char path[32];
	_Atomic uint64_t pos; /* bytes "read" so far */
};

static struct ps *ps;
static struct ps_ns *fdtab;

/* open: the lowest free fd of this thread's cache (see PS_NS_ID_LOWEST), or -1. */
static int64_t fd_open(const char *path)
{
	uint64_t fd;
	struct file *f = ps_ns_alloc(fdtab, &fd);
	if (!f)
		return -1; /* errno: ENOSPC (the table is full) or ENOMEM */
	ps_lock_init(&f->lock);
	f->fd = fd;
	snprintf(f->path, sizeof f->path, "%s", path);
	atomic_init(&f->pos, 0);
	ps_ns_publish(fdtab, f); /* release: a lookup that finds f sees it filled in */
	return (int64_t)fd;
}

/* read: advance the file position; -1 with EBADF if fd is not open. */
static int64_t fd_read(uint64_t fd, uint64_t n)
{
	ps_enter(ps);
	struct file *f = ps_ns_lookup(fdtab, fd);
	int64_t r = -1;
	if (f) {
		CHECK(f->fd == fd); /* never another file under our fd */
		r = (int64_t)atomic_fetch_add_explicit(&f->pos, n, memory_order_relaxed);
	}
	ps_exit(ps);
	if (r < 0)
		errno = EBADF;
	return r;
}

/* close: 0, or -1 with EBADF if fd is not open (or another close got there first). */
static int fd_close(uint64_t fd)
{
	ps_enter(ps);
	struct file *f = ps_ns_lookup(fdtab, fd);
	bool ok = f && ps_lock_take(f, &f->lock);
	if (ok) {
		ps_ns_free(fdtab, f); /* unbound now; reused after every reader left */
		ps_lock_release(f, &f->lock);
	}
	ps_exit(ps);
	if (!ok)
		errno = EBADF;
	return ok ? 0 : -1;
}

struct worker {
	pthread_t t;
	unsigned seed;
	uint64_t opens, closes, lost_closes, reads, badf;
};

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	uint64_t mine[MAX_OPEN];
	int n = 0;
	for (int i = 0; i < OPS; i++) {
		unsigned r = rnd(&w->seed) % 100;
		if (r < 20 && n < MAX_OPEN) {
			char path[32];
			snprintf(path, sizeof path, "/tmp/file.%u", rnd(&w->seed) % 1000);
			int64_t fd = fd_open(path);
			CHECK(fd >= 0);
			mine[n++] = (uint64_t)fd;
			w->opens++;
		} else if (r < 40 && n > 0) {
			int k = (int)(rnd(&w->seed) % (unsigned)n);
			if (fd_close(mine[k]) == 0)
				w->closes++;
			else
				w->lost_closes++; /* another thread closed it first */
			mine[k] = mine[--n];
		} else if (r < 42) {
			/* close somebody's fd: racing with its owner's reads and close */
			if (fd_close(rnd(&w->seed) % 64) == 0)
				w->closes++;
		} else {
			uint64_t fd = n > 0 && r % 2 ? mine[rnd(&w->seed) % (unsigned)n]
						     : rnd(&w->seed) % 64;
			if (fd_read(fd, 512) >= 0)
				w->reads++;
			else
				w->badf++;
		}
	}
	for (int k = 0; k < n; k++)
		if (fd_close(mine[k]) == 0)
			w->closes++;
	return NULL;
}

int main(void)
{
	ps = ps_create(NULL);
	CHECK(ps != NULL);
	struct ps_ns_config cfg = PS_NS_CONFIG_INIT;
	cfg.id_bits = 16; /* fds 0..65535 */
	fdtab = ps_ns_create(ps, sizeof(struct file), &cfg);
	CHECK(fdtab != NULL);

	struct worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].seed = 7u * (unsigned)i + 1u;
		CHECK(pthread_create(&w[i].t, NULL, worker_main, &w[i]) == 0);
	}
	uint64_t opens = 0, closes = 0, lost = 0, reads = 0, badf = 0;
	for (int i = 0; i < NTHREADS; i++) {
		CHECK(pthread_join(w[i].t, NULL) == 0);
		opens += w[i].opens;
		closes += w[i].closes;
		lost += w[i].lost_closes;
		reads += w[i].reads;
		badf += w[i].badf;
	}

	/* every file was closed exactly once: nothing is open, nothing leaked */
	uint64_t left = 0, fd = 0;
	ps_enter(ps);
	for (fd = 0; ps_ns_next(fdtab, &fd); fd++)
		left++;
	ps_exit(ps);
	struct ps_ns_stats st;
	CHECK(ps_ns_stats(fdtab, &st) == 0);
	CHECK(left == 0 && st.live == 0);
	CHECK(closes == opens && st.frees == opens);
	printf("ns_fd: ok - %d threads: %" PRIu64 " opens, %" PRIu64 " closes (%" PRIu64
	       " lost to a racing close), %" PRIu64 " reads, %" PRIu64 " EBADF; "
	       "%" PRIu64 " fds open at exit\n",
	       NTHREADS, opens, closes, lost, reads, badf, left);
	ps_ns_destroy(fdtab);
	ps_destroy(ps);
	return 0;
}
