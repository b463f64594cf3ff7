// SPDX-License-Identifier: GPL-2.0
/* CPU placement and the time-stamp counter. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

int lab_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

int lab_cpu_online(int cpu)
{
	char path[96];
	unsigned long on;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return 0;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	if (lab_read_ulong(path, &on) == 0)
		return on == 1;
	/* CPU 0 often has no 'online' file: it exists if its folder does. */
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	return access(path, F_OK) == 0;
}

int lab_cpus_usable(int **cpus)
{
	cpu_set_t set;
	int cpu, n = 0;

	*cpus = NULL;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	*cpus = calloc(CPU_SETSIZE, sizeof(**cpus));
	if (!*cpus)
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && lab_cpu_online(cpu))
			(*cpus)[n++] = cpu;
	if (!n) {
		free(*cpus);
		*cpus = NULL;
		errno = ENODEV;
		return -1;
	}
	return n;
}

int lab_cpu_allowed(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(set), &set))
		return 0;
	return CPU_ISSET(cpu, &set) && lab_cpu_online(cpu);
}

void lab_opt_cpu(const char *prog, const char *opt, unsigned long cpu)
{
	if (cpu >= CPU_SETSIZE || !lab_cpu_online((int)cpu)) {
		fprintf(stderr, "%s: %s: CPU %lu is not online\n", prog, opt, cpu);
		exit(2);
	}
	if (!lab_cpu_allowed((int)cpu)) {
		fprintf(stderr, "%s: %s: CPU %lu is online but not allowed to this process "
			"(taskset, cpuset)\n", prog, opt, cpu);
		exit(2);
	}
}

#if defined(__x86_64__) || defined(__i386__)
/* "... tsc: <what> 2994.372 MHz" in the kernel's log, or 0. */
static double tsc_mhz_from_log(const char *what)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	double mhz = 0;
	char *buf, *p;

	if (len <= 0)
		return 0;
	buf = malloc((size_t)len + 1);
	if (!buf)
		return 0;
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	if (len > 0) {
		buf[len] = '\0';
		for (p = strstr(buf, what); p; p = strstr(p + 1, what)) {
			const char *num = p + strlen(what);

			while (*num && (*num < '0' || *num > '9'))
				num++;
			mhz = strtod(num, NULL);	/* the last one logged wins */
		}
	}
	free(buf);
	return mhz;
}

double lab_tsc_hz(const char **source)
{
	struct timespec a, b, pause = { 0, 200000000 };
	uint64_t t0, t1;
	double mhz, ns;

	mhz = tsc_mhz_from_log("tsc: Refined TSC clocksource calibration:");
	if (mhz > 0) {
		*source = "kernel log: refined TSC clocksource calibration";
		return mhz * 1e6;
	}
	mhz = tsc_mhz_from_log("tsc: Detected");
	if (mhz > 0) {
		*source = "kernel log: TSC frequency detected at boot";
		return mhz * 1e6;
	}
	clock_gettime(CLOCK_MONOTONIC_RAW, &a);
	t0 = lab_rdtsc();
	nanosleep(&pause, NULL);
	clock_gettime(CLOCK_MONOTONIC_RAW, &b);
	t1 = lab_rdtsc();
	ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	*source = "measured against CLOCK_MONOTONIC_RAW over 200 ms";
	return ns > 0 ? (double)(t1 - t0) * 1e9 / ns : 0;
}
#else
double lab_tsc_hz(const char **source)
{
	*source = "no TSC on this architecture";
	return 0;
}
#endif
