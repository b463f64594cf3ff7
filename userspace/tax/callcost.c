// SPDX-License-Identifier: GPL-2.0
/*
 * callcost - the ns each of a list of system calls takes, by number
 *
 * Makes each call with every argument -1: a descriptor that is not open,
 * an address the kernel refuses to read, a size, flag or command it
 * rejects.  So a call fails soon after the entry path, the same way every
 * time, and what a tax adds at entry and at exit (a seccomp filter, audit,
 * a tracer) is the difference of two runs, one with the tax and one
 * without.  A call with no such form (exit, fork, pause, a call that
 * creates something from nothing) is refused: NOTES.md, "Calls that
 * fail fast".  Each number is timed in a child process of its own, so
 * that what one call changes (umask, an alarm) does not reach the next.
 *
 * Prints CSV on stdout, a row a timed batch: nr,batch,calls,ns_per_call
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/liblab.h"

#define PROG "callcost"
#define NR_MAX 1023UL	/* numbers beyond the table fail with ENOSYS */

/*
 * The 64-bit calls that have no form failing fast with every argument
 * -1: they end the process, block, fork, do real work with no argument
 * at all, create an object each time, or kill a caller that is not the
 * kernel's own trampoline.
 */
static const struct {
	long nr;
	const char *why;
} refused[] = {
	{ SYS_rt_sigreturn, "restores a signal frame" },
	{ SYS_pause, "blocks until a signal" },
	{ SYS_fork, "forks" },
	{ SYS_vfork, "forks" },
	{ SYS_exit, "ends the thread" },
	{ SYS_msgget, "creates a message queue for key -1" },
	{ SYS_vhangup, "hangs up the terminal" },
	{ SYS_sync, "writes back every file system, no arguments" },
	{ SYS_init_module, "allocates the module's length, -1" },
	{ SYS_exit_group, "ends the process" },
	{ SYS_inotify_init, "creates a descriptor, no arguments" },
	{ SYS_eventfd, "creates a descriptor for any count" },
	{ 335, "uretprobe: kills a caller outside the kernel's trampoline" },
};

static struct {
	struct lab_opt_list calls;
	unsigned long batches, per_batch, warmup, first;
	int cpu;
} o = {
	.calls.text = "39,110", .batches = 21, .per_batch = 200, .warmup = 2, .cpu = 0,
	.first = NR_MAX + 1,
};

static const struct lab_opt options[] = {
	{ .name = "syscalls", .letter = 's', .kind = LAB_OPT_LIST, .value = &o.calls,
	  .max = NR_MAX, .arg = "LIST",
	  .help = "the call numbers (the 64-bit table's): '0,1,257', 'a:b:step'" },
	{ .name = "batches", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &o.batches,
	  .min = 1, .max = 100000, .help = "timed batches per call" },
	{ .name = "calls", .kind = LAB_OPT_ULONG, .value = &o.per_batch, .min = 1,
	  .max = 10000000, .help = "calls per timed batch" },
	{ .name = "warmup", .kind = LAB_OPT_ULONG, .value = &o.warmup, .max = 100000,
	  .help = "untimed batches before a call's first timed one" },
	{ .name = "first", .kind = LAB_OPT_ULONG, .value = &o.first, .max = NR_MAX,
	  .arg = "NR", .help = "a call made once, with no arguments, in each child before\n"
			       "its warm-up (default none): strace --seccomp-bpf stops\n"
			       "every call of a new tracee until its first traced one" },
	{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPU, .value = &o.cpu, .arg = "CPU",
	  .help = "pin to this CPU, or 'none'" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: callcost [options]\n"
		"\n"
		"Time each listed 64-bit system call, made with every argument -1 so\n"
		"that it fails fast the same way each time; CSV on stdout, a row a\n"
		"timed batch: nr,batch,calls,ns_per_call.  Run it with and without a\n"
		"tax: the difference is what the tax adds to each call.",
	.notes = "Calls with no such form are refused (exit, fork, pause, sync ...).",
	.example = "callcost -s 0,1,3,39,110 -n 21 --calls 200 -C 0",
	.opts = options,
};

static const char *refusal(long nr)
{
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refused[i].nr == nr)
			return refused[i].why;
	return NULL;
}

static double time_batch(long nr, unsigned long n)
{
	uint64_t t0 = lab_now_ns();

	for (unsigned long i = 0; i < n; i++)
		syscall(nr, -1L, -1L, -1L, -1L, -1L, -1L);
	return (double)(lab_now_ns() - t0) / n;
}

/* Time call @nr in a child; its rows go to stdout.  0, or -1 if it failed. */
static int time_call(long nr)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror(PROG ": fork");
		return -1;
	}
	if (!pid) {
		if (o.first <= NR_MAX)
			syscall(o.first, 0L, 0L, 0L, 0L, 0L, 0L);
		for (unsigned long b = 0; b < o.warmup; b++)
			time_batch(nr, o.per_batch);
		for (unsigned long b = 0; b < o.batches; b++)
			printf("%ld,%lu,%lu,%.3f\n", nr, b, o.per_batch,
			       time_batch(nr, o.per_batch));
		fflush(stdout);
		_exit(ferror(stdout) ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror(PROG ": waitpid");
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, PROG ": call %ld: the child %s %d\n", nr,
			WIFSIGNALED(status) ? "died of signal" : "exited with status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i;

	lab_opts_parse(&tool, argc, argv, 0);
	if (o.first <= NR_MAX && refusal(o.first)) {
		fprintf(stderr, PROG ": --first: call %lu cannot be made here (%s)\n", o.first,
			refusal(o.first));
		return 2;
	}
	for (i = 0; i < o.calls.n; i++) {
		const char *why = refusal(o.calls.v[i]);

		if (why) {
			fprintf(stderr, PROG ": call %lu has no form that fails fast (%s)\n",
				o.calls.v[i], why);
			return 2;
		}
	}
	if (o.cpu >= 0 && lab_pin_cpu(o.cpu)) {
		fprintf(stderr, PROG ": cannot pin to CPU %d: %s\n", o.cpu, strerror(errno));
		return 1;
	}
	printf("nr,batch,calls,ns_per_call\n");
	for (i = 0; i < o.calls.n; i++)
		if (time_call(o.calls.v[i]))
			return 1;
	return fflush(stdout) ? 1 : 0;
}
