/*
 * bench/common.h - small helpers shared by the tsync-bench subcommands (smr, rlu, oplog,
 * cache, rt): option parsing, CPU pinning, output directories and running the Python
 * report/plot scripts. Error messages stay with the callers, so every subcommand keeps
 * its own wording; the helpers only say what went wrong.
 */
#ifndef TSYNC_BENCH_COMMON_H
#define TSYNC_BENCH_COMMON_H

#include <stdint.h>

/*
 * --seconds S: a decimal floating-point number with nothing after it, 0 < S <= max.
 * On success stores it in *out and returns 0; otherwise prints
 * "<who>: bad --seconds '<arg>'" to stderr and returns -1 (*out is then unspecified).
 * `who` is the message prefix, e.g. "tsync-bench smr".
 */
int bench_parse_seconds(const char *who, const char *arg, double max, double *out);

/* bench_parse_*_list: returned for a malformed or out-of-range item, or no item. */
#define BENCH_LIST_BAD (-1)
/* bench_parse_*_list: returned when the list has more than `max` items. */
#define BENCH_LIST_TOO_MANY (-2)
/* bench_parse_*_list flag: skip empty items ("1,,2", "1,") instead of refusing them. */
#define BENCH_LIST_SKIP_EMPTY 1u

/*
 * Parses a comma-separated list of unsigned decimal values, each in [lo, hi], at most
 * `max` of them, into out[]. Returns the number of values (>= 1), BENCH_LIST_BAD or
 * BENCH_LIST_TOO_MANY (a bad item found before the (max+1)-th counts as BAD). Prints
 * nothing. flags: 0 or BENCH_LIST_SKIP_EMPTY.
 */
int bench_parse_u64_list(const char *arg, uint64_t *out, unsigned max, uint64_t lo,
			 uint64_t hi, unsigned flags);
int bench_parse_uint_list(const char *arg, unsigned *out, unsigned max, unsigned lo,
			  unsigned hi, unsigned flags);

/*
 * Fills cpus[] (room for CPU_SETSIZE entries) with the CPUs of the calling thread's
 * affinity mask, in increasing order; returns how many (0 if the mask cannot be read).
 */
unsigned bench_affinity_cpus(int *cpus);

/*
 * Pins the calling thread to CPU `cpu`. A negative cpu means "do not pin" and returns 0.
 * Returns 0 or pthread_setaffinity_np's error number.
 */
int bench_pin_self(int cpu);

/* mkdir -p: creates dir and its missing parents (mode 0777). 0, or -1 with errno set. */
int bench_mkdir_p(const char *dir);

/* The interpreter for the report scripts: $TSYNC_BENCH_PYTHON, else the build's choice. */
const char *bench_python(void);

/* The scripts' exit status when matplotlib is missing (they wrote what needs no plots). */
#define BENCH_SCRIPT_NO_MATPLOTLIB 3
/* bench_run_script: the script did not exit normally (killed by a signal). */
#define BENCH_SCRIPT_KILLED 256

/*
 * Runs argv[0] (looked up in PATH) with argv and the current environment, and waits for
 * it. Returns its exit status (0..255), BENCH_SCRIPT_KILLED, or -errno if it could not be
 * started.
 */
int bench_run_script(char *const argv[]);

/*
 * bench_plot_dir: run `python3 SCRIPT DIR` (bench_python()), the plotting step of a
 * subcommand's --out DIR. A missing matplotlib is not an error (the script wrote its
 * tables; a line on stderr, prefixed with who, says so). Returns 0, or 1 when the script
 * failed (reported on stderr).
 */
int bench_plot_dir(const char *who, const char *script, const char *dir);

/* xorshift64* (Vigna): the benchmarks' per-thread random numbers. *s must not be 0. */
static inline uint64_t bench_xorshift64s(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

#endif
