"""userspace/peers in the lab kernel: percall writes its files with
plausible per-call times for both system calls, strace's delay_enter=10us
shows up in them, and a short guest.sh run measures every case it can and
leaves the module unloaded."""
import csv
import json
import statistics
import subprocess
import sys

from conftest import MODDIR, ROOT, kernel_problems

PERCALL = ROOT / "userspace/peers/percall"
N = 500


def percall(out, name, *args, tool=()):
    res = subprocess.run([*tool, PERCALL, "-n", str(N), "--warmup", "100", "-C", "0",
                          "-o", out, "--name", name, "-q", *args],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    d = out / name
    meta = json.loads((d / "meta.json").read_text())
    ns = [int(r["ns"]) for r in csv.DictReader(open(d / "raw.csv"))]
    return meta, ns


def test_percall_files_for_both_syscalls(clean_module, tmp_path):
    for sc in ("getppid", "read"):
        meta, ns = percall(tmp_path, sc, "--syscall", sc, "--case", "baseline")
        s = meta["settings"]
        assert meta["experiment"] == "percall" and "-lab" in meta["kernel"]["release"]
        assert (s["case"], s["syscall"], s["n"], s["cpu"]) == ("baseline", sc, N, 0)
        assert s["vdso"] is True and s["clocksource"] == "tsc", s
        med = statistics.median(ns)
        assert len(ns) == N and min(ns) > 0
        # Each figure spans a clock read and the call: above the pair of
        # back-to-back reads.  No upper bound: a busy host stretches any.
        assert s["clock_pair_ns"] < med, (sc, s["clock_pair_ns"], med)
    assert kernel_problems() == []


def test_strace_delay_enter_10us_adds_it(clean_module, tmp_path):
    # strace holds the tracee stopped until a 10 us timer expires, and a
    # timer never fires early: every delayed call lasts at least 10 us,
    # however fast or busy the machine.  (The medians of two separate runs
    # compared one host's moods, not the delay.)
    st = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=getppid"]
    _, slow = percall(tmp_path, "s10", "--case", "strace-10us",
                      tool=[*st, "-e", "inject=getppid:delay_enter=10us", "--"])
    assert min(slow) >= 10_000, f"a call strace delayed by 10 us took {min(slow)} ns"
    assert kernel_problems() == []


def test_guest_script_runs_every_case(clean_module, tmp_path):
    d = tmp_path / "peers.incomplete"
    d.mkdir()
    # As run.sh makes it on the host: the folder and its meta.json.
    subprocess.run([ROOT / "userspace/lib/lab", "meta", d, "peers", "n:=200"], check=True)
    res = subprocess.run([ROOT / "userspace/peers/guest.sh", d, "200", "20"],
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not MODDIR.exists(), "guest.sh must unload the delay module"
    command = json.loads((d / "guest/meta.json").read_text())["command"]
    assert command == [str(ROOT / "userspace/peers/guest.sh"), str(d), "200", "20"]
    runs = {p.name for p in (d / "runs").iterdir()}
    for case in ("baseline", "module-0", "module-loops-1", "module-exit-ns-10000",
                 "module-sleep-ns-10000", "module-every2-ns-10000", "strace-0", "strace-1ns",
                 "strace-1us", "strace-10us", "strace-exit-10us", "strace-every2-10us",
                 "baseline-end"):
        assert {f"{case}-getppid", f"{case}-read"} <= runs, case
    skipped = {r["case"]: r["reason"] for r in csv.DictReader(open(d / "skipped.csv"))}
    assert "CONFIG_BPF_SYSCALL" in skipped["bpftrace"]
    assert ("perf-tracepoint-getppid" in runs) != ("perf-tracepoint" in skipped)
    assert ("module-ns-1000-read" in runs) != ("module-ns-1000" in skipped)
    assert ("strace-seccomp-0-read" in runs) != ("strace-seccomp-0" in skipped)
    out = subprocess.run([sys.executable, "-m", "lablib.peers.analyse", "--json",
                          "--no-plot", d], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)["syscalls"]["getppid"]
    assert s["overhead_at_zero"]["strace"]["ns"] > 0
    # Every other getppid delayed by 10 us, a spin the module times on its
    # own clock: at least half the calls are that much slower, and only
    # the host's noise adds to them.
    assert 0.45 <= s["cases"]["module-every2-ns-10000"]["delayed_share"] <= 0.75
    assert kernel_problems() == []
