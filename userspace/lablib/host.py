"""The machine the lab's runners run on: how many of its cores are free
for VMs (the split sweeps' parts, make ab's boots), the runs that GNU
parallel runs there side by side, and where its cgroup2 hierarchy is."""
import os
import pathlib
import shlex
import shutil
import subprocess
import tempfile


def free_cores(cores=None, loadavg=None):
    """(free, cores, load): the cores less the 1-minute load average,
    rounded, at least 1."""
    cores = cores or os.cpu_count() or 1
    if loadavg is None:
        loadavg = float(pathlib.Path("/proc/loadavg").read_text().split()[0])
    return max(1, cores - int(loadavg + 0.5)), cores, loadavg


def cgroup2_mount(mounts="/proc/self/mounts"):
    """Where the cgroup2 hierarchy is mounted (a Path), or None: at
    /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid
    one."""
    for line in pathlib.Path(mounts).read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return pathlib.Path(fields[1])
    return None


def job_line(env, command, parent, log, done):
    """One run as a shell command line for GNU parallel: in a fresh
    @parent folder, @command (a list) under @env ({name: value}), its
    output to @log, then @done printed."""
    settings = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = " ".join(shlex.quote(str(c)) for c in command)
    return (f"mkdir -p {shlex.quote(str(parent))} && env {settings} {cmd} "
            f"> {shlex.quote(str(log))} 2>&1 && echo {shlex.quote(done)}")


def need_parallel():
    """FileNotFoundError unless GNU parallel is installed."""
    if not shutil.which("parallel"):
        raise FileNotFoundError("GNU parallel is not installed (make deps installs it)")


def parallel(lines, jobs, joblog, on_line=None):
    """Run the command @lines (job_line's) @jobs at a time with GNU
    parallel, its joblog in @joblog, stopping soon after one fails; its
    exit status.  The jobs' output goes to stdout, or with @on_line each
    line of it (without its newline) to on_line(line) as it comes."""
    need_parallel()
    command = ["parallel", "--will-cite", "-j", str(jobs), "--line-buffer", "--joblog",
               str(joblog), "--halt", "soon,fail=1"]
    with tempfile.TemporaryFile("w+") as todo:
        todo.write("".join(line + "\n" for line in lines))
        todo.seek(0)
        if on_line is None:
            return subprocess.run(command, stdin=todo).returncode
        with subprocess.Popen(command, stdin=todo, stdout=subprocess.PIPE, text=True) as p:
            for line in p.stdout:
                on_line(line.rstrip("\n"))
        return p.returncode


def result_of(parent, what):
    """The one result folder (a folder with a meta.json, not a latest-*
    link nor the .incomplete folder of a run that stopped) that a runner
    made in @parent; ValueError naming @what if there is none or more
    than one."""
    parent = pathlib.Path(parent)
    found = [p for p in parent.iterdir()
             if p.is_dir() and not p.is_symlink() and not p.name.endswith(".incomplete")
             and (p / "meta.json").is_file()] if parent.is_dir() else []
    if len(found) != 1:
        raise ValueError(f"{what}: {len(found)} result folders in {parent}")
    return found[0]
