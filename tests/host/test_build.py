"""The modules build against the lab kernel with no warning at all, and the
userspace tools build with -Wall -Wextra -Werror."""
import shutil
import subprocess

import pytest


@pytest.fixture(scope="module")
def kobj(root):
    kobj = root / "build/obj"
    if not (kobj / "Module.symvers").exists():
        pytest.fail("the lab kernel is not built: run 'make kernel' first")
    return kobj


@pytest.mark.parametrize("module", ["delay", "hooktest"])
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


def test_userspace_builds_with_werror(root, tmp_path):
    subprocess.run(["make", "-s", "-C", root / "userspace", "clean"], check=True)
    out = subprocess.run(["make", "-C", root / "userspace"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "warning" not in (out.stdout + out.stderr).lower()
    flags = (root / "userspace/common.mk").read_text()
    assert "-Wall -Wextra -Werror" in flags
