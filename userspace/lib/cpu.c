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

#include "liblab.h"

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

/* A CPU number at *@s, advanced past it; -1 with @err if there is none. */
static long cpu_number(const char **s, char *err, size_t errlen)
{
	const char *p = *s;
	unsigned long v;
	char *end;

	if (!*p) {
		snprintf(err, errlen, "a CPU number is missing at the end");
		return -1;
	}
	if (*p < '0' || *p > '9') {
		snprintf(err, errlen, "'%.20s' is not a CPU number", p);
		return -1;
	}
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno || v >= CPU_SETSIZE) {
		snprintf(err, errlen, "CPU %.*s is beyond the largest, %d", (int)(end - p), p,
			 CPU_SETSIZE - 1);
		return -1;
	}
	*s = end;
	return (long)v;
}

int lab_parse_cpus(const char *s, int **cpus, char *err, size_t errlen)
{
	cpu_set_t seen;
	long a, b, step, v;
	int n = 0, *out;

	*cpus = NULL;
	out = calloc(CPU_SETSIZE, sizeof(*out));
	if (!out) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	CPU_ZERO(&seen);
	if (!s || !*s) {
		snprintf(err, errlen, "no CPU given");
		goto bad;
	}
	for (;;) {
		a = cpu_number(&s, err, errlen);
		if (a < 0)
			goto bad;
		b = a, step = 1;
		if (*s == '-' || *s == ':') {
			char sep = *s++;

			b = cpu_number(&s, err, errlen);
			if (b < 0)
				goto bad;
			if (sep == ':') {
				if (*s++ != ':' || (step = cpu_number(&s, err, errlen)) < 0) {
					if (step >= 0)
						snprintf(err, errlen, "a list range wants "
							 "START:STOP:STEP");
					goto bad;
				}
				if (step == 0) {
					snprintf(err, errlen, "a step of 0");
					goto bad;
				}
			}
			if (b < a) {
				snprintf(err, errlen, "the range %ld%c%ld runs backwards", a, sep,
					 b);
				goto bad;
			}
		}
		for (v = a; v <= b; v += step) {
			if (CPU_ISSET(v, &seen)) {
				snprintf(err, errlen, "CPU %ld is listed twice", v);
				goto bad;
			}
			CPU_SET(v, &seen);
			out[n++] = (int)v;
		}
		if (*s == '\0')
			break;
		if (*s++ != ',') {
			snprintf(err, errlen, "'%c' where a ',' or the end belongs", s[-1]);
			goto bad;
		}
	}
	*cpus = out;
	return n;
bad:
	free(out);
	errno = EINVAL;
	return -1;
}

int lab_opt_cpus(const char *prog, const char *opt, const char *arg, int max, int **cpus)
{
	char why[96];
	int n, i;

	if (!strcmp(arg, "none")) {
		*cpus = NULL;
		return 0;
	}
	n = lab_parse_cpus(arg, cpus, why, sizeof(why));
	if (n < 0) {
		fprintf(stderr, "%s: %s wants a CPU list like '0-3,6' or 'none', not '%s' (%s)\n",
			prog, opt, arg, why);
		exit(2);
	}
	if (n > max && max == 1) {
		fprintf(stderr, "%s: %s wants one CPU or 'none', not '%s'\n", prog, opt, arg);
		exit(2);
	}
	if (n > max) {
		fprintf(stderr, "%s: %s wants at most %d CPUs or 'none', not '%s'\n", prog, opt,
			max, arg);
		exit(2);
	}
	for (i = 0; i < n; i++)
		lab_opt_cpu(prog, opt, (unsigned long)(*cpus)[i]);
	return n;
}

int lab_opt_one_cpu(const char *prog, const char *opt, const char *arg)
{
	int *cpus, cpu;

	if (!lab_opt_cpus(prog, opt, arg, 1, &cpus))
		return -1;
	cpu = cpus[0];
	free(cpus);
	return cpu;
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
