"""lab sweep's plan and defaults on each clock, read without a VM:
--dry-run prints the points and says (stderr) what else the sweep would
do.  The clock is the stand-in VM's ('vm.sh --clock'), or with --here the
one LAB_CMDLINE names, which stands for the guest's /proc/cmdline, where
vm.sh puts lab.clock=."""
import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from lablib import lists
from lablib.sweep import catalog, driver, parts as sweep_parts, plan as sweep_plan

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "results"


def clock_vm(tmp_path, clock):
    """A stand-in for scripts/vm.sh that only says its clock."""
    vm = tmp_path / f"vm-{clock}"
    vm.write_text(f"#!/bin/sh\n[ \"$1\" = --clock ] && echo {clock} && exit 0\nexit 99\n")
    vm.chmod(0o755)
    return vm


def lab_sweep(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "lablib.lab", "sweep", *map(str, args)],
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=timeout, stdin=subprocess.DEVNULL)


def dry_run(root, tmp_path, clock, *args, env=None):
    """--dry-run in a VM on @clock, or (None) --here on a kernel that is
    not the lab's."""
    if clock is None:
        cmdline = tmp_path / "cmdline"
        cmdline.write_text("root=/dev/sda1 quiet\n")
        r = lab_sweep(*args, "--here", "--dry-run",
                      env={"LAB_CMDLINE": str(cmdline), **(env or {})})
    else:
        r = lab_sweep(*args, "--dry-run", env={"LAB_VM": str(clock_vm(tmp_path, clock)),
                                               **(env or {})})
    assert r.returncode == 0, r.stderr
    return r.stdout.split(), r.stderr


@pytest.mark.parametrize("clock, says", [
    ("virtual", "apache on the virtual clock: 9 points of loops, 2 runs each, "
                "saturation steps of 1 s, 100 replies a reference"),
    ("host", "apache on the host clock: 9 points of loops, 3 runs each, "
             "saturation steps of 4 s, 10 replies a reference"),
    # --here on a kernel without the lab's hook: the BPF delay, in ns.
    (None, "apache on the host clock: 9 points of ns, 3 runs each"),
])
def test_apache_defaults_follow_the_clock(root, tmp_path, clock, says):
    points, err = dry_run(root, tmp_path, clock, "apache")
    step = 3000 if clock is None else 1000
    assert points == [str(v) for v in range(0, 8 * step + 1, step)]
    assert says in err


def test_a_given_reference_size_wins_on_either_clock(root, tmp_path):
    for clock in ("virtual", "host"):
        _, err = dry_run(root, tmp_path, clock, "apache", env={"SERVER_REQUESTS": "7"})
        assert ", 7 replies a reference" in err


@pytest.mark.parametrize("workload, last, runs", [("kbuild", 12000, 3), ("grep", 6000, 5)])
def test_kbuild_and_grep_keep_their_runs_on_both_clocks(root, tmp_path, workload, last, runs):
    for clock in ("virtual", "host"):
        points, err = dry_run(root, tmp_path, clock, workload)
        assert points[0] == "0" and points[-1] == str(last)
        assert f"{len(points)} points of loops, {runs} runs each" in err


@pytest.mark.parametrize("workload, parts", [
    # Apache's points get cheaper as the delay grows (a spin emulates
    # faster than the server's code): the low delays share a part with
    # the calibration, as many points as the other part's five high ones.
    ("apache", [[0, 1000, 3000, 5000], [2000, 4000, 6000, 7000, 8000]]),
    # grep's get dearer: its dearest points spread over both parts.
    ("grep", [[2250, 3750, 4500, 6000], [0, 750, 1500, 3000, 5250]]),
])
def test_a_split_balances_the_points_by_their_cost(root, tmp_path, workload, parts):
    """lab sweep deals each workload's points by their cost (the
    workload's WL_COST_SLOPE, lablib.sweep.parts); a part runs what it is
    given."""
    points, _ = dry_run(root, tmp_path, "virtual", workload)
    slope = catalog.workloads()[workload].cost_slope
    assert sweep_parts.balance([int(v) for v in points], 2, slope) == parts
    for k, mine in enumerate(parts, 1):
        ran, _ = dry_run(root, tmp_path, "virtual", workload, "--part", f"{k}/2",
                         "--points", ",".join(map(str, mine)))
        assert [int(v) for v in ran] == mine


@pytest.mark.parametrize("args, message", [
    (["--part", "1/2"], "wants its points"),
    (["--part", "1/2", "--points", "0,1"], "1 is not one of the sweep's points"),
    (["--points", "0"], "--points goes with --part"),
    (["--part", "3/2", "--points", "0"], "--part wants K/N"),
])
def test_a_part_runs_the_points_it_is_given(root, tmp_path, args, message):
    r = lab_sweep("grep", *args, "--dry-run",
                  env={"LAB_VM": str(clock_vm(tmp_path, "virtual"))})
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_the_plan_of_all_names_each_workload_and_where_it_stages(root, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_VM", str(clock_vm(tmp_path, "virtual")))
    sweep = driver.Sweep(*driver.parse(["all"]), ["all"])
    assert [(b["workload"], b["stage"]) for b in sweep.plan] == [
        ("apache", "guest"), ("grep", "host"), ("kbuild", "host")]
    assert all(p["STAGE_FROM"] for p in sweep.plans)
    sweep = driver.Sweep(*driver.parse(["all", "--no-stage"]), ["all", "--no-stage"])
    assert [b["stage"] for b in sweep.plan] == ["none"] * 3
    assert not any(p["STAGE_FROM"] for p in sweep.plans)


def test_the_plan_file_is_what_the_runner_and_the_tests_read(root, tmp_path, monkeypatch):
    """plan.write's file gives plan.read the fields back, and the runner
    (bash) the same values: a command's words with spaces and quotes in
    them stay what they were."""
    monkeypatch.setenv("LAB_VM", str(clock_vm(tmp_path, "virtual")))
    argv = ["cmd", "-l", "0,10", "--set", "ppm=5", "--", "sh", "-c", "echo 'a b' \"$x\""]
    sweep = driver.Sweep(*driver.parse(argv), argv)
    (p,) = sweep.plans
    path = sweep_plan.write(p, tmp_path / "plan")
    assert sweep_plan.read(path) == {**p, "OUTPUT": str(p["OUTPUT"])}
    out = subprocess.run(["bash", "-c", '. "$1" && printf "%s\\n" "${COMMAND[@]}" "$KNOB" '
                          '"${VALUES[*]}" "${SET_NAMES[*]}=${SET_VALUES[*]}"', "x", path],
                         capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["sh", "-c", "echo 'a b' \"$x\"", "loops", "0 10",
                                       "ppm=5"]


def test_given_options_win_over_the_clocks_defaults(root, tmp_path):
    _, err = dry_run(root, tmp_path, "virtual", "apache", "-r", "4", "--step-seconds", "3",
                     "-l", "0,100")
    assert "2 points of loops, 4 runs each, saturation steps of 3 s" in err


@pytest.mark.parametrize("var, value, said", [
    ("APACHE_MPM", "worker", "APACHE_MPM wants event or prefork, not 'worker'"),
    ("APACHE_KEEPUP", "1.5", "APACHE_KEEPUP wants a fraction in (0, 1], not '1.5'"),
    ("APACHE_KEEPUP_VIRTUAL", "0", "APACHE_KEEPUP_VIRTUAL wants a fraction in (0, 1], not '0'"),
    ("APACHE_KEEPUP_VIRTUAL", "x", "APACHE_KEEPUP_VIRTUAL wants a fraction in (0, 1], not 'x'"),
    ("SERVER_TIME_WAIT", "none", "SERVER_TIME_WAIT wants a whole number, not 'none'"),
    ("SERVER_FAIR_SERVER", "off", "SERVER_FAIR_SERVER wants a whole number, not 'off'"),
])
def test_apache_refuses_settings_it_cannot_use(root, tmp_path, var, value, said):
    r = lab_sweep("apache", "--dry-run", env={"LAB_VM": str(clock_vm(tmp_path, "virtual")),
                                              var: value})
    assert r.returncode == 2
    assert said in r.stderr


@pytest.mark.parametrize("clock, runs", [("virtual", 2), ("host", 3)])
def test_redis_is_a_server_with_the_defaults_of_its_own(root, tmp_path, clock, runs):
    points, err = dry_run(root, tmp_path, clock, "redis")
    assert points == [str(v) for v in range(0, 12001, 1500)]
    replies = 100 if clock == "virtual" else 10
    assert f"redis on the {clock} clock: 9 points of loops, {runs} runs each, {replies} " \
        "replies a reference" in err, err


@pytest.mark.parametrize("var, value", [("REDIS_CLIENTS", "0"), ("REDIS_REQUESTS", "x"),
                                        ("REDIS_VALUE_BYTES", "-1")])
def test_redis_refuses_settings_it_cannot_use(root, tmp_path, var, value):
    r = lab_sweep("redis", "--dry-run", env={"LAB_VM": str(clock_vm(tmp_path, "virtual")),
                                             var: value})
    assert r.returncode == 2 and f"{var} wants a whole number" in r.stderr, r.stderr


def test_module_settings_are_said(root, tmp_path):
    _, err = dry_run(root, tmp_path, "virtual", "grep", "--ns", "0,1000", "--set", "mode=sleep",
                     "--set", "delays=read:2000,futex:50000")
    assert "module: mode=sleep delays=read:2000,futex:50000" in err


# --- one line and status 2 for a bad value, nothing made ---------------------

@pytest.mark.parametrize("args, message", [
    (["nosuch"], "WORKLOAD wants apache, cmd, grep, kbuild,"),
    (["grep", "-l", "0:abc"], "--loops wants a list"),
    (["grep", "-l", "0,100,50"], "--loops wants loop counts in increasing order"),
    (["grep", "-l", "0,2000000"], "--loops wants loop counts of at most 1000000"),
    (["grep", "--ns", "10,20"], "--ns wants a list that starts at 0"),
    (["grep", "--ns", "0,10", "-l", "0,5"], "--ns and --loops exclude each other"),
    (["grep", "-r", "0"], "--repeats wants a whole number >= 1"),
    (["grep", "-j", "x"], "argument -j/--jobs: invalid int value: 'x'"),
    (["grep", "-j", "0"], "--jobs wants a whole number >= 1"),
    (["grep", "--scale", "huge"], "argument --scale: invalid choice: 'huge'"),
    (["grep", "--set", "mode"], "--set wants NAME=VALUE"),
    (["grep", "--set", "mode=a b"], "--set wants NAME=VALUE"),
    (["grep", "--set", "nosuch=1"], "--set wants one of mode, where"),
    (["grep", "--set", "ns=100"], "the sweep sets it itself"),
    (["grep", "--set", "ppm=1", "--set", "ppm=2"], "--set ppm given twice"),
    (["grep", "--syscalls", "read,nosuch"], "'nosuch' is no call of the 64-bit table"),
    (["grep", "--syscalls", "read;ls"], "--syscalls wants names like read,write,openat"),
    (["grep", "--calibration", "/nonexistent"], "--calibration wants a calibrate result folder"),
    (["grep", "--calibration", "/tmp"], "--calibration wants an analysed calibrate result"),
    (["grep", "-l", "0"], "-l 0 alone has no loop count to calibrate"),
    (["grep", "--hook-var", "TAX=trace"], "--hook-var wants --hooks FILE"),
    (["grep", "--hooks", "/nonexistent"], "--hooks wants a file of hooks"),
    (["cmd"], "cmd needs a command after '--'"),
    (["grep", "--", "true"], "grep takes no command after '--'"),
    (["apache", "--stage-only", "x"], "--stage-only: apache stages in the guest"),
    (["grep", "--delay", "bpf", "-l", "0,100"], "--delay bpf spins in ns: give --ns LIST"),
    (["grep", "--delay", "none"], "--delay none delays nothing and counts nothing"),
    (["grep", "--delay", "none", "--ns", "0,100"], "--delay none delays nothing"),
    (["grep", "--delay", "nosuch"], "--delay: invalid choice: 'nosuch'"),
    (["grep", "-l", "50,100"], "--loops wants a list that starts at 0"),
    (["grep", "--bogus"], "unrecognized arguments: --bogus"),
    (["grep", "--ns", "0,6000000"], "--ns wants delays of at most 5000000"),
    (["grep", "--set", "loops=5"], "the sweep sets it itself"),
    (["grep", "--set", "where"], "--set wants NAME=VALUE"),
    (["grep", "--cpus", "1"], "--cpus is for --here"),
])
def test_a_bad_value_is_status_2_and_one_line(tmp_path, args, message):
    before = set(RESULTS.iterdir()) if RESULTS.exists() else set()
    out = lab_sweep(*args, env={"LAB_VM": str(clock_vm(tmp_path, "virtual")),
                                "LAB_BUILD": str(tmp_path / "build")})
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert message in lines[-1] and lines[-1].startswith("lab sweep: "), out.stderr
    # argparse's usage line comes before its own complaint.
    assert len(lines) == 1 or lines[0].startswith("usage: lab sweep"), out.stderr
    assert (set(RESULTS.iterdir()) if RESULTS.exists() else set()) == before


@pytest.mark.parametrize("args, message", [
    (["grep", "-o", "/tmp/x"], "the VM has a /tmp of its own"),
    (["grep", "--vms", "0"], "--vms wants a whole number >= 1"),
    (["grep", "--part", "1/2", "--vms", "2"], "--part is one part"),
    (["grep", "-l", "0:abc"], "--loops wants a list"),
    (["nosuch"], "WORKLOAD wants apache, cmd, grep, kbuild,"),
    (["grep", "--here", "--cpus", "1;2"], "--cpus wants CPUs like 1, 2-3 or 0,2"),
    (["grep", "--here", "--cpus", "4096"], "--cpus 4096: this machine runs the sweep on CPUs"),
    (["redis", "--here", "--cpus", "0"], "--cpus: redis is a server"),
])
def test_lab_sweep_refuses_a_bad_value_in_one_line(args, message):
    out = lab_sweep(*args)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr


def test_lab_sweep_here_runs_on_this_machines_kernel_not_in_a_vm(tmp_path):
    """--here boots nothing: the runner runs here, on this kernel, which has
    no syscall hook on a build machine, and says so."""
    if "syscall_hook_register" in pathlib.Path("/proc/kallsyms").read_text():
        pytest.skip("this machine runs the lab kernel")
    vm = tmp_path / "vm"
    vm.write_text("#!/bin/sh\necho booted >>\"$0.log\"\nexit 99\n")
    vm.chmod(0o755)
    out = lab_sweep("grep", "--here", "--delay", "module", "-l", "0,100", "-r", "1",
                    "-o", tmp_path / "r",
                    env={"LAB_VM": str(vm), "LAB_BUILD": str(tmp_path / "build")})
    assert out.returncode == 1, out.stderr
    assert "has no syscall hook" in out.stderr and "no new grep sweep" in out.stderr
    assert not (tmp_path / "vm.log").exists() and not (tmp_path / "build/stage").exists()
    out = lab_sweep("grep", "--here", "--vms", "2")
    assert out.returncode == 2 and "--here runs the sweep on this machine's kernel" in out.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="a sweep on this kernel needs root")
def test_a_sweep_with_no_delay_times_the_work_and_counts_nothing(tmp_path):
    """--delay none (the tax's runs on this kernel): the grep timed with
    nothing attached, its calls not counted, the sweep saying so."""
    out = lab_sweep("grep", "--here", "--delay", "none", "--ns", "0", "--scale", "small",
                    "-r", "2", "--no-analysis", "-o", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (d,) = [p for p in tmp_path.iterdir() if p.name.startswith("grep-")]
    meta = json.loads((d / "meta.json").read_text())["settings"]
    assert meta["delay"] == "none" and meta["delay_counts"] is False, meta
    raw = [r for r in csv.DictReader(open(d / "raw.csv")) if r["measure"] == "grep"]
    assert len(raw) == 2 and all(float(r["seconds"]) > 0 and r["syscalls"] == "0"
                                 for r in raw), raw
    assert [r["delayed"] for r in csv.DictReader(open(d / "points.csv"))] == [""]


@pytest.mark.skipif(os.geteuid() != 0, reason="a sweep on this kernel needs root")
def test_here_the_work_runs_on_the_cpus_asked(tmp_path):
    """--here --cpus: the command's own affinity is the CPU asked, and
    meta.json says so."""
    cpu = max(os.sched_getaffinity(0))
    out = lab_sweep("cmd", "--here", "--delay", "none", "--ns", "0", "-r", "1", "--cpus",
                    str(cpu), "--no-analysis", "-o", tmp_path, "--", "grep",
                    "Cpus_allowed_list", "/proc/self/status")
    assert out.returncode == 0, out.stderr[-3000:]
    (d,) = [p for p in tmp_path.iterdir() if p.name.startswith("cmd-")]
    assert json.loads((d / "meta.json").read_text())["settings"]["work_cpus"] == str(cpu)
    (log,) = (d / "logs").glob("cmd-ns0-1.txt")
    assert log.read_text().split() == ["Cpus_allowed_list:", str(cpu)], log.read_text()


def test_lab_sweep_without_a_workload_says_how():
    out = lab_sweep()
    assert out.returncode == 2 and out.stderr.startswith("usage: lab sweep WORKLOAD")


# The VM's stand-in for lab sweep: the runner's own checks (--describe) on
# the plans lab sweep hands it, and their status as the VM's.
CHECKING_VM = r'''#!/usr/bin/env bash
[ "$1" != --clock ] || { echo virtual; exit 0; }
shift
echo "$*" >"$VM_ARGS.$$"
for plan in "${@:2}"; do
    cp "$plan" "$VM_ARGS.$$.plan"
    "$1" --describe "$plan" >/dev/null || exit
done
'''


@pytest.mark.skipif(not shutil.which("strace"), reason="cmd is staged with strace")
@pytest.mark.parametrize("vms", ["1", "2"])
@pytest.mark.parametrize("workload", ["apache", "cmd"])
def test_lab_sweep_hands_a_workload_what_it_takes(root, tmp_path, workload, vms):
    """Apache stages in the VM: on a fresh build folder its sweep reached
    the VM with a staging folder that nobody had made, and the guest
    refused it.  cmd is staged on the host, its command recorded there
    and the archive handed on; its command once got the runner's options
    after it.  In one VM and in parts."""
    vm = tmp_path / "vm"
    vm.write_text(CHECKING_VM)
    vm.chmod(0o755)
    command = ["--", "true"] if workload == "cmd" else []
    r = lab_sweep(workload, "-l", "0,100", "-r", "1", "--vms", vms, "-o", tmp_path / "results",
                  *command, env={"LAB_VM": str(vm), "VM_ARGS": str(tmp_path / "args"),
                                 "LAB_BUILD": str(tmp_path / "build")})
    # Each boot's plan (the parts of a split sweep boot at once).
    boots = [sweep_plan.read(f) for f in tmp_path.glob("args.*.plan")]
    assert len(boots) == int(vms)
    for handed in boots:
        check_handed(handed, workload, command, tmp_path)
    assert "wants" not in r.stderr, r.stderr
    # The stand-in made no sweep: lab sweep says so.
    assert r.returncode == 1 and f"no new {workload} sweep" in r.stderr


def check_handed(handed, workload, command, tmp_path):
    if workload == "cmd":
        assert handed["STAGE_FROM"] == str(tmp_path / "build/stage")
        assert json.loads((tmp_path / "build/stage/cmd.json").read_text())["files"] > 0
    else:
        assert handed["STAGE_FROM"] == ""
    assert handed["COMMAND"] == command[1:]


def test_kbuild_is_configured_without_the_hosts_own_tools(root, tmp_path):
    """kbuild-prepare.sh configures in the workloads' fixed environment: a
    rustc that only the caller's PATH has (a rustup's ~/.cargo/bin) does
    not reach the .config, which every timed build reads."""
    tree = root / "build/src/linux-source-6.12"
    if not (tree / "Makefile").exists():
        pytest.skip("no kernel tree (make kernel)")
    bin_dir = tmp_path / "cargo-bin"
    bin_dir.mkdir()
    rustc = bin_dir / "rustc"
    rustc.write_text("#!/bin/sh\necho 'rustc 1.95.0 (59807616e 2026-04-14)'\n")
    rustc.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = subprocess.run([root / "workloads/kbuild-prepare.sh", "small", tmp_path / "obj", tree],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    config = (tmp_path / "obj/.config").read_text()
    assert "CONFIG_RUSTC_VERSION=0\n" in config


# The names a source of delay defines (workloads/delay/module.sh says each).
DELAY_SEAM = ("delay_ready", "delay_begin", "delay_set", "delay_settings", "delay_stat",
              "delay_by_call", "delay_end")


@pytest.mark.parametrize("source", sorted((pathlib.Path(__file__).resolve().parents[2]
                                           / "workloads/delay").glob("*.sh")),
                         ids=lambda p: p.name)
def test_a_source_of_delay_defines_the_seam(root, source):
    """The runner uses these names alone: a source that lacks one would
    fail only halfway through a sweep."""
    out = subprocess.run(["bash", "-c", '. scripts/lib.sh && . workloads/lib/common.sh && '
                          '. "$1" && declare -F "${@:2}" && declare -p DELAY_CALLS',
                          "x", source, *DELAY_SEAM], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_plan_names_a_source_of_delay(root, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_VM", str(clock_vm(tmp_path, "virtual")))
    (p,) = driver.Sweep(*driver.parse(["grep"]), ["grep"]).plans
    assert p["DELAY"] == "module"
    assert (root / "workloads/delay" / f"{p['DELAY']}.sh").is_file()


def test_the_bpf_delay_sweeps_in_ns_from_the_workloads_loop_counts(tmp_path, monkeypatch):
    """A BPF program has no loop count: its points are ns, by default the
    workload's loop counts times the 3 ns a loop of the module costs on
    the virtual clock, and nothing calibrates after them."""
    monkeypatch.setenv("LAB_VM", str(clock_vm(tmp_path, "virtual")))
    argv = ["grep", "--delay", "bpf"]
    (p,) = driver.Sweep(*driver.parse(argv), argv).plans
    w = sweep_plan.workload("grep")
    assert (p["DELAY"], p["KNOB"], p["CALIBRATE_AFTER"]) == ("bpf", "ns", 0)
    assert p["ALL_VALUES"] == [3 * v for v in lists.parse_list(w.loops)] and p["ALL_VALUES"][1]
    argv = ["grep", "--delay", "bpf", "--ns", "0,500"]
    (p,) = driver.Sweep(*driver.parse(argv), argv).plans
    assert p["ALL_VALUES"] == [0, 500]


@pytest.mark.parametrize("line, cmdline, delay", [
    ("ffffffff81000000 T syscall_hook_register\n", "", "module"),
    ("ffffffff81000000 T syscall_hook_register_other\n", "", "bpf"),
    ("", "", "bpf"),
    ("", "root=/dev/root lab.variant=tax lab.clock=virtual", "module"),
])
def test_here_the_delay_is_the_modules_only_on_the_lab_kernel(tmp_path, line, cmdline, delay):
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text("ffffffff81000010 T _stext\n" + line)
    (tmp_path / "cmdline").write_text(f"console=ttyS0 {cmdline}\n")
    assert sweep_plan.here_delay(kallsyms, tmp_path / "cmdline") == delay


def test_the_sweep_imports_no_numpy_before_its_analysis():
    """A sweep in the lab's VM starts 'lab sweep' there; numpy's import
    alone took seconds of the emulator's time, and the analysis, which
    needs it, runs on the host."""
    out = subprocess.run([sys.executable, "-c", "import sys; import lablib.lab, "
                          "lablib.sweep.driver; print('numpy' in sys.modules)"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stdout + out.stderr
