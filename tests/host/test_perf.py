"""lablib/perf.py, the one reader of perf's output, on files perf 6.1
wrote (tests/host/data/perf, see the README there): perf stat -x, with
counted, <not supported> and <not counted> events, modifiers and
tracepoints, and perf bench sched pipe's report."""

import pytest

from conftest import ROOT

from lablib.readers import perf

DATA = ROOT / "tests/host/data/perf"


def test_stat_without_a_pmu():
    """Software events counted, hardware events <not supported>, in perf's order."""
    s = perf.read_stat(DATA / "stat-no-pmu.csv")
    assert list(s) == ["task-clock", "context-switches", "cpu-migrations", "page-faults",
                       "cycles", "instructions", "branches", "branch-misses"]
    assert s["task-clock"] == 19.62 and s["page-faults"] == 65 and s["cpu-migrations"] == 0
    assert perf.not_counted(s) == ["cycles", "instructions", "branches", "branch-misses"]
    assert perf.counted(s) == {"task-clock": 19.62, "context-switches": 3,
                               "cpu-migrations": 0, "page-faults": 65}


def test_stat_keeps_modifiers_and_tracepoints():
    s = perf.read_stat(DATA / "stat-modifiers.csv")
    assert perf.not_counted(s) == ["cycles:u", "cycles:k", "instructions:u",
                                   "instructions:k"]
    assert perf.read_stat(DATA / "stat-tracepoint.csv") == {"raw_syscalls:sys_enter": 29}


def test_stat_not_counted():
    """perf stat -D -1 with nothing to enable the counters: <not counted>."""
    s = perf.read_stat(DATA / "stat-not-counted.csv")
    assert s == {"task-clock": None, "context-switches": None, "page-faults": None,
                 "cycles": None}


@pytest.mark.parametrize("text, message", [
    ("12,,x\nbanana,,task-clock\n", "line 2: task-clock: 'banana' is not a number"),
    ("Segmentation fault\n", "line 1: not perf stat -x, output"),
    ("3,,\n", "line 1: not perf stat -x, output"),
])
def test_stat_refuses_what_perf_did_not_write(tmp_path, text, message):
    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(ValueError, match=message):
        perf.read_stat(tmp_path / "p.csv")


def test_bench_sched_pipe(tmp_path):
    assert perf.read_bench_pipe(DATA / "bench-sched-pipe-threads.txt") == 26.4205
    (tmp_path / "p.txt").write_text("Segmentation fault\n")
    with pytest.raises(ValueError, match="no 'usecs/op' line"):
        perf.read_bench_pipe(tmp_path / "p.txt")
