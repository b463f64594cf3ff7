"""userspace/compare (lablib.compare): two sides of result folders, figure
by figure.  Virtual clock: identical, an exact change, a side that does not
repeat.  Host clock: a shift the test must find, one it must call
inconclusive, one it must call the same.  And the refusals: different
experiments or clocks, one line and exit status 2."""
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from resultdirs import (analysed, calibrate_dir, compare_dirs, compare_rows, machine,
                        write_meta)

DATA = ROOT / "tests/host/data"


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", ROOT / "userspace/lib"], check=True)


compare = compare_dirs


def fits(slope, intercept=500.0, r2=1.0):
    f = {"statistic": "p10", "slope": slope, "intercept": intercept, "r2": r2, "n": 4}
    return {"getppid": f}


def calibration(d, clock, slope, intercept=500.0, entry=131.0, **meta):
    """A calibrate folder with its summary.json as the analyser writes it
    (the fits and the entry cost)."""
    write_meta(d, "calibrate", {"loops": [0, 100]}, machine=machine(clock), **meta)
    s = {"experiment": "calibrate", "unit": "ns", "points": [],
         "fits": fits(slope, intercept), "fits_p50": fits(slope, intercept),
         "fits_min": fits(slope, intercept), "entry_ns": entry}
    (d / "summary.json").write_text(json.dumps(s))
    return d


rows = compare_rows


# --- the virtual clock ----------------------------------------------------------------

def test_two_boots_of_a_real_calibration_are_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(DATA / "clocks/vcal-2", a)
    shutil.copytree(DATA / "clocks/vcal-2", b)
    s = json.loads((b / "summary.json").read_text())
    for f in s["fits"].values():
        f["slope"] *= 1 + 1e-6          # the last digit of a second boot
    (b / "summary.json").write_text(json.dumps(s))
    p, c = compare(a, b, out=tmp_path)
    assert p.returncode == 0, p.stderr
    assert c["clock"] == "virtual" and c["of"] == "calibrate"
    assert {r["verdict"] for r in c["rows"]} == {"identical"}
    assert "nothing recorded differs" in p.stdout
    assert (tmp_path / "c" / "compare.png").is_file()
    assert (tmp_path / "c" / "compare.csv").read_text().startswith("figure,unit,verdict")


def test_an_analysed_folder_compares_with_itself(tmp_path):
    d = calibrate_dir(tmp_path / "cal", {"getppid": (500, 3.0)}, loops=(0, 100, 200, 300))
    meta = json.loads((d / "meta.json").read_text())
    meta["machine"] = machine("virtual")
    (d / "meta.json").write_text(json.dumps(meta))
    analysed("lablib.calibrate.analyse", d)
    p, c = compare(d, d, out=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "getppid slope (p10 fit)" in rows(c)
    assert all(r["verdict"] == "identical" and r["diff"] == 0 for r in c["rows"])


def test_an_exact_change_is_named_with_its_size_and_the_setting_that_differs(tmp_path):
    kernel = {"release": "6.12.118-lab", "variant": "stock", "preemption": "voluntary",
              "cmdline": "root=/dev/root quiet virtme.exec=AAAA lab.clock=virtual"}
    a = [calibration(tmp_path / f"a{i}", "virtual", 3.0, kernel=kernel) for i in range(2)]
    b = [calibration(tmp_path / f"b{i}", "virtual", 3.0, entry=148.0,
                     kernel={**kernel, "preemption": "full", "cmdline": "root=/dev/root quiet "
                             "preempt=full virtme.exec=BBBB lab.clock=virtual"})
         for i in range(2)]
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    assert c["design"] == "A/B"
    r = rows(c)
    entry = r["cost of a delayed call before its first loop"]
    assert entry["verdict"] == "changed" and entry["diff"] == pytest.approx(17.0)
    assert entry["worse"] and p.returncode == 1
    assert r["getppid slope (p10 fit)"]["verdict"] == "identical"
    diff = {d["key"]: d for d in c["differences"]}
    assert diff["kernel.preemption"]["b"] == "full"
    assert (diff["kernel.cmdline"]["a"], diff["kernel.cmdline"]["b"]) == ("", "preempt=full")
    assert "kernel.preemption: voluntary -> full" in p.stdout
    assert "kernel.cmdline: (none) -> preempt=full" in p.stdout


def test_a_change_beyond_the_band_but_under_a_percent_is_tiny(tmp_path):
    a = [calibration(tmp_path / f"a{i}", "virtual", 3.0) for i in range(2)]
    b = [calibration(tmp_path / f"b{i}", "virtual", 3.0 * 1.001) for i in range(2)]
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    assert rows(c)["getppid slope (p10 fit)"]["verdict"] == "changed (tiny)"
    assert p.returncode == 0        # a slope is neither better nor worse


def test_a_side_whose_runs_disagree_is_nondeterministic(tmp_path):
    a = [calibration(tmp_path / f"a{i}", "virtual", 3.0) for i in range(2)]
    b = [calibration(tmp_path / "b0", "virtual", 3.0),
         calibration(tmp_path / "b1", "virtual", 3.01)]
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    r = rows(c)["getppid slope (p10 fit)"]
    assert r["verdict"] == "nondeterministic" and "B" in r["why"]
    assert rows(c)["getppid intercept (p10 fit)"]["verdict"] == "identical"
    assert p.returncode == 2


# --- the host clock -----------------------------------------------------------------

def host_side(tmp_path, name, n, slope, cv, seed):
    rng = random.Random(seed)
    return [calibration(tmp_path / f"{name}{i}", "host", slope * (1 + rng.gauss(0, cv)),
                        intercept=500 * (1 + rng.gauss(0, cv)), entry=131.0,
                        date=f"2026-12-02T10:{i:02d}:00Z")
            for i in range(n)]


def test_a_host_clock_shift_is_found(tmp_path):
    a = host_side(tmp_path, "a", 10, 4.0, 0.01, 1)
    b = host_side(tmp_path, "b", 10, 4.4, 0.01, 2)
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    r = rows(c)["getppid slope (p10 fit)"]
    assert r["verdict"] == "higher", r
    assert r["p_holm"] < 0.05 and r["ci"][0] > 1.02
    assert "Mann-Whitney" in p.stdout


def test_a_slower_figure_is_a_regression(tmp_path):
    a = host_side(tmp_path, "a", 8, 4.0, 0.01, 3)
    b = [calibration(tmp_path / f"b{i}", "host", 4.0, intercept=500.0, entry=150.0 + i)
         for i in range(8)]
    for d in a:
        calibration(d, "host", 4.0, entry=131.0 + int(d.name[1:]) / 10)
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    r = rows(c)["cost of a delayed call before its first loop"]
    assert r["verdict"] == "slower" and r["worse"]
    assert p.returncode == 1


def test_noise_too_large_for_the_runs_is_inconclusive_with_the_runs_it_would_take(tmp_path):
    a = host_side(tmp_path, "a", 3, 4.0, 0.05, 4)
    b = host_side(tmp_path, "b", 3, 4.1, 0.05, 5)
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    r = rows(c)["getppid slope (p10 fit)"]
    assert r["verdict"] == "inconclusive"
    assert r["runs_needed"] > 3 and f"about {r['runs_needed']} runs" in r["why"]
    assert p.returncode == 2


def test_an_a_a_comparison_is_the_same_never_faster_or_slower(tmp_path):
    a = host_side(tmp_path, "a", 10, 4.0, 0.002, 6)
    b = host_side(tmp_path, "b", 10, 4.0, 0.002, 7)
    p, c = compare("-a", *a, "-b", *b, out=tmp_path)
    verdicts = {r["verdict"] for r in c["rows"]}
    assert rows(c)["getppid slope (p10 fit)"]["verdict"] == "same"
    assert not verdicts & {"faster", "slower", "higher", "lower"}
    assert p.returncode == 0, p.stdout


def test_one_run_a_side_on_the_host_clock_has_no_test(tmp_path):
    a = calibration(tmp_path / "a", "host", 4.0)
    b = calibration(tmp_path / "b", "host", 4.0)
    p, c = compare(a, b, out=tmp_path)
    assert {r["verdict"] for r in c["rows"]} == {"inconclusive"}
    assert p.returncode == 2


# --- what is refused -----------------------------------------------------------------

def test_sides_of_different_clocks_are_refused_in_one_line(tmp_path):
    a = calibration(tmp_path / "a", "host", 4.0)
    b = calibration(tmp_path / "b", "virtual", 3.0)
    p, c = compare(a, b, out=tmp_path)
    assert p.returncode == 2 and c is None
    assert len(p.stderr.splitlines()) == 1 and "different clocks" in p.stderr


def test_sides_of_different_experiments_are_refused(tmp_path):
    a = calibration(tmp_path / "a", "virtual", 3.0)
    b = write_meta(tmp_path / "b", "grep", {"workload": "grep"}, machine=machine("virtual"))
    (b / "summary.json").write_text(json.dumps({"workload": "grep", "measures": {}}))
    p, _ = compare(a, b, out=tmp_path)
    assert p.returncode == 2 and "different experiments" in p.stderr


@pytest.mark.parametrize("args, message", [
    (["only-one"], "two folders"),
    ([], "no folders"),
])
def test_bad_arguments_are_refused(tmp_path, args, message):
    p, _ = compare(*args, out=tmp_path)
    assert p.returncode == 2 and message in p.stderr


def test_a_folder_not_yet_analysed_says_how_to_analyse_it(tmp_path):
    a = write_meta(tmp_path / "a", "calibrate", {}, machine=machine("virtual"))
    p, _ = compare(a, a, out=tmp_path)
    assert p.returncode == 2 and "analyse it first" in p.stderr


# --- make ab ----------------------------------------------------------------------------

def ab(*args, env=None):
    return subprocess.run([sys.executable, "-m", "lablib.lab", "ab", *map(str, args)],
                          capture_output=True, text=True, env=env)


def plan_lines(out):
    return [line.split(None, 2) for line in out.splitlines() if not line.startswith("#")]


def test_ab_plans_interleaved_seeded_boots_with_each_sides_settings(tmp_path):
    # Seed 1 draws an interleaved order (a random one is AAABBB once in 20).
    p = ab("calibrate", "-B", "APPEND='preempt=full nosmap' VARIANT=rt", "-n", "3",
           "-o", tmp_path, "--dry-run", "--seed", "1", "--", "-l", "0,100")
    assert p.returncode == 0, p.stderr
    boots = plan_lines(p.stdout)
    assert [k for k, _, _ in boots] == [str(i) for i in range(1, 7)]
    sides = [s for _, s, _ in boots]
    assert sorted(sides) == ["A"] * 3 + ["B"] * 3
    assert sides != sorted(sides)           # interleaved, not all A first
    for _, side, line in boots:
        assert "VM_CLOCK=virtual" in line and "-o " in line and line.count("-l 0,100") == 1
        assert ("VM_APPEND='preempt=full nosmap'" in line) == (side == "B")
        assert ("VARIANT=rt" in line) == (side == "B")
    seed = p.stdout.splitlines()[0].split()[2]
    again = ab("calibrate", "-B", "APPEND='preempt=full nosmap' VARIANT=rt", "-n", "3",
               "-o", tmp_path, "--dry-run", "--seed", seed, "--", "-l", "0,100")
    assert again.stdout == p.stdout


def test_ab_draws_a_new_order_each_time_unless_given_a_seed(tmp_path):
    def order(*args):
        p = ab("calibrate", "-n", "5", "-o", tmp_path, "--dry-run", *args)
        return p.stdout.splitlines()[0], "".join(s for _, s, _ in plan_lines(p.stdout))
    drawn = [order() for _ in range(4)]
    assert len({seed for seed, _ in drawn}) == 4     # a seed of 31 bits each time
    assert len({o for _, o in drawn}) > 1            # 252 orders of 5 A and 5 B
    assert order("--seed", "7") == order("--seed", "7")


def test_ab_on_the_host_clock_runs_ten_boots_a_side_by_default(tmp_path):
    p = ab("grep", "--clock", "host", "-o", tmp_path, "--dry-run")
    boots = plan_lines(p.stdout)
    assert len(boots) == 20 and all("VM_CLOCK=host" in line for *_, line in boots)
    assert all("-m lablib.sweep.driver grep --vms 1" in line for *_, line in boots)


@pytest.mark.parametrize("args, message", [
    (["calibrate", "-B", "FOO=1"], "'FOO=1' is not one of"),
    (["calibrate", "-B", "APPEND"], "'APPEND' is not one of"),
    (["smp", "-B", "APPEND=x"], "make ab runs calibrate or a workload"),
    (["calibrate", "-n", "0"], "at least one boot"),
])
def test_ab_refuses_bad_settings(tmp_path, args, message):
    p = ab(*args, "-o", tmp_path, "--dry-run")
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert len(p.stderr.splitlines()) == 1


def test_ab_without_gnu_parallel_says_what_to_install(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(sys.executable)
    p = ab("calibrate", "-o", tmp_path, env={"PATH": str(bare)})
    assert p.returncode == 2 and "GNU parallel is not installed" in p.stderr
    assert not list(tmp_path.glob("ab-*"))


def test_two_sweeps_compare_point_by_point_with_both_curves(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        shutil.copytree(DATA / "workloads/grep-virtual", d)
        subprocess.run([sys.executable, "-m", "lablib.sweep.analyse", "--no-plot", d],
                       check=True, capture_output=True)
    p, c = compare(a, b, out=tmp_path)
    assert p.returncode == 0, p.stderr
    points = [r for r in c["rows"] if r["figure"].startswith("grep at loops")]
    assert len(points) >= 3 and all(r["verdict"] == "identical" for r in points)
    assert rows(c)["grep at loops 0"]["band_rel"] == 5e-4
    assert (tmp_path / "c" / "curves.png").is_file()
    run = c["curves"]["grep"]["a"][0]
    assert len(run["points"]) == len(points)
    assert run["model"]["t0"] == pytest.approx(rows(c)["grep at loops 0"]["a_value"], rel=1e-3)


STAND_IN = """#!{python}
# A stand-in for a boot of calibrate (LAB_AB_RUNNER): a result folder in
# PARENT whose slope is 3.1 when the side's command line says 'slow'.
import json, os, pathlib, sys
experiment, parent = sys.argv[1], pathlib.Path(sys.argv[2])
if "fail" in os.environ.get("VM_APPEND", ""):
    sys.exit("the boot failed")
d = parent / "calibrate-1"
d.mkdir(parents=True)
append = os.environ.get("VM_APPEND", "")
slope = 3.1 if "slow" in append else 3.0
fit = {{"getppid": {{"slope": slope, "intercept": 500.0, "r2": 1.0}}}}
(d / "meta.json").write_text(json.dumps({{
    "experiment": experiment, "date": "2026-12-02T10:00:00Z", "args": sys.argv[3:],
    "kernel": {{"release": "6.12.test-lab", "cmdline": "root=/dev/root " + append}},
    "machine": {{"clock": {{"kind": os.environ["VM_CLOCK"], "shift": 0}}}}}}))
(d / "summary.json").write_text(json.dumps({{"fits": fit, "fits_p50": fit,
                                             "entry_ns": 131.0}}))
"""


def stand_in(tmp_path):
    runner = tmp_path / "boot"
    runner.write_text(STAND_IN.format(python=sys.executable))
    runner.chmod(0o755)
    return {**os.environ, "LAB_AB_RUNNER": str(runner)}


def test_ab_runs_the_boots_and_compares_them(tmp_path):
    out = tmp_path / "results"
    p = ab("calibrate", "-B", "APPEND=slow", "-o", out, "--", "-l", "0,100",
           env=stand_in(tmp_path))
    assert p.returncode == 0, p.stderr
    [folder] = out.glob("ab-*")
    assert not folder.name.endswith(".incomplete")
    plan = (folder / "plan.csv").read_text().splitlines()
    assert len(plan) == 5 and all("-l 0,100" in line for line in plan[1:])
    settings = json.loads((folder / "meta.json").read_text())["settings"]
    assert settings["order"] and isinstance(settings["seed"], int)
    assert f"(seed {settings['seed']})" in p.stdout
    c = json.loads((folder / "compare" / "compare.json").read_text())
    assert len(c["a"]["folders"]) == len(c["b"]["folders"]) == 2
    assert all(pathlib.Path(f).is_dir() for f in c["a"]["folders"] + c["b"]["folders"])
    slope = rows(c)["getppid slope (p10 fit)"]
    assert slope["verdict"] == "changed" and slope["diff"] == pytest.approx(0.1)
    assert {d["key"]: d for d in c["differences"]}["kernel.cmdline"]["b"] == "slow"
    assert "ab: boot 4" in p.stdout and "changed" in p.stdout


def test_ab_with_a_failed_boot_says_which_and_compares_nothing(tmp_path):
    out = tmp_path / "results"
    p = ab("calibrate", "-B", "APPEND=fail", "-o", out, env=stand_in(tmp_path))
    assert p.returncode == 2 and "a boot failed" in p.stderr
    assert "logs/" in p.stderr and "nothing compared" in p.stderr
    assert not list(out.glob("compare-*"))
