// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of liblab, in TAP: each check is named and a failure says what
 * was expected and what came back.  Run by 'make test' (tests/host).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "liblab.h"

static int n_tests, n_failed;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++n_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		n_failed++;
}

static void check_near(double got, double want, double tol, const char *what)
{
	int ok = fabs(got - want) <= tol;

	check(ok, "%s", what);
	if (!ok)
		printf("#   expected %.9g (+/- %g), got %.9g\n", want, tol, got);
}

static void test_percentile(void)
{
	double v[] = { 1, 2, 3, 4, 5 };
	double one[] = { 7 };

	check_near(lab_percentile(v, 5, 50), 3, 0, "median of 1..5 is 3");
	check_near(lab_percentile(v, 5, 0), 1, 0, "p0 is the minimum");
	check_near(lab_percentile(v, 5, 100), 5, 0, "p100 is the maximum");
	check_near(lab_percentile(v, 5, 90), 4.6, 1e-12, "p90 interpolates between ranks");
	check_near(lab_percentile(v, 4, 50), 2.5, 1e-12, "median of an even count is the midpoint");
	check_near(lab_percentile(one, 1, 99.9), 7, 0, "any percentile of one value is that value");
	check(isnan(lab_percentile(v, 0, 50)), "percentile of nothing is NaN");
}

static void test_summary(void)
{
	double v[] = { 9, 2, 5, 4, 12, 7, 8, 11, 9, 3, 7, 4, 12, 5, 4, 10, 9, 6, 9, 4 };
	double big[] = { 1e9 + 1, 1e9 + 2, 1e9 + 3 };
	struct lab_summary s;

	check(lab_summarize(v, 20, &s) == 0, "summarize 20 values");
	check(s.n == 20, "count is 20");
	check_near(s.mean, 7, 1e-12, "mean of the sample is 7");
	check_near(s.stddev, sqrt(178.0 / 19.0), 1e-12, "sample stddev uses n - 1");
	check_near(s.min, 2, 0, "min");
	check_near(s.max, 12, 0, "max");
	check_near(s.p50, 7, 0, "median");
	check(v[0] == 9 && v[19] == 4, "input is left unsorted");

	check(lab_summarize(big, 3, &s) == 0 && fabs(s.stddev - 1) < 1e-6,
	      "stddev is exact for large values with a small spread");
	errno = 0;
	check(lab_summarize(v, 0, &s) == -1 && errno == EINVAL, "no values: EINVAL");
}

static void test_linfit(void)
{
	double x[] = { 0, 50, 100, 150, 200 };
	double y[5], noisy[] = { 10.5, 59.5, 110.5, 159.5, 210.0 };
	double flat[] = { 3, 3, 3, 3, 3 };
	double same_x[] = { 1, 1, 1 };
	struct lab_fit f;
	int i;

	for (i = 0; i < 5; i++)
		y[i] = 590 + 1.25 * x[i];
	check(lab_linfit(x, y, 5, &f) == 0, "fit an exact line");
	check_near(f.intercept, 590, 1e-9, "intercept of an exact line");
	check_near(f.slope, 1.25, 1e-12, "slope of an exact line");
	check_near(f.r2, 1, 1e-12, "R^2 of an exact line is 1");
	check(f.n == 5, "fit records n");

	check(lab_linfit(x, noisy, 5, &f) == 0, "fit a noisy line");
	check_near(f.slope, 0.998, 1e-9, "least-squares slope of the noisy line");
	check_near(f.intercept, 10.2, 1e-9, "least-squares intercept of the noisy line");
	check(f.r2 > 0.999 && f.r2 < 1, "R^2 of the noisy line is just below 1 (%.6f)", f.r2);

	check(lab_linfit(x, flat, 5, &f) == 0 && f.slope == 0 && f.r2 == 1,
	      "a constant fits with slope 0 and R^2 1");
	errno = 0;
	check(lab_linfit(same_x, flat, 3, &f) == -1 && errno == EINVAL, "all x equal: EINVAL");
	errno = 0;
	check(lab_linfit(x, y, 1, &f) == -1 && errno == EINVAL, "one point: EINVAL");
}

static void test_split(void)
{
	double two[] = { 17, 16, 155, 18, 150, 17, 160, 16 };
	double flat[] = { 5, 5, 5 };
	double one[] = { 3 };
	struct lab_split sp;

	check(lab_split2(two, 8, &sp) == 0, "split two clusters");
	check(sp.n_fast == 5 && sp.n_slow == 3, "5 fast and 3 slow (%zu, %zu)", sp.n_fast,
	      sp.n_slow);
	check_near(sp.mean_fast, 16.8, 1e-12, "mean of the fast group");
	check_near(sp.mean_slow, 155, 1e-12, "mean of the slow group");
	check(sp.threshold > 18 && sp.threshold < 150, "threshold between the groups (%g)",
	      sp.threshold);
	check(two[0] == 17 && two[2] == 155, "input is left unsorted");
	check(lab_split2(flat, 3, &sp) == 0 && sp.n_fast == 3 && sp.n_slow == 0,
	      "equal values form one group");
	check(lab_split2(one, 1, &sp) == 0 && sp.n_fast == 1 && sp.n_slow == 0,
	      "one value forms one group");
	errno = 0;
	check(lab_split2(two, 0, &sp) == -1 && errno == EINVAL, "no values: EINVAL");
}

static void test_lists(void)
{
	unsigned long *a;
	int n;

	n = lab_parse_uint_list("0:700:50", &a);
	check(n == 15 && a[0] == 0 && a[14] == 700, "0:700:50 is 15 values, 700 included");
	free(a);
	n = lab_parse_uint_list("0:10:4", &a);
	check(n == 3 && a[2] == 8, "a range whose step overshoots stops before stop");
	free(a);
	n = lab_parse_uint_list("5,0,300", &a);
	check(n == 3 && a[0] == 5 && a[1] == 0 && a[2] == 300, "a comma list keeps its order");
	free(a);
	n = lab_parse_uint_list("0:100:50,400", &a);
	check(n == 4 && a[3] == 400, "ranges and values mix");
	free(a);

	const char *bad[] = { "", "-5", "1,,2", "abc", "1:2", "5:1:1", "0:10:0", "1,", "1 2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		n = lab_parse_uint_list(bad[i], &a);
		check(n == -1 && errno == EINVAL && !a, "'%s' is refused", bad[i]);
	}
}

static void test_files(void)
{
	char dir[] = "/tmp/test_lab.XXXXXX", path[256], sub[256];
	unsigned long v = 0;
	FILE *f;

	if (!mkdtemp(dir)) {
		check(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/param", dir);
	f = fopen(path, "w");
	fclose(f);
	check(lab_write_ulong(path, 250) == 0, "write a number");
	check(lab_read_ulong(path, &v) == 0 && v == 250, "read it back (%lu)", v);
	f = fopen(path, "w");
	fputs("12abc\n", f);
	fclose(f);
	errno = 0;
	check(lab_read_ulong(path, &v) == -1 && errno == EINVAL, "trailing junk is EINVAL");
	snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
	check(lab_mkdirs(sub) == 0 && access(sub, F_OK) == 0, "mkdirs creates every level");
	check(lab_mkdirs(sub) == 0, "mkdirs of an existing folder succeeds");

	f = tmpfile();
	char out[64] = "";
	lab_json_string(f, "a\"b\\c\n");
	rewind(f);
	if (!fgets(out, sizeof(out), f))
		out[0] = '\0';
	fclose(f);
	check(strcmp(out, "\"a\\\"b\\\\c\\u000a\"") == 0, "JSON string escaping (%s)", out);

	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	if (system(sub))
		printf("# could not remove %s\n", dir);
}

/* @text, then free it; "(null)" for NULL. */
static int json_is(char *text, const char *want)
{
	int ok = text && !strcmp(text, want);

	if (!ok)
		printf("#   expected %s\n#   got      %s\n", want, text ? text : "(null)");
	free(text);
	return ok;
}

static void test_json(void)
{
	struct lab_json j;
	char *text;

	lab_json_mem(&j, 0);
	lab_json_object(&j, NULL);
	lab_json_str(&j, "s", "a\"b\\c\n\t\x01/\xc3\xa9");
	lab_json_str(&j, "none", NULL);
	lab_json_int(&j, "i", -42);
	lab_json_uint(&j, "u", 18446744073709551615ULL);
	lab_json_double(&j, "d", 2.5, 3);
	lab_json_double(&j, "g", 0.1, -1);
	lab_json_double(&j, "nan", NAN, 2);
	lab_json_double(&j, "inf", -INFINITY, 2);
	lab_json_bool(&j, "t", 1);
	lab_json_bool(&j, "f", 0);
	lab_json_null(&j, "n");
	lab_json_array(&j, "a");
	lab_json_int(&j, NULL, 1);
	lab_json_object(&j, NULL);
	lab_json_end(&j);
	lab_json_array(&j, NULL);
	lab_json_end(&j);
	lab_json_end(&j);
	lab_json_raw(&j, "raw", "{\"x\": [1]}");
	lab_json_end(&j);
	check(json_is(lab_json_text(&j),
		      "{\"s\": \"a\\\"b\\\\c\\u000a\\u0009\\u0001/\xc3\xa9\", \"none\": null, "
		      "\"i\": -42, \"u\": 18446744073709551615, \"d\": 2.500, "
		      "\"g\": 0.10000000000000001, \"nan\": null, \"inf\": null, \"t\": true, "
		      "\"f\": false, \"n\": null, \"a\": [1, {}, []], \"raw\": {\"x\": [1]}}"),
	      "JSON writer: every kind of value, strings escaped, NaN and inf as null");

	/* Bytes that are no UTF-8: stray, cut short, overlong, surrogate. */
	lab_json_mem(&j, 0);
	lab_json_array(&j, NULL);
	lab_json_str(&j, NULL, "a\x88\x13" "b");
	lab_json_str(&j, NULL, "\xe2\x82");
	lab_json_str(&j, NULL, "\xc0\xaf\xed\xa0\x80\xf0\x9f\x98\x80");
	lab_json_end(&j);
	check(json_is(lab_json_text(&j),
		      "[\"a\\ufffd\\u0013b\", \"\\ufffd\\ufffd\", "
		      "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80\"]"),
	      "JSON writer: a byte that is not UTF-8 becomes U+FFFD, valid UTF-8 stays");

	lab_json_mem(&j, 1);
	lab_json_object(&j, NULL);
	lab_json_break(&j);
	lab_json_int(&j, "a", 1);
	lab_json_break(&j);
	lab_json_object(&j, "b");
	lab_json_int(&j, "c", 2);
	lab_json_int(&j, "d", 3);
	lab_json_end(&j);
	lab_json_break(&j);
	lab_json_end(&j);
	check(json_is(lab_json_text(&j), "{\n    \"a\": 1,\n    \"b\": {\"c\": 2, \"d\": 3}\n  }"),
	      "JSON writer: line breaks where asked, indented two spaces a level");

	lab_json_mem(&j, 0);
	lab_json_array(&j, NULL);
	lab_json_end(&j);
	check(json_is(lab_json_text(&j), "[]"), "JSON writer: an empty array at the top");

	lab_json_mem(&j, 0);
	lab_json_array(&j, NULL);
	lab_json_int(&j, "key", 1);
	lab_json_end(&j);
	errno = 0;
	text = lab_json_text(&j);
	check(!text && errno == EINVAL, "JSON writer: a key inside an array is EINVAL");

	lab_json_mem(&j, 0);
	lab_json_object(&j, NULL);
	lab_json_int(&j, NULL, 1);
	lab_json_end(&j);
	check(!lab_json_text(&j), "JSON writer: a member without a key is refused");

	lab_json_mem(&j, 0);
	lab_json_object(&j, NULL);
	check(!lab_json_text(&j), "JSON writer: an unclosed object is refused");

	lab_json_mem(&j, 0);
	lab_json_object(&j, NULL);
	lab_json_end(&j);
	lab_json_end(&j);
	check(!lab_json_text(&j), "JSON writer: an end too many is refused");

	lab_json_mem(&j, 0);
	lab_json_int(&j, NULL, 1);
	lab_json_int(&j, NULL, 2);
	check(!lab_json_text(&j), "JSON writer: a second top-level value is refused");

	lab_json_mem(&j, 0);
	check(!lab_json_text(&j), "JSON writer: no value at all is refused");

	lab_json_mem(&j, 0);
	for (int i = 0; i < LAB_JSON_DEPTH + 1; i++)
		lab_json_array(&j, NULL);
	for (int i = 0; i < LAB_JSON_DEPTH + 1; i++)
		lab_json_end(&j);
	check(!lab_json_text(&j), "JSON writer: nesting deeper than LAB_JSON_DEPTH is refused");
}

static void test_cpus(void)
{
	int *cpus, n, i, ascending = 1, allowed = 1;

	n = lab_cpus_usable(&cpus);
	check(n >= 1 && cpus, "at least one usable CPU (%d)", n);
	for (i = 0; i < n; i++) {
		ascending &= i == 0 || cpus[i] > cpus[i - 1];
		allowed &= lab_cpu_allowed(cpus[i]) && lab_cpu_online(cpus[i]);
	}
	check(ascending, "usable CPUs are in ascending order");
	check(allowed, "every usable CPU is online and allowed");
	check(!lab_cpu_allowed(-1) && !lab_cpu_allowed(1 << 20),
	      "no CPU -1, nor CPU 1048576");
	free(cpus);
}

static void test_clock(void)
{
	uint64_t a = lab_now_ns(), b;

	usleep(2000);
	b = lab_now_ns();
	check(b > a && b - a >= 2000000, "the clock advances across a 2 ms sleep");
}

static const char *const colours[] = { "red", "green", NULL };

/* One option of each kind, parsed, read back as settings, and a bad value. */
/*
 * lab_opts_parse() of @argv in a child (that must not write our buffered
 * lines out again as it exits), stderr thrown away: its exit status.
 */
static int parse_status(const struct lab_tool *tool, char **argv)
{
	int argc = 0, status;
	pid_t pid;

	while (argv[argc])
		argc++;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		optind = 1;
		lab_opts_parse(tool, argc, argv, 0);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_opts(void)
{
	struct lab_common_opts common = { 0 };
	struct lab_opt_list list = { .text = "0:20:10" };
	unsigned long n = 7;
	const char *label = NULL, *tag = NULL;
	struct lab_opt_cpus cpus = { 0 };
	int flag = 0, cpu = -1, colour = 0;
	const struct lab_opt opts[] = {
		{ .name = "count", .letter = 'n', .kind = LAB_OPT_ULONG, .value = &n, .min = 1,
		  .max = 9, .json = "count", .help = "how many" },
		{ .name = "list", .kind = LAB_OPT_LIST, .value = &list, .min = 5, .max = 100,
		  .json = "list", .help = "a list" },
		{ .name = "label", .kind = LAB_OPT_STR, .value = &label, .json = "label",
		  .help = "a text" },
		{ .name = "tag", .kind = LAB_OPT_NAME, .value = &tag, .json = "tag",
		  .help = "a name" },
		{ .name = "flag", .kind = LAB_OPT_FLAG, .value = &flag, .json = "flag",
		  .help = "on" },
		{ .name = "cpu", .letter = 'C', .kind = LAB_OPT_CPU, .value = &cpu, .json = "cpu",
		  .help = "a CPU" },
		{ .name = "colour", .kind = LAB_OPT_CHOICE, .value = &colour, .choices = colours,
		  .json = "colour", .help = "red or green" },
		{ .name = "cpus", .kind = LAB_OPT_CPUS, .value = &cpus, .json = "cpus",
		  .help = "CPUs" },
		{ 0 }
	};
	const struct lab_tool tool = { .prog = "toy", .about = "usage: toy", .example = "toy",
				       .opts = opts, .common = &common };
	char *argv[] = { "toy", "-n", "3", "--list", "5,6", "--flag", "-C", "0", "--colour",
			 "green", "--cpus", "0", "-q", "--tag", "t-1.x_y", "operand", NULL };
	struct lab_json j;
	char *text;
	FILE *f;

	optind = 1;
	check(lab_opts_parse(&tool, 16, argv, 1) == 15, "the first operand's index comes back");
	check(n == 3 && flag && cpu == 0 && colour == 1 && common.quiet && !label &&
	      common.outdir && !strcmp(common.outdir, "results") &&
	      cpus.n == 1 && cpus.v[0] == 0, "each kind of option takes its value");
	check(lab_opts_given(&tool, &n) && !lab_opts_given(&tool, &label),
	      "what was given is known");
	check(list.n == 2 && list.v[0] == 5 && list.v[1] == 6, "a list is parsed at the end");
	lab_json_mem(&j, 0);
	lab_json_object(&j, NULL);
	lab_opts_json(&j, &tool);
	lab_json_end(&j);
	text = lab_json_text(&j);
	check(json_is(text, "{\"count\": 3, \"list\": [5, 6], \"label\": null, "
		      "\"tag\": \"t-1.x_y\", \"flag\": true, \"cpu\": 0, \"colour\": \"green\", "
		      "\"cpus\": [0]}"),
	      "the settings come from the table");
	f = tmpfile();
	lab_opts_usage(&tool, f);
	rewind(f);
	text = calloc(1, 4096);
	fread(text, 1, 4095, f);
	fclose(f);
	check(strstr(text, "  -n, --count N         how many (default 7)\n") &&
	      strstr(text, "      --list N          a list (default 0:20:10)\n") &&
	      strstr(text, "\nExample:  toy\n"), "the usage text has each option and its default, as before parsing");
	free(text);
	/* A bad value: exit status 2. */
	check(parse_status(&tool, (char *[]){ "toy", "--colour", "blue", NULL }) == 2,
	      "a bad choice exits with status 2");
	check(parse_status(&tool, (char *[]){ "toy", "--tag", "a/b", NULL }) == 2 &&
	      parse_status(&tool, (char *[]){ "toy", "--tag", "", NULL }) == 2,
	      "a name with a '/', or none, exits with status 2");
	check(parse_status(&tool, (char *[]){ "toy", "--list", "4,6", NULL }) == 2,
	      "a list value below its minimum exits with status 2");
	check(parse_status(&tool, (char *[]){ "toy", "--list", "5,101", NULL }) == 2,
	      "a list value above its maximum exits with status 2");
	check(parse_status(&tool, (char *[]){ "toy", "--list", "5,100", NULL }) == 0,
	      "a list within its bounds is taken");
}

int main(void)
{
	test_percentile();
	test_summary();
	test_linfit();
	test_split();
	test_lists();
	test_files();
	test_json();
	test_opts();
	test_cpus();
	test_clock();
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
