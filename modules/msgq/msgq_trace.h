/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The msgq module's trace events, one per message and queue:
 *
 * msgq:msgq_enqueue, when write() has queued a message
 *	queue		the queue's name: bus_in_q, bus_out_q1 ...
 *	seq		the message's number in that queue, from 1
 *	length		payload bytes
 *	depth		messages queued, this one included
 *
 * msgq:msgq_dequeue, when read() has handed a message to userspace
 *	queue, seq, length as above
 *	depth		messages still queued after this one
 *	queued_ns	how long it was queued (struct msgq_record.queued_ns)
 *	queued_cycles	the same in TSC cycles
 *
 * Built as the kernel's samples/trace_events/ are: msgq.c defines
 * CREATE_TRACE_POINTS before including this file, and Kbuild puts this
 * folder on that file's include path, which TRACE_INCLUDE_PATH below
 * refers to.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM msgq

#if !defined(_MSGQ_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _MSGQ_TRACE_H

#include <linux/tracepoint.h>
#include <linux/types.h>

TRACE_EVENT(msgq_enqueue,
	    TP_PROTO(const char *queue, u64 seq, u32 length, u32 depth),
	    TP_ARGS(queue, seq, length, depth),
	    TP_STRUCT__entry(__string(queue, queue)
			     __field(u64, seq)
			     __field(u32, length)
			     __field(u32, depth)),
	    TP_fast_assign(__assign_str(queue);
			   __entry->seq = seq;
			   __entry->length = length;
			   __entry->depth = depth;),
	    TP_printk("queue=%s seq=%llu length=%u depth=%u",
		      __get_str(queue), __entry->seq, __entry->length,
		      __entry->depth)
);

TRACE_EVENT(msgq_dequeue,
	    TP_PROTO(const char *queue, u64 seq, u32 length, u32 depth,
		     u64 queued_ns, u64 queued_cycles),
	    TP_ARGS(queue, seq, length, depth, queued_ns, queued_cycles),
	    TP_STRUCT__entry(__string(queue, queue)
			     __field(u64, seq)
			     __field(u32, length)
			     __field(u32, depth)
			     __field(u64, queued_ns)
			     __field(u64, queued_cycles)),
	    TP_fast_assign(__assign_str(queue);
			   __entry->seq = seq;
			   __entry->length = length;
			   __entry->depth = depth;
			   __entry->queued_ns = queued_ns;
			   __entry->queued_cycles = queued_cycles;),
	    TP_printk("queue=%s seq=%llu length=%u depth=%u queued_ns=%llu queued_cycles=%llu",
		      __get_str(queue), __entry->seq, __entry->length,
		      __entry->depth, __entry->queued_ns,
		      __entry->queued_cycles)
);

#endif /* _MSGQ_TRACE_H */

/* This part must be outside the multi-read protection. */
#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE msgq_trace
#include <trace/define_trace.h>
