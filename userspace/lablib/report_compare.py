"""What the results page (lablib.report) says of a folder beside its
headline figures: values and meta.json (kernel, commit, clock, machine)
as the page writes them, and the rows of compare folders and of make
ab's folders (what compare.json and an ab folder's meta.json say)."""
import json
import os
import pathlib
import urllib.parse

from lablib import cli, figures, results, text

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


def _num(v):
    """A JSON number (not a flag)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(v):
    """A figure as the page shows it: four significant digits, thousands
    separators from 10,000 on."""
    return text.num(v, 4) if _num(v) else str(v)

def short(v, width=48):
    """@v (a string, or any JSON value) in at most @width characters."""
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= width else s[:width - 1] + "…"

def href(path, page_dir):
    """The relative URL of @path from a page in @page_dir."""
    rel = os.path.relpath(path, page_dir)
    return urllib.parse.quote(rel.replace(os.sep, "/"))

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
    """A compare row's band as compare wrote it ("±0.05 % measured"), or
    from its band_rel, band_abs and band_source; "" if it has none."""
    if isinstance(r.get("band"), str):
        return r["band"]
    rel, ab = r.get("band_rel"), r.get("band_abs")
    kind = BAND_KINDS.get(r.get("band_source"), "")
    if _num(rel) and rel:
        return f"±{100 * rel:.3g} % {kind}".strip()
    if _num(ab) and ab:
        return f"±{ab:.3g} {r.get('unit') or ''} {kind}".replace("  ", " ").strip()
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
