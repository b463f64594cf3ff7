"""userspace/tax: lablib.tax.analyse on a made-up raw.csv (each tax's ns
per call, its exactness, the skipped taxes) and the tools' refusals."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from resultdirs import write_csv, write_meta
from lablib.tax.workloads import hooks as tax_hooks

ANALYSE = "lablib.tax.analyse"
COLUMNS = ("tax", "nr", "batch", "calls", "ns_per_call")


def tax_dir(d, batches, skipped=()):
    """@batches: {(tax, nr): [ns, ...]}."""
    write_meta(d, "tax", {"calls": "0,110", "taxes": "none,trace"})
    rows = [(t, nr, i, 100, ns) for (t, nr), v in batches.items() for i, ns in enumerate(v)]
    write_csv(d / "raw.csv", COLUMNS, rows)
    write_csv(d / "skipped.csv", ("tax", "reason"), [(t, f'"{r}"') for t, r in skipped])
    return d


def analyse(root, d, *args):
    return subprocess.run([sys.executable, "-m", ANALYSE, str(d), *args],
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


PREDICT = "lablib.tax.predict"
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
    out = subprocess.run([sys.executable, "-m", PREDICT, sweep, tax, "--json"],
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


def test_a_servers_clients_pay_the_taxes_every_process_pays(root, tmp_path):
    """A server's reply and saturation are timed at its clients: where the
    sweep counted their calls (clients.csv), a machine-wide tax (trace)
    adds them; a tax of the server alone (seccomp) and the server's own
    CPU do not."""
    sweep = write_meta(tmp_path / "redis", "workload", {"workload": "redis"})
    rows = [("redis", m, 0, "", 1, 100, 0.004, 300, 0, 0, "") for m in ("reply", "server")]
    write_csv(sweep / "raw.csv", RAW_HEADER, rows)
    write_csv(sweep / "by_call.csv", ("loops", "ns", "nr", "calls"), [(0, "", 0, 600)])
    write_csv(sweep / "clients.csv", RAW_HEADER,
              [("redis", m, 0, "", 1, 100, 0.5, 700, 0, 0, "") for m in ("reply", "server")])
    write_csv(sweep / "clients_by_call.csv", ("loops", "ns", "nr", "calls"),
              [(0, "", 0, 350), (0, "", 1, 350)])
    _, tax = predict_dirs(tmp_path)
    out = subprocess.run([sys.executable, "-m", PREDICT, sweep, tax, "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = {(r["measure"], r["tax"]): r for r in json.loads(out.stdout)}
    reply = got[("reply", "trace")]
    assert reply["client_calls_per_unit"] == pytest.approx(7)
    assert reply["client_added_ns_per_call"] == pytest.approx(0.5 * 1248.2 + 0.5 * 1248.6)
    assert reply["predicted_s"] == pytest.approx(40e-6 + (3 * 1248.2 + 7 * 1248.4) * 1e-9)
    for key in (("server", "trace"), ("reply", "seccomp-linear-nocache")):
        assert got[key]["client_calls_per_unit"] is None
    assert got[("server", "trace")]["predicted_s"] == pytest.approx(40e-6 + 3 * 1248.2e-9)


def test_a_sweep_without_calls_by_number_is_refused(root, tmp_path):
    sweep, tax = predict_dirs(tmp_path)
    (sweep / "by_call.csv").unlink()
    out = subprocess.run([sys.executable, "-m", PREDICT, sweep, tax],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "no by_call.csv" in out.stderr


def test_the_prediction_beside_the_measured_time_under_the_tax(root, tmp_path):
    sweep, tax = predict_dirs(tmp_path)
    taxed = write_meta(tmp_path / "grep-taxed", "workload", {"workload": "grep"})
    write_csv(taxed / "raw.csv", RAW_HEADER,
              [("grep", "grep", 0, "", 1, 1, 0.01225, 1000, 0, 0, "")])
    out = subprocess.run([sys.executable, "-m", PREDICT, sweep, tax, "--measured", taxed,
                          "--tax", "trace", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    assert row["measured_s"] == pytest.approx(0.01225)
    assert row["error_pct"] == pytest.approx(100 * (row["predicted_s"] - 0.01225) / 0.01225)
    out = subprocess.run([sys.executable, "-m", PREDICT, sweep, tax, "--measured", taxed],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "go together" in out.stderr


# --- a workload sweep under a tax (workloads/sweep.sh --tax) -----------------

def sweep_dry_run(root, tmp_path, workload, *args, **hook_vars):
    """lab sweep --dry-run of @workload in the tax's VM (--here, the
    guest's command line), with the tax's hooks set to @hook_vars."""
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=/dev/root lab.variant=tax lab.clock=virtual\n")
    return subprocess.run([sys.executable, "-m", "lablib.lab", "sweep", workload, "--here",
                           *args, *(tax_hooks(**hook_vars) if hook_vars else []),
                           "--dry-run"], capture_output=True, text=True,
                          env={**os.environ, "LAB_CMDLINE": str(cmdline)})


def test_a_sweep_says_its_tax(root, tmp_path):
    out = sweep_dry_run(root, tmp_path, "grep", "--ns", "0,1000", TAX="trace")
    assert out.returncode == 0, out.stderr
    assert "2 points of ns, 5 runs each; under the tax trace" in out.stderr
    # The untaxed point alone: the workload under the tax and nothing else.
    out = sweep_dry_run(root, tmp_path, "grep", "--ns", "0", TAX="trace")
    assert out.returncode == 0 and "1 point of ns" in out.stderr, out.stderr
    out = sweep_dry_run(root, tmp_path, "grep", "--ns", "100", TAX="trace")
    assert out.returncode == 2 and "starts at 0" in out.stderr, out.stderr


@pytest.mark.parametrize("tax, said", [
    ("nosuch", "TAX wants one of none seccomp-linear"),
    ("trace,pti", "not 'trace,pti'"),
])
def test_a_sweep_refuses_a_tax_it_does_not_know(root, tmp_path, tax, said):
    out = sweep_dry_run(root, tmp_path, "grep", TAX=tax)
    assert out.returncode == 2 and said in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr


@pytest.mark.skipif(not shutil.which("strace"), reason="staging needs strace")
def test_only_a_server_counts_its_clients(root, tmp_path):
    out = sweep_dry_run(root, tmp_path, "grep", "--ns", "0", COUNT_CLIENTS=1)
    assert out.returncode == 2 and "grep is not a server with clients" in out.stderr
    out = sweep_dry_run(root, tmp_path, "redis", "--ns", "0", COUNT_CLIENTS=1)
    assert out.returncode == 0 and "the clients' calls counted" in out.stderr, out.stderr


@pytest.mark.skipif(not shutil.which("strace"), reason="staging needs strace")
def test_only_a_server_delays_its_clients_and_not_while_counting_them(root, tmp_path):
    out = sweep_dry_run(root, tmp_path, "grep", "--ns", "0", DELAY_CLIENTS=1)
    assert out.returncode == 2 and "grep is not a server with clients" in out.stderr
    out = sweep_dry_run(root, tmp_path, "redis", "--ns", "0", DELAY_CLIENTS=1,
                        COUNT_CLIENTS=1)
    assert out.returncode == 2 and "not both" in out.stderr, out.stderr
    out = sweep_dry_run(root, tmp_path, "redis", "--ns", "0", DELAY_CLIENTS=1)
    assert out.returncode == 0 and "the clients delayed with the server" in out.stderr, \
        out.stderr


def test_loops_0_alone_wants_a_calibration(root, tmp_path):
    """Calibrating loop count 0 alone would fit nothing, after the sweep."""
    out = sweep_dry_run(root, tmp_path, "grep", "-l", "0")
    assert out.returncode == 2 and "give --calibration DIR, or --ns 0" in out.stderr


def test_a_staged_workload_takes_the_taxes_tools_with_it(root, tmp_path):
    """The taxed work runs in the staged root under its tool: strace and
    seccomptax are staged with every workload the tax hooks (no 9p request to start
    them in a timed window)."""
    if not (root / "build/src/linux-source-6.12/kernel").is_dir():
        pytest.skip("needs the unpacked kernel tree (make kernel)")
    vm = tmp_path / "vm"
    vm.write_text("#!/bin/sh\necho virtual\n")
    vm.chmod(0o755)
    out = subprocess.run([sys.executable, "-m", "lablib.sweep.driver", "grep", "--scale",
                          "small", "--stage-only", tmp_path / "stage",
                          *tax_hooks(TAX="none")],
                         capture_output=True, text=True,
                         env={**os.environ, "LAB_VM": str(vm),
                              "LAB_BUILD": str(tmp_path / "build")})
    assert out.returncode == 0, out.stderr
    names = set(subprocess.run(["tar", "-tf", tmp_path / "stage/grep.tar"],
                               capture_output=True, text=True, check=True).stdout.split())
    tools = ["./usr/bin/strace"]
    if (root / "userspace/tax/seccomptax").exists():
        tools.append(f".{root}/userspace/tax/seccomptax")
    assert set(tools) <= names, sorted(n for n in names if "bin/" in n)[:20]


# --- each workload under each tax (lablib.tax.workloads) ----------------------
WORKLOADS = "lablib.tax.workloads"
# A stand-in for lab sweep (LAB_SWEEP_RUNNER): an analysed sweep
# folder in -o's folder where a unit of work takes 0.01 s and 1,000 calls
# (600 read, 400 write) and each call costs the tax's ns (--tax) or the
# calibrated delay of its point (--ns N: N; -l L: 30 + 3 L; 0: nothing),
# or, a call that --set delays= names, what the ns mode adds (NS_ADDED);
# with the hooks' DELAY_CLIENTS=1 every point takes 0.1 ms more (the
# clients' cgroup).
SWEEP_STAND_IN = """#!{python}
import json, math, os, pathlib, sys
TAX = {{"trace": {{0: 1248.0, 1: 1248.0}}, "seccomp-linear-nocache": {{0: 318.0, 1: 340.0}},
       "pti": {{0: 10.0, 1: 10.0}}}}
args = sys.argv[2:]
if os.environ.get("SWEEP_FAIL") and os.environ["SWEEP_FAIL"] in args:
    sys.exit("the sweep failed")
opt = lambda name: args[args.index(name) + 1] if name in args else None
own = {{}}
if opt("--set"):
    own = {{int(nr): 40.0 + 20 * math.ceil(int(x) / 20)
           for nr, x in (i.split(":") for i in opt("--set").split("=")[1].split(","))}}
parent = pathlib.Path(opt("-o"))
d = parent / "grep-1"
d.mkdir(parents=True)
hook = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--hook-var")
tax = TAX.get(hook.get("TAX"), {{0: 0.0, 1: 0.0}})
knob, points = ("ns", opt("--ns")) if opt("--ns") else ("loops", opt("-l"))
raw, by_call, rows = [], [], []
for p in (int(v) for v in points.split(",")):
    added = p if knob == "ns" else (30.0 + 3.0 * p if p else 0.0)
    seconds = 0.01 + 600e-9 * (tax[0] + own.get(0, added)) + \
        400e-9 * (tax[1] + own.get(1, added)) + (1e-4 if hook.get("DELAY_CLIENTS") == "1" else 0)
    loops, ns = (p, "") if knob == "loops" else ("", p)
    raw += [f"grep,grep,{{loops}},{{ns}},{{r}},1,{{seconds}},1000,0,0," for r in (1, 2)]
    by_call += [f"{{loops}},{{ns}},0,1200", f"{{loops}},{{ns}},1,800"]
    rows.append({{"loops": None if loops == "" else p, "ns": None if ns == "" else p,
                 "added_ns": added, "median_seconds_per_unit": seconds,
                 "syscalls_per_unit": 1000.0, "exact": True}})
(d / "meta.json").write_text(json.dumps({{"experiment": "grep", "args": args,
                                         "settings": {{"workload": "grep"}},
                                         "append": os.environ.get("VM_APPEND")}}))
(d / "raw.csv").write_text("workload,measure,loops,ns,repeat,units,seconds,syscalls,"
                           "errors,p9_requests,detail\\n" + "\\n".join(raw) + "\\n")
(d / "by_call.csv").write_text("loops,ns,nr,calls\\n" + "\\n".join(by_call) + "\\n")
(d / "summary.json").write_text(json.dumps({{"ns_per_loop": 3.0, "entry_ns": 30.0,
                                            "measures": {{"grep": {{"points": rows}}}}}}))
"""
# A stand-in for userspace/calibrate/run.sh (LAB_CALIBRATE_RUNNER): a
# calibration of 3 ns a loop after 30 ns to enter a delayed call; with
# --param (the ns mode), getppid at each ns of -l, which adds 40 ns and
# the ask rounded up to 20 ns (NS_ADDED).
CALIBRATE_STAND_IN = """#!{python}
import json, math, pathlib, sys
args = sys.argv[1:]
d = pathlib.Path(args[args.index("-o") + 1]) / "calibrate-1"
d.mkdir(parents=True)
(d / "meta.json").write_text(json.dumps({{"experiment": "calibrate", "args": args}}))
if "--param" in args:
    first, last, step = map(int, args[args.index("-l") + 1].split(":"))
    points = [{{"syscall": "getppid", "loops": x, "p10": 300.0,
               "added": 40.0 + 20 * math.ceil(x / 20) if x else 0.0}}
              for x in range(first, last + 1, step)]
    (d / "summary.json").write_text(json.dumps({{"fits": {{}}, "points": points}}))
else:
    (d / "summary.json").write_text(json.dumps({{
        "fits": {{"getppid": {{"slope": 3.0, "intercept": 330.0}}}},
        "points": [{{"syscall": "getppid", "loops": 0, "p10": 300.0}}]}}))
"""


def workloads_dirs(tmp_path):
    """A tax run with a uniform tax (trace), one that differs by call and
    one below the delay module's floor (pti), and the sweep stand-in."""
    tax = write_meta(tmp_path / "tax", "tax", {"variant": "tax"})
    rows = [{"tax": t, "nr": nr, "call": ("read", "write")[nr], "added_ns": ns, "exact": True,
             "median_ns": 300.0 + ns}
            for t, nr, ns in (("none", 0, 0), ("none", 1, 0), ("trace", 0, 1248.0),
                              ("trace", 1, 1248.0), ("seccomp-linear-nocache", 0, 318.0),
                              ("seccomp-linear-nocache", 1, 340.0), ("pti", 0, 10.0),
                              ("pti", 1, 10.0))]
    (tax / "summary.json").write_text(json.dumps({
        "base": "none", "rows": rows, "taxes": ["trace", "seccomp-linear-nocache", "pti"],
        "calls": [0, 1], "skipped": [{"tax": "audit-one", "reason": "no audit here"}],
        "boots": {"base": "pti=off spectre_v2=off", "pti": "pti=on spectre_v2=off"}}))
    env = dict(os.environ)
    for var, name, text in (("LAB_SWEEP_RUNNER", "run.sh", SWEEP_STAND_IN),
                            ("LAB_CALIBRATE_RUNNER", "calibrate.sh", CALIBRATE_STAND_IN)):
        (tmp_path / name).write_text(text.format(python=sys.executable))
        (tmp_path / name).chmod(0o755)
        env[var] = str(tmp_path / name)
    return tax, env


def tax_workloads(root, tax, env, *args):
    return subprocess.run([sys.executable, "-m", WORKLOADS, tax, "--workloads", "grep",
                           "-j", "1", *args], capture_output=True, text=True, env=env)


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_each_workload_is_predicted_measured_and_emulated(root, tmp_path):
    tax, env = workloads_dirs(tmp_path)
    # What a stopped sweep left is not a result: the sweep runs again.
    stopped = write_meta(tax / "workloads/grep/trace/grep-0.incomplete", "grep", {})
    out = tax_workloads(root, tax, env)
    assert out.returncode == 0, out.stderr + out.stdout
    assert stopped.is_dir() and "grep/trace: done before" not in out.stdout
    assert "audit-one skipped: no audit here" in out.stdout
    # Each batch of sweeps counts those done, in the order they finish.
    counts = re.findall(r" done \((\d+) of (\d+), \d+m\d\ds so far, about \d+m\d\ds left\)",
                        out.stdout)
    ks = [int(k) for k, _ in counts]
    assert ks and all(k in (1, prev + 1) for prev, k in zip([0] + ks, ks)), out.stdout
    assert all(int(k) <= int(n) for k, n in counts) and counts[-1][0] == counts[-1][1]
    rows = {r["tax"]: r for r in json.loads((tax / "workloads.json").read_text())["rows"]}
    trace, linear, pti = rows["trace"], rows["seccomp-linear-nocache"], rows["pti"]
    # The stand-in runs a made-up workload whose model is exact: the
    # prediction is the measured time.
    for r in rows.values():
        assert r["base_s"] == pytest.approx(0.01)
        assert r["error_pct"] == pytest.approx(0, abs=1e-9)
    assert trace["measured_s"] == pytest.approx(0.01 + 1000 * 1248e-9)
    assert trace["measured_calls_per_unit"] == 1000
    # trace's 1,248 ns: (1,248 - 30) / 3 = 406 loops, 1,248 ns calibrated.
    assert trace["standin_loops"] == 406 and trace["standin_ns"] == pytest.approx(1248)
    assert trace["standin_error_pct"] == pytest.approx(0, abs=1e-9)
    # A tax that differs by call: loops for the figure most calls pay
    # (read's 318 ns: 96 loops), and write's 340 in the ns mode (ask 290:
    # 40 + 300); exact, as the workload's model is.
    assert linear["standin_loops"] == 96 and linear["standin_delays"] == "1:290"
    assert linear["standin_ns"] == pytest.approx(0.6 * 318 + 0.4 * 340)
    assert linear["standin_error_pct"] == pytest.approx(0, abs=1e-9)
    assert "1 calls' own delays" in linear["note"]
    # No stand-in for a tax that costs less than the module's floor.
    assert pti["emulated_s"] is None and "below the module's floor" in pti["note"]
    # pti ran in a boot of its own; each sweep once, the base and the
    # stand-ins with the calibration.
    sweeps = tax / "workloads" / "grep"
    cal = str(tax / "workloads" / "calibrate" / "calibrate-1")
    meta = json.loads((sweeps / "none" / "grep-1" / "meta.json").read_text())
    assert meta["args"][meta["args"].index("-l") + 1] == "0" and cal in meta["args"]
    names = sorted(p.name for p in sweeps.iterdir())
    assert names[:4] == ["none", "pti", "seccomp-linear-nocache", "standin-0-406"]
    assert re.fullmatch(r"standin-seccomp-linear-nocache-[0-9a-f]{8}", names[4]), names
    assert names[5:] == ["trace"], names
    meta = json.loads((sweeps / "pti" / "grep-1" / "meta.json").read_text())
    assert meta["append"] == "pti=on spectre_v2=off" and "TAX=pti" in meta["args"]
    meta = json.loads((sweeps / "standin-0-406" / "grep-1" / "meta.json").read_text())
    assert meta["args"][meta["args"].index("-l") + 1] == "0,406" and cal in meta["args"]
    meta = json.loads((sweeps / names[4] / "grep-1" / "meta.json").read_text())
    assert meta["args"][meta["args"].index("-l") + 1] == "0,96"
    assert "delays=1:290" in meta["args"] and "DELAY_CLIENTS=1" not in meta["args"]
    ns_cal = json.loads((tax / "workloads/calibrate-ns/calibrate-1/meta.json").read_text())
    assert "/sys/module/delay/parameters/ns" in ns_cal["args"]
    assert "OFF" not in (tax / "workloads.txt").read_text()
    # The README's tables: grep's one measure, no server's table; a cell
    # the change, then the prediction's error and the stand-in's.
    md = {line.split("|")[1].strip(): line.split("|")[2].strip()
          for line in (tax / "workloads.md").read_text().splitlines() if line.startswith("| `")}
    assert "| tax " in (tax / "workloads.md").read_text().split("grep grep")[0]
    assert re.fullmatch(r"\+\d+\.\d\d \([+-]\d+\.\d\d; [+-]0\.00\)", md["`trace`"]), md
    assert re.fullmatch(r"[+-]\d+\.\d\d \([+-]\d+\.\d\d\)", md["`pti`"]), md
    assert sorted(md) == ["`pti`", "`seccomp-linear-nocache`", "`trace`"], md
    report = (tax / "report.txt").read_text()
    assert report.index("ns each tax adds") < report.index("tax workloads:")
    assert (tax / "workloads.csv").exists() and (tax / "tax.png").stat().st_size > 20000
    # Run again: every sweep is there, none runs again.
    again = tax_workloads(root, tax, env)
    assert again.returncode == 0 and again.stdout.count("done before") == 8, again.stdout


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_a_stand_in_sweep_at_more_loop_counts_serves(root, tmp_path):
    """A run of some taxes after one of all: the one-figure stand-ins'
    sweep done at more loop counts (here 0, 100 and trace's 406) is read,
    not run again at 0 and 406 alone."""
    tax, env = workloads_dirs(tmp_path)
    wider = tax / "workloads/grep/standin-0-100-406"
    subprocess.run([tmp_path / "run.sh", "grep", "-o", wider, "-l", "0,100,406"],
                   check=True, env=env)
    out = tax_workloads(root, tax, env, "--taxes", "trace")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "grep/standin-0-100-406: done before" in out.stdout, out.stdout
    assert not (tax / "workloads/grep/standin-0-406").exists()
    rows = {r["tax"]: r for r in json.loads((tax / "workloads.json").read_text())["rows"]}
    assert rows["trace"]["standin_loops"] == 406
    assert rows["trace"]["emulated_s"] == pytest.approx(0.01 + 1000 * 1248e-9)
    # One that lacks a loop count asked for does not serve.
    (wider.parent / "standin-0-100-405").mkdir()
    shutil.rmtree(wider)
    out = tax_workloads(root, tax, env, "--taxes", "trace")
    assert out.returncode == 0 and (tax / "workloads/grep/standin-0-406").is_dir(), out.stdout


# percall_plan of lablib.tax.workloads_figures on a staircase where the ns
# mode adds 40 ns and the ask rounded up to 20, after a calibration of 3 ns
# a loop and 30 to enter: its (loops, delays, calls delayed their own) as
# JSON.
PERCALL = """import json, math, sys
from lablib.tax import workloads, workloads_figures
steps = {x: 40.0 + 20 * math.ceil(x / 20) for x in range(10, 1510, 10)}
cells, shares = ({int(k): v for k, v in d.items()} for d in json.loads(sys.argv[1]))
fit = {"ns_per_loop": 3.0, "entry_ns": 30.0}
spec = workloads_figures.percall_plan(cells, shares, fit, steps)
sweep = spec and workloads.Plan("/tax", "grep", 2, "tax", {"base": ""}).percall(
    "t", spec | {"clients": False}, "/cal")
print(json.dumps(spec and [spec["loops"], spec["delays"], sorted(spec["own"]),
                           [str(a) for a in sweep["command"]]]))
"""


def percall_plan(root, cells, shares):
    out = subprocess.run([sys.executable, "-c", PERCALL, json.dumps([cells, shares])],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_stand_in_chooses_loops_for_most_calls_and_the_ns_mode_where_nearer(root):
    # Most calls pay 318 (96 loops); the ns mode adds 340 and 900 exactly
    # (asks 290 and 850), and comes within 9 ns of 331 (340) where the
    # loops are 13 away.
    loops, delays, _, command = percall_plan(root, {0: 318.0, 1: 340.0, 2: 331.0, 3: 900.0},
                                             {0: 0.7, 1: 0.1, 2: 0.1, 3: 0.1})
    assert (loops, delays) == (96, "1:290,2:290,3:850")
    assert command[command.index("-l") + 1] == "0,96" and "delays=1:290,2:290,3:850" in command
    # Where the loops are nearest every call, no call's own delay.
    loops, delays, own, command = percall_plan(root, {0: 318.0, 1: 319.0}, {0: 0.5, 1: 0.5})
    assert (loops, delays, own) == (96, "", []) and "--set" not in command
    # A tax below every floor on the calls made: no stand-in.
    assert percall_plan(root, {0: 10.0, 1: 30.0}, {0: 0.5, 1: 0.5}) is None
    # The calls that gain most come first, at most the module's 64.
    _, _, own, _ = percall_plan(root, {nr: 1000.0 + nr for nr in range(100)},
                             {nr: 1.0 for nr in range(100)} | {0: 200.0})
    assert len(own) == 64 and {0, 99} <= set(own) and 1 not in own


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_a_stand_in_is_the_base_plus_its_change_from_its_own_undelayed_point(root, tmp_path):
    """A server's clients delayed in a cgroup of their own cost the
    stand-in's every point 0.1 ms (made up here): the emulated time is the
    base plus the change from the stand-in's own loops 0, and says so."""
    tax, env = workloads_dirs(tmp_path)
    out = subprocess.run([sys.executable, "-m", WORKLOADS, tax, "--workloads", "redis",
                          "-j", "1"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    rows = {r["tax"]: r for r in json.loads((tax / "workloads.json").read_text())["rows"]}
    trace = rows["trace"]
    assert trace["standin_clients"] is True
    assert trace["emulated_s"] == pytest.approx(0.01 + 1000 * 1248e-9)
    assert "the stand-in's own loops 0 +1.00 % from the base" in trace["note"]


def test_a_servers_machine_wide_stand_in_delays_its_clients(root, tmp_path):
    tax, env = workloads_dirs(tmp_path)
    out = subprocess.run([sys.executable, "-m", WORKLOADS, tax, "--workloads", "redis",
                          "--dry-run"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "standin-" in line]
    assert len(lines) == 1 and "DELAY_CLIENTS=1" in lines[0], lines
    assert "redis/standin-clients-" in lines[0] and "COUNT_CLIENTS=1" in out.stdout


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_the_report_of_a_partial_run_names_what_it_left_out(root, tmp_path):
    """--report runs nothing: the rows of the sweeps that are there, the
    taxes and stand-ins whose sweeps are not left out and named."""
    tax, env = workloads_dirs(tmp_path)
    out = tax_workloads(root, tax, env, "--report")
    assert out.returncode == 1 and "no calibration" in out.stderr, out.stderr
    assert tax_workloads(root, tax, env, "--taxes", "trace").returncode == 0
    out = tax_workloads(root, tax, env, "--report")
    assert out.returncode == 0, out.stderr
    assert "not run, left out of the report: grep/seccomp-linear-nocache, grep/pti" in out.stdout
    rows = {r["tax"]: r for r in json.loads((tax / "workloads.json").read_text())["rows"]}
    assert rows["trace"]["emulated_s"] == pytest.approx(0.01 + 1000 * 1248e-9)
    assert rows["pti"]["measured_s"] is None and "not measured" in rows["pti"]["note"]
    linear = rows["seccomp-linear-nocache"]
    assert linear["emulated_s"] is None and "calibration was not run" in linear["note"]
    assert sorted(p.name for p in (tax / "workloads" / "grep").iterdir()) == [
        "none", "standin-0-406", "trace"]


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_make_tax_resumes_a_run_stopped_after_its_table(root, tmp_path):
    """RESUME=DIR: no boot, the run's table kept, its workloads carried on
    in DIR with the run's own settings, the sweep already there not run
    again; a folder with no table refused, saying so."""
    tax, env = workloads_dirs(tmp_path)
    # The stopped run was started with WORKLOADS=grep HOST_TAXES= REPEATS=1.
    meta = json.loads((tax / "meta.json").read_text())
    meta["settings"] |= {"workloads": "grep", "host_taxes": "", "repeats": 1}
    (tax / "meta.json").write_text(json.dumps(meta))
    table = (tax / "summary.json").read_text()
    done = tax_workloads(root, tax, env, "--taxes", "trace", "-r", "1")
    assert done.returncode == 0, done.stderr
    env |= {"RESUME": str(tax), "JOBS": "3"}
    out = subprocess.run([root / "userspace/tax/run.sh"], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    assert f"carrying on in {tax.resolve()}" in out.stderr and "boot base" not in out.stderr
    assert "WORKLOADS=grep REPEATS=1 HOST_TAXES= HOST_WORKLOAD=grep" in out.stderr, out.stderr
    assert "tax host clock" not in out.stdout + out.stderr
    assert "grep/trace: done before" in out.stdout and "grep/pti" in out.stdout
    assert "3 at a time" in out.stdout, out.stdout
    assert (tax / "workloads/grep/pti").is_dir() and (tax / "summary.json").read_text() == table
    rows = {r["tax"] for r in json.loads((tax / "workloads.json").read_text())["rows"]}
    assert rows == {"trace", "seccomp-linear-nocache", "pti"}
    # A setting given wins over the run's.
    out = subprocess.run([root / "userspace/tax/run.sh"], capture_output=True, text=True,
                         env=env | {"WORKLOADS": ""})
    assert out.returncode == 0, out.stderr + out.stdout
    assert "WORKLOADS= REPEATS=1" in out.stderr and "tax workloads" not in out.stdout
    out = subprocess.run([root / "userspace/tax/run.sh"], capture_output=True, text=True,
                         env=env | {"RESUME": str(tmp_path)})
    assert out.returncode == 2 and "no tax run with its table there" in out.stderr, out.stderr


@pytest.mark.parametrize("env, message", [
    ({"TAXES": "none,pti", "HOST_TAXES": "retpoline"}, "HOST_TAXES: retpoline is not among"),
    # The README's own example: its default A/B is of what it measures, so
    # it goes on to the next check (a bad CALLS, to stop there).
    ({"TAXES": "none,seccomp-tree,pti", "CALLS": "bogus"}, "CALLS"),
])
def test_the_host_clock_ab_is_of_a_measured_tax(root, env, message):
    """A tax A/B'd on the host's clock that the run does not measure is
    refused before any boot (it was after them, the README's example
    exiting 1 at its end); by default the A/B is of the taxes measured."""
    out = subprocess.run([root / "userspace/tax/run.sh"], capture_output=True, text=True,
                         env={**os.environ, "WORKLOADS": "", **env})
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert ("HOST_TAXES" in out.stderr) == (message.startswith("HOST_TAXES"))


def test_the_longest_sweeps_run_first(root, tmp_path):
    """Apache's sweeps, minutes of the host each, before grep's: two at a
    time, the run does not end on a lone long one."""
    tax, env = workloads_dirs(tmp_path)
    out = tax_workloads(root, tax, env, "--workloads", "grep,apache", "--dry-run")
    assert out.returncode == 0, out.stderr
    order = re.findall(r"echo 'tax workloads: (\w+)/", out.stdout)
    assert order == ["apache"] * 5 + ["grep"] * 5, order


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_the_sweeps_run_a_core_each_whatever_the_load(root, tmp_path):
    """Without -j, as many sweeps at once as the machine has cores: the
    load average (the tax run's own boots a minute before) is no reason
    to run fewer on the virtual clock."""
    tax, env = workloads_dirs(tmp_path)
    out = subprocess.run([sys.executable, "-m", WORKLOADS, tax, "--workloads", "grep"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    assert f"sweep(s), {os.cpu_count()} at a time" in out.stdout, out.stdout


def test_a_python_without_tabulate_is_refused_before_any_sweep(root, tmp_path):
    """A virtualenv made before tabulate was pinned: lablib.tax.workloads
    says to run make venv, before hours of sweeps rather than after."""
    tax, env = workloads_dirs(tmp_path)
    hide = ("import runpy, sys; sys.modules['tabulate'] = None; "
            f"sys.argv = [{WORKLOADS!r}, {str(tax)!r}, '--workloads', 'grep']; "
            f"runpy.run_module({WORKLOADS!r}, run_name='__main__', alter_sys=True)")
    out = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, env=env)
    assert out.returncode == 1, out.stderr + out.stdout
    assert "no tabulate (workloads.md): run 'make venv'" in out.stderr
    assert not (tax / "workloads").exists()


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_a_failed_sweep_stops_the_run_and_names_its_log(root, tmp_path):
    tax, env = workloads_dirs(tmp_path)
    out = tax_workloads(root, tax, {**env, "SWEEP_FAIL": "TAX=trace"})
    assert out.returncode == 1 and "a sweep failed" in out.stderr, out.stderr
    assert "grep-trace.txt" in out.stderr
    assert not (tax / "workloads.csv").exists()


@pytest.mark.parametrize("args, message", [
    (("--taxes", "strace"), "strace not measured"),
    (("--workloads", "grep,ls"), "ls not one of"),
    (("-r", "0"), "at least 1"),
])
def test_tax_workloads_refuse_bad_input(root, tmp_path, args, message):
    tax, env = workloads_dirs(tmp_path)
    out = tax_workloads(root, tax, env, *args)
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert not (tax / "workloads").exists()


def test_the_dry_run_lists_the_sweeps_and_runs_none(root, tmp_path):
    tax, env = workloads_dirs(tmp_path)
    out = tax_workloads(root, tax, env, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("run.sh grep --vms 1") == 5 and "TAX=pti" in out.stdout
    assert "calibrate.sh -o" in out.stdout and "parameters/ns" in out.stdout
    assert "then a stand-in sweep a workload for each of seccomp-linear-nocache" in out.stdout
    assert not (tax / "workloads").exists()


def test_a_tax_run_without_its_boots_is_refused(root, tmp_path):
    """The workloads run under the table's own boot options: a summary that
    does not name them is refused, nothing run."""
    tax, env = workloads_dirs(tmp_path)
    s = json.loads((tax / "summary.json").read_text())
    del s["boots"]
    (tax / "summary.json").write_text(json.dumps(s))
    out = tax_workloads(root, tax, env)
    assert out.returncode == 1 and "names no base boot" in out.stderr, out.stderr
    assert not (tax / "workloads").exists()


# --- the host's clock beside the virtual one (lablib.tax.hostclock) -----------
HOSTCLOCK = "lablib.tax.hostclock"
# A stand-in for a boot of a grep sweep on the host's clock (LAB_AB_RUNNER):
# 10 units/s, a tenth less under pti, the same under any other tax, each
# boot off by up to 0.1 % in a way its folder's name fixes.
AB_STAND_IN = """#!{python}
import json, os, pathlib, sys, zlib
experiment, parent, args = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
d = parent / "grep-1"
d.mkdir(parents=True)
tax = next((a[4:] for a in args if a.startswith("TAX=")), None)
noise = 1 + (zlib.crc32(str(parent).encode()) % 200 - 100) * 1e-5
mean = (9.0 if tax == "pti" else 10.0) * noise
(d / "meta.json").write_text(json.dumps({{
    "experiment": experiment, "date": "2026-12-04T10:00:00Z", "args": args,
    "settings": {{"workload": experiment}},
    "kernel": {{"release": "6.12.test-lab-tax", "cmdline": os.environ["VM_APPEND"]}},
    "machine": {{"clock": {{"kind": os.environ["VM_CLOCK"]}},
                 "cpus": int(os.environ["VM_CPUS"])}}}}))
(d / "summary.json").write_text(json.dumps({{"workload": "grep", "measures": {{"grep": {{
    "unit": "runs/s", "model": {{}},
    "points": [{{"knob": "ns", "setting": 0, "loops": None, "ns": 0, "mean": mean}}]}}}}}}))
"""


def hostclock_dirs(tmp_path):
    tax, env = workloads_dirs(tmp_path)
    (tmp_path / "ab-boot").write_text(AB_STAND_IN.format(python=sys.executable))
    (tmp_path / "ab-boot").chmod(0o755)
    # The virtual clock's grep under pti: 0.01 s, 0.02 s taxed (-50 %).
    (tax / "workloads.json").write_text(json.dumps({"rows": [
        {"workload": "grep", "measure": "grep", "tax": "pti", "base_s": 0.01,
         "measured_s": 0.02}]}))
    return tax, {**env, "LAB_AB_RUNNER": str(tmp_path / "ab-boot")}


def hostclock(root, tax, env, *args):
    return subprocess.run([sys.executable, "-m", HOSTCLOCK, tax, *args],
                          capture_output=True, text=True, env=env)


@pytest.mark.skipif(not shutil.which("parallel"), reason="GNU parallel is not installed")
def test_the_host_clock_ab_gives_each_taxs_verdict_beside_the_virtual_clock(root, tmp_path):
    tax, env = hostclock_dirs(tmp_path)
    out = hostclock(root, tax, env, "--taxes", "pti,trace", "-n", "4")
    assert out.returncode == 0, out.stderr + out.stdout
    rows = {r["tax"]: r for r in json.loads((tax / "hostclock.json").read_text())["rows"]}
    pti, trace = rows["pti"], rows["trace"]
    assert pti["verdict"] == "slower" and pti["host_change_pct"] == pytest.approx(-10, abs=0.3)
    assert pti["virtual_change_pct"] == pytest.approx(-50)
    assert pti["clocks_differ_pct"] == pytest.approx(40, abs=0.3) and pti["runs"] == "4+4"
    assert trace["verdict"] == "same" and trace["virtual_change_pct"] is None
    # Each side in its boot's options and at ns 0, one vCPU, the B side
    # under its tax; four boots a side, one at a time.
    plan = "\n".join(r["command"] for r in csv.DictReader(
        (next((tax / "hostclock" / "pti").glob("ab-*")) / "plan.csv").open()))
    assert plan.count("VM_APPEND='pti=on spectre_v2=off'") == 4
    assert plan.count("VM_APPEND='pti=off spectre_v2=off'") == 4
    assert plan.count("--hook-var TAX=pti") == 4 and plan.count("VM_CLOCK=host") == 8
    boot = next((tax / "hostclock" / "pti").glob("ab-*/runs/*/grep-1/meta.json"))
    assert json.loads(boot.read_text())["machine"]["cpus"] == 1
    # The verdicts follow the table in report.txt.
    report = (tax / "report.txt").read_text()
    assert report.index("ns each tax adds") < report.index("host's clock")
    assert "slower" in report and (tax / "hostclock.csv").exists()
    # Run again: each A/B is there, none runs again.
    again = hostclock(root, tax, env, "--taxes", "pti,trace", "-n", "4")
    assert again.returncode == 0 and again.stdout.count("done before") == 2, again.stdout


@pytest.mark.parametrize("args, message", [
    (("--taxes", "strace"), "strace not measured"),
    (("--taxes", "pti", "-n", "1"), "at least two boots"),
    (("--workload", "ls"), "invalid choice"),
])
def test_the_host_clock_ab_refuses_bad_input(root, tmp_path, args, message):
    tax, env = hostclock_dirs(tmp_path)
    out = hostclock(root, tax, env, *args)
    assert out.returncode != 0 and message in out.stderr, out.stderr
    assert not (tax / "hostclock").exists()
