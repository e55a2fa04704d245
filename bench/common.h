/*
 * bench/common.h - small helpers shared by the tsync-bench subcommands (smr, rlu, oplog,
 * cache, rt, rt-cache, prudence, vmdb, cached-net): a table-driven option parser, the CSV
 * outputs of --csv and --out, CPU pinning, output directories and running the Python
 * report/plot scripts. Messages start with the caller's `who` ("tsync-bench smr").
 */
#ifndef TSYNC_BENCH_COMMON_H
#define TSYNC_BENCH_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
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
	const char *name; /* long name without "--"; NULL ends the table */
	char letter;      /* short option, or 0 */
	enum bench_opt_kind kind;
	void *dst;
	unsigned *n;     /* UINTS, U64S: where the count goes */
	unsigned max;    /* UINTS, U64S: room in dst */
	unsigned flags;  /* UINTS, U64S: 0 or BENCH_LIST_SKIP_EMPTY */
	uint64_t lo, hi; /* UINT, U64, SIZE, UINTS, U64S: the range */
	double dmax;     /* SECONDS, POS: the largest value */
	bench_opt_fn fn; /* CALL, CALL0 */
};

#define BENCH_O_STR(nm, l, p)                                                  \
	{                                                                      \
		.name = (nm), .letter = (l), .kind = BENCH_OPT_STR, .dst = (p) \
	}
#define BENCH_O_SET(nm, l, p)                                                  \
	{                                                                      \
		.name = (nm), .letter = (l), .kind = BENCH_OPT_SET, .dst = (p) \
	}
#define BENCH_O_CLEAR(nm, l, p)                                                  \
	{                                                                        \
		.name = (nm), .letter = (l), .kind = BENCH_OPT_CLEAR, .dst = (p) \
	}
#define BENCH_O_NUM(nm, l, k, p, a, b)                                                     \
	{                                                                                  \
		.name = (nm), .letter = (l), .kind = (k), .dst = (p), .lo = (a), .hi = (b) \
	}
/* arr must be an array (its size is the room) */
#define BENCH_O_LIST(nm, l, k, arr, cnt, a, b, fl)                                       \
	{                                                                                \
		.name = (nm), .letter = (l), .kind = (k), .dst = (arr), .n = (cnt),      \
		.max = (unsigned)(sizeof(arr) / sizeof((arr)[0])), .lo = (a), .hi = (b), \
		.flags = (fl)                                                            \
	}
#define BENCH_O_DBL(nm, l, k, p, mx)                                               \
	{                                                                          \
		.name = (nm), .letter = (l), .kind = (k), .dst = (p), .dmax = (mx) \
	}
#define BENCH_O_FN(nm, l, k, f)                                     \
	{                                                           \
		.name = (nm), .letter = (l), .kind = (k), .fn = (f) \
	}
#define BENCH_O_END          \
	{                    \
		.name = NULL \
	}

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
 * ---- name lists: --allocators a,b,c and the like ----
 *
 * A table to pick entries from by name. BENCH_NAMES_OF(table, field) fills name, stride and
 * n from an array of structs whose `field` is the entry's name.
 */
struct bench_names {
	const char *what;        /* "allocator": the messages below say "allocator" */
	const char *hint;        /* after "unknown <what> '<item>'", in parentheses */
	const char *const *name; /* the first entry's name */
	size_t stride;           /* bytes from one entry's name to the next's */
	unsigned n;              /* entries */
	bool unique;             /* refuse a name given twice */
	/* NULL, or: 0 to take entry i (named item), -1 after printing why not */
	int (*check)(unsigned i, const char *item);
};

#define BENCH_NAMES_OF(table, field)                             \
	.name = &(table)[0].field, .stride = sizeof((table)[0]), \
	.n = (unsigned)(sizeof(table) / sizeof((table)[0]))

/*
 * Looks up each item of the comma-separated list arg (empty items skipped) in t, stores
 * their indices in out[] (room for max) and their count (>= 1) in *n, and returns 0.
 * Otherwise returns -1 (*n unchanged) after one of "<who>: unknown <what> '<item>'
 * (<hint>)", t->check's message, "<who>: <what> '<item>' named twice" (t->unique),
 * "<who>: too many <what>s" (more than max), "<who>: no <what> in '<arg>'" (no item) on
 * stderr, or with nothing printed when out of memory.
 */
int bench_name_list(const char *who, const struct bench_names *t, const char *arg, unsigned *out,
		    unsigned *n, unsigned max);

/*
 * ---- a timed run: nthr workers start together and stop at one deadline ----
 *
 * Main: bench_run_init(r, nthr), create the workers, bench_run_start(r, seconds) (or
 * bench_run_ready, its own clock readings, bench_run_go), join them, bench_run_destroy.
 * Worker: its setup, then deadline = bench_run_wait(r), then the measured loop until
 * tsync_now() >= deadline. Nothing of it runs inside the measured loops.
 */
struct bench_run {
	pthread_barrier_t ready, go;
	_Atomic uint64_t deadline; /* tsync_now() ticks */
};

/* For nthr workers and the caller. If it cannot: "<who>: pthread_barrier_init: <error>"
 * on stderr and exit(1). */
void bench_run_init(struct bench_run *r, const char *who, unsigned nthr);
void bench_run_destroy(struct bench_run *r);

/* Worker: waits until main has set the deadline (bench_run_go), and returns it. */
uint64_t bench_run_wait(struct bench_run *r);

/* Main: returns when every worker is in bench_run_wait. */
void bench_run_ready(struct bench_run *r);

/* Main, after bench_run_ready: publishes deadline and lets the workers go. */
void bench_run_go(struct bench_run *r, uint64_t deadline);

/*
 * Main: bench_run_ready, then start = tsync_now() and bench_run_go(start + seconds in
 * ticks). Returns start.
 */
uint64_t bench_run_start(struct bench_run *r, double seconds);

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
int bench_parse_u64_list(const char *arg, uint64_t *out, unsigned max, uint64_t lo, uint64_t hi,
			 unsigned flags);
int bench_parse_uint_list(const char *arg, unsigned *out, unsigned max, unsigned lo, unsigned hi,
			  unsigned flags);

/*
 * Fills cpus[] (room for CPU_SETSIZE entries) with the CPUs of the calling thread's
 * affinity mask, in increasing order; returns how many (0 if the mask cannot be read).
 */
unsigned bench_affinity_cpus(int *cpus);

/*
 * The CPUs to pin workers to: bench_affinity_cpus, or CPU 0 alone when the mask cannot be
 * read. Returns how many (>= 1).
 */
unsigned bench_cpus(int *cpus);

/* The default thread counts 1, 2, ..., ncpus (at most max of them) into list[]; returns
 * how many. */
unsigned bench_thread_counts(unsigned *list, unsigned max, unsigned ncpus);

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

/* bench_run_report: the script could not be read (a warning says so). */
#define BENCH_SCRIPT_MISSING 257

/*
 * bench_run_report: runs a subcommand's report script, argv[0] the interpreter and
 * argv[1] the script, with bench_run_script. A script that cannot be read is not run:
 * "<who>: warning: <script> not found; wrote <csv> only" on stderr and
 * BENCH_SCRIPT_MISSING. Otherwise bench_run_script's result.
 */
int bench_run_report(const char *who, const char *csv, char *const argv[]);

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

/* MurmurHash3's 64-bit finaliser (fmix64): the benchmarks' hash of integer keys for the
 * peers' tables (ps_hash uses the same mix in src/ps_hash.c). */
static inline uint64_t bench_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

#endif
