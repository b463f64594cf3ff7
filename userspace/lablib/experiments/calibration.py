"""A calibrate folder (raw.csv + meta.json) turned into its summary: per
point statistics of the latency per call, and per system call the line
latency = intercept + slope x loops.

The fit that counts ("fits") goes through each point's p10, a low quantile
of its many short batches: a batch that the host or an interrupt slowed
moves a point's mean and, on a noisy spell, its median, but hardly its
p10.  It is a robust fit (stats.robust_linfit): a point that a slow spell
of the host spoiled as a whole is left out and named, not allowed to tilt
the line.  Least-squares lines through the medians ("fits_p50") and the
minima ("fits_min") are reported beside it.  Used by the calibrate analyser
and by the workload report, which reads the fit from its calibration/
subfolder."""
import pathlib

from .. import results, stats

RAW_COLUMNS = ("syscall", "loops", "round", "batch", "calls", "ns_per_call")
POINT_KEYS = ("syscall", "loops") + stats.SUMMARY_KEYS + (
    "p10", "added", "calibrated_ns", "measured_ns", "measured_vs_calibrated")
# The per-point statistic of the fit that counts.
FIT_STATISTIC = "p10"


def read_raw(path):
    """{(syscall, loops): [ns_per_call, ...]} of a calibrate raw.csv."""
    samples = {}
    for i, row in enumerate(results.read_csv(path, RAW_COLUMNS), 2):
        try:
            loops = int(row["loops"])
            ns = float(row["ns_per_call"])
        except ValueError:
            raise ValueError(f"{path} line {i}: loops {row['loops']!r} or ns_per_call "
                             f"{row['ns_per_call']!r} is not a number") from None
        if loops < 0 or not ns >= 0 or ns == float("inf"):
            raise ValueError(f"{path} line {i}: loops {loops}, ns_per_call {ns}: "
                             f"negative or not finite")
        samples.setdefault((row["syscall"], loops), []).append(ns)
    if not samples:
        raise ValueError(f"{path}: a header but no batches")
    return samples


def _fit(points, statistic, robust=False):
    fit = stats.robust_linfit if robust else stats.linfit
    try:
        f = fit([p["loops"] for p in points], [p[statistic] for p in points])
    except ValueError:
        return None     # one loop count: no line
    return {"statistic": statistic, "method": "robust" if robust else "least squares", **f}


def summarise(samples):
    """The summary.json dict (without "experiment") of @samples."""
    points = []
    for (syscall, loops), values in sorted(samples.items()):
        points.append({"syscall": syscall, "loops": loops, **stats.summary(values),
                       "p10": stats.percentile(sorted(values), 10)})
    fits, fits_p50, fits_min = {}, {}, {}
    for name in sorted({p["syscall"] for p in points}):
        mine = [p for p in points if p["syscall"] == name]
        for out, stat, robust in ((fits, FIT_STATISTIC, True), (fits_p50, "p50", False),
                                  (fits_min, "min", False)):
            f = _fit(mine, stat, robust)
            if f:
                out[name] = f
        zero = next((p["p50"] for p in mine if p["loops"] == 0), None)
        if zero is None and name in fits:
            zero = fits[name]["intercept"]
        for p in mine:
            p["added"] = None if zero is None else p["p50"] - zero
    out = {"unit": "ns", "points": points, "fits": fits, "fits_p50": fits_p50,
           "fits_min": fits_min}
    out["entry_ns"] = entry_ns(out)
    return out


def read_module(path):
    """{(syscall, loops): measured ns per delayed call} from a calibrate
    module.csv (the module's own account of its spin); {} without it."""
    if not path.exists():
        return {}
    out = {}
    for i, row in enumerate(results.read_csv(path, ("syscall", "loops", "delayed",
                                                     "spun_ns")), 2):
        try:
            loops, delayed, spun = int(row["loops"]), int(row["delayed"]), int(row["spun_ns"])
        except ValueError:
            raise ValueError(f"{path} line {i}: not whole numbers: {row}") from None
        out[(row["syscall"], loops)] = spun / delayed if delayed else None
    return out


def add_measured(summary, measured):
    """Put the module's measured ns per delayed call beside the calibrated
    added latency (entry_ns + loops x slope of that system call's fit) in
    each point: "measured_ns", "calibrated_ns", "measured_vs_calibrated"."""
    for p in summary["points"]:
        f = summary["fits"].get(p["syscall"])
        cal = None
        if f and p["loops"]:
            cal = summary["entry_ns"] + f["slope"] * p["loops"]
        got = measured.get((p["syscall"], p["loops"]))
        p["measured_ns"], p["calibrated_ns"] = got, cal
        p["measured_vs_calibrated"] = got / cal - 1 if got is not None and cal else None


def load(folder):
    """(meta, summary) of calibrate folder @folder; the summary is the
    summary.json dict (README.md, Conventions: summary keys)."""
    meta = results.read_meta(folder)
    if meta.get("experiment") != "calibrate":
        raise ValueError(f"{folder} holds a {meta.get('experiment')!r} run, "
                         f"not a calibrate one")
    summary = summarise(read_raw(pathlib.Path(folder) / "raw.csv"))
    add_measured(summary, read_module(pathlib.Path(folder) / "module.csv"))
    return meta, {"experiment": "calibrate", **summary}


def entry_ns(summary):
    """What a delayed call costs before its first loop: the mean over the
    fits of their intercept minus the p10 at loops 0 (the undelayed call).
    The module reads the clock around every spin and counts it, so a call
    at loops N costs entry + N x slope more than one at loops 0.  0 without
    a point at loops 0."""
    steps = []
    for name, f in (summary.get("fits") or {}).items():
        zero = next((p[FIT_STATISTIC] for p in summary["points"]
                     if p["syscall"] == name and p["loops"] == 0), None)
        if zero is not None:
            steps.append(f["intercept"] - zero)
    return sum(steps) / len(steps) if steps else 0.0


def added_ns(summary, loops):
    """The latency the delay adds to a call at @loops: 0 at 0, else the
    entry cost plus loops x the mean slope of the fits."""
    if loops == 0:
        return 0.0
    slope, _ = ns_per_loop(summary)
    return entry_ns(summary) + loops * slope


def ns_per_loop(summary, where="the calibration"):
    """The mean slope of the fits that count (ns added per loop) and the
    fits' names; ValueError if there is no fit or the slope is not > 0."""
    fits = summary.get("fits") or {}
    if not fits:
        raise ValueError(f"{where}: no fits (one loop count only?)")
    slope = sum(f["slope"] for f in fits.values()) / len(fits)
    if not slope > 0:
        raise ValueError(f"{where}: the fits give {slope} ns per loop, not > 0")
    return slope, sorted(fits)
