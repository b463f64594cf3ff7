"""compare: two runs, or two sets of runs, of one experiment side by side,
figure by figure, with a verdict for each (userspace/compare/README.md).

    lab compare A B                  one result folder a side
    lab compare -a A1 A2 -b B1 B2    several a side (each one boot)

First what differs between the sides' meta.json (kernel, command line,
series, module settings, the experiment's settings, machine) and what is
the same; sides of different experiments or clocks, a folder that is no
analysed result (an .incomplete one among them) or one named twice are
refused in one line, exit status 2, nothing written.  Then a verdict a
figure (lablib.compare_verdicts): on the virtual clock against the
figure's band and the sides' own spread, on the host's by a rank test,
Holm's correction and an exact interval of B / A.

Writes RESULTS/compare-<date>-<time>/ (report.txt, compare.json,
compare.csv, compare.png; lablib.compare_output); exit status 0 (no
figure worse), 1 (a measured figure got worse beyond its band), 2
(refused, inconclusive or nondeterministic)."""
import json
import pathlib
import sys

from . import cli, figures, results
from .compare_output import (_show, csv_columns, csv_rows, draw, draw_ccdf,  # noqa: F401
                             draw_curves, report, value)
from .compare_samples import distributions, sweep_curves
from .compare_verdicts import (ALPHA, BANDS, CONFIDENCE, HOST_BAND, SEED,  # noqa: F401
                               TINY, band_of, fewest_runs, judge)

ROOT = pathlib.Path(__file__).resolve().parents[2]
# meta.json keys that say nothing about what ran: when, how it was called,
# why the VM chose its accelerator, the module's running counters.
# A sweep's part of the points and its cgroup's name (the guest's pid) are
# how it was split, not what it measured.
IGNORED = ("date", "command", "machine.accelerator_why", "modules.delay.stats",
           "modules.irqhook.stats", "packages", "modules.delay.parameters.cgroup",
           "settings.delay_cgroup", "settings.part", "settings.part_points",
           "settings.stage.seconds")


class Refused(cli.BadInput):
    """Two sides that cannot be compared (exit status 2)."""


# --- the sides -------------------------------------------------------------------

def read_side(folders):
    """figures.read() of each folder, in the order they ran (meta.json
    date); Refused for an .incomplete folder (a run in progress or
    interrupted: its figures may be partial) and for one named twice."""
    if not folders:
        raise Refused("a side has no result folder")
    got, seen = [], set()
    for d in folders:
        p = pathlib.Path(d)
        if p.name.endswith(".incomplete"):
            raise Refused(f"{d}: an incomplete run (in progress or interrupted): compare "
                          "compares finished runs")
        if p.resolve() in seen:
            raise Refused(f"{d}: named twice in one side: each run counts once")
        seen.add(p.resolve())
        try:
            got.append(figures.read(d))
        except figures.NotAResult as e:
            raise Refused(str(e)) from None
    return sorted(got, key=lambda r: (str(r["meta"].get("date", "")), r["path"]))


def what(run):
    return run["workload"] if run["experiment"] == "sweep" else run["experiment"]


def check_sides(a, b):
    """The experiment and clock both sides share; Refused if they do not."""
    kinds = {(what(r), r["clock"]) for r in a + b}
    exps = {k for k, _ in kinds}
    if len(exps) > 1:
        raise Refused(f"the runs are of different experiments ({', '.join(sorted(exps))}): "
                      "compare compares one experiment")
    clocks = {c for _, c in kinds}
    if len(clocks) > 1:
        raise Refused("the runs measured on different clocks (host and virtual): their "
                      "figures are not comparable (userspace/clocks puts them side by side)")
    return exps.pop(), clocks.pop()


# --- what differs ----------------------------------------------------------------

def flatten(obj, prefix=""):
    """{dotted key: value} of the leaves of a JSON object."""
    out = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if any(key == i or key.startswith(i + ".") for i in IGNORED):
            continue
        if isinstance(v, dict) and v:
            out |= flatten(v, key + ".")
        else:
            out[key] = v
    return out


# The words scripts/vm.sh and virtme-ng put on every guest's command line
# (the root over 9p, the console, the init, the command to run): the same
# in every boot or different in every boot, never the user's setting.
PLUMBING = ("lab.", "virtme", "init=", "console=", "earlyprintk=", "root=", "rootflags=",
            "rootfstype=", "raid=", "loglevel=", "panic=", "nr_open=")
PLUMBING_WORDS = ("ro", "rw", "quiet")


def cmdline_words(run):
    """The words of the guest's kernel command line that set something,
    the lab's and virtme-ng's plumbing left out; None if not recorded."""
    line = results.get(run["guest"], "kernel", "cmdline")
    if not isinstance(line, str):
        return None
    return sorted({w for w in line.split()
                   if not w.startswith(PLUMBING) and w not in PLUMBING_WORDS})


def side_values(runs):
    """{key: [value of each run]} over the meta.json of @runs (the guest's
    where the folder's own names no kernel), kernel.cmdline as its words."""
    keys = {}
    for i, r in enumerate(runs):
        meta = dict(r["meta"])
        for k in ("kernel", "machine", "modules"):
            if k not in meta and k in r["guest"]:
                meta[k] = r["guest"][k]
        flat = flatten(meta)
        words = cmdline_words(r)
        if words is not None:
            flat["kernel.cmdline"] = " ".join(words)
        for k, v in flat.items():
            keys.setdefault(k, [None] * len(runs))[i] = v
    return keys


def differences(a, b):
    """([{key, a, b, note}], [same keys]): a side whose runs disagree on a
    key shows each value; the command line's differing words in note."""
    va, vb = side_values(a), side_values(b)
    diff, same = [], []
    for k in sorted(set(va) | set(vb)):
        xa = va.get(k, [None] * len(a))
        xb = vb.get(k, [None] * len(b))
        ua = sorted({_show(x) for x in xa})
        ub = sorted({_show(x) for x in xb})
        if ua == ub and len(ua) == 1:
            same.append(k)
            continue
        row = {"key": k, "a": ua[0] if len(ua) == 1 else ua,
               "b": ub[0] if len(ub) == 1 else ub, "note": ""}
        if k == "kernel.cmdline" and len(ua) == len(ub) == 1:
            if "null" in (ua[0], ub[0]):
                row["note"] = f"not recorded in {'A' if ua[0] == 'null' else 'B'}"
            else:
                wa, wb = set(ua[0].split()), set(ub[0].split())
                row["a"], row["b"] = " ".join(sorted(wa - wb)), " ".join(sorted(wb - wa))
                row["note"] = "the words only one side has"
        elif len(ua) > 1 or len(ub) > 1:
            row["note"] = "varies within a side"
        diff.append(row)
    return diff, same



# --- the figures ------------------------------------------------------------------

def collect(a, b):
    """[{figure, unit, better, kind, role, a: [values], b: [values],
    a_within, b_within: [the width of each run's spread over the repeats
    inside its folder]}] of the figures both sides have, in the first
    run's order."""
    rows = {}
    for side, runs in (("a", a), ("b", b)):
        for r in runs:
            for f in r["figures"]:
                if f["value"] is None:
                    continue
                row = rows.setdefault(f["figure"], {
                    "figure": f["figure"], "unit": f["unit"], "better": f["better"],
                    "kind": f["kind"], "role": f.get("role", "measured"), "a": [], "b": [],
                    "a_within": [], "b_within": []})
                row[side].append(float(f["value"]))
                if f.get("repeats") and f.get("spread"):
                    row[f"{side}_within"].append(float(f["spread"][1]) - float(f["spread"][0]))
    return [r for r in rows.values() if r["a"] and r["b"]]


def design(a, b, diff):
    """"A/A" when nothing recorded differs between the sides (a setting
    that varies within a side is no difference of the sides), else "A/B"."""
    return "A/B" if any(d["note"] != "varies within a side" for d in diff) else "A/A"


def compare(a_dirs, b_dirs, band=HOST_BAND):
    """The comparison of result folders @a_dirs with @b_dirs: a dict,
    compare.json's contents."""
    a, b = read_side(a_dirs), read_side(b_dirs)
    exp, clock = check_sides(a, b)
    diff, same = differences(a, b)
    rows = collect(a, b)
    if not rows:
        raise Refused("the two sides have no figure in common")
    judge(rows, clock, band, exp)
    curves = sweep_curves(a, b) if a[0]["experiment"] == "sweep" else None
    dists = distributions(a, b, clock)
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    if any(r["worse"] for r in rows):
        status = 1
    elif counts.get("inconclusive") or counts.get("nondeterministic"):
        status = 2
    else:
        status = 0
    return {"experiment": "compare", "of": exp, "clock": clock, "design": design(a, b, diff),
            "a": {"folders": [r["path"] for r in a], "describe": a[0]["describe"]},
            "b": {"folders": [r["path"] for r in b], "describe": b[0]["describe"]},
            "differences": diff, "same": same, "band": band if clock == "host" else None,
            "rows": rows, "verdicts": counts, "status": status, "curves": curves,
            "distributions": dists}


# --- output ------------------------------------------------------------------------

def write(c, parent, name=None, picture=True):
    """The result folder PARENT/compare-<date>-<time> (or @name) with
    @c's files; returns (folder, files)."""
    pathlib.Path(parent).mkdir(parents=True, exist_ok=True)
    d = pathlib.Path(results.lab("begin", parent, "compare", *([name] if name else [])))
    results.lab("meta", d, "compare", f"of={c['of']}", f"clock={c['clock']}",
        f"a:={json.dumps(c['a']['folders'])}", f"b:={json.dumps(c['b']['folders'])}",
        "--", "compare")
    results.write_json(d / "compare.json", c)
    results.write_csv(d / "compare.csv", csv_columns(), csv_rows(c))
    results.write_text(d / "report.txt", report(c))
    files = ["report.txt", "compare.json", "compare.csv"]
    if picture:
        draw(c, d / "compare.png")
        files.append("compare.png")
        if c.get("curves"):
            draw_curves(c, d / "curves.png")
            files.append("curves.png")
        if c.get("distributions"):
            draw_ccdf(c, d / "ccdf.png")
            files.append("ccdf.png")
    d = pathlib.Path(results.lab("commit", d, *([] if name else ["compare"])))
    return d, files


def add_args(p):
    p.add_argument("pair", nargs="*", metavar="DIR",
                   help="two result folders, A then B (or use -a/-b)")
    p.add_argument("-a", nargs="+", default=[], metavar="DIR", help="side A's folders")
    p.add_argument("-b", nargs="+", default=[], metavar="DIR", help="side B's folders")
    p.add_argument("--band", type=float, default=100 * HOST_BAND, metavar="PCT",
                   help=f"host clock: the band in %% (default {100 * HOST_BAND:g})")
    p.add_argument("-o", "--output", default=str(ROOT / "results"),
                   help="parent of the result folder (default results/)")
    p.add_argument("--name", help="the result folder's name instead of compare-<date>-<time>")
    p.add_argument("--no-plot", action="store_true", help="do not draw compare.png")
    cli.add_json_option(p)


def sides(args):
    if args.pair and (args.a or args.b):
        raise Refused("give either two folders or -a and -b, not both")
    if args.pair:
        if len(args.pair) != 2:
            raise Refused(f"two folders, A and B, not {len(args.pair)} (or -a ... -b ...)")
        return [args.pair[0]], [args.pair[1]]
    if not args.a or not args.b:
        raise Refused("no folders: lab compare A B, or lab compare -a A1 A2 -b B1 B2")
    return args.a, args.b


def main(argv=None, prog="lab compare"):
    p = cli.parser(__doc__.split("\n\n")[0],
                   "lab compare results/calibrate-20261202-152058 results/calibrate-20261202-1602",
                   prog=prog)
    add_args(p)

    def refuse(message):
        print(f"{prog}: {message} ({prog} --help)", file=sys.stderr)
        sys.exit(2)
    p.error = refuse
    args = p.parse_args(argv)
    try:
        if not 0 < args.band < 100:
            raise Refused(f"--band {args.band:g}: not a percentage between 0 and 100")
        a, b = sides(args)
        c = compare(a, b, band=args.band / 100)
        d, files = write(c, args.output, args.name, picture=not args.no_plot)
    except Refused as e:
        print(f"{prog}: {cli.message(e)}", file=sys.stderr)
        return 2
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"{prog}: error: {cli.message(e)}", file=sys.stderr)
        return 2
    cli.show(args, c, report(c), d, files)
    return c["status"]


if __name__ == "__main__":
    sys.exit(main())
