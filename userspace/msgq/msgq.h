/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The msgq program's parts: the bus (bus.c: the seven threads), the check
 * of what they logged and the files it makes (check.c), and the command
 * line, module and result folder (msgq.c).
 */
#ifndef MSGQ_H
#define MSGQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/liblab.h"
#include "../../modules/msgq/uapi/msgq.h"

#define PROG "msgq"
#define SENDERS 3
#define RECEIVERS MSGQ_OUT_QUEUES
#define WORKERS (SENDERS + 1 + RECEIVERS)	/* senders, the daemon, receivers */
#define DAEMON SENDERS				/* its index in workers[] */
/* The payload starts with the message's tag: sender << 32 | number. */
#define TAG_SIZE sizeof(uint64_t)
/* A sender's end marker: destination 0, this number in its tag. */
#define END_NUMBER 0xffffffffu
#define ERRLEN 256

struct options {
	unsigned long messages;		/* -n: in all, over the senders; 0: by time */
	unsigned long seconds;		/* -t; 0 with -n */
	unsigned long size_min, size_max;
	unsigned long rate;		/* per sender, messages/s; 0: flat out */
	unsigned long seed;
	struct lab_opt_cpus cpus;	/* -C; none: the scheduler places */
	const char *perf_ctl, *perf_ack;	/* --perf-control FIFOs, or NULL */
	struct lab_common_opts common;	/* -o, --name, -q */
};

/* What a sender logs of its message number k, at index k. */
struct sent {
	uint64_t sent_ns;		/* just before write() */
	uint32_t destination, length;
};

/* What the daemon logs of a message it took from the input queue. */
struct hop_in {
	uint64_t tag;
	uint64_t seq, queued_ns, queued_cycles;
	uint32_t destination, length;
};

/* What a receiver logs of a message it took from its output queue. */
struct hop_out {
	uint64_t tag;
	uint64_t seq, queued_ns, queued_cycles;
	uint64_t received_ns;		/* just after read() returned */
	uint32_t source, length;
};

/* A growing array of records that only its thread appends to. */
struct log {
	void *rows;
	size_t n, cap, size;
};

struct worker {
	const struct options *opt;	/* the run's settings */
	pthread_t thread;
	int started;
	atomic_int done;
	int index;			/* sender 1-3, daemon 0, receiver 1-3 */
	const char *role;
	int cpu;			/* -1: not pinned */
	struct log log;
	unsigned long count;		/* messages sent, routed or received */
	unsigned long routed[RECEIVERS];	/* the daemon's, per destination */
	char err[ERRLEN];		/* what went wrong, "" if nothing */
};

/* The bus: the seven workers, what bus.c runs and check.c reads. */
struct bus {
	struct worker workers[WORKERS];	/* senders, the daemon, receivers */
};

/* --- bus.c ------------------------------------------------------------- */

/* /dev/bus_in_q for queue 0, /dev/bus_out_qN for N. */
void device_path(char *buf, size_t size, int queue);

/*
 * Run @b's seven threads until they are done, or until one fails or a
 * signal comes (bus_interrupt()): then stop them all.  @before and @after
 * are called just before the first thread starts and after the last one
 * ended (NULL: none).  The main thread's own failure, such as a stall,
 * is returned as text, else NULL.
 */
const char *bus_run(struct bus *b, void (*before)(void), void (*after)(void));

/* The signal handler for SIGINT and SIGTERM: stop the bus. */
void bus_interrupt(int sig);

/* The signal that stopped the bus, 0 if none. */
int bus_signal(void);

/* Payload byte @i (from TAG_SIZE on) of the message tagged @tag: written, then checked. */
static inline uint8_t msgq_pattern(uint64_t tag, size_t i)
{
	return (uint8_t)(tag * 31 + i * 7);
}

/* --- check.c ------------------------------------------------------------ */

/* One message: all the threads logged of it. */
struct row {
	const struct sent *sent;
	const struct hop_in *in;	/* NULL: never routed */
	const struct hop_out *out;	/* NULL: never received */
	unsigned int sender, number, receiver;
};

struct check {
	const struct bus *bus;		/* what the threads logged */
	struct row *rows[SENDERS];	/* by sender, by number */
	unsigned long problems;
	char first[ERRLEN];		/* the first problem found */
};

/*
 * Join the threads' logs and check them: every message routed once and
 * received once, at its destination, whole, and in its sender's order in
 * each queue; the counts match.  Returns -1 if out of memory, else 0 with
 * c->problems counted.
 */
int check_join(struct check *c, const struct bus *b);

/* Note a problem in @c (the first one's text is kept). */
void check_problem(struct check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* DIR/messages.csv: one row per message sent, in the input queue's order. */
int check_write_messages(const struct lab_result *res, const struct check *c);

/* The queueing-time table on stdout. */
void check_print_times(const struct check *c);

#endif /* MSGQ_H */
