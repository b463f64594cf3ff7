// SPDX-License-Identifier: GPL-2.0
/*
 * reqtime - time HTTP requests one at a time, and count the delayed
 * system calls made while each was in flight
 *
 * The Apache workload's reference method.  Each request is timed from its
 * connection being up to the last byte of its reply, and the delay
 * module's count of delayed calls (an open file of
 * /sys/module/delay/stats/calls, given as a descriptor) is read at the
 * same two instants.  A reply's time is then its base plus the calls
 * counted in it times the delay, whatever the server does after the reply
 * (its log line, the close) or between requests: what the server does
 * while a reply is in flight is both timed and counted, the rest neither.
 *
 * The span ends when the read that brought the reply's last byte returns
 * (the counter is read there too), before reqtime looks at what it read:
 * finding the header's end and its Content-Length took as many
 * instructions as the reply's text made it, its Date header's digits
 * among it, and on the virtual clock the replies at 13:30 took 256 more
 * than at 12:30 (ftrace's syscall events): two boots' sweeps
 * were that far apart.
 *
 * Each request starts on the next whole multiple of the interval on
 * CLOCK_MONOTONIC, the grid the kernel's tick is on (1 s is a whole
 * number of ticks at any HZ): it starts just after a tick, and a reply
 * shorter than a tick period has none in it, in every run and every boot.
 * Started 1 s after the previous reply, a request met the tick at a
 * phase that the boot's history set, and on the virtual clock the
 * reference's runs differed by 3 %.
 *
 * --phase P moves the grid P ms later.  The kernel rounds many of its
 * timers to whole seconds (round_jiffies), so that a request started on
 * one shared its tick with their work: on the virtual clock, replies of
 * the same point 0.3 % apart in two boots, as the previous points' work
 * had left those timers; half a second later, within 0.05 %.
 *
 * --warmup W makes W requests first, on the same grid, timed by no one:
 * the first reply after other work (the saturation search's, or httperf's
 * warm-up) took 10-15 % longer than the next nine, which agreed within
 * 0.3 %.
 *
 * With --fifo the client runs as a real-time task (SCHED_FIFO): woken by
 * the reply, it takes the CPU from the server at once, so that a span ends
 * where the reply does even when client and server share one CPU.  Under
 * the normal policy the scheduler let the server go on after the reply
 * (its log line, the close) as its history allowed: 17 to 22 delayed
 * calls in a span of the same request, and two runs of a point 10 %
 * apart at 5000 loops on the virtual clock.
 *
 * With --redis it speaks Redis's protocol (RESP) instead: GET KEY on one
 * connection kept open for every request, as Redis's clients do, each
 * timed from its send to the reply's last byte.  A reply is whole when its
 * type's terminator is in (a bulk string's length after it); its STATUS
 * is 200, or 500 for an error reply, so that both servers' rows read
 * alike.
 *
 * Prints CSV: the header "request,status,seconds,calls,error", then a row
 * per request timed (the warm-up's are not): its number from 1, the
 * reply's STATUS, its SECONDS (9 decimals) and the CALLS counted in its
 * span (empty without --calls-fd), ERROR empty; for a request that
 * failed (not fatal) STATUS, SECONDS and CALLS empty and ERROR what
 * failed ("connect: Connection refused").  The sweep keeps it as
 * logs/reply-TAG-REPEAT.csv and the host reduces it
 * (lablib.experiments.workloads.read_replies and clean_reply).
 * Its options: reqtime --help.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sched.h>

#include "../userspace/lib/liblab.h"

#define PROG "reqtime"
#define REPLY_MAX (1 << 20)
#define NO_FD (~0ul)

static unsigned long requests = 10, interval_ms = 1000, phase_ms, calls_fd = NO_FD, fifo, warmup;
static int redis;
/* The rows printed so far: the next row's request number less 1. */
static unsigned long rows;

static const struct lab_opt options[] = {
	{ .name = "requests", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &requests,
	  .min = 1, .max = 100000, .help = "requests timed and printed" },
	{ .name = "interval", .letter = 'i', .kind = LAB_OPT_ULONG, .value = &interval_ms,
	  .max = 3600000, .arg = "MS",
	  .help = "each request starts on the next multiple of MS ms of\n"
		  "CLOCK_MONOTONIC (0: one after the other)" },
	{ .name = "phase", .kind = LAB_OPT_ULONG, .value = &phase_ms, .max = 3599999, .arg = "P",
	  .help = "... P ms after it, P less than the interval (default 0)" },
	{ .name = "warmup", .kind = LAB_OPT_ULONG, .value = &warmup, .max = 100, .arg = "W",
	  .help = "requests first, not printed" },
	{ .name = "calls-fd", .kind = LAB_OPT_ULONG, .value = &calls_fd, .max = 1023, .arg = "FD",
	  .help = "the number in the file open at FD (the delay module's\n"
		  "stats/calls) is read at both ends too (default: none)" },
	{ .name = "fifo", .kind = LAB_OPT_ULONG, .value = &fifo, .min = 1, .max = 99,
	  .arg = "PRIO", .help = "run as SCHED_FIFO at PRIO, so that the reply wakes\n"
				 "it at once (default: the normal policy)" },
	{ .name = "redis", .kind = LAB_OPT_FLAG, .value = &redis,
	  .help = "Redis's protocol: GET PATH (a key) on one connection" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: " PROG " [options] HOST PORT PATH\n"
		"\n"
		"Times HTTP GETs of PATH at HOST (an IPv4 address):PORT, one connection\n"
		"each, from the connection being up to the reply's last byte (with\n"
		"--redis: Redis GETs of the key PATH on one connection, from the send).\n"
		"Prints CSV, a row a request: request,status,seconds,calls,error.",
	.example = PROG " -n 10 --calls-fd 3 127.0.0.1 18080 /index.html"
		" 3</sys/module/delay/stats/calls",
	.opts = options,
};

/* The counter at @fd (a sysfs file, read again from its start), or -1. */
static long long counter(int fd)
{
	char buf[32];
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		perror(PROG ": reading the calls counter");
		exit(1);
	}
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

#define CSV_HEADER "request,status,seconds,calls,error"

/* A reply's row: its status, its time and the calls counted (< 0: none). */
static void row_reply(int status, uint64_t ns, long long calls)
{
	if (calls < 0)
		printf("%lu,%d,%.9f,,\n", ++rows, status, ns / 1e9);
	else
		printf("%lu,%d,%.9f,%lld,\n", ++rows, status, ns / 1e9, calls);
}

/*
 * A failed request's row: the reason, printf's @fmt, as the error field,
 * in double quotes if it holds a comma, a quote or a line break (none of
 * reqtime's reasons does, but strerror's text is the C library's).
 */
static void __attribute__((format(printf, 1, 2))) row_error(const char *fmt, ...)
{
	char why[256];
	const char *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("%lu,,,,", ++rows);
	if (!strpbrk(why, ",\"\r\n")) {
		printf("%s\n", why);
		return;
	}
	putchar('"');
	for (p = why; *p; p++) {
		if (*p == '"')
			putchar('"');
		putchar(*p);
	}
	printf("\"\n");
}

/*
 * Whether @reply (@len bytes) is whole: its header and Content-Length
 * bytes after it.  A reply without Content-Length ends at the close.
 */
static int reply_whole(const char *reply, size_t len, int *status)
{
	const char *end = memmem(reply, len, "\r\n\r\n", 4);
	const char *p;
	size_t header, body;

	if (!end)
		return 0;
	header = end + 4 - reply;
	if (sscanf(reply, "HTTP/%*d.%*d %d", status) != 1)
		*status = 0;
	for (p = reply; p && p < end; p = memchr(p, '\n', end - p)) {
		p += *p == '\n';
		if (!strncasecmp(p, "Content-Length:", 15)) {
			body = strtoul(p + 15, NULL, 10);
			return len >= header + body;
		}
	}
	return 0;
}

/*
 * Whether Redis reply @reply (@len bytes) is whole: a line ending in CRLF
 * for a simple string, an error or an integer, and for a bulk string its
 * length's bytes and CRLF after that line ($-1 is nil, no bytes).
 */
static int resp_whole(const char *reply, size_t len, int *status)
{
	const char *eol = memmem(reply, len, "\r\n", 2);
	long body;

	if (!eol)
		return 0;
	*status = reply[0] == '-' ? 500 : 200;
	if (reply[0] != '$')
		return 1;
	body = strtol(reply + 1, NULL, 10);
	return body < 0 || len >= (size_t)(eol + 2 - reply) + (size_t)body + 2;
}

/*
 * Sleep until the next whole multiple of @period_ns on CLOCK_MONOTONIC,
 * plus @phase_ns.
 */
static void sleep_to_grid(uint64_t period_ns, uint64_t phase_ns)
{
	uint64_t now = lab_now_ns(), next = phase_ns;
	struct timespec ts;

	if (now >= phase_ns)
		next += ((now - phase_ns) / period_ns + 1) * period_ns;
	ts.tv_sec = next / 1000000000ull;
	ts.tv_nsec = next % 1000000000ull;

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Whether a reply read so far is whole; its status into @status. */
typedef int (*whole_fn)(const char *reply, size_t len, int *status);

/* Whether an HTTP reply's header is in: one that ended at the close is whole. */
static int http_header(const char *reply, size_t len)
{
	return memmem(reply, len, "\r\n\r\n", 4) != NULL;
}

/*
 * Send @req on connection @fd and read the reply until @whole says it is
 * whole, or the server closes (whole then if @closed says so); prints its
 * row if @print.  0, or -1 if the request failed (an error row printed if
 * @print).
 */
static int exchange(int fd, const char *req, int calls_fd, int print, whole_fn whole,
		    int (*closed)(const char *, size_t))
{
	static char reply[REPLY_MAX];
	long long c0, c1 = -1;
	uint64_t t0, t1 = 0;
	size_t len = 0;
	ssize_t n = 0;
	int status = 0, done = 0;

	c0 = counter(calls_fd);
	t0 = lab_now_ns();
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		if (print)
			row_error("send: %s", strerror(errno));
		return -1;
	}
	while (!done && len < sizeof(reply) - 1) {
		n = read(fd, reply + len, sizeof(reply) - 1 - len);
		t1 = lab_now_ns();
		c1 = counter(calls_fd);
		if (n <= 0)
			break;
		len += n;
		done = whole(reply, len, &status);
	}
	if (!done && !(closed && closed(reply, len))) {
		if (print)
			row_error("reply: %s", n < 0 ? strerror(errno) : "incomplete");
		return -1;
	}
	if (print)
		row_reply(status, t1 - t0, c0 < 0 ? -1 : c1 - c0);
	return 0;
}

/* One HTTP request, on a connection of its own: prints its row if @print. */
static void request(const struct sockaddr_in *addr, const char *req, int calls_fd, int print)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)addr, sizeof(*addr))) {
		if (print)
			row_error("connect: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	exchange(fd, req, calls_fd, print, reply_whole, http_header);
	close(fd);
}

/*
 * The Redis requests, on one connection: a lost one ends them (status 1),
 * each request after it an error row; a connection not made, every
 * request.
 */
static int resp_requests(const struct sockaddr_in *addr, const char *req, int calls_fd)
{
	unsigned long i;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)addr, sizeof(*addr))) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		for (i = 0; i < requests; i++)
			row_error("connect: %s", strerror(err));
		return 1;
	}
	for (i = 0; i < warmup + requests; i++) {
		if (interval_ms)
			sleep_to_grid(interval_ms * 1000000ull, phase_ms * 1000000ull);
		if (exchange(fd, req, calls_fd, i >= warmup, resp_whole, NULL)) {
			for (i++; i < warmup + requests; i++)
				if (i >= warmup)
					row_error("connection lost");
			close(fd);
			return 1;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	unsigned long i;
	char req[1024];
	int fd;

	optind = lab_opts_parse(&tool, argc, argv, 1);
	if (argc - optind != 3) {
		lab_opts_usage(&tool, stderr);
		return 2;
	}
	if (phase_ms && phase_ms >= interval_ms) {
		fprintf(stderr, PROG ": --phase wants less than the interval (%lu ms), not %lu\n",
			interval_ms, phase_ms);
		return 2;
	}
	if (inet_pton(AF_INET, argv[optind], &addr.sin_addr) != 1) {
		fprintf(stderr, PROG ": HOST wants an IPv4 address, not '%s'\n", argv[optind]);
		return 2;
	}
	addr.sin_port = htons(lab_opt_ulong(PROG, "PORT", argv[optind + 1], 1, 65535));
	if (redis) {
		const char *key = argv[optind + 2];

		if (!*key || strpbrk(key, "\r\n") ||
		    snprintf(req, sizeof(req), "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
			     strlen(key), key) >= (int)sizeof(req)) {
			fprintf(stderr, PROG ": PATH wants a short key of one line, not '%s'\n",
				key);
			return 2;
		}
	} else if (argv[optind + 2][0] != '/' ||
		   snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: "
			    PROG "\r\nAccept: */*\r\n\r\n", argv[optind + 2],
			    argv[optind]) >= (int)sizeof(req)) {
		fprintf(stderr, PROG ": PATH wants a short path from /, not '%s'\n",
			argv[optind + 2]);
		return 2;
	}
	fd = calls_fd == NO_FD ? -1 : (int)calls_fd;
	if (fd >= 0)
		counter(fd);	/* fails now if FD is no counter */
	if (fifo) {
		struct sched_param sp = { .sched_priority = (int)fifo };

		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			fprintf(stderr, PROG ": cannot run as SCHED_FIFO %lu: %s\n", fifo,
				strerror(errno));
			return 1;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf(CSV_HEADER "\n");
	if (redis)
		return resp_requests(&addr, req, fd);
	for (i = 0; i < warmup + requests; i++) {
		if (interval_ms)
			sleep_to_grid(interval_ms * 1000000ull, phase_ms * 1000000ull);
		request(&addr, req, fd, i >= warmup);
	}
	return 0;
}
