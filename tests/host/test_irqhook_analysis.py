"""The irqhook analysers on made-up folders: the run summary (first event
apart, fast/slow split, cyclictest histogram, plot), the sweep table over
every cell, and the trace reader that names what ran before a slow
wake-up."""
import csv
import json
import os
import random
import shutil
import subprocess
import sys

import pytest

import plotcheck
from resultdirs import compare_dirs, compare_rows, on_virtual_clock, write_csv, write_meta
from lablib.irqhook import analyse, sweep_report, trace_report

ANALYSERS = {"irqhook": "lablib.irqhook.analyse",
             "irqhook-sweep": "lablib.irqhook.sweep_report",
             "trace": "lablib.irqhook.trace_report"}


def run(root, which, *args, env=None):
    return subprocess.run([sys.executable, "-m", ANALYSERS[which], *map(str, args)],
                          capture_output=True, text=True, env=env)


IRQHOOK_SETTINGS = {"events": 2000, "period_us": 16000, "loads": 16, "load_sleep_ns": 1000,
                    "class": "normal", "read_cpu": 0, "write_cpu": 0, "load_cpus": [0],
                    "traced": False}


def irqhook_dir(d, switching, wakeup, read_tid=100, **settings):
    """An irqhook folder with events of the given switching and wake-up
    times (ns) and a tasks.csv naming @read_tid the reader."""
    write_meta(d, "irqhook", {**IRQHOOK_SETTINGS, "events": len(switching), **settings})
    rows = []
    t = 100_000_000_000
    for i, (sw, wk) in enumerate(zip(switching, wakeup)):
        call = t + i * 16_000_000
        rows.append((i, i + 1, call, call + 1000, call + 1000 + wk, call + sw, sw, wk))
    write_csv(d / "events.csv",
              ("event", "seq", "call_ns", "write_ns", "wake_ns", "return_ns",
               "switching_ns", "wakeup_ns"), rows)
    write_csv(d / "tasks.csv", ("role", "index", "tid", "policy", "priority", "cpu"),
              [("read", 0, read_tid, "SCHED_OTHER", 0, 0),
               ("write", 0, read_tid + 1, "SCHED_OTHER", 0, 0),
               ("load", 0, read_tid + 2, "SCHED_OTHER", 0, 0)])
    return d


# 1 slow first event, then 8 fast and 2 slow ones.
SWITCHING = [90000] + [17000] * 4 + [18000] * 4 + [150000, 152000]
WAKEUP = [160000] + [10000] * 4 + [12000] * 4 + [140000, 142000]


def test_run_summary(root, tmp_path):
    d = irqhook_dir(tmp_path / "run", SWITCHING, WAKEUP)
    out = run(root, "irqhook", d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["experiment"] == "irqhook" and s["unit"] == "ns" and s["events"] == 11
    assert s["settings"]["loads"] == 16 and s["settings"]["class"] == "normal"
    assert s["first_event"] == {"switching": 90000, "wakeup": 160000}
    later = s["after_first"]["wakeup"]
    assert later["n"] == 10 and later["min"] == 10000 and later["max"] == 142000
    assert later["mean"] == pytest.approx((4 * 10000 + 4 * 12000 + 282000) / 10)
    assert later["split"] == {"threshold": 76000, "fast_n": 8, "fast_mean": 11000,
                              "slow_n": 2, "slow_mean": 141000}
    assert s["all_events"]["wakeup"]["n"] == 11 and s["all_events"]["wakeup"]["max"] == 160000
    assert s["all_events"]["switching"]["split"]["slow_n"] == 3
    assert {"p50", "p90", "p99", "p999", "stddev"} <= set(later)

    hist = (d / "histogram.txt").read_text().splitlines()
    assert hist[0].startswith("#") and hist[-1] == "# Total: 000011 000011"
    body = [line.split() for line in hist if not line.startswith("#")]
    assert len(body) == 161              # buckets 0..160 us
    assert body[17] == ["000017", "000004", "000000"]
    assert body[10] == ["000010", "000000", "000004"]
    assert sum(int(b[1]) for b in body) == sum(int(b[2]) for b in body) == 11
    assert (d / "histogram.png").read_bytes()[:4] == b"\x89PNG"
    assert "first event: switching 90.0, wake-up 160.0" in out.stdout
    assert "fast 8 x 11.0 / slow 2 x 141.0" in out.stdout


def test_run_one_event_and_json(root, tmp_path):
    d = irqhook_dir(tmp_path / "run", [5000], [3000], **{"class": "rt"})
    out = run(root, "irqhook", d, "--json", "--no-plot")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["after_first"]["wakeup"]["n"] == 0 and s["after_first"]["wakeup"]["mean"] is None
    assert s["all_events"]["wakeup"]["split"]["fast_n"] == 1
    assert not (d / "histogram.png").exists()


def test_wide_histogram_plot(root, tmp_path):
    # 10 us and 20 ms in one run: log-spaced buckets, still a PNG.
    d = irqhook_dir(tmp_path / "run", [10000, 11000, 20_000_000], [9000, 9500, 19_000_000])
    out = run(root, "irqhook", d)
    assert out.returncode == 0, out.stderr
    assert (d / "histogram.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("break_it, message", [
    (lambda d: (d / "events.csv").write_text("event,seq,call_ns,write_ns,wake_ns,return_ns,"
                                             "switching_ns,wakeup_ns\n"), "no events"),
    (lambda d: (d / "events.csv").unlink(), "events.csv"),
    (lambda d: (d / "meta.json").unlink(), "no meta.json"),
])
def test_run_bad_folders(root, tmp_path, break_it, message):
    d = irqhook_dir(tmp_path / "run", SWITCHING, WAKEUP)
    break_it(d)
    out = run(root, "irqhook", d)
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1
    assert message in out.stderr and not (d / "histogram.png").exists()


def test_sweep_table(root, tmp_path):
    write_meta(tmp_path, "irqhook-sweep", {"events": 11, "period_us": 16000,
                                           "loads": [0, 16], "cpu": 0, "trace_cells": []})
    for loads in (0, 16):
        for cls in ("normal", "rt"):
            irqhook_dir(tmp_path / f"{loads}-{cls}", SWITCHING, WAKEUP, loads=loads,
                        **{"class": cls})
    irqhook_dir(tmp_path / "traced-16-normal", SWITCHING, WAKEUP)   # not a cell: ignored
    (tmp_path / "16-normal.log").write_text("log\n")
    out = run(root, "irqhook-sweep", tmp_path)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(tmp_path / "table.csv")))
    assert [(r["class"], r["loads"]) for r in rows] == [
        ("normal", "0"), ("normal", "16"), ("rt", "0"), ("rt", "16")]
    assert float(rows[0]["wakeup_mean_us"]) == pytest.approx(37.0)
    assert float(rows[0]["first_wakeup_us"]) == 160.0
    assert rows[0]["fast_n"] == "8" and float(rows[0]["slow_mean_us"]) == 141.0
    assert json.loads((tmp_path / "sweep.json").read_text())[3]["class"] == "rt"
    cell = json.loads((tmp_path / "16-rt" / "summary.json").read_text())
    assert cell["settings"]["class"] == "rt" and cell["events"] == 11
    assert not (tmp_path / "traced-16-normal" / "summary.json").exists()
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "normal" in (tmp_path / "table.txt").read_text()


def test_sweep_of_nothing_fails(root, tmp_path):
    write_meta(tmp_path, "irqhook-sweep", {})
    out = run(root, "irqhook-sweep", tmp_path)
    assert out.returncode == 1 and "no <loads>-<normal|rt>/events.csv" in out.stderr


# Event 1 is fast: the reader runs 10 us after the write on an idle CPU.
# Event 2 is slow: a load task holds CPU 0 for 140 us before it blocks.
REPORT = """cpus=2
          irqhook-101   [001]   100.000000000: irqhook_write:        seq=1 write_ns=100000000000 pending=1
          irqhook-101   [001]   100.000002000: sched_wakeup:         comm=irqhook pid=100 prio=120 target_cpu=000
           <idle>-0     [000]   100.000010000: sched_switch:         prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=irqhook next_pid=100 next_prio=120
          irqhook-100   [000]   100.000012000: irqhook_read:         seq=1 wakeup_ns=10000 pending=0
          irqhook-100   [000]   100.000020000: sched_switch:         prev_comm=irqhook prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=irqhook next_pid=102 next_prio=120
          irqhook-101   [001]   100.016000000: irqhook_write:        seq=2 write_ns=100016000000 pending=1
          irqhook-101   [001]   100.016002000: sched_wakeup:         comm=irqhook pid=100 prio=120 target_cpu=000
          irqhook-102   [000]   100.016142000: sched_switch:         prev_comm=irqhook prev_pid=102 prev_prio=120 prev_state=S ==> next_comm=irqhook next_pid=100 next_prio=120
          irqhook-100   [000]   100.016150000: irqhook_read:         seq=2 wakeup_ns=150000 pending=0
"""  # noqa: E501


def test_parse_report(root):
    mod = trace_report
    events = mod.parse_report(REPORT)
    assert len(events) == 9
    assert events[0]["event"] == "irqhook_write" and events[0]["seq"] == "1"
    assert events[0]["ts"] == 100_000_000_000
    sw = events[2]
    assert sw["prev_pid"] == 0 and sw["next_pid"] == 100 and sw["prev_state"] == "R"


def test_explain_names_the_task_that_held_the_cpu(root):
    mod = trace_report
    t = mod.Timeline(mod.parse_report(REPORT), reader=100)
    fast = t.explain(0, 1)
    assert fast["wakeup_to_run_ns"] == 8000
    assert fast["ran"] == [{"comm": "swapper/0", "pid": 0, "ns": 8000, "left": "idle"}]
    slow = t.explain(1, 2)
    assert slow["write_to_wakeup_ns"] == 2000 and slow["wakeup_to_run_ns"] == 140000
    assert slow["ran"] == [{"comm": "irqhook", "pid": 102, "ns": 140000,
                            "left": "blocked (S)"}]
    assert t.explain(2, 99) is None, "a sequence number the trace lacks"


def fake_trace_cmd(tmp_path):
    """A PATH whose trace-cmd prints REPORT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "report.txt").write_text(REPORT)
    tool = bin_dir / "trace-cmd"
    tool.write_text(f"#!/bin/sh\ncat {bin_dir / 'report.txt'}\n")
    tool.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")


def test_trace_report_reads_the_reader_from_tasks_csv(root, tmp_path):
    # Events seq 1 (10 us, fast) and seq 2 (150 us, slow); the reader is 100.
    d = irqhook_dir(tmp_path / "traced-16-normal", [12000, 152000], [10000, 150000],
                    read_tid=100, traced=True)
    (d / "trace.dat").write_bytes(b"fake")
    env = fake_trace_cmd(tmp_path)
    out = run(root, "trace", d, env=env)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(d / "trace_events.csv")))
    assert [(r["seq"], r["slow"]) for r in rows] == [("1", "0"), ("2", "1")]
    assert rows[1]["ran_before_reader"] == "irqhook-102 140000 ns blocked (S)"
    text = (d / "explanation.txt").read_text()
    assert out.stdout == text and "slow: 1 events" in text
    assert "first event: wake-up 10.0 us" in text

    # Another reader tid: no event of the trace is the reader's.
    d2 = irqhook_dir(tmp_path / "other", [12000, 152000], [10000, 150000], read_tid=555)
    (d2 / "trace.dat").write_bytes(b"fake")
    out = run(root, "trace", d2, env=env)
    assert out.returncode == 0, out.stderr
    assert list(csv.DictReader(open(d2 / "trace_events.csv"))) == []


def test_trace_report_without_trace(root, tmp_path):
    d = irqhook_dir(tmp_path / "run", SWITCHING, WAKEUP)
    out = run(root, "trace", d)
    assert out.returncode == 1 and "trace.dat does not exist" in out.stderr


def realistic_times(rng, n, fast_us, slow_us, slow_share):
    """@n times (ns) as a loaded run shows them: most near @fast_us, a
    share near @slow_us, a few far out; the first event slow."""
    out = [slow_us * 3000]
    for _ in range(n - 1):
        base = slow_us if rng.random() < slow_share else fast_us
        out.append(base * 1000 * rng.lognormvariate(0, 0.25))
    return out


def cell(d, rng, loads, cls):
    slow = 0.02 if loads == 0 else 0.1 if cls == "rt" else 0.4
    return irqhook_dir(d, realistic_times(rng, 2000, 18 + loads, 150 + 4 * loads, slow),
                       realistic_times(rng, 2000, 10 + loads, 140 + 4 * loads, slow),
                       loads=loads, **{"class": cls})


@pytest.mark.parametrize("shape, xscale", [("idle", "linear"), ("loaded", "log"),
                                           ("outlier", "log")])
def test_histogram_plot_is_readable(root, tmp_path, monkeypatch, shape, xscale):
    """histogram.png of runs shaped like real ones (2,000 events; made up:
    a real one needs /dev/irqhook): idle, all within tens of us (1 us
    buckets); loaded, a fast and a slow group; and with a 20 ms outlier
    (log-spaced buckets for both)."""
    rng = random.Random(2)
    if shape == "idle":
        d = irqhook_dir(tmp_path / "run", realistic_times(rng, 2000, 18, 30, 0.02),
                        realistic_times(rng, 2000, 10, 25, 0.02), loads=0)
    else:
        d = cell(tmp_path / "run", rng, 16, "normal")
    if shape == "outlier":
        rows = (d / "events.csv").read_text().splitlines()
        f = rows[5].split(",")
        f[-2:] = ["20000000", "19000000"]
        (d / "events.csv").write_text("\n".join([*rows[:5], ",".join(f), *rows[6:]]) + "\n")
    mod = analyse
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("irqhook", "x", mod.add_args, mod.work, [str(d)]) == 0
    [ax] = figures["histogram.png"]
    plotcheck.assert_readable([ax])
    assert (ax["xscale"], ax["yscale"]) == (xscale, "log")
    assert len(ax["legend"]) == 2 and ax["patches"] == 2
    # Where it was measured, as every experiment's picture says; the run's
    # shape in the axes title.
    head = ax["figure_title"]
    assert head.startswith("irqhook: ") and "\nkernel 6.12.test-lab" in head, head
    loads = 0 if shape == "idle" else 16
    assert ax["title"] == f"2000 events, {loads} load tasks, SCHED_OTHER", ax["title"]


def test_sweep_plot_is_readable(root, tmp_path, monkeypatch):
    rng = random.Random(3)
    write_meta(tmp_path, "irqhook-sweep", {"events": 2000, "period_us": 16000,
                                           "loads": [0, 4, 16], "cpu": 0, "trace_cells": []})
    for loads in (0, 4, 16):
        for cls in ("normal", "rt"):
            cell(tmp_path / f"{loads}-{cls}", rng, loads, cls)
    mod = sweep_report
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("sweep", "x", mod.add_args, mod.work, [str(tmp_path)]) == 0
    axes = figures["sweep.png"]
    plotcheck.assert_readable(axes)
    for ax in axes:
        assert ax["xticks"] == ["0", "4", "16"] and ax["lines"] == 4
    assert axes[0]["legend"] == ["normal mean", "normal p99", "rt mean", "rt p99"]
    # Where it was measured, as every experiment's picture says.
    head = axes[0]["figure_title"]
    assert head.startswith("irqhook: ") and "kernel " in head and " CPUs" in head, head


# --- compare (lablib.compare) of irqhook folders --------------------------------------

def virtual_irqhook(root, d, wakeup):
    irqhook_dir(d, SWITCHING, wakeup)
    on_virtual_clock(d)
    out = run(root, "irqhook", d, "--no-plot")
    assert out.returncode == 0, out.stderr
    return d


def test_compare_reads_irqhook_figures_and_distributions(root, tmp_path):
    a = virtual_irqhook(root, tmp_path / "a", WAKEUP)
    same = virtual_irqhook(root, tmp_path / "same", WAKEUP)
    slower = virtual_irqhook(root, tmp_path / "slower", [w + 5000 for w in WAKEUP])
    p, c = compare_dirs(a, same, out=tmp_path)
    assert "wakeup after the first event: p99" in compare_rows(c)
    d = c["distributions"]["wakeup"]
    assert d["bins"]["differ"] == 0 and d["bins"]["moved_share"] == 0
    assert d["a"]["n"] == len(WAKEUP) - 1 and d["a"]["p99"] == d["b"]["p99"]
    assert (tmp_path / "c" / "ccdf.png").is_file()
    shutil.rmtree(tmp_path / "c")
    slower2 = virtual_irqhook(root, tmp_path / "slower2", [w + 5000 for w in WAKEUP])
    p, c = compare_dirs("-a", a, same, "-b", slower, slower2, out=tmp_path)
    d = c["distributions"]["wakeup"]
    assert d["bins"]["moved_share"] == pytest.approx(1.0)
    assert d["b"]["p50"] - d["a"]["p50"] == pytest.approx(5000)
    assert c["distributions"]["switching"]["bins"]["differ"] == 0
    assert "1 us bins:" in p.stdout and "wakeup (pooled" in p.stdout
    assert compare_rows(c)["wakeup after the first event: p50"]["worse"]
