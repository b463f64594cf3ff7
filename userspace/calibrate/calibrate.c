// SPDX-License-Identifier: GPL-2.0
/*
 * calibrate - turn the delay module's loop count into added system-call
 * latency.
 *
 * For each loop count it sets /sys/module/delay/parameters/loops, times
 * batches of null system calls (close() of a descriptor that is not open,
 * and getppid()), and prints a table with a first fit of latency =
 * intercept + slope x loops.  Into a new result folder it writes only
 * what it measured: raw.csv (every timed batch) and meta.json; the
 * summary, the fits and the plot are made from them by
 * lab analyse, on the host.
 *
 * The loop count in force when it started is put back when it ends, also
 * on SIGINT, SIGTERM and SIGHUP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../lib/liblab.h"

#define DEFAULT_PARAM "/sys/module/delay/parameters/loops"
#define NOT_AN_FD 100
#define PROG "calibrate"

enum null_syscall { SYS_NULL_CLOSE, SYS_NULL_GETPPID, SYS_NULL_COUNT };

static const char *const syscall_names[SYS_NULL_COUNT] = { "close", "getppid" };

struct point {
	enum null_syscall sc;
	unsigned long loops;
	struct lab_summary s;	/* ns per call, one sample per batch */
	/* The module's own account over every visit: calls delayed, ns spun. */
	unsigned long delayed, spun_ns;
};

/*
 * The module's counters beside the loops parameter (stats/delayed and
 * stats/spun_ns of a delay module that times its spin); empty paths if
 * they do not exist, as with an older module or a stand-in parameter file.
 */
static char stat_delayed[PATH_MAX], stat_spun_ns[PATH_MAX];

static void find_module_stats(const char *param)
{
	char dir[PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", param);
	/* .../delay/parameters/loops -> .../delay */
	for (int i = 0; i < 2; i++) {
		slash = strrchr(dir, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
	snprintf(stat_delayed, sizeof(stat_delayed), "%.4000s/stats/delayed", dir);
	snprintf(stat_spun_ns, sizeof(stat_spun_ns), "%.4000s/stats/spun_ns", dir);
	if (access(stat_delayed, R_OK) || access(stat_spun_ns, R_OK))
		stat_delayed[0] = stat_spun_ns[0] = '\0';
}

/* Read both counters; 0 if there are none.  One that fails is dropped. */
static void read_module_stats(unsigned long *delayed, unsigned long *spun_ns)
{
	*delayed = *spun_ns = 0;
	if (stat_delayed[0] && (lab_read_ulong(stat_delayed, delayed) ||
				lab_read_ulong(stat_spun_ns, spun_ns))) {
		fprintf(stderr, "calibrate: warning: cannot read %s: no module.csv\n",
			stat_delayed);
		stat_delayed[0] = stat_spun_ns[0] = '\0';
		*delayed = *spun_ns = 0;
	}
}

struct options {
	struct lab_common_opts common;	/* -o, --name, -q */
	const char *param;
	struct lab_opt_list loops;
	unsigned long calls;
	unsigned long batches;
	unsigned long warmup;
	unsigned long rounds;
	int cpu;		/* -1: not pinned */
	int use[SYS_NULL_COUNT];
};

static volatile sig_atomic_t stop_signal;
static const char *restore_path;
static unsigned long restore_value;
static int restore_armed;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void restore_loops(void)
{
	if (!restore_armed)
		return;
	restore_armed = 0;
	if (lab_write_ulong(restore_path, restore_value))
		fprintf(stderr, "calibrate: warning: could not restore %s to %lu: %s\n",
			restore_path, restore_value, strerror(errno));
}

static void take_syscall(void *value, const char *prog, const char *opt, const char *arg)
{
	int *use = value, k;

	for (k = 0; k < SYS_NULL_COUNT; k++)
		use[k] = !strcmp(arg, "both") || !strcmp(arg, syscall_names[k]);
	if (!use[SYS_NULL_CLOSE] && !use[SYS_NULL_GETPPID]) {
		fprintf(stderr, "%s: %s wants close, getppid or both, not '%s'\n", prog, opt, arg);
		exit(2);
	}
}

static void write_syscalls(struct lab_json *j, const char *key, const void *value)
{
	const int *use = value;

	lab_json_array(j, key);
	for (int sc = 0; sc < SYS_NULL_COUNT; sc++)
		if (use[sc])
			lab_json_str(j, NULL, syscall_names[sc]);
	lab_json_end(j);
}

static struct options o = {
	.loops.text = "0:700:50", .calls = 1000, .batches = 200, .rounds = 5, .warmup = 2,
	.cpu = -1, .use = { 1, 1 }, .param = DEFAULT_PARAM,
};

#define BIG 100000000UL
static const struct lab_opt options[] = {
	{ .name = "loops", .letter = 'l', .kind = LAB_OPT_LIST, .value = &o.loops, .max = 1000000,
	  .arg = "LIST", .json = "loops",
	  .help = "loop counts: '0,50,100', 'start:stop:step' or a mix" },
	{ .name = "batches", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &o.batches,
	  .min = 2, .max = BIG, .json = "batches", .help = "timed batches per point" },
	{ .name = "calls", .kind = LAB_OPT_ULONG, .value = &o.calls, .min = 1, .max = BIG,
	  .json = "calls", .help = "system calls per timed batch (the reference\n"
				   "timed 10000 between two clock reads)" },
	{ .name = "rounds", .kind = LAB_OPT_ULONG, .value = &o.rounds, .min = 1, .max = BIG,
	  .json = "rounds", .help = "passes over the loop list, alternating direction, the\n"
				    "batches shared among them, so that slow drift of the\n"
				    "machine's speed cannot tilt the fit" },
	{ .name = "warmup", .kind = LAB_OPT_ULONG, .value = &o.warmup, .max = BIG,
	  .json = "warmup", .help = "untimed batches at each visit of a point" },
	{ .name = "syscall", .kind = LAB_OPT_CUSTOM, .value = o.use, .arg = "NAME",
	  .json = "syscalls", .parse = take_syscall, .write = write_syscalls,
	  .help = "close, getppid or both (default both)" },
	{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPU, .value = &o.cpu, .arg = "CPU",
	  .json = "cpu", .help = "pin to this CPU, or 'none'" },
	{ .name = "param", .kind = LAB_OPT_STR, .value = &o.param, .arg = "PATH",
	  .json = "param", .help = "the loops parameter" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: calibrate [options]\n"
		"\n"
		"Time null system calls at each delay-module loop count and fit\n"
		"latency = intercept + slope x loops.  Needs root and the delay module.\n"
		"Writes OUTPUT/calibrate-<date>-<time>/ with raw.csv (every timed batch)\n"
		"and meta.json; 'lab analyse DIR' summarises and plots.",
	.notes = "Short batches, many of them, and their median: a batch that an interrupt\n"
		"or the host's other work slowed is one outlier among 200, not a shifted mean.",
	.example = "calibrate -l 0:700:50 -n 200 --calls 1000 -C 0 -o results",
	.opts = options,
	.common = &o.common,
};

static void parse_options(int argc, char **argv)
{
	lab_opts_parse(&tool, argc, argv, 0);
	if (o.rounds > o.batches)
		o.rounds = o.batches;
}

/* Time one batch of @calls null system calls; returns ns per call. */
static double time_batch(enum null_syscall sc, unsigned long calls)
{
	uint64_t t0, t1;
	unsigned long i;

	t0 = lab_now_ns();
	if (sc == SYS_NULL_CLOSE) {
		for (i = 0; i < calls; i++)
			syscall(SYS_close, NOT_AN_FD);
	} else {
		for (i = 0; i < calls; i++)
			syscall(SYS_getppid);
	}
	t1 = lab_now_ns();
	return (double)(t1 - t0) / (double)calls;
}

/*
 * One visit of a point: warm up, then time @n batches into @samples.
 * Returns -1 if a signal asked us to stop.
 */
static int visit_point(const struct options *o, enum null_syscall sc, unsigned long n,
		       double *samples)
{
	unsigned long i;

	for (i = 0; i < o->warmup && !stop_signal; i++)
		time_batch(sc, o->calls);
	for (i = 0; i < n && !stop_signal; i++)
		samples[i] = time_batch(sc, o->calls);
	return stop_signal ? -1 : 0;
}

static double zero_point(const struct point *pts, int n, enum null_syscall sc,
			 const struct lab_fit *fit)
{
	for (int i = 0; i < n; i++)
		if (pts[i].sc == sc && pts[i].loops == 0)
			return pts[i].s.p50;
	return fit->intercept;
}

/* The settings part of meta.json. */
static char *settings_json(void)
{
	struct lab_json j;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	lab_opts_json(&j, &tool);
	lab_json_end(&j);
	return lab_json_text(&j);
}

/*
 * module.csv: per point what the module measured itself over all visits
 * (warm-up batches included): calls delayed and ns spun.  Only with a
 * module that has these counters.
 */
static int write_module(const struct lab_result *r, const struct point *pts, int npts)
{
	FILE *f;
	int k;

	if (!stat_delayed[0])
		return 0;
	f = lab_result_file(r, "module.csv");
	if (!f)
		return -1;
	fprintf(f, "syscall,loops,delayed,spun_ns\n");
	for (k = 0; k < npts; k++)
		fprintf(f, "%s,%lu,%lu,%lu\n", syscall_names[pts[k].sc], pts[k].loops,
			pts[k].delayed, pts[k].spun_ns);
	return fclose(f);
}

/* raw.csv: one row per timed batch, with the round it was taken in. */
static int write_raw(const struct lab_result *r, const struct options *o,
		     const struct point *pts, int npts, const double *samples)
{
	FILE *f = lab_result_file(r, "raw.csv");
	unsigned long b, round, done, share;
	int k;

	if (!f)
		return -1;
	fprintf(f, "syscall,loops,round,batch,calls,ns_per_call\n");
	for (k = 0; k < npts; k++) {
		for (round = 0, done = 0; round < o->rounds; round++, done += share) {
			share = o->batches / o->rounds + (round < o->batches % o->rounds);
			for (b = done; b < done + share; b++)
				fprintf(f, "%s,%lu,%lu,%lu,%lu,%.3f\n", syscall_names[pts[k].sc],
					pts[k].loops, round, b, o->calls,
					samples[(size_t)k * o->batches + b]);
		}
	}
	return fclose(f);
}

/*
 * What calibrate needs before it makes anything: the loops parameter, root,
 * the loop count to put back (*@old) and the CPU.  0, or 1 after one line.
 */
static int check_setup(const struct options *o, unsigned long *old)
{
	if (access(o->param, F_OK)) {
		if (errno == ENOENT)
			fprintf(stderr, "calibrate: %s does not exist: is the delay module loaded? "
				"(insmod modules/delay/delay.ko)\n", o->param);
		else
			fprintf(stderr, "calibrate: cannot reach %s: %s\n", o->param,
				strerror(errno));
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "calibrate: must run as root to set %s\n", o->param);
		return 1;
	}
	if (lab_read_ulong(o->param, old)) {
		fprintf(stderr, "calibrate: cannot read %s: %s\n", o->param, strerror(errno));
		return 1;
	}
	if (o->cpu >= 0 && lab_pin_cpu(o->cpu)) {
		fprintf(stderr, "calibrate: cannot pin to CPU %d: %s\n", o->cpu, strerror(errno));
		return 1;
	}
	return 0;
}

/* Put @old back into the loops parameter at exit and on a stop signal. */
static void arm_restore(const char *param, unsigned long old)
{
	struct sigaction sa = { .sa_handler = on_signal };

	restore_path = param;
	restore_value = old;
	restore_armed = 1;
	atexit(restore_loops);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/*
 * The points, loop count by loop count and system call by system call
 * within it, and room for every point's batches.  Their number, or -1.
 */
static int make_points(const struct options *o, struct point **pts, double **samples)
{
	int nsc = o->use[SYS_NULL_CLOSE] + o->use[SYS_NULL_GETPPID];
	int npts = o->loops.n * nsc, i, k, sc;

	*pts = calloc((size_t)npts, sizeof(**pts));
	*samples = calloc((size_t)npts * o->batches, sizeof(**samples));
	if (!*pts || !*samples)
		return -1;
	for (i = 0, k = 0; i < o->loops.n; i++) {
		for (sc = 0; sc < SYS_NULL_COUNT; sc++) {
			if (!o->use[sc])
				continue;
			(*pts)[k].sc = sc;
			(*pts)[k++].loops = o->loops.v[i];
		}
	}
	return npts;
}

/*
 * Time every point in serpentine passes: round r visits the loop counts
 * upwards if r is even, downwards if odd, and takes its share of each
 * point's batches.  0; -1 if a signal stopped it; 1 if the module refused
 * a loop count (said why).
 */
static int measure(const struct options *o, struct point *pts, double *samples)
{
	int nsc = o->use[SYS_NULL_CLOSE] + o->use[SYS_NULL_GETPPID], i, j, k;
	uint64_t start = lab_now_ns();
	unsigned long r, done;

	for (r = 0, done = 0; r < o->rounds; r++) {
		unsigned long share = o->batches / o->rounds + (r < o->batches % o->rounds);

		for (j = 0; j < o->loops.n; j++) {
			i = r % 2 ? o->loops.n - 1 - j : j;
			if (lab_write_ulong(o->param, o->loops.v[i])) {
				fprintf(stderr, "calibrate: the module refused loops=%lu: %s\n",
					o->loops.v[i], strerror(errno));
				return 1;
			}
			for (k = i * nsc; k < (i + 1) * nsc; k++) {
				double *at = samples + (size_t)k * o->batches + done;
				unsigned long d0, s0, d1, s1;

				read_module_stats(&d0, &s0);
				if (visit_point(o, pts[k].sc, share, at))
					return -1;
				read_module_stats(&d1, &s1);
				pts[k].delayed += d1 - d0;
				pts[k].spun_ns += s1 - s0;
			}
		}
		done += share;
		if (!o->common.quiet) {
			double el = (double)(lab_now_ns() - start) / 1e9;

			fprintf(stderr, "round %lu/%lu: %lu batches of %lu calls at %d loop counts "
				"(%.0f s elapsed, ~%.0f s left)\n", r + 1, o->rounds, share,
				o->calls, o->loops.n, el, el / (double)done *
				(double)(o->batches - done));
		}
	}
	return 0;
}

/* A first least-squares fit of each system call's medians against loops. */
static int fit_points(const struct options *o, const struct point *pts, int npts,
		      struct lab_fit fits[SYS_NULL_COUNT])
{
	double *xs = calloc((size_t)o->loops.n, sizeof(*xs));
	double *ys = calloc((size_t)o->loops.n, sizeof(*ys));
	int i, k, sc;

	if (!xs || !ys) {
		free(xs);
		free(ys);
		return -1;
	}
	for (sc = 0; sc < SYS_NULL_COUNT; sc++) {
		if (!o->use[sc])
			continue;
		for (i = 0, k = 0; i < npts; i++) {
			if (pts[i].sc != (enum null_syscall)sc)
				continue;
			xs[k] = (double)pts[i].loops;
			ys[k++] = pts[i].s.p50;
		}
		if (k >= 2 && lab_linfit(xs, ys, (size_t)k, &fits[sc]))
			fprintf(stderr, "calibrate: cannot fit %s: the loop counts are all equal\n",
				syscall_names[sc]);
	}
	free(xs);
	free(ys);
	return 0;
}

/* The console's table: every point, then each fit. */
static void print_table(const struct options *o, const struct point *pts, int npts,
			const struct lab_fit fits[SYS_NULL_COUNT])
{
	int i, sc;

	printf("%-8s %7s %11s %10s %10s %6s %10s\n", "syscall", "loops", "median_ns",
	       "min_ns", "stddev_ns", "n", "added_ns");
	for (i = 0; i < npts; i++)
		printf("%-8s %7lu %11.1f %10.1f %10.2f %6zu %10.1f\n",
		       syscall_names[pts[i].sc], pts[i].loops, pts[i].s.p50, pts[i].s.min,
		       pts[i].s.stddev, pts[i].s.n,
		       pts[i].s.p50 - zero_point(pts, npts, pts[i].sc, &fits[pts[i].sc]));
	for (sc = 0; sc < SYS_NULL_COUNT; sc++)
		if (o->use[sc] && fits[sc].n)
			printf("fit %-8s latency = %.1f ns + %.4f ns/loop x loops   "
			       "R^2 = %.5f (%zu medians; analyse.py fits robustly)\n", syscall_names[sc],
			       fits[sc].intercept, fits[sc].slope, fits[sc].r2, fits[sc].n);
}

int main(int argc, char **argv)
{
	struct lab_fit fits[SYS_NULL_COUNT] = { 0 };
	struct lab_result res = { 0 };
	struct point *pts;
	double *samples;
	unsigned long old;
	char *settings;
	int npts, k, status;

	parse_options(argc, argv);
	if (check_setup(&o, &old))
		return 1;
	settings = settings_json();
	if (!settings) {
		perror(PROG ": settings");
		return 1;
	}
	if (lab_result_open(&res, PROG, o.common.outdir, PROG, o.common.name, argc, argv, settings))
		return 1;
	free(settings);

	find_module_stats(o.param);
	arm_restore(o.param, old);
	npts = make_points(&o, &pts, &samples);
	if (npts < 0) {
		perror("calibrate");
		lab_result_abort(&res);
		return 1;
	}
	status = measure(&o, pts, samples);
	if (status < 0)
		goto interrupted;
	if (status) {
		lab_result_abort(&res);
		return status;
	}
	for (k = 0; k < npts; k++)
		lab_summarize(samples + (size_t)k * o.batches, o.batches, &pts[k].s);
	restore_loops();
	if (fit_points(&o, pts, npts, fits)) {
		perror("calibrate");
		lab_result_abort(&res);
		return 1;
	}
	print_table(&o, pts, npts, fits);

	if (write_raw(&res, &o, pts, npts, samples) || write_module(&res, pts, npts) ||
	    lab_result_commit(&res)) {
		fprintf(stderr, "calibrate: writing results to %s failed: %s\n", res.dir,
			strerror(errno));
		lab_result_abort(&res);
		return 1;
	}
	printf("results: %s\n", res.final);
	return 0;

interrupted:
	restore_loops();
	lab_result_abort(&res);
	fprintf(stderr, "calibrate: interrupted by signal %d; loops restored to %lu, "
		"nothing written\n", (int)stop_signal, old);
	return 128 + (int)stop_signal;
}
