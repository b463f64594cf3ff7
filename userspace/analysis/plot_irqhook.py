#!/usr/bin/env python3
"""Draw histogram.png for one irqhook run: events per 1 us bucket of the
switching and the wake-up time, log y axis, the fast/slow threshold marked.

usage: plot_irqhook.py RUN_DIR
"""
import csv
import json
import os
import sys

from labcli import plt, run, save


def load(run_dir):
    with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    with open(os.path.join(run_dir, "events.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{run_dir}/events.csv has no events")
    return summary, rows


def plot(run_dir):
    summary, rows = load(run_dir)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    series = [(key, label, color, [max(float(r[key]) / 1e3, 0.1) for r in rows])
              for key, label, color in (
                  ("switching_ns", "switching: write() -> read() returns", "C0"),
                  ("wakeup_ns", "wake-up: driver write -> reader runs", "C1"))]
    lo = min(min(v) for *_, v in series)
    hi = max(max(v) for *_, v in series)
    # 1 us buckets while they are readable; past that, 200 log-spaced ones on
    # a log axis (histogram.txt keeps the 1 us buckets).
    wide = hi > 50 * max(lo, 1)
    if wide:
        bins = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.set_xscale("log")
    else:
        bins = list(range(0, int(hi) + 2))
    for key, label, color, us in series:
        ax.hist(us, bins=bins, histtype="step", color=color, label=label, linewidth=1.2)
        split = summary["all_events"][key[:-3]]["split"]
        if split["slow_count"]:
            ax.axvline(split["threshold"] / 1e3, color=color, linestyle=":", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("time (us), " + ("log-spaced buckets" if wide else "1 us buckets") +
                  "; dotted: fast/slow split")
    ax.set_ylabel("events")
    cls = "SCHED_RR prio 1" if summary["class"] == "rt" else "SCHED_OTHER"
    ax.set_title(f"irqhook: {summary['events']} events, {summary['loads']} load tasks, "
                 f"{cls} ({summary['kernel']})", fontsize=9)
    save(fig, ax, os.path.join(run_dir, "histogram.png"))


def main(argv):
    return run(__doc__, argv, 1, plot)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
