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
The browser helpers (chromium, check_page, screenshot) are the test's too
(tests/host/test_report.py)."""
import datetime
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

from lablib import cli, figures, results, text

PAGE = "index.html"
TEMPLATE = "report.html"
# The workload sweeps' experiments (workloads/README.md); any summary.json
# with a "measures" object is read as one too.
SWEEPS = set(figures.SWEEPS)
# compare.json's verdicts, in the order the page counts them, and the
# colour of each (ok, warn, bad).
VERDICTS = {"identical": "ok", "same": "ok", "faster": "ok", "changed (under band)": "warn",
            "changed (tiny)": "warn", "changed": "warn", "higher": "warn", "lower": "warn",
            "slower": "bad", "inconclusive": "warn", "nondeterministic": "bad"}
# The verdicts of a figure that moved: the page names those figures.
MOVED = {"changed (under band)", "changed (tiny)", "changed", "faster", "slower", "higher",
         "lower"}
# The kinds of band a verdict is held to (compare_verdicts), as the page
# names them: measured between boots, assumed, or chosen with --band.
BAND_KINDS = {"measured": "measured", "assumed": "assumed", "option": "chosen"}
# compare's exit status, as compare.json's "status" records it.
STATUS = {0: ("ok", "no figure worse"), 1: ("bad", "a figure got worse"),
          2: ("warn", "inconclusive or nondeterministic")}
# How much of a compare the page shows: the differences of the sides'
# meta.json, and the figures that moved (the rest is in its report.txt).
DIFFERENCES = 5
MOVED_SHOWN = 6
# Headline figures a run shows at most (the rest is in its summary).
FIGURE_LINES = 6
# A folder's date from its name, <experiment>-<date>-<time>[-N] (local time).
NAME_DATE = re.compile(r"-(\d{8})-(\d{6})(?:-\d+)?$")
BROWSER_TIMEOUT = 120
CHECK_MARK = "LAB-CHECK"


def _num(v):
    """A JSON number (not a flag)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(v):
    """A figure as the page shows it: four significant digits, thousands
    separators from 10,000 on."""
    return text.num(v, 4) if _num(v) else str(v)


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


def short(v, width=48):
    """@v (a string, or any JSON value) in at most @width characters."""
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= width else s[:width - 1] + "…"


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


def href(path, page_dir):
    """The relative URL of @path from a page in @page_dir."""
    rel = os.path.relpath(path, page_dir)
    return urllib.parse.quote(rel.replace(os.sep, "/"))


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


# --- what meta.json says ---------------------------------------------------

def guest_meta(folder, meta):
    """(clock kind, the meta.json that names it): the folder's own, or for
    a suite run from the host its guests' (figures.clock_of); (None, @meta)
    if none names a clock."""
    try:
        return figures.clock_of(folder, meta)
    except (figures.NotAResult, OSError, ValueError, AttributeError, TypeError):
        return None, meta


def kernel_text(meta):
    """The kernel's release, and its variant and preemption model."""
    release = results.get(meta, "kernel", "release") or "?"
    how = [results.get(meta, "kernel", k) for k in ("variant", "preemption")]
    return str(release), ", ".join(str(h) for h in how if h)


def commit_text(meta):
    """The lab commit, short, and whole (for the tooltip)."""
    commit = meta.get("lab_commit")
    if not isinstance(commit, str) or not commit:
        return "-", ""
    dirty = commit.endswith("-dirty")
    return commit[:7] + ("-dirty" if dirty else ""), commit


def clock_text(kind, meta):
    """The clock the run measured on, with the virtual clock's shift."""
    if not kind:
        return "?"
    if kind == "virtual":
        shift = results.get(meta, "machine", "clock", "shift")
        return f"virtual (shift {'?' if shift is None else shift})"
    return str(kind)


def machine_text(meta):
    """The machine in a few words, and the longer story for the tooltip."""
    machine = meta.get("machine")
    if not isinstance(machine, dict):
        return "?", ""
    parts = []
    cpus = machine.get("cpus")
    if isinstance(cpus, int) and not isinstance(cpus, bool):
        parts.append(f"{cpus} CPU{'' if cpus == 1 else 's'}")
    if machine.get("accelerator"):
        acc = str(machine["accelerator"])
        if machine.get("qemu"):
            acc += f" (QEMU {machine['qemu']})"
        parts.append(acc)
    if isinstance(machine.get("pmu"), bool):
        parts.append("PMU" if machine["pmu"] else "no PMU")
    title = "; ".join(str(machine[k]) for k in ("cpu_model", "accelerator_why")
                      if machine.get(k))
    return ", ".join(parts) or "?", title


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
    reader = figures.READERS.get(figures.experiment_of(meta))
    path = folder / "summary.json"
    if experiment not in SWEEPS and experiment != "calibrate" and reader:
        lines, note = reader_figures(folder, reader)
        return lines, None, note
    if not path.is_file():
        if experiment == "calibrate" or experiment in SWEEPS:
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
    elif experiment in SWEEPS or isinstance(summary.get("measures"), dict):
        lines, exact = sweep_figures(summary)
    else:
        lines, exact = generic_figures(summary)
    return lines, exact, None


# --- make ab folders ----------------------------------------------------------

def ab_side(settings):
    """A side of make ab in a few words: its VARIANT=, APPEND=, ARGS=."""
    if not isinstance(settings, dict) or not settings:
        return "as built"
    return " ".join(f"{k}={v}" for k, v in settings.items())


def ab_info(folder, meta):
    """What the page shows of make ab's folder @folder: the host ran it,
    so the kernels, clock and machine are its boots' (runs/*/*/meta.json),
    its figures what it ran (the experiment, boots a side and their order,
    each side's settings, the compare it ended in)."""
    settings = meta.get("settings") if isinstance(meta.get("settings"), dict) else {}
    boots = []
    for m in sorted((folder / "runs").glob("*/*/meta.json")):
        if m.parent.is_symlink():
            continue
        try:
            boots.append(results.read_meta(m.parent))
        except (OSError, ValueError):
            continue
    info = {"figures": [], "exact": None, "note": None,
            "of": str(settings["of"]) if settings.get("of") else None}
    runs, order = settings.get("runs"), settings.get("order")
    what = f"{settings.get('of') or '?'}: {runs if runs is not None else '?'} boot(s) a side"
    if isinstance(order, list) and order:
        what += ", order " + " ".join(str(o).upper() for o in order)
    info["figures"] = [what, f"A: {ab_side(settings.get('a'))}",
                       f"B: {ab_side(settings.get('b'))}"]
    compared = folder / "compare"
    if compared.is_dir():
        info["compared"] = compared.resolve().name
        info["figures"].append(f"compared in {info['compared']}")
    else:
        info["note"] = "no compare yet"
    if isinstance(order, list) and len(boots) < len(order):
        info["note"] = f"{len(boots)} of {len(order)} boots have a result"
    if boots:
        kernels = [kernel_text(b) for b in boots]
        info["kernel"] = " | ".join(dict.fromkeys(k[0] for k in kernels))
        info["kernel_how"] = " | ".join(dict.fromkeys(k[1] for k in kernels))
        kind, guest = guest_meta(folder, boots[0])
        info["clock"] = clock_text(kind, guest)
        info["machine"], info["machine_title"] = machine_text(guest)
    else:
        info["clock"] = str(settings.get("clock") or "?")
    return info


# --- compare folders -----------------------------------------------------------

def side_value(row, side):
    """A compare row's value of side @side ("a" or "b"): its a_value (the
    median of the side's runs), else "a" itself, else the median of its list."""
    v = row.get(f"{side}_value", row.get(side))
    if isinstance(v, list):
        v = sorted(x for x in v if _num(x))
        v = None if not v else (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
    return v if _num(v) else None


def ratio_text(ratio):
    """B / A as "×1.025 (+2.5 %)"."""
    if not _num(ratio):
        return ""
    return f"×{ratio:.6g} ({100 * (ratio - 1):+.3g} %)"


def side_folder(path, root, page_dir):
    """One folder of a compare's side: {name, title, href}, href None
    unless it is a folder inside results folder @root.  A relative path is
    looked for from where compare ran (the current folder, or the results
    folder's parent as 'make compare' runs it) and in @root."""
    p = pathlib.Path(path)
    tries = [p] if p.is_absolute() else [pathlib.Path.cwd() / p, root.parent / p, root / p]
    tries.append(root / p.name)
    link = None
    for c in tries:
        c = c.resolve()
        if c.is_dir() and c.is_relative_to(root.resolve()):
            link = href(c, page_dir) + "/"
            break
    return {"name": p.name or str(path), "title": str(path), "href": link}


def compare_info(folder, root, page_dir):
    """What the page shows of compare folder @folder's compare.json: {of,
    clock, sides, rows, counts, moved, more_moved, differences,
    more_differences, status, note}.  compare.json is the object compare
    writes, or a plain list of its rows."""
    info = {"of": None, "clock": None, "sides": [], "rows": [], "counts": [], "moved": [],
            "more_moved": 0, "differences": [], "more_differences": 0, "status": None,
            "note": None, "design": None, "ab": None, "bands": []}
    path = folder / "compare.json"
    if not path.is_file():
        info["note"] = "no compare.json"
        return info
    try:
        data = results.read_json(path)
    except (OSError, ValueError) as e:
        info["note"] = f"compare.json unreadable: {cli.message(e)}"
        return info
    rows = data
    if isinstance(data, dict):
        info["of"] = str(data["of"]) if data.get("of") else None
        info["clock"] = str(data["clock"]) if data.get("clock") else None
        info["design"] = data.get("design") if data.get("design") in ("A/A", "A/B") else None
        if isinstance(data.get("ab"), str):
            info["ab"] = side_folder(data["ab"], root, page_dir)
        for side in ("a", "b"):
            got = results.get(data, side, "folders")
            if isinstance(got, list):
                info["sides"].append({
                    "label": side.upper(), "describe": str(results.get(data, side, "describe")
                                                           or ""),
                    "folders": [side_folder(str(f), root, page_dir) for f in got]})
        diffs = [d for d in data.get("differences") or [] if isinstance(d, dict)]
        info["differences"] = [{"key": str(d.get("key", "?")), "a": side_text(d.get("a")),
                                "b": side_text(d.get("b")), "note": str(d.get("note") or "")}
                               for d in diffs[:DIFFERENCES]]
        if info["design"] is None and "differences" in data:
            info["design"] = "A/B" if any(d.get("note") != "varies within a side"
                                          for d in diffs) else "A/A"
        info["more_differences"] = max(0, len(diffs) - DIFFERENCES)
        status = data.get("status")
        if status in STATUS:
            info["status"] = {"code": status, "class": STATUS[status][0],
                              "text": STATUS[status][1]}
        rows = next((data[k] for k in ("rows", "figures") if isinstance(data.get(k), list)),
                    None)
    if not isinstance(rows, list):
        info["note"] = "compare.json holds no list of rows"
        return info
    for r in rows:
        if not isinstance(r, dict):
            continue
        a, b = side_value(r, "a"), side_value(r, "b")
        ratio = r.get("ratio")
        if not _num(ratio) and a and b is not None:
            ratio = b / a
        verdict = str(r.get("verdict") or "?")
        info["rows"].append({
            "figure": str(r.get("figure", "?")), "verdict": verdict,
            "class": VERDICTS.get(verdict, "warn"), "unit": str(r.get("unit") or ""),
            "a": fmt(a) if a is not None else "-", "b": fmt(b) if b is not None else "-",
            "ratio": ratio_text(ratio), "worse": r.get("worse") is True,
            "band": band_of_row(r), "band_kind": BAND_KINDS.get(r.get("band_source"), "")})
    if rows and not info["rows"]:
        info["note"] = "compare.json has no rows of figures"
    info["counts"] = verdict_counts(info["rows"])
    info["bands"] = band_counts(info["rows"])
    moved = [r for r in info["rows"] if r["verdict"] in MOVED]
    info["moved"], info["more_moved"] = moved[:MOVED_SHOWN], max(0, len(moved) - MOVED_SHOWN)
    return info


def side_text(v):
    """One side of a difference: "(none)" for a side without the setting."""
    return "(none)" if v in (None, "", []) else short(v)


def band_of_row(r):
    """A compare row's band as compare wrote it ("+-0.05 % measured"), or
    from its band_rel, band_abs and band_source; "" if it has none."""
    if isinstance(r.get("band"), str):
        return r["band"]
    rel, ab = r.get("band_rel"), r.get("band_abs")
    kind = BAND_KINDS.get(r.get("band_source"), "")
    if _num(rel) and rel:
        return f"+-{100 * rel:.3g} % {kind}".strip()
    if _num(ab) and ab:
        return f"+-{ab:.3g} {r.get('unit') or ''} {kind}".replace("  ", " ").strip()
    return ""


def band_counts(rows):
    """[(kind, count)] of the kinds of band the rows' verdicts were held to."""
    counts = {}
    for r in rows:
        if r["band_kind"]:
            counts[r["band_kind"]] = counts.get(r["band_kind"], 0) + 1
    return sorted(counts.items(), key=lambda kv: list(BAND_KINDS.values()).index(kv[0]))


def verdict_counts(rows):
    """[(verdict, count, colour)] in VERDICTS' order, unknown verdicts after."""
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    order = [v for v in VERDICTS if v in counts] + sorted(v for v in counts if v not in VERDICTS)
    return [(v, counts[v], VERDICTS.get(v, "warn")) for v in order]


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

# --- headless Chromium -----------------------------------------------------------

def chromium():
    """The Chromium binary on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(args, page, fragment=""):
    """Run headless Chromium with @args on @page (#@fragment); its stdout."""
    binary = chromium()
    if not binary:
        raise cli.BadInput("no chromium on PATH (make deps installs it)")
    url = pathlib.Path(page).resolve().as_uri()
    if fragment:
        url += "#" + urllib.parse.quote(fragment)
    with tempfile.TemporaryDirectory(prefix="lab-chromium-") as profile:
        cmd = [binary, "--headless=new", "--disable-gpu", "--no-first-run",
               "--hide-scrollbars", "--disable-extensions", f"--user-data-dir={profile}"]
        if os.geteuid() == 0:
            cmd.append("--no-sandbox")
        try:
            out = subprocess.run([*cmd, *args, url], capture_output=True, text=True,
                                 timeout=BROWSER_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise cli.BadInput(f"chromium took more than {BROWSER_TIMEOUT} s on {url}") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise cli.BadInput(f"chromium exited with status {out.returncode} on {url}: {last}")
    return out.stdout


def dump_dom(page, fragment="", width=1280, height=900):
    """The DOM of @page (#@fragment) once it has loaded and its scripts
    ran, laid out in a @width x @height window."""
    return _browser(["--virtual-time-budget=10000", f"--window-size={width},{height}",
                     "--dump-dom"], page, fragment)


def check_page(page, fragment=""):
    """Load @page (written with check=True; #@fragment: the filter's
    experiment) in headless Chromium and say what its check script found,
    what a person sees: {"images": [{src, width (decoded), shown (laid
    out)}], "links": [{href, url}], "rows": [{name, hidden, text (as
    laid out)}], "options": [the filter's options' text], "shown": the
    count beside it, "view": {open, src, thumb, width, window} (the first
    plot shown, clicked: its larger view) or None, "broken_images": [src],
    "broken_links": [href]}; an image is broken when the browser decoded
    nothing (naturalWidth 0), a relative link when it leads to no file or
    folder on disk."""
    dom = dump_dom(page, fragment)
    m = re.search(f'<pre id="lab-check"[^>]*>{CHECK_MARK}(.*?){CHECK_MARK}-END</pre>', dom,
                  re.S)
    if not m:
        raise cli.BadInput(f"{page}: the browser check wrote no result (a page without "
                           "check=True, or its script failed)")
    found = json.loads(html.unescape(m.group(1)))
    found["broken_images"] = [i["src"] for i in found["images"] if not i["width"]]
    broken = []
    for link in found["links"]:
        if urllib.parse.urlsplit(link["href"]).scheme:
            continue
        target = urllib.parse.urlsplit(link["url"])
        if target.scheme != "file" or not os.path.exists(
                urllib.request.url2pathname(target.path)):
            if link["href"] not in broken:
                broken.append(link["href"])
    found["broken_links"] = broken
    return found


def screenshot(page, png, width=1280, height=900, fragment=""):
    """A picture of @page (#@fragment) as Chromium shows it in a @width x
    @height window."""
    png = pathlib.Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    _browser([f"--screenshot={png}", f"--window-size={width},{height}"], page, fragment)
    if not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise cli.BadInput(f"chromium made no PNG picture in {png}")
    return png


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
            print(f"lablib.report: error: {'; '.join(bad)}", file=sys.stderr)
            return 1
    return 0


def main(argv=None):
    return cli.main(
        "The results page: every result folder of RESULTS, newest first, with its "
        "headline figures, files and plots, and every compare folder's verdicts.",
        "python -m lablib.report results -o results/index.html", add_args, work,
        argv=argv, prog="lablib.report")


if __name__ == "__main__":
    sys.exit(main())
