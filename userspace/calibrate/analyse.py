#!/usr/bin/env python3
"""Summarise a calibrate run: the latency of a null system call at each
delay-module loop count, and the line latency = intercept + slope x loops
fitted per system call to the points' medians (p50) and minima.

Reads DIR/raw.csv and DIR/meta.json; writes DIR/summary.json,
DIR/summary.csv and DIR/calibration.png (median per point, bars from min
to p90, the fitted line), and prints the table and the fits.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from lablib import calibration, cli, plot, results  # noqa: E402

CSV_COLUMNS = calibration.POINT_KEYS + ("fit",)


def table(meta, summary):
    """The printed report: one line per point, then the fits."""
    out = [f"calibrate: {per_point(meta)}; {results.describe(meta)}",
           f"{'syscall':<8} {'loops':>7} {'p50 ns':>10} {'min ns':>10} {'stddev ns':>10} "
           f"{'n':>6} {'added ns':>10}"]
    for p in summary["points"]:
        added = "-" if p["added"] is None else f"{p['added']:.1f}"
        out.append(f"{p['syscall']:<8} {p['loops']:>7} {p['p50']:>10.1f} {p['min']:>10.1f} "
                   f"{p['stddev']:>10.2f} {p['n']:>6} {added:>10}")
    for name, f in summary["fits"].items():
        line = (f"fit {name:<8} latency = {f['intercept']:.1f} ns + {f['slope']:.4f} ns/loop "
                f"x loops   R^2 = {f['r2']:.5f} (p50, {f['n']} points)")
        m = summary["fits_min"].get(name)
        if m:
            line += (f"; minima: {m['intercept']:.1f} ns + {m['slope']:.4f} ns/loop, "
                     f"R^2 = {m['r2']:.5f}")
        out.append(line)
    return "\n".join(out) + "\n"


def per_point(meta):
    s = results.settings(meta)
    return f"{s.get('batches', '?')} batches x {s.get('calls', '?')} calls per point"


def csv_rows(summary):
    """The points, each with the p50 fit's value at its loop count."""
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
                    fmt="o", ms=4, capsize=3, color=color,
                    label=f"{name}() median (bars: min..p90)")
        fit = summary["fits"].get(name)
        if fit:
            xs = [min(x), max(x)]
            ax.plot(xs, [fit["intercept"] + fit["slope"] * v for v in xs], "-", color=color,
                    alpha=0.6, label=(f"{name}: {fit['intercept']:.0f} ns + "
                                      f"{fit['slope']:.3f} ns/loop, R\u00b2={fit['r2']:.4f}"))
    ax.set_xlabel("delay module loops per system call")
    ax.set_ylabel("null system call latency (ns)")
    ax.set_title(f"Syscall delay calibration, {per_point(meta)}\n{results.describe(meta)}",
                 fontsize=8)
    ax.set_ylim(bottom=0)
    plot.save(fig, ax, path)


def add_args(p):
    p.add_argument("dir", metavar="DIR", help="a calibrate result folder")
    p.add_argument("--no-plot", action="store_true", help="do not draw calibration.png")
    cli.add_json_option(p)


def work(args):
    d = pathlib.Path(args.dir)
    meta, summary = calibration.load(d)
    results.write_json(d / "summary.json", summary)
    results.write_csv(d / "summary.csv", CSV_COLUMNS, csv_rows(summary))
    if not args.no_plot:
        draw(meta, summary, d / "calibration.png")
    if args.json:
        cli.print_json(summary)
    else:
        print(table(meta, summary), end="")
        print(f"results: {d}/summary.json, summary.csv"
              + ("" if args.no_plot else ", calibration.png"))


if __name__ == "__main__":
    sys.exit(cli.main(__doc__, "userspace/calibrate/analyse.py results/latest-calibrate",
                      add_args, work))
