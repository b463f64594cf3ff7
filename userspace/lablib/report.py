"""The results page: one self-contained HTML file (results/index.html by
default, 'make report') listing every result folder of a results folder,
newest first: what ran, when, on which kernel, lab commit, clock and
machine, its headline figures and whether they were exact, links to its
files and its plots as thumbnails; and every 'compare' folder: which
experiment on which clock, the folders of each side, the verdicts counted,
the figures that moved with B / A, and what differs between the sides'
meta.json.  *.incomplete folders are named, not listed.  No network: the
CSS and the few lines of JS (the filter by experiment) are inline, every
link is relative.

    python -m lablib.report [RESULTS] [-o FILE] [--screenshot PNG]

No RESULTS folder: one line, exit status 2.  --screenshot also loads the
page in headless Chromium, checks that every image loaded and every
relative link leads to a file (exit 1 if not), and saves a picture of it.
The browser helpers (lablib.report_browser: chromium, check_page,
screenshot) are the test's too (tests/host/test_report.py); the rows of
compare and make ab folders and the page's value formatting are in
lablib.report_compare."""
import datetime
import os
import pathlib
import re
import sys

from lablib import cli, figures, results
from lablib.report_browser import (BROWSER_TIMEOUT, CHECK_MARK, check_page,  # noqa: F401
                                   chromium, dump_dom, screenshot)
from lablib.report_compare import (MOVED, STATUS, VERDICTS, _num, ab_info,  # noqa: F401
                                   clock_text, commit_text, compare_info, fmt, guest_meta,
                                   href, kernel_text, machine_text, ratio_text, short,
                                   side_value)

PAGE = "index.html"
TEMPLATE = "report.html"
# The workload sweeps' experiments (workloads/README.md); any summary.json
# with a "measures" object is read as one too.
# Headline figures a run shows at most (the rest is in its summary).
FIGURE_LINES = 6
# A folder's date from its name, <experiment>-<date>-<time>[-N] (local time).
NAME_DATE = re.compile(r"-(\d{8})-(\d{6})(?:-\d+)?$")

def seconds(v):
    """A time in s, in the unit that suits it (s, ms, µs, ns)."""
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(v) >= scale:
            return f"{fmt(v / scale)} {unit}"
    return f"{fmt(v * 1e9)} ns"


def size(n):
    """A file size in B, kB, MB, GB."""
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} GB"

def folder_date(folder, meta=None):
    """When @folder's run started: meta.json's date (UTC when it names no
    zone), else the date in its name (the local time liblab names it by),
    else its modification time; an aware datetime in UTC."""
    date = (meta or {}).get("date")
    if isinstance(date, str):
        try:
            dt = datetime.datetime.fromisoformat(date)
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=datetime.timezone.utc)
            return dt.astimezone(datetime.timezone.utc)
        except ValueError:
            pass
    m = NAME_DATE.search(folder.name)
    if m:
        try:
            dt = datetime.datetime.strptime("".join(m.groups()), "%Y%m%d%H%M%S")
            return dt.astimezone(datetime.timezone.utc)
        except ValueError:
            pass
    return datetime.datetime.fromtimestamp(folder.stat().st_mtime, datetime.timezone.utc)

def listing(folder, page_dir):
    """The files and folders at the top of @folder (hidden ones left out),
    and its PNG plots: ([{name, href, size, folder}], [{name, href}])."""
    files, plots = [], []
    for p in sorted(folder.iterdir(), key=lambda p: p.name):
        if p.name.startswith("."):
            continue
        try:
            is_dir = p.is_dir()
            nbytes = None if is_dir else p.stat().st_size
        except OSError:
            continue
        slash = "/" if is_dir else ""
        entry = {"name": p.name + slash, "href": href(p, page_dir) + slash,
                 "size": None if is_dir else size(nbytes), "folder": is_dir}
        files.append(entry)
        if not is_dir and p.suffix.lower() == ".png":
            plots.append({"name": p.name, "href": entry["href"]})
    return files, plots


# --- headline figures ------------------------------------------------------------

def calibrate_figures(summary):
    """ns per loop and R² of each system call's p10 fit, and the entry cost."""
    lines = []
    fits = summary.get("fits")
    for name, fit in sorted(fits.items() if isinstance(fits, dict) else ()):
        if not isinstance(fit, dict) or not _num(fit.get("slope")):
            continue
        line = f"{name}: {fit['slope']:.3f} ns/loop"
        if _num(fit.get("r2")):
            line += f", R² {fit['r2']:.4f}"
        lines.append(line)
    if _num(summary.get("entry_ns")):
        lines.append(f"entry {fmt(summary['entry_ns'])} ns")
    return lines, None


def base_point(points):
    """A sweep's point without delay (setting or loops 0), else its first."""
    for p in points:
        if p.get("setting") == 0 or (p.get("setting") is None and p.get("loops") == 0):
            return p
    return points[0] if points else None


def sweep_figures(summary):
    """Per measure: the base throughput and time a unit, the slowdown at
    the largest delay; and whether every point was exact: (lines, exact)
    with exact None (no point says), True, False or "K of N"."""
    lines = []
    if _num(summary.get("ns_per_loop")):
        lines.append(f"calibration: {summary['ns_per_loop']:.3f} ns/loop")
    measures = summary.get("measures")
    n_exact = n_told = 0
    for name, m in (measures.items() if isinstance(measures, dict) else ()):
        if not isinstance(m, dict):
            continue
        points = [p for p in (m.get("points") or []) if isinstance(p, dict)]
        model = m.get("model") if isinstance(m.get("model"), dict) else {}
        base = base_point(points)
        told = [p["exact"] for p in points if isinstance(p.get("exact"), bool)]
        n_told += len(told)
        n_exact += sum(told)
        if base is None:
            continue
        line = f"{name}:"
        if _num(base.get("mean")):
            line += f" {fmt(base['mean'])} {m.get('unit') or base.get('unit') or ''}".rstrip()
        each = model.get("base_seconds_per_unit", base.get("seconds_per_unit"))
        if _num(each):
            line += f", {seconds(each)} each"
        if _num(model.get("measured_slowdown")) and _num(model.get("max_added_ns")):
            line += (f"; ×{fmt(model['measured_slowdown'])} at "
                     f"+{fmt(model['max_added_ns'])} ns")
        if told and not all(told):
            line += f" [{sum(told)} of {len(told)} exact]"
        lines.append(line)
    if not n_told:
        exact = None
    elif n_exact in (0, n_told):
        exact = n_exact == n_told
    else:
        exact = f"{n_exact} of {n_told}"
    return lines, exact


def figure_line(f):
    """A figure of lablib.figures as one line, "NAME: VALUE UNIT"."""
    v, unit = f["value"], f.get("unit") or ""
    if unit == "s":
        value = seconds(v)
    elif unit == "x":
        value = f"×{fmt(v)}"
    elif unit in ("R^2", "ratio"):
        value = fmt(v)
    else:
        value = f"{fmt(v)} {unit}".rstrip()
    return f"{str(f['figure']).replace('R^2', 'R²')}: {value}"


def reader_figures(folder, reader):
    """The headline figures lablib.figures' @reader finds in @folder, at
    most FIGURE_LINES of them, and a note if it cannot read them."""
    try:
        found = reader(folder)
    except figures.NotAResult as e:
        return [], f"not analysed or not as expected: {cli.message(e)}"
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
        return [], f"summary not as expected ({type(e).__name__}: {cli.message(e)})"
    shown = [f for f in found if f.get("headline") and _num(f.get("value"))]
    lines = [figure_line(f) for f in shown[:FIGURE_LINES]]
    if len(shown) > FIGURE_LINES:
        lines.append(f"… and {len(shown) - FIGURE_LINES} more")
    return lines, None


def generic_figures(summary, limit=4):
    """The first few numeric top-level values, and a top-level "exact"."""
    lines = [f"{k}: {fmt(v)}" for k, v in summary.items() if _num(v)][:limit]
    if lines and isinstance(summary.get("unit"), str):
        lines.append(f"(unit {summary['unit']})")
    exact = summary.get("exact") if isinstance(summary.get("exact"), bool) else None
    return lines, exact


def headline(meta, folder):
    """The headline lines of @folder, whether it was exact (see
    sweep_figures) and a note: (lines, exact, note).  calibrate's and the
    sweeps' from their summary.json, in a few words; the other experiments
    lablib.figures reads through it; any other summary.json's first numbers."""
    experiment = meta.get("experiment")
    sweep = figures.is_sweep(meta)
    reader = figures.READERS.get(figures.experiment_of(meta))
    path = folder / "summary.json"
    if not sweep and experiment != "calibrate" and reader:
        lines, note = reader_figures(folder, reader)
        return lines, None, note
    if not path.is_file():
        if experiment == "calibrate" or sweep:
            return [], None, "not analysed yet: no summary.json"
        return [], None, None
    try:
        summary = results.read_json(path)
    except (OSError, ValueError) as e:
        return [], None, f"summary.json unreadable: {cli.message(e)}"
    if not isinstance(summary, dict):
        return [], None, "summary.json is not a JSON object"
    if experiment == "calibrate":
        lines, exact = calibrate_figures(summary)
    elif sweep or isinstance(summary.get("measures"), dict):
        lines, exact = sweep_figures(summary)
    else:
        lines, exact = generic_figures(summary)
    return lines, exact, None

# --- the whole results folder -------------------------------------------------

def is_compare(folder, meta):
    return (meta or {}).get("experiment") == "compare" or (
        meta is None and folder.name.startswith("compare-"))


def entry(folder, root, page_dir):
    """What the page shows of result folder @folder of results folder @root."""
    files, plots = listing(folder, page_dir)
    e = {"name": folder.name, "href": href(folder, page_dir) + "/", "files": files,
         "plots": plots, "error": None, "figures": [], "exact": None, "note": None,
         "kernel": "-", "kernel_how": "", "commit": "-", "commit_full": "", "clock": "-",
         "machine": "-", "machine_title": "", "badge": "", "of": None}
    try:
        meta = results.read_meta(folder)
    except (OSError, ValueError) as err:
        meta = None
        # The file's name, not its whole path: the row names the folder.
        e["error"] = cli.message(err).replace(f"{folder}{os.sep}", "")
    date = folder_date(folder, meta)
    e["sort"] = date.timestamp()
    e["date"] = date.strftime("%Y-%m-%d %H:%M:%S UTC")
    e["compare"] = is_compare(folder, meta)
    if meta is None:
        e["experiment"] = e["badge"] = "unreadable"
    else:
        e["experiment"] = str(meta.get("experiment") or "?")
        e["commit"], e["commit_full"] = commit_text(meta)
    if e["compare"]:
        e["badge"] = e["badge"] or "compare"
        e.update(compare_info(folder, root, page_dir))
    elif meta is not None and e["experiment"] == "ab":
        e.update(ab_info(folder, meta))
    elif meta is not None:
        kind, guest = guest_meta(folder, meta)
        e["kernel"], e["kernel_how"] = kernel_text(guest)
        e["clock"] = clock_text(kind, guest)
        e["machine"], e["machine_title"] = machine_text(guest)
        e["figures"], e["exact"], e["note"] = headline(meta, folder)
    return e


def scan(folder, page_dir):
    """The result folders of results folder @folder, newest first: (runs,
    compares, incomplete), incomplete the names of *.incomplete folders.
    latest-* links, hidden entries and folders without meta.json are left
    out."""
    runs, compares, incomplete = [], [], []
    for p in sorted(folder.iterdir(), key=lambda p: p.name):
        if p.name.startswith((".", "latest-")) or p.is_symlink() or not p.is_dir():
            continue
        if p.name.endswith(".incomplete"):
            incomplete.append(p.name)
            continue
        if not (p / "meta.json").exists():
            continue
        e = entry(p, folder, page_dir)
        (compares if e["compare"] else runs).append(e)
    # A compare that make ab ran links to its ab folder (by compare.json's
    # "ab", else by the ab folder's link 'compare').
    by_name = {e["name"]: e for e in compares}
    for e in runs:
        c = by_name.get(e.get("compared"))
        if c is not None and not c.get("ab"):
            c["ab"] = {"name": e["name"], "title": e["name"], "href": e["href"]}
    for found in (runs, compares):
        found.sort(key=lambda e: (e["sort"], e["name"]), reverse=True)
    return runs, compares, incomplete


def environment():
    import jinja2
    loader = jinja2.FileSystemLoader(pathlib.Path(__file__).parent / "templates")
    return jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def render(folder, page, check=False):
    """The page, for results folder @folder, to be written at @page; with
    @check, it carries the browser check's script (check_page)."""
    folder, page = pathlib.Path(folder), pathlib.Path(page)
    page_dir = page.resolve().parent
    runs, compares, incomplete = scan(folder, page_dir)
    # The filter shows a row under its experiment and under the one it
    # compared or ran (a compare's or make ab's "of"): each option counts
    # the rows it shows.
    experiments = {}
    for e in runs + compares:
        for name in {e["experiment"], e.get("of")} - {None}:
            experiments[name] = experiments.get(name, 0) + 1
    now = datetime.datetime.now(datetime.timezone.utc)
    return environment().get_template(TEMPLATE).render(
        folder=str(folder.resolve()), runs=runs, compares=compares, incomplete=incomplete,
        experiments=sorted(experiments.items()), generated=now.strftime("%Y-%m-%d %H:%M UTC"),
        check=check, check_mark=CHECK_MARK)


def write(folder, page=None, check=False):
    """Write the page for @folder to @page (default FOLDER/index.html)
    atomically, making its folder if need be; returns its path."""
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(2, "no such results folder", str(folder))
    page = pathlib.Path(page) if page else folder / PAGE
    page.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(page, render(folder, page, check=check))
    return page
def check_in_browser(folder, page):
    """The browser check of the page for @folder that sits at @page: a copy
    with the check script, written beside it (hidden, removed after)."""
    page = pathlib.Path(page)
    probe = page.with_name(f".{page.stem}.check{os.getpid()}.html")
    try:
        write(folder, probe, check=True)
        return check_page(probe)
    finally:
        probe.unlink(missing_ok=True)


# --- the command ---------------------------------------------------------------

def add_args(p):
    p.add_argument("results", nargs="?", default="results", metavar="RESULTS",
                   help="the results folder (default: results)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the page (default: RESULTS/index.html)")
    p.add_argument("--screenshot", metavar="PNG",
                   help="also check the page in headless Chromium (every image loads, "
                        "every link leads to a file) and save a 1280x900 picture of it")


def work(args):
    folder = pathlib.Path(args.results)
    if not folder.is_dir():
        print(f"lablib.report: no results folder '{folder}'", file=sys.stderr)
        return 2
    page = write(folder, args.output)
    print(f"results page: {page}")
    if args.screenshot:
        found = check_in_browser(folder, page)
        print(f"browser check: {len(found['images'])} images, {len(found['links'])} links")
        png = screenshot(page, args.screenshot)
        print(f"screenshot: {png}")
        bad = [f"image {s} did not load" for s in found["broken_images"]]
        bad += [f"link {h} leads to nothing" for h in found["broken_links"]]
        if bad:
            print(f"lab report: error: {'; '.join(bad)}", file=sys.stderr)
            return 1
    return 0


def main(argv=None, prog="lab report"):
    return cli.main(
        "The results page: every result folder of RESULTS, newest first, with its "
        "headline figures, files and plots, and every compare folder's verdicts.",
        "lab report results -o results/index.html", add_args, work,
        argv=argv, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
