"""A sweep split into parts (lab sweep --vms N; each part a --part K/N
--points LIST of its own) merges into the files a serial sweep writes: lablib.sweep.parts
merge on parts cut from a real sweep, and lab sweep's whole path (GNU
parallel, the merge, the analysis) with a stand-in for the VM, on this
machine and on a 'remote' one reached through a stand-in for ssh."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from lablib.sweep import parts

# A real grep sweep on the virtual clock, 9 points of 5 runs
# (tests/host/data/README.md).
SERIAL = pathlib.Path(__file__).parent / "data/workloads/grep-virtual"
LOOPS = "0:6000:750"
CSVS = ("raw.csv", "points.csv")

# The VM's stand-in: prints the clock for 'vm.sh --clock'; for
# 'vm.sh -- sweep.sh PLAN' it writes the result folder that the runner
# would, cut from FAKE_SWEEP: every point of the sweep, or a part's (the
# plan's VALUES), with the settings and logs a part has.
FAKE_VM = f"#!{sys.executable}\n" + r'''
import csv, json, os, pathlib, shutil, subprocess, sys
from lablib.sweep import plan as sweep_plan
args = sys.argv[1:]
if args == ["--clock"]:
    print(os.environ.get("FAKE_CLOCK", "virtual"))
    sys.exit(0)
assert args[0] == "--" and len(args) == 3, args
plan = sweep_plan.read(args[2])
w, out, part, points = plan["WORKLOAD"], pathlib.Path(plan["OUTPUT"]), plan["PART"], plan["VALUES"]
src = pathlib.Path(os.environ["FAKE_SWEEP"])
k = int(part.split("/")[0]) if part else 1
folder = out / f"{w}-20261126-00000{k}"
folder.mkdir(parents=True)
meta = json.loads((src / "meta.json").read_text())
if part:
    meta["settings"]["part"] = part
    meta["settings"]["part_points"] = points
    meta["settings"]["delay_cgroup"] = f"/lab-sweep-{100 + k}"
if k == 1:
    shutil.copytree(src / "calibration", folder / "calibration")
(folder / "logs").mkdir()
for log in (src / "logs").iterdir():
    tag = log.name.split("-")[1] if log.name.count("-") >= 2 else None
    if tag is None or int(tag[1:]) in points:
        if tag is not None or k == 1:
            shutil.copy(log, folder / "logs" / log.name)
# A log that every part writes, different in each.
(folder / "logs" / "stage.txt").write_text(f"staged in part {k}\n")
(folder / "meta.json").write_text(json.dumps(meta))
for name in ("raw.csv", "points.csv"):
    lines = (src / name).read_text().splitlines(keepends=True)
    col = next(csv.reader([lines[0]])).index("loops")
    keep = [l for l in lines[1:] if int(next(csv.reader([l]))[col]) in points]
    (folder / name).write_text(lines[0] + "".join(keep))
(out / f"latest-{w}").symlink_to(folder.name)
'''


def merge(root, into, *parts, status=0):
    r = subprocess.run([sys.executable, "-m", "lablib.sweep.parts", "merge", into, *parts],
                       capture_output=True, text=True)
    assert r.returncode == status, r.stderr
    return r


def cut(root, tmp_path, n, stub):
    """The parts 1..N of SERIAL, as the stand-in VM writes them."""
    out = []
    shares = parts.balance(list(range(0, 6001, 750)), n)
    for k in range(1, n + 1):
        d = tmp_path / f"part{k}"
        subprocess.run([sys.executable, "-m", "lablib.sweep.driver", "grep", "-l", LOOPS,
                        "--part", f"{k}/{n}", "--points", ",".join(map(str, shares[k - 1])),
                        "-o", d], check=True,
                       env={**os.environ, "FAKE_SWEEP": str(SERIAL), "LAB_VM": str(stub),
                            "LAB_BUILD": str(tmp_path / "build")})
        out.append(d / os.readlink(d / "latest-grep"))
    return out


def write_stub(folder):
    path = folder / "fake-vm"
    path.write_text(FAKE_VM)
    path.chmod(0o755)
    return path


@pytest.fixture
def stub(tmp_path):
    return write_stub(tmp_path)


@pytest.fixture(scope="module")
def two_parts_cut(root, tmp_path_factory):
    """SERIAL's two parts, cut once for the tests that spoil a copy."""
    d = tmp_path_factory.mktemp("two-parts")
    return cut(root, d, 2, write_stub(d))


@pytest.fixture
def two_parts(two_parts_cut, tmp_path):
    """A copy of the two parts of SERIAL, this test's own to change."""
    return [shutil.copytree(p, tmp_path / f"part{k}" / p.name, symlinks=True)
            for k, p in enumerate(two_parts_cut, 1)]


@pytest.mark.parametrize("n", [2, 3, 9])
def test_parts_merge_into_the_serial_files(root, tmp_path, stub, n):
    parts = cut(root, tmp_path, n, stub)
    # Each part has its share of the points, as long to run as the others'
    # (cost 1 + value / the last value, part 1 a tenth of a point more for
    # its calibration), and only part 1 calibrated.
    shares = []
    for k, p in enumerate(parts, 1):
        points = json.loads((p / "meta.json").read_text())["settings"]["part_points"]
        shares.append(points)
        assert points and points == sorted(points)
        assert (p / "calibration").exists() == (k == 1)
    assert sorted(v for s in shares for v in s) == list(range(0, 6001, 750))
    loads = [sum(1 + v / 6000 for v in s) + (0.1 if k == 0 else 0) for k, s in enumerate(shares)]
    assert max(loads) - min(loads) <= 1
    into = tmp_path / "merged"
    into.mkdir()
    merge(root, into, *reversed(parts))
    for name in CSVS:
        assert (into / name).read_bytes() == (SERIAL / name).read_bytes(), name
    assert sorted(os.listdir(into / "logs")) == sorted(os.listdir(SERIAL / "logs") + ["stage.txt"])
    assert (into / "logs/stage.txt").read_text() == "staged in part 1\n"
    for k in range(2, n + 1):
        assert (into / f"parts/{k}/logs/stage.txt").read_text() == f"staged in part {k}\n"
        assert (into / f"parts/{k}/meta.json").exists()
    split = json.loads((into / "parts.json").read_text())
    assert split["parts"] == n and split["where"] == {str(k): "local" for k in range(1, n + 1)}
    assert sorted(v for p in split["points"].values() for v in p) == list(range(0, 6001, 750))
    # The analysis takes the merged folder as a sweep.
    r = subprocess.run([sys.executable, "-m", "lablib.sweep.analyse", into],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"Measured in {n} parts" in (into / "report.txt").read_text()


def edit_meta(folder, change):
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("spoil, message", [
    (lambda m: m.update(lab_commit="0" * 40), "lab_commit"),
    (lambda m: m["kernel"].update(release="6.12.1-other"), "kernel release"),
    (lambda m: m["machine"]["clock"].update(kind="host"), "machine clock"),
    (lambda m: m["settings"].update(repeats=3), "setting repeats"),
    (lambda m: m["settings"].update(part="1/2"), "both part 1/2"),
    (lambda m: m["settings"].update(part_points=[0, 750, 1500, 3000, 5250, 6000]), "in parts"),
    (lambda m: m["settings"].update(stage={"files": 2, "bytes": 9}), "staged files"),
])
def test_parts_of_another_sweep_are_refused(root, tmp_path, two_parts, spoil, message):
    parts = two_parts
    edit_meta(parts[1], spoil)
    into = tmp_path / "merged"
    into.mkdir()
    r = merge(root, into, *parts, status=1)
    assert message in r.stderr
    assert not any(into.iterdir())


def test_parts_staged_in_their_own_boots_merge(root, tmp_path, two_parts):
    """Where each part stages in its own boot (Apache), its recording may
    see a call more or less for the same files: they still merge."""
    parts = two_parts
    stage = {"files": 34, "bytes": 13131165, "traced_calls": 619, "seconds": 15.0}
    edit_meta(parts[0], lambda m: m["settings"].update(stage=stage))
    edit_meta(parts[1], lambda m: m["settings"].update(stage={**stage, "traced_calls": 620,
                                                              "seconds": 19.8}))
    into = tmp_path / "merged"
    into.mkdir()
    merge(root, into, *parts)
    assert json.loads((into / "meta.json").read_text())["settings"]["stage"] == stage


def test_a_missing_part_is_refused(root, tmp_path, stub):
    parts = cut(root, tmp_path, 3, stub)
    into = tmp_path / "merged"
    into.mkdir()
    r = merge(root, into, parts[0], parts[2], status=1)
    assert "missing: 2" in r.stderr
    r = merge(root, into, SERIAL, status=1)
    assert "not a part" in r.stderr


def sweep_vm(root, tmp_path, stub, *args, **env):
    return subprocess.run([sys.executable, "-m", "lablib.lab", "sweep", "grep", "-l", LOOPS,
                           "--no-stage", "-o", tmp_path / "results", *map(str, args)],
                          capture_output=True, text=True,
                          env={**os.environ, "LAB_VM": str(stub), "FAKE_SWEEP": str(SERIAL),
                               "LAB_BUILD": str(tmp_path / "build"), **env}, timeout=300)


def test_a_split_sweep_runs_merges_and_analyses(root, tmp_path, stub):
    r = sweep_vm(root, tmp_path, stub, "--vms", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "grep on the virtual clock: 9 points in 2 VMs at once (--vms 2)" in r.stderr
    # The whole sweep's progress after each point of a part ... (the stand-in
    # prints none) and the merged, analysed folder.
    folder = tmp_path / "results" / os.readlink(tmp_path / "results/latest-grep")
    for name in CSVS:
        assert (folder / name).read_bytes() == (SERIAL / name).read_bytes()
    assert (folder / "summary.json").exists() and (folder / "grep.png").exists()
    assert not any((tmp_path / "build/sweep-parts").iterdir())


def test_two_sweeps_at_once_keep_their_own_folders(root, tmp_path, stub):
    """Each sweep's VM writes into a parent of its own under build/, and
    its finished folder is moved into results/: two sweeps at once in one
    checkout analyse their own, not whichever moved latest-grep last."""
    env = {**os.environ, "LAB_VM": str(stub), "FAKE_SWEEP": str(SERIAL),
           "LAB_BUILD": str(tmp_path / "build")}
    command = [sys.executable, "-m", "lablib.lab", "sweep", "grep", "-l", LOOPS, "--no-stage",
               "--vms", "1", "-o", str(tmp_path / "results")]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env) for _ in range(2)]
    outs = [r.communicate(timeout=300) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
    folders = sorted(p for p in (tmp_path / "results").iterdir()
                     if p.is_dir() and not p.is_symlink())
    assert len(folders) == 2 and all((f / "summary.json").is_file() for f in folders)
    assert (tmp_path / "results/latest-grep").resolve() in folders
    assert not any((tmp_path / "build/sweep-out").iterdir())


def test_a_split_sweep_needs_the_virtual_clock(root, tmp_path, stub):
    r = sweep_vm(root, tmp_path, stub, "--vms", "2", FAKE_CLOCK="host")
    assert r.returncode == 2
    assert "only on the virtual clock" in r.stderr
    # Without --vms on the host's clock: one VM, no split.
    r = sweep_vm(root, tmp_path, stub, FAKE_CLOCK="host")
    assert r.returncode == 0, r.stderr
    assert "parts" not in r.stderr


# ssh's stand-in: 'ssh [options] HOST COMMAND...' runs COMMAND here, but in
# a mount namespace of its own where the sweep's parts folder is another
# folder (REMOTE_PARTS): what a part writes 'there' comes back only
# through GNU parallel's --return.  Like sshd it sets SHELL to the login
# shell, which GNU parallel's remote wrapper runs the command with (a CI
# job may have no SHELL of its own).
FAKE_SSH = r'''#!/usr/bin/env bash
set -euo pipefail
SHELL=$(getent passwd "$(id -u)" | cut -d: -f7)
export SHELL
while [ $# -gt 0 ]; do
	case $1 in
	-[lpoiFSJEBcDLRW]) shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
shift
[ "${1:-}" != -- ] || shift
exec unshare -m bash -c 'mount --bind "$1" "$2" && shift 2 && exec bash -c "$*"' \
	fake-ssh "$REMOTE_PARTS" "$LOCAL_PARTS" "$@"
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="the ssh stand-in mounts (root)")
def test_parts_on_another_machine_come_back(root, tmp_path, stub):
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    (tmp_path / "remote-parts").mkdir()
    (tmp_path / "build/sweep-parts").mkdir(parents=True)
    logins = tmp_path / "logins"
    logins.write_text("# one remote machine and this one\nremote.example\n:\n")
    r = sweep_vm(root, tmp_path, stub, "--sshloginfile", logins, LAB_SSH=str(ssh),
                 REMOTE_PARTS=str(tmp_path / "remote-parts"),
                 LOCAL_PARTS=str(tmp_path / "build/sweep-parts"))
    assert r.returncode == 0, r.stdout + r.stderr
    folder = tmp_path / "results" / os.readlink(tmp_path / "results/latest-grep")
    for name in CSVS:
        assert (folder / name).read_bytes() == (SERIAL / name).read_bytes()
    where = json.loads((folder / "parts.json").read_text())["where"]
    assert sorted(where.values()) == ["local", "remote.example"]


@pytest.mark.parametrize("args, message", [
    (["--vms", "0"], "--vms"),
    (["--vms", "x"], "--vms"),
    (["--vms", "2", "--part", "1/2"], "--part is one part"),
    (["--sshloginfile", "/nonexistent"], "readable file"),
    (["--part", "3/2"], "1 <= K <= N"),
    (["--part", "1/10"], "leave some empty"),
])
def test_bad_split_arguments(root, tmp_path, stub, args, message):
    r = sweep_vm(root, tmp_path, stub, *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert not (tmp_path / "results/latest-grep").exists()


def test_an_empty_login_file_is_refused(root, tmp_path, stub):
    logins = tmp_path / "logins"
    logins.write_text("# nobody\n\n")
    r = sweep_vm(root, tmp_path, stub, "--sshloginfile", logins)
    assert r.returncode == 2 and "names no machine" in r.stderr


def sweep_progress(total, lines, ticks):
    """All that lablib.sweep.parts' progress filter writes for these lines, the
    host's time taken from ticks (the start, then each point's line)."""
    out = []

    class Out:
        def write(self, s):
            out.append(s)

        def flush(self):
            pass
    ticks = iter(ticks)
    parts.progress(total, lines, Out(), lambda: next(ticks))
    return out


def test_progress_of_the_whole_sweep(root):
    """In the host's time: a part's own times are its guest's."""
    lines = ["part 1/2\tsweep.sh: part 1/2: [1/2] loops=750 (...); elapsed 0m05s, ETA 0m05s\n",
             "part 2/2\tvm.sh: booting\n",
             "part 2/2\tsweep.sh: part 2/2: [1/3] loops=0 (...); elapsed 0m04s, ETA 0m08s\n",
             "part 2/2\tsweep.sh: part 2/2: [2/3] loops=0 (...); elapsed 0m08s, ETA 0m04s\n",
             "part 1/2\tsweep.sh: part 1/2: [2/2] loops=2250 (...); elapsed 0m10s, ETA 0m00s\n"]
    # The start, then each point's line.
    out = sweep_progress(5, lines, [0, 100, 130, 190, 200])
    assert all(line in "".join(out) for line in lines)
    totals = [s for s in out if s.startswith("lab sweep: the sweep")]
    # Part 2: 60 s a point on the host, one point left.  No estimate before
    # a part's second point.
    assert totals == [
        "lab sweep: the sweep: 1 of 5 points; elapsed 1m40s\n",
        "lab sweep: the sweep: 2 of 5 points; elapsed 2m10s\n",
        "lab sweep: the sweep: 3 of 5 points; elapsed 3m10s, ETA at least 1m00s\n",
        "lab sweep: the sweep: 4 of 5 points; elapsed 3m20s, ETA 0m50s\n"]


def test_progress_of_a_serial_sweep_of_two_workloads(root):
    """One VM, its lines untagged; the second workload counts from 1 again."""
    lines = ["sweep.sh: [1/2] loops=0 (...); elapsed 0m05s, ETA 0m05s (guest time)\n",
             "sweep.sh: [2/2] loops=750 (...); elapsed 0m10s, ETA 0m00s (guest time)\n",
             "sweep.sh: calibrating\n",
             "sweep.sh: [1/3] loops=0 (...); elapsed 0m04s, ETA 0m08s (guest time)\n"]
    out = sweep_progress(5, lines, [0, 100, 160, 220])
    totals = [s for s in out if s.startswith("lab sweep: the sweep")]
    # 60 s a point on the host after the first: two of the five left.
    assert totals == [
        "lab sweep: the sweep: 1 of 5 points; elapsed 1m40s\n",
        "lab sweep: the sweep: 2 of 5 points; elapsed 2m40s, ETA 3m00s\n",
        "lab sweep: the sweep: 3 of 5 points; elapsed 3m40s, ETA 2m00s\n"]


PLAN = [{"workload": "kbuild", "points": [0, 1500, 3000], "cost_slope": 1.0, "stage": "host",
         "scale": "vm"},
        {"workload": "apache", "points": [0, 1000, 2000, 3000, 4000], "cost_slope": -0.4,
         "stage": "guest", "scale": "vm"}]


@pytest.mark.parametrize("kwargs, n, why", [
    (dict(cores=2, loadavg=0.1), 2, "the virtual clock: 2 cores, load average 0.10, 2 free"),
    # Another sweep's load still in the average: one VM, and it says so.
    (dict(cores=2, loadavg=1.2), 1, "1 free (something else holds the rest; --vms N"),
    (dict(cores=8, loadavg=0), 3, "8 free; no more parts than the 3 points of a workload"),
    (dict(vms=2), 2, "--vms 2"),
    (dict(logins=3), 3, "one a machine of the login file's 3"),
])
def test_a_sweep_says_how_many_vms_and_why(kwargs, n, why):
    got, said = parts.choose_vms(PLAN, "virtual", **kwargs)
    assert got == n and why in said


def test_the_host_clock_runs_one_vm_and_refuses_more():
    plan = PLAN
    n, why = parts.choose_vms(plan, "host", cores=8, loadavg=0)
    assert n == 1 and "host clock" in why
    with pytest.raises(parts.BadPlan, match="only on the virtual clock"):
        parts.choose_vms(plan, "host", vms=2)


def test_the_plan_deals_each_workload_its_own_points():
    plan = PLAN
    assert [(b["workload"], b["stage"]) for b in plan] == [("kbuild", "host"),
                                                           ("apache", "guest")]
    got = {b["workload"]: parts.balance(b["points"], 2, b["cost_slope"]) for b in plan}
    assert got == {"kbuild": [[0, 1500], [3000]], "apache": [[0, 1000], [2000, 3000, 4000]]}


@pytest.mark.parametrize("values, n, slope", [
    (list(range(0, 6001, 750)), 2, 1), (list(range(0, 6001, 750)), 3, 1),
    (list(range(0, 8001, 1000)), 2, -0.4), (list(range(0, 12001, 1500)), 4, 1),
    ([0, 10, 20000], 2, 1), ([0, 5], 2, 1),
])
def test_the_parts_take_about_as_long(values, n, slope):
    """Every point in exactly one part, none empty, and no part dearer than
    another by more than its dearest point: a move or swap would have
    helped otherwise."""
    shares = parts.balance(values, n, slope)
    assert sorted(v for s in shares for v in s) == values and all(shares)
    top = max(values)

    def cost(v):
        return 1 + slope * v / top

    loads = [sum(map(cost, s)) + (0.1 if k == 0 else 0) for k, s in enumerate(shares)]
    assert max(loads) - min(loads) <= max(map(cost, values))
    # The same on every machine: a pure function of its arguments.
    assert parts.balance(list(reversed(values)), n, slope) == shares


def test_more_parts_than_points_are_refused():
    with pytest.raises(parts.BadPlan, match="leave some empty"):
        parts.balance([0, 1], 3)
