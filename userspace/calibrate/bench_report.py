"""How repeatable the calibration is: the slope and R^2 of every run of a
calibrate-bench folder (userspace/calibrate/bench.sh), their spread within
each boot and across boots, for the fit that counts (p10, robust) and for
least squares through the medians.  The target: the slope varies by less
than 2 % (coefficient of variation) from run to run within one boot.

Reads BENCH_DIR/boot-*/run-*/summary.json (each run's 'lab analyse');
writes BENCH_DIR/bench.json and bench.txt and prints the table.
"""
import pathlib
import statistics
import sys

from lablib import cli, results

TARGET_CV = 0.02
FITS = (("fits", "p10 robust"), ("fits_p50", "p50 least squares"))


def collect(d):
    """{boot: [summary, ...]} of the analysed runs under @d."""
    boots = {}
    for run in sorted(pathlib.Path(d).glob("boot-*/run-*/summary.json")):
        boots.setdefault(run.parent.parent.name, []).append(results.read_json(run))
    if not boots:
        raise ValueError(f"{d}: no boot-*/run-*/summary.json (lab analyse each run)")
    return boots


def spread(values):
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"n": len(values), "mean": mean, "stddev": sd, "min": min(values),
            "max": max(values), "cv": sd / mean if mean else None}


def bench(boots):
    out = {"experiment": "calibrate-bench", "unit": "ns per loop", "target_cv": TARGET_CV,
           "fits": {}}
    for key, label in FITS:
        per_syscall = {}
        names = sorted({n for runs in boots.values() for s in runs for n in s.get(key, {})})
        for name in names:
            within = {}
            for boot, runs in sorted(boots.items()):
                fits = [s[key][name] for s in runs if name in s.get(key, {})]
                within[boot] = {"slope": spread([f["slope"] for f in fits]),
                                "r2": spread([f["r2"] for f in fits])}
            means = [w["slope"]["mean"] for w in within.values()]
            per_syscall[name] = {"within_boot": within,
                                 "across_boots": {"slope": spread(means)}}
        out["fits"][key] = {"label": label, "syscalls": per_syscall}
    return out


def table(b):
    lines = [f"calibration repeatability (target: slope CV < {TARGET_CV:.0%} within a boot)",
             f"{'fit':<18} {'syscall':<8} {'boot':<7} {'runs':>4} {'slope mean':>11} "
             f"{'CV':>7} {'min..max':>17} {'R2 min':>8}  verdict"]
    for key, fit in b["fits"].items():
        for name, s in fit["syscalls"].items():
            for boot, w in s["within_boot"].items():
                sl, r2 = w["slope"], w["r2"]
                ok = sl["cv"] is not None and sl["cv"] < TARGET_CV
                lines.append(f"{fit['label']:<18} {name:<8} {boot:<7} {sl['n']:>4} "
                             f"{sl['mean']:>11.4f} {100 * (sl['cv'] or 0):>6.2f}% "
                             f"{sl['min']:>8.4f}..{sl['max']:<8.4f} {r2['min']:>8.5f}  "
                             f"{'ok' if ok else 'ABOVE TARGET'}")
            a = s["across_boots"]["slope"]
            if a["n"] > 1:
                lines.append(f"{fit['label']:<18} {name:<8} {'boots':<7} {a['n']:>4} "
                             f"{a['mean']:>11.4f} {100 * (a['cv'] or 0):>6.2f}% "
                             f"{a['min']:>8.4f}..{a['max']:<8.4f}")
    return "\n".join(lines) + "\n"


def analyse(d):
    b = bench(collect(d))
    results.write_json(d / "bench.json", b)
    text = table(b)
    results.write_text(d / "bench.txt", text)
    return b, text, ["bench.txt", "bench.json"]


add_args, work = cli.folder_analyser("BENCH_DIR", "a calibrate-bench result folder", analyse)


main = cli.command(__doc__, "python -m lablib.calibrate.bench_report "
                   "results/latest-calibrate-bench", add_args, work)


if __name__ == "__main__":
    sys.exit(main())
