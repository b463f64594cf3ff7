"""lab sweep --here in the patched kernel (the plan made here, the guest's
runner workloads/sweep.sh run on it): short sweeps of every workload
slow down with the delay and leave complete, parseable raw result folders
(the analysis runs on the host: tests/host/test_workloads_analysis.py); bad
input fails with one line and leaves nothing behind."""
import csv
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys

import pytest

from conftest import MODDIR, ROOT, ko, read_int
from lablib.experiments import workloads
from lablib.sweep import driver, plan

# lab sweep, on the kernel the test runs on.
SWEEP = [sys.executable, "-m", "lablib.sweep.driver"]


def sweep(*args, out, check=True, **kw):
    r = subprocess.run([*SWEEP, *args[:1], "--here", "-o", out, "--no-analysis", *args[1:]],
                       capture_output=True, text=True, **kw)
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def result_dir(out, workload):
    dirs = [d for d in pathlib.Path(out).iterdir() if d.name.startswith(workload + "-")]
    assert len(dirs) == 1, dirs
    assert not dirs[0].name.endswith(".incomplete"), dirs[0]
    assert (pathlib.Path(out) / f"latest-{workload}").resolve() == dirs[0].resolve()
    return dirs[0]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """A quick calibration shared by the sweeps below, with the summary.json
    that the host's analysis would add (slope per syscall)."""
    out = tmp_path_factory.mktemp("cal")
    subprocess.run(["insmod", ko("delay")], check=True)
    try:
        r = subprocess.run([ROOT / "userspace/calibrate/calibrate", "-l", "0:4000:2000",
                            "-n", "10", "--calls", "2000", "-C", "0", "-o", out, "-q"],
                           check=True, capture_output=True, text=True)
    finally:
        subprocess.run(["rmmod", "delay"], check=True)
    d = out / os.readlink(out / "latest-calibrate")
    fits = {}
    for ln in r.stdout.splitlines():
        words = ln.split()
        if words[:1] == ["fit"]:
            fits[words[1]] = float(words[words.index("ns/loop") - 1])
    assert set(fits) == {"close", "getppid"}, r.stdout
    (d / "summary.json").write_text(json.dumps(
        {"fits": {k: {"slope": v} for k, v in fits.items()}}))
    return d


def check_results(d, workload, measures, calibrated=True, statistic=statistics.mean):
    """Every raw file of a finished sweep is there and parses; returns the
    @statistic of the seconds per unit of work at each point, per measure."""
    names = ["raw.csv", "meta.json", "points.csv"]
    if calibrated:
        names += ["calibration/raw.csv", "calibration/meta.json"]
    for name in names:
        assert (d / name).stat().st_size > 0, name
    meta = json.loads((d / "meta.json").read_text())
    assert meta["experiment"] == workload and meta["kernel"]["release"] == os.uname().release
    assert meta["settings"]["workload"] == workload
    assert meta["settings"]["workload_settings"], meta["settings"]
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert {r["measure"] for r in raw} == set(measures)
    assert all(float(r["seconds"]) > 0 and float(r["syscalls"]) > 0 for r in raw)
    assert not MODDIR.exists(), "the sweep loaded the module and must unload it"
    per_unit = {}
    for r in raw:
        setting = int(r["loops"] or r["ns"])
        per_unit.setdefault(r["measure"], {}).setdefault(setting, []).append(
            float(r["seconds"]) / float(r["units"]))
    return {m: {loops: statistic(v) for loops, v in pts.items()}
            for m, pts in per_unit.items()}


def delay_reached_the_workload(d):
    """The module's own account (points.csv): nothing delayed at the first
    point (loops 0), and at the largest both calls delayed and time spun.
    On the host's clock that is what a test can know for sure of the
    grep, apache and kbuild sweeps: whether they then ran slower depends
    on what else the host did (a busy host once made an undelayed kbuild
    330 s and the delayed one 279 s).  make sweep measures that; the dd
    sweeps, on the virtual clock, assert it."""
    rows = points(d)
    assert int(rows[0]["loops"] or 0) == 0 and int(rows[0]["delayed"]) == 0, rows[0]
    assert int(rows[-1]["delayed"]) > 0 and int(rows[-1]["spun_ns"]) > 0, rows[-1]


def slower_at_max(times, measure):
    pts = times[measure]
    loops = sorted(pts)
    assert loops[0] == 0 and loops[-1] > 0
    assert pts[loops[-1]] > pts[0], (measure, pts)


def syscalls_at_zero(d):
    raw = list(csv.DictReader(open(d / "raw.csv")))
    return [float(r["syscalls"]) / float(r["units"]) for r in raw if r["loops"] == "0"]


@pytest.mark.timing
def test_cmd_sweep_calibrates_and_slows_down(tmp_path):
    # 10000 one-byte reads and writes; 20000 loops add tens of us to each,
    # which the virtual clock emulates an instruction at a time.
    sweep("cmd", "-l", "0,20000", "-r", "3", "--", "dd", "if=/dev/zero", "of=/dev/null",
          "bs=1", "count=5000", out=tmp_path)
    d = result_dir(tmp_path, "cmd")
    slower_at_max(check_results(d, "cmd", ["cmd"], statistic=min), "cmd")
    cal = list(csv.DictReader(open(d / "calibration/raw.csv")))
    assert sorted({int(r["loops"]) for r in cal}) == [0, 20000]
    # dd makes two system calls a byte, and the count says so.
    assert all(10000 <= n < 11000 for n in syscalls_at_zero(d))
    # By number: a read and a write a byte, in each of the point's 3 runs.
    by_call = [r for r in csv.DictReader(open(d / "by_call.csv")) if r["loops"] == "0"]
    calls = {int(r["nr"]): int(r["calls"]) for r in by_call}
    assert 15000 <= calls[0] < 16000 and 15000 <= calls[1] < 16000, calls


# What make test staged on the host for the small kbuild and grep
# (make workloads-test-stage).
TEST_STAGE = ROOT / "build/stage-test"


def staged_and_exact(d, workload, archive, measures=None):
    """The sweep ran its workload from memory: meta.json says what was
    staged (from @archive, or copied in the guest), and no timed window
    (of @measures, default all) made a request to the host's files."""
    stage = json.loads((d / "meta.json").read_text())["settings"]["stage"]
    assert stage["files"] > 0 and stage["bytes"] > 0, stage
    assert stage.get("archive") == (str(archive) if archive else None), stage
    raw = [r for r in csv.DictReader(open(d / "raw.csv"))
           if measures is None or r["measure"] in measures]
    requests = "".join(f.read_text() for f in sorted((d / "logs").glob("*-9p.txt")))
    # A window's requests are kept in logs/ (none kept: every count 0).
    # Only vm.sh's kernel-log forwarder (dmesg -w into VM_KLOG) may have
    # made one: a kernel message in a window is its write, as "hrtimer:
    # interrupt took 23829542 ns" was on the host's clock with three VMs
    # on two cores; the row counts it and is not exact.
    lines = [ln for ln in requests.splitlines() if "9p_client_req" in ln]
    assert all(ln.split()[0].startswith("dmesg-") for ln in lines), requests[:3000]
    assert lines or [r["p9_requests"] for r in raw] == ["0"] * len(raw), raw
    return requests


# grep: a few hundred system calls; kbuild: about 80000 a build.  The delay
# only has to reach them.
@pytest.mark.parametrize("workload, series", [("grep", ["grep"]), ("kbuild", ["build"])])
def test_small_sweep(tmp_path, calibration, workload, series):
    archive = TEST_STAGE / f"{workload}.tar"
    assert archive.exists(), f"no {archive}: make workloads-test-stage"
    sweep(workload, "--scale", "small", "-l", "0,1000", "-r", "1", "--calibration",
          calibration, "--stage-from", TEST_STAGE, out=tmp_path)
    d = result_dir(tmp_path, workload)
    check_results(d, workload, series)
    delay_reached_the_workload(d)
    staged_and_exact(d, workload, archive)
    # The given calibration was copied in whole.
    assert (d / "calibration/raw.csv").read_text() == (calibration / "raw.csv").read_text()


def test_a_sweep_started_in_the_guest_stages_there(tmp_path, calibration):
    """Without an archive from the host the guest records and copies the
    workload itself (slowly under TCG: the small grep's few files)."""
    sweep("grep", "--scale", "small", "-l", "0,1000", "-r", "2", "--calibration",
          calibration, out=tmp_path)
    d = result_dir(tmp_path, "grep")
    staged_and_exact(d, "grep", None)
    assert (d / "logs/stage-grep.txt").exists() and (d / "logs/stage.txt").exists()


def test_unstaged_windows_are_counted(tmp_path, calibration):
    """--no-stage: grep reads the tree from the host's files, and raw.csv
    counts the requests of every window."""
    sweep("grep", "--scale", "small", "-l", "0,1000", "-r", "1", "--calibration",
          calibration, "--no-stage", out=tmp_path)
    d = result_dir(tmp_path, "grep")
    assert json.loads((d / "meta.json").read_text())["settings"]["stage"] == "none"
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert all(int(r["p9_requests"]) > 0 for r in raw), raw


def fair_server_offs():
    """How many times the kernel's log says a fair server was turned off."""
    log = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    return log.count("Fair server disabled in CPU")


# An HTTP server's knee search in few steps: the ramp, and a bisection only
# while the last rate kept up with and the first not are 30 % apart.
QUICK_KNEE = {"HTTPERF_REFINE": "0.3"}


def server_sweep(tmp_path, calibration, workload, load, *args, **env):
    """A server's sweep at loops 0 and 1000, one run each, replies 200 ms
    apart, an HTTP server's knee refined to 30 % (the bookkeeping is what
    is tested, not the knee): its folder and raw.csv's rows, checked as
    every server's (the three measures, the delay reached, staged and
    exact, the server and its load generator @load recorded for
    staging)."""
    sweep(workload, "-l", "0,1000", "-r", "1", *args, "--calibration", calibration,
          out=tmp_path, env=dict(os.environ, SERVER_INTERVAL_MS="200", **QUICK_KNEE, **env))
    d = result_dir(tmp_path, workload)
    check_results(d, workload, ["reply", "saturation", "server"])
    delay_reached_the_workload(d)
    staged_and_exact(d, workload, None)
    assert (d / f"logs/stage-{workload}.txt").exists() and (d / f"logs/stage-{load}.txt").exists()
    return d, list(csv.DictReader(open(d / "raw.csv")))


def test_apache_sweep(tmp_path, calibration):
    # Some 30 server calls a reply; the delay only has to reach them.  The
    # shortest steps and reference interval: what is tested is the sweep's
    # bookkeeping, and the saturation search keeps both vCPUs busy.
    offs = fair_server_offs()
    # Apache, httperf and taskset run from memory: Apache recorded from
    # its start to its stop under a load (the server processes it starts
    # under the saturation search's load read the host's files before:
    # 38 requests in one run).  No window, reference or
    # saturation, makes a request.
    d, raw = server_sweep(tmp_path, calibration, "apache", "httperf", "--step-seconds", "1")
    assert all(int(r["errors"]) == 0 for r in raw if r["loops"] == "0"), raw
    # Every step records Apache's CPU time and the wall time it was read
    # over: Apache has one CPU, so no more than that, give or take the tick
    # cpu.stat lags a running task by (4 ms at HZ 250; CI once had
    # 1.026 s of CPU at a knee step whose replies took 1.025 s: the bound
    # is the window, not httperf's duration).
    steps = list(csv.DictReader(open(d / "saturation.csv")))
    assert steps
    for s in steps:
        assert 0 < float(s["server_s"]) <= float(s["window_s"]) + 0.005, s
    # The server row is the replies of every step kept up with over
    # Apache's CPU time for them: the steps' server_s added up, a reply for
    # each connection offered (none failed), and more than the knee step's.
    knee = {(r["loops"], r["repeat"]): r for r in raw if r["measure"] == "saturation"}
    for r in (r for r in raw if r["measure"] == "server"):
        k = knee.pop((r["loops"], r["repeat"]))
        kept = [s for s in steps if (s["loops"], s["repeat"], s["sustained"]) ==
                (r["loops"], r["repeat"], "1")]
        assert float(r["seconds"]) == pytest.approx(sum(float(s["server_s"]) for s in kept),
                                                    abs=1e-9), (r, kept)
        assert int(r["units"]) == sum(int(s["offered"]) for s in kept), (r, kept)
        assert int(r["errors"]) == 0, r
        assert f"replies of the {len(kept)} steps kept up with" in r["detail"], r
        if len(kept) > 1:
            assert int(r["units"]) > int(k["units"]) and int(r["syscalls"]) > int(k["syscalls"])
    assert not knee, knee
    # The reference: reqtime's replies (100 a run on the virtual clock, 10
    # on the host's), each with the delayed calls made while it was in
    # flight; a run's row is the mean of the replies that made the fewest
    # calls, a tenth of them off each end, with those calls, not the
    # window's.
    virtual = "lab.clock=virtual" in pathlib.Path("/proc/cmdline").read_text()
    replies = 100 if virtual else 10
    reduced = {(str(x["loops"]), str(x["repeat"])): x for x in
               workloads.read_raw(d / "raw.csv") if x["measure"] == "reply"}
    assert not list((d / "logs").glob("*.csv-9p.txt"))
    for r in (r for r in raw if r["measure"] == "reply"):
        tag = f"l{r['loops']}-{r['repeat']}"
        got = list(csv.DictReader(open(d / f"logs/reply-{tag}.csv")))
        assert len(got) == replies, got
        assert [g["request"] for g in got] == [str(i) for i in range(1, replies + 1)]
        assert all(g["status"] == "200" and g["error"] == "" and int(g["calls"]) > 0
                   for g in got), got
        assert r["detail"] == f"every reply in logs/reply-{tag}.csv (reqtime)", r
        assert int(r["units"]) == replies and int(r["errors"]) == 0, r
        assert float(r["seconds"]) == pytest.approx(sum(float(g["seconds"]) for g in got),
                                                    abs=1e-8)
        assert int(r["syscalls"]) == sum(int(g["calls"]) for g in got)
        # Each run began with its untimed burst of 512 connections.
        warm = (d / f"logs/warm-{tag}.txt").read_text()
        assert "Total: connections 512 " in warm, warm
        fewest = min(int(g["calls"]) for g in got)
        clean = sorted(float(g["seconds"]) for g in got if int(g["calls"]) == fewest)
        kept = clean[len(clean) // 10:len(clean) - len(clean) // 10]
        run = reduced[r["loops"], r["repeat"]]
        assert run["units"] == 1 and run["syscalls"] == fewest, run
        assert run["seconds"] == pytest.approx(statistics.mean(kept), rel=1e-12)
    assert (d / "httpd.conf").exists()
    # Each run's saturation search starts on the grid of rates, at the
    # highest one at most 35 % of 1 / its own reply time: below the knee.
    grid = [int(100 * 1.3 ** k + 0.5) for k in range(60)]
    for r in (r for r in raw if r["measure"] == "reply"):
        first = next(s for s in steps if (s["loops"], s["repeat"]) == (r["loops"], r["repeat"]))
        start = max([g for g in grid if g <= 0.35 * float(r["units"]) / float(r["seconds"])]
                    or [100])
        assert int(first["offered"]) == start, (first, r)
    # What decided the knee and where the replies started are recorded: an
    # interval of no whole second keeps reqtime's grid where it was.
    wl = json.loads((d / "meta.json").read_text())["settings"]["workload_settings"]
    assert wl["reference"] == f"{replies}conns@200ms", wl
    assert wl["keepup"] == ("0.995" if virtual else "0.95"), wl
    assert wl["reference_phase_ms"] == "0", wl
    # No TIME_WAIT sockets kept while Apache ran (httperf's would have
    # filled the local ports), and the machine's setting put back.
    tw = pathlib.Path("/proc/sys/net/ipv4/tcp_max_tw_buckets")
    assert wl["time_wait_buckets"] == "0", wl
    assert tw.read_text().strip() == wl["time_wait_buckets_before"] != "0", wl
    # The fair server (the lab kernel has one on each CPU) was off while
    # Apache ran, the kernel says so once a CPU, and is back as it was.
    runtimes = sorted(pathlib.Path("/sys/kernel/debug/sched/fair_server").glob("cpu*/runtime"))
    assert len(runtimes) == os.cpu_count(), runtimes
    assert wl["fair_server_runtime"] == "0", wl
    assert ",".join(f.read_text().strip() for f in runtimes) == wl["fair_server_runtime_before"]
    assert "0" not in wl["fair_server_runtime_before"].split(","), wl
    assert fair_server_offs() == offs + os.cpu_count()
    # httpd was stopped and its cgroup removed.
    assert subprocess.run(["pgrep", "-f", "lab-sweep"], capture_output=True).returncode == 1


def test_redis_sweep(tmp_path, calibration):
    """Redis, the server form's second instance: staged in the guest,
    reqtime's Redis replies (each line a GET on one connection, with its
    calls) and redis-benchmark's closed loop for the knee, with Redis's
    CPU time; stopped and its settings put back at the end."""
    d, raw = server_sweep(tmp_path, calibration, "redis", "redis-benchmark",
                          REDIS_REQUESTS="1000")
    virtual = "lab.clock=virtual" in pathlib.Path("/proc/cmdline").read_text()
    replies = 100 if virtual else 10
    for r in (r for r in raw if r["measure"] == "reply"):
        got = list(csv.DictReader(open(d / f"logs/reply-l{r['loops']}-{r['repeat']}.csv")))
        assert len(got) == replies and all(g["status"] == "200" and g["error"] == ""
                                           for g in got), got
        assert int(r["units"]) == replies and int(r["syscalls"]) == sum(int(g["calls"])
                                                                         for g in got)
        assert min(int(g["calls"]) for g in got) > 0
    for r in (r for r in raw if r["measure"] in ("saturation", "server")):
        assert r["units"] == "1000" and int(r["errors"]) == 0, r
    # The knee's requests took more wall time than Redis's CPU time.
    by = {(r["measure"], r["loops"]): float(r["seconds"]) for r in raw}
    for loops in ("0", "1000"):
        assert 0 < by["server", loops] <= by["saturation", loops] + 0.005, by
    wl = json.loads((d / "meta.json").read_text())["settings"]["workload_settings"]
    assert wl["requests"] == "1000" and wl["clients"] == "8" and wl["fair_server_runtime"] == "0"
    # No TIME_WAIT sockets kept while it ran (the server form's, as for
    # Apache), and the machine's setting put back.
    tw = pathlib.Path("/proc/sys/net/ipv4/tcp_max_tw_buckets")
    assert wl["time_wait_buckets"] == "0", wl
    assert tw.read_text().strip() == wl["time_wait_buckets_before"] != "0", wl
    # Each fresh server was told to keep its reply buffer's size
    # (srv_ready), and said OK.
    assert (d / "logs/ready.txt").read_text().strip() == "OK"
    assert "enable-debug-command local" in (d / "redis.conf").read_text()
    assert subprocess.run(["pgrep", "-f", "redis-server"], capture_output=True).returncode == 1
    assert len(raw) == 6, raw   # reply, saturation, server at loops 0 and 1000


def test_a_command_is_staged_and_its_runs_agree(tmp_path, calibration):
    """cmd in the guest, with no archive from the host: recorded and
    staged there, run in the staged root from its own folder (where it
    writes; a name with spaces, kept as it is), no window asking the
    host's files for anything, and the untimed staged run printed what
    the recorded one did."""
    work = tmp_path / "a dir with spaces"
    (work / "tree/sub").mkdir(parents=True)
    for i in range(20):
        (work / "tree/sub" / f"f{i}.txt").write_text(f"file {i}\n" * 50)
    sweep("cmd", "-l", "0,1000", "-r", "2", "--calibration", calibration, "--",
          "tar", "cf", "out.tar", "tree", out=tmp_path / "out", cwd=work)
    d = result_dir(tmp_path / "out", "cmd")
    staged_and_exact(d, "cmd", None)
    settings = json.loads((d / "meta.json").read_text())["settings"]
    assert settings["workload_settings"]["cwd"] == str(work), settings
    assert settings["stage_check"] == "same output as recorded", settings
    assert settings["stage"]["network"] == [], settings["stage"]
    raw = list(csv.DictReader(open(d / "raw.csv")))
    # The runs of a point made the same calls (the staged root is the
    # same each time), the delayed point as many as the undelayed.
    assert len({r["syscalls"] for r in raw}) == 1, raw


def test_a_command_that_reads_what_it_did_not_when_recorded_is_not_exact(tmp_path,
                                                                        calibration):
    """A command that reads a file only on its second run (its first one
    leaves a mark) prints in the staged root what it did not when it was
    recorded: the sweep says so and records it, and no point is exact."""
    work = tmp_path / "work"
    work.mkdir()
    r = sweep("cmd", "-l", "0,1000", "-r", "1", "--calibration", calibration, "--",
              "[ -e seen ] && cat /etc/hostname; touch seen", out=tmp_path / "out", cwd=work)
    assert "printed what it did not print when it was recorded" in r.stderr, r.stderr
    d = result_dir(tmp_path / "out", "cmd")
    settings = json.loads((d / "meta.json").read_text())["settings"]
    assert settings["stage_check"] == "output differs from the recorded run", settings
    analysed = subprocess.run([ROOT / ".venv/bin/python", "-m", "lablib.sweep.analyse", d,
                               "--no-plot"], capture_output=True, text=True)
    assert analysed.returncode == 0, analysed.stderr
    points_ = json.loads((d / "summary.json").read_text())["measures"]["cmd"]["points"]
    assert [p["exact"] for p in points_] == [False, False], points_
    assert "its output in the staged root differs" in points_[0]["not_exact"]


def test_an_archive_staged_for_another_command_is_refused(tmp_path, calibration):
    """--stage-from an archive that --stage-only made for another command:
    refused before anything is timed."""
    sweep("cmd", "--stage-only", tmp_path / "stage", "--", "true", out=tmp_path / "x",
          cwd=tmp_path)
    r = sweep("cmd", "-l", "0,1000", "-r", "1", "--calibration", calibration, "--stage-from",
              tmp_path / "stage", "--", "false", out=tmp_path / "out", cwd=tmp_path,
              check=False)
    assert r.returncode == 1 and "was staged for another cmd" in r.stderr, r.stderr


def points(d):
    return list(csv.DictReader(open(d / "points.csv")))


def test_a_part_runs_its_points_and_only_part_1_calibrates(tmp_path):
    """lab sweep --part K/N --points LIST (what lab sweep --vms N boots, one
    VM a part, each given its points by lablib.sweep.parts): a part runs only
    those and records them and the whole list in meta.json; part 1
    calibrates, the others do not."""
    full = [0, 100, 200]
    shares = [["0", "200"], ["100"]]
    for k in (1, 2):
        out = tmp_path / f"part{k}"
        want = shares[k - 1]
        r = sweep("cmd", "-l", "0:200:100", "-r", "1", "--part", f"{k}/2",
                  "--points", ",".join(want), "--", "true", out=out)
        d = result_dir(out, "cmd")
        settings = json.loads((d / "meta.json").read_text())["settings"]
        assert settings["part"] == f"{k}/2" and settings["loops"] == full
        assert settings["part_points"] == [int(v) for v in want] and want
        assert [p["loops"] for p in points(d)] == want
        assert {row["loops"] for row in csv.DictReader(open(d / "raw.csv"))} == set(want)
        assert (d / "calibration").exists() == (k == 1)
        last = f"part {k}/2: [{len(want)}/{len(want)}]"
        assert last in r.stderr
        # Part 1 calibrates after its points, which meet the boot as it was.
        calibrating = r.stderr.find("calibrating the added latency")
        assert (calibrating > r.stderr.index(last)) == (k == 1), r.stderr
        assert settings["calibration_from"] == (
            "calibrated by the sweep, after its points" if k == 1 else "part 1 of 2")
        assert not (d / "summary.json").exists()


@pytest.mark.timing
def test_ns_sweep_needs_no_calibration_and_measures_its_delay(tmp_path):
    sweep("cmd", "--ns", "0,20000", "-r", "3", "--", "dd", "if=/dev/zero", "of=/dev/null",
          "bs=1", "count=5000", out=tmp_path)
    d = result_dir(tmp_path, "cmd")
    assert not (d / "calibration").exists()
    slower_at_max(check_results(d, "cmd", ["cmd"], calibrated=False, statistic=min), "cmd")
    meta = json.loads((d / "meta.json").read_text())
    assert meta["settings"]["knob"] == "ns" and meta["settings"]["ns"] == [0, 20000]
    top = points(d)[-1]
    assert top["ns"] == "20000" and int(top["delayed"]) >= 10000
    # The module's own figure: at least the request, and within 10 % of it.
    assert 20000 <= float(top["measured_ns"]) <= 22000, top


def test_module_settings_are_set_recorded_and_put_back(tmp_path, delay):
    """--syscalls and --set: the sweep runs with the module's other knobs
    as given (here every other read delayed, asleep, at exit), delays and
    counts dd's reads alone (not its writes), records it all in meta.json
    and leaves the module as it found it."""
    (MODDIR / "parameters/seed").write_text("7")
    sweep("cmd", "--ns", "0,10000", "-r", "1", "--syscalls", "read", "--set", "every=2",
          "--set", "mode=sleep", "--set", "where=exit", "--", "dd", "if=/dev/zero",
          "of=/dev/null", "bs=1", "count=3000", out=tmp_path)
    d = result_dir(tmp_path, "cmd")
    meta = json.loads((d / "meta.json").read_text())
    assert meta["settings"]["syscalls"] == "read" and meta["settings"]["syscall_numbers"] == "0"
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert all(3000 <= int(r["syscalls"]) < 3100 for r in raw), raw  # the reads alone
    got = meta["settings"]["delay_settings"]
    assert got == {"mode": "sleep", "where": "exit", "every": "2", "first": "0",
                   "ppm": "1000000", "seed": "7", "delays": ""}, got
    top = points(d)[-1]
    assert 1500 <= int(top["delayed"]) < 1550, top        # every other of dd's reads
    assert float(top["measured_ns"]) >= 10000, top
    for name, value in (("every", "0"), ("mode", "spin"), ("where", "entry"), ("seed", "7")):
        assert (MODDIR / "parameters" / name).read_text() == value + "\n", name


# arguments, the one line's words; every one a bad value: status 2.  In
# the guest with --here, one refused by lab sweep itself and one by the
# workload's file through the runner (a Python start takes seconds under
# TCG); every value either refuses is in the host tests
# (tests/host/test_workloads_sweep.py, test_a_bad_value_is_status_2_and_one_line).
BAD = [
    (["grep", "-l", "0,100,50"], "--loops wants loop counts in increasing order"),
    (["grep", "--tree", "/nonexistent"], "--tree wants a Linux source tree"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_fails_cleanly(tmp_path, clean_module, args, message):
    r = sweep(*args, out=tmp_path / "out", check=False)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    # lab sweep's own checks, or the guest's runner's (the workload's).
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert lines[0].startswith(("lab sweep: ", "sweep.sh: ")), r.stderr
    assert not (tmp_path / "out").exists()
    assert not MODDIR.exists()


def test_a_calibration_from_the_other_clock_is_refused(tmp_path, calibration, clean_module):
    """A loop's ns on the virtual clock are not its ns on the host's: a
    sweep refuses a --calibration taken on the clock it does not run on."""
    running = "virtual" if "lab.clock=virtual" in pathlib.Path("/proc/cmdline").read_text() \
        else "host"
    other = {"virtual": "host", "host": "virtual"}[running]
    cal = tmp_path / "cal"
    shutil.copytree(calibration, cal)
    meta = json.loads((cal / "meta.json").read_text())
    meta["machine"]["clock"] = {"kind": other, "shift": 0}
    (cal / "meta.json").write_text(json.dumps(meta))
    r = sweep("grep", "--scale", "small", "--calibration", cal, out=tmp_path / "out",
              check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"lab sweep: --calibration was taken on the {other} clock and "
                                f"this sweep runs on the {running} clock; calibrate on this one "
                                f"(leave --calibration out)")
    assert not (tmp_path / "out").exists()


def test_non_root_is_refused(tmp_path):
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        *SWEEP, "cmd", "--here", "-o", tmp_path / "out", "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "must run as root" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_missing_module_is_refused(tmp_path, clean_module):
    # A copy of the scripts with no built module beside them, given a plan.
    for d in ("workloads", "scripts"):
        shutil.copytree(ROOT / d, tmp_path / d)
    (tmp_path / "userspace/lib").mkdir(parents=True)
    shutil.copy(ROOT / "userspace/lib/lab", tmp_path / "userspace/lib/lab")
    argv = ["cmd", "--here", "-l", "0,10", "-o", str(tmp_path / "out"), "--", "true"]
    (p,) = driver.Sweep(*driver.parse(argv), argv).plans
    r = subprocess.run([tmp_path / "workloads/sweep.sh", plan.write(p, tmp_path / "plan")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "delay.ko is not built for this kernel" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_interrupted_sweep_restores_the_module(tmp_path, calibration, delay):
    (MODDIR / "parameters/loops").write_text("7")
    p = subprocess.Popen([*SWEEP, "cmd", "--here", "-o", tmp_path, "--calibration", calibration,
                          "-l", "0,10,20", "-r", "20", "--", "sleep", "0.2"],
                         stderr=subprocess.PIPE, text=True)
    # Wait for the first point, then interrupt.
    for line in p.stderr:
        if "[1/3]" in line:
            break
    p.send_signal(2)
    rest = p.stderr.read()
    assert p.wait() == 130, rest
    assert read_int(MODDIR / "parameters/loops") == 7
    assert (MODDIR / "parameters/cgroup").read_text() == "\n"
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and left[0].name.endswith(".incomplete"), left
    assert "what was measured is in" in rest
