"""The host's clock beside the virtual one: a workload without and with a
tax, make ab on the host's clock, with its verdicts.

    python -m lablib.tax.hostclock TAXRUN [--taxes LIST] [--workload NAME] [-n N] [-r R]
                                   [--dry-run]

For each tax (default pti and seccomp-linear, the issue's two), make ab
(lablib.ab, 'lab ab') boots the workload N times a side on the host's
clock, one boot at a time in a seeded random order, on the tax run's
kernel variant and one vCPU: side A untaxed with the run's base boot's
options, side B under the tax (its sweep hooks) with the options of the
boot named after the tax if the run had one (pti=on); both at the delay
module's ns 0, a sweep of that one point.  compare's verdicts (faster,
slower, same, inconclusive: an exact Mann-Whitney U test, a bootstrap
interval of the ratio of medians, Holm's correction) stand beside the
virtual clock's change of the same workload under the same tax, if
lablib.tax.workloads has measured it: the difference between the clocks is what
the virtual clock leaves out (the caches and TLB a tax flushes or fills;
NOTES.md, "The host's clock beside the virtual one").

Writes TAXRUN/hostclock/<tax>/ (the A/B's boots and its compare folder;
an A/B there is not run again), TAXRUN/hostclock.txt, .csv and .json,
and adds hostclock.txt to TAXRUN/report.txt.
"""
import os
import pathlib
import shlex
import subprocess
import sys

from lablib import cli, results
from lablib.tax import analyse
from lablib.tax import workloads as wl

TAXES = ("pti", "seccomp-linear")
# compare's figure of a sweep point: "<workload> [<measure>] at ns 0" (the
# model's figures have a colon: "grep: measured slowdown at ns 0").
POINT = " at ns 0"
COLUMNS = ("tax", "workload", "measure", "figure", "unit", "a", "b", "host_change_pct",
           "ci_low_pct", "ci_high_pct", "p_holm", "a_cv", "b_cv", "verdict", "runs_needed",
           "why", "virtual_change_pct", "clocks_differ_pct", "runs", "ab")


def side(variant, append, args):
    """A side's SETTINGS words of lablib.ab."""
    return shlex.join([f"VARIANT={variant}", f"APPEND={append}", f"ARGS={shlex.join(args)}"])


def ab_command(tax, workload, n, repeats, variant, boots, out):
    """lablib.ab's command line for @tax's A/B into parent folder @out."""
    args, tail = wl.sweep_args(workload, repeats)
    taxed = boots[tax] if tax in boots else boots["base"]
    return [sys.executable, "-m", "lablib.ab", workload,
            "-A", side(variant, boots["base"], ["--ns", "0"]),
            "-B", side(variant, taxed, ["--ns", "0", *wl.hooks(TAX=tax)]),
            "--clock", "host", "-n", str(n), "-o", str(out), "--", *args, *tail]


def compare_of(parent):
    """The compare folder of the A/B in @parent, or None if none finished."""
    done = sorted(d for d in pathlib.Path(parent).glob("ab-*")
                  if not d.name.endswith(".incomplete") and (d / "compare").is_dir())
    return (done[-1] / "compare").resolve() if done else None


def virtual_changes(tax_dir, workload):
    """{(measure, tax): throughput change in %} of workloads.json's rows
    for @workload, {} without them."""
    path = pathlib.Path(tax_dir) / "workloads.json"
    if not path.exists():
        return {}
    return {(r["measure"], r["tax"]): 100 * (r["base_s"] / r["measured_s"] - 1)
            for r in results.read_json(path)["rows"]
            if r["workload"] == workload and r.get("measured_s")}


def rows_of(tax, workload, c, virtual):
    """hostclock.json's rows of one A/B's compare.json @c: each throughput
    figure at ns 0, host and virtual clock's change side by side."""
    out = []
    for r in c["rows"]:
        if not r["figure"].endswith(POINT) or ":" in r["figure"]:
            continue
        what = r["figure"][:-len(POINT)]
        measure = what.split(" ", 1)[1] if " " in what else what
        ci = r.get("ci") or (None, None)
        host = None if r.get("ratio") is None else 100 * (r["ratio"] - 1)
        v = virtual.get((measure, tax))
        out.append({
            "tax": tax, "workload": workload, "measure": measure, "figure": r["figure"],
            "unit": r["unit"], "a": r["a_value"], "b": r["b_value"], "host_change_pct": host,
            "ci_low_pct": None if ci[0] is None else 100 * (ci[0] - 1),
            "ci_high_pct": None if ci[1] is None else 100 * (ci[1] - 1),
            "p_holm": r.get("p_holm"), "a_cv": results.get(r, "a_stats", "cv"),
            "b_cv": results.get(r, "b_stats", "cv"), "verdict": r["verdict"],
            "runs_needed": r.get("runs_needed"), "why": r.get("why") or "",
            "virtual_change_pct": v,
            "clocks_differ_pct": None if host is None or v is None else host - v,
            "runs": f"{len(r['a'])}+{len(r['b'])}", "ab": str(c["ab"])})
    return out


def pct(value):
    return "-" if value is None else f"{value:+.2f}%"


def report(rows, where):
    out = [f"tax on the host's clock: a workload without and with each tax, make ab, {where}",
           "(throughput change B against A: host clock with compare's verdict and the 95 % "
           "interval of the ratio of medians; the virtual clock's for the same workload "
           "and tax, and host less virtual: what the virtual clock leaves out)", "",
           f"{'tax':<16}{'figure':<22}{'runs':>6}{'host':>10}{'interval':>20}{'CV A/B':>14}"
           f"  {'verdict':<13}{'virtual':>10}{'host-virt':>11}"]
    for r in rows:
        interval = ("-" if r["ci_low_pct"] is None
                    else f"{r['ci_low_pct']:+.1f}..{r['ci_high_pct']:+.1f}%")
        cv = "-" if r["a_cv"] is None else f"{100 * r['a_cv']:.1f}/{100 * (r['b_cv'] or 0):.1f}%"
        out.append(f"{r['tax']:<16}{r['figure']:<22}{r['runs']:>6}{pct(r['host_change_pct']):>10}"
                   f"{interval:>20}{cv:>14}  {r['verdict']:<13}"
                   f"{pct(r['virtual_change_pct']):>10}{pct(r['clocks_differ_pct']):>11}"
                   + (f"  ({r['why']})" if r["why"] else ""))
    return "\n".join(out) + "\n"


def add_args(p):
    p.add_argument("dir", metavar="TAXRUN", help="a tax run's result folder (make tax)")
    p.add_argument("--taxes", default=",".join(TAXES),
                   help=f"the taxes (default {','.join(TAXES)})")
    p.add_argument("--workload", default="grep", choices=wl.WORKLOADS,
                   help="the workload (default grep)")
    p.add_argument("-n", "--runs", type=int, default=10, help="boots a side (default 10)")
    p.add_argument("-r", "--repeats", type=int, default=2,
                   help="timed runs in each boot (default 2)")
    p.add_argument("--dry-run", action="store_true", help="print the A/Bs, run nothing")
    cli.add_json_option(p)


def work(args):
    tax_dir = pathlib.Path(args.dir)
    _, taxes, boots, variant = wl.tax_run(tax_dir, args.taxes)
    if args.runs < 2 or args.repeats < 1:
        raise cli.BadInput(f"-n {args.runs} -r {args.repeats}: at least two boots a side "
                           "(a test needs two) and one timed run a boot")
    env = {**os.environ, "VM_CPUS": "1"}
    compares = {}
    for k, tax in enumerate(taxes, 1):
        parent = tax_dir / "hostclock" / tax
        command = ab_command(tax, args.workload, args.runs, args.repeats, variant, boots,
                             parent)
        found = compare_of(parent)
        if args.dry_run:
            print(f"VM_CPUS=1 {shlex.join(command)}")
            continue
        if found:
            print(f"tax host clock: {tax}: done before, {found}", flush=True)
        else:
            print(f"tax host clock: {tax} ({k} of {len(taxes)}): {args.workload}, "
                  f"{args.runs} boots a side", flush=True)
            parent.mkdir(parents=True, exist_ok=True)
            # lablib.ab's status says the verdicts (1 worse, 2 inconclusive
            # too): its compare folder is the result.
            subprocess.run(command, env=env, check=False)
            found = compare_of(parent)
            if found is None:
                raise cli.BadInput(f"the A/B of {tax} compared nothing: see {parent}")
        compares[tax] = results.read_json(found / "compare.json")
    if args.dry_run:
        return 0
    virtual = virtual_changes(tax_dir, args.workload)
    rows = [r for tax, c in compares.items() for r in rows_of(tax, args.workload, c, virtual)]
    text = report(rows, next(iter(compares.values()))["a"]["describe"])
    results.write_csv(tax_dir / "hostclock.csv", COLUMNS, rows)
    results.write_json(tax_dir / "hostclock.json",
                       {"experiment": "tax-hostclock", "tax_run": str(tax_dir),
                        "workload": args.workload, "runs": args.runs, "rows": rows})
    results.write_text(tax_dir / "hostclock.txt", text)
    analyse.write_report(tax_dir)
    cli.show(args, {"rows": rows}, text, tax_dir,
             ["hostclock.txt", "hostclock.csv", "hostclock.json", "report.txt"])
    return 0


def main(argv=None, prog=None):
    """The A/Bs of the tax run of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "python -m lablib.tax.hostclock results/latest-tax", add_args,
                    work, argv=argv, prog=prog or "python -m lablib.tax.hostclock")


if __name__ == "__main__":
    sys.exit(main())
