"""Explain the slow events of a traced irqhook run.

Reads CELL_DIR/trace.dat (through 'trace-cmd report'), CELL_DIR/events.csv,
CELL_DIR/tasks.csv (the reader's thread id) and CELL_DIR/meta.json.  For
every event, and the first and the slow ones (wake-up time above the run's
fast/slow threshold) in particular, it finds on the trace's
CLOCK_MONOTONIC time line:

  - when the driver accepted the write (irqhook:irqhook_write, by seq),
  - when the read task was woken (sched:sched_wakeup) and on which CPU,
  - what ran on that CPU from the wake-up until the read task ran
    (sched:sched_switch): each task, how long, and whether it left the CPU
    still runnable (preempted) or because it blocked.

Does the same for every fast event, so the two groups can be compared.
Writes CELL_DIR/trace_events.csv (one row per event: what ran before the
reader) and CELL_DIR/explanation.txt, and prints the explanation.
"""
import bisect
import collections
import pathlib
import re
import statistics
import sys

from lablib import cli, results
from lablib.readers import ftrace
from lablib.experiments import irqhook

TRACE_COLUMNS = ["event", "seq", "slow", "cpu", "wakeup_ns", "write_to_wakeup_ns",
                 "wakeup_to_run_ns", "migrations", "ran_before_reader"]
parse_report = ftrace.parse_report


def read_trace(run_dir):
    path = pathlib.Path(run_dir) / "trace.dat"
    if not path.exists():
        raise ValueError(f"{path} does not exist: run irqhook with --trace")
    return ftrace.read(path)


class Timeline:
    """The trace indexed for the questions explain() asks."""

    def __init__(self, events, reader):
        self.write_at = {int(e["seq"]): e["ts"] for e in events
                         if e["event"] == "irqhook_write" and "seq" in e}
        self.wakeups = [e["ts"] for e in events if e["event"] == "sched_wakeup"
                        and int(e.get("pid", -1)) == reader]
        self.runs = [e for e in events if e["event"] == "sched_switch"
                     and e["next_pid"] == reader]
        self.run_ts = [e["ts"] for e in self.runs]
        self.migrations = [e["ts"] for e in events if e["event"] == "sched_migrate_task"
                           and int(e.get("pid", -1)) == reader]
        self.switches = collections.defaultdict(list)
        for e in events:
            if e["event"] == "sched_switch":
                self.switches[e["cpu"]].append(e)
        self.switch_ts = {c: [e["ts"] for e in v] for c, v in self.switches.items()}

    def explain(self, index, seq):
        """What stood between the write of @seq and the reader running."""
        t_write = self.write_at.get(seq)
        if t_write is None:
            return None
        k = bisect.bisect_left(self.run_ts, t_write)
        if k == len(self.runs):
            return None
        run = self.runs[k]
        w = bisect.bisect_left(self.wakeups, t_write)
        t_wake = self.wakeups[w] if w < len(self.wakeups) and \
            self.wakeups[w] <= run["ts"] else t_write
        cpu = run["cpu"]
        sw, ts = self.switches[cpu], self.switch_ts[cpu]
        a = bisect.bisect_left(ts, t_wake)
        b = bisect.bisect_right(ts, run["ts"])
        # Each switch names the task that leaves the CPU: that task ran from the
        # previous switch (or the wake-up) until this one.
        ran, t = [], t_wake
        for e in sw[a:b]:
            if e["prev_pid"] == 0:
                left = "idle"
            elif e["prev_state"].startswith("R"):
                left = "preempted"
            else:
                left = f"blocked ({e['prev_state']})"
            ran.append({"comm": e["prev_comm"], "pid": e["prev_pid"], "ns": e["ts"] - t,
                        "left": left})
            t = e["ts"]
        migrated = bisect.bisect_right(self.migrations, run["ts"]) - \
            bisect.bisect_left(self.migrations, t_write)
        return {"event": index, "seq": seq, "cpu": cpu,
                "write_to_wakeup_ns": t_wake - t_write,
                "wakeup_to_run_ns": run["ts"] - t_wake, "ran": ran, "migrations": migrated}


def analyse(run_dir):
    """Explain every event; returns the meta.json, the summary, the
    explained events (each with wakeup_ns and slow=True/False) and the
    irqhook event count of the trace."""
    meta, rows, summary = irqhook.load(run_dir)
    reader = irqhook.reader_tid(run_dir)
    events = read_trace(run_dir)
    split = summary["all_events"]["wakeup"]["split"]
    threshold = split["threshold"] if split["slow_n"] else float("inf")
    timeline = Timeline(events, reader)
    found = []
    for r in rows:
        x = timeline.explain(r["event"], r["seq"])
        if x:
            x["wakeup_ns"] = r["wakeup_ns"]
            x["slow"] = x["wakeup_ns"] > threshold
            found.append(x)
    return meta, summary, found, sum(1 for e in events if e["event"].startswith("irqhook"))


def group_stats(group):
    """How the reader's CPU was used between wake-up and run, over @group."""
    if not group:
        return None
    others = [[r for r in x["ran"] if r["left"] != "idle"] for x in group]
    return {
        "events": len(group),
        "wakeup_mean_us": statistics.mean(x["wakeup_ns"] for x in group) / 1e3,
        "tasks_before_median": statistics.median(len(o) for o in others),
        "busy_before_median_us": statistics.median(sum(r["ns"] for r in o)
                                                   for o in others) / 1e3,
        "write_to_wakeup_median_us": statistics.median(x["write_to_wakeup_ns"]
                                                       for x in group) / 1e3,
        "wakeup_to_run_median_us": statistics.median(x["wakeup_to_run_ns"]
                                                     for x in group) / 1e3,
        # The task on the CPU at the wake-up was still runnable when the reader
        # got the CPU: the reader preempted it at once, or waited for others.
        "reader_ran_first": sum(1 for o in others if len(o) <= 1),
        "idle_cpu": sum(1 for x in group if x["ran"] and x["ran"][0]["left"] == "idle"),
        "migrations": sum(x["migrations"] for x in group),
    }


def describe(meta, summary, found):
    """The explanation, as lines of text."""
    lines = []
    w = summary["all_events"]["wakeup"]
    s = summary["settings"]
    lines.append(f"{summary['events']} events, {s.get('loads', '?')} load tasks, "
                 f"{s.get('class', '?')} read/write tasks, {results.describe(meta)}")
    lines.append(f"wake-up: fast {w['split']['fast_n']} x "
                 f"{w['split']['fast_mean'] / 1e3:.1f} us, slow {w['split']['slow_n']} x "
                 f"{w['split']['slow_mean'] / 1e3:.1f} us (threshold "
                 f"{w['split']['threshold'] / 1e3:.1f} us); {len(found)} events found in the trace")
    first = next((x for x in found if x["event"] == 0), None)
    if first:
        lines.append(f"first event: wake-up {first['wakeup_ns'] / 1e3:.1f} us; write -> "
                     f"sched_wakeup {first['write_to_wakeup_ns'] / 1e3:.1f} us, then on CPU "
                     f"{first['cpu']} until the reader ran: " +
                     (", ".join(f"{r['comm']}-{r['pid']} {r['ns'] / 1e3:.1f} us ({r['left']})"
                                for r in first["ran"]) or "nothing else"))
    for name, group in (("fast", [x for x in found if not x["slow"] and x["event"]]),
                        ("slow", [x for x in found if x["slow"] and x["event"]])):
        g = group_stats(group)
        if not g:
            lines.append(f"{name}: no events")
            continue
        lines.append(f"{name}: {g['events']} events, wake-up mean {g['wakeup_mean_us']:.1f} us; "
                     f"write -> sched_wakeup median {g['write_to_wakeup_median_us']:.1f} us, "
                     f"sched_wakeup -> reader runs median {g['wakeup_to_run_median_us']:.1f} us")
        lines.append(f"  before the reader ran: median {g['tasks_before_median']:g} other task "
                     f"runs holding the CPU for {g['busy_before_median_us']:.1f} us; the reader "
                     f"ran at most one task later in {g['reader_ran_first']} of "
                     f"{g['events']}, the CPU was idle at the wake-up in {g['idle_cpu']}, "
                     f"reader migrations {g['migrations']}")
    who = collections.Counter()
    for x in found:
        if x["slow"]:
            for r in x["ran"]:
                who[re.sub(r"\d+$", "N", r["comm"])] += r["ns"]
    if who:
        lines.append("CPU time between wake-up and run in slow events, by task: " +
                     ", ".join(f"{k} {v / 1e6:.1f} ms" for k, v in who.most_common(6)))
    return lines


def explain_run(run_dir):
    """Write trace_events.csv and explanation.txt of @run_dir; returns the text."""
    meta, summary, found, n_irq = analyse(run_dir)
    if n_irq == 0:
        raise ValueError(f"{run_dir}/trace.dat has no irqhook events")
    d = pathlib.Path(run_dir)
    results.write_csv(d / "trace_events.csv", TRACE_COLUMNS, (
        {"event": x["event"], "seq": x["seq"], "slow": int(x["slow"]), "cpu": x["cpu"],
         "wakeup_ns": f"{x['wakeup_ns']:.0f}", "write_to_wakeup_ns": x["write_to_wakeup_ns"],
         "wakeup_to_run_ns": x["wakeup_to_run_ns"], "migrations": x["migrations"],
         "ran_before_reader": "; ".join(f"{r['comm']}-{r['pid']} {r['ns']} ns {r['left']}"
                                        for r in x["ran"])}
        for x in found))
    text = "\n".join(describe(meta, summary, found)) + "\n"
    results.write_text(d / "explanation.txt", text)
    return text


def add_args(p):
    p.add_argument("dir", metavar="CELL_DIR",
                   help="an irqhook result folder recorded with --trace")


def work(args):
    print(explain_run(args.dir), end="")


main = cli.command(__doc__, "python -m lablib.irqhook.trace_report "
                   "results/latest-irqhook-sweep/traced-16-normal",
                   add_args, work)


if __name__ == "__main__":
    sys.exit(main())
