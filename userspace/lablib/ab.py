"""An A/B in one command: an experiment run N times on each of two sides,
the boots in a random order drawn afresh each time (or from --seed) and
recorded with its seed, then compare.

    lab ab EXPERIMENT -A 'SETTINGS' -B 'SETTINGS' [-n N] [options] [-- ARGS...]

EXPERIMENT is calibrate or a workload sweep (each file of workloads/lib
that declares one: lablib.sweep.catalog).  A side's SETTINGS are KEY=VALUE words, each optional:
  VARIANT=stock|nohook|rt|...  the lab kernel (scripts/vm.sh VARIANT)
  APPEND='preempt=full ...'    more kernel command-line options (VM_APPEND)
  ARGS='-l 0,3000'             more options for this side's experiment
ARGS after '--' go to both sides' runs (calibrate's or sweep.sh's options).

On the virtual clock (the default) N defaults to 2 (two boots a side check
that each repeats to the instruction) and the boots run JOBS at a time
(GNU parallel; default the free cores: the cores less the load average);
on the host's clock (--clock host) N defaults to 10 and the boots run
one at a time, so that none slows another.  Makes
RESULTS/ab-<date>-<time>/ with plan.csv (the order, each boot's side,
settings and command), runs/<k>-<side>/ (each boot's result folder),
logs/<k>-<side>.txt and joblog (GNU parallel's), then runs compare on
the two sides into RESULTS/compare-<date>-<time>/, whose exit
status 'lab ab' returns (0 no figure worse, 1 worse, 2 inconclusive)."""
import json
import os
import pathlib
import random
import secrets
import shlex
import sys

from lablib import cli, compare, host, results
from lablib.sweep import catalog

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEYS = {"VARIANT": "VARIANT", "APPEND": "VM_APPEND", "ARGS": None}
DEFAULT_RUNS = {"virtual": 2, "host": 10}


def parse_side(text, name):
    """{KEY: value} of side @name's SETTINGS words; BadInput on a key not
    in KEYS or a word without '='."""
    side = {}
    for word in shlex.split(text or ""):
        key, eq, value = word.partition("=")
        if not eq or key not in KEYS:
            raise cli.BadInput(f"side {name}: '{word}' is not one of "
                               f"{', '.join(k + '=...' for k in KEYS)}")
        side[key] = value
    return side


def runner(experiment, out, args):
    """The host runner's command line for one boot into parent folder @out;
    LAB_AB_RUNNER, a stand-in the tests give, runs as RUNNER EXPERIMENT
    OUT ARGS... instead."""
    if experiment != "calibrate" and experiment not in catalog.names():
        raise cli.BadInput(f"experiment '{experiment}': make ab runs calibrate or a "
                           f"workload sweep ({', '.join(catalog.names())})")
    if os.environ.get("LAB_AB_RUNNER"):
        return [os.environ["LAB_AB_RUNNER"], experiment, str(out), *args]
    if experiment == "calibrate":
        return [str(ROOT / "userspace/calibrate/run.sh"), "-o", str(out), *args]
    return [sys.executable, "-m", "lablib.sweep.driver", experiment, "--vms", "1", "-o", str(out),
            *args]


def plan(experiment, sides, n, seed, folder, clock, common):
    """The boots, in the order they run: [{k, side, settings, env, command,
    parent, log}]."""
    boots = ["a", "b"] * n
    random.Random(seed).shuffle(boots)
    out, count = [], {"a": 0, "b": 0}
    for k, s in enumerate(boots, 1):
        count[s] += 1
        i = count[s]
        settings = sides[s]
        env = {"VM_CLOCK": clock}
        env |= {KEYS[key]: v for key, v in settings.items() if KEYS[key]}
        args = [*shlex.split(settings.get("ARGS", "")), *common]
        parent = folder / "runs" / f"{k:02d}-{s}"
        out.append({"k": k, "side": s, "run": i, "settings": settings, "env": env,
                    "command": runner(experiment, parent, args), "parent": parent,
                    "log": folder / "logs" / f"{k:02d}-{s}.txt"})
    return out


def job_line(boot):
    """One boot as a shell command line for GNU parallel."""
    return host.job_line(boot["env"], boot["command"], boot["parent"], boot["log"],
                         f"ab: boot {boot['k']} (side {boot['side'].upper()}, run "
                         f"{boot['run']}) done")


def result_of(boot):
    """The result folder a boot made in its parent folder."""
    try:
        return host.result_of(boot["parent"], f"boot {boot['k']} (see {boot['log']})")
    except ValueError as e:
        raise cli.BadInput(str(e)) from None


def add_args(p):
    p.add_argument("experiment", help="calibrate, kbuild, grep, apache, redis or cmd")
    p.add_argument("-A", dest="side_a", default="", metavar="SETTINGS",
                   help="side A: VARIANT=... APPEND='...' ARGS='...' (default: none)")
    p.add_argument("-B", dest="side_b", default="", metavar="SETTINGS", help="side B")
    p.add_argument("-n", "--runs", type=int, help="boots a side (default 2 on the "
                   "virtual clock, 10 on the host's)")
    p.add_argument("--clock", choices=("virtual", "host"), default="virtual",
                   help="the guest's clock (default virtual)")
    p.add_argument("-j", "--jobs", type=int, help="boots at once (virtual clock; "
                   "default the free cores)")
    p.add_argument("--seed", type=int, help="the order's seed (default: a new one each "
                   "time, printed and kept in meta.json)")
    p.add_argument("--band", type=float, default=100 * compare.HOST_BAND, metavar="PCT",
                   help="compare's host-clock band in %%")
    p.add_argument("-o", "--output", default=str(ROOT / "results"),
                   help="parent of the result folders (default results/)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")


def work(args):
    sides = {"a": parse_side(args.side_a, "A"), "b": parse_side(args.side_b, "B")}
    runner(args.experiment, "", [])
    n = DEFAULT_RUNS[args.clock] if args.runs is None else args.runs
    if n < 1:
        raise cli.BadInput(f"--runs {n}: at least one boot a side")
    jobs = 1 if args.clock == "host" else (args.jobs or host.free_cores()[0])
    if args.seed is None:
        args.seed = secrets.randbelow(2**31)
    if args.dry_run:
        folder = pathlib.Path(args.output) / "ab-DRY-RUN"
        print(f"# seed {args.seed} (--seed {args.seed} draws this order again)")
        for b in plan(args.experiment, sides, n, args.seed, folder, args.clock, args.common):
            print(f"{b['k']:>3} {b['side'].upper()}  {job_line(b)}")
        return 0
    try:
        host.need_parallel()
    except FileNotFoundError as e:
        raise cli.BadInput(str(e)) from None
    pathlib.Path(args.output).mkdir(parents=True, exist_ok=True)
    folder = pathlib.Path(results.lab("begin", args.output, "ab"))
    boots = plan(args.experiment, sides, n, args.seed, folder, args.clock, args.common)
    (folder / "logs").mkdir(exist_ok=True)
    results.lab("meta", folder, "ab", f"of={args.experiment}", f"clock={args.clock}",
                f"runs:={n}", f"jobs:={jobs}", f"seed:={args.seed}",
                f"a:={json.dumps(sides['a'])}", f"b:={json.dumps(sides['b'])}",
                f"order:={json.dumps([b['side'] for b in boots])}", "--", "lab", "ab",
                *args.argv)
    results.write_csv(folder / "plan.csv", ("k", "side", "run", "settings", "command"),
                      ({"k": b["k"], "side": b["side"].upper(), "run": b["run"],
                        "settings": json.dumps(b["settings"]), "command": job_line(b)}
                       for b in boots))
    print(f"ab: {args.experiment}, {n} boot(s) a side on the {args.clock} clock, {jobs} at "
          f"a time, in the order {' '.join(b['side'].upper() for b in boots)} "
          f"(seed {args.seed}){'; A and B the same: an A/A' if sides['a'] == sides['b'] else ''}"
          f"; plan: {folder}/plan.csv", flush=True)
    status = host.parallel([job_line(b) for b in boots], jobs, folder / "joblog")
    if status != 0:
        failed = [b for b in boots if not b["parent"].is_dir()
                  or not any(b["parent"].iterdir())]
        where = failed[0]["log"] if failed else folder / "joblog"
        raise cli.BadInput(f"a boot failed (GNU parallel's exit status {status}); "
                           f"see {where}; nothing compared, {folder} kept")
    # Committed first: the boots' folders then have the paths compare records.
    done = pathlib.Path(results.lab("commit", folder, "ab"))
    for boot in boots:
        boot["parent"] = done / boot["parent"].relative_to(folder)
    folder = done
    a = [result_of(b) for b in boots if b["side"] == "a"]
    b = [result_of(b) for b in boots if b["side"] == "b"]
    c = compare.compare(a, b, band=args.band / 100)
    c["ab"] = str(folder)
    c["design"] = "A/A" if sides["a"] == sides["b"] else "A/B"
    d, files = compare.write(c, args.output)
    (folder / "compare").symlink_to(os.path.relpath(d, folder))
    print(compare.report(c), end="")
    print(f"results: {folder} (boots), {d}/{', '.join(files)}")
    return c["status"]


def main(argv=None, prog="lab ab"):
    p = cli.parser(__doc__.split("\n\n")[0],
                   "lab ab calibrate -B APPEND=preempt=full", prog=prog)
    add_args(p)
    p.usage = "%(prog)s EXPERIMENT [-A SETTINGS] [-B SETTINGS] [options] [-- ARGS...]"
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:cut])
    args.common = argv[cut + 1:]
    args.argv = argv
    try:
        return work(args)
    except compare.Refused as e:
        print(f"{prog}: {cli.message(e)}", file=sys.stderr)
        return 2
    except (OSError, ValueError, cli.BadInput) as e:
        print(f"{prog}: error: {cli.message(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
