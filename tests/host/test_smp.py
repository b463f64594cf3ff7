"""lablib.smp.analyse on made-up runs whose figures are known: the
pooled statistics in cycles and ns, the spread of the rounds' medians, the
TLB shoot-downs per record, the pairing with perf bench, cyclictest and
ptsematest (units and directions made equal, the verdict), the reference
table, and one-line errors on bad folders."""
import csv
import json
import os
import subprocess
import sys

import pytest

import plotcheck
from resultdirs import (HOST_MACHINE, analysed, clocks_report, machine, write_csv,
                        write_meta)

from lablib import stats
from lablib.smp import analyse as analyser
import runners

ANALYSER = "lablib.smp.analyse"
HZ = 2e9                     # 2 cycles a ns
N = 5
OFFSETS = (-20, -10, 0, 10, 20)   # around each round's median, in ns

# case: (bench, placement, {span: [median ns of round 1, round 2, ...]}, extras)
CASES = {
    "pipes-cross": ("pipes", "cross", {"round_trip": [10000, 12000, 11000]}, {}),
    "pipes-same": ("pipes", "same", {"round_trip": [20000, 20000, 20000]}, {}),
    "cv-same": ("cv", "same", {"high_to_low": [3000, 3000, 3000],
                               "low_to_high": [3100, 3100, 3100],
                               "round_trip": [7000, 7000, 7000]}, {}),
    "timer": ("timer", "cross", {"sigalrm": [5000, 5000, 5000],
                                 "nanosleep": [30000, 30000, 30000]}, {}),
    "tlbflush-p1-remote0": ("tlbflush", "cross", {"munmap": [4000, 4000, 4000]},
                            {"pages": 1, "remote": 0, "tlb_shootdowns_per_record": 0.0}),
    "tlbflush-p1-remote1": ("tlbflush", "cross", {"munmap": [35000, 35000, 35000]},
                            {"pages": 1, "remote": 1, "tlb_shootdowns_per_record": 1.02}),
}


def smp_dir(d, cases=CASES, rounds=3, tools=True):
    write_meta(d, "smp", {"runs": rounds, "n": N})
    write_meta(d / "guest", "smp", {"runs": rounds, "n": N, "cpus": 2})
    for case, (bench, place, spans, extras) in cases.items():
        for r in range(1, rounds + 1):
            run = write_meta(d / "runs" / f"{case}-r{r}", f"smp-{bench}",
                             {"bench": bench, "placement": place, "cpus": [0, 1], "n": N,
                              "warmup": 1, "tsc_hz": HZ, "tsc_hz_source": "test",
                              "spans": list(spans), **extras})
            rows = [(i, sp, int((m[r - 1] + o) * HZ / 1e9), m[r - 1] + o)
                    for sp, m in spans.items() for i, o in enumerate(OFFSETS)]
            write_csv(run / "raw.csv", ("record", "span", "cycles", "ns"), rows)
    if tools:
        t = d / "tools"
        t.mkdir()
        for r in range(1, rounds + 1):
            # 11.0 us a round trip: pipes-cross's mean is 11,000 ns.
            (t / f"perf-pipe-threads-cross-r{r}.txt").write_text(
                "# Running 'sched/pipe' benchmark:\n# Executed 10000 pipe operations\n\n"
                "     Total time: 0.110 [sec]\n\n      11.000000 usecs/op\n"
                "          90909 ops/sec\n")
            (t / f"perf-pipe-threads-same-r{r}.txt").write_text("      40.000 usecs/op\n")
            (t / f"cyclictest-nanosleep-r{r}.json").write_text(json.dumps(
                {"thread": {"0": {"cycles": 10, "min": 29, "max": 33, "avg": 30.0,
                                  "histogram": {"29": 2, "30": 6, "33": 2}}}}))
            (t / f"ptsematest-r{r}.json").write_text(json.dumps(
                {"thread": {"0": {"sender": {"samples": 10},
                                  "receiver": {"min": 2, "avg": 3.0, "max": 9}}}}))
    return d


def analyse(root, *args):
    return subprocess.run([sys.executable, "-m", ANALYSER, *map(str, args)],
                          capture_output=True, text=True)


def test_pooled_rounds_and_tlb(root, tmp_path):
    d = smp_dir(tmp_path / "s")
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert s["tsc"] == {"hz": HZ, "source": "test"} and s["emulated"] is True
    assert list(s["cases"])[:2] == ["pipes-cross", "pipes-same"]
    pc = s["cases"]["pipes-cross"]["spans"]["round_trip"]
    assert pc["ns"]["n"] == 3 * N and pc["ns"]["mean"] == pytest.approx(11000)
    assert pc["ns"]["min"] == 9980 and pc["ns"]["max"] == 12020
    assert pc["cycles"]["p50"] == pytest.approx(2 * pc["ns"]["p50"])
    r = pc["round_p50"]
    assert (r["n"], r["min"], r["max"], r["unit"]) == (3, 10000, 12000, "ns")
    assert r["cv_pct"] == pytest.approx(1000 / 11000 * 100)
    assert [x["ns"]["p50"] for x in pc["rounds"]] == [10000, 12000, 11000]
    assert [x["cycles"]["p50"] for x in pc["rounds"]] == [20000, 24000, 22000]
    # Every summary has the lab's keys and says its unit.
    for block in (pc["ns"], pc["cycles"], r, *(x[u] for x in pc["rounds"]
                                               for u in ("ns", "cycles"))):
        assert set(stats.SUMMARY_KEYS) <= set(block) and block["unit"] in ("ns", "cycles")
    assert s["cases"]["pipes-same"]["spans"]["round_trip"]["round_p50"]["cv_pct"] == 0
    t = s["cases"]
    assert t["tlbflush-p1-remote1"]["tlb_shootdowns_per_record"] == pytest.approx(1.02)
    assert (t["tlbflush-p1-remote1"]["pages"], t["tlbflush-p1-remote1"]["remote"]) == (1, 1)
    rows = list(csv.DictReader(open(d / "summary.csv")))
    assert len(rows) == 2 * sum(len(c[2]) for c in CASES.values())
    report = (d / "report.txt").read_text()
    assert report in out.stdout and "host cycles of emulated work" in report
    assert next(ln for ln in report.splitlines() if ln.startswith("tlbflush-p1-remote1")
                and "1.02" in ln)


def test_pairs_made_equal_and_judged(root, tmp_path):
    d = smp_dir(tmp_path / "s")
    assert analyse(root, "--no-plot", d).returncode == 0
    pairs = {(p["ours"], p["tool"], p["statistic"]): p
             for p in json.loads((d / "summary.json").read_text())["pairs"]}
    # Round trip against round trip, us -> ns: 11,000 against 11,000.
    p = pairs[("pipes-cross round_trip", "perf-pipe-threads-cross", "mean")]
    assert p["tool_ns"] == pytest.approx(11000) and p["ratio"] == pytest.approx(1)
    assert p["agree"] is True and p["tool_rounds"] == 3
    # 20 us against 40 us: they differ, and the report says why.
    p = pairs[("pipes-same round_trip", "perf-pipe-threads-same", "mean")]
    assert p["ratio"] == pytest.approx(0.5) and p["agree"] is False
    # One way against one way: cv's high_to_low, ptsematest's average.
    p = pairs[("cv-same high_to_low", "ptsematest", "mean")]
    assert p["tool_ns"] == pytest.approx(3000) and p["agree"] is True
    assert pairs[("timer nanosleep", "cyclictest-nanosleep", "mean")]["ratio"] == \
        pytest.approx(1)
    # cyclictest's median from its histogram: 30 us.
    assert pairs[("timer nanosleep", "cyclictest-nanosleep", "p50")]["tool_ns"] == 30000
    # No perf process runs, no cyclictest -x: those pairs are left out.
    assert not any(k[1] in ("perf-pipe-process-cross", "cyclictest-posix") for k in pairs)
    report = (d / "report.txt").read_text()
    line = next(ln for ln in report.splitlines() if ln.startswith("pipes-same round_trip"))
    assert "0.50" in line and "differ" in line
    assert "- pipes-same round_trip vs perf-pipe-threads-same:" in report


def test_reference_in_cycles(root, tmp_path):
    d = smp_dir(tmp_path / "s")
    assert analyse(root, "--no-plot", d).returncode == 0
    ref = {r["reference"]: r for r in json.loads((d / "summary.json").read_text())["reference"]}
    assert ref["pipes"]["mean_cycles"] == pytest.approx(22000, rel=1e-3)
    assert ref["pipes"]["ratio"] == pytest.approx(22000 / 8770, rel=1e-3)
    assert "cv" not in ref        # cv-cross was not measured
    assert ref["tlbflush (2 cores)"]["case"] == "tlbflush-p1-remote1 munmap"


def test_pictures(root, tmp_path):
    d = smp_dir(tmp_path / "s", tools=False)
    out = analyse(root, d)
    assert out.returncode == 0, out.stderr
    for name in ("smp.png", "hist-pipes.png", "hist-tlbflush.png", "hist-timer.png"):
        assert (d / name).stat().st_size > 1000, name
    assert not (d / "hist-tun.png").exists()
    assert "no tool figures to pair" in (d / "report.txt").read_text()


def went_backwards(d, case, rnd, span, records, said=None):
    """Make @records of @span in runs/CASE-rRND/raw.csv go backwards (the
    end before the start, as when two vCPUs' TSCs disagree) and say so in
    its meta.json as smp does (@said: a wrong count instead)."""
    run = d / "runs" / f"{case}-r{rnd}"
    rows = list(csv.DictReader(open(run / "raw.csv")))
    for r in rows:
        if r["span"] == span and int(r["record"]) in records:
            r["cycles"], r["ns"] = -int(r["cycles"]) - 800000, -float(r["ns"]) - 400000
    write_csv(run / "raw.csv", ("record", "span", "cycles", "ns"),
              [tuple(r.values()) for r in rows])
    meta = json.loads((run / "meta.json").read_text())
    meta["settings"]["backward"] = {sp: 0 for sp in meta["settings"]["spans"]}
    meta["settings"]["backward"][span] = len(records) if said is None else said
    (run / "meta.json").write_text(json.dumps(meta))


def test_spans_that_went_backwards_are_counted_and_left_out(root, tmp_path):
    """A record whose end came before its start (a cross-CPU span on vCPUs
    whose TSCs disagree went 400 us backwards) is a fact to report, not a
    broken folder: counted per span and round, left out of every figure,
    named in the report."""
    d = smp_dir(tmp_path / "s", tools=False)
    went_backwards(d, "timer", 2, "nanosleep", {1, 3})
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    ns = s["cases"]["timer"]["spans"]["nanosleep"]
    assert ns["backward"] == 2 and ns["ns"]["n"] == ns["cycles"]["n"] == 3 * N - 2
    assert ns["ns"]["min"] == 29980 and ns["cycles"]["min"] > 0
    assert [r["backward"] for r in ns["rounds"]] == [0, 2, 0]
    assert [r["ns"]["n"] for r in ns["rounds"]] == [N, N - 2, N]
    assert s["cases"]["timer"]["spans"]["sigalrm"]["backward"] == 0
    assert s["cases"]["pipes-cross"]["spans"]["round_trip"]["backward"] == 0
    rows = [r for r in csv.DictReader(open(d / "summary.csv"))
            if (r["case"], r["span"]) == ("timer", "nanosleep")]
    assert [(r["unit"], r["backward"], r["n"]) for r in rows] == \
        [("cycles", "2", str(3 * N - 2)), ("ns", "2", str(3 * N - 2))]
    report = (d / "report.txt").read_text()
    assert f"left out: timer nanosleep: 2 of {3 * N} records went backwards" in report
    assert report.count("went backwards") == 1


def test_a_span_whose_every_record_went_backwards(root, tmp_path):
    """Nothing left to summarise: no figures, no pairs, no picture of it,
    and still a report."""
    d = smp_dir(tmp_path / "s", {"timer": CASES["timer"]}, rounds=1)
    went_backwards(d, "timer", 1, "nanosleep", set(range(N)))
    out = analyse(root, d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    ns = s["cases"]["timer"]["spans"]["nanosleep"]
    assert (ns["backward"], ns["ns"]["n"], ns["ns"]["p50"]) == (N, 0, None)
    assert not [p for p in s["pairs"] if p["ours"] == "timer nanosleep"]
    assert f"left out: timer nanosleep: {N} of {N} records" in (d / "report.txt").read_text()


@pytest.mark.parametrize("breakage, message", [
    ("empty", "no runs/*/ folders"),
    ("badname", "not CASE-rK"),
    ("short", "4 records of span round_trip, but meta.json says n = 5"),
    ("span", "span 'bogus' is not one of round_trip"),
    ("perf", "no 'usecs/op' line"),
    ("cyclictest", "not a cyclictest --json file"),
    ("backward", "1 records of span round_trip went backwards, but meta.json says 2"),
    ("signs", "not finite, or of different signs"),
])
def test_bad_folders(root, tmp_path, breakage, message):
    d = smp_dir(tmp_path / "s", {"pipes-cross": CASES["pipes-cross"]}, rounds=1)
    raw = d / "runs/pipes-cross-r1/raw.csv"
    if breakage == "empty":
        d = write_meta(tmp_path / "e", "smp", {})
    elif breakage == "badname":
        (d / "runs/pipes-cross-r1").rename(d / "runs/pipes-cross")
    elif breakage == "short":
        raw.write_text("\n".join(raw.read_text().splitlines()[:-1]) + "\n")
    elif breakage == "span":
        raw.write_text(raw.read_text() + "5,bogus,1,1\n")
    elif breakage == "backward":
        went_backwards(d, "pipes-cross", 1, "round_trip", {2}, said=2)
    elif breakage == "signs":
        raw.write_text(raw.read_text().replace("\n0,round_trip,", "\n0,round_trip,-", 1))
    elif breakage == "perf":
        (d / "tools/perf-pipe-threads-cross-r1.txt").write_text("Segmentation fault\n")
    else:
        (d / "tools/cyclictest-nanosleep-r1.json").write_text("{}")
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 1 and len(out.stderr.splitlines()) == 1, out.stderr
    assert message in out.stderr and not (d / "summary.json").exists()


# --- the smp tool itself, as far as any kernel and user can run it ---------

@pytest.fixture(scope="module")
def smp(root):
    subprocess.run(["make", "-s", "-C", root / "userspace/smp"], check=True)
    return root / "userspace/smp/smp"


def test_tool_output_is_what_the_analyser_reads(root, smp, tmp_path):
    """Two benchmarks that need neither root nor a second CPU, run the way
    guest.sh runs them, then analysed."""
    d = write_meta(tmp_path / "s", "smp", {"runs": 1, "n": 20})
    for case, args in (("pipes-same", ["pipes", "--same-cpu"]),
                       ("tlbflush-p1-remote0", ["tlbflush", "--remote", "0"])):
        out = subprocess.run([smp, *args, "-n", "20", "--warmup", "2", "-q", "-o",
                              d / "runs", "--name", f"{case}-r1"], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    cases = json.loads((d / "summary.json").read_text())["cases"]
    assert cases["pipes-same"]["spans"]["round_trip"]["ns"]["n"] == 20
    assert cases["pipes-same"]["placement"] == "same"
    t = cases["tlbflush-p1-remote0"]
    assert (t["pages"], t["remote"], t["remote_cpus"]) == (1, 0, [])
    assert t["spans"]["munmap"]["cycles"]["min"] > 0


# Loaded into smp, the host's clock misbehaving on purpose for the thread
# smp-timer.  A record of timer reads CLOCK_MONOTONIC (a few times: the
# TSC, the clock and the TSC again, the narrowest pair), arms the POSIX
# timer, waits, then reads the clock again for the nanosleep span and
# sleeps.  For the records in SKEW (",1,3,"), every read for the nanosleep
# span is 10 ms early, so the expiry has passed when it is armed and the
# span ends before its start, as when the TSC and the clock disagree.  For
# those in STALL, the first read for it stops the thread 20 ms after it
# read the clock, as a host that deschedules the vCPU there would.  With
# LATE_MS, every POSIX timer expires that much later than armed, as on a
# host that leaves the vCPU waiting.
SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int armed, reads = -1;	/* timer_settime calls; reads since the last */

static int listed(const char *var, int record)
{
	const char *list = getenv(var);
	char key[24];

	snprintf(key, sizeof(key), ",%d,", record);
	return list && strstr(list, key);
}

int timer_settime(timer_t t, int flags, const struct itimerspec *v, struct itimerspec *o)
{
	int (*real)(timer_t, int, const struct itimerspec *, struct itimerspec *) =
		dlsym(RTLD_NEXT, "timer_settime");

	struct itimerspec late = *v;
	const char *ms = getenv("LATE_MS");

	armed++;
	reads = 0;
	if (ms) {
		late.it_value.tv_sec += atol(ms) / 1000;
		late.it_value.tv_nsec += atol(ms) % 1000 * 1000000;
		if (late.it_value.tv_nsec >= 1000000000) {
			late.it_value.tv_nsec -= 1000000000;
			late.it_value.tv_sec++;
		}
	}
	return real(t, flags, &late, o);
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *ts, struct timespec *rem)
{
	int (*real)(clockid_t, int, const struct timespec *, struct timespec *) =
		dlsym(RTLD_NEXT, "clock_nanosleep");

	reads = -1;
	return real(id, flags, ts, rem);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	struct timespec stall = { 0, 20000000 };
	int r = (int)syscall(SYS_clock_gettime, id, ts);
	char name[16] = "";

	if (r || id != CLOCK_MONOTONIC || reads < 0)
		return r;
	pthread_getname_np(pthread_self(), name, sizeof(name));
	if (strcmp(name, "smp-timer"))
		return r;
	if (listed("SKEW", armed - 1)) {
		ts->tv_nsec -= 10000000;
		if (ts->tv_nsec < 0) {
			ts->tv_nsec += 1000000000;
			ts->tv_sec--;
		}
	}
	if (listed("STALL", armed - 1) && reads == 0)
		syscall(SYS_nanosleep, &stall, NULL);
	reads++;
	return r;
}
"""


@pytest.fixture
def clock_shim(tmp_path):
    (tmp_path / "shim.c").write_text(SHIM_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-o", tmp_path / "shim.so",
                    tmp_path / "shim.c", "-pthread", "-ldl"], check=True)
    return tmp_path / "shim.so"


def timer_run(smp, out, shim, n, interval_us, *args, **env):
    """smp timer (-n @n, no warm-up, @args) with @shim preloaded."""
    env = {**os.environ, "LD_PRELOAD": str(shim), **env}
    return subprocess.run([smp, "timer", "-n", str(n), "--warmup", "0", "--interval",
                           str(interval_us), *args, "-o", out, "--name", "timer-r1"],
                          capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.skipif(os.geteuid() != 0, reason="timer needs root (SCHED_FIFO)")
def test_tool_keeps_going_when_a_span_goes_backwards(root, smp, clock_shim, tmp_path):
    """A span that went backwards (smp once stopped a whole suite with
    "record 8 of span nanosleep is negative") is recorded: the run ends
    well, raw.csv keeps every record, meta.json counts them per span, the
    printed summary leaves them out and says so, and the analyser agrees."""
    d = write_meta(tmp_path / "s", "smp", {"runs": 1, "n": 8})
    out = timer_run(smp, d / "runs", clock_shim, 8, 500, SKEW=",1,3,")
    assert out.returncode == 0, out.stderr
    run = d / "runs/timer-r1"
    s = json.loads((run / "meta.json").read_text())["settings"]
    rows = list(csv.DictReader(open(run / "raw.csv")))
    assert len(rows) == 2 * 8
    back = {sp: sorted(int(r["record"]) for r in rows if r["span"] == sp
                       and int(r["cycles"]) < 0) for sp in ("sigalrm", "nanosleep")}
    # Records 1 and 3 went back by most of the interval; on a host whose
    # clocks disagree others may too: every one is counted.
    assert {1, 3} <= set(back["nanosleep"]), back
    assert s["backward"] == {sp: len(v) for sp, v in back.items()}
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("timer nanosleep"))
    k = len(back["nanosleep"])
    assert f"n {8 - k} " in line and f"{k} of 8 went backwards" in line, line
    res = analyse(root, "--no-plot", d)
    assert res.returncode == 0, res.stderr
    ns = json.loads((d / "summary.json").read_text())["cases"]["timer"]["spans"]["nanosleep"]
    assert (ns["backward"], ns["ns"]["n"]) == (k, 8 - k)
    assert ns["ns"]["min"] >= 0


@pytest.mark.skipif(os.geteuid() != 0, reason="timer needs root (SCHED_FIFO)")
def test_timer_takes_the_narrowest_clock_pair(smp, clock_shim, tmp_path):
    """Stopped for 20 ms between the clock's read and the TSC's after it,
    one pair's middle is 10 ms after the clock's time; an expiry 50 ms
    ahead taken from it would make that span 10 ms short: about -10 ms,
    as smp measured before it took the narrowest of a few pairs.  Now the
    span is about as long as the others (a real stop of milliseconds in
    both other tries would be needed to bring it near -5 ms)."""
    out = timer_run(smp, tmp_path, clock_shim, 4, 50000, STALL=",2,")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(tmp_path / "timer-r1/raw.csv")))
    [ns] = [float(r["ns"]) for r in rows if (r["record"], r["span"]) == ("2", "nanosleep")]
    assert ns > -5e6, rows


@pytest.mark.skipif(os.geteuid() != 0, reason="timer needs root (SCHED_FIFO)")
def test_a_late_signal_is_a_long_span_not_a_lost_one(smp, clock_shim, tmp_path):
    """smp gave up on a SIGALRM that had not come a second after its
    expiry, a second of the host's clock under TCG: a slow host failed
    the run.  2.5 s late is a 2.5 s span (waited for asleep: no seconds
    of a spinning FIFO 99 thread on the test's machine)."""
    out = timer_run(smp, tmp_path, clock_shim, 1, 500, "--wait", "sleep", LATE_MS="2500")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(open(tmp_path / "timer-r1/raw.csv")))
    [ns] = [float(r["ns"]) for r in rows if r["span"] == "sigalrm"]
    assert ns >= 2.5e9, rows


def test_tool_lists_and_refuses(smp, tmp_path):
    out = subprocess.run([smp, "list"], capture_output=True, text=True)
    assert [ln.split()[0] for ln in out.stdout.splitlines()] == \
        ["pipes", "cv", "tlbflush", "timer", "tun"]
    assert "Example" in subprocess.run([smp, "tun", "--help"], capture_output=True,
                                       text=True).stdout
    for args in (["pipes", "-n", "0"], ["nothing"], ["pipes", "--remote", "1"],
                 ["timer", "--interval", "x"]):
        out = subprocess.run([smp, *args, "-o", tmp_path / "x"], capture_output=True,
                             text=True)
        assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, (args, out.stderr)
    assert not (tmp_path / "x").exists()


def test_contradictory_cyclictest_is_left_out(root, tmp_path):
    """cyclictest -x can report negative latencies and an overflowed
    average (wake-ups later than its interval): no pair, a note instead."""
    d = smp_dir(tmp_path / "s", rounds=1)
    (d / "tools/cyclictest-posix-r1.json").write_text(json.dumps(
        {"thread": {"0": {"cycles": 10, "min": 2528, "max": -447, "avg": 1.6e19,
                          "histogram": {"2528": 1}}}}))
    out = analyse(root, "--no-plot", d)
    assert out.returncode == 0, out.stderr
    s = json.loads((d / "summary.json").read_text())
    assert not [p for p in s["pairs"] if p["tool"] == "cyclictest-posix"]
    assert "left out: cyclictest-posix round 1" in (d / "report.txt").read_text()


def test_plots_are_readable(root, smp, tmp_path, monkeypatch):
    """smp.png and hist-BENCH.png of a real run: guest.sh itself on this
    machine (2 rounds of 100 records, perf bench and rt-tests beside) when
    it can run here (root, 2 CPUs), else the made-up run.  Numeric axes,
    few ticks, every case and span drawn and named."""
    d = write_meta(tmp_path / "s", "smp", {"runs": 2, "n": 100})
    if os.geteuid() == 0 and os.cpu_count() >= 2:
        out = subprocess.run([root / "userspace/smp/guest.sh", d, "2", "100"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        command = json.loads((d / "guest/meta.json").read_text())["command"]
        assert command == [str(root / "userspace/smp/guest.sh"), str(d), "2", "100"]
    else:
        smp_dir(d)
    mod = analyser
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("smp", "x", mod.add_args, mod.work, [str(d)]) == 0
    cases = json.loads((d / "summary.json").read_text())["cases"]
    benches = {c["bench"] for c in cases.values()}
    assert sorted(figures) == sorted(["smp.png", *(f"hist-{b}.png" for b in benches)])
    for name, axes in figures.items():
        plotcheck.assert_readable(axes)
    [ax] = figures["smp.png"]
    spans = [f"{case} {span}" for case, c in cases.items() for span in c["spans"]]
    assert ax["xticks"] == spans and ax["yscale"] == "log"
    for b in benches:
        [ax] = figures[f"hist-{b}.png"]
        assert ax["legend"] == [s for s in spans if s.split("-")[0].split()[0] == b][:12]
        assert (ax["xscale"], ax["yscale"]) == ("log", "log")
    # Where it was measured, as every experiment's picture says: guest/meta.json.
    kernel = "\nkernel " + json.loads((d / "guest/meta.json").read_text())["kernel"]["release"]
    for name, title in [("smp.png", "smp: the SMP micro-benchmarks, every round pooled"),
                        *((f"hist-{b}.png", f"smp: {b}, every round pooled") for b in benches)]:
        head = figures[name][0]["figure_title"]
        assert head.startswith(title + "\n") and kernel in head, head


def test_without_guest_meta_the_pictures_say_the_first_rounds_kernel(root, tmp_path,
                                                                     monkeypatch):
    d = smp_dir(tmp_path / "s", tools=False)
    (d / "guest/meta.json").unlink()
    meta = json.loads((d / "runs/pipes-cross-r1/meta.json").read_text())
    meta["kernel"] = {"release": "6.12.first-round"}
    (d / "runs/pipes-cross-r1/meta.json").write_text(json.dumps(meta))
    mod = analyser
    figures = plotcheck.record(monkeypatch)
    assert mod.cli.main("smp", "x", mod.add_args, mod.work, [str(d)]) == 0
    for name in ("smp.png", "hist-pipes.png"):
        assert "\nkernel 6.12.first-round, 2 CPUs" in figures[name][0]["figure_title"]


# --- the runner's conventions (tests/host/runners.py) ---------------------------

RUNNER_BAD = [
    ("userspace/smp/run.sh", ["-r", "0"], {}, "--repeats wants a whole number >= 1"),
    ("userspace/smp/run.sh", ["-n"], {}, "-n wants a value"),
    ("userspace/smp/run.sh", ["--bogus"], {}, "unknown argument '--bogus'"),
    ("userspace/smp/run.sh", ["--output"], {}, "--output wants a value"),
    ("userspace/smp/guest.sh", ["/nonexistent", "0"], {}, "RUNS wants a whole number >= 1"),
]


test_a_bad_value_is_status_2_and_one_line = runners.bad_value_test(RUNNER_BAD)


test_meta_json_keeps_the_whole_command_line = runners.meta_test(
    "smp", ["smp"], ["-r", "2", "--no-analysis", "-n", "7"], "smp")


def test_the_result_folder_goes_where_o_says(tmp_path):
    """-o PARENT, relative to where the runner was started (how rt-compare
    keeps smp's folder in its own)."""
    runner = runners.lab_copy(tmp_path, "smp", ["smp"])
    (tmp_path / "work").mkdir()
    out = subprocess.run([runner, "-o", "here/lab", "--no-analysis"], capture_output=True,
                         text=True, cwd=tmp_path / "work")
    assert out.returncode == 3, out.stderr              # the stand-in VM does not boot
    [d] = (tmp_path / "work/here/lab").iterdir()
    assert d.name.startswith("smp-") and d.name.endswith(".incomplete"), d
    assert not (tmp_path / "results").exists()


# --- smp in the clocks suite (userspace/clocks) ----------------------------------------

def test_the_clocks_suite_reports_the_pipes_median_and_its_range(tmp_path):
    """An smp folder of the virtual clock, pipes-cross in two rounds whose
    medians are 12,700 and 12,900 ns: the clocks report has the median of
    every record pooled and the range of the rounds' medians, '-' for the
    host's clock."""
    d = tmp_path / "smp-virtual"
    write_meta(d, "smp", {"runs": 2, "n": 3}, machine=HOST_MACHINE)
    write_meta(d / "guest", "smp", {"runs": 2, "n": 3, "cpus": 2}, machine=machine("virtual"))
    for r, m in enumerate((12700, 12900), 1):
        run_ = write_meta(d / "runs" / f"pipes-cross-r{r}", "smp-pipes",
                          {"bench": "pipes", "placement": "cross", "cpus": [0, 1], "n": 3,
                           "warmup": 1, "tsc_hz": 1e9, "tsc_hz_source": "test",
                           "spans": ["round_trip"]}, machine=machine("virtual"))
        write_csv(run_ / "raw.csv", ("record", "span", "cycles", "ns"),
                  [(i, "round_trip", m + o, m + o) for i, o in enumerate((-50, 0, 50))])
    out, c, figs, _ = clocks_report(tmp_path / "out", analysed(ANALYSER, d))
    assert out.returncode == 0, out.stderr
    pipes = figs[("smp", "pipes-cross round_trip p50")]
    assert pipes["host"] is None
    assert pipes["virtual"] == {"value": pytest.approx(12800), "min": 12700, "max": 12900,
                                "n": 1, "folders": ["v1"]}
    line = next(ln for ln in (c / "report.txt").read_text().splitlines()
                if ln.startswith("smp: pipes-cross"))
    assert line.split()[4:] == ["ns", "-", "12,800", "[12,700-12,900]", "-", "v1"], line
    rows = {r["figure"]: r for r in csv.DictReader(open(c / "clocks.csv"))}
    assert rows["pipes-cross round_trip p50"]["host"] == ""
    assert float(rows["pipes-cross round_trip p50"]["virtual_min"]) == 12700
