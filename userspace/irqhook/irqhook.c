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
 * Into a new result folder it writes what it measured: events.csv (one row
 * per event), tasks.csv (each task's thread id and the scheduling policy
 * and CPU it ran with) and meta.json; lab analyse makes
 * the summary, the histogram and its plot from them, on the host.  --trace
 * runs the whole measurement under trace-cmd (scheduler and irqhook events,
 * the CLOCK_MONOTONIC trace clock) into trace.dat in the same folder.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/irqhook.h>

#include "../lib/liblab.h"

#define PROG "irqhook"
/* Set for the traced child: the result folder the parent made for it. */
#define TRACED_ENV "IRQHOOK_TRACED_INTO"

struct options {
	unsigned long iterations;
	unsigned long period_us;
	unsigned long loads;
	unsigned long load_sleep_ns;
	int rt;
	int read_cpu, write_cpu;
	struct lab_opt_cpus load_cpus;
	const char *device;
	int trace;
	struct lab_common_opts common;	/* -o, --name, -q */
};

/* What one task ran as: the policy and priority read back, the CPU pinned to. */
struct task_info {
	pid_t tid;
	int policy, priority, cpu;
};

struct sample {
	uint64_t call_ns;	/* write task, just before write() */
	uint64_t return_ns;	/* read task, just after read() */
	struct irqhook_event ev;
};

static struct sample *samples;
static int dev_fd = -1;
/* When this run began: events written before it are not its own. */
static uint64_t run_start_ns;
static atomic_int stop;
static atomic_ulong n_read;
static atomic_int reader_done;
static struct task_info read_info, write_info, *load_info;
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

static void write_class(struct lab_json *j, const char *key, const void *value)
{
	lab_json_str(j, key, *(const int *)value ? "rt" : "normal");
}

static struct options opt = {
	.iterations = 10000, .period_us = 16000, .load_sleep_ns = 1000,
	.read_cpu = -1, .write_cpu = -1, .device = "/dev/irqhook",
};

static const struct lab_opt options[] = {
	{ .name = "events", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &opt.iterations,
	  .min = 1, .max = 10000000, .json = "events", .help = "events" },
	{ .name = "period-us", .kind = LAB_OPT_ULONG, .value = &opt.period_us, .max = 10000000,
	  .arg = "US", .json = "period_us",
	  .help = "the write task sleeps this long after each write" },
	{ .name = "loads", .kind = LAB_OPT_ULONG, .value = &opt.loads, .max = 1024,
	  .json = "loads", .help = "load tasks, each looping on a nanosleep" },
	{ .name = "load-sleep-ns", .kind = LAB_OPT_ULONG, .value = &opt.load_sleep_ns,
	  .max = 999999999, .arg = "NS", .json = "load_sleep_ns",
	  .help = "the load tasks' nanosleep" },
	{ .name = "rt", .kind = LAB_OPT_FLAG, .value = &opt.rt, .json = "class",
	  .write = write_class, .help = "read and write tasks SCHED_RR priority 1 (load tasks\n"
					 "stay SCHED_OTHER)" },
	{ .name = "read-cpu", .kind = LAB_OPT_CPU, .value = &opt.read_cpu, .arg = "CPU",
	  .json = "read_cpu", .help = "pin the read task to this CPU" },
	{ .name = "write-cpu", .kind = LAB_OPT_CPU, .value = &opt.write_cpu, .arg = "CPU",
	  .json = "write_cpu", .help = "pin the write task to this CPU" },
	{ .name = "load-cpus", .kind = LAB_OPT_CPUS, .value = &opt.load_cpus, .arg = "CPUS",
	  .json = "load_cpus", .help = "pin the load tasks round-robin to these CPUs (0-1)" },
	{ .name = "device", .kind = LAB_OPT_STR, .value = &opt.device, .arg = "PATH",
	  .json = "device", .help = "the device" },
	{ .name = "trace", .kind = LAB_OPT_FLAG, .value = &opt.trace,
	  .help = "record the run with trace-cmd into trace.dat" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: irqhook [options]\n"
		"\n"
		"Time how long a thread takes to respond to a virtual interrupt: a write\n"
		"to /dev/irqhook.  Needs root (mlockall, real-time priorities).  Writes\n"
		"OUTPUT/irqhook-<date>-<time>/ with events.csv, tasks.csv and meta.json;\n"
		"'lab analyse DIR' summarises and plots.",
	.example = "irqhook -n 2000 --loads 16 --rt -o results",
	.opts = options,
	.common = &opt.common,
};

/*
 * The start of every task: name it for the trace, pin it to @cpu (if >= 0)
 * and make it SCHED_RR priority 1 if @rt; then read back what it runs
 * with into @info.  Returns NULL, or @err filled with what failed.
 */
static const char *start_task(const char *name, struct task_info *info, int cpu, int rt,
			      char *err)
{
	struct sched_param sp = { .sched_priority = 1 };

	info->tid = (pid_t)syscall(SYS_gettid);
	info->cpu = cpu;
	pthread_setname_np(pthread_self(), name);
	if (cpu >= 0 && lab_pin_cpu(cpu)) {
		snprintf(err, ERRLEN, "cannot pin to CPU %d: %s", cpu, strerror(errno));
		return err;
	}
	if (rt && sched_setscheduler(0, SCHED_RR, &sp)) {
		snprintf(err, ERRLEN, "cannot set SCHED_RR: %s", strerror(errno));
		return err;
	}
	info->policy = sched_getscheduler(0);
	info->priority = sched_getparam(0, &sp) ? -1 : sp.sched_priority;
	return NULL;
}

static void *load_task(void *arg)
{
	unsigned long i = (unsigned long)arg;
	struct timespec ts = { 0, (long)opt.load_sleep_ns };

	char err[ERRLEN];

	/* As before: a load task that cannot be pinned still loads the machine. */
	start_task("irqhook-load", &load_info[i],
		   opt.load_cpus.n ? opt.load_cpus.v[i % (unsigned long)opt.load_cpus.n] : -1,
		   0, err);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		nanosleep(&ts, NULL);
	return NULL;
}

static void *read_task(void *arg)
{
	const char *err = start_task("irqhook-read", &read_info, opt.read_cpu, opt.rt, read_err);
	unsigned long i;

	(void)arg;
	if (err) {
		atomic_store(&reader_done, 1);
		return (void *)err;
	}
	/* Once stop is set, the next read is not started (see stop_reader()). */
	for (i = 0; i < opt.iterations && !atomic_load(&stop); i++) {
		struct irqhook_event ev;
		ssize_t n = read(dev_fd, &ev, sizeof(ev));

		if (n < 0 && errno == EINTR && !atomic_load(&stop)) {
			i--;
			continue;
		}
		if (n != (ssize_t)sizeof(ev))
			break;
		/* Left by an earlier run (written after the drain): not ours. */
		if (ev.write_ns < run_start_ns) {
			i--;
			continue;
		}
		samples[i].return_ns = lab_now_ns();
		samples[i].ev = ev;
		atomic_store(&n_read, i + 1);
	}
	atomic_store(&reader_done, 1);
	return NULL;
}

/*
 * End a reader that may be blocked in read() for an event that will not
 * come: stop is set, so it starts no new read, and SIGUSR1 interrupts the
 * one it is in.  A signal that lands just before it enters read() is lost,
 * so send it again until the reader says it is done.
 */
static void stop_reader(pthread_t reader)
{
	while (!atomic_load(&reader_done)) {
		pthread_kill(reader, SIGUSR1);
		usleep(10000);
	}
}

static void *write_task(void *arg)
{
	const char *err = start_task("irqhook-write", &write_info, opt.write_cpu, opt.rt,
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
		if (!opt.common.quiet && lab_now_ns() - last > 2000000000ull) {
			double el = (double)(lab_now_ns() - start) / 1e9;

			last = lab_now_ns();
			fprintf(stderr, "irqhook: %lu/%lu events (%.0f s elapsed, ~%.0f s left)\n",
				i + 1, opt.iterations, el,
				el / (double)(i + 1) * (double)(opt.iterations - i - 1));
		}
	}
	return NULL;
}

/*
 * Run the measurement again under trace-cmd, as its command, writing into
 * the result folder @dir that we made; wait for trace-cmd to finish (it
 * writes trace.dat after the command exits).  Returns the child's status.
 */
static int run_under_trace(int argc, char **argv, const char *dir)
{
	char **av = calloc((size_t)argc + 32, sizeof(*av));
	char out[sizeof(((struct lab_result *)0)->dir) + 16], self[PATH_MAX];
	int n = 0, i, status;
	ssize_t len;
	pid_t pid;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!av || len < 0)
		return -1;
	self[len] = '\0';
	snprintf(out, sizeof(out), "%s/trace.dat", dir);
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
	av[n] = NULL;
	setenv(TRACED_ENV, dir, 1);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp("trace-cmd", av);
		fprintf(stderr, PROG ": cannot run trace-cmd: %s (apt-get install trace-cmd)\n",
			strerror(errno));
		_exit(127);
	}
	free(av);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Take what an earlier program left queued (an interrupted run leaves an
 * event): a run measures only the events it wrote.  The reader also
 * discards anything written before run_start_ns, which a program still
 * ending may have queued after the drain.
 */
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

static int write_events(const struct lab_result *r, size_t n)
{
	FILE *f = lab_result_file(r, "events.csv");
	size_t i;

	if (!f)
		return -1;
	fprintf(f, "event,seq,call_ns,write_ns,wake_ns,return_ns,switching_ns,wakeup_ns\n");
	for (i = 0; i < n; i++) {
		const struct sample *s = &samples[i];

		fprintf(f, "%zu,%llu,%llu,%llu,%llu,%llu,%lld,%lld\n", i,
			(unsigned long long)s->ev.seq, (unsigned long long)s->call_ns,
			(unsigned long long)s->ev.write_ns, (unsigned long long)s->ev.wake_ns,
			(unsigned long long)s->return_ns,
			(long long)(s->return_ns - s->call_ns),
			(long long)(s->ev.wake_ns - s->ev.write_ns));
	}
	return fclose(f);
}

static const char *policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	default: return "unknown";
	}
}

static void task_row(FILE *f, const char *role, unsigned long index,
		     const struct task_info *t)
{
	fprintf(f, "%s,%lu,%d,%s,%d,%d\n", role, index, (int)t->tid, policy_name(t->policy),
		t->priority, t->cpu);
}

static int write_tasks(const struct lab_result *r)
{
	FILE *f = lab_result_file(r, "tasks.csv");
	unsigned long i;

	if (!f)
		return -1;
	fprintf(f, "role,index,tid,policy,priority,cpu\n");
	task_row(f, "read", 0, &read_info);
	task_row(f, "write", 0, &write_info);
	for (i = 0; i < opt.loads; i++)
		task_row(f, "load", i, &load_info[i]);
	return fclose(f);
}

static char *settings_json(int traced)
{
	struct lab_json j;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	lab_opts_json(&j, &tool);
	lab_json_bool(&j, "traced", traced);
	lab_json_end(&j);
	return lab_json_text(&j);
}

/* A few figures for the console; the analysis proper is analyse.py's. */
static void print_brief(size_t n)
{
	double *wk = malloc(n * sizeof(*wk));
	struct lab_summary s;
	size_t i;

	if (!wk || n < 2)
		goto out;
	for (i = 1; i < n; i++)
		wk[i - 1] = (double)(samples[i].ev.wake_ns - samples[i].ev.write_ns);
	lab_summarize(wk, n - 1, &s);
	printf("irqhook: %zu events, %lu load tasks, %s read/write tasks; wake-up after the "
	       "first event: p50 %.1f us, p99 %.1f us, max %.1f us\n", n, opt.loads,
	       opt.rt ? "SCHED_RR" : "SCHED_OTHER", s.p50 / 1e3, s.p99 / 1e3, s.max / 1e3);
out:
	free(wk);
}

/* The measurement itself, into the result folder @r. */
static int measure(const struct lab_result *r)
{
	pthread_t reader, writer, *loaders;
	void *rerr = NULL, *werr = NULL;
	unsigned long i, got;

	samples = calloc(opt.iterations, sizeof(*samples));
	load_info = calloc(opt.loads + 1, sizeof(*load_info));
	loaders = calloc(opt.loads + 1, sizeof(*loaders));
	if (!samples || !load_info || !loaders) {
		perror(PROG);
		return 1;
	}
	/* Touch every page now, then keep them: no page fault in the timed path. */
	memset(samples, 0, opt.iterations * sizeof(*samples));
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		fprintf(stderr, PROG ": mlockall: %s\n", strerror(errno));
		return 1;
	}
	drain_device();
	run_start_ns = lab_now_ns();
	dev_fd = open(opt.device, O_RDWR);
	if (dev_fd < 0) {
		fprintf(stderr, PROG ": cannot open %s: %s\n", opt.device, strerror(errno));
		return 1;
	}
	for (i = 0; i < opt.loads; i++)
		if (pthread_create(&loaders[i], NULL, load_task, (void *)i)) {
			fprintf(stderr, PROG ": cannot start load task %lu\n", i);
			atomic_store(&stop, 1);
			opt.loads = i;
			goto join_loads;
		}
	if (pthread_create(&reader, NULL, read_task, NULL)) {
		atomic_store(&stop, 1);
		goto join_loads;
	}
	usleep(10000);	/* let the reader block first */
	if (pthread_create(&writer, NULL, write_task, NULL)) {
		werr = "cannot start the write task";
		atomic_store(&stop, 1);
	} else {
		pthread_join(writer, &werr);
	}
	/* The reader gets every event written; give it a moment, then stop it. */
	for (i = 0; i < 1000 && atomic_load(&n_read) < opt.iterations && !werr &&
		    !atomic_load(&stop); i++)
		usleep(1000);
	atomic_store(&stop, 1);
	stop_reader(reader);
	pthread_join(reader, &rerr);
join_loads:
	for (i = 0; i < opt.loads; i++)
		pthread_join(loaders[i], NULL);

	if (werr || rerr) {
		fprintf(stderr, PROG ": %s\n", (const char *)(werr ? werr : rerr));
		return 1;
	}
	got = atomic_load(&n_read);
	if (got_signal) {
		fprintf(stderr, PROG ": interrupted after %lu events; nothing written\n", got);
		return 128 + (int)got_signal;
	}
	if (got < opt.iterations) {
		fprintf(stderr, PROG ": only %lu of %lu events came back\n", got, opt.iterations);
		return 1;
	}
	for (i = 1; i < got; i++)
		if (samples[i].ev.seq != samples[0].ev.seq + i) {
			fprintf(stderr, PROG ": event %lu has sequence %llu, expected %llu: "
				"another program is using %s\n", i,
				(unsigned long long)samples[i].ev.seq,
				(unsigned long long)(samples[0].ev.seq + i), opt.device);
			return 1;
		}
	if (write_events(r, got) || write_tasks(r)) {
		fprintf(stderr, PROG ": writing results to %s failed: %s\n", r->dir,
			strerror(errno));
		return 1;
	}
	print_brief(got);
	return 0;
}

int main(int argc, char **argv)
{
	const char *traced_into = getenv(TRACED_ENV);
	struct lab_result res = { 0 };
	char *settings;
	int status;

	lab_opts_parse(&tool, argc, argv, 0);
	if (access(opt.device, F_OK)) {
		fprintf(stderr, PROG ": %s: %s: is this the lab kernel with CONFIG_IRQHOOK?\n",
			opt.device, strerror(errno));
		return 1;
	}
	if (geteuid() != 0) {
		fprintf(stderr, PROG ": must run as root (mlockall, SCHED_RR, %s)\n", opt.device);
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_wakeup_signal;
	sigaction(SIGUSR1, &sa, NULL);

	/* The traced child measures into the folder its parent made. */
	if (traced_into) {
		snprintf(res.dir, sizeof(res.dir), "%s", traced_into);
		return measure(&res);
	}
	settings = settings_json(opt.trace);
	if (!settings) {
		perror(PROG ": settings");
		return 1;
	}
	if (lab_result_open(&res, PROG, opt.common.outdir, PROG, opt.common.name, argc, argv, settings))
		return 1;
	free(settings);
	/* Before tracing starts, so that the trace holds no earlier event. */
	if (opt.trace)
		drain_device();
	status = opt.trace ? run_under_trace(argc, argv, res.dir) : measure(&res);
	if (status == 0 && opt.trace && !got_signal) {
		/* trace-cmd exits 0 whatever its command did: check what it left. */
		static const char *const made[] = { "trace.dat", "events.csv", "tasks.csv" };
		char path[sizeof(res.dir) + 16];

		for (size_t k = 0; k < sizeof(made) / sizeof(made[0]) && !status; k++) {
			snprintf(path, sizeof(path), "%s/%s", res.dir, made[k]);
			if (access(path, F_OK)) {
				fprintf(stderr, PROG ": the traced run left no %s (see above)\n",
					path);
				status = 1;
			}
		}
	}
	if (status != 0 || got_signal) {
		lab_result_abort(&res);
		return status ? status : 128 + (int)got_signal;
	}
	if (lab_result_commit(&res)) {
		fprintf(stderr, PROG ": cannot rename %s: %s\n", res.dir, strerror(errno));
		return 1;
	}
	printf("results: %s\n", res.final);
	return 0;
}
