"""The 'lab' command: its table of subcommands, what each row points at,
and 'lab analyse' choosing the analyser by meta.json."""
import importlib
import importlib.metadata
import os
import subprocess
import sys

import pytest

from lablib import lab
from resultdirs import calibrate_dir, write_meta


def run(*args):
    return subprocess.run([sys.executable, "-m", "lablib.lab", *map(str, args)],
                          capture_output=True, text=True)


def test_console_entry_point_is_lab():
    eps = importlib.metadata.entry_points(group="console_scripts")
    assert {e.name: e.value for e in eps if e.name == "lab"} == {"lab": "lablib.lab:main"}


def test_no_command_lists_the_table_on_stderr():
    out = run()
    assert out.returncode == 2 and out.stdout == ""
    for c in lab.COMMANDS:
        assert f"  {c.name} " in out.stderr


def test_help_lists_the_table():
    out = run("--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: lab COMMAND")
    assert [line.split()[0] for line in out.stdout.split("Commands:\n")[1].split("\n\n")[0]
            .splitlines()] == [c.name for c in lab.COMMANDS]


def test_unknown_command_is_refused_in_one_line():
    out = run("sweeep", "grep")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "no command 'sweeep'" in out.stderr


@pytest.mark.parametrize("c", lab.COMMANDS, ids=lambda c: c.name)
def test_each_row_points_at_something_real(c):
    assert bool(c.runner) != bool(c.main), "a row runs a runner or calls a main, not both"
    if c.runner:
        assert os.access(lab.ROOT / c.runner, os.X_OK), c.runner
    else:
        module, _, function = c.main.partition(":")
        assert callable(getattr(importlib.import_module(module), function))
    for module in c.analysers.values():
        assert callable(importlib.import_module(module).main)


@pytest.mark.parametrize("c", lab.COMMANDS, ids=lambda c: c.name)
def test_each_command_helps(c):
    out = run(c.name, "--help")
    assert out.returncode == 0, out.stderr
    # A runner's help is its header; a Python subcommand's names 'lab NAME'.
    assert out.stdout.count("\n") > 3 and out.stderr == ""
    if c.main and c.name != "analyse":
        assert out.stdout.startswith(f"usage: lab {c.name} ")


def test_an_experiment_not_in_the_checkout_is_not_offered():
    assert not lab.present(lab.Command("gone", "x", runner="userspace/gone/run.sh"))
    assert not lab.present(lab.Command("gone", "x", main="lablib.gone.analyse:main"))
    assert lab.present(lab.Command("sweep", "x", main="lablib.sweep.driver:main"))


def test_experiments_have_one_analyser_each():
    seen = [e for c in lab.COMMANDS for e in c.analysers]
    assert len(seen) == len(set(seen))


def test_analyse_picks_the_analyser_by_meta(tmp_path):
    d = calibrate_dir(tmp_path / "cal", {"getppid": (500.0, 3.0)})
    out = run("analyse", d, "--no-plot")
    assert out.returncode == 0, out.stderr
    assert (d / "summary.json").is_file()
    assert f"results: {d}/" in out.stdout


def test_a_sweeps_folder_is_the_sweeps_to_analyse(tmp_path):
    d = write_meta(tmp_path / "g", "grep", {"workload": "grep"})
    assert lab.analyser_of(d) == "lablib.sweep.analyse"
    # A folder of tax's that names a workload is still tax's.
    d = write_meta(tmp_path / "t", "tax", {"workload": "grep"})
    assert lab.analyser_of(d) == "lablib.tax.analyse"


def test_analyse_refuses_an_unknown_experiment_in_one_line(tmp_path):
    d = write_meta(tmp_path / "x", "frobnicate", {})
    out = run("analyse", d)
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert out.stderr.startswith("lab analyse: error: ") and "'frobnicate'" in out.stderr


def test_analyse_refuses_a_folder_without_meta(tmp_path):
    out = run("analyse", tmp_path)
    assert out.returncode == 1 and "lab analyse: error: " in out.stderr
    assert out.stderr.count("\n") == 1


def test_analyse_without_a_folder_says_how():
    out = run("analyse")
    assert out.returncode == 2 and out.stderr.startswith("usage: lab analyse FOLDER")
