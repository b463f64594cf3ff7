"""rt-tests' output as the lab's analysers read it: cyclictest's --json
file (or its -h text output when the JSON is malformed) and ptsematest's
--json file.  Latencies are in us, as the tools write them.

A cyclictest run is {"threads": [thread ...], "unstarted": [numbers of
the threads that never ran a cycle], "return_code", "from_text",
"json_error"}; a thread is {"thread", "cpu", "n", "min", "avg", "max",
"hist": {us: count}, "overflow"}: "hist" holds the samples inside the
histogram (-h N: buckets 0 .. N-1 us), "overflow" the samples past its
end.  Its statistics are the lab's summary (stats.summary): percentiles
interpolate between the two nearest ranks of the histogram's samples,
overflows counted at the thread's maximum, and the mean is cyclictest's
own average (exact, where the histogram has whole us).  A run without -h
has an empty histogram: every sample is then an overflow."""
import pathlib

from .. import results, stats

# The -h text output's tail lines a run needs, each a count per thread.
TEXT_TAIL = ("Total", "Min Latencies", "Avg Latencies", "Max Latencies",
             "Histogram Overflows")


def _thread(number, t):
    """One thread of a --json file's "thread" object, as this module has it."""
    hist = {int(b): int(c) for b, c in (t.get("histogram") or {}).items()}
    n = int(t.get("cycles", sum(hist.values())))
    return {"thread": number, "cpu": t.get("cpu"), "n": n, "min": float(t["min"]),
            "avg": float(t["avg"]), "max": float(t["max"]), "hist": hist,
            "overflow": max(0, n - sum(hist.values()))}


def _run(path, j):
    """The run of a parsed --json object @j; ValueError without threads."""
    try:
        every = [_thread(int(k), t) for k, t in (j.get("thread") or {}).items()]
    except (AttributeError, KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: not a cyclictest --json file: a thread without "
                         f"cycles, min, avg, max") from None
    every.sort(key=lambda t: t["thread"])
    threads = [t for t in every if t["n"]]
    # Stopped before its first cycle (-b ends every thread at once):
    # cyclictest writes min 1000000, max 0; there is nothing to count.
    unstarted = [t["thread"] for t in every if not t["n"]]
    if not threads:
        raise ValueError(f"{path}: not a cyclictest --json file: no thread results "
                         f"(did cyclictest run?)")
    return {"threads": threads, "unstarted": unstarted,
            "return_code": j.get("return_code"), "from_text": False, "json_error": None}


def parse_text(path):
    """The --json object rebuilt from cyclictest -h's text output: the
    histogram lines (bucket, then a count per thread) and the '# Total'
    (samples in the histogram), '# Min/Avg/Max Latencies' and '# Histogram
    Overflows' lines.  The average there is whole us."""
    hist, tail = {}, {}
    for line in pathlib.Path(path).read_text().splitlines():
        if line.startswith("#"):
            key, sep, vals = line[1:].partition(":")
            if sep and vals.split() and all(v.isdigit() for v in vals.split()):
                tail[key.strip()] = [int(v) for v in vals.split()]
            continue
        f = line.split()
        if len(f) >= 2 and all(v.isdigit() for v in f):
            for t, c in enumerate(f[1:]):
                if int(c):
                    hist.setdefault(t, {})[int(f[0])] = int(c)
    if not all(k in tail for k in TEXT_TAIL):
        raise ValueError(f"{path}: not cyclictest -h output (no {', '.join(TEXT_TAIL)} "
                         f"lines)")
    return {"thread": {str(t): {"histogram": hist.get(t, {}),
                                "cycles": tail["Total"][t] + tail["Histogram Overflows"][t],
                                "min": tail["Min Latencies"][t],
                                "avg": tail["Avg Latencies"][t],
                                "max": tail["Max Latencies"][t], "cpu": None}
                       for t in range(len(tail["Total"]))}}


def read_cyclictest(path):
    """The run of one cyclictest --json file, or of the -h text output
    beside it (the same name with .txt) when the JSON is malformed: rt-tests
    2.4 has been seen to write a histogram entry without its value."""
    path = pathlib.Path(path)
    try:
        j = results.read_json(path)
    except ValueError as e:
        txt = path.with_suffix(".txt")
        if not txt.exists():
            raise
        return {**_run(txt, parse_text(txt)), "from_text": True, "json_error": str(e)}
    return _run(path, j)


def select(run, threads=None):
    """The threads of @run numbered in @threads (None: every thread that
    ran); ValueError naming a thread the run does not have."""
    if threads is None:
        return run["threads"]
    have = {t["thread"]: t for t in run["threads"]}
    missing = [str(n) for n in threads if n not in have]
    if missing:
        raise ValueError(f"cyclictest has no results of thread {', '.join(missing)}")
    return [have[n] for n in threads]


def values(thread):
    """The latencies (us) @thread's histogram stands for, ascending, its
    overflows counted at its maximum."""
    out = []
    for b in sorted(thread["hist"]):
        out += [float(b)] * thread["hist"][b]
    return out + [thread["max"]] * thread["overflow"]


def summary(run, threads=None):
    """stats.summary of the latencies of @run's @threads pooled (see
    select), in us, the mean cyclictest's own average weighted by the
    threads' samples."""
    chosen = select(run, threads)
    pooled = sorted(v for t in chosen for v in values(t))
    n = sum(t["n"] for t in chosen)
    return {**stats.summary(pooled), "mean": sum(t["avg"] * t["n"] for t in chosen) / n,
            "unit": "us"}


def histogram(run, threads=None):
    """{us: samples} of @run's @threads' histograms added up (overflows
    are not in it)."""
    out = {}
    for t in select(run, threads):
        for b, c in t["hist"].items():
            out[b] = out.get(b, 0) + c
    return dict(sorted(out.items()))


def contradiction(thread):
    """Why @thread's min, average and max cannot all be true, or None.
    Seen with -x under TCG when wake-ups come later than the interval:
    negative latencies and an overflowed average."""
    if 0 <= thread["min"] <= thread["avg"] <= thread["max"]:
        return None
    return (f"thread {thread['thread']}: min {thread['min']:g}, avg {thread['avg']:g}, "
            f"max {thread['max']:g} us contradict each other")


def read_ptsematest(path, pair=0):
    """{"n", "min", "mean", "max", "unit": "us"} of the receiver of pair
    @pair of a ptsematest --json file (it writes no histogram)."""
    try:
        t = results.read_json(path)["thread"][str(pair)]
        r = t["receiver"]
        return {"n": int(t["sender"]["samples"]), "min": float(r["min"]),
                "mean": float(r["avg"]), "max": float(r["max"]), "unit": "us"}
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: not a ptsematest --json file with pair {pair}") from None
