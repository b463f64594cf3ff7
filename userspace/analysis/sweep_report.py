#!/usr/bin/env python3
"""Summary, model and plot of a delay sweep (workloads/sweep.sh).

Reads RESULT_DIR/raw.csv (one row per timed run), calibration.json (the
added latency per loop) and settings.json, and writes in RESULT_DIR:
summary.csv and summary.json (throughput per loop count and measure, with
the model's prediction), report.txt (the same as a table, with a sentence
on how well the model fits) and <workload>.png (throughput against the
added system-call latency).

The model: one unit of work (a build, a grep, a reply) takes the time it
took at loops 0 plus, for each system call the delayed tasks made per unit
at loops 0, the calibrated latency the delay adds to one call.

usage: sweep_report.py RESULT_DIR
"""
import csv
import json
import math
import os
import re
import statistics
import sys
import textwrap

from labcli import plt, run, save

# measure: (throughput = factor x units / seconds, its unit, one unit of work)
MEASURES = {
    "build": (3600, "builds/hour", "build"),
    "grep": (60, "greps/min", "grep"),
    "cmd": (60, "runs/min", "run"),
    "reply": (1, "1/s (1/reply time)", "reply"),
    "saturation": (1, "requests/s", "request"),
}
RAW_COLUMNS = ["workload", "measure", "loops", "repeat", "units", "seconds", "syscalls",
               "errors", "detail"]
COLUMNS = ["measure", "loops", "added_ns", "n", "throughput_mean", "throughput_stddev",
           "throughput_unit", "seconds_per_unit", "syscalls_per_unit",
           "predicted_throughput", "errors"]
UNKNOWN = {"", "-", "na", "n/a", "none", "unknown"}


def number(rec, key, kind, unknown_ok=False):
    """One numeric field of a raw.csv row; None for an unknown one if allowed."""
    text = (rec.get(key) or "").strip()
    if unknown_ok and text.lower() in UNKNOWN:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{key} is {text!r}, not {'an integer' if kind is int else 'a number'}"
                         ) from None
    if not 0 <= value < float("inf"):
        raise ValueError(f"{key} is {text!r}, not a finite number >= 0")
    return value


def parse_run(rec):
    measure = (rec.get("measure") or "").strip()
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r} (known: {', '.join(MEASURES)})")
    r = {"workload": (rec.get("workload") or "").strip(), "measure": measure,
         "loops": number(rec, "loops", int), "repeat": number(rec, "repeat", int),
         "units": number(rec, "units", float), "seconds": number(rec, "seconds", float),
         "syscalls": number(rec, "syscalls", float, unknown_ok=True),
         "errors": number(rec, "errors", int, unknown_ok=True) or 0}
    if r["units"] > 0 and r["seconds"] <= 0:
        raise ValueError(f"{r['units']:g} units in {r['seconds']:g} s")
    return r


def read_raw(path):
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            raise ValueError(f"{path}: empty file, no header and no runs")
        missing = [c for c in RAW_COLUMNS if c not in reader.fieldnames]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} in the header")
        runs = []
        for rec in reader:
            try:
                runs.append(parse_run(rec))
            except ValueError as e:
                raise ValueError(f"{path} line {reader.line_num}: {e}") from None
    if not runs:
        raise ValueError(f"{path}: a header but no runs")
    return runs


def read_calibration(path):
    """Mean ns per loop over the fits, and the fits' names."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    fits = data.get("fits") if isinstance(data, dict) else None
    if not fits or not isinstance(fits, dict):
        raise ValueError(f"{path}: no fits (not a calibration file?)")
    try:
        slopes = [float(fit["ns_per_loop"]) for fit in fits.values()]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: a fit without a numeric ns_per_loop") from None
    ns_per_loop = sum(slopes) / len(slopes)
    if not ns_per_loop > 0:
        raise ValueError(f"{path}: the fits give {ns_per_loop} ns per loop, not > 0")
    return ns_per_loop, sorted(fits), data.get("kernel")


def read_settings(path):
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        settings = json.load(f)
    if not isinstance(settings, dict):
        raise ValueError(f"{path}: not a JSON object")
    return settings


def mean(values):
    return sum(values) / len(values) if values else None


def points(runs, measure, ns_per_loop):
    """One summary row per loop count of one measure."""
    factor, unit, _ = MEASURES[measure]
    by_loops = {}
    for r in runs:
        by_loops.setdefault(r["loops"], []).append(r)
    rows = []
    for loops in sorted(by_loops):
        rs = by_loops[loops]
        thr = [factor * r["units"] / r["seconds"] if r["units"] > 0 else 0.0 for r in rs]
        done = [r for r in rs if r["units"] > 0]
        rows.append({
            "measure": measure, "loops": loops, "added_ns": loops * ns_per_loop,
            "n": len(rs), "throughput_mean": mean(thr),
            "throughput_stddev": statistics.stdev(thr) if len(thr) > 1 else 0.0,
            "throughput_unit": unit,
            "seconds_per_unit": mean([r["seconds"] / r["units"] for r in done]),
            "syscalls_per_unit": mean([r["syscalls"] / r["units"] for r in done
                                       if r["syscalls"] is not None]),
            "predicted_throughput": None,
            "errors": sum(r["errors"] for r in rs),
        })
    return rows


def model(rows, measure, cpus):
    """Fill in predicted_throughput and return the model of one measure."""
    factor, _, _ = MEASURES[measure]
    first, last = rows[0], rows[-1]
    if first["loops"] != 0:
        raise ValueError(f"measure {measure}: no run at loops 0, so no base time for the "
                         f"model (the smallest loop count is {first['loops']})")
    base = first["seconds_per_unit"]
    if base is None:
        raise ValueError(f"measure {measure}: no run at loops 0 completed a unit of work")
    calls = first["syscalls_per_unit"]
    if calls is not None:
        for p in rows:
            p["predicted_throughput"] = factor / (base + calls * p["added_ns"] * 1e-9)
    thr0, thr_max = first["throughput_mean"], last["throughput_mean"]
    measured = thr0 / thr_max if thr_max > 0 else None
    predicted = None
    if calls is not None:
        predicted = (base + calls * last["added_ns"] * 1e-9) / base
    explained = None
    if measured is not None and predicted is not None and predicted - 1 > 1e-12:
        explained = (measured - 1) / (predicted - 1)
    m = {"syscalls_per_unit": calls, "base_seconds_per_unit": base,
         "max_loops": last["loops"], "max_added_ns": last["added_ns"],
         "measured_slowdown": measured, "predicted_slowdown": predicted,
         "explained": explained}
    m["explanation"] = explain(measure, rows, m, cpus)
    return m


def spread(first, last):
    """Relative standard error of the ratio of two points' mean throughputs,
    None if either has a single run (no spread to estimate)."""
    if first["n"] < 2 or last["n"] < 2 or not first["throughput_mean"] \
            or not last["throughput_mean"]:
        return None
    return math.sqrt(sum((p["throughput_stddev"] / p["throughput_mean"]) ** 2 / p["n"]
                         for p in (first, last)))


def explain(measure, rows, m, cpus):
    """One or two sentences on how the measured curve compares with the model."""
    word = MEASURES[measure][2]
    loops, ns = m["max_loops"], m["max_added_ns"]
    at = f"at {loops} loops (+{ns:.0f} ns per system call)"
    measured, predicted, calls = m["measured_slowdown"], m["predicted_slowdown"], \
        m["syscalls_per_unit"]
    if loops == 0:
        return "Only loops 0 was measured, so there is no slowdown to compare with the model."
    if measured is None:
        return (f"No {word} completed {at}: throughput fell to 0, so the slowdown cannot be "
                f"computed.")
    if calls is None:
        return (f"No system call count was recorded at loops 0, so the model cannot be "
                f"drawn; the measured slowdown is {measured:.2f} {at}.")
    if m["explained"] is None:
        return (f"The delayed tasks made no system calls per {word} at loops 0, so the "
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
                f"scale or larger loop counts would show it.")
    if share < 0.8:
        text = (f"The measured slowdown {measured:.2f} {at} is smaller than the "
                f"{predicted:.2f} the model predicts from {count(calls)} system calls per "
                f"{word}: only {share:.0%} of the predicted extra time shows up. ")
        if measure == "reply":
            text += ("The reply time httperf measures is partly client time (httperf "
                     "itself, connection set-up, the loopback network), and the server "
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
            text += f"No system call count at {loops} loops to compare with loops 0."
        elif abs(top / calls - 1) > 0.1:
            text += (f"The system calls per {word} also changed from {count(calls)} at loops 0 "
                     f"to {count(top)} at {loops} loops ({top / calls - 1:+.0%}), so the delay "
                     f"changed the work itself, not only its speed.")
        else:
            text += (f"The system calls per {word} stayed within 10% ({count(calls)} at loops "
                     f"0, {count(top)} at {loops}), so more calls do not explain it.")
        return text
    return (f"The model explains the curve within 25%: measured slowdown {measured:.2f} "
            f"against {predicted:.2f} predicted {at}, with {count(calls)} system calls per "
            f"{word} ({share:.0%} of the predicted extra time shows up).")


def num(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.3f}"
    return f"{v:.4g}"


def count(v):
    """A system call count: whole and grouped when large, 3 digits when small."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def opt(v, spec):
    return "n/a" if v is None else format(v, spec)


def report(workload, settings, kernel, ns_per_loop, fit_names, measures):
    cpus = settings.get("cpus")
    out = [f"{workload} sweep, kernel {kernel}" + (f", {cpus} CPUs" if cpus else "")
           + f"; {ns_per_loop:.3f} ns added per loop (mean of the "
           + f"{', '.join(fit_names)} fit{'s' if len(fit_names) > 1 else ''})"]
    for name, m in measures.items():
        rows, mod = m["points"], m["model"]
        show_errors = any(p["errors"] for p in rows)
        head = (f"{'loops':>7}{'added ns':>10}{'throughput':>13}{'sd':>12}{'n':>4}"
                f"{'predicted':>12}{'syscalls/unit':>15}" + (f"{'errors':>8}" if show_errors
                                                              else ""))
        out += ["", f"{name}: throughput in {m['unit']}", head, "-" * len(head)]
        for p in rows:
            sc = p["syscalls_per_unit"]
            out.append(f"{p['loops']:>7}{p['added_ns']:>10.0f}{num(p['throughput_mean']):>13}"
                       f" \u00b1{num(p['throughput_stddev']):>10}{p['n']:>4}"
                       f"{num(p['predicted_throughput']):>12}"
                       f"{'-' if sc is None else count(sc):>15}"
                       + (f"{p['errors']:>8}" if show_errors else ""))
        out.append(f"model: measured slowdown {opt(mod['measured_slowdown'], '.2f')}, "
                   f"predicted {opt(mod['predicted_slowdown'], '.2f')} at "
                   f"{mod['max_loops']} loops (+{mod['max_added_ns']:.0f} ns)")
        out += textwrap.wrap(mod["explanation"], 88)
    return "\n".join(out) + "\n"


def plot(workload, kernel, ns_per_loop, measures, path):
    names = list(measures)
    fig, axes = plt.subplots(1, len(names), figsize=(1 + 5.2 * len(names), 4.6), dpi=120,
                             squeeze=False)
    axes = list(axes[0])
    for ax, name in zip(axes, names):
        factor, unit, word = MEASURES[name]
        rows, mod = measures[name]["points"], measures[name]["model"]
        x = [p["added_ns"] for p in rows]
        ax.errorbar(x, [p["throughput_mean"] for p in rows],
                    yerr=[p["throughput_stddev"] for p in rows], fmt="o", ms=4, capsize=3,
                    color="C0", label=f"{name}: mean \u00b1 sd over repeats")
        calls, base = mod["syscalls_per_unit"], mod["base_seconds_per_unit"]
        if calls is not None:
            xs = [max(x) * i / 80 for i in range(81)]
            ax.plot(xs, [factor / (base + calls * v * 1e-9) for v in xs], "--", color="C3",
                    label=f"model: base + {count(calls)} calls/{word} \u00d7 added latency")
        ax.set_xlabel("added latency per system call (ns)")
        ax.set_ylabel(f"{name} throughput ({unit})")
        ax.set_ylim(bottom=0)
        top = ax.secondary_xaxis("top", functions=(lambda v: v / ns_per_loop,
                                                   lambda v: v * ns_per_loop))
        top.set_xlabel("delay module loops", fontsize=8)
        if ax is not axes[-1]:
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(f"{workload}: throughput under the system-call delay (kernel {kernel})",
                 fontsize=10)
    save(fig, axes[-1], path)


def write_all(d):
    runs = read_raw(os.path.join(d, "raw.csv"))
    ns_per_loop, fit_names, cal_kernel = read_calibration(os.path.join(d, "calibration.json"))
    settings = read_settings(os.path.join(d, "settings.json"))
    workloads = sorted({r["workload"] for r in runs})
    if len(workloads) != 1:
        raise ValueError(f"{d}/raw.csv: one workload expected, found {workloads}")
    workload = workloads[0]
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", workload):
        raise ValueError(f"{d}/raw.csv: workload {workload!r} cannot name the plot file")
    kernel = settings.get("kernel") or cal_kernel or "?"
    cpus = settings.get("cpus") if isinstance(settings.get("cpus"), int) else None
    measures = {}
    for name in MEASURES:   # a fixed order: apache's reply before saturation
        sel = [r for r in runs if r["measure"] == name]
        if sel:
            rows = points(sel, name, ns_per_loop)
            measures[name] = {"unit": MEASURES[name][1], "points": rows,
                              "model": model(rows, name, cpus)}
    with open(os.path.join(d, "summary.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for m in measures.values():
            w.writerows(m["points"])
    with open(os.path.join(d, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"workload": workload, "ns_per_loop": ns_per_loop, "settings": settings,
                   "measures": measures}, f, indent=1, allow_nan=False)
    text = report(workload, settings, kernel, ns_per_loop, fit_names, measures)
    with open(os.path.join(d, "report.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    plot(workload, kernel, ns_per_loop, measures, os.path.join(d, f"{workload}.png"))
    print(text, end="")
    print(f"results: {d}/report.txt, summary.csv, summary.json, {workload}.png")


def main(argv):
    return run(__doc__, argv, 1, write_all)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
