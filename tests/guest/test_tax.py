"""userspace/tax in the guest: each tax applied (the call it taxes is
dearer under it) and put back after its run, whether the run ends or is
stopped; a tax the kernel cannot apply skipped with its reason; a
workload sweep under a tax (lab sweep with the tax's hooks) runs its work under it,
stays exact and puts it back."""
import csv
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import time

import pytest
from conftest import GETPPID, ROOT
from lablib.tax.workloads import hooks
from test_sweep import calibration, server_sweep  # noqa: F401

GUEST = ROOT / "userspace/tax/guest.sh"
TRACEFS = pathlib.Path("/sys/kernel/tracing")
READ = 0


def run(d, taxes, calls=f"{READ},{GETPPID}", batches=3, per_batch=20):
    out = subprocess.run([GUEST, d, "base", calls, taxes, str(batches), str(per_batch)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out


def added(d, tax, nr):
    """The median ns per call of @nr under @tax less the untaxed one's."""
    rows = list(csv.DictReader(open(d / "raw.csv")))

    def median(t):
        v = [float(r["ns_per_call"]) for r in rows if r["tax"] == t and int(r["nr"]) == nr]
        assert v, (t, nr, rows[:4])
        return statistics.median(v)
    return median(tax) - median("none")


def skipped(d):
    return {r["tax"]: r["reason"] for r in csv.DictReader(open(d / "skipped.csv"))}


def processes(name):
    return subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0


def nothing_left():
    """No tax in force: no event enabled, no tracer or daemon of a tax
    running, no audit rule; this process under no seccomp filter."""
    assert (TRACEFS / "set_event").read_text().strip() == ""
    for name in ("strace", "bpftrace", "auditd", "trace-cmd"):
        assert not processes(name), name
    status = (pathlib.Path("/proc/self/status")).read_text()
    assert "Seccomp:\t0" in status
    audit = subprocess.run(["auditctl", "-l"], capture_output=True, text=True)
    assert audit.returncode != 0 or "lab-tax" not in audit.stdout, audit.stdout


@pytest.mark.timing
@pytest.mark.parametrize("tax, least_ns", [
    ("seccomp-linear", 50), ("seccomp-tree", 50), ("seccomp-nocache", 100),
    ("seccomp-linear-nocache", 300), ("trace", 500), ("strace", 5000)])
def test_each_tax_makes_every_call_dearer(tmp_path, tax, least_ns):
    run(tmp_path, f"none,{tax}")
    for nr in (READ, GETPPID):
        assert added(tmp_path, tax, nr) >= least_ns, (tax, nr)
    nothing_left()


@pytest.mark.timing
def test_the_args_filter_taxes_only_the_calls_it_checks(tmp_path):
    # clone (56) is one of the three whose arguments the filter reads.
    run(tmp_path, "none,seccomp-linear,seccomp-args", calls=f"{READ},56")
    assert added(tmp_path, "seccomp-args", READ) == pytest.approx(
        added(tmp_path, "seccomp-linear", READ), abs=20)
    assert added(tmp_path, "seccomp-args", 56) > added(tmp_path, "seccomp-linear", 56) + 100


@pytest.mark.timing
def test_strace_one_stops_only_its_call(tmp_path):
    run(tmp_path, "none,strace-one")
    assert added(tmp_path, "strace-one", GETPPID) > 5000
    assert added(tmp_path, "strace-one", READ) < 1000


def has_audit():
    return subprocess.run(["auditctl", "-s"], capture_output=True).returncode == 0


def backlog_limit():
    out = subprocess.run(["auditctl", "-s"], capture_output=True, text=True).stdout
    return next(ln.split()[1] for ln in out.splitlines() if ln.startswith("backlog_limit"))


@pytest.mark.skipif(not has_audit(), reason="the kernel has no audit: VARIANT=tax")
def test_the_audit_taxes_record_and_put_back_their_rules(tmp_path):
    backlog = backlog_limit()
    run(tmp_path, "none,audit-one,audit-all", batches=1, per_batch=5)
    assert added(tmp_path, "audit-one", GETPPID) > added(tmp_path, "audit-one", READ) > 0
    assert "syscall=110" in (tmp_path / "audit-one.log").read_text()
    assert "syscall=0 " in (tmp_path / "audit-all.log").read_text()
    rules = subprocess.run(["auditctl", "-l"], capture_output=True, text=True).stdout
    assert "No rules" in rules and backlog_limit() == backlog
    nothing_left()


# The sysctl is there only with CONFIG_BPF_SYSCALL.
@pytest.mark.skipif(not pathlib.Path("/proc/sys/kernel/unprivileged_bpf_disabled").exists(),
                    reason="the kernel has no BPF syscall: VARIANT=tax")
def test_the_bpftrace_tax_taxes_every_call_and_ends(tmp_path):
    run(tmp_path, "none,bpftrace", batches=1)
    assert added(tmp_path, "bpftrace", READ) > 100
    nothing_left()


def test_the_trace_tax_leaves_its_record(tmp_path):
    run(tmp_path, "trace", batches=1)
    assert (tmp_path / "trace-raw_syscalls.dat").stat().st_size > 0
    nothing_left()


def events_on():
    return (TRACEFS / "set_event").read_text().strip() != ""


def stop_once(p, ready, seconds):
    """SIGTERM to @p once @ready() (within @seconds, while @p runs); its
    stderr, once it has ended.  Killed if it does not."""
    try:
        deadline = time.monotonic() + seconds
        while not ready():
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.1)
        os.kill(p.pid, signal.SIGTERM)
        return p.communicate(timeout=120)[1]
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.parametrize("tax, ready", [
    ("trace", events_on),
    ("strace", lambda: processes("strace"))])
def test_a_stopped_run_puts_its_tax_back(tmp_path, tax, ready):
    p = subprocess.Popen([GUEST, tmp_path, "base", str(GETPPID), tax, "100000", "200"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = stop_once(p, ready, 120)
    assert p.returncode == 143, err
    nothing_left()


def test_a_tax_the_kernel_cannot_apply_is_skipped_with_its_reason(tmp_path):
    if subprocess.run(["auditctl", "-s"], capture_output=True).returncode == 0:
        pytest.skip("this kernel has audit: the tax variant")
    out = run(tmp_path, "none,audit-one", batches=1)
    assert "CONFIG_AUDIT" in skipped(tmp_path)["audit-one"]
    assert "audit-one" in out.stderr
    rows = list(csv.DictReader(open(tmp_path / "raw.csv")))
    assert {r["tax"] for r in rows} == {"none"}


def test_a_mitigation_not_in_force_is_skipped(tmp_path):
    if "pti" in pathlib.Path("/proc/cpuinfo").read_text().split():
        pytest.skip("this boot isolates page tables")
    run(tmp_path, "none,pti", batches=1)
    assert "pti=on" in skipped(tmp_path)["pti"]
    meta = tmp_path / "boots/base/meta.json"
    assert meta.exists()


def test_an_unknown_tax_is_refused(tmp_path):
    out = subprocess.run([GUEST, tmp_path, "base", str(GETPPID), "none,bogus", "1", "1"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "unknown tax 'bogus'" in out.stderr


# --- a workload sweep under a tax (lab sweep with the tax's hooks) -----------

# lab sweep on this kernel, with the tax's hooks (sweep-hooks.sh).
SWEEP = [sys.executable, "-m", "lablib.sweep.driver"]


TEST_STAGE = ROOT / "build/stage-test"
PROBE = ["grep", "-E", "^(Seccomp|TracerPid):", "/proc/self/status"]


def tax_sweep(out, workload, tax, *args):
    # The untaxed point alone: what these tests check is the tax.
    r = subprocess.run([*SWEEP, workload, "--here", "-o", out, "--no-analysis", "--ns", "0",
                        "-r", "1", *hooks(TAX=tax), *args], capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    d = out / f"latest-{workload}"
    meta = json.loads((d / "meta.json").read_text())["settings"]
    assert meta["tax"] == tax, meta
    return d.resolve(), meta, r.stderr


@pytest.mark.parametrize("tax, field, under", [
    ("seccomp-linear", "Seccomp", lambda v: v == "2"),
    ("strace", "TracerPid", lambda v: v != "0")])
def test_a_swept_command_runs_under_the_tax(tmp_path, tax, field, under):
    """The timed runs of the command are under the tax (a filter in
    force, a tracer attached); the sweep's own processes are not, and
    after it nothing is."""
    d, meta, err = tax_sweep(tmp_path, "cmd", tax, "--", *PROBE)
    assert f"under the tax {tax}" in err
    status = dict(line.split(":\t") for line in
                  (d / "logs/cmd-ns0-1.txt").read_text().splitlines())
    assert under(status[field]), status
    assert meta["tax_command"].split()[0].endswith(("seccomptax", "strace")), meta
    nothing_left()


@pytest.mark.skipif(not (TEST_STAGE / "grep.tar").exists(),
                    reason="no staged grep: make workloads-test-stage")
def test_a_staged_workload_under_a_tax_stays_exact(tmp_path):
    """grep, staged, under the trace events: no request to the host's
    files in a timed window; the trace's record kept beside the results.
    (The commands above ran their tools from the staged root.)"""
    d, _, _ = tax_sweep(tmp_path, "grep", "trace", "--scale", "small",
                        "--stage-from", TEST_STAGE)
    raw = list(csv.DictReader(open(d / "raw.csv")))
    assert raw and all(r["p9_requests"] == "0" for r in raw), raw
    assert (d / "trace-raw_syscalls.dat").stat().st_size > 0
    nothing_left()


def test_a_stopped_sweep_puts_its_tax_back(tmp_path):
    p = subprocess.Popen([*SWEEP, "cmd", "--here", "-o", tmp_path, "--no-analysis", "--ns",
                          "0,100", "-r", "1000", *hooks(TAX="trace"), "--", "sleep", "0.1"],
                         stderr=subprocess.PIPE, text=True)
    err = stop_once(p, events_on, 300)
    assert p.returncode == 143, err
    assert "what was measured is in" in err
    nothing_left()


def cgroup_of(pid):
    return pathlib.Path(f"/proc/{pid}/cgroup").read_text().strip()


def traced_server(name):
    """(the server's cgroup, its tracer's) of a running @name, traced and
    in a cgroup of its own (the sweep's: staging's recording runs it
    traced in the root cgroup); None if there is none yet."""
    for pid in subprocess.run(["pgrep", "-x", name], capture_output=True,
                              text=True).stdout.split():
        try:
            status = pathlib.Path(f"/proc/{pid}/status").read_text()
            tracer = next(line.split()[1] for line in status.splitlines()
                          if line.startswith("TracerPid:"))
            if tracer != "0" and cgroup_of(pid) != "0::/":
                return cgroup_of(pid), cgroup_of(tracer)
        except (OSError, StopIteration):
            continue
    return None


@pytest.mark.skipif("lab.variant=tax" not in pathlib.Path("/proc/cmdline").read_text(),
                    reason="three minutes of Redis under strace: the tax pass of make test-debug")
def test_a_server_under_strace_is_traced_from_outside_its_cgroup(tmp_path):
    """Redis under strace: the daemon starts (strace detached, following
    it) and is traced while the sweep runs, from a tracer that is not in
    the server's cgroup, so that the tracer's own calls are neither
    counted nor delayed; after it nothing is left."""
    p = subprocess.Popen([*SWEEP, "redis", "--here", "-o", tmp_path, "--no-analysis", "--ns",
                          "0", "-r", "1", *hooks(TAX="strace")], stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "REDIS_REQUESTS": "200"})
    seen = None
    while p.poll() is None and seen is None:
        seen = traced_server("redis-server")
        time.sleep(0.2)
    err = p.communicate(timeout=1200)[1]
    assert p.returncode == 0, err[-3000:]
    assert seen, "no traced redis-server while the sweep ran"
    server, tracer = seen
    assert tracer != server, seen
    nothing_left()


# --- a server's clients, counted or delayed (the hooks' COUNT_CLIENTS and
# DELAY_CLIENTS) ------------------------------------------------------------

def test_a_servers_clients_are_counted_after_the_points(tmp_path, calibration):  # noqa: F811
    """COUNT_CLIENTS=1: after the points, Redis's measures once more with
    its clients' cgroup counted instead of the server's."""
    d, raw = server_sweep(tmp_path, calibration, "redis", "redis-benchmark",
                          *hooks(COUNT_CLIENTS=1), REDIS_REQUESTS="2000")
    virtual = "lab.clock=virtual" in pathlib.Path("/proc/cmdline").read_text()
    replies = 100 if virtual else 10
    # The clients' count: reqtime's GET a write and a read (its own read of
    # the counter taken off), redis-benchmark's several calls a GET; by
    # number at least those; in clients.csv, not raw.csv; its cgroup gone.
    clients = {r["measure"]: r for r in csv.DictReader(open(d / "clients.csv"))}
    assert int(clients["reply"]["units"]) == replies
    assert int(clients["reply"]["syscalls"]) == 2 * replies, clients["reply"]
    assert int(clients["saturation"]["units"]) == 2000
    assert int(clients["saturation"]["syscalls"]) > 2 * 2000, clients["saturation"]
    by_number = sum(int(r["calls"]) for r in csv.DictReader(open(d / "clients_by_call.csv")))
    assert by_number >= int(clients["saturation"]["syscalls"]) + 3 * replies
    assert json.loads((d / "meta.json").read_text())["settings"]["count_clients"] is True
    assert not list(pathlib.Path("/sys/fs/cgroup").glob("lab-clients-*"))


@pytest.mark.timing
def test_a_servers_clients_are_delayed_with_it(tmp_path, calibration):  # noqa: F811
    """The hooks' DELAY_CLIENTS=1: Redis in server/ and its clients in clients/ under
    the cgroup the module targets, both delayed and counted: a reply's
    calls are the server's and reqtime's GET (a write and a read, its read
    of the counter taken off), more than the server's alone; the server's
    CPU is still its own cgroup's; every cgroup removed at the end.  On
    the virtual clock: on the host's, a busy host charged the server a
    request 630 us undelayed and 127 delayed (CI)."""
    d, raw = server_sweep(tmp_path, calibration, "redis", "redis-benchmark",
                          *hooks(DELAY_CLIENTS=1), REDIS_REQUESTS="1000")
    settings = json.loads((d / "meta.json").read_text())["settings"]
    assert settings["delay_clients"] is True and settings["count_clients"] is False
    assert re.fullmatch(r"/lab-sweep-\d+", settings["delay_cgroup"]), settings
    reply = {r["loops"]: r for r in raw if r["measure"] == "reply"}
    for r in reply.values():
        assert int(r["syscalls"]) >= 4 * int(r["units"]), r
    # The server's CPU a request, delayed, grew by about its own calls'
    # delays, not its clients'.
    cpu = {r["loops"]: float(r["seconds"]) / int(r["units"]) for r in raw
           if r["measure"] == "server"}
    assert cpu["1000"] > cpu["0"], cpu
    assert not list(pathlib.Path("/sys/fs/cgroup").glob("lab-sweep-*"))
