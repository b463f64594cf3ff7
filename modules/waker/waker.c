// SPDX-License-Identifier: GPL-2.0
/*
 * waker - wake a task up on demand (test helper)
 *
 * Writing a thread ID to /sys/module/waker/parameters/wake calls
 * wake_up_process() on that task once, wherever it sleeps: the wake-up
 * that a stale wake_q entry of a futex or rwsem wake gives a task that
 * has gone to sleep somewhere else since, which the kernel allows and
 * every sleep must survive.  The tests use it to show that the delay
 * module's sleeps last their time.
 *
 * /sys/module/waker/parameters/wake  (wo, root)
 *	A thread ID in the writer's PID namespace, decimal: anything else is
 *	refused with -EINVAL, an ID that names no task with -ESRCH, a kernel
 *	thread with -EPERM (the tests wake their own children; a kernel
 *	thread has no business being woken from userspace, even by root).
 *
 * /sys/module/waker/parameters/woken  (ro, root)
 *	How many of the wake-ups found their task asleep and woke it.
 */

#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/sysfs.h>

static atomic_long_t waker_woken = ATOMIC_LONG_INIT(0);

static int waker_wake_set(const char *val, const struct kernel_param *kp)
{
	struct task_struct *task;
	struct pid *pid;
	int tid;

	if (kstrtoint(val, 10, &tid) || tid <= 0)
		return -EINVAL;
	pid = find_get_pid(tid);
	task = get_pid_task(pid, PIDTYPE_PID);
	put_pid(pid);
	if (!task)
		return -ESRCH;
	if (task->flags & PF_KTHREAD) {
		put_task_struct(task);
		return -EPERM;
	}
	if (wake_up_process(task))
		atomic_long_inc(&waker_woken);
	put_task_struct(task);
	return 0;
}

static const struct kernel_param_ops waker_wake_ops = {
	.set = waker_wake_set,
};
module_param_cb(wake, &waker_wake_ops, NULL, 0200);
MODULE_PARM_DESC(wake, "Wake this thread up once (a thread ID)");

static int waker_woken_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&waker_woken));
}

static const struct kernel_param_ops waker_woken_ops = {
	.get = waker_woken_get,
};
module_param_cb(woken, &waker_woken_ops, NULL, 0400);
MODULE_PARM_DESC(woken, "Wake-ups that found their task asleep");

MODULE_DESCRIPTION("Wake a task up on demand (test helper)");
MODULE_LICENSE("GPL");
