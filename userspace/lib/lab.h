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
 */
int lab_parse_uint_list(const char *s, unsigned long **out);

/* Read or write one unsigned decimal number in a (sysfs) file. */
int lab_read_ulong(const char *path, unsigned long *val);
int lab_write_ulong(const char *path, unsigned long val);

/* mkdir -p.  Returns 0 or -1 with errno set. */
int lab_mkdirs(const char *path);

/*
 * Run the analysis script userspace/analysis/@script, found beside the
 * calling program (<its folder>/../analysis), with $LAB_PYTHON (default
 * python3) and the NULL-terminated @args.  Returns its exit status, or -1
 * if it could not be run.
 */
int lab_run_analysis(const char *script, const char *const args[]);

/* Write @s as a JSON string literal, with quotes and escapes. */
void lab_json_string(FILE *f, const char *s);

#endif /* LAB_H */
