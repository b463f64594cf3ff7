// SPDX-License-Identifier: GPL-2.0
/*
 * irqhook - thread response time to a virtual interrupt (/dev/irqhook)
 *
 * A write task writes one byte to /dev/irqhook (the "interrupt") and sleeps
 * for a period; a read task blocks in read() and takes each event; load
 * tasks loop on a 1 us nanosleep.  Per event it records, in ns of
 * CLOCK_MONOTONIC:
 *
 *   switching time  write task calls write()  ->  read task returns from read()
 *   wake-up time    driver accepted the write ->  read task runs again in the
 *                                                 driver (struct irqhook_event)
 *
 * and writes events.csv, summary.json, histogram.txt (cyclictest style) and,
 * through userspace/analysis/plot_irqhook.py, histogram.png.  --trace runs
 * the whole measurement under trace-cmd (scheduler and irqhook events, the
 * CLOCK_MONOTONIC trace clock) into trace.dat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/irqhook.h>

#include "../lib/lab.h"

#define TRACED_ENV "IRQHOOK_UNDER_TRACE"
#define HIST_BUCKET_NS 1000	/* 1 us buckets, as cyclictest */

struct options {
	unsigned long iterations;
	unsigned long period_us;
	unsigned long loads;
	unsigned long load_sleep_ns;
	int rt;
	int read_cpu, write_cpu;
	unsigned long *load_cpus;
	int n_load_cpus;
	const char *outdir;
	const char *device;
	int trace;
	int plot;
	int quiet;
};

struct sample {
	uint64_t call_ns;	/* write task, just before write() */
	uint64_t return_ns;	/* read task, just after read() */
	struct irqhook_event ev;
};

static struct options opt;
static struct sample *samples;
static int dev_fd = -1;
static atomic_int stop;
static atomic_ulong n_read;
static pid_t read_tid, write_tid;
static pid_t *load_tids;
static volatile sig_atomic_t got_signal;

/* Each thread reports its own failure: no buffer is shared between them. */
#define ERRLEN 256
static char read_err[ERRLEN], write_err[ERRLEN];

static void on_signal(int sig)
{
	got_signal = sig;
	atomic_store(&stop, 1);
}

/* SIGUSR1 only interrupts the read task's blocked read() at the end. */
static void on_wakeup_signal(int sig)
{
	(void)sig;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: irqhook [options]\n"
"\n"
"Time how long a thread takes to respond to a virtual interrupt: a write\n"
"to /dev/irqhook.  Needs root (mlockall, real-time priorities).\n"
"\n"
"  -n, --iterations N     events (default 10000)\n"
"  -p, --period-us US     the write task sleeps this long after each write\n"
"                         (default 16000)\n"
"  -l, --loads N          load tasks, each looping on a nanosleep (default 0)\n"
"      --load-sleep-ns NS the load tasks' nanosleep (default 1000)\n"
"  -r, --rt               read and write tasks SCHED_RR priority 1 (load tasks\n"
"                         stay SCHED_OTHER)\n"
"      --read-cpu N       pin the read task to CPU N\n"
"      --write-cpu N      pin the write task to CPU N\n"
"      --load-cpus LIST   pin the load tasks round-robin to these CPUs (0,1)\n"
"  -o, --output DIR       where to write the results (default\n"
"                         results/irqhook-<loads>-<normal|rt>)\n"
"  -d, --device PATH      the device (default /dev/irqhook)\n"
"  -t, --trace            record the run with trace-cmd into DIR/trace.dat\n"
"      --no-plot          do not draw histogram.png\n"
"  -q, --quiet            no progress lines\n"
"  -h, --help             this text\n"
"\n"
"Example:  irqhook -n 2000 -l 16 --rt -o results/irqhook-16-rt\n");
}

static unsigned long parse_num(const char *name, const char *arg, unsigned long min,
			       unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max) {
		fprintf(stderr, "irqhook: %s wants a whole number from %lu to %lu, not '%s'\n",
			name, min, max, arg);
		exit(2);
	}
	return v;
}

static void parse_options(int argc, char **argv)
{
	enum { O_LOAD_SLEEP = 256, O_READ_CPU, O_WRITE_CPU, O_LOAD_CPUS, O_NO_PLOT };
	static const struct option longopts[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "period-us", required_argument, NULL, 'p' },
		{ "loads", required_argument, NULL, 'l' },
		{ "load-sleep-ns", required_argument, NULL, O_LOAD_SLEEP },
		{ "rt", no_argument, NULL, 'r' },
		{ "read-cpu", required_argument, NULL, O_READ_CPU },
		{ "write-cpu", required_argument, NULL, O_WRITE_CPU },
		{ "load-cpus", required_argument, NULL, O_LOAD_CPUS },
		{ "output", required_argument, NULL, 'o' },
		{ "device", required_argument, NULL, 'd' },
		{ "trace", no_argument, NULL, 't' },
		{ "no-plot", no_argument, NULL, O_NO_PLOT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opt = (struct options){
		.iterations = 10000, .period_us = 16000, .load_sleep_ns = 1000,
		.read_cpu = -1, .write_cpu = -1, .device = "/dev/irqhook", .plot = 1,
	};
	while ((c = getopt_long(argc, argv, "n:p:l:ro:d:tqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': opt.iterations = parse_num("--iterations", optarg, 1, 10000000); break;
		case 'p': opt.period_us = parse_num("--period-us", optarg, 0, 10000000); break;
		case 'l': opt.loads = parse_num("--loads", optarg, 0, 1024); break;
		case O_LOAD_SLEEP:
			opt.load_sleep_ns = parse_num("--load-sleep-ns", optarg, 0, 1000000000);
			break;
		case 'r': opt.rt = 1; break;
		case O_READ_CPU: opt.read_cpu = (int)parse_num("--read-cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case O_WRITE_CPU: opt.write_cpu = (int)parse_num("--write-cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case O_LOAD_CPUS:
			opt.n_load_cpus = lab_parse_uint_list(optarg, &opt.load_cpus);
			if (opt.n_load_cpus <= 0) {
				fprintf(stderr, "irqhook: bad CPU list '%s'\n", optarg);
				exit(2);
			}
			for (int i = 0; i < opt.n_load_cpus; i++)
				if (opt.load_cpus[i] >= CPU_SETSIZE) {
					fprintf(stderr, "irqhook: no CPU %lu\n", opt.load_cpus[i]);
					exit(2);
				}
			break;
		case 'o': opt.outdir = optarg; break;
		case 'd': opt.device = optarg; break;
		case 't': opt.trace = 1; break;
		case O_NO_PLOT: opt.plot = 0; break;
		case 'q': opt.quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "irqhook: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
}

/*
 * The start of every task: record its thread id, name it for the trace,
 * pin it to @cpu (if >= 0) and make it SCHED_RR priority 1 if @rt.
 * Returns NULL, or @err filled with what failed.
 */
static const char *start_task(const char *name, pid_t *tid, int cpu, int rt, char *err)
{
	*tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), name);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			snprintf(err, ERRLEN, "cannot pin to CPU %d: %s", cpu, strerror(errno));
			return err;
		}
	}
	if (rt) {
		struct sched_param sp = { .sched_priority = 1 };

		if (sched_setscheduler(0, SCHED_RR, &sp)) {
			snprintf(err, ERRLEN, "cannot set SCHED_RR: %s", strerror(errno));
			return err;
		}
	}
	return NULL;
}

static void *load_task(void *arg)
{
	unsigned long i = (unsigned long)arg;
	struct timespec ts = { 0, (long)opt.load_sleep_ns };

	char err[ERRLEN];

	/* As before: a load task that cannot be pinned still loads the machine. */
	start_task("irqhook-load", &load_tids[i],
		   opt.n_load_cpus ? (int)opt.load_cpus[i % (unsigned long)opt.n_load_cpus] : -1,
		   0, err);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		nanosleep(&ts, NULL);
	return NULL;
}

static void *read_task(void *arg)
{
	const char *err = start_task("irqhook-read", &read_tid, opt.read_cpu, opt.rt, read_err);
	unsigned long i;

	(void)arg;
	if (err)
		return (void *)err;
	for (i = 0; i < opt.iterations; i++) {
		struct irqhook_event ev;
		ssize_t n = read(dev_fd, &ev, sizeof(ev));

		if (n < 0 && errno == EINTR && !atomic_load(&stop)) {
			i--;
			continue;
		}
		if (n != (ssize_t)sizeof(ev))
			break;
		samples[i].return_ns = lab_now_ns();
		samples[i].ev = ev;
		atomic_store(&n_read, i + 1);
	}
	return NULL;
}

static void *write_task(void *arg)
{
	const char *err = start_task("irqhook-write", &write_tid, opt.write_cpu, opt.rt,
				     write_err);
	struct timespec period = { (time_t)(opt.period_us / 1000000),
				   (long)(opt.period_us % 1000000) * 1000 };
	uint64_t start = lab_now_ns(), last = start;
	unsigned long i;

	(void)arg;
	if (err)
		return (void *)err;
	for (i = 0; i < opt.iterations && !atomic_load(&stop); i++) {
		samples[i].call_ns = lab_now_ns();
		if (write(dev_fd, "x", 1) != 1) {
			snprintf(write_err, ERRLEN, "write to %s: %s", opt.device,
				 strerror(errno));
			return write_err;
		}
		if (opt.period_us)
			clock_nanosleep(CLOCK_MONOTONIC, 0, &period, NULL);
		if (!opt.quiet && lab_now_ns() - last > 2000000000ull) {
			double el = (double)(lab_now_ns() - start) / 1e9;

			last = lab_now_ns();
			fprintf(stderr, "irqhook: %lu/%lu events (%.0f s elapsed, ~%.0f s left)\n",
				i + 1, opt.iterations, el,
				el / (double)(i + 1) * (double)(opt.iterations - i - 1));
		}
	}
	return NULL;
}

/* Run the measurement under trace-cmd: exec it with ourselves as its command. */
static void exec_under_trace(int argc, char **argv)
{
	char **av = calloc((size_t)argc + 32, sizeof(*av));
	char out[PATH_MAX];
	static char self[PATH_MAX];
	ssize_t len;
	int n = 0, i;

	/* Our own path now: /proc/self/exe would be trace-cmd's in its child. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!av || len < 0)
		exit(1);
	self[len] = '\0';
	snprintf(out, sizeof(out), "%s/trace.dat", opt.outdir);
	av[n++] = "trace-cmd";
	av[n++] = "record";
	av[n++] = "-q";
	av[n++] = "-C";
	av[n++] = "mono";	/* trace time = CLOCK_MONOTONIC = the driver's stamps */
	av[n++] = "-o";
	av[n++] = out;
	av[n++] = "-e";
	av[n++] = "sched:sched_switch";
	av[n++] = "-e";
	av[n++] = "sched:sched_wakeup";
	av[n++] = "-e";
	av[n++] = "sched:sched_waking";
	av[n++] = "-e";
	av[n++] = "sched:sched_migrate_task";
	av[n++] = "-e";
	av[n++] = "irqhook";
	av[n++] = self;
	for (i = 1; i < argc; i++)
		av[n++] = argv[i];
	av[n++] = "-o";
	av[n++] = (char *)opt.outdir;
	av[n] = NULL;
	setenv(TRACED_ENV, "1", 1);
	fflush(NULL);
	execvp("trace-cmd", av);
	fprintf(stderr, "irqhook: cannot run trace-cmd: %s (apt-get install trace-cmd)\n",
		strerror(errno));
	exit(1);
}

static void drain_device(void)
{
	struct irqhook_event ev;
	int fd = open(opt.device, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return;
	while (read(fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev))
		;
	close(fd);
}

static FILE *out_file(const char *name, char *tmp, size_t size)
{
	FILE *f;

	snprintf(tmp, size, "%s/%s.tmp", opt.outdir, name);
	f = fopen(tmp, "w");
	if (!f)
		fprintf(stderr, "irqhook: cannot write %s: %s\n", tmp, strerror(errno));
	return f;
}

static int commit_file(FILE *f, const char *tmp)
{
	char path[PATH_MAX];
	size_t len = strlen(tmp) - 4;

	if (fclose(f))
		return -1;
	snprintf(path, sizeof(path), "%.*s", (int)len, tmp);
	return rename(tmp, path);
}

/* The statistics of one series of times, computed once for every output. */
struct series_stats {
	struct lab_summary s;
	struct lab_split sp;
};

static void series_stats(const double *v, size_t n, struct series_stats *st)
{
	lab_summarize(v, n, &st->s);
	lab_split2(v, n, &st->sp);
}

static void json_summary(FILE *f, const char *name, const struct series_stats *st)
{
	const struct lab_summary *s = &st->s;
	const struct lab_split *sp = &st->sp;

	fprintf(f, "    \"%s\": {\"count\": %zu, \"min\": %.0f, \"mean\": %.1f, "
		   "\"stddev\": %.1f, \"p50\": %.0f, \"p90\": %.0f, \"p99\": %.0f, "
		   "\"p99_9\": %.0f, \"max\": %.0f,\n"
		   "      \"split\": {\"threshold\": %.0f, \"fast_count\": %zu, "
		   "\"fast_mean\": %.1f, \"slow_count\": %zu, \"slow_mean\": %.1f}}",
		name, s->n, s->min, s->mean, s->stddev, s->p50, s->p90, s->p99, s->p999, s->max,
		sp->threshold, sp->n_fast, sp->mean_fast, sp->n_slow, sp->mean_slow);
}

static void print_summary(const char *name, const struct series_stats *st)
{
	const struct lab_summary *s = &st->s;
	const struct lab_split *sp = &st->sp;

	printf("%-10s %6zu %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f %8.1f   "
	       "fast %zu x %.1f / slow %zu x %.1f\n", name, s->n, s->min / 1e3, s->mean / 1e3,
	       s->stddev / 1e3, s->p50 / 1e3, s->p90 / 1e3, s->p99 / 1e3, s->max / 1e3,
	       sp->threshold / 1e3, sp->n_fast, sp->mean_fast / 1e3, sp->n_slow,
	       sp->mean_slow / 1e3);
}

static int write_results(size_t n)
{
	double *sw = malloc(n * sizeof(*sw)), *wk = malloc(n * sizeof(*wk));
	struct series_stats all_sw, all_wk, later_sw, later_wk;
	char tmp[PATH_MAX], stamp[64];
	unsigned long maxb = 0, b, *hs, *hw;
	struct utsname u;
	time_t now = time(NULL);
	size_t i, m = n > 1 ? n - 1 : 0;	/* events after the first */
	FILE *f;

	if (!sw || !wk)
		return -1;
	for (i = 0; i < n; i++) {
		sw[i] = (double)(samples[i].return_ns - samples[i].call_ns);
		wk[i] = (double)(samples[i].ev.wake_ns - samples[i].ev.write_ns);
		if ((unsigned long)(sw[i] / HIST_BUCKET_NS) > maxb)
			maxb = (unsigned long)(sw[i] / HIST_BUCKET_NS);
		if ((unsigned long)(wk[i] / HIST_BUCKET_NS) > maxb)
			maxb = (unsigned long)(wk[i] / HIST_BUCKET_NS);
	}

	f = out_file("events.csv", tmp, sizeof(tmp));
	if (!f)
		return -1;
	fprintf(f, "event,seq,call_ns,write_ns,wake_ns,return_ns,switching_ns,wakeup_ns\n");
	for (i = 0; i < n; i++)
		fprintf(f, "%zu,%llu,%llu,%llu,%llu,%llu,%.0f,%.0f\n", i,
			(unsigned long long)samples[i].ev.seq,
			(unsigned long long)samples[i].call_ns,
			(unsigned long long)samples[i].ev.write_ns,
			(unsigned long long)samples[i].ev.wake_ns,
			(unsigned long long)samples[i].return_ns, sw[i], wk[i]);
	if (commit_file(f, tmp))
		return -1;

	hs = calloc(maxb + 1, sizeof(*hs));
	hw = calloc(maxb + 1, sizeof(*hw));
	if (!hs || !hw)
		return -1;
	for (i = 0; i < n; i++) {
		hs[(unsigned long)(sw[i] / HIST_BUCKET_NS)]++;
		hw[(unsigned long)(wk[i] / HIST_BUCKET_NS)]++;
	}
	f = out_file("histogram.txt", tmp, sizeof(tmp));
	if (!f)
		return -1;
	fprintf(f, "# irqhook histogram: events per 1 us bucket\n# us  switching  wakeup\n");
	for (b = 0; b <= maxb; b++)
		fprintf(f, "%06lu %06lu %06lu\n", b, hs[b], hw[b]);
	fprintf(f, "# Total: %06zu %06zu\n", n, n);
	if (commit_file(f, tmp))
		return -1;

	uname(&u);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	f = out_file("summary.json", tmp, sizeof(tmp));
	if (!f)
		return -1;
	fprintf(f, "{\n  \"tool\": \"irqhook\",\n  \"date\": \"%s\",\n  \"kernel\": ", stamp);
	lab_json_string(f, u.release);
	fprintf(f, ",\n  \"cpus\": %ld,\n  \"iterations\": %lu,\n  \"events\": %zu,\n"
		   "  \"period_us\": %lu,\n  \"loads\": %lu,\n  \"load_sleep_ns\": %lu,\n"
		   "  \"class\": \"%s\",\n  \"read_cpu\": %d,\n  \"write_cpu\": %d,\n"
		   "  \"traced\": %s,\n  \"unit\": \"ns\",\n",
		sysconf(_SC_NPROCESSORS_ONLN), opt.iterations, n, opt.period_us, opt.loads,
		opt.load_sleep_ns, opt.rt ? "rt" : "normal", opt.read_cpu, opt.write_cpu,
		getenv(TRACED_ENV) ? "true" : "false");
	fprintf(f, "  \"tids\": {\"read\": %d, \"write\": %d, \"load\": [", read_tid, write_tid);
	for (i = 0; i < opt.loads; i++)
		fprintf(f, "%s%d", i ? ", " : "", load_tids[i]);
	fprintf(f, "]},\n  \"first_event\": {\"switching\": %.0f, \"wakeup\": %.0f},\n",
		sw[0], wk[0]);
	series_stats(sw, n, &all_sw);
	series_stats(wk, n, &all_wk);
	fprintf(f, "  \"all_events\": {\n");
	json_summary(f, "switching", &all_sw);
	fprintf(f, ",\n");
	json_summary(f, "wakeup", &all_wk);
	fprintf(f, "\n  },\n  \"after_first\": {\n");
	if (m) {
		series_stats(sw + 1, m, &later_sw);
		series_stats(wk + 1, m, &later_wk);
		json_summary(f, "switching", &later_sw);
		fprintf(f, ",\n");
		json_summary(f, "wakeup", &later_wk);
	}
	fprintf(f, "\n  }\n}\n");
	if (commit_file(f, tmp))
		return -1;

	printf("irqhook: %zu events, %lu load tasks, %s read/write tasks (times in us)\n", n,
	       opt.loads, opt.rt ? "SCHED_RR" : "SCHED_OTHER");
	printf("first event: switching %.1f, wake-up %.1f\n", sw[0] / 1e3, wk[0] / 1e3);
	if (m) {
		printf("%-10s %6s %8s %8s %8s %8s %8s %8s %9s %8s\n", "after 1st", "count",
		       "min", "mean", "stddev", "p50", "p90", "p99", "max", "split");
		print_summary("switching", &later_sw);
		print_summary("wake-up", &later_wk);
	}
	free(sw);
	free(wk);
	free(hs);
	free(hw);
	return 0;
}

/* Draw histogram.png with userspace/analysis/plot_irqhook.py. */
static void plot(void)
{
	const char *args[] = { opt.outdir, NULL };

	if (lab_run_analysis("plot_irqhook.py", args))
		fprintf(stderr, "irqhook: warning: no histogram.png (plot_irqhook.py failed)\n");
}

int main(int argc, char **argv)
{
	pthread_t reader, writer, *loaders;
	char defdir[PATH_MAX];
	void *rerr = NULL, *werr = NULL;
	unsigned long i, got;

	parse_options(argc, argv);
	if (!opt.outdir) {
		snprintf(defdir, sizeof(defdir), "results/irqhook-%lu-%s", opt.loads,
			 opt.rt ? "rt" : "normal");
		opt.outdir = defdir;
	}
	if (access(opt.device, F_OK)) {
		fprintf(stderr, "irqhook: %s: %s: is this the lab kernel with CONFIG_IRQHOOK?\n",
			opt.device, strerror(errno));
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "irqhook: must run as root (mlockall, SCHED_RR, %s)\n",
			opt.device);
		return 1;
	}
	if (lab_mkdirs(opt.outdir)) {
		fprintf(stderr, "irqhook: cannot create %s: %s\n", opt.outdir, strerror(errno));
		return 1;
	}
	if (opt.trace && !getenv(TRACED_ENV))
		exec_under_trace(argc, argv);

	samples = calloc(opt.iterations, sizeof(*samples));
	load_tids = calloc(opt.loads + 1, sizeof(*load_tids));
	loaders = calloc(opt.loads + 1, sizeof(*loaders));
	if (!samples || !load_tids || !loaders) {
		perror("irqhook");
		return 1;
	}
	/* Touch every page now, then keep them: no page fault in the timed path. */
	memset(samples, 0, opt.iterations * sizeof(*samples));
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		fprintf(stderr, "irqhook: mlockall: %s\n", strerror(errno));
		return 1;
	}
	drain_device();
	dev_fd = open(opt.device, O_RDWR);
	if (dev_fd < 0) {
		fprintf(stderr, "irqhook: cannot open %s: %s\n", opt.device, strerror(errno));
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_wakeup_signal;
	sigaction(SIGUSR1, &sa, NULL);

	for (i = 0; i < opt.loads; i++)
		if (pthread_create(&loaders[i], NULL, load_task, (void *)i)) {
			fprintf(stderr, "irqhook: cannot start load task %lu\n", i);
			return 1;
		}
	if (pthread_create(&reader, NULL, read_task, NULL))
		return 1;
	usleep(10000);	/* let the reader block first */
	if (pthread_create(&writer, NULL, write_task, NULL))
		return 1;

	pthread_join(writer, &werr);
	/* The reader gets every event written; give it a moment, then stop it. */
	for (i = 0; i < 1000 && atomic_load(&n_read) < opt.iterations && !werr &&
		    !atomic_load(&stop); i++)
		usleep(1000);
	atomic_store(&stop, 1);
	if (atomic_load(&n_read) < opt.iterations)
		pthread_kill(reader, SIGUSR1);
	pthread_join(reader, &rerr);
	for (i = 0; i < opt.loads; i++)
		pthread_join(loaders[i], NULL);

	if (werr || rerr) {
		fprintf(stderr, "irqhook: %s\n", (const char *)(werr ? werr : rerr));
		return 1;
	}
	got = atomic_load(&n_read);
	if (got_signal) {
		fprintf(stderr, "irqhook: interrupted after %lu events; nothing written\n", got);
		return 128 + (int)got_signal;
	}
	if (got < opt.iterations) {
		fprintf(stderr, "irqhook: only %lu of %lu events came back\n", got,
			opt.iterations);
		return 1;
	}
	for (i = 1; i < got; i++)
		if (samples[i].ev.seq != samples[0].ev.seq + i) {
			fprintf(stderr, "irqhook: event %lu has sequence %llu, expected %llu: "
				"another program is using %s\n", i,
				(unsigned long long)samples[i].ev.seq,
				(unsigned long long)(samples[0].ev.seq + i), opt.device);
			return 1;
		}
	if (write_results(got)) {
		fprintf(stderr, "irqhook: writing results to %s failed: %s\n", opt.outdir,
			strerror(errno));
		return 1;
	}
	if (opt.plot)
		plot();
	printf("results: %s\n", opt.outdir);
	return 0;
}
