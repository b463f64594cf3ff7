"""A workload of one's own, one file dropped into a folder that
LAB_WORKLOADS_DIR names and no other file changed: the sweep runs it in
the patched kernel, the delay reaches it, and lablib's analysis reads its
measure from the same file.  Behaviour, not timings."""
import csv
import json
import os
import subprocess
import sys

from test_sweep import result_dir, sweep

TOY = '''# shellcheck shell=bash
# toy: /bin/true in the work cgroup, the smallest unit of work
WL_ABOUT="run /bin/true, the smallest unit of work"
WL_LOOPS=0:100:100
WL_REPEATS=1
WL_STAGE=guest
WL_MEASURE="toy 60 runs/min run"
wl_check() { :; }
wl_settings() { echo "what=true"; }
wl_stage_record() { :; }
wl_prepare() { :; }
wl_point_begin() { :; }
wl_run() { timed toy "$LAB_DIR/logs/toy-$TAG-$REPEAT.txt" "${WL_EXEC[@]}" /bin/true; }
wl_finish() { :; }
'''


def test_a_dropped_workload_file_sweeps(tmp_path, clean_module):
    own = tmp_path / "own"
    own.mkdir()
    (own / "toy.sh").write_text(TOY)
    env = dict(os.environ, LAB_WORKLOADS_DIR=str(own))
    out = tmp_path / "out"
    sweep("toy", "--ns", "0,2000", "-r", "2", out=out, env=env)
    d = result_dir(out, "toy")
    meta = json.loads((d / "meta.json").read_text())
    assert meta["experiment"] == "toy" and meta["settings"]["workload"] == "toy"
    assert meta["settings"]["workload_settings"] == {"what": "true"}
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert [(r["measure"], r["ns"]) for r in raw] == [("toy", "0")] * 2 + [("toy", "2000")] * 2
    assert all(int(r["syscalls"]) > 0 and float(r["seconds"]) > 0 for r in raw)
    # The delay reached /bin/true's calls at 2000 ns and none at 0.
    points = {r["ns"]: r for r in csv.DictReader(open(d / "points.csv"))}
    assert int(points["2000"]["delayed"]) > 0 and points["0"]["delayed"] in ("0", "")
    # lablib finds the toy's measure in its file: the analysis reads it.
    r = subprocess.run([sys.executable, "-m", "lablib.sweep.analyse", "--no-plot", "--json", d],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "runs/min" in r.stdout
    r = subprocess.run([sys.executable, "-m", "lablib.sweep.analyse", "--no-plot", d],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "toy" in r.stderr, "without the folder it is no workload"
