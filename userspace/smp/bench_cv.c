// SPDX-License-Identifier: GPL-2.0
/*
 * cv: a higher-priority thread (SCHED_FIFO 2) on CPU A and a lower one
 * (SCHED_FIFO 1) on CPU B (--same-cpu: both on A), two mutex/condition-
 * variable pairs.  One record: the high thread signals cv1, the low thread
 * wakes and signals cv2, the high thread wakes.  Spans:
 *
 *   high_to_low  the high thread's TSC just before it signals cv1 -> the low
 *                thread's TSC as soon as pthread_cond_wait() returns
 *   low_to_high  the same from the low thread back to the high one on cv2
 *   round_trip   the first stamp to the last, both on the high thread's CPU
 *
 * The signalling thread sets the record's number and its TSC stamp under
 * the mutex, unlocks and then signals: the woken thread never has to wait
 * for the mutex (with both threads on one CPU the high one would otherwise
 * preempt the low one inside pthread_cond_signal() and block on the mutex
 * it still holds).  Every wait blocks: with both threads on one CPU the
 * low one runs only when the high one waits, and nothing spins.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "smp.h"

static const char *const spans[] = { "high_to_low", "low_to_high", "round_trip" };
enum { HIGH_TO_LOW, LOW_TO_HIGH, ROUND_TRIP };

struct handoff {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned long seq;	/* the record last signalled, + 1 */
	uint64_t stamp;		/* the TSC just before that signal */
};

static struct handoff cv1 = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
static struct handoff cv2 = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

/* Signal record @seq on @h; returns the stamp. */
static uint64_t post(struct handoff *h, unsigned long seq)
{
	uint64_t t;

	pthread_mutex_lock(&h->m);
	h->seq = seq;
	h->stamp = t = smp_tsc();
	pthread_mutex_unlock(&h->m);
	pthread_cond_signal(&h->cv);
	return t;
}

/*
 * Wait for record @seq on @h; *@woke is the TSC when the wait returned,
 * *@stamp the signaller's.  Returns -1 if the run is stopping.
 */
static int wait_for(struct handoff *h, unsigned long seq, uint64_t *woke, uint64_t *stamp)
{
	int ret = 0;

	pthread_mutex_lock(&h->m);
	while (h->seq != seq && !smp_stopping())
		pthread_cond_wait(&h->cv, &h->m);
	*woke = smp_tsc();
	*stamp = h->stamp;
	if (h->seq != seq)
		ret = -1;
	pthread_mutex_unlock(&h->m);
	return ret;
}

static void high(struct smp *s, void *arg)
{
	uint64_t t0, t3, stamp;
	unsigned long i;

	(void)arg;
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++) {
		t0 = post(&cv1, i + 1);
		if (wait_for(&cv2, i + 1, &t3, &stamp))
			return;
		smp_put(s, LOW_TO_HIGH, i, (int64_t)(t3 - stamp));
		smp_put(s, ROUND_TRIP, i, (int64_t)(t3 - t0));
	}
}

static void low(struct smp *s, void *arg)
{
	uint64_t t1, stamp;
	unsigned long i;

	(void)arg;
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++) {
		if (wait_for(&cv1, i + 1, &t1, &stamp))
			return;
		smp_put(s, HIGH_TO_LOW, i, (int64_t)(t1 - stamp));
		post(&cv2, i + 1);
	}
}

/* Stopping: wake both waits; they see smp_stop and return. */
static void wake(struct smp *s)
{
	(void)s;
	pthread_mutex_lock(&cv1.m);
	pthread_cond_broadcast(&cv1.cv);
	pthread_mutex_unlock(&cv1.m);
	pthread_mutex_lock(&cv2.m);
	pthread_cond_broadcast(&cv2.cv);
	pthread_mutex_unlock(&cv2.m);
}

static int run(struct smp *s)
{
	static struct smp_thread t[2];

	/* The low thread first: it waits for the first signal. */
	t[0] = (struct smp_thread){ .name = "smp-cv-low", .fn = low, .cpu = s->cpu_b,
				    .policy = SCHED_FIFO, .prio = 1 };
	t[1] = (struct smp_thread){ .name = "smp-cv-high", .fn = high, .cpu = s->cpu_a,
				    .policy = SCHED_FIFO, .prio = 2 };
	return smp_run_threads(s, t, 2, wake);
}

static void settings(struct smp *s, struct lab_json *j)
{
	lab_json_int(j, "high_cpu", s->cpu_a);
	lab_json_int(j, "low_cpu", s->cpu_b);
	lab_json_str(j, "policy", "SCHED_FIFO 2 (high), SCHED_FIFO 1 (low)");
}

const struct smp_bench smp_bench_cv = {
	.name = "cv",
	.desc = "SCHED_FIFO 2 thread on A, 1 on B: signal on cv1, and back on cv2",
	.spans = spans,
	.nspans = 3,
	.flags = SMP_ROOT | SMP_TWO_ENDS,
	.run = run,
	.settings = settings,
};
