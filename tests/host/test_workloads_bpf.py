"""A sweep through the BPF delay (workloads/delay/bpf.sh) on this machine's
own kernel, no VM: 'lab sweep grep --here --delay bpf' at the small scale
delays the grep's calls at a point and none at 0, counts the same calls
in its windows as by number, records that the delay was BPF's and the
mitigations in force, and leaves no loader behind, also when stopped
halfway.  Skipped, with the loader's line, where this kernel cannot run
the BPF delay."""
import csv
import json
import signal
import subprocess
import sys
import time

import pytest
from lablib.bpfdelay.loader import LOADER, cannot_run


@pytest.fixture(scope="module")
def bpf_kernel():
    why = cannot_run()
    if why:
        pytest.skip(why)


def loaders():
    """The pids of the sweeps' loaders (not the probe's, which has no --stats)."""
    out = subprocess.run(["pgrep", "-f", f"^{LOADER} --control --stats"], capture_output=True,
                         text=True)
    return out.stdout.split()


def sweep(tmp_path, *args):
    return [sys.executable, "-m", "lablib.lab", "sweep", "grep", "--here", "--delay", "bpf",
            "--scale", "small", "-r", "1", "-o", str(tmp_path), *args]


def test_a_grep_sweep_through_the_bpf_delay(bpf_kernel, tmp_path):
    before = loaders()
    out = subprocess.run(sweep(tmp_path, "--ns", "0,3000"), capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    (d,) = [p for p in tmp_path.iterdir() if p.name.startswith("grep-")]
    settings = json.loads((d / "meta.json").read_text())["settings"]
    assert settings["delay"] == "bpf" and settings["knob"] == "ns", settings
    assert "mitigations" in json.loads((d / "meta.json").read_text())["kernel"]
    points = {int(r["ns"]): r for r in csv.DictReader(open(d / "points.csv"))}
    assert points[0]["delayed"] == "0", points
    assert int(points[3000]["delayed"]) > 0 and float(points[3000]["measured_ns"]) >= 3000
    # Each window's calls (raw.csv) are the calls its point counted by number.
    raw = [r for r in csv.DictReader(open(d / "raw.csv")) if r["measure"] != "untimed"]
    by_call = {}
    for r in csv.DictReader(open(d / "by_call.csv")):
        by_call[int(r["ns"])] = by_call.get(int(r["ns"]), 0) + int(r["calls"])
    for r in raw:
        assert 0 < int(r["syscalls"]) <= by_call[int(r["ns"])], (r, by_call)
    assert int(points[3000]["delayed"]) == by_call[3000], (points, by_call)
    assert loaders() == before, "a loader outlived its sweep"


def test_a_stopped_sweep_leaves_no_bpf_delay(bpf_kernel, tmp_path):
    """SIGTERM halfway: the runner's end closes the loader's stdin, and the
    program goes with it."""
    before = loaders()
    proc = subprocess.Popen(sweep(tmp_path, "--ns", "0:50000:1000", "-r", "3"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    for _ in range(600):
        if len(loaders()) > len(before):
            break
        time.sleep(0.1)
    if len(loaders()) <= len(before):
        proc.kill()
        pytest.fail(f"the sweep never started its loader: {proc.communicate()[1][-2000:]}")
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode != 0
    for _ in range(100):
        if loaders() == before:
            break
        time.sleep(0.1)
    assert loaders() == before, "the loader outlived the stopped sweep"
