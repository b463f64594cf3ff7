"""lablib/ftrace.py, the lab's reader of trace-cmd report, on captured
output: rt-compare's delay member on the stock kernel under the virtual
clock, cyclictest -b stopping the trace at a wake-up held up by the delay
module's 50 us hold of a getppid call (data/trace-report-delay-hold.txt)."""
import pathlib
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "userspace"))
from lablib import ftrace  # noqa: E402

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
