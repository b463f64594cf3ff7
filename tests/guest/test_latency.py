"""Measured effects of the hook on the patched kernel: latency rises
linearly with loops, 32-bit programs are delayed too, and neither a module
unloaded under load nor the largest delay upsets the kernel."""
import csv
import json
import os
import statistics
import subprocess
import time

import pytest
from conftest import LOOPS, MODDIR, ROOT, cycle_under_load, insmod, kernel_problems, \
    read_int, rmmod, write_param


def fit(rows, syscall):
    """Least-squares line through the per-point medians of raw.csv rows."""
    points = sorted({int(r["loops"]) for r in rows})
    xs, ys = [], []
    for loops in points:
        v = [float(r["ns_per_call"]) for r in rows
             if r["syscall"] == syscall and int(r["loops"]) == loops]
        xs.append(loops)
        ys.append(statistics.median(v))
    slope, intercept = statistics.linear_regression(xs, ys)
    mean = statistics.fmean(ys)
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - mean) ** 2 for y in ys)
    return slope, 1 - ss_res / ss_tot


@pytest.mark.timing
def test_latency_rises_linearly_with_loops(delay, tmp_path):
    out = subprocess.run([ROOT / "userspace/calibrate/calibrate", "-l", "0:4000:1000",
                          "-n", "10", "--calls", "5000", "-C", "0", "-o", tmp_path, "-q"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    d = tmp_path / os.readlink(tmp_path / "latest-calibrate")
    assert json.load(open(d / "meta.json"))["settings"]["loops"] == [0, 1000, 2000, 3000, 4000]
    rows = list(csv.DictReader(open(d / "raw.csv")))
    assert len(rows) == 2 * 5 * 10
    for name in ("close", "getppid"):
        slope, r2 = fit(rows, name)
        assert slope > 0 and r2 >= 0.99, (name, slope, r2)
    assert read_int(LOOPS) == 0, "calibrate must restore loops"


def nullcall32(mode):
    out = subprocess.run([ROOT / "userspace/calibrate/nullcall32", mode, "2000", "9"],
                         capture_output=True, text=True, check=True)
    return float(out.stdout)


@pytest.mark.timing
def test_compat_syscalls_are_delayed(delay):
    for mode in ("int80", "fast"):
        write_param("0")
        base = nullcall32(mode)
        calls0 = read_int(MODDIR / "stats/calls")
        write_param("5000")
        slow = nullcall32(mode)
        assert read_int(MODDIR / "stats/calls") - calls0 >= 2000 * 9
        # 5000 loops cost microseconds on any machine; allow for a fast one.
        assert slow > base + 500, f"{mode}: {base:.0f} ns -> {slow:.0f} ns"
    write_param("0")


def test_unload_under_syscall_load(clean_module):
    def one_cycle(i):
        insmod("delay", f"loops={100 * (i % 5)}")
        time.sleep(0.01)
        rmmod()

    cycle_under_load(30, one_cycle)


def test_largest_delay_does_not_lock_up(delay):
    write_param("1000000")
    t0 = time.monotonic()
    calls = 0
    while time.monotonic() - t0 < 5:
        os.getppid()
        calls += 1
    write_param("0")
    # Every call spun the full cap, and the kernel said nothing about it.
    assert calls > 10
    assert read_int(MODDIR / "stats/spun") >= calls * 1000000
    assert kernel_problems() == []
