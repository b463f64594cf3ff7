#!/usr/bin/env python3
"""Each workload under each tax: predicted, measured, and with the delay
module standing in for the tax.

    workloads.py TAXRUN [--workloads LIST] [--taxes LIST] [-r N] [-j JOBS] [--dry-run]

TAXRUN is a tax run's folder (make tax: summary.json, the ns each tax adds
to each call, and the options of the boots it was timed in).  On that
run's kernel variant, the virtual clock and one vCPU, with its base
boot's options (pti=off spectre_v2=off), each a boot of its own: first
the delay module's calibration on this kernel (userspace/calibrate/
run.sh: what a loop and a delayed call's entry cost), then for each
workload its sweeps (workloads/run.sh):

  none      the workload untaxed at loops 0: its base time and calls by
            number (the prediction's input, predict.py); a server's also
            its clients' (--count-clients)
  TAX       the workload at the module's ns 0 under TAX (sweep.sh --tax),
            with the options of the boot named after the tax if the run
            had one (pti, retpoline): the measured time
  standin-L the workload untaxed at loops 0 and the loop counts whose
            calibrated delays are the taxes' figures, for each tax that is
            one figure for every call (a fixed cost per call), in one
            sweep: the emulated time

Then per workload, measure and tax: the base, the prediction, the measured
and the emulated time of a unit of work, the prediction's error against
the measured time and the stand-in's against the real tax.  Writes
TAXRUN/workloads/<workload>/<run>/ (each sweep's folder, its output in
TAXRUN/workloads/logs/; a sweep whose folder is there is not run again),
TAXRUN/workloads.csv, workloads.json and workloads.txt (added to
report.txt).  NOTES.md, "The taxes on the workloads", says why each
choice.
"""
import os
import pathlib
import sys
import time

from lablib import cli, host, results
from lablib.experiments import calibration

import analyse
import predict

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKLOADS = ("grep", "cmd", "redis", "apache", "kbuild")
# cmd's command: the workloads' README example, a tree of headers archived.
CMD = ("tar", "cf", "/dev/null", "/usr/include/linux")
# The servers, whose untaxed sweep counts their clients' calls too
# (sweep.sh --count-clients), which the taxes every process pays slow
# (predict.py; NOTES.md, "A server's client pays a machine's taxes").
SERVERS = ("redis", "apache")
# Within this share the prediction holds, and the stand-in reproduces the tax.
WITHIN = 0.01
COLUMNS = ("workload", "measure", "tax", "base_s", "calls_per_unit", "added_ns_per_call",
           "covered_pct", "client_calls_per_unit", "predicted_s", "predicted_change_pct",
           "measured_s", "measured_calls_per_unit", "measured_change_pct", "error_pct",
           "standin_loops", "standin_ns", "emulated_s", "emulated_change_pct",
           "standin_error_pct", "exact", "note")


def sweep_args(workload, repeats):
    """The sweep options every run of @workload takes, its command last."""
    args = ["-r", str(repeats)]
    return (args, ["--", *CMD]) if workload == "cmd" else (args, [])


def boot_env(variant, append):
    """The environment of a boot of @variant with the options @append."""
    return {"VARIANT": variant, "VM_CLOCK": "virtual", "VM_CPUS": "1", "VM_APPEND": append}


def calibration_run(tax_dir, variant, append):
    """The delay module's calibration on the tax run's kernel and options."""
    root = pathlib.Path(tax_dir) / "workloads"
    command = os.environ.get("LAB_CALIBRATE_RUNNER") or ROOT / "userspace/calibrate/run.sh"
    return {"name": "calibrate", "parent": root / "calibrate",
            "env": boot_env(variant, append), "command": [command, "-o", root / "calibrate"],
            "log": root / "logs" / "calibrate.txt"}


def runner():
    """The workloads' host runner; LAB_SWEEP_RUNNER, a stand-in the tests
    give, takes the same arguments."""
    return os.environ.get("LAB_SWEEP_RUNNER") or ROOT / "workloads/run.sh"


class Plan:
    """The sweeps of one workload: where each goes and what it runs."""

    def __init__(self, tax_dir, workload, repeats, variant, boots):
        self.workload, self.repeats, self.variant, self.boots = workload, repeats, variant, boots
        self.root = pathlib.Path(tax_dir) / "workloads"
        self.dir = self.root / workload

    def run(self, name, point, extra=(), boot="base"):
        """One sweep: {name, parent, log, env, command}."""
        args, tail = sweep_args(self.workload, self.repeats)
        parent = self.dir / name
        command = [runner(), self.workload, "--vms", "1", "-o", parent,
                   *point, *args, *extra, *tail]
        return {"name": f"{self.workload}/{name}", "parent": parent,
                "env": boot_env(self.variant, self.boots[boot]), "command": command,
                "log": self.root / "logs" / f"{self.workload}-{name}.txt"}

    def base(self, cal):
        clients = ["--count-clients"] if self.workload in SERVERS else []
        return self.run("none", ["-l", "0"], ["--calibration", cal, *clients])

    def taxed(self, tax):
        return self.run(tax, ["--ns", "0"], ["--tax", tax], tax if tax in self.boots else "base")

    def standin(self, loops, cal):
        """The stand-ins' sweep, named after its loop counts: a table
        whose figures changed asks for a sweep of its own."""
        points = sorted({0, *loops})
        return self.run("standin-" + "-".join(map(str, points)),
                        ["-l", ",".join(map(str, points))], ["--calibration", cal])


def done(run):
    """The run's analysed result folder, or None if it has not run."""
    try:
        d = host.result_of(run["parent"], run["name"])
    except ValueError:
        return None
    return d if (d / "summary.json").is_file() else None


def run_all(runs, jobs, joblog, dry_run):
    """Run those of @runs not done, @jobs at a time; progress on stdout."""
    todo = []
    for r in runs:
        d = done(r)
        if d is None:
            todo.append(r)
        else:
            print(f"tax workloads: {r['name']}: done before, {d}")
    if not todo:
        return
    lines = [host.job_line(r["env"], r["command"], r["parent"], r["log"],
                           f"tax workloads: {r['name']} done ({k} of {len(todo)})")
             for k, r in enumerate(todo, 1)]
    if dry_run:
        print("\n".join(lines))
        return
    for r in todo:
        r["log"].parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    print(f"tax workloads: {len(todo)} sweep(s), {jobs} at a time: "
          f"{', '.join(r['name'] for r in todo)}", flush=True)
    status = host.parallel(lines, jobs, joblog)
    failed = [r for r in todo if done(r) is None]
    if status or failed:
        where = failed[0]["log"] if failed else joblog
        raise cli.BadInput(f"a sweep failed (GNU parallel's exit status {status}): see {where}")
    print(f"tax workloads: {len(todo)} sweep(s) in {time.monotonic() - start:.0f} s",
          flush=True)


def points(sweep):
    """{(measure, loops or None, ns or None): summary point} of an analysed sweep."""
    s = results.read_json(sweep / "summary.json")
    return {(name, p["loops"], p["ns"]): p for name, m in s["measures"].items()
            for p in m["points"]}


def standin_loops(ns, ns_per_loop, entry_ns):
    """The loop count whose calibrated delay is nearest @ns, None below the
    module's floor (a delayed call's entry, before its first loop)."""
    loops = round((ns - entry_ns) / ns_per_loop)
    return loops if loops >= 1 else None


def uniform_taxes(tax_dir):
    """{tax: ns} of the taxes that are one figure for every call they timed."""
    per_tax = predict.taxes(results.read_json(pathlib.Path(tax_dir) / "summary.json"))
    return {t: u for t, (_, u) in per_tax.items() if u is not None}


def standin_plan(uniform, fit):
    """{tax: loops} for the one-figure taxes the module can stand in for,
    and {tax: why} of the others; @fit: {ns_per_loop, entry_ns}."""
    ns_per_loop, entry_ns = fit["ns_per_loop"], fit["entry_ns"]
    plan, why = {}, {}
    for tax, ns in uniform.items():
        loops = standin_loops(ns, ns_per_loop, entry_ns)
        if loops is None:
            why[tax] = (f"{ns:.1f} ns a call is below the module's floor ({entry_ns:.1f} ns "
                        "before a delayed call's first loop)")
        else:
            plan[tax] = loops
    return plan, why


def combine(workload, base, tax_dir, taxed, standin, plan, why_not):
    """The rows of one workload: per measure and tax the prediction,
    measured and emulated time."""
    rows = predict.predict(base, tax_dir)
    stand = points(standin) if standin else {}
    base_points = points(base)
    out = []
    for r in rows:
        tax, measure = r["tax"], r["measure"]
        row = {c: r.get(c) for c in COLUMNS} | {"predicted_change_pct": r["change_pct"]}
        notes = []
        exact = bool(base_points[(measure, 0, None)]["exact"])
        if tax in taxed:
            p = points(taxed[tax])[(measure, None, 0)]
            m = p["median_seconds_per_unit"]
            exact = exact and bool(p["exact"])
            row.update(measured_s=m, measured_calls_per_unit=p["syscalls_per_unit"],
                       measured_change_pct=100 * (m - r["base_s"]) / r["base_s"],
                       error_pct=100 * (r["predicted_s"] - m) / m)
            calls, base_calls = p["syscalls_per_unit"], r["calls_per_unit"]
            if calls is not None and abs(calls - base_calls) > WITHIN * base_calls:
                notes.append(f"{calls:,.0f} calls a unit under the tax, "
                             f"{base_calls:,.0f} untaxed")
            if tax in predict.MACHINE_WIDE and measure in predict.CLIENT_TIMED:
                if r.get("client_calls_per_unit") is None:
                    notes.append("the client's calls, not counted, pay this tax too")
                else:
                    notes.append(f"with the client's {r['client_calls_per_unit']:,.1f} calls "
                                 "a unit; the stand-in delays the server's alone")
        else:
            notes.append("not measured")
        if tax in plan and standin:
            p = stand[(measure, plan[tax], None)]
            e = p["median_seconds_per_unit"]
            exact = exact and bool(p["exact"])
            row.update(standin_loops=plan[tax], standin_ns=p["added_ns"], emulated_s=e,
                       emulated_change_pct=100 * (e - r["base_s"]) / r["base_s"])
            if row["measured_s"] is not None:
                row["standin_error_pct"] = 100 * (e - row["measured_s"]) / row["measured_s"]
        else:
            notes.append(f"no stand-in: {why_not.get(tax, 'not one figure for every call')}")
        row.update(workload=workload, exact=exact, note="; ".join(notes))
        out.append(row)
    return out


def verdict(value):
    return "" if value is None else ("ok" if abs(value) <= 100 * WITHIN else "OFF")


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def seconds(value):
    """A time to five figures in the unit that suits it: 35.737 us, 77.210 ms."""
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            break
    return f"{value / scale:.5g} {unit}"


def pct(value):
    return "-" if value is None else f"{value:+.2f}%"


def report(rows, tax_dir, meta):
    out = [f"tax workloads: each workload under each tax of {tax_dir}, "
           f"{results.describe(meta)}",
           "(time of a unit of work; error: predicted against measured, stand-in: "
           f"emulated against measured; ok within {100 * WITHIN:.0f} %)", "",
           f"{'workload':<9}{'measure':<11}{'tax':<23}{'base':>11}{'calls':>8}{'ns/call':>10}"
           f"{'predicted':>12}{'measured':>12}{'change':>10}{'error':>9}{'':>4}"
           f"{'stand-in ns':>12}{'emulated':>12}{'error':>9}"]
    for r in rows:
        out.append(
            f"{r['workload']:<9}{r['measure']:<11}{r['tax']:<23}{seconds(r['base_s']):>11}"
            f"{r['calls_per_unit']:>8,.0f}{r['added_ns_per_call']:>10,.1f}"
            f"{seconds(r['predicted_s']):>12}{seconds(r['measured_s']):>12}"
            f"{pct(r['measured_change_pct']):>10}{pct(r['error_pct']):>9}"
            f"{verdict(r['error_pct']):>4}{fmt(r['standin_ns'], ',.1f'):>12}"
            f"{seconds(r['emulated_s']):>12}{pct(r['standin_error_pct']):>9}"
            f"{verdict(r['standin_error_pct']):>4}"
            + ("" if r["exact"] else "  (not exact)") + (f"  {r['note']}" if r["note"] else ""))
    return "\n".join(out) + "\n"


def add_args(p):
    p.add_argument("dir", metavar="TAXRUN", help="a tax run's result folder (make tax)")
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help=f"the workloads (default {','.join(WORKLOADS)})")
    p.add_argument("--taxes", help="the taxes (default every tax the run measured)")
    p.add_argument("-r", "--repeats", type=int, default=2,
                   help="timed runs a point (default 2: each the same to the instruction)")
    p.add_argument("-j", "--jobs", type=int, help="sweeps at once (default the free cores)")
    p.add_argument("--dry-run", action="store_true", help="print the sweeps, run nothing")
    cli.add_json_option(p)


def tax_run(tax_dir, taxes=None):
    """(summary, taxes, boots, variant) of tax run @tax_dir: its
    summary.json, the taxes of the comma-separated list @taxes (default:
    every tax it measured), the options of its boots and its kernel
    variant; BadInput for a tax it did not measure or a summary that names
    no base boot."""
    summary = results.read_json(tax_dir / "summary.json")
    measured = list(summary["taxes"])
    chosen = taxes.split(",") if taxes else measured
    unknown = [t for t in chosen if t not in measured]
    if unknown:
        raise cli.BadInput(f"--taxes: {', '.join(unknown)} not measured in {tax_dir} "
                           f"(it has {', '.join(measured)})")
    boots = summary.get("boots") or {}
    if "base" not in boots:
        raise cli.BadInput(f"{tax_dir}/summary.json names no base boot: analyse it again "
                           f"(userspace/tax/analyse.py {tax_dir})")
    return summary, chosen, boots, results.read_meta(tax_dir).get("variant") or "tax"


def work(args):
    tax_dir = pathlib.Path(args.dir)
    summary, taxes, boots, variant = tax_run(tax_dir, args.taxes)
    # Where the calls were timed (the base boot's), for the report.
    measured_meta, _ = analyse.measured_meta(tax_dir)
    workloads = args.workloads.split(",")
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad:
        raise cli.BadInput(f"--workloads: {', '.join(bad)} not one of {', '.join(WORKLOADS)}")
    if args.repeats < 1:
        raise cli.BadInput(f"--repeats {args.repeats}: at least 1")
    for s in summary.get("skipped", []):
        print(f"tax workloads: {s['tax']} skipped: {s['reason']}")
    jobs = args.jobs or host.free_cores()[0]
    joblog = tax_dir / "workloads" / "joblog"
    plans = {w: Plan(tax_dir, w, args.repeats, variant, boots) for w in workloads}
    if not args.dry_run:
        joblog.parent.mkdir(parents=True, exist_ok=True)
    # The calibration, then the bases, the taxed runs and the stand-ins,
    # whose loop counts it chooses.
    cal = calibration_run(tax_dir, variant, boots["base"])
    run_all([cal], jobs, joblog, args.dry_run)
    cal_dir = done(cal) if not args.dry_run else cal["parent"] / "CALIBRATION"
    uniform = {t: ns for t, ns in uniform_taxes(tax_dir).items() if t in taxes}
    if args.dry_run:
        plan, why = {t: 0 for t in uniform}, {}
    else:
        fit = results.read_json(cal_dir / "summary.json")
        ns_per_loop, _ = calibration.ns_per_loop(fit)
        plan, why = standin_plan(uniform, {"ns_per_loop": ns_per_loop,
                                           "entry_ns": calibration.entry_ns(fit)})
    first = [p.base(cal_dir) for p in plans.values()] + \
        [p.taxed(t) for p in plans.values() for t in taxes] + \
        [p.standin(plan.values(), cal_dir) for p in plans.values() if plan]
    run_all(first, jobs, joblog, args.dry_run)
    if args.dry_run:
        return 0
    rows = []
    for w, p in plans.items():
        taxed = {t: done(p.taxed(t)) for t in taxes}
        standin = done(p.standin(plan.values(), cal_dir)) if plan else None
        rows += [r for r in combine(w, done(p.base(cal_dir)), tax_dir, taxed, standin, plan,
                                    why) if r["tax"] in taxes]
    text = report(rows, tax_dir, measured_meta)
    results.write_csv(tax_dir / "workloads.csv", COLUMNS, rows)
    results.write_json(tax_dir / "workloads.json",
                       {"experiment": "tax-workloads", "tax_run": str(tax_dir),
                        "within": WITHIN, "rows": rows,
                        "calibration": str(cal_dir),
                        "sweeps": {r["name"]: str(done(r)) for r in first}})
    results.write_text(tax_dir / "workloads.txt", text)
    analyse.write_report(tax_dir)
    analyse.draw_folder(summary, tax_dir)
    cli.show(args, {"rows": rows}, text, tax_dir,
             ["workloads.txt", "workloads.csv", "workloads.json", "report.txt", "tax.png"])
    return 0


if __name__ == "__main__":
    sys.exit(cli.main(__doc__, "userspace/tax/workloads.py results/latest-tax --workloads grep",
                      add_args, work))
