"""Summary statistics, least-squares fits and the fast/slow split: the same
numbers as the C library's lab_summarize, lab_linfit and lab_split2."""
import math

SUMMARY_KEYS = ("n", "min", "mean", "stddev", "p50", "p90", "p99", "p999", "max")


def percentile(sorted_values, p):
    """The p-th percentile of an ascending list: linear interpolation
    between the two nearest ranks, rank = p/100 * (n-1); None if empty."""
    n = len(sorted_values)
    if n == 0:
        return None
    if p <= 0:
        return sorted_values[0]
    if p >= 100:
        return sorted_values[-1]
    rank = p / 100 * (n - 1)
    lo = int(rank)
    if lo + 1 >= n:
        return sorted_values[-1]
    return sorted_values[lo] + (rank - lo) * (sorted_values[lo + 1] - sorted_values[lo])


def mean(values):
    """The mean of @values, None if there are none."""
    v = list(values)
    return sum(v) / len(v) if v else None


def trimmed_mean(values, cut_fraction=0.1):
    """The mean of @values without the int(@cut_fraction x n) smallest and
    as many largest (n the number of values): with 0.1, a tenth off each
    end, rounded down, so nothing is cut below 10 values
    (scipy.stats.trim_mean).  None if there are none."""
    from scipy import stats as sps

    if not 0 <= cut_fraction < 0.5:
        raise ValueError(f"trimmed_mean: cut_fraction {cut_fraction!r} is not in [0, 0.5)")
    v = [float(x) for x in values]
    if not v:
        return None
    return float(sps.trim_mean(v, cut_fraction))


def summary(values):
    """n, min, mean, stddev (sample, n-1; 0 for one value), p50, p90, p99,
    p999 and max of @values; n = 0 and None for the others if empty."""
    v = sorted(float(x) for x in values)
    n = len(v)
    if n == 0:
        return dict.fromkeys(SUMMARY_KEYS, None) | {"n": 0}
    mean = sum(v) / n
    # Two passes: no cancellation for large, tight samples.
    sq = sum((x - mean) ** 2 for x in v)
    return {"n": n, "min": v[0], "mean": mean,
            "stddev": math.sqrt(sq / (n - 1)) if n > 1 else 0.0,
            "p50": percentile(v, 50), "p90": percentile(v, 90),
            "p99": percentile(v, 99), "p999": percentile(v, 99.9), "max": v[-1]}


def linfit(xs, ys):
    """Least-squares line y = intercept + slope * x: {"intercept", "slope",
    "r2", "n"}.  r2 is 1 for a constant y.  ValueError for fewer than two
    points or when all x are equal."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"linfit: {n} x values but {len(ys)} y values")
    if n < 2:
        raise ValueError(f"cannot fit a line to {n} point{'s' if n != 1 else ''}")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0:
        raise ValueError("cannot fit a line: all x values are equal")
    slope = sxy / sxx
    r2 = 1 - (syy - slope * sxy) / syy if syy > 0 else 1.0
    return {"intercept": my - slope * mx, "slope": slope, "r2": r2, "n": n}


def _median(v):
    return percentile(sorted(v), 50)


def robust_linfit(xs, ys, k=5.0, floor=0.01):
    """A line that one grossly wrong point cannot tilt.  A Theil-Sen line
    (median of the pairwise slopes, median intercept) finds the points
    whose residual exceeds k robust standard deviations (1.4826 x the
    median absolute residual) and @floor x |y| both; the least-squares
    line through the other points is the fit.  Returns linfit()'s keys and
    "outliers": the x of the points left out.  Falls back to least squares
    on all points below three points or when more than half would go."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    n = len(xs)
    if n < 3:
        return {**linfit(xs, ys), "outliers": []}
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i])
              for i in range(n) for j in range(i + 1, n) if xs[j] != xs[i]]
    if not slopes:
        raise ValueError("cannot fit a line: all x values are equal")
    b = _median(slopes)
    a = _median([y - b * x for x, y in zip(xs, ys)])
    res = [y - a - b * x for x, y in zip(xs, ys)]
    scale = 1.4826 * _median([abs(r) for r in res])
    keep = [i for i in range(n) if abs(res[i]) <= max(k * scale, floor * abs(ys[i]))]
    if len(keep) < max(3, (n + 1) // 2) or len({xs[i] for i in keep}) < 2:
        keep = list(range(n))
    fit = linfit([xs[i] for i in keep], [ys[i] for i in keep])
    return {**fit, "outliers": [xs[i] for i in range(n) if i not in keep]}


def split2(values):
    """The best split of @values into a fast and a slow group: exact 1-D
    2-means on log(value) (values <= 0 count as the smallest positive one),
    cutting only between distinct values.  Returns {"threshold", "fast_n",
    "fast_mean", "slow_n", "slow_mean"}; all equal values make one fast
    group (slow_n 0, slow_mean 0, threshold the value); empty: None values
    and zero counts."""
    v = sorted(float(x) for x in values)
    n = len(v)
    if n == 0:
        return {"threshold": None, "fast_n": 0, "fast_mean": None, "slow_n": 0,
                "slow_mean": None}
    floor = next((x for x in v if x > 0), 1.0)
    lg = [math.log(x if x > 0 else floor) for x in v]
    pre, pre2 = [0.0], [0.0]
    for x in lg:
        pre.append(pre[-1] + x)
        pre2.append(pre2[-1] + x * x)
    best, cut = None, n
    for k in range(1, n):
        if lg[k] <= lg[k - 1]:
            continue
        s1, s2 = pre[k], pre[n] - pre[k]
        cost = pre2[k] - s1 * s1 / k + (pre2[n] - pre2[k]) - s2 * s2 / (n - k)
        if best is None or cost < best:
            best, cut = cost, k
    slow = v[cut:]
    return {"threshold": (v[cut - 1] + v[cut]) / 2 if cut < n else v[-1],
            "fast_n": cut, "fast_mean": sum(v[:cut]) / cut,
            "slow_n": len(slow), "slow_mean": sum(slow) / len(slow) if slow else 0.0}


# The fewest values that give a distribution-free 95 % interval of a median.
LEAST_FOR_MEDIAN_INTERVAL = 6


def median_interval(values, confidence=0.95):
    """(median, low, high) of @values, low and high the distribution-free
    interval of the median (order statistics, the sign test's binomial);
    None for both with fewer values than such an interval needs."""
    import numpy as np
    from scipy import stats as sps
    v = np.asarray(values, dtype=float)
    ci = sps.quantile_test(v, q=0, p=0.5).confidence_interval(confidence)
    if np.isnan(ci.low) or np.isnan(ci.high):
        return float(np.median(v)), None, None
    return float(np.median(v)), float(ci.low), float(ci.high)
