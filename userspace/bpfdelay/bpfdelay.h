/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF delay's program (bpfdelay.bpf.c) and its loader
 * (bpfdelay.c) share: the caps, the counters and the flags of each
 * system call in the program's table.
 */
#ifndef BPFDELAY_H
#define BPFDELAY_H

#include "syscall_names.h"	/* BPFDELAY_NR: the 64-bit table's size */

/* The delay module's caps and units (modules/delay/delay.h). */
#define BPFDELAY_NS_MAX 5000000U
#define BPFDELAY_PPM 1000000U
#define BPFDELAY_OWN_MAX 64

/*
 * bpf_loop()'s own bound on its iterations (BPF_MAX_LOOPS in the kernel):
 * at well under a ns an iteration, more than 5 ms of spinning.
 */
#define BPFDELAY_MAX_LOOPS (1U << 23)

/* The slot of by_call for the calls of no 64-bit call, after the table's. */
#define BPFDELAY_OTHER BPFDELAY_NR

/* Each 64-bit call's flags in the program's table (calltab). */
#define CALL_NAMED	0x1	/* the table has a call at this number */
#define CALL_SHARED	0x2	/* x32 has the same call at this number */
#define CALL_TARGET	0x4	/* in syscalls= */
#define CALL_OWN	0x8	/* delays= gives it its own ns (own_ns) */

/* The counters, one set a CPU, as the module's stats/ names them. */
enum bpfdelay_counter {
	BPFDELAY_CALLS,		/* targeted calls through the point */
	BPFDELAY_DELAYED,	/* of those, the ones delayed */
	BPFDELAY_SPUN_NS,	/* ns measured around the delays */
	BPFDELAY_CONSIDERED,	/* calls every=, first= or ppm= considered */
	BPFDELAY_CHOSEN,	/* of those, the ones chosen */
	BPFDELAY_NR_COUNTERS
};

#endif /* BPFDELAY_H */
