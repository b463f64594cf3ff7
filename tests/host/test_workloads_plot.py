"""The workload sweeps' picture, <workload>.png, is readable: numeric
axes, few labels, none on top of another, every measure a panel with its
means and the model, on sweeps shaped like the README's (grep and Apache
under the delay, three repeats, the run-to-run noise it reports; made up:
a real sweep needs the lab kernel)."""
import random

import plotcheck
from resultdirs import ANALYSERS
from test_workloads_analysis import make_dir
from conftest import load_script


def grep_rows(rng):
    """1e6 system calls a grep, 2 s of work, 4 ns per loop, 3 % noise."""
    return [f'grep,grep,{loops},{r},1,{(2.0 + 4e-3 * loops) * rng.gauss(1, 0.03):.6f},'
            f'1000000,0,"exit 0, 312 matches"' for loops in range(0, 701, 100)
            for r in (1, 2, 3)]


def apache_rows(rng):
    """A reply of 2 ms growing 10 % over 1,000 loops, a sustained rate of
    500/s falling to 450/s, 10 % noise (the README's Apache spread)."""
    rows = []
    for loops in range(0, 1001, 250):
        for r in (1, 2, 3):
            reply = 0.002 * (1 + 1e-4 * loops) * rng.gauss(1, 0.1)
            rate = 500 * (1 - 1e-4 * loops) * rng.gauss(1, 0.1)
            rows.append(f"apache,reply,{loops},{r},10,{10 * reply:.6f},20000,0,")
            rows.append(f"apache,saturation,{loops},{r},{rate * 4:.0f},4.0,"
                        f"{rate * 4 * 2000:.0f},0,\"rate {rate:.0f}/s\"")
    return rows


def report_module(root):
    return load_script(ANALYSERS["workload"])


def test_grep_and_apache_plots_are_readable(root, tmp_path, monkeypatch):
    rng = random.Random(4)
    mod = report_module(root)
    figures = plotcheck.record(monkeypatch)
    for workload, rows, measures in (("grep", grep_rows(rng), ["grep"]),
                                     ("apache", apache_rows(rng), ["reply", "saturation"])):
        d = make_dir(tmp_path / workload, rows, {"workload": workload, "repeats": 3})
        assert mod.cli.main(workload, "x", mod.add_args, mod.work, [str(d)]) == 0
        axes = figures[f"{workload}.png"]
        plotcheck.assert_readable(axes)
        assert len(axes) == len(measures)
        for ax, name in zip(axes, measures):
            assert f"{name}: mean \u00b1 sd over repeats" in ax["legend"], ax["legend"]
            # The mean, the model, and d-half where the sweep went past it.
            assert len(ax["legend"]) in (2, 3) and any(e.startswith("model: ")
                                                       for e in ax["legend"])
            assert ax["xlabel"] == "added latency per system call (ns)"
            # From 0, and the highest dot drawn whole, not cut by the frame.
            assert ax["ylim"][0] == 0 and ax["ylim"][1] >= 1.05 * ax["ydata_max"], ax
