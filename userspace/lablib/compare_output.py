"""compare's output: report.txt, compare.csv's rows and the pictures
(compare.png, curves.png, ccdf.png) of a comparison, compare.json's dict
(userspace/compare/README.md, "Outputs")."""
import json
import math
import textwrap

from . import results
from .compare_verdicts import ALPHA, CONFIDENCE, CV_WARNING, MEASURED, SPREAD_FACTOR

CSV_COLUMNS = ("figure", "unit", "verdict", "role", "a", "b", "diff", "ratio", "a_n", "b_n",
               "band", "band_rel", "band_abs", "band_source", "a_spread", "b_spread", "p",
               "p_holm", "estimate", "ci_low", "ci_high", "a_cv", "b_cv", "runs_needed",
               "worse", "why")


def csv_columns():
    return CSV_COLUMNS


def csv_rows(c):
    for r in c["rows"]:
        ci = r.get("ci") or (None, None)
        yield {"figure": r["figure"], "unit": r["unit"], "role": r.get("role", MEASURED),
               "verdict": r["verdict"], "a": r["a_value"], "b": r["b_value"],
               "diff": r["diff"], "ratio": r["ratio"], "a_n": len(r["a"]), "b_n": len(r["b"]),
               "band": r.get("band"), "band_rel": r["band_rel"], "band_abs": r["band_abs"],
               "band_source": r["band_source"], "a_spread": r.get("a_spread"),
               "b_spread": r.get("b_spread"), "p": r.get("p"), "p_holm": r.get("p_holm"),
               "estimate": r.get("estimate"), "ci_low": ci[0], "ci_high": ci[1],
               "a_cv": results.get(r, "a_stats", "cv"), "b_cv": results.get(r, "b_stats", "cv"),
               "runs_needed": r.get("runs_needed"), "worse": r["worse"],
               "why": r.get("why", "")}


def _show(v):
    return v if isinstance(v, str) else json.dumps(v)


def value(v):
    """@v with seven significant digits, trailing zeros kept (3.000003,
    499.0791, 28235.00): figures that agree show it to the last digit."""
    if v is None:
        return "-"
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    digits = max(0, 6 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f}"


def _pct(x):
    return "-" if x is None else f"{100 * (x - 1):+.3g} %"


def report(c):
    """report.txt: the sides, what differs, then a line per figure."""
    out = [f"compare: {c['of']} on the {c['clock']} clock, "
           f"{len(c['a']['folders'])} run(s) against {len(c['b']['folders'])}"]
    for s in ("a", "b"):
        out.append(f"  {s.upper()}: {', '.join(c[s]['folders'])}")
        out.append(f"     {c[s]['describe']}")
    if c["differences"]:
        out.append(f"what differs ({len(c['differences'])} of "
                   f"{len(c['differences']) + len(c['same'])} recorded settings):")
        for d in c["differences"]:
            note = f"  ({d['note']})" if d["note"] else ""
            out.append(f"  {d['key']}: {_show(d['a']) or '(none)'} -> "
                       f"{_show(d['b']) or '(none)'}{note}")
    else:
        out.append(f"nothing recorded differs ({len(c['same'])} settings the same)")
    design = c.get("design") or "?"
    if c["clock"] == "host":
        out.append(f"host clock ({design}): one value a run; Mann-Whitney's test of the "
                   "ranks by permutation, Holm over the measured figures; the Hodges-Lehmann "
                   f"B/A and its exact {CONFIDENCE:.0%} interval; band ±{100 * c['band']:g} % "
                   "(chosen)")
    else:
        out.append(f"virtual clock ({design}): each figure against its band (measured between "
                   f"boots or assumed: userspace/compare/NOTES.md) and {SPREAD_FACTOR:g} x "
                   "the sides' own spread")
    if min(len(c["a"]["folders"]), len(c["b"]["folders"])) < 2:
        out.append("warning: one run a side: no verdict is worse than inconclusive (a boot "
                   "can land off its peers; two runs a side can tell)")
    width = max(len(r["figure"]) for r in c["rows"])
    for r in c["rows"]:
        role = "" if r.get("role", MEASURED) == MEASURED else f" ({r['role']})"
        line = (f"  {r['figure']:<{width}}  {value(r['a_value']):>14} -> "
                f"{value(r['b_value']):>14} {r['unit']:<10} {value(r['diff']):>12} "
                f"{_pct(r['ratio']):>11}  {r['verdict']}{role}  [band {r.get('band', '?')}]")
        if c["clock"] == "host" and r.get("p") is not None:
            p = (f"p {r['p_holm']:.3g} Holm" if r.get("p_holm") is not None
                 else f"p {r['p']:.3g} untested")
            ci = ("no interval" if not r.get("ci")
                  else f"B/A {r['estimate']:.4f} ({r['ci'][0]:.4f}..{r['ci'][1]:.4f})")
            line += f"  ({p}, {ci}, n {len(r['a'])}/{len(r['b'])})"
            for s in ("a", "b"):
                st = r[f"{s}_stats"]
                if st["cv"] is not None and st["cv"] > CV_WARNING:
                    line += f" [{s.upper()} CV {100 * st['cv']:.0f} %]"
                if st["outliers"]:
                    line += f" [{s.upper()} outliers {len(st['outliers'])}]"
                if st["drift_p"] is not None and st["drift_p"] < ALPHA:
                    line += f" [{s.upper()} drifts, rho {st['drift_rho']:+.2f}]"
        if r.get("why"):
            line += f"  ({r['why']})"
        out.append(line)
    for name, d in (c.get("distributions") or {}).items():
        qs = "  ".join(f"{q} {d['a'][q] / 1e3:.2f} -> {d['b'][q] / 1e3:.2f} us"
                       for q in ("p50", "p99", "p999", "max"))
        over = "".join(f", {d[s]['overflows']} overflows in {s.upper()}"
                       for s in ("a", "b") if d[s].get("overflows"))
        out.append(f"  {name} (pooled, n {d['a']['n']} -> {d['b']['n']}{over}): {qs}")
        if d.get("bins"):
            b = d["bins"]
            out.append(f"    1 us bins: {b['differ']} of {b['total']} differ in share; "
                       f"{100 * b['moved_share']:.2f} % of the events moved")
    counts = ", ".join(f"{n} {v}" for v, n in c["verdicts"].items())
    worse_rows = [r["figure"] for r in c["rows"] if r["worse"]]
    out.append(f"verdicts: {counts}")
    out.append(f"worse in B: {', '.join(worse_rows)}" if worse_rows else "no figure worse in B")
    return "\n".join(out) + "\n"


def _scale(c, r):
    """(unit of the x axis, its name) for row @r: the band's width on the
    virtual clock, 1 % of A on the host's."""
    if c["clock"] == "virtual":
        return max(r["band_rel"] * abs(r["a_value"]), r["band_abs"]) or 1.0, "bands"
    return abs(r["a_value"]) / 100 or 1.0, "% of A"


def draw(c, path):
    """compare.png: every run a dot per side, its distance from A's median
    in bands (virtual clock: the grey stripe is the clock's repeatability,
    inside it nothing changed) or in % of A (host clock: the stripe is the
    band, the bar B's 95 % interval); a symmetric log axis past 1."""
    from . import plot
    rows = c["rows"][:40]
    fig, ax = plot.figure(height=max(3.0, 0.28 * len(rows) + 1.5))
    name, far = "bands", 0.0
    for i, r in enumerate(rows):
        unit, name = _scale(c, r)
        y = len(rows) - 1 - i
        for side, dy, color in (("a", 0.12, "C0"), ("b", -0.12, "C1")):
            xs = [(x - r["a_value"]) / unit for x in r[side]]
            far = max([far, *map(abs, xs)])
            ax.scatter(xs, [y + dy] * len(xs), s=14, color=color, zorder=3,
                       label=side.upper() if i == 0 else None)
        if r.get("ci"):
            lo, hi = ((v - 1) * r["a_value"] / unit for v in r["ci"])
            ax.plot([lo, hi], [y - 0.12] * 2, color="C1", linewidth=1)
    stripe = 1.0 if c["clock"] == "virtual" else 100 * (c["band"] or 0)
    ax.axvspan(-stripe, stripe, color="0.85", zorder=1,
               label="repeatability band" if c["clock"] == "virtual" else "band")
    ax.set_xscale("symlog", linthresh=max(stripe, 1e-9))
    edge = max(3 * stripe, 1.5 * far)
    ax.set_xlim(-edge, edge)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r['figure'][:48]} [{r['verdict']}]" for r in reversed(rows)],
                       fontsize=6)
    ax.set_xlabel(f"run - median of A, in {name}" + (" (band: ±1)" if name == "bands"
                                                     else ""))
    ax.legend(fontsize=7, loc="lower right")
    lines = [f"compare: {c['of']}, {c['clock']} clock, {len(c['a']['folders'])} against "
             f"{len(c['b']['folders'])} run(s)"]
    lines += [f"{s.upper()}: {c[s]['describe']}" for s in ("a", "b")]
    if c["a"]["describe"] == c["b"]["describe"]:
        lines = [lines[0], f"both: {c['a']['describe']}"]
    fig.suptitle("\n".join(textwrap.shorten(x, 140) for x in lines), fontsize=8)
    plot.save(fig, ax, path)



def draw_curves(c, path):
    """curves.png: a sweep's throughput against the added latency, both
    sides, each run's points and its model's curve, one panel a measure."""
    from . import plot
    measures = list(c["curves"].items())
    fig, axes = plot.figure(ncols=len(measures), width=5.0 * len(measures))
    axes = axes if len(measures) > 1 else [axes]
    for ax, (name, m) in zip(axes, measures):
        # A hollow and larger, B filled: where they agree both show.
        for side, color, style in (("a", "C0", {"s": 40, "facecolors": "none"}),
                                   ("b", "C1", {"s": 12})):
            for k, run in enumerate(m[side]):
                pts = [q for q in run["points"] if q["added_ns"] is not None]
                ax.scatter([q["added_ns"] for q in pts], [q["mean"] for q in pts],
                           edgecolors=color, color=color, zorder=3, **style,
                           label=side.upper() if k == 0 else None)
                t0, half = run["model"]["t0"], run["model"]["half_ns"]
                if t0 and half and pts:
                    top = max(q["added_ns"] for q in pts)
                    ds = [top * i / 100 for i in range(101)]
                    ax.plot(ds, [t0 / (1 + d / half) for d in ds], color=color,
                            linewidth=0.8, linestyle="--",
                            label=f"{side.upper()}'s model" if k == 0 else None)
        ax.set_xlabel("added latency per system call (ns)")
        ax.set_ylabel(f"{name} ({m['unit'] or ''})")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"compare: {c['of']}, {c['clock']} clock\nthroughput against added "
                 "latency: each run's points and its model", fontsize=8)
    plot.save(fig, axes[-1], path)



def draw_ccdf(c, path):
    """ccdf.png: each latency series' share of samples above a time, both
    sides pooled, log y axis: the tails side by side."""
    from . import plot
    series = list(c["distributions"].items())
    fig, axes = plot.figure(ncols=len(series), width=5.0 * len(series))
    axes = axes if len(series) > 1 else [axes]
    for ax, (name, d) in zip(axes, series):
        # B dashed over A solid: where the tails agree both show.
        for side, color, style in (("a", "C0", "-"), ("b", "C1", "--")):
            pts = [(x / 1e3, y) for x, y in d[side]["ccdf"] if y > 0]
            ax.step([x for x, _ in pts], [y for _, y in pts], where="post", color=color,
                    linestyle=style, linewidth=1.6 if side == "a" else 1.0,
                    label=f"{side.upper()} (n {d[side]['n']}, p99 "
                          f"{d[side]['p99'] / 1e3:.1f} us)")
        ax.set_yscale("log")
        ax.set_xlabel(f"{name} (us)" if name.startswith("reply") else f"{name} time (us)")
        ax.set_ylabel("share of samples above")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"compare: {c['of']}, {c['clock']} clock: the tails, pooled over each "
                 "side's runs", fontsize=8)
    plot.save(fig, axes[-1], path)
