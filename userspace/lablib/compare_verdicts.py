"""compare's verdicts (userspace/compare/README.md, "Verdicts"): the
verdict of side B against side A for each figure, one value per run.

Virtual clock: each figure against its band (BANDS, measured between
boots or assumed) and against both sides' own spread (the range of their
runs, and of the runs inside each folder).  'identical' where B is within
the band and within SPREAD_FACTOR times the sides' spread; 'changed
(under band)' where it is within the band but beyond that spread (the
clock sees it, the band would hide it); 'changed (tiny)' or 'changed'
beyond both; 'nondeterministic' where a side's runs are further apart
than the band and the change is within their spread; 'inconclusive'
where the change is beyond the band but within the spread of the runs
inside the folders, and wherever a side has one run and B is beyond the
band (one boot cannot tell a change from a boot that lands off).

Host clock: one value per run, on a log scale (B / A); a permutation
test of the ranks (ties handled), Holm's correction over the measured
figures (not those derived from them, nor a fit's quality); the
Hodges-Lehmann shift with its exact 95 % interval from inverting the
Mann-Whitney test.  'faster'/'slower' ('higher'/'lower' for a figure that
is neither better nor worse, or not measured) when the corrected p is
under ALPHA and the interval lies wholly outside +-band; 'same' when the
interval lies wholly inside; else 'inconclusive' with the runs a side it
would take (runs_needed).  Too few runs for a 95 % interval (3 or fewer
a side) is 'inconclusive', never 'same'."""
import functools
import math

from .sweep import catalog

# Virtual clock: how far two boots' values of a figure may be apart and
# still be the same run, (relative, absolute, kind); "measured" between
# boots (userspace/compare/NOTES.md "Bands"), "assumed" where not yet.  A
# workload's own measured bands for its points and calls are in its file
# (WL_BAND_POINT, WL_BAND_CALLS).
BANDS = {
    "calibrate.slope": (2e-5, 0.0, "measured"),
    "calibrate.slope_p50": (5e-4, 0.0, "measured"),
    "calibrate.ns": (0.0, 0.01, "measured"),
    "calibrate.ns_p50": (0.0, 0.05, "measured"),
    "calibrate.r2": (0.0, 1e-5, "measured"),
    "sweep.point": (1e-3, 0.0, "assumed"),
    "sweep.calls": (2e-3, 0.0, "assumed"),
    "sweep.knee": (5e-3, 0.0, "measured"),
    "sweep.check": (0.0, 0.5, "measured"),
    "default": (1e-3, 0.0, "assumed"),
}
# Virtual clock: a change beyond the band but under this share of A is tiny.
TINY = 0.01
# Virtual clock: a change is the clock's repeatability, not a change, while
# it is within this many times the larger side's spread (the range of its
# runs).  With two runs a side and normal noise, an A/A goes past 5 times
# the larger range 1.2 % of the time, with three 0.02 % (NOTES.md).
SPREAD_FACTOR = 5.0
# Below this share of A two values are the same number (the last digits
# of a float written to JSON).
RESOLUTION = 1e-12
# Host clock: the default band (+-2 %), the test's level, the interval's,
# the permutation test's resamples (all of them when there are fewer), the
# power runs_needed asks for, and the most runs a side it names.
HOST_BAND = 0.02
ALPHA = 0.05
CONFIDENCE = 0.95
PERMUTATIONS = 9999
SEED = 20261202
POWER = 0.8
MAX_RUNS = 1000
CV_WARNING = 0.10
# A figure's role (lablib.figures): only measured figures are tested and
# can make compare's exit status 1.
MEASURED = "measured"


def band_of(kind, workload):
    """(relative, absolute, kind of band) of figure kind @kind: a sweep's
    from its workload's declaration where it has one (lablib.sweep.catalog)."""
    w = catalog.workloads().get(workload) if workload else None
    return (w and w.bands.get(kind)) or BANDS.get(kind) or BANDS["default"]


def band_width(band, ref):
    return max(band[0] * abs(ref), band[1])


def band_text(row):
    """A row's band as the report and the page say it: "±0.05 % measured",
    "±0.01 ns measured" (absolute, in the figure's unit; "points of %"
    for a figure in %), "±2 % chosen"."""
    kind = {"option": "chosen"}.get(row["band_source"], row["band_source"])
    if row["band_rel"]:
        return f"±{100 * row['band_rel']:.3g} % {kind}"
    unit = "points of %" if row.get("unit") == "%" else row.get("unit") or ""
    return f"±{row['band_abs']:.3g} {unit} {kind}".replace("  ", " ")


def median(v):
    import numpy as np
    return float(np.median(v))


def measured(row):
    return row.get("role", MEASURED) == MEASURED


def direction(row, b_over_a_up):
    """The verdict of a move up (True) or down of B against A: 'slower' or
    'faster' for a measured figure with a better direction, else 'higher'
    or 'lower'."""
    better = row["better"]
    if better is None or not measured(row):
        return "higher" if b_over_a_up else "lower"
    up_is_worse = better == "lower"
    return "slower" if b_over_a_up == up_is_worse else "faster"


def worse(row):
    """Did B get worse than A in @row's verdict, beyond its band?"""
    if not measured(row) or not row["better"]:
        return False
    if row["verdict"] == "slower":
        return True
    if row["verdict"] in ("changed", "changed (tiny)"):
        up = row["b_value"] > row["a_value"]
        return up == (row["better"] == "lower")
    return False


def _pct(d, ref):
    return f"{100 * d / abs(ref):+.3g} %" if ref else f"{d:+.3g}"


# --- the virtual clock ---------------------------------------------------------------

def spread(values, within):
    """The spread of a side: the range of its runs' values and the widest
    range of the runs inside one of its folders (@within)."""
    return max(max(values) - min(values), *within, 0.0)


def virtual_row(row, workload):
    band = band_of(row["kind"], workload)
    a, b = median(row["a"]), median(row["b"])
    width = band_width(band, a)
    d = abs(b - a)
    sides = {"A": (row["a"], row.get("a_within") or []), "B": (row["b"], row.get("b_within") or [])}
    spreads = {s: spread(v, w) for s, (v, w) in sides.items()}
    noise = max(SPREAD_FACTOR * max(spreads.values()), RESOLUTION * abs(a))
    out = {"a_value": a, "b_value": b, "band_rel": band[0], "band_abs": band[1],
           "band_source": band[2], "a_spread": spreads["A"], "b_spread": spreads["B"]}
    loose = [s for s, (v, _) in sides.items() if max(v) - min(v) > width]
    change = _pct(b - a, a)
    own = (f"{SPREAD_FACTOR:g} x the sides' own spread ({_pct(spreads['A'], a).lstrip('+')}, "
           f"{_pct(spreads['B'], a).lstrip('+')})")
    if min(len(row["a"]), len(row["b"])) < 2:
        if d <= width:
            out["verdict"] = "identical"
            out["why"] = "one run a side: the band alone"
        else:
            out["verdict"] = "inconclusive"
            out["why"] = (f"B - A {change}, beyond the band; one run a side cannot tell a "
                          "change from a boot that lands off: two runs a side can")
    elif d <= width:
        if loose:
            out["verdict"] = "nondeterministic"
            out["why"] = f"the runs of {' and '.join(loose)} are further apart than the band"
        elif d > noise:
            out["verdict"] = "changed (under band)"
            out["why"] = f"B - A {change}: beyond {own}, under the band"
        else:
            out["verdict"] = "identical"
    elif d <= noise:
        out["verdict"] = "nondeterministic" if loose else "inconclusive"
        out["why"] = f"B - A {change}: beyond the band, within {own}"
    else:
        rel = d / abs(a) if a else math.inf
        out["verdict"] = "changed (tiny)" if rel < TINY else "changed"
        if loose:
            out["why"] = f"the runs of {' and '.join(loose)} are further apart than the band"
    return out


# --- the host clock ------------------------------------------------------------------

def host_stats(v):
    """n, CV, outliers (beyond 3 robust standard deviations of the median)
    and drift (Spearman's rho against run order, p) of one side's values."""
    import numpy as np
    from scipy import stats as sps
    x = np.asarray(v, dtype=float)
    m = float(np.median(x))
    out = {"n": len(x), "median": m,
           "cv": float(np.std(x, ddof=1) / abs(np.mean(x))) if len(x) > 1 and np.mean(x)
           else None}
    mad = float(sps.median_abs_deviation(x, scale="normal")) if len(x) > 2 else 0.0
    out["outliers"] = [float(y) for y in x if mad and abs(y - m) > 3 * mad]
    if len(x) >= 5 and len(set(x)) > 1:
        rho, p = sps.spearmanr(np.arange(len(x)), x)
        out["drift_rho"], out["drift_p"] = float(rho), float(p)
    else:
        out["drift_rho"] = out["drift_p"] = None
    return out


def on_scale(a, b):
    """(x, y, back): @a and @b on the scale the shift is measured on, the
    log of the values when all are positive (a shift is then log(B / A)),
    else the values over |median of A|; back(shift) is the ratio B / A."""
    import numpy as np
    x, y = np.asarray(a, float), np.asarray(b, float)
    if min(x.min(), y.min()) > 0:
        return np.log(x), np.log(y), lambda s: float(np.exp(s))
    ref = abs(float(np.median(x))) or 1.0
    return x / ref, y / ref, lambda s: 1.0 + float(s)


@functools.lru_cache(maxsize=None)
def u_cdf(m, n):
    """P(U <= u) for u = 0 .. m n: the exact distribution of the
    Mann-Whitney statistic of samples of @m and @n without ties when
    nothing changed, scipy's, read off one vectorised exact test of m n + 1
    made-up pairs of samples whose U is 0, 1, ... m n."""
    import numpy as np
    from scipy import stats as sps
    u = np.arange(m * n + 1)
    # x's i-th value lies above c_i of y = 0 .. n-1, so U = sum of c_i.
    c = np.zeros((len(u), m))
    left = u.copy()
    for i in range(m):
        c[:, i] = np.minimum(left, n)
        left = left - c[:, i]
    x = c - 0.5 + np.arange(m) * 1e-3 / m
    y = np.broadcast_to(np.arange(n, dtype=float), (len(u), n))
    method = "exact" if m * n <= 10_000 else "asymptotic"
    return sps.mannwhitneyu(x, y, alternative="less", method=method, axis=1).pvalue


def shift_interval(x, y, confidence=CONFIDENCE):
    """(estimate, low, high) of the shift from @x to @y: the Hodges-Lehmann
    estimate (the median of the m n differences y_j - x_i) and its exact
    interval from inverting the Mann-Whitney test, the k-th smallest to the
    k-th largest difference, k the most with P(U < k) <= (1 - confidence) / 2;
    low and high None when the runs are too few for such an interval."""
    import numpy as np
    d = np.sort(np.subtract.outer(np.asarray(y), np.asarray(x)).ravel())
    est = float(np.median(d))
    k = int(np.count_nonzero(u_cdf(len(x), len(y)) <= (1 - confidence) / 2))
    if k == 0:
        return est, None, None
    return est, float(d[k - 1]), float(d[len(d) - k])


def interval_runs(confidence=CONFIDENCE):
    """The fewest runs a side that give an interval at @confidence."""
    n = 2
    while 2 / math.comb(2 * n, n) > 1 - confidence:
        n += 1
    return n


def rank_test(x, y):
    """The two-sided p of Mann-Whitney's test of @x against @y as a
    permutation test of the ranks: scipy's exact distribution of U when no
    two values tie (it is that test's), else a permutation test of the mean
    mid-ranks, every reassignment when there are at most PERMUTATIONS, else
    that many drawn with a fixed seed (the same folders give the same p)."""
    import numpy as np
    from scipy import stats as sps
    pooled = np.concatenate([x, y])
    r = sps.rankdata(pooled)
    if np.all(r == r[0]):
        return 1.0
    if len(np.unique(pooled)) == len(pooled):
        return float(sps.mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue)

    def diff(a, b, axis=-1):
        return np.mean(b, axis=axis) - np.mean(a, axis=axis)
    res = sps.permutation_test((r[:len(x)], r[len(x):]), diff, vectorized=True,
                               permutation_type="independent", n_resamples=PERMUTATIONS,
                               alternative="two-sided", rng=np.random.default_rng(SEED))
    return float(min(1.0, res.pvalue))


def fewest_runs(tests):
    """The fewest runs a side with which the two-sided rank test can reach
    ALPHA after Holm's correction over @tests figures: its smallest p, with
    every run of one side above every run of the other, is 2 / C(2n, n)."""
    n = 2
    while 2 / math.comb(2 * n, n) >= ALPHA / tests:
        n += 1
    return n


def runs_needed(sigma, shift, band, tests):
    """The runs a side with which, at spread @sigma (standard deviation on
    the log scale) and true shift @shift, the verdict comes POWER of the
    time: 'same' if the shift is within the band (taken as none), or the
    change beyond the band at ALPHA / @tests (Holm's worst case); the
    Hodges-Lehmann shift's standard error is sigma sqrt(2 / n) sqrt(pi / 3)
    on normal runs, t quantiles for the spread estimated from the runs.
    None past MAX_RUNS."""
    import numpy as np
    from scipy import stats as sps
    edge = math.log1p(band)
    least = max(fewest_runs(tests), interval_runs())
    if not sigma:
        return least
    n = np.arange(least, MAX_RUNS + 1)
    df = 2 * n - 2
    if abs(shift) <= edge:
        margin = edge
        q = sps.t.ppf(1 - ALPHA / 2, df) + sps.t.ppf((1 + POWER) / 2, df)
    else:
        margin = abs(shift) - edge
        q = sps.t.ppf(1 - ALPHA / (2 * tests), df) + sps.t.ppf(POWER, df)
    enough = np.flatnonzero(q * sigma * np.sqrt(2 / n) * math.sqrt(math.pi / 3) <= margin)
    return int(n[enough[0]]) if len(enough) else None


def _needed_text(row):
    n = row["runs_needed"]
    if n is None:
        return f"more than {MAX_RUNS} runs a side would tell"
    return f"about {n} runs a side would tell"


def host_row(row, band):
    """The statistics of one row: the sides' medians and spread, the
    rank test's p, the shift's estimate and interval as ratios B / A."""
    import numpy as np
    sa, sb = host_stats(row["a"]), host_stats(row["b"])
    row.update({"a_value": sa["median"], "b_value": sb["median"], "a_stats": sa,
                "b_stats": sb, "band_rel": band, "band_abs": 0.0, "band_source": "option",
                "p": None, "p_holm": None, "ci": None, "estimate": None, "runs_needed": None})
    if len(row["a"]) < 2 or len(row["b"]) < 2:
        return False
    x, y, back = on_scale(row["a"], row["b"])
    est, lo, hi = shift_interval(x, y)
    sigma = math.sqrt((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2)
    row.update({"p": rank_test(x, y), "estimate": back(est), "sigma": sigma, "shift": est,
                "ci": None if lo is None else (back(lo), back(hi))})
    return True


def host_rows(rows, band):
    """Fill the host clock's statistics and verdict into each of @rows."""
    from statsmodels.stats.multitest import multipletests
    tested = [r for r in rows if host_row(r, band)]
    family = [r for r in tested if measured(r)]
    if len(family) == 1:
        family[0]["p_holm"] = family[0]["p"]
    elif family:
        holm = multipletests([r["p"] for r in family], alpha=ALPHA, method="holm")[1]
        for r, p in zip(family, holm):
            r["p_holm"] = float(p)
    tests = max(1, len(family))
    for row in rows:
        if row["p"] is None:
            row["verdict"] = "inconclusive"
            row["runs_needed"] = max(fewest_runs(tests), interval_runs())
            row["why"] = "one run a side: no test"
            continue
        p = row["p_holm"] if measured(row) else row["p"]
        row["runs_needed"] = runs_needed(row["sigma"], row["shift"], band, tests)
        if row["ci"] is None:
            row["verdict"] = "inconclusive"
            row["why"] = _needed_text(row)
            continue
        lo, hi = row["ci"]
        if p < ALPHA and (lo > 1 + band or hi < 1 - band):
            row["verdict"] = direction(row, lo > 1)
        elif lo >= 1 - band and hi <= 1 + band:
            row["verdict"] = "same"
        else:
            row["verdict"] = "inconclusive"
            row["why"] = _needed_text(row)
    return rows


def judge(rows, clock, band=HOST_BAND, workload=None):
    """The verdict of B against A in each of @rows ({figure, unit, better,
    kind, role, a: [values], b: [values], a_within, b_within}, one value
    per run; role and the spreads inside the folders optional), on @clock
    ("virtual": BANDS and the sides' spread, "host": the tests and
    @band): fills a_value, b_value, verdict, why, diff, ratio, worse, the
    band and the statistics the verdict came from.  What every comparison
    in the lab says its verdicts with."""
    if clock == "virtual":
        for row in rows:
            row.update(virtual_row(row, workload))
    else:
        host_rows(rows, band)
    for row in rows:
        av, bv = row["a_value"], row["b_value"]
        row["diff"] = bv - av
        row["ratio"] = bv / av if av else None
        row["worse"] = worse(row)
        row["band"] = band_text(row)
    return rows
