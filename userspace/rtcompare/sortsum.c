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
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "../lib/lab.h"

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

static void usage(FILE *f)
{
	fprintf(f,
"usage: sortsum [options]\n"
"\n"
"Sum the elements >= 128 of an array of random bytes, PASSES times, unsorted\n"
"or sorted, and print one JSON line with the time it took and its rusage.\n"
"\n"
"      --elements N   array size (default 32768)\n"
"      --passes N     passes over the array (default 2000)\n"
"      --sorted       sort the array first (the branch becomes predictable)\n"
"      --seed N       random seed (default 1)\n"
"      --forever      sum until killed and print nothing: a CPU-bound load\n"
"  -h, --help         this text\n"
"\n"
"Example:  perf stat -e task-clock,branch-misses sortsum --passes 5000 --sorted\n");
}

int main(int argc, char **argv)
{
	enum { O_ELEMENTS = 256, O_PASSES, O_SORTED, O_SEED, O_FOREVER };
	static const struct option longopts[] = {
		{ "elements", required_argument, NULL, O_ELEMENTS },
		{ "passes", required_argument, NULL, O_PASSES },
		{ "sorted", no_argument, NULL, O_SORTED },
		{ "seed", required_argument, NULL, O_SEED },
		{ "forever", no_argument, NULL, O_FOREVER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long elements = 32768, passes = 2000, seed = 1;
	int sorted = 0, forever = 0, c;
	struct rusage ru;
	uint64_t t0, t1, sum = 0;
	uint8_t *v;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_ELEMENTS:
			elements = lab_opt_ulong(PROG, "--elements", optarg, 1, 1UL << 30);
			break;
		case O_PASSES:
			passes = lab_opt_ulong(PROG, "--passes", optarg, 1, 1UL << 40);
			break;
		case O_SORTED: sorted = 1; break;
		case O_SEED: seed = lab_opt_ulong(PROG, "--seed", optarg, 0, 1UL << 31); break;
		case O_FOREVER: forever = 1; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, PROG ": unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	lab_opt_end(PROG, argc, argv);
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
	printf("{\"elements\": %lu, \"passes\": %lu, \"sorted\": %s, \"seed\": %lu, "
	       "\"sum\": %llu, \"seconds\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, "
	       "\"vol_ctxsw\": %ld, \"invol_ctxsw\": %ld}\n",
	       elements, passes, sorted ? "true" : "false", seed, (unsigned long long)sum,
	       (t1 - t0) / 1e9, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_nvcsw, ru.ru_nivcsw);
	free(v);
	return 0;
}
