"""What a workloads sweep folder (workloads/sweep.sh) holds, read and
checked: raw.csv (one row per timed run), the server workloads' reply
logs (logs/reply-TAG-REPEAT.csv, every reply of the reference client,
reduced here into raw.csv's reply rows), points.csv (the delay module's
own measure of each point), saturation.csv (Apache's offered-rate steps,
read into each point's knee), its calibration/ subfolder (the added
latency per loop) and the CPU count from meta.json.  Every reader raises
ValueError naming the file and line it cannot read.  lablib.sweep.analyse
models and reports what this reads; tailamp and lablib.sweep.progress read
the same files through it."""
import pathlib
import re

from .. import results, stats
from ..sweep import catalog
from . import calibration

# measure: (throughput = factor x units / seconds, its unit, one unit of
# work), as each workload's file declares it (lablib.sweep.catalog).
MEASURES = catalog.measures()
# raw.csv's columns, in order: the header sweep.sh writes (lablib.sweep.progress
# columns) and the fields its record() writes.
RAW_COLUMNS = ["workload", "measure", "loops", "ns", "repeat", "units", "seconds", "syscalls",
               "errors", "p9_requests", "detail"]
# Those a raw.csv must have: "ns" (the module's ns mode) came later, and a
# raw.csv without it swept loops; "p9_requests" later still: without it,
# the requests were not counted.
RAW_REQUIRED = [c for c in RAW_COLUMNS if c not in ("ns", "p9_requests")]
UNKNOWN = {"", "-", "na", "n/a", "none", "unknown"}
# A reply log's columns (workloads/reqtime.c): a row a request.
REPLY_COLUMNS = ["request", "status", "seconds", "calls", "error"]
# The detail of a reply row that holds sums (server.sh's wl_run): "every
# reply in logs/reply-TAG-REPEAT.csv (reqtime)".
REPLY_DETAIL = "every reply in logs/"
# What is cut off each end of a run's clean replies: a tenth, rounded down.
REPLY_CUT = 0.1


def number(rec, key, kind, unknown_ok=False):
    """One numeric field of a raw.csv row; None for an unknown one if allowed."""
    text = (rec.get(key) or "").strip()
    if unknown_ok and text.lower() in UNKNOWN:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{key} is {text!r}, not {'an integer' if kind is int else 'a number'}"
                         ) from None
    if not 0 <= value < float("inf"):
        raise ValueError(f"{key} is {text!r}, not a finite number >= 0")
    return value


def parse_run(rec):
    measure = (rec.get("measure") or "").strip()
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r} (known: {', '.join(MEASURES)})")
    r = {"workload": (rec.get("workload") or "").strip(), "measure": measure,
         "loops": number(rec, "loops", int, unknown_ok=True),
         "ns": number(rec, "ns", int, unknown_ok=True), "repeat": number(rec, "repeat", int),
         "units": number(rec, "units", float), "seconds": number(rec, "seconds", float),
         "syscalls": number(rec, "syscalls", float, unknown_ok=True),
         "errors": number(rec, "errors", int, unknown_ok=True) or 0,
         "p9_requests": number(rec, "p9_requests", int, unknown_ok=True),
         "detail": (rec.get("detail") or "").strip()}
    if r["units"] > 0 and r["seconds"] <= 0:
        raise ValueError(f"{r['units']:g} units in {r['seconds']:g} s")
    if (r["loops"] is None) == (r["ns"] is None):
        raise ValueError("a run has a loop count or an ns delay, exactly one of them")
    r["knob"] = "ns" if r["loops"] is None else "loops"
    r["setting"] = r[r["knob"]]
    return r


def read_replies(path):
    """A reply log of the reference client (workloads/reqtime.c's CSV:
    request,status,seconds,calls,error, a row a request): ([(seconds,
    calls)] of its replies, in order, errors).  A reply is a row with
    status 200 (calls None for a log without the count); errors counts the
    other requests, those that failed (an error, no status) and those
    answered with another status (a 404, Redis's error reply 500), which
    are not the reply timed.  ValueError naming the file (and line) for a
    file reqtime did not write."""
    try:
        rows = results.read_csv(path, REPLY_COLUMNS)
    except ValueError as e:
        raise ValueError(f"{e} (not a reply log of workloads/reqtime)") from None
    replies, errors, counted = [], 0, set()
    for line, rec in enumerate(rows, 2):
        try:
            error = rec["error"].strip()
            if number(rec, "request", int) != line - 1:
                raise ValueError(f"request is {rec['request']!r}, not {line - 1}")
            if error:
                if any(rec[k].strip() for k in ("status", "seconds", "calls")):
                    raise ValueError(f"an error ({error!r}) with a status, seconds or calls")
                errors += 1
                continue
            status = number(rec, "status", int)
            seconds = number(rec, "seconds", float)
            calls = number(rec, "calls", int, unknown_ok=True)
        except ValueError as e:
            raise ValueError(f"{path} line {line}: {e}") from None
        if status != 200:
            errors += 1
            continue
        counted.add(calls is not None)
        if len(counted) > 1:
            raise ValueError(f"{path} line {line}: calls counted in some replies, not in others")
        replies.append((seconds, calls))
    return replies, errors


def clean_reply(replies):
    """A run's reply time from its replies [(seconds, calls)]: (seconds,
    calls, clean_n), the trimmed mean (stats.trimmed_mean, a tenth off
    each end, rounded down) of the clean replies, those that made the
    fewest delayed calls, that count and how many they are.  A reply that
    made more calls had more of the server's work in its span
    (workloads/NOTES.md, "Apache", reply_clean: the guest reduced so
    itself before the host did).  Without the count (calls None) every
    reply is clean.  ValueError without a reply."""
    if not replies:
        raise ValueError("no replies")
    calls = [c for _, c in replies]
    fewest = None if None in calls else min(calls)
    clean = [s for s, c in replies if c == fewest]
    return stats.trimmed_mean(clean, REPLY_CUT), fewest, len(clean)


def reply_log(folder, run):
    """The reply log of reply row @run in sweep folder @folder (server.sh's
    wl_run: logs/reply-TAG-REPEAT.csv, TAG l<loops> or ns<ns>)."""
    tag = f"l{run['loops']}" if run["knob"] == "loops" else f"ns{run['ns']}"
    return pathlib.Path(folder) / "logs" / f"reply-{tag}-{run['repeat']}.csv"


def reduce_reply(run, folder):
    """Reply row @run with its reply time made from its reply log.

    New and old rows are told apart by the log: a row whose
    logs/reply-TAG-REPEAT.csv exists is new (the guest wrote its replies'
    count, the sum of their seconds and of their calls) and becomes units
    1, seconds the clean trimmed mean, syscalls the fewest calls
    (clean_reply), as the guest's reply_clean wrote it before; its count
    and errors must be the log's.  Without the log the row is old (the
    guest reduced it, its replies in a .txt log, or none) and is used as
    it is, unless its detail says its replies are in a CSV (REPLY_DETAIL):
    a sum without its log is no reply time."""
    path = reply_log(folder, run)
    if not path.is_file():
        if run["detail"].startswith(REPLY_DETAIL):
            raise ValueError(f"its replies are in {path.name}, and {path} is not there")
        return run
    replies, errors = read_replies(path)
    if len(replies) != run["units"] or errors != run["errors"]:
        raise ValueError(f"the row counts {run['units']:g} replies and {run['errors']} failed "
                         f"requests, but {path} has {len(replies)} and {errors}")
    if not replies:
        raise ValueError(f"{path}: no replies")
    seconds, calls, _ = clean_reply(replies)
    return {**run, "units": 1.0, "seconds": seconds, "syscalls": calls}


def read_raw(path):
    """The runs of a workload sweep's raw.csv, parsed and checked; each
    reply row's reply time made from its reply log if it has one in the
    folder's logs/ (reduce_reply)."""
    try:
        rows = results.read_csv(path, RAW_REQUIRED)
    except ValueError as e:
        if "no header" in str(e):
            raise ValueError(f"{path}: empty file, no header and no runs") from None
        raise
    runs = []
    folder = pathlib.Path(path).parent
    for line, rec in enumerate(rows, 2):
        try:
            run = parse_run(rec)
            if run["measure"] == "reply":
                run = reduce_reply(run, folder)
            runs.append(run)
        except ValueError as e:
            raise ValueError(f"{path} line {line}: {e}") from None
    if not runs:
        raise ValueError(f"{path}: a header but no runs")
    if len({r["knob"] for r in runs}) > 1:
        raise ValueError(f"{path}: runs at loop counts and at ns delays mixed in one sweep")
    return runs


def read_points(path):
    """{(loops, ns): measured ns per delayed call} from the sweep's
    points.csv (the module's own account); {} without the file or the
    module's figures."""
    if not path.exists():
        return {}
    out = {}
    for i, rec in enumerate(results.read_csv(path, ("loops", "ns", "measured_ns")), 2):
        try:
            key = (number(rec, "loops", int, True), number(rec, "ns", int, True))
            out[key] = number(rec, "measured_ns", float, True)
        except ValueError as e:
            raise ValueError(f"{path} line {i}: {e}") from None
    return out


def read_calibration(folder):
    """Of calibrate folder @folder: the mean ns per loop over its fits, the
    fits' names, what a delayed call costs before its first loop (entry
    ns) and the part of that the module's own figure does not hold
    (untimed ns, see untimed_ns)."""
    if not (pathlib.Path(folder) / "meta.json").exists():
        raise ValueError(f"{folder} has no meta.json: the sweep has no calibration")
    meta, summary = calibration.load(folder)
    slope, names = calibration.ns_per_loop(summary, where=str(folder))
    return slope, names, summary["entry_ns"], untimed_ns(summary["entry_ns"], meta)


def untimed_ns(entry, meta):
    """What a delayed call costs that the module's spun_ns does not count:
    the module times its spin between two clock reads, so its figure holds
    the spin and about one read (its clock_ns), and the rest of the entry
    cost (the hook's checks, the other read, its statistics) is outside
    it.  @entry: the calibration's entry ns; @meta: its meta.json, whose
    module stats give clock_ns.  0 when meta.json has no clock_ns."""
    stats = ((meta.get("modules") or {}).get("delay") or {}).get("stats") or {}
    try:
        clock = int(stats["clock_ns"])
    except (KeyError, TypeError, ValueError):
        return 0.0
    return max(0.0, entry - clock)


def knees(path):
    """{(loops, ns): (kept up, overloaded)} from apache's saturation.csv: per
    point the mean over repeats of the highest offered rate the server kept
    up with and of the lowest above it that it did not (None if no step
    overloaded it).  {} without the file."""
    if not path.exists():
        return {}
    per_run = {}
    for i, row in enumerate(results.read_csv(path, ("loops", "repeat", "offered",
                                                     "sustained")), 2):
        try:
            key = (number(row, "loops", int, True), number(row, "ns", int, True),
                   int(row["repeat"]))
            offered, ok = float(row["offered"]), row["sustained"].strip() == "1"
        except ValueError:
            raise ValueError(f"{path} line {i}: not a saturation step: {row}") from None
        per_run.setdefault(key, []).append((offered, ok))
    by_loops = {}
    for (loops, ns, _), steps in per_run.items():
        kept = max((o for o, ok in steps if ok), default=None)
        over = min((o for o, ok in steps if not ok and (kept is None or o > kept)),
                   default=None)
        by_loops.setdefault((loops, ns), []).append((kept, over))
    out = {}
    for loops, pairs in by_loops.items():
        kept = [k for k, _ in pairs if k is not None]
        over = [o for _, o in pairs if o is not None]
        out[loops] = (stats.mean(kept), stats.mean(over) if len(over) == len(pairs) else None)
    return out


def cpus_of(meta):
    """The CPU count the sweep ran on: meta.json's machine, else its settings."""
    for cpus in ((meta.get("machine") or {}).get("cpus"), results.settings(meta).get("cpus")):
        if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0:
            return cpus
    return None


def stage_problems(settings):
    """Why no point of a staged sweep is exact though its windows made no
    request to the host's files: the command printed in the staged root
    what it had not when it was recorded (sweep.sh's stage_check), or it
    reached for other machines (stage.network).  [] if neither."""
    out = []
    if settings.get("stage_check") == "output differs from the recorded run":
        out.append("its output in the staged root differs from the recorded run's (it reads "
                   "what it did not read then, or prints something new each run)")
    stage = settings.get("stage")
    net = stage.get("network") if isinstance(stage, dict) else None
    if net:
        shown = ", ".join(net[:3]) + (f" and {len(net) - 3} more" if len(net) > 3 else "")
        out.append(f"it reached for the network ({shown}): its runs wait for other machines")
    return out


def read_sweep(folder):
    """Sweep folder @folder read whole, a dict: meta, settings, split (the
    parts.json of a merged split sweep, else None), runs (read_raw),
    workload, ns_per_loop, fit_names, entry_ns and untimed_ns (its
    calibration; None, [], 0 and 0 for a sweep in ns), measured
    (read_points), knees, cpus and stage_problems."""
    d = pathlib.Path(folder)
    meta = results.read_meta(d)
    settings = results.settings(meta)
    split = None
    if settings.get("part"):
        if not (d / "parts.json").exists():
            raise ValueError(f"{d} is part {settings['part']} of a split sweep: merge its "
                             f"parts (python -m lablib.sweep.parts merge) and analyse the "
                             f"merged folder")
        split = results.read_json(d / "parts.json")
    runs = read_raw(d / "raw.csv")
    ns_per_loop, fit_names, entry, untimed = None, [], 0.0, 0.0
    if runs[0]["knob"] == "loops":
        ns_per_loop, fit_names, entry, untimed = read_calibration(d / "calibration")
    workloads = sorted({r["workload"] for r in runs})
    if len(workloads) != 1:
        raise ValueError(f"{d}/raw.csv: one workload expected, found {workloads}")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", workloads[0]):
        raise ValueError(f"{d}/raw.csv: workload {workloads[0]!r} cannot name the plot file")
    return {"meta": meta, "settings": settings, "split": split, "runs": runs,
            "workload": workloads[0], "ns_per_loop": ns_per_loop, "fit_names": fit_names,
            "entry_ns": entry, "untimed_ns": untimed, "measured": read_points(d / "points.csv"),
            "knees": knees(d / "saturation.csv"), "cpus": cpus_of(meta),
            "stage_problems": stage_problems(settings)}
