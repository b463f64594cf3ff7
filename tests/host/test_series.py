"""The quilt series: applies to a fresh linux-source-6.12, is checkpatch
clean, and each patch is a proper git format-patch mail."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

TARBALL = "/usr/src/linux-source-6.12.tar.xz"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def series(root):
    names = [ln.split("#")[0].strip() for ln in (root / "series").read_text().splitlines()]
    return [n for n in names if n]


# What the series patches and checkpatch.pl reads: its scripts, include/
# (--strict seeds its CamelCase list there), the patched folders and the
# files and folders by which it knows the top of a tree.  A tenth of the
# tree: unpacking and removing the whole of it took four minutes on a busy
# host, and checkpatch says the same here, word for word.
UNPACKED = ("scripts", "include", "arch/x86", "drivers/misc", "MAINTAINERS", "COPYING",
            "CREDITS", "Kbuild", "Makefile", "README")
TOP_FOLDERS = ("Documentation", "drivers", "fs", "init", "ipc", "kernel", "lib")


@pytest.fixture(scope="module")
def fresh_tree(root, tmp_path_factory):
    if not os.path.exists(TARBALL):
        pytest.fail(f"{TARBALL} is missing: run 'make deps'")
    tmp = tmp_path_factory.mktemp("linux")
    top = "linux-source-6.12"
    subprocess.run(["tar", "-C", tmp, "-xf", TARBALL, *(f"{top}/{m}" for m in UNPACKED)],
                   check=True)
    tree = tmp / top
    for d in TOP_FOLDERS:
        (tree / d).mkdir(exist_ok=True)
    os.symlink(root / "patches", tree / "patches")
    os.symlink(root / "series", tree / "series")
    yield tree
    shutil.rmtree(tmp, ignore_errors=True)


def test_series_lists_every_patch(root):
    listed = series(root)
    on_disk = sorted(p.name for p in (root / "patches").glob("*.patch"))
    assert listed, "the series is empty"
    assert sorted(listed) == on_disk


def test_series_applies_without_fuzz(fresh_tree, root):
    out = subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=fresh_tree,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    applied = subprocess.run(["quilt", "applied"], cwd=fresh_tree, capture_output=True,
                             text=True, check=True).stdout.split()
    assert [os.path.basename(p) for p in applied] == series(root)
    assert "fuzz" not in out.stdout.lower()


@pytest.mark.parametrize("name", series(ROOT))
def test_checkpatch_strict(fresh_tree, root, name):
    # checkpatch's SPDX check runs 'python3 scripts/spdxcheck.py', which needs
    # Debian's python3-ply: put the system python first.
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    out = subprocess.run([fresh_tree / "scripts/checkpatch.pl", "--strict",
                          root / "patches" / name],
                         cwd=fresh_tree, capture_output=True, text=True, env=env)
    assert "Traceback" not in out.stderr, out.stderr
    assert "total: 0 errors, 0 warnings, 0 checks" in out.stdout, out.stdout
    assert out.returncode == 0, out.stdout + out.stderr


MODULE_SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "modules").glob("*/**/*.[ch]")
                        if not p.is_symlink())


@pytest.mark.parametrize("name", MODULE_SOURCES)
def test_module_source_is_checkpatch_strict_clean(fresh_tree, root, name):
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    out = subprocess.run([fresh_tree / "scripts/checkpatch.pl", "--strict", "--no-tree",
                          "-f", root / name],
                         cwd=fresh_tree, capture_output=True, text=True, env=env)
    assert "Traceback" not in out.stderr, out.stderr
    assert "total: 0 errors, 0 warnings, 0 checks" in out.stdout, out.stdout


@pytest.mark.parametrize("name", series(ROOT))
def test_patch_is_a_format_patch_mail(root, name):
    text = (root / "patches" / name).read_text()
    head, _, rest = text.partition("\n---\n")
    assert re.search(r"^From [0-9a-f]{40} ", head, re.M), "no 'From <sha>' line"
    assert re.search(r"^From: .+ <.+@.+>$", head, re.M)
    subject = re.search(r"^Subject: \[PATCH[^\]]*\] (.+)$", head, re.M)
    assert subject and len(subject.group(1)) <= 75
    body = head.split("\n\n", 1)[1]
    assert len([ln for ln in body.splitlines() if ln.strip()]) >= 5, "commit message too short"
    assert re.search(r"^Signed-off-by: .+ <.+@.+>$", head, re.M)
    assert "diff --git" in rest
