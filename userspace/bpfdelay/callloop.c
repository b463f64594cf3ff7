// SPDX-License-Identifier: GPL-2.0
/*
 * callloop - time a loop of null system calls (getppid): ns per call of
 * each batch, one a line, then the batches' median.  A target for
 * bpfdelay's tests and measurements: the same call the module's
 * calibration times, made as fast as the process can make it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/liblab.h"

static unsigned long batches = 10, calls = 10000, warmup = 1000;

static const struct lab_opt options[] = {
	{ .name = "batches", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &batches,
	  .min = 1, .max = 1000000, .help = "timed batches" },
	{ .name = "calls", .kind = LAB_OPT_ULONG, .value = &calls, .min = 1,
	  .max = 100000000, .help = "getppid() calls per batch" },
	{ .name = "warmup", .kind = LAB_OPT_ULONG, .value = &warmup, .max = 100000000,
	  .help = "untimed calls first" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = "callloop",
	.about = "usage: callloop [options]\n"
		"\n"
		"Make batches of getppid() calls; print each batch's ns per call, one a\n"
		"line, and then 'median N' over the batches.",
	.example = "callloop -n 20 --calls 100000",
	.opts = options,
};

int main(int argc, char **argv)
{
	struct lab_summary s;
	double *ns;
	uint64_t t0;

	lab_opts_parse(&tool, argc, argv, 0);
	ns = calloc(batches, sizeof(*ns));
	if (!ns)
		return 1;
	for (unsigned long i = 0; i < warmup; i++)
		syscall(SYS_getppid);
	for (unsigned long b = 0; b < batches; b++) {
		t0 = lab_now_ns();
		for (unsigned long i = 0; i < calls; i++)
			syscall(SYS_getppid);
		ns[b] = (double)(lab_now_ns() - t0) / (double)calls;
		printf("%.2f\n", ns[b]);
	}
	lab_summarize(ns, batches, &s);
	printf("median %.2f\n", s.p50);
	free(ns);
	return 0;
}
