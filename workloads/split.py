"""A split sweep: its parts at once through GNU parallel (on this machine
or, with --sshloginfile, on others), each a 'lab sweep --part K/N
--points LIST' of its own, their folders merged into one
(lablib.sweep.parts.merge).  The methods of lab sweep's Sweep that a
split needs (lablib.sweep.driver)."""
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from lablib import cli, results
from lablib.sweep import parts

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAB_BUILD", ROOT / "build"))
# What a part passes on to its boot, wherever it runs.
PART_ENV = ("VM_CLOCK", "VM_MEM", "VM_TIMEOUT", "VM_VIRTUAL_CPUS", "VARIANT", "LAB_VM")


class Failed(Exception):
    """A step that failed, said in one line (exit status 1)."""


def log(message):
    print(f"lab sweep: {message}", file=sys.stderr, flush=True)


def logins(path):
    """The machines of an sshloginfile: its lines but comments and blanks."""
    names = [line.split("#")[0].strip() for line in pathlib.Path(path).read_text().splitlines()]
    names = [n for n in names if n]
    if not names:
        raise cli.BadInput(f"--sshloginfile {path} names no machine")
    return names


class Split:
    """A sweep's parts (mixed into lablib.sweep.driver's Sweep)."""

    def run_part(self):
        """One part of a split sweep: its folder (PART_OUTPUT), no analysis;
        the exit status."""
        out = pathlib.Path(os.environ.get("PART_OUTPUT") or self.output)
        out.mkdir(parents=True, exist_ok=True)
        where = os.environ.get("PARALLEL_SSHLOGIN", ":")
        (out / "where").write_text(("local" if where == ":" else where) + "\n")
        sys.stdout.flush()
        with subprocess.Popen(self.boot(self.write_plans(out / "plans", out)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
            # The whole sweep's progress is the parent's: this part's own only.
            parts.progress(len(self.plan[0]["points"]), p.stdout,
                           out=sys.stderr if self.args.here else sys.stdout,
                           note=self.notes(out), totals=False)
        status = p.returncode
        self.finish(out / os.readlink(out / f"latest-{w}") for w in self.workloads
                    if (out / f"latest-{w}").is_symlink())
        return status

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
                  *self.argv_of_part(), "--part", f"{k}/{self.n}", *points,
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
            # Each part adds its own points' notes (it knows its plan, and
            # its folder may be on another machine).
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

    def argv_of_part(self):
        """This sweep's options for a part: the command line's but those that
        split it."""
        out, skip = [], False
        for a in self.argv[:self.argv.index("--") if "--" in self.argv else None]:
            if skip:
                skip = False
            elif a in ("--vms", "--sshloginfile"):
                skip = True
            elif not a.startswith(("--vms=", "--sshloginfile=")):
                out.append(a)
        return out
