"""The runners' conventions, checked where they decide before booting a VM
or touching the kernel: a bad value is one line and exit status 2 with
nothing made, a missing tool, kernel hook or device is exit status 1, and
meta.json keeps the whole command line the runner was given."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

RESULTS = ROOT / "results"


def listing():
    return set(RESULTS.iterdir()) if RESULTS.exists() else set()


def run(script, *args, env=None):
    return subprocess.run([ROOT / script, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


# script, arguments, environment, what the one line names
BAD = [
    ("userspace/smp/run.sh", ["-r", "0"], {}, "--repeats wants a whole number >= 1"),
    ("userspace/smp/run.sh", ["-n"], {}, "-n wants a value"),
    ("userspace/smp/run.sh", ["--bogus"], {}, "unknown argument '--bogus'"),
    ("userspace/smp/guest.sh", ["/nonexistent", "0"], {}, "RUNS wants a whole number >= 1"),
    ("userspace/peers/run.sh", ["--warmup", "x"], {}, "--warmup wants a whole number"),
    ("userspace/peers/guest.sh", ["/nonexistent", "5", "-1"], {}, "WARMUP wants"),
    ("userspace/msgq/run.sh", ["-n", "0"], {}, "-n wants a whole number >= 1"),
    ("userspace/msgq/run.sh", ["--repeats", "x"], {}, "--repeats wants a whole number"),
    ("userspace/msgq/guest.sh", ["/nonexistent", "x"], {}, "RUNS wants a whole number"),
    ("userspace/hookcost/run.sh", [], {"ROUNDS": "0"}, "ROUNDS wants a whole number >= 1"),
    ("userspace/hookcost/run.sh", ["--boots", "2"], {}, "takes no arguments, not '--boots'"),
    ("userspace/hookcost/guest.sh", ["a"], {}, "usage: guest.sh"),
    ("userspace/calibrate/bench.sh", [], {"RUNS": "1"}, "RUNS wants a whole number >= 2"),
    ("userspace/calibrate/run.sh", ["--runs", "0"], {}, "--runs wants a whole number >= 1"),
    ("userspace/irqhook/sweep.sh", ["--loads", "1:"], {}, "--loads wants a list"),
    ("userspace/irqhook/sweep.sh", ["-n", "0"], {}, "--events wants a whole number >= 1"),
    ("userspace/irqhook/sweep.sh", ["-C", "4096"], {}, "--cpu wants a CPU of this machine"),
    ("userspace/irqhook/sweep.sh", ["--trace-cells", "1:fast"], {}, "--trace-cells wants"),
    ("userspace/rtcompare/run.sh", ["--variants", "nohook"], {}, "--variants wants kernels"),
    ("userspace/rtcompare/guest.sh", ["-", "--check", "--ct-loops", "9"], {},
     "--ct-loops wants a whole number >= 10"),
    ("workloads/sweep.sh", ["nosuch"], {}, "WORKLOAD wants kbuild, grep, apache, cmd or all"),
    ("workloads/sweep.sh", ["grep", "-l", "0:abc"], {}, "--loops wants a list"),
    ("workloads/sweep.sh", ["grep", "-l", "0,100,50"], {}, "--loops wants loop counts in "
                                                          "increasing order"),
    ("workloads/sweep.sh", ["grep", "--ns", "10,20"], {}, "--ns wants a list that starts at 0"),
    ("workloads/sweep.sh", ["grep", "-r", "0"], {}, "--repeats wants a whole number >= 1"),
    ("workloads/sweep.sh", ["grep", "-j", "x"], {}, "--jobs wants a whole number"),
    ("workloads/sweep.sh", ["grep", "--scale", "huge"], {}, "--scale wants full, vm or small"),
    ("workloads/sweep.sh", ["grep", "--calibration", "/nonexistent"], {},
     "--calibration wants a calibrate result folder"),
    ("workloads/sweep.sh", ["cmd"], {}, "cmd needs a command after '--'"),
    ("workloads/sweep.sh", ["grep", "--in-memory"], {}, "--in-memory goes with the cmd workload"),
    ("workloads/sweep-vm.sh", [], {}, "usage: sweep-vm.sh"),
]


@pytest.mark.parametrize("script,args,env,message", BAD,
                         ids=[f"{s.split('/')[-2]}/{s.split('/')[-1]} {' '.join(a)}"
                              for s, a, _, _ in BAD])
def test_a_bad_value_is_status_2_and_one_line(script, args, env, message):
    before = listing()
    out = run(script, *args, env=env)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert lines[0].startswith(os.path.basename(script) + ": ")
    assert listing() == before


@pytest.mark.skipif(os.path.exists("/dev/irqhook") or " syscall_hook_register\n" in
                    open("/proc/kallsyms").read(), reason="this machine runs the lab kernel")
@pytest.mark.parametrize("script,args,message", [
    ("userspace/irqhook/sweep.sh", ["-n", "5"], "no /dev/irqhook"),
    ("userspace/calibrate/run.sh", ["--runs", "2"], "has no syscall hook"),
    ("workloads/sweep.sh", ["cmd", "-l", "0,10", "--", "true"], "has no syscall hook"),
])
def test_a_missing_kernel_or_device_is_status_1(script, args, message):
    before = listing()
    out = run(script, *args)
    assert out.returncode == 1, out.stderr
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr
    assert listing() == before


def lab_copy(tmp_path, experiment, tools):
    """The scripts of @experiment, liblab's lab and @tools in a tree of
    their own, whose scripts/vm.sh fails as a VM that does not boot would:
    the runner has made its folder and meta.json by then."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/lib.sh", tmp_path / "scripts")
    vm = tmp_path / "scripts/vm.sh"
    vm.write_text("#!/bin/sh\necho 'vm.sh: not booting in this test' >&2\nexit 3\n")
    vm.chmod(0o755)
    shutil.copytree(ROOT / "config/variants", tmp_path / "config/variants")
    (tmp_path / "userspace/lib").mkdir(parents=True)
    shutil.copy(ROOT / "userspace/lib/lab", tmp_path / "userspace/lib")
    (tmp_path / "userspace" / experiment).mkdir()
    for f in ["run.sh", "guest.sh", *tools]:
        shutil.copy(ROOT / "userspace" / experiment / f, tmp_path / "userspace" / experiment)
    return tmp_path / "userspace" / experiment / "run.sh"


@pytest.mark.parametrize("experiment,tools,args,folder", [
    ("smp", ["smp"], ["-r", "2", "--no-analysis", "-n", "7"], "smp"),
    ("peers", ["percall"], ["-n", "9", "--warmup", "3", "--no-analysis"], "peers"),
    ("msgq", ["msgq"], ["--repeats", "2", "-n", "50", "--", "--size", "16:64"], "msgq-profile"),
    ("rtcompare", ["sortsum", "squarewave"], ["--variants", "stock", "--", "--quick"],
     "rt-compare"),
])
def test_meta_json_keeps_the_whole_command_line(tmp_path, experiment, tools, args, folder):
    runner = lab_copy(tmp_path, experiment, tools)
    # rtcompare builds a kernel that is not built: this one is, as far as it looks.
    build = tmp_path / "build"
    (build / "obj/arch/x86/boot").mkdir(parents=True)
    (build / "obj/arch/x86/boot/bzImage").touch()
    (build / "obj/include/config").mkdir(parents=True)
    (build / "obj/include/config/kernel.release").write_text("6.12.0-lab\n")
    (build / "modules/6.12.0-lab").mkdir(parents=True)
    (build / "modules/6.12.0-lab/delay.ko").touch()
    out = subprocess.run([runner, *args], capture_output=True, text=True,
                         env={**os.environ, "LAB_BUILD": str(build)})
    assert out.returncode == 3, out.stderr
    [d] = (tmp_path / "results").iterdir()
    assert d.name.startswith(folder + "-") and d.name.endswith(".incomplete"), d
    meta = json.loads((d / "meta.json").read_text())
    assert meta["command"] == [str(runner), *args]
    assert meta["settings"].get("vm", True) is True
    assert "booting the stock kernel" in out.stderr
    assert f"what was measured is in {d}" in out.stderr
