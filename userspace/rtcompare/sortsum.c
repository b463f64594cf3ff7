// SPDX-License-Identifier: GPL-2.0
/*
 * sortsum - a CPU-bound program whose speed depends on branch prediction
 *
 * Fills an array with random bytes, optionally sorts it, then sums the
 * elements of 128 and above, pass after pass.  Unsorted, the branch that
 * picks them is taken at random and a real CPU mispredicts it about half
 * the time; sorted, it is taken in one long run and predicted almost
 * always.  The program is the CPU-bound load of the rt-compare suite and
 * the subject of its perf stat comparison: it makes no system call while
 * it sums, so what a kernel costs it is only what the kernel takes from
 * its CPU.
 *
 * At the end it prints one JSON line: the settings, the sum (so the work
 * cannot be optimised away), the elapsed time and its own rusage.  With
 * --forever it sums until it is killed (a load task) and prints nothing.
 *
 * The summing loop is built without if-conversion and vectorisation
 * (see the Makefile): with them, the compiler turns the branch into a
 * conditional move and both runs cost the same.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "../lib/liblab.h"

#define PROG "sortsum"

static int cmp_u8(const void *a, const void *b)
{
	return *(const uint8_t *)a - *(const uint8_t *)b;
}

/* The branch this program exists for: taken for about half the values. */
static uint64_t sum_high(const uint8_t *v, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i] >= 128)
			sum += v[i];
	return sum;
}

static unsigned long elements = 32768, passes = 2000, seed = 1;
static int sorted, forever;

static const struct lab_opt options[] = {
	{ .name = "elements", .kind = LAB_OPT_ULONG, .value = &elements, .min = 1,
	  .max = 1UL << 30, .json = "elements", .help = "array size" },
	{ .name = "passes", .kind = LAB_OPT_ULONG, .value = &passes, .min = 1, .max = 1UL << 40,
	  .json = "passes", .help = "passes over the array" },
	{ .name = "sorted", .kind = LAB_OPT_FLAG, .value = &sorted, .json = "sorted",
	  .help = "sort the array first (the branch becomes predictable)" },
	{ .name = "seed", .kind = LAB_OPT_ULONG, .value = &seed, .max = 1UL << 31, .json = "seed",
	  .help = "random seed" },
	{ .name = "forever", .kind = LAB_OPT_FLAG, .value = &forever,
	  .help = "sum until killed and print nothing: a CPU-bound load" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: sortsum [options]\n"
		"\n"
		"Sum the elements >= 128 of an array of random bytes, PASSES times, unsorted\n"
		"or sorted, and print one JSON line with the time it took and its rusage.",
	.example = "perf stat -e task-clock,branch-misses sortsum --passes 5000 --sorted",
	.opts = options,
};

int main(int argc, char **argv)
{
	struct lab_json j;
	struct rusage ru;
	uint64_t t0, t1, sum = 0;
	uint8_t *v;

	lab_opts_parse(&tool, argc, argv, 0);
	v = malloc(elements);
	if (!v) {
		perror(PROG ": malloc");
		return 1;
	}
	srandom(seed);
	for (size_t i = 0; i < elements; i++)
		v[i] = random() & 0xff;
	if (sorted)
		qsort(v, elements, 1, cmp_u8);

	t0 = lab_now_ns();
	do {
		for (unsigned long p = 0; p < passes; p++)
			sum += sum_high(v, elements);
	} while (forever);
	t1 = lab_now_ns();
	getrusage(RUSAGE_SELF, &ru);
	lab_json_file(&j, stdout, 0);
	lab_json_object(&j, NULL);
	lab_opts_json(&j, &tool);
	lab_json_uint(&j, "sum", sum);
	lab_json_double(&j, "seconds", (t1 - t0) / 1e9, 6);
	lab_json_double(&j, "user_s", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, 6);
	lab_json_double(&j, "sys_s", ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, 6);
	lab_json_int(&j, "vol_ctxsw", ru.ru_nvcsw);
	lab_json_int(&j, "invol_ctxsw", ru.ru_nivcsw);
	lab_json_end(&j);
	putchar('\n');
	free(v);
	return 0;
}
