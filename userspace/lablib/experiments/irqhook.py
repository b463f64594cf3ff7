"""An irqhook folder (events.csv, tasks.csv, meta.json) turned into its
summary: the switching and wake-up times of every event and of the events
after the first, each with its fast/slow split, and the cyclictest-style
histogram.  Shared by the irqhook analyser and the sweep and trace reports."""
import pathlib

from .. import results, stats

EVENT_COLUMNS = ("event", "seq", "call_ns", "write_ns", "wake_ns", "return_ns",
                 "switching_ns", "wakeup_ns")
TASK_COLUMNS = ("role", "index", "tid", "policy", "priority", "cpu")
SERIES = ("switching", "wakeup")
BUCKET_NS = 1000        # 1 us buckets, as cyclictest


def read_events(folder):
    """The rows of FOLDER/events.csv, event and seq as int, the times as
    float; ValueError if it has none or a field is not a number."""
    path = pathlib.Path(folder) / "events.csv"
    rows = results.read_csv(path, EVENT_COLUMNS)
    if not rows:
        raise ValueError(f"{path} has no events")
    out = []
    for line, r in enumerate(rows, 2):
        try:
            out.append({k: int(v) if k in ("event", "seq") else float(v)
                        for k, v in r.items() if k in EVENT_COLUMNS})
        except ValueError:
            raise ValueError(f"{path} line {line}: a field is not a number") from None
    return out


def read_tasks(folder):
    """The rows of FOLDER/tasks.csv (role, index, tid, policy, priority, cpu)."""
    return results.read_csv(pathlib.Path(folder) / "tasks.csv", TASK_COLUMNS)


def reader_tid(folder):
    """The thread id of the read task, from FOLDER/tasks.csv."""
    for t in read_tasks(folder):
        if t["role"] == "read":
            try:
                return int(t["tid"])
            except ValueError:
                raise ValueError(f"{folder}/tasks.csv: read tid {t['tid']!r} is not a "
                                 f"number") from None
    raise ValueError(f"{folder}/tasks.csv has no read task")


def series_summary(values):
    """stats.summary of @values with its "split" (stats.split2)."""
    return {**stats.summary(values), "split": stats.split2(values)}


def summarise(meta, events):
    """The summary.json dict (README.md, Conventions) for @events of a run with
    meta.json @meta."""
    times = {name: [e[f"{name}_ns"] for e in events] for name in SERIES}
    return {
        "experiment": "irqhook", "unit": "ns", "events": len(events),
        "settings": results.settings(meta),
        "first_event": {name: times[name][0] for name in SERIES},
        "all_events": {name: series_summary(times[name]) for name in SERIES},
        "after_first": {name: series_summary(times[name][1:]) for name in SERIES},
    }


def histogram(events):
    """histogram.txt: events per 1 us bucket of both series, cyclictest style."""
    counts = {name: {} for name in SERIES}
    top = 0
    for e in events:
        for name in SERIES:
            b = max(0, int(e[f"{name}_ns"] // BUCKET_NS))
            counts[name][b] = counts[name].get(b, 0) + 1
            top = max(top, b)
    lines = ["# irqhook histogram: events per 1 us bucket", "# us  switching  wakeup"]
    lines += [f"{b:06d} {counts['switching'].get(b, 0):06d} {counts['wakeup'].get(b, 0):06d}"
              for b in range(top + 1)]
    lines.append(f"# Total: {len(events):06d} {len(events):06d}")
    return "\n".join(lines) + "\n"


def load(folder):
    """(meta, events, summary) of irqhook folder @folder."""
    meta = results.read_meta(folder)
    events = read_events(folder)
    return meta, events, summarise(meta, events)
