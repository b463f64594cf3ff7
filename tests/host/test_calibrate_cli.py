"""The calibrate tool's behaviour that needs no patched kernel: its errors,
the files it writes, and that it restores the loops parameter.  A plain
file stands in for /sys/module/delay/parameters/loops."""
import csv
import json
import os
import pathlib
import signal
import subprocess
import tempfile
import time

import pytest


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
    for opt in ("--loops", "--calls", "--batches", "--rounds", "--warmup", "--syscall", "--cpu",
                "--output", "--param", "--no-plot", "Example"):
        assert opt in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--loops", "10:0:5"], "bad loop list"),
    (["--loops", "-5"], "bad loop list"),
    (["--loops", "a,b"], "bad loop list"),
    (["--batches", "1"], "--batches wants a whole number >= 2"),
    (["--rounds", "0"], "--rounds wants a whole number >= 1"),
    (["--calls", "-3"], "--calls wants"),
    (["--syscall", "read"], "--syscall is close, getppid or both"),
    (["stray"], "unexpected argument"),
])
def test_bad_options_fail_cleanly(calibrate, param, tmp_path, args, message):
    out = run(calibrate, "--param", param, "-o", tmp_path / "out", *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert not (tmp_path / "out").exists()
    assert param.read_text() == "42\n"


def test_missing_module_is_explained(calibrate, tmp_path):
    out = run(calibrate, "--param", tmp_path / "nope", "-o", tmp_path)
    assert out.returncode == 1
    assert "is the delay module loaded" in out.stderr


def test_non_root_is_refused(calibrate):
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to another user")
    # pytest's own temporary folders are closed to other users.
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        param = pathlib.Path(tmp, "loops")
        param.write_text("42\n")
        param.chmod(0o666)
        out = run(calibrate, "--param", param, "-o", tmp, user=65534, group=65534)
        assert out.returncode == 1
        assert "must run as root" in out.stderr
        assert param.read_text() == "42\n"


def test_writes_csv_json_and_restores(calibrate, param, tmp_path, root):
    if os.geteuid() != 0:
        pytest.skip("calibrate needs root")
    out_dir = tmp_path / "res"
    env = dict(os.environ, LAB_PYTHON=str(root / ".venv/bin/python"))
    out = run(calibrate, "--param", param, "-o", out_dir, "-l", "0:20:10", "-b", "3",
              "-c", "200", "-w", "1", env=env)
    assert out.returncode == 0, out.stderr
    assert param.read_text().strip() == "42"
    assert "fit close" in out.stdout and "fit getppid" in out.stdout
    rows = list(csv.DictReader(open(out_dir / "calibration.csv")))
    assert [(r["syscall"], int(r["loops"])) for r in rows] == [
        (s, n) for n in (0, 10, 20) for s in ("close", "getppid")]
    assert all(int(r["n"]) == 3 and float(r["median_ns"]) > 0 for r in rows)
    data = json.load(open(out_dir / "calibration.json"))
    assert set(data["fits"]) == {"close", "getppid"}
    assert len(data["points"]) == 6
    assert data["fits"]["close"]["points"] == 3
    png = (out_dir / "calibration.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out_dir.glob("*.tmp"))


def test_sigint_restores_loops_and_writes_nothing(calibrate, param, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("calibrate needs root")
    out_dir = tmp_path / "res"
    p = subprocess.Popen([calibrate, "--param", param, "-o", out_dir, "-l", "7,8,9",
                          "-b", "100000", "-c", "1000", "--no-plot"],
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
    assert not (out_dir / "calibration.csv").exists()
    assert not (out_dir / "calibration.json").exists()
