"""Summarise an smp run (make smp): five SMP micro-benchmarks, every case
in several rounds, beside perf bench sched pipe, cyclictest and ptsematest.

Reads DIR/runs/CASE-rK/ (one smp folder a case and round: raw.csv
record,span,cycles,ns and meta.json), DIR/tools/ (the field's tools, each
round) and DIR/skipped.csv.  For each case and span: the pooled
distribution of every round's records (n, min, mean, stddev, p50, p90,
p99, p999, max in cycles and in ns) and the spread of the rounds' medians
(run-to-run noise, apart from the within-run spread), the records that
went backwards (the ends' clocks disagree) counted and left out; the TLB
shoot-downs the kernel counted per record; each pair of one of our spans and a tool's
figure for the same thing, in ns on the same definition, their ratio and
whether they agree; and our means against the reference figures.  Writes
DIR/summary.json, DIR/summary.csv, DIR/report.txt, DIR/smp.png (every
case's distribution) and DIR/hist-BENCH.png (log y), and prints the tables.
"""
import pathlib
import re
import sys

from lablib import cli, results, stats, text
from lablib.readers import perf, rttests
from lablib.experiments.smp import BENCHES, read_runs, summarise_case

CSV_COLUMNS = ("case", "span", "bench", "placement", "unit", *stats.SUMMARY_KEYS,
               "backward", "rounds", "round_p50_min", "round_p50_max", "round_p50_cv_pct")
# |ratio - 1| within this: the two figures agree.
AGREE = 0.25

# The spec's hand-made runs: mean and standard deviation in TSC cycles, and
# which of our cases and spans is the same measurement.
REFERENCE = [
    ("pipes", "pipes-cross", "round_trip", 8770, 62),
    ("tlbflush (2 cores)", "tlbflush-p1-remote1", "munmap", 69907, 12549),
    ("cv", "cv-cross", "round_trip", 12460, 195),
    ("timer", "timer", "sigalrm", 6147, 117),
    ("network (tun)", "tun-cross", "wakeup", 4245, 165),
]


# --- the field's tools ------------------------------------------------------

def _round_of(path):
    m = re.search(r"-r(\d+)\.[a-z]+$", path.name)
    return int(m[1]) if m else None


def read_cyclictest(path):
    """The summary (us) of thread 0 of a cyclictest --json file (guest.sh
    runs one thread), or, when cyclictest's own figures contradict each
    other, no figures and "invalid": why."""
    run = rttests.read_cyclictest(path)
    out = rttests.summary(run, [0])
    why = rttests.contradiction(rttests.select(run, [0])[0])
    if why:
        # No figure, not a wrong one.
        out = {**dict.fromkeys(out), "n": out["n"], "unit": "us",
               "invalid": f"{path.name}: {why}"}
    return out


def read_tools(d):
    """{tool case: {round: figures}} of DIR/tools, each in us under the
    lab's summary keys: perf-pipe-MODE-PLACE {"mean", "unit"} (perf bench
    sched pipe's mean round trip), cyclictest-nanosleep / cyclictest-posix
    (read_cyclictest) and ptsematest (rttests.read_ptsematest)."""
    tools = pathlib.Path(d) / "tools"
    out = {}
    if not tools.is_dir():
        return out
    for p in sorted(tools.iterdir()):
        rnd = _round_of(p)
        if rnd is None:
            continue
        name = p.name[:p.name.rindex("-r")]
        if name.startswith("perf-pipe-") and p.suffix == ".txt":
            out.setdefault(name, {})[rnd] = {"mean": perf.read_bench_pipe(p), "unit": "us"}
        elif name.startswith("cyclictest-") and p.suffix == ".json":
            out.setdefault(name, {})[rnd] = read_cyclictest(p)
        elif name == "ptsematest" and p.suffix == ".json":
            out.setdefault(name, {})[rnd] = rttests.read_ptsematest(p)
    return out


# Our span against a tool's figure for the same thing.  Each: (our case,
# our span, our statistic, tool case, the tool's figure (us), what the two
# measure, what still differs once the units and directions are equal).
PAIRS = [
    ("pipes-cross", "round_trip", "mean", "perf-pipe-threads-cross", "mean",
     "perf bench sched pipe -T, taskset -c 0,1: mean us per round trip of two threads",
     "perf bench does not pin each end: both threads may share one CPU for a while, "
     "and its op includes the loop around the calls"),
    ("pipes-cross", "round_trip", "mean", "perf-pipe-process-cross", "mean",
     "perf bench sched pipe (processes), taskset -c 0,1",
     "two processes: a switch between them also changes the address space"),
    ("pipes-same", "round_trip", "mean", "perf-pipe-threads-same", "mean",
     "perf bench sched pipe -T, taskset -c 0: both threads on one CPU",
     "the same definition: two context switches per round trip"),
    ("pipes-same", "round_trip", "mean", "perf-pipe-process-same", "mean",
     "perf bench sched pipe (processes), taskset -c 0",
     "processes: every switch also changes the address space"),
    ("cv-same", "high_to_low", "mean", "ptsematest", "mean",
     "ptsematest -t 1 -a -p 99: one-way mutex hand-off between two FIFO 99 threads on "
     "CPU 0, average",
     "a mutex unlock waking a waiter, not a condition variable's signal; 1 us resolution"),
    ("timer", "nanosleep", "mean", "cyclictest-nanosleep", "mean",
     "cyclictest -m -p 99 -i 1000: clock_nanosleep(TIMER_ABSTIME) wake-up latency, average",
     "the same definition; cyclictest reports whole us"),
    ("timer", "nanosleep", "p50", "cyclictest-nanosleep", "p50",
     "cyclictest's median, from its 1 us histogram", "whole us bins"),
    ("timer", "sigalrm", "mean", "cyclictest-posix", "mean",
     "cyclictest -x: a POSIX timer's signal taken with sigwait, average",
     "cyclictest's thread returns from sigwait; ours interrupts a spinning thread "
     "and enters a handler"),
]


def pair_rows(cases, tools):
    rows = []
    for case, span, stat, tool, key, what, note in PAIRS:
        if case not in cases or span not in cases[case]["spans"] or tool not in tools:
            continue
        vals = [v[key] for v in tools[tool].values() if v.get(key) is not None]
        if not vals:
            continue
        ours = cases[case]["spans"][span]["ns"][stat]
        if ours is None:
            continue
        theirs = sum(vals) / len(vals) * 1000
        ratio = ours / theirs if theirs else None
        agree = ratio is not None and abs(ratio - 1) <= AGREE
        rows.append({"ours": f"{case} {span}", "statistic": stat, "ours_ns": ours,
                     "tool": tool, "tool_ns": theirs, "tool_rounds": len(vals),
                     "tool_spread_ns": (max(vals) - min(vals)) * 1000,
                     "ratio": ratio, "agree": agree, "tool_measures": what,
                     "difference": note})
    return rows


def reference_rows(cases):
    rows = []
    for name, case, span, mean, sd in REFERENCE:
        c = cases.get(case, {}).get("spans", {}).get(span)
        if not c or not c["cycles"]["n"]:
            continue
        cy = c["cycles"]
        rows.append({"reference": name, "case": f"{case} {span}", "ref_mean_cycles": mean,
                     "ref_stddev_cycles": sd, "mean_cycles": cy["mean"],
                     "stddev_cycles": cy["stddev"], "p50_cycles": cy["p50"],
                     "ratio": cy["mean"] / mean})
    return rows


def read_skipped(d):
    path = pathlib.Path(d) / "skipped.csv"
    if not path.exists():
        return []
    return [{"case": r["case"], "reason": r["reason"]}
            for r in results.read_csv(path, ("case", "reason"))]


def measured_meta(d, runs):
    """meta.json of the kernel and machine that ran result folder @d's
    cases: guest/'s (guest.sh writes it), else that of the first round of
    the first case of @runs (read_runs(d))."""
    guest = pathlib.Path(d) / "guest"
    if (guest / "meta.json").exists():
        return results.read_meta(guest)
    return next(iter(next(iter(runs.values())).values()))[0]


def summarise(d):
    runs = read_runs(d)
    some = next(iter(next(iter(runs.values())).values()))
    meta = measured_meta(d, runs)
    cases = {c: summarise_case(rounds) for c, rounds in runs.items()}
    tools = read_tools(d)
    machine = meta.get("machine") or {}
    emulated = machine.get("accelerator") == "tcg"
    s0 = some[1]
    return {
        "experiment": "smp", "unit": "ns and TSC cycles",
        "kernel": results.describe(meta), "settings": results.settings(meta),
        "tsc": {"hz": s0["tsc_hz"], "source": s0.get("tsc_hz_source")},
        "emulated": emulated,
        "cases": cases, "tools": tools,
        "pairs": pair_rows(cases, tools), "reference": reference_rows(cases),
        "skipped": read_skipped(d),
    }


# --- text -------------------------------------------------------------------

def f0(v, spec=",.0f"):
    return "-" if v is None else format(v, spec)


def table(s):
    rows = []
    for case, c in s["cases"].items():
        for span, v in c["spans"].items():
            r = v["round_p50"]
            spread = f"{f0(r['min'])}-{f0(r['max'])}" if r["n"] > 1 else f0(r["min"])
            cv = f"{r['cv_pct']:.1f}%" if r["n"] > 1 and r["cv_pct"] is not None else "-"
            rows.append([case, span, f0(v["cycles"]["p50"]), f0(v["cycles"]["p99"]),
                         *(f0(v["ns"][k]) for k in ("p50", "p99", "mean", "stddev")),
                         spread, cv])
    return text.table(
        [("case", "<22"), ("span", "<12"), ("p50 cyc", ">13"), ("p99 cyc", ">13"),
         ("p50 ns", ">12"), ("p99 ns", ">12"), ("mean ns", ">12"), ("sd ns", ">12"), "  ",
         ("round p50 ns", ">15"), ("cv", ">6")], rows,
        ["pooled over every round; round p50: the range of the rounds' medians, "
         "cv: their coefficient of variation."])


def tlb_table(s):
    rows = [[case, f0(c.get("pages")), f0(c.get("remote")),
             f0(c.get("tlb_shootdowns_per_record"), ".2f"),
             f0(c["spans"]["munmap"]["ns"]["p50"]), f0(c["spans"]["munmap"]["ns"]["p99"])]
            for case, c in s["cases"].items() if c["bench"] == "tlbflush"]
    if not rows:
        return ""
    return text.table(
        [("tlbflush case", "<22"), ("pages", ">6"), ("remote", ">7"),
         ("shoot-downs/record", ">20"), ("p50 ns", ">12"), ("p99 ns", ">12")], rows,
        ["shoot-downs: the TLB line of /proc/interrupts, summed over CPUs, per "
         "timed munmap."])


def pairs_table(s):
    if not s["pairs"]:
        return "no tool figures to pair (perf and rt-tests not run)"
    rows = [[p["ours"], p["statistic"], f0(p["ours_ns"]), p["tool"], f0(p["tool_ns"]),
             f"{p['ratio']:.2f}", "agree" if p["agree"] else "differ"] for p in s["pairs"]]
    notes = [f"agree: within {AGREE:.0%} of each other, both in ns per the same "
             "span (round trips against round trips, one way against one way)."]
    notes += [f"- {p['ours']} vs {p['tool']}: {p['tool_measures']}; {p['difference']}."
              for p in s["pairs"] if not p["agree"]]
    return text.table(
        [("ours", "<24"), ("stat", "<6"), ("ours ns", ">12"), "  ", ("tool", "<24"),
         ("tool ns", ">12"), ("ratio", ">7"), "  ", ("verdict", "")], rows, notes)


def reference_table(s):
    if not s["reference"]:
        return ""
    rows = [[r["reference"], r["case"], f0(r["ref_mean_cycles"]), f0(r["ref_stddev_cycles"]),
             f0(r["mean_cycles"]), f0(r["stddev_cycles"]), f"{r['ratio']:.1f}"]
            for r in s["reference"]]
    return text.table(
        [("reference", "<20"), ("ours", "<28"), ("ref mean", ">10"), ("ref sd", ">8"),
         ("our mean", ">13"), ("our sd", ">13"), ("x ref", ">8")], rows,
        ["TSC cycles; the reference ran on real hardware, 500 records, mean and "
         "standard deviation only."])


def notes(s):
    out = [f"TSC: {s['tsc']['hz'] / 1e6:,.1f} MHz ({s['tsc']['source'] or 'source unknown'})."]
    if s["emulated"]:
        out.append("Measured under QEMU TCG (software emulation): the TSC ticks at the "
                   "host's rate, so cycles are host cycles of emulated work, far more than "
                   "the same span takes on hardware; compare ratios within this run.")
    for k in s["skipped"]:
        out.append(f"not measured: {k['case']}: {k['reason']}.")
    for case, c in s["cases"].items():
        for span, v in c["spans"].items():
            if v["backward"]:
                total = v["backward"] + v["ns"]["n"]
                out.append(f"left out: {case} {span}: {v['backward']} of {total} records "
                           "went backwards (the end before the start: the clocks they were "
                           "taken with disagree, as vCPUs' can under QEMU TCG; in raw.csv, "
                           "in no figure).")
    for tool, rounds in s["tools"].items():
        for rnd, v in sorted(rounds.items()):
            if v.get("invalid"):
                out.append(f"left out: {tool} round {rnd}: {v['invalid']}.")
    return "\n".join(out)


def report(s):
    parts = [f"smp: {s['kernel']}", table(s), tlb_table(s), pairs_table(s),
             reference_table(s), notes(s)]
    return "\n\n".join(p for p in parts if p) + "\n"


# --- pictures ---------------------------------------------------------------

def plot_hists(s, runs, d, meta):
    from lablib import plot as lplot
    written = []
    for bench in BENCHES:
        series = [(f"{case} {span}", v["ns"]) for case, rounds in runs.items()
                  if case.split("-")[0] == bench
                  for span in next(iter(rounds.values()))[1]["spans"]
                  for v in [{"ns": [x for r in rounds.values() for x in r[2][span]["ns"]]}]
                  if v["ns"]]     # every record went backwards: nothing to draw
        if not series:
            continue
        fig, ax = lplot.figure(width=8, height=4.5)
        bins = lplot.log_bins(max(1.0, min(min(v) for _, v in series)),
                              max(max(v) for _, v in series) * 1.01)
        for label, v in series[:12]:
            ax.hist([max(x, bins[0]) for x in v], bins=bins, histtype="step", label=label)
        lplot.log_axis(ax, "x", bins[0], bins[-1])
        ax.set_yscale("log")
        ax.set_xlabel("ns per record (log)")
        ax.set_ylabel("records (log)")
        lplot.headline(fig, f"smp: {bench}, every round pooled", meta, 112)
        name = f"hist-{bench}.png"
        lplot.save(fig, ax, d / name)
        written.append(name)
    return written


def plot_overview(s, runs, d, meta):
    from lablib import plot as lplot
    labels, data = [], []
    for case, rounds in runs.items():
        for span in next(iter(rounds.values()))[1]["spans"]:
            v = [x for r in rounds.values() for x in r[2][span]["ns"]]
            if v:
                labels.append(f"{case} {span}")
                data.append(v)
    fig, ax = lplot.figure(width=max(8, 0.45 * len(labels) + 2), height=5)
    ax.boxplot(data, whis=(1, 99), showfliers=False)
    ax.set_xticks(range(1, len(labels) + 1))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ends = [stats.percentile(sorted(v), p) for v in data for p in (1, 99)]
    lplot.log_axis(ax, "y", max(1.0, min(ends)), max(ends))
    ax.set_ylabel("ns per record (log)\nbox: quartiles, whiskers: p1-p99")
    lplot.headline(fig, "smp: the SMP micro-benchmarks, every round pooled", meta,
                   int(14 * fig.get_figwidth()))
    lplot.save(fig, ax, d / "smp.png")


def analyse(d):
    results.read_meta(d)
    s = summarise(d)
    rows = []
    for case, c in s["cases"].items():
        for span, v in c["spans"].items():
            for unit in ("cycles", "ns"):
                r = v["round_p50"]
                rows.append({"case": case, "span": span, "bench": c["bench"],
                             "placement": c["placement"], "unit": unit, **v[unit],
                             "backward": v["backward"], "rounds": r["n"], "round_p50_min": r["min"],
                             "round_p50_max": r["max"], "round_p50_cv_pct": r["cv_pct"]})
    text = report(s)
    return s, text, results.write_summary(d, s, CSV_COLUMNS, rows, text)


def plot(s, d):
    runs = read_runs(d)
    meta = measured_meta(d, runs)
    files = plot_hists(s, runs, d, meta)
    plot_overview(s, runs, d, meta)
    return files


add_args, work = cli.folder_analyser("DIR", "an smp result folder (results/latest-smp)",
                                     analyse, plot, "smp.png", "smp.png and hist-BENCH.png")


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-smp", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.smp.analyse")


if __name__ == "__main__":
    sys.exit(main())
