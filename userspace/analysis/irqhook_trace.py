#!/usr/bin/env python3
"""Explain the slow events of a traced irqhook run.

Reads RUN_DIR/trace.dat (through 'trace-cmd report'), RUN_DIR/summary.json
and RUN_DIR/events.csv.  For every event whose wake-up time is above the
run's fast/slow threshold (and for the first event) it finds, on the trace's
CLOCK_MONOTONIC time line:

  - when the driver accepted the write (irqhook:irqhook_write, by seq),
  - when the read task was woken (sched:sched_wakeup) and on which CPU,
  - what ran on that CPU from the wake-up until the read task ran
    (sched:sched_switch): each task, how long, and whether it left the CPU
    still runnable (preempted) or because it blocked.

Writes RUN_DIR/slow_events.csv and RUN_DIR/explanation.txt and prints the
explanation: which tasks stood between a wake-up and the reader running,
how often, and for how long.

usage: irqhook_trace.py RUN_DIR
"""
import bisect
import collections
import csv
import json
import os
import re
import statistics
import subprocess
import sys

from labcli import run

LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
                  r"(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s+(?P<rest>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")
SWITCH = re.compile(r"prev_comm=(?P<prev_comm>.*?) prev_pid=(?P<prev_pid>\d+) "
                    r"prev_prio=\d+ prev_state=(?P<prev_state>\S+) ==> "
                    r"next_comm=(?P<next_comm>.*?) next_pid=(?P<next_pid>\d+)")


def ns(ts):
    sec, _, frac = ts.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def parse_report(text):
    """Events as dicts: ts (ns), cpu, event, and the event's fields."""
    events = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        ev = {"ts": ns(m["ts"]), "cpu": int(m["cpu"]), "event": m["event"],
              "comm": m["comm"], "pid": int(m["pid"])}
        if m["event"] == "sched_switch":
            s = SWITCH.search(m["rest"])
            if not s:
                continue
            ev.update(s.groupdict())
            ev["prev_pid"], ev["next_pid"] = int(ev["prev_pid"]), int(ev["next_pid"])
        else:
            ev.update(dict(FIELD.findall(m["rest"])))
        events.append(ev)
    events.sort(key=lambda e: e["ts"])
    return events


def read_trace(run_dir):
    path = os.path.join(run_dir, "trace.dat")
    if not os.path.exists(path):
        raise ValueError(f"{path} does not exist: run irqhook with --trace")
    # -N: no plugins, so every event prints in the kernel's own format.
    out = subprocess.run(["trace-cmd", "report", "-N", "-t", "-i", path], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise ValueError(f"trace-cmd report failed: {out.stderr.strip()}")
    return parse_report(out.stdout)


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
    with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    with open(os.path.join(run_dir, "events.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    events = read_trace(run_dir)
    reader = summary["tids"]["read"]
    threshold = summary["all_events"]["wakeup"]["split"]["threshold"]
    slow = [r for r in rows if float(r["wakeup_ns"]) > threshold
            and summary["all_events"]["wakeup"]["split"]["slow_count"]]
    wanted = [rows[0]] + [r for r in slow if r is not rows[0]]
    timeline = Timeline(events, reader)
    found = []
    for r in wanted:
        x = timeline.explain(int(r["event"]), int(r["seq"]))
        if x:
            x["wakeup_ns"] = float(r["wakeup_ns"])
            found.append(x)
    return summary, rows, slow, found, sum(1 for e in events if e["event"].startswith(
        "irqhook"))


def describe(summary, rows, slow, found):
    lines = []
    w = summary["all_events"]["wakeup"]
    lines.append(f"{summary['events']} events, {summary['loads']} load tasks, "
                 f"{summary['class']} read/write tasks, kernel {summary['kernel']}")
    lines.append(f"wake-up: fast {w['split']['fast_count']} x {w['split']['fast_mean'] / 1e3:.1f} us, "
                 f"slow {w['split']['slow_count']} x {w['split']['slow_mean'] / 1e3:.1f} us "
                 f"(threshold {w['split']['threshold'] / 1e3:.1f} us)")
    first = next((x for x in found if x["event"] == 0), None)
    if first:
        lines.append(f"first event: wake-up {first['wakeup_ns'] / 1e3:.1f} us; between the "
                     f"wake-up and the reader running on CPU {first['cpu']}: " +
                     (", ".join(f"{r['comm']}-{r['pid']} {r['ns'] / 1e3:.1f} us ({r['left']})"
                                for r in first["ran"]) or "nothing else ran"))
    rest = [x for x in found if x["event"] != 0]
    if not rest:
        lines.append("no slow events after the first")
        return lines
    who = collections.defaultdict(list)
    preempted = collections.Counter()
    nothing = 0
    for x in rest:
        if not x["ran"]:
            nothing += 1
        for r in x["ran"]:
            key = re.sub(r"\d+$", "N", r["comm"])
            who[key].append(r["ns"])
            if r["left"] == "preempted":
                preempted[key] += 1
    lines.append(f"{len(rest)} slow events explained from the trace "
                 f"(of {len(slow)} above the threshold):")
    for key, times in sorted(who.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"  {key}: ran on the reader's CPU in {len(times)} cases, median "
                     f"{statistics.median(times) / 1e3:.1f} us, max {max(times) / 1e3:.1f} us; "
                     f"preempted in {preempted[key]} of them")
    if nothing:
        lines.append(f"  in {nothing} cases nothing else ran: the CPU was idle or the "
                     f"delay was before the wake-up")
    lag = [x["write_to_wakeup_ns"] for x in rest]
    lines.append(f"  write -> sched_wakeup: median {statistics.median(lag) / 1e3:.1f} us; "
                 f"wakeup -> reader runs: median "
                 f"{statistics.median(x['wakeup_to_run_ns'] for x in rest) / 1e3:.1f} us; "
                 f"reader migrations in the window: {sum(x['migrations'] for x in rest)}")
    return lines


def explain_run(run_dir):
    summary, rows, slow, found, n_irq = analyse(run_dir)
    if n_irq == 0:
        raise ValueError("the trace has no irqhook events")
    with open(os.path.join(run_dir, "slow_events.csv"), "w", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["event", "seq", "cpu", "wakeup_ns", "write_to_wakeup_ns",
                      "wakeup_to_run_ns", "migrations", "ran_before_reader"])
        for x in found:
            out.writerow([x["event"], x["seq"], x["cpu"], f"{x['wakeup_ns']:.0f}",
                          x["write_to_wakeup_ns"], x["wakeup_to_run_ns"], x["migrations"],
                          "; ".join(f"{r['comm']}-{r['pid']} {r['ns']} ns {r['left']}"
                                    for r in x["ran"])])
    text = "\n".join(describe(summary, rows, slow, found)) + "\n"
    with open(os.path.join(run_dir, "explanation.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text, end="")


def main(argv):
    return run(__doc__, argv, 1, explain_run)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
