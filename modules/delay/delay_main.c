// SPDX-License-Identifier: GPL-2.0
/*
 * delay - add a tunable amount of work to every system call
 *
 * Registers the x86 system-call entry and exit hooks
 * (CONFIG_X86_SYSCALL_HOOK) and, on each system call of the targeted
 * tasks, spins a number of loop iterations or spins or sleeps a number of
 * nanoseconds, so that userspace can study how throughput depends on
 * system-call latency; it counts and times what it adds (stats/, the
 * delay:delay_syscall trace event).  This file holds the hook and
 * init/exit; delay_config.c, delay_targets.c and delay_stats.c the rest.
 *
 * The interface (parameters, statistics, examples) is described in
 * modules/delay/README.md.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nospec.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/srcu.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <asm/syscall_hook.h>
#include <asm/unistd.h>

#include "delay.h"

#define CREATE_TRACE_POINTS
#include "delay_trace.h"

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
 * every run; another seed is another stream (see README.md).
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

	this_cpu_inc(delay_counters.n[DELAY_CONSIDERED]);
	if (chosen)
		this_cpu_inc(delay_counters.n[DELAY_CHOSEN]);
	return chosen;
}

/*
 * Is the call @nr of table @abi one of the 64-bit table's numbering, the
 * one syscalls= and delays= speak?  The 64-bit table's calls are, and the
 * x32 calls of the numbers the two tables share.  A number in one of the
 * table's gaps, which the kernel dispatches to sys_ni_syscall() as a call
 * of that table (<asm/syscall_hook.h>), names no call and is not.
 */
static bool delay_numbered(int nr, enum syscall_hook_abi abi)
{
	unsigned int unr = nr;

	if (unr >= NR_syscalls)
		return false;
	unr = array_index_nospec(unr, NR_syscalls);
	return (abi == SYSCALL_HOOK_64 && delay_table[unr].name) ||
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
 * clock).  These are the three gcc made of the C loop before,
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
	unsigned int loops, ns, slot = DELAY_BY_CALL_OTHER;
	bool sleep = false;
	u32 setting;
	u64 start, end;

	if (READ_ONCE(delay_unloading))
		return;
	setting = delay_target(nr, abi, at_exit, &sleep);
	if (setting == DELAY_NONE)
		return;
	this_cpu_inc(delay_counters.n[DELAY_CALLS]);
	if (delay_numbered(nr, abi))
		slot = array_index_nospec((unsigned int)nr, NR_syscalls);
	this_cpu_inc(delay_call_counts->n[slot]);
	if (!delay_setting_delays(setting))
		return;
	loops = delay_setting_loops(setting);
	ns = delay_setting_ns(setting);

	start = ktime_get_ns();
	sleep = sleep && !loops;
	if (loops) {
		delay_spin(loops);
		end = ktime_get_ns();
		this_cpu_add(delay_counters.n[DELAY_SPUN], loops);
	} else if (sleep) {
		/* Unloading began: no delay, nothing to count. */
		if (!delay_sleep(start, ns, &end))
			return;
		this_cpu_inc(delay_counters.n[DELAY_SLEPT]);
		this_cpu_add(delay_counters.n[DELAY_SLEPT_NS], end - start);
	} else {
		end = delay_wait(start, ns);
	}
	/* spun_ns first: a reader that sums delayed first never reads it short. */
	this_cpu_add(delay_counters.n[DELAY_SPUN_NS], end - start);
	this_cpu_inc(delay_counters.n[DELAY_DELAYED]);
	trace_delay_syscall(nr, abi, loops, ns, end - start, sleep, at_exit);
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

static int __init delay_init(void)
{
	u32 setting;
	int ret;

	delay_clock_ns = delay_measure_clock();

	/*
	 * Dynamic per-CPU memory: a static array this size would take half
	 * of the reserve that all modules' static per-CPU data share.
	 */
	delay_call_counts = alloc_percpu(struct delay_call_counts);
	if (!delay_call_counts)
		return -ENOMEM;

	ret = sysfs_create_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	if (ret)
		goto free_counts;

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
free_counts:
	free_percpu(delay_call_counts);
	return ret;
}

/*
 * The target and the filter are the parameters' to free (delay_cgroup_free(),
 * delay_config_free()).
 */
static void __exit delay_exit(void)
{
	delay_stop_delaying();
	/* Both at once: one wait for the tasks still in either hook. */
	syscall_hooks_unregister(delay_hook, delay_exit_hook);
	/* The hook was its only source: it cannot come back now. */
	cancel_work_sync(&delay_cgroup_reap_work);
	/* sysfs drains the readers of stats/ before the group is gone. */
	sysfs_remove_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	free_percpu(delay_call_counts);
}

module_init(delay_init);
module_exit(delay_exit);

MODULE_DESCRIPTION("Delay system calls by a tunable spin or sleep, at entry or exit");
MODULE_AUTHOR("Kernel Lab <lab@kernel-lab.invalid>");
MODULE_LICENSE("GPL");
