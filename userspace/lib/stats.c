// SPDX-License-Identifier: GPL-2.0
/* Summary statistics and least-squares fits for the lab's tools. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "liblab.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void lab_sort(double *x, size_t n)
{
	qsort(x, n, sizeof(*x), cmp_double);
}

double lab_percentile(const double *sorted, size_t n, double p)
{
	double rank, frac;
	size_t lo;

	if (n == 0)
		return NAN;
	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	rank = p / 100.0 * (double)(n - 1);
	lo = (size_t)rank;
	frac = rank - (double)lo;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int lab_summarize(const double *x, size_t n, struct lab_summary *s)
{
	double *sorted, sum = 0, sq = 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return -1;
	memcpy(sorted, x, n * sizeof(*sorted));
	lab_sort(sorted, n);

	for (i = 0; i < n; i++)
		sum += x[i];
	s->n = n;
	s->mean = sum / (double)n;
	/* Two passes: no catastrophic cancellation for large, tight samples. */
	for (i = 0; i < n; i++)
		sq += (x[i] - s->mean) * (x[i] - s->mean);
	s->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	s->min = sorted[0];
	s->max = sorted[n - 1];
	s->p50 = lab_percentile(sorted, n, 50);
	s->p90 = lab_percentile(sorted, n, 90);
	s->p99 = lab_percentile(sorted, n, 99);
	s->p999 = lab_percentile(sorted, n, 99.9);
	free(sorted);
	return 0;
}

int lab_linfit(const double *x, const double *y, size_t n, struct lab_fit *f)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0;
	size_t i;

	memset(f, 0, sizeof(*f));
	if (n < 2) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
		syy += (y[i] - my) * (y[i] - my);
	}
	if (sxx == 0) {
		errno = EINVAL;
		return -1;
	}
	f->n = n;
	f->slope = sxy / sxx;
	f->intercept = my - f->slope * mx;
	/* R^2 = 1 - SS_res / SS_tot; for a line fit, SS_res = syy - b * sxy. */
	f->r2 = syy > 0 ? 1.0 - (syy - f->slope * sxy) / syy : 1.0;
	return 0;
}

int lab_split2(const double *x, size_t n, struct lab_split *s)
{
	double *v, *lg, *pre, *pre2, floor_v = 0, best = -1;
	size_t i, k, cut = 0;

	memset(s, 0, sizeof(*s));
	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	v = malloc(4 * n * sizeof(*v) + 2 * sizeof(*v));
	if (!v)
		return -1;
	lg = v + n;
	pre = lg + n;		/* n + 1 prefix sums of log values */
	pre2 = pre + n + 1;	/* and of their squares */
	memcpy(v, x, n * sizeof(*v));
	lab_sort(v, n);
	for (i = 0; i < n; i++)
		if (v[i] > 0) {
			floor_v = v[i];
			break;
		}
	pre[0] = pre2[0] = 0;
	for (i = 0; i < n; i++) {
		lg[i] = log(v[i] > 0 ? v[i] : (floor_v > 0 ? floor_v : 1));
		pre[i + 1] = pre[i] + lg[i];
		pre2[i + 1] = pre2[i] + lg[i] * lg[i];
	}
	/* Cut k: fast = v[0..k-1], slow = v[k..n-1]; cost = SSE of both. */
	for (k = 1; k < n; k++) {
		double s1 = pre[k], s2 = pre[n] - pre[k];
		double cost = pre2[k] - s1 * s1 / (double)k +
			      (pre2[n] - pre2[k]) - s2 * s2 / (double)(n - k);

		if (lg[k] > lg[k - 1] && (best < 0 || cost < best)) {
			best = cost;
			cut = k;
		}
	}
	if (best < 0)
		cut = n;	/* all equal: one group */
	for (i = 0; i < n; i++) {
		if (i < cut)
			s->mean_fast += v[i];
		else
			s->mean_slow += v[i];
	}
	s->n_fast = cut;
	s->n_slow = n - cut;
	s->mean_fast /= (double)cut;
	s->mean_slow = s->n_slow ? s->mean_slow / (double)s->n_slow : 0;
	s->threshold = cut < n ? (v[cut - 1] + v[cut]) / 2 : v[n - 1];
	free(v);
	return 0;
}
