// SPDX-License-Identifier: GPL-2.0
/*
 * bpfdelay - the delay module's spin in ns, as a BPF program on an
 * unpatched kernel.
 *
 * At the entry of each system call (or its exit) of the targeted tasks,
 * spin in bpf_loop() until bpf_ktime_get_ns() passes a deadline, and
 * count what was delayed, as the module does (modules/delay/README.md).
 * The loader (bpfdelay.c) fills the settings below before loading and
 * loads one program of the four: at the entry or the exit, of the raw
 * tracepoints sys_enter/sys_exit or fentry/fexit on x64_sys_call().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpfdelay.h"

char LICENSE[] SEC("license") = "GPL";

/* thread_info.status of a task in a 32-bit compat call (asm/thread_info.h). */
#define TS_COMPAT 0x0002
/* The bit of an x32 call's number (asm/unistd.h). */
#define X32_SYSCALL_BIT 0x40000000L

/*
 * The settings the loader may change while the program is attached
 * (--control): every targeted call's delay, and whether only the tasks of
 * target_cgroup are targets.
 */
__u32 ns_all;
bool use_cgroup;

/* The other settings, read-only once loaded. */
const volatile bool filtered;		/* syscalls=: only CALL_TARGET calls */
const volatile bool selective;		/* every=, first= or ppm= chooses */
const volatile __u32 every, first, ppm;
const volatile __u64 seed;
const volatile __u8 calltab[BPFDELAY_NR];	/* CALL_* flags by number */
const volatile __u32 own_ns[BPFDELAY_NR];	/* delays= */

/* The calls to delay considered so far, all CPUs': first= and ppm='s place. */
__u64 seq;

struct counters {
	__u64 n[BPFDELAY_NR_COUNTERS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} counters SEC(".maps");

/* Calls by number, the last slot for those of no 64-bit call. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPFDELAY_NR + 1);
	__type(key, __u32);
	__type(value, __u64);
} by_call SEC(".maps");

/* The target cgroup (cgroup=), at index 0. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target_cgroup SEC(".maps");

/*
 * The draw of ppm= for call @i: the (i + 1)-th output of SplitMix64
 * seeded with @seed, as the module's delay_draw().
 */
static __always_inline __u64 draw(__u64 s, __u64 i)
{
	__u64 x = s + (i + 1) * 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Is the next call to delay one to delay (modules/delay: delay_choose())? */
static __always_inline bool choose(struct counters *c)
{
	__u64 i = __sync_fetch_and_add(&seq, 1);
	bool chosen = (!first || i < first) &&
		      (every <= 1 || i % every == 0) &&
		      (ppm >= BPFDELAY_PPM || draw(seed, i) % BPFDELAY_PPM < ppm);

	c->n[BPFDELAY_CONSIDERED]++;
	if (chosen)
		c->n[BPFDELAY_CHOSEN]++;
	return chosen;
}

struct spin {
	__u64 deadline;
	__u64 now;
};

static long spin_step(__u32 index, void *ctx)
{
	struct spin *s = ctx;

	s->now = bpf_ktime_get_ns();
	return s->now >= s->deadline;	/* 1 ends the loop */
}

/*
 * A call of number @slot (BPFDELAY_OTHER: none of the 64-bit table's) of
 * the current task: count it if it is a target, and delay it if it is
 * one to delay.
 */
static __always_inline int delay_call(__u32 slot)
{
	__u32 key = 0, delay = ns_all;
	struct counters *c;
	struct spin s;
	__u64 *n, t0;

	if (use_cgroup && bpf_current_task_under_cgroup(&target_cgroup, 0) != 1)
		return 0;
	if (slot < BPFDELAY_NR) {
		__u8 f = calltab[slot];

		if (filtered && !(f & CALL_TARGET))
			return 0;
		if (f & CALL_OWN)
			delay = own_ns[slot];
	} else if (filtered) {
		return 0;
	}

	c = bpf_map_lookup_elem(&counters, &key);
	n = bpf_map_lookup_elem(&by_call, &slot);
	if (!c || !n)
		return 0;
	c->n[BPFDELAY_CALLS]++;
	(*n)++;
	if (!delay || (selective && !choose(c)))
		return 0;

	t0 = bpf_ktime_get_ns();
	s.deadline = t0 + delay;
	s.now = t0;
	bpf_loop(BPFDELAY_MAX_LOOPS, spin_step, &s, 0);
	c->n[BPFDELAY_DELAYED]++;
	c->n[BPFDELAY_SPUN_NS] += s.now - t0;
	return 0;
}

/*
 * The slot of a call @id as the system-call tracepoints see it: a 64-bit
 * call of the table, or an x32 call of a number x32 shares with it; any
 * other (32-bit compat, x32's own, a number in a gap or beyond) is none.
 */
static __always_inline __u32 slot_of(long id)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (task->thread_info.status & TS_COMPAT)
		return BPFDELAY_OTHER;
	if (id >= 0 && id < BPFDELAY_NR)
		return calltab[id] & CALL_NAMED ? id : BPFDELAY_OTHER;
	if (id & X32_SYSCALL_BIT) {
		id &= ~X32_SYSCALL_BIT;
		if (id >= 0 && id < BPFDELAY_NR && (calltab[id] & CALL_SHARED))
			return id;
	}
	return BPFDELAY_OTHER;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(tp_enter, struct pt_regs *regs, long id)
{
	return delay_call(slot_of(id));
}

SEC("tp_btf/sys_exit")
int BPF_PROG(tp_exit, struct pt_regs *regs, long ret)
{
	return delay_call(slot_of(regs->orig_ax));
}

/* x64_sys_call() dispatches the 64-bit calls only; a gap's is none. */
static __always_inline __u32 slot_64(unsigned int nr)
{
	return nr < BPFDELAY_NR && (calltab[nr] & CALL_NAMED) ? nr : BPFDELAY_OTHER;
}

SEC("fentry/x64_sys_call")
int BPF_PROG(fentry_enter, const struct pt_regs *regs, unsigned int nr)
{
	return delay_call(slot_64(nr));
}

SEC("fexit/x64_sys_call")
int BPF_PROG(fexit_exit, const struct pt_regs *regs, unsigned int nr, long ret)
{
	return delay_call(slot_64(nr));
}
