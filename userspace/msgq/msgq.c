// SPDX-License-Identifier: GPL-2.0
/*
 * msgq - three senders, a bus daemon and three receivers on the msgq module
 *
 * Three sender threads write messages of random length and destination
 * (1-3) to /dev/bus_in_q; a bus daemon thread reads each one and writes it
 * to /dev/bus_out_qD of its destination D; three receiver threads read
 * their queue (bus.c).  The driver stamps every message when it is queued
 * and says, when it is read, how long it stayed (modules/msgq/uapi/msgq.h):
 * each message's two hops are timed by the kernel, in ns and in TSC
 * cycles, and the whole trip, write() until read() returns, by the program.
 *
 * Into a new result folder it writes messages.csv (one row per message)
 * and meta.json, whose settings carry the counts: sent per sender, routed
 * per destination, received per receiver.  They must match and every
 * message must arrive once, whole, at its destination and in its sender's
 * order (check.c); if not, the run keeps its files but exits with status 1.
 * lab analyse summarises on the host.
 *
 * The payload's first 8 bytes are the message's tag (sender << 32 |
 * number), the rest a pattern derived from it, which the receiver checks.
 * The end markers that stop the bus (bus.c) are not counted as messages,
 * but the driver's counters include them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "msgq.h"

static struct bus bus;

/* perf's --control FIFOs (--perf-control), -1 without. */
static int perf_ctl = -1, perf_ack = -1;
static int perf_failed;
/* CPU time and context switches of the process while the bus ran. */
static struct rusage run_before, run_after;

static struct options opt = {
	.seconds = 10, .size_min = 16, .size_max = 1024, .seed = 1,
};

static void take_size(void *value, const char *prog, const char *opt_name, const char *arg)
{
	struct options *o = value;
	unsigned long lo, hi;
	char *end;

	errno = 0;
	lo = strtoul(arg, &end, 10);
	if (errno || end == arg || *end != ':' || arg[0] < '0' || arg[0] > '9')
		goto bad;
	hi = strtoul(end + 1, &end, 10);
	if (errno || *end || end[-1] == ':' || lo < TAG_SIZE || hi < lo || hi > MSGQ_MAX_PAYLOAD)
		goto bad;
	o->size_min = lo;
	o->size_max = hi;
	return;
bad:
	fprintf(stderr, "%s: %s wants MIN:MAX with %zu <= MIN <= MAX <= %d, not '%s'\n", prog,
		opt_name, TAG_SIZE, MSGQ_MAX_PAYLOAD, arg);
	exit(2);
}

static char *show_size(const void *value)
{
	const struct options *o = value;
	char *text;

	return asprintf(&text, "%lu:%lu", o->size_min, o->size_max) < 0 ? NULL : text;
}

static void write_size(struct lab_json *j, const char *key, const void *value)
{
	const struct options *o = value;

	(void)key;
	lab_json_uint(j, "size_min", o->size_min);
	lab_json_uint(j, "size_max", o->size_max);
}

static void take_perf_control(void *value, const char *prog, const char *opt_name,
			      const char *arg)
{
	struct options *o = value;
	char *comma = strchr(arg, ',');

	if (!comma || comma == arg || !comma[1] || strchr(comma + 1, ',')) {
		fprintf(stderr, "%s: %s wants two FIFOs, CTL,ACK, not '%s'\n", prog, opt_name,
			arg);
		exit(2);
	}
	o->perf_ctl = strndup(arg, (size_t)(comma - arg));
	o->perf_ack = comma + 1;
}

static void write_perf_control(struct lab_json *j, const char *key, const void *value)
{
	lab_json_bool(j, key, ((const struct options *)value)->perf_ctl != NULL);
}

/* The run's length: by messages (-n) or by time (-t); the other is null. */
static void write_length(struct lab_json *j, const char *key, const void *value)
{
	unsigned long v = *(const unsigned long *)value;

	if (v)
		lab_json_uint(j, key, v);
	else
		lab_json_null(j, key);
}

static const struct lab_opt options[] = {
	{ .name = "messages", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &opt.messages,
	  .min = 1, .max = 100000000, .json = "messages", .write = write_length,
	  .help = "messages in all, shared out over the 3 senders\n(default: by time)" },
	{ .name = "seconds", .letter = 't', .kind = LAB_OPT_ULONG, .value = &opt.seconds,
	  .min = 1, .max = 86400, .arg = "S", .json = "seconds", .write = write_length,
	  .help = "or: the senders send for S seconds" },
	{ .name = "size", .kind = LAB_OPT_CUSTOM, .value = &opt, .arg = "MIN:MAX",
	  .json = "size", .parse = take_size, .write = write_size, .show = show_size,
	  .help = "payload bytes, uniform in MIN..MAX, from the tag's\n"
		  "8 bytes to the module's largest message" },
	{ .name = "rate", .kind = LAB_OPT_ULONG, .value = &opt.rate, .max = 1000000, .arg = "R",
	  .json = "rate", .help = "messages/s per sender (0: as fast as the queues\n"
				  "take them)" },
	{ .name = "seed", .kind = LAB_OPT_ULONG, .value = &opt.seed, .max = ULONG_MAX,
	  .json = "seed", .help = "seed of the lengths and destinations" },
	{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPUS, .value = &opt.cpus, .arg = "CPUS",
	  .json = "cpus", .help = "pin the threads round-robin to these CPUs (0-3,6),\n"
				  "in the order sender 1-3, daemon, receiver 1-3;\n"
				  "none: the scheduler places them" },
	{ .name = "perf-control", .kind = LAB_OPT_CUSTOM, .value = &opt, .arg = "CTL,ACK",
	  .json = "perf_control", .parse = take_perf_control, .write = write_perf_control,
	  .help = "perf's --control fifo:CTL,ACK: have perf (started\n"
		  "with -D -1) count only while the bus runs (default: none)" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: msgq [options]\n"
		"\n"
		"Three senders, a bus daemon and three receivers pass messages through the\n"
		"msgq module's queues (/dev/bus_in_q -> /dev/bus_out_q1..3); the driver\n"
		"times how long each message stays in each queue.  Needs the module loaded\n"
		"and root.  Writes OUTPUT/msgq-<date>-<time>/ with messages.csv and\n"
		"meta.json; 'lab analyse DIR' summarises and plots.",
	.notes = "Exit status: 0; 1 if a message was lost, duplicated, damaged or misrouted,\n"
		"or the counts do not match (the result folder is kept), or the module or a\n"
		"device is missing; 2 for a bad option; 128+N after signal N (nothing kept).",
	.example = "msgq -t 10 --size 64:512 -C 0,1 -o results",
	.opts = options,
	.common = &opt.common,
};

static void parse_options(int argc, char **argv)
{
	int by_count, by_time;

	lab_opts_parse(&tool, argc, argv, 0);
	by_count = lab_opts_given(&tool, &opt.messages);
	by_time = lab_opts_given(&tool, &opt.seconds);
	if (by_count && by_time) {
		fprintf(stderr, PROG ": -n and --seconds exclude each other: give one\n");
		exit(2);
	}
	if (by_count)
		opt.seconds = 0;
}

/* --- the module and its devices ------------------------------------------ */

/* Where the module is, for the message that says how to load it. */
static void module_path(char *buf, size_t size)
{
	char exe[PATH_MAX], *slash;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct utsname u;
	int i = 0;

	uname(&u);
	if (len > 0) {
		exe[len] = '\0';
		for (; i < 3 && (slash = strrchr(exe, '/')); i++)
			*slash = '\0';
	}
	if (i == 3)
		snprintf(buf, size, "%.3000s/build/modules/%.64s/msgq.ko", exe, u.release);
	else
		snprintf(buf, size, "build/modules/%.64s/msgq.ko", u.release);
}

/* Every device there and usable?  One line and status 1 if not. */
static void check_devices(void)
{
	char path[64], ko[PATH_MAX + 64];
	int q, fd;

	for (q = 0; q < MSGQ_QUEUES; q++) {
		device_path(path, sizeof(path), q);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno == ENOENT) {
			module_path(ko, sizeof(ko));
			fprintf(stderr, PROG ": no %s: load the module first: insmod %s\n", path,
				ko);
		} else {
			fprintf(stderr, PROG ": cannot open %s: %s%s\n", path, strerror(errno),
				errno == EACCES ? " (run as root)" : "");
		}
		exit(1);
	}
}

/* Read and drop what an earlier run left queued.  Returns how many. */
static long drain(void)
{
	size_t size = sizeof(struct msgq_record) + MSGQ_MAX_PAYLOAD;
	char *buf = malloc(size), path[64];
	long n = 0;
	int q, fd;

	for (q = 0; q < MSGQ_QUEUES && buf; q++) {
		device_path(path, sizeof(path), q);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		while (read(fd, buf, size) > 0)
			n++;
		close(fd);
	}
	free(buf);
	return n;
}

/* The module's counters of each queue: /sys/class/msgq/QUEUE/stats/NAME. */
static const char *const stat_names[] = {
	"enqueued", "dequeued", "blocked_writers", "blocked_readers", "high_water", "allocated",
};
#define N_STATS (sizeof(stat_names) / sizeof(stat_names[0]))
#define N_COUNTS 4	/* the first ones count events; the others are levels */

static void read_stats(unsigned long out[MSGQ_QUEUES][N_STATS])
{
	char path[128], dev[64];
	size_t q, s;

	for (q = 0; q < MSGQ_QUEUES; q++)
		for (s = 0; s < N_STATS; s++) {
			device_path(dev, sizeof(dev), (int)q);
			snprintf(path, sizeof(path), "/sys/class/msgq/%s/stats/%s",
				 dev + strlen("/dev/"), stat_names[s]);
			if (lab_read_ulong(path, &out[q][s]))
				out[q][s] = 0;
		}
}

/* A module parameter as text, "" if unreadable. */
static void read_param(const char *name, char *buf, size_t size)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/msgq/parameters/%s", name);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* --- perf's control FIFOs ------------------------------------------------- */

static int perf_open(void)
{
	int flags;

	if (!opt.perf_ctl)
		return 0;
	/* perf holds both open already: neither open() waits. */
	perf_ctl = open(opt.perf_ctl, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	perf_ack = open(opt.perf_ack, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (perf_ctl < 0 || perf_ack < 0) {
		fprintf(stderr, PROG ": --perf-control: cannot open %s: %s (is perf running "
			"with --control fifo:%s,%s?)\n", perf_ctl < 0 ? opt.perf_ctl : opt.perf_ack,
			strerror(errno), opt.perf_ctl, opt.perf_ack);
		return -1;
	}
	flags = fcntl(perf_ack, F_GETFL);
	fcntl(perf_ack, F_SETFL, flags & ~O_NONBLOCK);
	return 0;
}

/* Send perf "enable" or "disable" and wait for its "ack". */
static void perf_command(const char *cmd)
{
	char line[16], ack[8];
	int len = snprintf(line, sizeof(line), "%s\n", cmd);
	ssize_t n;

	if (perf_ctl < 0)
		return;
	if (write(perf_ctl, line, (size_t)len) != len) {
		perf_failed = 1;
		return;
	}
	do
		n = read(perf_ack, ack, sizeof(ack));
	while (n < 0 && errno == EINTR);
	if (n < 3 || strncmp(ack, "ack", 3))
		perf_failed = 1;
}

static void before_bus(void)
{
	perf_command("enable");
	getrusage(RUSAGE_SELF, &run_before);
}

static void after_bus(void)
{
	getrusage(RUSAGE_SELF, &run_after);
	perf_command("disable");
}

/* --- meta.json --------------------------------------------------------------- */

static double seconds_of(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* CPU time and context switches from @a to @b (@a NULL: since the start). */
static void json_rusage(struct lab_json *j, const char *key, const struct rusage *a,
			const struct rusage *b)
{
	lab_json_break(j);
	lab_json_object(j, key);
	lab_json_double(j, "user_s", seconds_of(b->ru_utime) - (a ? seconds_of(a->ru_utime) : 0),
			6);
	lab_json_double(j, "system_s",
			seconds_of(b->ru_stime) - (a ? seconds_of(a->ru_stime) : 0), 6);
	lab_json_int(j, "voluntary_switches", b->ru_nvcsw - (a ? a->ru_nvcsw : 0));
	lab_json_int(j, "involuntary_switches", b->ru_nivcsw - (a ? a->ru_nivcsw : 0));
	lab_json_end(j);
}

static void json_counts(struct lab_json *j, const char *key, const unsigned long *v, int n)
{
	int i;

	lab_json_array(j, key);
	for (i = 0; i < n; i++)
		lab_json_uint(j, NULL, v[i]);
	lab_json_end(j);
}

static void json_options(struct lab_json *j)
{
	lab_opts_json(j, &tool);
	lab_json_int(j, "senders", SENDERS);
	lab_json_int(j, "receivers", RECEIVERS);
}

/* The module's parameters: the allocation strategy and the queues' capacity. */
static void json_module(struct lab_json *j)
{
	char alloc[32], capacity[32], *end;
	unsigned long cap;

	read_param("alloc", alloc, sizeof(alloc));
	read_param("capacity", capacity, sizeof(capacity));
	lab_json_break(j);
	lab_json_object(j, "module");
	lab_json_str(j, "alloc", alloc);
	errno = 0;
	cap = strtoul(capacity, &end, 10);
	if (capacity[0] && !*end && !errno)
		lab_json_uint(j, "capacity", cap);
	else
		lab_json_null(j, "capacity");
	lab_json_int(j, "max_payload", MSGQ_MAX_PAYLOAD);
	lab_json_end(j);
}

/* The counts and whether they matched (@problem: the first thing wrong). */
static void json_count_block(struct lab_json *j, const char *problem)
{
	unsigned long sent[SENDERS], received[RECEIVERS], total = 0, got = 0;
	int i;

	for (i = 0; i < SENDERS; i++)
		total += sent[i] = bus.workers[i].count;
	for (i = 0; i < RECEIVERS; i++)
		got += received[i] = bus.workers[DAEMON + 1 + i].count;
	lab_json_break(j);
	lab_json_object(j, "counts");
	lab_json_uint(j, "sent_total", total);
	lab_json_uint(j, "read_by_daemon", bus.workers[DAEMON].count);
	lab_json_uint(j, "received_total", got);
	json_counts(j, "sent", sent, SENDERS);
	json_counts(j, "routed", bus.workers[DAEMON].routed, RECEIVERS);
	json_counts(j, "received", received, RECEIVERS);
	lab_json_bool(j, "matched", !problem);
	lab_json_str(j, "problem", problem);
	lab_json_end(j);
}

/* The driver's counters over the run (the end markers included). */
static void json_driver(struct lab_json *j, unsigned long before[MSGQ_QUEUES][N_STATS],
			unsigned long after[MSGQ_QUEUES][N_STATS])
{
	char path[64];
	size_t q, s;

	lab_json_break(j);
	lab_json_object(j, "driver");
	for (q = 0; q < MSGQ_QUEUES; q++) {
		device_path(path, sizeof(path), (int)q);
		lab_json_object(j, path + strlen("/dev/"));
		for (s = 0; s < N_STATS; s++)
			lab_json_uint(j, stat_names[s],
				      s < N_COUNTS ? after[q][s] - before[q][s] : after[q][s]);
		lab_json_end(j);
	}
	lab_json_end(j);
}

/*
 * The settings of meta.json: the options, the module's parameters, the
 * counts and whether they matched (@problem: the first thing wrong), the
 * time the messages took, CPU time, the TSC's rate, the driver's counters.
 */
static char *settings_json(const char *problem, double elapsed_s,
			   unsigned long before[MSGQ_QUEUES][N_STATS],
			   unsigned long after[MSGQ_QUEUES][N_STATS])
{
	unsigned long got = 0;
	const char *tsc_source = "none";
	double tsc_hz = 0;
	struct lab_json j;
	struct rusage ru;
	int i;

	for (i = 0; i < RECEIVERS; i++)
		got += bus.workers[DAEMON + 1 + i].count;
	getrusage(RUSAGE_SELF, &ru);
#if defined(__x86_64__) || defined(__i386__)
	tsc_hz = lab_tsc_hz(&tsc_source);
#endif
	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	json_options(&j);
	json_module(&j);
	json_count_block(&j, problem);
	lab_json_break(&j);
	lab_json_double(&j, "elapsed_s", elapsed_s, 6);
	lab_json_double(&j, "messages_per_s", elapsed_s > 0 ? (double)got / elapsed_s : 0, 3);
	json_rusage(&j, "rusage", NULL, &ru);
	json_rusage(&j, "run_rusage", &run_before, &run_after);
	lab_json_break(&j);
	lab_json_double(&j, "tsc_hz", tsc_hz, 0);
	lab_json_str(&j, "tsc_source", tsc_source);
	json_driver(&j, before, after);
	lab_json_end(&j);
	return lab_json_text(&j);
}

/* --- main ------------------------------------------------------------------ */

/* First message sent to last one received, in s (0 if none arrived). */
static double elapsed(void)
{
	uint64_t first = UINT64_MAX, last = 0;
	int i;

	for (i = 0; i < SENDERS; i++)
		if (bus.workers[i].log.n && ((const struct sent *)bus.workers[i].log.rows)->sent_ns < first)
			first = ((const struct sent *)bus.workers[i].log.rows)->sent_ns;
	for (i = DAEMON + 1; i < WORKERS; i++) {
		const struct worker *w = &bus.workers[i];

		if (w->log.n && ((const struct hop_out *)w->log.rows)[w->log.n - 1].received_ns > last)
			last = ((const struct hop_out *)w->log.rows)[w->log.n - 1].received_ns;
	}
	return last > first ? (double)(last - first) / 1e9 : 0;
}

static void print_counts(const char *verdict, double secs)
{
	const struct worker *d = &bus.workers[DAEMON];
	unsigned long total = 0, got = 0;
	int i;

	for (i = 0; i < SENDERS; i++)
		total += bus.workers[i].count;
	for (i = DAEMON + 1; i < WORKERS; i++)
		got += bus.workers[i].count;
	printf(PROG ": %lu messages in %.2f s (%.0f/s); sent %lu %lu %lu, routed %lu %lu %lu, "
	       "received %lu %lu %lu: %s\n", total, secs, secs > 0 ? (double)got / secs : 0.0,
	       bus.workers[0].count, bus.workers[1].count, bus.workers[2].count, d->routed[0], d->routed[1],
	       d->routed[2], bus.workers[DAEMON + 1].count, bus.workers[DAEMON + 2].count,
	       bus.workers[DAEMON + 3].count, verdict);
}

static void setup_workers(void)
{
	int i;

	for (i = 0; i < WORKERS; i++) {
		struct worker *w = &bus.workers[i];

		w->opt = &opt;
		w->role = i < SENDERS ? "send" : i == DAEMON ? "daemon" : "recv";
		w->index = i < SENDERS ? i + 1 : i == DAEMON ? 0 : i - DAEMON;
		w->cpu = opt.cpus.n ? opt.cpus.v[i % opt.cpus.n] : -1;
		w->log.size = i < SENDERS ? sizeof(struct sent) :
			      i == DAEMON ? sizeof(struct hop_in) : sizeof(struct hop_out);
	}
}

int main(int argc, char **argv)
{
	unsigned long before[MSGQ_QUEUES][N_STATS], after[MSGQ_QUEUES][N_STATS];
	struct sigaction sa = { .sa_handler = bus_interrupt };
	struct lab_result res = { 0 };
	struct check check = { 0 };
	const char *problem = NULL;
	char *settings;
	long drained;
	int i, status = 0;

	parse_options(argc, argv);
	check_devices();
	if (perf_open())
		return 1;
	setup_workers();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (lab_result_open(&res, PROG, opt.common.outdir, PROG, opt.common.name, 0, NULL, NULL))
		return 1;
	drained = drain();
	if (drained > 0)
		fprintf(stderr, PROG ": dropped %ld messages an earlier run left queued\n",
			drained);
	read_stats(before);
	if (!opt.common.quiet) {
		if (opt.seconds)
			fprintf(stderr, PROG ": sending for %lu s", opt.seconds);
		else
			fprintf(stderr, PROG ": sending %lu messages", opt.messages);
		fprintf(stderr, " of %lu..%lu bytes, %s\n", opt.size_min, opt.size_max,
			opt.rate ? "at a set rate" : "as fast as possible");
	}

	problem = bus_run(&bus, before_bus, after_bus);
	drain();	/* what a stopped run left behind */
	read_stats(after);
	if (bus_signal()) {
		fprintf(stderr, PROG ": interrupted; nothing kept\n");
		lab_result_abort(&res);
		return 128 + bus_signal();
	}
	for (i = 0; i < WORKERS && !problem; i++)
		if (bus.workers[i].err[0])
			problem = bus.workers[i].err;
	if (check_join(&check, &bus)) {
		fprintf(stderr, PROG ": out of memory\n");
		lab_result_abort(&res);
		return 1;
	}
	if (!problem && check.problems)
		problem = check.first;
	if (!problem && perf_failed)
		problem = "perf did not answer on its --control FIFOs: its counts cover nothing";
	if (problem) {
		fprintf(stderr, PROG ": %s\n", problem);
		status = 1;
	}
	if (check.problems > (problem == check.first))
		fprintf(stderr, PROG ": the check found %lu problem%s, the first: %s\n",
			check.problems, check.problems == 1 ? "" : "s", check.first);

	settings = settings_json(problem, elapsed(), before, after);
	if (!settings || check_write_messages(&res, &check) ||
	    lab_meta_write(&res, argc, argv, settings)) {
		fprintf(stderr, PROG ": writing results to %s failed: %s\n", res.dir,
			strerror(errno));
		lab_result_abort(&res);
		return 1;
	}
	free(settings);
	print_counts(status ? "FAILED, see above" : "all match", elapsed());
	check_print_times(&check);
	if (lab_result_commit(&res)) {
		fprintf(stderr, PROG ": cannot rename %s: %s\n", res.dir, strerror(errno));
		return 1;
	}
	printf("results: %s\n", res.final);
	return status;
}
