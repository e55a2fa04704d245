/*
 * examples/worker_pool.c - a pool of threads that come and go, and a fork in the middle.
 *
 * A shared array of counters, each a ps_mem object that workers replace (copy, bump,
 * publish, ps_free the old one) and read inside parallel sections. Workers are started
 * in waves and exit without unregistering: tsync hands their queues and caches back as
 * they exit. While a wave is running - workers inside sections and in the middle of
 * frees - the main thread forks: the child (which has only the forking thread) reads
 * and updates the same structure, waits for grace periods, starts its own workers, and
 * exits; the parent goes on. The program checks every total and exits non-zero on a
 * mismatch.
 *
 *   cc -std=c11 worker_pool.c $(pkg-config --cflags --libs tsync) -pthread
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tsync/tsync.h>

#define SLOTS 16
#define WAVES 6
#define PER_WAVE 3
#define BUMPS 3000

struct counter {
	uint64_t value;
	uint64_t check; /* ~value: a reader seeing a reused object would notice */
};

static struct ps *ps;
static struct ps_mem *mem;
static struct counter *_Atomic slot[SLOTS];
static pthread_mutex_t slot_lock[SLOTS];
static atomic_ulong bad_reads;

static void bump(unsigned i)
{
	struct counter *c = ps_alloc(mem);
	if (c == NULL) {
		perror("ps_alloc");
		exit(1);
	}
	pthread_mutex_lock(&slot_lock[i]);
	struct counter *old = atomic_load_explicit(&slot[i], memory_order_relaxed);
	c->value = old->value + 1;
	c->check = ~c->value;
	atomic_store_explicit(&slot[i], c, memory_order_release);
	pthread_mutex_unlock(&slot_lock[i]);
	ps_free(mem, old); /* reused only after every section that could see it */
}

static uint64_t read_total(void)
{
	uint64_t sum = 0;
	ps_enter(ps);
	for (unsigned i = 0; i < SLOTS; i++) {
		struct counter *c = atomic_load_explicit(&slot[i], memory_order_acquire);
		if (c->check != ~c->value)
			atomic_fetch_add(&bad_reads, 1);
		sum += c->value;
	}
	ps_exit(ps);
	return sum;
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int n = 0; n < BUMPS; n++) {
		seed = seed * 1103515245u + 12345u;
		bump((seed >> 16) % SLOTS);
		if (n % 8 == 0)
			(void)read_total();
	}
	return NULL; /* exits still registered: tsync cleans up after it */
}

static void run_wave(unsigned wave)
{
	pthread_t t[PER_WAVE];
	for (unsigned i = 0; i < PER_WAVE; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(wave * 100 + i + 1));
	for (unsigned i = 0; i < PER_WAVE; i++)
		pthread_join(t[i], NULL);
}

/* The child: one thread, the same structure; its own wave of workers. */
static int child(uint64_t at_least)
{
	alarm(60);
	uint64_t before = read_total();
	if (before < at_least)
		return 2;
	ps_synchronize(ps); /* the parent's workers do not exist here: nothing to wait for */
	for (unsigned i = 0; i < SLOTS; i++)
		bump(i);
	run_wave(99);
	ps_synchronize(ps);
	ps_mem_reclaim(mem);
	uint64_t after = read_total();
	printf("child: %u registered thread(s), total %llu -> %llu\n", tsync_thread_count(),
	       (unsigned long long)before, (unsigned long long)after);
	return after == before + SLOTS + (uint64_t)PER_WAVE * BUMPS && atomic_load(&bad_reads) == 0
		       ? 0
		       : 3;
}

int main(void)
{
	ps = ps_create(NULL);
	mem = ps ? ps_mem_create(ps, sizeof(struct counter), NULL) : NULL;
	if (mem == NULL) {
		perror("ps_create/ps_mem_create");
		return 1;
	}
	for (unsigned i = 0; i < SLOTS; i++) {
		pthread_mutex_init(&slot_lock[i], NULL);
		struct counter *c = ps_alloc(mem);
		c->value = 0;
		c->check = ~0ull;
		atomic_store(&slot[i], c);
	}
	int child_status = -1;
	for (unsigned w = 0; w < WAVES; w++) {
		if (w != WAVES / 2) {
			run_wave(w);
			continue;
		}
		/* fork while this wave's workers are running */
		pthread_t t[PER_WAVE];
		uint64_t before = read_total(), seen; /* read before they start: they bump it */
		for (unsigned i = 0; i < PER_WAVE; i++)
			pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(w * 100 + i + 1));
		/* ... once they are under way (in sections and freeing); on a loaded machine
		 * they may even be done, which the total then shows, so this loop ends */
		while ((seen = read_total()) < before + 100)
			sched_yield();
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			int rc = child(seen);
			fflush(stdout);
			_exit(rc);
		}
		for (unsigned i = 0; i < PER_WAVE; i++)
			pthread_join(t[i], NULL);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid) {
			perror("fork/waitpid");
			return 1;
		}
		child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	uint64_t total = read_total();
	struct ps_mem_stats st;
	ps_mem_stats(mem, &st);
	printf("worker_pool: %u waves of %u threads, total %llu (expected %llu), child exit %d, "
	       "%llu objects pending, %u registered thread(s), %lu bad reads\n",
	       WAVES, PER_WAVE, (unsigned long long)total,
	       (unsigned long long)WAVES * PER_WAVE * BUMPS, child_status,
	       (unsigned long long)st.pending, tsync_thread_count(),
	       (unsigned long)atomic_load(&bad_reads));
	int ok = total == (uint64_t)WAVES * PER_WAVE * BUMPS && child_status == 0 &&
		 atomic_load(&bad_reads) == 0;
	for (unsigned i = 0; i < SLOTS; i++)
		ps_free(mem, atomic_load(&slot[i]));
	ps_mem_destroy(mem);
	ps_destroy(ps);
	return ok ? 0 : 1;
}
