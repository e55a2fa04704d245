/*
 * tests/ps_hash/ps_hash_test.h - what test_ps_hash.c and stress_ps_hash.c share: bucket
 * arrays handed to the table as its contract allows (struct ps_hash_config.alloc/free).
 */
#ifndef TSYNC_TEST_PS_HASH_TEST_H
#define TSYNC_TEST_PS_HASH_TEST_H

#include <stdlib.h>
#include <string.h>

/* A bucket array of `bytes`, or NULL. Poisoned, not zeroed: the contract says the table
 * writes every bucket itself. */
static inline void *poisoned_buckets(size_t bytes)
{
	void *p = malloc(bytes);
	if (p != NULL)
		memset(p, 0xa5, bytes);
	return p;
}

/* struct ps_hash_config.free for the arrays of poisoned_buckets. */
static inline void buckets_free(void *p, size_t bytes, void *arg)
{
	(void)bytes;
	(void)arg;
	free(p);
}

#endif
