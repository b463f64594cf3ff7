/* SPDX-License-Identifier: GPL-2.0 */
/*
 * liblab: the timing, statistics and small file helpers every lab tool
 * shares.  One copy, tested once (userspace/lib/test_lab.c).
 */
#ifndef LAB_H
#define LAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --- time ------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds, the clock the kernel's ktime_get_ns() reads. */
uint64_t lab_now_ns(void);

/*
 * The timing loop every tool shares: call @fn(@arg) @calls times between
 * two lab_now_ns() reads and return the ns one call took on average.
 */
double lab_time_calls(void (*fn)(void *arg), void *arg, unsigned long calls);

/* --- CPUs and the TSC ---------------------------------------------------- */

/* Pin the calling thread to @cpu.  Returns 0, or -1 with errno set. */
int lab_pin_cpu(int cpu);

/* Whether @cpu is online (sched_getaffinity of the process may still exclude it). */
int lab_cpu_online(int cpu);

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
int lab_opt_list(const char *prog, const char *opt, const char *arg, unsigned long max,
		 unsigned long **out);

/*
 * The end of every tool's getopt_long() loop, the same way in every tool,
 * each exiting with status 2 after one line on stderr:
 * lab_opt_bad() for getopt's '?' (an unknown option or a missing value);
 * lab_opt_end() if operands are left after the options;
 * lab_opt_name() if @name (--name, a result folder's name) is empty or
 * has a '/' (NULL: not given, fine).
 */
void lab_opt_bad(const char *prog, char *const argv[]) __attribute__((noreturn));
void lab_opt_end(const char *prog, int argc, char *const argv[]);
void lab_opt_name(const char *prog, const char *name);

/* Read or write one unsigned decimal number in a (sysfs) file. */
int lab_read_ulong(const char *path, unsigned long *val);
int lab_write_ulong(const char *path, unsigned long val);

/* mkdir -p.  Returns 0 or -1 with errno set. */
int lab_mkdirs(const char *path);

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
 * Write r->dir/meta.json: when, the command line, the lab's git commit,
 * the kernel (release, uname -v, variant, preemption model), the machine
 * (CPU model and count, accelerator and QEMU version when booted by
 * scripts/vm.sh, whether a PMU is there), the delay module's parameters
 * and counters if it is loaded, and @settings_json: a JSON object text
 * with the tool's own settings (NULL: {}).
 */
int lab_meta_write(const struct lab_result *r, int argc, char *const argv[],
		   const char *settings_json);

#endif /* LAB_H */
