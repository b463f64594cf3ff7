"""Summarise a peers run (make bench-peers): the lab's delay module beside
strace and perf, per-call latency of getppid and of a 1-byte read.

Reads DIR/runs/*/ (one percall folder a case and system call: raw.csv
call,ns and meta.json whose settings name the case and the syscall),
DIR/skipped.csv (cases not measured, and why) and DIR/tools/perf-*.csv.
For each case and system call: n, min, mean, p50, p90, p99, max ... in ns,
nothing subtracted (the cost of an empty pair of clock reads is reported
beside them); the ratio of the median to the baseline's; for a tool at
zero delay its overhead over the baseline (ns and %); for a delay case the
requested delay, the achieved one (its median minus the median of that
tool's zero-delay case) and the error; for a case that delays every N-th
call only, the share of calls slower than the zero-delay median by half
the request, and the median of those.  Writes DIR/summary.json,
DIR/summary.csv, DIR/report.txt and DIR/peers.png, and prints the table.
"""
import pathlib
import re
import sys

from lablib import cli, results, stats
from lablib.readers import perf

SYSCALLS = ("getppid", "read")
TOOLS = {"none": "no tool", "module": "the delay module", "strace": "strace",
         "strace-seccomp": "strace --seccomp-bpf", "perf": "perf stat on raw_syscalls:sys_enter"}
UNITS = {"ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000}
CSV_COLUMNS = ("syscall", "case", "tool", "requested_ns", "loops", "n", "min", "p50", "p90",
               "p99", "p999", "max", "mean", "stddev", "unit", "clock_pair_ns", "ratio_p50",
               "zero_case", "overhead_ns", "overhead_pct", "achieved_ns", "error_pct",
               "every", "delayed_share")


def case_info(name):
    """What case @name is: {"tool", "requested_ns" (None: not a time),
    "loops", "zero_case" (the tool's zero-delay case, None for no tool),
    "every" (1: each call delayed, N: every N-th), "order"}.  ValueError for
    a name the analysis does not know."""
    def info(tool, requested=None, loops=None, zero=None, order=0, last=False, every=None):
        return {"tool": tool, "requested_ns": requested, "loops": loops,
                "zero_case": zero, "every": int(every or 1),
                "order": (len(TOOLS) if last else list(TOOLS).index(tool), order)}
    if name == "baseline":
        return info("none")
    if name == "baseline-end":
        return info("none", last=True)
    if name == "perf-tracepoint":
        return info("perf", 0, zero=name)
    # The delays at exit, the sleeping ones and those of every N-th call
    # after those of each call at entry that spin.
    m = re.fullmatch(r"module-(?:(0)|loops-(\d+)|(exit-)?(sleep-)?(?:every(\d+)-)?ns-(\d+))",
                     name)
    if m:
        if m[1]:
            return info("module", 0, zero=name)
        if m[2]:
            return info("module", None, int(m[2]), "module-0", int(m[2]) * 1e-6)
        rank = 4 * bool(m[5]) + 2 * bool(m[3]) + bool(m[4])
        return info("module", int(m[6]), zero="module-0", order=rank * 1e10 + int(m[6]),
                    every=m[5])
    m = re.fullmatch(r"(strace(?:-seccomp)?)-(?:(0)|(exit-)?(?:every(\d+)-)?(\d+)(ns|us|ms|s))",
                     name)
    if m:
        zero = f"{m[1]}-0"
        if m[2]:
            return info(m[1], 0, zero=zero)
        ns = int(m[5]) * UNITS[m[6]]
        rank = 2 * bool(m[4]) + bool(m[3])
        return info(m[1], ns, zero=zero, order=rank * 1e10 + ns, every=m[4])
    raise ValueError(f"unknown case {name!r} (known: baseline, baseline-end, module-0, "
                     f"module-loops-N, module-[exit-][sleep-][everyN-]ns-N, "
                     f"strace[-seccomp]-0, strace[-seccomp]-[exit-][everyN-]<N>ns|us|ms, "
                     f"perf-tracepoint)")


def read_run(folder):
    """(settings, [ns ...]) of one percall folder."""
    meta = results.read_meta(folder)
    s = results.settings(meta)
    for key in ("case", "syscall", "n"):
        if s.get(key) is None:
            raise ValueError(f"{folder}/meta.json: settings have no {key!r}")
    if s["syscall"] not in SYSCALLS:
        raise ValueError(f"{folder}/meta.json: unknown syscall {s['syscall']!r}")
    path = pathlib.Path(folder) / "raw.csv"
    ns = []
    for i, row in enumerate(results.read_csv(path, ("call", "ns")), 2):
        try:
            v = float(row["ns"])
        except ValueError:
            raise ValueError(f"{path} line {i}: ns {row['ns']!r} is not a number") from None
        if not 0 <= v < float("inf"):
            raise ValueError(f"{path} line {i}: ns {v} is not a time >= 0")
        ns.append(v)
    if len(ns) != s["n"]:
        raise ValueError(f"{path}: {len(ns)} calls, but meta.json says n = {s['n']}")
    return meta, s, ns


def read_runs(d):
    """{syscall: {case: (meta, settings, [ns])}} of result folder @d."""
    runs_dir = pathlib.Path(d) / "runs"
    folders = sorted(p for p in runs_dir.glob("*") if p.is_dir()) if runs_dir.is_dir() else []
    if not folders:
        raise ValueError(f"{d}: no runs/*/ folders: not a peers result, or nothing measured")
    out = {}
    for f in folders:
        meta, s, ns = read_run(f)
        case_info(s["case"])
        cases = out.setdefault(s["syscall"], {})
        if s["case"] in cases:
            raise ValueError(f"{d}: case {s['case']} ({s['syscall']}) measured twice")
        cases[s["case"]] = (meta, s, ns)
    for sc, cases in out.items():
        if "baseline" not in cases:
            raise ValueError(f"{d}: no baseline case for {sc}: the ratios and overheads "
                             f"are against the baseline (no tool, module not loaded)")
    return out


def read_skipped(d):
    path = pathlib.Path(d) / "skipped.csv"
    if not path.exists():
        return []
    return [{"case": r["case"], "syscall": r["syscall"], "reason": r["reason"]}
            for r in results.read_csv(path, ("case", "syscall", "reason"))]


def read_perf(d, sc):
    """The count of raw_syscalls:sys_enter in DIR/tools/perf-SC.csv (perf
    stat -x,), or None without the file or the count."""
    path = pathlib.Path(d) / "tools" / f"perf-{sc}.csv"
    if not path.exists():
        return None
    count = perf.read_stat(path).get("raw_syscalls:sys_enter")
    return None if count is None else int(count)


def pct(a, b):
    return (a - b) / b * 100 if b else None


def summarise_syscall(cases, perf_events=None):
    """The summary of one system call's cases {case: (meta, settings, ns)}."""
    out = {}
    for name, (_, s, ns) in sorted(cases.items(), key=lambda kv: case_info(kv[0])["order"]):
        info = case_info(name)
        out[name] = {"tool": info["tool"], "requested_ns": info["requested_ns"],
                     "loops": info["loops"], "zero_case": info["zero_case"],
                     "every": info["every"], "delayed_share": None,
                     **stats.summary(ns), "unit": "ns",
                     "clock_pair_ns": s.get("clock_pair_ns")}
    base = out["baseline"]["p50"]
    overhead, smallest = {}, {}
    for name, c in out.items():
        c["ratio_p50"] = c["p50"] / base if base else None
        c["overhead_ns"] = c["overhead_pct"] = c["achieved_ns"] = c["error_pct"] = None
        if c["zero_case"] == name:
            c["overhead_ns"] = c["p50"] - base
            c["overhead_pct"] = pct(c["p50"], base)
            overhead[c["tool"]] = {"case": name, "ns": c["overhead_ns"],
                                   "pct": c["overhead_pct"]}
        elif c["zero_case"] and c["zero_case"] in out and c["every"] > 1:
            # Half the calls or fewer delayed: the median is an undelayed
            # call's.  The delayed ones are those slower than the tool's
            # zero-delay median by half the request.
            zero = out[c["zero_case"]]["p50"]
            slow = [v for v in cases[name][2] if v > zero + c["requested_ns"] / 2]
            c["delayed_share"] = len(slow) / c["n"]
            if slow:
                c["achieved_ns"] = stats.summary(slow)["p50"] - zero
                c["error_pct"] = pct(c["achieved_ns"], c["requested_ns"])
        elif c["zero_case"] and c["zero_case"] in out:
            c["achieved_ns"] = c["p50"] - out[c["zero_case"]]["p50"]
            if c["requested_ns"]:
                c["error_pct"] = pct(c["achieved_ns"], c["requested_ns"])
            if c["tool"] not in smallest:   # cases are in order: smallest setting first
                smallest[c["tool"]] = {"case": name, "requested_ns": c["requested_ns"],
                                       "loops": c["loops"], "achieved_ns": c["achieved_ns"]}
    res = {"baseline_p50": base, "cases": out, "overhead_at_zero": overhead,
           "smallest_delay": smallest,
           "drift_pct": pct(out["baseline-end"]["p50"], base) if "baseline-end" in out
           else None}
    if perf_events is not None and "perf-tracepoint" in cases:
        s = cases["perf-tracepoint"][1]
        res["perf"] = {"sys_enter_events": perf_events,
                       "timed_and_warmup_calls": s["n"] + s.get("warmup", 0)}
    return res


def measured_meta(d, runs=None):
    """meta.json of the kernel and machine that timed the calls of result
    folder @d: guest/'s (guest.sh writes it), else the first system call's
    baseline run's (@runs, read_runs(d), read if not given)."""
    guest = pathlib.Path(d) / "guest"
    if (guest / "meta.json").exists():
        return results.read_meta(guest)
    return next(iter((runs or read_runs(d)).values()))["baseline"][0]


def summarise(d):
    runs = read_runs(d)
    meta = measured_meta(d, runs)
    return meta, {
        "experiment": "peers", "unit": "ns",
        "kernel": results.describe(meta),
        "settings": results.settings(meta),
        "syscalls": {sc: summarise_syscall(runs[sc], read_perf(d, sc))
                     for sc in SYSCALLS if sc in runs},
        "skipped": read_skipped(d),
        "not_measured": {"bpftrace": "the lab kernel has no BPF (CONFIG_BPF_SYSCALL is off)"},
    }


def fmt(v, spec=",.0f", none="-"):
    return none if v is None else format(v, spec)


def req_text(c):
    if c["loops"] is not None:
        return f"loops={c['loops']}"
    if c["requested_ns"] is None:
        return ""
    return f"{c['requested_ns']:,} ns"


def err_text(c):
    """The error of an achieved delay, short: +1.0%, or x2000 when it is
    thousands of percent (strace's 1 ns)."""
    e = c["error_pct"]
    if e is None:
        return "-"
    if abs(e) >= 1000:
        return f"x{c['achieved_ns'] / c['requested_ns']:,.0f}"
    return f"{e:+.1f}%"


def table(s):
    scs = list(s["syscalls"])
    names = []
    for sc in scs:
        names += [n for n in s["syscalls"][sc]["cases"] if n not in names]
    names.sort(key=lambda n: case_info(n)["order"])
    head1 = f"{'':<20}{'':>10}" + "".join(f"  {' ' + sc + ' ':-^51}" for sc in scs)
    cols = f"  {'p50':>10}{'p99':>11}{'x base':>9}{'added':>11}{'error':>10}{'n':>2}"
    head2 = f"{'case':<20}{'request':>10}" + cols.replace(f"{'n':>2}", "  ") * len(scs)
    lines = [head1, head2.rstrip()]
    for name in names:
        row, req = "", ""
        for sc in scs:
            c = s["syscalls"][sc]["cases"].get(name)
            if c is None:
                row += f"  {'(not measured)':<51}"
                continue
            req = req_text(c)
            added = c["achieved_ns"] if c["achieved_ns"] is not None else c["overhead_ns"]
            sign = "+" if added is not None and c["zero_case"] else ""
            if c["zero_case"] == name and c["zero_case"] is not None:
                added_txt = fmt(added, "+,.0f") + "*"
            else:
                added_txt = sign + fmt(added) if added is not None else "-"
            err = err_text(c)
            row += (f"  {fmt(c['p50']):>10}{fmt(c['p99']):>11}{c['ratio_p50']:>9.2f}"
                    f"{added_txt:>11}{err:>10}  ")
        lines.append(f"{name:<20}{req:>10}{row}".rstrip())
    for k in s["skipped"]:
        lines.append(f"{k['case']:<20}{'':>10}  not measured: {k['reason']}")
    lines.append("ns per call, each call timed alone; p50 = median.  x base: p50 / baseline "
                 "p50.  added: p50 minus the p50 of the tool's")
    lines.append("zero-delay case (module-0, strace-0); marked *: a zero-delay case's p50 "
                 "minus the baseline's, the tool's own cost.")
    lines.append("error: (added - request) / request.  everyN: every N-th call delayed; "
                 "added: the median of those slower than the")
    lines.append("zero-delay p50 by half the request (their share in report.txt).")
    return "\n".join(lines)


def sentences(s):
    out = []
    for sc, v in s["syscalls"].items():
        base = v["baseline_p50"]
        parts = []
        for tool, o in v["overhead_at_zero"].items():
            parts.append(f"{TOOLS[tool]} {o['ns']:+,.0f} ns ({o['pct']:+.0f} %, "
                         f"x{1 + o['pct'] / 100:.2f})")
        if parts:
            out.append(f"{sc} (baseline median {base:,.0f} ns): at zero delay " +
                       "; ".join(parts) + ".")
        acc = []
        for want in (1000, 10000):
            for name, c in v["cases"].items():
                if c["requested_ns"] == want and c["achieved_ns"] is not None:
                    # The case names which of a tool's ways to delay it was.
                    acc.append(f"{TOOLS[c['tool']]} ({name}) asked for {want / 1000:g} us "
                               f"added {c['achieved_ns']:,.0f} ns ({c['error_pct']:+.0f} %)")
        if acc:
            out.append(f"  {sc}: " + "; ".join(acc) + ".")
        some = [f"{TOOLS[c['tool']]} ({name}) delayed {c['delayed_share']:.1%} of the calls "
                f"by {fmt(c['achieved_ns'], '+,.0f')} ns (1 call in {c['every']} asked)"
                for name, c in v["cases"].items() if c["delayed_share"] is not None]
        if some:
            out.append(f"  {sc}: " + "; ".join(some) + ".")
        small = [f"{TOOLS[t]} {req_text(v['cases'][m['case']])} -> "
                 f"{fmt(m['achieved_ns'], '+,.0f')} ns"
                 for t, m in v["smallest_delay"].items()]
        if small:
            out.append(f"  {sc}: smallest delay each tool can add: " + "; ".join(small) + ".")
        if v.get("perf"):
            p = v["perf"]
            out.append(f"  {sc}: perf counted {p['sys_enter_events']:,} sys_enter events for "
                       f"{p['timed_and_warmup_calls']:,} timed and warm-up calls (the rest: "
                       f"the tool's start and exit).")
        if v["drift_pct"] is not None:
            out.append(f"  {sc}: the baseline drifted {v['drift_pct']:+.1f} % from the "
                       f"start of the run to its end.")
        pairs = {c["clock_pair_ns"] for c in v["cases"].values() if c["clock_pair_ns"]}
        if pairs:
            span = f"{min(pairs):,.0f}" + (f"-{max(pairs):,.0f}" if len(pairs) > 1 else "")
            out.append(f"  {sc}: an empty pair of clock reads costs {span} ns (median of "
                       f"each run; included in every figure, not subtracted).")
    for tool, why in s["not_measured"].items():
        out.append(f"{tool} was not measured: {why}.")
    return "\n".join(out)


def plot(s, path, meta):
    """@path: each case's median and p99 per system call, on a log axis;
    where @meta says the calls were timed above it."""
    from lablib import plot as lplot
    fig, ax = lplot.figure(width=10, height=5)
    scs = list(s["syscalls"])
    names = []
    for sc in scs:
        names += [n for n in s["syscalls"][sc]["cases"] if n not in names]
    names.sort(key=lambda n: case_info(n)["order"])
    width = 0.8 / len(scs)
    shown = []
    for k, sc in enumerate(scs):
        cases = s["syscalls"][sc]["cases"]
        xs = [i + (k - (len(scs) - 1) / 2) * width for i, n in enumerate(names) if n in cases]
        med = [cases[n]["p50"] for n in names if n in cases]
        p99 = [cases[n]["p99"] for n in names if n in cases]
        ax.bar(xs, med, width * 0.95, label=f"{sc}: median", color=f"C{k}")
        ax.plot(xs, p99, "_", color="black", markersize=12, markeredgewidth=2,
                label="p99" if k == 0 else None)
        shown += med + p99
    # Bars on a log axis start at its bottom: a third of the least median.
    lplot.log_axis(ax, "y", min(shown) / 3, max(shown))
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("ns per call (log)")
    lplot.headline(fig, "peers: per-call latency by tool and case, each call timed alone",
                   meta, 140)
    lplot.save(fig, ax, path)


def analyse(d):
    results.read_meta(d)
    meta, summary = summarise(d)
    rows = [{"syscall": sc, "case": name, **c}
            for sc, v in summary["syscalls"].items() for name, c in v["cases"].items()]
    report = (f"peers: {summary['kernel']}\n{table(summary)}\n\n{sentences(summary)}\n")
    return summary, report, results.write_summary(d, summary, CSV_COLUMNS, rows, report)


add_args, work = cli.folder_analyser("DIR", "a peers result folder (results/latest-peers)",
                                     analyse,
                                     lambda s, d: plot(s, d / "peers.png", measured_meta(d)),
                                     "peers.png")


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-peers", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.peers.analyse")


if __name__ == "__main__":
    sys.exit(main())
