"""lablib.calibrate.analyse on made-up calibrate folders: the
summary, fits and plot README.md describes, and a refusal of anything that
is not a calibrate folder."""
import csv
import json
import random
import subprocess
import sys

import pytest

import plotcheck
import lablib.calibrate.analyse
from resultdirs import ANALYSERS, calibrate_dir, write_csv, write_meta

LINES = {"close": (590, 1.5), "getppid": (650, 4.1)}


def analyse(root, *args):
    return subprocess.run([sys.executable, "-m", ANALYSERS["calibrate"], *map(str, args)],
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
    # The fit that counts goes through each point's p10: 3.2 ns below the line here.
    close = s["fits"]["close"]
    assert close["statistic"] == "p10" and close["method"] == "robust" and close["n"] == 3
    assert close["intercept"] == pytest.approx(586.8) and close["slope"] == pytest.approx(1.5)
    assert close["r2"] == pytest.approx(1) and close["outliers"] == []
    assert s["fits"]["getppid"]["slope"] == pytest.approx(4.1)
    med = s["fits_p50"]["close"]
    assert med["statistic"] == "p50" and med["intercept"] == pytest.approx(590)
    low = s["fits_min"]["close"]
    assert low["statistic"] == "min" and low["intercept"] == pytest.approx(586)
    assert low["slope"] == pytest.approx(1.5)

    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert len(rows) == 6 and float(rows[2]["fit"]) == pytest.approx(886.8)
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
    (lambda d: write_meta(d, "sundial", {}), "not a calibrate one"),
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


def spoil(d, loops, factor, share=1.0):
    """Slow down @share of the batches of the points at @loops by @factor,
    as a slow spell of the host would."""
    rows = list(csv.DictReader(open(d / "raw.csv")))
    for r in rows:
        if int(r["loops"]) in loops and int(r["batch"]) >= (1 - share) * 20:
            r["ns_per_call"] = str(float(r["ns_per_call"]) * factor)
    with open(d / "raw.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def fits_of(root, d):
    out = analyse(root, d, "--no-plot")
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    return s["fits"]["close"], s["fits_p50"]["close"], out.stdout


def test_one_spoiled_point_cannot_tilt_the_fit(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", {"close": (600, 3.9)}, loops=range(0, 701, 50),
                      batches=20, spread=1.0)
    # Every batch of one point 40 % slow: the host was busy all through it.
    spoil(d, {550}, 1.4)
    fit, median_fit, text = fits_of(root, d)
    assert fit["outliers"] == [550]
    assert fit["slope"] == pytest.approx(3.9, rel=0.002)
    assert fit["r2"] >= 0.999
    # Least squares through every median is pulled by the same point.
    assert abs(median_fit["slope"] / 3.9 - 1) > 0.02 and median_fit["r2"] < 0.99
    assert "left out: loops 550" in text


def test_slow_batches_move_the_median_not_the_fit(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", {"close": (600, 3.9)}, loops=range(0, 701, 50),
                      batches=20, spread=1.0)
    # Most batches of the upper points slowed by 2x (a noisy spell at the end).
    spoil(d, set(range(400, 701, 50)), 2.0, share=0.6)
    fit, median_fit, _ = fits_of(root, d)
    assert fit["slope"] == pytest.approx(3.9, rel=0.002) and fit["r2"] >= 0.999
    assert fit["outliers"] == []
    assert median_fit["slope"] > 3.9 * 1.2


def test_without_outliers_the_robust_fit_is_least_squares(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", {"close": (600, 3.9)}, loops=range(0, 701, 100),
                      batches=20, spread=1.0)
    fit, median_fit, _ = fits_of(root, d)
    assert fit["outliers"] == [] and fit["n"] == 8
    assert fit["slope"] == pytest.approx(median_fit["slope"])


def test_bench_report_gives_the_spread_within_and_across_boots(root, tmp_path):
    slopes = {"boot-1": [3.90, 3.92, 3.88], "boot-2": [4.20, 4.22, 4.18]}
    for boot, values in slopes.items():
        for i, slope in enumerate(values, 1):
            run = tmp_path / boot / f"run-{i}"
            run.mkdir(parents=True)
            fit = {"intercept": 600, "slope": slope, "r2": 0.9995, "n": 15}
            (run / "summary.json").write_text(json.dumps(
                {"fits": {"close": fit}, "fits_p50": {"close": {**fit, "r2": 0.97}}}))
    out = subprocess.run([sys.executable, "-m", "lablib.calibrate.bench_report", tmp_path],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    b = json.loads((tmp_path / "bench.json").read_text())
    close = b["fits"]["fits"]["syscalls"]["close"]
    one = close["within_boot"]["boot-1"]["slope"]
    assert one["n"] == 3 and one["mean"] == pytest.approx(3.90)
    assert one["cv"] == pytest.approx(0.02 / 3.90, rel=1e-6)
    across = close["across_boots"]["slope"]
    assert across["n"] == 2 and across["mean"] == pytest.approx(4.05)
    assert close["within_boot"]["boot-2"]["r2"]["min"] == pytest.approx(0.9995)
    assert "ABOVE TARGET" not in out.stdout and "boots" in out.stdout
    assert out.stdout.startswith((tmp_path / "bench.txt").read_text())


def test_bench_report_flags_a_slope_that_wanders(root, tmp_path):
    for i, slope in enumerate([3.0, 3.5, 4.0], 1):
        run = tmp_path / "boot-1" / f"run-{i}"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps(
            {"fits": {"getppid": {"intercept": 1, "slope": slope, "r2": 0.99, "n": 5}}}))
    out = subprocess.run([sys.executable, "-m", "lablib.calibrate.bench_report", tmp_path],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ABOVE TARGET" in out.stdout


def test_the_cost_of_entering_the_delay_is_measured(root, tmp_path):
    """A delayed call pays the module's clock reads before its first loop:
    the points above 0 lie 150 ns above the line through loops 0."""
    d = calibrate_dir(tmp_path / "c", {"close": (600, 2.0)}, loops=range(0, 701, 50),
                      batches=20, spread=1.0)
    rows = list(csv.DictReader(open(d / "raw.csv")))
    for r in rows:
        if r["loops"] != "0":
            r["ns_per_call"] = str(float(r["ns_per_call"]) + 150)
    with open(d / "raw.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    fit, _, text = fits_of(root, d)
    s = json.loads((d / "summary.json").read_text())
    assert fit["slope"] == pytest.approx(2.0, rel=0.002) and fit["outliers"] == [0]
    assert s["entry_ns"] == pytest.approx(150, abs=1)
    assert "costs 150.0 ns before its first loop" in text
    from lablib.experiments import calibration
    assert calibration.added_ns(s, 0) == 0
    assert calibration.added_ns(s, 100) == pytest.approx(150 + 200, abs=1)


def test_the_modules_measure_stands_beside_the_calibrated_latency(root, tmp_path):
    d = calibrate_dir(tmp_path / "c", {"close": (600, 2.0)}, loops=(0, 100, 200), batches=5,
                      spread=1.0)
    (d / "module.csv").write_text("syscall,loops,delayed,spun_ns\nclose,0,0,0\n"
                                  "close,100,1000,210000\nclose,200,1000,380000\n")
    _, _, text = fits_of(root, d)
    pts = {p["loops"]: p for p in json.loads((d / "summary.json").read_text())["points"]}
    assert pts[0]["measured_ns"] is None and pts[0]["calibrated_ns"] is None
    assert pts[100]["measured_ns"] == 210 and pts[100]["calibrated_ns"] == pytest.approx(200)
    assert pts[100]["measured_vs_calibrated"] == pytest.approx(0.05)
    assert pts[200]["measured_vs_calibrated"] == pytest.approx(-0.05)
    assert "100 loops: measured     210.0 ns, calibrated     200.0 ns (+5.0 %)" in text


def realistic_calibrate_dir(d, seed=1):
    """A calibration shaped like the README's (getppid and close, 0..700
    loops in steps of 50, 20 batches a point, a few per cent of noise and
    now and then a batch slowed by an interrupt): the lab kernel is needed
    for a real one."""
    rng = random.Random(seed)
    loops = list(range(0, 701, 50))
    write_meta(d, "calibrate", {"loops": loops, "calls": 1000, "batches": 20, "rounds": 1,
                                "warmup": 100, "cpu": 0, "syscalls": ["getppid", "close"]})
    rows = []
    for name, a, b in (("getppid", 620, 1.38), ("close", 700, 1.39)):
        for n in loops:
            for i in range(20):
                slow = 1.5 if rng.random() < 0.05 else 1.0
                rows.append((name, n, 0, i, 1000, (a + b * n) * rng.lognormvariate(0, 0.03)
                             * slow))
    write_csv(d / "raw.csv", ("syscall", "loops", "round", "batch", "calls", "ns_per_call"),
              rows)
    return d


def test_plot_is_readable(root, tmp_path, monkeypatch):
    mod = lablib.calibrate.analyse
    d = realistic_calibrate_dir(tmp_path / "c")
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("calibrate", "x", mod.add_args, mod.work, [str(d)]) == 0
    [ax] = figures["calibration.png"]
    plotcheck.assert_readable([ax])
    assert ax["xscale"] == ax["yscale"] == "linear"
    for name in ("close", "getppid"):
        entries = [e for e in ax["legend"] if e.startswith(name)]
        assert len(entries) == 3, ax["legend"]      # medians, p10s, the fit
    # Where it was measured, as every experiment's picture says; the axes
    # title short, the batches and calls.
    head = ax["figure_title"]
    assert head.startswith("calibrate: ") and "\nkernel 6.12.test-lab" in head, head
    assert ax["title"] == "20 batches x 1000 calls per point", ax["title"]
