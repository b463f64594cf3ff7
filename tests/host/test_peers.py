"""userspace/peers: lablib.peers.analyse on a made-up run whose medians
are known (ratios to the baseline, overheads at zero delay, achieved delays
and their errors, the smallest delay of each tool), its errors, and
percall's options (built here; --help and bad input need no lab kernel)."""
import csv
import json
import shutil
import subprocess
import sys

import pytest

import plotcheck
from resultdirs import write_csv, write_meta
from lablib.peers import analyse as analyser
import runners

ANALYSER = "lablib.peers.analyse"
PERCALL = "userspace/peers/percall"

# Median ns per call of each case: getppid, read.
MEDIANS = {
    "baseline": (700, 1000),
    "module-0": (800, 1100),
    "module-loops-1": (804, 1104),
    "module-ns-1000": (1810, 2100),
    "module-ns-10000": (10800, 11100),
    "module-exit-ns-10000": (10900, 11100),
    "module-sleep-ns-10000": (60800, 61100),
    "strace-0": (50700, 60000),
    "strace-1ns": (52700, 61000),
    "strace-1us": (52200, 61000),
    "strace-10us": (70700, 80000),
    "strace-exit-10us": (71700, 81000),
    "perf-tracepoint": (770, 1050),
    "baseline-end": (714, 1010),
}
OFFSETS = (-10, -5, 0, 5, 100)     # 5 calls a case: p50 = the median, max = +100


def peers_dir(d, medians=MEDIANS, skipped=(), perf=None):
    """A peers result folder as run.sh and guest.sh leave it."""
    write_meta(d, "peers", {"n": len(OFFSETS), "warmup": 0, "cpu": 0})
    write_meta(d / "guest", "peers", {"n": len(OFFSETS), "strace": "strace -- version 6.1"})
    for case, per_sc in medians.items():
        for sc, m in zip(("getppid", "read"), per_sc):
            if m is None:
                continue
            run = write_meta(d / "runs" / f"{case}-{sc}", "percall",
                             {"case": case, "syscall": sc, "n": len(OFFSETS), "warmup": 2,
                              "cpu": 0, "clock_pair_ns": 40.0})
            write_csv(run / "raw.csv", ("call", "ns"),
                      [(i, m + o) for i, o in enumerate(OFFSETS)])
    write_csv(d / "skipped.csv", ("case", "syscall", "reason"),
              [(c, "all", f'"{why}"') for c, why in skipped])
    if perf is not None:
        (d / "tools").mkdir(exist_ok=True)
        (d / "tools/perf-getppid.csv").write_text(
            f"# started on x\n\n{perf},,raw_syscalls:sys_enter,123,100.00,,\n")
    return d


def analyse(root, *args):
    return subprocess.run([sys.executable, "-m", ANALYSER, *map(str, args)],
                          capture_output=True, text=True)


def test_ratios_overheads_and_achieved_delays(root, tmp_path):
    d = peers_dir(tmp_path / "p", perf=29 + 7)
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["experiment"] == "peers" and s["unit"] == "ns"
    g = s["syscalls"]["getppid"]
    c = g["cases"]
    assert list(c)[0] == "baseline" and list(c)[-1] == "baseline-end"
    assert c["baseline"]["p50"] == 700 and c["baseline"]["max"] == 800
    assert c["baseline"]["n"] == 5 and c["baseline"]["unit"] == "ns"
    assert c["baseline"]["clock_pair_ns"] == 40.0
    assert c["strace-0"]["ratio_p50"] == pytest.approx(50700 / 700)
    # Overheads at zero delay, against the baseline.
    assert g["overhead_at_zero"]["module"] == {"case": "module-0", "ns": 100,
                                               "pct": pytest.approx(100 / 7)}
    assert g["overhead_at_zero"]["strace"]["ns"] == 50000
    assert g["overhead_at_zero"]["perf"]["pct"] == pytest.approx(10)
    # Achieved: against the tool's own zero-delay case.
    assert c["module-ns-1000"]["requested_ns"] == 1000
    assert c["module-ns-1000"]["achieved_ns"] == 1010
    assert c["module-ns-1000"]["error_pct"] == pytest.approx(1)
    assert c["module-ns-10000"]["error_pct"] == pytest.approx(0)
    assert c["strace-1us"]["achieved_ns"] == 1500
    assert c["strace-1us"]["error_pct"] == pytest.approx(50)
    assert c["strace-10us"]["requested_ns"] == 10000
    assert c["strace-10us"]["error_pct"] == pytest.approx(100)
    assert c["module-loops-1"]["loops"] == 1 and c["module-loops-1"]["error_pct"] is None
    # At exit and asleep: the same request, against the same zero case.
    assert c["module-exit-ns-10000"]["requested_ns"] == 10000
    assert c["module-exit-ns-10000"]["error_pct"] == pytest.approx(1)
    assert c["module-sleep-ns-10000"]["achieved_ns"] == 60000
    assert c["strace-exit-10us"]["zero_case"] == "strace-0"
    assert c["strace-exit-10us"]["error_pct"] == pytest.approx(110)
    # The smallest delay each tool can add.
    assert g["smallest_delay"]["module"]["case"] == "module-loops-1"
    assert g["smallest_delay"]["module"]["achieved_ns"] == 4
    assert g["smallest_delay"]["strace"] == {"case": "strace-1ns", "requested_ns": 1,
                                             "loops": None, "achieved_ns": 2000}
    assert g["drift_pct"] == pytest.approx(2)
    assert g["perf"] == {"sys_enter_events": 36, "timed_and_warmup_calls": 7}
    r = s["syscalls"]["read"]
    assert r["cases"]["module-ns-1000"]["achieved_ns"] == 1000
    assert r["overhead_at_zero"]["strace"]["pct"] == pytest.approx(5900)
    assert "perf" not in r
    assert "CONFIG_BPF_SYSCALL" in s["not_measured"]["bpftrace"]


def test_every_nth_call_cases_count_the_delayed_calls(root, tmp_path):
    """module-every2-ns-10000 beside strace's when=1+2: the median is an
    undelayed call's, so the share of slow calls and their median are what
    is reported (zero cases: module-0 800 ns, strace-0 50,700 ns)."""
    d = peers_dir(tmp_path / "p")
    for case, zero, delays in (("module-every2-ns-10000", 800, [10050] * 3 + [0] * 3),
                               ("strace-every2-10us", 50700, [20000] * 2 + [0] * 4)):
        run = write_meta(d / "runs" / f"{case}-getppid", "percall",
                         {"case": case, "syscall": "getppid", "n": 6, "cpu": 0})
        write_csv(run / "raw.csv", ("call", "ns"),
                  [(i, zero + 3 * i + x) for i, x in enumerate(delays)])
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    c = json.loads((d / "summary.json").read_text())["syscalls"]["getppid"]["cases"]
    m, st = c["module-every2-ns-10000"], c["strace-every2-10us"]
    assert (m["every"], m["requested_ns"], m["zero_case"]) == (2, 10000, "module-0")
    assert m["delayed_share"] == 0.5 and m["achieved_ns"] == 10053
    assert m["error_pct"] == pytest.approx(0.53)
    assert st["delayed_share"] == pytest.approx(1 / 3) and st["achieved_ns"] == 20001.5
    assert c["module-ns-10000"]["every"] == 1 and c["module-ns-10000"]["delayed_share"] is None
    assert list(c).index("module-every2-ns-10000") > list(c).index("module-sleep-ns-10000")
    report = (d / "report.txt").read_text()
    assert "the delay module (module-every2-ns-10000) delayed 50.0% of the calls by " \
        "+10,053 ns (1 call in 2 asked)" in report


def test_files_and_table(root, tmp_path):
    d = peers_dir(tmp_path / "p", skipped=[("strace-seccomp-0", "no seccomp here")])
    out = analyse(root, d)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert len(rows) == 2 * len(MEDIANS)
    row = next(r for r in rows if r["case"] == "strace-1us" and r["syscall"] == "read")
    assert float(row["achieved_ns"]) == 1000 and float(row["error_pct"]) == 0
    report = (d / "report.txt").read_text()
    assert report in out.stdout
    assert "strace-seccomp-0" in report and "no seccomp here" in report
    line = next(ln for ln in report.splitlines() if ln.startswith("module-ns-1000 "))
    assert "1,000 ns" in line and "+1,010" in line and "+1.0%" in line
    assert "the delay module +100 ns (+14 %" in report
    assert "strace (strace-1us) asked for 1 us added 1,500 ns (+50 %)" in report
    assert "bpftrace was not measured" in report
    assert (d / "peers.png").stat().st_size > 1000
    assert json.loads((d / "summary.json").read_text())["skipped"] == [
        {"case": "strace-seccomp-0", "syscall": "all", "reason": "no seccomp here"}]


def test_json(root, tmp_path):
    d = peers_dir(tmp_path / "p")
    out = analyse(root, "--json", "--no-plot", d)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["syscalls"]["read"]["baseline_p50"] == 1000


def test_a_missing_zero_case_leaves_achieved_empty(root, tmp_path):
    d = peers_dir(tmp_path / "p", {k: v for k, v in MEDIANS.items() if k != "strace-0"})
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    c = json.loads((d / "summary.json").read_text())["syscalls"]["getppid"]["cases"]
    assert c["strace-1us"]["achieved_ns"] is None and c["strace-1us"]["error_pct"] is None


@pytest.mark.parametrize("medians, message", [
    ({k: v for k, v in MEDIANS.items() if k != "baseline"}, "no baseline case for getppid"),
    ({**MEDIANS, "baseline": (700, None)}, "no baseline case for read"),
    ({**MEDIANS, "ltrace-0": (1000, 1000)}, "unknown case 'ltrace-0'"),
])
def test_bad_runs(root, tmp_path, medians, message):
    d = peers_dir(tmp_path / "p", medians)
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1, out.stderr
    assert message in out.stderr and not (d / "summary.json").exists()


def test_short_raw_and_empty_folder(root, tmp_path):
    d = peers_dir(tmp_path / "p")
    write_csv(d / "runs/strace-0-read/raw.csv", ("call", "ns"), [(0, 5)])
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 1 and "1 calls, but meta.json says n = 5" in out.stderr
    e = write_meta(tmp_path / "e", "peers", {})
    out = analyse(root, e)
    assert out.returncode == 1 and "no runs/*/ folders" in out.stderr


# --- percall ---------------------------------------------------------------

@pytest.fixture(scope="module")
def percall(root):
    subprocess.run(["make", "-s", "-C", root / "userspace/lib", "liblab.a"], check=True)
    subprocess.run(["make", "-s", "-C", root / "userspace/peers"], check=True)
    return root / PERCALL


def test_percall_help(percall, tmp_path):
    out = subprocess.run([percall, "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0 and "Example" in out.stdout and "--syscall" in out.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["-n", "0"], "-n wants a whole number from 1 to"),
    (["-n", "ten"], "-n wants a whole number"),
    (["--warmup", "-1"], "--warmup wants a whole number"),
    (["--syscall", "close"], "--syscall wants getppid or read, not 'close'"),
    (["-C", "x"], "--cpu wants a CPU list like '0-3,6' or 'none', not 'x'"),
    (["-C", "1000"], "--cpu: CPU 1000 is not online"),
    (["-C", "0,1"], "--cpu wants one CPU or 'none', not '0,1'"),
    (["--case", "a b"], "--case wants a name of letters"),
    (["--name", "a/b"], "--name wants a folder name without '/'"),
    (["--bogus"], "unknown option '--bogus'"),
    (["-n"], "-n wants a value"),
    (["extra"], "unexpected argument 'extra'"),
])
def test_percall_bad_input(percall, tmp_path, args, message):
    out = subprocess.run([percall, "-o", tmp_path / "out", *args], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []


def test_percall_writes_its_folder(percall, tmp_path):
    """Any Linux will do for the files (the host here, not the lab kernel)."""
    out = subprocess.run([percall, "-n", "200", "--warmup", "10", "--syscall", "read",
                          "--case", "baseline", "-o", tmp_path, "--name", "r", "-q"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    meta = json.loads((tmp_path / "r/meta.json").read_text())
    assert meta["experiment"] == "percall"
    s = meta["settings"]
    assert (s["case"], s["syscall"], s["n"], s["warmup"], s["cpu"]) == \
        ("baseline", "read", 200, 10, 0)
    assert 0 < s["clock_pair_ns"] < 100000 and s["clock"] == "CLOCK_MONOTONIC"
    rows = list(csv.DictReader(open(tmp_path / "r/raw.csv")))
    assert [int(r["call"]) for r in rows] == list(range(200))
    assert all(int(r["ns"]) > 0 for r in rows)


def host_peers_dir(d, percall):
    """A peers result folder whose cases without the lab kernel are real
    (percall on this machine, alone, under strace with and without seccomp
    and delay injection, under perf stat, as guest.sh runs them) and whose
    module cases, which need the lab kernel, are made up."""
    peers_dir(d, {k: v for k, v in MEDIANS.items() if k.startswith("module")})
    for sc in ("getppid", "read"):
        st = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={sc}"]
        cases = [("baseline", []), ("strace-0", [*st, "--"]),
                 ("strace-seccomp-0", [st[0], "--seccomp-bpf", *st[1:], "--"])]
        cases += [(f"strace-{t}", [*st, "-e", f"inject={sc}:delay_enter={t}", "--"])
                  for t in ("1ns", "1us", "10us")]
        cases += [("perf-tracepoint", ["perf", "stat", "-x,", "-o", d / f"tools/perf-{sc}.csv",
                                       "-e", "raw_syscalls:sys_enter", "--"]),
                  ("baseline-end", [])]
        (d / "tools").mkdir(exist_ok=True)
        for case, tool in cases:
            if tool and not shutil.which(tool[0]):
                continue
            out = subprocess.run([*tool, percall, "-n", "300", "--warmup", "30", "-C", "0",
                                  "--syscall", sc, "--case", case, "-o", d / "runs",
                                  "--name", f"{case}-{sc}", "-q"], capture_output=True,
                                 text=True)
            assert out.returncode == 0 or tool, out.stderr
    return d


def test_plot_is_readable(root, percall, tmp_path, monkeypatch):
    """peers.png of a run measured here as far as the host allows: every
    case a named tick, a bar a case and system call, a legend naming both
    system calls and p99, numbers on a log y axis."""
    d = host_peers_dir(tmp_path / "p", percall)
    mod = analyser
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("peers", "x", mod.add_args, mod.work, [str(d)]) == 0
    [ax] = figures["peers.png"]
    plotcheck.assert_readable([ax])
    s = json.loads((d / "summary.json").read_text())["syscalls"]
    names = list(s["getppid"]["cases"])
    assert ax["xticks"] == names and ax["yscale"] == "log"
    assert ax["patches"] == sum(len(v["cases"]) for v in s.values())
    assert sorted(ax["legend"]) == ["getppid: median", "p99", "read: median"]
    # Where it was measured, as every experiment's picture says: guest/meta.json.
    head = ax["figure_title"]
    assert head.startswith("peers: per-call latency by tool and case") and \
        "\nkernel 6.12.test-lab (stock" in head and ax["title"] == "", head


def test_without_guest_meta_the_plot_says_the_baselines_kernel(root, tmp_path, monkeypatch):
    """A folder without guest/meta.json: the first system call's baseline
    run says where the calls were timed, in the report and the picture."""
    d = peers_dir(tmp_path / "p")
    (d / "guest/meta.json").unlink()
    write_meta(d / "runs/baseline-getppid", "percall",
               {"case": "baseline", "syscall": "getppid", "n": len(OFFSETS), "warmup": 2,
                "cpu": 0, "clock_pair_ns": 40.0}, kernel={"release": "6.12.baseline"})
    mod = analyser
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("peers", "x", mod.add_args, mod.work, [str(d)]) == 0
    assert "\nkernel 6.12.baseline, 2 CPUs" in figures["peers.png"][0]["figure_title"]
    assert (d / "report.txt").read_text().startswith("peers: kernel 6.12.baseline, 2 CPUs")


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/peers/run.sh", ["--warmup", "x"], {}, "--warmup wants a whole number"),
    ("userspace/peers/guest.sh", ["/nonexistent", "5", "-1"], {}, "WARMUP wants"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_meta_json_keeps_the_whole_command_line = runners.meta_test(
    "peers", ["percall"], ["-n", "9", "--warmup", "3", "--no-analysis"], "peers")
