#!/usr/bin/env python3
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
import subprocess
import sys

from lablib import cli, results, stats, text

ROOT = pathlib.Path(__file__).resolve().parents[2]

CLOCKS = ("host", "virtual")
EXPERIMENTS = ("calibrate", "rt-compare", "smp", "msgq-profile", "sweep")
SWEEPS = ("kbuild", "grep", "apache", "cmd")
LAB = ROOT / "userspace/lib/lab"
CSV_COLUMNS = ("experiment", "figure", "unit", "host", "host_min", "host_max", "host_n",
               "virtual", "virtual_min", "virtual_max", "virtual_n", "virtual_over_host",
               "host_folders", "virtual_folders")


class NotAResult(cli.BadInput):
    """A folder given that analyse.py cannot read (exit status 2)."""


# --- which clock --------------------------------------------------------------

def _kind(meta):
    """The clock meta.json names: "host" or "virtual"; "host" for a lab
    VM's meta.json from before the clock choice (no "clock" key: the host's
    was the only one); None outside a VM (a runner's meta.json on the host)."""
    machine = meta.get("machine") or {}
    clock = machine.get("clock")
    if isinstance(clock, dict) and clock.get("kind"):
        return clock["kind"]
    if "clock" not in machine and machine.get("virtual") is True:
        return "host"
    return None


def clock_of(d, meta):
    """(kind, the meta.json that says so) of result folder @d: its own
    meta.json, else the guests' one level or two down (guest/, a kernel
    folder, runs/CASE-rK/), which must agree."""
    kind = _kind(meta)
    if kind:
        return kind, meta
    found = {}
    for p in sorted([*d.glob("*/meta.json"), *d.glob("runs/*/meta.json")]):
        m = results.read_json(p)
        k = _kind(m) if isinstance(m, dict) else None
        if k:
            found.setdefault(k, (p.parent, m))
    if len(found) > 1:
        raise NotAResult(f"{d}: its guests ran on different clocks "
                         f"({', '.join(f'{k} in {v[0].name}' for k, v in found.items())})")
    if not found:
        raise NotAResult(f"{d}: no meta.json in it names the guest's clock "
                         f"(machine.clock): not a result of the lab's VM")
    kind, (_, m) = next(iter(found.items()))
    if kind not in CLOCKS:
        raise NotAResult(f"{d}: clock {kind!r} is neither host nor virtual")
    return kind, m


# --- the figures of each experiment ---------------------------------------------
# Each reader returns [(figure, unit, value, (min, max) or None)].

def _summary(d, name, analyser):
    path = d / name
    if not path.is_file():
        raise NotAResult(f"{d}: no {name}: analyse it first ({analyser} {d})")
    s = results.read_json(path)
    if not isinstance(s, dict):
        raise NotAResult(f"{path}: not a JSON object")
    return s


def read_calibrate(d):
    s = _summary(d, "summary.json", "userspace/calibrate/analyse.py")
    out = []
    for key, what in (("fits", "p10 fit"), ("fits_p50", "p50 fit")):
        for call, f in (s.get(key) or {}).items():
            out.append((f"{call} slope ({what})", "ns/loop", f.get("slope"), None))
            out.append((f"{call} R^2 ({what})", "R^2", f.get("r2"), None))
    if not out:
        raise NotAResult(f"{d}/summary.json: no fits: not an analysed calibration")
    return out


def read_rtcompare(d):
    s = _summary(d, "comparison.json", "userspace/rtcompare/analyse.py")
    kernels = s.get("kernels")
    if not isinstance(kernels, dict):
        raise NotAResult(f"{d}/comparison.json: no kernels: not an rt-compare comparison")
    out = []
    for k, v in kernels.items():
        for load in ("idle", "loaded"):
            pooled = results.get(v, "cyclictest", load, "pooled")
            if pooled:
                out.append((f"{k} cyclictest {load} p99.9", "us", pooled.get("p999"), None))
                out.append((f"{k} cyclictest {load} max", "us", pooled.get("max"), None))
        for kind, dm in (v.get("delay") or {}).items():
            for h in dm.get("holds") or []:
                out.append((f"{k} cyclictest max, {h['ns'] / 1e3:g} us hold ({kind})", "us",
                            h.get("max"), None))
    return out


def _spread(r):
    return (r["min"], r["max"]) if r and r.get("n", 0) > 1 else None


def read_smp(d):
    s = _summary(d, "summary.json", "userspace/smp/analyse.py")
    if not isinstance(s.get("cases"), dict):
        raise NotAResult(f"{d}/summary.json: no cases: not an smp summary")
    return [(f"{case} {span} p50", "ns", v["ns"]["p50"], _spread(v.get("round_p50")))
            for case, c in s["cases"].items() for span, v in c["spans"].items()]


def read_msgq(d):
    s = _summary(d, "summary.json", "userspace/msgq/analyse.py")
    if not isinstance(s.get("strategies"), dict):
        raise NotAResult(f"{d}/summary.json: no strategies: not a msgq profile's summary")
    out = []
    for strat, v in s["strategies"].items():
        f = results.get(v, "figures", "cpu_us_per_msg")
        if f:
            out.append((f"{strat}: CPU time per message", "us", f["p50"], _spread(f)))
        e2e = results.get(v, "queueing", "end_to_end", "ns")
        if e2e and e2e.get("n"):
            out.append((f"{strat}: send to receipt p50", "us", e2e["p50"] / 1e3, None))
    return out


def read_sweep(d):
    s = _summary(d, "summary.json", "workloads/analyse.py")
    if not isinstance(s.get("measures"), dict):
        raise NotAResult(f"{d}/summary.json: no measures: not a workload sweep's summary")
    out = []
    for name, m in s["measures"].items():
        mod = m.get("model") or {}
        what = name if name == s.get("workload") else f"{s.get('workload')} {name}"
        at = f"at {mod.get('knob', 'loops')} {mod.get('max_setting')}"
        check = mod.get("check") or {}
        err = check.get("max_abs_error")
        out.append((f"{what}: base time of a unit of work", "s",
                    mod.get("base_seconds_per_unit"), None))
        out.append((f"{what}: delay that doubles it (base / calls)", "ns",
                    mod.get("half_ns"), None))
        out.append((f"{what}: model check max |error|", "%",
                    None if err is None else 100 * err, None))
        out.append((f"{what}: measured slowdown {at}", "x",
                    mod.get("measured_slowdown"), None))
        out.append((f"{what}: predicted slowdown {at}", "x",
                    mod.get("predicted_slowdown"), None))
    return out


READERS = {"calibrate": read_calibrate, "rt-compare": read_rtcompare, "smp": read_smp,
           "msgq-profile": read_msgq, "sweep": read_sweep}


def read_folder(d):
    """{"path", "experiment", "clock", "describe", "figures"} of result
    folder @d; NotAResult if it is not one analyse.py reads."""
    d = pathlib.Path(d)
    if not d.is_dir():
        raise NotAResult(f"{d}: no such folder")
    try:
        meta = results.read_meta(d)
    except ValueError as e:
        raise NotAResult(cli.message(e)) from None
    exp = meta.get("experiment")
    if exp in SWEEPS:
        exp = "sweep"
    if exp not in READERS:
        raise NotAResult(f"{d}: experiment {exp!r}, not one of "
                         f"{', '.join(EXPERIMENTS)} or a workload sweep")
    kind, guest = clock_of(d, meta)
    return {"path": str(d), "experiment": exp, "clock": kind,
            "describe": results.describe(guest), "figures": READERS[exp](d)}


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

def lab(*args):
    if not LAB.is_file():
        raise ValueError(f"{LAB.relative_to(ROOT)} is not built; run 'make userspace'")
    out = subprocess.run([str(LAB), *map(str, args)], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(f"lab {args[0]}: {out.stderr.strip() or out.returncode}")
    return out.stdout.strip()


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
    d = pathlib.Path(lab("begin", args.output, "clocks", *([args.name] if args.name else [])))
    lab("meta", d, "clocks", f"folders:={json.dumps(args.dirs)}", "--",
        sys.argv[0], *args.argv)
    results.write_json(d / "clocks.json", summary)
    results.write_csv(d / "clocks.csv", CSV_COLUMNS, csv_rows(rows))
    report_text = report(rows, folders)
    results.write_text(d / "report.txt", report_text)
    d = pathlib.Path(lab("commit", d, *([] if args.name else ["clocks"])))
    cli.show(args, summary, report_text, d, ["report.txt", "clocks.csv", "clocks.json"])
    return 0


def main(argv=None):
    desc, example = __doc__.split("\n\n")[0], (
        "userspace/clocks/analyse.py results/calibrate-20261125-101500 results/vcal-2")
    p = cli.parser(desc, example, "clocks/analyse.py")
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
