// SPDX-License-Identifier: GPL-2.0
/*
 * percall - time every single call of one system call
 *
 * For the peers experiment (userspace/peers): the lab's delay module side
 * by side with strace and perf.  Each call is timed on its own between two
 * clock_gettime(CLOCK_MONOTONIC) reads, which glibc answers from the vDSO
 * without entering the kernel, so the only system call between the two
 * reads is the measured one (a tracer that stops every call sees nothing
 * else).  What an empty pair of reads costs is measured first and written
 * to meta.json as clock_pair_ns; nothing is subtracted from raw.csv.
 *
 * Writes OUTPUT/percall-<date>-<time>/ (or OUTPUT/NAME/): raw.csv
 * (call,ns: one row per timed call) and meta.json.  Analysis happens on
 * the host ('lab analyse' reads a whole run's folders).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../lib/liblab.h"

#define PROG "percall"
#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"
#define MAX_CALLS 100000000ul

enum which { CALL_GETPPID, CALL_READ, CALL_COUNT };
static const char *const call_names[CALL_COUNT + 1] = { "getppid", "read", NULL };

struct options {
	int call;		/* enum which */
	unsigned long n, warmup;
	int cpu;		/* -1: not pinned */
	const char *casename;
	struct lab_common_opts common;	/* -o, --name, -q */
};

static struct options o = {
	.call = CALL_GETPPID, .n = 10000, .warmup = 1000, .cpu = 0,
};

static const struct lab_opt options[] = {
	{ .letter = 'n', .kind = LAB_OPT_ULONG, .value = &o.n, .min = 1, .max = MAX_CALLS,
	  .json = "n", .help = "timed calls" },
	{ .name = "warmup", .kind = LAB_OPT_ULONG, .value = &o.warmup, .max = MAX_CALLS,
	  .json = "warmup", .help = "untimed calls first" },
	{ .name = "syscall", .kind = LAB_OPT_CHOICE, .value = &o.call, .choices = call_names,
	  .arg = "NAME", .json = "syscall",
	  .help = "getppid (a null call) or read (1 byte from /dev/zero)" },
	{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPU, .value = &o.cpu, .arg = "CPU",
	  .json = "cpu", .help = "pin to this CPU, or 'none'" },
	{ .name = "case", .kind = LAB_OPT_NAME, .value = &o.casename, .arg = "NAME",
	  .json = "case",
	  .help = "what this run is, for the analysis (e.g. strace-1us);\n"
		  "letters, digits, '.', '_', '-' (default: none)" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: percall [options]\n"
		"\n"
		"Time N calls of one system call, each on its own between two\n"
		"clock_gettime(CLOCK_MONOTONIC) reads (vDSO: no system call of their own),\n"
		"after a warm-up.  Writes OUTPUT/percall-<date>-<time>/ with raw.csv\n"
		"(call,ns: every call, nothing subtracted) and meta.json (settings: the\n"
		"options, clock_pair_ns = median cost of an empty pair of reads,\n"
		"clocksource).  Run it under a tracer to time what the tracer adds.",
	.example = "strace -f -qq -o /dev/null -e trace=getppid \\\n"
		"              -e inject=getppid:delay_enter=1us -- \\\n"
		"              percall -n 10000 --syscall getppid --case strace-1us -o /tmp",
	.opts = options,
	.common = &o.common,
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * @n calls, each timed into ns[i] (NULL: warm-up, not kept).  One loop per
 * system call, so that nothing but the call sits between the two reads.
 * Returns the number of calls that failed.
 */
static unsigned long run(enum which call, int fd, unsigned long n, uint64_t *ns)
{
	unsigned long i, failed = 0;
	uint64_t t0, t1;
	char byte;
	long ret;

	for (i = 0; i < n; i++) {
		if (call == CALL_GETPPID) {
			t0 = now_ns();
			ret = syscall(SYS_getppid);
			t1 = now_ns();
			failed += ret < 0;
		} else {
			t0 = now_ns();
			ret = syscall(SYS_read, fd, &byte, 1);
			t1 = now_ns();
			failed += ret != 1;
		}
		if (ns)
			ns[i] = t1 - t0;
	}
	return failed;
}

/* The same loop with nothing between the reads: what timing itself costs. */
static void clock_pairs(unsigned long n, uint64_t *ns)
{
	uint64_t t0, t1;

	for (unsigned long i = 0; i < n; i++) {
		t0 = now_ns();
		t1 = now_ns();
		ns[i] = t1 - t0;
	}
}

static void summarize(const uint64_t *ns, unsigned long n, double *tmp, struct lab_summary *s)
{
	for (unsigned long i = 0; i < n; i++)
		tmp[i] = (double)ns[i];
	lab_summarize(tmp, n, s);
}

static void read_clocksource(char *buf, size_t size)
{
	FILE *f = fopen(CLOCKSOURCE, "r");

	snprintf(buf, size, "unknown");
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

static char *settings_json(const struct lab_summary *pair, const char *clocksource)
{
	struct lab_json j;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	lab_opts_json(&j, &tool);
	lab_json_double(&j, "clock_pair_ns", pair->p50, 1);
	lab_json_double(&j, "clock_pair_min_ns", pair->min, 1);
	lab_json_str(&j, "clock", "CLOCK_MONOTONIC");
	lab_json_bool(&j, "vdso", getauxval(AT_SYSINFO_EHDR) != 0);
	lab_json_str(&j, "clocksource", clocksource);
	lab_json_end(&j);
	return lab_json_text(&j);
}

int main(int argc, char **argv)
{
	struct lab_summary s, pair;
	struct lab_result res = { 0 };
	char clocksource[64], *settings;
	unsigned long failed, i;
	uint64_t *ns;
	double *tmp;
	int fd = -1;
	FILE *f;

	lab_opts_parse(&tool, argc, argv, 0);

	if (o.call == CALL_READ) {
		fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, PROG ": cannot open /dev/zero: %s\n", strerror(errno));
			return 1;
		}
	}
	if (o.cpu >= 0 && lab_pin_cpu(o.cpu)) {
		fprintf(stderr, PROG ": cannot pin to CPU %d: %s\n", o.cpu, strerror(errno));
		return 1;
	}
	ns = calloc(o.n, sizeof(*ns));
	tmp = calloc(o.n, sizeof(*tmp));
	if (!ns || !tmp) {
		fprintf(stderr, PROG ": no memory for %lu samples\n", o.n);
		return 1;
	}
	/* Touch every page now: no page fault inside a timed call. */
	memset(ns, 0xff, o.n * sizeof(*ns));
	memset(tmp, 0, o.n * sizeof(*tmp));

	clock_pairs(o.n, ns);		/* warm-up of the clock itself */
	clock_pairs(o.n, ns);
	summarize(ns, o.n, tmp, &pair);
	run(o.call, fd, o.warmup, NULL);
	failed = run(o.call, fd, o.n, ns);
	if (failed) {
		fprintf(stderr, PROG ": %lu of %lu %s calls failed\n", failed, o.n,
			call_names[o.call]);
		return 1;
	}
	summarize(ns, o.n, tmp, &s);
	read_clocksource(clocksource, sizeof(clocksource));

	/* The folder comes last: an interrupted run leaves nothing behind. */
	settings = settings_json(&pair, clocksource);
	if (!settings) {
		perror(PROG ": settings");
		return 1;
	}
	if (lab_result_open(&res, PROG, o.common.outdir, PROG, o.common.name, argc, argv, settings))
		return 1;
	f = lab_result_file(&res, "raw.csv");
	if (f) {
		fprintf(f, "call,ns\n");
		for (i = 0; i < o.n; i++)
			fprintf(f, "%lu,%llu\n", i, (unsigned long long)ns[i]);
	}
	if (!f || fclose(f) || lab_result_commit(&res)) {
		fprintf(stderr, PROG ": writing results to %s failed: %s\n", res.dir,
			strerror(errno));
		lab_result_abort(&res);
		return 1;
	}
	if (!o.common.quiet)
		printf("%s%s%s %lu calls: median %.0f ns, p99 %.0f ns, max %.0f ns "
		       "(clock pair %.0f ns) -> %s\n", o.casename ? o.casename : "",
		       o.casename ? ": " : "", call_names[o.call], o.n, s.p50, s.p99, s.max,
		       pair.p50, res.final);
	free(settings);
	free(ns);
	free(tmp);
	return 0;
}
