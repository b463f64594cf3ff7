"""The irqhook analysis scripts on made-up inputs: the trace reader names
what ran before a slow wake-up, and the sweep table collects every cell."""
import csv
import importlib.util
import json
import subprocess
import sys


def load(root, name):
    sys.path.insert(0, str(root / "userspace/analysis"))  # for labcli
    spec = importlib.util.spec_from_file_location(name, root / f"userspace/analysis/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
"""


def test_parse_report(root):
    mod = load(root, "irqhook_trace")
    events = mod.parse_report(REPORT)
    assert len(events) == 9
    assert events[0]["event"] == "irqhook_write" and events[0]["seq"] == "1"
    assert events[0]["ts"] == 100_000_000_000
    sw = events[2]
    assert sw["prev_pid"] == 0 and sw["next_pid"] == 100 and sw["prev_state"] == "R"


def test_explain_names_the_task_that_held_the_cpu(root):
    mod = load(root, "irqhook_trace")
    t = mod.Timeline(mod.parse_report(REPORT), reader=100)
    fast = t.explain(0, 1)
    assert fast["wakeup_to_run_ns"] == 8000
    assert fast["ran"] == [{"comm": "swapper/0", "pid": 0, "ns": 8000, "left": "idle"}]
    slow = t.explain(1, 2)
    assert slow["write_to_wakeup_ns"] == 2000 and slow["wakeup_to_run_ns"] == 140000
    assert slow["ran"] == [{"comm": "irqhook", "pid": 102, "ns": 140000,
                            "left": "blocked (S)"}]
    assert t.explain(2, 99) is None, "a sequence number the trace lacks"


def summary(loads, cls, mean):
    stats = {"count": 10, "min": mean, "mean": mean, "stddev": 1, "p50": mean,
             "p90": mean, "p99": mean * 2, "p99_9": mean * 2, "max": mean * 3,
             "split": {"threshold": mean * 1.5, "fast_count": 8, "fast_mean": mean,
                       "slow_count": 2, "slow_mean": mean * 3}}
    return {"events": 11, "loads": loads, "class": cls, "kernel": "test",
            "first_event": {"switching": 90000, "wakeup": 160000},
            "after_first": {"switching": stats, "wakeup": stats}}


def test_sweep_table(root, tmp_path):
    for loads in (0, 16):
        for cls in ("normal", "rt"):
            d = tmp_path / f"{loads}-{cls}"
            d.mkdir()
            (d / "summary.json").write_text(json.dumps(summary(loads, cls, 17000.0)))
    (tmp_path / "traced-16-normal").mkdir()   # not a cell: ignored
    out = subprocess.run([sys.executable, root / "userspace/analysis/irqhook_sweep.py",
                          tmp_path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(tmp_path / "table.csv")))
    assert [(r["class"], r["loads"]) for r in rows] == [
        ("normal", "0"), ("normal", "16"), ("rt", "0"), ("rt", "16")]
    assert float(rows[0]["wakeup_mean_us"]) == 17.0
    assert float(rows[0]["first_wakeup_us"]) == 160.0
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "normal" in (tmp_path / "table.txt").read_text()


def test_sweep_of_nothing_fails(root, tmp_path):
    out = subprocess.run([sys.executable, root / "userspace/analysis/irqhook_sweep.py",
                          tmp_path], capture_output=True, text=True)
    assert out.returncode == 1 and "no <loads>-<normal|rt>/summary.json" in out.stderr
