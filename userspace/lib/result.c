// SPDX-License-Identifier: GPL-2.0
/*
 * Result folders: written as NAME.incomplete, renamed when complete, with
 * a meta.json that says where and how the numbers were taken.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "liblab.h"

#define INCOMPLETE ".incomplete"

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int lab_result_begin(struct lab_result *r, const char *parent, const char *experiment,
		     const char *name)
{
	char stamp[32], base[sizeof(r->base)];
	time_t now = time(NULL);
	int i;

	memset(r, 0, sizeof(*r));
	if (strlen(parent) >= sizeof(r->parent) ||
	    strlen(experiment) >= sizeof(r->experiment) || (name && !*name) ||
	    (name && (strchr(name, '/') || strlen(name) >= sizeof(r->base) - 16))) {
		errno = EINVAL;
		return -1;
	}
	strcpy(r->parent, parent);
	strcpy(r->experiment, experiment);
	r->named = name != NULL;
	if (lab_mkdirs(parent))
		return -1;
	if (name) {
		snprintf(base, sizeof(base), "%s", name);
	} else {
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
		snprintf(base, sizeof(base), "%.60s-%s", experiment, stamp);
	}
	for (i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(r->base, sizeof(r->base), "%s", base);
		else
			snprintf(r->base, sizeof(r->base), "%.200s-%d", base, i);
		snprintf(r->final, sizeof(r->final), "%s/%s", parent, r->base);
		snprintf(r->dir, sizeof(r->dir), "%s%s", r->final, INCOMPLETE);
		if (exists(r->final) || exists(r->dir))
			continue;
		if (mkdir(r->dir, 0755) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

int lab_result_commit(struct lab_result *r)
{
	char link[sizeof(r->parent) + 80], tmp[sizeof(link) + 16];

	if (rename(r->dir, r->final))
		return -1;
	snprintf(r->dir, sizeof(r->dir), "%s", r->final);
	if (r->named)
		return 0;
	/* Replace the link atomically: a reader sees the old or the new one. */
	snprintf(link, sizeof(link), "%s/latest-%s", r->parent, r->experiment);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", link, (int)getpid());
	unlink(tmp);
	if (symlink(r->base, tmp) || rename(tmp, link)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void lab_result_abort(struct lab_result *r)
{
	if (r->dir[0] && strstr(r->dir, INCOMPLETE))
		nftw(r->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

FILE *lab_result_file(const struct lab_result *r, const char *name)
{
	char path[sizeof(r->dir) + 256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
	return f;
}

/* --- meta.json ---------------------------------------------------------- */

/* The first line of @path, newline removed, into @buf; "" if unreadable. */
static char *read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/*
 * KEY=VALUE from the kernel command line (scripts/vm.sh passes lab.variant,
 * lab.accel, lab.accel_why, lab.qemu and lab.commit).  '_' in the value
 * stands for a space.  Returns @buf, or NULL if the key is absent.
 */
static char *cmdline_value(const char *key, char *buf, size_t size)
{
	char line[4096], *p, *tok, *save;
	size_t klen = strlen(key);

	read_line("/proc/cmdline", line, sizeof(line));
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (strncmp(tok, key, klen) || tok[klen] != '=')
			continue;
		snprintf(buf, size, "%s", tok + klen + 1);
		for (p = buf; *p; p++)
			if (*p == '_')
				*p = ' ';
		return buf;
	}
	return NULL;
}

/* The lab's root: two folders above the running program (userspace/<x>/tool). */
static int lab_root(char *buf, size_t size)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int i;

	if (len < 0)
		return -1;
	exe[len] = '\0';
	for (i = 0; i < 3; i++) {
		char *slash = strrchr(exe, '/');

		if (!slash || slash == exe)
			return -1;
		*slash = '\0';
	}
	snprintf(buf, size, "%s", exe);
	return 0;
}

/* @name as is if absolute, else under @dir, into @buf; -1 if too long. */
static int path_from(char *buf, size_t size, const char *dir, const char *name)
{
	int n = name[0] == '/' ? snprintf(buf, size, "%s", name) :
				 snprintf(buf, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/*
 * The lab's git folders: @gitdir holds HEAD, @common the branches.  In a
 * clone both are ROOT/.git; in a linked worktree (git worktree add) .git
 * is a file, "gitdir: PATH", and PATH/commondir names the repository's.
 */
static int git_dirs(const char *root, char *gitdir, char *common, size_t size)
{
	char line[PATH_MAX];
	struct stat st;

	if (path_from(gitdir, size, root, ".git") || stat(gitdir, &st))
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		read_line(gitdir, line, sizeof(line));
		if (strncmp(line, "gitdir: ", 8) || path_from(gitdir, size, root, line + 8))
			return -1;
	}
	if (path_from(common, size, gitdir, "commondir"))
		return -1;
	read_line(common, line, sizeof(line));
	return path_from(common, size, gitdir, line[0] ? line : ".");
}

/* HEAD's commit of the lab's git repository, without running git. */
static char *git_commit(char *buf, size_t size)
{
	char root[PATH_MAX], gitdir[PATH_MAX], common[PATH_MAX];
	char path[PATH_MAX + 512], line[512], ref[256];
	FILE *f;

	if (cmdline_value("lab.commit", buf, size) || lab_root(root, sizeof(root)))
		return buf[0] ? buf : NULL;
	if (git_dirs(root, gitdir, common, sizeof(gitdir)))
		return NULL;
	snprintf(path, sizeof(path), "%s/HEAD", gitdir);
	read_line(path, line, sizeof(line));
	if (strncmp(line, "ref: ", 5)) {
		snprintf(buf, size, "%s", line);
		return strlen(buf) == 40 ? buf : NULL;
	}
	snprintf(ref, sizeof(ref), "%.250s", line + 5);
	snprintf(path, sizeof(path), "%s/%s", common, ref);
	if (read_line(path, buf, size)[0])
		return buf;
	snprintf(path, sizeof(path), "%s/packed-refs", common);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	buf[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line) > 41 && !strcmp(line + 41, ref)) {
			snprintf(buf, size, "%.40s", line);
			break;
		}
	}
	fclose(f);
	return buf[0] ? buf : NULL;
}

/* The value of "key : value" in /proc/cpuinfo, first CPU. */
static char *cpuinfo(const char *key, char *buf, size_t size)
{
	char line[1024];
	FILE *f = fopen("/proc/cpuinfo", "r");

	buf[0] = '\0';
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon || strncmp(line, key, strlen(key)))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, size, "%s", colon + 1 + (colon[1] == ' '));
		break;
	}
	fclose(f);
	return buf[0] ? buf : NULL;
}

const char *lab_variant(const char *release, char *buf, size_t size)
{
	const char *lab = strstr(release, "-lab");

	if (cmdline_value("lab.variant", buf, size))
		return buf;
	if (!lab)
		return NULL;
	if (lab[4] == '\0')
		return "stock";
	if (lab[4] == '-') {
		snprintf(buf, size, "%s", lab + 5);
		return buf;
	}
	return NULL;
}

/* none, voluntary, full or rt, as the scheduler runs now. */
static const char *preemption_of(const char *version, char *buf, size_t size)
{
	char line[256], *open, *close;

	if (strstr(version, "PREEMPT_RT"))
		return "rt";
	/* PREEMPT_DYNAMIC: "none voluntary (full)" names the one in force. */
	read_line("/sys/kernel/debug/sched/preempt", line, sizeof(line));
	open = strchr(line, '(');
	close = open ? strchr(open, ')') : NULL;
	if (open && close) {
		snprintf(buf, size, "%.*s", (int)(close - open - 1), open + 1);
		return buf;
	}
	if (strstr(version, "PREEMPT_DYNAMIC"))
		return "dynamic (debugfs not mounted: mode unknown)";
	if (strstr(version, "PREEMPT "))
		return "full";
	return "none or voluntary";
}

/*
 * The first line of the text attribute @path into @buf ("" if it cannot
 * be read); NULL for a binary one (a NUL byte in what it gives, as in the
 * u64 counts of the delay module's stats/by_call).
 */
static char *read_text_attr(const char *path, char *buf, size_t size)
{
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	else if (memchr(buf, '\0', (size_t)n))
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/*
 * "name": {"parameters": {...}, "stats": {...}} of a loaded module: its
 * text attributes (a binary one is no setting to record, and no string).
 */
static void module_json(struct lab_json *j, const char *mod)
{
	static const char *const groups[] = { "parameters", "stats" };
	char path[512], file[1024], val[512];
	struct dirent *de;
	DIR *d;
	int g;

	lab_json_object(j, mod);
	for (g = 0; g < 2; g++) {
		lab_json_object(j, groups[g]);
		snprintf(path, sizeof(path), "/sys/module/%s/%s", mod, groups[g]);
		d = opendir(path);
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
			if (read_text_attr(file, val, sizeof(val)))
				lab_json_str(j, de->d_name, val);
		}
		if (d)
			closedir(d);
		lab_json_end(j);
	}
	lab_json_end(j);
}

/*
 * The guest's clock (scripts/vm.sh puts lab.clock and lab.icount_shift on
 * its command line): {"kind": "host"}, or {"kind": "virtual", "shift": N}
 * when QEMU's instruction counter drives it (one instruction = 2^N ns);
 * null outside a lab VM.
 */
static void clock_json(struct lab_json *j)
{
	char kind[32], shift[32];

	if (!cmdline_value("lab.clock", kind, sizeof(kind))) {
		lab_json_null(j, "clock");
		return;
	}
	lab_json_object(j, "clock");
	lab_json_str(j, "kind", kind);
	if (cmdline_value("lab.icount_shift", shift, sizeof(shift)))
		lab_json_int(j, "shift", atoi(shift));
	lab_json_end(j);
}

/*
 * "mitigations": {"spectre_v2": "Mitigation: ...", ...}, what the kernel
 * says of each CPU vulnerability, in its names' order; {} where the
 * kernel has no such folder.
 */
static void mitigations_json(struct lab_json *j)
{
	static const char dir[] = "/sys/devices/system/cpu/vulnerabilities";
	char file[512], val[512];
	struct dirent **names;
	int n, i;

	lab_json_object(j, "mitigations");
	n = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		snprintf(file, sizeof(file), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && read_text_attr(file, val, sizeof(val)))
			lab_json_str(j, names[i]->d_name, val);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	lab_json_end(j);
}

/*
 * The kernel: release, version, the lab's variant, the preemption model in
 * force, the command line it booted with (what 'compare' sets side by
 * side: preempt=, mitigations= ...) and the mitigations in force.
 */
static void kernel_json(struct lab_json *j, const struct utsname *u)
{
	char variant[64], preempt[128], cmdline[4096];

	lab_json_object(j, "kernel");
	lab_json_str(j, "release", u->release);
	lab_json_str(j, "version", u->version);
	lab_json_str(j, "variant", lab_variant(u->release, variant, sizeof(variant)));
	lab_json_str(j, "preemption", preemption_of(u->version, preempt, sizeof(preempt)));
	lab_json_str(j, "cmdline", read_line("/proc/cmdline", cmdline, sizeof(cmdline)));
	mitigations_json(j);
	lab_json_end(j);
}

static void machine_json(struct lab_json *j)
{
	char model[256], accel[64], why[256], qemu[64];
	const char *acc;
	int virt;

	/* TCG does not set the hypervisor flag; scripts/vm.sh names the accelerator. */
	acc = cmdline_value("lab.accel", accel, sizeof(accel));
	virt = (cpuinfo("flags", model, sizeof(model)) && strstr(model, "hypervisor")) || acc;

	lab_json_object(j, "machine");
	lab_json_str(j, "cpu_model", cpuinfo("model name", model, sizeof(model)));
	lab_json_int(j, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
	lab_json_bool(j, "virtual", virt);
	lab_json_str(j, "accelerator", acc ? acc : virt ? "unknown" : "none");
	lab_json_str(j, "accelerator_why", cmdline_value("lab.accel_why", why, sizeof(why)));
	lab_json_str(j, "qemu", cmdline_value("lab.qemu", qemu, sizeof(qemu)));
	lab_json_bool(j, "pmu", !access("/sys/bus/event_source/devices/cpu", F_OK));
	clock_json(j);
	lab_json_end(j);
}

int lab_meta_write(const struct lab_result *r, int argc, char *const argv[],
		   const char *settings_json)
{
	static const char *const lab_modules[] = { "delay" };
	char stamp[32], commit[128], path[128];
	struct utsname u;
	struct lab_json j;
	time_t now = time(NULL);
	int i, err;
	size_t m;
	FILE *f;

	f = lab_result_file(r, "meta.json");
	if (!f)
		return -1;
	uname(&u);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

	lab_json_file(&j, f, 0);
	lab_json_object(&j, NULL);
	lab_json_break(&j);
	lab_json_str(&j, "experiment", r->experiment);
	lab_json_break(&j);
	lab_json_str(&j, "date", stamp);
	lab_json_break(&j);
	lab_json_array(&j, "command");
	for (i = 0; i < argc; i++)
		lab_json_str(&j, NULL, argv[i]);
	lab_json_end(&j);
	lab_json_break(&j);
	lab_json_str(&j, "lab_commit", git_commit(commit, sizeof(commit)));
	lab_json_break(&j);
	kernel_json(&j, &u);
	lab_json_break(&j);
	machine_json(&j);
	lab_json_break(&j);
	lab_json_object(&j, "modules");
	for (m = 0; m < sizeof(lab_modules) / sizeof(lab_modules[0]); m++) {
		snprintf(path, sizeof(path), "/sys/module/%s", lab_modules[m]);
		if (!access(path, F_OK))
			module_json(&j, lab_modules[m]);
	}
	lab_json_end(&j);
	lab_json_break(&j);
	lab_json_raw(&j, "settings", settings_json ? settings_json : "{}");
	lab_json_break(&j);
	lab_json_end(&j);
	fputc('\n', f);
	err = j.err;
	if (fclose(f) || err) {
		if (err)
			errno = err;
		return -1;
	}
	return 0;
}

int lab_result_open(struct lab_result *r, const char *prog, const char *parent,
		    const char *experiment, const char *name, int argc, char *const argv[],
		    const char *settings_json)
{
	int err;

	if (lab_result_begin(r, parent, experiment, name) == 0 &&
	    (!argv || lab_meta_write(r, argc, argv, settings_json) == 0))
		return 0;
	err = errno;
	fprintf(stderr, "%s: cannot create a result folder in %s: %s\n", prog, parent,
		strerror(err));
	lab_result_abort(r);
	errno = err;
	return -1;
}
