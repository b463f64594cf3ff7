"""lablib.hookcost.analyse on a made-up raw.csv: the per-case
statistics, the ratios of medians and minima against the targets, and the
ns one loop adds."""
import json
import subprocess
import sys

import pytest

from resultdirs import ANALYSERS, compare_dirs, compare_rows, write_csv, write_meta
import runners

# ns per call of each case, over 2 boots x 3 rounds.
TIMES = {"a": [100, 101, 102, 100, 101, 150],
         "b": [100.5, 101.5, 102.5, 100.5, 101.5, 102.5],
         "c": [110, 111, 112, 110, 111, 112],
         "d": [112, 113, 114, 112, 113, 114]}


def hookcost_dir(d, times=TIMES):
    write_meta(d, "hookcost", {"boots": 2, "rounds": 3})
    rows = [(case, i // 3 + 1, i % 3 + 1, ns) for case, v in times.items()
            for i, ns in enumerate(v)]
    write_csv(d / "raw.csv", ("case", "boot", "round", "ns_per_call"), rows)
    return d


def analyse(root, *args):
    return subprocess.run([sys.executable, "-m", ANALYSERS["hookcost"], *map(str, args)],
                          capture_output=True, text=True)


def test_ratios(root, tmp_path):
    d = hookcost_dir(tmp_path / "h")
    out = analyse(root, d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["experiment"] == "hookcost" and s["unit"] == "ns"
    a = s["cases"]["a"]
    assert a["label"] == "hook compiled out" and a["n"] == 6
    assert a["p50"] == pytest.approx(101) and a["min"] == 100 and a["max"] == 150
    assert s["ratios_p50"]["b/a"] == pytest.approx(101.5 / 101)
    assert s["ratios_p50"]["c/a"] == pytest.approx(111 / 101)
    assert s["ratios_min"] == {"b/a": pytest.approx(1.005), "c/a": pytest.approx(1.1)}
    assert s["ns_per_loop_p50"] == pytest.approx(2) and s["ns_per_loop_min"] == pytest.approx(2)
    assert s["targets"] == {"b/a": 1.01, "c/a": 1.05}
    assert "b/a = 1.0050 (medians), 1.0050 (minima)  target <= 1.01: ok" in out.stdout
    assert "c/a = 1.0990 (medians), 1.1000 (minima)  target <= 1.05: ABOVE TARGET" \
        in out.stdout
    assert "one loop adds 2.00 ns (medians), 2.00 ns (minima)" in out.stdout


def test_json(root, tmp_path):
    d = hookcost_dir(tmp_path / "h")
    out = analyse(root, "--json", d)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cases"]["d"]["p50"] == pytest.approx(113)


@pytest.mark.parametrize("times, message", [
    ({k: v for k, v in TIMES.items() if k != "c"}, "no samples for case(s) c"),
    ({**TIMES, "e": [1]}, "unknown case 'e'"),
    ({**TIMES, "a": ["slow"]}, "not a number"),
])
def test_bad_raw(root, tmp_path, times, message):
    d = hookcost_dir(tmp_path / "h", times)
    out = analyse(root, d)
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1
    assert message in out.stderr and not (d / "summary.json").exists()


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/hookcost/run.sh", [], {"ROUNDS": "0"}, "ROUNDS wants a whole number >= 1"),
    ("userspace/hookcost/run.sh", ["--boots", "2"], {}, "takes no arguments, not '--boots'"),
    ("userspace/hookcost/guest.sh", ["a"], {}, "usage: guest.sh"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


def test_compare_reads_hookcost_figures(root, tmp_path):
    d = hookcost_dir(tmp_path / "h")
    assert analyse(root, d).returncode == 0
    p, c = compare_dirs(d, d, out=tmp_path)
    names = list(compare_rows(c))
    assert any("(medians)" in n for n in names) and "one loop (medians)" in names
    assert all(r["diff"] == 0 for r in c["rows"])
