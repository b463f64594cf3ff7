"""Summary, model and plot of a delay sweep (workloads/sweep.sh).

Reads the sweep folder RESULT_DIR through lablib.experiments.workloads
(raw.csv, one row per timed run; meta.json, the sweep's settings; the
calibrate folder calibration/, the added latency per loop; points.csv and
Apache's saturation.csv), and writes in RESULT_DIR: summary.csv and
summary.json (throughput per loop count and measure, with the model's
prediction), report.txt (the same as a table, with a sentence on how well
the model fits) and <workload>.png (throughput against the added
system-call latency); lablib.sweep.analyse_output writes those two.

The model: one unit of work (a build, a grep, a reply) takes the time it
took at loops 0 plus, for each system call the delayed tasks made per unit
at loops 0, the calibrated latency the delay adds to one call.

A point is exact when it ran on the virtual clock and none of its timed
windows made a request to the host's files (raw.csv's p9_requests, all
0), and the staging found nothing that stops it being (lablib's
workloads.stage_problems): its times are then the guest's instructions
alone, the same on every machine.  Any other point is a measurement of
this machine on this day.  A point the picture cannot vouch for is drawn
hollow and grey, with a line above the panel saying how many and why
(summary's 'doubt'): on the virtual clock one that is not exact; on the
host's clock one whose spread is larger than the effect the model
predicts there.
"""
import math
import pathlib
import sys

from lablib import cli, results, stats
from lablib.experiments import workloads
from lablib.experiments.workloads import MEASURES
from lablib.sweep.analyse_output import count, draw, report

COLUMNS = ["measure", "loops", "ns", "added_ns", "measured_ns", "measured_vs_added", "n", "mean",
           "stddev", "min", "max", "unit", "seconds_per_unit", "median_seconds_per_unit",
           "syscalls_per_unit",
           "predicted_throughput", "checked_seconds_per_unit", "check_error", "errors",
           "p9_requests", "exact", "not_exact", "doubt", "doubt_kind", "knee_kept_up",
           "knee_overloaded", "ci_low", "ci_high", "check_low", "check_high"]
# The confidence of the host clock's intervals.
CONFIDENCE = 0.95


def mean_interval(values):
    """(low, high): the t interval of the mean of @values at CONFIDENCE,
    (None, None) with fewer than two or no spread to estimate."""
    if len(values) < 2:
        return None, None
    from scipy import stats as sps
    sd = stats.summary(values)["stddev"]
    if not sd:
        m = stats.mean(values)
        return m, m
    lo, hi = sps.t.interval(CONFIDENCE, len(values) - 1, loc=stats.mean(values),
                            scale=sd / math.sqrt(len(values)))
    return float(lo), float(hi)


def points(runs, measure, ns_per_loop, measured=None, entry_ns=0.0, virtual=False,
           problems=()):
    """One summary row per point (loop count or ns delay) of one measure;
    @measured: read_points(); @entry_ns: what a delayed call costs before
    its first loop (calibration.entry_ns); @virtual: the sweep ran on the
    virtual clock (a point can be exact); @problems: the staging's reasons
    that none is (workloads.stage_problems)."""
    factor, unit, _ = MEASURES[measure]
    by_setting = {}
    for r in runs:
        by_setting.setdefault(r["setting"], []).append(r)
    rows = []
    for setting in sorted(by_setting):
        rs = by_setting[setting]
        loops, ns = rs[0]["loops"], rs[0]["ns"]
        if loops is None:
            added = ns
        else:
            added = entry_ns + loops * ns_per_loop if loops else 0.0
        got = (measured or {}).get((loops, ns))
        thr = [factor * r["units"] / r["seconds"] if r["units"] > 0 else 0.0 for r in rs]
        done = [r for r in rs if r["units"] > 0]
        t = stats.summary(thr)
        spu = [r["seconds"] / r["units"] for r in done]
        p9 = [r.get("p9_requests") for r in rs]
        p9_requests = None if None in p9 else sum(p9)
        why = kind = None
        if p9_requests is None:
            why = kind = "requests to the host's files not counted"
        elif p9_requests:
            why = f"{p9_requests:,} requests to the host's files (9p) in its timed windows"
            kind = "requests to the host's files (9p) in their timed windows"
        elif problems:
            why = kind = "; ".join(problems)
        rows.append({
            "measure": measure, "loops": loops, "ns": ns, "knob": rs[0]["knob"],
            "setting": setting, "added_ns": added, "measured_ns": got,
            "measured_vs_added": got / added - 1 if got is not None and added else None,
            "n": t["n"], "mean": t["mean"], "stddev": t["stddev"], "min": t["min"],
            "max": t["max"], "unit": unit,
            "values": thr, "seconds_values": spu,
            "seconds_per_unit": stats.mean(spu),
            "median_seconds_per_unit": stats.summary(spu)["p50"],
            "syscalls_per_unit": stats.mean([r["syscalls"] / r["units"] for r in done
                                       if r["syscalls"] is not None]),
            "predicted_throughput": None, "checked_seconds_per_unit": None,
            "check_error": None,
            "errors": sum(r["errors"] for r in rs),
            "p9_requests": p9_requests, "exact": virtual and why is None,
            "doubt": why if virtual else None, "doubt_kind": kind if virtual else None,
            "not_exact": why, "ci_low": None, "ci_high": None, "check_low": None,
            "check_high": None,
        })
    return rows


def intervals(rows, m):
    """On the host's clock, where runs differ: each point's interval of
    its mean throughput (ci_low, ci_high) and of its check (check_low,
    check_high, from the interval of its mean time a unit), and the
    model's base and d½ with theirs (the calls a unit are counted, not
    sampled: d½'s interval is the base's over them).  m["check"] gains how
    many delayed points' intervals hold the model."""
    for p in rows:
        p["ci_low"], p["ci_high"] = mean_interval(p["values"])
        lo, hi = mean_interval(p["seconds_values"])
        if p["checked_seconds_per_unit"] and lo is not None:
            p["check_low"] = lo / p["checked_seconds_per_unit"] - 1
            p["check_high"] = hi / p["checked_seconds_per_unit"] - 1
    lo, hi = mean_interval(rows[0]["seconds_values"])
    m["base_low"], m["base_high"] = lo, hi
    calls = m["syscalls_per_unit"]
    m["half_ns_low"] = m["half_ns_high"] = None
    if calls and lo is not None:
        m["half_ns_low"], m["half_ns_high"] = lo / calls * 1e9, hi / calls * 1e9
    checked = [p for p in rows[1:] if p["check_low"] is not None]
    if m["check"] and checked:
        m["check"]["covered"] = sum(p["check_low"] <= 0 <= p["check_high"] for p in checked)
        m["check"]["with_interval"] = len(checked)


def doubt_noise(rows):
    """On the host's clock: a delayed point's doubt when its spread is
    larger than the effect the model predicts there, that is, when the
    predicted change of throughput from the undelayed point is less than
    twice the standard error of the measured change (spread()), or
    unknown (one run a point).  Needs the model's predicted_throughput."""
    first = rows[0]
    for p in rows[1:]:
        if p["predicted_throughput"] is None or not first["predicted_throughput"]:
            continue
        effect = 1 - p["predicted_throughput"] / first["predicted_throughput"]
        noise = spread(first, p)
        if noise is None:
            p["doubt"] = p["doubt_kind"] = "one run a point: the spread is unknown"
        elif effect < 2 * noise:
            p["doubt"] = (f"its spread (2 x {noise:.2g}) is larger than the effect the model "
                          f"predicts ({effect:.2g})")
            p["doubt_kind"] = "their spread is larger than the effect the model predicts"


def model(rows, measure, cpus, ns_per_loop=None, entry_ns=0.0, untimed_ns=0.0):
    """Fill in predicted_throughput and return the model of one measure;
    @untimed_ns: see check_points."""
    factor, _, _ = MEASURES[measure]
    first, last = rows[0], rows[-1]
    knob = first["knob"]
    if first["setting"] != 0:
        raise ValueError(f"measure {measure}: no run at {knob} 0, so no base time for the "
                         f"model (the smallest is {first['setting']})")
    base = first["seconds_per_unit"]
    if base is None:
        raise ValueError(f"measure {measure}: no run at {knob} 0 completed a unit of work")
    calls = first["syscalls_per_unit"]
    if calls is not None:
        for p in rows:
            p["predicted_throughput"] = factor / (base + calls * p["added_ns"] * 1e-9)
    check = check_points(rows, untimed_ns)
    thr0, thr_max = first["mean"], last["mean"]
    measured = thr0 / thr_max if thr_max > 0 else None
    predicted = None
    if calls is not None:
        predicted = (base + calls * last["added_ns"] * 1e-9) / base
    explained = None
    if measured is not None and predicted is not None and predicted - 1 > 1e-12:
        explained = (measured - 1) / (predicted - 1)
    m = {"syscalls_per_unit": calls, "base_seconds_per_unit": base,
         "knob": knob, "max_setting": last["setting"],
         "max_loops": last["loops"], "max_added_ns": last["added_ns"],
         "measured_slowdown": measured, "predicted_slowdown": predicted,
         "explained": explained, "check": check}
    m.update(halving(rows, base, calls, ns_per_loop, entry_ns))
    m["explanation"] = explain(measure, rows, m, cpus)
    m["shape"] = shape(measure, m)
    return m


def halving(rows, base, calls, ns_per_loop, entry_ns):
    """Where the model halves the throughput: d = base / calls, the delay
    per call that doubles the time of a unit of work (in loops too, when
    calibrated); how far the sweep went in those units; and the delay at
    which the measured mean throughput fell to half its value at 0, by
    linear interpolation of the time a unit between the points around it
    (None if it never did)."""
    out = {"half_ns": None, "half_loops": None, "reached_halves": None,
           "measured_half_ns": None}
    if not calls or base is None or base <= 0:
        return out
    half = base / calls * 1e9
    out["half_ns"] = half
    out["reached_halves"] = rows[-1]["added_ns"] / half
    if ns_per_loop:
        out["half_loops"] = max(0.0, (half - entry_ns) / ns_per_loop)
    # Between two points the time a unit, not the throughput, is the
    # straight line (the model: base + N x d): interpolate 1 / throughput,
    # which a straight line across the hyperbola would put too late.
    target = rows[0]["mean"] / 2
    for a, b in zip(rows, rows[1:]):
        if a["mean"] >= target >= b["mean"] and a["mean"] > b["mean"] > 0:
            t = (1 / target - 1 / a["mean"]) / (1 / b["mean"] - 1 / a["mean"])
            out["measured_half_ns"] = a["added_ns"] + t * (b["added_ns"] - a["added_ns"])
            break
    return out


def shape(measure, m):
    """Sentences on why the curve has its shape, from its own figures."""
    half, calls, base = m["half_ns"], m["syscalls_per_unit"], m["base_seconds_per_unit"]
    if half is None:
        return ""
    word = MEASURES[measure][2]
    loops = "" if m["half_loops"] is None else f" (about {m['half_loops']:,.0f} loops)"
    text = (f"Shape: a {word} took {base:.4g} s at {m['knob']} 0 and made {count(calls)} "
            f"delayed system calls, so every ns added to each call adds {count(calls)} ns "
            f"to a {word}. Throughput is then 1 / (base + N x d) = T0 / (1 + d / d½), "
            f"with d½ = base / N = {half:,.0f} ns{loops}: a hyperbola, steepest at 0, "
            f"where each ns costs 1/d½ of the throughput, and flatter after. At "
            f"d½, the knee, throughput has halved and each further ns costs a quarter "
            f"of what the first did; at 3 d½ a sixteenth. ")
    reached = m["reached_halves"]
    if reached < 1:
        text += (f"This sweep went to {m['max_added_ns']:,.0f} ns, {reached:.2f} d½: "
                 f"short of the knee, where the curve is still nearly straight; delays "
                 f"up to d½ or beyond show its whole shape.")
    else:
        text += f"This sweep went to {m['max_added_ns']:,.0f} ns, {reached:.2f} d½"
        got = m["measured_half_ns"]
        if got is None:
            text += ", and the measured throughput never halved."
        else:
            text += (f", and the measured throughput halved at {got:,.0f} ns "
                     f"({got / half - 1:+.1%} from d½).")
    return text


def check_points(rows, untimed_ns=0.0):
    """The model checked point by point with what the module measured:
    time per unit = base + the point's delayed calls per unit x (the ns
    the module measured per delayed call + @untimed_ns).  The module's
    figure is its spin, not the calibration's, which tests the model free
    of the calibration's error; but it does not hold the part of a delayed
    call's cost outside the spin's two clock reads (lablib's
    workloads.untimed_ns: 66 ns on the virtual clock), which the
    calibration's entry cost gives.  Times are the points' medians over
    their runs, which one disturbed run does not move.  Fills in each
    point's checked_seconds_per_unit and check_error (measured / checked
    - 1) and returns the largest |error|, over how many points and the
    untimed ns added, or None if the module measured nothing (an old
    sweep, loops 0 only)."""
    base = rows[0]["median_seconds_per_unit"]
    errors = []
    for p in rows[1:]:
        calls, got, took = p["syscalls_per_unit"], p["measured_ns"], p["median_seconds_per_unit"]
        if calls is None or got is None or took is None or base is None:
            continue
        p["checked_seconds_per_unit"] = base + calls * (got + untimed_ns) * 1e-9
        p["check_error"] = took / p["checked_seconds_per_unit"] - 1
        errors.append(p["check_error"])
    if not errors:
        return None
    return {"points": len(errors), "max_abs_error": max(abs(e) for e in errors),
            "untimed_ns": untimed_ns}


def spread(first, last):
    """Relative standard error of the ratio of two points' mean throughputs,
    None if either has a single run (no spread to estimate)."""
    if first["n"] < 2 or last["n"] < 2 or not first["mean"] or not last["mean"]:
        return None
    return math.sqrt(sum((p["stddev"] / p["mean"]) ** 2 / p["n"]
                         for p in (first, last)))


def explain(measure, rows, m, cpus):
    """One or two sentences on how the measured curve compares with the model."""
    word = MEASURES[measure][2]
    knob, setting, ns = m["knob"], m["max_setting"], m["max_added_ns"]
    at = f"at {setting} {knob} (+{ns:.0f} ns per system call)"
    measured, predicted, calls = m["measured_slowdown"], m["predicted_slowdown"], \
        m["syscalls_per_unit"]
    if setting == 0:
        return (f"Only {knob} 0 was measured, so there is no slowdown to compare with the "
                f"model.")
    if measured is None:
        return (f"No {word} completed {at}: throughput fell to 0, so the slowdown cannot be "
                f"computed.")
    if calls is None:
        return (f"No system call count was recorded at {knob} 0, so the model cannot be "
                f"drawn; the measured slowdown is {measured:.2f} {at}.")
    if m["explained"] is None:
        return (f"The delayed tasks made no system calls per {word} at {knob} 0, so the "
                f"model predicts no slowdown; the measured slowdown is {measured:.2f} {at}.")
    share = m["explained"]
    on_cpus = f"on {cpus} CPUs" if cpus else "on several CPUs"
    noise = spread(rows[0], rows[-1])
    if noise is not None and predicted - 1 < 2 * noise:
        return (f"The model predicts a slowdown of {predicted - 1:.2%} {at} from "
                f"{count(calls)} system calls per {word}, less than twice the run-to-run "
                f"spread of the two means ({noise:.1%}): at this scale the delay cannot be "
                f"seen, and the measured {measured - 1:+.1%} comes from the machine, not the "
                f"delay (noise, or the host's speed drifting during the sweep). A larger "
                f"scale or larger delays would show it.")
    if share < 0.8:
        text = (f"The measured slowdown {measured:.2f} {at} is smaller than the "
                f"{predicted:.2f} the model predicts from {count(calls)} system calls per "
                f"{word}: only {share:.0%} of the predicted extra time shows up. ")
        if measure == "reply":
            text += ("The reply time the client measures is partly client time (the "
                     "client itself, the loopback network), and the server "
                     "makes delayed calls that lengthen no reply: after the reply has gone "
                     "out (logging, closing the connection) or between requests (idle "
                     "workers, the parent's housekeeping), all counted per reply.")
        elif measure == "saturation":
            text += (f"The server's workers run {on_cpus} in parallel, so their delayed "
                     f"system calls overlap, and the highest sustained rate is partly set by "
                     f"the client (httperf) rather than the server, so a slower server "
                     f"moves it less than its own time per request grew.")
        else:
            jobs = ", make -j" if measure == "build" else ""
            text += (f"The delayed system calls overlap with other work (the {word} runs "
                     f"{on_cpus}{jobs}), or part of the time per {word} is spent "
                     f"outside the delayed tasks or waiting for the disk or a timer, where "
                     f"the added spin hides in a wait that happens anyway.")
        return text
    if share > 1.25:
        text = (f"The measured slowdown {measured:.2f} {at} is larger than the "
                f"{predicted:.2f} the model predicts ({share:.0%} of the predicted extra "
                f"time): the delay costs more than its spin time, through lost cache and "
                f"TLB state, tasks preempted or queued behind the delayed ones, or locks "
                f"held longer. ")
        top = rows[-1]["syscalls_per_unit"]
        if top is None or calls == 0:
            text += f"No system call count at {setting} {knob} to compare with {knob} 0."
        elif abs(top / calls - 1) > 0.1:
            text += (f"The system calls per {word} also changed from {count(calls)} at {knob} "
                     f"0 to {count(top)} at {setting} {knob} ({top / calls - 1:+.0%}), so "
                     f"the delay "
                     f"changed the work itself, not only its speed.")
        else:
            text += (f"The system calls per {word} stayed within 10% ({count(calls)} at "
                     f"{knob} 0, {count(top)} at {setting}), so more calls do not explain it.")
        return text
    text = (f"The model explains the curve: measured slowdown {measured:.3f} against "
            f"{predicted:.3f} predicted {at}, with {count(calls)} system calls per {word} "
            f"({share:.1%} of the predicted extra time shows up)")
    c = m.get("check")
    if c:
        text += (f"; point by point the time per {word} is within "
                 f"{100 * c['max_abs_error']:.2f} % of the model with the delay as it "
                 f"measured itself (check)")
    return text + "."


def summarise(d):
    """(meta, summary dict, fit names) of workload sweep folder @d."""
    s = workloads.read_sweep(d)
    measures = {}
    for name in MEASURES:   # a fixed order: apache's reply, saturation, server
        sel = [r for r in s["runs"] if r["measure"] == name]
        if sel:
            virtual = results.on_virtual_clock(s["meta"])
            rows = points(sel, name, s["ns_per_loop"], s["measured"], s["entry_ns"],
                          virtual, s["stage_problems"])
            if name == "saturation":
                for p in rows:
                    p["knee_kept_up"], p["knee_overloaded"] = s["knees"].get(
                        (p["loops"], p["ns"]), (None, None))
            measures[name] = {"unit": MEASURES[name][1], "points": rows,
                              "model": model(rows, name, s["cpus"], s["ns_per_loop"],
                                             s["entry_ns"], s["untimed_ns"])}
            if not virtual:
                doubt_noise(rows)
                intervals(rows, measures[name]["model"])
    summary = {"experiment": s["meta"].get("experiment", s["workload"]),
               "workload": s["workload"], "ns_per_loop": s["ns_per_loop"],
               "entry_ns": s["entry_ns"], "untimed_ns": s["untimed_ns"],
               "calibration_fits": s["fit_names"],
               "parts": s["split"], "settings": s["settings"], "measures": measures}
    return s["meta"], summary, s["fit_names"]


def add_args(p):
    cli.add_result_args(p, "RESULT_DIR", "a workload sweep result folder", "<workload>.png")


def work(args):
    d = pathlib.Path(args.dir)
    meta, summary, fit_names = summarise(d)
    workload, measures = summary["workload"], summary["measures"]
    results.write_csv(d / "summary.csv", COLUMNS,
                      [p for m in measures.values() for p in m["points"]])
    results.write_json(d / "summary.json", summary)
    text = report(workload, meta, summary["ns_per_loop"], fit_names, measures,
                  summary["entry_ns"], summary["parts"])
    results.write_text(d / "report.txt", text)
    if not args.no_plot:
        draw(workload, meta, summary["ns_per_loop"], measures, d / f"{workload}.png")
    cli.show(args, summary, text, d, ["report.txt", "summary.csv", "summary.json"],
             f"{workload}.png")


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-grep", add_args, work, argv=argv,
                    prog=prog or "python -m lablib.sweep.analyse")


if __name__ == "__main__":
    sys.exit(main())
