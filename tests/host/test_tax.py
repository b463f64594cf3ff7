"""userspace/tax: analyse.py on a made-up raw.csv (each tax's ns per call,
its exactness, the skipped taxes) and the tools' refusals."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from resultdirs import write_csv, write_meta

ANALYSE = "userspace/tax/analyse.py"
COLUMNS = ("tax", "nr", "batch", "calls", "ns_per_call")


def tax_dir(d, batches, skipped=()):
    """@batches: {(tax, nr): [ns, ...]}."""
    write_meta(d, "tax", {"calls": "0,110", "taxes": "none,trace"})
    rows = [(t, nr, i, 100, ns) for (t, nr), v in batches.items() for i, ns in enumerate(v)]
    write_csv(d / "raw.csv", COLUMNS, rows)
    write_csv(d / "skipped.csv", ("tax", "reason"), [(t, f'"{r}"') for t, r in skipped])
    return d


def analyse(root, d, *args):
    return subprocess.run([sys.executable, root / ANALYSE, str(d), *args],
                          capture_output=True, text=True)


def test_each_tax_is_its_median_less_the_untaxed_one(root, tmp_path):
    d = tax_dir(tmp_path / "t", {("none", 0): [260, 260, 260, 900],
                                 ("none", 110): [287, 287, 287, 287],
                                 ("trace", 0): [1508, 1507, 1508, 1508],
                                 ("trace", 110): [1534, 1535, 1534, 1534],
                                 ("strace", 0): [5000, 40000, 5000, 40000],
                                 ("strace", 110): [25000, 25001, 25000, 25001]},
                [("audit-one", "the kernel has no audit")])
    out = analyse(root, d, "--no-plot")
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    cells = {(r["tax"], r["nr"]): r for r in s["rows"]}
    assert s["taxes"] == ["trace", "strace"] and s["calls"] == [0, 110]
    assert cells[("trace", 0)]["added_ns"] == pytest.approx(1248)
    assert cells[("trace", 110)]["added_ns"] == pytest.approx(1247)
    # One slow batch of the untaxed read does not move the median.
    assert cells[("trace", 0)]["exact"]
    # strace's middle batches spread 35 us, more than the 22 us it adds: not a figure.
    assert not cells[("strace", 0)]["exact"] and cells[("strace", 110)]["exact"]
    text = (d / "report.txt").read_text()
    assert "not measured: audit-one: the kernel has no audit" in text
    assert "~+" in text


def test_the_picture_is_drawn(root, tmp_path):
    d = tax_dir(tmp_path / "t", {("none", 0): [260] * 3, ("trace", 0): [1508] * 3})
    out = analyse(root, d)
    assert out.returncode == 0, out.stderr
    assert (d / "tax.png").stat().st_size > 10000


@pytest.mark.parametrize("batches, message", [
    ({("trace", 0): [1508]}, "no rows of tax 'none'"),
    ({("none", 0): [260], ("trace", 1): [300]}, "no untaxed run: trace/1"),
    ({("none", 0): [-1]}, "is not a time > 0"),
])
def test_bad_input_is_one_line(root, tmp_path, batches, message):
    out = analyse(root, tax_dir(tmp_path / "t", batches), "--no-plot")
    assert out.returncode == 1 and message in out.stderr, out.stderr


def tool(root, name, *args):
    return subprocess.run([root / "userspace/tax" / name, *args], capture_output=True,
                          text=True)


@pytest.mark.parametrize("args, message", [
    (["-s", "60"], "call 60 has no form that fails fast (ends the thread)"),
    (["-s", "0,231"], "call 231 has no form that fails fast (ends the process)"),
    (["--first", "57"], "--first: call 57 cannot be made here (forks)"),
    (["-s", "abc"], "--syscalls wants"),
])
def test_callcost_refuses(root, args, message):
    out = tool(root, "callcost", *args)
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_callcost_times_each_call_in_batches(root):
    out = tool(root, "callcost", "-s", "39,110", "-n", "3", "--calls", "10", "-C", "none")
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()
    assert rows[0] == "nr,batch,calls,ns_per_call"
    assert [r.split(",")[:3] for r in rows[1:]] == \
        [[nr, str(b), "10"] for nr in ("39", "110") for b in range(3)]


@pytest.mark.parametrize("args, message", [
    ([], "no command"),
    (["-f", "bad", "--", "true"], "--filter wants linear, tree, args or none"),
    (["-f", "none", "--", "true"], "installs nothing without --no-cache"),
    (["--", "/nonexistent/cmd"], "No such file or directory"),
])
def test_seccomptax_refuses(root, args, message):
    out = tool(root, "seccomptax", *args)
    assert out.returncode != 0 and message in out.stderr, out.stderr


def test_seccomptax_refuses_what_runtimes_refuse(root):
    # unshare is outside the allowlist: EPERM from the filter, not from the kernel.
    out = tool(root, "seccomptax", "-q", "-f", "tree", "--", "unshare", "-U", "true")
    assert out.returncode != 0 and "Operation not permitted" in out.stderr, out.stderr
    ok = tool(root, "seccomptax", "-f", "args", "--", "true")
    assert ok.returncode == 0 and "args filter allowing 315 calls" in ok.stderr


def test_the_boots_are_named_and_the_base_boot_says_where_it_ran(root, tmp_path):
    """A run with boots/: the report names each boot's mitigations, and the
    kernel is the base boot's, not the host's."""
    d = tax_dir(tmp_path / "t", {("none", 0): [260, 260.5, 260, 260.5],
                                 ("pti", 0): [480.5, 480, 480.5, 480]})
    virtual = {"clock": {"kind": "virtual", "shift": 0}, "cpus": 1}
    for boot, cmdline in (("base", "ro pti=off spectre_v2=off lab.clock=virtual"),
                          ("pti", "ro pti=on spectre_v2=off lab.clock=virtual")):
        write_meta(d / "boots" / boot, "tax", {"boot": boot},
                   kernel={"release": "6.12.118-lab-tax", "cmdline": cmdline},
                   machine=virtual)
    out = analyse(root, d, "--no-plot")
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["boots"] == {"base": "pti=off spectre_v2=off", "pti": "pti=on spectre_v2=off"}
    row = next(r for r in s["rows"] if r["tax"] == "pti")
    assert row["added_ns"] == pytest.approx(220) and row["exact"]
    text = (d / "report.txt").read_text()
    assert "boot pti: pti=on spectre_v2=off" in text and "6.12.118-lab-tax" in text


PREDICT = "userspace/tax/predict.py"
RAW_HEADER = ("workload", "measure", "loops", "ns", "repeat", "units", "seconds", "syscalls",
              "errors", "p9_requests", "detail")


def predict_dirs(tmp_path, by_call=((0, 600), (1, 300), (59, 100))):
    """A grep sweep (2 runs at loops 0 of 0.01 s and 1,000 calls, one at
    loops 100) and a tax run with a uniform and a per-call tax."""
    sweep = write_meta(tmp_path / "grep", "workload", {"workload": "grep"})
    write_csv(sweep / "raw.csv", RAW_HEADER,
              [("grep", "grep", 0, "", 1, 1, 0.010, 1000, 0, 0, ""),
               ("grep", "grep", 0, "", 2, 1, 0.012, 1000, 0, 0, ""),
               ("grep", "grep", 100, "", 1, 1, 0.5, 1000, 0, 0, "")])
    write_csv(sweep / "by_call.csv", ("loops", "ns", "nr", "calls"),
              [(0, "", nr, n) for nr, n in by_call] + [(100, "", 0, 99999)])
    tax = tmp_path / "tax"
    tax.mkdir()
    rows = [{"tax": t, "nr": nr, "added_ns": ns, "exact": True}
            for t, nr, ns in (("none", 0, 0), ("none", 1, 0), ("trace", 0, 1248.2),
                              ("trace", 1, 1248.6), ("seccomp-linear-nocache", 0, 587),
                              ("seccomp-linear-nocache", 1, 597))]
    (tax / "summary.json").write_text(json.dumps({"base": "none", "rows": rows}))
    return sweep, tax


def test_the_prediction_is_base_plus_calls_times_the_mixed_tax(root, tmp_path):
    sweep, tax = predict_dirs(tmp_path)
    out = subprocess.run([sys.executable, root / PREDICT, sweep, tax, "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = {r["tax"]: r for r in json.loads(out.stdout)}
    trace, linear = rows["trace"], rows["seccomp-linear-nocache"]
    # The base is the median window; the uniform tax covers execve (59) too.
    assert trace["base_s"] == pytest.approx(0.011) and trace["uniform"]
    mixed = 0.6 * 1248.2 + 0.3 * 1248.6 + 0.1 * 1248.4
    assert trace["added_ns_per_call"] == pytest.approx(mixed)
    assert trace["predicted_s"] == pytest.approx(0.011 + 1000 * mixed * 1e-9)
    assert trace["covered_pct"] == pytest.approx(100)
    # A tax that differs by call leaves execve's 10 % out, and says so.
    assert not linear["uniform"] and linear["covered_pct"] == pytest.approx(90)
    assert linear["added_ns_per_call"] == pytest.approx(0.6 * 587 + 0.3 * 597)
    assert (sweep / "prediction-tax.csv").exists()


def test_a_sweep_without_calls_by_number_is_refused(root, tmp_path):
    sweep, tax = predict_dirs(tmp_path)
    (sweep / "by_call.csv").unlink()
    out = subprocess.run([sys.executable, root / PREDICT, sweep, tax],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "no by_call.csv" in out.stderr


def test_the_prediction_beside_the_measured_time_under_the_tax(root, tmp_path):
    sweep, tax = predict_dirs(tmp_path)
    taxed = write_meta(tmp_path / "grep-taxed", "workload", {"workload": "grep"})
    write_csv(taxed / "raw.csv", RAW_HEADER,
              [("grep", "grep", 0, "", 1, 1, 0.01225, 1000, 0, 0, "")])
    out = subprocess.run([sys.executable, root / PREDICT, sweep, tax, "--measured", taxed,
                          "--tax", "trace", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    assert row["measured_s"] == pytest.approx(0.01225)
    assert row["error_pct"] == pytest.approx(100 * (row["predicted_s"] - 0.01225) / 0.01225)
    out = subprocess.run([sys.executable, root / PREDICT, sweep, tax, "--measured", taxed],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "go together" in out.stderr


# --- a workload sweep under a tax (workloads/sweep.sh --tax) -----------------

def sweep_dry_run(root, tmp_path, *args):
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=/dev/root lab.variant=tax lab.clock=virtual\n")
    return subprocess.run([root / "workloads/sweep.sh", *args, "--dry-run"],
                          capture_output=True, text=True,
                          env={**os.environ, "LAB_CMDLINE": str(cmdline)})


def test_a_sweep_says_its_tax(root, tmp_path):
    out = sweep_dry_run(root, tmp_path, "grep", "--ns", "0,1000", "--tax", "trace")
    assert out.returncode == 0, out.stderr
    assert "2 points of ns, 5 runs each; under the tax trace" in out.stderr


@pytest.mark.parametrize("args, said", [
    (["--tax", "nosuch"], "--tax wants one of none seccomp-linear"),
    (["--tax", "trace,pti"], "not 'trace,pti'"),
])
def test_a_sweep_refuses_a_tax_it_does_not_know(root, tmp_path, args, said):
    out = sweep_dry_run(root, tmp_path, "grep", *args)
    assert out.returncode == 2 and said in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr


@pytest.mark.skipif(not shutil.which("strace"), reason="staging needs strace")
def test_a_staged_workload_takes_the_taxes_tools_with_it(root, tmp_path):
    """The taxed work runs in the staged root under its tool: strace and
    seccomptax are staged with every workload (no 9p request to start
    them in a timed window)."""
    if not (root / "build/src/linux-source-6.12/kernel").is_dir():
        pytest.skip("needs the unpacked kernel tree (make kernel)")
    out = subprocess.run([root / "workloads/sweep.sh", "grep", "--scale", "small",
                          "--stage-only", tmp_path / "stage"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    names = set(subprocess.run(["tar", "-tf", tmp_path / "stage/grep.tar"],
                               capture_output=True, text=True, check=True).stdout.split())
    tools = ["./usr/bin/strace"]
    if (root / "userspace/tax/seccomptax").exists():
        tools.append(f".{root}/userspace/tax/seccomptax")
    assert set(tools) <= names, sorted(n for n in names if "bin/" in n)[:20]
