"""compare's look at the samples behind the figures: a sweep's points
and model curves for curves.png, and the latency samples of irqhook,
tailamp and an rt-compare kernel folder, pooled per side, for ccdf.png
and report.txt's quantiles (userspace/compare/README.md, "Outputs")."""
import pathlib

from . import results


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
