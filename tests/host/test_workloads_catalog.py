"""The workloads' catalog: each workload declared in its own file, found by
the guest's sweep and by lablib alike, and a workload of one's own added by
dropping a file into a folder of LAB_WORKLOADS_DIR."""
import json
import os
import subprocess
import sys

import pytest

from lablib import compare_verdicts, figures
from lablib.sweep import catalog

TOY = '''# toy: count to a hundred, for the tests
WL_ABOUT="count to a hundred"
WL_LOOPS=0:300:100
WL_REPEATS=2
WL_STAGE=host
WL_MEASURE="count 60 counts/min count"
WL_BAND_POINT="2e-4 0"
wl_check() { :; }
'''


def lab_sweep(*args, **env):
    """lab sweep on this machine's kernel (--here), which is no lab VM: the
    host's clock."""
    return subprocess.run([sys.executable, "-m", "lablib.lab", "sweep", *args],
                          capture_output=True, text=True,
                          env=dict(os.environ, LAB_CMDLINE="/dev/null", **env))


def python(code, **env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, **env))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def own(tmp_path):
    d = tmp_path / "own"
    d.mkdir()
    (d / "toy.sh").write_text(TOY)
    return d


def test_the_labs_workloads_declare_themselves():
    ws = catalog.workloads()
    assert list(ws) == ["apache", "cmd", "grep", "kbuild", "nginx", "redis"]
    assert [n for n, w in ws.items() if w.in_all] == ["apache", "grep", "kbuild"]
    assert [n for n, w in ws.items() if w.server] == ["apache", "nginx", "redis"]
    assert ws["grep"].loops == "0:6000:750" and ws["grep"].repeats == 5
    assert ws["apache"].repeats_virtual == 2 and ws["apache"].cost_slope == -0.4
    assert ws["cmd"].command and not ws["grep"].command
    # Not workloads: the files the workloads share.
    assert not {"common", "server"} & set(ws)


def test_a_dropped_file_is_a_workload_everywhere(own):
    got = python("import json; from lablib.sweep import catalog; "
                 "from lablib.experiments import workloads as w; "
                 "print(json.dumps([catalog.names(), list(w.MEASURES)]))",
                 LAB_WORKLOADS_DIR=str(own))
    assert got[0] == ["apache", "cmd", "grep", "kbuild", "nginx", "redis", "toy"]
    assert "count" in got[1]
    help_text = lab_sweep("--help", LAB_WORKLOADS_DIR=str(own)).stdout
    assert "  toy      count to a hundred" in help_text and "(0:300:100, 2)" in help_text
    out = lab_sweep("toy", "--here", "--delay", "module", "--dry-run", LAB_WORKLOADS_DIR=str(own))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "100", "200", "300"]
    assert "toy on the host clock: 4 points of loops, 2 runs each" in out.stderr


def test_without_the_folder_it_is_no_workload():
    out = lab_sweep("toy", "--here", "--dry-run")
    assert out.returncode == 2
    assert "WORKLOAD wants apache, cmd, grep, kbuild," in out.stderr


def test_a_command_only_for_a_workload_that_takes_one():
    assert lab_sweep("grep", "--here", "--dry-run", "--", "true").returncode == 2
    assert lab_sweep("cmd", "--here", "--dry-run").returncode == 2
    assert lab_sweep("cmd", "--here", "--dry-run", "--", "true").returncode == 0


def test_a_sweeps_folder_is_known_by_its_settings():
    assert figures.is_sweep({"experiment": "toy", "settings": {"workload": "toy"}})
    assert not figures.is_sweep({"experiment": "tax", "settings": {"workload": "grep"}})
    assert figures.experiment_of({"experiment": "grep", "settings": {"workload": "grep"}}) \
        == "sweep"


def test_the_bands_are_the_workloads_own(own, monkeypatch):
    assert compare_verdicts.band_of("sweep.point", "grep") == (5e-4, 0.0, "measured")
    assert compare_verdicts.band_of("sweep.calls", "grep") == (0.0, 0.5, "measured")
    assert compare_verdicts.band_of("sweep.calls", "apache") == \
        compare_verdicts.BANDS["sweep.calls"]
    monkeypatch.setenv("LAB_WORKLOADS_DIR", str(own))
    assert compare_verdicts.band_of("sweep.point", "toy") == (2e-4, 0.0, "measured")


@pytest.mark.parametrize("line, message", [
    ("WL_LOOPS=$LOOPS", "no expansion"),
    ('WL_ABOUT="it costs $5"', "no expansion"),
    ("WL_STAGE=somewhere", "WL_STAGE is host or guest"),
    ('WL_MEASURE="count 60"', "WL_MEASURE is 'NAME FACTOR UNIT WORD'"),
    ('WL_BAND_POINT="tight"', "a band is 'RELATIVE ABSOLUTE'"),
])
def test_a_bad_declaration_is_refused_naming_it(own, line, message):
    key = line.split("=")[0]
    text = "\n".join(x for x in TOY.splitlines() if not x.startswith(key + "=")) + "\n" + line
    (own / "toy.sh").write_text(text + "\n")
    with pytest.raises(ValueError, match=message):
        catalog.read(own / "toy.sh")


def test_a_declaration_lacking_a_default_is_refused(own):
    (own / "toy.sh").write_text(TOY.replace("WL_REPEATS=2\n", ""))
    with pytest.raises(ValueError, match="declares WL_REPEATS"):
        catalog.read(own / "toy.sh")
