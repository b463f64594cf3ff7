"""lab sweep nginx in the patched kernel: the workload of one file
(workloads/lib/nginx.sh) sweeps a private nginx, master and one worker,
staged in the guest, through the server form's reference replies; the
delay reaches and counts nginx's own calls, and on the virtual clock
every point is exact.  httperf's knee (workloads/lib/httperf.sh) is the
same code as Apache's, whose test searches it (test_sweep.py): here it
would double this test's minute for no line of nginx's.  Behaviour, not
timings."""
import csv
import json
import os
import pathlib
import re
import subprocess

from conftest import MODDIR, ROOT
from test_sweep import (calibration, check_results,  # noqa: F401
                        delay_reached_the_workload, result_dir, staged_and_exact, sweep)

# x86_64 numbers of the calls nginx's worker makes for each request.
ACCEPT4, RECVFROM, OPENAT, WRITEV = 288, 45, 257, 20


def on_virtual_clock():
    return "lab.clock=virtual" in pathlib.Path("/proc/cmdline").read_text()


def test_nginx_sweep(tmp_path, calibration):  # noqa: F811
    """Two points, one run each, replies 200 ms apart, no knee
    (SERVER_SATURATION=0): raw.csv holds the reply rows, every reply a 200
    with the delayed calls in its span, none a knee step;
    nginx's accepts, reads, opens and writes among the module's count by
    number; its configuration is its own, with one worker; nothing is
    left running; analysed here, each point exact on the virtual clock
    (on the host's, none is)."""
    sweep("nginx", "-l", "0,1000", "-r", "1", "--calibration", calibration, out=tmp_path,
          env=dict(os.environ, SERVER_INTERVAL_MS="200", SERVER_SATURATION="0"))
    d = result_dir(tmp_path, "nginx")
    check_results(d, "nginx", ["reply"])
    delay_reached_the_workload(d)
    staged_and_exact(d, "nginx", None)
    assert (d / "logs/stage-nginx.txt").exists() and (d / "logs/stage-httperf.txt").exists()

    virtual = on_virtual_clock()
    replies = 100 if virtual else 10
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert [(r["measure"], r["loops"]) for r in raw] == [("reply", "0"), ("reply", "1000")], raw
    assert list(csv.DictReader(open(d / "saturation.csv"))) == []
    for r in (r for r in raw if r["measure"] == "reply"):
        tag = f"l{r['loops']}-{r['repeat']}"
        got = list(csv.DictReader(open(d / f"logs/reply-{tag}.csv")))
        assert len(got) == replies, got
        assert all(g["status"] == "200" and g["error"] == "" and int(g["calls"]) > 0
                   for g in got), got
        assert int(r["units"]) == replies and int(r["errors"]) == 0, r
        assert int(r["syscalls"]) == sum(int(g["calls"]) for g in got), r
        assert "Total: connections 512 " in (d / f"logs/warm-{tag}.txt").read_text()

    # The module counted nginx's calls (only the work cgroup's are): at
    # loops 0 a request's accept, read, open and write at least once a
    # reply, and the delayed point's spin measured on them.
    by_call = {int(r["nr"]): int(r["calls"]) for r in csv.DictReader(open(d / "by_call.csv"))
               if r["loops"] == "0"}
    for nr in (ACCEPT4, RECVFROM, OPENAT, WRITEV):
        assert by_call.get(nr, 0) >= replies, (nr, by_call)

    # Its own configuration, kept with the result: a master and one worker,
    # everything in its folder, no daemon setting (the command line's).
    conf = (d / "nginx.conf").read_text()
    for line in ("master_process on;", "worker_processes 1;", "listen 127.0.0.1:18081;"):
        assert line in conf, conf
    assert not re.search(r"^\s*daemon\b", conf, re.M), conf
    wl = json.loads((d / "meta.json").read_text())["settings"]["workload_settings"]
    assert wl["saturation"] == "0" and wl["worker_processes"] == "1", wl
    assert wl["reference"] == f"{replies}conns@200ms", wl
    errors = (d / "logs/nginx-error.log").read_text()
    assert "[emerg]" not in errors and "[alert]" not in errors, errors

    # Stopped, its cgroup gone, the module unloaded.
    assert subprocess.run(["pgrep", "-f", "nginx: "], capture_output=True).returncode == 1
    assert not list(pathlib.Path("/sys/fs/cgroup").glob("lab-sweep-*"))
    assert not MODDIR.exists()

    analysed = subprocess.run([ROOT / ".venv/bin/python", "-m", "lablib.sweep.analyse", d,
                               "--no-plot"], capture_output=True, text=True)
    assert analysed.returncode == 0, analysed.stderr
    points = json.loads((d / "summary.json").read_text())["measures"]["reply"]["points"]
    assert [p["loops"] for p in points] == [0, 1000], points
    assert [p["exact"] for p in points] == [virtual, virtual], points


def test_a_knee_setting_out_of_range_is_refused(tmp_path, clean_module):
    """httperf's knee wants a fraction of the offered rate to keep up
    with: 1.5 is refused in one line, before anything is made."""
    r = sweep("nginx", "--ns", "0", "-r", "1", out=tmp_path / "out", check=False,
              env=dict(os.environ, HTTPERF_KEEPUP="1.5"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "HTTPERF_KEEPUP wants a fraction in (0, 1]" in lines[0], r.stderr
    assert not (tmp_path / "out").exists()
    assert not MODDIR.exists()
