/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The msgq message bus: what a write() to /dev/bus_in_q, /dev/bus_out_q1,
 * /dev/bus_out_q2 or /dev/bus_out_q3 takes and what a read() returns.
 * Included by the module (modules/msgq/msgq.c, which documents the
 * behaviour) and by userspace (userspace/msgq/msgq.c).
 */
#ifndef _UAPI_MSGQ_H
#define _UAPI_MSGQ_H

#include <linux/types.h>

/* The queues: one input queue, then the output queues 1..MSGQ_OUT_QUEUES. */
#define MSGQ_QUEUES		4
#define MSGQ_OUT_QUEUES		3
#define MSGQ_IN_NAME		"bus_in_q"
#define MSGQ_OUT_PREFIX		"bus_out_q"

/* The largest payload of one message, in bytes. */
#define MSGQ_MAX_PAYLOAD	4096

/* Messages a queue holds: the module parameter capacity, and its range. */
#define MSGQ_CAPACITY_DEFAULT	10
#define MSGQ_CAPACITY_MAX	4096

/**
 * struct msgq_msg - the start of what one write() queues
 * @source: the sender, any number userspace chooses; returned as is
 * @destination: where the message is going, any number; returned as is
 *
 * The rest of the write buffer, 0 to MSGQ_MAX_PAYLOAD bytes, is the
 * payload.  The driver interprets neither field.
 */
struct msgq_msg {
	__u32 source;
	__u32 destination;
};

/**
 * struct msgq_record - the start of what one read() returns
 * @seq: the message's number in this queue, in enqueue order, from 1
 * @enqueue_ns: when write() queued it (ktime_get_ns(): CLOCK_MONOTONIC)
 * @queued_ns: how long it stayed queued: from @enqueue_ns until the
 *	read() that returns it took it, before the copy to userspace
 * @queued_cycles: the same interval in time-stamp counter cycles
 *	(get_cycles(): rdtsc on x86; 0 where there is no such counter)
 * @source: as written
 * @destination: as written
 * @length: payload bytes that follow this struct
 * @depth: messages still queued after this one was taken
 *
 * A read() returns sizeof(struct msgq_record) + @length bytes.
 */
struct msgq_record {
	__u64 seq;
	__u64 enqueue_ns;
	__u64 queued_ns;
	__u64 queued_cycles;
	__u32 source;
	__u32 destination;
	__u32 length;
	__u32 depth;
};

#endif /* _UAPI_MSGQ_H */
