/*
 * bench/common.h - small helpers shared by the tsync-bench subcommands (smr, rlu, oplog,
 * cache, rt, rt-cache, prudence, vmdb, cached-net): a table-driven option parser, the CSV
 * outputs of --csv and --out, CPU pinning, output directories and running the Python
 * report/plot scripts. Messages start with the caller's `who` ("tsync-bench smr").
 */
#ifndef TSYNC_BENCH_COMMON_H
#define TSYNC_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * ---- options: one table per subcommand, parsed by bench_getopt (getopt_long) ----
 *
 * Each entry names a long option (--name), an optional short letter, and what its
 * argument does to *dst. A bad value prints "<who>: bad --name '<arg>' (lo..hi)" (lists:
 * "(values lo..hi)", or "<who>: --name: at most N values") and stops the parse. -h and
 * --help are built in; so is the refusal of positional arguments.
 */
enum bench_opt_kind {
	BENCH_OPT_STR,     /* const char **dst = the argument */
	BENCH_OPT_SET,     /* bool *dst = true (no argument) */
	BENCH_OPT_CLEAR,   /* bool *dst = false (no argument) */
	BENCH_OPT_UINT,    /* unsigned *dst: one decimal value in [lo, hi] */
	BENCH_OPT_U64,     /* uint64_t *dst: one decimal value in [lo, hi] */
	BENCH_OPT_SIZE,    /* size_t *dst: one decimal value in [lo, hi] */
	BENCH_OPT_UINTS,   /* unsigned dst[max], *n = count: a list (bench_parse_uint_list) */
	BENCH_OPT_U64S,    /* uint64_t dst[max], *n = count: a list (bench_parse_u64_list) */
	BENCH_OPT_SECONDS, /* double *dst: bench_parse_seconds, 0 < S <= dmax */
	BENCH_OPT_POS,     /* double *dst: a decimal number, 0 < x <= dmax */
	BENCH_OPT_CALL,    /* fn(arg, ctx) */
	BENCH_OPT_CALL0,   /* fn(NULL, ctx) (no argument) */
};

/*
 * BENCH_OPT_CALL(0)'s function: 0 to go on, BENCH_GETOPT_DONE to stop with success (it
 * printed what was asked, e.g. --list), -1 to fail (it printed why).
 */
typedef int (*bench_opt_fn)(const char *arg, void *ctx);

struct bench_opt {
	const char *name;  /* long name without "--"; NULL ends the table */
	char letter;       /* short option, or 0 */
	enum bench_opt_kind kind;
	void *dst;
	unsigned *n;       /* UINTS, U64S: where the count goes */
	unsigned max;      /* UINTS, U64S: room in dst */
	unsigned flags;    /* UINTS, U64S: 0 or BENCH_LIST_SKIP_EMPTY */
	uint64_t lo, hi;   /* UINT, U64, SIZE, UINTS, U64S: the range */
	double dmax;       /* SECONDS, POS: the largest value */
	bench_opt_fn fn;   /* CALL, CALL0 */
};

#define BENCH_O_STR(nm, l, p) {.name = (nm), .letter = (l), .kind = BENCH_OPT_STR, .dst = (p)}
#define BENCH_O_SET(nm, l, p) {.name = (nm), .letter = (l), .kind = BENCH_OPT_SET, .dst = (p)}
#define BENCH_O_CLEAR(nm, l, p) \
	{.name = (nm), .letter = (l), .kind = BENCH_OPT_CLEAR, .dst = (p)}
#define BENCH_O_NUM(nm, l, k, p, a, b) \
	{.name = (nm), .letter = (l), .kind = (k), .dst = (p), .lo = (a), .hi = (b)}
/* arr must be an array (its size is the room) */
#define BENCH_O_LIST(nm, l, k, arr, cnt, a, b, fl)                                    \
	{.name = (nm), .letter = (l), .kind = (k), .dst = (arr), .n = (cnt),                 \
	 .max = (unsigned)(sizeof(arr) / sizeof((arr)[0])), .lo = (a), .hi = (b), .flags = (fl)}
#define BENCH_O_DBL(nm, l, k, p, mx) \
	{.name = (nm), .letter = (l), .kind = (k), .dst = (p), .dmax = (mx)}
#define BENCH_O_FN(nm, l, k, f) {.name = (nm), .letter = (l), .kind = (k), .fn = (f)}
#define BENCH_O_END {.name = NULL}

/* bench_getopt: the options were parsed (or a CALL asked to stop) and the caller is done. */
#define BENCH_GETOPT_DONE 1

/*
 * Parses argv[1..argc-1] against opts (getopt_long; argv[0] names the command in
 * getopt's own messages). -h/--help print usage(stdout). Returns 0 when all options were
 * parsed, BENCH_GETOPT_DONE after --help or a CALL that stopped, -1 after an error (a bad
 * value, an unknown option, then usage(stderr), or a positional argument: "<who>:
 * unexpected argument '<arg>'"). ctx goes to the CALL functions.
 */
int bench_getopt(const char *who, int argc, char **argv, const struct bench_opt *opts,
		 void (*usage)(FILE *), void *ctx);

/*
 * Calls fn(item, ctx) for each item of the comma-separated list arg (empty items
 * skipped), stopping at the first nonzero return, which it returns; -1 if out of memory.
 */
int bench_each_item(const char *arg, int (*fn)(const char *item, void *ctx), void *ctx);

/*
 * ---- CSV outputs: --csv FILE|- and --out DIR ----
 *
 * f[0]: --csv FILE, or stdout for "-" or when neither --csv nor --out is given;
 * f[1]: DIR/NAME under --out DIR (DIR created), path its path. Either may be NULL.
 */
struct bench_csv {
	FILE *f[2];
	char *path;
};

/*
 * Opens the outputs (csv and dir may be NULL) and writes header plus a newline to each.
 * 0, or -1 after "<who>: <file>: <error>" (or "<who>: mkdir <dir>: <error>") on stderr,
 * with nothing left open.
 */
int bench_csv_open(struct bench_csv *c, const char *who, const char *csv, const char *dir,
		   const char *name, const char *header);

/* printf to every open output of c, then fflush. */
void bench_csv_printf(struct bench_csv *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Closes c's files (not stdout) and frees path. */
void bench_csv_close(struct bench_csv *c);

/*
 * Creates DIR (mkdir -p) and opens DIR/NAME for writing with header and a newline in it
 * (header NULL: nothing written). *path (if path is not NULL) gets the malloc'd path.
 * NULL after "<who>: <file>: <error>" on stderr.
 */
FILE *bench_out_open(const char *who, const char *dir, const char *name, const char *header,
		     char **path);

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
