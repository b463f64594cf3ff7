"""The delay module's cgroup parameter: only the tasks of the target cgroup
v2 (and its descendants) are delayed and counted; bad paths are refused
and the old target kept."""
import errno
import multiprocessing
import os
import subprocess
import sys
import time

import pytest

from conftest import MODDIR, ROOT, cgroup2_root, insmod, kernel_problems, read_int, rmmod, \
    wait_for_no_dying, write_param

CGROUP = MODDIR / "parameters/cgroup"
CALLS = MODDIR / "stats/calls"
NR_GETPPID = 110


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


@pytest.mark.timing
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


@pytest.mark.timing
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


def getppids_counted(cgroup_dir, n=5000):
    """How many of @n getppid() calls of a fresh process in @cgroup_dir
    the module counted (its filter set to getppid alone)."""
    calls0 = read_int(CALLS)
    subprocess.run([sys.executable, "-c", f"import os\nfor _ in range({n}): os.getppid()"],
                   check=True, preexec_fn=lambda: (cgroup_dir / "cgroup.procs").write_text(
                       str(os.getpid())))
    return read_int(CALLS) - calls0


def test_a_removed_target_says_so_and_is_let_go(delay, scratch_cgroups):
    """rmdir of the target: the parameter says it is gone, the module lets
    the dead cgroup go, and a new cgroup of the same path is not the
    target until the path is written again."""
    parent, (cg, _) = scratch_cgroups
    name = f"/{parent.name}/{cg.name}"
    assert write_param(str(NR_GETPPID), MODDIR / "parameters/syscalls") == 0
    assert write_param(name, CGROUP) == 0
    assert getppids_counted(cg) == 5000
    cg.rmdir()
    assert wait_for_no_dying(parent) == 0, "the module keeps the removed cgroup"
    assert CGROUP.read_text() == name + " (deleted)\n"
    cg.mkdir()
    assert CGROUP.read_text() == name + " (deleted)\n"
    assert getppids_counted(cg) == 0, "a new cgroup of the old path was delayed"
    assert write_param(name, CGROUP) == 0
    assert CGROUP.read_text() == name + "\n"
    assert getppids_counted(cg) == 5000


def test_target_survives_unload_and_reload(delay, target):
    _, name, _ = target
    assert write_param(name + "/child", CGROUP) == 0
    rmmod()
    insmod("delay", f"cgroup={name}")
    assert CGROUP.read_text() == name + "\n"


@pytest.mark.parametrize("how", ["bad loops", "hook taken"])
def test_a_failed_load_releases_its_cgroup(scratch_cgroups, how):
    """insmod with a target that then fails must not keep the cgroup: once
    removed, it must die for good, not linger as a dying descendant."""
    parent, (cg, _) = scratch_cgroups
    if how == "hook taken":
        insmod("hooktest")
        failed = insmod("delay", f"cgroup=/{parent.name}/{cg.name}", check=False)
        rmmod("hooktest")
    else:
        failed = insmod("delay", f"cgroup=/{parent.name}/{cg.name}", "loops=abc", check=False)
    assert failed.returncode != 0 and not MODDIR.exists(), failed
    cg.rmdir()
    assert wait_for_no_dying(parent) == 0, "the failed load kept a reference on the cgroup"


def _write_parameters(stop, names):
    """Replace the target and the set until @stop, whatever each write says
    (the files go away and come back as the module is unloaded and loaded)."""
    values = [("cgroup", names[0]), ("syscalls", "0-3,39"), ("cgroup", names[1]),
              ("syscalls", "\n"), ("cgroup", "")]
    i = 0
    while not stop.is_set():
        name, value = values[i % len(values)]
        i += 1
        write_param(value, MODDIR / "parameters" / name)


def test_parameter_writes_racing_unload(scratch_cgroups):
    """Two processes replace the cgroup target and the syscall set while the
    module is loaded and unloaded 30 times: the target and set belong to
    whoever holds them last and are freed once, so nothing is freed twice
    (the kernel log stays clean) and no cgroup reference is lost or kept."""
    parent, dirs = scratch_cgroups
    names = [f"/{parent.name}/{d.name}" for d in dirs]
    stop = multiprocessing.Event()
    writers = [multiprocessing.Process(target=_write_parameters, args=(stop, names))
               for _ in range(2)]
    for w in writers:
        w.start()
    try:
        for i in range(30):
            insmod("delay", f"cgroup={names[i % 2]}", "syscalls=110")
            time.sleep(0.02)
            rmmod()
    finally:
        stop.set()
        for w in writers:
            w.join(timeout=60)
    assert all(w.exitcode == 0 for w in writers)
    assert kernel_problems() == []
    for d in dirs:
        d.rmdir()
    assert wait_for_no_dying(parent) == 0, "a cgroup reference was kept"
