"""userspace/calibrate/analyse.py on made-up calibrate folders: the
summary, fits and plot of the format spec, and a refusal of anything that
is not a calibrate folder."""
import csv
import json
import subprocess
import sys

import pytest

from resultdirs import ANALYSERS, calibrate_dir, write_meta

LINES = {"close": (590, 1.5), "getppid": (650, 4.1)}


def analyse(root, *args):
    return subprocess.run([sys.executable, root / ANALYSERS["calibrate"], *map(str, args)],
                          capture_output=True, text=True)


def test_summary_fits_and_plot(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", LINES, loops=(0, 100, 200), batches=5, spread=2.0)
    out = analyse(root, d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["experiment"] == "calibrate" and s["unit"] == "ns"
    assert [(p["syscall"], p["loops"]) for p in s["points"]] == [
        ("close", 0), ("close", 100), ("close", 200),
        ("getppid", 0), ("getppid", 100), ("getppid", 200)]
    p = s["points"][1]
    assert p["n"] == 5 and p["p50"] == pytest.approx(740) and p["min"] == pytest.approx(736)
    assert p["max"] == pytest.approx(744) and p["added"] == pytest.approx(150)
    assert set(p) >= {"mean", "stddev", "p90", "p99", "p999"}
    assert s["points"][0]["added"] == 0
    close = s["fits"]["close"]
    assert close["statistic"] == "p50" and close["n"] == 3
    assert close["intercept"] == pytest.approx(590) and close["slope"] == pytest.approx(1.5)
    assert close["r2"] == pytest.approx(1)
    assert s["fits"]["getppid"]["slope"] == pytest.approx(4.1)
    low = s["fits_min"]["close"]
    assert low["statistic"] == "min" and low["intercept"] == pytest.approx(586)
    assert low["slope"] == pytest.approx(1.5)

    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert len(rows) == 6 and float(rows[2]["fit"]) == pytest.approx(890)
    assert (d / "calibration.png").read_bytes()[:4] == b"\x89PNG"
    assert "1.5000 ns/loop" in out.stdout and "minima" in out.stdout


def test_json_and_no_plot(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", {"close": (600, 3.9)})
    out = analyse(root, d, "--json", "--no-plot")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads((d / "summary.json").read_text())
    assert not (d / "calibration.png").exists()


def test_one_loop_count_has_no_fit(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", {"close": (600, 3.9)}, loops=(0,))
    out = analyse(root, d, "--no-plot")
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["fits"] == {} and s["points"][0]["added"] == 0


@pytest.mark.parametrize("make, message", [
    (lambda d: d.mkdir(), "not a lab result folder"),
    (lambda d: write_meta(d, "irqhook", {}), "not a calibrate one"),
    (lambda d: (calibrate_dir(d, LINES) / "raw.csv").write_text("a,b\n1,2\n"), "no column"),
    (lambda d: (calibrate_dir(d, LINES) / "raw.csv").write_text(
        "syscall,loops,round,batch,calls,ns_per_call\nclose,0,0,0,1000,fast\n"), "line 2"),
    (lambda d: (calibrate_dir(d, LINES) / "raw.csv").unlink(), "raw.csv"),
])
def test_refuses_other_folders(root, tmp_path, make, message):
    d = tmp_path / "x"
    make(d)
    out = analyse(root, d)
    assert out.returncode == 1
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr
    assert not (d / "calibration.png").exists() and not (d / "summary.json").exists()


def test_usage(root, tmp_path):
    assert analyse(root).returncode == 2
    out = analyse(root, "--help")
    assert out.returncode == 0 and "Example:" in out.stdout
