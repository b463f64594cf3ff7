#!/usr/bin/env python3
"""Draw calibration.png from the calibrate tool's calibration.json.

Median latency per null system call against the delay module's loop
count: one series per system call, error bars from min to p90, and the
least-squares line with its slope and R^2 in the legend.

usage: plot_calibration.py calibration.json calibration.png
"""
import json
import sys

from labcli import plt, run, save


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if "points" not in data or "fits" not in data:
        raise ValueError(f"{path}: not a calibration file (no points/fits)")
    return data


def plot(data, out):
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for i, (name, fit) in enumerate(sorted(data["fits"].items())):
        pts = sorted((p for p in data["points"] if p["syscall"] == name),
                     key=lambda p: p["loops"])
        if not pts:
            continue
        x = [p["loops"] for p in pts]
        y = [p["median_ns"] for p in pts]
        err = [[p["median_ns"] - p["min_ns"] for p in pts],
               [p["p90_ns"] - p["median_ns"] for p in pts]]
        color = f"C{i}"
        ax.errorbar(x, y, yerr=err, fmt="o", ms=4, capsize=3, color=color,
                    label=f"{name}() median (bars: min..p90)")
        xs = [min(x), max(x)]
        ax.plot(xs, [fit["intercept_ns"] + fit["ns_per_loop"] * v for v in xs],
                "-", color=color, alpha=0.6,
                label=(f"{name}: {fit['intercept_ns']:.0f} ns + "
                       f"{fit['ns_per_loop']:.3f} ns/loop, R\u00b2={fit['r2']:.4f}"))
    ax.set_xlabel("delay module loops per system call")
    ax.set_ylabel("null system call latency (ns)")
    ax.set_title(f"Syscall delay calibration ({data.get('kernel', '?')}, "
                 f"{data.get('batches', '?')} batches x "
                 f"{data.get('calls_per_batch', '?')} calls per point)", fontsize=9)
    ax.set_ylim(bottom=0)
    save(fig, ax, out)


def main(argv):
    return run(__doc__, argv, 2, lambda src, out: plot(load(src), out))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
