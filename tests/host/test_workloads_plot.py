"""The workload sweeps' picture, <workload>.png, is readable: numeric
axes, few labels, none on top of another, every measure a panel with its
means and the model, on sweeps shaped like the README's (grep and Apache
under the delay, three repeats, the run-to-run noise it reports; made up:
a real sweep needs the lab kernel)."""
import importlib
import json
import random

import pytest

import plotcheck
from resultdirs import ANALYSERS
from test_workloads_analysis import P9_HEADER, make_dir


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
    return importlib.import_module(ANALYSERS["workload"])


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
        head = axes[0]["figure_title"]
        assert head.startswith(f"{workload}: throughput") and " CPUs" in head, head
        for ax, name in zip(axes, measures):
            # On the host's clock (these folders'), each run and the mean
            # with its 95 % interval; the model, and d-half where the sweep
            # went past it.
            assert f"{name}: mean \u00b1 95 % interval" in ax["legend"], ax["legend"]
            assert "each run" in ax["legend"] and ax["runs_drawn"] == len(
                [r for r in rows if f",{name}," in r]), ax
            assert len(ax["legend"]) in (3, 4) and any(e.startswith("model: ")
                                                       for e in ax["legend"])
            assert ax["xlabel"] == "added latency per system call (ns)"
            # From 0, and the highest dot drawn whole, not cut by the frame.
            assert ax["ylim"][0] == 0 and ax["ylim"][1] >= 1.05 * ax["ydata_max"], ax


def on_clock(d, clock, **settings):
    """Sweep folder @d as if it ran on @clock, with @settings added."""
    meta = json.loads((d / "meta.json").read_text())
    meta["machine"]["clock"] = {"kind": clock, "shift": 0} if clock == "virtual" else \
        {"kind": "host"}
    meta["settings"].update(settings)
    (d / "meta.json").write_text(json.dumps(meta))


def p9_rows(requests, noise=0.0, rng=None):
    """grep at loops 0, 100, 200 as the model has it (2 s and 1,000 calls,
    4 ns a loop: 0.4 us more a grep every 100 loops), two runs a point,
    the 9p requests of each point's windows @requests."""
    rows = []
    for loops, p9 in zip((0, 100, 200), requests):
        for r in (1, 2):
            t = (2.0 + 1000 * 4e-9 * loops) * (rng.gauss(1, noise) if noise else 1)
            rows.append(f"grep,grep,{loops},,{r},1,{t:.9f},1000,0,{p9},")
    return rows


@pytest.mark.parametrize("case, clock, requests, noise, settings, hollow, banner", [
    ("a request", "virtual", (0, 3, 0), 0, {}, 1,
     "1 of 3 points not exact, drawn hollow: requests to the host's files (9p) in their "
     "timed windows"),
    ("exact", "virtual", (0, 0, 0), 0, {}, 0, None),
    ("staged output differs", "virtual", (0, 0, 0), 0,
     {"stage_check": "output differs from the recorded run"}, 3,
     "3 of 3 points not exact, drawn hollow: its output in the staged root differs"),
    ("the network", "virtual", (0, 0, 0), 0, {"stage": {"network": ["192.0.2.1:80"]}}, 3,
     "3 of 3 points not exact, drawn hollow: it reached for the network (192.0.2.1:80)"),
    ("noise", "host", (0, 0, 0), 0.05, {}, 2,
     "2 of 3 points within the noise, drawn hollow: their spread is larger than the effect "
     "the model predicts"),
    # On the host's clock a point's 9p requests do not make its doubt.
    ("noise with requests", "host", (0, 3, 3), 0.05, {}, 2,
     "2 of 3 points within the noise, drawn hollow: their spread is larger than the effect "
     "the model predicts"),
])
def test_points_the_plot_cannot_vouch_for_are_drawn_hollow(root, tmp_path, monkeypatch, case,
                                                           clock, requests, noise, settings,
                                                           hollow, banner):
    """A point not exact on the virtual clock, or on the host's clock one
    whose spread is larger than the effect the model predicts there, is
    drawn hollow, and the panel's title says how many and why; the others
    are filled.  (The noise case: 5 % run to run against an effect of
    0.02-0.04 %.)"""
    mod = report_module(root)
    figures = plotcheck.record(monkeypatch)
    d = make_dir(tmp_path / "grep", [], {"workload": "grep"})
    (d / "raw.csv").write_text(P9_HEADER + "\n" + "\n".join(
        p9_rows(requests, noise, random.Random(1))) + "\n")
    on_clock(d, clock, **settings)
    assert mod.cli.main("grep", "x", mod.add_args, mod.work, [str(d)]) == 0
    ax, = figures["grep.png"]
    plotcheck.assert_readable([ax])
    assert (ax["hollow_points"], ax["solid_points"]) == (hollow, 3 - hollow), case
    if banner is None:
        assert ax["title"] == ""
    else:
        assert " ".join(ax["title"].split()).startswith(banner), ax["title"]
        assert any("drawn hollow" in line for line in (d / "report.txt").read_text().split("\n")
                   ), case
    points = json.loads((d / "summary.json").read_text())["measures"]["grep"]["points"]
    assert sum(bool(p["doubt"]) for p in points) == hollow
