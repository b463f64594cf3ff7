// SPDX-License-Identifier: GPL-2.0
/*
 * Result folders: written as NAME.incomplete, renamed when complete, with
 * a meta.json that says where and how the numbers were taken.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

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

/* HEAD's commit of the lab's git repository, without running git. */
static char *git_commit(char *buf, size_t size)
{
	char root[PATH_MAX], path[PATH_MAX + 512], line[512], ref[256];
	FILE *f;

	if (cmdline_value("lab.commit", buf, size) || lab_root(root, sizeof(root)))
		return buf[0] ? buf : NULL;
	snprintf(path, sizeof(path), "%s/.git/HEAD", root);
	read_line(path, line, sizeof(line));
	if (strncmp(line, "ref: ", 5)) {
		snprintf(buf, size, "%s", line);
		return strlen(buf) == 40 ? buf : NULL;
	}
	snprintf(ref, sizeof(ref), "%.250s", line + 5);
	snprintf(path, sizeof(path), "%s/.git/%s", root, ref);
	if (read_line(path, buf, size)[0])
		return buf;
	snprintf(path, sizeof(path), "%s/.git/packed-refs", root);
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

static void json_or_null(FILE *f, const char *s)
{
	if (s)
		lab_json_string(f, s);
	else
		fputs("null", f);
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

static const char *variant_of(const char *release, char *buf, size_t size)
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

/* "name": {"parameters": {...}, "stats": {...}} of a loaded module. */
static void module_json(FILE *f, const char *mod)
{
	static const char *const groups[] = { "parameters", "stats" };
	char path[512], file[1024], val[512];
	struct dirent *de;
	int g, first;
	DIR *d;

	fprintf(f, "\"%s\": {", mod);
	for (g = 0; g < 2; g++) {
		fprintf(f, "%s\"%s\": {", g ? ", " : "", groups[g]);
		snprintf(path, sizeof(path), "/sys/module/%s/%s", mod, groups[g]);
		d = opendir(path);
		first = 1;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
			fprintf(f, "%s\"%s\": ", first ? "" : ", ", de->d_name);
			lab_json_string(f, read_line(file, val, sizeof(val)));
			first = 0;
		}
		if (d)
			closedir(d);
		fputc('}', f);
	}
	fputc('}', f);
}

/*
 * The guest's clock (scripts/vm.sh puts lab.clock and lab.icount_shift on
 * its command line): {"kind": "host"}, or {"kind": "virtual", "shift": N}
 * when QEMU's instruction counter drives it (one instruction = 2^N ns);
 * null outside a lab VM.
 */
static void clock_json(FILE *f)
{
	char kind[32], shift[32];

	if (!cmdline_value("lab.clock", kind, sizeof(kind))) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"kind\": ");
	lab_json_string(f, kind);
	if (cmdline_value("lab.icount_shift", shift, sizeof(shift)))
		fprintf(f, ", \"shift\": %d", atoi(shift));
	fputc('}', f);
}

int lab_meta_write(const struct lab_result *r, int argc, char *const argv[],
		   const char *settings_json)
{
	static const char *const lab_modules[] = { "delay" };
	char stamp[32], commit[128], variant[64], preempt[128], model[256];
	char accel[64], why[256], qemu[64];
	const char *acc;
	struct utsname u;
	time_t now = time(NULL);
	int i, virt, first;
	size_t m;
	FILE *f;

	f = lab_result_file(r, "meta.json");
	if (!f)
		return -1;
	uname(&u);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	/* TCG does not set the hypervisor flag; scripts/vm.sh names the accelerator. */
	acc = cmdline_value("lab.accel", accel, sizeof(accel));
	virt = (cpuinfo("flags", model, sizeof(model)) && strstr(model, "hypervisor")) || acc;

	fprintf(f, "{\n  \"experiment\": ");
	lab_json_string(f, r->experiment);
	fprintf(f, ",\n  \"date\": \"%s\",\n  \"command\": [", stamp);
	for (i = 0; i < argc; i++) {
		fputs(i ? ", " : "", f);
		lab_json_string(f, argv[i]);
	}
	fprintf(f, "],\n  \"lab_commit\": ");
	json_or_null(f, git_commit(commit, sizeof(commit)));
	fprintf(f, ",\n  \"kernel\": {\"release\": ");
	lab_json_string(f, u.release);
	fprintf(f, ", \"version\": ");
	lab_json_string(f, u.version);
	fprintf(f, ", \"variant\": ");
	json_or_null(f, variant_of(u.release, variant, sizeof(variant)));
	fprintf(f, ", \"preemption\": ");
	json_or_null(f, preemption_of(u.version, preempt, sizeof(preempt)));
	fprintf(f, "},\n  \"machine\": {\"cpu_model\": ");
	json_or_null(f, cpuinfo("model name", model, sizeof(model)));
	fprintf(f, ", \"cpus\": %ld, \"virtual\": %s, \"accelerator\": ",
		sysconf(_SC_NPROCESSORS_ONLN), virt ? "true" : "false");
	json_or_null(f, acc ? acc : virt ? "unknown" : "none");
	fprintf(f, ", \"accelerator_why\": ");
	json_or_null(f, cmdline_value("lab.accel_why", why, sizeof(why)));
	fprintf(f, ", \"qemu\": ");
	json_or_null(f, cmdline_value("lab.qemu", qemu, sizeof(qemu)));
	fprintf(f, ", \"pmu\": %s, \"clock\": ",
		access("/sys/bus/event_source/devices/cpu", F_OK) ? "false" : "true");
	clock_json(f);
	fprintf(f, "},\n  \"modules\": {");
	first = 1;
	for (m = 0; m < sizeof(lab_modules) / sizeof(lab_modules[0]); m++) {
		char path[128];

		snprintf(path, sizeof(path), "/sys/module/%s", lab_modules[m]);
		if (access(path, F_OK))
			continue;
		fputs(first ? "" : ", ", f);
		module_json(f, lab_modules[m]);
		first = 0;
	}
	fprintf(f, "},\n  \"settings\": %s\n}\n", settings_json ? settings_json : "{}");
	return fclose(f);
}
