"""compare: two runs, or two sets of runs, of one experiment side by side,
figure by figure, with a verdict for each (userspace/compare/README.md).

    compare A B                      one result folder a side
    compare -a A1 A2 -b B1 B2        several a side (each one boot)

First what differs between the sides' meta.json (kernel, command line,
series, module settings, the experiment's settings, machine) and what is
the same; sides of different experiments or clocks are refused (exit 2).

Virtual clock: each side's runs must agree within the figure's band
(BANDS, userspace/compare/NOTES.md), else the figure is
'nondeterministic'; then 'identical' (B within the band of A), 'changed
(tiny)' (beyond it, under TINY) or 'changed'.  Host clock: one value per
run, an exact two-sided Mann-Whitney U test, a seeded bootstrap 95 %
interval of the ratio of medians (B / A), Holm's correction over the
figures; 'faster'/'slower' ('higher'/'lower' for a figure that is neither
better nor worse) when the corrected p < 0.05 and the interval lies
outside +-band, 'same' when it lies inside, else 'inconclusive' with the
runs a side it would take.

Writes RESULTS/compare-<date>-<time>/ (report.txt, compare.json,
compare.csv, compare.png); exit status 0 (no figure worse), 1 (a figure
got worse beyond its band), 2 (refused, inconclusive or
nondeterministic)."""
import json
import math
import pathlib
import sys
import textwrap

from . import cli, figures, results

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Virtual clock: how far two boots' values of a figure may be apart and
# still be the same run, (relative, absolute); measured between boots
# (userspace/compare/NOTES.md "Bands"), "assumed" where not measured yet.
BANDS = {
    "calibrate.slope": (2e-5, 0.0, "measured"),
    "calibrate.slope_p50": (5e-4, 0.0, "measured"),
    "calibrate.ns": (0.0, 0.01, "measured"),
    "calibrate.ns_p50": (0.0, 0.05, "measured"),
    "calibrate.r2": (0.0, 1e-5, "measured"),
    "sweep.point": (1e-3, 0.0, "assumed"),
    "sweep.point.grep": (5e-4, 0.0, "measured"),
    "sweep.point.apache": (5e-4, 0.0, "measured"),
    "sweep.point.kbuild": (1e-3, 0.0, "measured"),
    "sweep.point.redis": (2.5e-3, 0.0, "measured"),
    "sweep.calls": (2e-3, 0.0, "assumed"),
    "sweep.calls.grep": (0.0, 0.5, "measured"),
    "sweep.calls.kbuild": (2e-3, 0.0, "measured"),
    "sweep.knee": (5e-3, 0.0, "measured"),
    "sweep.check": (0.0, 0.5, "measured"),
    "default": (1e-3, 0.0, "assumed"),
}
# Virtual clock: a change beyond the band but under this share of A is tiny.
TINY = 0.01
# Host clock: the default band (+-2 %), the test's level, the interval's.
HOST_BAND = 0.02
ALPHA = 0.05
CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 20261202
CV_WARNING = 0.10
# meta.json keys that say nothing about what ran: when, how it was called,
# why the VM chose its accelerator, the module's running counters.
# A sweep's part of the points and its cgroup's name (the guest's pid) are
# how it was split, not what it measured.
IGNORED = ("date", "command", "machine.accelerator_why", "modules.delay.stats",
           "modules.irqhook.stats", "packages", "modules.delay.parameters.cgroup",
           "settings.delay_cgroup", "settings.part", "settings.part_points",
           "settings.stage.seconds")
WORSE = {"higher": "slower", "lower": "faster"}


class Refused(cli.BadInput):
    """Two sides that cannot be compared (exit status 2)."""


# --- the sides -------------------------------------------------------------------

def read_side(folders):
    """figures.read() of each folder, in the order they ran (meta.json date)."""
    if not folders:
        raise Refused("a side has no result folder")
    got = []
    for d in folders:
        try:
            got.append(figures.read(d))
        except figures.NotAResult as e:
            raise Refused(str(e)) from None
    return sorted(got, key=lambda r: (str(r["meta"].get("date", "")), r["path"]))


def what(run):
    return run["workload"] if run["experiment"] == "sweep" else run["experiment"]


def check_sides(a, b):
    """The experiment and clock both sides share; Refused if they do not."""
    kinds = {(what(r), r["clock"]) for r in a + b}
    exps = {k for k, _ in kinds}
    if len(exps) > 1:
        raise Refused(f"the runs are of different experiments ({', '.join(sorted(exps))}): "
                      "compare compares one experiment")
    clocks = {c for _, c in kinds}
    if len(clocks) > 1:
        raise Refused("the runs measured on different clocks (host and virtual): their "
                      "figures are not comparable (userspace/clocks puts them side by side)")
    return exps.pop(), clocks.pop()


# --- what differs ----------------------------------------------------------------

def flatten(obj, prefix=""):
    """{dotted key: value} of the leaves of a JSON object."""
    out = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if any(key == i or key.startswith(i + ".") for i in IGNORED):
            continue
        if isinstance(v, dict) and v:
            out |= flatten(v, key + ".")
        else:
            out[key] = v
    return out


# The words scripts/vm.sh and virtme-ng put on every guest's command line
# (the root over 9p, the console, the init, the command to run): the same
# in every boot or different in every boot, never the user's setting.
PLUMBING = ("lab.", "virtme", "init=", "console=", "earlyprintk=", "root=", "rootflags=",
            "rootfstype=", "raid=", "loglevel=", "panic=", "nr_open=")
PLUMBING_WORDS = ("ro", "rw", "quiet")


def cmdline_words(run):
    """The words of the guest's kernel command line that set something,
    the lab's and virtme-ng's plumbing left out; None if not recorded."""
    line = results.get(run["guest"], "kernel", "cmdline")
    if not isinstance(line, str):
        return None
    return sorted({w for w in line.split()
                   if not w.startswith(PLUMBING) and w not in PLUMBING_WORDS})


def side_values(runs):
    """{key: [value of each run]} over the meta.json of @runs (the guest's
    where the folder's own names no kernel), kernel.cmdline as its words."""
    keys = {}
    for i, r in enumerate(runs):
        meta = dict(r["meta"])
        for k in ("kernel", "machine", "modules"):
            if k not in meta and k in r["guest"]:
                meta[k] = r["guest"][k]
        flat = flatten(meta)
        words = cmdline_words(r)
        if words is not None:
            flat["kernel.cmdline"] = " ".join(words)
        for k, v in flat.items():
            keys.setdefault(k, [None] * len(runs))[i] = v
    return keys


def _show(v):
    return v if isinstance(v, str) else json.dumps(v)


def differences(a, b):
    """([{key, a, b, note}], [same keys]): a side whose runs disagree on a
    key shows each value; the command line's differing words in note."""
    va, vb = side_values(a), side_values(b)
    diff, same = [], []
    for k in sorted(set(va) | set(vb)):
        xa = va.get(k, [None] * len(a))
        xb = vb.get(k, [None] * len(b))
        ua = sorted({_show(x) for x in xa})
        ub = sorted({_show(x) for x in xb})
        if ua == ub and len(ua) == 1:
            same.append(k)
            continue
        row = {"key": k, "a": ua[0] if len(ua) == 1 else ua,
               "b": ub[0] if len(ub) == 1 else ub, "note": ""}
        if k == "kernel.cmdline" and len(ua) == len(ub) == 1:
            if "null" in (ua[0], ub[0]):
                row["note"] = f"not recorded in {'A' if ua[0] == 'null' else 'B'}"
            else:
                wa, wb = set(ua[0].split()), set(ub[0].split())
                row["a"], row["b"] = " ".join(sorted(wa - wb)), " ".join(sorted(wb - wa))
                row["note"] = "the words only one side has"
        elif len(ua) > 1 or len(ub) > 1:
            row["note"] = "varies within a side"
        diff.append(row)
    return diff, same


# --- the figures ------------------------------------------------------------------

def band_of(kind, workload):
    """(relative, absolute, source) of figure kind @kind."""
    return BANDS.get(f"{kind}.{workload}") or BANDS.get(kind) or BANDS["default"]


def within(x, ref, band):
    rel, ab, _ = band
    return abs(x - ref) <= max(rel * abs(ref), ab)


def median(v):
    import numpy as np
    return float(np.median(v))


def collect(a, b):
    """[{figure, unit, better, kind, a: [values], b: [values]}] of the
    figures both sides have, in the first run's order."""
    rows = {}
    for side, runs in (("a", a), ("b", b)):
        for r in runs:
            for f in r["figures"]:
                if f["value"] is None:
                    continue
                row = rows.setdefault(f["figure"], {
                    "figure": f["figure"], "unit": f["unit"], "better": f["better"],
                    "kind": f["kind"], "a": [], "b": []})
                row[side].append(float(f["value"]))
    return [r for r in rows.values() if r["a"] and r["b"]]


def direction(row, b_over_a_up):
    """The verdict of a move up (True) or down of B against A."""
    better = row["better"]
    if better is None:
        return "higher" if b_over_a_up else "lower"
    up_is_worse = better == "lower"
    return "slower" if b_over_a_up == up_is_worse else "faster"


def worse(row):
    """Did B get worse than A in @row's verdict?"""
    if row["verdict"] == "slower":
        return True
    if row["verdict"] in ("changed", "changed (tiny)") and row["better"]:
        up = row["b_value"] > row["a_value"]
        return up == (row["better"] == "lower")
    return False


def virtual_row(row, workload):
    band = band_of(row["kind"], workload)
    a, b = median(row["a"]), median(row["b"])
    out = {"a_value": a, "b_value": b, "band_rel": band[0], "band_abs": band[1],
           "band_source": band[2]}
    loose = [s for s, v in (("A", row["a"]), ("B", row["b"]))
             if not within(max(v), min(v), band)]
    if loose:
        out["verdict"] = "nondeterministic"
        out["why"] = f"the runs of {' and '.join(loose)} are further apart than the band"
    elif within(b, a, band):
        out["verdict"] = "identical"
    else:
        rel = abs(b - a) / abs(a) if a else math.inf
        out["verdict"] = "changed (tiny)" if rel < TINY else "changed"
    return out


def host_stats(v, order=None):
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


def ratio_interval(a, b):
    """The seeded bootstrap 95 % interval of median(b) / median(a)."""
    import numpy as np
    from scipy import stats as sps

    def ratio(x, y, axis=-1):
        return np.median(y, axis=axis) / np.median(x, axis=axis)
    res = sps.bootstrap((np.asarray(a, float), np.asarray(b, float)), ratio,
                        n_resamples=RESAMPLES, confidence_level=CONFIDENCE,
                        method="percentile", vectorized=True, paired=False,
                        rng=np.random.default_rng(SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def fewest_runs(tests):
    """The fewest runs a side with which the exact two-sided Mann-Whitney
    U test can reach ALPHA after Holm's correction over @tests figures: its
    smallest p, with every run of one side above every run of the other,
    is 2 / C(2n, n)."""
    n = 2
    while 2 / math.comb(2 * n, n) >= ALPHA / tests:
        n += 1
    return n


def host_rows(rows, band):
    """Fill the host clock's statistics and verdict into each of @rows."""
    from scipy import stats as sps
    from statsmodels.stats.multitest import multipletests
    tested = []
    for row in rows:
        sa, sb = host_stats(row["a"]), host_stats(row["b"])
        row.update({"a_value": sa["median"], "b_value": sb["median"], "a_stats": sa,
                    "b_stats": sb, "band_rel": band, "band_abs": 0.0, "band_source": "option",
                    "p": None, "p_holm": None, "ci": None, "runs_needed": None})
        cvs = [c for c in (sa["cv"], sb["cv"]) if c is not None]
        if cvs:
            cv = max(cvs)
            row["runs_needed"] = max(2, math.ceil(2 * (1.96 * cv / band) ** 2))
        if len(row["a"]) < 2 or len(row["b"]) < 2 or not sa["median"]:
            row["verdict"] = "inconclusive"
            row["runs_needed"] = max(row["runs_needed"] or 0, fewest_runs(len(rows)))
            row["why"] = "one run a side: no test"
            continue
        row["p"] = float(sps.mannwhitneyu(row["a"], row["b"], alternative="two-sided",
                                          method="exact").pvalue)
        if len(set(row["a"]) | set(row["b"])) == 1:
            row["ci"] = (1.0, 1.0)
        else:
            row["ci"] = ratio_interval(row["a"], row["b"])
        tested.append(row)
    if tested:
        holm = multipletests([r["p"] for r in tested], alpha=ALPHA, method="holm")[1]
        least = fewest_runs(len(tested))
        for row, p in zip(tested, holm):
            row["runs_needed"] = max(row["runs_needed"] or 0, least)
            row["p_holm"] = float(p)
            lo, hi = row["ci"]
            if p < ALPHA and (lo > 1 + band or hi < 1 - band):
                row["verdict"] = direction(row, lo > 1)
            elif lo >= 1 - band and hi <= 1 + band:
                row["verdict"] = "same"
            else:
                row["verdict"] = "inconclusive"
                row["why"] = (f"about {row['runs_needed']} runs a side would tell"
                              if row["runs_needed"] else "")
    return rows


def judge(rows, clock, band=HOST_BAND, workload=None):
    """The verdict of B against A in each of @rows ({figure, unit, better,
    kind, a: [values], b: [values]}, one value per run), on @clock
    ("virtual": BANDS, "host": the tests and @band): fills a_value,
    b_value, verdict, why, diff, ratio, worse and the statistics the
    verdict came from.  What every comparison in the lab says its
    verdicts with."""
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
    return rows


def sweep_curves(a, b):
    """{measure: {"unit", "a": [runs], "b": [runs]}} of sweep sides @a
    and @b, a run {"points": [{"added_ns", "mean"}], "model": {"t0",
    "half_ns"}}: its points and its own model's curve, throughput
    t0 / (1 + d / half_ns) at added latency d (workloads/README.md)."""
    out = {}
    for side, runs in (("a", a), ("b", b)):
        for r in runs:
            s = results.read_json(pathlib.Path(r["path"]) / "summary.json")
            for name, m in (s.get("measures") or {}).items():
                c = out.setdefault(name, {"unit": m.get("unit"), "a": [], "b": []})
                mod = m.get("model") or {}
                zero = next((q for q in m.get("points") or [] if q.get("added_ns") == 0), {})
                c[side].append({
                    "points": [{"added_ns": q.get("added_ns"), "mean": q.get("mean")}
                               for q in m.get("points") or [] if q.get("mean") is not None],
                    "model": {"t0": zero.get("predicted_throughput"),
                              "half_ns": mod.get("half_ns")}})
    return out


def draw_curves(c, path):
    """curves.png: a sweep's throughput against the added latency, both
    sides, each run's points and its model's curve, one panel a measure."""
    from . import plot
    measures = list(c["curves"].items())
    fig, axes = plot.figure(ncols=len(measures), width=5.0 * len(measures))
    axes = axes if len(measures) > 1 else [axes]
    for ax, (name, m) in zip(axes, measures):
        # A hollow and larger, B filled: where they agree both show.
        for side, color, style in (("a", "C0", {"s": 40, "facecolors": "none"}),
                                   ("b", "C1", {"s": 12})):
            for k, run in enumerate(m[side]):
                pts = [q for q in run["points"] if q["added_ns"] is not None]
                ax.scatter([q["added_ns"] for q in pts], [q["mean"] for q in pts],
                           edgecolors=color, color=color, zorder=3, **style,
                           label=side.upper() if k == 0 else None)
                t0, half = run["model"]["t0"], run["model"]["half_ns"]
                if t0 and half and pts:
                    top = max(q["added_ns"] for q in pts)
                    ds = [top * i / 100 for i in range(101)]
                    ax.plot(ds, [t0 / (1 + d / half) for d in ds], color=color,
                            linewidth=0.8, linestyle="--",
                            label=f"{side.upper()}'s model" if k == 0 else None)
        ax.set_xlabel("added latency per system call (ns)")
        ax.set_ylabel(f"{name} ({m['unit'] or ''})")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"compare: {c['of']}, {c['clock']} clock\nthroughput against added "
                 "latency: each run's points and its model", fontsize=8)
    plot.save(fig, axes[-1], path)


def _samples(run):
    """{series: [ns]} of one run's latency samples, for the experiments
    that keep them: irqhook's switching and wake-up times after the first
    event (events.csv), tailamp's reply times at each share of delayed
    calls (runs/ppm-P/logs/reply-nsD-1.csv)."""
    if run["experiment"] == "irqhook":
        from .experiments import irqhook
        events = irqhook.read_events(run["path"])[1:]
        return {name: [e[f"{name}_ns"] for e in events] for name in irqhook.SERIES}
    if run["experiment"] == "tailamp":
        from .experiments import workloads
        ns = results.get(run["meta"], "settings", "ns")
        out = {}
        for d in sorted(pathlib.Path(run["path"]).glob("runs/ppm-*"),
                        key=lambda f: int(f.name[4:])):
            replies, _ = workloads.read_replies(d / f"logs/reply-ns{ns}-1.csv")
            out[f"reply at {d.name[4:]} ppm"] = [sec * 1e9 for sec, _ in replies]
        return out
    if run["experiment"] == "rt-compare":
        return _cyclictest_samples(pathlib.Path(run["path"]))
    return None


# Past this many samples a cyclictest histogram is not expanded into them.
MAX_SAMPLES = 2_000_000


def _cyclictest_samples(d):
    """{"cyclictest LOAD": [ns]} of an rt-compare kernel folder: its
    cyclictest histograms (1 us buckets, every thread added up) as the
    samples they hold, a bucket's at its start; the samples past the
    histogram (overflows) under "LOAD overflows" as a count.  None for a
    whole rt-compare run (its kernels are the sides: R/stock, R/rt)."""
    import numpy as np
    from .experiments import rtcompare
    if not (d / "cyclictest").is_dir():
        return None
    out = {}
    for load in rtcompare.LOADS:
        path = d / "cyclictest" / f"{load}.json"
        if not path.is_file():
            continue
        ct = rtcompare.read_cyclictest(path)
        counts = np.asarray(ct["hist"]["count"], dtype=np.int64)
        if counts.sum() > MAX_SAMPLES or not counts.sum():
            continue
        us = np.asarray(ct["hist"]["us"], dtype=float)
        out[f"cyclictest {load}"] = list(np.repeat(us * 1000, counts))
        out[f"cyclictest {load} overflows"] = sum(t["overflow"] for t in ct["threads"])
    return out or None


def distributions(a, b, clock):
    """{series: {"a", "b": {n, p50, p99, p999, max} of the side's pooled
    samples, "bins": {"width_ns", "differ", "total", "moved_share"}}} of
    sides @a and @b, None for an experiment without samples.  On the
    virtual clock the pooled 1 us histograms compare bin by bin: the bins
    whose share of events differs, and the share of events that moved
    (half the sum of the differences in share)."""
    import numpy as np
    from . import stats
    got = {"a": [_samples(r) for r in a], "b": [_samples(r) for r in b]}
    if any(g is None for g in got["a"] + got["b"]):
        return None
    out = {}
    for name in got["a"][0]:
        if name.endswith(" overflows") or not all(name in g for g in got["a"] + got["b"]):
            continue
        pooled = {s: [x for g in got[s] for x in g[name]] for s in ("a", "b")}
        row = {s: {k: stats.summary(v)[k] for k in ("n", "p50", "p99", "p999", "max")}
                  | {"ccdf": _ccdf(v)} for s, v in pooled.items()}
        for s in ("a", "b"):
            row[s]["overflows"] = sum(g.get(f"{name} overflows", 0) for g in got[s])
        if clock == "virtual":
            top = max(max(pooled["a"]), max(pooled["b"]))
            edges = np.arange(0, top + 2000, 1000)
            share = {s: np.histogram(v, edges)[0] / len(v) for s, v in pooled.items()}
            diff = np.abs(share["a"] - share["b"])
            row["bins"] = {"width_ns": 1000, "total": int(((share["a"] > 0) |
                                                            (share["b"] > 0)).sum()),
                           "differ": int((diff > 0).sum()),
                           "moved_share": float(diff.sum() / 2)}
        out[name] = row
    return out


def _ccdf(v, points=200):
    """[(value, share of samples above it)] at up to @points values."""
    x = sorted(v)
    n = len(x)
    step = max(1, n // points)
    return [(x[i], (n - i - 1) / n) for i in range(0, n, step)]


def draw_ccdf(c, path):
    """ccdf.png: each latency series' share of samples above a time, both
    sides pooled, log y axis: the tails side by side."""
    from . import plot
    series = list(c["distributions"].items())
    fig, axes = plot.figure(ncols=len(series), width=5.0 * len(series))
    axes = axes if len(series) > 1 else [axes]
    for ax, (name, d) in zip(axes, series):
        # B dashed over A solid: where the tails agree both show.
        for side, color, style in (("a", "C0", "-"), ("b", "C1", "--")):
            pts = [(x / 1e3, y) for x, y in d[side]["ccdf"] if y > 0]
            ax.step([x for x, _ in pts], [y for _, y in pts], where="post", color=color,
                    linestyle=style, linewidth=1.6 if side == "a" else 1.0,
                    label=f"{side.upper()} (n {d[side]['n']}, p99 "
                          f"{d[side]['p99'] / 1e3:.1f} us)")
        ax.set_yscale("log")
        ax.set_xlabel(f"{name} (us)" if name.startswith("reply") else f"{name} time (us)")
        ax.set_ylabel("share of samples above")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"compare: {c['of']}, {c['clock']} clock: the tails, pooled over each "
                 "side's runs", fontsize=8)
    plot.save(fig, axes[-1], path)


def compare(a_dirs, b_dirs, band=HOST_BAND):
    """The comparison of result folders @a_dirs with @b_dirs: a dict,
    compare.json's contents."""
    a, b = read_side(a_dirs), read_side(b_dirs)
    exp, clock = check_sides(a, b)
    diff, same = differences(a, b)
    rows = collect(a, b)
    if not rows:
        raise Refused("the two sides have no figure in common")
    judge(rows, clock, band, exp)
    curves = sweep_curves(a, b) if a[0]["experiment"] == "sweep" else None
    dists = distributions(a, b, clock)
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    if any(r["worse"] for r in rows):
        status = 1
    elif counts.get("inconclusive") or counts.get("nondeterministic"):
        status = 2
    else:
        status = 0
    return {"experiment": "compare", "of": exp, "clock": clock,
            "a": {"folders": [r["path"] for r in a], "describe": a[0]["describe"]},
            "b": {"folders": [r["path"] for r in b], "describe": b[0]["describe"]},
            "differences": diff, "same": same, "band": band if clock == "host" else None,
            "rows": rows, "verdicts": counts, "status": status, "curves": curves,
            "distributions": dists}


# --- output ------------------------------------------------------------------------

CSV_COLUMNS = ("figure", "unit", "verdict", "a", "b", "diff", "ratio", "a_n", "b_n",
               "band_rel", "band_abs", "band_source", "p", "p_holm", "ci_low", "ci_high",
               "a_cv", "b_cv", "runs_needed", "worse", "why")


def csv_rows(c):
    for r in c["rows"]:
        ci = r.get("ci") or (None, None)
        yield {"figure": r["figure"], "unit": r["unit"], "verdict": r["verdict"],
               "a": r["a_value"], "b": r["b_value"], "diff": r["diff"], "ratio": r["ratio"],
               "a_n": len(r["a"]), "b_n": len(r["b"]), "band_rel": r["band_rel"],
               "band_abs": r["band_abs"], "band_source": r["band_source"], "p": r.get("p"),
               "p_holm": r.get("p_holm"), "ci_low": ci[0], "ci_high": ci[1],
               "a_cv": results.get(r, "a_stats", "cv"), "b_cv": results.get(r, "b_stats", "cv"),
               "runs_needed": r.get("runs_needed"), "worse": r["worse"],
               "why": r.get("why", "")}


def value(v):
    """@v with seven significant digits, trailing zeros kept (3.000003,
    499.0791, 28235.00): figures that agree show it to the last digit."""
    if v is None:
        return "-"
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    digits = max(0, 6 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f}"


def _pct(x):
    return "-" if x is None else f"{100 * (x - 1):+.3g} %"


def report(c):
    """report.txt: the sides, what differs, then a line per figure."""
    out = [f"compare: {c['of']} on the {c['clock']} clock, "
           f"{len(c['a']['folders'])} run(s) against {len(c['b']['folders'])}"]
    for s in ("a", "b"):
        out.append(f"  {s.upper()}: {', '.join(c[s]['folders'])}")
        out.append(f"     {c[s]['describe']}")
    if c["differences"]:
        out.append(f"what differs ({len(c['differences'])} of "
                   f"{len(c['differences']) + len(c['same'])} recorded settings):")
        for d in c["differences"]:
            note = f"  ({d['note']})" if d["note"] else ""
            out.append(f"  {d['key']}: {_show(d['a']) or '(none)'} -> "
                       f"{_show(d['b']) or '(none)'}{note}")
    else:
        out.append(f"nothing recorded differs ({len(c['same'])} settings the same)")
    if c["clock"] == "host":
        out.append(f"host clock: one value a run; Mann-Whitney U (exact), Holm; bootstrap "
                   f"{CONFIDENCE:.0%} interval of B/A; band +-{100 * c['band']:g} %")
    else:
        out.append("virtual clock: each figure against its repeatability band "
                   "(userspace/compare/NOTES.md)")
    width = max(len(r["figure"]) for r in c["rows"])
    for r in c["rows"]:
        line = (f"  {r['figure']:<{width}}  {value(r['a_value']):>14} -> "
                f"{value(r['b_value']):>14} {r['unit']:<10} {value(r['diff']):>12} "
                f"{_pct(r['ratio']):>11}  {r['verdict']}")
        if c["clock"] == "host" and r.get("ci"):
            line += (f"  (p {r['p_holm']:.3g} Holm, B/A {r['ci'][0]:.4f}..{r['ci'][1]:.4f}, "
                     f"n {len(r['a'])}/{len(r['b'])})")
            for s in ("a", "b"):
                st = r[f"{s}_stats"]
                if st["cv"] is not None and st["cv"] > CV_WARNING:
                    line += f" [{s.upper()} CV {100 * st['cv']:.0f} %]"
                if st["outliers"]:
                    line += f" [{s.upper()} outliers {len(st['outliers'])}]"
                if st["drift_p"] is not None and st["drift_p"] < ALPHA:
                    line += f" [{s.upper()} drifts, rho {st['drift_rho']:+.2f}]"
        if r.get("why"):
            line += f"  ({r['why']})"
        out.append(line)
    for name, d in (c.get("distributions") or {}).items():
        qs = "  ".join(f"{q} {d['a'][q] / 1e3:.2f} -> {d['b'][q] / 1e3:.2f} us"
                       for q in ("p50", "p99", "p999", "max"))
        over = "".join(f", {d[s]['overflows']} overflows in {s.upper()}"
                       for s in ("a", "b") if d[s].get("overflows"))
        out.append(f"  {name} (pooled, n {d['a']['n']} -> {d['b']['n']}{over}): {qs}")
        if d.get("bins"):
            b = d["bins"]
            out.append(f"    1 us bins: {b['differ']} of {b['total']} differ in share; "
                       f"{100 * b['moved_share']:.2f} % of the events moved")
    counts = ", ".join(f"{n} {v}" for v, n in c["verdicts"].items())
    worse_rows = [r["figure"] for r in c["rows"] if r["worse"]]
    out.append(f"verdicts: {counts}")
    out.append(f"worse in B: {', '.join(worse_rows)}" if worse_rows else "no figure worse in B")
    return "\n".join(out) + "\n"


def _scale(c, r):
    """(unit of the x axis, its name) for row @r: the band's width on the
    virtual clock, 1 % of A on the host's."""
    if c["clock"] == "virtual":
        return max(r["band_rel"] * abs(r["a_value"]), r["band_abs"]) or 1.0, "bands"
    return abs(r["a_value"]) / 100 or 1.0, "% of A"


def draw(c, path):
    """compare.png: every run a dot per side, its distance from A's median
    in bands (virtual clock: the grey stripe is the clock's repeatability,
    inside it nothing changed) or in % of A (host clock: the stripe is the
    band, the bar B's 95 % interval); a symmetric log axis past 1."""
    from . import plot
    rows = c["rows"][:40]
    fig, ax = plot.figure(height=max(3.0, 0.28 * len(rows) + 1.5))
    name, far = "bands", 0.0
    for i, r in enumerate(rows):
        unit, name = _scale(c, r)
        y = len(rows) - 1 - i
        for side, dy, color in (("a", 0.12, "C0"), ("b", -0.12, "C1")):
            xs = [(x - r["a_value"]) / unit for x in r[side]]
            far = max([far, *map(abs, xs)])
            ax.scatter(xs, [y + dy] * len(xs), s=14, color=color, zorder=3,
                       label=side.upper() if i == 0 else None)
        if r.get("ci"):
            lo, hi = ((v - 1) * r["a_value"] / unit for v in r["ci"])
            ax.plot([lo, hi], [y - 0.12] * 2, color="C1", linewidth=1)
    stripe = 1.0 if c["clock"] == "virtual" else 100 * (c["band"] or 0)
    ax.axvspan(-stripe, stripe, color="0.85", zorder=1,
               label="repeatability band" if c["clock"] == "virtual" else "band")
    ax.set_xscale("symlog", linthresh=max(stripe, 1e-9))
    edge = max(3 * stripe, 1.5 * far)
    ax.set_xlim(-edge, edge)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r['figure'][:48]} [{r['verdict']}]" for r in reversed(rows)],
                       fontsize=6)
    ax.set_xlabel(f"run - median of A, in {name}" + (" (band: +-1)" if name == "bands"
                                                     else ""))
    ax.legend(fontsize=7, loc="lower right")
    lines = [f"compare: {c['of']}, {c['clock']} clock, {len(c['a']['folders'])} against "
             f"{len(c['b']['folders'])} run(s)"]
    lines += [f"{s.upper()}: {c[s]['describe']}" for s in ("a", "b")]
    if c["a"]["describe"] == c["b"]["describe"]:
        lines = [lines[0], f"both: {c['a']['describe']}"]
    fig.suptitle("\n".join(textwrap.shorten(x, 140) for x in lines), fontsize=8)
    plot.save(fig, ax, path)


def write(c, parent, name=None, picture=True):
    """The result folder PARENT/compare-<date>-<time> (or @name) with
    @c's files; returns (folder, files)."""
    pathlib.Path(parent).mkdir(parents=True, exist_ok=True)
    d = pathlib.Path(results.lab("begin", parent, "compare", *([name] if name else [])))
    results.lab("meta", d, "compare", f"of={c['of']}", f"clock={c['clock']}",
        f"a:={json.dumps(c['a']['folders'])}", f"b:={json.dumps(c['b']['folders'])}",
        "--", "compare")
    results.write_json(d / "compare.json", c)
    results.write_csv(d / "compare.csv", CSV_COLUMNS, csv_rows(c))
    results.write_text(d / "report.txt", report(c))
    files = ["report.txt", "compare.json", "compare.csv"]
    if picture:
        draw(c, d / "compare.png")
        files.append("compare.png")
        if c.get("curves"):
            draw_curves(c, d / "curves.png")
            files.append("curves.png")
        if c.get("distributions"):
            draw_ccdf(c, d / "ccdf.png")
            files.append("ccdf.png")
    d = pathlib.Path(results.lab("commit", d, *([] if name else ["compare"])))
    return d, files


def add_args(p):
    p.add_argument("pair", nargs="*", metavar="DIR",
                   help="two result folders, A then B (or use -a/-b)")
    p.add_argument("-a", nargs="+", default=[], metavar="DIR", help="side A's folders")
    p.add_argument("-b", nargs="+", default=[], metavar="DIR", help="side B's folders")
    p.add_argument("--band", type=float, default=100 * HOST_BAND, metavar="PCT",
                   help=f"host clock: the band in %% (default {100 * HOST_BAND:g})")
    p.add_argument("-o", "--output", default=str(ROOT / "results"),
                   help="parent of the result folder (default results/)")
    p.add_argument("--name", help="the result folder's name instead of compare-<date>-<time>")
    p.add_argument("--no-plot", action="store_true", help="do not draw compare.png")
    cli.add_json_option(p)


def sides(args):
    if args.pair and (args.a or args.b):
        raise Refused("give either two folders or -a and -b, not both")
    if args.pair:
        if len(args.pair) != 2:
            raise Refused(f"two folders, A and B, not {len(args.pair)} (or -a ... -b ...)")
        return [args.pair[0]], [args.pair[1]]
    if not args.a or not args.b:
        raise Refused("no folders: compare A B, or compare -a A1 A2 -b B1 B2")
    return args.a, args.b


def main(argv=None):
    p = cli.parser(__doc__.split("\n\n")[0],
                   "compare results/calibrate-20261202-152058 results/calibrate-20261202-160200",
                   prog="compare")
    add_args(p)
    args = p.parse_args(argv)
    if not 0 < args.band < 100:
        p.error(f"--band {args.band}: not a percentage between 0 and 100")
    try:
        a, b = sides(args)
        c = compare(a, b, band=args.band / 100)
        d, files = write(c, args.output, args.name, picture=not args.no_plot)
    except Refused as e:
        print(f"compare: {cli.message(e)}", file=sys.stderr)
        return 2
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"compare: error: {cli.message(e)}", file=sys.stderr)
        return 2
    cli.show(args, c, report(c), d, files)
    return c["status"]


if __name__ == "__main__":
    sys.exit(main())
