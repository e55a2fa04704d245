/*
 * bench/sys.h - what the studies ask of the system, written once: the monotonic clock,
 * the hypervisor's steal time, real-time throttling, resident memory, and memory cgroups.
 * Not part of the library; every function may be called from any thread. Linux only
 * (/proc, /sys/fs/cgroup); each says what it answers where the kernel does not tell.
 */
#ifndef TSYNC_BENCH_SYS_H
#define TSYNC_BENCH_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns (deadlines and durations the harness measures outside the timed
 * operations; the operations themselves are timed with <tsync/clock.h>). */
uint64_t bench_mono_ns(void);

/* Steal time of CPUs cpus[0..n-1], ns (/proc/stat's 8th field of each cpuN line, in
 * USER_HZ ticks): time the hypervisor ran something else on them - the largest
 * disturbance of a virtual machine, outside any task model. 0 if unknown. */
uint64_t bench_steal_ns(const int *cpus, unsigned n);

/* Does the kernel throttle SCHED_FIFO threads (RT bandwidth control: a real-time thread
 * may run sched_rt_runtime_us of every sched_rt_period_us, then waits out the period)?
 * An executive that never sleeps would then be stopped for the rest of every throttling
 * period - 50 ms each second by default, a stall no analysis of a task set allows for.
 * Unknown (no /proc): false. */
bool bench_rt_throttled(void);

/* This process's resident memory now (/proc/self/statm), KiB; 0 if unknown. */
uint64_t bench_rss_kib(void);
/* This process's peak resident memory (getrusage's ru_maxrss), KiB. */
long bench_peak_rss_kib(void);

/* A fresh memory cgroup limited to limit_mib MiB, below the one this process is in
 * (cgroup v1 memory.limit_in_bytes or v2 memory.max; swap closed off where the kernel
 * accounts it), named <prefix>-<pid>-<serial>: its directory in dir. 0, or -1 with a
 * message on stderr (who: the message's prefix). */
int bench_cgroup_make(const char *who, const char *prefix, unsigned limit_mib, unsigned serial,
		      char *dir, size_t len);
/* Move the calling process into cgroup dir (its cgroup.procs). 0, or -1 with errno. */
int bench_cgroup_enter(const char *dir);
/* Remove a cgroup bench_cgroup_make made, retrying for a second while it is busy (its
 * last task still leaving). */
void bench_cgroup_remove(const char *dir);

#endif
