"""Compare the kernels of an rt-compare run (make rt-compare): for each
kernel folder DIR/<variant>/ that guest.sh wrote, cyclictest idle and
loaded (histograms, min, mean, p99, p99.9, max per thread and pooled), perf
stat of sortsum unsorted and sorted, the square wave's highest frequency
held within 10 %, and the lab's own experiments (calibration slope,
wake-up medians, SMP medians, unloads under load).  Then, for every
figure: stock against RT, their ratio and lablib.compare's verdict (one
boot a kernel: identical or inconclusive on the virtual clock, inconclusive
on the host's), and the spread inside the boot (over perf stat's repeats or
cyclictest's threads) as a description.

Writes DIR/comparison.json, DIR/comparison.csv, DIR/report.txt,
DIR/cyclictest-idle.png, DIR/cyclictest-loaded.png (both kernels' log
histograms), DIR/squarewave.png, and DIR/<variant>/{cyclictest,delay}/
traced/worst.txt (the trace's events around the traced run's worst
wake-up, when trace-cmd is there); reads cyclictest/caught/ (the wake-up
a caught run stopped at and what ran meanwhile); prints the report.
"""
import math
import pathlib
import sys

from lablib import cli, figures, plot, results
from lablib import compare as lab_compare
from lablib.experiments.rtcompare import HOLD, LOADS, kernels_of
from lablib.text import num

IMPLS = ("python", "c-nanosleep", "c-rt")
COLUMNS = ("figure", "unit", "base", "other", "ratio", "verdict", "why", "base_spread",
           "other_spread")


# --- cyclictest, in words ----------------------------------------------------

def worst_line(tr):
    """What a traced run found: its worst wake-up explained, and whether
    the measured run's maximum lies within it (cyclictest's us are whole
    and include its own return to user space: 1 us of slack)."""
    w = tr.get("worst")
    if w is None:
        why = "no trace.dat" if not tr["trace"] else "no cyclictest wake-up in its trace"
        return f": {why}, nothing explained"
    us = w["latency_ns"] / 1e3
    whole = ("whole run traced" if not tr.get("lost_events") else
             f"run traced, {tr['lost_events']:,} events lost")
    text = (f" ({whole}, {w['count']:,} of {tr['cycles']:,} wake-ups in the "
            f"trace, cyclictest's max {num(tr['max'])} us): its worst, {us:,.1f} us: "
            f"{describe_worst(w['delay'])}")
    m = tr.get("measured_max")
    if m is not None:
        text += (f"; the measured run's max, {num(m)} us, is within it" if m <= us + 1 else
                 f"; the measured run's max, {num(m)} us, did not recur under the trace: "
                 f"not explained")
    return text


def caught_line(c):
    """What the caught run stopped at, and what ran meanwhile."""
    if c["unread"]:
        return (f"its trace was not read ({c['unread']}); cyclictest's max "
                f"{num(c['max'])} us in {c['cycles']:,}")
    if c["caught"] is None:
        return (f"no wake-up over {num(c['threshold'])} us in {c['cycles']:,} "
                f"(max {num(c['max'])} us)")
    h = c["caught"]
    ran = "; ".join(f"{r['what']} ({r['comm']}-{r['pid']}, "
                    + (f"{r['ns'] / 1e3:,.1f} us" if r["ns"] is not None else "still running")
                    + f", {r['overlap_ns'] / 1e3:,.1f} us of it after the wake-up was due)"
                    for r in h["ran"])
    return (f"stopped at a {h['latency_us']} us wake-up (over {h['threshold_us']}) after "
            f"{c['cycles']:,}; while it waited CPU {h['cpu']} ran "
            + (ran or "no traced work item, softirq or handler"))


def describe_worst(w):
    """One sentence of lablib.readers.ftrace.wakeup_delay()'s answer."""
    if not w:
        return "the trace lacks its wake-up"
    parts = []
    for h in w["held"]:
        # The code the events name, else the events themselves.
        named = h.get("ran") or h["events"]
        what = ", ".join(f"{e} x{n}" if n > 1 else e for e, n in sorted(named.items()))
        if h["delay_ns"]:
            what += f"; the delay module held {len(h['delay_ns'])} call(s) for " \
                    f"{', '.join(f'{d / 1e3:,.1f}' for d in h['delay_ns'])} us"
        parts.append(f"{h['comm']}-{h['pid']} {h['ns'] / 1e3:,.1f} us"
                     + (f" ({what})" if what else ""))
    late = w.get("timer_late_ns")
    timer = "" if late is None else f"its timer fired {late / 1e3:,.1f} us after it was due, "
    return (f"{timer}woken on CPU {w['cpu']}, ran {w['latency_ns'] / 1e3:,.1f} us later; "
            f"meanwhile CPU {w['cpu']} ran " + ("; then ".join(parts) or "nothing traced"))


# --- cyclictest against a hold of known length -------------------------------

HOLD_MODES = {"spin": "spinning", "sleep": "sleeping"}


def hold_words(kind):
    """spin-entry -> "spinning at entry": how a kind of hold reads."""
    mode, _, where = kind.partition("-")
    return f"{HOLD_MODES.get(mode, mode)} at {where}"


def delay_kinds(kernels):
    """{kind: {kernel: that kernel's delay member of that kind}}, the kinds
    in the order the first kernel that has them ran them."""
    out = {}
    for v, k in kernels.items():
        for kind, d in (k.get("delay") or {}).items():
            if d.get("holds"):
                out.setdefault(kind, {})[v] = d
    return out


def delay_lines(kernels):
    """The delay member's tables, one a kind of hold: per hold, each
    kernel's max, p99.9 and mean."""
    lines = []
    for kind, have in delay_kinds(kernels).items():
        holds = sorted({h["ns"] for d in have.values() for h in d["holds"]})
        lines += ["", f"cyclictest on CPU 0 against a normal task whose getppid calls the "
                  f"delay module holds for a known time, {hold_words(kind)} (us; max / "
                  f"p99.9 / mean):",
                  f"{'hold us':>8}" + "".join(f"{v:>26}" for v in have)]
        for ns in holds:
            cells = []
            for d in have.values():
                c = next((h for h in d["holds"] if h["ns"] == ns), None)
                cells.append("-" if not c else
                             f"{num(c['max'])} / {num(c['p999'])} / {c['mean']:.1f}")
            lines.append(f"{ns / 1e3:>8g}" + "".join(f"{c:>26}" for c in cells))
        for v, d in have.items():
            tr = d.get("traced")
            if tr:
                lines.append(f"  worst at a {num(tr['ns'] / 1e3 if tr['ns'] else None)} us "
                             f"hold on {v}{worst_line(tr)}")
    return lines


def plot_delay(d, kernels):
    """delay.png: a panel a kind of hold, each kernel's cyclictest maximum
    (and p99.9) against the hold, with the line a kernel that cannot
    preempt the hold would follow."""
    kinds = delay_kinds(kernels)
    if not kinds:
        return None
    fig, axes = plot.figure(len(kinds), width=1 + 5.2 * len(kinds), height=4.6)
    axes = axes if len(kinds) > 1 else [axes]
    for ax, (kind, have) in zip(axes, kinds.items()):
        top = max(c["ns"] for dm in have.values() for c in dm["holds"]) / 1e3
        ax.plot([0, top], [0, top], color="grey", linestyle=":", label="the hold itself")
        for i, (v, dm) in enumerate(have.items()):
            xs = [c["ns"] / 1e3 for c in dm["holds"]]
            ax.plot(xs, [c["max"] for c in dm["holds"]], marker="o", color=f"C{i}",
                    label=f"{v}: max")
            ax.plot(xs, [c["p999"] for c in dm["holds"]], marker="x", linestyle="--",
                    color=f"C{i}", label=f"{v}: p99.9")
        ax.set_xlabel("the delay module's hold of each getppid call (us)")
        ax.set_ylabel("cyclictest wake-up latency (us)")
        ax.set_title(f"the hold {hold_words(kind)}")
        ax.legend(fontsize=7)
    headline(fig, "cyclictest on CPU 0 against a normal task's hold of known length",
             kernels)
    plot.save(fig, axes[-1], d / "delay.png")
    return "delay.png"


# --- the comparison ----------------------------------------------------------------

def _width(spread):
    return spread[1] - spread[0] if spread else None


def compare(base, other, clock):
    """The rows of kernel @other against kernel @base: every figure
    figures.rt_kernel gives both, with lablib.compare's verdict on @clock
    (one boot a kernel: exact on the virtual clock; on the host's,
    inconclusive until compare sets several runs' kernel folders against
    each other) and, as a description, the spread inside the boot."""
    fa = {f["figure"]: f for f in figures.rt_kernel(base)}
    rows = []
    for f in figures.rt_kernel(other):
        a = fa.get(f["figure"])
        if not a or a["value"] is None or f["value"] is None:
            continue
        rows.append({"figure": f["figure"], "unit": f["unit"], "better": f["better"],
                     "kind": f["kind"], "a": [float(a["value"])], "b": [float(f["value"])],
                     "base": a["value"], "other": f["value"],
                     "base_spread": _width(a["spread"]), "other_spread": _width(f["spread"])})
    lab_compare.judge(rows, clock)
    for r in rows:
        del r["a"], r["b"]
    return rows


# --- report and plots --------------------------------------------------------------

def headline(fig, what, kernels):
    """plot.headline of a picture that compares @kernels: "rt-compare:
    @what, stock against rt" over where they ran.  The kernels of one run
    share the machine: the subtitle names each kernel (release, variant,
    preemption), then the machine and clock once.  Should the machines
    differ (as results.describe says them), it is the first kernel's, and
    the title says so."""
    names = list(kernels)
    metas = [k.get("meta") or {} for k in kernels.values()]
    title = f"rt-compare: {what}, {' against '.join(names)}"
    if len({results.describe({"machine": m.get("machine")}) for m in metas}) > 1:
        title += f" (the machine: {names[0]}'s; each kernel's in report.txt)"
        meta = metas[0]
    else:
        said = dict.fromkeys(results.describe({"kernel": m.get("kernel")})
                             .removeprefix("kernel ") for m in metas)
        meta = {**metas[0], "kernel": {"release": " against kernel ".join(said)}}
    plot.headline(fig, title, meta, int(14 * fig.get_figwidth()))


def report(d, kernels, rows, names):
    lines = [f"rt-compare: {d}"]
    emulated = False
    for v, k in kernels.items():
        m = k["meta"]
        lines.append(f"  {v}: {results.describe(m)}; uname -v: {k['kernel'].get('version')}")
        emulated |= results.get(m, "machine", "accelerator") == "tcg"
        if not results.get(m, "machine", "pmu"):
            lines.append(f"  {v}: no PMU: hardware events (cycles, instructions, branches, "
                         f"branch-misses) are <not supported>; software events and rusage "
                         f"are measured")
        for s in k["skipped"]:
            lines.append(f"  {v}: skipped {s['member']}: {s['reason']}")
    if emulated and virtual_clock(kernels):
        lines.append("  On QEMU's virtual clock a latency is a path length, one ns per "
                     "guest instruction: the same on every machine and every boot, blind "
                     "to caches and memory, and never a lost host CPU; the vCPUs take "
                     "turns on one host thread, so a wake-up across CPUs includes the "
                     "other vCPU's turn.")
    elif emulated:
        lines.append("  Under QEMU TCG every latency is the emulator's: a timer interrupt, "
                     "a context switch and a wake-up are emulated code, many times slower "
                     "and noisier than on hardware; ratios within one run carry over "
                     "better than absolute figures.")
    lines.append("")
    for v, k in kernels.items():
        for load in LOADS:
            c = results.get(k, "cyclictest", load)
            if not c:
                continue
            lines.append(f"cyclictest {load}, {v} (us): thread cpu n min mean p99 p99.9 max "
                         f"overflow")
            for t in c["threads"]:
                lines.append(f"  {t['thread']:>3} {t['cpu']!s:>3} {t['n']:>7} "
                             f"{num(t['min']):>6} {t['mean']:>8.1f} {num(t['p99']):>7} "
                             f"{num(t['p999']):>7} {num(t['max']):>7} {t['overflow']:>5}")
        tr = results.get(k, "cyclictest", "traced")
        if tr:
            lines.append(f"  the loaded run again, traced ({v}): "
                         f"{d}/{v}/cyclictest/traced/trace.dat (kernelshark), its worst "
                         f"wake-up's events in worst.txt")
            lines.append(f"    the worst wake-up{worst_line(tr)}")
        c = results.get(k, "cyclictest", "caught")
        if c:
            lines.append(f"  the load again, wake-ups 100 us apart, work items, softirqs and "
                         f"handlers traced ({v}): {d}/{v}/cyclictest/caught/trace.dat")
            lines.append(f"    {caught_line(c)}")
    lines += delay_lines(kernels)
    if len(names) == 2 and rows:
        clock = "virtual" if virtual_clock(kernels) else "host"
        lines += ["", f"{names[1]} against {names[0]}: ratio = {names[1]} / {names[0]}; "
                  f"verdict: lablib.compare's on the {clock} clock, one boot a kernel "
                  + ("(identical within the figure's band, else inconclusive: one boot "
                     "cannot tell a change from a boot that lands off)" if
                     clock == "virtual" else
                     "(inconclusive: a verdict takes several runs, then compare -a "
                     "R1/" + names[0] + " R2/" + names[0] + " -b R1/" + names[1] + " R2/"
                     + names[1] + ")")
                  + "; spread: the range over cyclictest's threads or perf stat's "
                  "repeats inside the boot, a description, not a test"]
        lines.append(f"{'figure':<58}{'unit':>8}{names[0]:>12} {names[1]:>12}"
                     f"{'ratio':>8}  {'verdict':<16}{'spread':>22}")
        for r in rows:
            spread = (f"{num(r['base_spread'])} / {num(r['other_spread'])}"
                      if r["base_spread"] is not None and r["other_spread"] is not None
                      else "")
            lines.append(f"{r['figure'][:57]:<58}{r['unit']:>8}{num(r['base']):>12}"
                         f" {num(r['other']):>12}{num(r['ratio']):>8}  {r['verdict']:<16}"
                         f"{spread:>22}")
    if len(names) == 2:
        emulated = any(results.get(k, "meta", "machine", "accelerator") == "tcg"
                       for k in kernels.values())
        found = findings(rows, names, emulated, virtual_clock(kernels))
        if found:
            lines += ["", f"What {names[1]} wins and what it costs here:"]
            lines += [f"- {f}" for f in found]
    for v, k in kernels.items():
        for order, p in (results.get(k, "perfstat") or {}).items():
            if p.get("unsupported"):
                lines.append(f"perf stat on {v} ({order}): not supported here: "
                             f"{', '.join(p['unsupported'])}")
                break
        un = results.get(k, "lab", "unload")
        if un:
            lines.append(f"delay module on {v}: {un['completed']} of {un['cycles']} "
                         f"load/unload cycles under syscall load, kernel problems logged: "
                         f"{un['kernel_problems']}")
    return "\n".join(lines) + "\n"


def _find(rows, name):
    for r in rows:
        if r["figure"] == name and r["ratio"]:
            return r
    return None


def _said(r, names):
    """'stock 1,234 -> rt 567 us (x0.46, changed)'."""
    return (f"{names[0]} {num(r['base'])} -> {names[1]} {num(r['other'])} {r['unit']} "
            f"(x{r['ratio']:.2f}, {r['verdict']})")


def virtual_clock(kernels):
    """Did every kernel's guest run on the virtual clock (meta.json's
    machine.clock.kind)?"""
    return all(results.on_virtual_clock(k.get("meta") or {}) for k in kernels.values())


def findings(rows, names, emulated, virtual=False):
    """Where the second kernel wins and what it costs, in sentences made
    from the comparison rows (the reference's claims: RT holds the tail
    latency of a high-priority task under load, and costs normal tasks a
    little throughput and every system call and wake-up a little time)."""
    out = []
    a, b = names
    tail = [r for r in (_find(rows, "cyclictest loaded max"),
                        _find(rows, "cyclictest loaded p99.9")) if r]
    if tail:
        won = all(r["ratio"] < 1 for r in tail)
        out.append(f"Tail latency of a FIFO 90 thread under load (cyclictest loaded): max "
                   f"{_said(tail[0], names)}" + (f"; p99.9 {_said(tail[1], names)}"
                                                  if len(tail) > 1 else "") +
                   (f". {b} {'holds the tail' if won else 'does not hold the tail better'}"
                    " here."))
    typical = _find(rows, "cyclictest loaded mean")
    if typical:
        out.append(f"Typical latency under load (cyclictest mean): {_said(typical, names)}: "
                   f"{'dearer' if typical['ratio'] > 1 else 'cheaper'} on {b}, where "
                   "interrupts and softirqs run in threads that must be scheduled.")
    # A sentence a figure, with a second one beside it where that was measured.
    pairs = [(f"perf stat sortsum {order}: task-clock",
              f"perf stat sortsum {order}: context-switches",
              f"A CPU-bound program at normal priority ({order} sort-and-sum): task-clock ",
              "; context switches ") for order in ("unsorted", "sorted")]
    pairs += [(f"calibration {sc} intercept", f"calibration {sc} slope",
               f"A system call with the delay module loaded at 0 ({sc}, the calibration's "
               "intercept): ", "; the delay loop's cost per iteration ")
              for sc in ("getppid", "close")]
    for first, second, lead, beside in pairs:
        r, s = _find(rows, first), _find(rows, second)
        if r:
            out.append(f"{lead}{_said(r, names)}"
                       + (f"{beside}{_said(s, names)}" if s else "") + ".")
    for cell in ("16-normal", "16-rt"):
        r = _find(rows, f"wake-up (irqhook) {cell} p99")
        if r:
            out.append(f"Wake-up p99 of a {'SCHED_RR' if cell.endswith('rt') else 'normal'} "
                       f"reader with 16 load tasks (/dev/irqhook): {_said(r, names)}.")
    if emulated and virtual and out:
        out.append("On the virtual clock every figure is instructions executed: what "
                   "differs between the kernels is the length of their paths (interrupt "
                   "threads, sleeping locks, the scheduler), not caches or memory, and "
                   "a tail is a path the kernel took, never the host's load.")
    elif emulated and out:
        out.append("Under TCG the emulator sets the scale: a timer interrupt costs ~200 us "
                   "and an emulated CPU can lose its host CPU for milliseconds, so "
                   "idle and p99 latencies are the emulator's on both kernels; one boot "
                   "a kernel gives no verdict here: compare several runs' kernel folders.")
    return out


def plot_cyclictest(d, kernels, load):
    """cyclictest-LOAD.png: each kernel's histogram of all threads on
    log-log axes, the 1 us buckets (drawn at their middle) added up into
    log-spaced bins so that the body and a tail of milliseconds both show;
    the legend gives the maximum and the samples past the histogram."""
    have = {v: k["cyclictest"][load] for v, k in kernels.items()
            if results.get(k, "cyclictest", load)}
    if not have:
        return None
    lo = max(0.5, min(c["pooled"]["min"] for c in have.values()))
    top = max(c["pooled"]["max"] for c in have.values()) + 1
    bins = plot.log_bins(lo, top)
    fig, ax = plot.figure()
    for v, c in have.items():
        over = sum(t["overflow"] for t in c["threads"])
        ax.hist([u + 0.5 for u in c["hist"]["us"]], bins=bins, weights=c["hist"]["count"],
                histtype="step", linewidth=1.5,
                label=f"{v}: max {num(c['pooled']['max'])} us" +
                (f", {over:,} past the histogram" if over else ""))
    plot.log_axis(ax, "x", bins[0], bins[-1])
    ax.set_yscale("log")
    ax.set_xlabel("wake-up latency (us, log)")
    ax.set_ylabel("samples per bin (all threads, log)")
    headline(fig, f"cyclictest {load}", kernels)
    name = f"cyclictest-{load}.png"
    plot.save(fig, ax, d / name)
    return name


def plot_squarewave(d, kernels):
    waves = [(v, w, s) for v, k in kernels.items() for w, s in (k.get("squarewave") or
                                                                {}).items()]
    if not waves:
        return None
    fig, axes = plot.figure(ncols=2, width=11)
    for ax, load in zip(axes, LOADS):
        for v, w, s in waves:
            if not w.endswith(load):
                continue
            impl = w[:-len(load) - 1]
            fs = sorted(int(f) for f in s["freqs"])
            # One colour an implementation, one line style a kernel.
            ax.plot(fs, [100 * s["freqs"][str(f)]["mean_err"] for f in fs], marker="o",
                    color=f"C{IMPLS.index(impl)}" if impl in IMPLS else None,
                    linestyle="-" if v == "stock" else "--", label=f"{v} {impl}")
        ax.axhspan(-100 * HOLD, 100 * HOLD, color="green", alpha=0.1)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_xlabel("requested frequency (Hz)")
        ax.set_ylabel("mean period error (%)")
        ax.set_title(f"square wave, {load} (green: within 10 %)")
        if ax is not axes[-1]:
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    axes[-1].legend(fontsize=7)
    headline(fig, "the square wave's period error", kernels)
    plot.save(fig, axes[-1], d / "squarewave.png")
    return "squarewave.png"


def add_args(p):
    cli.add_result_args(p, "DIR", "an rt-compare folder (kernel folders inside)",
                        picture="the plots")


def work(args):
    d = pathlib.Path(args.dir)
    kernels = kernels_of(d)
    names = list(kernels)
    clock = "virtual" if virtual_clock(kernels) else "host"
    rows = compare(kernels[names[0]], kernels[names[1]], clock) if len(names) >= 2 else []
    for v, k in kernels.items():
        traces = [("cyclictest", results.get(k, "cyclictest", "traced"))]
        traces += [(f"delay/{kind}", dm.get("traced"))
                   for kind, dm in (k.get("delay") or {}).items()]
        for member, tr in traces:
            if tr and "excerpt" in tr:
                results.write_text(d / v / member / "traced" / "worst.txt",
                                   tr.pop("excerpt"))
    summary = {"experiment": "rt-compare", "kernels": {
        v: {key: val for key, val in k.items() if key != "meta"} for v, k in kernels.items()},
        "base": names[0], "other": names[1] if len(names) > 1 else None, "rows": rows}
    summary = _finite(summary)
    results.write_json(d / "comparison.json", summary)
    results.write_csv(d / "comparison.csv", COLUMNS, rows)
    text = report(d, kernels, rows, names)
    results.write_text(d / "report.txt", text)
    files = ["comparison.json", "comparison.csv", "report.txt"]
    if not args.no_plot:
        for load in LOADS:
            name = plot_cyclictest(d, kernels, load)
            if name:
                files.append(name)
        for plotter in (plot_squarewave, plot_delay):
            name = plotter(d, kernels)
            if name:
                files.append(name)
    cli.show(args, summary, text, d, files)
    return 0


def _finite(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_finite(v) for v in o]
    return o


def main(argv=None, prog=None):
    return cli.main(__doc__.split("\n\n")[0], "lab analyse results/latest-rt-compare",
                    add_args, work, argv=argv, prog=prog or "python -m lablib.rtcompare.analyse")


if __name__ == "__main__":
    sys.exit(main())
