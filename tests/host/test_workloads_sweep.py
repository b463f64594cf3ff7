"""sweep.sh's defaults on each clock, read without a VM: --dry-run prints
the points and says (stderr) what else the sweep would do, and
LAB_CMDLINE stands for the guest's /proc/cmdline, where vm.sh puts
lab.clock=."""
import json
import sys
import os
import pathlib
import shutil
import subprocess

import pytest
import runners
from lablib.sweep import parts as sweep_parts


def dry_run(root, tmp_path, clock, *args):
    cmdline = tmp_path / "cmdline"
    cmdline.write_text(f"root=/dev/root lab.variant=stock lab.clock={clock} idle=halt\n"
                       if clock else "root=/dev/sda1 quiet\n")
    r = subprocess.run([root / "workloads/sweep.sh", *args, "--dry-run"], capture_output=True,
                       text=True, env={**os.environ, "LAB_CMDLINE": str(cmdline)})
    assert r.returncode == 0, r.stderr
    return r.stdout.split(), r.stderr


@pytest.mark.parametrize("clock, says", [
    ("virtual", "apache on the virtual clock: 9 points of loops, 2 runs each, "
                "saturation steps of 1 s, 100 replies a reference"),
    ("host", "apache on the host clock: 9 points of loops, 3 runs each, "
             "saturation steps of 4 s, 10 replies a reference"),
    (None, "apache on the host clock: 9 points of loops, 3 runs each"),
])
def test_apache_defaults_follow_the_clock(root, tmp_path, clock, says):
    points, err = dry_run(root, tmp_path, clock, "apache")
    assert points == [str(v) for v in range(0, 8001, 1000)]
    assert says in err


def test_a_given_reference_size_wins_on_either_clock(root, tmp_path, monkeypatch):
    monkeypatch.setenv("SERVER_REQUESTS", "7")
    for clock in ("virtual", "host"):
        _, err = dry_run(root, tmp_path, clock, "apache")
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
    """The plan that lab sweep reads gives each workload's points and their
    cost (sweep.sh --plan); lablib.sweep.parts deals them; a part runs
    what it is given."""
    out = subprocess.run([root / "workloads/sweep.sh", workload, "--plan"], capture_output=True,
                         text=True, check=True, env={**os.environ, "LAB_CMDLINE": "/dev/null"})
    (plan,) = sweep_parts.read_plan(out.stdout)
    assert sweep_parts.balance(plan["points"], 2, plan["cost_slope"]) == parts
    for k, points in enumerate(parts, 1):
        given = ",".join(map(str, points))
        ran, _ = dry_run(root, tmp_path, "virtual", workload, "--part", f"{k}/2",
                         "--points", given)
        assert [int(v) for v in ran] == points


@pytest.mark.parametrize("args, message", [
    (["--part", "1/2"], "wants its points"),
    (["--part", "1/2", "--points", "0,1"], "1 is not one of the sweep's points"),
    (["--points", "0"], "--points goes with --part"),
])
def test_a_part_runs_the_points_it_is_given(root, tmp_path, args, message):
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("lab.clock=virtual\n")
    r = subprocess.run([root / "workloads/sweep.sh", "grep", *args, "--dry-run"],
                       capture_output=True, text=True, env={**os.environ,
                                                            "LAB_CMDLINE": str(cmdline)})
    assert r.returncode == 2 and message in r.stderr


def test_the_plan_of_all_names_each_workload_and_where_it_stages(root):
    out = subprocess.run([root / "workloads/sweep.sh", "all", "--plan"], capture_output=True,
                         text=True, check=True, env={**os.environ, "LAB_CMDLINE": "/dev/null"})
    blocks = [dict(line.split("=", 1) for line in b.strip().split("\n"))
              for b in ("\n" + out.stdout).split("\nworkload=")[1:]
              for b in ["workload=" + b]]
    assert [(b["workload"], b["stage"]) for b in blocks] == [
        ("apache", "guest"), ("grep", "host"), ("kbuild", "host")]
    out = subprocess.run([root / "workloads/sweep.sh", "all", "--no-stage", "--plan"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "LAB_CMDLINE": "/dev/null"})
    assert out.stdout.count("stage=none") == 3


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
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=/dev/root lab.clock=virtual\n")
    r = subprocess.run([root / "workloads/sweep.sh", "apache", "--dry-run"], capture_output=True,
                       text=True, env={**os.environ, "LAB_CMDLINE": str(cmdline), var: value})
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
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=/dev/root lab.clock=virtual\n")
    r = subprocess.run([root / "workloads/sweep.sh", "redis", "--dry-run"], capture_output=True,
                       text=True, env={**os.environ, "LAB_CMDLINE": str(cmdline), var: value})
    assert r.returncode == 2 and f"{var} wants a whole number" in r.stderr, r.stderr


def test_module_settings_are_said(root, tmp_path):
    _, err = dry_run(root, tmp_path, "virtual", "grep", "--ns", "0,1000", "--set", "mode=sleep",
                     "--set", "delays=read:2000,futex:50000")
    assert "module: mode=sleep delays=read:2000,futex:50000" in err


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("workloads/sweep.sh", ["nosuch"], {},
     "WORKLOAD wants apache, cmd, grep, kbuild,"),
    ("workloads/sweep.sh", ["grep", "-l", "0:abc"], {}, "--loops wants a list"),
    ("workloads/sweep.sh", ["grep", "-l", "0,100,50"], {}, "--loops wants loop counts in "
                                                          "increasing order"),
    ("workloads/sweep.sh", ["grep", "--ns", "10,20"], {}, "--ns wants a list that starts at 0"),
    ("workloads/sweep.sh", ["grep", "-r", "0"], {}, "--repeats wants a whole number >= 1"),
    ("workloads/sweep.sh", ["grep", "-j", "x"], {}, "--jobs wants a whole number"),
    ("workloads/sweep.sh", ["grep", "--scale", "huge"], {}, "--scale wants full, vm or small"),
    ("workloads/sweep.sh", ["grep", "--set", "mode"], {}, "--set wants NAME=VALUE"),
    ("workloads/sweep.sh", ["grep", "--set", "mode=a b"], {}, "--set wants NAME=VALUE"),
    ("workloads/sweep.sh", ["grep", "--set", "nosuch=1"], {}, "--set wants one of mode, where"),
    ("workloads/sweep.sh", ["grep", "--set", "ns=100"], {}, "the sweep sets it itself"),
    ("workloads/sweep.sh", ["grep", "--set", "ppm=1", "--set", "ppm=2"], {},
     "--set ppm given twice"),
    ("workloads/sweep.sh", ["grep", "--calibration", "/nonexistent"], {},
     "--calibration wants a calibrate result folder"),
    ("workloads/sweep.sh", ["cmd"], {}, "cmd needs a command after '--'"),
    ("workloads/sweep.sh", ["apache", "--stage-only", "x"], {},
     "--stage-only: apache stages in the VM, not on the host"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


def lab_sweep(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "lablib.lab", "sweep", *map(str, args)],
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=timeout)


@pytest.mark.parametrize("args, message", [
    (["grep", "-o", "/tmp/x"], "the VM has a /tmp of its own"),
    (["grep", "--vms", "0"], "--vms wants a whole number >= 1"),
    (["grep", "--stage-only", "x"], "--stage-only is sweep.sh's"),
    (["grep", "--part", "1/2", "--vms", "2"], "--part is one part"),
    (["grep", "-l", "0:abc"], "--loops wants a list"),
    (["nosuch"], "WORKLOAD wants apache, cmd, grep, kbuild,"),
])
def test_lab_sweep_refuses_a_bad_value_in_one_line(args, message):
    out = lab_sweep(*args)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr


def test_lab_sweep_here_runs_on_this_machines_kernel_not_in_a_vm(tmp_path):
    """--here boots nothing: sweep.sh runs here, on this kernel, which has
    no syscall hook on a build machine, and says so."""
    if "syscall_hook_register" in pathlib.Path("/proc/kallsyms").read_text():
        pytest.skip("this machine runs the lab kernel")
    vm = tmp_path / "vm"
    vm.write_text("#!/bin/sh\necho booted >>\"$0.log\"\nexit 99\n")
    vm.chmod(0o755)
    out = lab_sweep("grep", "--here", "-l", "0,100", "-r", "1", "-o", tmp_path / "r",
                    env={"LAB_VM": str(vm), "LAB_BUILD": str(tmp_path / "build")})
    assert out.returncode == 1, out.stderr
    assert "has no syscall hook" in out.stdout and "no new grep sweep" in out.stderr
    assert "on this machine's kernel" in out.stderr
    assert not (tmp_path / "vm.log").exists() and not (tmp_path / "build/stage").exists()
    out = lab_sweep("grep", "--here", "--vms", "2")
    assert out.returncode == 2 and "--here runs the sweep on this machine's kernel" in out.stderr


def test_lab_sweep_without_a_workload_says_how():
    out = lab_sweep()
    assert out.returncode == 2 and out.stderr.startswith("usage: lab sweep WORKLOAD")


test_a_missing_kernel_or_device_is_status_1 = runners.missing_kernel_test(
    "workloads/sweep.sh", ["cmd", "-l", "0,10", "--", "true"], "has no syscall hook")


# The VM's stand-in for lab sweep: the guest script's own checks, on what
# lab sweep hands it (its --dry-run), and their status as the VM's.
CHECKING_VM = r'''#!/usr/bin/env bash
[ "$1" != --clock ] || { echo virtual; exit 0; }
shift
echo "$*" >"$VM_ARGS.$$"
exec "$1" "$2" --dry-run "${@:3}" >/dev/null
'''


@pytest.mark.skipif(not shutil.which("strace"), reason="cmd is staged with strace")
@pytest.mark.parametrize("vms", ["1", "2"])
@pytest.mark.parametrize("workload", ["apache", "cmd"])
def test_lab_sweep_hands_a_workload_what_it_takes(root, tmp_path, workload, vms):
    """Apache stages in the VM: on a fresh build folder its sweep reached
    the VM with a --stage-from folder that nobody had made, and sweep.sh
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
    # Each boot's arguments (the parts of a split sweep boot at once).
    boots = [f.read_text().split() for f in tmp_path.glob("args.*")]
    assert len(boots) == int(vms)
    for handed in boots:
        check_handed(handed, workload, command, tmp_path)
    assert "wants" not in r.stderr, r.stderr
    # The stand-in made no sweep: lab sweep says so.
    assert r.returncode == 1 and f"no new {workload} sweep" in r.stderr


def check_handed(handed, workload, command, tmp_path):
    if workload == "cmd":
        assert handed[handed.index("--stage-from") + 1] == str(tmp_path / "build/stage")
        assert json.loads((tmp_path / "build/stage/cmd.json").read_text())["files"] > 0
    else:
        assert "--stage-from" not in handed
    assert handed[-2:] == (command or handed[-2:])


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
