#!/usr/bin/env python3
"""Table and plot of an irqhook sweep (userspace/irqhook/irqhook-sweep.sh).

Reads SWEEP_DIR/<loads>-<normal|rt>/summary.json and writes, in SWEEP_DIR:
table.txt (the reference's shape: one row per load count, switching and
wake-up per class), table.csv, sweep.json and sweep.png (mean and p99
against load tasks for both classes).

usage: irqhook_sweep.py SWEEP_DIR
"""
import csv
import json
import os
import re
import sys

from labcli import plt, run, save

CELL = re.compile(r"^(\d+)-(normal|rt)$")
COLUMNS = ["loads", "class", "events", "first_switching_us", "first_wakeup_us",
           "switching_mean_us", "switching_p99_us", "wakeup_mean_us", "wakeup_p50_us",
           "wakeup_p99_us", "wakeup_max_us", "fast_count", "fast_mean_us", "slow_count",
           "slow_mean_us"]


def collect(sweep_dir):
    rows = []
    for name in os.listdir(sweep_dir):
        m = CELL.match(name)
        path = os.path.join(sweep_dir, name, "summary.json")
        if not m or not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            s = json.load(f)
        sw, wk = s["after_first"]["switching"], s["after_first"]["wakeup"]
        rows.append({
            "loads": int(m[1]), "class": m[2], "events": s["events"],
            "first_switching_us": s["first_event"]["switching"] / 1e3,
            "first_wakeup_us": s["first_event"]["wakeup"] / 1e3,
            "switching_mean_us": sw["mean"] / 1e3, "switching_p99_us": sw["p99"] / 1e3,
            "wakeup_mean_us": wk["mean"] / 1e3, "wakeup_p50_us": wk["p50"] / 1e3,
            "wakeup_p99_us": wk["p99"] / 1e3, "wakeup_max_us": wk["max"] / 1e3,
            "fast_count": wk["split"]["fast_count"],
            "fast_mean_us": wk["split"]["fast_mean"] / 1e3,
            "slow_count": wk["split"]["slow_count"],
            "slow_mean_us": wk["split"]["slow_mean"] / 1e3,
        })
    if not rows:
        raise ValueError(f"no <loads>-<normal|rt>/summary.json under {sweep_dir}")
    rows.sort(key=lambda r: (r["class"], r["loads"]))
    return rows


def table(rows):
    out = ["Times in us after the first event (first event apart); wake-up split into",
           "fast and slow groups (count x mean).", ""]
    head = (f"{'class':<7}{'loads':>6}{'events':>8}{'1st sw':>9}{'1st wk':>9}"
            f"{'sw mean':>9}{'sw p99':>9}{'wk mean':>9}{'wk p99':>9}{'wk max':>9}"
            f"   {'fast':>14}   {'slow':>14}")
    out += [head, "-" * len(head)]
    for r in rows:
        out.append(f"{r['class']:<7}{r['loads']:>6}{r['events']:>8}"
                   f"{r['first_switching_us']:>9.1f}{r['first_wakeup_us']:>9.1f}"
                   f"{r['switching_mean_us']:>9.1f}{r['switching_p99_us']:>9.1f}"
                   f"{r['wakeup_mean_us']:>9.1f}{r['wakeup_p99_us']:>9.1f}"
                   f"{r['wakeup_max_us']:>9.1f}"
                   f"   {r['fast_count']:>5} x {r['fast_mean_us']:>6.1f}"
                   f"   {r['slow_count']:>5} x {r['slow_mean_us']:>6.1f}")
    return "\n".join(out) + "\n"


def plot(rows, path):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=120, sharey=True)
    for ax, key, title in ((axes[0], "switching", "switching: write() -> read() returns"),
                           (axes[1], "wakeup", "wake-up: driver write -> reader runs")):
        for cls, color in (("normal", "C0"), ("rt", "C3")):
            sel = [r for r in rows if r["class"] == cls]
            if not sel:
                continue
            x = [max(r["loads"], 0.5) for r in sel]
            ax.plot(x, [r[f"{key}_mean_us"] for r in sel], "o-", color=color,
                    label=f"{cls} mean")
            ax.plot(x, [r[f"{key}_p99_us"] for r in sel], "s--", color=color,
                    label=f"{cls} p99", alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        loads = sorted({r["loads"] for r in rows})
        ax.set_xticks([max(v, 0.5) for v in loads], [str(v) for v in loads])
        ax.set_xlabel("load tasks (log scale; 0 drawn at 0.5)")
        ax.set_title(title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("us")
    save(fig, axes[0], path)


def write_all(d):
    rows = collect(d)
    text = table(rows)
    with open(os.path.join(d, "table.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(d, "table.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(d, "sweep.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    plot(rows, os.path.join(d, "sweep.png"))
    print(text, end="")
    print(f"results: {d}/table.txt, table.csv, sweep.json, sweep.png")


def main(argv):
    return run(__doc__, argv, 1, write_all)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
