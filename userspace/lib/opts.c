// SPDX-License-Identifier: GPL-2.0
/*
 * A tool's options from one table (struct lab_tool): the getopt tables,
 * the checks and their one-line errors, the usage text with each default,
 * and the settings of meta.json.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "liblab.h"

#define HELP_COLUMN 24		/* where an option's text starts */
#define LONG_ONLY 256		/* getopt codes of options without a letter */
#define NAME_CODE 0x4c4e	/* --name's, above any option's own */
#define MAX_OPTS 64
#define RESULTS "results"	/* -o's default: the folder a result folder goes in */

/* Each option's default as text, taken before parsing, for the usage text,
 * and whether it was given. */
static char *defaults[MAX_OPTS];
static int given[MAX_OPTS], parsed;

static int count(const struct lab_tool *t)
{
	int n = 0;

	while (t->opts[n].name || t->opts[n].letter)
		n++;
	return n;
}

/* "--loops" (or "-n" for an option with a letter only), for messages. */
static const char *display(const struct lab_opt *o, char *buf, size_t len)
{
	if (o->name)
		snprintf(buf, len, "--%s", o->name);
	else
		snprintf(buf, len, "-%c", o->letter);
	return buf;
}

static char *show(const struct lab_opt *o)
{
	char buf[64];

	switch (o->kind) {
	case LAB_OPT_ULONG:
		snprintf(buf, sizeof(buf), "%lu", *(unsigned long *)o->value);
		return strdup(buf);
	case LAB_OPT_STR:
	case LAB_OPT_NAME:
		return *(const char **)o->value ? strdup(*(const char **)o->value) : NULL;
	case LAB_OPT_LIST:
		return strdup(((struct lab_opt_list *)o->value)->text);
	case LAB_OPT_CPU:
		if (*(int *)o->value < 0)
			return strdup("none");
		snprintf(buf, sizeof(buf), "%d", *(int *)o->value);
		return strdup(buf);
	case LAB_OPT_CHOICE:
		return strdup(o->choices[*(int *)o->value]);
	case LAB_OPT_CPUS:
		return ((struct lab_opt_cpus *)o->value)->n ? NULL : strdup("none");
	case LAB_OPT_CUSTOM:
		return o->show ? o->show(o->value) : NULL;
	default:
		return NULL;
	}
}

/* Letters, digits, '.', '_' and '-', at least one. */
static int plain_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return 0;
	return 1;
}

static void choice(const struct lab_opt *o, const char *prog, const char *opt,
		   const char *arg)
{
	int i;

	for (i = 0; o->choices[i]; i++) {
		if (!strcmp(o->choices[i], arg)) {
			*(int *)o->value = i;
			return;
		}
	}
	fprintf(stderr, "%s: %s wants ", prog, opt);
	for (i = 0; o->choices[i]; i++)
		fprintf(stderr, "%s%s", i ? (o->choices[i + 1] ? ", " : " or ") : "",
			o->choices[i]);
	fprintf(stderr, ", not '%s'\n", arg);
	exit(2);
}

static void take(const struct lab_opt *o, const char *prog, const char *arg)
{
	char opt[64];

	display(o, opt, sizeof(opt));
	switch (o->kind) {
	case LAB_OPT_FLAG:
		*(int *)o->value = 1;
		break;
	case LAB_OPT_ULONG:
		*(unsigned long *)o->value = lab_opt_ulong(prog, opt, arg, o->min, o->max);
		break;
	case LAB_OPT_STR:
		*(const char **)o->value = arg;
		break;
	case LAB_OPT_NAME:
		if (!plain_name(arg)) {
			fprintf(stderr, "%s: %s wants a name of letters, digits, '.', '_' and '-', "
				"not '%s'\n", prog, opt, arg);
			exit(2);
		}
		*(const char **)o->value = arg;
		break;
	case LAB_OPT_LIST:
		((struct lab_opt_list *)o->value)->text = arg;
		break;
	case LAB_OPT_CPU:
		*(int *)o->value = lab_opt_one_cpu(prog, opt, arg);
		break;
	case LAB_OPT_CHOICE:
		choice(o, prog, opt, arg);
		break;
	case LAB_OPT_CPUS:
		((struct lab_opt_cpus *)o->value)->n =
			lab_opt_cpus(prog, opt, arg, o->max ? (int)o->max : CPU_SETSIZE,
				     &((struct lab_opt_cpus *)o->value)->v);
		break;
	case LAB_OPT_CUSTOM:
		o->parse(o->value, prog, opt, arg);
		break;
	}
}

int lab_opts_parse(const struct lab_tool *t, int argc, char **argv, int operands)
{
	struct option longopts[MAX_OPTS + 5];
	char shortopts[2 * MAX_OPTS + 9], opt[64];
	int n = count(t), i, c, k = 0, s = 0;

	shortopts[s++] = ':';	/* a missing value is ':', not '?' */

	if (n > MAX_OPTS) {
		fprintf(stderr, "%s: %d options, more than the %d liblab takes\n", t->prog, n,
			MAX_OPTS);
		exit(2);
	}
	for (i = 0; i < n; i++) {
		const struct lab_opt *o = &t->opts[i];
		int has_arg = o->kind == LAB_OPT_FLAG ? no_argument : required_argument;

		free(defaults[i]);
		defaults[i] = show(o);
		given[i] = 0;
		if (o->name)
			longopts[k++] = (struct option){ o->name, has_arg, NULL,
							 o->letter ? o->letter : LONG_ONLY + i };
		if (o->letter) {
			shortopts[s++] = (char)o->letter;
			if (has_arg == required_argument)
				shortopts[s++] = ':';
		}
	}
	parsed = 1;
	if (t->common) {
		if (!t->common->outdir)
			t->common->outdir = RESULTS;
		longopts[k++] = (struct option){ "output", required_argument, NULL, 'o' };
		longopts[k++] = (struct option){ "name", required_argument, NULL, NAME_CODE };
		longopts[k++] = (struct option){ "quiet", no_argument, NULL, 'q' };
		memcpy(shortopts + s, "o:q", 3);
		s += 3;
	}
	longopts[k++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[k] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[s++] = 'h';
	shortopts[s] = '\0';

	opterr = 0;	/* our own message, naming the tool */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		for (i = 0; i < n; i++)
			if (c == (t->opts[i].letter ? t->opts[i].letter : LONG_ONLY + i))
				break;
		if (i < n) {
			take(&t->opts[i], t->prog, optarg);
			given[i] = 1;
		} else if (c == 'h') {
			lab_opts_usage(t, stdout);
			exit(0);
		} else if (t->common && c == 'o') {
			t->common->outdir = optarg;
		} else if (t->common && c == 'q') {
			t->common->quiet = 1;
		} else if (t->common && c == NAME_CODE) {
			if (!*optarg || strchr(optarg, '/')) {
				fprintf(stderr, "%s: --name wants a folder name without '/', not '%s'\n",
					t->prog, optarg);
				exit(2);
			}
			t->common->name = optarg;
		} else {
			fprintf(stderr, c == ':' ? "%s: %s wants a value (see --help)\n" :
				"%s: unknown option '%s' (see --help)\n", t->prog, argv[optind - 1]);
			exit(2);
		}
	}
	if (!operands && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", t->prog, argv[optind]);
		exit(2);
	}
	for (i = 0; i < n; i++) {
		const struct lab_opt *o = &t->opts[i];
		struct lab_opt_list *l = o->value;

		if (o->kind == LAB_OPT_LIST)
			l->n = lab_opt_list(t->prog, display(o, opt, sizeof(opt)), l->text, o->min,
					    o->max, &l->v);
	}
	return optind;
}

/* One option's lines of the usage text. */
static void usage_line(FILE *f, const struct lab_opt *o, const char *dflt)
{
	const char *help = o->help, *nl;
	int col;

	if (o->letter && o->name)
		col = fprintf(f, "  -%c, --%s", o->letter, o->name);
	else if (o->letter)
		col = fprintf(f, "  -%c", o->letter);
	else
		col = fprintf(f, "      --%s", o->name);
	if (o->kind != LAB_OPT_FLAG)
		col += fprintf(f, " %s", o->arg ? o->arg : "N");
	if (col + 2 > HELP_COLUMN) {
		fputc('\n', f);
		col = 0;
	}
	fprintf(f, "%*s", HELP_COLUMN - col, "");
	while ((nl = strchr(help, '\n'))) {
		fprintf(f, "%.*s\n%*s", (int)(nl - help), help, HELP_COLUMN, "");
		help = nl + 1;
	}
	fputs(help, f);
	if (dflt && !strstr(o->help, "(default")) {
		/* On the last line if it fits in 80 columns, else on one of its own. */
		if (HELP_COLUMN + strlen(help) + strlen(dflt) + 11 > 79)
			fprintf(f, "\n%*s(default %s)", HELP_COLUMN, "", dflt);
		else
			fprintf(f, " (default %s)", dflt);
	}
	fputc('\n', f);
}

void lab_opts_usage(const struct lab_tool *t, FILE *f)
{
	int i, n = count(t);

	fprintf(f, "%s\n\n", t->about);
	for (i = 0; i < n; i++) {
		char *now = parsed ? NULL : show(&t->opts[i]);	/* -h before any parsing */

		usage_line(f, &t->opts[i], parsed ? defaults[i] : now);
		free(now);
	}
	if (t->common) {
		fputs("  -o, --output DIR      parent of the result folder (default " RESULTS ")\n"
		      "      --name NAME       the result folder's name instead of the dated one\n"
		      "  -q, --quiet           no progress lines\n", f);
	}
	fputs("  -h, --help            this text\n", f);
	if (t->notes)
		fprintf(f, "\n%s\n", t->notes);
	fprintf(f, "\nExample:  %s\n", t->example);
}

int lab_opts_given(const struct lab_tool *t, const void *value)
{
	for (int i = 0, n = count(t); i < n; i++)
		if (t->opts[i].value == value)
			return given[i];
	return 0;
}

void lab_opts_json(struct lab_json *j, const struct lab_tool *t)
{
	const struct lab_opt_list *l;
	int i, k, n = count(t);

	for (i = 0; i < n; i++) {
		const struct lab_opt *o = &t->opts[i];

		if (!o->json)
			continue;
		if (o->write) {
			o->write(j, o->json, o->value);
			continue;
		}
		switch (o->kind) {
		case LAB_OPT_FLAG:
			lab_json_bool(j, o->json, *(int *)o->value);
			break;
		case LAB_OPT_ULONG:
			lab_json_uint(j, o->json, *(unsigned long *)o->value);
			break;
		case LAB_OPT_STR:
		case LAB_OPT_NAME:
			if (*(const char **)o->value)
				lab_json_str(j, o->json, *(const char **)o->value);
			else
				lab_json_null(j, o->json);
			break;
		case LAB_OPT_LIST:
			l = o->value;
			lab_json_array(j, o->json);
			for (k = 0; k < l->n; k++)
				lab_json_uint(j, NULL, l->v[k]);
			lab_json_end(j);
			break;
		case LAB_OPT_CPU:	/* "none": null */
			if (*(int *)o->value < 0)
				lab_json_null(j, o->json);
			else
				lab_json_int(j, o->json, *(int *)o->value);
			break;
		case LAB_OPT_CHOICE:
			lab_json_str(j, o->json, o->choices[*(int *)o->value]);
			break;
		case LAB_OPT_CPUS:
			lab_json_array(j, o->json);
			for (k = 0; k < ((struct lab_opt_cpus *)o->value)->n; k++)
				lab_json_int(j, NULL, ((struct lab_opt_cpus *)o->value)->v[k]);
			lab_json_end(j);
			break;
		case LAB_OPT_CUSTOM:	/* its @write, above */
			break;
		}
	}
}
