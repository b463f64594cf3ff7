// SPDX-License-Identifier: GPL-2.0
/*
 * calibrate - turn the delay module's loop count into added system-call
 * latency.
 *
 * For each loop count it sets /sys/module/delay/parameters/loops, times
 * batches of null system calls (close() of a descriptor that is not open,
 * and getppid()), and fits latency = intercept + slope x loops.  It prints
 * a table and writes calibration.csv, calibration.json and, through
 * userspace/analysis/plot_calibration.py, calibration.png.
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

#include "../lib/lab.h"

#define DEFAULT_PARAM "/sys/module/delay/parameters/loops"
#define NOT_AN_FD 100

enum null_syscall { SYS_NULL_CLOSE, SYS_NULL_GETPPID, SYS_NULL_COUNT };

static const char *const syscall_names[SYS_NULL_COUNT] = { "close", "getppid" };

struct point {
	enum null_syscall sc;
	unsigned long loops;
	struct lab_summary s;	/* ns per call, one sample per batch */
};

struct options {
	const char *param;
	const char *outdir;
	unsigned long *loops;
	int nloops;
	unsigned long calls;
	unsigned long batches;
	unsigned long warmup;
	unsigned long rounds;
	int cpu;
	int plot;
	int quiet;
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

static void usage(FILE *f)
{
	fprintf(f,
"usage: calibrate [options]\n"
"\n"
"Time null system calls at each delay-module loop count and fit\n"
"latency = intercept + slope x loops.  Needs root and the delay module.\n"
"\n"
"  -l, --loops LIST      loop counts: '0,50,100', 'start:stop:step' or a mix\n"
"                        (default 0:700:50)\n"
"  -c, --calls N         system calls per timed batch (default 1000; the\n"
"                        reference timed 10000 between two clock reads)\n"
"  -b, --batches N       timed batches per point (default 200)\n"
"  -r, --rounds N        passes over the loop list, alternating direction, the\n"
"                        batches shared among them, so that slow drift of the\n"
"                        machine's speed cannot tilt the fit (default 5)\n"
"  -w, --warmup N        untimed batches at each visit of a point (default 2)\n"
"  -s, --syscall NAME    close, getppid or both (default both)\n"
"  -C, --cpu N           pin to CPU N (default: not pinned)\n"
"  -o, --output DIR      write calibration.{csv,json,png} there (default results)\n"
"      --param PATH      the loops parameter (default " DEFAULT_PARAM ")\n"
"      --no-plot         do not draw calibration.png\n"
"  -q, --quiet           no progress lines\n"
"  -h, --help            this text\n"
"\n"
"Short batches, many of them, and their median: a batch that an interrupt\n"
"or the host's other work slowed is one outlier among 200, not a shifted mean.\n"
"\n"
"Example:  calibrate -l 0:700:50 -b 200 -c 1000 --cpu 0 -o results\n");
}

static unsigned long parse_count(const char *opt, const char *arg, unsigned long min)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min) {
		fprintf(stderr, "calibrate: %s wants a whole number >= %lu, not '%s'\n",
			opt, min, arg);
		exit(2);
	}
	return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "loops", required_argument, NULL, 'l' },
		{ "calls", required_argument, NULL, 'c' },
		{ "batches", required_argument, NULL, 'b' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "syscall", required_argument, NULL, 's' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "output", required_argument, NULL, 'o' },
		{ "param", required_argument, NULL, 'P' },
		{ "no-plot", no_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *loops = "0:700:50";
	int c, k;

	*o = (struct options){
		.param = DEFAULT_PARAM, .outdir = "results", .calls = 1000,
		.batches = 200, .warmup = 2, .rounds = 5, .cpu = -1, .plot = 1,
		.use = { 1, 1 },
	};
	while ((c = getopt_long(argc, argv, "l:c:b:r:w:s:C:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': loops = optarg; break;
		case 'c': o->calls = parse_count("--calls", optarg, 1); break;
		case 'b': o->batches = parse_count("--batches", optarg, 2); break;
		case 'w': o->warmup = parse_count("--warmup", optarg, 0); break;
		case 'r': o->rounds = parse_count("--rounds", optarg, 1); break;
		case 'C': o->cpu = (int)parse_count("--cpu", optarg, 0); break;
		case 'o': o->outdir = optarg; break;
		case 'P': o->param = optarg; break;
		case 'N': o->plot = 0; break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		case 's':
			for (k = 0; k < SYS_NULL_COUNT; k++)
				o->use[k] = !strcmp(optarg, "both") ||
					    !strcmp(optarg, syscall_names[k]);
			if (!o->use[SYS_NULL_CLOSE] && !o->use[SYS_NULL_GETPPID]) {
				fprintf(stderr, "calibrate: --syscall is close, getppid or both, not '%s'\n",
					optarg);
				exit(2);
			}
			break;
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "calibrate: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (o->rounds > o->batches)
		o->rounds = o->batches;
	o->nloops = lab_parse_uint_list(loops, &o->loops);
	if (o->nloops < 0) {
		fprintf(stderr, "calibrate: bad loop list '%s' (want e.g. 0,50,100 or 0:700:50)\n",
			loops);
		exit(2);
	}
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

static FILE *open_out(const char *dir, const char *name, char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "calibrate: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static double zero_point(const struct point *pts, int n, enum null_syscall sc,
			 const struct lab_fit *fit)
{
	for (int i = 0; i < n; i++)
		if (pts[i].sc == sc && pts[i].loops == 0)
			return pts[i].s.p50;
	return fit->intercept;
}

static int write_results(const struct options *o, const struct point *pts, int npts,
			 const struct lab_fit *fits)
{
	char path[PATH_MAX], tmp[PATH_MAX], stamp[64];
	struct utsname u;
	time_t now = time(NULL);
	FILE *f;
	int i, sc, first;

	uname(&u);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

	/* Written under a temporary name and renamed: never a half file. */
	f = open_out(o->outdir, "calibration.csv.tmp", tmp, sizeof(tmp));
	if (!f)
		return -1;
	fprintf(f, "syscall,loops,n,calls_per_batch,median_ns,min_ns,mean_ns,stddev_ns,"
		   "p90_ns,max_ns,added_ns,fit_ns\n");
	for (i = 0; i < npts; i++) {
		const struct point *p = &pts[i];
		const struct lab_fit *fit = &fits[p->sc];

		fprintf(f, "%s,%lu,%zu,%lu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
			syscall_names[p->sc], p->loops, p->s.n, o->calls, p->s.p50,
			p->s.min, p->s.mean, p->s.stddev, p->s.p90, p->s.max,
			p->s.p50 - zero_point(pts, npts, p->sc, fit),
			fit->intercept + fit->slope * (double)p->loops);
	}
	if (fclose(f))
		return -1;
	snprintf(path, sizeof(path), "%s/calibration.csv", o->outdir);
	if (rename(tmp, path))
		return -1;

	f = open_out(o->outdir, "calibration.json.tmp", tmp, sizeof(tmp));
	if (!f)
		return -1;
	fprintf(f, "{\n  \"tool\": \"calibrate\",\n  \"date\": \"%s\",\n  \"kernel\": ", stamp);
	lab_json_string(f, u.release);
	fprintf(f, ",\n  \"machine\": ");
	lab_json_string(f, u.machine);
	fprintf(f, ",\n  \"calls_per_batch\": %lu,\n  \"batches\": %lu,\n  \"rounds\": %lu,\n"
		   "  \"warmup_batches\": %lu,\n  \"cpu\": %d,\n  \"unit\": \"ns per call\",\n",
		o->calls, o->batches, o->rounds, o->warmup, o->cpu);
	fprintf(f, "  \"fits\": {");
	first = 1;
	for (sc = 0; sc < SYS_NULL_COUNT; sc++) {
		if (!o->use[sc])
			continue;
		fprintf(f, "%s\n    \"%s\": {\"intercept_ns\": %.4f, \"ns_per_loop\": %.6f, "
			   "\"r2\": %.6f, \"points\": %zu}",
			first ? "" : ",", syscall_names[sc], fits[sc].intercept,
			fits[sc].slope, fits[sc].r2, fits[sc].n);
		first = 0;
	}
	fprintf(f, "\n  },\n  \"points\": [");
	for (i = 0; i < npts; i++) {
		const struct point *p = &pts[i];

		fprintf(f, "%s\n    {\"syscall\": \"%s\", \"loops\": %lu, \"n\": %zu, "
			   "\"median_ns\": %.3f, \"min_ns\": %.3f, \"mean_ns\": %.3f, "
			   "\"stddev_ns\": %.3f, \"p90_ns\": %.3f, \"max_ns\": %.3f, "
			   "\"added_ns\": %.3f}",
			i ? "," : "", syscall_names[p->sc], p->loops, p->s.n, p->s.p50,
			p->s.min, p->s.mean, p->s.stddev, p->s.p90, p->s.max,
			p->s.p50 - zero_point(pts, npts, p->sc, &fits[p->sc]));
	}
	fprintf(f, "\n  ]\n}\n");
	if (fclose(f))
		return -1;
	snprintf(path, sizeof(path), "%s/calibration.json", o->outdir);
	return rename(tmp, path);
}

/* Draw calibration.png with userspace/analysis/plot_calibration.py. */
static void plot(const struct options *o)
{
	char json[PATH_MAX], png[PATH_MAX];
	const char *args[] = { json, png, NULL };

	snprintf(json, sizeof(json), "%s/calibration.json", o->outdir);
	snprintf(png, sizeof(png), "%s/calibration.png", o->outdir);
	if (lab_run_analysis("plot_calibration.py", args))
		fprintf(stderr, "calibrate: warning: no plot drawn (plot_calibration.py failed); "
			"the CSV and JSON are complete\n");
}

int main(int argc, char **argv)
{
	struct lab_fit fits[SYS_NULL_COUNT] = { 0 };
	struct options o;
	struct point *pts;
	double *samples, *xs, *ys;
	unsigned long old;
	int npts, nsc, i, j, sc, k;
	unsigned long r, done;
	uint64_t start;

	parse_options(argc, argv, &o);

	if (access(o.param, F_OK)) {
		if (errno == ENOENT)
			fprintf(stderr, "calibrate: %s does not exist: is the delay module loaded? "
				"(insmod modules/delay/delay.ko)\n", o.param);
		else
			fprintf(stderr, "calibrate: cannot reach %s: %s\n", o.param,
				strerror(errno));
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "calibrate: must run as root to set %s\n", o.param);
		return 1;
	}
	if (lab_read_ulong(o.param, &old)) {
		fprintf(stderr, "calibrate: cannot read %s: %s\n", o.param, strerror(errno));
		return 1;
	}
	if (lab_mkdirs(o.outdir)) {
		fprintf(stderr, "calibrate: cannot create %s: %s\n", o.outdir, strerror(errno));
		return 1;
	}
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "calibrate: cannot pin to CPU %d: %s\n", o.cpu,
				strerror(errno));
			return 1;
		}
	}

	restore_path = o.param;
	restore_value = old;
	restore_armed = 1;
	atexit(restore_loops);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	nsc = o.use[SYS_NULL_CLOSE] + o.use[SYS_NULL_GETPPID];
	npts = o.nloops * nsc;
	pts = calloc((size_t)npts, sizeof(*pts));
	samples = calloc((size_t)npts * o.batches, sizeof(*samples));
	xs = calloc((size_t)o.nloops, sizeof(*xs));
	ys = calloc((size_t)o.nloops, sizeof(*ys));
	if (!pts || !samples || !xs || !ys) {
		perror("calibrate");
		return 1;
	}
	for (i = 0, k = 0; i < o.nloops; i++) {
		for (sc = 0; sc < SYS_NULL_COUNT; sc++) {
			if (!o.use[sc])
				continue;
			pts[k].sc = sc;
			pts[k++].loops = o.loops[i];
		}
	}

	/*
	 * Serpentine passes: round r visits the loop counts upwards if r is
	 * even, downwards if odd, and takes its share of each point's batches.
	 */
	start = lab_now_ns();
	for (r = 0, done = 0; r < o.rounds; r++) {
		unsigned long share = o.batches / o.rounds + (r < o.batches % o.rounds);

		for (j = 0; j < o.nloops; j++) {
			i = r % 2 ? o.nloops - 1 - j : j;
			if (lab_write_ulong(o.param, o.loops[i])) {
				fprintf(stderr, "calibrate: the module refused loops=%lu: %s\n",
					o.loops[i], strerror(errno));
				return 1;
			}
			for (k = i * nsc; k < (i + 1) * nsc; k++) {
				double *at = samples + (size_t)k * o.batches + done;

				if (visit_point(&o, pts[k].sc, share, at))
					goto interrupted;
			}
		}
		done += share;
		if (!o.quiet) {
			double el = (double)(lab_now_ns() - start) / 1e9;

			fprintf(stderr, "round %lu/%lu: %lu batches of %lu calls at %d loop counts "
				"(%.0f s elapsed, ~%.0f s left)\n", r + 1, o.rounds, share,
				o.calls, o.nloops, el, el / (double)done *
				(double)(o.batches - done));
		}
	}
	for (k = 0; k < npts; k++)
		lab_summarize(samples + (size_t)k * o.batches, o.batches, &pts[k].s);
	restore_loops();

	for (sc = 0; sc < SYS_NULL_COUNT; sc++) {
		if (!o.use[sc])
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

	printf("%-8s %7s %11s %10s %10s %6s %10s\n", "syscall", "loops", "median_ns",
	       "min_ns", "stddev_ns", "n", "added_ns");
	for (i = 0; i < npts; i++)
		printf("%-8s %7lu %11.1f %10.1f %10.2f %6zu %10.1f\n",
		       syscall_names[pts[i].sc], pts[i].loops, pts[i].s.p50, pts[i].s.min,
		       pts[i].s.stddev, pts[i].s.n,
		       pts[i].s.p50 - zero_point(pts, npts, pts[i].sc, &fits[pts[i].sc]));
	for (sc = 0; sc < SYS_NULL_COUNT; sc++)
		if (o.use[sc] && fits[sc].n)
			printf("fit %-8s latency = %.1f ns + %.4f ns/loop x loops   "
			       "R^2 = %.5f (%zu points)\n", syscall_names[sc],
			       fits[sc].intercept, fits[sc].slope, fits[sc].r2, fits[sc].n);

	if (write_results(&o, pts, npts, fits)) {
		fprintf(stderr, "calibrate: writing results to %s failed: %s\n", o.outdir,
			strerror(errno));
		return 1;
	}
	if (o.plot)
		plot(&o);
	printf("results: %s/calibration.{csv,json%s}\n", o.outdir, o.plot ? ",png" : "");
	return 0;

interrupted:
	restore_loops();
	fprintf(stderr, "calibrate: interrupted by signal %d; loops restored to %lu, "
		"nothing written\n", (int)stop_signal, old);
	return 128 + (int)stop_signal;
}
