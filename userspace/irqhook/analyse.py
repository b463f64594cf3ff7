"""Summarise one irqhook run: the switching time (write() until read()
returns) and the wake-up time (the driver's write until the reader runs)
of every event, the first event apart, each split into a fast and a slow
group.

Reads DIR/events.csv and DIR/meta.json; writes DIR/summary.json,
DIR/histogram.txt (events per 1 us bucket, cyclictest style) and
DIR/histogram.png (log y axis, the fast/slow threshold dotted), and prints
the summary in us.
"""
import pathlib
import sys

from lablib import cli, plot, results
from lablib.experiments import irqhook

LABELS = {"switching": "switching: write() -> read() returns",
          "wakeup": "wake-up: driver write -> reader runs"}


def task_class(settings):
    return "SCHED_RR" if settings.get("class") == "rt" else "SCHED_OTHER"


def table(meta, summary):
    """What the run printed when irqhook summarised it itself."""
    s = summary["settings"]
    first = summary["first_event"]
    out = [f"irqhook: {summary['events']} events, {s.get('loads', '?')} load tasks, "
           f"{task_class(s)} read/write tasks (times in us)",
           results.describe(meta),
           f"first event: switching {first['switching'] / 1e3:.1f}, "
           f"wake-up {first['wakeup'] / 1e3:.1f}"]
    if summary["events"] > 1:
        out.append(f"{'after 1st':<10} {'count':>6} {'min':>8} {'mean':>8} {'stddev':>8} "
                   f"{'p50':>8} {'p90':>8} {'p99':>8} {'max':>9} {'split':>8}")
        for name, label in (("switching", "switching"), ("wakeup", "wake-up")):
            x = summary["after_first"][name]
            sp = x["split"]
            us = [x[k] / 1e3 for k in ("min", "mean", "stddev", "p50", "p90", "p99")]
            out.append(f"{label:<10} {x['n']:>6} " + " ".join(f"{v:>8.1f}" for v in us)
                       + f" {x['max'] / 1e3:>9.1f} {sp['threshold'] / 1e3:>8.1f}   "
                       f"fast {sp['fast_n']} x {sp['fast_mean'] / 1e3:.1f} / "
                       f"slow {sp['slow_n']} x {sp['slow_mean'] / 1e3:.1f}")
    return "\n".join(out) + "\n"


def draw(meta, summary, events, path):
    """histogram.png: events per bucket of both series, log y axis."""
    fig, ax = plot.figure()
    series = [(name, f"C{i}", [max(e[f"{name}_ns"] / 1e3, 0.1) for e in events])
              for i, name in enumerate(irqhook.SERIES)]
    lo = min(min(v) for *_, v in series)
    hi = max(max(v) for *_, v in series)
    # 1 us buckets while they are readable; past that, 200 log-spaced ones on
    # a log axis (histogram.txt keeps the 1 us buckets).
    wide = hi > 50 * max(lo, 1)
    if wide:
        bins = plot.log_bins(lo, hi, 200)
        plot.log_axis(ax, "x", lo, hi)
    else:
        bins = list(range(0, int(hi) + 2))
    for name, color, us in series:
        ax.hist(us, bins=bins, histtype="step", color=color, label=LABELS[name],
                linewidth=1.2)
        split = summary["all_events"][name]["split"]
        if split["slow_n"]:
            ax.axvline(split["threshold"] / 1e3, color=color, linestyle=":", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("time (us), " + ("log-spaced buckets" if wide else "1 us buckets") +
                  "; dotted: fast/slow split")
    ax.set_ylabel("events")
    s = summary["settings"]
    cls = "SCHED_RR prio 1" if s.get("class") == "rt" else "SCHED_OTHER"
    ax.set_title(f"{summary['events']} events, {s.get('loads', '?')} load tasks, {cls}",
                 fontsize=8)
    plot.headline(fig, "irqhook: switching and wake-up times of /dev/irqhook's reader", meta,
                  98)
    plot.save(fig, ax, path)


def analyse(folder, draw_plot=True):
    """Write summary.json, histogram.txt and (@draw_plot) histogram.png of
    irqhook folder @folder; returns (meta, summary)."""
    d = pathlib.Path(folder)
    meta, events, summary = irqhook.load(d)
    results.write_json(d / "summary.json", summary)
    results.write_text(d / "histogram.txt", irqhook.histogram(events))
    if draw_plot:
        draw(meta, summary, events, d / "histogram.png")
    return meta, summary


def add_args(p):
    cli.add_result_args(p, "DIR", "an irqhook result folder", "histogram.png")


def work(args):
    meta, summary = analyse(args.dir, not args.no_plot)
    cli.show(args, summary, table(meta, summary), args.dir,
             ["summary.json", "histogram.txt"], "histogram.png")


def main(argv=None, prog=None):
    """Analyse the irqhook run folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "python -m lablib.irqhook.analyse results/latest-irqhook",
                    add_args, work, argv=argv, prog=prog or "python -m lablib.irqhook.analyse")


if __name__ == "__main__":
    sys.exit(main())
