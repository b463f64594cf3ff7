"""lab sweep: a workload's throughput against added system-call latency.

Boots the lab kernel and runs the sweep there (workloads/sweep.sh, the
guest's runner), then analyses it here: results/<workload>-<time>/.

  lab sweep WORKLOAD [--vms N] [--sshloginfile FILE] [-o DIR] [SWEEP-OPTIONS]
                     [-- COMMAND...]
  lab sweep WORKLOAD --here [-o DIR] [SWEEP-OPTIONS] [-- COMMAND...]

With --here it boots nothing: the sweep runs on the kernel this machine
runs (the lab kernel installed on hardware, 'make deb'; as root), on its
own clock, unstaged (the untimed run before each point fills the page
cache), one point after another.

The host's side, in order, as function calls over one plan:
  plan     lablib.sweep.plan checks every option of the sweep (status 2 on
           a bad one) and makes each workload's plan on the guest's clock:
           its points, their cost, where it stages, its scale; the
           workload's file checks its own settings (sweep.sh --describe)
  split    how many VMs run at once and which points each part runs
           (lablib.sweep.parts: balance, choose_vms)
  prepare  kbuild's object tree configured here; the workloads that stage
           on the host recorded here under strace into build/stage/
           (sweep.sh --stage-only DIR PLAN), which the guest unpacks into
           memory
  boot     one VM (scripts/vm.sh) running workloads/sweep.sh PLAN... for
           the whole sweep, or with N parts, N at once through GNU parallel
           (on this machine or, with --sshloginfile, on others), each
           part's folder merged into one (lablib.sweep.parts.merge); the
           module's calls by number of each point into by_call.csv
           (lablib.syscalls.windows)
  analyse  lablib.sweep.analyse on each workload's new folder

While the VMs run, their lines pass through, each point's with its
time per unit of work, and after each point the whole sweep's progress in
the host's time (lablib.sweep.parts.progress).
Environment: VM_CLOCK (default auto: virtual under TCG), VM_MEM,
VM_TIMEOUT, VM_VIRTUAL_CPUS (scripts/vm.sh); LAB_VM, the VM runner
(default scripts/vm.sh; the tests give a stand-in)."""
import argparse
import contextlib
import fcntl
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from lablib import cli, lists, results, syscalls
from lablib.sweep import analyse, catalog, parts, plan, progress, split
from lablib.sweep.split import Failed

ROOT = pathlib.Path(__file__).resolve().parents[1]
SWEEP = plan.RUNNER
BUILD = pathlib.Path(os.environ.get("LAB_BUILD", ROOT / "build"))
PROG = "lab sweep"
# The VM's defaults for a sweep: a whole sweep takes a while under TCG
# ('all' is three), the guest holds the staged files in memory (a
# kbuild's: 650 MB), and one vCPU on the virtual clock (its instruction
# count is global: with two, a reply's time includes the other's turns).
VM_DEFAULTS = {"VM_TIMEOUT": "21600", "VM_MEM": "4G", "VM_CLOCK": "auto",
               "VM_VIRTUAL_CPUS": "1"}


def log(message):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


class Parser(argparse.ArgumentParser):
    """argparse's parser, its complaints one line (status 2, cli.BadInput)."""

    def error(self, message):
        raise cli.BadInput(f"{message} (see --help)")


def parser():
    p = Parser(
        prog=PROG, usage=f"{PROG} WORKLOAD [options] [-- COMMAND...]", allow_abbrev=False,
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Workloads (their defaults: loop counts, runs a point):\n" + "\n".join(
            f"  {w.name:8} {w.about}\n  {'':8} ({w.loops}, {w.repeats})"
            for w in catalog.workloads().values())
        + f"\n  {'all':8} " + ",".join(w.name for w in plan.of_all())
        + ", one after the other, each its own folder\n\n"
        "Examples:\n  lab sweep grep -l 0:20000:5000 -r 1\n"
        "  lab sweep cmd -l 0,200,400 -- tar cf /dev/null /usr/include\n"
        "  lab sweep apache --ns 0,1000,5000,20000 --syscalls futex,epoll_wait\n"
        "  lab sweep grep --ns 0,2000,8000 --set mode=sleep --set where=exit")
    p.add_argument("workload", metavar="WORKLOAD", help="what to sweep (below), or all")
    g = p.add_argument_group("where it runs")
    g.add_argument("--vms", type=int, metavar="N",
                   help="split the points over N VMs at once (GNU parallel), each a part in "
                        "its own boot, merged into one folder; default the free cores on the "
                        "virtual clock, 1 on the host's (which is never split)")
    g.add_argument("--sshloginfile", metavar="FILE",
                   help="run parts on these machines too (GNU parallel's format, ':' for this "
                        "one); each has the lab at this path, the same commit and kernel")
    g.add_argument("--here", action="store_true",
                   help="no VM: the sweep on the running kernel (the lab kernel on hardware, "
                        "or inside the lab's VM; root), on its own clock")
    g.add_argument("-o", "--output", default=str(ROOT / "results"), metavar="DIR",
                   help="parent of the result folders (default results/)")
    g.add_argument("--dry-run", action="store_true",
                   help="print the points each workload would run, one a line, and what "
                        "else it would do (stderr), and stop")
    g.add_argument("--no-analysis", action="store_true",
                   help="leave the summary, model and plot to a later 'lab analyse DIR'")
    g.add_argument("--stage-only", metavar="DIR",
                   help="record the workloads that stage on the host and write what they "
                        "touched to DIR/<workload>.tar, then stop (the guest tests' staging)")
    g.add_argument("--stage-from", metavar="DIR",
                   help="unpack the archives that --stage-only wrote to DIR instead of "
                        "staging now (with --here in the lab's VM: the guest tests')")
    g.add_argument("--part", help=argparse.SUPPRESS)
    g.add_argument("--points", action="append", default=[], help=argparse.SUPPRESS)
    plan.add_options(p)
    return p


def parse(argv):
    """(args, the command after '--')."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    command = argv[cut + 1:] if cut < len(argv) else []
    args = parser().parse_args(argv[:cut])
    if args.vms is not None and args.vms < 1:
        raise cli.BadInput(f"--vms wants a whole number >= 1, not {args.vms}")
    if args.sshloginfile and not os.access(args.sshloginfile, os.R_OK):
        raise cli.BadInput(f"--sshloginfile wants a readable file, not '{args.sshloginfile}'")
    if args.part and (args.vms or args.sshloginfile):
        raise cli.BadInput("--part is one part; --vms and --sshloginfile split a sweep")
    if args.stage_from and (args.stage_only or args.no_stage):
        raise cli.BadInput("--stage-from unpacks archives staged before: no --stage-only "
                           "or --no-stage with it")
    if args.here and (args.vms or args.sshloginfile):
        raise cli.BadInput("--here runs the sweep on this machine's kernel: no --vms or "
                           "--sshloginfile")
    return args, command


def part_points(args, names):
    """{workload: its points} of a part's --points (W:LIST for 'all')."""
    if not args.part:
        if args.points:
            raise cli.BadInput("--points goes with --part K/N (a part of a split sweep)")
        return {}
    m = re.fullmatch(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})", args.part)
    if not m or int(m.group(1)) > int(m.group(2)):
        raise cli.BadInput(f"--part wants K/N, part K of N (1 <= K <= N), not '{args.part}'")
    out = {}
    for text in args.points:
        w, _, values = text.rpartition(":") if args.workload == "all" else ("", "", text)
        w = w or names[0]
        if args.workload == "all" and w not in names:
            raise cli.BadInput(f"all: --points wants W:LIST, a workload's points, not '{text}'")
        if w in out:
            raise cli.BadInput("--points given twice")
        try:
            out[w] = lists.parse_list(values)
        except ValueError as e:
            raise cli.BadInput(f"--points: {e}") from None
    return out


def guest_clock(cmdline=None):
    """The clock of the kernel this runs on: the lab VM's lab.clock=, else
    the host's (plan.kernel_cmdline)."""
    m = re.search(r"\blab\.clock=([a-z]+)", plan.kernel_cmdline(cmdline))
    return m.group(1) if m else "host"


def in_vm():
    """This machine is a hypervisor's guest."""
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and " hypervisor" in line for line in f)


class Sweep(split.Split):
    """One 'lab sweep': the plan, then its steps as methods."""

    def __init__(self, args, command, argv):
        self.args, self.command, self.argv = args, command, list(argv)
        self.lab_vm = None if args.here else os.environ.get("LAB_VM") or str(
            ROOT / "scripts/vm.sh")
        self.output = pathlib.Path(args.output).absolute()
        if self.lab_vm == str(ROOT / "scripts/vm.sh"):
            for what, path in ((f"-o {self.output}", self.output),
                               (f"LAB_BUILD={BUILD}", BUILD.absolute())):
                if path.is_relative_to("/tmp"):
                    raise cli.BadInput(f"{what}: the VM has a /tmp of its own, and what it "
                                       f"writes there would stay in it; give a folder "
                                       f"outside /tmp")
        if args.here:
            self.clock, vm = guest_clock(), in_vm()
        else:
            for k, v in VM_DEFAULTS.items():
                os.environ.setdefault(k, v)
            self.clock = subprocess.run([self.lab_vm, "--clock"], capture_output=True,
                                        text=True, check=True).stdout.strip()
            vm = True
        try:
            chosen = plan.of_all() if args.workload == "all" else [plan.workload(args.workload)]
            mine = part_points(args, [w.name for w in chosen])
            self.plans = [plan.make(args, w, self.clock, vm, command, part=args.part,
                                    points=mine.get(w.name), output=self.output,
                                    command_line=["lab", "sweep", *argv])
                          for w in chosen]
        except plan.BadOption as e:
            raise cli.BadInput(str(e)) from None
        self.workloads = {w.name: w for w in chosen}
        # Staged here for a VM; with --here the runner stages itself if it
        # runs in one, unless --stage-from names archives staged before.
        self.staged = (not args.no_stage and not args.here and not args.stage_from
                       and any(w.stage == "host" for w in chosen))
        if self.staged or args.stage_from:
            for p in self.plans:
                p["STAGE_FROM"] = str(pathlib.Path(args.stage_from or BUILD / "stage").absolute())
        self.plan = [{"workload": p["WORKLOAD"], "points": p["VALUES"],
                      "cost_slope": self.workloads[p["WORKLOAD"]].cost_slope,
                      "stage": "none" if args.no_stage else self.workloads[p["WORKLOAD"]].stage,
                      "scale": p["SCALE"]} for p in self.plans]
        self.described = {p["WORKLOAD"]: self.describe(p) for p in self.plans}
        self.n, self.why = self.split()
        # This sweep's own folders under build/ (its parts, its VM's
        # output): two sweeps at once in one checkout keep apart.
        self.id = f"{args.workload}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"

    def describe(self, p):
        """The workload's own checks of its settings (status 2 on a bad one,
        said by sweep.sh) and what a point does."""
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([str(SWEEP), "--describe", plan.write(p, f"{tmp}/plan")],
                                 capture_output=True, text=True)
        if out.returncode != 0:
            sys.stderr.write(out.stderr)
            raise SystemExit(out.returncode)
        return out.stdout.rstrip("\n")

    def write_plans(self, folder, output=None):
        """Each workload's plan file in @folder, its results into @output
        (default the sweep's); their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        out = []
        for p in self.plans:
            p = {**p, "OUTPUT": str(output or self.output)}
            out.append(str(plan.write(p, folder / f"plan-{p['WORKLOAD']}.sh")))
        return out

    def dry_run(self):
        for p in self.plans:
            print("\n".join(map(str, p["VALUES"])), flush=True)
            n = len(p["VALUES"])
            settings = " ".join(f"{k}={v}" for k, v in zip(p["SET_NAMES"], p["SET_VALUES"]))
            log(f"{p['WORKLOAD']} on the {self.clock} clock: {n} point{'' if n == 1 else 's'} "
                f"of {p['KNOB']}, {p['REPEATS']} runs each{self.described[p['WORKLOAD']]}"
                + (f"; module: {settings}" if settings else ""))
        return 0

    def split(self):
        if self.args.part:
            return 1, "one part"
        n_logins = len(split.logins(self.args.sshloginfile)) if self.args.sshloginfile else None
        return parts.choose_vms(self.plan, self.clock, self.args.vms, n_logins)

    @property
    def total(self):
        return sum(len(b["points"]) for b in self.plan)

    def stage(self, into):
        """The host-staged workloads recorded here and staged @into."""
        with tempfile.TemporaryDirectory() as tmp:
            for p, path in zip(self.plans, self.write_plans(pathlib.Path(tmp))):
                if self.workloads[p["WORKLOAD"]].stage == "host":
                    run([SWEEP, "--stage-only", into, path])

    def prepare(self):
        """Each workload's step on the host (its wl_host: kbuild's tree
        configured) and the host-staged workloads staged, once for the
        machine's checkout (build/stage.lock)."""
        if os.environ.get("LAB_SWEEP_STAGED") == "1" or self.args.here:
            return
        BUILD.mkdir(parents=True, exist_ok=True)
        with open(BUILD / "stage.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with tempfile.TemporaryDirectory() as tmp:
                for path in self.write_plans(pathlib.Path(tmp)):
                    run([SWEEP, "--host", path])
            if self.staged:
                self.stage(BUILD / "stage")

    def boot(self, plans):
        """The sweep's command: in a VM, or with --here on this machine."""
        sweep = [str(SWEEP), *plans]
        return sweep if self.lab_vm is None else [self.lab_vm, "--", *sweep]

    def finish(self, folders):
        """Each new folder's calls by number, from the module's copies."""
        for folder in folders:
            syscalls.windows(folder)

    def run_here(self):
        """The sweep on this machine's kernel, into the output: (status,
        {workload: folder}).  A signal to this process goes to the sweep,
        which puts everything back, as one from the terminal does."""
        with tempfile.TemporaryDirectory() as tmp:
            before = {w: self.latest(w) for w in self.workloads}
            with subprocess.Popen(self.boot(self.write_plans(pathlib.Path(tmp))),
                                  process_group=0, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) as p:
                def forward(signum, _frame):
                    p.send_signal(signum)
                old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    parts.progress(self.total, p.stdout, out=sys.stderr, totals=False,
                                   note=self.notes(self.output))
                    status = p.wait()
                finally:
                    for s, h in old.items():
                        signal.signal(s, h)
        made = {w: self.latest(w) for w in self.workloads
                if self.latest(w) and self.latest(w) != before[w]}
        self.finish(made.values())
        return status, made

    def latest(self, w):
        link = self.output / f"latest-{w}"
        return self.output / os.readlink(link) if link.is_symlink() else None

    def run_serial(self):
        """The sweep in one VM, into a parent folder of its own; its status
        and {workload: its folder, adopted into the output}."""
        own = BUILD / "sweep-out" / self.id
        own.mkdir(parents=True)
        with subprocess.Popen(self.boot(self.write_plans(own / "plans", own)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
            parts.progress(self.total, p.stdout, note=self.notes(own))
        self.finish(own / os.readlink(own / f"latest-{w}") for w in self.workloads
                    if (own / f"latest-{w}").is_symlink())
        made = {}
        for b in self.plan:
            w = b["workload"]
            link = own / f"latest-{w}"
            if link.is_symlink():
                made[w] = self.adopt(own / os.readlink(link), w)
        for left in sorted(own.glob("*.incomplete")):
            kept = self.output / left.name
            shutil.move(left, kept)
            log(f"{left.name[:-len('.incomplete')]}: stopped; what it measured is in {kept}")
        shutil.rmtree(own)
        return p.returncode, made

    def adopt(self, folder, w):
        """@folder, a finished sweep of @w, moved into the output under its
        name (another if that is taken there), results/latest-W pointed at
        it."""
        into = self.output / f"{folder.name}.incomplete"
        if into.exists() or (self.output / folder.name).exists():
            into = pathlib.Path(results.lab("begin", self.output, w))
            into.rmdir()
        shutil.move(folder, into)
        return pathlib.Path(results.lab("commit", into, w))

    def notes(self, folder):
        """What parts.progress adds to each point's line: self.point_note of
        @folder; none where this runs inside the lab's VM (--here in the
        guest), where reading the results between points would put the
        driver's own requests to the host's files into the next point's
        windows."""
        if self.args.here and "lab.clock=" in pathlib.Path("/proc/cmdline").read_text():
            return None
        return lambda k: self.point_note(folder)

    def point_note(self, folder):
        """The latency the point just done added and the time a unit of
        work took there, from the sweep under way in @folder ('' where
        none is readable: a part on another machine)."""
        found = sorted(pathlib.Path(folder).glob("*.incomplete/points.csv"))
        if not found:
            return ""
        try:
            loops, ns = found[-1].read_text().splitlines()[-1].split(",")[:2]
            w = found[-1].parent.name.rsplit("-", 2)[0]
            p = next(p for p in self.plans if p["WORKLOAD"] == w)
            if ns:
                added = f"+{ns} ns requested"
            elif p["CALIBRATE_AFTER"]:
                added = "calibrated after the points"
            elif not p["NS_PER_LOOP"]:
                added = "calibrated by part 1"
            else:
                added = (f"+{float(p['ENTRY_NS']) + int(loops) * float(p['NS_PER_LOOP']):.0f}"
                         f" ns calibrated" if int(loops) else "+0 ns")
            return f"{added}; {progress.point(found[-1].parent / 'raw.csv', loops, ns)}"
        except (OSError, ValueError, KeyError, IndexError, StopIteration, ZeroDivisionError):
            return ""

    def main(self):
        if self.args.dry_run:
            return self.dry_run()
        if self.args.stage_only:
            if self.args.no_stage or all(w.stage != "host" for w in self.workloads.values()):
                raise cli.BadInput(f"--stage-only: {self.args.workload} stages in the guest "
                                   f"(or --no-stage was given): nothing to stage here")
            self.stage(pathlib.Path(self.args.stage_only).absolute())
            return 0
        self.prepare()
        if self.args.part:
            return self.run_part()
        if self.args.here:
            # The runner says what is wrong in one line; it checks root too,
            # but cannot before the output's folder is made.
            if os.geteuid() != 0:
                raise Failed("must run as root (it sets the delay and drops caches)")
            # The runner makes the output's folder once it takes the plan.
            status, made = self.run_here()
        else:
            self.output.mkdir(parents=True, exist_ok=True)
            where = f", over {self.args.sshloginfile}" if self.args.sshloginfile else ""
            s = "" if self.total == 1 else "s"
            log(f"{self.args.workload} on the {self.clock} clock: {self.total} point{s} in "
                f"{self.n} VM{'' if self.n == 1 else 's at once'}{where} ({self.why})")
            status, made = self.run_serial() if self.n == 1 else self.run_split()
        for b in self.plan:
            w = b["workload"]
            if w not in made:
                # Status 2: the guest refused a value and said which.
                if status != 2:
                    log(f"no new {w} sweep (exit status {status})")
                status = status or 1
            elif self.args.no_analysis:
                log(f"analyse with: lab analyse {made[w]}")
            elif analyse.main([str(made[w])]) != 0:
                status = 1
        return status


def run(command):
    """@command, its output passed on; Failed naming it if it fails."""
    sys.stdout.flush()
    if subprocess.run([str(c) for c in command]).returncode != 0:
        raise Failed(f"{command[0]} failed: {' '.join(map(str, command[1:]))}")


def main(argv=None, prog=PROG):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        out = sys.stdout if argv else sys.stderr
        out.write(parser().format_help())
        out.flush()
        return 0 if argv else 2
    try:
        args, command = parse(argv)
        return Sweep(args, command, argv).main()
    except cli.BadInput as e:
        print(f"{prog}: {cli.message(e)}", file=sys.stderr)
        return 2
    except parts.BadPlan as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except (Failed, OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"{prog}: error: {cli.message(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
