// SPDX-License-Identifier: GPL-2.0
/*
 * msgq - a message bus of four bounded queues, each a character device
 *
 * /dev/bus_in_q, /dev/bus_out_q1, /dev/bus_out_q2 and /dev/bus_out_q3 are
 * four independent queues of whole messages, each with its own ring, lock
 * and wait queues (the names are only a convention: userspace routes).
 * The driver stamps each message when it is queued and tells the reader
 * how long it waited, in ns and in TSC cycles, so that userspace can study
 * queueing time; the buffers come from kmalloc() per message or from a
 * ring allocated once at load time, to compare the two.  The structs are
 * in uapi/msgq.h.  The devices are root only (0600).
 *
 * write()
 *	Queues one message: the buffer is a struct msgq_msg (source,
 *	destination) followed by 0 to MSGQ_MAX_PAYLOAD bytes of payload,
 *	all of it one message.  Returns the whole count.  A buffer shorter
 *	than struct msgq_msg, a zero-length write included, is -EINVAL; a
 *	payload above MSGQ_MAX_PAYLOAD is -EMSGSIZE; an unreadable buffer
 *	-EFAULT.  A full queue blocks until there is room, or is -EAGAIN
 *	with O_NONBLOCK.
 * read()
 *	Takes the oldest message and returns a struct msgq_record (its
 *	sequence number in this queue, source, destination, when it was
 *	queued and for how long, payload length, depth) followed by the
 *	payload: sizeof(struct msgq_record) + length bytes.  A buffer too
 *	small for the oldest message's record is -EMSGSIZE and the message
 *	stays queued (smaller than struct msgq_record: without waiting);
 *	an unwritable one is -EFAULT, and the message stays queued too.  An
 *	empty queue blocks until a message comes, or is -EAGAIN with
 *	O_NONBLOCK.
 * poll()
 *	Readable while a message is queued, writable while there is room,
 *	either only while no other caller holds the queue's lock: that is,
 *	while a non-blocking read() or write() would not be -EAGAIN.  Every
 *	release of the lock wakes the pollers.
 *
 * A signal interrupts a blocked read() or write() (-ERESTARTSYS: EINTR,
 * or a restart under SA_RESTART), and so it does while the call waits
 * for the queue's lock.  With O_NONBLOCK a call never waits for the lock
 * either: while another caller holds it, the call is -EAGAIN.  Each
 * queue's mutex is held across the copy of a message to userspace,
 * which takes the message off the queue only once it has been copied:
 * with any number of readers and writers, every message is delivered
 * exactly once, in the order the writes queued it.
 * Waiters are not exclusive: every waiter is woken and the first to take
 * the lock wins; the others wait again.
 *
 * /sys/module/msgq/parameters/capacity  (load time only, ro after)
 *	Messages each queue holds, 1 to MSGQ_CAPACITY_MAX (4096), default
 *	MSGQ_CAPACITY_DEFAULT (10).  Anything else fails the load with
 *	-EINVAL.
 *
 * /sys/module/msgq/parameters/alloc  (load time only, ro after)
 *	Where message buffers come from, "dynamic" (the default) or
 *	"static"; anything else fails the load with -EINVAL.
 *	dynamic: write() kmalloc()s the message and copies it in before it
 *	takes the queue's lock; read() kfree()s it after it dropped the lock.
 *	static: each queue allocates capacity buffers of MSGQ_MAX_PAYLOAD
 *	bytes at load time (4 x capacity x 4 KiB, 160 KiB by default and
 *	64 MiB at the cap), and write() copies the message into the free one
 *	while it holds the queue's lock.
 *
 * /sys/class/msgq/QUEUE/stats/  (ro; QUEUE is bus_in_q, bus_out_q1 ...)
 *	enqueued	messages queued since load
 *	dequeued	messages handed to a reader since load
 *	blocked_writers	write() calls that found the queue full and slept
 *			(each counted once, however often it woke)
 *	blocked_readers	read() calls that found the queue empty and slept
 *	depth		messages queued now: enqueued - dequeued
 *	high_water	the largest depth since load
 *	allocated	message buffers kmalloc()ed and not yet freed: the
 *			queued ones and those of writes in progress; always
 *			0 with alloc=static, and 0 once a dynamic queue is
 *			empty and idle
 *
 * Trace events msgq:msgq_enqueue and msgq:msgq_dequeue (msgq_trace.h),
 * one per message and queue.
 *
 * The clock is ktime_get_ns(), CLOCK_MONOTONIC as the lab's tools read it;
 * the cycle counts come from get_cycles(), which is rdtsc on x86.  A reader
 * on another CPU than the writer sees the difference of two CPUs' TSCs,
 * which the kernel has checked to be synchronized if it uses the TSC as
 * its clocksource.
 *
 * The module cannot be unloaded while a device is open; unloading frees
 * every message still queued.  Loading allocates everything and makes the
 * devices, and only then makes them openable, in one step that is the
 * last to fail: a failed load never had a device anyone could open.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

/*
 * uapi/msgq.h under a name in this folder: modules/Makefile copies only
 * the folder's own files into the build.
 */
#include "msgq_uapi.h"

#define CREATE_TRACE_POINTS
#include "msgq_trace.h"

enum msgq_alloc_mode {
	MSGQ_ALLOC_DYNAMIC,
	MSGQ_ALLOC_STATIC,
};

static const char * const msgq_alloc_names[] = {
	[MSGQ_ALLOC_DYNAMIC] = "dynamic",
	[MSGQ_ALLOC_STATIC] = "static",
};

static const char * const msgq_names[MSGQ_QUEUES] = {
	MSGQ_IN_NAME, MSGQ_OUT_PREFIX "1", MSGQ_OUT_PREFIX "2",
	MSGQ_OUT_PREFIX "3",
};

/* Both are set while the module loads and never change after. */
static unsigned int msgq_capacity = MSGQ_CAPACITY_DEFAULT;
static enum msgq_alloc_mode msgq_alloc = MSGQ_ALLOC_DYNAMIC;

/* One message: a kmalloc()ed buffer, or one of a static ring's slots. */
struct msgq_buf {
	u64 seq;
	u64 enqueue_ns;
	u64 enqueue_cycles;
	u32 source;
	u32 destination;
	u32 length;
	u8 payload[];
};

#define MSGQ_SLOT_SIZE struct_size_t(struct msgq_buf, payload, MSGQ_MAX_PAYLOAD)

/*
 * One queue.  Under @lock: the ring (@head, @count), @seq and the
 * counters; @count and the counters are also read without it (poll(),
 * the wait conditions, sysfs), so they are written with WRITE_ONCE().
 * In static mode every @ring entry points at its own slot in @slots for
 * good; in dynamic mode the queued entries point at kmalloc()ed buffers
 * and the others are NULL.
 */
struct msgq_queue {
	const char *name;
	struct mutex lock;		/* the ring, seq, the counters */
	wait_queue_head_t readers;	/* wait for a message */
	wait_queue_head_t writers;	/* wait for room */
	wait_queue_head_t pollers;	/* poll(): woken on every unlock */
	struct msgq_buf **ring;
	void *slots;
	unsigned int head;
	unsigned int count;
	u64 seq;
	u64 enqueued;
	u64 dequeued;
	u64 blocked_writers;
	u64 blocked_readers;
	unsigned int high_water;
	atomic_t allocated;
};

static struct msgq_queue msgq_queues[MSGQ_QUEUES];

/* The devices: one region of MSGQ_QUEUES minors, one cdev for them all. */
static dev_t msgq_devt;
static struct cdev msgq_cdev;
static struct device *msgq_devices[MSGQ_QUEUES];

static int msgq_capacity_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;

	if (kstrtouint(val, 0, &n) || n < 1 || n > MSGQ_CAPACITY_MAX)
		return -EINVAL;
	*(unsigned int *)kp->arg = n;
	return 0;
}

static const struct kernel_param_ops msgq_capacity_ops = {
	.set = msgq_capacity_set,
	.get = param_get_uint,
};
module_param_cb(capacity, &msgq_capacity_ops, &msgq_capacity, 0444);
MODULE_PARM_DESC(capacity, "Messages each queue holds (1-"
		 __stringify(MSGQ_CAPACITY_MAX) ", default "
		 __stringify(MSGQ_CAPACITY_DEFAULT) "), at load time");

static int msgq_alloc_set(const char *val, const struct kernel_param *kp)
{
	int mode = sysfs_match_string(msgq_alloc_names, val);

	if (mode < 0)
		return -EINVAL;
	msgq_alloc = mode;
	return 0;
}

static int msgq_alloc_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", msgq_alloc_names[msgq_alloc]);
}

static const struct kernel_param_ops msgq_alloc_ops = {
	.set = msgq_alloc_set,
	.get = msgq_alloc_get,
};
module_param_cb(alloc, &msgq_alloc_ops, NULL, 0444);
MODULE_PARM_DESC(alloc, "Message buffers: dynamic (kmalloc per message, the default) or static (all at load time)");

static struct msgq_queue *msgq_of(struct file *file)
{
	/* msgq_open() put it there. */
	return file->private_data;
}

static bool msgq_ready(struct msgq_queue *q, bool for_write)
{
	unsigned int count = READ_ONCE(q->count);

	return for_write ? count < msgq_capacity : count > 0;
}

/*
 * Release @q's lock.  poll() says ready only while the lock is free, so
 * the pollers must look again.
 */
static void msgq_unlock(struct msgq_queue *q)
{
	mutex_unlock(&q->lock);
	wake_up_interruptible(&q->pollers);
}

/*
 * Take @q's lock once there is room (@for_write) or a message in it.
 * Returns 0 with the lock held, or -EAGAIN (@nonblock) or -ERESTARTSYS
 * without it.
 */
static int msgq_lock_ready(struct msgq_queue *q, bool for_write, bool nonblock)
{
	wait_queue_head_t *wq = for_write ? &q->writers : &q->readers;
	u64 *blocked = for_write ? &q->blocked_writers : &q->blocked_readers;
	bool slept = false;

	for (;;) {
		/*
		 * Another caller may hold the lock across a copy that faults
		 * (and a fault may wait on I/O or userfaultfd): a non-blocking
		 * caller must not wait for it.
		 */
		if (nonblock) {
			if (!mutex_trylock(&q->lock))
				return -EAGAIN;
		} else if (mutex_lock_interruptible(&q->lock)) {
			return -ERESTARTSYS;
		}
		if (msgq_ready(q, for_write))
			return 0;
		if (!nonblock && !slept) {
			WRITE_ONCE(*blocked, *blocked + 1);
			slept = true;
		}
		msgq_unlock(q);
		if (nonblock)
			return -EAGAIN;
		if (wait_event_interruptible(*wq, msgq_ready(q, for_write)))
			return -ERESTARTSYS;
	}
}

static void msgq_free(struct msgq_queue *q, struct msgq_buf *msg)
{
	if (msgq_alloc != MSGQ_ALLOC_DYNAMIC || !msg)
		return;
	kfree(msg);
	atomic_dec(&q->allocated);
}

static ssize_t msgq_write(struct file *file, const char __user *buf,
			  size_t count, loff_t *ppos)
{
	struct msgq_queue *q = msgq_of(file);
	const char __user *payload = buf + sizeof(struct msgq_msg);
	struct msgq_buf *msg = NULL;
	struct msgq_msg hdr;
	unsigned int depth;
	size_t len;
	int ret;

	if (count < sizeof(hdr))
		return -EINVAL;
	len = count - sizeof(hdr);
	if (len > MSGQ_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (copy_from_user(&hdr, buf, sizeof(hdr)))
		return -EFAULT;

	if (msgq_alloc == MSGQ_ALLOC_DYNAMIC) {
		msg = kmalloc(struct_size(msg, payload, len),
			      GFP_KERNEL_ACCOUNT);
		if (!msg)
			return -ENOMEM;
		atomic_inc(&q->allocated);
		if (copy_from_user(msg->payload, payload, len)) {
			ret = -EFAULT;
			goto free;
		}
	}

	ret = msgq_lock_ready(q, true, file->f_flags & O_NONBLOCK);
	if (ret)
		goto free;
	if (msg) {
		q->ring[(q->head + q->count) % msgq_capacity] = msg;
	} else {
		msg = q->ring[(q->head + q->count) % msgq_capacity];
		if (copy_from_user(msg->payload, payload, len)) {
			msgq_unlock(q);
			return -EFAULT;
		}
	}
	msg->seq = ++q->seq;
	msg->source = hdr.source;
	msg->destination = hdr.destination;
	msg->length = len;
	msg->enqueue_ns = ktime_get_ns();
	msg->enqueue_cycles = get_cycles();
	depth = q->count + 1;
	WRITE_ONCE(q->count, depth);
	WRITE_ONCE(q->enqueued, q->enqueued + 1);
	if (depth > q->high_water)
		WRITE_ONCE(q->high_water, depth);
	trace_msgq_enqueue(q->name, msg->seq, len, depth);
	msgq_unlock(q);

	wake_up_interruptible(&q->readers);
	return count;

free:
	msgq_free(q, msg);
	return ret;
}

static ssize_t msgq_read(struct file *file, char __user *buf, size_t count,
			 loff_t *ppos)
{
	struct msgq_queue *q = msgq_of(file);
	struct msgq_record rec = {};
	struct msgq_buf *msg;
	size_t size;
	int ret;

	if (count < sizeof(rec))
		return -EMSGSIZE;
	ret = msgq_lock_ready(q, false, file->f_flags & O_NONBLOCK);
	if (ret)
		return ret;

	msg = q->ring[q->head];
	size = sizeof(rec) + msg->length;
	if (count < size) {
		ret = -EMSGSIZE;
		goto unlock;
	}
	rec.queued_ns = ktime_get_ns() - msg->enqueue_ns;
	rec.queued_cycles = get_cycles() - msg->enqueue_cycles;
	rec.seq = msg->seq;
	rec.enqueue_ns = msg->enqueue_ns;
	rec.source = msg->source;
	rec.destination = msg->destination;
	rec.length = msg->length;
	rec.depth = q->count - 1;
	if (copy_to_user(buf, &rec, sizeof(rec)) ||
	    copy_to_user(buf + sizeof(rec), msg->payload, msg->length)) {
		ret = -EFAULT;
		goto unlock;
	}

	if (msgq_alloc == MSGQ_ALLOC_DYNAMIC)
		q->ring[q->head] = NULL;
	else
		msg = NULL;	/* the slot stays in the ring */
	q->head = (q->head + 1) % msgq_capacity;
	WRITE_ONCE(q->count, rec.depth);
	WRITE_ONCE(q->dequeued, q->dequeued + 1);
	trace_msgq_dequeue(q->name, rec.seq, rec.length, rec.depth,
			   rec.queued_ns, rec.queued_cycles);
	msgq_unlock(q);

	wake_up_interruptible(&q->writers);
	msgq_free(q, msg);
	return size;

unlock:
	msgq_unlock(q);
	return ret;
}

static __poll_t msgq_poll(struct file *file, poll_table *wait)
{
	struct msgq_queue *q = msgq_of(file);
	__poll_t mask = 0;

	/*
	 * Register first: every change of the queue ends in msgq_unlock(),
	 * which then wakes us.  While another caller holds the lock, a
	 * non-blocking call would be -EAGAIN.
	 */
	poll_wait(file, &q->pollers, wait);
	if (mutex_is_locked(&q->lock))
		return 0;
	if (msgq_ready(q, false))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (msgq_ready(q, true))
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

static int msgq_open(struct inode *inode, struct file *file)
{
	file->private_data = &msgq_queues[iminor(inode) - MINOR(msgq_devt)];
	return nonseekable_open(inode, file);
}

static const struct file_operations msgq_fops = {
	.owner = THIS_MODULE,
	.open = msgq_open,
	.read = msgq_read,
	.write = msgq_write,
	.poll = msgq_poll,
};

static struct msgq_queue *msgq_of_dev(struct device *dev)
{
	/* msgq_init() made the queue the device's driver data. */
	return dev_get_drvdata(dev);
}

static ssize_t enqueued_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(msgq_of_dev(dev)->enqueued));
}

static ssize_t dequeued_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(msgq_of_dev(dev)->dequeued));
}

static ssize_t blocked_writers_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(msgq_of_dev(dev)->blocked_writers));
}

static ssize_t blocked_readers_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  READ_ONCE(msgq_of_dev(dev)->blocked_readers));
}

static ssize_t depth_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(msgq_of_dev(dev)->count));
}

static ssize_t high_water_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(msgq_of_dev(dev)->high_water));
}

static ssize_t allocated_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&msgq_of_dev(dev)->allocated));
}

static DEVICE_ATTR_RO(enqueued);
static DEVICE_ATTR_RO(dequeued);
static DEVICE_ATTR_RO(blocked_writers);
static DEVICE_ATTR_RO(blocked_readers);
static DEVICE_ATTR_RO(depth);
static DEVICE_ATTR_RO(high_water);
static DEVICE_ATTR_RO(allocated);

static struct attribute *msgq_stats_attrs[] = {
	&dev_attr_enqueued.attr,
	&dev_attr_dequeued.attr,
	&dev_attr_blocked_writers.attr,
	&dev_attr_blocked_readers.attr,
	&dev_attr_depth.attr,
	&dev_attr_high_water.attr,
	&dev_attr_allocated.attr,
	NULL,
};

static const struct attribute_group msgq_stats_group = {
	.name = "stats",
	.attrs = msgq_stats_attrs,
};

static const struct attribute_group *msgq_groups[] = {
	&msgq_stats_group,
	NULL,
};

/* The devices are root only, as the header comment says. */
static char *msgq_devnode(const struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0600;
	return NULL;
}

static const struct class msgq_class = {
	.name = "msgq",
	.devnode = msgq_devnode,
};

static int msgq_queue_init(struct msgq_queue *q, unsigned int index)
{
	unsigned int i;

	q->ring = kcalloc(msgq_capacity, sizeof(*q->ring), GFP_KERNEL);
	if (!q->ring)
		return -ENOMEM;
	if (msgq_alloc == MSGQ_ALLOC_STATIC) {
		q->slots = kvmalloc_array(msgq_capacity, MSGQ_SLOT_SIZE,
					  GFP_KERNEL);
		if (!q->slots) {
			kfree(q->ring);
			return -ENOMEM;
		}
		for (i = 0; i < msgq_capacity; i++)
			q->ring[i] = q->slots + (size_t)i * MSGQ_SLOT_SIZE;
	}
	q->name = msgq_names[index];
	mutex_init(&q->lock);
	init_waitqueue_head(&q->readers);
	init_waitqueue_head(&q->writers);
	init_waitqueue_head(&q->pollers);
	atomic_set(&q->allocated, 0);
	return 0;
}

/* Only once no file of @q is open: the module is going away. */
static void msgq_queue_exit(struct msgq_queue *q)
{
	for (; q->count; q->count--) {
		msgq_free(q, q->ring[q->head]);
		q->head = (q->head + 1) % msgq_capacity;
	}
	mutex_destroy(&q->lock);
	kvfree(q->slots);
	kfree(q->ring);
}

/* Remove the devices made so far, the @n first ones. */
static void msgq_devices_remove(unsigned int n)
{
	while (n--)
		device_unregister(msgq_devices[n]);
}

/*
 * In this order: the queues, the device numbers, the class and the
 * devices (their nodes and stats appear, but no open can succeed while
 * no cdev serves their numbers), and last the cdev, after which nothing
 * can fail.  An open that came earlier was -ENXIO without running any of
 * this module's code, so a failed load leaves no file behind.
 */
static int __init msgq_init(void)
{
	struct device *dev;
	unsigned int i, made;
	int ret;

	for (i = 0; i < MSGQ_QUEUES; i++) {
		ret = msgq_queue_init(&msgq_queues[i], i);
		if (ret)
			goto free_queues;
	}
	ret = alloc_chrdev_region(&msgq_devt, 0, MSGQ_QUEUES, KBUILD_MODNAME);
	if (ret)
		goto free_queues;
	ret = class_register(&msgq_class);
	if (ret)
		goto free_region;
	for (made = 0; made < MSGQ_QUEUES; made++) {
		dev = device_create_with_groups(&msgq_class, NULL,
						MKDEV(MAJOR(msgq_devt),
						      MINOR(msgq_devt) + made),
						&msgq_queues[made], msgq_groups,
						"%s", msgq_names[made]);
		if (IS_ERR(dev)) {
			ret = PTR_ERR(dev);
			goto remove_devices;
		}
		msgq_devices[made] = dev;
	}
	cdev_init(&msgq_cdev, &msgq_fops);
	msgq_cdev.owner = THIS_MODULE;
	ret = cdev_add(&msgq_cdev, msgq_devt, MSGQ_QUEUES);
	if (ret)
		goto remove_devices;

	pr_info("%u queues of %u messages of up to %u bytes, %s buffers\n",
		MSGQ_QUEUES, msgq_capacity, MSGQ_MAX_PAYLOAD,
		msgq_alloc_names[msgq_alloc]);
	return 0;

remove_devices:
	msgq_devices_remove(made);
	class_unregister(&msgq_class);
free_region:
	unregister_chrdev_region(msgq_devt, MSGQ_QUEUES);
free_queues:
	while (i--)
		msgq_queue_exit(&msgq_queues[i]);
	pr_err("cannot load: %d\n", ret);
	return ret;
}

static void __exit msgq_exit(void)
{
	unsigned int i;

	cdev_del(&msgq_cdev);
	msgq_devices_remove(MSGQ_QUEUES);
	class_unregister(&msgq_class);
	unregister_chrdev_region(msgq_devt, MSGQ_QUEUES);
	for (i = 0; i < MSGQ_QUEUES; i++)
		msgq_queue_exit(&msgq_queues[i]);
}

module_init(msgq_init);
module_exit(msgq_exit);

MODULE_DESCRIPTION("A message bus of four bounded queues that time each message");
MODULE_AUTHOR("Kernel Lab <lab@kernel-lab.invalid>");
MODULE_LICENSE("GPL");
