"""Each workload under each tax: predicted, measured, and with the delay
module standing in for the tax.

    python -m lablib.tax.workloads TAXRUN [--workloads LIST] [--taxes LIST] [-r N]
                                   [-j JOBS] [--dry-run | --report]

TAXRUN is a tax run's folder (make tax: summary.json, the ns each tax adds
to each call, and the options of the boots it was timed in).  On that
run's kernel variant, the virtual clock and one vCPU, with its base
boot's options (pti=off spectre_v2=off), each a boot of its own: first
the delay module's calibration on this kernel (userspace/calibrate/
run.sh: what a loop and a delayed call's entry cost, and what each ns
asked of the ns mode adds), then for each workload its sweeps
('lab sweep'):

  none      the workload untaxed at loops 0: its base time and calls by
            number (the prediction's input, lablib.tax.predict); a
            server's also its clients' (the hooks' COUNT_CLIENTS)
  TAX       the workload at the module's ns 0 under TAX (the hooks' TAX,
            sweep-hooks.sh),
            with the options of the boot named after the tax if the run
            had one (pti, retpoline): the measured time
  standin-L the workload untaxed at loops 0 and the loop counts whose
            calibrated delays are the taxes' figures, for each tax that is
            one figure for every call (a fixed cost per call), in one
            sweep: the emulated time; a server's under a tax every
            process pays in standin-clients-L, its clients delayed too
            (the hooks' DELAY_CLIENTS)
  standin-TAX-H  for a fixed cost that differs by call (a filter's
            positions, an argument checked): the module at the loops of
            the figure most of the workload's calls pay, and each call
            whose own figure the ns mode comes nearer to at that (delays=;
            H names the list), chosen with a calibration of the ns mode

Then per workload, measure and tax: the base, the prediction, the measured
and the emulated time of a unit of work, the prediction's error against
the measured time and the stand-in's against the real tax (the stand-ins'
choice and these rows: lablib.tax.workloads_figures).  Writes
TAXRUN/workloads/<workload>/<run>/ (each sweep's folder, its output in
TAXRUN/workloads/logs/; a sweep whose folder is there is not run again),
TAXRUN/workloads.csv, workloads.json, workloads.txt (added to
report.txt) and workloads.md (the README's tables).  NOTES.md, "The
taxes on the workloads", says why each choice.
"""
import hashlib
import importlib.util
import os
import pathlib
import sys
import time

from lablib import cli, host, results, text
from lablib.experiments import calibration
from lablib.tax import analyse, predict
from lablib.tax import workloads_figures as figures
from lablib.sweep import catalog

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The workloads taxed by default: every one of the catalog
# (lablib.sweep.catalog); the longest sweeps run first.
WORKLOADS = tuple(catalog.names())
# The command of a workload that times one (cmd): the workloads' README
# example, a tree of headers archived.
CMD = ("tar", "cf", "/dev/null", "/usr/include/linux")
# The ns mode's calibration: the added latency of each ns asked, getppid
# timed at every 10 ns up to 1,500 (a delays= figure is in ns; the mode's
# clock reads make its cost a staircase, NOTES.md, "Calls' own delays").
NS_PARAM = "/sys/module/delay/parameters/ns"
NS_STEPS = "0:1500:10"


# The tax's hooks into a sweep (sweep-hooks.sh): its settings as options.
HOOKS = ROOT / "userspace/tax/sweep-hooks.sh"


def hooks(**settings):
    """lab sweep's options for the tax's hooks with @settings
    (TAX="trace", COUNT_CLIENTS=1, DELAY_CLIENTS=1)."""
    return ["--hooks", str(HOOKS),
            *(a for k, v in settings.items() for a in ("--hook-var", f"{k}={v}"))]


def sweep_args(workload, repeats):
    """The sweep options every run of @workload takes, its command last."""
    args = ["-r", str(repeats)]
    return (args, ["--", *CMD]) if catalog.workloads()[workload].command else (args, [])


def boot_env(variant, append):
    """The environment of a boot of @variant with the options @append."""
    return {"VARIANT": variant, "VM_CLOCK": "virtual", "VM_CPUS": "1", "VM_APPEND": append}


def calibration_run(tax_dir, variant, append, name="calibrate", args=()):
    """The delay module's calibration on the tax run's kernel and options
    (@args: the calibrate tool's own)."""
    root = pathlib.Path(tax_dir) / "workloads"
    command = os.environ.get("LAB_CALIBRATE_RUNNER") or ROOT / "userspace/calibrate/run.sh"
    return {"name": name, "parent": root / name,
            "env": boot_env(variant, append), "command": [command, "-o", root / name, *args],
            "log": root / "logs" / f"{name}.txt"}


def ns_calibration_run(tax_dir, variant, append):
    """The ns mode's calibration: getppid at each ns of NS_STEPS."""
    return calibration_run(tax_dir, variant, append, "calibrate-ns",
                           ["--param", NS_PARAM, "-l", NS_STEPS, "--syscall", "getppid",
                            "-n", "5", "--calls", "200", "--rounds", "1"])


def runner():
    """The sweep's command ('lab sweep'); LAB_SWEEP_RUNNER, a stand-in the
    tests give, takes the same arguments."""
    if os.environ.get("LAB_SWEEP_RUNNER"):
        return [os.environ["LAB_SWEEP_RUNNER"]]
    return [sys.executable, "-m", "lablib.sweep.driver"]


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
        command = [*runner(), self.workload, "--vms", "1", "-o", parent,
                   *point, *args, *extra, *tail]
        return {"name": f"{self.workload}/{name}", "parent": parent,
                "env": boot_env(self.variant, self.boots[boot]), "command": command,
                "log": self.root / "logs" / f"{self.workload}-{name}.txt",
                # The longest run first, and the time left guessed from
                # those done (NOTES.md, "A run's length").
                "cost": catalog.seconds(catalog.workloads()[self.workload],
                                        [int(v) for v in point[1].split(",")], self.repeats)}

    def base(self, cal):
        clients = hooks(COUNT_CLIENTS=1) if self.workload in figures.SERVERS else []
        return self.run("none", ["-l", "0"], ["--calibration", cal, *clients])

    def taxed(self, tax):
        return self.run(tax, ["--ns", "0"], hooks(TAX=tax), tax if tax in self.boots else "base")

    def standin(self, loops, cal, clients=False):
        """The one-figure stand-ins' sweep, named after its loop counts: a
        table whose figures changed asks for a sweep of its own, but one
        done at more loop counts serves (a run of some taxes after one of
        all).  With @clients, a server's clients are delayed too."""
        prefix = "standin-" + ("clients-" if clients else "")
        extra = ["--calibration", cal] + (hooks(DELAY_CLIENTS=1) if clients else [])

        def sweep(points):
            return self.run(prefix + "-".join(map(str, points)),
                            ["-l", ",".join(map(str, points))], extra)
        want = sorted({0, *loops})
        for d in sorted(self.dir.glob(prefix + "[0-9]*")):
            have = d.name[len(prefix):].split("-")
            if all(h.isdigit() for h in have) and set(want) <= set(map(int, have)):
                run = sweep(sorted(map(int, have)))
                if done(run):
                    return run
        return sweep(want)

    def percall(self, tax, spec, cal):
        """The stand-in of a tax that differs by call: @spec's loops for
        every call, its delays= for the calls it names, in a sweep named
        after the tax and a digest of both."""
        digest = hashlib.sha1(f"{spec['loops']} {spec['delays']}".encode()).hexdigest()[:8]
        extra = ["--calibration", cal]
        if spec["delays"]:
            extra += ["--set", f"delays={spec['delays']}"]
        if spec["clients"]:
            extra += hooks(DELAY_CLIENTS=1)
        return self.run(f"standin-{tax}-{digest}", ["-l", ",".join(map(str, sorted(
            {0, spec["loops"]})))], extra)

    def clients_pay(self, tax):
        """Does @tax slow what this workload's clients do, which its
        stand-in must then delay too?"""
        return self.workload in figures.SERVERS and tax in predict.MACHINE_WIDE


def done(run):
    """The run's analysed result folder, or None if it has not run."""
    try:
        d = host.result_of(run["parent"], run["name"])
    except ValueError:
        return None
    return d if (d / "summary.json").is_file() else None


def run_all(runs, jobs, joblog, dry_run, report=False):
    """Run those of @runs not done, @jobs at a time, the longest first (by
    their cost); progress on stdout.  With @report, run none and say which
    are missing."""
    todo = []
    for r in runs:
        d = done(r)
        if d is None:
            todo.append(r)
        else:
            print(f"tax workloads: {r['name']}: done before, {d}")
    if not todo:
        return
    todo.sort(key=lambda r: -r.get("cost", 1))
    if report:
        print(f"tax workloads: not run, left out of the report: "
              f"{', '.join(r['name'] for r in todo)}")
        return
    def said(r):
        return f"tax workloads: {r['name']} done"
    # The cost of each sweep, by the done line GNU parallel echoes for it.
    cost = {said(r): r.get("cost", 1) for r in todo}
    lines = [host.job_line(r["env"], r["command"], r["parent"], r["log"], said(r))
             for r in todo]
    if dry_run:
        print("\n".join(lines))
        return
    for r in todo:
        r["log"].parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    print(f"tax workloads: {len(todo)} sweep(s), {jobs} at a time: "
          f"{', '.join(r['name'] for r in todo)}", flush=True)
    total, finished, finished_cost = sum(cost.values()), 0, 0

    def progress(line):
        # A sweep's done line, with how many are, the time so far and the
        # rest at the pace of the costs done so far (a guide: a tax
        # lengthens its sweeps).
        nonlocal finished, finished_cost
        if line in cost:
            finished += 1
            finished_cost += cost[line]
            spent = time.monotonic() - start
            left = spent / finished_cost * (total - finished_cost)
            line += (f" ({finished} of {len(todo)}, {text.duration(spent)} so far, "
                     f"about {text.duration(left)} left)")
        print(line, flush=True)

    status = host.parallel(lines, jobs, joblog, progress)
    failed = [r for r in todo if done(r) is None]
    if status or failed:
        where = failed[0]["log"] if failed else joblog
        raise cli.BadInput(f"a sweep failed (GNU parallel's exit status {status}): see {where}")
    print(f"tax workloads: {len(todo)} sweep(s) in {time.monotonic() - start:.0f} s",
          flush=True)


def uniform_sweeps(plan, loops, cal):
    """{tax: sweep} of the one-figure stand-ins of @plan (a Plan), whose
    loop counts are @loops ({tax: loops}): the taxes only the work pays in
    one sweep, those a server's clients pay too in one that delays them."""
    out = {}
    for clients in (False, True):
        mine = {t: n for t, n in loops.items() if plan.clients_pay(t) == clients}
        if mine:
            run = plan.standin(mine.values(), cal, clients)
            out |= {t: run for t in mine}
    return out


def add_args(p):
    p.add_argument("dir", metavar="TAXRUN", help="a tax run's result folder (make tax)")
    p.add_argument("--workloads", default="all",
                   help=f"the workloads, or all (the default: {','.join(WORKLOADS)})")
    p.add_argument("--taxes", help="the taxes (default every tax the run measured)")
    p.add_argument("-r", "--repeats", type=int, default=2,
                   help="timed runs a point (default 2: each the same to the instruction)")
    p.add_argument("-j", "--jobs", type=int, help="sweeps at once (default the cores)")
    p.add_argument("--dry-run", action="store_true", help="print the sweeps, run nothing")
    p.add_argument("--report", action="store_true",
                   help="run nothing: the report of the sweeps already there (a stopped or "
                        "partial run), each one missing left out and named")
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
                           f"(lab analyse {tax_dir})")
    return summary, chosen, boots, results.read_meta(tax_dir).get("variant") or "tax"


def work(args):
    tax_dir = pathlib.Path(args.dir)
    summary, taxes, boots, variant = tax_run(tax_dir, args.taxes)
    # Where the calls were timed (the base boot's), for the report.
    measured_meta, _ = analyse.measured_meta(tax_dir)
    workloads = list(WORKLOADS) if args.workloads == "all" else args.workloads.split(",")
    bad = [w for w in workloads if w not in WORKLOADS]
    if bad:
        raise cli.BadInput(f"--workloads: {', '.join(bad)} not one of {', '.join(WORKLOADS)}")
    if args.repeats < 1:
        raise cli.BadInput(f"--repeats {args.repeats}: at least 1")
    # Before hours of sweeps, not after: workloads.md's writer.
    if importlib.util.find_spec("tabulate") is None:
        raise cli.BadInput("this Python has no tabulate (workloads.md): run 'make venv'")
    for s in summary.get("skipped", []):
        print(f"tax workloads: {s['tax']} skipped: {s['reason']}")
    # The cores, not the free ones: a sweep's figures on the virtual clock
    # do not depend on the host's load, and the load average still counts
    # the tax run's boots just before (NOTES.md, "A run's length").
    jobs = args.jobs or os.cpu_count() or 1
    joblog = tax_dir / "workloads" / "joblog"
    plans = {w: Plan(tax_dir, w, args.repeats, variant, boots) for w in workloads}
    if args.dry_run and args.report:
        raise cli.BadInput("--dry-run or --report, not both")
    if not args.dry_run:
        joblog.parent.mkdir(parents=True, exist_ok=True)
    # The calibrations (the ns mode's only for a tax that differs by
    # call), then the bases, the taxed runs and the one-figure stand-ins,
    # whose loop counts the first chooses; then the stand-ins of the taxes
    # that differ by call, which the bases' calls by number choose.
    uniform, percall = ({t: v for t, v in d.items() if t in taxes}
                        for d in figures.fixed_taxes(tax_dir))
    cal = calibration_run(tax_dir, variant, boots["base"])
    nscal = ns_calibration_run(tax_dir, variant, boots["base"]) if percall else None
    run_all([cal] + ([nscal] if nscal else []), jobs, joblog, args.dry_run, args.report)
    if args.report and done(cal) is None:
        raise cli.BadInput(f"--report: {tax_dir} has no calibration of the module to report "
                           "against: run without --report first")
    why = {t: figures.NOT_FIXED[t] for t in taxes if t in figures.NOT_FIXED}
    if args.report and nscal and done(nscal) is None:
        why |= {t: "the ns mode's calibration was not run (--report)" for t in percall}
        percall, nscal = {}, None
    if args.dry_run:
        cal_dir, plan, fit = cal["parent"] / "CALIBRATION", {t: 0 for t in uniform}, None
    else:
        cal_dir = done(cal)
        summary_cal = results.read_json(cal_dir / "summary.json")
        fit = {"ns_per_loop": calibration.ns_per_loop(summary_cal)[0],
               "entry_ns": calibration.entry_ns(summary_cal)}
        plan, below = figures.standin_plan(uniform, fit)
        why |= below
    onefig = {w: uniform_sweeps(p, plan, cal_dir) for w, p in plans.items()}
    first = [p.base(cal_dir) for p in plans.values()] + \
        [p.taxed(t) for p in plans.values() for t in taxes] + \
        list({str(r["parent"]): r for s in onefig.values() for r in s.values()}.values())
    run_all(first, jobs, joblog, args.dry_run, args.report)
    if args.report:
        for w in [w for w, p in plans.items() if done(p.base(cal_dir)) is None]:
            print(f"tax workloads: {w} left out: its untaxed sweep is not there")
            del plans[w]
    if args.dry_run:
        if percall:
            print(f"tax workloads: then a stand-in sweep a workload for each of "
                  f"{', '.join(percall)}, chosen from the bases' calls by number")
        return 0
    steps = figures.ns_staircase(results.read_json(done(nscal) / "summary.json")) if nscal else {}
    specs, whys = {}, {w: dict(why) for w in plans}
    for w, p in plans.items():
        shares = predict.mix(done(p.base(cal_dir)))
        for t, cells in percall.items():
            spec = figures.percall_plan(cells, shares, fit, steps)
            if spec is None:
                whys[w][t] = (f"differs by call, and below the module's floor on the calls "
                              f"{w} makes ({fit['entry_ns']:.1f} ns before a first loop, "
                              f"{min(steps.values()):.1f} in the ns mode)")
            else:
                specs[(w, t)] = spec | {"clients": p.clients_pay(t)}
    second = [plans[w].percall(t, spec, cal_dir) for (w, t), spec in specs.items()]
    run_all(second, jobs, joblog, False, args.report)
    rows = []
    for w, p in plans.items():
        taxed = {t: d for t in taxes if (d := done(p.taxed(t)))}
        standins = {t: {"sweep": done(r), "loops": plan[t], "delays": "", "ns": None,
                        "clients": p.clients_pay(t)}
                    for t, r in onefig[w].items()}
        standins |= {t: {"sweep": done(p.percall(t, spec, cal_dir)), "loops": spec["loops"],
                         "delays": spec["delays"], "ns": spec["ns"],
                         "clients": spec["clients"]}
                     for (w2, t), spec in specs.items() if w2 == w}
        for t in [t for t, s in standins.items() if not s["sweep"]]:
            whys[w][t] = "its sweep was not run (--report)"
            del standins[t]
        rows += [r for r in figures.combine(w, done(p.base(cal_dir)), tax_dir, taxed, standins,
                                            whys[w]) if r["tax"] in taxes]
    report_text = figures.report(rows, tax_dir, measured_meta)
    results.write_csv(tax_dir / "workloads.csv", figures.COLUMNS, rows)
    results.write_json(tax_dir / "workloads.json",
                       {"experiment": "tax-workloads", "tax_run": str(tax_dir),
                        "within": figures.WITHIN, "rows": rows,
                        "calibration": str(cal_dir),
                        "ns_calibration": str(done(nscal)) if nscal else None,
                        "sweeps": {r["name"]: str(d) for r in first + second
                                   if (d := done(r))}})
    results.write_text(tax_dir / "workloads.txt", report_text)
    results.write_text(tax_dir / "workloads.md", figures.markdown(rows))
    analyse.write_report(tax_dir)
    analyse.draw_folder(summary, tax_dir)
    cli.show(args, {"rows": rows}, report_text, tax_dir,
             ["workloads.txt", "workloads.md", "workloads.csv", "workloads.json", "report.txt",
              "tax.png"])
    return 0


def main(argv=None, prog=None):
    """The sweeps and table of the tax run of @argv (default sys.argv[1:]);
    the exit status."""
    return cli.main(__doc__, "python -m lablib.tax.workloads results/latest-tax --workloads grep",
                    add_args, work, argv=argv, prog=prog or "python -m lablib.tax.workloads")


if __name__ == "__main__":
    sys.exit(main())
