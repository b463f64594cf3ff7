"""Table and plot of an irqhook sweep (userspace/irqhook/run.sh).

For every cell SWEEP_DIR/<loads>-<normal|rt>/ with an events.csv it
computes (and writes) the cell's summary.json, then writes in SWEEP_DIR:
table.txt (one row per cell: switching and wake-up after the first event,
the wake-up's fast and slow groups), table.csv, sweep.json and sweep.png
(mean and p99 against load tasks for both classes).
"""
import pathlib
import re
import sys

from lablib import cli, plot, results
from lablib.experiments import irqhook

CELL = re.compile(r"^(\d+)-(normal|rt)$")
COLUMNS = ["loads", "class", "events", "first_switching_us", "first_wakeup_us",
           "switching_mean_us", "switching_p99_us", "wakeup_mean_us", "wakeup_p50_us",
           "wakeup_p99_us", "wakeup_max_us", "fast_n", "fast_mean_us", "slow_n",
           "slow_mean_us"]


def us(v):
    return None if v is None else v / 1e3


def cell_row(folder, name_match):
    """Summarise one cell (writing its summary.json) into a table row."""
    meta, events, s = irqhook.load(folder)
    results.write_json(pathlib.Path(folder) / "summary.json", s)
    settings = s["settings"]
    sw, wk = s["after_first"]["switching"], s["after_first"]["wakeup"]
    return {
        "loads": int(settings.get("loads", name_match[1])),
        "class": settings.get("class", name_match[2]), "events": s["events"],
        "first_switching_us": us(s["first_event"]["switching"]),
        "first_wakeup_us": us(s["first_event"]["wakeup"]),
        "switching_mean_us": us(sw["mean"]), "switching_p99_us": us(sw["p99"]),
        "wakeup_mean_us": us(wk["mean"]), "wakeup_p50_us": us(wk["p50"]),
        "wakeup_p99_us": us(wk["p99"]), "wakeup_max_us": us(wk["max"]),
        "fast_n": wk["split"]["fast_n"], "fast_mean_us": us(wk["split"]["fast_mean"]),
        "slow_n": wk["split"]["slow_n"], "slow_mean_us": us(wk["split"]["slow_mean"]),
    }


def collect(sweep_dir):
    rows = []
    for cell in sorted(pathlib.Path(sweep_dir).iterdir()):
        m = CELL.match(cell.name)
        if m and (cell / "events.csv").exists():
            rows.append(cell_row(cell, m))
    if not rows:
        raise ValueError(f"no <loads>-<normal|rt>/events.csv under {sweep_dir}")
    rows.sort(key=lambda r: (r["class"], r["loads"]))
    return rows


def num(v, width):
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.1f}"


def table(meta, rows):
    out = [f"irqhook sweep, {results.describe(meta)}",
           "Times in us after the first event (first event apart); wake-up split into",
           "fast and slow groups (count x mean).", ""]
    head = (f"{'class':<7}{'loads':>6}{'events':>8}{'1st sw':>9}{'1st wk':>9}"
            f"{'sw mean':>9}{'sw p99':>9}{'wk mean':>9}{'wk p99':>9}{'wk max':>9}"
            f"   {'fast':>14}   {'slow':>14}")
    out += [head, "-" * len(head)]
    for r in rows:
        out.append(f"{r['class']:<7}{r['loads']:>6}{r['events']:>8}"
                   + "".join(num(r[k], 9) for k in (
                       "first_switching_us", "first_wakeup_us", "switching_mean_us",
                       "switching_p99_us", "wakeup_mean_us", "wakeup_p99_us", "wakeup_max_us"))
                   + f"   {r['fast_n']:>5} x {num(r['fast_mean_us'], 6)}"
                   f"   {r['slow_n']:>5} x {num(r['slow_mean_us'], 6)}")
    return "\n".join(out) + "\n"


def draw(meta, rows, path):
    fig, axes = plot.figure(2, width=10, height=4.6, sharey=True)
    for ax, key, title in ((axes[0], "switching", "switching: write() -> read() returns"),
                           (axes[1], "wakeup", "wake-up: driver write -> reader runs")):
        for cls, color in (("normal", "C0"), ("rt", "C3")):
            sel = [r for r in rows if r["class"] == cls and r[f"{key}_mean_us"] is not None]
            if not sel:
                continue
            x = [max(r["loads"], 0.5) for r in sel]
            ax.plot(x, [r[f"{key}_mean_us"] for r in sel], "o-", color=color,
                    label=f"{cls} mean")
            ax.plot(x, [r[f"{key}_p99_us"] for r in sel], "s--", color=color,
                    label=f"{cls} p99", alpha=0.7)
        ax.set_xscale("log", base=2)
        loads = sorted({r["loads"] for r in rows})
        ax.set_xticks([max(v, 0.5) for v in loads], [str(v) for v in loads])
        ax.set_xlabel("load tasks (log scale; 0 drawn at 0.5)")
        ax.set_title(title, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    shown = [r[f"{k}_{s}_us"] for r in rows for k in ("switching", "wakeup")
             for s in ("mean", "p99") if r[f"{k}_{s}_us"]]
    if shown:
        plot.log_axis(axes[0], "y", min(shown), max(shown))    # both: sharey
    axes[0].set_ylabel("us (log)")
    plot.headline(fig, "irqhook: /dev/irqhook's reader against load tasks", meta, 120)
    plot.save(fig, axes[0], path)


def add_args(p):
    cli.add_result_args(p, "SWEEP_DIR", "an irqhook-sweep result folder", "sweep.png")


def work(args):
    d = pathlib.Path(args.dir)
    meta = results.read_meta(d)
    rows = collect(d)
    text = table(meta, rows)
    results.write_text(d / "table.txt", text)
    results.write_csv(d / "table.csv", COLUMNS, rows)
    results.write_json(d / "sweep.json", rows)
    if not args.no_plot:
        draw(meta, rows, d / "sweep.png")
    cli.show(args, rows, text, d, ["table.txt", "table.csv", "sweep.json"], "sweep.png")


def main(argv=None, prog=None):
    """Report on the irqhook sweep folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-irqhook-sweep", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.irqhook.sweep_report")


if __name__ == "__main__":
    sys.exit(main())
