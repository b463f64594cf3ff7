"""userspace/tailamp: lablib.tailamp.analyse on made-up runs whose
figures are known (the measured quantiles, the slow share, the binomial
model), its errors, its plot, and the guest script's argument checks."""
import json
import math
import os
import subprocess
import sys

import pytest

import plotcheck
import runners
from lablib.tailamp import analyse as analyser
from resultdirs import compare_dirs, compare_rows, write_csv, write_meta

ANALYSER = "lablib.tailamp.analyse"
NS = 1000000                # a delayed call: 1 ms
BASE = 100e-6               # every undelayed reply: 100 us
CALLS = 20                  # calls a request


def reply_csv(seconds, errors=0):
    """reqtime's CSV: a reply of CALLS calls for each of @seconds, then
    @errors failed requests."""
    rows = [f"{i},200,{s:.9f},{CALLS}," for i, s in enumerate(seconds, 1)]
    rows += [f"{len(seconds) + i},,,,connect: Connection refused" for i in range(1, errors + 1)]
    return "request,status,seconds,calls,error\n" + "".join(r + "\n" for r in rows)


def point(d, ppm, slow_every, requests=1000, p9=0):
    """runs/ppm-P as workloads/sweep.sh leaves it: every reply BASE, but
    each @slow_every-th of the delayed run one delay longer (0: none)."""
    f = write_meta(d / "runs" / f"ppm-{ppm}", "apache",
                   {"ns": [0, NS], "delay_settings": {"ppm": str(ppm), "mode": "spin"}})
    (f / "logs").mkdir()
    base = [BASE] * requests
    (f / "logs/reply-ns0-1.csv").write_text(reply_csv(base))
    delayed = [BASE + (NS / 1e9 if slow_every and i % slow_every == 0 else 0)
               for i in range(requests)]
    (f / f"logs/reply-ns{NS}-1.csv").write_text(reply_csv(delayed, errors=1))
    write_csv(f / "points.csv", ("loops", "ns", "delayed", "spun_ns", "measured_ns"),
              [("", 0, 0, 0, ""), ("", NS, 10, 10 * NS, f"{NS:.1f}")])
    # The guest's reply rows: the replies' count and sums, the errors.
    write_csv(f / "raw.csv", ("workload", "measure", "loops", "ns", "repeat", "units",
                              "seconds", "syscalls", "errors", "p9_requests", "detail"),
              [("apache", "reply", "", 0, 1, requests, f"{sum(base):.9f}", CALLS * requests,
                0, p9, "every reply in logs/reply-ns0-1.csv (reqtime)"),
               ("apache", "reply", "", NS, 1, requests, f"{sum(delayed):.9f}",
                CALLS * requests, 1, 0, f"every reply in logs/reply-ns{NS}-1.csv (reqtime)")])
    return f


def tailamp_dir(d, p9=0):
    write_meta(d, "tailamp", {"ppm": [0, 10000], "ns": NS, "mode": "spin", "seed": 1,
                              "requests": 1000, "interval_ms": 10})
    point(d, 0, 0)
    point(d, 10000, 10, p9=p9)
    return d


def analyse(root, *args):
    return subprocess.run([sys.executable, "-m", ANALYSER, *map(str, args)],
                          capture_output=True, text=True)


def binom_quantile(n, p, q):
    k, cdf = 0, (1 - p) ** n
    while cdf < q:
        k += 1
        cdf += math.comb(n, k) * p ** k * (1 - p) ** (n - k)
    return k


def test_figures_against_the_model(root, tmp_path):
    d = tailamp_dir(tmp_path / "t")
    out = analyse(root, d, "--no-plot")
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    p0, p1 = s["points"]
    assert p0["ppm"] == 0 and p0["slow_share"] == 0 and p0["model_slow_share"] == 0
    assert p0["p999_us"] == pytest.approx(100) and p0["model_p999_us"] == pytest.approx(100)
    # One reply in ten met a delay; the model says 1 - 0.99^20 of them would.
    assert p1["requests"] == 1000 and p1["calls_per_request"] == CALLS
    assert p1["slow_share"] == pytest.approx(0.1)
    assert p1["model_slow_share"] == pytest.approx(1 - 0.99 ** 20)
    assert p1["mean_us"] == pytest.approx(200)
    assert p1["model_mean_us"] == pytest.approx(100 + 0.01 * 20 * 1000)
    assert p1["p50_us"] == pytest.approx(100) and p1["p99_us"] == pytest.approx(1100)
    for name, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999)):
        assert p1[f"model_{name}_us"] == pytest.approx(100 + 1000 * binom_quantile(20, 0.01, q))
    assert s["p99_moves_at_ppm"] == pytest.approx((1 - 0.99 ** (1 / 20)) * 1e6)
    assert s["p50_moves_at_ppm"] == pytest.approx((1 - 0.5 ** (1 / 20)) * 1e6)
    assert s["exact"] is True
    rep = (d / "report.txt").read_text()
    assert "N = 20" in rep and "NOT EXACT" not in rep
    assert (d / "summary.csv").read_text().splitlines()[0].startswith("ppm,requests,")


def test_a_window_with_9p_requests_is_not_exact(root, tmp_path):
    d = tailamp_dir(tmp_path / "t", p9=3)
    assert analyse(root, d, "--no-plot").returncode == 0
    assert json.loads((d / "summary.json").read_text())["exact"] is False
    assert "NOT EXACT" in (d / "report.txt").read_text()


NO_CALLS = "request,status,seconds,calls,error\n1,200,0.0001,,\n"


@pytest.mark.parametrize("spoil, message", [
    (lambda d: (d / "runs/ppm-10000/logs/reply-ns1000000-1.csv").write_text(
        "request,status,seconds,calls,error\n1,200,x,3,\n"),
     "reply-ns1000000-1.csv line 2: seconds is 'x', not a number"),
    (lambda d: (d / "runs/ppm-0/logs/reply-ns0-1.csv").write_text(reply_csv([], errors=2)),
     "reply-ns0-1.csv: no replies"),
    (lambda d: (d / "runs/ppm-0/logs/reply-ns0-1.csv").write_text(NO_CALLS),
     "reply-ns0-1.csv: no calls counted"),
    (lambda d: (d / "runs/ppm-0/logs/reply-ns0-1.csv").unlink(), "reply-ns0-1.csv"),
    (lambda d: [p.rename(d / "gone") for p in [d / "runs"]], "no ppm-P folders"),
    (lambda d: (d / "runs/ppm-10000/points.csv").unlink(), "ppm-10000: no points.csv"),
])
def test_bad_input_is_one_line(root, tmp_path, spoil, message):
    d = tailamp_dir(tmp_path / "t")
    spoil(d)
    out = analyse(root, d)
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_plot_is_readable(root, tmp_path, monkeypatch):
    d = tailamp_dir(tmp_path / "t")
    point(d, 100000, 2)
    mod = analyser
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("tailamp", "x", mod.add_args, mod.work, [str(d)]) == 0
    axes = figures["tailamp.png"]
    plotcheck.assert_readable(axes)
    assert axes[0]["xscale"] == "log" and axes[0]["yscale"] == "log"
    # The subtitle every experiment's picture carries; every point exact.
    assert "tailamp" in axes[0]["figure_title"] and "kernel" in axes[0]["figure_title"]
    assert axes[0]["hollow_points"] == 0 and "not exact" not in axes[0]["title"]


def test_a_point_that_is_not_exact_is_drawn_hollow(root, tmp_path, monkeypatch):
    """Its windows read the host's files: no measured line through it, a
    hollow grey marker a curve, and a banner saying how many and why."""
    d = tailamp_dir(tmp_path / "t", p9=3)
    mod = analyser
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("tailamp", "x", mod.add_args, mod.work, [str(d)]) == 0
    axes = figures["tailamp.png"]
    assert axes[0]["hollow_points"] > 0 and axes[1]["hollow_points"] > 0
    assert "not exact, drawn hollow" in axes[0]["title"]


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/tailamp/guest.sh", ["--ppm", "0,x"], {}, "--ppm wants a list"),
    ("userspace/tailamp/guest.sh", ["--ppm", "2000000"], {}, "--ppm wants a list"),
    ("userspace/tailamp/guest.sh", ["--ns", "0"], {}, "--ns wants a whole number >= 1"),
    ("userspace/tailamp/guest.sh", ["--ns", "5000001"], {}, "--ns wants at most 5000000"),
    ("userspace/tailamp/guest.sh", ["--mode", "nap"], {}, "--mode wants spin or sleep"),
    ("userspace/tailamp/guest.sh", ["-n", "0"], {}, "--requests wants a whole number >= 1"),
    ("userspace/tailamp/guest.sh", ["--bogus"], {}, "unknown argument '--bogus'"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_the_runner_finds_the_guests_folder = runners.guest_folder_test(
    "tailamp", "analyse.py", "tailamp", ["--ppm", "0,1000", "--output", "out", "-n", "5"])


@pytest.mark.parametrize("given, limit", [(None, "21600"), ("900", "900")])
def test_the_runner_gives_the_guest_hours(tmp_path, given, limit):
    """vm.sh's default hour stopped make tailamp's sixth point beside three
    other VMs: the runner asks for six unless told."""
    runner = runners.lab_copy(tmp_path, "tailamp", ["analyse.py"])
    (tmp_path / "scripts/vm.sh").write_text('#!/bin/sh\necho "limit=$VM_TIMEOUT" >&2\nexit 1\n')
    env = {k: v for k, v in os.environ.items() if k != "VM_TIMEOUT"}
    if given:
        env["VM_TIMEOUT"] = given
    out = subprocess.run([runner, "--no-analysis", "-n", "5"], capture_output=True, text=True,
                         env=env)
    assert f"limit={limit}\n" in out.stderr, out.stderr



def test_compare_reads_tailamp_figures_and_reply_distributions(root, tmp_path):
    d = tailamp_dir(tmp_path / "d")
    assert analyse(root, d, "--no-plot").returncode == 0
    p, c = compare_dirs(d, d, out=tmp_path)
    assert "reply p99 at 10000 ppm" in compare_rows(c)
    assert set(c["distributions"]) == {"reply at 0 ppm", "reply at 10000 ppm"}
    tail = c["distributions"]["reply at 10000 ppm"]
    assert tail["a"]["n"] == 1000 and tail["a"]["p99"] > tail["a"]["p50"]
    assert (tmp_path / "c" / "ccdf.png").is_file()
