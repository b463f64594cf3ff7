// SPDX-License-Identifier: GPL-2.0
/*
 * nullcall - time one kind of null system call, nothing else
 *
 * Prints the median, over several batches, of the ns each call took.  Used
 * where calibrate's loop sweep is not wanted: the hook-overhead benchmark
 * and the 32-bit compat check.  Built twice: 'nullcall' (64-bit) offers
 * 'getppid' and 'close'; 'nullcall32' (-m32) offers 'int80' (int $0x80)
 * and 'fast' (glibc's syscall(), through the vDSO's SYSENTER/SYSCALL);
 * both offer 'close' (of a descriptor that is not open).
 *
 * usage: nullcall MODE [calls-per-batch [batches]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/liblab.h"

#define MAX_BATCHES 1000
#define NOT_AN_FD 100

static void call_getppid(void)
{
	syscall(SYS_getppid);
}

static void call_close(void)
{
	syscall(SYS_close, NOT_AN_FD);
}

#ifdef __i386__
static void call_int80(void)
{
	long ret;

	asm volatile("int $0x80" : "=a" (ret) : "0" ((long)SYS_getppid) : "memory");
}
#endif

static const struct mode {
	const char *name;
	void (*call)(void);
} modes[] = {
#ifdef __i386__
	{ "int80", call_int80 },
	{ "fast", call_getppid },
#else
	{ "getppid", call_getppid },
#endif
	{ "close", call_close },
};

/* The usage on @f; 0 for --help (stdout), 2 for a mistake (stderr). */
static int usage(FILE *f)
{
	fprintf(f, "usage: nullcall MODE [calls-per-batch [batches (1-%d)]]\n"
		"Prints the median ns per call over the batches (defaults 10000, 15).\nmodes:",
		MAX_BATCHES);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(f, " %s", modes[i].name);
	fprintf(f, "\n\nExample:  taskset -c 0 nullcall %s 1000 301\n", modes[0].name);
	return f == stdout ? 0 : 2;
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	return *s && !*end && *s != '-' ? v : 0;
}

int main(int argc, char **argv)
{
	unsigned long calls = 10000, batches = 15, i, b;
	void (*call)(void) = NULL;
	double samples[MAX_BATCHES];
	struct lab_summary s;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout);
	if (argc < 2 || argc > 4)
		return usage(stderr);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i].name))
			call = modes[i].call;
	if (argc > 2)
		calls = number(argv[2]);
	if (argc > 3)
		batches = number(argv[3]);
	if (!call || !calls || !batches || batches > MAX_BATCHES)
		return usage(stderr);

	for (i = 0; i < calls; i++)	/* warm-up */
		call();
	for (b = 0; b < batches; b++) {
		uint64_t t0 = lab_now_ns();

		for (i = 0; i < calls; i++)
			call();
		samples[b] = (double)(lab_now_ns() - t0) / (double)calls;
	}
	lab_summarize(samples, batches, &s);
	printf("%.2f\n", s.p50);
	return 0;
}
