"""lab bpfdelay --against on made-up sweeps on the virtual clock: a grep
swept through the module and through the BPF delay whose times are built
from a known fixed cost at 0 (100 ns), a known cost on a delayed call (80
ns) and spins of their own length, each figure found again; sweeps that
cannot be set against each other refused in one line."""
import json
import os
import subprocess

import pytest

from resultdirs import META, write_meta

CALLS = 20_000
BASE = 0.1
HEADER = "workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,p9_requests,detail"
VIRTUAL = dict(META["machine"], clock={"kind": "virtual", "shift": 0})
# Each delay's spin beyond the ns asked, by ns: the module's and the BPF's.
OVER = {2000: (12, 40), 4000: (30, 4)}


def sweep(d, delay, knob="ns", machine=VIRTUAL):
    """A grep sweep in @d through @delay at 0, 2000 and 4000 ns: through
    the module a delayed call takes its spin; through the BPF delay 100 ns
    more on every call at 0 and 80 ns more on a delayed one, and its spin."""
    rows, points = [], []
    for ns in (0, 2000, 4000):
        spun = ns + OVER[ns][delay == "bpf"] if ns else 0
        extra = (100 if not ns else 80) if delay == "bpf" else 0
        t = BASE + CALLS * (spun + extra) * 1e-9
        rows += [f"grep,grep,,{ns},{r},1,{t:.12f},{CALLS},0,0," for r in (1, 2)]
        points.append(f",{ns},{CALLS * 2 if ns else 0},{spun * CALLS * 2},{spun if ns else ''}")
    write_meta(d, "grep", {"workload": "grep", "knob": knob, "delay": delay}, machine=machine)
    (d / "raw.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    (d / "points.csv").write_text("\n".join(["loops,ns,delayed,spun_ns,measured_ns", *points])
                                  + "\n")
    return d


def against(root, tmp_path, *args):
    env = dict(os.environ, MPLCONFIGDIR=str(tmp_path / "mpl"))
    return subprocess.run([root / ".venv/bin/lab", "bpfdelay", "--against", *map(str, args),
                           "-o", tmp_path / "out"], capture_output=True, text=True, env=env)


def test_the_fixed_costs_and_the_spins_are_found_again(root, tmp_path):
    out = against(root, tmp_path, sweep(tmp_path / "m", "module"), sweep(tmp_path / "b", "bpf"))
    assert out.returncode == 0, out.stderr
    (d,) = (tmp_path / "out").glob("bpfdelay-against-*")
    c = json.loads((d / "against.json").read_text())["measures"]["grep"]
    assert c["fixed_ns"] == pytest.approx(100)
    assert c["delayed_fixed_ns"] == pytest.approx(80)
    assert c["same_calls"] and c["exact"]
    assert c["spins_range"] == pytest.approx([-26, 28])
    assert c["slope_module"] == pytest.approx((30 - 12 + 2000) / 2000)
    # After the fixed cost at 0 alone, 4000 ns is off by 20 ns and the spins'
    # difference (-26 ns) a call; after the spins too, every delayed point by
    # the 20 ns alone, the most of its time at 2000.
    t2000, t4000 = BASE + CALLS * 2012e-9, BASE + CALLS * 4030e-9
    assert c["after_fixed"] == {"value": pytest.approx(CALLS * -46e-9 / t4000), "ns": 4000}
    assert c["after_spins"] == {"value": pytest.approx(CALLS * -20e-9 / t2000), "ns": 2000}
    assert c["after_delayed_fixed"]["value"] == pytest.approx(0, abs=1e-12)
    text = " ".join((d / "report.txt").read_text().split())
    assert "the BPF delay's fixed cost at 0: 100.0 ns a call beyond the module's" in text
    assert "calls a unit: 20,000.0, the same through both at every point" in text
    assert "the runs of one point differ by up to 0.000 %" in text
    assert "costs 80.0 ns beyond the module's and its spin" in text
    assert (d / "against.png").stat().st_size > 10_000
    assert len((d / "against.csv").read_text().splitlines()) == 4


@pytest.mark.parametrize("change, message", [
    ({"module_delay": "bpf"}, "swept through the bpf delay, not the module one"),
    ({"knob": "loops"}, "swept loop counts"),
    ({"machine": META["machine"]}, "not on the virtual clock"),
])
def test_sweeps_that_cannot_be_set_against_each_other(root, tmp_path, change, message):
    m = sweep(tmp_path / "m", change.get("module_delay", "module"), change.get("knob", "ns"),
              change.get("machine", VIRTUAL))
    out = against(root, tmp_path, m, sweep(tmp_path / "b", "bpf"))
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_folder_that_is_no_sweep(root, tmp_path):
    (tmp_path / "m").mkdir()
    out = against(root, tmp_path, tmp_path / "m", sweep(tmp_path / "b", "bpf"))
    assert out.returncode == 1 and "no raw.csv: not a workload sweep's folder" in out.stderr
