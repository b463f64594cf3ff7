"""Summarise a system-call tax run (make tax): what each tax adds to each call.

Reads DIR/raw.csv (tax,nr,batch,calls,ns_per_call: every timed batch of
callcost), DIR/skipped.csv (tax,reason), DIR/meta.json and each boot's
DIR/boots/BOOT/meta.json (base: the software taxes; pti, retpoline: the
boots with that mitigation in force); writes
DIR/summary.json, summary.csv (a row per tax and call: the median ns per
call, its spread over the batches, and the tax: the median less the
untaxed median), report.txt (the table, calls down, taxes across, then
workloads.txt and hostclock.txt if lablib.tax.workloads and
lablib.tax.hostclock have run) and tax.png (the table as a heat map).  A
tax whose batches spread more than the tax itself is not a figure: it is
marked so in the table and hatched in the picture.

A folder of run.sh --here (the running kernel, the host's clock, rounds)
is lablib.tax.here's: its figures with their intervals, and with --virtual
VDIR the virtual clock's figures beside them from VDIR, an analysed tax
run of the lab's VM.
"""
import pathlib
import sys

import numpy as np
from lablib import cli, plot, results, stats, syscalls
from lablib.tax import here

RAW_COLUMNS = ("tax", "nr", "batch", "calls", "ns_per_call")
SUMMARY_COLUMNS = ("tax", "nr", "call", "batches", "median_ns", "min_ns", "max_ns",
                   "added_ns", "exact")
BASE = "none"
# The reports of lablib.tax.workloads and lablib.tax.hostclock, added to
# report.txt after the table once they have run.
SECTIONS = ("workloads.txt", "hostclock.txt")
# Up to this many calls the heat map's rows are full size.
ROWS_AT_FULL_SIZE = 30


def read_raw(path):
    """{tax: {nr: [ns_per_call, ...]}}, taxes and calls in the order met."""
    out = {}
    for line, row in enumerate(results.read_csv(path, RAW_COLUMNS), 2):
        try:
            nr, ns = int(row["nr"]), float(row["ns_per_call"])
        except ValueError:
            raise ValueError(f"{path} line {line}: nr {row['nr']!r} or ns_per_call "
                             f"{row['ns_per_call']!r} is not a number") from None
        if not 0 < ns < float("inf"):
            raise ValueError(f"{path} line {line}: ns_per_call {ns} is not a time > 0")
        out.setdefault(row["tax"], {}).setdefault(nr, []).append(ns)
    if BASE not in out:
        raise ValueError(f"{path}: no rows of tax '{BASE}', the untaxed calls every tax "
                         f"is measured against")
    return out


def read_skipped(path):
    """[(tax, reason)] of skipped.csv; [] without the file."""
    if not pathlib.Path(path).exists():
        return []
    return [(r["tax"], r["reason"]) for r in results.read_csv(path, ("tax", "reason"))]


def iqr(values):
    q1, q3 = np.percentile(values, [25, 75])
    return float(q3 - q1)


def summarise(raw, names, skipped, virtual):
    """The summary.json dict: per tax and call the median, min, max and the
    tax (median less the untaxed median).  A tax is exact where the middle
    half of the batches of both runs (their interquartile ranges, which a
    batch a timer interrupt lengthened does not move) spreads less than the
    tax adds, or on the virtual clock by less than a ns."""
    base = raw[BASE]
    rows, missing = [], []
    for tax, calls in raw.items():
        for nr, ns in calls.items():
            if nr not in base:
                missing.append(f"{tax}/{nr}")
                continue
            s, b = stats.summary(ns), stats.summary(base[nr])
            added = s["p50"] - b["p50"]
            spread = iqr(ns) + iqr(base[nr])
            rows.append({"tax": tax, "nr": nr, "call": names.get(nr, str(nr)),
                         "batches": s["n"], "median_ns": s["p50"], "min_ns": s["min"],
                         "max_ns": s["max"], "added_ns": added,
                         "exact": bool(tax == BASE or spread < abs(added)
                                       or (virtual and spread < 1.0))})
    if missing:
        raise ValueError(f"calls with a tax but no untaxed run: {', '.join(missing)}")
    return {"experiment": "tax", "unit": "ns", "base": BASE,
            "taxes": [t for t in raw if t != BASE], "calls": list(base),
            "rows": rows, "skipped": [{"tax": t, "reason": r} for t, r in skipped]}


MITIGATIONS = ("pti", "spectre_v2")


def read_boots(d):
    """{boot: meta} of DIR/boots/*/meta.json, the base boot first."""
    boots = {m.parent.name: results.read_meta(m.parent)
             for m in sorted(pathlib.Path(d).glob("boots/*/meta.json"))}
    return dict(sorted(boots.items(), key=lambda kv: kv[0] != "base"))


def boot_options(meta):
    """'pti=off spectre_v2=off': the mitigation options of the boot's
    command line ('' if it has none)."""
    words = ((meta.get("kernel") or {}).get("cmdline") or "").split()
    return " ".join(w for w in words if w.split("=")[0] in MITIGATIONS)


def boot_line(name, meta):
    """'boot base: pti=off spectre_v2=off'."""
    return f"boot {name}: {boot_options(meta) or 'the default mitigations'}"


def table(meta, s, boots=()):
    """report.txt: calls down, taxes across, ns added per call."""
    cells = {(r["tax"], r["nr"]): r for r in s["rows"]}
    widths = {t: max(9, len(t) + 1) for t in s["taxes"]}
    out = [f"tax: ns each tax adds to a call, {results.describe(meta)}", *boots,
           "(the median of the batches less the untaxed median of the base boot; '~' marks "
           "a figure the batches' spread hides)", ""]
    label = {nr: f"{cells[(BASE, nr)]['call']} ({nr})" for nr in s["calls"]}
    first = max([len(v) + 1 for v in label.values()] + [18])
    out.append(f"{'call':<{first}}{'untaxed':>9}"
               + "".join(f"{t:>{widths[t]}}" for t in s["taxes"]))
    for nr in s["calls"]:
        base = cells[(BASE, nr)]
        line = f"{label[nr]:<{first}}{base['median_ns']:>9.1f}"
        for t in s["taxes"]:
            c = cells.get((t, nr))
            text = "-" if c is None else f"{'' if c['exact'] else '~'}{c['added_ns']:+.1f}"
            line += f"{text:>{widths[t]}}"
        out.append(line)
    for sk in s["skipped"]:
        out.append(f"not measured: {sk['tax']}: {sk['reason']}")
    return "\n".join(out) + "\n"


def font_size(s):
    """The heat map's label size: 8 points, 7 for a table of many calls."""
    return 8 if len(s["calls"]) <= ROWS_AT_FULL_SIZE else 7


def map_height(s):
    """The heat map's height in inches: a row a call, narrower for many."""
    n = len(s["calls"])
    return (0.35 if n <= ROWS_AT_FULL_SIZE else 0.2) * n + 2.5


def heat_map(fig, ax, s):
    """The table as a heat map on @ax: the ns each tax adds to each call, on
    a log colour scale, each cell labelled; a figure the spread hides
    hatched."""
    plt = plot.pyplot()
    from matplotlib import colors
    taxes, calls = s["taxes"], s["calls"]
    cells = {(r["tax"], r["nr"]): r for r in s["rows"]}
    size = font_size(s)
    grid = np.full((len(calls), len(taxes)), np.nan)
    for i, nr in enumerate(calls):
        for j, t in enumerate(taxes):
            c = cells.get((t, nr))
            if c is not None:
                grid[i, j] = c["added_ns"]
    positive = grid[np.isfinite(grid) & (grid > 0)]
    norm = colors.LogNorm(vmin=max(1.0, positive.min()), vmax=positive.max()) \
        if positive.size else None
    im = ax.imshow(np.where(grid > 0, grid, np.nan), aspect="auto", cmap="viridis", norm=norm)
    for i, nr in enumerate(calls):
        for j, t in enumerate(taxes):
            c = cells.get((t, nr))
            if c is None:
                continue
            bright = norm is not None and c["added_ns"] > 0 and norm(c["added_ns"]) > 0.6
            ax.text(j, i, plot.short_number(round(c["added_ns"])), ha="center", va="center",
                    fontsize=size - 1, color="black" if bright or c["added_ns"] <= 0 else "white")
            if not c["exact"]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                           edgecolor="grey", linewidth=0))
    ax.set_xticks(range(len(taxes)), taxes, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(calls)), [cells[(BASE, nr)]["call"] for nr in calls], fontsize=size)
    ax.set_xlabel("tax")
    ax.set_ylabel("system call (every argument -1)")
    if norm is not None:
        fig.colorbar(im, ax=ax, label="ns added per call (log scale)")


# The workload panels' three figures of a tax: (key, label, style).
CHANGES = (("measured_change_pct", "measured", {"color": "tab:blue"}),
           ("predicted_change_pct", "predicted", {"color": "black", "marker": "|", "s": 120}),
           ("emulated_change_pct", "delay module standing in",
            {"color": "tab:orange", "marker": "D", "s": 18}))


def workload_panels(subfig, rows):
    """A panel per workload and measure on @subfig: per tax the change of a
    unit of work's time, measured (a bar), predicted and emulated
    (markers), on a log scale; a tax whose runs were not exact is hatched,
    one not measured has no bar."""
    keys = list(dict.fromkeys((r["workload"], r["measure"]) for r in rows))
    ncols = min(4, len(keys))
    nrows = -(-len(keys) // ncols)
    axes = np.atleast_1d(subfig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax, key in zip(axes, keys):
        sel = [r for r in rows if (r["workload"], r["measure"]) == key]
        y = np.arange(len(sel))
        values = [v for r in sel for k, _, _ in CHANGES if (v := r.get(k)) is not None and v > 0]
        for i, r in enumerate(sel):
            m = r.get("measured_change_pct")
            if m is not None and m > 0:
                ax.barh(i, m, color="tab:blue", alpha=0.8, hatch=None if r["exact"] else "///",
                        label="measured" if i == 0 else None)
        for k, label, style in CHANGES[1:]:
            pts = [(v, i) for i, r in enumerate(sel) if (v := r.get(k)) is not None and v > 0]
            if pts:
                ax.scatter(*zip(*pts), label=label, zorder=3, **style)
        ax.set_yticks(y, [r["tax"] for r in sel], fontsize=7)
        ax.invert_yaxis()
        if values:
            plot.log_axis(ax, "x", min(values), max(values))
        ax.set_title(f"{key[0]} ({key[1]})" if key[0] != key[1] else key[0], fontsize=8)
        ax.set_xlabel("time of a unit of work, % more than untaxed", fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(True, axis="x", which="both", alpha=0.3)
    for ax in axes[len(keys):]:
        ax.set_visible(False)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7, loc="lower right")
    return nrows


def draw(s, meta, path, workload_rows=None):
    """tax.png: the heat map of the table; under it, with @workload_rows
    (lablib.tax.workloads'), a panel per workload and measure."""
    plt = plot.pyplot()
    width = max(1.1 * len(s["taxes"]) + 3, 14 if workload_rows else 0)
    top = map_height(s)
    if not workload_rows:
        # Constrained: tight_layout let a tall map's headline run into it.
        fig = plt.figure(figsize=(width, top), dpi=120, layout="constrained")
        heat_map(fig, fig.subplots(), s)
        plot.headline(fig, "what each tax adds to each system call", meta)
    else:
        panels = len(dict.fromkeys((r["workload"], r["measure"]) for r in workload_rows))
        below = 0.25 * len({r["tax"] for r in workload_rows}) * -(-panels // 4) + 1.5
        fig = plt.figure(figsize=(width, top + below), dpi=120, layout="constrained")
        upper, lower = fig.subfigures(2, 1, height_ratios=[top, below])
        heat_map(fig, upper.subplots(), s)
        workload_panels(lower, workload_rows)
        lower.suptitle("each workload under each tax: measured, predicted (time = base + "
                       "calls x each call's tax) and the delay module standing in", fontsize=9)
        plot.headline(upper, "what each tax adds to each system call", meta)
    fig.savefig(path)
    plt.close(fig)


def measured_meta(d):
    """The meta.json that says where the calls ran: the base boot's, or
    the folder's own for a run without boots/."""
    boots = read_boots(d)
    return next(iter(boots.values())) if boots else results.read_meta(d), boots


def analyse(d, virtual=None):
    """Analyse tax folder @d: (summary, report text, files written); a
    --here folder's by lablib.tax.here, with the virtual clock's figures
    from @virtual."""
    if here.is_here(results.read_meta(d)):
        return here.analyse(d, virtual)
    if virtual:
        raise cli.BadInput(f"--virtual is for a run.sh --here folder; {d} is a run of the "
                           f"lab's VM")
    meta, boots = measured_meta(d)
    raw = read_raw(d / "raw.csv")
    try:
        names = syscalls.table()
    except OSError:
        names = {}
    s = summarise(raw, names, read_skipped(d / "skipped.csv"), results.on_virtual_clock(meta))
    s["boots"] = {name: boot_options(m) for name, m in boots.items()}
    text = report(d, s)
    files = results.write_summary(d, s, SUMMARY_COLUMNS, s["rows"], text)
    return s, text, files


def report(d, s):
    """report.txt of folder @d with summary @s: the table, then the
    SECTIONS there are."""
    meta, boots = measured_meta(d)
    text = table(meta, s, [boot_line(name, m) for name, m in boots.items()])
    return text + "".join("\n" + (d / f).read_text() for f in SECTIONS if (d / f).exists())


def write_report(d):
    """Write report.txt of folder @d again, from its summary.json, with the
    SECTIONS written since."""
    d = pathlib.Path(d)
    results.write_text(d / "report.txt", report(d, results.read_json(d / "summary.json")))


def draw_folder(s, d):
    """tax.png of folder @d, with the workloads' panels if
    lablib.tax.workloads has run there; a --here folder's by lablib.tax.here."""
    if s.get("here"):
        return here.draw_folder(s, d)
    w = d / "workloads.json"
    rows = results.read_json(w)["rows"] if w.exists() else None
    draw(s, measured_meta(d)[0], d / "tax.png", rows)


def add_args(p):
    """The folder, --no-plot, --json and --virtual."""
    cli.folder_analyser("DIR", "a tax result folder", analyse, plot=draw_folder,
                        picture="tax.png")[0](p)
    p.add_argument("--virtual", metavar="VDIR",
                   help="for a run.sh --here folder: the virtual clock's figures beside the\n"
                        "host's from VDIR, an analysed tax run of the lab's VM (default:\n"
                        "the run's --virtual, else those the README records)")


def work(args):
    """Analyse args.dir (with args.virtual), draw and show it."""
    _, run = cli.folder_analyser("DIR", "a tax result folder",
                                 lambda d: analyse(d, args.virtual), plot=draw_folder,
                                 picture="tax.png")
    return run(args)


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-tax", add_args, work, argv=argv,
                    prog=prog or "python -m lablib.tax.analyse")


if __name__ == "__main__":
    sys.exit(main())
