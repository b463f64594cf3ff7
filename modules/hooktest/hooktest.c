// SPDX-License-Identifier: GPL-2.0
/*
 * hooktest - a second user of the syscall entry hook, for the tests
 *
 * Loading registers an empty hook and fails with the error
 * syscall_hook_register() returned, so loading it while 'delay' is loaded
 * shows that a second registration is refused with -EBUSY, and loading it
 * alone shows that the hook is free again after 'delay' is removed.
 * With exit=1 it does the same with the exit hook
 * (syscall_exit_hook_register()).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <asm/syscall_hook.h>

static bool exit_hook;
module_param_named(exit, exit_hook, bool, 0444);
MODULE_PARM_DESC(exit, "Register the exit hook instead of the entry hook");

static void hooktest_hook(struct pt_regs *regs, int nr,
			  enum syscall_hook_abi abi)
{
}

static int __init hooktest_init(void)
{
	int ret;

	if (exit_hook)
		ret = syscall_exit_hook_register(hooktest_hook);
	else
		ret = syscall_hook_register(hooktest_hook);
	if (ret)
		pr_info("%s: %d\n", exit_hook ? "syscall_exit_hook_register" :
			"syscall_hook_register", ret);
	return ret;
}

static void __exit hooktest_exit(void)
{
	if (exit_hook)
		syscall_exit_hook_unregister(hooktest_hook);
	else
		syscall_hook_unregister(hooktest_hook);
}

module_init(hooktest_init);
module_exit(hooktest_exit);

MODULE_DESCRIPTION("Register an empty syscall hook (test helper)");
MODULE_LICENSE("GPL");
