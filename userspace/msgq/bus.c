// SPDX-License-Identifier: GPL-2.0
/*
 * The bus: three senders write to /dev/bus_in_q, a daemon moves each
 * message to /dev/bus_out_qD of its destination D, three receivers read
 * their queue.  Each thread logs what it did in its own array (no lock in
 * the timed path); check.c joins the logs afterwards.
 *
 * Shutdown: a sender that is done writes an end marker (destination 0);
 * after the third one the daemon writes one to each output queue, and a
 * receiver stops at its own.  If a thread fails, or on a signal, every
 * thread is stopped instead: SIGUSR1 interrupts a blocked read() or
 * write(), which then returns EINTR (no SA_RESTART), and the thread sees
 * the stop flag.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "msgq.h"

/* Stop, as an error, when no message moved for this long. */
#define STALL_S 20
/* Progress lines this often, without -q. */
#define PROGRESS_NS 2000000000ull

static atomic_int stop;
static atomic_ulong moved;		/* hops of all messages: progress */
static atomic_ulong n_received;
static volatile sig_atomic_t got_signal;
static sem_t wake_main;
static uint64_t start_ns, deadline_ns;
static char main_err[ERRLEN];

void bus_interrupt(int sig)
{
	got_signal = sig;
	atomic_store(&stop, 1);
	sem_post(&wake_main);
}

int bus_signal(void)
{
	return got_signal;
}

/* SIGUSR1 only interrupts a worker's blocked read() or write() at the end. */
static void on_kick(int sig)
{
	(void)sig;
}

void device_path(char *buf, size_t size, int queue)
{
	if (queue == 0)
		snprintf(buf, size, "/dev/%s", MSGQ_IN_NAME);
	else
		snprintf(buf, size, "/dev/%s%d", MSGQ_OUT_PREFIX, queue);
}

static void *log_add(struct log *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		void *rows = realloc(l->rows, cap * l->size);

		if (!rows)
			return NULL;
		l->rows = rows;
		l->cap = cap;
	}
	return (char *)l->rows + l->n++ * l->size;
}

static int fail(struct worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keep the thread's error, stop everyone, wake main.  Returns -1. */
static int fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, ERRLEN, fmt, ap);
	va_end(ap);
	atomic_store(&stop, 1);
	sem_post(&wake_main);
	return -1;
}

static int open_queue(struct worker *w, int queue, int flags)
{
	char path[64];
	int fd;

	device_path(path, sizeof(path), queue);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		fail(w, "cannot open %s: %s", path, strerror(errno));
	return fd;
}

/*
 * write() the whole message to queue @queue, again after a signal unless
 * we are stopping.  Returns 0, 1 when stopped, or -1 (the error kept).
 */
static int put(struct worker *w, int fd, const void *buf, size_t len, int queue)
{
	char path[64];
	ssize_t n;

	for (;;) {
		n = write(fd, buf, len);
		if (n == (ssize_t)len)
			return 0;
		if (n < 0 && errno == EINTR) {
			if (atomic_load(&stop))
				return 1;
			continue;
		}
		device_path(path, sizeof(path), queue);
		return fail(w, "write of %zu bytes to %s: %s", len, path,
			    n < 0 ? strerror(errno) : "short write");
	}
}

/* read() one record of queue @queue into @buf: 0, 1 when stopped, or -1. */
static int get(struct worker *w, int fd, void *buf, size_t size, int queue)
{
	const struct msgq_record *rec = buf;
	char path[64];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, size);
		if (n < 0 && errno == EINTR) {
			if (atomic_load(&stop))
				return 1;
			continue;
		}
		device_path(path, sizeof(path), queue);
		if (n < 0)
			return fail(w, "read from %s: %s", path, strerror(errno));
		if ((size_t)n < sizeof(*rec) || (size_t)n != sizeof(*rec) + rec->length)
			return fail(w, "read from %s returned %zd bytes, not a record", path, n);
		if (rec->length < TAG_SIZE)
			return fail(w, "%s: message %llu has %u bytes, no tag: another program "
				    "is writing to it", path, (unsigned long long)rec->seq,
				    rec->length);
		return 0;
	}
}

static uint64_t tag_of(const uint8_t *payload)
{
	uint64_t tag;

	memcpy(&tag, payload, sizeof(tag));
	return tag;
}

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void start_worker(struct worker *w)
{
	char name[16];

	snprintf(name, sizeof(name), "msgq-%s%d", w->role, w->index);
	pthread_setname_np(pthread_self(), name);
	if (w->cpu >= 0 && lab_pin_cpu(w->cpu))
		fail(w, "cannot pin to CPU %d: %s", w->cpu, strerror(errno));
}

static void end_worker(struct worker *w)
{
	atomic_store(&w->done, 1);
	sem_post(&wake_main);
}

/* Sender @w's share of -n. */
static unsigned long quota(const struct worker *w)
{
	unsigned long q = w->opt->messages / SENDERS;

	return q + ((unsigned long)(w->index - 1) < w->opt->messages % SENDERS);
}

/* Until @k's turn at --rate; false if the run ends meanwhile. */
static int wait_turn(const struct worker *w, unsigned long k)
{
	uint64_t at = start_ns + k * (1000000000ull / w->opt->rate);
	struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
	       !atomic_load(&stop))
		;
	return !atomic_load(&stop) && !(w->opt->seconds && lab_now_ns() >= deadline_ns);
}

static void *sender(void *arg)
{
	struct worker *w = arg;
	const struct options *opt = w->opt;
	uint64_t state = opt->seed ^ ((uint64_t)w->index * 0xd1b54a32d192ed03ull);
	size_t span = opt->size_max - opt->size_min + 1, len, i;
	unsigned long k, limit = opt->seconds ? END_NUMBER : quota(w);
	struct msgq_msg *hdr = malloc(sizeof(*hdr) + MSGQ_MAX_PAYLOAD);
	uint8_t *payload;
	uint64_t tag;
	struct sent *s;
	int fd = -1;

	start_worker(w);
	if (!hdr)
		fail(w, "out of memory");
	else
		fd = open_queue(w, 0, O_WRONLY);
	if (fd < 0)
		goto out;
	payload = (uint8_t *)(hdr + 1);
	hdr->source = (uint32_t)w->index;
	for (k = 0; k < limit && !atomic_load(&stop); k++) {
		if (opt->seconds && lab_now_ns() >= deadline_ns)
			break;
		if (opt->rate && !wait_turn(w, k))
			break;
		s = log_add(&w->log);
		if (!s) {
			fail(w, "out of memory");
			break;
		}
		len = opt->size_min + (size_t)(next_random(&state) % span);
		s->length = (uint32_t)len;
		s->destination = (uint32_t)(1 + next_random(&state) % RECEIVERS);
		hdr->destination = s->destination;
		tag = (uint64_t)w->index << 32 | k;
		memcpy(payload, &tag, sizeof(tag));
		for (i = TAG_SIZE; i < len; i++)
			payload[i] = msgq_pattern(tag, i);
		s->sent_ns = lab_now_ns();
		if (put(w, fd, hdr, sizeof(*hdr) + len, 0)) {
			w->log.n--;
			break;
		}
		w->count++;
		atomic_fetch_add_explicit(&moved, 1, memory_order_relaxed);
	}
	if (!atomic_load(&stop)) {
		hdr->destination = 0;
		tag = (uint64_t)w->index << 32 | END_NUMBER;
		memcpy(payload, &tag, sizeof(tag));
		put(w, fd, hdr, sizeof(*hdr) + TAG_SIZE, 0);
	}
out:
	if (fd >= 0)
		close(fd);
	free(hdr);
	end_worker(w);
	return NULL;
}

/* Forward one message read into @buf to its queue; 0, 1 when stopped, -1. */
static int route(struct worker *w, uint8_t *buf, const int out[RECEIVERS])
{
	struct msgq_record *rec = (struct msgq_record *)buf;
	uint32_t dest = rec->destination, length = rec->length;
	struct msgq_msg *hdr;
	struct hop_in *h;

	if (dest > RECEIVERS)
		return fail(w, "message %llu on %s is for destination %u: another program is "
			    "writing to it", (unsigned long long)rec->seq, MSGQ_IN_NAME, dest);
	h = log_add(&w->log);
	if (!h)
		return fail(w, "out of memory");
	*h = (struct hop_in){ .tag = tag_of(buf + sizeof(*rec)), .seq = rec->seq,
			      .queued_ns = rec->queued_ns, .queued_cycles = rec->queued_cycles,
			      .destination = dest, .length = length };
	w->count++;
	atomic_fetch_add_explicit(&moved, 1, memory_order_relaxed);
	/* The header goes just before the payload, over the record's tail. */
	hdr = (struct msgq_msg *)(buf + sizeof(*rec) - sizeof(*hdr));
	hdr->source = rec->source;
	hdr->destination = dest;
	if (put(w, out[dest - 1], hdr, sizeof(*hdr) + length, (int)dest))
		return 1;
	w->routed[dest - 1]++;
	return 0;
}

static void *daemon_task(void *arg)
{
	struct worker *w = arg;
	size_t size = sizeof(struct msgq_record) + MSGQ_MAX_PAYLOAD;
	int in = -1, out[RECEIVERS], ends = 0, d;
	uint8_t *buf = malloc(size);

	start_worker(w);
	for (d = 0; d < RECEIVERS; d++)
		out[d] = -1;
	if (!buf) {
		fail(w, "out of memory");
		goto out;
	}
	in = open_queue(w, 0, O_RDONLY);
	for (d = 0; d < RECEIVERS && in >= 0; d++)
		if ((out[d] = open_queue(w, d + 1, O_WRONLY)) < 0)
			goto out;
	if (in < 0)
		goto out;
	while (ends < SENDERS && !atomic_load(&stop)) {
		if (get(w, in, buf, size, 0))
			break;
		if (((struct msgq_record *)buf)->destination == 0)
			ends++;
		else if (route(w, buf, out))
			break;
	}
	if (!atomic_load(&stop)) {
		struct msgq_msg *hdr = (struct msgq_msg *)buf;
		uint64_t tag = (uint64_t)END_NUMBER;

		hdr->source = 0;
		hdr->destination = 0;
		memcpy(buf + sizeof(*hdr), &tag, sizeof(tag));
		for (d = 0; d < RECEIVERS; d++)
			if (put(w, out[d], hdr, sizeof(*hdr) + TAG_SIZE, d + 1))
				break;
	}
out:
	for (d = 0; d < RECEIVERS; d++)
		if (out[d] >= 0)
			close(out[d]);
	if (in >= 0)
		close(in);
	free(buf);
	end_worker(w);
	return NULL;
}

/* Log the message read into @buf; 0, or -1 if it is wrong. */
static int take(struct worker *w, const uint8_t *buf, uint64_t now)
{
	const struct msgq_record *rec = (const struct msgq_record *)buf;
	const uint8_t *payload = buf + sizeof(*rec);
	uint64_t tag = tag_of(payload);
	struct hop_out *h;
	size_t i;

	if (rec->destination != (uint32_t)w->index)
		return fail(w, "message %llu on %s%d is for destination %u",
			    (unsigned long long)rec->seq, MSGQ_OUT_PREFIX, w->index,
			    rec->destination);
	for (i = TAG_SIZE; i < rec->length && payload[i] == msgq_pattern(tag, i); i++)
		;
	if (i < rec->length)
		return fail(w, "message %llu on %s%d (sender %u, number %u) is damaged at "
			    "byte %zu", (unsigned long long)rec->seq, MSGQ_OUT_PREFIX, w->index,
			    (unsigned int)(tag >> 32), (unsigned int)tag, i);
	h = log_add(&w->log);
	if (!h)
		return fail(w, "out of memory");
	*h = (struct hop_out){ .tag = tag, .seq = rec->seq, .queued_ns = rec->queued_ns,
			       .queued_cycles = rec->queued_cycles, .received_ns = now,
			       .source = rec->source, .length = rec->length };
	w->count++;
	atomic_fetch_add_explicit(&moved, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&n_received, 1, memory_order_relaxed);
	return 0;
}

static void *receiver(void *arg)
{
	struct worker *w = arg;
	size_t size = sizeof(struct msgq_record) + MSGQ_MAX_PAYLOAD;
	uint8_t *buf = malloc(size);
	uint64_t now;
	int fd = -1;

	start_worker(w);
	if (!buf)
		fail(w, "out of memory");
	else
		fd = open_queue(w, w->index, O_RDONLY);
	while (fd >= 0 && !atomic_load(&stop)) {
		if (get(w, fd, buf, size, w->index))
			break;
		now = lab_now_ns();
		if (((struct msgq_record *)buf)->destination == 0 || take(w, buf, now))
			break;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	end_worker(w);
	return NULL;
}

static int live_workers(const struct worker *workers)
{
	int i, live = 0;

	for (i = 0; i < WORKERS; i++)
		live += workers[i].started && !atomic_load(&workers[i].done);
	return live;
}

/* End every blocked call: each SIGUSR1 interrupts one, until all are out. */
static void kick_workers(const struct worker *workers)
{
	int i;

	for (i = 0; i < WORKERS; i++)
		if (workers[i].started && !atomic_load(&workers[i].done))
			pthread_kill(workers[i].thread, SIGUSR1);
	usleep(10000);
}

static void start_workers(struct worker *workers)
{
	static void *(*const fn[WORKERS])(void *) = {
		sender, sender, sender, daemon_task, receiver, receiver, receiver,
	};
	struct sigaction sa = { .sa_handler = on_kick };
	sigset_t block, old;
	int i;

	sigaction(SIGUSR1, &sa, NULL);
	/* Ctrl-C is for the main thread: the workers block it. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	start_ns = lab_now_ns() + 10000000;	/* --rate's clock starts in 10 ms */
	deadline_ns = start_ns + workers[0].opt->seconds * 1000000000ull;
	for (i = 0; i < WORKERS; i++) {
		if (pthread_create(&workers[i].thread, NULL, fn[i], &workers[i])) {
			fail(&workers[i], "cannot start a thread");
			break;
		}
		workers[i].started = 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

const char *bus_run(struct bus *b, void (*before)(void), void (*after)(void))
{
	struct worker *workers = b->workers;
	uint64_t last_move, last_print;
	unsigned long last = 0, now_moved;
	struct timespec ts;
	int i;

	sem_init(&wake_main, 0, 0);
	if (before)
		before();
	start_workers(workers);
	last_move = last_print = lab_now_ns();
	while (live_workers(workers)) {
		if (atomic_load(&stop)) {
			kick_workers(workers);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		sem_timedwait(&wake_main, &ts);
		now_moved = atomic_load(&moved);
		if (now_moved != last) {
			last = now_moved;
			last_move = lab_now_ns();
		} else if (lab_now_ns() - last_move > STALL_S * 1000000000ull) {
			snprintf(main_err, sizeof(main_err), "no message moved for %d s: is "
				 "another program using the /dev/bus_* queues?", STALL_S);
			atomic_store(&stop, 1);
		}
		if (!workers[0].opt->common.quiet && !atomic_load(&stop) && lab_now_ns() - last_print >= PROGRESS_NS) {
			last_print = lab_now_ns();
			fprintf(stderr, PROG ": %.0f s: %lu messages received\n",
				(double)(last_print - start_ns) / 1e9, atomic_load(&n_received));
		}
	}
	for (i = 0; i < WORKERS; i++)
		if (workers[i].started)
			pthread_join(workers[i].thread, NULL);
	if (after)
		after();
	sem_destroy(&wake_main);
	return main_err[0] ? main_err : NULL;
}
