// SPDX-License-Identifier: GPL-2.0
/*
 * smp - SMP micro-benchmarks: what the kernel costs when work crosses CPUs.
 *
 *   smp list            the benchmarks
 *   smp BENCH [opts]    one of them: warm-up records, then N timed records
 *
 * Like perf bench: this file only dispatches: the table of benchmarks, the
 * options they share, where the CPUs go, and the result folder.  What the
 * benchmarks call is elsewhere: threads.c the threads and how a run is
 * stopped, machine.c the TSC, clock pairs and the kernel's counters; each
 * benchmark is one bench_*.c.  Every record
 * of every span is timed with the TSC and goes, in cycles and in ns
 * (cycles / the TSC frequency the kernel reports), into raw.csv
 * (record,span,cycles,ns); the settings, the TSC frequency and its source,
 * what the benchmark counted and how many records of each span went
 * backwards go into meta.json.  lab analyse summarises, on
 * the host.
 *
 * A record that went backwards (negative cycles) is a fact about the
 * machine, not a failed run: the two ends' TSCs disagree (under QEMU TCG
 * the vCPUs' need not agree), or for timer the TSC and CLOCK_MONOTONIC do.
 * It stays in raw.csv, is counted in meta.json's settings ("backward") and
 * in the printed summary, and is left out of the printed statistics.
 *
 * Stopping: SIGINT, SIGTERM (and SIGUSR2, SIGALRM) are blocked in every
 * thread; the main thread only waits for them, or for the benchmark's
 * threads to finish, in sigwaitinfo().  On a signal or a failure it sets
 * smp_stop, lets the benchmark wake its threads and interrupts a blocked
 * system call with SIGUSR1; the result folder is then removed and the
 * exit status is 128 + the signal (130 for Ctrl-C).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "smp.h"

static const struct smp_bench *const benches[] = {
	&smp_bench_pipes, &smp_bench_cv, &smp_bench_tlbflush, &smp_bench_timer, &smp_bench_tun,
};
#define NBENCHES ((int)(sizeof(benches) / sizeof(benches[0])))


static struct smp smp_run = {
	.n = 500, .warmup = 50, .pages = 1, .interval_us = 1000,
};
/* Options whose values are placed once the benchmark is known. */
static struct lab_opt_cpus cpu_opt;
static unsigned long remote_opt;
static const char *const wait_names[] = { "spin", "sleep", NULL };

#define BIG 10000000UL
static const struct lab_opt options[] = {
	{ .letter = 'n', .kind = LAB_OPT_ULONG, .value = &smp_run.n, .min = 1, .max = BIG,
	  .json = "n", .help = "timed records" },
	{ .name = "warmup", .kind = LAB_OPT_ULONG, .value = &smp_run.warmup, .max = BIG,
	  .json = "warmup", .help = "untimed records first" },
	{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPUS, .value = &cpu_opt, .max = 2,
	  .arg = "A[,B]",
	  .help = "the CPUs of the two ends (default: the first two this\n"
		  "process may run on, usually 0,1)" },
	{ .name = "same-cpu", .kind = LAB_OPT_FLAG, .value = &smp_run.same_cpu,
	  .help = "both ends on CPU A (timer: accepted, it uses only A)" },
	{ .name = "remote", .kind = LAB_OPT_ULONG, .value = &remote_opt, .max = CPU_SETSIZE - 1,
	  .arg = "R", .help = "tlbflush: threads on R other CPUs, each touching the\n"
			      "pages and then spinning (default: every other CPU)" },
	{ .name = "pages", .kind = LAB_OPT_ULONG, .value = &smp_run.pages, .min = 1, .max = 1 << 18,
	  .arg = "P", .help = "tlbflush: pages mapped, touched by every thread,\n"
			      "unmapped" },
	{ .name = "interval", .kind = LAB_OPT_ULONG, .value = &smp_run.interval_us, .min = 1,
	  .max = BIG, .arg = "US",
	  .help = "timer: from arming to expiry, for SIGALRM and for\nthe sleep" },
	{ .name = "wait", .kind = LAB_OPT_CHOICE, .value = &smp_run.wait_sleep, .choices = wait_names,
	  .arg = "spin|sleep",
	  .help = "timer: wait for SIGALRM spinning or asleep (sleep is\n"
		  "the default on PREEMPT_RT, which expires POSIX timers\n"
		  "in a SCHED_FIFO 1 thread that a spinning thread would\n"
		  "starve)" },
	{ 0 }
};

static char about[2048];
static struct lab_tool tool = {
	.prog = PROG,
	.about = about,
	.notes = "cv, timer and tun need root (SCHED_FIFO/RR); tun needs /dev/net/tun and\n"
		"only talks to its own tun device (10.233.0.1/30).",
	.example = "smp pipes -n 500 -C 0,1 -o results",
	.opts = options,
	.common = &smp_run.common,
};

/* The usage text's head: the benchmarks are smp's table's. */
static void write_about(void)
{
	size_t len;
	int i;

	len = (size_t)snprintf(about, sizeof(about),
		"usage: smp BENCH [options]\n"
		"       smp list\n"
		"\n"
		"SMP micro-benchmarks: each times one span with the TSC, warm-up records\n"
		"first, then N timed records.  Writes OUTPUT/smp-BENCH-<date>-<time>/ with\n"
		"raw.csv (record,span,cycles,ns: every record of every span) and meta.json\n"
		"(the settings, the TSC frequency and its source, what the kernel counted,\n"
		"the records of each span that went backwards: kept in raw.csv, left out of\n"
		"the summary); 'lab analyse DIR' summarises a folder of 'lab smp'.\n"
		"\n"
		"Benchmarks:");
	for (i = 0; i < NBENCHES && len < sizeof(about); i++)
		len += (size_t)snprintf(about + len, sizeof(about) - len, "\n  %-10s %s",
					benches[i]->name, benches[i]->desc);
}

static void usage(FILE *f)
{
	write_about();
	lab_opts_usage(&tool, f);
}

/* --- CPUs --------------------------------------------------------------- */

/* CPU A and B from -C (@list, @nlist entries) and the placement. */
static void place(struct smp *s, const int *list, int nlist)
{
	unsigned int f = s->bench->flags;
	int i;

	s->cpu_a = nlist ? list[0] : s->usable[0];
	if (f & SMP_ONE_CPU) {
		s->cpu_b = s->cpu_a;
		return;
	}
	if (s->same_cpu && (f & SMP_TWO_ENDS)) {
		s->cpu_b = s->cpu_a;
		return;
	}
	if (nlist == 2) {
		s->cpu_b = list[1];	/* another: lab_opt_cpus() lists each CPU once */
		return;
	}
	s->cpu_b = -1;
	for (i = 0; i < s->nusable && s->cpu_b < 0; i++)
		if (s->usable[i] != s->cpu_a)
			s->cpu_b = s->usable[i];
	if (s->cpu_b < 0 && (f & SMP_TWO_ENDS)) {
		fprintf(stderr, PROG ": %s across CPUs needs two, this process has only CPU %d "
			"(--same-cpu puts both ends on it)\n", s->bench->name, s->cpu_a);
		exit(2);
	}
}

/* tlbflush: the remote CPUs, B first, then every other one ascending. */
static void place_remote(struct smp *s, long remote)
{
	int others = s->nusable - 1, i, k = 0;

	if (remote < 0)
		remote = others;
	if (remote > others) {
		fprintf(stderr, PROG ": --remote wants at most %d (the CPUs other than CPU %d "
			"this process may run on), not '%ld'\n", others, s->cpu_a, remote);
		exit(2);
	}
	s->remote = (int)remote;
	s->remote_cpus = calloc((size_t)s->nusable, sizeof(*s->remote_cpus));
	if (!s->remote_cpus) {
		perror(PROG);
		exit(1);
	}
	if (remote > 0 && s->cpu_b >= 0)
		s->remote_cpus[k++] = s->cpu_b;
	for (i = 0; i < s->nusable && k < remote; i++)
		if (s->usable[i] != s->cpu_a && s->usable[i] != s->cpu_b)
			s->remote_cpus[k++] = s->usable[i];
}

static int preempt_rt(void)
{
	struct utsname u;

	return uname(&u) == 0 && strstr(u.version, "PREEMPT_RT") != NULL;
}

/* --- options ------------------------------------------------------------ */

/* The benchmark's own options only, then the CPUs placed for it. */
static void parse_options(struct smp *s, int argc, char **argv)
{
	static const struct { const void *value; const char *name; unsigned int flag;
			      const char *owner; } own[] = {
		{ &remote_opt, "--remote", SMP_REMOTE, "tlbflush" },
		{ &smp_run.pages, "--pages", SMP_REMOTE, "tlbflush" },
		{ &smp_run.interval_us, "--interval", SMP_TIMER, "timer" },
		{ &smp_run.wait_sleep, "--wait", SMP_TIMER, "timer" },
	};
	const struct smp_bench *b = s->bench;
	size_t k;

	write_about();
	lab_opts_parse(&tool, argc, argv, 0);
	for (k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
		if (lab_opts_given(&tool, own[k].value) && !(b->flags & own[k].flag)) {
			fprintf(stderr, PROG ": %s is an option of %s, not of %s\n", own[k].name,
				own[k].owner, b->name);
			exit(2);
		}
	}
	if (s->same_cpu && (b->flags & SMP_REMOTE)) {
		fprintf(stderr, PROG ": tlbflush has no --same-cpu: its remote threads are on "
			"other CPUs by definition (--remote 0: none)\n");
		exit(2);
	}
	s->nusable = lab_cpus_usable(&s->usable);
	if (s->nusable < 0) {
		fprintf(stderr, PROG ": cannot tell which CPUs are online: %s\n", strerror(errno));
		exit(1);
	}
	place(s, cpu_opt.v, cpu_opt.n);
	if (b->flags & SMP_REMOTE)
		place_remote(s, lab_opts_given(&tool, &remote_opt) ? (long)remote_opt : -1);
	if ((b->flags & SMP_TIMER) && !lab_opts_given(&tool, &s->wait_sleep) && preempt_rt()) {
		s->wait_sleep = 1;
		s->wait_why = "PREEMPT_RT expires POSIX timers in the ktimers thread "
			      "(SCHED_FIFO 1), which a spinning SCHED_FIFO 99 thread would starve";
	}
}

static char *settings_json(struct smp *s)
{
	const struct smp_bench *b = s->bench;
	int i, cpus[2] = { s->cpu_a, s->cpu_b };
	struct lab_json j;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	lab_json_str(&j, "bench", b->name);
	lab_json_uint(&j, "n", s->n);
	lab_json_uint(&j, "warmup", s->warmup);
	lab_json_double(&j, "tsc_hz", s->tsc_hz, 1);
	lab_json_str(&j, "tsc_hz_source", s->tsc_source);
#if defined(__x86_64__) || defined(__i386__)
	lab_json_str(&j, "tsc_read", smp_have_rdtscp ? "rdtscp" : "rdtsc");
#else
	lab_json_str(&j, "tsc_read", "CLOCK_MONOTONIC ns");
#endif
	lab_json_array(&j, "spans");
	for (i = 0; i < b->nspans; i++)
		lab_json_str(&j, NULL, b->spans[i]);
	lab_json_end(&j);
	/* tlbflush: across CPUs if it has remote threads. */
	lab_json_str(&j, "placement",
		     (b->flags & SMP_REMOTE ? s->remote > 0 :
		      s->cpu_a != s->cpu_b && s->cpu_b >= 0) ? "cross" : "same");
	if (b->flags & SMP_REMOTE) {
		lab_json_array(&j, "cpus");
		lab_json_int(&j, NULL, s->cpu_a);
		for (i = 0; i < s->remote; i++)
			lab_json_int(&j, NULL, s->remote_cpus[i]);
		lab_json_end(&j);
	} else {
		smp_json_ints(&j, "cpus", cpus, s->cpu_a == s->cpu_b || s->cpu_b < 0 ? 1 : 2);
	}
	lab_json_bool(&j, "mlocked", s->mlocked);
	lab_json_array(&j, "threads");
	for (i = 0; i < s->nthreads; i++) {
		const struct smp_thread *t = &s->threads[i];

		lab_json_object(&j, NULL);
		lab_json_str(&j, "name", t->name);
		lab_json_int(&j, "cpu", t->cpu);
		lab_json_str(&j, "policy", smp_policy_name(t->policy));
		lab_json_int(&j, "priority", t->prio);
		lab_json_end(&j);
	}
	lab_json_end(&j);
	/* Records of each span whose end came before its start (raw.csv has them). */
	lab_json_object(&j, "backward");
	for (i = 0; i < b->nspans; i++)
		lab_json_uint(&j, b->spans[i], s->backward[i]);
	lab_json_end(&j);
	if (b->settings)
		b->settings(s, &j);
	lab_json_end(&j);
	return lab_json_text(&j);
}

static int write_raw(const struct lab_result *r, const struct smp *s)
{
	FILE *f = lab_result_file(r, "raw.csv");
	unsigned long i;
	int k;

	if (!f)
		return -1;
	fprintf(f, "record,span,cycles,ns\n");
	for (i = 0; i < s->n; i++)
		for (k = 0; k < s->bench->nspans; k++) {
			int64_t c = s->cycles[(size_t)k * s->n + i];

			fprintf(f, "%lu,%s,%lld,%.1f\n", i, s->bench->spans[k], (long long)c,
				(double)c / s->tsc_hz * 1e9);
		}
	return fclose(f);
}

/* Count, per span, the records that went backwards. */
static void count_backward(struct smp *s)
{
	for (int k = 0; k < s->bench->nspans; k++) {
		s->backward[k] = 0;
		for (unsigned long i = 0; i < s->n; i++)
			if (s->cycles[(size_t)k * s->n + i] < 0)
				s->backward[k]++;
	}
}

/* Each span's summary over the records that did not go backwards. */
static void print_summary(const struct smp *s)
{
	double *ns = malloc(s->n * sizeof(*ns));
	const char *name = s->bench->name;
	struct lab_summary sum;

	if (!ns)
		return;
	for (int k = 0; k < s->bench->nspans; k++) {
		const char *span = s->bench->spans[k];
		size_t m = 0;

		for (unsigned long i = 0; i < s->n; i++) {
			int64_t c = s->cycles[(size_t)k * s->n + i];

			if (c >= 0)
				ns[m++] = (double)c / s->tsc_hz * 1e9;
		}
		if (!m) {
			printf("%s %-12s n 0: all %lu records went backwards (the clocks disagree)\n",
			       name, span, s->n);
			continue;
		}
		if (lab_summarize(ns, m, &sum))
			continue;
		printf("%s %-12s n %zu  p50 %.0f ns  p99 %.0f ns  (p50 %.0f cycles)", name, span,
		       m, sum.p50, sum.p99, sum.p50 * s->tsc_hz / 1e9);
		if (s->backward[k])
			printf("  %lu of %lu went backwards (the clocks disagree), left out",
			       s->backward[k], s->n);
		printf("\n");
	}
	free(ns);
}

/* --- main --------------------------------------------------------------- */

/* The benchmark's clean-up, once (a tun device goes with its fd). */
static void cleanup(struct smp *s)
{
	static int done;

	if (s->bench->cleanup && !done++)
		s->bench->cleanup(s);
}

static int finish_failed(struct smp *s, struct lab_result *res)
{
	int sig;

	lab_result_abort(res);
	cleanup(s);
	sig = smp_stop_signal();
	if (sig) {
		fprintf(stderr, PROG ": %s interrupted by signal %d; nothing written\n",
			s->bench->name, sig);
		return 128 + sig;
	}
	fprintf(stderr, PROG ": %s\n", smp_failure() ? smp_failure() : "the run failed");
	return 1;
}

int main(int argc, char **argv)
{
	struct lab_result res = { 0 };
	char experiment[64], *settings;
	int i;

	if (!strcmp(lab_opt_command(argc, argv, usage), "list")) {
		for (i = 0; i < NBENCHES; i++)
			printf("%-10s %s\n", benches[i]->name, benches[i]->desc);
		return 0;
	}
	for (i = 0; i < NBENCHES && !smp_run.bench; i++)
		if (!strcmp(argv[1], benches[i]->name))
			smp_run.bench = benches[i];
	if (!smp_run.bench) {
		fprintf(stderr, PROG ": no benchmark '%s' ('smp list' shows them)\n", argv[1]);
		return 2;
	}
	parse_options(&smp_run, argc - 1, argv + 1);

	/* A missing device or permission: one line, status 1, nothing made. */
	i = smp_run.bench->check ? smp_run.bench->check(&smp_run) : 0;
	if (i)
		return i;
	if ((smp_run.bench->flags & SMP_ROOT) && geteuid() != 0) {
		fprintf(stderr, PROG ": %s needs root (SCHED_FIFO/RR)\n", smp_run.bench->name);
		return 1;
	}
	smp_detect_rdtscp();
#if defined(__x86_64__) || defined(__i386__)
	smp_run.tsc_hz = lab_tsc_hz(&smp_run.tsc_source);
#else
	smp_run.tsc_hz = 1e9;
	smp_run.tsc_source = "no TSC: CLOCK_MONOTONIC ns";
#endif
	if (!(smp_run.tsc_hz > 0)) {
		fprintf(stderr, PROG ": this CPU has no usable TSC\n");
		return 1;
	}

	smp_signals_init();

	smp_run.cycles = calloc((size_t)smp_run.bench->nspans * smp_run.n, sizeof(*smp_run.cycles));
	if (!smp_run.cycles) {
		fprintf(stderr, PROG ": no memory for %lu records\n", smp_run.n);
		return 1;
	}
	if (smp_run.bench->prepare && smp_run.bench->prepare(&smp_run)) {
		cleanup(&smp_run);
		return 1;
	}
	/* Every page now, and (but for tlbflush) every page later: no faults. */
	memset(smp_run.cycles, 0, (size_t)smp_run.bench->nspans * smp_run.n * sizeof(*smp_run.cycles));
	if (geteuid() == 0)
		smp_run.mlocked = mlockall(MCL_CURRENT | (smp_run.bench->flags & SMP_NO_LOCK_FUTURE ?
						    0 : MCL_FUTURE)) == 0;

	snprintf(experiment, sizeof(experiment), PROG "-%s", smp_run.bench->name);
	if (lab_result_open(&res, PROG, smp_run.common.outdir, experiment, smp_run.common.name, 0, NULL, NULL)) {
		cleanup(&smp_run);
		return 1;
	}
	if (smp_run.bench->run(&smp_run) || smp_failure() || smp_signal_got())
		return finish_failed(&smp_run, &res);
	count_backward(&smp_run);
	settings = settings_json(&smp_run);
	if (!settings || lab_meta_write(&res, argc, argv, settings) || write_raw(&res, &smp_run)) {
		fprintf(stderr, PROG ": writing results to %s failed: %s\n", res.dir,
			strerror(errno));
		lab_result_abort(&res);
		cleanup(&smp_run);
		return 1;
	}
	free(settings);
	cleanup(&smp_run);
	if (smp_stop_signal())
		return finish_failed(&smp_run, &res);
	if (lab_result_commit(&res)) {
		fprintf(stderr, PROG ": cannot rename %s: %s\n", res.dir, strerror(errno));
		lab_result_abort(&res);
		return 1;
	}
	if (!smp_run.common.quiet) {
		print_summary(&smp_run);
		printf("results: %s\n", res.final);
	}
	return 0;
}
