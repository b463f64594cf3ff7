"""The lab's headline figures side by side under the host's clock and the
virtual one (VM_CLOCK=host|virtual, README.md "The VM").

Reads analysed result folders of calibrate (summary.json), rt-compare
(comparison.json), smp (summary.json), msgq profiles (make msgq:
summary.json) and workload sweeps (summary.json), sorts them by the clock
their guest ran on (meta.json machine.clock.kind, from the folder's own
meta.json or, for a runner that wrote its meta.json on the host, from the
guest's in its sub-folders), and puts each figure's host value beside its
virtual one: the calibration's slope and R^2 (p10 and p50 fits),
cyclictest idle and loaded p99.9 and max per kernel (and the maximum
against each hold of the delay module), smp's medians, msgq's CPU time per
message per buffer strategy, a sweep's model error and slowdown.  Several
folders of one experiment on one clock: their median, with the range.

Makes OUTPUT/clocks-<date>-<time>/ (liblab's 'lab begin', 'lab meta',
'lab commit'; --name NAME: OUTPUT/NAME, no latest link) with report.txt
(the table), clocks.csv and clocks.json.  A side with no such figure shows
'-'.  A folder that is not an analysed lab result of these experiments:
one line on stderr and exit status 2, nothing made.
"""
import json
import pathlib
import sys

from lablib import cli, figures, results, stats, text

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULE = "lablib.clocks.analyse"

CLOCKS = ("host", "virtual")
EXPERIMENTS = ("calibrate", "rt-compare", "smp", "msgq-profile", "sweep")
CSV_COLUMNS = ("experiment", "figure", "unit", "host", "host_min", "host_max", "host_n",
               "virtual", "virtual_min", "virtual_max", "virtual_n", "virtual_over_host",
               "host_folders", "virtual_folders")


NotAResult = figures.NotAResult


def read_folder(d):
    """{"path", "experiment", "clock", "describe", "figures"} of result
    folder @d, its figures [(figure, unit, value, (min, max) or None)]
    the headline ones of lablib.figures; NotAResult if it is not one
    this report reads."""
    f = figures.read(d)
    if f["experiment"] not in EXPERIMENTS:
        raise NotAResult(f"{d}: experiment {f['workload']!r}, not one of "
                         f"{', '.join(EXPERIMENTS)} or a workload sweep")
    return {"path": f["path"], "experiment": f["experiment"], "clock": f["clock"],
            "describe": f["describe"],
            "figures": [(g["figure"], g["unit"], g["value"], g["spread"])
                        for g in f["figures"] if g["headline"]]}


# --- side by side ----------------------------------------------------------------

def combine(folders):
    """The figures of @folders (read_folder's), side by side: a list of
    {experiment, figure, unit, host, virtual, virtual_over_host}, each side
    {value (the median over its folders), min, max (the range over its
    folders and their own spreads; None for one value without a spread), n,
    folders (tags)} or None."""
    rows = {}
    for tag, f in folders.items():
        for figure, unit, value, spread in f["figures"]:
            if value is None:
                continue
            r = rows.setdefault((f["experiment"], figure), {
                "experiment": f["experiment"], "figure": figure, "unit": unit,
                **{c: [] for c in CLOCKS}})
            r[f["clock"]].append((tag, value, spread))
    order = {e: i for i, e in enumerate(EXPERIMENTS)}
    out = []
    for r in sorted(rows.values(), key=lambda r: order[r["experiment"]]):
        for c in CLOCKS:
            got = r[c]
            if not got:
                r[c] = None
                continue
            values = [v for _, v, _ in got]
            ends = [x for _, v, sp in got for x in (sp or (v,))]
            ranged = len(got) > 1 or any(sp for _, _, sp in got)
            r[c] = {"value": stats.percentile(sorted(values), 50),
                    "min": min(ends) if ranged else None,
                    "max": max(ends) if ranged else None,
                    "n": len(got), "folders": [t for t, _, _ in got]}
        h, v = r["host"], r["virtual"]
        r["virtual_over_host"] = (v["value"] / h["value"]
                                  if h and v and h["value"] else None)
        out.append(r)
    return out


def fmt(v, unit="", whole=None):
    """@v for the table: R^2 to 6 places, thousands whole, a whole number of
    us or ns without places (@whole: whether to treat it so; by default
    when @v is one), else 1 or 3 places."""
    if v is None:
        return "-"
    if unit == "R^2":
        return f"{v:.6f}"
    if whole is None:
        whole = v == int(v) and unit not in ("ns/loop", "x", "%")
    if abs(v) >= 1000 or whole:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def cell(side, unit):
    """A side's value, and its range when it has one, in one format."""
    if not side:
        return "-"
    values = [side["value"]] + ([side["min"], side["max"]] if side["min"] is not None else [])
    whole = all(v == int(v) for v in values) and unit not in ("ns/loop", "x", "%")
    s = fmt(side["value"], unit, whole)
    if side["min"] is not None:
        s += f" [{fmt(side['min'], unit, whole)}-{fmt(side['max'], unit, whole)}]"
    return s


def report(rows, folders):
    names = {"calibrate": "calibrate", "rt-compare": "rt-compare", "smp": "smp",
             "msgq-profile": "msgq", "sweep": "sweep"}
    table = text.table(
        [("figure", "<60"), "  ", ("unit", "<8"), ("host", ">29"), "  ",
         ("virtual", ">29"), ("virtual/host", ">13"), "  ", ("folders", "")],
        [[f"{names[r['experiment']]}: {r['figure']}"[:60], r["unit"],
          cell(r["host"], r["unit"]), cell(r["virtual"], r["unit"]),
          "-" if r["virtual_over_host"] is None else f"{r['virtual_over_host']:.3g}",
          " ".join(t for c in CLOCKS for t in (r[c] or {}).get("folders", []))]
         for r in rows],
        ["", "[min-max]: the range over the rounds (smp: the rounds' medians; msgq: "
         "per round) or over several folders, whose median is the figure.",
         "The host clock measures emulated speed: what the emulator, the host's load "
         "and its caches make of the guest.",
         "The virtual clock counts the guest's instructions (1 ns each): path length, "
         "repeatable across boots, blind to cache, memory and branch costs.",
         "", "folders:"]
        + [f"  {t}: {f['path']} ({f['experiment']}, {f['clock']} clock; "
           f"{f['describe']})" for t, f in folders.items()])
    return "clocks: the lab's headline figures under the host's and the virtual clock\n\n" \
        + table + "\n"


def tag_folders(found):
    """{tag: folder}: h1, h2 ... on the host's clock, v1, v2 ... on the
    virtual one, in the order given."""
    out, count = {}, dict.fromkeys(CLOCKS, 0)
    for f in found:
        count[f["clock"]] += 1
        out[f"{f['clock'][0]}{count[f['clock']]}"] = f
    return out


# --- the result folder --------------------------------------------------------------

def csv_rows(rows):
    for r in rows:
        row = {k: r[k] for k in ("experiment", "figure", "unit", "virtual_over_host")}
        for c in CLOCKS:
            side = r[c] or {}
            row |= {c: side.get("value"), f"{c}_min": side.get("min"),
                    f"{c}_max": side.get("max"), f"{c}_n": side.get("n"),
                    f"{c}_folders": " ".join(side.get("folders", []))}
        yield row


def add_args(p):
    p.add_argument("dirs", metavar="RESULT_DIR", nargs="+",
                   help="analysed result folders of calibrate, rt-compare, smp, msgq "
                   "(make msgq) or a workload sweep, on either clock")
    p.add_argument("-o", "--output", default=str(ROOT / "results"),
                   help="parent of the result folder (default results/)")
    p.add_argument("--name", help="the result folder's name instead of "
                   "clocks-<date>-<time> (no latest-clocks link)")
    cli.add_json_option(p)


def work(args, prog=None):
    try:
        found = [read_folder(d) for d in args.dirs]
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"{prog or cli.default_prog()}: error: {cli.message(e)}", file=sys.stderr)
        return 2
    folders = tag_folders(found)
    rows = combine(folders)
    summary = {"experiment": "clocks",
               "folders": {t: {k: v for k, v in f.items() if k != "figures"}
                           for t, f in folders.items()},
               "figures": rows}
    pathlib.Path(args.output).mkdir(parents=True, exist_ok=True)
    d = pathlib.Path(results.lab("begin", args.output, "clocks",
                                 *([args.name] if args.name else [])))
    results.lab("meta", d, "clocks", f"folders:={json.dumps(args.dirs)}", "--",
                sys.executable, "-m", MODULE, *args.argv)
    results.write_json(d / "clocks.json", summary)
    results.write_csv(d / "clocks.csv", CSV_COLUMNS, csv_rows(rows))
    report_text = report(rows, folders)
    results.write_text(d / "report.txt", report_text)
    d = pathlib.Path(results.lab("commit", d, *([] if args.name else ["clocks"])))
    cli.show(args, summary, report_text, d, ["report.txt", "clocks.csv", "clocks.json"])
    return 0


def main(argv=None, prog=None):
    """The report of the folders of @argv (default sys.argv[1:]); the exit status."""
    desc, example = __doc__.split("\n\n")[0], (
        f"python -m {MODULE} results/calibrate-20261125-101500 results/vcal-2")
    p = cli.parser(desc, example, prog or f"python -m {MODULE}")
    add_args(p)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    args.argv = argv
    try:
        return work(args, p.prog)
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"{p.prog}: error: {cli.message(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
