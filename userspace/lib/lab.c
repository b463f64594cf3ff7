// SPDX-License-Identifier: GPL-2.0
/*
 * lab - liblab for shell scripts: the one list syntax, result folders and
 * meta.json, so that workloads/sweep.sh and the experiment runners do not
 * parse or write them a second way.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "liblab.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: lab list LIST [MAX]       print the numbers of LIST, one a line\n"
"       lab cpus CPUS             print the CPUs of a -C value ('0-3,6'), one a line\n"
"       lab begin PARENT EXPERIMENT [NAME]\n"
"                                 create PARENT/EXPERIMENT-<time>.incomplete/\n"
"                                 (or PARENT/NAME.incomplete/), print its path\n"
"       lab commit DIR [EXPERIMENT]\n"
"                                 rename DIR (NAME.incomplete) to NAME; with\n"
"                                 EXPERIMENT, point PARENT/latest-EXPERIMENT at it\n"
"       lab meta DIR EXPERIMENT [KEY=TEXT | KEY:=JSON]... [-- COMMAND...]\n"
"                                 write DIR/meta.json, settings from the pairs\n"
"                                 (GROUP.KEY=... nests KEY in the object GROUP)\n"
"       lab variant               the lab kernel variant running (stock, rt ...),\n"
"                                 as meta.json records it\n"
"       lab tsc-hz                the TSC frequency and where it came from\n"
"\n"
"LIST is '0,50,100', 'start:stop:step' (stop included) or a mix: '0:200:50,400'.\n"
"\n"
"Example:  lab list 0:700:50\n");
}

/* lab cpus LIST: the CPUs of a -C value, one a line, as every tool reads it. */
static int cmd_cpus(int argc, char **argv)
{
	char why[96];
	int *cpus, n, i;

	if (argc != 3) {
		usage(stderr);
		return 2;
	}
	n = lab_parse_cpus(argv[2], &cpus, why, sizeof(why));
	if (n < 0) {
		fprintf(stderr, "lab: cpus wants a CPU list like '0-3,6', not '%s' (%s)\n",
			argv[2], why);
		return 2;
	}
	for (i = 0; i < n; i++)
		printf("%d\n", cpus[i]);
	free(cpus);
	return 0;
}

static int cmd_list(int argc, char **argv)
{
	unsigned long *v, max = (unsigned long)-1;
	int n, i;

	if (argc < 3 || argc > 4) {
		usage(stderr);
		return 2;
	}
	if (argc == 4)
		max = lab_opt_ulong("lab", "MAX", argv[3], 0, (unsigned long)-1);
	n = lab_opt_list("lab", "list", argv[2], 0, max, &v);
	for (i = 0; i < n; i++)
		printf("%lu\n", v[i]);
	free(v);
	return 0;
}

static int cmd_begin(int argc, char **argv)
{
	struct lab_result r;

	if (argc < 4 || argc > 5) {
		usage(stderr);
		return 2;
	}
	if (lab_result_begin(&r, argv[2], argv[3], argc == 5 ? argv[4] : NULL)) {
		fprintf(stderr, "lab: cannot create a result folder in %s: %s\n", argv[2],
			strerror(errno));
		return 1;
	}
	printf("%s\n", r.dir);
	return 0;
}

/* Rebuild the lab_result of a folder made by 'lab begin'. */
static int result_of(const char *dir, const char *experiment, struct lab_result *r)
{
	char a[sizeof(r->dir)], b[sizeof(r->dir)];
	size_t len = strlen(dir), suffix = strlen(".incomplete");

	memset(r, 0, sizeof(*r));
	if (len >= sizeof(a) || len <= suffix || strcmp(dir + len - suffix, ".incomplete"))
		return -1;
	snprintf(a, sizeof(a), "%s", dir);
	snprintf(b, sizeof(b), "%s", dir);
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	snprintf(r->parent, sizeof(r->parent), "%s", dirname(a));
	snprintf(r->base, sizeof(r->base), "%.*s", (int)(strlen(basename(b)) - suffix),
		 basename(b));
	snprintf(r->final, sizeof(r->final), "%s/%s", r->parent, r->base);
	snprintf(r->experiment, sizeof(r->experiment), "%s", experiment ? experiment : "");
	r->named = experiment == NULL;
	return 0;
}

static int cmd_commit(int argc, char **argv)
{
	struct lab_result r;

	if (argc < 3 || argc > 4) {
		usage(stderr);
		return 2;
	}
	if (result_of(argv[2], argc == 4 ? argv[3] : NULL, &r)) {
		fprintf(stderr, "lab: %s is not a NAME.incomplete result folder\n", argv[2]);
		return 2;
	}
	if (lab_result_commit(&r)) {
		fprintf(stderr, "lab: cannot commit %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	printf("%s\n", r.final);
	return 0;
}

/*
 * The settings object of 'lab meta' from KEY=TEXT and KEY:=JSON pairs.  A
 * key GROUP.NAME puts NAME into the object GROUP (pairs of one group given
 * one after the other).
 */
static char *settings_from_pairs(int argc, char **argv)
{
	char *eq, *key, *dot, group[128] = "";
	struct lab_json j;
	int i, n = 0;

	if (lab_json_mem(&j, 1))
		return NULL;
	lab_json_object(&j, NULL);
	for (i = 0; i < argc; i++) {
		eq = strchr(argv[i], '=');
		if (!eq || eq == argv[i] || (eq[-1] == ':' && eq - 1 == argv[i])) {
			fprintf(stderr, "lab: meta settings are KEY=TEXT or KEY:=JSON, not '%s'\n",
				argv[i]);
			exit(2);
		}
		key = strndup(argv[i], (size_t)(eq - argv[i] - (eq[-1] == ':')));
		if (!key)
			return NULL;
		dot = strchr(key, '.');
		if (group[0] && (!dot || strncmp(key, group, (size_t)(dot - key)) ||
				 group[dot - key])) {
			lab_json_end(&j);
			group[0] = '\0';
		}
		if (dot && !group[0]) {
			snprintf(group, sizeof(group), "%.*s", (int)(dot - key), key);
			lab_json_break(&j);
			lab_json_object(&j, group);
		}
		if (!dot)
			lab_json_break(&j);
		if (eq[-1] == ':')
			lab_json_raw(&j, dot ? dot + 1 : key, eq + 1);
		else
			lab_json_str(&j, dot ? dot + 1 : key, eq + 1);
		free(key);
		n++;
	}
	if (group[0])
		lab_json_end(&j);
	if (n)
		lab_json_break(&j);
	lab_json_end(&j);
	return lab_json_text(&j);
}

static int cmd_meta(int argc, char **argv)
{
	struct lab_result r;
	char *settings;
	int i, npairs = argc - 4, cmd_at = argc;

	if (argc < 4) {
		usage(stderr);
		return 2;
	}
	memset(&r, 0, sizeof(r));
	snprintf(r.dir, sizeof(r.dir), "%s", argv[2]);
	snprintf(r.experiment, sizeof(r.experiment), "%s", argv[3]);
	for (i = 4; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			npairs = i - 4;
			cmd_at = i + 1;
			break;
		}
	settings = settings_from_pairs(npairs, argv + 4);
	if (!settings || lab_meta_write(&r, argc - cmd_at, argv + cmd_at, settings)) {
		fprintf(stderr, "lab: cannot write %s/meta.json: %s\n", r.dir, strerror(errno));
		return 1;
	}
	free(settings);
	return 0;
}

static int cmd_variant(void)
{
	struct utsname u;
	char buf[64];
	const char *v;

	uname(&u);
	v = lab_variant(u.release, buf, sizeof(buf));
	if (!v) {
		fprintf(stderr, "lab: kernel %s is no lab kernel variant\n", u.release);
		return 1;
	}
	printf("%s\n", v);
	return 0;
}

int main(int argc, char **argv)
{
	const char *source;
	double hz;

	lab_opt_command(argc, argv, usage);
	if (!strcmp(argv[1], "cpus"))
		return cmd_cpus(argc, argv);
	if (!strcmp(argv[1], "list"))
		return cmd_list(argc, argv);
	if (!strcmp(argv[1], "begin"))
		return cmd_begin(argc, argv);
	if (!strcmp(argv[1], "commit"))
		return cmd_commit(argc, argv);
	if (!strcmp(argv[1], "meta"))
		return cmd_meta(argc, argv);
	if (!strcmp(argv[1], "variant") && argc == 2)
		return cmd_variant();
	if (!strcmp(argv[1], "tsc-hz") && argc == 2) {
		hz = lab_tsc_hz(&source);
		printf("%.0f\t%s\n", hz, source);
		return hz > 0 ? 0 : 1;
	}
	fprintf(stderr, "lab: unknown command '%s' (see lab --help)\n", argv[1]);
	return 2;
}
