#!/usr/bin/env python3
"""Merge the parts of a sweep that 'sweep.sh --part K/N' ran in separate
boots (run.sh --jobs N) into one result folder, the one a serial sweep
would have written:

  merge.py [--where K=MACHINE]... INTO PART_DIR...

INTO is an empty result folder ('lab begin' made it); each PART_DIR is the
result folder of one part, all N of them, in any order.

- raw.csv, points.csv and every other top-level CSV file: the header once,
  then each point's lines in the order of the sweep's points, every line
  copied as its part wrote it (never parsed and written again), so that
  the files are byte for byte those of a serial sweep that measured the
  same.
- logs/: a point's logs are its part's; a log that several parts wrote
  (staging, the server's error log) is part 1's, and another part's copy
  that differs goes to parts/K/logs/.
- meta.json, calibration/ and any other file: part 1's (only part 1
  calibrates); another part's meta.json and any file of its that differs
  from part 1's go to parts/K/.
- parts.json: how the sweep was split, the points of each part and where
  each ran (--where, from run.sh: 'local' or the ssh login).

Parts that do not belong together are refused, nothing merged: another
workload or sweep settings, another lab commit, kernel or clock, a part
missing or twice, a point in no part or in two.  Exit status 2 for bad
arguments, 1 for parts that cannot be merged.
"""
import argparse
import csv
import filecmp
import pathlib
import shutil
import sys

from lablib import results

# Settings a part may have of its own: which part it is, where its work
# cgroup was (named for its process), who calibrated, how long its staging
# took and, where each part stages in its own boot (Apache), how many
# calls its recording saw (619 and 620 for the same 34 files, 2026-11-27).
OWN_SETTINGS = {"part", "part_points", "calibration_from", "delay_cgroup", "stage"}
OWN_STAGE = {"seconds", "unpack_seconds", "archive", "traced_calls"}


class Refused(Exception):
    """Parts that cannot make one sweep."""


def part_of(meta, folder):
    """(K, N) of a part's meta.json."""
    part = results.settings(meta).get("part")
    if not part:
        raise Refused(f"{folder} is not a part of a sweep (its settings have no part)")
    k, _, n = str(part).partition("/")
    return int(k), int(n)


def same_sweep(first, other, folder):
    """Refuse @other's meta.json (of @folder) unless it is a part of the
    same sweep as @first, on the same lab commit, kernel and clock."""
    def fail(what, a, b):
        raise Refused(f"{folder}: {what} {b!r}, not part 1's {a!r}: not the same sweep")
    for key in ("experiment", "lab_commit"):
        if first.get(key) != other.get(key):
            fail(key, first.get(key), other.get(key))
    for key in ("release", "version", "variant"):
        a, b = first.get("kernel", {}).get(key), other.get("kernel", {}).get(key)
        if a != b:
            fail(f"kernel {key}", a, b)
    for key in ("clock", "cpus", "accelerator"):
        a, b = first.get("machine", {}).get(key), other.get("machine", {}).get(key)
        if a != b:
            fail(f"machine {key}", a, b)
    s1, s2 = results.settings(first), results.settings(other)
    for key in sorted(set(s1) | set(s2)):
        if key not in OWN_SETTINGS and s1.get(key) != s2.get(key):
            fail(f"setting {key}", s1.get(key), s2.get(key))
    st1 = {k: v for k, v in (s1.get("stage") or {}).items() if k not in OWN_STAGE}
    st2 = {k: v for k, v in (s2.get("stage") or {}).items() if k not in OWN_STAGE}
    if st1 != st2:
        fail("staged files", st1, st2)


def point_key(line, column, where):
    """The value of @column in one CSV line (the point it belongs to)."""
    row = next(csv.reader([line]))
    try:
        return int(row[column])
    except (IndexError, ValueError):
        raise Refused(f"{where}: a line without a point: {line.rstrip()!r}") from None


def merge_csv(name, parts, order, knob):
    """The merged text of top-level CSV @name of every part: the header,
    then the lines of each point of @order.  @parts: (K, folder) sorted."""
    header = None
    by_point = {}
    for k, folder in parts:
        path = folder / name
        if not path.exists():
            continue
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.readlines()
        if not lines:
            raise Refused(f"{path} is empty")
        if header is None:
            header = lines[0]
        elif lines[0] != header:
            raise Refused(f"{path}: header {lines[0].rstrip()!r}, not {header.rstrip()!r}")
        columns = next(csv.reader([header]))
        if knob not in columns:
            raise Refused(f"{path}: no column {knob!r}")
        column = columns.index(knob)
        mine = {}
        for line in lines[1:]:
            mine.setdefault(point_key(line, column, path), []).append(line)
        for point, group in mine.items():
            if point in by_point:
                raise Refused(f"{path}: point {knob}={point} is in another part's {name} too")
            if point not in order:
                raise Refused(f"{path}: point {knob}={point} is not one of the sweep's")
            by_point[point] = group
    return header + "".join(line for p in order for line in by_point.get(p, []))


def copy_file(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def merge(into, folders, where):
    into = pathlib.Path(into)
    if not into.is_dir() or any(into.iterdir()):
        raise Refused(f"{into} is not an empty folder")
    metas = {}
    for folder in folders:
        meta = results.read_meta(folder)
        k, n = part_of(meta, folder)
        if k in metas:
            raise Refused(f"{folder} and {metas[k][0]} are both part {k}/{n}")
        metas[k] = (folder, meta, n)
    ns = {n for _, _, n in metas.values()}
    if len(ns) != 1:
        raise Refused(f"parts of different splits: {sorted(ns)} parts")
    n = ns.pop()
    missing = sorted(set(range(1, n + 1)) - set(metas))
    if missing or len(metas) != n:
        raise Refused(f"the sweep has {n} parts; missing: {', '.join(map(str, missing))}")
    first = metas[1][1]
    for k in range(2, n + 1):
        same_sweep(first, metas[k][1], metas[k][0])

    s = results.settings(first)
    knob = s.get("knob")
    order = s.get(knob) if knob else None
    if not isinstance(order, list) or not order:
        raise Refused(f"{metas[1][0]}: meta.json's settings name no points ({knob!r})")
    points = {}
    for k in range(1, n + 1):
        for p in results.settings(metas[k][1]).get("part_points", []):
            if p in points:
                raise Refused(f"point {knob}={p} is in parts {points[p]} and {k}")
            points[p] = k
    if sorted(points) != sorted(order):
        raise Refused(f"the parts' points {sorted(points)} are not the sweep's {order}")

    parts = [(k, pathlib.Path(metas[k][0])) for k in range(1, n + 1)]
    # Part 1's files, then the others' logs and differing files.
    for k, folder in parts:
        for src in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = src.relative_to(folder)
            if len(rel.parts) == 1 and rel.suffix == ".csv":
                continue
            dst = into / rel
            if k == 1:
                copy_file(src, dst)
            elif rel.parts[0] == "logs" and not dst.exists():
                copy_file(src, dst)
            elif not dst.exists() or not filecmp.cmp(src, dst, shallow=False):
                copy_file(src, into / "parts" / str(k) / rel)
    csvs = sorted({p.name for _, folder in parts for p in folder.glob("*.csv")})
    for name in csvs:
        results.write_text(into / name, merge_csv(name, parts, order, knob))
    results.write_json(into / "parts.json", {
        "parts": n,
        "knob": knob,
        "points": {str(k): results.settings(metas[k][1]).get("part_points", [])
                   for k in range(1, n + 1)},
        "where": {str(k): where.get(k, "local") for k in range(1, n + 1)},
        "folders": {str(k): str(metas[k][0]) for k in range(1, n + 1)},
        "dates": {str(k): metas[k][1].get("date") for k in range(1, n + 1)},
    })


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--where", action="append", default=[], metavar="K=MACHINE",
                   help="where part K ran (parts.json), default 'local'")
    p.add_argument("into", help="an empty result folder")
    p.add_argument("parts", nargs="+", help="the parts' result folders")
    args = p.parse_args(argv)
    where = {}
    for w in args.where:
        k, sep, machine = w.partition("=")
        if not sep or not k.isdigit() or not machine:
            p.error(f"--where wants K=MACHINE, not {w!r}")
        where[int(k)] = machine
    try:
        merge(args.into, [pathlib.Path(f) for f in args.parts], where)
    except (Refused, ValueError, OSError) as e:
        print(f"merge.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
