"""The taxes on the workloads on the running kernel: each workload's time
under each tax predicted from what the tax adds to a call on this CPU,
then measured, beside the virtual clock's.

    python -m lablib.tax.here_workloads TAXRUN [--workloads LIST] [--taxes LIST]
                                        [--rounds N] [-r RUNS] [--seed S]
                                        [--dry-run | --report | --count-only]

TAXRUN is a folder of the tax on the running kernel (run.sh --here: the
ns each tax adds to each call it timed, with intervals).  As root, no VM,
on this machine's own clock, for each workload of LIST (default grep,cmd,
redis; cmd is the virtual clock's tar, lablib.tax.workloads's CMD):

  count   one sweep at ns 0 through the delay that counts calls (the module
          on the lab kernel, else the BPF delay: lab sweep --here): the
          calls of a unit of work and their mix by number
  rounds  ROUNDS rounds, each the workload untaxed and under each tax once,
          in an order of its own (from SEED), each 'lab sweep --here
          --delay none --ns 0 -r RUNS' with the tax's hooks (sweep-hooks.sh:
          nothing attached to the calls but the tax); the audit taxes in
          rounds of their own after the others, with untaxed runs of their
          own (audit leaves its context in every process started after it),
          its rules watching the workload's own program (grep, tar,
          redis-server), as run.sh --here's watch callcost alone

'WORKLOADS=grep,cmd,redis lab tax --here' runs the counts first (--count-
only), times the calls that make up 95 % of each workload's besides CALLS,
then the rounds.

A run's figure is its windows' median time a unit of work.  A tax's
measured change is the median over the rounds of the taxed run less the
same round's untaxed one, over the untaxed median, with the distribution-
free 95 % interval of that median (lablib.stats.median_interval; at least
6 rounds).  Its predicted change is the calls a unit times the tax's ns a
call mixed over the workload's calls (lablib.tax.predict), its interval
from the per-call figures' intervals; a call number TAXRUN did not time
takes the median of those it timed, and 'covered' says how many calls
had a figure of their own (run.sh's CALLS widens it; --dry-run lists the
numbers the workloads make).  A server's measures are predicted from its
own calls: a tax every process pays (trace, bpftrace, audit) slows its
clients too, which the count through BPF cannot separate.

Writes TAXRUN/workloads-here/<workload>/ (the count and each round's
sweeps, their output in logs/; a sweep already there is not run again, so
a stopped run carries on), TAXRUN/workloads-here.csv, .json, .txt and
workloads-here.png (each tax's measured change with its interval beside
the prediction's).  The virtual clock's measured change of the same tax on
the same workload comes from virtual_workloads.csv, the figures
userspace/tax/README.md and NOTES.md record.
"""
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import time

from lablib import cli, results, stats, text
from lablib.tax import here, predict
from lablib.tax import workloads as vm_sweeps

WORKLOADS = ("grep", "cmd", "redis")
AUDIT = ("audit-one", "audit-all")
# The program of a workload that the audit rules watch (cmd's: its command's;
# Debian's redis-tools has Redis's server as redis-check-rdb).
AUDITED = {"grep": ("grep",), "redis": ("redis-server", "redis-check-rdb")}
# The calls --dry-run lists: those that make up this share of a mix.
LIST_SHARE = 0.95
VIRTUAL_CSV = pathlib.Path(__file__).with_name("virtual_workloads.csv")
VIRTUAL_SOURCE = ("the virtual clock (make tax, tax variant, 1 vCPU, every point exact; "
                  "userspace/tax/README.md and NOTES.md)")
COLUMNS = ("workload", "measure", "tax", "phase", "rounds", "base_s", "calls_per_unit",
           "covered_pct", "predicted_change_pct", "predicted_low_pct", "predicted_high_pct",
           "measured_change_pct", "measured_low_pct", "measured_high_pct", "resolved",
           "virtual_change_pct")


def audit_exe(workload):
    """The program of @workload that the audit rules watch, as run.sh
    --here's watch callcost alone."""
    names = vm_sweeps.CMD[:1] if workload == "cmd" else AUDITED[workload]
    path = next(filter(None, map(shutil.which, names)), None)
    return os.path.realpath(path) if path else names[0]


def sweep_args(workload, runs, output, tax=None, count=False, scale=None):
    """The 'lab sweep' command line of one run, its folder made in @output:
    the options and command of the VM's tax sweeps (lablib.tax.workloads),
    here, at ns 0."""
    opts, command = vm_sweeps.sweep_args(workload, runs)
    args = [sys.executable, "-m", "lablib.lab", "sweep", workload, "--here", "--ns", "0",
            *opts, "--no-analysis", "-o", str(output), *(["--scale", scale] if scale else [])]
    if not count:
        args += ["--delay", "none"]
    if tax and tax != here.BASE:
        hook_vars = {"TAX": tax}
        if tax in AUDIT:
            hook_vars["AUDIT_EXE"] = audit_exe(workload)
        args += vm_sweeps.hooks(**hook_vars)
    return args + command


def plan(workloads, taxes, rounds, seed):
    """[(workload, phase, round, tax)]: every run, in the order they run."""
    rng = random.Random(seed)
    out = []
    for w in workloads:
        for phase, names in (("base", [t for t in taxes if t not in AUDIT]),
                             ("audit", [t for t in taxes if t in AUDIT])):
            if not names:
                continue
            for k in range(1, rounds + 1):
                order = [here.BASE, *names]
                rng.shuffle(order)
                out += [(w, phase, k, t) for t in order]
    return out


def run_dir(d, workload, phase, rnd, tax):
    return d / workload / f"{phase}-{rnd:02d}" / tax


def done(parent, workload):
    """The finished sweep folder in @parent, or None."""
    link = parent / f"latest-{workload}"
    return link.resolve() if link.exists() else None


def run(command, parent, log):
    parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        status = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL).returncode
    if status != 0:
        raise cli.BadInput(f"a sweep failed (exit status {status}): see {log}")


def measure_all(d, workloads, taxes, rounds, runs, seed, scale=None):
    """Runs the counts and the rounds not yet in @d, with progress lines."""
    todo = [(w, None, 0, None) for w in workloads if not done(d / w / "count", w)]
    todo += [r for r in plan(workloads, taxes, rounds, seed)
             if not done(run_dir(d, *r), r[0])]
    start = time.monotonic()
    for i, (w, phase, k, tax) in enumerate(todo, 1):
        if phase is None:
            what, parent = f"{w}: its calls counted", d / w / "count"
            cmd = sweep_args(w, 1, parent, count=True, scale=scale)
            log = d / "logs" / f"{w}-count.txt"
        else:
            what, parent = f"{w}: {phase} round {k}, {tax}", run_dir(d, w, phase, k, tax)
            cmd = sweep_args(w, runs, parent, tax, scale=scale)
            log = d / "logs" / f"{w}-{phase}-{k:02d}-{tax}.txt"
        took = time.monotonic() - start
        eta = f", {text.duration(took / (i - 1) * (len(todo) - i + 1))} left" if i > 1 else ""
        print(f"tax here-workloads: [{i}/{len(todo)}] {what}{eta}", file=sys.stderr,
              flush=True)
        run(cmd, parent, log)


def unit_times(folder):
    """{measure: the median window's seconds a unit} of a sweep folder."""
    out = {}
    for (_, measure), rows in predict.untaxed_rows(folder).items():
        out[measure] = predict.unit_time(rows)
    return out


def tax_cells(summary):
    """{tax: {nr: (added, low, high)}} of a --here summary, base phase
    and the audit phase's audit taxes."""
    out = {}
    for r in summary["rows"]:
        if r["tax"] == here.BASE or r["added_ns"] is None:
            continue
        lo, hi = r["added_low_ns"], r["added_high_ns"]
        out.setdefault(r["tax"], {})[int(r["nr"])] = (
            r["added_ns"], r["added_ns"] if lo is None else lo,
            r["added_ns"] if hi is None else hi)
    return out


def mixed(shares, cells):
    """(added, low, high) ns a call of a tax over the calls' mix
    (predict.mixed's for each), and the share of calls with a figure of
    their own; the others take the median of the tax's figures."""
    out = []
    for i in range(3):
        by_nr = {nr: c[i] for nr, c in cells.items()}
        out.append(predict.mixed(shares, by_nr, statistics.median(by_nr.values()))[0])
    return tuple(out), sum(share for nr, share in shares.items() if nr in cells)


def read_virtual():
    rows = results.read_csv(VIRTUAL_CSV, ("workload", "measure", "tax", "change_pct"))
    return {(r["workload"], r["measure"], r["tax"]): float(r["change_pct"]) for r in rows}


def summarise(d, summary, workloads, taxes):
    """The rows of the table, one per workload, measure and tax."""
    cells, virtual = tax_cells(summary), read_virtual()
    rows = []
    for w in workloads:
        count = done(d / w / "count", w)
        if count is None:
            raise ValueError(f"{d / w / 'count'}: {w}'s calls were not counted")
        # A measure whose calls the delay could not count (a server's reply
        # through the BPF delay) has no prediction.
        calls = {m: statistics.median(int(r["syscalls"]) / int(r["units"]) for r in raw)
                 for (_, m), raw in predict.untaxed_rows(count).items()
                 if all(r["syscalls"] for r in raw)}
        shares = predict.mix(count)
        for phase in here.PHASES:
            runs = {}
            for p in sorted((d / w).glob(f"{phase}-*")):
                k = int(p.name.split("-")[1])
                for t in p.iterdir():
                    f = done(t, w)
                    if f is not None:
                        runs.setdefault(t.name, {})[k] = unit_times(f)
            base = runs.get(here.BASE, {})
            for tax in taxes:
                if tax not in runs or (tax in AUDIT) != (phase == "audit"):
                    continue
                for m in sorted(next(iter(base.values()), {})):
                    rows.append(row(w, m, tax, phase, base, runs[tax], calls.get(m, 0),
                                    shares, cells.get(tax), virtual.get((w, m, tax))))
    return rows


def row(w, m, tax, phase, base, taxed, calls, shares, cells, virtual):
    paired = sorted(k for k in set(base) & set(taxed) if m in base[k] and m in taxed[k])
    b = statistics.median(base[k][m] for k in paired)
    est, lo, hi = stats.median_interval([taxed[k][m] - base[k][m] for k in paired])
    r = {"workload": w, "measure": m, "tax": tax, "phase": phase, "rounds": len(paired),
         "base_s": b, "calls_per_unit": calls or None, "covered_pct": None,
         "predicted_change_pct": None, "predicted_low_pct": None, "predicted_high_pct": None,
         "measured_change_pct": 100 * est / b,
         "measured_low_pct": None if lo is None else 100 * lo / b,
         "measured_high_pct": None if hi is None else 100 * hi / b,
         "resolved": lo is not None and not lo <= 0 <= hi, "virtual_change_pct": virtual}
    if calls and cells:
        (a, alo, ahi), covered = mixed(shares, cells)
        r.update({"covered_pct": 100 * covered,
                  "predicted_change_pct": 100 * calls * a * 1e-9 / b,
                  "predicted_low_pct": 100 * calls * alo * 1e-9 / b,
                  "predicted_high_pct": 100 * calls * ahi * 1e-9 / b})
    return r


def pct(v, lo=None, hi=None):
    if v is None:
        return "-"
    s = f"{v:+.2f}" if abs(v) < 100 else f"{v:+,.0f}"
    if lo is not None:
        s += f" [{lo:+.1f}, {hi:+.1f}]" if abs(hi) < 100 else f" [{lo:+,.0f}, {hi:+,.0f}]"
    return s


def report(rows, meta, d):
    s = results.settings(meta)
    out = [f"the taxes on the workloads on the running kernel: {results.describe(meta)}",
           f"CPU {s.get('cpu_model') or '?'}; the calls a tax adds from {d.name} (its "
           "report.txt); each workload timed with nothing on its calls but the tax",
           "change of a unit of work's time in %, [95 % interval]; measured: the median "
           "over the rounds of taxed less the same round's untaxed; predicted: calls x "
           "the tax's ns a call; virtual: the virtual clock's measured change",
           ""]
    base = {}
    for r in rows:
        base.setdefault((r["workload"], r["measure"], r["phase"]), r)
    for (w, m, phase), r in base.items():
        calls = f", {r['calls_per_unit']:,.0f} calls" if r["calls_per_unit"] else ""
        out.append(f"{w} {m}{' (audit rounds)' if phase == 'audit' else ''}: "
                   f"{r['base_s'] * 1e3:,.3f} ms a unit untaxed{calls}, {r['rounds']} rounds")
    out.append("")
    table = [(r["workload"], r["measure"], r["tax"],
              pct(r["predicted_change_pct"], r["predicted_low_pct"], r["predicted_high_pct"]),
              pct(r["measured_change_pct"], r["measured_low_pct"], r["measured_high_pct"])
              + ("" if r["resolved"] else " ~"),
              "-" if r["covered_pct"] is None else f"{r['covered_pct']:.0f}%",
              pct(r["virtual_change_pct"])) for r in rows]
    out.append(text.table((("workload", "<10"), ("measure", "<12"), ("tax", "<24"),
                           ("predicted %", ">26"), "  ", ("measured %", "<30"),
                           ("covered", ">8"), ("virtual %", ">11")), table,
                          ["'~': the interval holds 0, the tax's effect is within the noise "
                           "of these rounds (more rounds, or a larger unit of work)",
                           "covered: the workload's calls whose number the tax run timed "
                           "(the others take the median of those it did)"]))
    return "\n".join(out) + "\n"


def draw(rows, meta, path):
    """workloads-here.png: per workload and measure, each tax's measured
    change with its interval (a hollow marker where it holds 0) beside
    the prediction's interval and the virtual clock's figure; a log axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = list(dict.fromkeys((r["workload"], r["measure"]) for r in rows))
    taxes = list(dict.fromkeys(r["tax"] for r in rows))
    fig, axes = plt.subplots(1, len(keys), figsize=(max(8.0, 4.2 * len(keys)),
                                                      0.38 * len(taxes) + 2.6),
                             sharey=True, squeeze=False)
    for ax, key in zip(axes[0], keys):
        sel = {r["tax"]: r for r in rows if (r["workload"], r["measure"]) == key}
        for y, tax in enumerate(taxes):
            r = sel.get(tax)
            if r is None:
                continue
            if r["predicted_change_pct"] is not None:
                ax.plot([r["predicted_low_pct"], r["predicted_high_pct"]], [y + 0.2] * 2,
                        color="tab:orange", lw=4, alpha=0.6, solid_capstyle="butt")
                ax.plot(r["predicted_change_pct"], y + 0.2, "|", color="tab:orange", ms=9)
            if r["measured_low_pct"] is not None:
                ax.plot([r["measured_low_pct"], r["measured_high_pct"]], [y] * 2,
                        color="tab:blue", lw=1.5)
            ax.plot(r["measured_change_pct"], y, "o", color="tab:blue",
                    mfc="tab:blue" if r["resolved"] else "white")
            if r["virtual_change_pct"] is not None:
                ax.plot(r["virtual_change_pct"], y - 0.2, "x", color="0.3")
        ax.set_xscale("symlog", linthresh=1)
        ax.axvline(0, color="0.6", lw=0.8)
        ax.set_title(key[0] if key[0] == key[1] else f"{key[0]} {key[1]}")
        ax.set_xlabel("change of a unit's time, %")
    axes[0][0].set_yticks(range(len(taxes)), taxes)
    axes[0][0].invert_yaxis()
    from matplotlib.lines import Line2D
    fig.legend(handles=[
        Line2D([], [], color="tab:blue", marker="o", label="measured, 95 % interval"),
        Line2D([], [], color="tab:blue", marker="o", mfc="white", ls="",
               label="measured, interval holds 0 (noise)"),
        Line2D([], [], color="tab:orange", lw=4, alpha=0.6, label="predicted, 95 % interval"),
        Line2D([], [], color="0.3", marker="x", ls="", label="virtual clock, measured")],
        loc="lower center", ncol=2, fontsize=8)
    s = results.settings(meta)
    rounds = sorted({r["rounds"] for r in rows})
    rounds = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]}-{rounds[-1]}"
    fig.suptitle(f"The taxes on the workloads on this CPU\n{s.get('cpu_model') or '?'}, "
                 f"kernel {results.get(meta, 'kernel', 'release') or '?'}, the host's clock, "
                 f"{rounds} rounds", fontsize=10)
    fig.tight_layout(rect=(0, 0.12, 1, 0.93))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def count_calls(d, workloads):
    """The call numbers that make up LIST_SHARE of the counted workloads'
    mixes, dearest share first."""
    nrs = []
    for w in workloads:
        f = done(d / w / "count", w)
        if f is None:
            continue
        acc = 0.0
        for nr, share in sorted(predict.mix(f).items(), key=lambda kv: -kv[1]):
            if acc >= LIST_SHARE:
                break
            acc += share
            nrs.append(nr)
    return list(dict.fromkeys(nrs))


MODES = {
    "--dry-run": "run nothing: the runs it would make, and once the counts are there the "
                 "call numbers the workloads make (run.sh's CALLS)",
    "--report": "run nothing: the table of the runs already there",
    "--count-only": "only count the workloads' calls, then print the call numbers that make "
                    "up 95 %% of each (run.sh --here's CALLS); TAXRUN may be a folder being "
                    "made",
}


def need_root():
    if os.geteuid() != 0:
        raise cli.BadInput("the sweeps on the running kernel need root")


def add_args(p):
    p.add_argument("taxrun", metavar="TAXRUN", help="a tax folder of the running kernel "
                   "(run.sh --here)")
    p.add_argument("--workloads", default=",".join(WORKLOADS), metavar="LIST",
                   help=f"the workloads (default {','.join(WORKLOADS)})")
    p.add_argument("--taxes", metavar="LIST",
                   help="the taxes (default every one TAXRUN measured)")
    p.add_argument("--rounds", type=int, default=6, metavar="N",
                   help="rounds, each every tax once (default 6, the fewest for a 95 %% "
                        "interval)")
    p.add_argument("-r", "--runs", type=int, default=3, metavar="N",
                   help="timed runs of a workload a sweep (default 3)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="the rounds' order")
    p.add_argument("--scale", choices=("small", "full"),
                   help="the workloads' scale (lab sweep --scale; default full): small for "
                        "a quick look, its units too short for the smaller taxes")
    p.add_argument("--besides", metavar="NUMBERS",
                   help="with --count-only: these call numbers first, then the workloads' "
                        "others (run.sh's CALLS)")
    # What to do besides running the rounds: one at most.
    modes = p.add_mutually_exclusive_group()
    for flag, what in MODES.items():
        modes.add_argument(flag, action="store_true", help=what)
    cli.add_json_option(p)


def work(args):
    d = pathlib.Path(args.taxrun)
    workloads = [w for w in args.workloads.split(",") if w]
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad or not workloads:
        raise cli.BadInput(f"--workloads wants some of {','.join(WORKLOADS)}, not "
                           f"'{args.workloads}'")
    out = d / "workloads-here"
    if args.count_only:
        if not d.is_dir():
            raise cli.BadInput(f"{d}: no such folder")
        need_root()
        measure_all(out, workloads, [], 0, 1, 0, args.scale)
        besides = [int(n) for n in args.besides.split(",") if n] if args.besides else []
        print(",".join(map(str, dict.fromkeys(besides + count_calls(out, workloads)))))
        return 0
    if not (d / "summary.json").exists():
        raise cli.BadInput(f"{d}: no summary.json there (an analysed run.sh --here folder)")
    summary, meta = results.read_json(d / "summary.json"), results.read_meta(d)
    if not here.is_here(meta):
        raise cli.BadInput(f"{d}: not a tax folder of the running kernel (run.sh --here)")
    measured = summary.get("taxes", [])
    taxes = args.taxes.split(",") if args.taxes else measured
    bad = [t for t in taxes if t not in measured]
    if bad or not taxes:
        raise cli.BadInput(f"--taxes wants some of {','.join(measured)} (those {d.name} "
                           f"measured), not '{args.taxes}'")
    if args.rounds < 6:
        raise cli.BadInput(f"--rounds wants a whole number >= 6, not {args.rounds}")
    if args.runs < 1:
        raise cli.BadInput(f"--runs wants a whole number >= 1, not {args.runs}")
    if args.dry_run:
        runs = plan(workloads, taxes, args.rounds, args.seed)
        print(f"{len(workloads)} counts and {len(runs)} runs of 'lab sweep --here', "
              f"{sum(1 for r in runs if not done(run_dir(out, *r), r[0]))} not yet there")
        nrs = count_calls(out, workloads)
        if nrs:
            print(f"the calls that make up {LIST_SHARE:.0%} of each: CALLS="
                  + ",".join(map(str, nrs)))
        return 0
    if not args.report:
        need_root()
        measure_all(out, workloads, taxes, args.rounds, args.runs, args.seed, args.scale)
    rows = summarise(out, summary, workloads, taxes)
    if not rows:
        raise cli.BadInput(f"{out}: no rounds there yet")
    txt = report(rows, meta, d)
    results.write_csv(d / "workloads-here.csv", COLUMNS, rows)
    results.write_json(d / "workloads-here.json", {"source_virtual": VIRTUAL_SOURCE,
                                                   "rows": rows})
    results.write_text(d / "workloads-here.txt", txt)
    draw(rows, meta, d / "workloads-here.png")
    cli.show(args, rows, txt, d, ["workloads-here.csv", "workloads-here.json",
                                  "workloads-here.txt"], "workloads-here.png")


main = cli.command(__doc__, "python -m lablib.tax.here_workloads results/latest-tax-here "
                   "--workloads grep", add_args, work)


if __name__ == "__main__":
    sys.exit(main())
