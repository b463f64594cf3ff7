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
  plan     sweep.sh --plan checks every option of the sweep (status 2 on a
           bad one) and says, for each workload of it, its points, their
           cost, where it stages and its scale, on the guest's clock
  split    how many VMs run at once and which points each part runs
           (lablib.sweep.parts: balance, choose_vms)
  prepare  kbuild's object tree configured here; the workloads that stage
           on the host recorded here under strace into build/stage/
           (sweep.sh --stage-only), which the guest unpacks into memory
  boot     one VM (scripts/vm.sh) for the whole sweep, or with N parts, N
           at once through GNU parallel (on this machine or, with
           --sshloginfile, on others), each part's folder merged into one
           (lablib.sweep.parts.merge)
  analyse  lablib.sweep.analyse on each workload's new folder

While the VMs run, their lines pass through, and after each point the
whole sweep's progress in the host's time (lablib.sweep.parts.progress).
Environment: VM_CLOCK (default auto: virtual under TCG), VM_MEM,
VM_TIMEOUT, VM_VIRTUAL_CPUS (scripts/vm.sh); LAB_VM, the VM runner
(default scripts/vm.sh; the tests give a stand-in)."""
import argparse
import contextlib
import fcntl
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from lablib import cli, results
from lablib.sweep import analyse, parts

ROOT = pathlib.Path(__file__).resolve().parents[1]
SWEEP = ROOT / "workloads/sweep.sh"
BUILD = pathlib.Path(os.environ.get("LAB_BUILD", ROOT / "build"))
PROG = "lab sweep"
# The VM's defaults for a sweep: a whole sweep takes a while under TCG
# ('all' is three), the guest holds the staged files in memory (a
# kbuild's: 650 MB), and one vCPU on the virtual clock (its instruction
# count is global: with two, a reply's time includes the other's turns).
VM_DEFAULTS = {"VM_TIMEOUT": "21600", "VM_MEM": "4G", "VM_CLOCK": "auto",
               "VM_VIRTUAL_CPUS": "1"}
# What a part passes on to its boot, wherever it runs.
PART_ENV = ("VM_CLOCK", "VM_MEM", "VM_TIMEOUT", "VM_VIRTUAL_CPUS", "VARIANT", "LAB_VM")


class Failed(Exception):
    """A step that failed, said in one line (exit status 1)."""


def log(message):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def parser():
    p = argparse.ArgumentParser(
        prog=PROG, usage=f"{PROG} WORKLOAD [options] [SWEEP-OPTIONS] [-- COMMAND...]",
        allow_abbrev=False,
        description=__doc__.split("\n\n")[1], add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="SWEEP-OPTIONS are the guest's (-l, --ns, -r, --syscalls, --set ...), "
               "below.\n\nExample:\n  lab sweep grep -l 0:20000:5000 -r 1")
    p.add_argument("workload", metavar="WORKLOAD", help="what to sweep (below), or all")
    p.add_argument("-h", "--help", action="store_true", help="this text and the sweep's options")
    p.add_argument("--vms", type=int, metavar="N",
                   help="split the points over N VMs at once (GNU parallel), each a part in "
                        "its own boot, merged into one folder; default the free cores on the "
                        "virtual clock, 1 on the host's (which is never split)")
    p.add_argument("--sshloginfile", metavar="FILE",
                   help="run parts on these machines too (GNU parallel's format, ':' for this "
                        "one); each has the lab at this path, the same commit and kernel")
    p.add_argument("--here", action="store_true",
                   help="no VM: the sweep on the running kernel (the lab kernel on hardware; "
                        "root), on the host's clock, unstaged")
    p.add_argument("-o", "--output", default=str(ROOT / "results"), metavar="DIR",
                   help="parent of the result folders (default results/)")
    p.add_argument("--part", help=argparse.SUPPRESS)
    p.add_argument("--points", action="append", default=[], help=argparse.SUPPRESS)
    return p


def parse(argv):
    """(args, the sweep's own options, the command after '--')."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    command = argv[cut + 1:] if cut < len(argv) else []
    args, rest = parser().parse_known_args(argv[:cut])
    for bad in ("--stage-only", "--stage-from", "--plan"):
        if bad in rest:
            raise cli.BadInput(f"{bad} is sweep.sh's; {PROG} plans and stages itself")
    if args.vms is not None and args.vms < 1:
        raise cli.BadInput(f"--vms wants a whole number >= 1, not {args.vms}")
    if args.sshloginfile and not os.access(args.sshloginfile, os.R_OK):
        raise cli.BadInput(f"--sshloginfile wants a readable file, not '{args.sshloginfile}'")
    if args.part and (args.vms or args.sshloginfile):
        raise cli.BadInput("--part is one part; --vms and --sshloginfile split a sweep")
    if args.here and (args.vms or args.sshloginfile or args.part):
        raise cli.BadInput("--here runs the sweep on this machine's kernel, in one piece: "
                           "no --vms, --sshloginfile or --part")
    return args, rest, command


def logins(path):
    """The machines of an sshloginfile: its lines but comments and blanks."""
    names = [line.split("#")[0].strip() for line in pathlib.Path(path).read_text().splitlines()]
    names = [n for n in names if n]
    if not names:
        raise cli.BadInput(f"--sshloginfile {path} names no machine")
    return names


class Sweep:
    """One 'lab sweep': the plan, then its steps as methods."""

    def __init__(self, args, rest, command):
        self.args, self.command = args, command
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
            self.clock = "host"
            self.sweep_args = ["--no-stage", *rest]
        else:
            for k, v in VM_DEFAULTS.items():
                os.environ.setdefault(k, v)
            self.clock = subprocess.run([self.lab_vm, "--clock"], capture_output=True,
                                        text=True, check=True).stdout.strip()
            # The guest is a VM: its scale, unless given (a later --scale wins).
            self.sweep_args = ["--scale", "vm", *rest]
        self.points = [a for p in args.points for a in ("--points", p)]
        self.plan = self.read_plan()
        self.n, self.why = self.split()
        # This sweep's own folders under build/ (its parts, its VM's
        # output): two sweeps at once in one checkout keep apart.
        self.id = f"{args.workload}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"

    def sweep_sh(self, *extra, command=True):
        """sweep.sh's command line for this sweep with @extra options."""
        return [str(SWEEP), self.args.workload, *self.sweep_args, *extra,
                *(["--", *self.command] if command and self.command else [])]

    def read_plan(self):
        """sweep.sh --plan's checks and blocks, as the guest will see them."""
        with tempfile.NamedTemporaryFile("w", suffix=".cmdline") as cmdline:
            cmdline.write(f"lab.clock={self.clock}\n")
            cmdline.flush()
            part = ["--part", self.args.part] if self.args.part else []
            out = subprocess.run(self.sweep_sh(*self.points, *part, "--plan"),
                                 capture_output=True, text=True,
                                 env={**os.environ, "LAB_CMDLINE": cmdline.name})
        if out.returncode != 0:
            sys.stderr.write(out.stderr)
            raise SystemExit(out.returncode)
        return parts.read_plan(out.stdout)

    def split(self):
        if self.args.part:
            return 1, "one part"
        n_logins = len(logins(self.args.sshloginfile)) if self.args.sshloginfile else None
        return parts.choose_vms(self.plan, self.clock, self.args.vms, n_logins)

    @property
    def total(self):
        return sum(len(b["points"]) for b in self.plan)

    def prepare(self):
        """kbuild's tree configured and the host-staged workloads staged,
        once for the machine's checkout (build/stage.lock)."""
        if os.environ.get("LAB_SWEEP_STAGED") == "1":
            return
        BUILD.mkdir(parents=True, exist_ok=True)
        with open(BUILD / "stage.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for b in self.plan:
                if b["workload"] == "kbuild":
                    run([ROOT / "workloads/kbuild-prepare.sh", b["scale"],
                         BUILD / f"kbuild-{b['scale']}", BUILD / "src/linux-source-6.12"])
            if any(b["stage"] == "host" for b in self.plan):
                run(self.sweep_sh("--stage-only", BUILD / "stage"))

    def stage_args(self):
        staged = any(b["stage"] == "host" for b in self.plan)
        return ["--stage-from", str(BUILD / "stage")] if staged else []

    def boot(self, *extra):
        """The sweep's command: in a VM, or with --here on this machine."""
        sweep = self.sweep_sh(*self.stage_args(), *extra)
        return sweep if self.lab_vm is None else [self.lab_vm, "--", *sweep]

    def run_part(self):
        """One part of a split sweep: its folder (PART_OUTPUT), no analysis."""
        out = pathlib.Path(os.environ.get("PART_OUTPUT") or self.output)
        out.mkdir(parents=True, exist_ok=True)
        where = os.environ.get("PARALLEL_SSHLOGIN", ":")
        (out / "where").write_text(("local" if where == ":" else where) + "\n")
        sys.stdout.flush()
        os.execv(self.lab_vm, self.boot("--part", self.args.part, *self.points, "-o", str(out)))

    def run_serial(self):
        """The sweep in one VM, into a parent folder of its own; its status
        and {workload: its folder, adopted into the output}."""
        own = BUILD / "sweep-out" / self.id
        own.mkdir(parents=True)
        with subprocess.Popen(self.boot("--no-analysis", "-o", str(own)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
            parts.progress(self.total, p.stdout)
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

    def part_commands(self, parts_dir):
        """The shell command line of each part, the same on any machine."""
        env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in PART_ENV
                       if os.environ.get(k))
        shares = [(b["workload"], parts.balance(b["points"], self.n, b["cost_slope"]))
                  for b in self.plan]
        lines = []
        for k in range(1, self.n + 1):
            points = []
            for w, share in shares:
                text = ",".join(map(str, share[k - 1]))
                points += ["--points", f"{w}:{text}"
                           if self.args.workload == "all" else text]
            me = [str(ROOT / ".venv/bin/python"), "-m", "lablib.sweep.driver",
                  self.args.workload, *self.sweep_args, "--part", f"{k}/{self.n}", *points,
                  *(["--", *self.command] if self.command else [])]
            lines.append(
                f"cd {shlex.quote(os.getcwd())} && env {env} "
                f"PART_OUTPUT={shlex.quote(str(parts_dir / str(k)))} "
                f"LAB_SWEEP_STAGED=$([ \"$PARALLEL_SSHLOGIN\" = : ] && echo 1 || echo 0) "
                + " ".join(shlex.quote(a) for a in me))
        return lines

    def run_split(self):
        """The parts at once with GNU parallel, each workload's merged into
        a new folder: (0, or 1 with the parts kept; {workload: folder})."""
        if not shutil.which("parallel"):
            raise Failed("GNU parallel is not installed ('make deps')")
        parts_dir = BUILD / "sweep-parts" / self.id
        parts_dir.mkdir(parents=True)
        log(f"{self.args.workload}: the parts in {parts_dir}")
        (parts_dir / "commands").write_text("\n".join(self.part_commands(parts_dir)) + "\n")
        par = ["parallel", "--line-buffer", "--halt", "now,fail=1", "--tagstring",
               f"part {{#}}/{self.n}"]
        if self.args.sshloginfile:
            par += ["--sshloginfile", self.args.sshloginfile, "--jobs", "1", "--workdir",
                    str(ROOT), "--return", f"{parts_dir}/{{#}}", "--cleanup"]
            if os.environ.get("LAB_SSH"):
                par += ["--ssh", os.environ["LAB_SSH"]]
        else:
            par += ["--jobs", str(self.n)]
        with open(parts_dir / "commands") as todo, subprocess.Popen(
                par, stdin=todo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True) as p:
            parts.progress(self.total, p.stdout)
        if p.returncode != 0:
            log(f"a part failed (exit status {p.returncode}); the parts are in {parts_dir}")
            return 1, {}
        made = {}
        for b in self.plan:
            folder = self.merge(b["workload"], parts_dir)
            if folder:
                made[b["workload"]] = folder
        if len(made) == len(self.plan):
            shutil.rmtree(parts_dir)
        return (0 if len(made) == len(self.plan) else 1), made

    def merge(self, w, parts_dir):
        folders, where = [], {}
        for k in range(1, self.n + 1):
            link = parts_dir / str(k) / f"latest-{w}"
            if not link.is_symlink():
                log(f"{w}: part {k} left no result in {parts_dir / str(k)}")
                return None
            folders.append(parts_dir / str(k) / os.readlink(link))
            w_file = parts_dir / str(k) / "where"
            where[k] = w_file.read_text().strip() if w_file.is_file() else "unknown"
        self.output.mkdir(parents=True, exist_ok=True)
        into = pathlib.Path(results.lab("begin", self.output, w))
        try:
            parts.merge(into, folders, where)
        except (parts.Refused, ValueError, OSError) as e:
            log(f"{w}: the parts could not be merged ({cli.message(e)}); they are in "
                f"{parts_dir}")
            return None
        done = results.lab("commit", into, w)
        log(f"{w}: {self.n} parts merged into {done}")
        return pathlib.Path(done)

    def main(self):
        self.prepare()
        if self.args.part:
            self.run_part()
        self.output.mkdir(parents=True, exist_ok=True)
        where = f", over {self.args.sshloginfile}" if self.args.sshloginfile else ""
        if self.args.here:
            log(f"{self.args.workload} on this machine's kernel ({os.uname().release}), its "
                f"own clock: {self.total} points")
        else:
            log(f"{self.args.workload} on the {self.clock} clock: {self.total} points in "
                f"{self.n} VM{'' if self.n == 1 else 's at once'}{where} ({self.why})")
        status, made = self.run_serial() if self.n == 1 else self.run_split()
        for b in self.plan:
            w = b["workload"]
            if w not in made:
                log(f"no new {w} sweep (exit status {status})")
                status = status or 1
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
        if argv:
            out.write("\nThe sweep's own options, those of workloads/sweep.sh in the guest:\n\n")
            out.flush()
            subprocess.run([str(SWEEP), "--help"])
        return 0 if argv else 2
    try:
        args, rest, command = parse(argv)
        return Sweep(args, rest, command).main()
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
