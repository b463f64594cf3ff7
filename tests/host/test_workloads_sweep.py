"""sweep.sh's defaults on each clock, read without a VM: --dry-run prints
the points and says (stderr) what else the sweep would do, and
LAB_CMDLINE stands for the guest's /proc/cmdline, where vm.sh puts
lab.clock=."""
import os
import subprocess

import pytest
import runners


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
                "saturation steps of 1 s"),
    ("host", "apache on the host clock: 9 points of loops, 3 runs each, "
             "saturation steps of 4 s"),
    (None, "apache on the host clock: 9 points of loops, 3 runs each"),
])
def test_apache_defaults_follow_the_clock(root, tmp_path, clock, says):
    points, err = dry_run(root, tmp_path, clock, "apache")
    assert points == [str(v) for v in range(0, 8001, 1000)]
    assert says in err


@pytest.mark.parametrize("workload, last, runs", [("kbuild", 12000, 3), ("grep", 6000, 5)])
def test_kbuild_and_grep_keep_their_runs_on_both_clocks(root, tmp_path, workload, last, runs):
    for clock in ("virtual", "host"):
        points, err = dry_run(root, tmp_path, clock, workload)
        assert points[0] == "0" and points[-1] == str(last)
        assert f"{len(points)} points of loops, {runs} runs each" in err


def test_given_options_win_over_the_clocks_defaults(root, tmp_path):
    _, err = dry_run(root, tmp_path, "virtual", "apache", "-r", "4", "--step-seconds", "3",
                     "-l", "0,100")
    assert "2 points of loops, 4 runs each, saturation steps of 3 s" in err


def test_module_settings_are_said(root, tmp_path):
    _, err = dry_run(root, tmp_path, "virtual", "grep", "--ns", "0,1000", "--set", "mode=sleep",
                     "--set", "delays=read:2000,futex:50000")
    assert "module: mode=sleep delays=read:2000,futex:50000" in err


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("workloads/sweep.sh", ["nosuch"], {}, "WORKLOAD wants kbuild, grep, apache, cmd or all"),
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
    ("workloads/sweep.sh", ["grep", "--in-memory"], {}, "--in-memory goes with the cmd workload"),
    ("workloads/run.sh", [], {}, "usage: run.sh"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_a_missing_kernel_or_device_is_status_1 = runners.missing_kernel_test(
    "workloads/sweep.sh", ["cmd", "-l", "0,10", "--", "true"], "has no syscall hook")
