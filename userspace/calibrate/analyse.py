"""Summarise a calibrate run: the latency of a null system call at each
delay-module loop count, and the line latency = intercept + slope x loops
per system call: the fit that counts through the points' p10, robust to a
spoiled point (lablib.experiments.calibration says why), and least-squares lines
through the medians (p50) and minima beside it.

Reads DIR/raw.csv and DIR/meta.json; writes DIR/summary.json,
DIR/summary.csv and DIR/calibration.png (p10 and median per point, bars
from min to p90, the fitted line), and prints the table and the fits.
"""
import pathlib
import sys

from lablib import cli, plot, results
from lablib.experiments import calibration

CSV_COLUMNS = calibration.POINT_KEYS + ("fit",)


def table(meta, summary):
    """The printed report: one line per point, then the fits."""
    out = [f"calibrate: {per_point(meta)}; {results.describe(meta)}",
           f"{'syscall':<8} {'loops':>7} {'p10 ns':>10} {'p50 ns':>10} {'min ns':>10} "
           f"{'stddev ns':>10} {'n':>6} {'added ns':>10}"]
    for p in summary["points"]:
        added = "-" if p["added"] is None else f"{p['added']:.1f}"
        out.append(f"{p['syscall']:<8} {p['loops']:>7} {p['p10']:>10.1f} {p['p50']:>10.1f} "
                   f"{p['min']:>10.1f} {p['stddev']:>10.2f} {p['n']:>6} {added:>10}")
    for name, f in summary["fits"].items():
        left_out = f.get("outliers") or []
        out.append(f"fit {name:<8} latency = {f['intercept']:.1f} ns + {f['slope']:.4f} "
                   f"ns/loop x loops   R^2 = {f['r2']:.5f} ({f['statistic']}, {f['method']}, "
                   f"{f['n']} points"
                   + (f"; left out: loops {', '.join(f'{x:g}' for x in left_out)})"
                      if left_out else ")"))
        for label, other in (("medians", summary.get("fits_p50", {}).get(name)),
                             ("minima", summary["fits_min"].get(name))):
            if other:
                out.append(f"    {label:<8} {other['intercept']:.1f} ns + "
                           f"{other['slope']:.4f} ns/loop, R^2 = {other['r2']:.5f} "
                           f"(slope {100 * (other['slope'] / f['slope'] - 1):+.1f} %)")
    measured = [p for p in summary["points"] if p.get("measured_vs_calibrated") is not None]
    if measured:
        out.append("the module's own measure of its spin, per delayed call, against the "
                   "calibrated added latency:")
        for p in measured:
            out.append(f"    {p['syscall']:<8} {p['loops']:>7} loops: measured "
                       f"{p['measured_ns']:9.1f} ns, calibrated {p['calibrated_ns']:9.1f} ns "
                       f"({100 * p['measured_vs_calibrated']:+.1f} %)")
    if summary["fits"]:
        out.append(f"a delayed call costs {summary['entry_ns']:.1f} ns before its first loop "
                   f"(fit intercept minus the p10 at loops 0: the module's clock reads and "
                   f"counters); loops N add that plus N x the slope")
    return "\n".join(out) + "\n"


def per_point(meta):
    s = results.settings(meta)
    return f"{s.get('batches', '?')} batches x {s.get('calls', '?')} calls per point"


def csv_rows(summary):
    """The points, each with the fit's value at its loop count."""
    for p in summary["points"]:
        f = summary["fits"].get(p["syscall"])
        yield {**p, "fit": f["intercept"] + f["slope"] * p["loops"] if f else None}


def draw(meta, summary, path):
    fig, ax = plot.figure()
    for i, name in enumerate(sorted({p["syscall"] for p in summary["points"]})):
        pts = [p for p in summary["points"] if p["syscall"] == name]
        x = [p["loops"] for p in pts]
        color = f"C{i}"
        ax.errorbar(x, [p["p50"] for p in pts],
                    yerr=[[p["p50"] - p["min"] for p in pts], [p["p90"] - p["p50"] for p in pts]],
                    fmt="o", ms=3, capsize=3, color=color, alpha=0.5,
                    label=f"{name}() median (bars: min..p90)")
        ax.plot(x, [p["p10"] for p in pts], "D", ms=4, color=color,
                label=f"{name}() p10 (fitted)")
        fit = summary["fits"].get(name)
        if fit:
            xs = [min(x), max(x)]
            ax.plot(xs, [fit["intercept"] + fit["slope"] * v for v in xs], "-", color=color,
                    alpha=0.6, label=(f"{name}: {fit['intercept']:.0f} ns + "
                                      f"{fit['slope']:.3f} ns/loop, R\u00b2={fit['r2']:.4f}"))
    ax.set_xlabel("delay module loops per system call")
    ax.set_ylabel("null system call latency (ns)")
    ax.set_title(per_point(meta), fontsize=8)
    ax.set_ylim(bottom=0)
    plot.headline(fig, "calibrate: null system call latency against the delay module's loops",
                  meta, 98)
    plot.save(fig, ax, path)


def add_args(p):
    cli.add_result_args(p, "DIR", "a calibrate result folder", "calibration.png")


def work(args):
    d = pathlib.Path(args.dir)
    meta, summary = calibration.load(d)
    results.write_json(d / "summary.json", summary)
    results.write_csv(d / "summary.csv", CSV_COLUMNS, csv_rows(summary))
    if not args.no_plot:
        draw(meta, summary, d / "calibration.png")
    cli.show(args, summary, table(meta, summary), d, ["summary.json", "summary.csv"],
             "calibration.png")


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-calibrate", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.calibrate.analyse")


if __name__ == "__main__":
    sys.exit(main())
