"""The delay module's cgroup parameter: only the tasks of the target cgroup
v2 (and its descendants) are delayed and counted; bad paths are refused
and the old target kept."""
import errno
import os
import pathlib
import subprocess

import pytest

from conftest import MODDIR, ROOT, ko, read_int, write_param

CGROUP = MODDIR / "parameters/cgroup"
CALLS = MODDIR / "stats/calls"


def cgroup2_root():
    for line in open("/proc/mounts"):
        dev, mnt, fstype = line.split()[:3]
        if fstype == "cgroup2":
            return pathlib.Path(mnt)
    pytest.fail("cgroup2 is not mounted")


@pytest.fixture
def target():
    """A cgroup with a child, removed afterwards: (dir, name, child dir)."""
    root = cgroup2_root()
    cg = root / f"labtest-{os.getpid()}"
    child = cg / "child"
    child.mkdir(parents=True)
    yield cg, "/" + cg.name, child
    for d in (child, cg):
        for pid in (d / "cgroup.procs").read_text().split():
            (root / "cgroup.procs").write_text(pid)
        d.rmdir()


def nullcall(cgroup_dir=None):
    """ns per getppid() of a fresh process on CPU 0, run in cgroup_dir."""
    cmd = ["taskset", "-c", "0", ROOT / "userspace/calibrate/nullcall", "getppid", "2000", "9"]
    pre = None
    if cgroup_dir is not None:
        procs = str(cgroup_dir / "cgroup.procs")

        def pre():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, preexec_fn=pre)
    return float(out.stdout)


def test_only_the_target_cgroup_is_delayed(delay, target):
    cg, name, child = target
    assert CGROUP.read_text() == "\n"
    assert write_param(name, CGROUP) == 0
    assert CGROUP.read_text() == name + "\n"
    write_param("0")
    base_out, base_in = nullcall(), nullcall(cg)
    write_param("20000")
    calls0 = read_int(CALLS)
    outside = nullcall()
    calls_outside = read_int(CALLS) - calls0
    inside, in_child = nullcall(cg), nullcall(child)
    write_param("0")
    # 20000 loops are tens of microseconds; the noise is far below that.
    assert inside > base_in + 5000, f"inside: {base_in:.0f} -> {inside:.0f} ns"
    assert in_child > base_in + 5000, f"child: {base_in:.0f} -> {in_child:.0f} ns"
    assert outside < base_out * 1.5 + 200, f"outside: {base_out:.0f} -> {outside:.0f} ns"
    # The outside run's 18000 calls are not counted (a stray task of the
    # target cgroup would be: there is none).
    assert calls_outside < 1000, calls_outside


def test_empty_target_means_every_task(delay, target):
    cg, name, _ = target
    assert write_param(name, CGROUP) == 0
    assert write_param("\n", CGROUP) == 0
    assert CGROUP.read_text() == "\n"
    write_param("0")
    base = nullcall()
    write_param("20000")
    slow = nullcall()
    write_param("0")
    assert slow > base + 5000, f"{base:.0f} -> {slow:.0f} ns"


@pytest.mark.parametrize("path,err", [
    ("labtest-relative", errno.EINVAL),
    ("/no/such/cgroup", errno.ENOENT),
    ("/cgroup.procs", errno.ENOTDIR),
    ("/" + "x" * 3000, errno.ENOENT),
])
def test_bad_paths_are_refused_and_the_old_target_kept(delay, target, path, err):
    _, name, _ = target
    assert write_param(name, CGROUP) == 0
    assert write_param(path, CGROUP) == err
    assert CGROUP.read_text() == name + "\n"


def test_target_survives_rmdir_and_unload(delay, target):
    cg, name, child = target
    assert write_param(name + "/child", CGROUP) == 0
    child.rmdir()
    child.mkdir()   # the fixture removes it again
    assert CGROUP.read_text() == name + "/child\n"
    subprocess.run(["rmmod", "delay"], check=True)
    subprocess.run(["insmod", ko("delay"), f"cgroup={name}"], check=True)
    assert CGROUP.read_text() == name + "\n"
