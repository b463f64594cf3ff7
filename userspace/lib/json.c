// SPDX-License-Identifier: GPL-2.0
/*
 * The one JSON writer of the C tools: meta.json and every tool's settings
 * go through it, so that a string is escaped one way and a number printed
 * one way everywhere.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liblab.h"

/*
 * The length of the UTF-8 sequence at @s (1 to 4), or 0 if the bytes there
 * are not one: a stray continuation byte, a sequence cut short, an
 * overlong form, a surrogate or a code point beyond U+10FFFF.
 */
static int utf8_length(const unsigned char *s)
{
	unsigned int cp;
	int n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * A byte that is not part of valid UTF-8 is written as U+FFFD, so that
 * whatever a tool copies into a string (a file of sysfs, a command's
 * output) the file stays JSON that every reader accepts.
 */
void lab_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	fputc('"', f);
	while (*p) {
		n = utf8_length(p);
		if (n == 0)
			fputs("\\ufffd", f);
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, (size_t)n, f);
		p += n ? n : 1;
	}
	fputc('"', f);
}

void lab_json_file(struct lab_json *j, FILE *f, int indent)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->indent = indent;
}

int lab_json_mem(struct lab_json *j, int indent)
{
	memset(j, 0, sizeof(*j));
	j->indent = indent;
	j->f = open_memstream(&j->text, &j->size);
	if (!j->f) {
		j->err = errno ? errno : ENOMEM;
		return -1;
	}
	return 0;
}

char *lab_json_text(struct lab_json *j)
{
	int bad = j->err || j->depth || !j->count[0];

	if (fclose(j->f))
		bad = 1;
	j->f = NULL;
	if (bad) {
		free(j->text);
		j->text = NULL;
		errno = j->err ? j->err : EINVAL;
		return NULL;
	}
	return j->text;
}

/* A line break and the indentation of depth @depth. */
static void newline(struct lab_json *j, int depth)
{
	fprintf(j->f, "\n%*s", 2 * (j->indent + depth), "");
}

/*
 * Everything before a value: the comma, a requested line break, the key.
 * A key inside an object and none elsewhere; 0 if the value may follow.
 */
static int member(struct lab_json *j, const char *key)
{
	int in_object = j->depth && j->kind[j->depth] == '{';

	if (j->err)
		return -1;
	if (!j->f || (in_object != (key != NULL)) || (!j->depth && j->count[0])) {
		j->err = EINVAL;
		return -1;
	}
	if (j->count[j->depth]++)
		fputs(j->brk ? "," : ", ", j->f);
	if (j->brk)
		newline(j, j->depth);
	j->brk = 0;
	if (key) {
		lab_json_string(j->f, key);
		fputs(": ", j->f);
	}
	return 0;
}

static void open_container(struct lab_json *j, const char *key, char kind)
{
	if (member(j, key))
		return;
	if (j->depth + 1 >= LAB_JSON_DEPTH) {
		j->err = EINVAL;
		return;
	}
	fputc(kind, j->f);
	j->depth++;
	j->kind[j->depth] = kind;
	j->count[j->depth] = 0;
}

void lab_json_object(struct lab_json *j, const char *key)
{
	open_container(j, key, '{');
}

void lab_json_array(struct lab_json *j, const char *key)
{
	open_container(j, key, '[');
}

void lab_json_end(struct lab_json *j)
{
	if (j->err)
		return;
	if (!j->depth) {
		j->err = EINVAL;
		return;
	}
	if (j->brk)
		newline(j, j->depth - 1);
	j->brk = 0;
	fputc(j->kind[j->depth] == '{' ? '}' : ']', j->f);
	j->depth--;
}

void lab_json_break(struct lab_json *j)
{
	j->brk = 1;
}

void lab_json_str(struct lab_json *j, const char *key, const char *s)
{
	if (member(j, key))
		return;
	if (s)
		lab_json_string(j->f, s);
	else
		fputs("null", j->f);
}

void lab_json_int(struct lab_json *j, const char *key, long long v)
{
	if (!member(j, key))
		fprintf(j->f, "%lld", v);
}

void lab_json_uint(struct lab_json *j, const char *key, unsigned long long v)
{
	if (!member(j, key))
		fprintf(j->f, "%llu", v);
}

void lab_json_double(struct lab_json *j, const char *key, double v, int decimals)
{
	if (member(j, key))
		return;
	if (!isfinite(v))
		fputs("null", j->f);
	else if (decimals >= 0)
		fprintf(j->f, "%.*f", decimals, v);
	else
		fprintf(j->f, "%.17g", v);
}

void lab_json_bool(struct lab_json *j, const char *key, int v)
{
	if (!member(j, key))
		fputs(v ? "true" : "false", j->f);
}

void lab_json_null(struct lab_json *j, const char *key)
{
	if (!member(j, key))
		fputs("null", j->f);
}

void lab_json_raw(struct lab_json *j, const char *key, const char *json)
{
	if (!member(j, key))
		fputs(json, j->f);
}
