// SPDX-License-Identifier: GPL-2.0
/*
 * pipes: a reader on CPU A and a writer on CPU B (--same-cpu: both on A),
 * two pipes, SCHED_OTHER.  One record: the writer writes 1 byte to pipe A,
 * the reader reads it and writes 1 byte to pipe B, the writer reads it.
 * Span round_trip: the writer's TSC before its write to after its read
 * (both read on the writer's CPU; one way is about half).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "smp.h"

static const char *const spans[] = { "round_trip" };

struct pipes {
	int a[2];	/* writer -> reader */
	int b[2];	/* reader -> writer */
};

static struct pipes pp = { { -1, -1 }, { -1, -1 } };

/* One byte through @fd; 0, or -1 when stopping or failed (said why). */
static int one_byte(int fd, int out, const char *what)
{
	char c = 'x';
	ssize_t n;

	for (;;) {
		n = out ? write(fd, &c, 1) : read(fd, &c, 1);
		if (n == 1)
			return 0;
		if (smp_stopping())
			return -1;
		if (n < 0 && errno == EINTR)
			continue;
		smp_fail("pipes: %s: %s", what, n < 0 ? strerror(errno) : "end of file");
		return -1;
	}
}

static void reader(struct smp *s, void *arg)
{
	unsigned long i;

	(void)arg;
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++)
		if (one_byte(pp.a[0], 0, "reader's read of pipe A") ||
		    one_byte(pp.b[1], 1, "reader's write to pipe B"))
			return;
}

static void writer(struct smp *s, void *arg)
{
	unsigned long i;
	uint64_t t0, t1;

	(void)arg;
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++) {
		t0 = smp_tsc();
		if (one_byte(pp.a[1], 1, "writer's write to pipe A") ||
		    one_byte(pp.b[0], 0, "writer's read of pipe B"))
			return;
		t1 = smp_tsc();
		smp_put(s, 0, i, (int64_t)(t1 - t0));
	}
}

static int prepare(struct smp *s)
{
	(void)s;
	if (pipe2(pp.a, O_CLOEXEC) || pipe2(pp.b, O_CLOEXEC)) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int run(struct smp *s)
{
	static struct smp_thread t[2];

	t[0] = (struct smp_thread){ .name = "smp-pipe-read", .fn = reader, .cpu = s->cpu_a,
				    .policy = SCHED_OTHER };
	t[1] = (struct smp_thread){ .name = "smp-pipe-write", .fn = writer, .cpu = s->cpu_b,
				    .policy = SCHED_OTHER };
	return smp_run_threads(s, t, 2, NULL);
}

static void settings(struct smp *s, struct lab_json *j)
{
	lab_json_int(j, "reader_cpu", s->cpu_a);
	lab_json_int(j, "writer_cpu", s->cpu_b);
	lab_json_int(j, "bytes", 1);
}

static void cleanup(struct smp *s)
{
	(void)s;
	for (int i = 0; i < 2; i++) {
		if (pp.a[i] >= 0)
			close(pp.a[i]);
		if (pp.b[i] >= 0)
			close(pp.b[i]);
	}
}

const struct smp_bench smp_bench_pipes = {
	.name = "pipes",
	.desc = "reader on A, writer on B: 1 byte there and back through two pipes",
	.spans = spans,
	.nspans = 1,
	.flags = SMP_TWO_ENDS,
	.prepare = prepare,
	.run = run,
	.settings = settings,
	.cleanup = cleanup,
};
