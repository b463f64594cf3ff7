"""make report: the results page (lablib/report.py).  A made-up results
folder (calibrate, two sweeps, smp, an experiment the page knows nothing
of, an unreadable meta.json, three compare folders, an incomplete run, a
latest-* link) is listed whole and newest first with a filter; then
headless Chromium loads the page through file:// and every image must load
and every relative link lead to a file (a page with a file gone must fail
that check)."""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import urllib.parse

import pytest

from lablib import report, report_browser
from resultdirs import write_meta

# The folders of the made-up results folder, newest first.
RUNS = ["broken-20261124-100000", "squarewave-20261123-120000", "smp-20261123-100000",
        "kbuild-20261122-100000", "grep-20261121-100000", "calibrate-20261120-100000"]
COMPARES = ["compare-20261125-100000", "compare-20261119-100000", "compare-20261118-100000"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def plot(path, dpi=50):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(3, 2), dpi=dpi)
    ax.plot([0, 1, 2], [1, 3, 2])
    fig.savefig(path)
    plt.close(fig)


def date(name):
    """meta.json's date of a folder named <experiment>-<date>-<time>."""
    d, t = name.split("-")[-2:]
    return f"{d[:4]}-{d[4:6]}-{d[6:]}T{t[:2]}:{t[2:4]}:{t[4:]}Z"


def meta(d, experiment, clock="virtual", **changes):
    machine = {"cpu_model": "test CPU", "cpus": 1, "virtual": True, "accelerator": "tcg",
               "accelerator_why": "made up", "qemu": "10.0.2", "pmu": False,
               "clock": {"kind": clock, **({"shift": 0} if clock == "virtual" else {})}}
    return write_meta(d, experiment, {}, date=date(d.name), machine=machine,
                      lab_commit="0123456789abcdef0123456789abcdef01234567-dirty", **changes)


def sweep_summary(experiment, unit, exact):
    points = [{"setting": s, "loops": s, "mean": m, "unit": unit, "seconds_per_unit": 1 / m,
               "exact": exact} for s, m in ((0, 780.0), (750, 680.0))]
    return {"experiment": experiment, "workload": experiment, "ns_per_loop": 3.002,
            "measures": {experiment: {"unit": unit, "points": points, "model": {
                "base_seconds_per_unit": 0.0769, "measured_slowdown": 2.126,
                "max_added_ns": 18113.0}}}}


def make_results(root):
    """The made-up results folder @root."""
    root.mkdir()
    d = meta(root / "calibrate-20261120-100000", "calibrate")
    fit = {"statistic": "p10", "slope": 3.0004, "intercept": 499.0, "r2": 0.999}
    (d / "summary.json").write_text(json.dumps({"fits": {"close": fit}, "entry_ns": 131.0}))
    (d / "summary.csv").write_text("syscall,loops\nclose,0\n")
    plot(d / "calibration.png")

    d = meta(root / "grep-20261121-100000", "grep")
    (d / "summary.json").write_text(json.dumps(sweep_summary("grep", "greps/min", True)))
    (d / "report.txt").write_text("grep sweep\n")
    (d / "logs").mkdir()
    plot(d / "grep.png")
    (root / "latest-grep").symlink_to(d.name)

    d = meta(root / "kbuild-20261122-100000", "kbuild", clock="host")
    (d / "summary.json").write_text(json.dumps(sweep_summary("kbuild", "builds/hour", False)))
    plot(d / "kbuild.png")

    d = meta(root / "smp-20261123-100000", "smp")
    span = {"ns": {"n": 12, "p50": 4321.5, "unit": "ns"},
            "round_p50": {"n": 3, "min": 4300.0, "max": 4400.0}}
    (d / "summary.json").write_text(json.dumps({"cases": {"pipe": {"spans": {"A-B": span}}}}))
    plot(d / "smp.png")
    plot(d / "hist pipe.png")  # a space: the href must be quoted

    d = meta(root / "squarewave-20261123-120000", "squarewave")
    (d / "summary.json").write_text(json.dumps({"period_ns": 100000.0, "edges": 12,
                                                "name": "x", "exact": False}))

    d = root / "broken-20261124-100000"
    d.mkdir()
    (d / "meta.json").write_text("{not JSON")
    (d / "raw.csv").write_text("a\n1\n")

    # compare's own shape: side A by the path 'make compare' gives, B by an
    # absolute one and one outside the results folder.
    d = meta(root / "compare-20261125-100000", "compare")
    outside = root.parent / "elsewhere" / "grep-20261001-100000"
    outside.mkdir(parents=True)
    rows = [{"figure": "close slope (p10 fit)", "unit": "ns/loop", "a": [3.0], "b": [3.0],
             "a_value": 3.0, "b_value": 3.0, "ratio": 1.0, "verdict": "identical"},
            {"figure": "grep base", "unit": "s", "a": 0.077, "b": 0.077, "ratio": 1.0,
             "verdict": "identical"},
            {"figure": "kbuild base", "unit": "s", "a": 10.0, "b": 12.5, "ratio": 1.25,
             "verdict": "slower", "worse": True},
            {"figure": "entry cost", "unit": "ns", "a": 131.0, "b": 131.5,
             "verdict": "changed (tiny)"},
            {"figure": "smp pipe", "unit": "ns", "a": 1.0, "b": 2.0, "ratio": 2.0,
             "verdict": "nondeterministic"}, "not a row"]
    diffs = [{"key": f"kernel.key{i}", "a": f"a{i}", "b": f"b{i}", "note": ""} for i in range(6)]
    diffs[0] = {"key": "kernel.release", "a": "6.12.test-lab", "b": "6.12.other-lab",
                "note": ""}
    compare = {"experiment": "compare", "of": "calibrate", "clock": "virtual",
               "a": {"folders": ["results/calibrate-20261120-100000"], "describe": "kernel x"},
               "b": {"folders": [str(root / "grep-20261121-100000"), str(outside)]},
               "differences": diffs, "rows": rows, "status": 1}
    (d / "compare.json").write_text(json.dumps(compare))
    for name in ("report.txt", "compare.csv"):
        (d / name).write_text("x\n")
    plot(d / "compare.png")

    d = meta(root / "compare-20261119-100000", "compare")
    (d / "compare.json").write_text('{"rows": 3}')

    d = meta(root / "compare-20261118-100000", "compare")  # a plain list of rows
    (d / "compare.json").write_text(json.dumps([{"figure": "x", "verdict": "same"}]))

    meta(root / "apache-20261126-100000.incomplete", "apache")
    (root / "notes").mkdir()  # no meta.json: not a result folder
    return root


@pytest.fixture
def results_dir(tmp_path):
    return make_results(tmp_path / "results")


class Page(html.parser.HTMLParser):
    """What a test needs of the page: rows (data-experiment, folder name),
    the filter's options, every href and src."""

    def __init__(self, text):
        super().__init__()
        self.rows, self.options, self.refs, self.scripts = [], [], [], []
        self._in_name = self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-experiment" in a:
            self.rows.append([a["data-experiment"], None, "hidden" in a])
        if tag == "a" and "name" in (a.get("class") or "").split():
            self._in_name = True
        if tag == "option" and self.options is not None:
            self.options.append(a.get("value"))
        if tag == "script":
            self._in_script = True
        self.refs += [a[k] for k in ("href", "src") if k in a]

    def handle_endtag(self, tag):
        self._in_name = self._in_name and tag != "a"
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data):
        if self._in_name:
            self.rows[-1][1] = data
        if self._in_script:
            self.scripts.append(data)


def test_every_folder_is_listed_newest_first(results_dir):
    page = report.write(results_dir)
    assert page == results_dir / "index.html"
    text = page.read_text()
    p = Page(text)
    names = [name for _, name, _ in p.rows]
    assert names == RUNS + COMPARES
    kinds = dict((name, kind) for kind, name, _ in p.rows)
    assert kinds["broken-20261124-100000"] == "unreadable"
    assert kinds["compare-20261125-100000"] == "compare"
    assert "latest-grep" not in text and "notes" not in names
    assert "apache-20261126-100000.incomplete" not in names
    assert "1 incomplete folder" in text and "apache-20261126-100000.incomplete" in text
    # No leftover of the atomic write.
    assert sorted(p.name for p in results_dir.iterdir() if p.name.startswith(".")) == []


def test_the_filter_is_there(results_dir):
    text = report.write(results_dir).read_text()
    p = Page(text)
    # "all", then one option per experiment, each once.
    assert p.options == ["", "calibrate", "compare", "grep", "kbuild", "smp", "squarewave",
                         "unreadable"]
    assert 'id="filter"' in text and 'data-of="calibrate"' in text
    js = "".join(p.scripts)
    assert "data-experiment" in js and "hidden" in js
    assert not any(r.startswith(("http:", "https:", "//")) for r in p.refs), "no network"


def row(text, name):
    """The HTML of the page's row of folder @name."""
    start = text.rindex("<tr", 0, text.index(f">{name}</a>"))
    return text[start:text.index("</tr>", start)]


def test_headline_figures(results_dir):
    text = report.write(results_dir).read_text()
    assert "close: 3.000 ns/loop, R² 0.9990" in text and "entry 131 ns" in text
    assert "grep: 780 greps/min, 76.9 ms each; ×2.126 at +18,113 ns" in text
    assert "calibration: 3.002 ns/loop" in text
    assert "exact: every point" in row(text, "grep-20261121-100000")
    assert "not exact" in row(text, "kbuild-20261122-100000")
    # smp through lablib.figures' reader; an unknown experiment's first numbers.
    assert "pipe A-B p50: 4322 ns" in row(text, "smp-20261123-100000")
    square = row(text, "squarewave-20261123-120000")
    assert "period_ns: 100,000" in square and "edges: 12" in square and "not exact" in square
    assert "virtual (shift 0)" in text and "1 CPU, tcg (QEMU 10.0.2), no PMU" in text
    assert "host" in row(text, "kbuild-20261122-100000")
    assert "0123456-dirty" in text and "6.12.test-lab" in text
    broken = row(text, "broken-20261124-100000")
    assert "unreadable: " in broken and "not JSON" in broken and "raw.csv" in broken


def test_compare_verdicts(results_dir):
    text = report.write(results_dir).read_text()
    c = row(text, "compare-20261125-100000")
    assert "calibrate</span> · virtual clock" in c
    for count in ("identical: 2", "slower: 1", "changed (tiny): 1", "nondeterministic: 1"):
        assert count in c
    assert "status 1: a figure got worse" in c
    moved = c[c.index('class="moved"'):c.index('class="diffs"')]
    assert "kbuild base" in moved and "10 → 12.5 s, ×1.25 (+25 %)" in moved
    assert 'class="worse"' in moved and "entry cost" in moved and "×1.00382" in moved
    assert "grep base" not in moved and "close slope" not in moved
    # The sides: links to the folders inside the results folder, not others.
    assert 'href="calibrate-20261120-100000/"' in c and 'href="grep-20261121-100000/"' in c
    assert "grep-20261001-100000 (not in this results folder)" in c
    # The first five differences of the sides' meta.json.
    assert "kernel.release</code>: 6.12.test-lab → 6.12.other-lab" in c
    assert "kernel.key4" in c and "kernel.key5" not in c and "and 1 more" in c
    assert "compare.json holds no list of rows" in row(text, "compare-20261119-100000")
    assert "same: 1" in row(text, "compare-20261118-100000")


def test_compare_side_values():
    assert report.side_value({"a_value": 3.0, "a": [1, 9]}, "a") == 3.0
    assert report.side_value({"a": [1, 2, 9]}, "a") == 2
    assert report.side_value({"b": [1, 2]}, "b") == 1.5
    assert report.side_value({"b": "x"}, "b") is None
    assert report.ratio_text(0.5) == "×0.5 (-50 %)" and report.ratio_text(None) == ""


def test_every_reference_is_relative_and_exists(results_dir, tmp_path):
    """From the results folder and from a page written elsewhere alike."""
    for page in (results_dir / "index.html", tmp_path / "elsewhere" / "page.html"):
        page.parent.mkdir(exist_ok=True)
        report.write(results_dir, page)
        refs = Page(page.read_text()).refs
        assert refs
        for ref in refs:
            assert not urllib.parse.urlsplit(ref).scheme, ref
            path = page.parent / urllib.parse.unquote(ref)
            assert path.exists(), ref
        assert any("hist%20pipe.png" in r for r in refs)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "lablib.lab", "report", *map(str, args)],
                          capture_output=True, text=True)


def test_cli(results_dir, tmp_path):
    out = run_cli(results_dir)
    assert out.returncode == 0, out.stderr
    assert (results_dir / "index.html").is_file()
    out = run_cli(results_dir, "-o", tmp_path / "new" / "other.html")
    assert out.returncode == 0, out.stderr
    assert "smp-20261123-100000" in (tmp_path / "new" / "other.html").read_text()


def test_cli_missing_results_folder(tmp_path):
    out = run_cli(tmp_path / "nothing", "-o", tmp_path / "page.html")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "nothing" in out.stderr
    assert not (tmp_path / "page.html").exists()


def test_empty_results_folder(tmp_path):
    (tmp_path / "r").mkdir()
    text = report.write(tmp_path / "r").read_text()
    assert "No result folders here yet" in text and "No comparisons yet" in text


# --- in a real browser ------------------------------------------------------------

# No skip without Chromium: scripts/deps.sh installs it, and a page that no
# browser loaded is not tested.
def test_chromium_is_installed():
    assert report.chromium(), "no chromium on PATH: scripts/deps.sh installs it"


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_browser_loads_every_image_and_link(results_dir, tmp_path):
    page = report.write(results_dir, check=True)
    found = report.check_page(page)
    pngs = [p for p in results_dir.rglob("*.png") if not p.parent.is_symlink()]
    assert len(found["images"]) == len(pngs) == 6
    assert all(i["width"] > 0 for i in found["images"])
    assert found["broken_images"] == [] and found["broken_links"] == []
    assert len(found["links"]) > 20
    # Every folder is listed, as the browser lays the page out.
    hrefs = {link["href"] for link in found["links"]}
    assert {f"{name}/" for name in RUNS + COMPARES} <= hrefs
    p = Page(report.dump_dom(page))
    assert [name for _, name, _ in p.rows] == RUNS + COMPARES
    shot = report.screenshot(report.write(results_dir), tmp_path / "shot.png")
    assert shot.stat().st_size > 10_000
    assert png_size(shot) == (1280, 900)


def test_browser_check_catches_a_missing_file(results_dir):
    """The check can fail: a plot and a file gone after the page was written."""
    page = report.write(results_dir, check=True)
    (results_dir / "grep-20261121-100000" / "grep.png").unlink()
    (results_dir / "grep-20261121-100000" / "report.txt").unlink()
    found = report.check_page(page)
    assert found["broken_images"] == ["grep-20261121-100000/grep.png"]
    assert sorted(found["broken_links"]) == ["grep-20261121-100000/grep.png",
                                             "grep-20261121-100000/report.txt"]


def test_browser_filter_hides_other_experiments(results_dir):
    page = report.write(results_dir)
    p = Page(report.dump_dom(page, "grep"))
    shown = [name for _, name, hidden in p.rows if not hidden]
    assert shown == ["grep-20261121-100000"]
    # A compare shows under the experiment it compared too.
    p = Page(report.dump_dom(page, "calibrate"))
    shown = [name for _, name, hidden in p.rows if not hidden]
    assert shown == ["calibrate-20261120-100000", "compare-20261125-100000"]
    p = Page(report.dump_dom(page))
    assert all(not hidden for *_, hidden in p.rows)


def test_cli_screenshot(results_dir, tmp_path):
    out = run_cli(results_dir, "--screenshot", tmp_path / "s.png")
    assert out.returncode == 0, out.stderr
    assert png_size(tmp_path / "s.png") == (1280, 900)
    assert not [p for p in results_dir.iterdir() if p.name.startswith(".")]
    # A plot cut short: listed, but the browser decodes nothing of it.
    (results_dir / "smp-20261123-100000" / "smp.png").write_bytes(PNG_SIGNATURE + b"cut")
    out = run_cli(results_dir, "--screenshot", tmp_path / "s.png")
    assert out.returncode == 1
    assert "image smp-20261123-100000/smp.png did not load" in out.stderr


def test_root_runs_chromium_without_sandbox(monkeypatch, tmp_path):
    """As root Chromium refuses to start sandboxed: --no-sandbox then."""
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(report_browser, "chromium", lambda: "/bin/chromium")
    monkeypatch.setattr(report_browser.subprocess, "run", fake_run)
    report_browser.dump_dom(tmp_path / "p.html")
    assert ("--no-sandbox" in calls[0]) == (os.geteuid() == 0)
    assert "--headless=new" in calls[0] and calls[0][-1].startswith("file://")


def test_an_ab_folder_shows_its_boots_not_the_host(tmp_path):
    """make ab's folder is written on the host: its row names the kernels,
    clock and machine of its boots (runs/*/*/meta.json), what it ran, each
    side's settings and the compare it ended in; one whose boots are not
    all there says so."""
    root = tmp_path / "results"
    settings = {"of": "calibrate", "clock": "virtual", "runs": 2, "a": {},
                "b": {"APPEND": "preempt=full"}, "order": ["a", "b", "b", "a"]}
    host = {"release": "6.18.host", "preemption": "dynamic"}
    ab = write_meta(root / "ab-20261127-100000", "ab", settings, date=date("ab-20261127-100000"),
                    kernel=host, machine={"cpus": 2, "clock": None})
    for k, (side, how) in enumerate(zip("abba", ["voluntary", "full", "full", "voluntary"]), 1):
        boot = meta(ab / "runs" / f"0{k}-{side}" / f"calibrate-2026112{k}-100000", "calibrate",
                    kernel={"release": "6.12.test-lab", "variant": "stock", "preemption": how})
        (boot.parent / "latest-calibrate").symlink_to(boot.name)
    compared = meta(root / "compare-20261127-110000", "compare")
    (ab / "compare").symlink_to(f"../{compared.name}")
    text = report.write(root).read_text()
    r = row(text, "ab-20261127-100000")
    assert "6.18.host" not in r and "6.12.test-lab" in r and "stock, voluntary | stock, full" in r
    assert "virtual (shift 0)" in r and "1 CPU, tcg (QEMU 10.0.2), no PMU" in r
    assert "calibrate: 2 boot(s) a side, order A B B A" in r
    assert "A: as built" in r and "B: APPEND=preempt=full" in r
    assert "compared in compare-20261127-110000" in r
    shutil.rmtree(ab / "runs" / "04-a")
    (ab / "compare").unlink()
    r = row(report.write(root).read_text(), "ab-20261127-100000")
    assert "3 of 4 boots have a result" in r and "compared in" not in r


def ab_and_its_compare(root):
    """make ab's folder of a calibrate A/B and the compare it ended in, as
    compare writes compare.json: the design, the ab folder, each row's band
    and its kind."""
    ab = write_meta(root / "ab-20261127-100000", "ab",
                    {"of": "calibrate", "clock": "virtual", "runs": 2, "a": {},
                     "b": {"APPEND": "preempt=full"}, "order": ["a", "b", "b", "a"]},
                    date=date("ab-20261127-100000"))
    d = meta(root / "compare-20261127-110000", "compare")
    rows = [{"figure": "getppid slope (p10 fit)", "unit": "ns/loop", "a_value": 3.0,
             "b_value": 3.00004, "verdict": "changed (under band)", "band_rel": 2e-5,
             "band_abs": 0.0, "band_source": "measured", "band": "±0.002 % measured"},
            {"figure": "cost of a delayed call", "unit": "ns", "a_value": 131.0,
             "b_value": 131.0, "verdict": "identical", "band_rel": 0.0, "band_abs": 0.01,
             "band_source": "measured"},
            {"figure": "pipe A-B p50", "unit": "ns", "a_value": 10.0, "b_value": 10.5,
             "verdict": "inconclusive", "band_rel": 1e-3, "band_abs": 0.0,
             "band_source": "assumed"}]
    c = {"experiment": "compare", "of": "calibrate", "clock": "virtual", "design": "A/B",
         "ab": str(ab), "a": {"folders": []}, "b": {"folders": []}, "rows": rows, "status": 2,
         "differences": [{"key": "kernel.cmdline", "a": "", "b": "preempt=full",
                          "note": "the words only one side has"}]}
    (d / "compare.json").write_text(json.dumps(c))
    plot(d / "compare.png", dpi=300)
    # A plot the size the lab's are (900 x 600 px), not a stand-in's.
    plot(root / "calibrate-20261120-100000" / "calibration.png", dpi=300)
    (ab / "compare").symlink_to(f"../{d.name}")
    return ab, d


def test_browser_shows_a_compare_as_a_person_reads_it(results_dir):
    """In headless Chromium, filtered to calibrate: the rows the filter
    shows are as many as its menu and its count say (make ab's row and the
    compares of calibrate among them); a compare row says A/B, links to its
    ab folder, gives each moved figure's band and kind and counts the kinds;
    a thumbnail is readable and a click opens a larger view of it."""
    ab, compared = ab_and_its_compare(results_dir)
    page = report.write(results_dir, check=True)
    found = report.check_page(page, "calibrate")
    shown = [r["name"] for r in found["rows"] if not r["hidden"]]
    assert shown == [ab.name, "calibrate-20261120-100000", compared.name,
                     "compare-20261125-100000"]
    assert f"calibrate ({len(shown)})" in found["options"]
    assert found["shown"] == f"{len(shown)} shown"
    text = next(r["text"] for r in found["rows"] if r["name"] == compared.name)
    assert "A/B of calibrate · virtual clock" in text
    assert f"ran by make ab: {ab.name}" in text
    assert "changed (under band) getppid slope (p10 fit)" in text
    assert "band ±0.002 % measured" in text
    assert "bands: 2 measured, 1 assumed" in text
    assert "kernel.cmdline: (none) → preempt=full" in text
    assert f'href="{ab.name}/"' in row(page.read_text(), compared.name)
    view = found["view"]
    assert view["open"] and view["src"] == "calibrate-20261120-100000/calibration.png"
    assert view["thumb"] >= 200 and view["width"] >= 2 * view["thumb"]
    every = report.check_page(page)
    assert f"all ({len(every['rows'])})" in every["options"]
    assert every["shown"] == f"{len(every['rows'])} shown"
