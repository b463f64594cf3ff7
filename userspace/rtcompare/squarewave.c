// SPDX-License-Identifier: GPL-2.0
/*
 * squarewave - a periodic task that toggles a state at a requested
 * frequency and timestamps every edge
 *
 * A VM has no GPIO pin and no logic analyser: the CLOCK_MONOTONIC time of
 * every edge, taken right after the task wakes for it, is the scope's
 * trace.  Two implementations (a third, Python with time.sleep, is
 * squarewave.py):
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
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../lib/lab.h"

#define PROG "squarewave"
#define TRACE_MARKER "/sys/kernel/tracing/trace_marker"
/* The most frequent edge a timer can be asked for: 1 MHz. */
#define MAX_FREQ 1000000UL
/* Stack touched before the first edge in rt mode, so no edge faults it in. */
#define STACK_PREFAULT (256 * 1024)

enum mode { MODE_NANOSLEEP, MODE_RT };

struct options {
	enum mode mode;
	unsigned long *freqs;
	int nfreqs;
	unsigned long periods;
	unsigned long max_seconds;
	unsigned long priority;
	int cpu;
	int trace_marker;
	const char *outdir;
	const char *name;
	int quiet;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: squarewave [options]\n"
"\n"
"Toggle a state at each requested frequency and timestamp every edge\n"
"(CLOCK_MONOTONIC ns) into OUTPUT/squarewave-<date>-<time>/edges.csv.\n"
"\n"
"      --mode MODE       nanosleep: a normal task sleeping half a period,\n"
"                        relative; rt: SCHED_FIFO, mlockall, a pre-faulted\n"
"                        stack and absolute clock_nanosleep (needs root)\n"
"                        (default nanosleep)\n"
"  -f, --freq LIST       frequencies in Hz, 1..%lu (default 100,1000,10000)\n"
"  -n N                  periods (2 edges each) per frequency (default 500)\n"
"      --seconds S       at most S seconds per frequency (default 2)\n"
"      --priority N      SCHED_FIFO priority in rt mode, 1..99 (default 49)\n"
"  -C, --cpu N           pin to CPU N, or 'none' (default: not pinned)\n"
"      --trace-marker    one ftrace marker per edge (" TRACE_MARKER ")\n"
"  -o, --output DIR      parent of the result folder (default results)\n"
"      --name NAME       the result folder's name\n"
"  -q, --quiet           no progress lines\n"
"  -h, --help            this text\n"
"\n"
"Example:  squarewave --mode rt -f 1000,2000,5000 -n 1000 -C 1\n", MAX_FREQ);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { O_MODE = 256, O_SECONDS, O_PRIORITY, O_MARKER, O_NAME };
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, O_MODE },
		{ "freq", required_argument, NULL, 'f' },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "priority", required_argument, NULL, O_PRIORITY },
		{ "cpu", required_argument, NULL, 'C' },
		{ "trace-marker", no_argument, NULL, O_MARKER },
		{ "output", required_argument, NULL, 'o' },
		{ "name", required_argument, NULL, O_NAME },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *freqs = "100,1000,10000";
	int c;

	*o = (struct options){
		.mode = MODE_NANOSLEEP, .periods = 500, .max_seconds = 2, .priority = 49,
		.cpu = -1, .outdir = "results",
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:n:C:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case O_MODE:
			if (!strcmp(optarg, "nanosleep")) {
				o->mode = MODE_NANOSLEEP;
			} else if (!strcmp(optarg, "rt")) {
				o->mode = MODE_RT;
			} else {
				fprintf(stderr, PROG ": --mode wants nanosleep or rt, not '%s'\n",
					optarg);
				exit(2);
			}
			break;
		case 'f': freqs = optarg; break;
		case 'n': o->periods = lab_opt_ulong(PROG, "-n", optarg, 2, 10000000); break;
		case O_SECONDS:
			o->max_seconds = lab_opt_ulong(PROG, "--seconds", optarg, 1, 3600);
			break;
		case O_PRIORITY:
			o->priority = lab_opt_ulong(PROG, "--priority", optarg, 1, 99);
			break;
		case 'C':
			o->cpu = lab_opt_one_cpu(PROG, "--cpu", optarg);
			break;
		case O_MARKER: o->trace_marker = 1; break;
		case 'o': o->outdir = optarg; break;
		case O_NAME: o->name = optarg; break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default:
			fprintf(stderr, PROG ": unknown option or missing value in '%s' (see --help)\n",
				argv[optind - 1]);
			exit(2);
		}
	}
	lab_opt_end(PROG, argc, argv);
	o->nfreqs = lab_opt_list(PROG, "--freq", freqs, MAX_FREQ, &o->freqs);
	for (int i = 0; i < o->nfreqs; i++) {
		if (o->freqs[i] == 0) {
			fprintf(stderr, PROG ": --freq wants frequencies of 1 Hz or more, not '%s'\n",
				freqs);
			exit(2);
		}
	}
}

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

/* The settings part of meta.json. */
static char *settings_json(const struct options *o)
{
	int rt = o->mode == MODE_RT;
	struct lab_json j;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	lab_json_str(&j, "impl", rt ? "c-rt" : "c-nanosleep");
	lab_json_str(&j, "mode", rt ? "rt" : "nanosleep");
	lab_json_str(&j, "policy", rt ? "SCHED_FIFO" : "SCHED_OTHER");
	lab_json_uint(&j, "priority", rt ? o->priority : 0);
	lab_json_bool(&j, "mlockall", rt);
	lab_json_str(&j, "sleep", rt ? "clock_nanosleep absolute" : "nanosleep relative");
	lab_json_uint(&j, "periods", o->periods);
	lab_json_uint(&j, "max_seconds", o->max_seconds);
	lab_json_int(&j, "cpu", o->cpu);
	lab_json_bool(&j, "trace_marker", o->trace_marker);
	lab_json_array(&j, "freqs_hz");
	for (int f = 0; f < o->nfreqs; f++)
		lab_json_uint(&j, NULL, o->freqs[f]);
	lab_json_end(&j);
	lab_json_end(&j);
	return lab_json_text(&j);
}

int main(int argc, char **argv)
{
	struct options o;
	struct lab_result r;
	struct sigaction sa = { .sa_handler = on_signal };
	char *settings;
	uint64_t *t;
	int marker = -1;
	FILE *csv;

	parse_options(argc, argv, &o);
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
	if (lab_result_open(&r, PROG, o.outdir, "squarewave", o.name, 0, NULL, NULL))
		return 1;
	csv = lab_result_file(&r, "edges.csv");
	if (!csv)
		goto fail;
	fprintf(csv, "freq_hz,edge,t_ns\n");
	for (int f = 0; f < o.nfreqs && !stop_signal; f++) {
		size_t n = run_wave(&o, o.freqs[f], t, marker);

		for (size_t i = 0; i < n; i++)
			fprintf(csv, "%lu,%zu,%llu\n", o.freqs[f], i, (unsigned long long)t[i]);
		if (!o.quiet)
			fprintf(stderr, PROG ": %s %lu Hz: %zu edges\n",
				o.mode == MODE_RT ? "rt" : "nanosleep", o.freqs[f], n);
	}
	if (stop_signal)
		goto stopped;
	if (fclose(csv)) {
		csv = NULL;
		fprintf(stderr, PROG ": writing edges.csv: %s\n", strerror(errno));
		goto fail;
	}
	csv = NULL;
	settings = settings_json(&o);
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
	free(o.freqs);
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
