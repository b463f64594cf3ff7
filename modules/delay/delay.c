// SPDX-License-Identifier: GPL-2.0
/*
 * delay - add a tunable amount of work to every system call
 *
 * Registers the x86 system-call entry hook (CONFIG_X86_SYSCALL_HOOK) and
 * spins a fixed number of loop iterations on each system call, so that
 * userspace can study how throughput depends on system-call latency.
 *
 * /sys/module/delay/parameters/loops  (rw, root)
 *	Iterations spun per system call, 0 to DELAY_LOOPS_MAX.  A negative,
 *	non-numeric or too large value is refused with -EINVAL and the old
 *	value stays.  May also be given at load time: insmod delay.ko loops=N.
 *
 * /sys/module/delay/parameters/cgroup  (rw, root)
 *	Delay only the tasks of this cgroup v2 and of its descendants, named
 *	as in /proc/PID/cgroup: a path from the cgroup2 root such as
 *	"/lab/httpd".  Empty (the default) delays every task.  A path that
 *	does not start with '/' is refused with -EINVAL, one that names no
 *	cgroup with -ENOENT (-ENOTDIR for a file); the old target stays.
 *
 * /sys/module/delay/stats/calls  (ro)
 *	System calls of targeted tasks that went through the hook since the
 *	module was loaded, counted at any loop count, 0 included.
 *
 * /sys/module/delay/stats/spun  (ro)
 *	Loop iterations spun since the module was loaded.
 *
 * Unloading unregisters the hook; the kernel waits until no task is still
 * spinning in it before the module's code goes away.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <asm/syscall_hook.h>

/*
 * The cap keeps one system call's delay to a few milliseconds even under
 * software emulation (about 1 ns per iteration on current hardware, a few
 * ns under QEMU TCG), far below anything a lockup detector reacts to.
 */
#define DELAY_LOOPS_MAX 1000000U

static unsigned int delay_loops;

static DEFINE_PER_CPU(unsigned long, delay_calls);
static DEFINE_PER_CPU(unsigned long, delay_spun);

static int delay_loops_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;

	if (kstrtouint(val, 0, &n) || n > DELAY_LOOPS_MAX)
		return -EINVAL;
	WRITE_ONCE(delay_loops, n);
	return 0;
}

static const struct kernel_param_ops delay_loops_ops = {
	.set = delay_loops_set,
	.get = param_get_uint,
};
module_param_cb(loops, &delay_loops_ops, &delay_loops, 0644);
MODULE_PARM_DESC(loops, "Loop iterations spun per system call (0-"
		 __stringify(DELAY_LOOPS_MAX) ")");

/*
 * The target cgroup, NULL for every task.  The hook reads it under RCU;
 * the setter, serialized with the getter by the module's parameter lock,
 * publishes a new one, waits for readers of the old one and drops it.
 * delay_cgroup_path is the path as the user wrote it, for reading back.
 */
static struct cgroup __rcu *delay_cgrp;
static char *delay_cgroup_path;

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
	if (old) {
		synchronize_rcu();
		cgroup_put(old);
	}
	memmove(buf, path, strlen(path) + 1);
	swap(buf, delay_cgroup_path);
out:
	kfree(buf);
	return ret;
}

static int delay_cgroup_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", delay_cgroup_path ?: "");
}

static const struct kernel_param_ops delay_cgroup_ops = {
	.set = delay_cgroup_set,
	.get = delay_cgroup_get,
};
module_param_cb(cgroup, &delay_cgroup_ops, NULL, 0644);
MODULE_PARM_DESC(cgroup, "Delay only this cgroup v2 and its descendants, e.g. /lab/httpd (empty: every task)");

/* Is current one of the tasks to delay? */
static bool delay_targets_current(void)
{
	struct cgroup *cgrp;
	bool ret = true;

	rcu_read_lock();
	cgrp = rcu_dereference(delay_cgrp);
	if (cgrp)
		ret = task_under_cgroup_hierarchy(current, cgrp);
	rcu_read_unlock();
	return ret;
}

/*
 * The empty asm makes the counter opaque to the compiler, so it can neither
 * drop the loop nor fold it into one subtraction, and each iteration costs
 * the same decrement and branch.  Inline, so that one loop costs one
 * iteration and not a call as well.
 */
static __always_inline void delay_spin(unsigned int n)
{
	while (n) {
		n--;
		asm volatile("" : "+r" (n));
	}
}

static void delay_hook(struct pt_regs *regs, int nr)
{
	unsigned int n;

	if (!delay_targets_current())
		return;
	n = READ_ONCE(delay_loops);
	this_cpu_inc(delay_calls);
	if (!n)
		return;
	this_cpu_add(delay_spun, n);
	delay_spin(n);
}

static unsigned long delay_sum(unsigned long __percpu *counter)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(counter, cpu);
	return sum;
}

static ssize_t calls_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%lu\n", delay_sum(&delay_calls));
}

static ssize_t spun_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%lu\n", delay_sum(&delay_spun));
}

static struct kobj_attribute calls_attr = __ATTR_RO(calls);
static struct kobj_attribute spun_attr = __ATTR_RO(spun);

static struct attribute *delay_stats_attrs[] = {
	&calls_attr.attr,
	&spun_attr.attr,
	NULL,
};

static const struct attribute_group delay_stats_group = {
	.name = "stats",
	.attrs = delay_stats_attrs,
};

static int __init delay_init(void)
{
	int ret;

	ret = sysfs_create_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	if (ret)
		return ret;

	ret = syscall_hook_register(delay_hook);
	if (ret) {
		pr_err("cannot register the syscall hook: %d\n", ret);
		goto remove_stats;
	}
	pr_info("delaying the system calls of %s by %u loops\n",
		delay_cgroup_path && *delay_cgroup_path ? delay_cgroup_path :
		"every task", delay_loops);
	return 0;

remove_stats:
	sysfs_remove_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	return ret;
}

static void __exit delay_exit(void)
{
	struct cgroup *cgrp;

	syscall_hook_unregister(delay_hook);
	sysfs_remove_group(&THIS_MODULE->mkobj.kobj, &delay_stats_group);
	/* No hook runs any more: nobody can be reading the target. */
	cgrp = rcu_dereference_protected(delay_cgrp, true);
	if (cgrp)
		cgroup_put(cgrp);
	kfree(delay_cgroup_path);
}

module_init(delay_init);
module_exit(delay_exit);

MODULE_DESCRIPTION("Spin a tunable delay loop on every system call");
MODULE_AUTHOR("Kernel Lab <lab@kernel-lab.invalid>");
MODULE_LICENSE("GPL");
