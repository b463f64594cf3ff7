"""trace-cmd's report of a trace.dat, the lab's one reader of it.

'trace-cmd report -N -t' prints one event a line: the task, its pid, the
CPU, the timestamp in seconds with ns, the event's name and its fields in
the kernel's own format (-N: no plugins).  parse_report() turns that into
dicts; wakeup_delay() answers the question every latency trace is taken
for: a task was woken, and what held its CPU until it ran.
timer_wakeups() finds, in a whole traced run, every time a task that
slept on its own timer (cyclictest's threads) ran late, and
worst_wakeup() explains the latest.  caught() reads a lighter trace,
one that cyclictest -b stopped at a late wake-up, and names the code
that ran while it waited.
"""
import bisect
import collections
import pathlib
import re
import shutil
import subprocess

LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
                  r"(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s+(?P<rest>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")
SWITCH = re.compile(r"prev_comm=(?P<prev_comm>.*?) prev_pid=(?P<prev_pid>\d+) "
                    r"prev_prio=\d+ prev_state=(?P<prev_state>\S+) ==> "
                    r"next_comm=(?P<next_comm>.*?) next_pid=(?P<next_pid>\d+)"
                    r"(?: next_prio=(?P<next_prio>\d+))?")
# workqueue_execute_start: "work struct 0x...: function vmstat_update".
WORK = re.compile(r"function (\S+)")
# What a user-space write to trace_marker becomes (cyclictest --tracemark).
MARKS = ("print", "tracing_mark_write")


def ns(ts):
    """A report timestamp ('1234.000567890') in integer ns."""
    sec, _, frac = ts.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def parse_report(text):
    """Events as dicts sorted by time: ts (ns), cpu, event, comm and pid of
    the task that was running, then the event's own fields as strings,
    which override those (sched_wakeup's pid is the woken task's);
    sched_switch's as prev_/next_ comm, pid (int) and state; a mark's text
    (cyclictest --tracemark) as 'text'."""
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
            ev["next_prio"] = int(ev["next_prio"]) if ev["next_prio"] else None
        elif m["event"] in MARKS:
            ev["text"] = m["rest"].split(":", 1)[-1].strip()
        elif m["event"] in ("workqueue_execute_start", "workqueue_execute_end"):
            f = WORK.search(m["rest"])
            ev["function"] = f[1] if f else "?"
        else:
            ev.update(dict(FIELD.findall(m["rest"])))
        events.append(ev)
    events.sort(key=lambda e: e["ts"])
    return events


def report(path):
    """trace-cmd report -N -t of trace.dat @path, as text; ValueError when
    it is missing or trace-cmd fails or is not installed."""
    path = pathlib.Path(path)
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if not shutil.which("trace-cmd"):
        raise ValueError("trace-cmd is not installed (Debian: trace-cmd)")
    out = subprocess.run(["trace-cmd", "report", "-N", "-t", "-i", str(path)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(f"trace-cmd report failed: {out.stderr.strip()}")
    return out.stdout


def read(path):
    """The events of trace.dat @path (report(), parse_report())."""
    return parse_report(report(path))


LOST = re.compile(r"^CPU:\d+ \[(?:(\d+) )?EVENTS DROPPED\]", re.M)


def lost(text):
    """How many events report text @text says the ring buffer dropped
    (trace-cmd prints "CPU:0 [12 EVENTS DROPPED]"; one where it does not
    say how many)."""
    return sum(int(m[1] or 1) for m in LOST.finditer(text))


def excerpt(text, start, end):
    """The lines of report text @text whose timestamps lie from @start to
    @end (ns): what a reader looks at around one event."""
    keep = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m and start <= ns(m["ts"]) <= end:
            keep.append(line)
    return "\n".join(keep) + "\n"


def wakeup_delay(events, pid, before=None):
    """What stood between the last wake-up of task @pid before time @before
    (default: the end of the trace) and its running.  None if the trace
    has no switch to it after a wake-up; else a dict: woken (ns, its first
    sched_waking or sched_wakeup since it last slept), ran (ns), latency_ns,
    cpu, and held: each task that had that CPU meanwhile, in order, as
    {comm, pid, ns, events, ran}, events counting what happened on the CPU
    in its time (irq_handler_entry, delay_syscall, ...), ran counting the
    code they name (_what(): "work vmstat_update", "softirq TIMER", "irq
    virtio0-requests", "hrtimer hrtimer_wakeup", "wakes kworker/0:1-9",
    not the task's own wake-up), and delay_ns: the
    spins the delay module reported in its time (delay:delay_syscall);
    timer_late_ns: how late the timer that woke it fired (timer_late())."""
    end = before if before is not None else float("inf")
    runs = [e for e in events if e["event"] == "sched_switch" and e["next_pid"] == pid
            and e["ts"] <= end]
    if not runs:
        return None
    run = runs[-1]
    slept = max((e["ts"] for e in events if e["event"] == "sched_switch"
                 and e["prev_pid"] == pid and e["ts"] < run["ts"]), default=-1)
    wakes = [e["ts"] for e in events if e["event"] in ("sched_waking", "sched_wakeup")
             and str(e.get("pid")) == str(pid) and slept < e["ts"] <= run["ts"]]
    if not wakes:
        return None
    woken, cpu = min(wakes), run["cpu"]
    window = [e for e in events if e["cpu"] == cpu and woken <= e["ts"] <= run["ts"]]
    switches = [e for e in window if e["event"] == "sched_switch"]
    held, since = [], woken
    for sw in switches:
        part = [e for e in window if since <= e["ts"] < sw["ts"]
                and e["event"] != "sched_switch"]
        held.append({"comm": sw["prev_comm"], "pid": sw["prev_pid"], "ns": sw["ts"] - since,
                     "events": dict(collections.Counter(e["event"] for e in part)),
                     "ran": dict(collections.Counter(
                         w for e in part if (w := _what(e))
                         and not (e["event"] == "sched_waking" and str(e["pid"]) == str(pid)))),
                     "delay_ns": [int(e["measured_ns"]) for e in part
                                  if e["event"] == "delay_syscall" and "measured_ns" in e]})
        since = sw["ts"]
    return {"woken": woken, "ran": run["ts"], "latency_ns": run["ts"] - woken, "cpu": cpu,
            "held": held, "timer_late_ns": timer_late(events, cpu, woken)}


def _what(e):
    """The code an event says ran: a work item's function, a softirq's
    action, an interrupt handler's name; None for other events."""
    if e["event"] == "workqueue_execute_start":
        return f"work {e['function']}"
    if e["event"] == "softirq_entry":
        return f"softirq {e.get('action', e.get('vec', '?')).strip('[]')}"
    if e["event"] == "irq_handler_entry":
        return f"irq {e.get('name', e.get('irq', '?'))}"
    if e["event"] == "sched_waking":
        return f"wakes {e.get('comm', '?')}-{e['pid']}"
    if e["event"] in ("hrtimer_expire_entry", "timer_expire_entry"):
        return f"{e['event'].split('_')[0]} {e.get('function', '?').split('/')[0]}"
    return None


def timer_late(events, cpu, woken):
    """How late the hrtimer whose expiry woke the task (the last
    hrtimer_expire_entry on @cpu up to @woken) ran after it was due (its
    hrtimer_start's expires, on the trace's clock, trace-cmd -C mono), in
    ns; None if the trace lacks either event."""
    entry = next((e for e in reversed(events) if e["event"] == "hrtimer_expire_entry"
                  and e["cpu"] == cpu and e["ts"] <= woken), None)
    if entry is None:
        return None
    start = next((e for e in reversed(events) if e["event"] == "hrtimer_start"
                  and e.get("hrtimer") == entry.get("hrtimer") and e["ts"] < entry["ts"]), None)
    if start is None or not start.get("expires", "").isdigit():
        return None
    return entry["ts"] - int(start["expires"])


def mark(events, containing=""):
    """The last trace_marker write whose text contains @containing, or None."""
    found = [e for e in events if e["event"] in MARKS and containing in e.get("text", "")]
    return found[-1] if found else None


def timer_wakeups(events, pids=None):
    """Every run of a task that had slept on its own hrtimer
    (clock_nanosleep: hrtimer_start of hrtimer_wakeup in its context), in
    time order: dicts of pid, due (the timer's expires, ns, on the trace's
    clock: trace-cmd -C mono), ran (its sched_switch in) and latency_ns =
    ran - due, what cyclictest measures from user space.  @pids: the
    tasks to follow; default every task named cyclictest that was
    switched in at a real-time priority most of the time (its measuring
    threads, not its main thread)."""
    if pids is None:
        # The priority a thread runs at most often: cyclictest's main
        # thread can be boosted to real-time for a moment (priority
        # inheritance on PREEMPT_RT), which does not make it a measuring one.
        prios = collections.defaultdict(collections.Counter)
        for e in events:
            if e["event"] == "sched_switch" and e["next_comm"].startswith("cyclictest") \
                    and e["next_prio"] is not None:
                prios[e["next_pid"]][e["next_prio"]] += 1
        pids = {p for p, c in prios.items() if c.most_common(1)[0][0] < 100}
    # A run counts when the task had armed its timer and then slept (left
    # the CPU in a state other than R): one preempted between the two, as
    # PREEMPT_RT does, comes back without having slept, and that is not a
    # wake-up.
    due, asleep, out = {}, set(), []
    for e in events:
        if e["event"] == "hrtimer_start":
            if e["pid"] in pids and e.get("function", "").startswith("hrtimer_wakeup") \
                    and e.get("expires", "").isdigit():
                due[e["pid"]] = int(e["expires"])
            continue
        if e["event"] != "sched_switch":
            continue
        if e["prev_pid"] in due and not e["prev_state"].startswith("R"):
            asleep.add(e["prev_pid"])
        if e["next_pid"] in asleep:
            asleep.discard(e["next_pid"])
            d = due.pop(e["next_pid"])
            out.append({"pid": e["next_pid"], "due": d, "ran": e["ts"],
                        "latency_ns": e["ts"] - d})
    return out


def worst_wakeup(events, pids=None):
    """The latest of timer_wakeups(), explained: its dict with count (how
    many wake-ups the trace holds) and wakeup_delay()'s answer for it as
    'delay' (what held the CPU from its wake-up to its run, and how late
    its timer fired); None if the trace holds no such wake-up."""
    runs = timer_wakeups(events, pids)
    if not runs:
        return None
    worst = dict(max(runs, key=lambda r: r["latency_ns"]), count=len(runs))
    # Only the events since the timer was armed matter: a window keeps a
    # long trace's search short.
    ts = [e["ts"] for e in events]
    lo = bisect.bisect_left(ts, worst["due"] - 2 * worst["latency_ns"] - 1_000_000)
    hi = bisect.bisect_right(ts, worst["ran"])
    worst["delay"] = wakeup_delay(events[lo:hi], worst["pid"], before=worst["ran"])
    return worst


# cyclictest -b N --tracemark writes this when a wake-up exceeds N us.
HIT = re.compile(r"hit latency threshold \((\d+) > (\d+)\)")
# The events that open and close a piece of code _what() names.
SPANS = {"workqueue_execute_start": "workqueue_execute_end",
         "softirq_entry": "softirq_exit", "irq_handler_entry": "irq_handler_exit"}


def caught(events):
    """What ran while a late wake-up waited, from a trace that cyclictest
    -b --tracemark stopped (only work items, softirqs and interrupt
    handlers need be traced: tens of events a second, which leaves the run
    nearly as it is).  None without the mark; else a dict: latency_us and
    threshold_us (the mark's), cpu, at (the mark, ns), due (at - latency:
    when the wake-up was due, to the us) and ran: every work item, softirq
    and handler on that CPU whose run overlaps due..at, longest overlap
    first, as {what (_what()), comm, pid, start, end (None: still running
    when the trace stopped), ns (its whole run), overlap_ns}."""
    mark_ = next((e for e in reversed(events)
                  if e["event"] in MARKS and HIT.search(e.get("text", ""))), None)
    if mark_ is None:
        return None
    latency, threshold = map(int, HIT.search(mark_["text"]).groups())
    at, cpu = mark_["ts"], mark_["cpu"]
    due = at - latency * 1000
    opened, ran = {}, []

    def add(start, end):
        stop = at if end is None else min(end, at)
        if stop >= due:
            ran.append({"what": _what(start), "comm": start["comm"], "pid": start["pid"],
                        "start": start["ts"], "end": end,
                        "ns": None if end is None else end - start["ts"],
                        "overlap_ns": stop - max(start["ts"], due)})
    for e in events:
        if e["cpu"] != cpu or e["ts"] > at:
            continue
        if e["event"] in SPANS:
            opened[SPANS[e["event"]]] = e
        elif e["event"] in opened:
            add(opened.pop(e["event"]), e["ts"])
    for start in opened.values():
        add(start, None)
    ran.sort(key=lambda r: -r["overlap_ns"])
    return {"latency_us": latency, "threshold_us": threshold, "cpu": cpu, "at": at,
            "due": due, "ran": ran}
