"""A sweep split over several VMs, on the host (lablib.sweep.driver): how
many VMs and why (choose_vms), which points each part runs (balance), the
whole sweep's progress while they run (progress), and the parts merged
into the one result folder a serial sweep would have written (merge):

  python -m lablib.sweep.parts merge [--where K=MACHINE]... INTO PART_DIR...
      the parts into INTO, an empty result folder ('lab begin' made it);
      each PART_DIR is the result folder of one part, all N of them, in
      any order (lab sweep merges its parts itself; this merges the parts
      a failed split sweep left in build/sweep-parts/):

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
  each ran (--where, from lab sweep: 'local' or the ssh login).

Parts that do not belong together are refused, nothing merged: another
workload or sweep settings, another lab commit, kernel or clock, a part
missing or twice, a point in no part or in two.  Exit status 2 for bad
arguments, 1 for a plan or parts that cannot be used.
"""
import argparse
import csv
import filecmp
import pathlib
import re
import shutil
import sys
import time

from lablib import host, results, text
from lablib.sweep import catalog

# Settings a part may have of its own: which part it is, where its work
# cgroup was (named for its process), who calibrated, how long its staging
# took and, where each part stages in its own boot (Apache), how many
# calls its recording saw (619 and 620 for the same 34 files).
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


# --- The plan: how many VMs, which points each part runs ---------------------
class BadPlan(Exception):
    """A plan that sweep.sh did not print, or one that cannot be split."""


def balance(values, n, slope=1.0):
    """@values dealt into @n parts that take about as long each: a list of
    n sorted lists.  A point costs what lablib.sweep.catalog.point_costs
    says; part 1 carries a tenth of a point more for its calibration.  The
    largest point goes first to the part with the least so far (ties to the last part); then, while
    moving one point from the dearest part to the cheapest, or swapping one
    of each, makes the dearer of the two cheaper, that is done (NOTES.md,
    "Split sweeps", says why dealing alone is not enough).  The same values
    give the same parts on every machine."""
    if not 1 <= n <= len(values):
        raise BadPlan(f"{n} parts of {len(values)} points leave some empty")
    costs = dict(zip(values, catalog.point_costs(values, slope)))

    def cost(v):
        return costs[v]
    vs = sorted(values, reverse=True)
    load = [0.1] + [0.0] * (n - 1)
    part = []
    for v in vs:
        best = n - 1
        for p in range(n - 2, -1, -1):
            if load[p] < load[best]:
                best = p
        part.append(best)
        load[best] += cost(v)
    for _ in range(100):
        hi = max(range(n), key=lambda p: (load[p], -p))
        lo = min(range(n), key=lambda p: (load[p], p))
        gain, move = 1e-9, None
        for i, v in enumerate(vs):
            if part[i] != hi:
                continue
            for j in [None] + [j for j in range(len(vs)) if part[j] == lo]:
                d = cost(v) - (cost(vs[j]) if j is not None else 0)
                worst = max(load[hi] - d, load[lo] + d)
                if d > 0 and load[hi] - worst > gain:
                    gain, move = load[hi] - worst, (i, j)
        if move is None:
            break
        i, j = move
        load[hi] -= cost(vs[i])
        load[lo] += cost(vs[i])
        part[i] = lo
        if j is not None:
            load[lo] -= cost(vs[j])
            load[hi] += cost(vs[j])
            part[j] = hi
    return [sorted(v for v, p in zip(vs, part) if p == k) for k in range(n)]


def choose_vms(plan, clock, vms=None, logins=None, cores=None, loadavg=None):
    """(N, why): how many VMs the sweep of @plan runs at once on @clock,
    given --vms (@vms) or an sshloginfile of @logins machines, and why."""
    fewest = min(len(b["points"]) for b in plan)
    if vms is not None:
        n, why = vms, f"--vms {vms}"
    elif logins is not None:
        n, why = logins, f"one a machine of the login file's {logins}"
    elif clock != "virtual":
        n, why = 1, (f"the {clock} clock: VMs side by side would slow each other, so a "
                     "sweep there is not split")
    else:
        n, cores, load = host.free_cores(cores, loadavg)
        why = f"the virtual clock: {cores} cores, load average {load:.2f}, {n} free"
        if n < cores:
            why += " (something else holds the rest; --vms N to choose)"
    if n > 1 and clock != "virtual":
        raise BadPlan(f"--vms {n}: a sweep is split only on the virtual clock (this one runs "
                      f"on the {clock} clock, where VMs side by side slow each other); "
                      "leave --vms out")
    if n > fewest:
        n, why = fewest, f"{why}; no more parts than the {fewest} points of a workload"
    return n, why


# --- Progress: the whole sweep's, in the host's time ------------------------
PART_POINT = re.compile(r"sweep\.sh: (?:part (\d+)/(\d+): )?\[(\d+)/(\d+)\]")


def progress(total, lines=sys.stdin, out=sys.stdout, clock=time.monotonic, note=None,
             totals=True):
    """The VMs' output @lines passed on to @out and, after each point, the
    whole sweep's progress (lab sweep's, as the VMs run).  A point's line
    ends with @note(K) if given, for part K ("1" in one VM): the time a
    unit of work took there.  Without @totals, the points' lines alone (a
    part's, whose parent counts the whole sweep).  The times are the host's: a
    part's own elapsed and ETA are its guest's, which on the virtual clock
    pass as the guest executes, not as the host's do.  A line without a
    part is the one VM's of a serial sweep (part 1/1).  A part's time left
    is its wall time per point since its first point, times its points
    left, less the time since its last; a part with one point done has no
    estimate yet ('at least' the others').  A part that runs several
    workloads ('all') counts from 1 again for each: its points add up, and
    its points left are the current workload's (in one VM: the sweep's)."""
    total = int(total)
    start = clock()
    first, last, size, before = {}, {}, {}, {}
    for line in lines:
        m = PART_POINT.search(line)
        said = note(m.group(1) or "1") if m and note else ""
        out.write(f"{line.rstrip(chr(10))}: {said}\n" if said else line)
        if m and totals:
            now = clock()
            k, parts_n = m.group(1) or "1", int(m.group(2) or 1)
            i, n = int(m.group(3)), int(m.group(4))
            if k in last and i <= last[k][1] - before[k]:
                before[k] += size[k]
            before.setdefault(k, 0)
            done_k = before[k] + i
            first.setdefault(k, (now, done_k))
            last[k] = (now, done_k)
            size[k] = n
            done = sum(c for _, c in last.values())
            left = []
            for p, (t1, c1) in last.items():
                t0, c0 = first[p]
                if c1 > c0:
                    todo = total - c1 if parts_n == 1 else before[p] + size[p] - c1
                    left.append((t1 - t0) / (c1 - c0) * todo - (now - t1))
            eta = ""
            if left:
                some = "at least " if len(left) < parts_n else ""
                eta = f", ETA {some}{text.duration(max(max(left), 0))}"
            out.write(f"lab sweep: the sweep: {done} of {total} points; elapsed "
                      f"{text.duration(now - start)}{eta}\n")
        out.flush()


def main(argv=None, prog=None):
    """merge, as @argv (default sys.argv[1:]) says; the exit status."""
    p = argparse.ArgumentParser(prog=prog or "python -m lablib.sweep.parts",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="verb", required=True)
    me = sub.add_parser("merge", help="the parts into one result folder")
    me.add_argument("--where", action="append", default=[], metavar="K=MACHINE",
                    help="where part K ran (parts.json), default 'local'")
    me.add_argument("into", help="an empty result folder")
    me.add_argument("parts", nargs="+", help="the parts' result folders")
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
        print(f"{p.prog}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
