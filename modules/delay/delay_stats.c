// SPDX-License-Identifier: GPL-2.0
/* The delay module's statistics: per-CPU counters and the files of stats/. */

#include <linux/cpumask.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>

#include "delay.h"

/* Back-to-back clock read pairs timed at load time for clock_ns. */
#define DELAY_CLOCK_TRIES 1000

DEFINE_PER_CPU(struct delay_counters, delay_counters);
struct delay_call_counts __percpu *delay_call_counts;

u64 delay_clock_ns;

/* Counter @c summed over the CPUs. */
static unsigned long delay_sum(enum delay_counter c)
{
	unsigned long sum = 0;
	int cpu;

	/* Other CPUs add to theirs meanwhile: one load each, never torn. */
	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(&delay_counters, cpu)->n[c]);
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
	enum delay_counter counter;
};

static ssize_t delay_stat_show(struct module_attribute *attr,
			       struct module_kobject *mk, char *buf)
{
	const struct delay_stat *stat = container_of(attr, struct delay_stat, attr);

	return sysfs_emit(buf, "%lu\n", delay_sum(stat->counter));
}

#define DELAY_STAT(_name, _counter)					\
	static struct delay_stat delay_stat_##_name = {			\
		.attr = __ATTR(_name, 0400, delay_stat_show, NULL),	\
		.counter = _counter,					\
	}

DELAY_STAT(calls, DELAY_CALLS);
DELAY_STAT(delayed, DELAY_DELAYED);
DELAY_STAT(spun, DELAY_SPUN);
DELAY_STAT(spun_ns, DELAY_SPUN_NS);
DELAY_STAT(considered, DELAY_CONSIDERED);
DELAY_STAT(chosen, DELAY_CHOSEN);
DELAY_STAT(slept, DELAY_SLEPT);
DELAY_STAT(slept_ns, DELAY_SLEPT_NS);

static ssize_t mean_ns_show(struct module_attribute *attr,
			    struct module_kobject *mk, char *buf)
{
	/*
	 * Read delayed first: the hook adds to spun_ns before delayed, so a
	 * call between the reads only adds to spun_ns.
	 */
	unsigned long delayed = delay_sum(DELAY_DELAYED);
	unsigned long spun_ns = delay_sum(DELAY_SPUN_NS);

	return sysfs_emit(buf, "%lu\n", delayed ? spun_ns / delayed : 0);
}

static ssize_t clock_ns_show(struct module_attribute *attr,
			     struct module_kobject *mk, char *buf)
{
	return sysfs_emit(buf, "%llu\n", delay_clock_ns);
}

static struct module_attribute mean_ns_attr = __ATTR_RO_MODE(mean_ns, 0400);
static struct module_attribute clock_ns_attr = __ATTR_RO_MODE(clock_ns, 0400);

/* Slot @slot of delay_call_counts summed over the CPUs. */
static u64 delay_call_sum(unsigned int slot)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(delay_call_counts, cpu)->n[slot]);
	return sum;
}

/*
 * stats/by_call: the counts of delay_call_counts as an array of u64 in
 * the CPU's byte order, indexed by call number, the calls of no 64-bit
 * number last.  Binary, because one line a call would not fit the page a
 * text attribute has.  sysfs has already cut @off and @count to the
 * file's size; a read may start and end inside a count.
 */
static ssize_t by_call_read(struct file *file, struct kobject *kobj,
			    struct bin_attribute *attr, char *buf, loff_t off,
			    size_t count)
{
	size_t done = 0;

	while (done < count) {
		loff_t pos = off + done;
		size_t skip = pos % sizeof(u64);
		size_t n = min(count - done, sizeof(u64) - skip);
		u64 sum = delay_call_sum(array_index_nospec(pos / sizeof(u64),
							    DELAY_BY_CALL_OTHER + 1));

		memcpy(buf + done, (char *)&sum + skip, n);
		done += n;
	}
	return done;
}

static BIN_ATTR_ADMIN_RO(by_call, sizeof(u64) * (DELAY_BY_CALL_OTHER + 1));

static struct bin_attribute *delay_stats_bin_attrs[] = {
	&bin_attr_by_call,
	NULL,
};

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

const struct attribute_group delay_stats_group = {
	.name = "stats",
	.attrs = delay_stats_attrs,
	.bin_attrs = delay_stats_bin_attrs,
};

/* The minimum filters out the tries an interrupt or preemption lengthened. */
u64 __init delay_measure_clock(void)
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
