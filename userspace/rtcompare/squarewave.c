// SPDX-License-Identifier: GPL-2.0
/*
 * squarewave - a periodic task that toggles a state at a requested
 * frequency and timestamps every edge
 *
 * A VM has no GPIO pin and no logic analyser: the CLOCK_MONOTONIC time of
 * every edge, taken right after the task wakes for it, is the scope's
 * trace.  Two implementations (a third, Python with time.sleep, is
 * lablib.rtcompare.squarewave):
 *
 *   nanosleep  a normal task: toggle, then nanosleep() for half a period,
 *              relative, so every late wake-up delays all later edges
 *   rt         SCHED_FIFO (priority 49 by default), mlockall(), a stack
 *              touched in advance, and clock_nanosleep() to absolute edge
 *              times, so a late wake-up delays only its own edge
 *
 * For each requested frequency it records up to N periods (2N edges), or
 * what fits in --seconds, into edges.csv (freq_hz,edge,t_ns) of a new
 * result folder with meta.json.  analyse.py finds, per implementation and
 * kernel, the highest frequency whose measured period stays within 10 % of
 * the requested one.  --trace-marker also writes one ftrace marker per
 * edge, so KernelShark shows the edges beside the scheduler's events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../lib/liblab.h"

#define PROG "squarewave"
#define TRACE_MARKER "/sys/kernel/tracing/trace_marker"
/* The most frequent edge a timer can be asked for: 1 MHz. */
#define MAX_FREQ 1000000UL
/* Stack touched before the first edge in rt mode, so no edge faults it in. */
#define STACK_PREFAULT (256 * 1024)

enum mode { MODE_NANOSLEEP, MODE_RT };
static const char *const mode_names[] = { "nanosleep", "rt", NULL };

struct options {
	int mode;		/* enum mode */
	struct lab_opt_list freqs;
	unsigned long periods;
	unsigned long max_seconds;
	unsigned long priority;
	int cpu;
	int trace_marker;
	struct lab_common_opts common;	/* -o, --name, -q */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static struct options o = {
	.mode = MODE_NANOSLEEP, .freqs.text = "100,1000,10000", .periods = 500, .max_seconds = 2,
	.priority = 49, .cpu = -1,
};

static const struct lab_opt options[] = {
	{ .name = "mode", .kind = LAB_OPT_CHOICE, .value = &o.mode, .choices = mode_names,
	  .arg = "MODE", .json = "mode",
	  .help = "nanosleep: a normal task sleeping half a period,\n"
		  "relative; rt: SCHED_FIFO, mlockall, a pre-faulted\n"
		  "stack and absolute clock_nanosleep (needs root)" },
	{ .name = "freq", .letter = 'f', .kind = LAB_OPT_LIST, .value = &o.freqs,
	  .min = 1, .max = MAX_FREQ, .arg = "LIST", .json = "freqs_hz",
	  .help = "frequencies in Hz" },
	{ .letter = 'n', .kind = LAB_OPT_ULONG, .value = &o.periods, .min = 2, .max = 10000000,
	  .json = "periods", .help = "periods (2 edges each) per frequency" },
	{ .name = "seconds", .kind = LAB_OPT_ULONG, .value = &o.max_seconds, .min = 1,
	  .max = 3600, .arg = "S", .json = "max_seconds", .help = "at most S seconds per frequency" },
	{ .name = "priority", .kind = LAB_OPT_ULONG, .value = &o.priority, .min = 1, .max = 99,
	  .help = "SCHED_FIFO priority in rt mode" },
	{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPU, .value = &o.cpu, .arg = "CPU",
	  .json = "cpu", .help = "pin to this CPU, or 'none'" },
	{ .name = "trace-marker", .kind = LAB_OPT_FLAG, .value = &o.trace_marker,
	  .json = "trace_marker", .help = "one ftrace marker per edge (" TRACE_MARKER ")" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: squarewave [options]\n"
		"\n"
		"Toggle a state at each requested frequency and timestamp every edge\n"
		"(CLOCK_MONOTONIC ns) into OUTPUT/squarewave-<date>-<time>/edges.csv.",
	.example = "squarewave --mode rt -f 1000,2000,5000 -n 1000 -C 1",
	.opts = options,
	.common = &o.common,
};


static void ts_add(struct timespec *t, unsigned long ns)
{
	t->tv_nsec += ns % 1000000000UL;
	t->tv_sec += ns / 1000000000UL + t->tv_nsec / 1000000000L;
	t->tv_nsec %= 1000000000L;
}

static void prefault_stack(void)
{
	volatile char buf[STACK_PREFAULT];

	memset((char *)buf, 0, sizeof(buf));
}

/*
 * One frequency: record edges into @t until 2 * periods edges or the time
 * limit.  Returns the number of edges recorded; the state toggled is
 * @level, which the trace marker shows.
 */
static size_t run_wave(const struct options *o, unsigned long freq, uint64_t *t, int marker)
{
	unsigned long half = 500000000UL / freq;
	size_t edges = 2 * o->periods, i;
	uint64_t deadline = lab_now_ns() + o->max_seconds * 1000000000ULL;
	struct timespec next, rel = { .tv_sec = half / 1000000000UL,
				      .tv_nsec = half % 1000000000UL };
	int level = 0;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &next);
	ts_add(&next, half);
	for (i = 0; i < edges && !stop_signal; i++) {
		if (o->mode == MODE_RT) {
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR &&
			       !stop_signal)
				;
			ts_add(&next, half);
		} else {
			nanosleep(&rel, NULL);
		}
		t[i] = lab_now_ns();
		level = !level;
		if (marker >= 0) {
			int len = snprintf(msg, sizeof(msg), "squarewave %lu Hz edge %zu level %d",
					   freq, i, level);

			if (write(marker, msg, len) < 0)
				marker = -1;
		}
		if (t[i] > deadline) {
			i++;
			break;
		}
	}
	return i;
}

/* The settings part of meta.json: the options, and what the mode made of them. */
static char *settings_json(void)
{
	int rt = o.mode == MODE_RT;
	struct lab_json j;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	lab_json_str(&j, "impl", rt ? "c-rt" : "c-nanosleep");
	lab_opts_json(&j, &tool);
	lab_json_str(&j, "policy", rt ? "SCHED_FIFO" : "SCHED_OTHER");
	lab_json_uint(&j, "priority", rt ? o.priority : 0);
	lab_json_bool(&j, "mlockall", rt);
	lab_json_str(&j, "sleep", rt ? "clock_nanosleep absolute" : "nanosleep relative");
	lab_json_end(&j);
	return lab_json_text(&j);
}

int main(int argc, char **argv)
{
	struct lab_result r;
	struct sigaction sa = { .sa_handler = on_signal };
	char *settings;
	uint64_t *t;
	int marker = -1;
	FILE *csv;

	lab_opts_parse(&tool, argc, argv, 0);
	/* Every check before the result folder exists. */
	if (o.mode == MODE_RT && geteuid() != 0) {
		fprintf(stderr, PROG ": --mode rt needs root (SCHED_FIFO, mlockall)\n");
		return 1;
	}
	if (o.trace_marker) {
		marker = open(TRACE_MARKER, O_WRONLY | O_CLOEXEC);
		if (marker < 0) {
			fprintf(stderr, PROG ": cannot open " TRACE_MARKER ": %s\n", strerror(errno));
			return 1;
		}
	}
	t = calloc(2 * o.periods, sizeof(*t));
	if (!t) {
		perror(PROG ": calloc");
		return 1;
	}
	if (o.cpu >= 0 && lab_pin_cpu(o.cpu)) {
		fprintf(stderr, PROG ": cannot pin to CPU %d: %s\n", o.cpu, strerror(errno));
		return 1;
	}
	if (o.mode == MODE_RT) {
		struct sched_param sp = { .sched_priority = (int)o.priority };

		if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
			fprintf(stderr, PROG ": mlockall: %s\n", strerror(errno));
			return 1;
		}
		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			fprintf(stderr, PROG ": SCHED_FIFO %lu: %s\n", o.priority, strerror(errno));
			return 1;
		}
		prefault_stack();
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (lab_result_open(&r, PROG, o.common.outdir, "squarewave", o.common.name, 0, NULL, NULL))
		return 1;
	csv = lab_result_file(&r, "edges.csv");
	if (!csv)
		goto fail;
	fprintf(csv, "freq_hz,edge,t_ns\n");
	for (int f = 0; f < o.freqs.n && !stop_signal; f++) {
		size_t n = run_wave(&o, o.freqs.v[f], t, marker);

		for (size_t i = 0; i < n; i++)
			fprintf(csv, "%lu,%zu,%llu\n", o.freqs.v[f], i, (unsigned long long)t[i]);
		if (!o.common.quiet)
			fprintf(stderr, PROG ": %s %lu Hz: %zu edges\n",
				o.mode == MODE_RT ? "rt" : "nanosleep", o.freqs.v[f], n);
	}
	if (stop_signal)
		goto stopped;
	if (fclose(csv)) {
		csv = NULL;
		fprintf(stderr, PROG ": writing edges.csv: %s\n", strerror(errno));
		goto fail;
	}
	csv = NULL;
	settings = settings_json();
	if (!settings) {
		perror(PROG ": settings");
		goto fail;
	}
	if (lab_meta_write(&r, argc, argv, settings)) {
		free(settings);
		goto fail;
	}
	free(settings);
	if (lab_result_commit(&r))
		goto fail;
	printf("%s\n", r.final);
	free(t);
	free(o.freqs.v);
	return 0;
stopped:
	if (csv)
		fclose(csv);
	lab_result_abort(&r);
	fprintf(stderr, PROG ": stopped by signal %d; nothing kept\n", (int)stop_signal);
	return 130;
fail:
	if (csv)
		fclose(csv);
	lab_result_abort(&r);
	return 1;
}
