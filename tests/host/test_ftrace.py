"""lablib/ftrace.py, the lab's reader of trace-cmd report, on captured
output: rt-compare's delay member on the stock kernel under the virtual
clock, cyclictest -b stopping the trace at a wake-up held up by the delay
module's 50 us hold of a getppid call (data/trace-report-delay-hold.txt)."""
import pathlib


from lablib.readers import ftrace

DATA = pathlib.Path(__file__).parent / "data"


def events():
    return ftrace.parse_report((DATA / "trace-report-delay-hold.txt").read_text())


def test_parse_report_reads_switches_fields_and_marks():
    ev = events()
    assert [e["ts"] for e in ev] == sorted(e["ts"] for e in ev)
    sw = [e for e in ev if e["event"] == "sched_switch"]
    assert sw[-1]["prev_comm"] == "nullcall" and sw[-1]["prev_pid"] == 93
    assert sw[-1]["next_pid"] == 110 and sw[-1]["prev_state"] == "R"
    hold = [e for e in ev if e["event"] == "delay_syscall"]
    assert hold[-1]["measured_ns"] == "50016" and hold[-1]["nr"] == "110"
    # sched_waking's pid is the woken task's, as the kernel prints it.
    assert [e["pid"] for e in ev if e["event"] == "sched_waking"] == ["110", "110"]
    m = ftrace.mark(ev)
    assert m["pid"] == 110 and m["text"] == "hit latency threshold (49 > 45)"
    assert m["ts"] == 22_303_833_767
    assert ftrace.mark(ev, "nothing like this") is None


def test_wakeup_delay_names_what_held_the_cpu():
    ev = events()
    m = ftrace.mark(ev)
    w = ftrace.wakeup_delay(ev, m["pid"], before=m["ts"])
    assert w["cpu"] == 0
    assert w["woken"] == 22_303_783_285 and w["ran"] == 22_303_830_841
    assert w["latency_ns"] == 47_556
    assert len(w["held"]) == 1
    h = w["held"][0]
    assert (h["comm"], h["pid"], h["ns"]) == ("nullcall", 93, 47_556)
    assert h["delay_ns"] == [50016] and h["events"]["delay_syscall"] == 1
    # hrtimer_start's expires=22303782007, hrtimer_expire_entry at .303782636.
    assert w["timer_late_ns"] == 629


def test_wakeup_delay_before_a_time_takes_the_wake_up_before_it():
    ev = events()
    # The period before: woken while nullcall was 30 us into a hold of 50 us.
    w = ftrace.wakeup_delay(ev, 110, before=22_303_783_000)
    assert w["latency_ns"] == 22_302_803_249 - w["woken"] and w["latency_ns"] == 19_953
    assert [h["delay_ns"] for h in w["held"]] == [[50016]]


def test_wakeup_delay_without_a_wake_up_is_none():
    ev = events()
    assert ftrace.wakeup_delay(ev, 4242) is None
    assert ftrace.wakeup_delay(ev, 110, before=22_302_700_000) is None


def loaded():
    """cyclictest's thread (pid 78, FIFO 90) beside sortsum on stock, the
    whole run traced: the 3 ms before its worst wake-up of 20,000."""
    return ftrace.parse_report((DATA / "trace-report-loaded.txt").read_text())


def test_timer_wakeups_measure_from_due_to_run_for_the_rt_threads_only():
    runs = ftrace.timer_wakeups(loaded())
    # cyclictest's main thread (pid 77, prio 120) sleeps on a timer too;
    # only the measuring thread is followed.
    assert [r["pid"] for r in runs] == [78, 78, 78]
    # expires=77358012142 was armed at the run before; due .357012142,
    # switched in at .357023668.
    last = runs[-1]
    assert (last["due"], last["ran"], last["latency_ns"]) == (
        77_357_012_142, 77_357_023_668, 11_526)
    assert [r["latency_ns"] for r in runs[:2]] == [5_700, 5_542]
    assert ftrace.timer_wakeups(loaded(), pids={77}) == []


def test_worst_wakeup_explains_the_latest_run():
    w = ftrace.worst_wakeup(loaded())
    assert w["latency_ns"] == 11_526 and w["count"] == 3
    d = w["delay"]
    assert d["timer_late_ns"] == 649 and d["latency_ns"] == 10_228
    (h,) = d["held"]
    assert (h["comm"], h["pid"], h["ns"]) == ("sortsum", 74, 10_228)
    # What ran meanwhile: the main thread's timer, which woke it; not the
    # measuring thread's own wake-up.
    assert h["ran"] == {"hrtimer hrtimer_wakeup": 1, "wakes cyclictest-77": 1}


def test_worst_wakeup_without_timed_sleepers_is_none():
    assert ftrace.worst_wakeup(events()[:0]) is None


def test_parse_report_names_work_items_and_softirqs():
    ev = ftrace.parse_report(
        "     kworker/0:1-9     [000]    58.100000000: workqueue_execute_start: "
        "work struct 0xff11000003e1a0c8: function vmstat_update\n"
        "         sortsum-74    [000]    58.100002000: softirq_entry:        vec=1 "
        "[action=TIMER]\n")
    assert ev[0]["function"] == "vmstat_update"
    assert [ftrace._what(e) for e in ev] == ["work vmstat_update", "softirq TIMER"]


def test_excerpt_keeps_the_lines_of_a_time_window():
    text = (DATA / "trace-report-loaded.txt").read_text()
    lines = ftrace.excerpt(text, 77_357_012_000, 77_357_023_668).splitlines()
    assert "hrtimer_expire_entry" in lines[0] and "next_comm=cyclictest" in lines[-1]
    assert len(lines) == 11


def line(ts, comm, pid, event, rest):
    return f"{comm:>16}-{pid:<5} [000] {ts:>16}: {event}: {rest}"


def switch(ts, prev, prev_pid, prev_prio, state, nxt, next_pid, next_prio):
    return line(ts, prev, prev_pid, "sched_switch",
                f"prev_comm={prev} prev_pid={prev_pid} prev_prio={prev_prio} "
                f"prev_state={state} ==> next_comm={nxt} next_pid={next_pid} "
                f"next_prio={next_prio}")


def test_timer_wakeups_skip_a_boosted_main_thread_and_a_preempted_arming():
    """PREEMPT_RT: cyclictest's main thread (prio 120) once ran boosted to
    9, and the measuring thread (9) was preempted between arming its
    timer and sleeping; neither is a timer wake-up."""
    arm = "function=hrtimer_wakeup expires={} softexpires={} mode=0x8 was_armed=0"
    ev = ftrace.parse_report("\n".join([
        switch("1.000000000", "sortsum", 7, 120, "R", "cyclictest", 5, 120),
        line("1.000001000", "cyclictest", 5, "hrtimer_start",
             "hrtimer=0xa " + arm.format(1_010_000_000, 1_010_000_000)),
        switch("1.000002000", "cyclictest", 5, 120, "S", "cyclictest", 5, 9),
        switch("1.000003000", "cyclictest", 5, 9, "S", "cyclictest", 6, 9),
        line("1.000004000", "cyclictest", 6, "hrtimer_start",
             "hrtimer=0xb " + arm.format(1_001_000_000, 1_001_000_000)),
        switch("1.000005000", "cyclictest", 6, 9, "R", "ksoftirqd/0", 16, 120),
        switch("1.000006000", "ksoftirqd/0", 16, 120, "S", "cyclictest", 6, 9),
        switch("1.000007000", "cyclictest", 6, 9, "S", "sortsum", 7, 120),
        switch("1.001002500", "sortsum", 7, 120, "R", "cyclictest", 6, 9),
        switch("1.010004000", "sortsum", 7, 120, "R", "cyclictest", 5, 120),
    ]))
    runs = ftrace.timer_wakeups(ev)
    assert [(r["pid"], r["latency_ns"]) for r in runs] == [(6, 2_500)]


def test_lost_counts_what_the_ring_buffer_dropped():
    assert ftrace.lost((DATA / "trace-report-loaded.txt").read_text()) == 0
    assert ftrace.lost("CPU:0 [12 EVENTS DROPPED]\nx\nCPU:1 [EVENTS DROPPED]\n") == 13


def test_caught_names_the_work_item_a_late_wake_up_waited_for():
    """Captured: stock on the virtual clock, only workqueue events traced,
    cyclictest -i 100 -b 25 --tracemark stopped at a 43 us wake-up that
    was due while vmstat_update drained the per-CPU page lists."""
    ev = ftrace.parse_report((DATA / "trace-report-caught.txt").read_text())
    c = ftrace.caught(ev)
    assert (c["latency_us"], c["threshold_us"], c["cpu"]) == (43, 25, 0)
    assert c["due"] == c["at"] - 43_000
    first = c["ran"][0]
    assert first["what"] == "work vmstat_update" and first["comm"] == "kworker/0:1"
    assert first["ns"] == 18_908_092_655 - 18_908_005_812
    assert first["overlap_ns"] == 18_908_092_655 - c["due"]
    # Earlier work items (the vmstat_update of a second before) are not in it.
    assert [r["start"] for r in c["ran"]] == [18_908_005_812]


def test_caught_counts_what_was_still_running_and_nests_kinds():
    def ev(ts, event, **f):
        return {"ts": ts, "cpu": 0, "event": event, "comm": "kworker/0:1", "pid": 9, **f}
    events = [ev(1000, "workqueue_execute_start", function="drain"),
              ev(2000, "softirq_entry", vec="1", action="TIMER"),
              ev(3000, "softirq_exit", vec="1", action="TIMER"),
              ev(9000, "print", text="hit latency threshold (5 > 4)")]
    c = ftrace.caught(events)
    assert c["due"] == 4000
    # The softirq ended before the wake-up was due; the work item never ended.
    assert [(r["what"], r["end"], r["overlap_ns"]) for r in c["ran"]] == \
        [("work drain", None, 5000)]


def test_caught_without_the_mark_is_none():
    assert ftrace.caught([e for e in events() if e["event"] not in ftrace.MARKS]) is None
