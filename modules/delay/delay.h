/* SPDX-License-Identifier: GPL-2.0 */
/* The delay module's private header: what its files share. */
#ifndef _DELAY_H
#define _DELAY_H

#include <linux/bitmap.h>
#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/cgroup.h>
#include <linux/compiler.h>
#include <linux/init.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/percpu-refcount.h>
#include <linux/rcupdate.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <asm/unistd.h>

/*
 * The caps keep one system call's delay to a few milliseconds even under
 * software emulation (about 1 ns per iteration on current hardware, a few
 * ns under QEMU TCG; 5 ms in ns mode everywhere), far below anything a
 * lockup detector reacts to.
 */
#define DELAY_LOOPS_MAX 1000000U
#define DELAY_NS_MAX 5000000U

/* ppm= is in parts per million: all of them. */
#define DELAY_PPM 1000000U

/*
 * A delay, loops and ns in one word: 0 for none, the loop count, or
 * DELAY_NS_MODE | the nanoseconds.
 */
#define DELAY_NS_MODE BIT(31)

static_assert(DELAY_LOOPS_MAX < DELAY_NS_MODE && DELAY_NS_MAX < DELAY_NS_MODE);

static inline unsigned int delay_setting_loops(u32 setting)
{
	return setting & DELAY_NS_MODE ? 0 : setting;
}

static inline unsigned int delay_setting_ns(u32 setting)
{
	return setting & DELAY_NS_MODE ? setting & ~DELAY_NS_MODE : 0;
}

/* Does @setting delay at all (DELAY_NS_MODE | 0 does not)? */
static inline bool delay_setting_delays(u32 setting)
{
	return delay_setting_loops(setting) || delay_setting_ns(setting);
}

/*
 * What the hook does with a targeted call, in one piece so that it reads
 * a whole configuration, the old one or the new one, never parts of each:
 * the delay of every call (loops=, ns=), the calls of their own delay
 * (delays=), the calls to target (syscalls=), which of them (every=,
 * first=, ppm=, seed=), how (mode=) and where (where=).  NULL is the one
 * of no delay and every call.
 *
 * The hook reads it under RCU.  A parameter's setter, which the module's
 * parameter lock serializes with every other setter and getter (at load
 * time parse_args() calls them one at a time), publishes a changed copy,
 * waits for readers of the old one and frees it; delay_config_free()
 * frees the last when the parameters are destroyed (on unload, after
 * their files are gone, and on a failed load), so a write racing rmmod
 * or a failed load leaks nothing.
 */
struct delay_config {
	u32 setting;				/* every targeted call's delay */
	bool filtered;				/* only the calls in @targets */
	DECLARE_BITMAP(targets, NR_syscalls);
	DECLARE_BITMAP(own, NR_syscalls);	/* the calls with one of ... */
	u32 own_ns[NR_syscalls];		/* ... their own, in ns */
	/* Which of the calls to delay are delayed (see delay_choose()). */
	u32 every, first, ppm;
	u64 seed;
	atomic64_t seq;				/* calls considered so far */
	u32 sleep;				/* mode=sleep */
	u32 at_exit;				/* where=exit */
};

/*
 * Does the task hold the module's parameter lock, which the kernel takes
 * around every parameter's set and get (kernel_param_lock(THIS_MODULE))?
 * It serializes the writers of delay_config and delay_cgrp, for lockdep.
 */
#ifdef CONFIG_SYSFS
#define delay_param_locked() lockdep_is_held(&THIS_MODULE->param_lock)
#else
#define delay_param_locked() true
#endif

/* delay_config.c: the configuration and its scalar parameters. */
extern struct delay_config __rcu *delay_config;

const struct delay_config *delay_config_now(void);
struct delay_config *delay_config_edit(void);
void delay_config_publish(struct delay_config *cfg);

/* delay_targets.c: cgroup=, syscalls= and delays=. */

/*
 * The 64-bit system calls, from the kernel's own table (Kbuild): each
 * one's name, and whether the x32 table has the same call at the same
 * number (abi "common"; a "64" one is the 64-bit table's alone).
 */
struct delay_call {
	const char *name;
	bool shared;
};

extern const struct delay_call delay_table[NR_syscalls];

extern struct cgroup __rcu *delay_cgrp;
extern char *delay_cgroup_path;
extern struct work_struct delay_cgroup_reap_work;

/* Removed: rmdir killed the cgroup's own reference count. */
static inline bool delay_cgroup_dying(struct cgroup *cgrp)
{
	/*
	 * The flag is set once, by percpu_ref_kill() under a lock of the
	 * percpu-refcount code that this module cannot take, and never
	 * cleared: a read that races the kill and misses it sees the cgroup
	 * alive, which it was a moment before, and a later read sees it
	 * dead.  A benign race, marked as one for KCSAN.
	 */
	return data_race(percpu_ref_is_dying(&cgrp->self.refcnt));
}

/*
 * delay_stats.c: the counters, one set a CPU (the hook adds to its own
 * CPU's with this_cpu ops), and the files of stats/ that sum them.
 */
enum delay_counter {
	DELAY_CALLS,		/* calls the hook saw */
	DELAY_DELAYED,		/* calls it delayed */
	DELAY_SPUN,		/* loops it spun */
	DELAY_SPUN_NS,		/* ns the delayed calls took in the delay */
	DELAY_CONSIDERED,	/* calls every=, first= or ppm= considered */
	DELAY_CHOSEN,		/* of those, the ones chosen */
	DELAY_SLEPT,		/* delays that slept (mode=sleep) */
	DELAY_SLEPT_NS,		/* ns they slept */
	DELAY_NR_COUNTERS
};

struct delay_counters {
	unsigned long n[DELAY_NR_COUNTERS];
};

DECLARE_PER_CPU(struct delay_counters, delay_counters);

/*
 * The calls of DELAY_CALLS by number (stats/by_call): one counter for
 * each of the 64-bit table's numbers, then one for the calls that have
 * none (32-bit compat calls, x32's own, numbers in a table's gaps or
 * beyond it).  Allocated by delay_init(), freed by delay_exit().
 */
#define DELAY_BY_CALL_OTHER NR_syscalls

struct delay_call_counts {
	unsigned long n[NR_syscalls + 1];
};

extern struct delay_call_counts __percpu *delay_call_counts;

extern u64 delay_clock_ns;
extern const struct attribute_group delay_stats_group;

u64 __init delay_measure_clock(void);

#endif /* _DELAY_H */
