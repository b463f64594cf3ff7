/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The delay module's trace event, delay:delay_syscall: one record per
 * delayed system call, written after the delay.
 *
 *	nr		the system-call number as the hook got it: the index
 *			into the table that dispatches the call (an x32
 *			call's without __X32_SYSCALL_BIT), or the number the
 *			entry path got for a call that no table dispatches
 *	abi		the table that dispatched the call, as the entry
 *			path told the hook (<asm/syscall_hook.h>): 64, x32,
 *			ia32 (the 32-bit compat table, its own numbering) or
 *			none (entry work skipped it, or no table has it)
 *	loops		loop iterations requested (0 in ns mode)
 *	ns		nanoseconds requested (0 in loops mode)
 *	measured_ns	nanoseconds the delay took on CLOCK_MONOTONIC, as
 *			added to stats/spun_ns
 *	slept		true if the task slept (mode=sleep), false if it spun
 *	at_exit		true if the delay came after the call (where=exit)
 *
 * Built as the kernel's samples/trace_events/ are: delay_main.c, and no
 * other file, defines CREATE_TRACE_POINTS before including this file, and
 * Kbuild puts this folder on that file's include path, which
 * TRACE_INCLUDE_PATH below refers to.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM delay

#if !defined(_DELAY_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _DELAY_TRACE_H

#include <linux/tracepoint.h>
#include <linux/types.h>
#include <asm/syscall_hook.h>

/* The tables by number in the event's format file, for trace-cmd. */
TRACE_DEFINE_ENUM(SYSCALL_HOOK_NONE);
TRACE_DEFINE_ENUM(SYSCALL_HOOK_64);
TRACE_DEFINE_ENUM(SYSCALL_HOOK_X32);
TRACE_DEFINE_ENUM(SYSCALL_HOOK_IA32);

#define delay_show_abi(abi)					\
	__print_symbolic(abi,					\
			 { SYSCALL_HOOK_NONE, "none" },		\
			 { SYSCALL_HOOK_64, "64" },		\
			 { SYSCALL_HOOK_X32, "x32" },		\
			 { SYSCALL_HOOK_IA32, "ia32" })

TRACE_EVENT(delay_syscall,
	    TP_PROTO(int nr, enum syscall_hook_abi abi, unsigned int loops,
		     unsigned int ns, u64 measured_ns, bool slept, bool at_exit),
	    TP_ARGS(nr, abi, loops, ns, measured_ns, slept, at_exit),
	    TP_STRUCT__entry(__field(int, nr)
			     __field(unsigned int, abi)
			     __field(unsigned int, loops)
			     __field(unsigned int, ns)
			     __field(u64, measured_ns)
			     __field(bool, slept)
			     __field(bool, at_exit)),
	    TP_fast_assign(__entry->nr = nr;
			   __entry->abi = abi;
			   __entry->loops = loops;
			   __entry->ns = ns;
			   __entry->measured_ns = measured_ns;
			   __entry->slept = slept;
			   __entry->at_exit = at_exit;),
	    TP_printk("nr=%d abi=%s loops=%u ns=%u measured_ns=%llu slept=%d at_exit=%d",
		      __entry->nr, delay_show_abi(__entry->abi), __entry->loops,
		      __entry->ns, __entry->measured_ns, __entry->slept,
		      __entry->at_exit)
);

#endif /* _DELAY_TRACE_H */

/* This part must be outside the multi-read protection. */
#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE delay_trace
#include <trace/define_trace.h>
