// SPDX-License-Identifier: GPL-2.0
/* The delay module's targets: cgroup=, syscalls= and delays=. */

#include <linux/bitmap.h>
#include <linux/cgroup.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/kstrtox.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
#include <asm/unistd.h>

#include "delay.h"

/*
 * At most this many calls with a delay of their own: what delays= reads
 * back fits in its page with the longest names.
 */
#define DELAY_OWN_MAX 64

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
struct cgroup __rcu *delay_cgrp;
char *delay_cgroup_path;

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
	cgrp = rcu_dereference_protected(delay_cgrp, delay_param_locked());
	if (!IS_ERR_OR_NULL(cgrp) && delay_cgroup_dying(cgrp))
		rcu_assign_pointer(delay_cgrp, DELAY_CGROUP_GONE);
	else
		cgrp = NULL;
	delay_cgroup_put(cgrp);
	kernel_param_unlock(THIS_MODULE);
}

DECLARE_WORK(delay_cgroup_reap_work, delay_cgroup_reap);

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

	old = rcu_replace_pointer(delay_cgrp, cgrp, delay_param_locked());
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
	struct cgroup *cgrp;
	bool gone;

	cgrp = rcu_dereference_protected(delay_cgrp, delay_param_locked());
	gone = cgrp == DELAY_CGROUP_GONE || (cgrp && delay_cgroup_dying(cgrp));

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

/* Made by Kbuild from the kernel's table (see struct delay_call). */
const struct delay_call delay_table[NR_syscalls] = {
#include "delay_names.h"
};

/*
 * A 64-bit system call by its name or its decimal number (digits only).
 * A number in one of the table's gaps names no call: the hook never
 * counts it as one (delay_numbered()), so no parameter takes it.
 */
static int delay_parse_call(const char *s, unsigned int *nr)
{
	unsigned int i;

	if (*s && !s[strspn(s, "0123456789")]) {
		if (kstrtouint(s, 10, nr) || *nr >= NR_syscalls ||
		    !delay_table[*nr].name)
			return -EINVAL;
		return 0;
	}
	for (i = 0; i < NR_syscalls; i++) {
		if (delay_table[i].name && !strcmp(delay_table[i].name, s)) {
			*nr = i;
			return 0;
		}
	}
	return -EINVAL;
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

/*
 * syscalls=: items CALL or FIRST-LAST, each a name or a number; a range
 * is the calls numbered from FIRST to LAST, the gaps between left out.
 */
static int delay_change_targets(struct delay_config *cfg, char *list)
{
	unsigned int first, last, nr;
	char *item, *dash;

	cfg->filtered = *list;
	bitmap_zero(cfg->targets, NR_syscalls);
	while (cfg->filtered && (item = strsep(&list, ","))) {
		dash = strchr(item, '-');
		if (dash)
			*dash++ = '\0';
		if (delay_parse_call(item, &first) ||
		    delay_parse_call(dash ?: item, &last) || last < first)
			return -EINVAL;
		for (nr = first; nr <= last; nr++) {
			if (delay_table[nr].name)
				__set_bit(nr, cfg->targets);
		}
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
MODULE_PARM_DESC(syscalls, "Delay only these 64-bit system calls, by name or number, e.g. read,write,openat or 0-3 (empty: all)");

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
