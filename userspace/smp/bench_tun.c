// SPDX-License-Identifier: GPL-2.0
/*
 * tun: a reader thread at SCHED_RR 98 on CPU A blocks in read() on a tun
 * device of its own, while a spinner at SCHED_RR 19 keeps CPU A busy; a
 * sender at SCHED_RR 20 on CPU B (--same-cpu: on A, above the spinner)
 * sends UDP datagrams that the kernel routes into the tun device.  Span
 * wakeup: the sender's TSC just before sendto() -> the reader's TSC as
 * soon as read() returns the datagram.  One datagram is in flight: the
 * sender waits (SMP_GIVE_UP_S at most: a lost datagram is an error, not a
 * hang) for the reader to take it before it sends the next.
 *
 * The device (smpN, IFF_TUN | IFF_NO_PI) has 10.233.0.1/30, its IPv6 off;
 * the datagrams go to 10.233.0.2, on the device only (SO_BINDTODEVICE):
 * nothing leaves this machine.  It is not persistent: closing its file
 * descriptor at the end removes it with its address and route.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_tun.h>

#include "smp.h"

#define TUN_DEV "/dev/net/tun"
#define LOCAL_ADDR "10.233.0.1"
#define PEER_ADDR "10.233.0.2"
#define NETMASK "255.255.255.252"
#define PORT 50233
#define MAGIC "smp-tun"		/* 8 bytes with its NUL */

static const char *const spans[] = { "wakeup" };

struct payload {
	char magic[8];
	uint64_t seq;
};

static struct {
	int fd, sock;
	char ifname[IFNAMSIZ];
	int ipv6_off;
	uint64_t *stamps;		/* per record: the sender's TSC before sendto() */
	sem_t ack;
	int have_sem;
	atomic_int finished;
	unsigned long sent, received, other;
} tn = { .fd = -1, .sock = -1 };

static int check(struct smp *s)
{
	(void)s;
	if (access(TUN_DEV, F_OK)) {
		fprintf(stderr, PROG ": no " TUN_DEV " (CONFIG_TUN)\n");
		return 1;
	}
	return 0;
}

/* The record number of one of our datagrams in @buf (@n bytes), or -1. */
static long our_datagram(const unsigned char *buf, ssize_t n)
{
	struct payload pl;
	struct in_addr dst;
	size_t ihl;

	if (n < 20 || buf[0] >> 4 != 4 || buf[9] != IPPROTO_UDP)
		return -1;
	ihl = (size_t)(buf[0] & 15) * 4;
	memcpy(&dst, buf + 16, sizeof(dst));
	if ((size_t)n < ihl + 8 + sizeof(pl) || dst.s_addr != inet_addr(PEER_ADDR) ||
	    ((buf[ihl + 2] << 8) | buf[ihl + 3]) != PORT)
		return -1;
	memcpy(&pl, buf + ihl + 8, sizeof(pl));
	if (memcmp(pl.magic, MAGIC, sizeof(pl.magic)))
		return -1;
	return (long)pl.seq;
}

static void reader(struct smp *s, void *arg)
{
	unsigned char buf[2048];
	ssize_t n;
	uint64_t t;
	long seq;

	(void)arg;
	while (tn.received < smp_records(s) && !smp_stopping()) {
		n = read(tn.fd, buf, sizeof(buf));
		t = smp_tsc();
		if (n < 0) {
			if (errno == EINTR)
				continue;
			smp_fail("tun: read from %s: %s", tn.ifname, strerror(errno));
			break;
		}
		seq = our_datagram(buf, n);
		if (seq < 0) {
			tn.other++;	/* not ours: whatever else the kernel sent */
			continue;
		}
		if ((unsigned long)seq != tn.received) {
			smp_fail("tun: datagram %ld came when %lu was due", seq, tn.received);
			break;
		}
		smp_put(s, 0, (unsigned long)seq,
			(int64_t)(t - __atomic_load_n(&tn.stamps[seq], __ATOMIC_ACQUIRE)));
		tn.received++;
		sem_post(&tn.ack);
	}
	atomic_store(&tn.finished, 1);
}

static void spinner(struct smp *s, void *arg)
{
	(void)s;
	(void)arg;
	while (!atomic_load_explicit(&tn.finished, memory_order_relaxed) && !smp_stopping())
		smp_relax();
}

static void sender(struct smp *s, void *arg)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct payload pl = { MAGIC, 0 };
	struct timespec deadline;
	unsigned long i;
	ssize_t n;

	(void)arg;
	to.sin_addr.s_addr = inet_addr(PEER_ADDR);
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++) {
		pl.seq = i;
		__atomic_store_n(&tn.stamps[i], smp_tsc(), __ATOMIC_RELEASE);
		n = sendto(tn.sock, &pl, sizeof(pl), 0, (struct sockaddr *)&to, sizeof(to));
		if (n != (ssize_t)sizeof(pl)) {
			if (!smp_stopping())
				smp_fail("tun: sendto " PEER_ADDR ": %s",
					 n < 0 ? strerror(errno) : "short");
			return;
		}
		tn.sent++;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += SMP_GIVE_UP_S;
		while (sem_clockwait(&tn.ack, CLOCK_MONOTONIC, &deadline)) {
			if (smp_stopping())
				return;
			if (errno == EINTR)
				continue;
			smp_fail("tun: datagram %lu did not reach the reader within %d s%s%s",
				 i, SMP_GIVE_UP_S, errno == ETIMEDOUT ? "" : ": ",
				 errno == ETIMEDOUT ? "" : strerror(errno));
			return;
		}
	}
}

static void wake(struct smp *s)
{
	(void)s;
	sem_post(&tn.ack);
}

static int set_addr(int ctl, unsigned long req, const char *addr, const char *what)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tn.ifname);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = inet_addr(addr);
	if (ioctl(ctl, req, &ifr)) {
		fprintf(stderr, PROG ": tun: cannot set the %s of %s to %s: %s\n", what, tn.ifname,
			addr, strerror(errno));
		return -1;
	}
	return 0;
}

/* IPv6 off on the device: no router solicitation or MLD report in the tun. */
static void ipv6_off(void)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", tn.ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	tn.ipv6_off = write(fd, "1", 1) == 1;
	close(fd);
}

static int prepare(struct smp *s)
{
	struct ifreq ifr = { 0 };
	int ctl = -1;

	tn.stamps = calloc(smp_records(s), sizeof(*tn.stamps));
	if (!tn.stamps || sem_init(&tn.ack, 0, 0)) {
		fprintf(stderr, PROG ": tun: no memory\n");
		return -1;
	}
	tn.have_sem = 1;
	tn.fd = open(TUN_DEV, O_RDWR | O_CLOEXEC);
	if (tn.fd < 0) {
		fprintf(stderr, PROG ": tun: cannot open " TUN_DEV ": %s\n", strerror(errno));
		return -1;
	}
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "smp%%d");
	if (ioctl(tn.fd, TUNSETIFF, &ifr)) {
		fprintf(stderr, PROG ": tun: cannot create a tun device: %s\n", strerror(errno));
		return -1;
	}
	snprintf(tn.ifname, sizeof(tn.ifname), "%s", ifr.ifr_name);
	ipv6_off();
	ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ctl < 0) {
		fprintf(stderr, PROG ": tun: socket: %s\n", strerror(errno));
		return -1;
	}
	if (set_addr(ctl, SIOCSIFADDR, LOCAL_ADDR, "address") ||
	    set_addr(ctl, SIOCSIFNETMASK, NETMASK, "netmask"))
		goto fail;
	if (ioctl(ctl, SIOCGIFFLAGS, &ifr)) {
		fprintf(stderr, PROG ": tun: SIOCGIFFLAGS %s: %s\n", tn.ifname, strerror(errno));
		goto fail;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(ctl, SIOCSIFFLAGS, &ifr)) {
		fprintf(stderr, PROG ": tun: cannot bring %s up: %s\n", tn.ifname, strerror(errno));
		goto fail;
	}
	close(ctl);
	tn.sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (tn.sock < 0 || setsockopt(tn.sock, SOL_SOCKET, SO_BINDTODEVICE, tn.ifname,
				      (socklen_t)strlen(tn.ifname) + 1)) {
		fprintf(stderr, PROG ": tun: a UDP socket bound to %s: %s\n", tn.ifname,
			strerror(errno));
		return -1;
	}
	return 0;
fail:
	close(ctl);
	return -1;
}

static int run(struct smp *s)
{
	static struct smp_thread t[3];
	int ret;

	/* The reader first, to be waiting; the spinner last. */
	t[0] = (struct smp_thread){ .name = "smp-tun-read", .fn = reader, .cpu = s->cpu_a,
				    .policy = SCHED_RR, .prio = 98 };
	t[1] = (struct smp_thread){ .name = "smp-tun-send", .fn = sender, .cpu = s->cpu_b,
				    .policy = SCHED_RR, .prio = 20 };
	t[2] = (struct smp_thread){ .name = "smp-tun-spin", .fn = spinner, .cpu = s->cpu_a,
				    .policy = SCHED_RR, .prio = 19 };
	ret = smp_run_threads(s, t, 3, wake);
	if (!ret && (tn.sent != smp_records(s) || tn.received != tn.sent)) {
		smp_fail("tun: %lu datagrams sent, %lu received, %lu due", tn.sent, tn.received,
			 smp_records(s));
		ret = -1;
	}
	return ret;
}

static void settings(struct smp *s, struct lab_json *j)
{
	char dest[64], policy[128];

	snprintf(dest, sizeof(dest), PEER_ADDR ":%d", PORT);
	snprintf(policy, sizeof(policy), "reader SCHED_RR 98 and spinner SCHED_RR 19 on CPU %d, "
		 "sender SCHED_RR 20 on CPU %d", s->cpu_a, s->cpu_b);
	lab_json_uint(j, "packets_sent", tn.sent);
	lab_json_uint(j, "packets_received", tn.received);
	lab_json_uint(j, "packets_other", tn.other);
	lab_json_str(j, "device", tn.ifname);
	lab_json_str(j, "address", LOCAL_ADDR "/30");
	lab_json_str(j, "destination", dest);
	lab_json_bool(j, "ipv6_disabled", tn.ipv6_off);
	lab_json_str(j, "policy", policy);
}

static void cleanup(struct smp *s)
{
	(void)s;
	if (tn.sock >= 0)
		close(tn.sock);
	if (tn.fd >= 0)
		close(tn.fd);	/* not persistent: the device goes with it */
	tn.sock = tn.fd = -1;
	if (tn.have_sem)
		sem_destroy(&tn.ack);
	free(tn.stamps);
}

const struct smp_bench smp_bench_tun = {
	.name = "tun",
	.desc = "SCHED_RR 98 reader blocked on a tun device on A, 19 spinner: UDP from B",
	.spans = spans,
	.nspans = 1,
	.flags = SMP_ROOT | SMP_TWO_ENDS,
	.check = check,
	.prepare = prepare,
	.run = run,
	.settings = settings,
	.cleanup = cleanup,
};
