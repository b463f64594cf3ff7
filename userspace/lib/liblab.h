/* SPDX-License-Identifier: GPL-2.0 */
/*
 * liblab: the timing, statistics and small file helpers every lab tool
 * shares.  One copy, tested once (userspace/lib/test_lab.c).
 */
#ifndef LIBLAB_H
#define LIBLAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --- time ------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds, the clock the kernel's ktime_get_ns() reads. */
uint64_t lab_now_ns(void);

/* --- CPUs and the TSC ---------------------------------------------------- */

/* Pin the calling thread to @cpu.  Returns 0, or -1 with errno set. */
int lab_pin_cpu(int cpu);

/* Whether @cpu is online (sched_getaffinity of the process may still exclude it). */
int lab_cpu_online(int cpu);

/* Whether this process may run on @cpu: online and in its affinity mask. */
int lab_cpu_allowed(int cpu);

/*
 * The online CPUs this process may run on, ascending, in a malloc'ed
 * array *@cpus.  Returns their number, or -1 with errno set.
 */
int lab_cpus_usable(int **cpus);

/*
 * A CPU given with option @opt, the same way in every tool: one that is
 * not online, or that this process may not run on (taskset, cpuset), is
 * "PROG: OPT: CPU N is not online" (or "... is online but not allowed to
 * this process") and exit status 2.
 */
void lab_opt_cpu(const char *prog, const char *opt, unsigned long cpu);

/*
 * A CPU list, the one syntax of every tool's -C (and irqhook's CPU
 * options): CPUs and ranges separated by commas, "0-3,6" as the kernel
 * writes them (/sys/devices/system/cpu/online, taskset -c), and the lab's
 * list form "0:6:2" (stop included).  Each CPU once, below CPU_SETSIZE.
 * Returns how many and a malloc'ed array of them, in the order given, in
 * *@cpus; or -1 with errno = EINVAL and why in @err ("'x' is not a CPU
 * number", "the range 3-1 runs backwards", "CPU 2 is listed twice" ...).
 */
int lab_parse_cpus(const char *s, int **cpus, char *err, size_t errlen);

/*
 * The -C of every tool: lab_parse_cpus(@arg), or "none" (returns 0,
 * *@cpus NULL: the scheduler places), at most @max CPUs, each online and
 * allowed to this process (lab_opt_cpu).  A bad value is one line,
 * "PROG: OPT wants ..., not 'ARG' (why)", and exit status 2.
 */
int lab_opt_cpus(const char *prog, const char *opt, const char *arg, int max, int **cpus);

/* lab_opt_cpus() of one CPU at most: the CPU, or -1 for "none". */
int lab_opt_one_cpu(const char *prog, const char *opt, const char *arg);

#if defined(__x86_64__) || defined(__i386__)
/* The time-stamp counter, unordered (rdtsc) and after earlier loads (rdtscp). */
static inline uint64_t lab_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a" (lo), "=d" (hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t lab_rdtscp(void)
{
	uint32_t lo, hi, aux;

	__asm__ __volatile__("rdtscp" : "=a" (lo), "=d" (hi), "=c" (aux));
	return ((uint64_t)hi << 32) | lo;
}
#endif

/*
 * The TSC's frequency in Hz: what the kernel logged at boot ("tsc: Refined
 * TSC clocksource calibration" or "tsc: Detected ... MHz"), else measured
 * against CLOCK_MONOTONIC_RAW over 200 ms.  *@source says which (a static
 * string).  Returns 0 on a CPU without a TSC.
 */
double lab_tsc_hz(const char **source);

/* --- statistics ----------------------------------------------------- */

struct lab_summary {
	size_t n;
	double min, max, mean, stddev;	/* stddev: sample (n - 1) */
	double p50, p90, p99, p999;
};

/*
 * Percentile @p (0..100) of @n sorted values, interpolating linearly
 * between the two nearest ranks.  Returns NAN for n == 0.
 */
double lab_percentile(const double *sorted, size_t n, double p);

/* Summarise @n values (not modified).  Returns 0, or -1 with errno set. */
int lab_summarize(const double *x, size_t n, struct lab_summary *s);

/* Sort @n doubles in place, ascending. */
void lab_sort(double *x, size_t n);

struct lab_fit {
	size_t n;
	double intercept;	/* a in y = a + b x */
	double slope;		/* b */
	double r2;		/* coefficient of determination */
};

/*
 * Least-squares line through (x[i], y[i]).  Needs n >= 2 and x not all
 * equal; returns 0, or -1 with errno = EINVAL.  r2 is 1 when y is constant
 * and fits exactly.
 */
int lab_linfit(const double *x, const double *y, size_t n, struct lab_fit *f);

/*
 * Two clusters in one dimension: the split of the sorted values into a
 * low ("fast") and a high ("slow") group that minimises the summed squared
 * distance of log(value) to its group's mean -- an exact 2-means on a log
 * scale, where latencies that differ by a factor look as far apart at
 * 10 us as at 100 us.  Values <= 0 count as the smallest positive one.
 */
struct lab_split {
	double threshold;	/* fast: value <= threshold */
	size_t n_fast, n_slow;
	double mean_fast, mean_slow;	/* arithmetic means of each group */
};

/* Returns 0, or -1 with errno = EINVAL for n == 0.  All equal: no slow group. */
int lab_split2(const double *x, size_t n, struct lab_split *s);

/* --- lists and files --------------------------------------------------- */

/*
 * Parse a list of non-negative integers: "0,50,100" or "start:stop:step"
 * (stop included), or a mix: "0:200:50,400".  Returns the count and a
 * malloc'ed array in *out, or -1 (errno = EINVAL) on a malformed list.
 * The one list syntax of the lab: userspace/lablib/lists.py and the 'lab
 * list' helper of the shell scripts use this same grammar.
 */
int lab_parse_uint_list(const char *s, unsigned long **out);

/*
 * Option values, the same way in every tool: a whole number from @min to
 * @max, or a list of them.  On a bad value they print
 * "PROG: OPTION wants ..., not 'ARG'" and exit with status 2.
 */
unsigned long lab_opt_ulong(const char *prog, const char *opt, const char *arg,
			    unsigned long min, unsigned long max);
int lab_opt_list(const char *prog, const char *opt, const char *arg, unsigned long min,
		 unsigned long max, unsigned long **out);

/*
 * -o DIR, --name NAME and -q of every tool with a result folder
 * (struct lab_tool's @common); --name is a folder name without '/'.
 */
struct lab_common_opts {
	const char *outdir;	/* -o; NULL before parsing: "results" */
	const char *name;	/* --name, NULL if not given */
	int quiet;		/* -q */
};

/*
 * A tool of subcommands (smp BENCH, lab COMMAND): its first argument, or
 * @usage on stderr and exit status 2 if there is none; -h or --help:
 * @usage on stdout and exit 0.
 */
const char *lab_opt_command(int argc, char *const argv[], void (*usage)(FILE *f));

/*
 * A tool's options, each written once: a table of struct lab_opt from
 * which lab_opts_parse() makes the getopt tables and checks each value
 * (a bad one is "PROG: --OPT wants ..., not 'ARG'" and exit status 2),
 * lab_opts_usage() the usage text with each default (the value in
 * @value before parsing) and lab_opts_json() the settings of meta.json.
 */
struct lab_json;

enum lab_opt_kind {
	LAB_OPT_FLAG,		/* int, set to 1 */
	LAB_OPT_ULONG,		/* unsigned long from @min to @max */
	LAB_OPT_STR,		/* const char *, as given */
	LAB_OPT_NAME,		/* const char *: a plain name, of letters, digits,
				 * '.', '_' and '-' (a label in file and case names) */
	LAB_OPT_LIST,		/* struct lab_opt_list: a lab list, each from @min to @max */
	LAB_OPT_CPU,		/* int: one CPU, or -1 for "none" (lab_opt_one_cpu) */
	LAB_OPT_CHOICE,		/* int: the index of the value in @choices */
	LAB_OPT_CPUS,		/* struct lab_opt_cpus: a CPU list (lab_opt_cpus) of at
				 * most @max CPUs (0: any number), or "none" */
	LAB_OPT_CUSTOM,		/* @parse() takes it, @write() writes its setting */
};

struct lab_opt_cpus {
	int *v;			/* NULL and n 0: "none", the scheduler places */
	int n;
};

struct lab_opt_list {
	const char *text;	/* as given (the default: set before parsing) */
	unsigned long *v;	/* parsed once the options are read */
	int n;
};

struct lab_opt {
	const char *name;	/* the long option without its dashes, or NULL */
	int letter;		/* its letter, or 0 */
	enum lab_opt_kind kind;
	void *value;		/* where it goes; holds the default */
	const char *arg;	/* the value's name in the usage text (default "N") */
	const char *help;	/* its text ('\n' between lines); "(default X)" is added */
	const char *json;	/* its key in meta.json's settings, or NULL */
	unsigned long min, max;
	const char *const *choices;	/* LAB_OPT_CHOICE, NULL-ended */
	void (*parse)(void *value, const char *prog, const char *opt, const char *arg);
	/* Its setting, for LAB_OPT_CUSTOM or in place of the kind's own. */
	void (*write)(struct lab_json *j, const char *key, const void *value);
	/* LAB_OPT_CUSTOM: its value as text (malloc'ed), for the usage text. */
	char *(*show)(const void *value);
};

struct lab_tool {
	const char *prog;
	const char *about;	/* "usage: ..." and what the tool does */
	const char *notes;	/* after the options, or NULL */
	const char *example;	/* one command line */
	const struct lab_opt *opts;	/* ended by an entry without name or key */
	struct lab_common_opts *common;	/* -o, --name, -q; NULL: none */
};

/*
 * Parse @argv; returns the index of the first operand.  A tool that takes
 * no operands (@operands 0) refuses them.  -h, --help: the usage text on
 * stdout and exit 0.
 */
int lab_opts_parse(const struct lab_tool *t, int argc, char **argv, int operands);
void lab_opts_usage(const struct lab_tool *t, FILE *f);
/* Whether the option whose value is at @value was on the command line. */
int lab_opts_given(const struct lab_tool *t, const void *value);
/* Each option with a @json key into the object @j has open. */
void lab_opts_json(struct lab_json *j, const struct lab_tool *t);

/* Read or write one unsigned decimal number in a (sysfs) file. */
int lab_read_ulong(const char *path, unsigned long *val);
int lab_write_ulong(const char *path, unsigned long val);

/* mkdir -p.  Returns 0 or -1 with errno set. */
int lab_mkdirs(const char *path);

/* --- JSON ------------------------------------------------------------- */

/*
 * The one JSON writer of the C tools (json.c).  Open a writer on a FILE
 * or on memory, then write values in order: lab_json_object() and
 * lab_json_array() open a container, lab_json_end() closes the innermost.
 * Every call takes @key: the member's name inside an object, NULL inside
 * an array and for the top-level value.  Members are separated by ", ";
 * lab_json_break() puts the next member (or closing bracket) on a line of
 * its own, indented two spaces per level, @indent levels deeper than the
 * text's first line.  A misuse (a key in an array, none in an object, an
 * end too many, nesting deeper than LAB_JSON_DEPTH) is remembered and
 * makes lab_json_text() fail.
 */
#define LAB_JSON_DEPTH 16

struct lab_json {
	FILE *f;
	char *text;		/* lab_json_mem(): the text being built */
	size_t size;
	int indent;
	int depth;		/* open containers */
	char kind[LAB_JSON_DEPTH];	/* '{' or '[' at each depth */
	int count[LAB_JSON_DEPTH];	/* values written so far at each depth */
	int brk;		/* the next member starts a new line */
	int err;		/* errno of the first failure, 0 if none */
};

void lab_json_file(struct lab_json *j, FILE *f, int indent);
/* Returns 0, or -1 with errno set. */
int lab_json_mem(struct lab_json *j, int indent);
/*
 * End a lab_json_mem() writer: the text (malloc'ed, the caller frees it),
 * or NULL with errno set if writing failed or the value is unfinished.
 */
char *lab_json_text(struct lab_json *j);

void lab_json_object(struct lab_json *j, const char *key);
void lab_json_array(struct lab_json *j, const char *key);
void lab_json_end(struct lab_json *j);
void lab_json_break(struct lab_json *j);
/* A string, escaped; NULL writes null. */
void lab_json_str(struct lab_json *j, const char *key, const char *s);
void lab_json_int(struct lab_json *j, const char *key, long long v);
void lab_json_uint(struct lab_json *j, const char *key, unsigned long long v);
/* @decimals after the point (< 0: all 17 significant digits); NaN, inf: null. */
void lab_json_double(struct lab_json *j, const char *key, double v, int decimals);
void lab_json_bool(struct lab_json *j, const char *key, int v);
void lab_json_null(struct lab_json *j, const char *key);
/* @json, a finished JSON value, as it is. */
void lab_json_raw(struct lab_json *j, const char *key, const char *json);

/* Write @s as a JSON string literal, with quotes and escapes. */
void lab_json_string(FILE *f, const char *s);

/* --- result folders --------------------------------------------------- */

/*
 * A run's result folder.  lab_result_begin() creates
 * PARENT/NAME.incomplete/, NAME being EXPERIMENT-YYYYmmdd-HHMMSS (or
 * @name if not NULL; -2, -3 ... appended if taken); the tool writes its
 * files into r->dir; lab_result_commit() renames it to PARENT/NAME and,
 * for a time-stamped name, points PARENT/latest-EXPERIMENT at it.  An
 * interrupted run never looks like a result.  lab_result_abort() removes
 * the folder and what the tool put in it.
 */
struct lab_result {
	char dir[4112];		/* where to write now */
	char final[4096];	/* where it will be */
	char parent[3584];
	char experiment[64];
	char base[256];		/* final name, without the parent */
	int named;		/* @name given: no latest link */
};

int lab_result_begin(struct lab_result *r, const char *parent, const char *experiment,
		     const char *name);
int lab_result_commit(struct lab_result *r);
void lab_result_abort(struct lab_result *r);

/* Open DIR/NAME for writing (a message on stderr naming it if that fails). */
FILE *lab_result_file(const struct lab_result *r, const char *name);

/*
 * The lab kernel variant running (meta.json's kernel.variant): lab.variant=
 * on the kernel command line (scripts/vm.sh), else from @release, the
 * uname -r of a lab kernel (6.12.y-lab is stock, 6.12.y-lab-rt is rt);
 * NULL for a kernel that is none of the lab's.  The text is @buf's or a
 * constant.
 */
const char *lab_variant(const char *release, char *buf, size_t size);

/*
 * Write r->dir/meta.json: when, the command line, the lab's git commit,
 * the kernel (release, uname -v, variant, preemption model), the machine
 * (CPU model and count, accelerator and QEMU version when booted by
 * scripts/vm.sh, whether a PMU is there), the delay module's parameters
 * and counters if it is loaded, and @settings_json: a JSON object text
 * with the tool's own settings (NULL: {}).
 */
int lab_meta_write(const struct lab_result *r, int argc, char *const argv[],
		   const char *settings_json);

/*
 * The start of every tool's result folder: lab_result_begin(), then, if
 * @argv is not NULL, lab_meta_write() with @settings_json.  If either
 * fails it removes the folder, says "PROG: cannot create a result folder
 * in PARENT: REASON" on stderr and returns -1 (errno kept).
 */
int lab_result_open(struct lab_result *r, const char *prog, const char *parent,
		    const char *experiment, const char *name, int argc, char *const argv[],
		    const char *settings_json);

#endif /* LIBLAB_H */
