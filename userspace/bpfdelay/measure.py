"""What the BPF delay costs on the running kernel: getppid's ns per call
(callloop) with nothing attached, with bpfdelay attached and 0 ns asked
(its fixed cost), with N ns asked, and for a process outside the target
cgroup while it is attached.  The cases take turns, round after round, so
that a machine whose load drifts slows each of them alike; each run is
the median of its batches, and each case's figure the median of its runs
with a distribution-free 95 % interval (binomial order statistics).

Needs root and the built tools (make -C userspace/bpfdelay).  With
--against it measures nothing: it sets a sweep through the delay module
against one through the BPF delay (lablib.bpfdelay.against).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from lablib import cli
from lablib.bpfdelay import against
from lablib.bpfdelay.loader import Loader, Refused
from lablib.host import cgroup2_mount
from lablib.stats import LEAST_FOR_MEDIAN_INTERVAL, median_interval

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ROOT_CG = "bpfdelay-measure"
EXAMPLE = ("lab bpfdelay --runs 15 --ns 1000,5000 --attach tp\n"
           "  lab bpfdelay --against results/bpfdelay-sweeps/{module,bpf}/latest-grep")


class Failed(Exception):
    """A measurement that cannot go on, said in one line."""


def run_case(case, args, target):
    """One run: the loader attached as @case says, callloop inside or
    outside the target cgroup.  Returns callloop's median ns per call and
    the loader's statistics (None with nothing attached)."""
    def join(cg=target if case["inside"] else None):
        if cg:
            (cg / "cgroup.procs").write_text(str(os.getpid()))

    def callloop():
        out = subprocess.run([HERE / "callloop", "-n", str(args.batches), "--calls",
                              str(args.calls)], capture_output=True, text=True, check=True,
                             preexec_fn=join)
        return float(out.stdout.split()[-1])

    if case["ns"] is None:
        return callloop(), None
    try:
        with Loader("--ns", case["ns"], "--cgroup", "/" + ROOT_CG, "--attach", args.attach,
                    "--syscalls", "getppid") as loader:
            ns = callloop()
    except Refused as e:
        raise Failed(f"bpfdelay: {e}") from None
    return ns, loader.stats


def check(case, stats, calls):
    """Every getppid of the target counted, and delayed if ns was asked."""
    made = stats["by_call"].get("getppid", 0)
    if made < calls or stats["calls"] != made or stats["delayed"] != (made if case["ns"] else 0):
        raise Failed(f"{case['name']}: {stats}")


def main(argv=None, prog=None):
    """Measure as @argv (default sys.argv[1:]) asks; the exit status."""
    ap = argparse.ArgumentParser(prog=prog or "python -m lablib.bpfdelay.measure",
                                 description=__doc__.split("\n\n")[0],
                                 epilog=f"Example:\n  {EXAMPLE}",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="runs a case (default 15)")
    ap.add_argument("--ns", default="1000,5000", help="ns asked (default 1000,5000)")
    ap.add_argument("--attach", default="tp", help="bpfdelay's --attach (default tp)")
    ap.add_argument("--batches", type=int, default=200, help="batches a run, whose median "
                    "is the run's figure (default 200)")
    ap.add_argument("--calls", type=int, default=1000, help="getppid calls a batch (default 1000)")
    ap.add_argument("--json", action="store_true", help="the figures as JSON")
    g = ap.add_argument_group("a sweep through each delay, point against point")
    g.add_argument("--against", nargs=2, metavar=("MODULE_SWEEP", "BPF_SWEEP"),
                   help="measure nothing: two sweeps of one workload at the same ns points "
                        "on the virtual clock, through the module and through the BPF delay, "
                        "set against each other (make bpfdelay-against runs both)")
    g.add_argument("-o", "--output", default=str(ROOT / "results"), metavar="DIR",
                   help="with --against: where its result folder goes (default results/)")
    g.add_argument("--no-plot", action="store_true", help="with --against: no against.png")
    args = ap.parse_args(argv)
    if args.against:
        try:
            return against.main_against(args)
        except (OSError, ValueError, cli.BadInput) as e:
            print(f"{ap.prog}: error: {cli.message(e)}", file=sys.stderr)
            return 1
    if args.runs < LEAST_FOR_MEDIAN_INTERVAL:
        ap.error(f"--runs wants at least {LEAST_FOR_MEDIAN_INTERVAL} "
                 "(the fewest that give a 95 % interval of a median)")
    try:
        result = measure(args)
    except Failed as e:
        print(f"{ap.prog}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    show(result, args)
    return 0


def measure(args):
    """The figures of every case, as main prints them with --json."""
    mount = cgroup2_mount()
    if mount is None:
        raise Failed("no cgroup2 mount")
    target = mount / ROOT_CG
    target.mkdir(exist_ok=True)
    cases = [{"name": "plain", "ns": None, "inside": True},
             {"name": "ns=0", "ns": 0, "inside": True},
             {"name": "ns=1", "ns": 1, "inside": True}]
    cases += [{"name": f"ns={n}", "ns": int(n), "inside": True} for n in args.ns.split(",")]
    cases += [{"name": "outside", "ns": 1000, "inside": False}]
    runs = {c["name"]: [] for c in cases}
    mean_ns = {c["name"]: [] for c in cases}
    loads = []
    try:
        for r in range(args.runs):
            order = cases[r % len(cases):] + cases[:r % len(cases)]
            for case in order:
                ns, stats = run_case(case, args, target)
                runs[case["name"]].append(ns)
                if stats and case["inside"]:
                    check(case, stats, args.calls * args.batches)
                    mean_ns[case["name"]].append(stats["mean_ns"])
                loads.append(float(Path("/proc/loadavg").read_text().split()[0]))
            time.sleep(0.1)
    finally:
        target.rmdir()

    result = {"attach": args.attach, "runs": args.runs, "batches": args.batches,
              "calls": args.calls, "cpu": cpu_model(), "kernel": os.uname().release,
              "load1": {"min": min(loads), "median": sorted(loads)[len(loads) // 2],
                        "max": max(loads)}, "cases": {}}
    for name, v in runs.items():
        med, lo, hi = median_interval(v)
        # The same round's plain run subtracted: what the case adds.
        added = median_interval([x - p for x, p in zip(v, runs["plain"])])
        result["cases"][name] = {"median": med, "low": lo, "high": hi,
                                 "added": dict(zip(("median", "low", "high"), added)),
                                 "mean_ns": median_interval(mean_ns[name])[0]
                                 if mean_ns[name] else None, "unit": "ns"}
    return result


def show(result, args):
    """@result as a table on stdout."""
    print(f"{result['cpu']}, {result['kernel']}, attach {args.attach}; {args.runs} runs "
          f"a case, each the median of {args.batches} x {args.calls} getppid calls; "
          f"load average {result['load1']['min']}-{result['load1']['max']}")
    print(f"  {'case':10s} {'ns a call':>9s} {'95 %':>15s} {'added':>8s} {'95 %':>15s} mean_ns")
    for name, c in result["cases"].items():
        a = c["added"]
        print(f"  {name:10s} {c['median']:9.1f} {c['low']:7.1f}-{c['high']:<7.1f} "
              f"{a['median']:8.1f} {a['low']:7.1f}-{a['high']:<7.1f} {c['mean_ns'] or ''}")


def cpu_model():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


if __name__ == "__main__":
    sys.exit(main())
