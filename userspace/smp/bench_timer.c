// SPDX-License-Identifier: GPL-2.0
/*
 * timer: one thread pinned on CPU A at the top SCHED_FIFO priority.  Each
 * record has two spans, both from a programmed CLOCK_MONOTONIC expiry
 * --interval us ahead:
 *
 *   sigalrm    a POSIX timer (timer_create, SIGEV_SIGNAL with SIGALRM,
 *              armed with that absolute expiry) fires while the thread
 *              spins -> the first statement of the SIGALRM handler reads
 *              the TSC
 *   nanosleep  clock_nanosleep(TIMER_ABSTIME) to that expiry -> the TSC
 *              as soon as it returns (what cyclictest measures)
 *
 * The expiry is a CLOCK_MONOTONIC time; it is turned into a TSC value with
 * a pair of readings taken just before arming (TSC, clock_gettime, TSC:
 * the clock's time belongs to the middle of the two TSC reads; the
 * narrowest of three such pairs, smp_clock_pair()) and the TSC frequency: expiry_tsc = tsc + (expiry - now) x tsc_hz / 1e9.  A rate
 * difference of 10 ppm between the TSC frequency and CLOCK_MONOTONIC would
 * move a 1 ms expiry by 10 ns; the pair is taken afresh for every span.
 * A span is the handler's (or the woken thread's) TSC minus expiry_tsc,
 * and its ns are those cycles / tsc_hz, like every other span's.
 *
 * --wait sleep waits for SIGALRM in ppoll() instead of spinning: on
 * PREEMPT_RT (the default there) POSIX timers expire in the ktimers thread
 * (SCHED_FIFO 1), which a spinning SCHED_FIFO 99 thread on the same CPU
 * would starve for ever.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "smp.h"

static const char *const spans[] = { "sigalrm", "nanosleep" };
enum { SIGALRM_SPAN, NANOSLEEP_SPAN };

static volatile sig_atomic_t alarmed;
static volatile uint64_t alarm_tsc;
static timer_t timer;
static int have_timer;

static void on_alarm(int sig)
{
	uint64_t t = smp_tsc();	/* the first statement */

	(void)sig;
	alarm_tsc = t;
	alarmed = 1;
}

static struct timespec to_ts(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
}

/* Wait for the alarm; 0, or -1 if stopping or it does not come. */
static int wait_alarm(struct smp *s, const sigset_t *open, uint64_t deadline)
{
	struct timespec second = { 1, 0 };

	while (!alarmed) {
		if (smp_stopping())
			return -1;
		if (smp_tsc() > deadline) {
			smp_fail("timer: no SIGALRM %d s after the expiry%s", SMP_GIVE_UP_S,
				 s->wait_sleep ? "" : " (a spinning SCHED_FIFO 99 thread starves "
				 "whatever delivers it here? try --wait sleep)");
			return -1;
		}
		if (s->wait_sleep)
			ppoll(NULL, 0, &second, open);	/* SIGALRM open only in here */
		else
			smp_relax();
	}
	return 0;
}

static void timer_thread(struct smp *s, void *arg)
{
	const int64_t interval = (int64_t)s->interval_us * 1000;
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	struct smp_clock_pair p;
	struct timespec ts;
	sigset_t alrm, open;
	unsigned long i;
	int64_t expiry;
	uint64_t t;
	int r;

	(void)arg;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_SETMASK, NULL, &open);
	sigdelset(&open, SIGALRM);
	if (!s->wait_sleep)
		pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++) {
		alarmed = 0;
		smp_clock_pair(&p);
		expiry = p.ns + interval;
		its.it_value = to_ts(expiry);
		if (timer_settime(timer, TIMER_ABSTIME, &its, NULL)) {
			smp_fail("timer: timer_settime: %s", strerror(errno));
			return;
		}
		if (wait_alarm(s, &open, smp_tsc_at(s, &p, expiry + SMP_GIVE_UP_S * 1000000000LL)))
			return;
		smp_put(s, SIGALRM_SPAN, i, (int64_t)(alarm_tsc - smp_tsc_at(s, &p, expiry)));

		smp_clock_pair(&p);
		expiry = p.ns + interval;
		ts = to_ts(expiry);
		r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		t = smp_tsc();
		if (r) {
			if (!smp_stopping())
				smp_fail("timer: clock_nanosleep: %s", strerror(r));
			return;
		}
		smp_put(s, NANOSLEEP_SPAN, i, (int64_t)(t - smp_tsc_at(s, &p, expiry)));
	}
}

static int prepare(struct smp *s)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };

	(void)s;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) ||
	    timer_create(CLOCK_MONOTONIC, &sev, &timer)) {
		fprintf(stderr, PROG ": timer: cannot create a POSIX timer: %s\n", strerror(errno));
		return -1;
	}
	have_timer = 1;
	return 0;
}

static int run(struct smp *s)
{
	static struct smp_thread t[1];

	t[0] = (struct smp_thread){ .name = "smp-timer", .fn = timer_thread, .cpu = s->cpu_a,
				    .policy = SCHED_FIFO,
				    .prio = sched_get_priority_max(SCHED_FIFO) };
	return smp_run_threads(s, t, 1, NULL);
}

static void settings(struct smp *s, struct lab_json *j)
{
	char policy[32];

	snprintf(policy, sizeof(policy), "SCHED_FIFO %d", sched_get_priority_max(SCHED_FIFO));
	lab_json_uint(j, "interval_ns", s->interval_us * 1000);
	lab_json_str(j, "policy", policy);
	lab_json_str(j, "wait", s->wait_sleep ? "sleep" : "spin");
	lab_json_str(j, "wait_why", s->wait_why);
	lab_json_str(j, "timer", "timer_create(CLOCK_MONOTONIC, SIGEV_SIGNAL SIGALRM), "
		     "absolute one-shot expiry");
	lab_json_str(j, "expiry_to_tsc", "TSC, clock_gettime, TSC just before arming; "
		     "expiry_tsc = middle TSC + (expiry - clock) x tsc_hz");
}

static void cleanup(struct smp *s)
{
	(void)s;
	if (have_timer)
		timer_delete(timer);
}

const struct smp_bench smp_bench_timer = {
	.name = "timer",
	.desc = "SCHED_FIFO 99 thread on A: timer expiry -> SIGALRM handler; and nanosleep",
	.spans = spans,
	.nspans = 2,
	.flags = SMP_ROOT | SMP_ONE_CPU | SMP_TIMER,
	.prepare = prepare,
	.run = run,
	.settings = settings,
	.cleanup = cleanup,
};
