"""The runners' conventions, checked where they decide before booting a VM
or touching the kernel: a bad value is one line and exit status 2 with
nothing made, a missing kernel hook or device is exit status 1, and
meta.json keeps the whole command line the runner was given.  Each
experiment's tests call these with its own cases."""
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


def case_id(script, args):
    return f"{script.split('/')[-1]} {' '.join(args)}"


def check_bad_value(script, args, message, env=None):
    """@script with @args (a bad value) says @message in one line that
    starts with its name, exits 2, and makes no result folder."""
    before = listing()
    out = run(script, *args, env=env)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert lines[0].startswith(os.path.basename(script) + ": ")
    assert listing() == before


def on_lab_kernel():
    return os.path.exists("/dev/irqhook") or \
        " syscall_hook_register\n" in open("/proc/kallsyms").read()


def check_missing_kernel(script, args, message):
    """On a kernel without the lab's hook or device, @script says @message
    in one line, exits 1, and makes no result folder."""
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


def check_meta_keeps_the_command_line(tmp_path, experiment, tools, args, folder):
    """@experiment's runner, its VM not booting, has made @folder-DATE
    .incomplete whose meta.json holds its whole command line."""
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


def check_runner_finds_the_guests_folder(tmp_path, experiment, tool, link, args):
    """@experiment's runner, for a guest script that names its own result
    folder (-o PARENT, PARENT/latest-@link): with @args, which may hold a
    relative -o, the guest is given the parent as an absolute path last,
    and the runner finds the folder the guest made.  The stand-in VM runs
    the command given; the stand-in guest makes the folder and says what it
    was given."""
    runner = lab_copy(tmp_path, experiment, [tool])
    (tmp_path / "scripts/vm.sh").write_text('#!/bin/sh\n[ "$1" = -- ] && shift\nexec "$@"\n')
    guest = runner.with_name("guest.sh")
    guest.write_text('#!/bin/bash\nset -eu\nprintf "%s\\n" "$@" > "$GUEST_ARGS"\n'
                     'for a; do [ "${prev:-}" = -o ] && parent=$a; prev=$a; done\n'
                     f'mkdir -p "$parent/{link}-1" && ln -sfn {link}-1 "$parent/latest-{link}"\n')
    (tmp_path / "work").mkdir()
    out = subprocess.run([runner, "--no-analysis", *args], capture_output=True, text=True,
                         cwd=tmp_path / "work",
                         env={**os.environ, "GUEST_ARGS": str(tmp_path / "args")})
    assert out.returncode == 0, out.stderr
    given = (tmp_path / "args").read_text().splitlines()
    parent = (tmp_path / "work" / "out").resolve()
    assert given == [*args, "-o", str(parent)]
    assert f"{parent}/{link}-1" in out.stderr, out.stderr
    assert "booting the stock kernel" in out.stderr


# The tests each experiment's test file takes, made from its own cases:
#   test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(CASES)
def bad_value_test(cases):
    """@cases: (script, args, env, message) each."""
    @pytest.mark.parametrize("script,args,env,message", cases,
                             ids=[case_id(s, a) for s, a, _, _ in cases])
    def test(script, args, env, message):
        check_bad_value(script, args, message, env)
    return test


def missing_kernel_test(script, args, message):
    @pytest.mark.skipif(on_lab_kernel(), reason="this machine runs the lab kernel")
    def test():
        check_missing_kernel(script, args, message)
    return test


def meta_test(experiment, tools, args, folder):
    def test(tmp_path):
        check_meta_keeps_the_command_line(tmp_path, experiment, tools, args, folder)
    return test


def guest_folder_test(experiment, tool, link, args):
    def test(tmp_path):
        check_runner_finds_the_guests_folder(tmp_path, experiment, tool, link, args)
    return test
