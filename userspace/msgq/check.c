// SPDX-License-Identifier: GPL-2.0
/*
 * After the run: join what the senders, the daemon and the receivers
 * logged into one row per message, check that the bus lost, duplicated,
 * changed and reordered nothing and that the counts match, and write and
 * print what was measured.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msgq.h"

void check_problem(struct check *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->problems++) {
		va_start(ap, fmt);
		vsnprintf(c->first, sizeof(c->first), fmt, ap);
		va_end(ap);
	}
}

/* The row of the message tagged @tag; NULL (a problem noted) if nobody sent it. */
static struct row *row_of(struct check *c, uint64_t tag, const char *where)
{
	unsigned int s = (unsigned int)(tag >> 32), k = (unsigned int)tag;

	if (s < 1 || s > SENDERS || k >= c->bus->workers[s - 1].log.n) {
		check_problem(c, "%s got a message nobody sent (sender %u, number %u)", where,
			      s, k);
		return NULL;
	}
	return &c->rows[s - 1][k];
}

/* The daemon's log: each message once, unchanged, in its sender's order. */
static void join_in(struct check *c)
{
	const struct worker *d = &c->bus->workers[DAEMON];
	unsigned int next[SENDERS] = { 0 };
	size_t i;

	for (i = 0; i < d->log.n; i++) {
		const struct hop_in *h = (const struct hop_in *)d->log.rows + i;
		struct row *row = row_of(c, h->tag, "the daemon");

		if (!row)
			continue;
		if (row->in)
			check_problem(c, "message %u of sender %u reached the daemon twice",
				      row->number, row->sender);
		else if (h->destination != row->sent->destination ||
			 h->length != row->sent->length)
			check_problem(c, "message %u of sender %u changed in %s", row->number,
				      row->sender, MSGQ_IN_NAME);
		if (row->number < next[row->sender - 1])
			check_problem(c, "sender %u's messages left %s out of order", row->sender,
				      MSGQ_IN_NAME);
		next[row->sender - 1] = row->number + 1;
		row->in = h;
	}
}

/* Receiver @r's log: each message once, routed, unchanged, in order. */
static void join_out(struct check *c, int r)
{
	const struct worker *w = &c->bus->workers[DAEMON + r];
	unsigned int next[SENDERS] = { 0 };
	size_t i;

	for (i = 0; i < w->log.n; i++) {
		const struct hop_out *h = (const struct hop_out *)w->log.rows + i;
		struct row *row = row_of(c, h->tag, "a receiver");

		if (!row)
			continue;
		if (row->out)
			check_problem(c, "message %u of sender %u was received twice",
				      row->number, row->sender);
		else if (!row->in)
			check_problem(c, "message %u of sender %u was received but never routed",
				      row->number, row->sender);
		else if (h->source != row->sender || h->length != row->sent->length ||
			 row->sent->destination != (uint32_t)r)
			check_problem(c, "message %u of sender %u changed on its way to %s%d",
				      row->number, row->sender, MSGQ_OUT_PREFIX, r);
		if (row->number < next[row->sender - 1])
			check_problem(c, "sender %u's messages left %s%d out of order",
				      row->sender, MSGQ_OUT_PREFIX, r);
		next[row->sender - 1] = row->number + 1;
		row->out = h;
		row->receiver = (unsigned int)r;
	}
}

/* Sent = read by the daemon = routed, and routed = received per queue. */
static void check_counts(struct check *c)
{
	const struct worker *d = &c->bus->workers[DAEMON];
	unsigned long sent = 0, routed = 0;
	int i;

	for (i = 0; i < SENDERS; i++)
		sent += c->bus->workers[i].count;
	for (i = 0; i < RECEIVERS; i++) {
		routed += d->routed[i];
		if (d->routed[i] != c->bus->workers[DAEMON + 1 + i].count)
			check_problem(c, "%lu messages routed to %s%d, %lu received", d->routed[i],
				      MSGQ_OUT_PREFIX, i + 1, c->bus->workers[DAEMON + 1 + i].count);
	}
	if (sent != d->count || routed != sent)
		check_problem(c, "%lu messages sent, %lu read by the daemon, %lu routed", sent,
			      d->count, routed);
}

int check_join(struct check *c, const struct bus *b)
{
	size_t k;
	int s, r;

	c->bus = b;
	for (s = 0; s < SENDERS; s++) {
		c->rows[s] = calloc(c->bus->workers[s].log.n + 1, sizeof(struct row));
		if (!c->rows[s])
			return -1;
		for (k = 0; k < c->bus->workers[s].log.n; k++) {
			c->rows[s][k].sent = (const struct sent *)c->bus->workers[s].log.rows + k;
			c->rows[s][k].sender = (unsigned int)s + 1;
			c->rows[s][k].number = (unsigned int)k;
		}
	}
	join_in(c);
	for (r = 1; r <= RECEIVERS; r++)
		join_out(c, r);
	check_counts(c);
	return 0;
}

/* By the input queue's sequence; messages it never saw last, by send time. */
static int by_seq(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
	uint64_t sx = x->in ? x->in->seq : UINT64_MAX, sy = y->in ? y->in->seq : UINT64_MAX;

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return (x->sent->sent_ns > y->sent->sent_ns) - (x->sent->sent_ns < y->sent->sent_ns);
}

static void write_row(FILE *f, const struct row *r)
{
	if (r->in)
		fprintf(f, "%llu", (unsigned long long)r->in->seq);
	fprintf(f, ",%u,%u,%u,%u,%llu,", r->sender, r->number, r->sent->destination,
		r->sent->length, (unsigned long long)r->sent->sent_ns);
	if (r->in)
		fprintf(f, "%llu,%llu,", (unsigned long long)r->in->queued_ns,
			(unsigned long long)r->in->queued_cycles);
	else
		fputs(",,", f);
	if (r->out)
		fprintf(f, "%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)r->out->seq,
			(unsigned long long)r->out->queued_ns,
			(unsigned long long)r->out->queued_cycles,
			(unsigned long long)r->out->received_ns,
			(unsigned long long)(r->out->received_ns - r->sent->sent_ns));
	else
		fputs(",,,,\n", f);
}

int check_write_messages(const struct lab_result *res, const struct check *c)
{
	size_t total = 0, n = 0, i, k;
	struct row **order;
	FILE *f;
	int s;

	for (s = 0; s < SENDERS; s++)
		total += c->bus->workers[s].log.n;
	order = malloc((total + 1) * sizeof(*order));
	if (!order)
		return -1;
	f = lab_result_file(res, "messages.csv");
	if (!f) {
		free(order);
		return -1;
	}
	for (s = 0; s < SENDERS; s++)
		for (k = 0; k < c->bus->workers[s].log.n; k++)
			order[n++] = &c->rows[s][k];
	qsort(order, n, sizeof(*order), by_seq);
	fprintf(f, "seq,sender,number,destination,length,sent_ns,in_queued_ns,"
		   "in_queued_cycles,out_seq,out_queued_ns,out_queued_cycles,received_ns,"
		   "end_to_end_ns\n");
	for (i = 0; i < n; i++)
		write_row(f, order[i]);
	free(order);
	return fclose(f);
}

/* One line of the table: @n times in ns (@x) and, if any, in cycles (@cyc). */
static void print_line(const char *label, double *x, double *cyc, size_t n)
{
	struct lab_summary s, sc;

	if (!n) {
		printf("  %-12s %8d\n", label, 0);
		return;
	}
	lab_summarize(x, n, &s);
	printf("  %-12s %8zu %10.1f %10.1f %10.1f %10.1f %10.1f", label, s.n, s.min / 1e3,
	       s.mean / 1e3, s.p50 / 1e3, s.p99 / 1e3, s.max / 1e3);
	if (cyc && !lab_summarize(cyc, n, &sc))
		printf(" %12.0f", sc.p50);
	printf("\n");
}

/* Series: 0 the input queue, 1-3 the output queues, 4 end to end. */
#define SERIES (RECEIVERS + 2)

void check_print_times(const struct check *c)
{
	double *x[SERIES] = { NULL }, *cyc[SERIES] = { NULL };
	size_t total = 0, k, n[SERIES] = { 0 };
	char label[32];
	int s, q;

	for (s = 0; s < SENDERS; s++)
		total += c->bus->workers[s].log.n;
	for (q = 0; q < SERIES; q++) {
		x[q] = malloc((total + 1) * sizeof(double));
		cyc[q] = malloc((total + 1) * sizeof(double));
		if (!x[q] || !cyc[q])
			goto out;
	}
	for (s = 0; s < SENDERS; s++)
		for (k = 0; k < c->bus->workers[s].log.n; k++) {
			const struct row *r = &c->rows[s][k];

			if (r->in) {
				x[0][n[0]] = (double)r->in->queued_ns;
				cyc[0][n[0]++] = (double)r->in->queued_cycles;
			}
			if (r->out) {
				q = (int)r->receiver;
				x[q][n[q]] = (double)r->out->queued_ns;
				cyc[q][n[q]++] = (double)r->out->queued_cycles;
				q = SERIES - 1;
				x[q][n[q]++] = (double)(r->out->received_ns - r->sent->sent_ns);
			}
		}
	printf("  %-12s %8s %10s %10s %10s %10s %10s %12s\n", "queued (us)", "n", "min",
	       "mean", "p50", "p99", "max", "p50 cycles");
	for (q = 0; q < SERIES - 1; q++) {
		if (q == 0)
			snprintf(label, sizeof(label), "%s", MSGQ_IN_NAME);
		else
			snprintf(label, sizeof(label), "%s%d", MSGQ_OUT_PREFIX, q);
		print_line(label, x[q], cyc[q], n[q]);
	}
	print_line("end to end", x[SERIES - 1], NULL, n[SERIES - 1]);
out:
	for (q = 0; q < SERIES; q++) {
		free(x[q]);
		free(cyc[q]);
	}
}
