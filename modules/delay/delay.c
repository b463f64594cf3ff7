// SPDX-License-Identifier: GPL-2.0
/*
 * delay - add a tunable amount of work to every system call
 *
 * Registers the x86 system-call entry hook (CONFIG_X86_SYSCALL_HOOK) and
 * spins on each system call of the targeted tasks, either a fixed number of
 * loop iterations or until a number of nanoseconds has passed, so that
 * userspace can study how throughput depends on system-call latency.  The
 * module times what it adds and says so in stats/ and in a trace event.
 *
 * /sys/module/delay/parameters/loops  (rw, root)
 *	Iterations spun per system call, 0 to DELAY_LOOPS_MAX, decimal.  A
 *	negative, non-decimal or too large value is refused with -EINVAL and
 *	the old value stays.  May also be given at load time: insmod
 *	delay.ko loops=N.
 *	Exactly one of loops and ns is in force: writing a nonzero value to
 *	one sets the other to 0; writing 0 to either sets only that one to 0.
 *	At load time the last nonzero one given wins.
 *
 * /sys/module/delay/parameters/ns  (rw, root)
 *	Nanoseconds to spin per system call, 0 to DELAY_NS_MAX (5 ms): the
 *	hook reads the clock (see "The clock" below) and spins until it says
 *	at least that much has passed, so the delay overshoots by up to one
 *	clock read and counts any time the task was interrupted or preempted
 *	while spinning, as a userspace clock would.  Refused as loops is, and
 *	the same rule: a nonzero value sets loops to 0.
 *
 * /sys/module/delay/parameters/cgroup  (rw, root)
 *	Delay only the tasks of this cgroup v2 and of its descendants, named
 *	as in /proc/PID/cgroup: a path from the cgroup2 root such as
 *	"/lab/httpd".  Empty (the default) delays every task.  A path that
 *	does not start with '/' is refused with -EINVAL, one that names no
 *	cgroup with -ENOENT (-ENOTDIR for a file); the old target stays.
 *	The target is the cgroup the path named when it was written, not the
 *	path: once that cgroup is removed (rmdir), no task is delayed or
 *	counted, the module lets the dead cgroup go, and the parameter reads
 *	back the path followed by " (deleted)".  A cgroup made again at the
 *	same path is a new cgroup: write its path again to target it.
 *
 * /sys/module/delay/parameters/syscalls  (rw, root)
 *	Delay (and count) only these system calls: a comma-separated list of
 *	64-bit system-call numbers and ranges, such as "0,1,257" or "0-3,39",
 *	decimal, no spaces.  Empty (the default) means every system call.
 *	A number not below NR_syscalls (the size of the 64-bit table), an
 *	empty item, a range whose end is below its start or anything but
 *	digits, ',' and '-' (and one trailing newline) is refused with
 *	-EINVAL and the old set stays.  Reads back in canonical form: each
 *	number once, ascending, ranges expanded ("0,1,257"), or an empty
 *	line.  The kernel tells the hook which table dispatches each call
 *	(<asm/syscall_hook.h>), at entry and at exit alike, so a call is
 *	matched by what it is, even across an execve() that changes the
 *	task's ABI.  An x32 call of a number the two tables share (abi
 *	"common" in syscall_64.tbl) is matched by that number; the x32-only
 *	numbers and the 64-bit-only ones, which are other calls or none for
 *	an x32 task, are not.  32-bit compat calls (int $0x80, SYSENTER,
 *	SYSCALL from a 32-bit task) use another table, and a call that no
 *	table dispatches (entry work skipped it, or no table has its number:
 *	ENOSYS) is no call of any table: while a set is chosen these are
 *	never delayed nor counted; with none they are delayed like every
 *	other call.
 *
 * /sys/module/delay/parameters/delays  (rw, root)
 *	Delays of their own, in nanoseconds, for some 64-bit system calls:
 *	a comma-separated list of CALL:NS, CALL a name of the kernel's
 *	64-bit table (arch/x86/entry/syscalls/syscall_64.tbl: "read",
 *	"futex", "stat") or a number, NS 0 to DELAY_NS_MAX, such as
 *	"read:2000,futex:50000".  A listed call waits its own NS, as in the
 *	ns mode, instead of what loops or ns gives every call; 0 leaves it
 *	undelayed (it is still counted).  It still has to be targeted
 *	(cgroup, syscalls).  At most DELAY_OWN_MAX calls; a call listed
 *	twice, an unknown name, a bad number or an empty item is refused
 *	with -EINVAL and the old list stays.  Empty (the default) is none.
 *	Reads back by name, in the table's order: "read:2000,futex:50000".
 *	It applies to the calls the syscalls filter matches by number (the
 *	64-bit ones and x32's shared ones); 32-bit compat calls have other
 *	numbers and are not affected.
 *
 * /sys/module/delay/parameters/every, first, ppm, seed  (rw, root)
 *	Which of the calls to delay (targeted, with a nonzero delay) are
 *	delayed: every=N the 1st, the N+1st, the 2N+1st ... (0 or 1: each),
 *	first=K only the first K (0: no limit), ppm=P each with a chance of
 *	P in a million (0 to 1000000, the default).  A call must pass all
 *	three.  The sequence numbers the calls to delay from 0 and starts
 *	again with every write of any of loops, ns, syscalls, delays, every,
 *	first, ppm, seed, mode and where.  Call i of the sequence draws the
 *	(i + 1)-th output of SplitMix64 seeded with seed=S (0 to 2^64 - 1)
 *	and is delayed if that output modulo a million is below P: one seed
 *	delays the same calls on every run of a deterministic machine (the
 *	virtual clock), and each seed is a stream of its own: seeds S and
 *	S + k walk one cycle of 2^64 states k times the inverse of the
 *	generator's increment apart, at least 1.2 * 10^14 draws for every k
 *	below 65,536, so repeating an experiment with seeds 1, 2, 3 ...
 *	repeats it with draws that no run of calls sees overlap.  Decimal
 *	only; anything else is refused with -EINVAL and the old value stays.
 *	The calls not chosen are counted (stats/calls), not delayed.
 *
 * /sys/module/delay/parameters/mode  (rw, root)
 *	"spin" (the default) or "sleep": how a delay in nanoseconds (ns=,
 *	delays=) is spent.  spin keeps the CPU busy, as a call that computes
 *	would; sleep gives it away for that long (an absolute hrtimer, on
 *	CLOCK_MONOTONIC), as a call that waits would, so the delay counts its
 *	wake-up latency too (see stats/slept_ns).  A sleep never ends before
 *	its time, even if something wakes the task early (see delay_sleep()),
 *	but when the module is being unloaded.  A delay in loops is always
 *	spun.  Anything else is refused with
 *	-EINVAL; sleep is refused with -EOPNOTSUPP on a kernel without RCU
 *	Tasks (no PREEMPTION), where the hook runs with preemption disabled.
 *
 * /sys/module/delay/parameters/where  (rw, root)
 *	"entry" (the default): the delay comes before the call does its
 *	work; "exit": after it, just before the return to userspace (the
 *	kernel's exit hook, which a few calls never reach: exit(), a new
 *	child's first return).  Only the calls through that point are
 *	counted.  Anything else is refused with -EINVAL.
 *
 *	loops, ns, syscalls, delays, every, first, ppm, seed, mode and where
 *	are one configuration: the hook reads each call's all at once, so a
 *	call racing a write is delayed by the old configuration or the new
 *	one, never a mix.  The one exception is where itself: the hook reads
 *	the configuration at entry and again at exit, so a call racing a
 *	write of where may be delayed at both points or at neither.
 *
 * The files of stats/ are root's only (0400), as are /proc/PID/syscall and
 * /proc/PID/io: they show how often and how long the tasks of the target,
 * any user's, make system calls.
 *
 * /sys/module/delay/stats/calls  (ro, root)
 *	System calls of targeted tasks that went through the hook and passed
 *	the syscalls filter since the module was loaded, counted at any
 *	setting, 0 included.
 *
 * /sys/module/delay/stats/delayed  (ro, root)
 *	Of those, the calls that were delayed: loops or ns was nonzero.
 *
 * /sys/module/delay/stats/spun  (ro, root)
 *	Loop iterations spun since the module was loaded, in loops mode only:
 *	the ns mode's wait loop does not add to it.
 *
 * /sys/module/delay/stats/spun_ns  (ro, root)
 *	Nanoseconds measured inside the delay, summed over the delayed calls
 *	(loops and ns mode alike, spun or slept).  Each call's figure is the
 *	difference of a clock read before the delay and one after it, so it
 *	includes about one clock_ns of clock reading besides the delay.
 *
 * /sys/module/delay/stats/slept, slept_ns  (ro, root)
 *	Of the delayed calls, those that slept (mode=sleep), and the part of
 *	spun_ns they took: what the sleeps cost the tasks, wake-ups included.
 *	A delay that unloading stopped before it began is none: not counted
 *	as delayed or slept, and no trace event.
 *
 * /sys/module/delay/stats/mean_ns  (ro, root)
 *	spun_ns / delayed, rounded down; 0 while nothing was delayed.
 *
 * /sys/module/delay/stats/considered, chosen  (ro, root)
 *	While every, first or ppm chooses: the calls to delay that were
 *	considered, and of those the ones chosen (delayed).  They do not move
 *	while every call to delay is delayed.
 *
 * /sys/module/delay/stats/clock_ns  (ro, root)
 *	The smallest of DELAY_CLOCK_TRIES differences between two back-to-back
 *	clock reads, measured once at load time: what one spin_ns figure
 *	costs, and what a spin of no length at all would report.
 *
 * Trace event delay:delay_syscall (delay_trace.h), once per delayed call,
 * after the delay: nr, compat, loops, ns, the measured ns, whether it
 * slept and whether it came at exit.
 *
 * The clock is ktime_get_ns(): CLOCK_MONOTONIC, which is what the lab's
 * userspace tools read (clock_gettime(CLOCK_MONOTONIC), Python's
 * perf_counter_ns()), so the module's figures and theirs are on one scale.
 * It is global, so a task that migrates during its spin still measures a
 * true interval (local_clock() is per CPU), and no one setting the time
 * can make it jump.  Its unit is 1 ns; its granularity is the
 * clocksource's: the TSC on hardware, a fraction of a nanosecond.  Under
 * QEMU TCG the guest TSC ticks at the host's rate, so the resolution
 * holds, but each read costs hundreds of ns of emulation, which is what
 * clock_ns shows; that cost bounds how closely the ns mode can hit its
 * target and is included in every measured figure.
 *
 * Unloading unregisters the hooks; the kernel waits until no task is still
 * spinning in one before the module's code goes away.  A sleep is a
 * voluntary switch, which the kernel takes as proof that a task left the
 * hook, so the module first stops new sleeps and waits for those in
 * progress itself (SRCU; see delay_sleep()), as <asm/syscall_hook.h> asks.
 * It also stops new delays first: see delay_stop_delaying().
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/err.h>
#include <linux/cgroup.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nospec.h>
#include <linux/percpu.h>
#include <linux/percpu-refcount.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <asm/syscall_hook.h>
#include <asm/unistd.h>

#define CREATE_TRACE_POINTS
#include "delay_trace.h"

/*
 * The caps keep one system call's delay to a few milliseconds even under
 * software emulation (about 1 ns per iteration on current hardware, a few
 * ns under QEMU TCG; 5 ms in ns mode everywhere), far below anything a
 * lockup detector reacts to.
 */
#define DELAY_LOOPS_MAX 1000000U
#define DELAY_NS_MAX 5000000U

/*
 * At most this many calls with a delay of their own: what delays= reads
 * back fits in its page with the longest names.
 */
#define DELAY_OWN_MAX 64

/* ppm= is in parts per million: all of them. */
#define DELAY_PPM 1000000U

/* Back-to-back clock read pairs timed at load time for clock_ns. */
#define DELAY_CLOCK_TRIES 1000

/*
 * A delay, loops and ns in one word: 0 for none, the loop count, or
 * DELAY_NS_MODE | the nanoseconds.
 */
#define DELAY_NS_MODE BIT(31)

static_assert(DELAY_LOOPS_MAX < DELAY_NS_MODE && DELAY_NS_MAX < DELAY_NS_MODE);

static unsigned int delay_setting_loops(u32 setting)
{
	return setting & DELAY_NS_MODE ? 0 : setting;
}

static unsigned int delay_setting_ns(u32 setting)
{
	return setting & DELAY_NS_MODE ? setting & ~DELAY_NS_MODE : 0;
}

/* Does @setting delay at all (DELAY_NS_MODE | 0 does not)? */
static bool delay_setting_delays(u32 setting)
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

static struct delay_config __rcu *delay_config;

/* The configuration in force; only under the parameter lock. */
static const struct delay_config *delay_config_now(void)
{
	static const struct delay_config none = { .ppm = DELAY_PPM };
	const struct delay_config *cfg = rcu_dereference_protected(delay_config, true);

	return cfg ?: &none;
}

/* A copy of the configuration in force to change, or NULL. */
static struct delay_config *delay_config_edit(void)
{
	struct delay_config *cfg = kmemdup(delay_config_now(), sizeof(*cfg), GFP_KERNEL);

	/* Every configuration counts its calls from the first. */
	if (cfg)
		atomic64_set(&cfg->seq, 0);
	return cfg;
}

/* Put @cfg in force, once no hook can be reading the one it replaces. */
static void delay_config_publish(struct delay_config *cfg)
{
	struct delay_config *old = rcu_replace_pointer(delay_config, cfg, true);

	if (old) {
		synchronize_rcu();
		kfree(old);
	}
}

/* Put in force a copy of the configuration whose field at @offset is @value. */
static int delay_config_set(size_t offset, const void *value, size_t size)
{
	struct delay_config *cfg = delay_config_edit();

	if (!cfg)
		return -ENOMEM;
	memcpy((char *)cfg + offset, value, size);
	delay_config_publish(cfg);
	return 0;
}

/* The 32-bit field at @offset of the configuration in force. */
static u32 delay_config_u32(size_t offset)
{
	return *(const u32 *)((const char *)delay_config_now() + offset);
}

/*
 * No hook is registered any more, or the load failed before the hook
 * was: nobody reads it.  One parameter (loops) owns it.
 */
static void delay_config_free(void *arg)
{
	kfree(rcu_replace_pointer(delay_config, NULL, true));
}

static DEFINE_PER_CPU(unsigned long, delay_calls);
static DEFINE_PER_CPU(unsigned long, delay_delayed);
static DEFINE_PER_CPU(unsigned long, delay_spun);
static DEFINE_PER_CPU(unsigned long, delay_spun_ns);
static DEFINE_PER_CPU(unsigned long, delay_considered);
static DEFINE_PER_CPU(unsigned long, delay_chosen);
static DEFINE_PER_CPU(unsigned long, delay_slept);
static DEFINE_PER_CPU(unsigned long, delay_slept_ns);

static u64 delay_clock_ns;

/*
 * A nonzero value replaces the setting; 0 clears it only if it is of this
 * mode (writing loops=0 leaves an ns delay alone, and the reverse).
 */
static int delay_setting_store(u32 mode, unsigned int n)
{
	u32 old = delay_config_now()->setting, setting = n ? mode | n : 0;

	if (!n && (!old || (old & DELAY_NS_MODE) != mode))
		return 0;
	return delay_config_set(offsetof(struct delay_config, setting), &setting,
				sizeof(setting));
}

static int delay_loops_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;

	if (kstrtouint(val, 10, &n) || n > DELAY_LOOPS_MAX)
		return -EINVAL;
	return delay_setting_store(0, n);
}

static int delay_loops_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n",
			  delay_setting_loops(delay_config_now()->setting));
}

static const struct kernel_param_ops delay_loops_ops = {
	.set = delay_loops_set,
	.get = delay_loops_get,
	.free = delay_config_free,
};
module_param_cb(loops, &delay_loops_ops, NULL, 0644);
MODULE_PARM_DESC(loops, "Loop iterations spun per system call (0-"
		 __stringify(DELAY_LOOPS_MAX) "); nonzero sets ns to 0");

static int delay_ns_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;

	if (kstrtouint(val, 10, &n) || n > DELAY_NS_MAX)
		return -EINVAL;
	return delay_setting_store(DELAY_NS_MODE, n);
}

static int delay_ns_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n",
			  delay_setting_ns(delay_config_now()->setting));
}

static const struct kernel_param_ops delay_ns_ops = {
	.set = delay_ns_set,
	.get = delay_ns_get,
};
module_param_cb(ns, &delay_ns_ops, NULL, 0644);
MODULE_PARM_DESC(ns, "Nanoseconds spun per system call (0-"
		 __stringify(DELAY_NS_MAX) "); nonzero sets loops to 0");

/*
 * Which calls of those to delay are delayed: every=N (the 1st, the
 * N+1st, ...), first=K (the first K) and ppm=P (each with a chance of P
 * in a million, drawn from seed=S and the call's place in the sequence),
 * all three at once; the sequence starts again with every write of the
 * configuration (delay_config_edit()).  One set of ops for the 32-bit
 * ones, each parameter saying where its field is and how large it may be.
 */
struct delay_field {
	size_t offset;
	u32 max;
};

static struct delay_field delay_every_field = {
	offsetof(struct delay_config, every), U32_MAX
};

static struct delay_field delay_first_field = {
	offsetof(struct delay_config, first), U32_MAX
};

static struct delay_field delay_ppm_field = {
	offsetof(struct delay_config, ppm), DELAY_PPM
};

static int delay_u32_set(const char *val, const struct kernel_param *kp)
{
	const struct delay_field *field = kp->arg;
	u32 n;

	if (kstrtou32(val, 10, &n) || n > field->max)
		return -EINVAL;
	return delay_config_set(field->offset, &n, sizeof(n));
}

static int delay_u32_get(char *buf, const struct kernel_param *kp)
{
	const struct delay_field *field = kp->arg;

	return sysfs_emit(buf, "%u\n", delay_config_u32(field->offset));
}

static const struct kernel_param_ops delay_u32_ops = {
	.set = delay_u32_set,
	.get = delay_u32_get,
};
module_param_cb(every, &delay_u32_ops, &delay_every_field, 0644);
MODULE_PARM_DESC(every, "Delay every Nth of the calls to delay (0 or 1: each)");
module_param_cb(first, &delay_u32_ops, &delay_first_field, 0644);
MODULE_PARM_DESC(first, "Delay only the first K of the calls to delay (0: no limit)");
module_param_cb(ppm, &delay_u32_ops, &delay_ppm_field, 0644);
MODULE_PARM_DESC(ppm, "Delay each call to delay with this chance in a million (default 1000000)");

static int delay_seed_set(const char *val, const struct kernel_param *kp)
{
	u64 seed;

	if (kstrtou64(val, 10, &seed))
		return -EINVAL;
	return delay_config_set(offsetof(struct delay_config, seed), &seed, sizeof(seed));
}

static int delay_seed_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%llu\n", delay_config_now()->seed);
}

static const struct kernel_param_ops delay_seed_ops = {
	.set = delay_seed_set,
	.get = delay_seed_get,
};
module_param_cb(seed, &delay_seed_ops, NULL, 0644);
MODULE_PARM_DESC(seed, "The seed of ppm's draws (the same calls on every run of a virtual clock)");

/*
 * A parameter that names one of two or more choices (mode=, where=): the
 * index of the name in @names is the field at @offset.
 */
struct delay_choice {
	size_t offset;
	const char *const *names;
	size_t count;
};

static const char *const delay_modes[] = { "spin", "sleep" };
static const char *const delay_wheres[] = { "entry", "exit" };

static struct delay_choice delay_mode_choice = {
	offsetof(struct delay_config, sleep), delay_modes, ARRAY_SIZE(delay_modes)
};

static struct delay_choice delay_where_choice = {
	offsetof(struct delay_config, at_exit), delay_wheres, ARRAY_SIZE(delay_wheres)
};

static int delay_choice_set(const char *val, const struct kernel_param *kp)
{
	const struct delay_choice *choice = kp->arg;
	int i = __sysfs_match_string(choice->names, choice->count, val);
	u32 n = i;

	if (i < 0)
		return -EINVAL;
	/*
	 * Without RCU Tasks the hook runs with preemption disabled and must
	 * not sleep (<asm/syscall_hook.h>).
	 */
	if (choice == &delay_mode_choice && n && !IS_ENABLED(CONFIG_TASKS_RCU))
		return -EOPNOTSUPP;
	return delay_config_set(choice->offset, &n, sizeof(n));
}

static int delay_choice_get(char *buf, const struct kernel_param *kp)
{
	const struct delay_choice *choice = kp->arg;

	return sysfs_emit(buf, "%s\n", choice->names[delay_config_u32(choice->offset)]);
}

static const struct kernel_param_ops delay_choice_ops = {
	.set = delay_choice_set,
	.get = delay_choice_get,
};
module_param_cb(mode, &delay_choice_ops, &delay_mode_choice, 0644);
MODULE_PARM_DESC(mode, "How a delay in ns is spent: spin (default) or sleep");
module_param_cb(where, &delay_choice_ops, &delay_where_choice, 0644);
MODULE_PARM_DESC(where, "Where the delay comes: entry (default, before the call) or exit (after it)");

/*
 * The target cgroup, NULL for every task, or DELAY_CGROUP_GONE once the
 * target was removed: then no task.  The hook reads it under RCU; the
 * setter and delay_cgroup_reap(), serialized with the getter by the
 * module's parameter lock, publish a new one, wait for readers of the old
 * one and drop it.  delay_cgroup_path is the path as the user wrote it,
 * for reading back.
 *
 * Both belong to the parameter, not to init/exit: a load can take them
 * (insmod delay.ko cgroup=/x) and then fail, and on unload the parameter
 * files outlive delay_exit(), so a write can still replace them after it.
 * delay_cgroup_free() drops them when the module's parameters are
 * destroyed, after their files are gone, on unload and on a failed load.
 */
#define DELAY_CGROUP_GONE ((struct cgroup *)ERR_PTR(-ENOENT))
static struct cgroup __rcu *delay_cgrp;
static char *delay_cgroup_path;

/* Removed: rmdir killed the cgroup's own reference count. */
static bool delay_cgroup_dying(struct cgroup *cgrp)
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

/* Drop @cgrp, once no hook can be looking at it any more. */
static void delay_cgroup_put(struct cgroup *cgrp)
{
	if (IS_ERR_OR_NULL(cgrp))
		return;
	synchronize_rcu();
	cgroup_put(cgrp);
}

/*
 * A removed cgroup has no task left, and none can join it, so it targets
 * nobody; but the reference the module holds keeps it from being freed.
 * The hook notices the removal (see delay_target()) and has this work
 * swap the target for DELAY_CGROUP_GONE and drop the reference.
 */
static void delay_cgroup_reap(struct work_struct *work)
{
	struct cgroup *cgrp;

	kernel_param_lock(THIS_MODULE);
	cgrp = rcu_dereference_protected(delay_cgrp, true);
	if (!IS_ERR_OR_NULL(cgrp) && delay_cgroup_dying(cgrp))
		rcu_assign_pointer(delay_cgrp, DELAY_CGROUP_GONE);
	else
		cgrp = NULL;
	delay_cgroup_put(cgrp);
	kernel_param_unlock(THIS_MODULE);
}

static DECLARE_WORK(delay_cgroup_reap_work, delay_cgroup_reap);

static int delay_cgroup_set(const char *val, const struct kernel_param *kp)
{
	struct cgroup *cgrp = NULL, *old;
	char *buf, *path;
	int ret = 0;

	buf = kstrndup(val, PATH_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	path = strim(buf);
	if (*path && *path != '/') {
		ret = -EINVAL;
		goto out;
	}
	if (*path) {
		cgrp = cgroup_get_from_path(path);
		if (IS_ERR(cgrp)) {
			ret = PTR_ERR(cgrp);
			goto out;
		}
	}

	old = rcu_replace_pointer(delay_cgrp, cgrp, true);
	delay_cgroup_put(old);
	memmove(buf, path, strlen(path) + 1);
	swap(buf, delay_cgroup_path);
out:
	kfree(buf);
	return ret;
}

static int delay_cgroup_get(char *buf, const struct kernel_param *kp)
{
	/* The parameter lock keeps the setter and the reaper out. */
	struct cgroup *cgrp = rcu_dereference_protected(delay_cgrp, true);
	bool gone = cgrp == DELAY_CGROUP_GONE ||
		    (cgrp && delay_cgroup_dying(cgrp));

	return sysfs_emit(buf, "%s%s\n", delay_cgroup_path ?: "",
			  gone ? " (deleted)" : "");
}

static void delay_cgroup_free(void *arg)
{
	struct cgroup *cgrp = rcu_replace_pointer(delay_cgrp, NULL, true);

	/*
	 * No hook is registered any more and delay_exit() flushed the
	 * reaper, or the load failed before the hook was: nobody reads it.
	 */
	if (!IS_ERR_OR_NULL(cgrp))
		cgroup_put(cgrp);
	kfree(delay_cgroup_path);
	delay_cgroup_path = NULL;
}

static const struct kernel_param_ops delay_cgroup_ops = {
	.set = delay_cgroup_set,
	.get = delay_cgroup_get,
	.free = delay_cgroup_free,
};
module_param_cb(cgroup, &delay_cgroup_ops, NULL, 0644);
MODULE_PARM_DESC(cgroup, "Delay only this cgroup v2 and its descendants, e.g. /lab/httpd (empty: every task)");

/* One decimal system-call number of the 64-bit table: digits only. */
static int delay_parse_nr(const char *s, unsigned int *nr)
{
	if (!*s || s[strspn(s, "0123456789")] || kstrtouint(s, 10, nr) ||
	    *nr >= NR_syscalls)
		return -EINVAL;
	return 0;
}

/*
 * A parameter's value without its one trailing newline, to be parsed in
 * place and freed; NULL without memory.
 */
static char *delay_value(const char *val)
{
	char *buf = kstrdup(val, GFP_KERNEL);
	size_t len;

	if (buf) {
		len = strlen(buf);
		if (len && buf[len - 1] == '\n')
			buf[len - 1] = '\0';
	}
	return buf;
}

/*
 * A list parameter's write: @change() parses @val (its newline gone) into
 * a copy of the configuration, which is put in force if it returns 0.
 */
static int delay_config_write(const char *val,
			      int (*change)(struct delay_config *cfg, char *list))
{
	struct delay_config *cfg = delay_config_edit();
	char *buf = delay_value(val);
	int ret = -ENOMEM;

	if (buf && cfg)
		ret = change(cfg, buf);
	if (!ret) {
		delay_config_publish(cfg);
		cfg = NULL;
	}
	kfree(cfg);
	kfree(buf);
	return ret;
}

static int delay_change_targets(struct delay_config *cfg, char *list)
{
	unsigned int first, last;
	char *item, *dash;

	cfg->filtered = *list;
	bitmap_zero(cfg->targets, NR_syscalls);
	while (cfg->filtered && (item = strsep(&list, ","))) {
		dash = strchr(item, '-');
		if (dash)
			*dash++ = '\0';
		if (delay_parse_nr(item, &first) ||
		    delay_parse_nr(dash ?: item, &last) || last < first)
			return -EINVAL;
		bitmap_set(cfg->targets, first, last - first + 1);
	}
	return 0;
}

static int delay_syscalls_set(const char *val, const struct kernel_param *kp)
{
	return delay_config_write(val, delay_change_targets);
}

static int delay_syscalls_get(char *buf, const struct kernel_param *kp)
{
	const struct delay_config *cfg = delay_config_now();
	unsigned int nr;
	int len = 0;

	if (cfg->filtered) {
		for_each_set_bit(nr, cfg->targets, NR_syscalls)
			len += sysfs_emit_at(buf, len, "%s%u", len ? "," : "",
					     nr);
	}
	return len + sysfs_emit_at(buf, len, "\n");
}

static const struct kernel_param_ops delay_syscalls_ops = {
	.set = delay_syscalls_set,
	.get = delay_syscalls_get,
};
module_param_cb(syscalls, &delay_syscalls_ops, NULL, 0644);
MODULE_PARM_DESC(syscalls, "Delay only these 64-bit system calls, e.g. 0,1,257 or 0-3 (empty: all)");

/*
 * The 64-bit system calls, from the kernel's own table (Kbuild): each
 * one's name, and whether the x32 table has the same call at the same
 * number (abi "common"; a "64" one is the 64-bit table's alone).
 */
struct delay_call {
	const char *name;
	bool shared;
};

static const struct delay_call delay_table[NR_syscalls] = {
#include "delay_names.h"
};

/* A 64-bit system call by its name or its number. */
static int delay_parse_call(const char *s, unsigned int *nr)
{
	unsigned int i;

	if (!delay_parse_nr(s, nr))
		return 0;
	for (i = 0; i < NR_syscalls; i++) {
		if (delay_table[i].name && !strcmp(delay_table[i].name, s)) {
			*nr = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int delay_change_own(struct delay_config *cfg, char *list)
{
	unsigned int nr, ns;
	char *item, *colon;

	bitmap_zero(cfg->own, NR_syscalls);
	memset(cfg->own_ns, 0, sizeof(cfg->own_ns));
	if (!*list)
		return 0;
	while ((item = strsep(&list, ","))) {
		colon = strchr(item, ':');
		if (!colon)
			return -EINVAL;
		*colon++ = '\0';
		if (delay_parse_call(item, &nr) || !*colon ||
		    colon[strspn(colon, "0123456789")] ||
		    kstrtouint(colon, 10, &ns) || ns > DELAY_NS_MAX ||
		    test_bit(nr, cfg->own) ||
		    bitmap_weight(cfg->own, NR_syscalls) == DELAY_OWN_MAX)
			return -EINVAL;
		__set_bit(nr, cfg->own);
		cfg->own_ns[nr] = ns;
	}
	return 0;
}

static int delay_delays_set(const char *val, const struct kernel_param *kp)
{
	return delay_config_write(val, delay_change_own);
}

static int delay_delays_get(char *buf, const struct kernel_param *kp)
{
	const struct delay_config *cfg = delay_config_now();
	unsigned int nr;
	int len = 0;

	for_each_set_bit(nr, cfg->own, NR_syscalls) {
		len += sysfs_emit_at(buf, len, "%s", len ? "," : "");
		if (delay_table[nr].name)
			len += sysfs_emit_at(buf, len, "%s", delay_table[nr].name);
		else
			len += sysfs_emit_at(buf, len, "%u", nr);
		len += sysfs_emit_at(buf, len, ":%u", cfg->own_ns[nr]);
	}
	return len + sysfs_emit_at(buf, len, "\n");
}

static const struct kernel_param_ops delay_delays_ops = {
	.set = delay_delays_set,
	.get = delay_delays_get,
};
module_param_cb(delays, &delay_delays_ops, NULL, 0644);
MODULE_PARM_DESC(delays, "Delays of their own for some 64-bit system calls, in ns, e.g. read:2000,futex:50000 (empty: none)");

/*
 * The delay for this system call of current, DELAY_NONE if it is not one
 * to count (another cgroup's task, or a call not chosen), else 0 or a
 * setting: the call's own delay if it has one, else every call's.
 */
#define DELAY_NONE U32_MAX

/* Does @cfg delay only some of the calls to delay? */
static bool delay_selective(const struct delay_config *cfg)
{
	return cfg->every > 1 || cfg->first || cfg->ppm < DELAY_PPM;
}

/* SplitMix64's increment, 2^64 divided by the golden ratio, made odd. */
#define DELAY_GAMMA 0x9e3779b97f4a7c15ULL

/*
 * The draw of ppm= for call @i of a sequence: the (i + 1)-th output of
 * SplitMix64 seeded with @seed, its state seed + (i + 1) * DELAY_GAMMA
 * put through the generator's finalizer, whose every output bit depends
 * on every bit of the state.  The same for the same seed and place on
 * every run; another seed is another stream (see the header comment).
 */
static u64 delay_draw(u64 seed, u64 i)
{
	u64 x = seed + (i + 1) * DELAY_GAMMA;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Is the next call to delay of @cfg's sequence (numbered from 0) one to
 * delay?  Under the caller's RCU read lock, which keeps @cfg alive.
 */
static bool delay_choose(struct delay_config *cfg)
{
	u64 seq = atomic64_inc_return(&cfg->seq) - 1;
	bool chosen = (!cfg->first || seq < cfg->first) &&
		      (cfg->every <= 1 || seq % cfg->every == 0) &&
		      (cfg->ppm >= DELAY_PPM ||
		       delay_draw(cfg->seed, seq) % DELAY_PPM < cfg->ppm);

	this_cpu_inc(delay_considered);
	if (chosen)
		this_cpu_inc(delay_chosen);
	return chosen;
}

/*
 * Is the call @nr of table @abi one of the 64-bit table's numbering, the
 * one syscalls= and delays= speak?  The 64-bit table's calls are, and the
 * x32 calls of the numbers the two tables share.
 */
static bool delay_numbered(int nr, enum syscall_hook_abi abi)
{
	unsigned int unr = nr;

	if (unr >= NR_syscalls)
		return false;
	unr = array_index_nospec(unr, NR_syscalls);
	return abi == SYSCALL_HOOK_64 ||
	       (abi == SYSCALL_HOOK_X32 && delay_table[unr].shared);
}

static u32 delay_target(int nr, enum syscall_hook_abi abi, bool at_exit,
			bool *sleep)
{
	struct delay_config *cfg;
	struct cgroup *cgrp;
	unsigned int unr;
	u32 ret = 0;

	rcu_read_lock();
	cfg = rcu_dereference(delay_config);
	/* Only the calls through the configuration's point count. */
	if ((cfg && cfg->at_exit) != at_exit) {
		rcu_read_unlock();
		return DELAY_NONE;
	}
	*sleep = cfg && cfg->sleep;
	cgrp = rcu_dereference(delay_cgrp);
	if (IS_ERR(cgrp)) {
		ret = DELAY_NONE;
	} else if (cgrp && !task_under_cgroup_hierarchy(current, cgrp)) {
		ret = DELAY_NONE;
		/* Checked only here: a removed cgroup holds no task. */
		if (unlikely(delay_cgroup_dying(cgrp)))
			schedule_work(&delay_cgroup_reap_work);
	}
	if (ret || !cfg)
		goto out;
	if (!delay_numbered(nr, abi)) {
		/* The 64-bit table's settings do not apply to the others. */
		ret = cfg->filtered ? DELAY_NONE : cfg->setting;
		goto out;
	}
	unr = array_index_nospec((unsigned int)nr, NR_syscalls);
	if (cfg->filtered && !test_bit(unr, cfg->targets))
		ret = DELAY_NONE;
	else if (test_bit(unr, cfg->own))
		ret = DELAY_NS_MODE | cfg->own_ns[unr];
	else
		ret = cfg->setting;
out:
	/* Of the calls to delay, those not chosen are counted, not delayed. */
	if (ret != DELAY_NONE && delay_setting_delays(ret) && delay_selective(cfg) &&
	    !delay_choose(cfg))
		ret = 0;
	rcu_read_unlock();
	return ret;
}

/*
 * The loop in assembly, so that an iteration is the same three
 * instructions whatever the compiler makes of the code around it: a C
 * loop's register allocation moved with unrelated changes to delay_run()
 * (two more moves an iteration, 5 ns a loop instead of 3 on the virtual
 * clock, 2026-12-01).  These are the three gcc made of the C loop before,
 * so a loop costs what it did in every calibration until then.  Inline,
 * so that one loop costs one iteration and not a call as well.
 */
static __always_inline void delay_spin(unsigned int n)
{
	asm volatile("	test %0, %0\n"
		     "	jz 2f\n"
		     "1:	sub $1, %0\n"
		     "	test %0, %0\n"
		     "	jnz 1b\n"
		     "2:\n"
		     : "+r" (n) : : "cc");
}

/*
 * Spin until @ns have passed since @start; returns the last clock read.
 * No cpu_relax(): the point is to keep the CPU as busy as the loop mode
 * does, and a PAUSE per round would only add to the overshoot.
 */
static __always_inline u64 delay_wait(u64 start, unsigned int ns)
{
	u64 now;

	do {
		now = ktime_get_ns();
	} while (now - start < ns);
	return now;
}

/*
 * The sleeps in progress, and whether new ones may start.  A sleep is a
 * voluntary switch: the kernel's unregistration would take it as proof
 * that the task left the hook.  So each sleep is an SRCU read-side
 * critical section that first checks delay_unloading, and delay_exit()
 * sets it and waits for the sections before it unregisters the hooks;
 * what a task runs in the hook after its sleep does not sleep again, and
 * the unregistration waits for that as it does for a spin.
 */
DEFINE_STATIC_SRCU(delay_srcu);
static bool delay_unloading;

/*
 * Sleep until @ns have passed since @start, the clock after in @end; false
 * if unloading had begun and there was no sleep at all.
 *
 * The kernel allows any wake-up of a sleeping task, a stale wake_q entry
 * of a futex or rwsem wake among them, and schedule_hrtimeout() returns
 * -EINTR when one comes before the timer: the task sleeps again, to the
 * same absolute time, until the timer has fired or unloading began.
 * TASK_UNINTERRUPTIBLE, not TASK_IDLE: the sleeping call looks like a
 * call that waits for a device or a lock, in state D and counted in the
 * load average (README.md, "Spin or sleep").
 */
static bool delay_sleep(u64 start, unsigned int ns, u64 *end)
{
	ktime_t until = ns_to_ktime(start + ns);
	int idx = srcu_read_lock(&delay_srcu);
	bool slept = false;

	while (!READ_ONCE(delay_unloading)) {
		slept = true;
		set_current_state(TASK_UNINTERRUPTIBLE);
		if (!schedule_hrtimeout(&until, HRTIMER_MODE_ABS))
			break;
	}
	srcu_read_unlock(&delay_srcu, idx);
	*end = ktime_get_ns();
	return slept;
}

/*
 * Before the hooks are unregistered: no delay starts, no sleep is left.
 * Each unregistration waits for RCU Tasks, which on a preemptible kernel
 * waits until every task that was running in the kernel has switched
 * voluntarily or been seen by a tick in user mode.  A task whose every
 * system call spins 5 ms in one hook is hardly ever in user mode, so
 * unregistering the other hook while this one kept delaying could wait
 * for minutes (on QEMU's instruction-counted clock, whose ticks can keep
 * step with such a task's calls, for ever: seen on PREEMPT_RT).  A spin
 * already begun ends within its bound; the counters miss nothing that
 * matters, the module being on its way out.
 */
static void delay_stop_delaying(void)
{
	WRITE_ONCE(delay_unloading, true);
	synchronize_srcu(&delay_srcu);
}

/*
 * Runs preemptible (always on PREEMPT_RT; with preemption disabled on a
 * kernel without RCU Tasks) and never sleeps or blocks, as
 * <asm/syscall_hook.h> says, but in delay_sleep() (mode=sleep, which
 * needs RCU Tasks): only this_cpu ops on the counters, which are safe
 * against preemption and migration, no lock, and schedule_work() (raw
 * spinlocks only) to let a removed cgroup go.
 */
static void delay_run(int nr, enum syscall_hook_abi abi, bool at_exit)
{
	unsigned int loops, ns;
	bool sleep = false;
	u32 setting;
	u64 start, end;

	if (READ_ONCE(delay_unloading))
		return;
	setting = delay_target(nr, abi, at_exit, &sleep);
	if (setting == DELAY_NONE)
		return;
	this_cpu_inc(delay_calls);
	if (!delay_setting_delays(setting))
		return;
	loops = delay_setting_loops(setting);
	ns = delay_setting_ns(setting);

	start = ktime_get_ns();
	sleep = sleep && !loops;
	if (loops) {
		delay_spin(loops);
		end = ktime_get_ns();
		this_cpu_add(delay_spun, loops);
	} else if (sleep) {
		/* Unloading began: no delay, nothing to count. */
		if (!delay_sleep(start, ns, &end))
			return;
		this_cpu_inc(delay_slept);
		this_cpu_add(delay_slept_ns, end - start);
	} else {
		end = delay_wait(start, ns);
	}
	this_cpu_inc(delay_delayed);
	this_cpu_add(delay_spun_ns, end - start);
	trace_delay_syscall(nr, abi == SYSCALL_HOOK_IA32, loops, ns, end - start,
			    sleep, at_exit);
}

static void delay_hook(struct pt_regs *regs, int nr, enum syscall_hook_abi abi)
{
	delay_run(nr, abi, false);
}

static void delay_exit_hook(struct pt_regs *regs, int nr,
			    enum syscall_hook_abi abi)
{
	delay_run(nr, abi, true);
}

static unsigned long delay_sum(unsigned long __percpu *counter)
{
	unsigned long sum = 0;
	int cpu;

	/* Other CPUs add to theirs meanwhile: one load each, never torn. */
	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*per_cpu_ptr(counter, cpu));
	return sum;
}

/*
 * The files of stats/.  They sit in the module's own kobject, whose show
 * calls a module_attribute's show with that attribute and the module's
 * kobject.  A counter's file: one show function for all of them, which
 * finds the counter beside the attribute it was called for.
 */
struct delay_stat {
	struct module_attribute attr;
	unsigned long __percpu *counter;
};

static ssize_t delay_stat_show(struct module_attribute *attr,
			       struct module_kobject *mk, char *buf)
{
	const struct delay_stat *stat = container_of(attr, struct delay_stat, attr);

	return sysfs_emit(buf, "%lu\n", delay_sum(stat->counter));
}

#define DELAY_STAT(_name)						\
	static struct delay_stat delay_stat_##_name = {			\
		.attr = __ATTR(_name, 0400, delay_stat_show, NULL),	\
		.counter = &delay_##_name,				\
	}

DELAY_STAT(calls);
DELAY_STAT(delayed);
DELAY_STAT(spun);
DELAY_STAT(spun_ns);
DELAY_STAT(considered);
DELAY_STAT(chosen);
DELAY_STAT(slept);
DELAY_STAT(slept_ns);

static ssize_t mean_ns_show(struct module_attribute *attr,
			    struct module_kobject *mk, char *buf)
{
	/* Read delayed first: a call between the reads only adds to spun_ns. */
	unsigned long delayed = delay_sum(&delay_delayed);
	unsigned long spun_ns = delay_sum(&delay_spun_ns);

	return sysfs_emit(buf, "%lu\n", delayed ? spun_ns / delayed : 0);
}

static ssize_t clock_ns_show(struct module_attribute *attr,
			     struct module_kobject *mk, char *buf)
{
	return sysfs_emit(buf, "%llu\n", delay_clock_ns);
}

static struct module_attribute mean_ns_attr = __ATTR_RO_MODE(mean_ns, 0400);
static struct module_attribute clock_ns_attr = __ATTR_RO_MODE(clock_ns, 0400);

static struct attribute *delay_stats_attrs[] = {
	&delay_stat_calls.attr.attr,
	&delay_stat_delayed.attr.attr,
	&delay_stat_spun.attr.attr,
	&delay_stat_spun_ns.attr.attr,
	&mean_ns_attr.attr,
	&clock_ns_attr.attr,
	&delay_stat_considered.attr.attr,
	&delay_stat_chosen.attr.attr,
	&delay_stat_slept.attr.attr,
	&delay_stat_slept_ns.attr.attr,
	NULL,
};

static const struct attribute_group delay_stats_group = {
	.name = "stats",
	.attrs = delay_stats_attrs,
};

/* The minimum filters out the tries an interrupt or preemption lengthened. */
static u64 __init delay_measure_clock(void)
{
	u64 t0, t1, best = U64_MAX;
	int i;

	for (i = 0; i < DELAY_CLOCK_TRIES; i++) {
		t0 = ktime_get_ns();
		t1 = ktime_get_ns();
		best = min(best, t1 - t0);
	}
	return best;
}

static int __init delay_init(void)
{
	u32 setting;
	int ret;

	delay_clock_ns = delay_measure_clock();

	ret = sysfs_create_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	if (ret)
		return ret;

	ret = syscall_hook_register(delay_hook);
	if (ret) {
		pr_err("cannot register the syscall hook: %d\n", ret);
		goto remove_stats;
	}
	ret = syscall_exit_hook_register(delay_exit_hook);
	if (ret) {
		pr_err("cannot register the syscall exit hook: %d\n", ret);
		goto unregister;
	}
	/* The parameters' files exist already: a write may race this. */
	kernel_param_lock(THIS_MODULE);
	setting = delay_config_now()->setting;
	pr_info("delaying the system calls of %s by %u loops, %u ns; clock read pair %llu ns\n",
		delay_cgroup_path && *delay_cgroup_path ? delay_cgroup_path :
		"every task", delay_setting_loops(setting),
		delay_setting_ns(setting), delay_clock_ns);
	kernel_param_unlock(THIS_MODULE);
	return 0;

unregister:
	delay_stop_delaying();
	syscall_hook_unregister(delay_hook);
	/* The hook may have run: let the reaper finish. */
	cancel_work_sync(&delay_cgroup_reap_work);
remove_stats:
	sysfs_remove_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	return ret;
}

/* The target and the filter are the parameters' to free (see above). */
static void __exit delay_exit(void)
{
	delay_stop_delaying();
	syscall_exit_hook_unregister(delay_exit_hook);
	syscall_hook_unregister(delay_hook);
	/* The hook was its only source: it cannot come back now. */
	cancel_work_sync(&delay_cgroup_reap_work);
	sysfs_remove_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
}

module_init(delay_init);
module_exit(delay_exit);

MODULE_DESCRIPTION("Delay system calls by a tunable spin or sleep, at entry or exit");
MODULE_AUTHOR("Kernel Lab <lab@kernel-lab.invalid>");
MODULE_LICENSE("GPL");
