// SPDX-License-Identifier: GPL-2.0
/* The delay module's configuration: its publication and scalar parameters. */

#include <linux/array_size.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/stringify.h>
#include <linux/sysfs.h>

#include "delay.h"

struct delay_config __rcu *delay_config;

/* The configuration in force; only under the parameter lock. */
const struct delay_config *delay_config_now(void)
{
	static const struct delay_config none = { .ppm = DELAY_PPM };
	const struct delay_config *cfg;

	cfg = rcu_dereference_protected(delay_config, delay_param_locked());
	return cfg ?: &none;
}

/* A copy of the configuration in force to change, or NULL. */
struct delay_config *delay_config_edit(void)
{
	struct delay_config *cfg = kmemdup(delay_config_now(), sizeof(*cfg), GFP_KERNEL);

	/* Every configuration counts its calls from the first. */
	if (cfg)
		atomic64_set(&cfg->seq, 0);
	return cfg;
}

/* Put @cfg in force, once no hook can be reading the one it replaces. */
void delay_config_publish(struct delay_config *cfg)
{
	struct delay_config *old;

	old = rcu_replace_pointer(delay_config, cfg, delay_param_locked());

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
