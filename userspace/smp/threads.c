// SPDX-License-Identifier: GPL-2.0
/*
 * smp's threads and signals: the benchmark's threads start pinned, with
 * their policies; the main thread alone takes SIGINT and SIGTERM, and the
 * threads' "I am done" (SIGUSR2), in sigwaitinfo() and ends the run on a
 * signal or the first failure (see smp.c's header comment).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "smp.h"

atomic_int smp_stop;
static pthread_t main_thread;
static int got_signal;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char fail_msg[512];

void smp_fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	if (!fail_msg[0]) {
		va_start(ap, fmt);
		vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&fail_lock);
	atomic_store(&smp_stop, 1);
}

static void on_kick(int sig)
{
	(void)sig;	/* only interrupts a blocked system call */
}

/* SIGINT or SIGTERM that came while no one waited for it: 0 if none. */
static int pending_stop_signal(void)
{
	sigset_t p;

	if (sigpending(&p))
		return 0;
	return sigismember(&p, SIGINT) ? SIGINT : sigismember(&p, SIGTERM) ? SIGTERM : 0;
}

void smp_signals_init(void)
{
	struct sigaction sa = { .sa_handler = on_kick };
	sigset_t block;

	/* From here on only the main thread takes these, in smp_run_threads(). */
	main_thread = pthread_self();
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART: a kick interrupts */
}

const char *smp_failure(void)
{
	return fail_msg[0] ? fail_msg : NULL;
}

int smp_signal_got(void)
{
	return got_signal;
}

int smp_stop_signal(void)
{
	if (!got_signal)
		got_signal = pending_stop_signal();
	return got_signal;
}

static void *thread_main(void *arg)
{
	struct smp_thread *t = arg;

	pthread_setname_np(pthread_self(), t->name);
	t->fn(t->s, t->arg);
	atomic_store(&t->done, 1);
	pthread_kill(main_thread, SIGUSR2);	/* the main thread counts who is done */
	return NULL;
}

static int start_thread(struct smp_thread *t)
{
	struct sched_param sp = { .sched_priority = t->prio };
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (pthread_attr_init(&attr))
		return ENOMEM;
	/* Small stacks: mlockall(MCL_FUTURE) locks each one whole. */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, t->policy);
	pthread_attr_setschedparam(&attr, &sp);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	err = pthread_create(&t->tid, &attr, thread_main, t);
	pthread_attr_destroy(&attr);
	return err;
}

const char *smp_policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	default: return "unknown";
	}
}

/*
 * The main thread only waits, but it must be able to run: keep it off the
 * benchmark's CPUs (where a real-time thread may spin), or at least off
 * CPU A, if this process may run elsewhere.
 */
static void keep_main_away(const struct smp *s, const struct smp_thread *t, int n)
{
	cpu_set_t set;
	int i, k;

	for (k = 0; k < 2; k++) {
		CPU_ZERO(&set);
		for (i = 0; i < s->nusable; i++)
			CPU_SET(s->usable[i], &set);
		if (k == 0)
			for (i = 0; i < n; i++)
				CPU_CLR(t[i].cpu, &set);
		CPU_CLR(s->cpu_a, &set);
		if (CPU_COUNT(&set) && !sched_setaffinity(0, sizeof(set), &set))
			return;
	}
}

int smp_run_threads(struct smp *s, struct smp_thread *t, int n, void (*wake)(struct smp *s))
{
	struct timespec tick = { 0, 10000000 };
	sigset_t set;
	int i, err, left;

	s->threads = t;
	s->nthreads = n;
	keep_main_away(s, t, n);
	for (i = 0; i < n; i++) {
		t[i].s = s;
		atomic_store(&t[i].done, 0);
		err = start_thread(&t[i]);
		if (err) {
			smp_fail("cannot start thread %s (%s %d on CPU %d): %s", t[i].name,
				 smp_policy_name(t[i].policy), t[i].prio, t[i].cpu, strerror(err));
			break;
		}
		t[i].started = 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR2);
	for (;;) {
		int sig;

		for (i = 0, left = 0; i < n; i++)
			left += t[i].started && !atomic_load(&t[i].done);
		if (!left)
			break;
		if (smp_stopping()) {
			/* Wake whoever waits; again and again, a kick can come too early. */
			if (wake)
				wake(s);
			for (i = 0; i < n; i++)
				if (t[i].started && !atomic_load(&t[i].done))
					pthread_kill(t[i].tid, SIGUSR1);
			sig = sigtimedwait(&set, NULL, &tick);
		} else {
			sig = sigwaitinfo(&set, NULL);
		}
		if (sig == SIGINT || sig == SIGTERM) {
			if (!got_signal)
				got_signal = sig;
			atomic_store(&smp_stop, 1);
		}
	}
	for (i = 0; i < n; i++)
		if (t[i].started)
			pthread_join(t[i].tid, NULL);
	return fail_msg[0] || got_signal ? -1 : 0;
}
