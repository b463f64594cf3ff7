// SPDX-License-Identifier: GPL-2.0
/*
 * What the smp benchmarks read of the machine: the TSC (and whether to
 * read it with rdtscp), pairs of a TSC and a CLOCK_MONOTONIC read, the
 * kernel's count of TLB shoot-downs; and a JSON helper for their settings.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "smp.h"

#if defined(__x86_64__) || defined(__i386__)
int smp_have_rdtscp;

void smp_detect_rdtscp(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid(0x80000001, &a, &b, &c, &d))
		smp_have_rdtscp = !!(d & (1u << 27));
}
#else
void smp_detect_rdtscp(void)
{
}
#endif

/* --- time --------------------------------------------------------------- */

/*
 * The clock's time belongs to the middle of the two TSC reads only if
 * nothing came between them: a vCPU the host stops for 400 us between the
 * clock's read and the second TSC read puts the middle 200 us after the
 * clock's time, and a span measured from it 200 us short (negative, if
 * it was shorter than that); stopped before the clock's read, 200 us
 * long.  Of SMP_PAIR_TRIES pairs, the narrowest.
 */
#define SMP_PAIR_TRIES 3

void smp_clock_pair(struct smp_clock_pair *p)
{
	uint64_t a, b, width = UINT64_MAX;
	struct timespec ts;

	for (int k = 0; k < SMP_PAIR_TRIES; k++) {
		a = smp_tsc();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		b = smp_tsc();
		if (b - a >= width)
			continue;
		width = b - a;
		p->tsc = a + width / 2;
		p->ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
}

uint64_t smp_tsc_at(const struct smp *s, const struct smp_clock_pair *p, int64_t ns)
{
	double d = (double)(ns - p->ns) * s->tsc_hz / 1e9;

	return (uint64_t)((int64_t)p->tsc + (int64_t)(d < 0 ? d - 0.5 : d + 0.5));
}

/* --- /proc/interrupts --------------------------------------------------- */

int smp_tlb_shootdowns(unsigned long long *count)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char *line = NULL, *p, *end;
	size_t size = 0;
	int found = -1;

	*count = 0;
	if (!f)
		return -1;
	while (found < 0 && getline(&line, &size, f) > 0) {
		p = line + strspn(line, " ");
		if (strncmp(p, "TLB:", 4))
			continue;
		found = 0;
		for (p += 4;;) {
			unsigned long long v;

			p += strspn(p, " \t");
			if (*p < '0' || *p > '9')
				break;
			v = strtoull(p, &end, 10);
			if (*end && *end != ' ' && *end != '\t' && *end != '\n')
				break;
			*count += v;
			p = end;
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* --- output ------------------------------------------------------------- */

void smp_json_ints(struct lab_json *j, const char *key, const int *v, int n)
{
	lab_json_array(j, key);
	for (int i = 0; i < n; i++)
		lab_json_int(j, NULL, v[i]);
	lab_json_end(j);
}
