/*
 * examples/call_malloc.c - reclaim objects that some other part of the program allocated
 * with plain malloc: ps_call and ps_call_free, the call_rcu of tsync.
 *
 * A table of named settings that readers look up without locks inside parallel sections.
 * Each setting is a malloc'd struct holding a malloc'd name and a malloc'd value buffer
 * (as a config parser elsewhere in the program would make them). Updaters replace a
 * setting under a mutex and hand the old one to ps_call, whose callback frees its parts;
 * a dropped setting with no parts goes through ps_call_free. At the end ps_barrier waits
 * for every callback. The program checks what readers saw and what was freed, and exits
 * non-zero on any mismatch.
 *
 *   cc -std=c11 call_malloc.c $(pkg-config --cflags --libs tsync) -pthread
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tsync/tsync.h>

#define NSET 32
#define WORKERS 2
#define UPDATES 20000

struct setting {
	char *name;          /* malloc'd */
	uint64_t *value;     /* malloc'd: value[0] = version, value[1] = ~version */
	struct ps_head head; /* for ps_call */
};

static struct ps *ps;
static struct setting *_Atomic table[NSET];
static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong freed, bad_reads;
static atomic_int stop;

static struct setting *setting_new(int i, uint64_t version)
{
	char name[32];
	int len = snprintf(name, sizeof(name), "setting.%d", i);
	struct setting *s = malloc(sizeof(*s));
	if (s == NULL || (s->name = malloc((size_t)len + 1)) == NULL ||
	    (s->value = malloc(2 * sizeof(uint64_t))) == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(s->name, name, (size_t)len + 1);
	s->value[0] = version;
	s->value[1] = ~version;
	return s;
}

/* The callback: runs once no reader can still hold s. */
static void setting_free(struct ps_head *h)
{
	struct setting *s = (struct setting *)((char *)h - offsetof(struct setting, head));
	s->value[1] = s->value[0]; /* a reader seeing this would report a bad read */
	free(s->value);
	free(s->name);
	free(s);
	atomic_fetch_add(&freed, 1);
}

static void *reader(void *arg)
{
	(void)arg;
	unsigned i = 0;
	while (!atomic_load(&stop)) {
		ps_enter(ps);
		struct setting *s = atomic_load_explicit(&table[i++ % NSET], memory_order_acquire);
		if (s->value[1] != ~s->value[0] || strncmp(s->name, "setting.", 8) != 0)
			atomic_fetch_add(&bad_reads, 1);
		ps_exit(ps);
	}
	return NULL;
}

static void *updater(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int n = 0; n < UPDATES; n++) {
		seed = seed * 1103515245u + 12345u;
		int i = (int)(seed >> 16) % NSET;
		pthread_mutex_lock(&update_lock);
		struct setting *old = atomic_load_explicit(&table[i], memory_order_relaxed);
		atomic_store_explicit(&table[i], setting_new(i, old->value[0] + 1),
				      memory_order_release);
		pthread_mutex_unlock(&update_lock);
		ps_call(ps, &old->head, setting_free); /* unlinked: free after the grace period */
	}
	return NULL;
}

/* A bare malloc'd record whose only part is itself: ps_call_free frees it. */
struct note {
	char text[48];
	struct ps_head head;
};

int main(void)
{
	ps = ps_create(NULL);
	if (ps == NULL) {
		perror("ps_create");
		return 1;
	}
	for (int i = 0; i < NSET; i++)
		atomic_store(&table[i], setting_new(i, 0));

	pthread_t r[WORKERS], u[WORKERS];
	for (int i = 0; i < WORKERS; i++) {
		pthread_create(&r[i], NULL, reader, NULL);
		pthread_create(&u[i], NULL, updater, (void *)(uintptr_t)(i + 1));
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(u[i], NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(r[i], NULL);

	for (int i = 0; i < 100; i++) {
		struct note *n = malloc(sizeof(*n));
		if (n == NULL)
			return 1;
		snprintf(n->text, sizeof(n->text), "note %d", i);
		ps_call_free(ps, &n->head, offsetof(struct note, head));
	}

	ps_barrier(ps); /* every callback queued so far has run */
	struct ps_call_stats st;
	ps_call_stats(ps, &st);
	printf("call_malloc: %lu settings replaced and freed, %llu callbacks run "
	       "(%llu by another thread), %llu pending, %lu bad reads\n",
	       (unsigned long)atomic_load(&freed), (unsigned long long)st.run,
	       (unsigned long long)st.helped, (unsigned long long)st.pending,
	       (unsigned long)atomic_load(&bad_reads));
	int ok = atomic_load(&freed) == (unsigned long)WORKERS * UPDATES &&
		 st.run == (uint64_t)WORKERS * UPDATES + 100 && st.pending == 0 &&
		 atomic_load(&bad_reads) == 0;
	for (int i = 0; i < NSET; i++)
		setting_free(&atomic_load(&table[i])->head); /* no readers left */
	ps_destroy(ps);
	return ok ? 0 : 1;
}
