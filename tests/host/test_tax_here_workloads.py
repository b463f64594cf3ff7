"""lablib.tax.here_workloads: the taxes on the workloads on the running
kernel.  Its rounds' order, its figures from made-up result folders (the
measured change a median of paired differences with its interval, the
prediction calls x the tax's ns a call over the mix), its refusals, and
one small real run on this machine's kernel."""
import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from lablib.tax import here_workloads as hw

TOOL = [sys.executable, "-m", "lablib.tax.here_workloads"]


def write_csv(path, columns, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        w.writerows(rows)


def sweep_folder(parent, workload, seconds, calls=0, by_call=None):
    """A finished sweep of @workload at ns 0 in @parent: a window a value
    of @seconds, one unit each, and (a counted sweep) its @by_call."""
    d = parent / f"{workload}-1"
    write_csv(d / "raw.csv", ("workload", "measure", "loops", "ns", "repeat", "units",
                              "seconds", "syscalls"),
              [(workload, workload, "", 0, i, 1, s, calls) for i, s in enumerate(seconds, 1)])
    if by_call:
        write_csv(d / "by_call.csv", ("point", "loops", "ns", "nr", "calls"),
                  [(1, "", 0, nr, n) for nr, n in by_call.items()])
    (d / "meta.json").write_text("{}")
    (parent / f"latest-{workload}").symlink_to(d.name)
    return d


def tax_run(d, cells):
    """A --here tax folder whose summary has @cells {tax: {nr: (ns, lo, hi)}}."""
    d.mkdir(parents=True)
    rows = [{"tax": t, "nr": nr, "added_ns": v[0], "added_low_ns": v[1], "added_high_ns": v[2]}
            for t, by_nr in cells.items() for nr, v in by_nr.items()]
    (d / "summary.json").write_text(json.dumps({"taxes": list(cells), "rows": rows}))
    (d / "meta.json").write_text(json.dumps({
        "experiment": "tax", "kernel": {"release": "6.18"},
        "settings": {"here": True, "clock": "host", "cpu_model": "Test CPU"}}))
    return d


def made_up(tmp_path, base=0.010, taxed=None, rounds=6):
    """A tax folder and the grep rounds of two taxes: seccomp-linear, 1,000
    calls of which 80 % read (timed: 100 ns) and 20 % close (not timed);
    trace within the noise."""
    d = tax_run(tmp_path / "tax", {"seccomp-linear": {0: (100.0, 90.0, 110.0),
                                                      3: (None, None, None)},
                                   "trace": {0: (400.0, 300.0, 500.0)}})
    # A row without a figure is left out of the cells.
    s = json.loads((d / "summary.json").read_text())
    s["rows"] = [r for r in s["rows"] if r["added_ns"] is not None]
    (d / "summary.json").write_text(json.dumps(s))
    out = d / "workloads-here/grep"
    sweep_folder(out / "count", "grep", [0.011], calls=1000, by_call={0: 800, 3: 200})
    noise = [0.0004, -0.0003, 0.0002, -0.0001, 0.0003, -0.0004]
    taxed = taxed or {"seccomp-linear": [0.001] * rounds, "trace": noise[:rounds]}
    for k in range(1, rounds + 1):
        drift = 0.001 * k
        sweep_folder(out / f"base-{k:02d}" / "none", "grep", [base + drift] * 3)
        for tax, extra in taxed.items():
            sweep_folder(out / f"base-{k:02d}" / tax, "grep",
                         [base + drift + extra[k - 1]] * 3)
    return d


def report(d, *args):
    return subprocess.run([*TOOL, str(d), "--workloads", "grep", "--report", *args],
                          capture_output=True, text=True)


def test_each_round_runs_the_untaxed_work_and_every_tax_once():
    runs = hw.plan(["grep", "cmd"], ["seccomp-linear", "trace", "audit-one"], 6, seed=3)
    assert len(runs) == 2 * (6 * 3 + 6 * 2)
    for w in ("grep", "cmd"):
        for k in range(1, 7):
            assert sorted(t for ww, p, kk, t in runs if (ww, p, kk) == (w, "base", k)) == \
                ["none", "seccomp-linear", "trace"]
            assert sorted(t for ww, p, kk, t in runs if (ww, p, kk) == (w, "audit", k)) == \
                ["audit-one", "none"]
        # The audit rounds after the others: audit stays in what it touched.
        phases = [p for ww, p, _, _ in runs if ww == w]
        assert phases == sorted(phases, key=("base", "audit").index)
    orders = {tuple(t for ww, p, kk, t in runs if (ww, p, kk) == ("grep", "base", k))
              for k in range(1, 7)}
    assert len(orders) > 1, "every round in the same order"
    assert runs == hw.plan(["grep", "cmd"], ["seccomp-linear", "trace", "audit-one"], 6, 3)


def test_the_measured_change_is_paired_by_round_and_the_prediction_is_calls_times_ns(
        tmp_path):
    d = made_up(tmp_path)
    out = report(d)
    assert out.returncode == 0, out.stderr
    rows = {r["tax"]: r for r in json.loads((d / "workloads-here.json").read_text())["rows"]}
    sec = rows["seccomp-linear"]
    # The rounds drift by 1 ms each; the pairs take it out.
    base = 0.010 + 0.001 * 3.5
    assert sec["base_s"] == pytest.approx(base)
    assert sec["measured_change_pct"] == pytest.approx(100 * 0.001 / base)
    assert sec["resolved"] is True and sec["rounds"] == 6
    # close (20 % of the calls) has no figure of its own: the median of the
    # tax's (read's alone), so 100 ns a call, 90 to 110.
    assert sec["covered_pct"] == pytest.approx(80)
    assert sec["predicted_change_pct"] == pytest.approx(100 * 1000 * 100e-9 / base)
    assert sec["predicted_low_pct"] == pytest.approx(100 * 1000 * 90e-9 / base)
    assert sec["virtual_change_pct"] == pytest.approx(0.94)
    trace = rows["trace"]
    assert trace["resolved"] is False
    assert trace["measured_low_pct"] < 0 < trace["measured_high_pct"]
    text = (d / "workloads-here.txt").read_text()
    assert "Test CPU" in text and "~" in text.splitlines()[-3], text
    assert (d / "workloads-here.png").stat().st_size > 0
    assert list(csv.DictReader(open(d / "workloads-here.csv")))[0]["tax"] == "seccomp-linear"


def test_a_measure_whose_calls_were_not_counted_has_no_prediction(tmp_path):
    """Through the BPF delay a server's reply has no count of its calls
    (raw.csv's syscalls empty): measured, not predicted."""
    d = made_up(tmp_path)
    raw = d / "workloads-here/grep/count/grep-1/raw.csv"
    raw.write_text(raw.read_text().replace(",0,1,1,0.011,1000", ",0,1,1,0.011,"))
    out = report(d)
    assert out.returncode == 0, out.stderr
    rows = json.loads((d / "workloads-here.json").read_text())["rows"]
    assert rows and all(r["predicted_change_pct"] is None and r["calls_per_unit"] is None
                        and r["measured_change_pct"] is not None for r in rows), rows


def test_fewer_than_six_rounds_give_no_interval(tmp_path):
    d = made_up(tmp_path, rounds=5)
    out = report(d)
    assert out.returncode == 0, out.stderr
    rows = json.loads((d / "workloads-here.json").read_text())["rows"]
    assert all(r["measured_low_pct"] is None and not r["resolved"] for r in rows), rows


@pytest.mark.parametrize("args, message", [
    (["--workloads", "kbuild"], "--workloads wants some of grep,cmd,redis"),
    (["--taxes", "pti"], "--taxes wants some of seccomp-linear,trace"),
    (["--rounds", "5"], "--rounds wants a whole number >= 6"),
    (["--runs", "0"], "--runs wants a whole number >= 1"),
])
def test_bad_input_is_one_line(tmp_path, args, message):
    d = made_up(tmp_path)
    out = subprocess.run([*TOOL, str(d), *args], capture_output=True, text=True)
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_folder_that_is_not_a_here_tax_run_is_refused(tmp_path):
    d = made_up(tmp_path)
    meta = json.loads((d / "meta.json").read_text())
    meta["settings"]["here"] = False
    (d / "meta.json").write_text(json.dumps(meta))
    out = report(d)
    assert out.returncode == 1 and "not a tax folder of the running kernel" in out.stderr
    out = report(tmp_path / "nosuch")
    assert out.returncode == 1 and "no summary.json there" in out.stderr


def test_the_dry_run_names_the_calls_the_workloads_make(tmp_path):
    d = made_up(tmp_path)
    out = subprocess.run([*TOOL, str(d), "--workloads", "grep", "--dry-run"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "1 counts and 18 runs" in out.stdout and "0 not yet there" in out.stdout
    # read makes 80 % of the calls; 95 % needs close too.
    assert "CALLS=0,3" in out.stdout, out.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the sweeps on this kernel need root")
@pytest.mark.skipif(not shutil.which("grep"), reason="no grep")
def test_a_small_run_on_this_machines_kernel(tmp_path):
    """grep at the small scale under a seccomp filter, the trace events and
    bpftrace where they can be, six rounds: the count
    through the delay that counts (BPF or the module), each round's sweeps
    with nothing on the calls but the tax, and the table."""
    from lablib.bpfdelay.loader import cannot_run
    if cannot_run() and "syscall_hook_register" not in pathlib.Path(
            "/proc/kallsyms").read_text():
        pytest.skip(f"no delay here counts calls: {cannot_run()}")
    # trace in an instance of its own, not trace-cmd's top one, where tracefs is.
    taxes = {"seccomp-linear": {0: (50.0, 45.0, 55.0)}}
    if pathlib.Path("/sys/kernel/tracing").is_dir():
        taxes["trace"] = {0: (400.0, 390.0, 410.0)}
    # bpftrace beside the windows, not starting them (-c takes one command).
    if shutil.which("bpftrace"):
        taxes["bpftrace"] = {0: (180.0, 170.0, 190.0)}
    d = tax_run(tmp_path / "tax", taxes)
    n = 1 + 6 * (1 + len(taxes))
    out = subprocess.run([*TOOL, str(d), "--workloads", "grep", "--scale", "small",
                          "-r", "1"], capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"[{n}/{n}] grep: base round" in out.stderr, out.stderr
    rows = json.loads((d / "workloads-here.json").read_text())["rows"]
    assert [r["tax"] for r in rows] == list(taxes)
    for row in rows:
        assert row["rounds"] == 6 and row["calls_per_unit"] > 0 and row["base_s"] > 0
    for k in range(1, 7):
        (f,) = (d / f"workloads-here/grep/base-{k:02d}/none").glob("grep-*")
        meta = json.loads((f / "meta.json").read_text())["settings"]
        assert meta["delay"] == "none", meta
        (f,) = (d / f"workloads-here/grep/base-{k:02d}/seccomp-linear").glob("grep-*")
        assert json.loads((f / "meta.json").read_text())["settings"]["tax"] == \
            "seccomp-linear"
    # Run again: every sweep is there, none runs.
    out = subprocess.run([*TOOL, str(d), "--workloads", "grep", "--scale", "small", "-r",
                          "1"], capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0 and "[1/" not in out.stderr, out.stderr


def test_a_run_has_nothing_on_the_calls_but_its_tax():
    count = hw.sweep_args("grep", 1, "out", count=True)
    assert "--delay" not in count and "--hooks" not in count
    assert count[count.index("-o") + 1] == "out"
    untaxed = hw.sweep_args("grep", 3, "out", "none")
    assert untaxed[untaxed.index("--delay") + 1] == "none" and "--hooks" not in untaxed
    taxed = hw.sweep_args("cmd", 3, "out", "trace")
    assert "TAX=trace" in taxed and not any(a.startswith("AUDIT_EXE=") for a in taxed)
    assert taxed[taxed.index("--") + 1:] == ["tar", "cf", "/dev/null", "/usr/include/linux"]
    # The audit rules watch the workload's own program, as run.sh --here's
    # watch callcost alone.
    audited = hw.sweep_args("cmd", 3, "out", "audit-one")
    (exe,) = [a for a in audited if a.startswith("AUDIT_EXE=")]
    assert os.path.basename(exe) == "tar" or exe == "AUDIT_EXE=tar", exe


@pytest.mark.skipif(os.geteuid() != 0, reason="counting on this kernel needs root")
def test_the_counts_add_the_workloads_calls_to_those_given_once_each(tmp_path):
    """run.sh --here's CALLS and the workloads' calls, each once (a call
    named twice is refused by the table's timing)."""
    d = made_up(tmp_path)
    out = subprocess.run([*TOOL, str(d), "--workloads", "grep", "--count-only", "--besides",
                          "3,110"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3,110,0"
