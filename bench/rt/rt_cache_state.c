/*
 * bench/rt/rt_cache_state.c - `tsync-bench rt-cache`'s shared state: the names of the
 * designs and modes, the options main sets, and the run that rt_cache_run.c sets up and
 * the executives (rt_cache_exec.c) read. Below every other file of the study, so calls
 * run one way: rt_cache_bench.c -> rt_cache_admit.c -> rt_cache_run.c -> rt_cache_exec.c ->
 * rt_cache_state.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CPU_SETSIZE */
#endif
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt_cache_internal.h"

const char *const rtc_dname[ND] = {"rt-parsec", "mcs", "pf-rw"};
const char *const rtc_dpolicy[ND] = {"rt", "mutex", "pf-rw"};
const char *const rtc_mname[NMODE] = {"calibrate", "strict", "relaxed", "overload"};

struct cache *rtc_cache;
const uint32_t *rtc_trace;
const char *rtc_keys;
struct plan rtc_plan;
uint64_t rtc_t0, rtc_end;
struct bench_run rtc_run;
int rtc_cpus[CPU_SETSIZE];
unsigned rtc_ncpus;
bool rtc_pin = true;
bool rtc_try_fifo;
const char *rtc_no_fifo_why;
double rtc_cost_q = 0.999;
