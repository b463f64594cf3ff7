"""userspace/clocks: its report (lablib.clocks.analyse) puts the figures
of analysed result folders side by side by clock, and run.sh refuses bad
arguments before it boots anything.  The folders are made as the tools
make them and analysed by the experiments' own analysers; the
virtual-clock calibration is a real one (tests/host/data/clocks/vcal-2)."""
import csv
import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from resultdirs import (HOST_MACHINE, analysed, calibrate_dir, clocks_report, machine,
                        write_csv, write_meta)

DATA = ROOT / "tests/host/data"
REPORT = "lablib.clocks.analyse"
RUN = ROOT / "userspace/clocks/run.sh"


def report(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", REPORT, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", ROOT / "userspace/lib"], check=True)


# --- result folders, one experiment each --------------------------------------------

def host_calibration(d, slope=4.0):
    calibrate_dir(d, {"close": (300, slope), "getppid": (320, slope + 0.2)},
                  loops=(0, 100, 200, 300))
    meta = json.loads((d / "meta.json").read_text())
    meta["machine"] = machine("host")
    (d / "meta.json").write_text(json.dumps(meta))
    return analysed("lablib.calibrate.analyse", d)


def virtual_calibration(d):
    shutil.copytree(DATA / "clocks/vcal-2", d)
    return d


def rt_compare(d, clock, kernels):
    """An rt-compare folder as run.sh makes it: its own meta.json written
    on the host (no clock), each kernel folder's in the guest; @kernels:
    {name: capture} of tests/host/data/rt-tests: "a" or "b" (cyclictest
    idle and loaded) or "delay" (the delay member's holds)."""
    write_meta(d, "rt-compare", {"variants": ",".join(kernels), "vm": True},
               machine=HOST_MACHINE)
    for name, capture in kernels.items():
        k = write_meta(d / name, "rt-compare", {"variant": name.split("-")[0]},
                       machine=machine(clock))
        write_csv(k / "skipped.csv", ("member", "reason"), [])
        if capture == "delay":
            (k / "delay" / "spin-entry").mkdir(parents=True)
            for ns in (0, 50000):
                shutil.copy(DATA / f"rt-tests/delay/{name}-ns-{ns}.json",
                            k / "delay" / "spin-entry" / f"ns-{ns}.json")
        else:
            (k / "cyclictest").mkdir()
            for load in ("idle", "loaded"):
                shutil.copy(DATA / f"rt-tests/cyclictest-h20000-{capture}-{load}.json",
                            k / "cyclictest" / f"{load}.json")
    return analysed("lablib.rtcompare.analyse", d)


def sweep(d, clock, seconds):
    """A cmd sweep in ns mode: @seconds a run at ns 0, 5000, 20000 (two
    runs each, 1 ms apart), 10000 calls a run, the module's spin as asked."""
    write_meta(d, "cmd", {"workload": "cmd", "knob": "ns"}, machine=machine(clock))
    rows = ["workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,detail"]
    for ns, t in zip((0, 5000, 20000), seconds):
        rows += [f"cmd,cmd,,{ns},{r},1,{t + 0.001 * r},10000,0," for r in (1, 2)]
    (d / "raw.csv").write_text("\n".join(rows) + "\n")
    (d / "points.csv").write_text("loops,ns,delayed,spun_ns,measured_ns\n,0,0,0,\n"
                                  ",5000,10000,50000000,5000.0\n"
                                  ",20000,10000,200000000,20000.0\n")
    return analysed("lablib.sweep.analyse", d)


# --- the report ------------------------------------------------------------------------

def test_side_by_side(built, tmp_path):
    h_cal = host_calibration(tmp_path / "cal-host")
    v_cal = virtual_calibration(tmp_path / "vcal-2")
    h_rt = rt_compare(tmp_path / "rt-host", "host", {"stock": "a", "rt": "b"})
    v_rt = rt_compare(tmp_path / "rt-virtual", "virtual",
                      {"stock": "delay", "stock-preempt-full": "delay"})
    h_sw = sweep(tmp_path / "cmd-host", "host", (1.0, 1.06, 1.18))
    v_sw = sweep(tmp_path / "cmd-virtual", "virtual", (1.0, 1.05, 1.2))
    out, d, figs, s = clocks_report(tmp_path / "out", h_cal, v_cal, h_rt, v_rt, h_sw, v_sw)
    assert out.returncode == 0, out.stderr
    assert {t: (f["experiment"], f["clock"]) for t, f in s["folders"].items()} == {
        "h1": ("calibrate", "host"), "v1": ("calibrate", "virtual"),
        "h2": ("rt-compare", "host"), "v2": ("rt-compare", "virtual"),
        "h3": ("sweep", "host"), "v3": ("sweep", "virtual")}

    # calibrate: the host's fit of the made-up lines, the real virtual one.
    slope = figs[("calibrate", "close slope (p10 fit)")]
    assert slope["unit"] == "ns/loop"
    assert slope["host"]["value"] == pytest.approx(4.0)
    assert slope["virtual"]["value"] == pytest.approx(3.0)
    assert slope["virtual_over_host"] == pytest.approx(0.75)
    assert slope["host"]["folders"] == ["h1"] and slope["virtual"]["folders"] == ["v1"]
    real = json.loads((DATA / "clocks/vcal-2/summary.json").read_text())
    r2 = figs[("calibrate", "getppid R^2 (p50 fit)")]
    assert r2["virtual"]["value"] == real["fits_p50"]["getppid"]["r2"]
    assert r2["host"]["value"] == pytest.approx(1.0)

    # rt-compare: each kernel's pooled figures, as the analyser found them;
    # kernels measured on one clock only are '-' on the other.
    host_k = json.loads((h_rt / "comparison.json").read_text())["kernels"]
    loaded = figs[("rt-compare", "stock cyclictest loaded max")]
    assert loaded["host"]["value"] == host_k["stock"]["cyclictest"]["loaded"]["pooled"]["max"]
    assert loaded["virtual"] is None and loaded["virtual_over_host"] is None
    p999 = figs[("rt-compare", "rt cyclictest idle p99.9")]
    assert p999["host"]["value"] == host_k["rt"]["cyclictest"]["idle"]["pooled"]["p999"]
    hold = figs[("rt-compare", "stock cyclictest max, 50 us hold (spin-entry)")]
    assert hold["host"] is None and hold["virtual"]["value"] == 51
    assert figs[("rt-compare", "stock-preempt-full cyclictest max, 50 us hold (spin-entry)")][
        "virtual"]["value"] == 4

    # sweep: the model check, the slowdowns (100,000 us of delay a run at 20000 ns
    # on 10000 calls: the model predicts 1.2015 / 1.0015).
    err = figs[("sweep", "cmd: model check max |error|")]
    assert err["unit"] == "%"
    assert err["virtual"]["value"] == pytest.approx(0.0, abs=1e-9)
    assert err["host"]["value"] == pytest.approx(100 * (1 - 1.1815 / 1.2015))
    meas = figs[("sweep", "cmd: measured slowdown at ns 20000")]
    assert meas["host"]["value"] == pytest.approx(1.1815 / 1.0015, rel=1e-4)
    assert meas["virtual"]["value"] == pytest.approx(1.2015 / 1.0015, rel=1e-4)

    # The same in report.txt and clocks.csv; '-' where a side is missing.
    text = (d / "report.txt").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("calibrate: close slope (p10"))
    assert line.split()[-5:] == ["4.000", "3.000", "0.75", "h1", "v1"], line
    line = next(ln for ln in text.splitlines()
                if ln.startswith("rt-compare: stock cyclictest max, 50 us hold (spin-entry)"))
    assert line.split()[-5:] == ["us", "-", "51", "-", "v2"], line
    assert f"v1: {v_cal} (calibrate, virtual clock;" in text
    assert "virtual clock (icount shift=0)" in text
    rows = {(r["experiment"], r["figure"]): r
            for r in csv.DictReader(open(d / "clocks.csv"))}
    assert rows[("calibrate", "close slope (p10 fit)")]["host"] == str(slope["host"]["value"])
    assert rows[("rt-compare", "stock cyclictest max, 50 us hold (spin-entry)")]["host"] == ""
    meta = json.loads((d / "meta.json").read_text())
    assert meta["experiment"] == "clocks" and len(meta["settings"]["folders"]) == 6


def test_several_folders_of_one_side_give_their_median_and_range(built, tmp_path):
    dirs = [host_calibration(tmp_path / f"cal-{s}", s) for s in (4.0, 4.4, 5.0)]
    out, _, figs, _ = clocks_report(tmp_path / "out", *dirs)
    assert out.returncode == 0, out.stderr
    slope = figs[("calibrate", "close slope (p10 fit)")]
    assert slope["host"]["value"] == pytest.approx(4.4)
    assert (slope["host"]["min"], slope["host"]["max"]) == (pytest.approx(4.0),
                                                           pytest.approx(5.0))
    assert slope["host"]["folders"] == ["h1", "h2", "h3"] and slope["virtual"] is None


def test_default_output_is_a_result_folder_with_a_latest_link(built, tmp_path):
    v_cal = virtual_calibration(tmp_path / "vcal-2")
    out = report("-o", tmp_path / "res", v_cal)
    assert out.returncode == 0, out.stderr
    [d] = [p for p in (tmp_path / "res").iterdir() if not p.is_symlink()]
    assert d.name.startswith("clocks-") and not d.name.endswith(".incomplete")
    assert (tmp_path / "res/latest-clocks").resolve() == d.resolve()
    assert sorted(p.name for p in d.iterdir()) == ["clocks.csv", "clocks.json", "meta.json",
                                                   "report.txt"]
    assert f"results: {d}/report.txt" in out.stdout


def no_clock(d):
    """A host-side runner's meta.json alone: nothing names the guest's clock."""
    write_meta(d, "calibrate", {"loops": [0, 100]}, machine=HOST_MACHINE)
    return d


def unanalysed(d):
    calibrate_dir(d, {"close": (300, 4.0)})
    return d


def other_experiment(d):
    write_meta(d, "sundial", {}, machine=machine("host"))
    return d


def mixed(d):
    write_meta(d, "rt-compare", {}, machine=HOST_MACHINE)
    write_meta(d / "stock", "rt-compare", {}, machine=machine("host"))
    write_meta(d / "rt", "rt-compare", {}, machine=machine("virtual"))
    return d


def bad_json(d):
    write_meta(d, "calibrate", {}, machine=machine("host"))
    (d / "summary.json").write_text("{")
    return d


@pytest.mark.parametrize("make, message", [
    (lambda d: d, "no such folder"),
    (lambda d: d.mkdir() or d, "no meta.json: not a lab result folder"),
    (no_clock, "no meta.json in it names the guest's clock"),
    (unanalysed, "no summary.json: analyse it first (lab analyse "),
    (other_experiment, "experiment 'sundial', not one of"),
    (mixed, "its guests ran on different clocks"),
    (bad_json, "summary.json: not JSON"),
])
def test_a_folder_it_cannot_read_is_one_line_and_status_2(built, tmp_path, make, message):
    good = virtual_calibration(tmp_path / "vcal-2")
    bad = make(tmp_path / "bad")
    out = report("-o", tmp_path / "out", good, bad)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert out.stderr.startswith("python -m lablib.clocks.analyse: error: ")
    assert not (tmp_path / "out").exists()


def test_no_folder_is_a_usage_error(tmp_path):
    out = report(cwd=tmp_path)
    assert out.returncode == 2 and "usage:" in out.stderr
    assert list(tmp_path.iterdir()) == []


# --- run.sh ------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--only", "calibrate,bogus"], "--only wants a list of calibrate,rt-compare,"),
    (["--only", "calibrate,bogus"], "grep, not 'calibrate,bogus'"),
    (["--only", "calibrate,,sweep"], "--only wants a list"),
    (["--only"], "--only wants a value"),
    (["--clocks", "sundial"], "--clocks wants host, virtual or host,virtual, not 'sundial'"),
    (["--clocks", ""], "--clocks wants a value"),
    (["--no-analysis", "--bogus"], "unknown argument '--bogus'"),
    (["calibrate"], "unknown argument 'calibrate'"),
])
def test_run_refuses_bad_arguments_before_anything(args, message):
    # (Only the clocks' own folders: other runs may share results/.)
    def ours():
        return set((ROOT / "results").glob("*clocks*"))
    before = ours()
    out = subprocess.run([RUN, *args], capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert ours() == before


def test_run_help_has_an_example(tmp_path):
    out = subprocess.run([RUN, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and "Example:" in out.stdout and "--only LIST" in out.stdout
    assert list(tmp_path.iterdir()) == []
