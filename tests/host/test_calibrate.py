"""The calibrate tool's behaviour that needs no patched kernel: its errors,
the result folder it writes, and that it restores the loops parameter.  A
plain file stands in for /sys/module/delay/parameters/loops."""
import csv
import json
import os
import pathlib
import signal
import subprocess
import tempfile
import time

import pytest
import runners


@pytest.fixture(scope="module")
def calibrate(root):
    subprocess.run(["make", "-s", "-C", root / "userspace"], check=True)
    return root / "userspace/calibrate/calibrate"


@pytest.fixture
def param(tmp_path):
    p = tmp_path / "loops"
    p.write_text("42\n")
    return p


def run(calibrate, *args, **kw):
    return subprocess.run([calibrate, *map(str, args)], capture_output=True, text=True, **kw)


def test_help_documents_every_option(calibrate):
    out = run(calibrate, "--help")
    assert out.returncode == 0
    for opt in ("--loops", "--batches", "--calls", "--rounds", "--warmup", "--syscall", "--cpu",
                "--output", "--name", "--param", "Example"):
        assert opt in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--loops", "10:0:5"], "--loops wants a list"),
    (["--loops", "-5"], "--loops wants a list"),
    (["--loops", "a,b"], "--loops wants a list"),
    (["--loops", "0,2000000"], "above the largest allowed"),
    (["-n", "1"], "--batches wants a whole number from 2"),
    (["--rounds", "0"], "--rounds wants a whole number from 1"),
    (["--calls", "-3"], "--calls wants"),
    (["--syscall", "read"], "--syscall wants close, getppid or both"),
    (["-C", "1000"], "--cpu: CPU 1000 is not online"),
    (["--name", "a/b"], "--name wants a folder name"),
    (["stray"], "unexpected argument"),
    (["-x"], "unknown option '-x'"),
    (["--loops"], "--loops wants a value"),
])
def test_bad_options_fail_cleanly(calibrate, param, tmp_path, args, message):
    out = run(calibrate, "--param", param, "-o", tmp_path / "out", *args)
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert not (tmp_path / "out").exists()
    assert param.read_text() == "42\n"


def test_missing_module_is_explained(calibrate, tmp_path):
    out = run(calibrate, "--param", tmp_path / "nope", "-o", tmp_path / "out")
    assert out.returncode == 1
    assert "is the delay module loaded" in out.stderr
    assert not (tmp_path / "out").exists()


def test_non_root_is_refused(calibrate):
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to another user")
    # pytest's own temporary folders are closed to other users.
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        param = pathlib.Path(tmp, "loops")
        param.write_text("42\n")
        param.chmod(0o666)
        out = run(calibrate, "--param", param, "-o", pathlib.Path(tmp, "out"), user=65534,
                  group=65534)
        assert out.returncode == 1
        assert "must run as root" in out.stderr
        assert param.read_text() == "42\n"
        assert not pathlib.Path(tmp, "out").exists()


def only_result(parent):
    link = parent / "latest-calibrate"
    assert link.is_symlink()
    d = parent / os.readlink(link)
    assert sorted(p.name for p in parent.iterdir()) == sorted([d.name, link.name])
    return d


def test_writes_raw_and_meta_and_restores(calibrate, param, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("calibrate needs root")
    out_dir = tmp_path / "res"
    out = run(calibrate, "--param", param, "-o", out_dir, "-l", "0,10:20:10", "-n", "6",
              "--calls", "50", "--rounds", "4", "--syscall", "getppid", "-q")
    assert out.returncode == 0, out.stderr
    d = only_result(out_dir)
    assert d.name.startswith("calibrate-")
    assert sorted(p.name for p in d.iterdir()) == ["meta.json", "raw.csv"]
    rows = list(csv.DictReader(open(d / "raw.csv")))
    assert list(rows[0]) == ["syscall", "loops", "round", "batch", "calls", "ns_per_call"]
    assert len(rows) == 3 * 6
    assert {r["syscall"] for r in rows} == {"getppid"}
    # Six batches a point, shared out over four rounds as 2, 2, 1, 1.
    for loops in ("0", "10", "20"):
        point = [r for r in rows if r["loops"] == loops]
        assert sorted(int(r["batch"]) for r in point) == list(range(6))
        assert [sum(r["round"] == str(k) for r in point) for k in range(4)] == [2, 2, 1, 1]
    assert all(float(r["ns_per_call"]) > 0 and r["calls"] == "50" for r in rows)
    meta = json.load(open(d / "meta.json"))
    assert meta["experiment"] == "calibrate"
    assert meta["settings"]["loops"] == [0, 10, 20] and meta["settings"]["batches"] == 6
    assert meta["settings"]["syscalls"] == ["getppid"]
    assert meta["command"][0].endswith("calibrate") and "-q" in meta["command"]
    assert meta["kernel"]["release"] == os.uname().release
    assert param.read_text() == "42\n", "loops put back as found"


def test_each_run_gets_its_own_folder(calibrate, param, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("calibrate needs root")
    for _ in range(2):
        out = run(calibrate, "--param", param, "-o", tmp_path, "-l", "0,1", "-n", "2",
                  "--calls", "10", "-q")
        assert out.returncode == 0, out.stderr
    runs = sorted(p for p in tmp_path.glob("calibrate-*") if not p.is_symlink())
    assert len(runs) == 2, runs
    assert (tmp_path / "latest-calibrate").resolve() == runs[-1].resolve()


def test_sigint_restores_loops_and_writes_nothing(calibrate, param, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("calibrate needs root")
    out_dir = tmp_path / "res"
    p = subprocess.Popen([calibrate, "--param", param, "-o", out_dir, "-l", "7,8,9",
                          "-n", "100000", "--calls", "1000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while param.read_text().strip() != "7" and time.time() < deadline:
        time.sleep(0.02)
    assert param.read_text().strip() == "7", "calibrate never set loops"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGINT
    assert "interrupted" in err
    assert param.read_text().strip() == "42"
    assert list(out_dir.iterdir()) == [], "an interrupted run leaves no folder"


def test_module_counters_give_module_csv(calibrate, tmp_path):
    """Beside a loops parameter with stats/delayed and stats/spun_ns (a
    module that times its spin), calibrate records what the module counted
    at each point; a stand-in without them gets no module.csv."""
    if os.geteuid() != 0:
        pytest.skip("calibrate needs root")
    mod = tmp_path / "delay"
    (mod / "parameters").mkdir(parents=True)
    (mod / "stats").mkdir()
    (mod / "parameters/loops").write_text("0\n")
    (mod / "stats/delayed").write_text("10\n")
    (mod / "stats/spun_ns").write_text("5000\n")
    out = run(calibrate, "--param", mod / "parameters/loops", "-o", tmp_path / "res", "-l",
              "0,5", "-n", "2", "--calls", "10", "-q")
    assert out.returncode == 0, out.stderr
    d = only_result(tmp_path / "res")
    rows = list(csv.DictReader(open(d / "module.csv")))
    assert [(r["syscall"], r["loops"]) for r in rows] == [
        ("close", "0"), ("getppid", "0"), ("close", "5"), ("getppid", "5")]
    # The stand-in's counters never move: nothing delayed, nothing spun.
    assert all(r["delayed"] == "0" and r["spun_ns"] == "0" for r in rows)


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/calibrate/bench.sh", [], {"RUNS": "1"}, "RUNS wants a whole number >= 2"),
    ("userspace/calibrate/guest.sh", ["--runs", "0"], {}, "--runs wants a whole number >= 1"),
    ("userspace/calibrate/run.sh", ["-o"], {}, "-o wants a value"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_a_missing_kernel_or_device_is_status_1 = runners.missing_kernel_test(
    "userspace/calibrate/guest.sh", ["--runs", "2"], "has no syscall hook")


test_the_runner_finds_the_calibrations_folder = runners.guest_folder_test(
    "calibrate", "calibrate", "calibrate", ["-l", "0:700:100", "-o", "out", "-q"])
