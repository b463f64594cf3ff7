// SPDX-License-Identifier: GPL-2.0
/* Clocks, lists and small file helpers for the lab's tools. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "liblab.h"

uint64_t lab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Parse a decimal number at *s, advance *s; -1 if there is none. */
static int parse_ulong(const char **s, unsigned long *v)
{
	char *end;

	if (!isdigit((unsigned char)**s))
		return -1;
	errno = 0;
	*v = strtoul(*s, &end, 10);
	if (errno)
		return -1;
	*s = end;
	return 0;
}

static int push(unsigned long **a, size_t *n, size_t *cap, unsigned long v)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		unsigned long *na = realloc(*a, ncap * sizeof(**a));

		if (!na)
			return -1;
		*a = na;
		*cap = ncap;
	}
	(*a)[(*n)++] = v;
	return 0;
}

int lab_parse_uint_list(const char *s, unsigned long **out)
{
	unsigned long *a = NULL, start, stop, step, v;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (!s || !*s)
		goto bad;
	for (;;) {
		if (parse_ulong(&s, &start))
			goto bad;
		if (*s == ':') {
			s++;
			if (parse_ulong(&s, &stop) || *s++ != ':' ||
			    parse_ulong(&s, &step) || step == 0 || stop < start)
				goto bad;
			for (v = start; v <= stop; v += step) {
				if (push(&a, &n, &cap, v))
					goto nomem;
				if (stop - v < step)
					break;
			}
		} else if (push(&a, &n, &cap, start)) {
			goto nomem;
		}
		if (*s == '\0')
			break;
		if (*s++ != ',')
			goto bad;
	}
	if (n > INT_MAX)
		goto bad;
	*out = a;
	return (int)n;
bad:
	free(a);
	errno = EINVAL;
	return -1;
nomem:
	free(a);
	return -1;
}

unsigned long lab_opt_ulong(const char *prog, const char *opt, const char *arg,
			    unsigned long min, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || !isdigit((unsigned char)arg[0]) || v < min ||
	    v > max) {
		fprintf(stderr, "%s: %s wants a whole number from %lu to %lu, not '%s'\n",
			prog, opt, min, max, arg);
		exit(2);
	}
	return v;
}

const char *lab_opt_command(int argc, char *const argv[], void (*usage)(FILE *f))
{
	if (argc < 2) {
		usage(stderr);
		exit(2);
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		exit(0);
	}
	return argv[1];
}

int lab_opt_list(const char *prog, const char *opt, const char *arg, unsigned long min,
		 unsigned long max, unsigned long **out)
{
	int n = lab_parse_uint_list(arg, out);

	if (n < 0) {
		fprintf(stderr, "%s: %s wants a list like '0,50,100', '0:700:50' or a mix, "
			"not '%s'\n", prog, opt, arg);
		exit(2);
	}
	for (int i = 0; i < n; i++) {
		if ((*out)[i] < min) {
			fprintf(stderr, "%s: %s: %lu is below the smallest allowed, %lu\n", prog,
				opt, (*out)[i], min);
			exit(2);
		}
		if ((*out)[i] > max) {
			fprintf(stderr, "%s: %s: %lu is above the largest allowed, %lu\n", prog,
				opt, (*out)[i], max);
			exit(2);
		}
	}
	return n;
}

int lab_read_ulong(const char *path, unsigned long *val)
{
	char buf[64], *end;
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0) {
		errno = len < 0 ? errno : EINVAL;
		return -1;
	}
	buf[len] = '\0';
	errno = 0;
	*val = strtoul(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n')) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int lab_write_ulong(const char *path, unsigned long val)
{
	char buf[32];
	int fd, len, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = snprintf(buf, sizeof(buf), "%lu\n", val);
	if (write(fd, buf, (size_t)len) != len)
		ret = -1;
	if (close(fd) && !ret)
		ret = -1;
	return ret;
}

int lab_mkdirs(const char *path)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	return 0;
}
