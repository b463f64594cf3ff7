"""The sweep analysis's output: report.txt's text and the <workload>.png
picture of a sweep's summary (lablib.sweep.analyse computes the points and
the model; its module doc says what they are)."""
import pathlib
import textwrap

from lablib import plot, results
from lablib.experiments.workloads import MEASURES
from lablib.text import num


def count(v):
    """A system call count: whole and grouped when large, 3 digits when small."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def opt(v, spec):
    return "n/a" if v is None else format(v, spec)


def label(workload, meta, width=60):
    """@workload as a report and a plot name it: with the command it timed
    (the words after '--' in meta.json's command), cut to @width."""
    command = meta.get("command") or []
    if "--" not in command:
        return workload
    words = " ".join(command[command.index("--") + 1:])
    return f"{workload} ({textwrap.shorten(words, width, placeholder=' ...')})"


def report(workload, meta, ns_per_loop, fit_names, measures, entry_ns=0.0, split=None):
    """report.txt: a table of each measure's points, the model's figures and
    what it says of the curve (@measures: summary.json's)."""
    virtual = results.on_virtual_clock(meta)
    delay = delay_name(meta)
    if ns_per_loop is None:
        mode = delay if through_bpf(meta) else "the module's ns mode"
        how = f"delays requested in ns ({mode}, no calibration)"
    else:
        how = (f"{ns_per_loop:.3f} ns added per loop after {round(entry_ns):d} ns to enter "
               f"the delay (mean of the {', '.join(fit_names)} "
               f"fit{'s' if len(fit_names) > 1 else ''})")
    out = [f"{label(workload, meta)} sweep, {results.describe(meta)}; {how}"]
    if split:
        where = sorted(set(split["where"].values()))
        out += textwrap.wrap(
            f"Measured in {split['parts']} parts, each in a boot of its own, at once "
            f"({', '.join(where)}); part 1 calibrated; each point's lines are as its "
            f"part wrote them (parts.json: which points each part ran).", 88)
    for name, m in measures.items():
        rows, mod = m["points"], m["model"]
        show_errors = any(p["errors"] for p in rows)
        knob = rows[0]["knob"]
        head = (f"{knob:>7}{'added ns':>10}{'measured':>10}{'throughput':>13}{'sd':>12}"
                f"{'n':>4}"
                f"{'predicted':>12}{'syscalls/unit':>15}{'check':>8}"
                + (f"{'errors':>8}" if show_errors else ""))
        out += ["", f"{name}: throughput in {m['unit']}", head, "-" * len(head)]
        for p in rows:
            sc = p["syscalls_per_unit"]
            got, err = p["measured_ns"], p["check_error"]
            check = "-" if err is None else f"{100 * err:+.1f}"
            out.append(f"{p['setting']:>7}{p['added_ns']:>10.0f}"
                       f"{'-' if got is None else f'{got:.0f}':>10}{num(p['mean'], 4):>13}"
                       f" \u00b1{num(p['stddev'], 4):>10}{p['n']:>4}"
                       f"{num(p['predicted_throughput'], 4):>12}"
                       f"{'-' if sc is None else count(sc):>15}"
                       f"{check:>8}"
                       + (f"{p['errors']:>8}" if show_errors else ""))
        for p in rows:
            if p.get("knee_kept_up") is not None:
                hi = p["knee_overloaded"]
                out.append(f"knee at {p['setting']} {knob}: kept up with "
                           f"{p['knee_kept_up']:.0f}/s offered, "
                           + ("no overload found" if hi is None else
                              f"overloaded at {hi:.0f}/s "
                              f"(+{100 * (hi / p['knee_kept_up'] - 1):.1f} %)"))
        out.append(f"model: measured slowdown {opt(mod['measured_slowdown'], '.3f')}, "
                   f"predicted {opt(mod['predicted_slowdown'], '.3f')} at "
                   f"{mod['max_setting']} {knob} (+{mod['max_added_ns']:.0f} ns)")
        out += measured_note(rows, meta)
        out += exact_note(rows, virtual)
        out += varies_note(rows, virtual, meta)
        if mod["check"]:
            c = mod["check"]
            untimed = (f" + {c['untimed_ns']:.0f} ns it does not time, the calibration's "
                       f"entry less its clock read" if c["untimed_ns"] else "")
            out += textwrap.wrap(
                f"check (base + each point's delayed calls x (the ns {delay} measured per "
                f"call{untimed})): within {100 * c['max_abs_error']:.2f} % at all "
                f"{c['points']} delayed points (column 'check', %)", 88)
        out += textwrap.wrap(interval_note(rows, mod), 88)
        out += textwrap.wrap(mod["explanation"], 88)
        out += textwrap.wrap(mod["shape"], 88)
    return "\n".join(out) + "\n"


def interval_note(rows, mod):
    """On the host's clock: the model's figures with their 95 % intervals
    (analyse.intervals), and how many delayed points' intervals hold the
    model; '' where they were not worked out (the virtual clock)."""
    if mod.get("base_low") is None:
        return ""
    word = MEASURES[rows[0]["measure"]][2]
    text = (f"95 % intervals over each point's runs: base {mod['base_seconds_per_unit']:.4g} s "
            f"a {word} ({mod['base_low']:.4g} to {mod['base_high']:.4g})")
    if mod.get("half_ns_low") is not None:
        text += (f", {count(mod['syscalls_per_unit'])} calls a {word} (counted), so d½ "
                 f"{mod['half_ns']:,.0f} ns ({mod['half_ns_low']:,.0f} to "
                 f"{mod['half_ns_high']:,.0f})")
    c = mod["check"]
    if c and c.get("with_interval"):
        worst = max((p for p in rows[1:] if p["check_low"] is not None),
                    key=lambda p: abs(p["check_error"]))
        text += (f"; the model's check lies within the interval of {c['covered']} of "
                 f"{c['with_interval']} delayed points (the farthest: "
                 f"{100 * worst['check_error']:+.2f} % at {worst['setting']} {worst['knob']}, "
                 f"{100 * worst['check_low']:+.2f} to {100 * worst['check_high']:+.2f} %)")
    return text + "."


def exact_note(rows, virtual):
    """Lines on which points are exact (see the module's doc) and why the
    others are not."""
    knob = rows[0]["knob"]
    counted = [p for p in rows if p["p9_requests"] is not None]
    if not counted:
        return (["no point is exact: the requests to the host's files in the timed windows "
                 "were not counted (a sweep from before they were)"] if virtual else [])
    total = sum(p["p9_requests"] for p in counted)
    if not virtual:
        out = [f"host's clock: every point measures this machine today; "
               f"{total:,} requests to the host's files (9p) in the timed windows"]
        doubted = [p for p in rows if p["doubt"]]
        if doubted:
            out += textwrap.wrap(
                f"within the noise ({len(doubted)} of {len(rows)} points, drawn hollow): "
                + "; ".join(f"{knob} {p['setting']}: {p['doubt']}" for p in doubted), 88)
        return out
    if all(p["exact"] for p in rows):
        return ["exact: every point (the virtual clock, and no request to the host's files "
                "in any timed window)"]
    late = [f"{p['setting']} ({p['not_exact']})" for p in rows if not p["exact"]]
    return textwrap.wrap(f"not exact (drawn hollow): {knob} {', '.join(late)}; a request to "
                         f"the host's files lasts as long as the host took, under the "
                         f"virtual clock until the next timer tick; "
                         f"{sum(p['exact'] for p in rows)} of {len(rows)} points exact", 88)


def varies_note(rows, virtual, meta):
    """On the virtual clock, where time is the guest's instructions: how far
    the exact points' runs still differ, which is the guest's own doing, with
    a way to fix it where the lab knows one (a Python program draws its hash
    seed at each start)."""
    spreads = [(p["max"] - p["min"]) / p["mean"] for p in rows
               if p["exact"] and p["n"] > 1 and p["mean"]]
    if not virtual or not spreads:
        return []
    out = (f"runs of an exact point differ by up to {100 * max(spreads):.3f} %: what the "
           f"guest did differently from run to run (the program and the kernel under it), "
           f"with no request to the host's files")
    command = meta.get("command") or []
    words = command[command.index("--") + 1:] if "--" in command else []
    if any(pathlib.PurePath(w).name.startswith("python") for w in words) and \
            "PYTHONHASHSEED=0" not in words:
        out += ("; Python draws its hash seed at each start: 'env PYTHONHASHSEED=0 "
                f"{' '.join(words)}' runs it the same every time")
    return textwrap.wrap(out, 88)


def through_bpf(meta):
    """The BPF delay delayed the calls (meta.json's settings.delay)."""
    return results.settings(meta).get("delay") == "bpf"


def delay_name(meta):
    """What delayed the calls, as report.txt says it."""
    return "the BPF delay" if through_bpf(meta) else "the module"


def measured_note(rows, meta):
    """A line on how far the delay measured itself lies from the
    calibrated (loops) or requested (ns) one, at the largest delay."""
    top = rows[-1]
    if top["measured_ns"] is None or not top["added_ns"]:
        return []
    what = "requested" if top["knob"] == "ns" else "calibrated"
    return [f"{delay_name(meta)} measured {top['measured_ns']:.0f} ns per delayed call at "
            f"{top['setting']} {top['knob']}, {100 * top['measured_vs_added']:+.1f} % from "
            f"the {top['added_ns']:.0f} ns {what}"]


def error_bars(sel, virtual):
    """The error bars of points @sel: the sd on the virtual clock, the 95 %
    interval of the mean on the host's (none for a point of one run)."""
    if virtual:
        return [p["stddev"] for p in sel]
    return [[p["mean"] - p["ci_low"] if p.get("ci_low") is not None else 0 for p in sel],
            [p["ci_high"] - p["mean"] if p.get("ci_high") is not None else 0 for p in sel]]


def draw(workload, meta, ns_per_loop, measures, path):
    """<workload>.png at @path: a panel a measure, its points' throughput
    and the model against the added latency."""
    names = list(measures)
    # On the host's clock runs differ: each run drawn, and the mean with its
    # 95 % interval; on the virtual clock the mean and the runs' sd.
    virtual = results.on_virtual_clock(meta)
    bars = "sd over repeats" if virtual else "95 % interval"
    fig, axes = plot.figure(len(names), width=1 + 5.2 * len(names), height=4.6)
    axes = axes if len(names) > 1 else [axes]
    for ax, name in zip(axes, names):
        factor, unit, word = MEASURES[name]
        rows, mod = measures[name]["points"], measures[name]["model"]
        x = [p["added_ns"] for p in rows]
        bad = [p for p in rows if p["doubt"]]
        good = [p for p in rows if not p["doubt"]]
        if not virtual:
            runs = [(p["added_ns"], v) for p in rows for v in p.get("values", [])]
            ax.plot([x for x, _ in runs], [v for _, v in runs], ".", color="0.35", ms=3,
                    alpha=0.6, label="each run")
        for sel, style in ((good, {"ms": 4, "color": "C0",
                                   "label": f"{name}: mean \u00b1 {bars}"}),
                           (bad, {"ms": 5, "color": "0.55", "mfc": "none",
                                  "label": f"{name}: {doubt_label(bad)}, mean \u00b1 {bars}"})):
            if sel:
                ax.errorbar([p["added_ns"] for p in sel], [p["mean"] for p in sel],
                            yerr=error_bars(sel, virtual), fmt="o", capsize=3, **style)
        if bad:
            ax.set_title("\n".join(textwrap.wrap(doubt_banner(rows), 60)), fontsize=8,
                         color="C3")
        calls, base = mod["syscalls_per_unit"], mod["base_seconds_per_unit"]
        if calls is not None:
            xs = [max(x) * i / 80 for i in range(81)]
            ax.plot(xs, [factor / (base + calls * v * 1e-9) for v in xs], "--", color="C3",
                    label=f"model: base + {count(calls)} calls/{word} \u00d7 added latency")
            half = mod["half_ns"]
            if half and half <= max(x):
                ax.axvline(half, color="C2", lw=0.8, ls=":",
                           label=f"d\u00bd = base / calls = {half:,.0f} ns (throughput halved)")
        ax.set_xlabel("added latency per system call (ns)")
        ax.set_ylabel(f"{name} throughput ({unit})")
        # From 0, and room above the highest mean and its error bar: an
        # autoscaled top cut the highest dot in half.
        top = [p["mean"] + (p["stddev"] or 0) for p in rows]
        top += [v for p in rows for v in (p.get("values", []) if not virtual else [])]
        top += [p["ci_high"] for p in rows if p.get("ci_high") is not None]
        ax.set_ylim(0, max(top) * 1.12)
        if ns_per_loop:
            top = ax.secondary_xaxis("top", functions=(lambda v: v / ns_per_loop,
                                                       lambda v: v * ns_per_loop))
            top.set_xlabel("delay module loops", fontsize=8)
        if ax is not axes[-1]:
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    through = " (the BPF delay)" if through_bpf(meta) else ""
    plot.headline(fig, f"{label(workload, meta)}: throughput under the system-call delay"
                  f"{through}", meta,
                  75 * len(names))
    plot.save(fig, axes[-1], path)


def doubt_label(bad):
    """The legend's name of the hollow points: not exact where each one's
    doubt is its reason for that (the virtual clock), else within the
    noise (the host's, whatever its 9p counts)."""
    return "not exact" if all(p["doubt"] == p["not_exact"] for p in bad) else \
        "within the noise"


def doubt_banner(rows):
    """The line above a panel with doubted points: how many, and why (each
    kind of reason, the commonest first; report.txt has each point's)."""
    bad = [p for p in rows if p["doubt"]]
    kinds = [p["doubt_kind"] for p in bad]
    why = sorted(set(kinds), key=lambda k: (-kinds.count(k), k))
    return (f"{len(bad)} of {len(rows)} points {doubt_label(bad)}, drawn hollow: "
            + "; ".join(why))
