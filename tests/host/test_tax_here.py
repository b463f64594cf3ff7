"""userspace/tax on the running kernel (run.sh --here): lablib.tax.here
on made-up folders of rounds (each figure the median of the rounds' paired
differences with its distribution-free interval, a tax within the noise,
the audit rounds, the boot-only taxes' lines, the virtual clock beside
it, bad input refused), the runner's refusals, and one real run on this
machine's kernel when the tests run as root."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from resultdirs import write_csv, write_meta
from runners import check_bad_value

ANALYSE = "lablib.tax.analyse"
RAW = ("phase", "round", "position", "tax", "nr", "batch", "calls", "ns_per_call")
RUNS = ("phase", "round", "position", "tax", "start_s", "end_s", "load1")
RUNNER = "userspace/tax/run.sh"
MITIGATIONS = {"meltdown": "Not affected",
               "spectre_v2": "Mitigation: Retpolines; STIBP: disabled"}


def here_dir(d, runs, taxes="none,seccomp-linear,trace", rounds=12, batches=3, **settings):
    """A --here folder.  @runs: {(phase, round, tax, nr): ns}, each run
    @batches batches of that ns but one batch 40 % slower (a preemption,
    which the run's median leaves out)."""
    write_meta(d, "tax", {"here": True, "clock": "host", "taxes": taxes, "rounds": rounds,
                          "batches": batches, "calls_per_batch": 100, "seed": 7, "cpu": 1,
                          "virtual": "", "cpu_model": "test EPYC", "hypervisor": "KVM",
                          "mitigations": MITIGATIONS, **settings})
    rows, run_rows = [], []
    for i, ((phase, rnd, tax, nr), ns) in enumerate(runs.items()):
        for b in range(batches):
            rows.append((phase, rnd, i, tax, nr, b, 100, ns * (1.4 if b == 1 else 1.0)))
        run_rows.append((phase, rnd, i, tax, 1000.0 + i, 1000.5 + i, 2.5 + i % 2))
    write_csv(d / "raw.csv", RAW, rows)
    write_csv(d / "runs.csv", RUNS, run_rows)
    write_csv(d / "skipped.csv", ("tax", "reason"), [])
    return d


def analyse(d, *args):
    return subprocess.run([sys.executable, "-m", ANALYSE, str(d), *args],
                          capture_output=True, text=True)


def summary(d):
    s = json.loads((d / "summary.json").read_text())
    return s, {(r["phase"], r["tax"], r["nr"]): r for r in s["rows"]}


# The seccomp filter's 50 ns a call on this made-up CPU, the rounds' noise
# on it, and a drift of the whole machine from round to round.
NOISE = [-6, 4, -2, 9, -8, 1, 3, -4, 7, -1, 2, -3]


def drifting_rounds(tax_ns=50.0, trace_noise=None):
    runs = {}
    for r, e in enumerate(NOISE, 1):
        drift = 20.0 * r
        for nr, untaxed in ((110, 160.0), (0, 116.0)):
            runs[("base", r, "none", nr)] = untaxed + drift
            runs[("base", r, "seccomp-linear", nr)] = untaxed + drift + tax_ns + e
            trace = 400.0 + e if trace_noise is None else trace_noise[r - 1]
            runs[("base", r, "trace", nr)] = untaxed + drift + trace
    return runs


def test_a_figure_is_the_median_of_the_rounds_differences_with_its_interval(tmp_path):
    d = here_dir(tmp_path / "h", drifting_rounds())
    out = analyse(d)
    assert out.returncode == 0, out.stderr
    s, rows = summary(d)
    r = rows[("base", "seccomp-linear", 110)]
    diffs = sorted(50.0 + e for e in NOISE)
    assert r["rounds"] == 12
    assert r["added_ns"] == pytest.approx(np.median(diffs))
    # The sign test's order statistics for 12 rounds: the 3rd and 10th.
    assert (r["added_low_ns"], r["added_high_ns"]) == (pytest.approx(diffs[2]),
                                                       pytest.approx(diffs[9]))
    assert r["includes_zero"] is False
    # The rounds' drift (20 ns a round) is in the unpaired check's
    # interval, not in the paired one.
    assert r["hl_high_ns"] - r["hl_low_ns"] > 5 * (r["added_high_ns"] - r["added_low_ns"])
    base = rows[("base", "none", 110)]
    assert base["median_ns"] == pytest.approx(160 + 20 * 6.5)
    assert base["median_low_ns"] is not None
    text = (d / "report.txt").read_text()
    assert "seccomp-linear" in text and "~+" not in text
    assert (d / "tax.png").stat().st_size > 20000


def test_a_tax_within_the_noise_has_an_interval_around_0(tmp_path):
    noise = [12.0, -9.0, 5.0, -14.0, 3.0, -2.0, 8.0, -6.0, 1.0, -11.0, 10.0, -4.0]
    d = here_dir(tmp_path / "h", drifting_rounds(trace_noise=noise))
    out = analyse(d)
    assert out.returncode == 0, out.stderr
    _, rows = summary(d)
    r = rows[("base", "trace", 0)]
    assert r["includes_zero"] is True
    assert r["added_low_ns"] < 0 < r["added_high_ns"]
    assert not rows[("base", "seccomp-linear", 0)]["includes_zero"]
    text = (d / "report.txt").read_text()
    line = next(x for x in text.splitlines() if x.startswith("trace") and "read (0)" in x)
    assert "~+" in line or "~-" in line, line


def test_the_boot_only_taxes_get_a_line_each(tmp_path):
    """pti and retpoline are not measured on the running kernel: a line
    each says what the kernel has in force, the virtual clock's figure and
    the hardware path, in the report and the summary."""
    d = here_dir(tmp_path / "h", drifting_rounds())
    out = analyse(d, "--no-plot")
    assert out.returncode == 0, out.stderr
    text = (d / "report.txt").read_text()
    pti = next(x for x in text.splitlines() if x.startswith("not measured here: pti"))
    assert "a boot option (pti=on)" in pti and "meltdown: Not affected" in pti
    assert "the virtual clock: +10 ns a call" in pti and "make deb" in pti
    ret = next(x for x in text.splitlines() if x.startswith("not measured here: retpoline"))
    assert "spectre_v2: Mitigation: Retpolines" in ret and "make deb" in ret
    s, _ = summary(d)
    assert [b["tax"] for b in s["boot_only"]] == ["pti", "retpoline"]


def test_the_virtual_clock_beside_the_host(tmp_path):
    """By default the README's recorded figures; with --virtual a tax run
    of the VM: the host's ns per instruction of each tax against the
    untaxed calls' own says what the emulator hides."""
    d = here_dir(tmp_path / "h", drifting_rounds())
    assert analyse(d, "--no-plot").returncode == 0
    s, rows = summary(d)
    assert rows[("base", "trace", 110)]["virtual_ns"] == pytest.approx(1271.2)
    assert "README" in s["virtual_source"]
    vm = write_meta(tmp_path / "vm", "tax", {"calls": "0,110"})
    write_meta(vm / "boots/base", "tax", {"boot": "base"},
               machine={"clock": {"kind": "virtual", "shift": 0}, "cpus": 1})
    (vm / "summary.json").write_text(json.dumps({"rows": [
        {"tax": "none", "nr": 110, "median_ns": 300.0, "added_ns": 0.0},
        {"tax": "none", "nr": 0, "median_ns": 200.0, "added_ns": 0.0},
        {"tax": "trace", "nr": 110, "median_ns": 1300.0, "added_ns": 1000.0},
        {"tax": "trace", "nr": 0, "median_ns": 1200.0, "added_ns": 1000.0}]}))
    out = analyse(d, "--no-plot", "--virtual", vm)
    assert out.returncode == 0, out.stderr
    s, rows = summary(d)
    assert str(vm) in s["virtual_source"]
    trace = rows[("base", "trace", 110)]
    assert trace["virtual_ns"] == 1000.0
    assert trace["ns_per_instruction"] == pytest.approx(trace["added_ns"] / 1000.0)
    assert rows[("base", "seccomp-linear", 110)]["virtual_ns"] is None
    [h] = s["hides"]
    ref = (rows[("base", "none", 110)]["median_ns"] + rows[("base", "none", 0)]["median_ns"]) / 500
    assert h["tax"] == "trace" and h["call_path_ns_per_instruction"] == pytest.approx(ref)
    assert "what the virtual clock hides" in (d / "report.txt").read_text()
    # A folder that is not on the virtual clock is not the virtual clock's.
    out = analyse(d, "--no-plot", "--virtual", d)
    assert out.returncode == 1 and "not a tax run on the virtual clock" in out.stderr


def test_the_audit_rounds_are_measured_against_their_own_untaxed_runs(tmp_path):
    runs = drifting_rounds()
    for r, e in enumerate(NOISE, 13):
        for nr, untaxed in ((110, 160.0), (0, 116.0)):
            runs[("audit", r, "none", nr)] = untaxed + 100.0
            runs[("audit", r, "audit-one", nr)] = untaxed + 100.0 + 600.0 + e
    d = here_dir(tmp_path / "h", runs, taxes="none,seccomp-linear,trace,audit-one")
    out = analyse(d, "--no-plot")
    assert out.returncode == 0, out.stderr
    s, rows = summary(d)
    assert rows[("audit", "audit-one", 0)]["added_ns"] == pytest.approx(600 + np.median(NOISE))
    # The first rounds' untaxed getppid drifted from 180 to 400 ns; the
    # audit rounds' lie at 260: the shift is read off the runs, unpaired.
    [shift] = [a for a in s["audit_shift"] if a["nr"] == 110]
    assert shift["low_ns"] <= shift["shift_ns"] <= shift["high_ns"]
    assert "audit left in every new process" in (d / "report.txt").read_text()


def test_a_virtual_clock_run_takes_no_virtual_option(tmp_path):
    vm = write_meta(tmp_path / "vm", "tax", {"calls": "0"})
    write_csv(vm / "raw.csv", ("tax", "nr", "batch", "calls", "ns_per_call"),
              [("none", 0, 0, 100, 260.0)])
    out = analyse(vm, "--no-plot", "--virtual", vm)
    assert out.returncode == 1 and "--virtual is for a run.sh --here folder" in out.stderr


@pytest.mark.parametrize("change, message", [
    pytest.param(lambda runs: {k: v for k, v in runs.items() if k[2] != "none"},
                 "no rows of tax 'none'", id="no-untaxed-runs"),
    pytest.param(lambda runs: {**runs, ("base", 13, "trace", 0): 500.0}, None,
                 id="a-taxed-run-alone-in-its-round"),
    pytest.param(lambda runs: {("later", *k[1:]): v for k, v in runs.items()},
                 "phase 'later' is not", id="unknown-phase"),
    pytest.param(lambda runs: {**runs, ("base", 1, "trace", 0): -5.0}, "is not a time > 0",
                 id="negative-time"),
    pytest.param(lambda runs: {**{k: v for k, v in runs.items() if k[2] == "none"},
                               ("base", 20, "trace", 0): 500.0},
                 "trace on call 0: no round with an untaxed run beside it", id="no-pairs"),
])
def test_bad_input_is_one_line(tmp_path, change, message):
    runs = change(drifting_rounds())
    d = here_dir(tmp_path / "h", runs)
    out = analyse(d, "--no-plot")
    if message is None:
        # A taxed run in a round of its own is left out of the pairs.
        assert out.returncode == 0, out.stderr
        return
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_run_folder_needs_its_runs_numbers(tmp_path):
    d = here_dir(tmp_path / "h", drifting_rounds())
    text = (d / "raw.csv").read_text().replace("base,1,0,none,110,0,", "base,one,0,none,110,0,")
    (d / "raw.csv").write_text(text)
    out = analyse(d, "--no-plot")
    assert out.returncode == 1 and "round 'one'" in out.stderr, out.stderr


# --- the runner ------------------------------------------------------------------------

@pytest.mark.parametrize("args, env, message", [
    (["--bogus"], {}, "unknown argument '--bogus'"),
    (["--here", "-r", "3"], {}, "unknown argument '-r'"),
    (["--virtual", "/tmp"], {}, "--virtual goes with --here"),
    (["--here", "--virtual", "/nonexistent"], {}, "no summary.json there"),
    (["--here"], {"ROUNDS": "5"}, "ROUNDS wants a whole number >= 6"),
    (["--here"], {"TAXES": "none,nosuch"}, "unknown tax 'nosuch'"),
    (["--here"], {"TAXES": "seccomp-linear"}, "TAXES must hold none"),
    (["--here"], {"WORKLOADS": "kbuild"}, "WORKLOADS wants some of grep,cmd,redis with --here"),
    (["--here"], {"HOST_TAXES": "pti"}, "HOST_TAXES runs in the lab's VM"),
    (["--here"], {"CPU": "4096"}, "CPU=4096: this machine has no such CPU"),
])
def test_the_runner_refuses_a_bad_argument(args, env, message):
    check_bad_value(RUNNER, args, message, env=env)


def fake_path(tmp_path, without=(), uid=None):
    """A PATH of links to every program of this one's, but @without, and
    with @uid an 'id' that says it."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        p = pathlib.Path(d)
        if not p.is_dir():
            continue
        for f in p.iterdir():
            if f.name not in without and not (farm / f.name).exists() and os.access(f, os.X_OK):
                (farm / f.name).symlink_to(f)
    if uid is not None:
        (farm / "id").unlink(missing_ok=True)
        (farm / "id").write_text(f"#!/bin/sh\necho {uid}\n")
        (farm / "id").chmod(0o755)
    return str(farm)


def runner(root, tmp_path, *args, **env):
    return subprocess.run([root / RUNNER, *args], capture_output=True, text=True,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL)


def test_the_runner_refuses_a_call_it_does_not_know(root, tmp_path):
    out = runner(root, tmp_path, "--here", "-o", tmp_path / "out", CALLS="nosuchcall")
    assert out.returncode == 2 and "run.sh: CALLS: see above" in out.stderr, out.stderr
    assert not (tmp_path / "out").exists()


def test_the_runner_needs_root(root, tmp_path):
    out = runner(root, tmp_path, "--here", "-o", tmp_path / "out",
                 PATH=fake_path(tmp_path, uid=1000))
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines() == [
        "run.sh: error: needs root (--here: seccomp filters, tracing, bpftrace and audit on "
        "the running kernel)"]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the runner looks at the taxes as root")
@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_a_named_tax_whose_tool_is_missing_is_refused(root, tmp_path):
    out = runner(root, tmp_path, "--here", "-o", tmp_path / "out", TAXES="none,strace",
                 PATH=fake_path(tmp_path, without=("strace",)))
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines() == [
        "run.sh: error: strace cannot be applied here: strace is not installed"]
    assert not (tmp_path / "out").exists()


# --- a real run on this machine's kernel -------------------------------------------------

def seccomp_of_self():
    status = pathlib.Path("/proc/self/status").read_text()
    return next(line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:"))


@pytest.mark.skipif(os.geteuid() != 0, reason="--here applies the taxes as root")
def test_a_tiny_run_on_this_machines_kernel(root, tmp_path):
    if not (root / "userspace/tax/seccomptax").exists():
        pytest.skip("seccomptax is not built (libseccomp-dev; make userspace)")
    out = runner(root, tmp_path, "--here", "-o", tmp_path / "out", CALLS="getppid",
                 TAXES="none,seccomp-linear", ROUNDS="6", BATCHES="5", PER_BATCH="100")
    assert out.returncode == 0, out.stderr + out.stdout
    [d] = [p for p in (tmp_path / "out").iterdir() if not p.is_symlink()]
    assert d.name.startswith("tax-") and (tmp_path / "out/latest-tax-here").resolve() == d
    meta = json.loads((d / "meta.json").read_text())
    st = meta["settings"]
    assert st["here"] is True and st["clock"] == "host" and st["calls"] == "110"
    assert "spectre_v2" in st["mitigations"] and meta["kernel"]["release"] == os.uname().release
    s, rows = summary(d)
    r = rows[("base", "seccomp-linear", 110)]
    assert r["rounds"] == 6
    # What the filter adds (some tens of ns on a quiet CPU) is a real CPU's
    # figure, neighbours included, which a busy machine can hide in six
    # rounds: the run gives it with its interval, whatever its sign.
    assert r["added_low_ns"] <= r["added_ns"] <= r["added_high_ns"]
    assert "not measured here: pti" in out.stdout and (d / "tax.png").exists()
    assert seccomp_of_self() == "0"


@pytest.mark.skipif(os.geteuid() != 0, reason="--here applies the taxes as root")
@pytest.mark.skipif(not shutil.which("bpftrace"), reason="bpftrace is not installed")
def test_the_bpftrace_tax_leaves_only_rows(root, tmp_path):
    """bpftrace -c starts the timed command and ends its output with empty
    lines: here.sh keeps only the rows."""
    if subprocess.run(["bpftrace", "-e", "BEGIN { exit(); }"], capture_output=True).returncode:
        pytest.skip("bpftrace cannot load a program on this kernel")
    d = tmp_path / "h"
    d.mkdir()
    out = subprocess.run([root / "userspace/tax/here.sh", d, "110", "none,bpftrace", "1", "2",
                          "50", "1", str(os.cpu_count() - 1)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = (d / "raw.csv").read_text().splitlines()
    assert all(len(line.split(",")) == len(RAW) for line in lines), lines
    assert sum(line.split(",")[3] == "bpftrace" for line in lines) == 2
