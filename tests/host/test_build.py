"""The modules build against the lab kernel with no warning at all, and the
userspace tools build with -Wall -Wextra -Werror."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Every folder of modules/ with a Kbuild file is a module (modules/Makefile).
MODULES = sorted(p.parent.name for p in (ROOT / "modules").glob("*/Kbuild"))


@pytest.fixture(scope="module")
def kobj(root):
    kobj = root / "build/obj"
    if not (kobj / "Module.symvers").exists():
        pytest.fail("the lab kernel is not built: run 'make kernel' first")
    return kobj


@pytest.mark.parametrize("module", MODULES)
def test_module_builds_without_warnings(root, kobj, tmp_path, module):
    # Build a copy, so the test neither depends on nor disturbs the tree's build.
    src = tmp_path / module
    shutil.copytree(root / "modules" / module, src,
                    ignore=shutil.ignore_patterns("*.ko", "*.o", "*.mod*", ".*.cmd"))
    out = subprocess.run(["make", "-C", kobj, f"M={src}", "W=1", "modules"],
                         capture_output=True, text=True)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    assert "warning" not in log.lower(), log
    assert (src / f"{module}.ko").exists()


def test_a_module_source_put_back_with_its_old_time_is_rebuilt(root, kobj, tmp_path):
    """modules/Makefile builds each module in a copy of its folder: a
    source whose text changed is copied and rebuilt even when its time is
    older than the copy's (a file put back from git or a backup), and an
    unchanged one is not rebuilt.  With 'cp -p', the edit below was never
    compiled."""
    lab = tmp_path / "lab"
    (lab / "modules").mkdir(parents=True)
    shutil.copy(root / "modules/Makefile", lab / "modules")
    shutil.copytree(root / "modules/hooktest", lab / "modules/hooktest")
    make = ["make", "-C", lab / "modules", f"KDIR={kobj}", f"BUILD={tmp_path / 'build'}"]
    assert subprocess.run(make, capture_output=True, text=True).returncode == 0
    again = subprocess.run(make, capture_output=True, text=True)
    assert "CC [M]" not in again.stdout, again.stdout
    src = lab / "modules/hooktest/hooktest.c"
    src.write_text(src.read_text() + "/* changed */\n")
    old = 946684800     # 2000-01-01: older than any copy
    os.utime(src, (old, old))
    out = subprocess.run(make, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "hooktest.o" in out.stdout and "CC [M]" in out.stdout, out.stdout


def test_userspace_builds_without_warnings(root, tmp_path):
    """From clean, in a copy: the tree's tools stay as they are for the
    guest pass that make test runs beside the host tests."""
    lab = lab_copy(root, tmp_path / "lab")
    out = subprocess.run(["make", "-C", lab / "userspace",
                          f"KHDR={root / 'build/obj/usr/include'}"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "warning" not in (out.stdout + out.stderr).lower()
    assert (lab / "userspace/lib/lab").exists()


def test_a_warning_fails_the_userspace_build(root, tmp_path):
    """The flags every tool builds with turn a warning into an error."""
    (tmp_path / "x").mkdir()
    (tmp_path / "common.mk").write_text((root / "userspace/common.mk").read_text())
    (tmp_path / "x/Makefile").write_text("include ../common.mk\nall: t\n")
    (tmp_path / "x/t.c").write_text("int main(int argc, char **argv) { int unused; return 0; }\n")
    out = subprocess.run(["make", "-C", tmp_path / "x"], capture_output=True, text=True)
    assert out.returncode != 0
    assert "unused variable" in out.stderr and "error" in out.stderr, out.stderr


def lab_copy(root, dest):
    """The tracked files of the lab (what a clone has), copied to @dest."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        if (root / f).exists():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / f, dest / f, follow_symlinks=False)
    return dest


EXPERIMENTS = [("irqhook", "irqhook-sweep"), ("msgq", "msgq"), ("smp", "smp"), ("tax", "tax")]


def delete_experiment(lab, experiment):
    """@experiment's folder, module and tests gone from the copy @lab."""
    shutil.rmtree(lab / "userspace" / experiment)
    shutil.rmtree(lab / "modules" / experiment, ignore_errors=True)
    for t in lab.glob(f"tests/*/test_{experiment}*.py"):
        t.unlink()


@pytest.mark.parametrize("experiment, target", EXPERIMENTS)
def test_deleting_an_experiment_leaves_a_working_lab(root, tmp_path, experiment, target):
    """One experiment is one folder, its module and its tests: remove them
    and the rest still builds, no host test names it, and make still
    knows every other target."""
    lab = lab_copy(root, tmp_path / "lab")
    # irqhook's tool includes the kernel's uapi header from the built tree.
    (lab / "build").symlink_to(root / "build")
    delete_experiment(lab, experiment)
    out = subprocess.run(["make", "-C", lab / "userspace"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    naming = [t.name for t in (lab / "tests/host").glob("*.py") if t.name != "test_build.py"
              and (f"userspace/{experiment}" in t.read_text()
                   or f"modules/{experiment}" in t.read_text())]
    assert naming == []
    # The tests that remain still load: none imports the experiment's code.
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "tests/host"], cwd=lab,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr
    help_text = subprocess.run(["make", "-s", "-C", lab, "help"], capture_output=True,
                               text=True, check=True).stdout
    assert f"\n{target} " not in "\n" + help_text
    for other in ("calibrate", "bench-hook", "sweep", "test"):
        assert other in help_text, other
    gone = subprocess.run(["make", "-n", "-C", lab, target], capture_output=True,
                          text=True)
    assert gone.returncode != 0 and "No rule to make target" in gone.stderr
    if experiment == "tax":
        # The sweep knows the tax only through the hooks the tax hands it.
        named = subprocess.run(["grep", "-rl", "--include=*.sh", "--include=*.py",
                                "userspace/tax", lab / "workloads"],
                               capture_output=True, text=True).stdout.split()
        assert named == []
    if (root / "modules" / experiment).is_dir():
        # (Not 'make -n': it runs the recipe lines that call $(MAKE).)
        mods = subprocess.run(["make", "-s", "-C", lab / "modules", "--eval",
                               "modules-list: ; @echo $(MODULES)", "modules-list"],
                              capture_output=True, text=True, check=True).stdout.split()
        assert "delay" in mods and experiment not in mods


def test_make_sweep_w_does_not_reach_the_kernel_build(root):
    """'make sweep W=grep': W is Kbuild's warning level too, and leaked into
    the kernel's make it rebuilt everything with kernel-doc checks."""
    out = subprocess.run(["make", "-s", "-C", root, "W=grep", "VARIANT=stock", "--eval",
                          'envcheck: ; @echo "W=[$$W] MAKEFLAGS=[$$MAKEFLAGS]"', "envcheck"],
                         capture_output=True, text=True, check=True).stdout
    assert "W=[]" in out and "W=grep" not in out.split("MAKEFLAGS=")[1], out
    assert "VARIANT=stock" in out, "other command-line variables still pass on"


@pytest.fixture
def open_tmp():
    """A scratch folder others may enter (pytest's tmp_path is root's
    alone, and some tests run a tool as nobody)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="lab-copy-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d)


# The host tests whose subject is the whole tree (the lab command's rows,
# the READMEs and their options, the packages, make test's lanes, meta.json,
# lablib, the workloads' catalog and the sweep's plan, the shell library,
# the debug passes, the calibration): what an experiment's deletion could
# break.  The others test one folder of the lab's own each, and are only
# collected in the copy (collecting imports them all).
TREE_WIDE = ("lab", "docs", "options", "deps", "testsh", "meta", "lablib", "labsh",
             "workloads_catalog", "workloads_sweep", "debug_passes", "calibrate",
             "calibrate_analysis")


# Of those, the slowest, whose subject no experiment touches: kbuild's
# configuration (20 s), the shell library's signals (11 s).
NOT_IN_COPY = ("kbuild_is_configured", "signal_between_substitutions")


def test_the_host_tests_that_remain_pass_without_the_experiments(root, open_tmp):
    """Every experiment above deleted at once (what one deletion breaks, all
    of them break too): the lab's own host tests still load in the copy,
    and those whose subject is the whole tree (TREE_WIDE) pass there.  Left
    out: this file, the lint and the series (the tree's, not an
    experiment's), the slowest of TREE_WIDE's (NOT_IN_COPY), and
    the tests of the experiments that remain, each of which uses only its
    own folder.  The whole of the lab's own tests run again in the copy
    took six minutes of make test's lane, most of it the split sweeps'
    stand-ins (test_workloads_parallel), which name no experiment."""
    lab = lab_copy(root, open_tmp / "lab")
    (lab / "build").symlink_to(root / "build")
    (lab / ".venv").symlink_to(root / ".venv")      # the analysers' Python
    for experiment, _ in EXPERIMENTS:
        delete_experiment(lab, experiment)
    subprocess.run(["make", "-s", "-C", lab / "userspace"], check=True, capture_output=True)
    # The copy's own liblab tool for the Python side too (its lablib is the
    # shared .venv's, installed from this tree).
    env = {**os.environ, "LAB_TOOL": str(lab / "userspace/lib/lab")}
    pytest_in_copy = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    out = subprocess.run([*pytest_in_copy, "--collect-only", "tests/host"], cwd=lab,
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    files = [f"tests/host/test_{name}.py" for name in TREE_WIDE]
    missing = [f for f in files if not (lab / f).is_file()]
    assert not missing, f"TREE_WIDE names tests that are not there: {missing}"
    ids = [i for i in out.stdout.splitlines() if i.split("::")[0] in files]
    missing = [n for n in NOT_IN_COPY if not any(n in i for i in ids)]
    assert not missing, f"NOT_IN_COPY names tests that are not there: {missing}"
    out = subprocess.run([*pytest_in_copy, *files, "-k", f"not ({' or '.join(NOT_IN_COPY)})"],
                         cwd=lab,
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert " passed" in out.stdout.splitlines()[-1]


def test_a_second_build_of_a_tree_waits_for_the_first(root, kobj):
    """Two builds of build/obj at once broke each other's files: the
    second one waits for the lock the first holds, says so, then builds
    (here, nothing is left to build)."""
    holder = subprocess.Popen(["flock", str(kobj) + ".lock", "sleep", "5"])
    try:
        subprocess.run(["sleep", "0.5"], check=True)
        r = subprocess.run([root / "scripts/build-kernel.sh"], cwd=root, capture_output=True,
                           text=True, timeout=900)
    finally:
        holder.wait(timeout=60)
    assert r.returncode == 0, r.stderr
    assert "another build of build/obj is running; waiting for it" in r.stderr


def test_source_only_unpacks_the_tree_and_builds_nothing(root, tmp_path):
    """make here's grep needs Linux's source, not a kernel: --source-only
    stops once the tree is there, and asks for none of the build's tools
    (a PATH without quilt, flex, bison, bc or ccache)."""
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / "Makefile").write_text("kernelversion:\n\t@echo 6.12.99\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "make", "sh", "echo", "dirname", "cat", "sed", "date", "uname", "nproc",
                 "mkdir", "rm", "ln", "id", "grep", "awk", "tr", "basename"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {**os.environ, "PATH": str(bin_dir), "KSRC": str(tree),
           "LAB_BUILD": str(tmp_path / "build")}
    out = subprocess.run([root / "scripts/build-kernel.sh", "--source-only"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"Linux 6.12.99's source in {tree}" in out.stderr
    assert not (tmp_path / "build").exists() and not (tree / "patches").exists()
    out = subprocess.run([root / "scripts/build-kernel.sh"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 1 and "quilt is missing" in out.stderr, out.stderr
