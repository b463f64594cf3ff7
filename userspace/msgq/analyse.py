"""Summarise the message bus (userspace/msgq): one run of the msgq program,
or a profile of both buffer strategies made by run.sh (make msgq).

A run folder (messages.csv, meta.json, as the msgq program writes it):
the counts (sent, routed, received per receiver: they must match), the
messages per second, and the queueing time the driver reported for each
queue (bus_in_q, bus_out_q1..3) and from send to receipt: the lab's
summary (n, min, mean, stddev, p50, p90, p99, p999, max) in ns and TSC
cycles.  Writes DIR/summary.json, DIR/summary.csv and DIR/queueing.png
(log y histograms).

A profile folder (runs/STRATEGY-rK/, perf/STRATEGY-rK.csv, profile/):
per strategy, the summary over the rounds (the median, p50, and the range
foremost) of messages per second, user and kernel CPU time (rusage),
task-clock, context switches, migrations, page faults and every other
event perf counted; which events perf could not count here; static
against dynamic as the ratio of the medians and whether the difference is
lablib.compare's verdict over the rounds of the boot; the pooled queueing
times; the kernel functions perf record found hottest.  Writes
DIR/summary.json, DIR/summary.csv, DIR/report.txt, DIR/msgq.png.
"""
import pathlib
import re
import sys

from lablib import cli, plot, results, stats
from lablib import compare as lab_compare
from lablib.readers import perf
from lablib.text import num

QUEUES = ("bus_in_q", "bus_out_q1", "bus_out_q2", "bus_out_q3")
MESSAGE_COLUMNS = ("seq", "sender", "number", "destination", "length", "sent_ns",
                   "in_queued_ns", "in_queued_cycles", "out_seq", "out_queued_ns",
                   "out_queued_cycles", "received_ns", "end_to_end_ns")
STRATEGIES = ("dynamic", "static")
RUN_NAME = re.compile(r"^(?P<strategy>[a-z]+)-r(?P<round>\d+)$")
# The per-round figures compared between strategies: name, where, unit.
METRICS = (("messages_per_s", "msgs/s"), ("user_s", "s"), ("system_s", "s"),
           ("system_per_user", ""), ("cpu_us_per_msg", "us"))
# The figures the verdict speaks of, tested static against dynamic, and
# which way each is better; the band a verdict needs the ratio beyond.
TESTED = {"cpu_us_per_msg": "lower", "messages_per_s": "higher"}
BAND = 0.01
# The units of perf's events that are not counts.
PERF_UNITS = {"perf:task-clock": "ms", "perf:cpu-clock": "ms"}
FIGURE_COLUMNS = ("strategy", "figure", *stats.SUMMARY_KEYS, "unit", "rel_range_pct",
                  "static_over_dynamic", "verdict")


# --- one run ------------------------------------------------------------

def _int(row, key, path, line):
    try:
        return int(row[key])
    except ValueError:
        raise ValueError(f"{path} line {line}: {key} must be a whole number, "
                         f"not {row[key]!r}") from None


def read_messages(folder):
    """{series: {"ns": [...], "cycles": [...]}} of messages.csv: series
    bus_in_q, bus_out_qN (by destination) and end_to_end; and the number
    of rows.  A message missing a hop has empty fields there: not counted."""
    path = pathlib.Path(folder) / "messages.csv"
    out = {q: {"ns": [], "cycles": []} for q in (*QUEUES, "end_to_end")}
    rows = results.read_csv(path, MESSAGE_COLUMNS)
    for line, row in enumerate(rows, 2):
        dest = _int(row, "destination", path, line)
        if not 1 <= dest <= len(QUEUES) - 1:
            raise ValueError(f"{path} line {line}: destination {dest} is not 1-3")
        if row["in_queued_ns"] != "":
            out["bus_in_q"]["ns"].append(_int(row, "in_queued_ns", path, line))
            out["bus_in_q"]["cycles"].append(_int(row, "in_queued_cycles", path, line))
        if row["out_queued_ns"] != "":
            q = QUEUES[dest]
            out[q]["ns"].append(_int(row, "out_queued_ns", path, line))
            out[q]["cycles"].append(_int(row, "out_queued_cycles", path, line))
            out["end_to_end"]["ns"].append(_int(row, "end_to_end_ns", path, line))
    return out, len(rows)


def _times(series):
    """The summaries of one queue's times in ns and in cycles (None
    without cycles)."""
    return {"ns": {**stats.summary(series["ns"]), "unit": "ns"},
            "cycles": {**stats.summary(series["cycles"]), "unit": "cycles"}
            if series["cycles"] else None}


def read_run(folder):
    """(settings, series, rows) of one msgq folder; ValueError if it is not
    one or its counts do not match."""
    meta = results.read_meta(folder)
    s = results.settings(meta)
    for key in ("counts", "module", "elapsed_s"):
        if key not in s:
            raise ValueError(f"{folder}/meta.json: settings have no {key!r}: "
                             "not a msgq run")
    series, rows = read_messages(folder)
    return meta, s, series, rows


def summarise_run(folder):
    meta, s, series, rows = read_run(folder)
    c = s["counts"]
    return {"folder": str(folder), "kernel": meta.get("kernel", {}).get("release"),
            "alloc": s["module"].get("alloc"), "capacity": s["module"].get("capacity"),
            "messages": rows, "counts": c, "matched": bool(c.get("matched")),
            "elapsed_s": s["elapsed_s"], "messages_per_s": s.get("messages_per_s"),
            "run_rusage": s.get("run_rusage"),
            "queueing": {q: _times(v) for q, v in series.items()}}, series


def times_table(queueing, title):
    keys = stats.SUMMARY_KEYS
    lines = [title, f"{'queue':<12}" + "".join(f"{k:>10}" for k in keys)]
    for q, t in queueing.items():
        ns = t["ns"]
        cells = [f"{ns['n']:>10}"] + [f"{ns[k] / 1000:>10.1f}" if ns[k] is not None
                                      else f"{'-':>10}" for k in keys[1:]]
        lines.append(f"{q:<12}" + "".join(cells))
    lines.append("(times in us; n = messages)")
    return "\n".join(lines) + "\n"


def plot_queueing(series_by_label, path, title, meta):
    """Histograms of the time queued, one panel per queue that has
    messages, log-spaced bins on log-log axes (a body of tens of us, a
    tail of ms); one line per label, named in the first panel's legend
    when there is more than one; @title over them with where @meta says
    they were measured."""
    names = [q for q in (*QUEUES, "end_to_end")
             if any(s[q]["ns"] for s in series_by_label.values())]
    fig, axes = plot.figure(ncols=len(names), width=3.2 * len(names), height=3.6)
    axes = axes if isinstance(axes, list) else [axes]
    for ax, q in zip(axes, names):
        vals = [v / 1000 for s in series_by_label.values() for v in s[q]["ns"]]
        bins = plot.log_bins(max(min(vals), 0.01), max(vals) * 1.01)
        for label, s in series_by_label.items():
            if s[q]["ns"]:
                ax.hist([max(v / 1000, bins[0]) for v in s[q]["ns"]], bins=bins,
                        histtype="step", log=True,
                        label=label if len(series_by_label) > 1 else None)
        plot.log_axis(ax, "x", bins[0], bins[-1])
        ax.set_title(q, fontsize=9)
        ax.set_xlabel("queued (us, log)")
        if ax is axes[0]:
            ax.set_ylabel("messages (log)")
        ax.grid(True, which="both", alpha=0.3)
    plot.headline(fig, title, meta, int(14 * 3.2 * len(names)))
    plot.save(fig, axes[0], path)


def work_run(args):
    d = pathlib.Path(args.dir)
    summary, series = summarise_run(d)
    c = summary["counts"]
    text = (f"msgq run {d.name}: alloc={summary['alloc']} capacity={summary['capacity']} "
            f"kernel {summary['kernel']}\n"
            f"sent {c.get('sent_total')} {c.get('sent')}, routed {c.get('routed')}, "
            f"received {c.get('received')}: "
            f"{'all match' if summary['matched'] else 'MISMATCH: ' + str(c.get('problem'))}\n"
            f"{summary['messages_per_s']:.0f} messages/s over {summary['elapsed_s']:.2f} s\n")
    text += times_table(summary["queueing"], "time queued, per queue, and send to receipt")
    results.write_json(d / "summary.json", summary)
    rows = [{"queue": q, "unit": u, **(t[u] or {})} for q, t in summary["queueing"].items()
            for u in ("ns", "cycles") if t[u]]
    results.write_csv(d / "summary.csv", ("queue", "unit", *stats.SUMMARY_KEYS), rows)
    if not args.no_plot:
        plot_queueing({summary["alloc"] or "run": series}, d / "queueing.png",
                      f"msgq: time queued ({summary['alloc']} buffers)", results.read_meta(d))
    cli.show(args, summary, text, d, ["summary.json", "summary.csv"],
             picture="queueing.png")
    return 0 if summary["matched"] else 1


# --- a profile: both strategies, several rounds ----------------------------

def round_figures(s, counted):
    """The per-round figures of one run's settings and perf counts."""
    ru = s.get("run_rusage") or {}
    got = s["counts"].get("received_total") or 0
    user, system = ru.get("user_s"), ru.get("system_s")
    out = {"messages": got, "messages_per_s": s.get("messages_per_s"),
           "user_s": user, "system_s": system,
           "system_per_user": system / user if user else None,
           "cpu_us_per_msg": (user + system) / got * 1e6 if got and user is not None
           and system is not None else None}
    out.update({f"perf:{k}": v for k, v in counted.items()})
    return out


def spread(values, unit):
    """The rounds of one figure: their summary in @unit and the range
    relative to the median, in % (Nones dropped; None without values)."""
    v = [x for x in values if x is not None]
    if not v:
        return None
    s = stats.summary(v)
    return {**s, "unit": unit,
            "rel_range_pct": (s["max"] - s["min"]) / s["p50"] * 100 if s["p50"] else None}


def compare(strategies):
    """static against dynamic over the rounds of one boot: every figure's
    ratio of the medians, and for the figures the verdict speaks of
    (TESTED) lablib.compare's verdict with the host clock's tests, on
    either clock (NOTES: the rounds vary on the virtual clock too);
    {figure: {ratio, verdict, why, p_holm, ci}}, verdict None untested."""
    a, b = (strategies[s] for s in STRATEGIES)
    out, rows = {}, []
    for k in a["figures"]:
        va = [f[k] for f in a["per_round"] if f.get(k) is not None]
        vb = [f[k] for f in b["per_round"] if f.get(k) is not None]
        ma, mb = (stats.percentile(sorted(v), 50) if v else None for v in (va, vb))
        if not ma or mb is None:
            continue
        out[k] = {"ratio": mb / ma, "verdict": None, "why": "", "p_holm": None, "ci": None}
        if k in TESTED:
            rows.append({"figure": k, "unit": a["figures"][k]["unit"], "better": TESTED[k],
                         "kind": "msgq", "a": va, "b": vb})
    for r in lab_compare.judge(rows, "host", BAND):
        out[r["figure"]].update(verdict=r["verdict"], why=r.get("why", ""),
                                p_holm=r["p_holm"], ci=r["ci"])
    return out


def hot_symbols(path, limit=8):
    """The kernel symbols ([k]) of a perf report --sort dso,sym file, with
    their share of samples, hottest first."""
    out = []
    if not pathlib.Path(path).is_file():
        return out
    pat = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[k\]\s+(\S+)")
    for line in pathlib.Path(path).read_text(errors="replace").splitlines():
        m = pat.match(line)
        if m:
            out.append({"pct": float(m[1]), "dso": m[2], "symbol": m[3]})
    return out[:limit]


def read_profile(d):
    """{strategy: {round: (settings, series, perf counts, perf missing)}}."""
    runs_dir = d / "runs"
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    if not folders:
        raise ValueError(f"{d}: no runs/*/ folders: not a msgq profile, or nothing measured")
    out = {}
    for f in folders:
        m = RUN_NAME.match(f.name)
        if not m or m["strategy"] not in STRATEGIES:
            raise ValueError(f"runs/{f.name}: not STRATEGY-rK with STRATEGY "
                             f"{' or '.join(STRATEGIES)}")
        _, s, series, _ = read_run(f)
        if s["module"].get("alloc") != m["strategy"]:
            raise ValueError(f"runs/{f.name}: the module ran with alloc="
                             f"{s['module'].get('alloc')}")
        if not s["counts"].get("matched"):
            raise ValueError(f"runs/{f.name}: the counts did not match: "
                             f"{s['counts'].get('problem')}")
        path = d / "perf" / f"{f.name}.csv"
        stat = perf.read_stat(path) if path.is_file() else {}
        out.setdefault(m["strategy"], {})[int(m["round"])] = (
            s, series, perf.counted(stat), perf.not_counted(stat))
    return out


def profile_meta(d):
    """meta.json of the kernel and machine that ran the rounds of profile
    @d: guest/'s (guest.sh writes it), else the first round's."""
    guest = d / "guest"
    if (guest / "meta.json").is_file():
        return results.read_meta(guest)
    return results.read_meta(sorted(p for p in (d / "runs").iterdir() if p.is_dir())[0])


def summarise_profile(d):
    """(summary, {strategy: pooled queueing series}) of profile folder @d:
    the series, every message of every round, only feed the plot."""
    runs = read_profile(d)
    summary = {"folder": str(d), "strategies": {}, "comparison": {},
               "perf_not_counted": sorted({e for r in runs.values() for v in r.values()
                                           for e in v[3]})}
    guest = d / "guest" / "meta.json"
    if guest.is_file():
        gm = results.read_json(guest)
        summary["kernel"] = gm.get("kernel", {}).get("release")
        summary["perf_events_asked"] = results.settings(gm).get("wanted")
    skipped = d / "skipped.csv"
    summary["skipped"] = results.read_csv(skipped) if skipped.is_file() else []
    pooled, units = {}, dict(METRICS) | PERF_UNITS
    for strat, rounds in runs.items():
        figs = [round_figures(s, counted) for s, _, counted, _ in rounds.values()]
        keys = [m for m, _ in METRICS] + sorted({k for f in figs for k in f
                                                  if k.startswith("perf:")})
        pooled[strat] = {q: {"ns": [v for r in rounds.values() for v in r[1][q]["ns"]],
                             "cycles": [v for r in rounds.values() for v in r[1][q]["cycles"]]}
                         for q in (*QUEUES, "end_to_end")}
        summary["strategies"][strat] = {
            "rounds": sorted(rounds), "per_round": figs,
            "figures": {k: spread([f.get(k) for f in figs], units.get(k, "count"))
                        for k in keys},
            "queueing": {q: _times(v) for q, v in pooled[strat].items()},
            "hot_kernel_symbols": hot_symbols(d / "profile" / f"{strat}-symbols.txt")}
    if all(s in summary["strategies"] for s in STRATEGIES):
        summary["comparison"] = compare(summary["strategies"])
        summary["verdict"] = verdict(summary)
    return summary, pooled


IDLE = re.compile(r"safe_halt|default_idle|cpu_idle|intel_idle|acpi_idle|poll_idle|mwait")


def verdict(summary):
    """Which strategy is cheaper per message, by how much, and compare's
    verdict over the rounds; None without both."""
    c = summary["comparison"].get("cpu_us_per_msg")
    t = summary["comparison"].get("messages_per_s")
    if not c:
        return None
    dyn = summary["strategies"]["dynamic"]["figures"]["cpu_us_per_msg"]
    sta = summary["strategies"]["static"]["figures"]["cpu_us_per_msg"]
    cheaper = "static" if c["ratio"] < 1 else "dynamic"
    pct = abs(c["ratio"] - 1) * 100
    text = (f"CPU time per message: dynamic {num(dyn['p50'])} us, static "
            f"{num(sta['p50'])} us (medians of the rounds): {cheaper} is {pct:.1f} % "
            "cheaper; static against dynamic over the rounds: ")
    text += f"{_verdict(c)}."
    if t:
        text += f" Throughput static/dynamic {t['ratio']:.3f} ({_verdict(t)})."
    return text


def _verdict(c):
    """'slower, corrected p 0.0159', 'inconclusive: about 12 runs a side
    would tell', '-' for a figure not tested."""
    if c["verdict"] is None:
        return "-"
    text = c["verdict"]
    if c.get("p_holm") is not None:
        text += f", corrected p {c['p_holm']:.3g}"
    return text + (f": {c['why']}" if c.get("why") else "")


def profile_text(summary):
    strats = [s for s in STRATEGIES if s in summary["strategies"]]
    lines = [f"msgq profile {summary['folder']} (kernel {summary.get('kernel', '?')})",
             "per round: median [min - max] of the rounds"]
    head = f"{'figure':<26}" + "".join(f"{s:>30}" for s in strats)
    if len(strats) == 2:
        head += f"{'static/dynamic':>16}  verdict (static against dynamic)"
    lines.append(head)
    keys = list(summary["strategies"][strats[0]]["figures"])
    for k in keys:
        cells = []
        for s in strats:
            f = summary["strategies"][s]["figures"].get(k)
            cells.append(f"{num(f['p50']):>10} [{num(f['min'])} - {num(f['max'])}]"
                         if f else "-")
        row = f"{k:<26}" + "".join(f"{c:>30}" for c in cells)
        cmp_ = summary["comparison"].get(k)
        if cmp_:
            row += f"{cmp_['ratio']:>16.3f}  {_verdict(cmp_)}"
        lines.append(row)
    lines.append("user_s/system_s: the program's rusage over the bus run; perf:task-clock "
                 "in ms; cpu_us_per_msg = (user + system) / messages received")
    if summary["perf_not_counted"]:
        lines.append("perf could not count here: " + ", ".join(summary["perf_not_counted"]))
    for row in summary.get("skipped", []):
        lines.append(f"skipped {row.get('what')}: {row.get('reason')}")
    v = verdict(summary)
    if v:
        lines += ["", v]
    for s in strats:
        lines.append("")
        lines.append(times_table(summary["strategies"][s]["queueing"],
                                 f"{s}: time queued, all rounds pooled").rstrip())
    for s in strats:
        hot = summary["strategies"][s]["hot_kernel_symbols"]
        if hot:
            lines.append("")
            lines.append(f"{s}: hottest kernel symbols (perf record -e cpu-clock, all CPUs, "
                         "% of all samples)")
            lines += [f"  {h['pct']:6.2f}%  {h['symbol']}"
                      + ("  (idle: a CPU waiting)" if IDLE.search(h["symbol"]) else "")
                      for h in hot]
    return "\n".join(lines) + "\n"


def work_profile(args):
    d = pathlib.Path(args.dir)
    summary, pooled = summarise_profile(d)
    text = profile_text(summary)
    rows = []
    for s, v in summary["strategies"].items():
        for k, f in v["figures"].items():
            if f:
                c = summary["comparison"].get(k) or {}
                rows.append({"strategy": s, "figure": k, **f,
                             "static_over_dynamic": c.get("ratio"),
                             "verdict": c.get("verdict")})
    results.write_json(d / "summary.json", summary)
    results.write_csv(d / "summary.csv", FIGURE_COLUMNS, rows)
    results.write_text(d / "report.txt", text)
    if not args.no_plot:
        plot_queueing(pooled, d / "msgq.png", "msgq: time queued, dynamic against static "
                      "buffers (all rounds)", profile_meta(d))
    cli.show(args, summary, text, d, ["summary.json", "summary.csv", "report.txt"],
             picture="msgq.png")
    return 0


def work(args):
    d = pathlib.Path(args.dir)
    if not d.is_dir():
        raise ValueError(f"{d}: no such folder")
    if (d / "messages.csv").is_file():
        return work_run(args)
    if (d / "runs").is_dir():
        return work_profile(args)
    raise ValueError(f"{d}: neither a msgq run (messages.csv) nor a profile (runs/)")


def add_args(p):
    cli.add_result_args(p, "DIR", "a msgq run folder or a make msgq result folder",
                        picture="queueing.png or msgq.png")


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-msgq-profile", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.msgq.analyse")


if __name__ == "__main__":
    sys.exit(main())
