// SPDX-License-Identifier: GPL-2.0
/*
 * hooktest - a second user of the syscall entry hook, for the tests
 *
 * Loading registers an empty hook and fails with the error
 * syscall_hook_register() returned, so loading it while 'delay' is loaded
 * shows that a second registration is refused with -EBUSY, and loading it
 * alone shows that the hook is free again after 'delay' is removed.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <asm/syscall_hook.h>

static void hooktest_hook(struct pt_regs *regs, int nr)
{
}

static int __init hooktest_init(void)
{
	int ret = syscall_hook_register(hooktest_hook);

	if (ret)
		pr_info("syscall_hook_register: %d\n", ret);
	return ret;
}

static void __exit hooktest_exit(void)
{
	syscall_hook_unregister(hooktest_hook);
}

module_init(hooktest_init);
module_exit(hooktest_exit);

MODULE_DESCRIPTION("Register an empty syscall hook (test helper)");
MODULE_LICENSE("GPL");
