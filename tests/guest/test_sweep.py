"""workloads/sweep.sh in the patched kernel: short sweeps of every workload
slow down with the delay and leave complete, parseable result folders; bad
input fails with one line and leaves nothing behind."""
import csv
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import MODDIR, ROOT, read_int

SWEEP = ROOT / "workloads/sweep.sh"


def sweep(*args, out, check=True, **kw):
    r = subprocess.run([SWEEP, *args[:1], "-o", out, *args[1:]], capture_output=True,
                       text=True, **kw)
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def result_dir(out, workload):
    dirs = [d for d in pathlib.Path(out).iterdir() if d.name.startswith(workload + "-")]
    assert len(dirs) == 1, dirs
    assert not dirs[0].name.endswith(".incomplete"), dirs[0]
    return dirs[0]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """A quick calibration shared by the sweeps below."""
    out = tmp_path_factory.mktemp("cal")
    subprocess.run(["insmod", ROOT / "modules/delay/delay.ko"], check=True)
    try:
        subprocess.run([ROOT / "userspace/calibrate/calibrate", "-l", "0:4000:2000", "-b", "10",
                        "-c", "2000", "--cpu", "0", "-o", out, "--no-plot", "-q"], check=True)
    finally:
        subprocess.run(["rmmod", "delay"], check=True)
    return out / "calibration.json"


def check_results(d, workload, measures):
    """Every file of a finished sweep is there and parses; returns the summary."""
    for name in ("raw.csv", "summary.csv", "summary.json", "settings.json",
                 "calibration.json", "report.txt", f"{workload}.png"):
        assert (d / name).stat().st_size > 0, name
    assert (d / f"{workload}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    settings = json.loads((d / "settings.json").read_text())
    assert settings["workload"] == workload and settings["kernel"] == os.uname().release
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert {r["measure"] for r in raw} == set(measures)
    assert all(float(r["seconds"]) > 0 and int(r["syscalls"]) > 0 for r in raw)
    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert {r["measure"] for r in rows} == set(measures)
    summary = json.loads((d / "summary.json").read_text())
    assert summary["workload"] == workload
    assert not MODDIR.exists(), "the sweep loaded the module and must unload it"
    return summary


def slower_at_max(summary, measure):
    pts = sorted(summary["measures"][measure]["points"], key=lambda p: p["loops"])
    first, last = pts[0], pts[-1]
    assert first["loops"] == 0 and last["added_ns"] > 0
    assert last["throughput_mean"] < first["throughput_mean"], (measure, first, last)
    model = summary["measures"][measure]["model"]
    assert model["syscalls_per_unit"] > 0 and model["predicted_slowdown"] > 1
    return first, last


def test_cmd_sweep_calibrates_and_slows_down(tmp_path):
    # 40000 one-byte reads and writes; 20000 loops add tens of us to each.
    sweep("cmd", "-l", "0,20000", "-r", "1", "--", "dd", "if=/dev/zero", "of=/dev/null",
          "bs=1", "count=20000", out=tmp_path)
    d = result_dir(tmp_path, "cmd")
    summary = check_results(d, "cmd", ["cmd"])
    slower_at_max(summary, "cmd")
    cal = json.loads((d / "calibration.json").read_text())
    assert [p["loops"] for p in cal["points"] if p["syscall"] == "getppid"] == [0, 20000]
    # dd makes two system calls a byte, and the count says so.
    assert 40000 <= summary["measures"]["cmd"]["model"]["syscalls_per_unit"] < 41000


def test_grep_sweep(tmp_path, calibration):
    # A few hundred system calls: a large delay to stand out of the noise.
    sweep("grep", "-s", "small", "-l", "0,200000", "-r", "1", "-c", calibration, out=tmp_path)
    summary = check_results(result_dir(tmp_path, "grep"), "grep", ["grep"])
    slower_at_max(summary, "grep")


def test_apache_sweep(tmp_path, calibration):
    sweep("apache", "-l", "0,20000", "-r", "1", "--step-seconds", "2", "-c", calibration,
          out=tmp_path)
    d = result_dir(tmp_path, "apache")
    summary = check_results(d, "apache", ["reply", "saturation"])
    slower_at_max(summary, "reply")
    slower_at_max(summary, "saturation")
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert all(int(r["errors"]) == 0 for r in raw if r["loops"] == "0"), raw
    assert (d / "saturation.csv").exists() and (d / "httpd.conf").exists()
    # httpd was stopped and its cgroup removed.
    assert subprocess.run(["pgrep", "-f", "lab-sweep"], capture_output=True).returncode == 1


def test_kbuild_sweep(tmp_path, calibration):
    # About 80000 system calls a build; 100000 loops add some 30 s.
    sweep("kbuild", "-s", "small", "-l", "0,100000", "-r", "1", "-c", calibration,
          out=tmp_path)
    summary = check_results(result_dir(tmp_path, "kbuild"), "kbuild", ["build"])
    slower_at_max(summary, "build")


BAD = [
    (["nosuch"], "unknown workload"),
    (["grep", "-l", "0:abc"], "bad loop list"),
    (["grep", "-l", "0,100,50"], "bad loop list"),
    (["grep", "-l", "0,2000000"], "bad loop list"),
    (["grep", "-l", "50,100"], "must start at 0"),
    (["grep", "-r", "0"], "--repeats"),
    (["grep", "--bogus"], "unknown option"),
    (["grep", "-c", "/nonexistent.json"], "no calibration file"),
    (["cmd"], "needs a command"),
    (["grep", "-t", "/nonexistent"], "no Linux tree"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_fails_cleanly(tmp_path, clean_module, args, message):
    r = sweep(*args, out=tmp_path / "out", check=False)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and message in lines[0], r.stderr
    assert not (tmp_path / "out").exists()
    assert not MODDIR.exists()


def test_non_root_is_refused(tmp_path):
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        SWEEP, "cmd", "-o", tmp_path / "out", "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "must run as root" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_missing_module_is_refused(tmp_path, clean_module):
    # A copy of the scripts with no built module beside them.
    for d in ("workloads", "scripts"):
        shutil.copytree(ROOT / d, tmp_path / d)
    r = subprocess.run([tmp_path / "workloads/sweep.sh", "cmd", "-o", tmp_path / "out", "--",
                        "true"], capture_output=True, text=True)
    assert r.returncode != 0 and "neither loaded nor built" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_interrupted_sweep_restores_the_module(tmp_path, calibration, delay):
    (MODDIR / "parameters/loops").write_text("7")
    p = subprocess.Popen([SWEEP, "cmd", "-o", tmp_path, "-c", calibration,
                          "-l", "0,10,20", "-r", "20", "--", "sleep", "0.2"],
                         stderr=subprocess.PIPE, text=True)
    # Wait for the first point, then interrupt.
    for line in p.stderr:
        if "[1/3]" in line:
            break
    p.send_signal(2)
    rest = p.stderr.read()
    assert p.wait() == 130, rest
    assert read_int(MODDIR / "parameters/loops") == 7
    assert (MODDIR / "parameters/cgroup").read_text() == "\n"
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and left[0].name.endswith(".incomplete"), left
    assert "what was measured is in" in rest
