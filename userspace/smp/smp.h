/* SPDX-License-Identifier: GPL-2.0 */
/*
 * smp: what the kernel costs when work crosses CPUs.  What the benchmarks
 * share (threads.c: threads, stop on a signal; machine.c: the TSC, clock
 * pairs, the kernel's counters), the interface each benchmark (bench_*.c)
 * implements, and smp.c, which only dispatches to them.
 */
#ifndef SMP_H
#define SMP_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../lib/liblab.h"

#define PROG "smp"
#define SMP_MAX_SPANS 4
#define SMP_MAX_THREADS 1024
/*
 * A span that has not ended this long after it should have is an error,
 * not a hang.  Seconds of the host's clock under TCG: far more than a
 * vCPU a busy host deschedules waits for its turn.
 */
#define SMP_GIVE_UP_S 10

/* What a benchmark needs from the common part. */
enum {
	SMP_ROOT = 1 << 0,		/* real-time priorities: root only */
	SMP_TWO_ENDS = 1 << 1,		/* an end on CPU A and one on B (or A: --same-cpu) */
	SMP_ONE_CPU = 1 << 2,		/* only CPU A; --same-cpu accepted and ignored */
	SMP_REMOTE = 1 << 3,		/* A and --remote other CPUs; --pages */
	SMP_TIMER = 1 << 4,		/* --interval, --wait */
	SMP_NO_LOCK_FUTURE = 1 << 5,	/* mlockall(MCL_CURRENT) only: it maps memory */
};

struct smp;

struct smp_bench {
	const char *name;
	const char *desc;		/* one line, for 'smp list' */
	const char *const *spans;
	int nspans;
	unsigned int flags;
	/* Before anything is made: a missing device; returns an exit status or 0. */
	int (*check)(struct smp *s);
	/* Before the result folder: set-up that can fail; 0 or -1 (said why). */
	int (*prepare)(struct smp *s);
	/* The measurement: warm-up and timed records through smp_put(). */
	int (*run)(struct smp *s);
	/* The benchmark's own settings: members of the open settings object. */
	void (*settings)(struct smp *s, struct lab_json *j);
	/* Always called at the end, after a failed prepare too. */
	void (*cleanup)(struct smp *s);
};

struct smp {
	const struct smp_bench *bench;
	/* options */
	unsigned long n, warmup;
	int cpu_a, cpu_b;		/* cpu_b == cpu_a: --same-cpu */
	int same_cpu;
	unsigned long pages;		/* tlbflush */
	int remote;			/* tlbflush: remote threads */
	int *remote_cpus;
	unsigned long interval_us;	/* timer */
	int wait_sleep;			/* timer: wait for SIGALRM asleep, not spinning */
	const char *wait_why;
	struct lab_common_opts common;	/* -o, --name, -q */
	/* the machine */
	double tsc_hz;
	const char *tsc_source;
	int *usable;			/* online CPUs this process may run on, ascending */
	int nusable;
	int mlocked;
	/* results: s->cycles[span * n + record] */
	int64_t *cycles;
	/*
	 * Per span, the records that went backwards (negative cycles: the
	 * two ends' TSCs, or the TSC and CLOCK_MONOTONIC, disagree): kept in
	 * raw.csv, counted in meta.json, left out of the summary.
	 */
	unsigned long backward[SMP_MAX_SPANS];
	/* the threads of the last smp_run_threads(), for meta.json */
	struct smp_thread *threads;
	int nthreads;
	void *priv;			/* the benchmark's own state */
};

/* One thread of a benchmark: smp_run_threads() starts it pinned, with a policy. */
struct smp_thread {
	const char *name;		/* at most 15 characters */
	void (*fn)(struct smp *s, void *arg);
	void *arg;
	int cpu;
	int policy;			/* SCHED_OTHER, SCHED_FIFO or SCHED_RR */
	int prio;
	/* the common part's */
	struct smp *s;
	pthread_t tid;
	int started;
	atomic_int done;
};

extern const struct smp_bench smp_bench_pipes, smp_bench_cv, smp_bench_tlbflush,
	smp_bench_timer, smp_bench_tun;

/* Set when the run must end: a signal, a failure, or the benchmark's own end. */
extern atomic_int smp_stop;

static inline int smp_stopping(void)
{
	return atomic_load_explicit(&smp_stop, memory_order_relaxed);
}

#if defined(__x86_64__) || defined(__i386__)
extern int smp_have_rdtscp;
/* Sets smp_have_rdtscp from CPUID, once, before the first smp_tsc(). */
void smp_detect_rdtscp(void);

/*
 * The TSC, read after every earlier instruction has executed (rdtscp; plain
 * rdtsc on a CPU, or an emulated one, without it).
 */
static inline uint64_t smp_tsc(void)
{
	return smp_have_rdtscp ? lab_rdtscp() : lab_rdtsc();
}

static inline void smp_relax(void)
{
	__builtin_ia32_pause();
}
#else
/* No TSC: CLOCK_MONOTONIC ns stand in for cycles (tsc_hz = 1e9). */
static inline uint64_t smp_tsc(void)
{
	return lab_now_ns();
}

static inline void smp_relax(void)
{
	__asm__ __volatile__("" ::: "memory");
}
#endif

/*
 * Record @cycles for @span of record @rec, counting the warm-up records
 * first (rec < s->warmup: not kept).
 */
static inline void smp_put(struct smp *s, int span, unsigned long rec, int64_t cycles)
{
	if (rec >= s->warmup)
		s->cycles[(size_t)span * s->n + (rec - s->warmup)] = cycles;
}

/* Records in all: warm-up and timed. */
static inline unsigned long smp_records(const struct smp *s)
{
	return s->warmup + s->n;
}

/*
 * A failure inside the measurement: the first message wins, the run
 * stops.  Callable from any benchmark thread; printed once at the end.
 */
void smp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* threads.c: the failure's message (NULL if none) and the stop signal. */
const char *smp_failure(void);

/*
 * Block SIGINT, SIGTERM, SIGUSR2 and SIGALRM in the calling (main) thread,
 * and so in every thread it starts: smp_run_threads() takes them.
 */
void smp_signals_init(void);

/* SIGINT or SIGTERM that stopped a run; 0 if none. */
int smp_signal_got(void);

/* The same, or one that came while no one waited for it (and is now kept). */
int smp_stop_signal(void);

/*
 * Start @n threads (pinned, with their policies), wait for all of them,
 * and end them on a failure or a signal: smp_stop is set, @wake(@s) is
 * called (broadcast the condition variables the threads wait on), and a
 * thread still blocked in a system call gets SIGUSR1 (EINTR), every 10 ms
 * until all have returned.  Returns 0, or -1 if the run failed or was
 * interrupted.
 */
int smp_run_threads(struct smp *s, struct smp_thread *t, int n, void (*wake)(struct smp *s));

/*
 * CLOCK_MONOTONIC ns and the TSC read together: ns at TSC @tsc, by
 * @s->tsc_hz (the narrowest of a few tries: smp.c).
 */
struct smp_clock_pair {
	uint64_t tsc;		/* the middle of the two TSC reads around the clock */
	int64_t ns;
};

void smp_clock_pair(struct smp_clock_pair *p);
/* The TSC value at CLOCK_MONOTONIC time @ns, from pair @p. */
uint64_t smp_tsc_at(const struct smp *s, const struct smp_clock_pair *p, int64_t ns);

const char *smp_policy_name(int policy);
/* The member @key: an array of @n ints. */
void smp_json_ints(struct lab_json *j, const char *key, const int *v, int n);
/* Read /proc/interrupts' TLB line summed over CPUs into *@count; -1 if none. */
int smp_tlb_shootdowns(unsigned long long *count);

#endif /* SMP_H */
