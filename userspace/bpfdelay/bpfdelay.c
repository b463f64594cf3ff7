// SPDX-License-Identifier: GPL-2.0
/*
 * bpfdelay - the delay module's ns mode on an unpatched kernel: load
 * bpfdelay.bpf.c, attach it, and hold it until a signal.
 *
 * The options are the delay module's parameters, the same names and
 * values (modules/delay/README.md), as far as a BPF program can follow
 * them: it spins (bpf_loop) and cannot sleep, and has no loop-count mode.
 * The program stays attached while this process lives and not a moment
 * longer: its links are this process's file descriptors, never pinned,
 * so an exit of any kind (SIGKILL too) detaches it.  The statistics (the
 * module's stats/) are one JSON line on stdout on SIGUSR1 and at the end,
 * and the files of --stats DIR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "../lib/liblab.h"
#include "bpfdelay.h"
#include "bpfdelay.skel.h"

#define PROG "bpfdelay"

/* The 64-bit system calls (syscall_names.h, made by gen_names.awk). */
static const struct {
	const char *name;
	int shared;
} table[BPFDELAY_NR] = {
#define BPFDELAY_NAMES
#include "syscall_names.h"
};

enum { ATTACH_TP, ATTACH_FENTRY };
static const char *const attach_names[] = { "tp", "fentry", NULL };
static const char *const attach_points[][2] = {
	{ "tp_btf/sys_enter", "tp_btf/sys_exit" },
	{ "fentry/x64_sys_call", "fexit/x64_sys_call" },
};
static const char *const mode_names[] = { "spin", "sleep", NULL };
static const char *const where_names[] = { "entry", "exit", NULL };

static struct {
	unsigned long ns, every, first, ppm, seed;
	const char *cgroup, *syscalls, *delays, *stats, *btf, *mounts;
	int mode, where, attach, verbose, control;
	/* syscalls= and delays= parsed */
	bool filtered;
	unsigned char target[BPFDELAY_NR], own[BPFDELAY_NR];
	unsigned int own_ns[BPFDELAY_NR];
} o = {
	.ppm = BPFDELAY_PPM,
	.btf = "/sys/kernel/btf/vmlinux", .mounts = "/proc/self/mounts",
	.attach = ATTACH_TP,
};

static void refuse_loops(void *value, const char *prog, const char *opt, const char *arg)
{
	(void)value;
	fprintf(stderr, "%s: %s %s: the loop-count mode is the delay module's; a BPF program "
		"spins in ns only (--ns)\n", prog, opt, arg);
	exit(2);
}

static const struct lab_opt options[] = {
	{ .name = "ns", .kind = LAB_OPT_ULONG, .value = &o.ns, .max = BPFDELAY_NS_MAX,
	  .json = "ns", .help = "spin until this many ns have passed, each targeted call\n"
				"(0..5000000, the delay module's cap)" },
	{ .name = "loops", .kind = LAB_OPT_CUSTOM, .value = NULL, .parse = refuse_loops,
	  .help = "refused: the module's loop count has no BPF form" },
	{ .name = "cgroup", .kind = LAB_OPT_STR, .value = &o.cgroup, .arg = "PATH",
	  .json = "cgroup", .help = "only this cgroup v2 and its descendants, a path from\n"
				    "the cgroup2 root as in /proc/PID/cgroup ('' = every task)" },
	{ .name = "syscalls", .kind = LAB_OPT_STR, .value = &o.syscalls, .arg = "LIST",
	  .json = "syscalls", .help = "only these 64-bit calls, by name or number, ranges\n"
				      "FIRST-LAST: read,write or 0-3,39 ('' = all)" },
	{ .name = "delays", .kind = LAB_OPT_STR, .value = &o.delays, .arg = "CALL:NS,...",
	  .json = "delays", .help = "some calls' own ns instead of --ns: read:2000,futex:0" },
	{ .name = "every", .kind = LAB_OPT_ULONG, .value = &o.every, .max = UINT32_MAX,
	  .json = "every", .help = "delay every N-th call to delay (0 or 1: each)" },
	{ .name = "first", .kind = LAB_OPT_ULONG, .value = &o.first, .max = UINT32_MAX,
	  .json = "first", .help = "delay the first K calls to delay only (0: no limit)" },
	{ .name = "ppm", .kind = LAB_OPT_ULONG, .value = &o.ppm, .max = BPFDELAY_PPM,
	  .json = "ppm", .help = "delay each with a chance of P in a million" },
	{ .name = "seed", .kind = LAB_OPT_ULONG, .value = &o.seed, .max = ULONG_MAX,
	  .json = "seed", .help = "the seed of --ppm's SplitMix64 draws" },
	{ .name = "mode", .kind = LAB_OPT_CHOICE, .value = &o.mode, .arg = "spin",
	  .choices = mode_names, .json = "mode",
	  .help = "spin; sleep is refused: a BPF program cannot sleep there" },
	{ .name = "where", .kind = LAB_OPT_CHOICE, .value = &o.where, .arg = "entry|exit",
	  .choices = where_names, .json = "where",
	  .help = "before the call's work, or after it" },
	{ .name = "attach", .kind = LAB_OPT_CHOICE, .value = &o.attach, .arg = "tp|fentry",
	  .choices = attach_names, .json = "attach",
	  .help = "the sys_enter/sys_exit tracepoints (every call; every\n"
		  "task takes the slow path while attached), or fentry/fexit\n"
		  "on x64_sys_call (64-bit calls only; 6.9 or later)" },
	{ .name = "stats", .kind = LAB_OPT_STR, .value = &o.stats, .arg = "DIR",
	  .json = "stats", .help = "also write DIR/parameters/ and DIR/stats/ as the\n"
				   "module's /sys/module/delay/ (on SIGUSR1 and at the end)" },
	{ .name = "control", .kind = LAB_OPT_FLAG, .value = &o.control,
	  .help = "take commands on stdin, one a line, each answered with one\n"
		  "line on stdout: 'ns N', 'cgroup PATH', 'stats'; the end of\n"
		  "stdin detaches" },
	{ .name = "btf", .kind = LAB_OPT_STR, .value = &o.btf, .arg = "PATH",
	  .help = "the running kernel's BTF" },
	{ .name = "verbose", .letter = 'v', .kind = LAB_OPT_FLAG, .value = &o.verbose,
	  .help = "libbpf's warnings (the verifier's log of a refused load)" },
	{ .name = "mounts", .kind = LAB_OPT_STR, .value = &o.mounts, .arg = "PATH",
	  .help = "where to look for the cgroup2 mount" },
	{ 0 }
};

static const struct lab_tool tool = {
	.prog = PROG,
	.about = "usage: bpfdelay [options]\n"
		"\n"
		"Delay the system calls of a cgroup by spinning in a BPF program, as the\n"
		"delay module's ns mode does, on a kernel without the lab's patches\n"
		"(5.17 or later, with BTF; root).  It stays attached until SIGINT, SIGTERM\n"
		"or SIGHUP (or, with --control, the end of stdin), or until this process\n"
		"dies in any way.  The statistics are one JSON line on stdout, on SIGUSR1\n"
		"and at the end.",
	.notes = "A bad option is exit status 2; a kernel that cannot run the program\n"
		"(not root, no BTF, no bpf_loop, no cgroup2 mount) one line and status 1.",
	.example = "bpfdelay --ns 2000 --cgroup /lab-sweep --syscalls read,write",
	.opts = options,
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The kernel cannot run it: one line, exit status 1. */
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void bad(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, PROG ": --%s wants %s, not '%s'\n", opt, why, arg);
	exit(2);
}

/* A call by name or decimal number, as the module's delay_parse_call(). */
static int parse_call(const char *s, unsigned int *nr)
{
	unsigned long v;
	char *end;

	if (*s && !s[strspn(s, "0123456789")]) {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || v >= BPFDELAY_NR || !table[v].name)
			return -1;
		*nr = v;
		return 0;
	}
	for (unsigned int i = 0; i < BPFDELAY_NR; i++) {
		if (table[i].name && !strcmp(table[i].name, s)) {
			*nr = i;
			return 0;
		}
	}
	return -1;
}

#define CALLS_WANTED "64-bit system calls by name or number, or ranges FIRST-LAST"

static void parse_syscalls(void)
{
	char *buf = strdup(o.syscalls), *list = buf, *item, *dash;
	unsigned int first, last;

	o.filtered = *buf;
	while (o.filtered && (item = strsep(&list, ","))) {
		dash = strchr(item, '-');
		if (dash)
			*dash++ = '\0';
		if (parse_call(item, &first) || parse_call(dash ? dash : item, &last) ||
		    last < first)
			bad("syscalls", o.syscalls, CALLS_WANTED);
		for (unsigned int nr = first; nr <= last; nr++)
			o.target[nr] = table[nr].name != NULL;
	}
	free(buf);
}

static void parse_delays(void)
{
	char *buf = strdup(o.delays), *list = buf, *item, *colon, *end;
	const char *why = "CALL:NS items, CALL a 64-bit call's name or number, NS from 0 "
			  "to 5000000, each call once, at most 64";
	unsigned long ns;
	unsigned int nr;
	int count = 0;

	while (*buf && (item = strsep(&list, ","))) {
		colon = strchr(item, ':');
		if (!colon)
			bad("delays", o.delays, why);
		*colon++ = '\0';
		errno = 0;
		ns = strtoul(colon, &end, 10);
		if (parse_call(item, &nr) || !*colon || colon[strspn(colon, "0123456789")] ||
		    errno || ns > BPFDELAY_NS_MAX || o.own[nr] || count == BPFDELAY_OWN_MAX)
			bad("delays", o.delays, why);
		o.own[nr] = 1;
		o.own_ns[nr] = ns;
		count++;
	}
	free(buf);
}

/* The cgroup2 mount point, from @mounts, in @dir; -1 if there is none. */
static int cgroup2_mount(char *dir, size_t len)
{
	char line[4096], src[PATH_MAX], mnt[PATH_MAX], type[64];
	FILE *f = fopen(o.mounts, "r");
	int ret = -1;

	if (!f)
		return -1;
	while (ret && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%4095s %4095s %63s", src, mnt, type) != 3 ||
		    strcmp(type, "cgroup2"))
			continue;
		/* Unescape the mount point's octal escapes (\040 for a space). */
		char *r = mnt, *w = dir;

		while (*r && w < dir + len - 1) {
			if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] && r[3]) {
				*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
				r += 4;
			} else {
				*w++ = *r++;
			}
		}
		*w = '\0';
		ret = 0;
	}
	fclose(f);
	return ret;
}

/*
 * The directory of cgroup @path (from the cgroup2 root), open; -1 with
 * errno set and the path tried in @tried if it cannot be opened.
 */
static int cgroup_fd_of(const char *path, char *tried, size_t len)
{
	char mnt[PATH_MAX];

	if (cgroup2_mount(mnt, sizeof(mnt)))
		die("no cgroup2 (cgroup v2) mount in %s: mount one to target a cgroup", o.mounts);
	snprintf(tried, len, "%s%s", mnt, path);
	return open(tried, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The target cgroup's directory, open; -1 for every task. */
static int open_cgroup(void)
{
	char path[2 * PATH_MAX];
	int fd;

	if (!*o.cgroup)
		return -1;
	if (*o.cgroup != '/')
		bad("cgroup", o.cgroup, "a path from the cgroup2 root, starting with '/'");
	fd = cgroup_fd_of(o.cgroup, path, sizeof(path));
	if (fd < 0) {
		fprintf(stderr, PROG ": --cgroup wants a cgroup v2 path, not '%s' (%s: %s)\n",
			o.cgroup, path, strerror(errno));
		exit(2);
	}
	return fd;
}

/* What the kernel must have, each missing one said in one line (status 1). */
static void check_kernel(void)
{
	struct btf *btf;
	int ret;

	if (geteuid() != 0)
		die("needs root: loading and attaching BPF programs takes CAP_BPF and CAP_PERFMON");
	if (access(o.btf, R_OK))
		die("no BTF at %s (%s): the kernel needs CONFIG_DEBUG_INFO_BTF", o.btf,
		    strerror(errno));
	btf = btf__parse(o.btf, NULL);
	if (!btf)
		die("cannot read the BTF at %s: %s", o.btf, strerror(errno));
	if (o.attach == ATTACH_FENTRY &&
	    btf__find_by_name_kind(btf, "x64_sys_call", BTF_KIND_FUNC) < 0) {
		btf__free(btf);
		die("no x64_sys_call in this kernel (6.9 or later has it): use --attach tp");
	}
	btf__free(btf);
	ret = libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_loop, NULL);
	if (ret == 0)
		die("this kernel has no bpf_loop helper (5.17 or later has it)");
	if (ret < 0)
		die("cannot ask the kernel for the bpf_loop helper: %s", strerror(-ret));
}

/* libbpf's warnings (the verifier's log when a load fails) under -v only. */
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return o.verbose && level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* --- statistics -------------------------------------------------------- */

struct stats {
	unsigned long long n[BPFDELAY_NR_COUNTERS];
	unsigned long long by_call[BPFDELAY_NR + 1];
};

static void read_stats(const struct bpfdelay *skel, struct stats *st)
{
	int ncpu = libbpf_num_possible_cpus(), cfd = bpf_map__fd(skel->maps.counters),
	    bfd = bpf_map__fd(skel->maps.by_call);
	unsigned long long v[ncpu * BPFDELAY_NR_COUNTERS];
	__u32 key = 0;

	memset(st, 0, sizeof(*st));
	if (!bpf_map_lookup_elem(cfd, &key, v))
		for (int c = 0; c < ncpu; c++)
			for (int k = 0; k < BPFDELAY_NR_COUNTERS; k++)
				st->n[k] += v[c * BPFDELAY_NR_COUNTERS + k];
	for (key = 0; key <= BPFDELAY_NR; key++)
		if (!bpf_map_lookup_elem(bfd, &key, v))
			for (int c = 0; c < ncpu; c++)
				st->by_call[key] += v[c];
}

static unsigned long long mean_ns(const struct stats *st)
{
	return st->n[BPFDELAY_DELAYED] ? st->n[BPFDELAY_SPUN_NS] / st->n[BPFDELAY_DELAYED] : 0;
}

/* One line of JSON on stdout: the module's counters, calls by name. */
static void print_stats(const struct stats *st)
{
	struct lab_json j;

	lab_json_file(&j, stdout, 0);
	lab_json_object(&j, NULL);
	lab_json_uint(&j, "calls", st->n[BPFDELAY_CALLS]);
	lab_json_uint(&j, "delayed", st->n[BPFDELAY_DELAYED]);
	lab_json_uint(&j, "spun_ns", st->n[BPFDELAY_SPUN_NS]);
	lab_json_uint(&j, "mean_ns", mean_ns(st));
	lab_json_uint(&j, "considered", st->n[BPFDELAY_CONSIDERED]);
	lab_json_uint(&j, "chosen", st->n[BPFDELAY_CHOSEN]);
	lab_json_object(&j, "by_call");
	for (int nr = 0; nr <= BPFDELAY_NR; nr++)
		if (st->by_call[nr])
			lab_json_uint(&j, nr < BPFDELAY_NR ? table[nr].name : "other",
				      st->by_call[nr]);
	lab_json_end(&j);
	lab_json_str(&j, "attach", attach_points[o.attach][o.where]);
	lab_json_end(&j);
	fputc('\n', stdout);
	fflush(stdout);
}

/* DIR/SUB/NAME replaced whole by @len bytes of @data. */
static void put_file(const char *sub, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", o.stats, sub, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) || rename(tmp, path))
		fprintf(stderr, PROG ": warning: cannot write %s: %s\n", path, strerror(errno));
}

static void put_text(const char *sub, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void put_text(const char *sub, const char *name, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	put_file(sub, name, buf, len < (int)sizeof(buf) ? (size_t)len : sizeof(buf) - 1);
}

/* DIR/stats/ as the module's: text counters, by_call binary. */
static void write_stats(const struct stats *st)
{
	static const char *const names[] = { "calls", "delayed", "spun_ns", "considered",
					     "chosen" };
	unsigned long counts[BPFDELAY_NR + 1];

	if (!o.stats)
		return;
	for (int k = 0; k < BPFDELAY_NR_COUNTERS; k++)
		put_text("stats", names[k], "%llu\n", st->n[k]);
	put_text("stats", "mean_ns", "%llu\n", mean_ns(st));
	/* What a BPF program never does: loops, sleeps. */
	put_text("stats", "spun", "0\n");
	put_text("stats", "slept", "0\n");
	put_text("stats", "slept_ns", "0\n");
	for (int nr = 0; nr <= BPFDELAY_NR; nr++)
		counts[nr] = st->by_call[nr];
	put_file("stats", "by_call", counts, sizeof(counts));
}

/* DIR/parameters/ as the module's read back. */
static void write_parameters(void)
{
	char list[8192];
	int len = 0;

	for (int nr = 0; nr < BPFDELAY_NR && len < (int)sizeof(list) - 16; nr++)
		if (o.target[nr])
			len += snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", nr);
	put_text("parameters", "syscalls", "%.*s\n", len, list);
	len = 0;
	for (int nr = 0; nr < BPFDELAY_NR && len < (int)sizeof(list) - 64; nr++)
		if (o.own[nr])
			len += snprintf(list + len, sizeof(list) - len, "%s%s:%u", len ? "," : "",
					table[nr].name, o.own_ns[nr]);
	put_text("parameters", "delays", "%.*s\n", len, list);
	put_text("parameters", "loops", "0\n");
	put_text("parameters", "ns", "%lu\n", o.ns);
	put_text("parameters", "cgroup", "%s\n", o.cgroup);
	put_text("parameters", "every", "%lu\n", o.every);
	put_text("parameters", "first", "%lu\n", o.first);
	put_text("parameters", "ppm", "%lu\n", o.ppm);
	put_text("parameters", "seed", "%lu\n", o.seed);
	put_text("parameters", "mode", "spin\n");
	put_text("parameters", "where", "%s\n", where_names[o.where]);
	put_text("parameters", "attach", "%s\n", attach_points[o.attach][o.where]);
}

static void make_stats_dir(void)
{
	char path[PATH_MAX];

	if (!o.stats)
		return;
	snprintf(path, sizeof(path), "%s/stats", o.stats);
	if (lab_mkdirs(path))
		die("cannot create %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/parameters", o.stats);
	if (lab_mkdirs(path))
		die("cannot create %s: %s", path, strerror(errno));
}

/* --- load, attach, wait ------------------------------------------------ */

static struct bpfdelay *load(int cgroup_fd)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = o.btf);
	struct bpf_program *progs[2][2];
	struct bpfdelay *skel;
	__u32 key = 0;
	int err;

	skel = bpfdelay__open_opts(&opts);
	if (!skel)
		die("cannot open the BPF program: %s", strerror(errno));
	progs[ATTACH_TP][0] = skel->progs.tp_enter;
	progs[ATTACH_TP][1] = skel->progs.tp_exit;
	progs[ATTACH_FENTRY][0] = skel->progs.fentry_enter;
	progs[ATTACH_FENTRY][1] = skel->progs.fexit_exit;
	for (int a = 0; a < 2; a++)
		for (int w = 0; w < 2; w++)
			bpf_program__set_autoload(progs[a][w], a == o.attach && w == o.where);

	skel->bss->ns_all = o.ns;
	skel->bss->use_cgroup = cgroup_fd >= 0;
	skel->rodata->filtered = o.filtered;
	skel->rodata->selective = o.every > 1 || o.first || o.ppm < BPFDELAY_PPM;
	skel->rodata->every = o.every;
	skel->rodata->first = o.first;
	skel->rodata->ppm = o.ppm;
	skel->rodata->seed = o.seed;
	for (int nr = 0; nr < BPFDELAY_NR; nr++) {
		skel->rodata->calltab[nr] = (table[nr].name ? CALL_NAMED : 0) |
					    (table[nr].shared ? CALL_SHARED : 0) |
					    (o.target[nr] ? CALL_TARGET : 0) |
					    (o.own[nr] ? CALL_OWN : 0);
		skel->rodata->own_ns[nr] = o.own_ns[nr];
	}

	err = bpfdelay__load(skel);
	if (err == -EPERM && o.attach == ATTACH_FENTRY)
		die("the kernel refused an fentry program on x64_sys_call (EPERM: "
		    "lockdown or a security module forbids it): use --attach tp");
	if (err)
		die("the kernel refused the BPF program: %s%s", strerror(-err),
		    err == -EPERM ? " (needs CAP_BPF and CAP_PERFMON; -v: why)" : " (-v: why)");
	if (cgroup_fd >= 0 &&
	    bpf_map_update_elem(bpf_map__fd(skel->maps.target_cgroup), &key, &cgroup_fd, 0))
		die("cannot target the cgroup %s: %s", o.cgroup, strerror(errno));
	/* The link is this process's file descriptor: it goes when we do. */
	if (!bpf_program__attach(progs[o.attach][o.where]))
		die("cannot attach at %s: %s", attach_points[o.attach][o.where], strerror(errno));
	return skel;
}

static volatile sig_atomic_t got_usr1, got_stop;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_usr1 = 1;
	else
		got_stop = sig;
}

/* --- --control: commands on stdin ------------------------------------- */

static char cgroup_now[PATH_MAX];

/* 'ns N': every targeted call's delay from now on. */
static void set_ns(struct bpfdelay *skel, const char *arg)
{
	unsigned long ns;
	char *end;

	errno = 0;
	ns = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || ns > BPFDELAY_NS_MAX || arg[0] == '-') {
		printf("error: ns wants a whole number from 0 to %u, not '%s'\n",
		       BPFDELAY_NS_MAX, arg);
		return;
	}
	o.ns = ns;
	skel->bss->ns_all = ns;
	printf("ok ns=%lu\n", ns);
}

/*
 * 'cgroup PATH': only that cgroup's tasks from now on ('' every task).
 * The map takes the new cgroup before the flag says to look at it.
 */
static void set_cgroup(struct bpfdelay *skel, const char *arg)
{
	char path[2 * PATH_MAX];
	__u32 key = 0;
	int fd;

	if (!*arg) {
		skel->bss->use_cgroup = false;
	} else {
		if (*arg != '/' || strlen(arg) >= sizeof(cgroup_now)) {
			printf("error: cgroup wants a path from the cgroup2 root, not '%s'\n", arg);
			return;
		}
		fd = cgroup_fd_of(arg, path, sizeof(path));
		if (fd < 0) {
			printf("error: cgroup wants a cgroup v2 path, not '%s' (%s: %s)\n", arg,
			       path, strerror(errno));
			return;
		}
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.target_cgroup), &key, &fd, 0)) {
			printf("error: cannot target the cgroup %s: %s\n", arg, strerror(errno));
			close(fd);
			return;
		}
		close(fd);
		skel->bss->use_cgroup = true;
	}
	snprintf(cgroup_now, sizeof(cgroup_now), "%s", arg);
	o.cgroup = cgroup_now;
	printf("ok cgroup=%s\n", arg);
}

/* One command line, answered with one line on stdout. */
static void command(struct bpfdelay *skel, char *line)
{
	char *arg = strchr(line, ' ');
	struct stats st;

	if (arg)
		*arg++ = '\0';
	if (!strcmp(line, "stats") && !arg) {
		read_stats(skel, &st);
		write_stats(&st);
		print_stats(&st);
		return;
	}
	if (!strcmp(line, "ns") && arg)
		set_ns(skel, arg);
	else if (!strcmp(line, "cgroup") && arg)
		set_cgroup(skel, arg);
	else
		printf("error: the commands are 'ns N', 'cgroup PATH' and 'stats', not '%s%s%s'\n",
		       line, arg ? " " : "", arg ? arg : "");
	if (o.stats)
		write_parameters();
	fflush(stdout);
}

/*
 * Read commands from stdin until it ends (1) or a signal asks to stop
 * (0), printing the statistics on SIGUSR1; signals are taken only while
 * waiting (@old is the mask without them).
 */
static int control(struct bpfdelay *skel, const sigset_t *old)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	static char buf[2 * PATH_MAX + 64];
	size_t have = 0;
	struct stats st;
	char *nl;
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (!got_stop) {
		if (ppoll(&pfd, 1, NULL, old) < 0) {
			if (errno != EINTR)
				die("cannot wait for commands: %s", strerror(errno));
			if (got_usr1) {
				got_usr1 = 0;
				read_stats(skel, &st);
				write_stats(&st);
				print_stats(&st);
			}
			continue;
		}
		n = read(STDIN_FILENO, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return 1;
		have += n;
		buf[have] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			command(skel, buf);
			have -= nl + 1 - buf;
			memmove(buf, nl + 1, have + 1);
		}
		if (have == sizeof(buf) - 1) {
			printf("error: a command longer than %zu characters\n", sizeof(buf) - 2);
			have = 0;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	struct bpfdelay *skel;
	struct stats st;
	int cgroup_fd;

	lab_opts_parse(&tool, argc, argv, 0);
	/* NULL until here: no "(default )" in the usage text. */
	o.cgroup = o.cgroup ? o.cgroup : "";
	o.syscalls = o.syscalls ? o.syscalls : "";
	o.delays = o.delays ? o.delays : "";
	if (o.mode == 1) {
		fprintf(stderr, PROG ": --mode sleep: a BPF program at a system call's entry or "
			"exit cannot sleep; only spin\n");
		return 2;
	}
	parse_syscalls();
	parse_delays();
	libbpf_set_print(print_libbpf);
	check_kernel();
	cgroup_fd = open_cgroup();
	make_stats_dir();

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	skel = load(cgroup_fd);
	if (o.stats) {
		write_parameters();
		read_stats(skel, &st);
		write_stats(&st);
	}
	fprintf(stderr, PROG ": attached at %s, ns=%lu%s%s; SIGUSR1 prints the statistics, "
		"%s detaches\n", attach_points[o.attach][o.where], o.ns,
		*o.cgroup ? " cgroup=" : "", o.cgroup,
		o.control ? "the end of stdin, SIGINT or SIGTERM" : "SIGINT or SIGTERM");

	while (!o.control && !got_stop) {
		sigsuspend(&old);
		if (got_usr1) {
			got_usr1 = 0;
			read_stats(skel, &st);
			write_stats(&st);
			print_stats(&st);
		}
	}
	if (o.control)
		control(skel, &old);
	read_stats(skel, &st);
	bpfdelay__destroy(skel);	/* detached: the statistics are final */
	write_stats(&st);
	print_stats(&st);
	return 0;
}
