"""lablib, the analysers' shared package: statistics on known inputs, the
list syntax of the C tools, atomic files, reading result folders, the
command-line conventions, and a cheap import.  (Result folders and
meta.json are liblab's alone: tests/host/test_meta.py.)"""
import json
import subprocess
import sys

import pytest


from lablib import lists, plot, results, stats


# --- stats -------------------------------------------------------------------

def test_summary_known_values():
    s = stats.summary(range(1, 11))     # 1..10
    assert s["n"] == 10 and s["min"] == 1 and s["max"] == 10
    assert s["mean"] == pytest.approx(5.5)
    assert s["stddev"] == pytest.approx(3.0276503540974917)     # sample, n-1
    assert s["p50"] == pytest.approx(5.5)
    assert s["p90"] == pytest.approx(9.1)      # rank 8.1
    assert s["p99"] == pytest.approx(9.91)
    assert s["p999"] == pytest.approx(9.991)
    assert list(s) == list(stats.SUMMARY_KEYS)


def test_summary_unsorted_one_and_empty():
    assert stats.summary([3, 1, 2])["p50"] == 2
    one = stats.summary([7])
    assert one["n"] == 1 and one["stddev"] == 0 and one["p999"] == 7
    empty = stats.summary([])
    assert empty["n"] == 0
    assert all(empty[k] is None for k in stats.SUMMARY_KEYS if k != "n")


def test_mean_of_values_and_of_none():
    assert stats.mean([1, 2, 6]) == 3
    assert stats.mean(x / 2 for x in (1, 3)) == 1
    assert stats.mean([]) is None


def test_trimmed_mean_cuts_a_tenth_rounded_down_off_each_end():
    # Below ten values nothing is cut: the plain mean.
    assert stats.trimmed_mean([1, 2, 3, 100]) == 26.5
    assert stats.trimmed_mean([5] * 9 + [95]) == 5     # ten: one off each end
    assert stats.trimmed_mean([4.0]) == 4.0
    # Nineteen: one each end; twenty: two.  In any order.
    assert stats.trimmed_mean([100, *range(1, 18), -100]) == 9
    assert stats.trimmed_mean([*range(18, 0, -1), 1000, -1000]) == pytest.approx(9.5)
    # Ties at the cut: one of them goes, the others stay.
    assert stats.trimmed_mean([1, 1, 1, 2, 2, 2, 2, 3, 3, 3]) == 2
    assert stats.trimmed_mean([7, 7, 7, 7, 7, 7, 7, 7, 7, 9]) == 7
    assert stats.trimmed_mean([]) is None and stats.trimmed_mean(iter(())) is None
    # Another fraction: a quarter of 8 is 2 off each end; 0 cuts nothing.
    assert stats.trimmed_mean([9, 1, 2, 3, 4, 5, 6, 0], 0.25) == 3.5
    assert stats.trimmed_mean([1, 2, 30], 0) == 11
    for bad in (-0.1, 0.5, 1):
        with pytest.raises(ValueError, match="cut_fraction"):
            stats.trimmed_mean([1, 2], bad)


def test_trimmed_mean_cuts_what_the_guest_cut():
    """int(0.1 x n), scipy's rule, is int(n / 10), the guest's awk's, at
    every n a run can have: 0.1 is a little above a tenth as a double, and
    no product rounds past a whole number."""
    assert all(int(0.1 * n) == n // 10 for n in range(1_000_001))
    for n in range(1, 60):
        v = list(range(n))          # a trimmed mean of 0..n-1 is (n - 1) / 2 ...
        v[-1] = 10 ** 6             # ... unless the largest is kept
        cut = n // 10
        kept = sorted(v)[cut:n - cut]
        assert stats.trimmed_mean(v) == sum(kept) / len(kept), n


def test_percentile_bounds():
    assert stats.percentile([], 50) is None
    assert stats.percentile([1, 2], 0) == 1 and stats.percentile([1, 2], 100) == 2
    assert stats.percentile([0, 10], 25) == pytest.approx(2.5)


def test_linfit_exact_and_noisy():
    f = stats.linfit([0, 100, 200, 300], [600, 990, 1380, 1770])
    assert f["intercept"] == pytest.approx(600) and f["slope"] == pytest.approx(3.9)
    assert f["r2"] == pytest.approx(1) and f["n"] == 4
    flat = stats.linfit([0, 1, 2], [5, 5, 5])
    assert flat["slope"] == 0 and flat["r2"] == 1
    # One grossly high point at the right end tilts the line up.
    noisy = stats.linfit([0, 100, 200, 300], [600, 990, 1380, 5770])
    assert noisy["slope"] > f["slope"] + 5 and noisy["r2"] < 0.9
    with pytest.raises(ValueError):
        stats.linfit([1], [1])
    with pytest.raises(ValueError):
        stats.linfit([2, 2, 2], [1, 2, 3])


def test_split2():
    s = stats.split2([10, 11, 12, 10, 100, 110])
    assert s["fast_n"] == 4 and s["slow_n"] == 2
    assert s["fast_mean"] == pytest.approx(10.75) and s["slow_mean"] == pytest.approx(105)
    assert s["threshold"] == pytest.approx(56)
    same = stats.split2([5, 5, 5])
    assert same == {"threshold": 5, "fast_n": 3, "fast_mean": 5, "slow_n": 0, "slow_mean": 0}
    # Values <= 0 count as the smallest positive one: they join the fast group.
    z = stats.split2([0, -1, 10, 1000])
    assert z["fast_n"] == 3 and z["slow_n"] == 1
    assert stats.split2([])["fast_n"] == 0


# --- lists -------------------------------------------------------------------

@pytest.mark.parametrize("text, want", [
    ("0,50,100", [0, 50, 100]),
    ("0:200:50", [0, 50, 100, 150, 200]),
    ("0:210:50", [0, 50, 100, 150, 200]),
    ("0:200:50,400", [0, 50, 100, 150, 200, 400]),
    ("5", [5]), ("007", [7]), ("3:3:1", [3]), ("10,0", [10, 0]),
])
def test_parse_list(text, want):
    assert lists.parse_list(text) == want


@pytest.mark.parametrize("text", [
    "", ",", "0,", ",0", "0,,5", "-1", "+1", " 1", "1 ", "1.5", "a", "1:5", "1:5:", ":5:1",
    "1:5:0", "5:1:1", "1:5:1:2", "1::1", "18446744073709551616",
])
def test_parse_list_errors(text):
    with pytest.raises(ValueError, match="bad list"):
        lists.parse_list(text)


# --- results -----------------------------------------------------------------

def test_atomic_writes_leave_no_tmp(tmp_path):
    results.write_json(tmp_path / "s.json", {"a": 1})
    results.write_csv(tmp_path / "t.csv", ["x", "y"], [{"x": 1, "y": None, "z": 3}])
    results.write_text(tmp_path / "r.txt", "hi\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.txt", "s.json", "t.csv"]
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": 1}
    assert results.read_csv(tmp_path / "t.csv") == [{"x": "1", "y": ""}]
    # A value JSON cannot hold: the old file stays, no tmp file is left.
    with pytest.raises(ValueError):
        results.write_json(tmp_path / "s.json", {"a": float("nan")})
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": 1}
    assert len(list(tmp_path.iterdir())) == 3


def test_read_csv_errors(tmp_path):
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(ValueError, match="e.csv.*no header"):
        results.read_csv(tmp_path / "e.csv")
    (tmp_path / "h.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="h.csv.*no column c"):
        results.read_csv(tmp_path / "h.csv", ["a", "c"])
    (tmp_path / "f.csv").write_text("a,b\n1,2,3\n")
    with pytest.raises(ValueError, match="f.csv line 2"):
        results.read_csv(tmp_path / "f.csv")


def test_read_meta_and_describe(tmp_path):
    with pytest.raises(ValueError, match="has no meta.json: not a lab result folder"):
        results.read_meta(tmp_path)
    meta = {"experiment": "calibrate", "settings": {"calls": 5},
            "kernel": {"release": "6.12.117-lab", "variant": "stock",
                       "preemption": "voluntary"},
            "machine": {"cpus": 2, "accelerator": "tcg", "qemu": "10.0.2", "pmu": False}}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    assert results.read_meta(tmp_path)["settings"] == {"calls": 5}
    assert results.describe(meta) == ("kernel 6.12.117-lab (stock, voluntary), 2 CPUs, "
                                      "accelerator tcg (QEMU 10.0.2), no PMU")
    assert results.describe({}) == "kernel ?"
    assert results.describe({"kernel": {"release": "x"}, "machine": {"cpus": 1}}) == \
        "kernel x, 1 CPU"
    pinned = {"kernel": {"release": "x"}, "machine": {"cpus": 2}}
    assert results.describe({**pinned, "settings": {"work_cpus": "1"}}) == \
        "kernel x, 2 CPUs (the work on CPU 1)"
    assert results.describe({**pinned, "settings": {"work_cpus": "0-1"}}) == \
        "kernel x, 2 CPUs (the work on CPUs 0-1)"
    assert results.describe({**pinned, "settings": {"work_cpus": "any"}}) == "kernel x, 2 CPUs"


# --- cli ---------------------------------------------------------------------

def toy(tmp_path, body):
    """A toy analyser built on lablib.cli whose work runs @body."""
    script = tmp_path / "toy" / "analyse.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"""import sys
from lablib import cli


def add_args(p):
    p.add_argument("dir", metavar="DIR")


def work(args):
{body}


sys.exit(cli.main("A toy analyser.", "toy/analyse.py results/x", add_args, work))
""")
    return lambda *args: subprocess.run([sys.executable, script, *args], capture_output=True,
                                        text=True)


def test_cli_help_and_usage(tmp_path):
    run = toy(tmp_path, "    print('worked on', args.dir)")
    out = run("--help")
    assert out.returncode == 0 and "Example:" in out.stdout and "worked" not in out.stdout
    assert run("x").stdout == "worked on x\n"
    for args in ((), ("a", "b")):
        out = run(*args)
        assert out.returncode == 2 and out.stderr.startswith("usage: toy/analyse.py")
        assert out.stdout == ""


@pytest.mark.parametrize("raise_it", [
    "open(args.dir)", "raise ValueError('bad\\nthing')", "raise cli.BadInput('no good')",
])
def test_cli_bad_input_is_one_line(tmp_path, raise_it):
    out = toy(tmp_path, "    " + raise_it)(str(tmp_path / "missing"))
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("toy/analyse.py: error: ")


def test_cli_bug_keeps_its_traceback(tmp_path):
    out = toy(tmp_path, "    {}['key']")("x")
    assert out.returncode != 0
    assert "Traceback" in out.stderr and "KeyError" in out.stderr
    assert "error:" not in out.stderr


def test_import_does_not_load_matplotlib():
    code = ("import sys, lablib, lablib.cli, lablib.plot, lablib.results, lablib.stats, "
            "lablib.experiments.calibration, lablib.experiments.irqhook, "
            "lablib.experiments.rtcompare, lablib.experiments.smp; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# --- text tables and the one-folder analyser ---------------------------------

def test_text_table_writes_each_width_once():
    from lablib import text
    t = text.table([("case", "<6"), ("ns", ">5"), "  ", ("note", "")],
                   [["a", 12, "x"], ["bb", "3,4", "yy"]], ["a note."])
    assert t.splitlines() == ["case     ns  note", "a        12  x", "bb      3,4  yy",
                              "a note."]


def test_markdown_table_keeps_each_figure_as_written():
    from lablib import text
    lines = text.markdown(["tax", "grep"], [["`trace`", "+7.76 (+0.10)"], ["`pti`", "1,234"]])
    assert [[c.strip() for c in line.split("|")[1:-1]] for line in lines.splitlines()] == [
        ["tax", "grep"], ["-" * 9, "-" * 15], ["`trace`", "+7.76 (+0.10)"], ["`pti`", "1,234"]]


@pytest.mark.parametrize("seconds, want", [
    (0, "0m00s"), (59.9, "0m59s"), (245, "4m05s"), (3599, "59m59s"), (3600, "1h00m"),
    (7625, "2h07m")])
def test_duration_is_written_as_the_sweeps_write_it(seconds, want):
    from lablib import text
    assert text.duration(seconds) == want


@pytest.mark.parametrize("v, digits, want", [
    (None, 3, "-"), (True, 3, "yes"), (False, 3, "no"), (4.0, 3, "4"), (12, 3, "12"),
    (1234.56, 3, "1,235"), (999.4, 3, "999"), (3.0527, 3, "3.05"), (3.0527, 4, "3.053"),
    (0.000123, 3, "0.000123"), (-2.5, 3, "-2.5"), (float("nan"), 3, "nan"),
])
def test_num_writes_a_figure_one_way(v, digits, want):
    from lablib import text
    assert text.num(v, digits) == want


def test_write_summary_writes_the_three_files(tmp_path):
    names = results.write_summary(tmp_path, {"n": 1}, ["case", "n"],
                                  [{"case": "a", "n": 1, "extra": 2}], "report\n")
    assert names == ["summary.json", "summary.csv", "report.txt"]
    assert json.loads((tmp_path / "summary.json").read_text()) == {"n": 1}
    assert (tmp_path / "summary.csv").read_text().splitlines() == ["case,n", "a,1"]
    assert (tmp_path / "report.txt").read_text() == "report\n"


@pytest.mark.parametrize("argv, printed, drawn", [
    ([], "table\nresults: {d}/out.txt, hist.png, pic.png\n", True),
    (["--no-plot"], "table\nresults: {d}/out.txt\n", False),
    (["--json"], '{\n "n": 3\n}\n', True),
])
def test_folder_analyser(tmp_path, capsys, argv, printed, drawn):
    from lablib import cli
    seen = []

    def analyse(d):
        seen.append(d)
        return {"n": 3}, "table\n", ["out.txt"]

    def plot(summary, d):
        (d / "pic.png").write_text(str(summary["n"]))
        (d / "hist.png").write_text(str(summary["n"]))
        return ["hist.png"]

    add_args, work = cli.folder_analyser("DIR", "a folder", analyse, plot, "pic.png")
    assert cli.main("toy", "toy DIR", add_args, work, [str(tmp_path), *argv]) == 0
    assert seen == [tmp_path]
    assert capsys.readouterr().out == printed.replace("{d}", str(tmp_path))
    assert (tmp_path / "pic.png").exists() == (tmp_path / "hist.png").exists() == drawn


def test_folder_analyser_without_a_plot_has_no_no_plot(tmp_path, capsys):
    from lablib import cli
    add_args, work = cli.folder_analyser("DIR", "a folder",
                                         lambda d: ({}, "t\n", ["a.json"]))
    assert cli.main("toy", "toy DIR", add_args, work, [str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"t\nresults: {tmp_path}/a.json\n"
    with pytest.raises(SystemExit) as e:
        cli.main("toy", "toy DIR", add_args, work, [str(tmp_path), "--no-plot"])
    assert e.value.code == 2


def test_log_axis_leaves_room_for_a_marker_at_either_end():
    """peers.png once drew its tallest p99 mark half outside the frame:
    the axis ended 5 % above the data."""
    fig, ax = plot.figure()
    plot.log_axis(ax, "y", 100, 100_000)
    lo, hi = ax.get_ylim()
    assert lo <= 100 / 1.2 and hi >= 100_000 * 1.2, (lo, hi)
    plot.pyplot().close(fig)


@pytest.mark.parametrize("lo, hi", [(3_000, 2_600_000), (900_000, 4_000_000),
                                    (5, 40), (20_000, 900_000)])
def test_log_axis_labels_stay_apart_on_any_range(lo, hi, monkeypatch, tmp_path):
    """smp's histogram of a run on a loaded machine reached 2.6 ms: the
    axis' ticks at 1,000,000 and 2,000,000 ns overlapped on an 8-inch
    figure.  Short labels (50k, 2M) stay apart on any range."""
    import plotcheck
    figures = plotcheck.record(monkeypatch)
    fig, ax = plot.figure(width=8, height=4.5)
    ax.plot([lo, hi], [1, 2], "o")
    plot.log_axis(ax, "x", lo, hi)
    ax.set_xlabel("ns")
    ax.set_ylabel("n")
    plot.save(fig, ax, tmp_path / "a.png")
    plotcheck.assert_readable(figures["a.png"])
    assert all(len(t) <= 5 for t in figures["a.png"][0]["xticks"]), figures["a.png"][0]["xticks"]


def test_an_example_says_its_commit_and_date(tmp_path):
    from lablib import examples
    folder = tmp_path / "grep-20261202-010101"
    folder.mkdir()
    meta = {"experiment": "grep", "date": "2026-12-02T01:01:01Z", "lab_commit": "a" * 40}
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "report.txt").write_text("grep sweep\n")
    (folder / "grep.png").write_bytes(b"png")
    out = examples.make(folder, tmp_path / "example", "grep")
    assert [p.name for p in out] == ["grep-report.txt", "grep.png"]
    head, rest = (tmp_path / "example/grep-report.txt").read_text().split("\n", 1)
    assert head.startswith("Example: grep-20261202-010101, lab commit aaaaaaaaaaaa, measured "
                           "2026-12-02") and rest == "grep sweep\n"
    # A run of a tree with uncommitted changes is no commit's example.
    (folder / "meta.json").write_text(json.dumps({**meta, "lab_commit": "a" * 40 + "-dirty"}))
    assert examples.main([str(folder), str(tmp_path / "x"), "grep"]) == 1
    assert not (tmp_path / "x").exists()


def test_settings_prints_each_setting_a_run_has(tmp_path):
    """python -m lablib.results settings: KEY=VALUE for each key asked that
    meta.json's settings hold (an empty one too), in the order asked; a
    folder with no meta.json refused."""
    (tmp_path / "meta.json").write_text(json.dumps(
        {"settings": {"workloads": "grep", "repeats": 1, "host_taxes": "", "none": None}}))
    out = subprocess.run([sys.executable, "-m", "lablib.results", "settings", tmp_path,
                          "repeats", "none", "workloads", "host_taxes", "absent"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["repeats=1", "workloads=grep", "host_taxes="]
    out = subprocess.run([sys.executable, "-m", "lablib.results", "settings", tmp_path / "x",
                          "repeats"], capture_output=True, text=True)
    assert out.returncode == 2 and "no meta.json" in out.stderr
