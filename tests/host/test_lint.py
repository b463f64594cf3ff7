"""Shell scripts are shellcheck clean and run under 'set -euo pipefail';
the Python code is ruff clean."""
import os
import subprocess
import sys
import tomllib
from pathlib import Path


def shell_scripts(root):
    """The project's shell scripts.  The walk never enters build/, .venv or
    results/: the passes beside the host tests make and delete files there
    while they run (a kernel build's temporary files once vanished under
    the walk)."""
    scripts = []
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".venv", "build", "results")]
        scripts += [Path(top) / f for f in files if f.endswith(".sh")]
    return sorted(scripts)


def test_shellcheck_clean(root):
    scripts = shell_scripts(root) + [root / ".ci/run"]
    out = subprocess.run(["shellcheck", "-x", *scripts], cwd=root, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_scripts_are_strict(root):
    for script in shell_scripts(root) + [root / ".ci/run"]:
        text = script.read_text()
        if "shellcheck shell=bash" in text.splitlines()[0]:
            continue  # a sourced library
        assert "set -euo pipefail" in text, f"{script.relative_to(root)} is not strict"


def test_every_script_answers_help_with_an_example(root, tmp_path):
    """--help prints the usage with an example and stops: it is never taken
    for a workload, a command or a file, and nothing is built or booted."""
    for script in shell_scripts(root):
        text = script.read_text()
        if "shellcheck shell=bash" in text.splitlines()[0]:
            continue  # a sourced library
        out = subprocess.run([script, "--help"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=20)
        rel = script.relative_to(root)
        assert out.returncode == 0, f"{rel}: {out.stderr}"
        assert "Example" in out.stdout, f"{rel} --help has no example:\n{out.stdout}"
        assert list(tmp_path.iterdir()) == [], f"{rel} --help left files behind"


def test_ruff_clean(root):
    """The Python code passes ruff (pinned in requirements.txt, ruff.toml at
    the root: 100 columns, pyflakes and pycodestyle errors), as make lint
    runs it."""
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "userspace",
                          "workloads", "tests"], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_is_pinned_and_configured(root):
    pins = dict(line.split("==") for line in (root / "requirements.txt").read_text().splitlines()
                if "==" in line)
    out = subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True,
                         text=True)
    assert out.stdout.split() == ["ruff", pins["ruff"]], "the venv's ruff is the pinned one"
    config = tomllib.loads((root / "ruff.toml").read_text())
    assert config["line-length"] == 100
    assert {"E", "F"} <= set(config["lint"]["select"])
    assert "ruff" in (root / "scripts/lint.sh").read_text()


def test_lablib_is_imported_as_an_installed_package(root):
    """lablib comes from the virtualenv (make venv installs it editable):
    no file puts a folder on Python's path, and the one it finds is this
    lab's."""
    files = subprocess.run(["git", "ls-files", "*.py", "*.sh", "*.mk", "Makefile"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split()
    added = [f for f in files if f != "tests/host/test_lint.py"
             and ("sys.path.insert" in (root / f).read_text()
                  or "PYTHONPATH=" in (root / f).read_text())]
    assert added == []
    out = subprocess.run([sys.executable, "-c", "import lablib; print(lablib.__file__)"],
                         cwd="/", capture_output=True, text=True)
    assert out.stdout.strip() == str(root / "userspace/lablib/__init__.py"), out.stderr
