"""The figures of lablib.tax.workloads, which runs the sweeps: how the
delay module stands in for each tax, chosen from the tax run's table and
the module's calibrations (loops for a tax that is one figure for every
call; for one that differs by call, loops for most calls and the ns
mode's own delays for the calls it brings nearer), and, from the analysed
sweeps, each workload's rows: per measure and tax the base, the
prediction, the measured and the emulated time of a unit of work and
their errors, as workloads.txt's report and workloads.md's Markdown
tables.  NOTES.md, "The taxes on the workloads", says why each choice.
"""
import pathlib

from lablib import results, text
from lablib.sweep import catalog
from lablib.tax import predict

# The servers (WL_SERVER=1), whose untaxed sweep counts their clients'
# calls too (the sweep hooks' COUNT_CLIENTS), which the taxes every
# process pays slow (lablib.tax.predict; NOTES.md, "A server's client pays
# a machine's taxes").
SERVERS = tuple(n for n, w in catalog.workloads().items() if w.server)
# Within this share the prediction holds, and the stand-in reproduces the tax.
WITHIN = 0.01
# The taxes that are not a fixed cost of a call, and what their cost
# depends on (NOTES.md, "Calls that fail fast", "strace --seccomp-bpf and
# a daemon"): no stand-in.
NOT_FIXED = {
    "strace": "not a fixed cost: a stop in strace at each call, dearer with what it decodes",
    "strace-one": "not a fixed cost: strace stops every call of a tracee until its first "
                  "traced one",
    "audit-one": "not a fixed cost: audit's work grows with the paths and sockets a call "
                 "names",
    "audit-all": "not a fixed cost: a record a call, with its paths, read by auditd",
}
# The most calls the module's delays= takes (DELAY_OWN_MAX).
OWN_MAX = 64
COLUMNS = ("workload", "measure", "tax", "base_s", "calls_per_unit", "added_ns_per_call",
           "covered_pct", "client_calls_per_unit", "predicted_s", "predicted_change_pct",
           "measured_s", "measured_calls_per_unit", "measured_change_pct", "error_pct",
           "standin_loops", "standin_delays", "standin_clients", "standin_ns", "emulated_s",
           "emulated_change_pct", "standin_error_pct", "exact", "note")


def points(sweep):
    """{(measure, loops or None, ns or None): summary point} of an analysed sweep."""
    s = results.read_json(sweep / "summary.json")
    return {(name, p["loops"], p["ns"]): p for name, m in s["measures"].items()
            for p in m["points"]}


def standin_loops(ns, ns_per_loop, entry_ns):
    """The loop count whose calibrated delay is nearest @ns, None below the
    module's floor (a delayed call's entry, before its first loop)."""
    loops = round((ns - entry_ns) / ns_per_loop)
    return loops if loops >= 1 else None


def fixed_taxes(tax_dir):
    """({tax: ns}, {tax: {nr: ns}}): the fixed costs a call of a tax run,
    those that are one figure for every call they timed and those that
    differ by call."""
    per_tax = predict.taxes(results.read_json(pathlib.Path(tax_dir) / "summary.json"))
    fixed = {t: cu for t, cu in per_tax.items() if t not in NOT_FIXED}
    return ({t: u for t, (_, u) in fixed.items() if u is not None},
            {t: cells for t, (cells, u) in fixed.items() if u is None})


def ns_staircase(summary):
    """{ns asked: ns added} of an ns-mode calibration (calibrate --param
    ns), getppid's points, the undelayed one left out."""
    steps = {p["loops"]: p["added"] for p in summary["points"]
             if p["syscall"] == "getppid" and p["loops"] > 0 and p["added"] is not None}
    if not steps:
        raise ValueError("the ns mode's calibration has no getppid point above 0")
    return steps


def nearest_ns(target, steps):
    """(ns to ask, ns it adds) of the ns mode nearest @target; the smaller
    ask of two that add the same."""
    ask = min(steps, key=lambda x: (abs(steps[x] - target), x))
    return ask, steps[ask]


def weighted_median(values):
    """The median of {value: weight}."""
    total, seen = sum(values.values()), 0.0
    for v in sorted(values):
        seen += values[v]
        if seen >= total / 2:
            return v
    raise ValueError("no values")


def percall_plan(cells, shares, fit, steps):
    """The stand-in of a tax whose figure @cells ({nr: ns}) differs by
    call, for a workload whose calls are @shares ({nr: share}): loops for
    the figure most of its calls pay (weighted median; 0 below the
    module's floor), and the calls that the ns mode (@steps, ns_staircase)
    brings nearer their own figure than those loops do, the most time
    gained first, at most OWN_MAX.  None if it would delay nothing.
    {loops, delays, ns (the delay a call it plans, mixed over @shares),
    own: {nr: (ask, added)}}."""
    ns_per_loop, entry_ns = fit["ns_per_loop"], fit["entry_ns"]
    timed = {nr: share for nr, share in shares.items() if nr in cells}
    if not timed:
        return None
    weights = {}
    for nr, share in timed.items():
        weights[cells[nr]] = weights.get(cells[nr], 0.0) + share
    figure = weighted_median(weights)
    loops = standin_loops(figure, ns_per_loop, entry_ns) or 0
    default = entry_ns + loops * ns_per_loop if loops else 0.0
    gains = []
    for nr, share in timed.items():
        ask, added = nearest_ns(cells[nr], steps)
        gain = abs(default - cells[nr]) - abs(added - cells[nr])
        if gain > 0:
            gains.append((share * gain, nr, ask, added))
    own = {nr: (ask, added) for _, nr, ask, added in sorted(gains, reverse=True)[:OWN_MAX]}
    if not loops and not own:
        return None
    total = sum(shares.values())
    mixed = sum(share * (own[nr][1] if nr in own else default)
                for nr, share in shares.items()) / total
    return {"loops": loops, "ns": mixed, "own": own,
            "delays": ",".join(f"{nr}:{own[nr][0]}" for nr in sorted(own))}


def standin_plan(uniform, fit):
    """{tax: loops} for the one-figure taxes the module can stand in for,
    and {tax: why} of the others; @fit: {ns_per_loop, entry_ns}."""
    ns_per_loop, entry_ns = fit["ns_per_loop"], fit["entry_ns"]
    plan, why = {}, {}
    for tax, ns in uniform.items():
        loops = standin_loops(ns, ns_per_loop, entry_ns)
        if loops is None:
            why[tax] = (f"{ns:.1f} ns a call is below the module's floor ({entry_ns:.1f} ns "
                        "before a delayed call's first loop)")
        else:
            plan[tax] = loops
    return plan, why


def combine(workload, base, tax_dir, taxed, standins, why_not):
    """The rows of one workload: per measure and tax the prediction,
    measured and emulated time.  @taxed: {tax: sweep folder}; @standins:
    {tax: {sweep, loops, delays, clients, ns (None: the sweep's calibrated
    delay at loops)}}; @why_not: {tax: why it has none}.  A stand-in that
    names no call's own delay is undelayed at its loops 0: its emulated
    time is the base plus the change from there."""
    rows = predict.predict(base, tax_dir)
    base_points = points(base)
    stand_points = {}
    out = []
    for r in rows:
        tax, measure = r["tax"], r["measure"]
        row = {c: r.get(c) for c in COLUMNS} | {"predicted_change_pct": r["change_pct"]}
        notes = []
        exact = bool(base_points[(measure, 0, None)]["exact"])
        if tax in taxed:
            p = points(taxed[tax])[(measure, None, 0)]
            m = p["median_seconds_per_unit"]
            exact = exact and bool(p["exact"])
            row.update(measured_s=m, measured_calls_per_unit=p["syscalls_per_unit"],
                       measured_change_pct=100 * (m - r["base_s"]) / r["base_s"],
                       error_pct=100 * (r["predicted_s"] - m) / m)
            calls, base_calls = p["syscalls_per_unit"], r["calls_per_unit"]
            if calls is not None and abs(calls - base_calls) > WITHIN * base_calls:
                notes.append(f"{calls:,.0f} calls a unit under the tax, "
                             f"{base_calls:,.0f} untaxed")
            if tax in predict.MACHINE_WIDE and measure in predict.CLIENT_TIMED:
                if r.get("client_calls_per_unit") is None:
                    notes.append("the client's calls, not counted, pay this tax too")
                else:
                    notes.append(f"with the client's {r['client_calls_per_unit']:,.1f} calls "
                                 "a unit")
        else:
            notes.append("not measured")
        s = standins.get(tax)
        if s:
            if s["sweep"] not in stand_points:
                stand_points[s["sweep"]] = points(s["sweep"])
            p = stand_points[s["sweep"]][(measure, s["loops"], None)]
            e = p["median_seconds_per_unit"]
            exact = exact and bool(p["exact"])
            if not s["delays"]:
                # The base plus the change from the sweep's own undelayed
                # point (NOTES.md, "A server's clients delayed with it").
                z = stand_points[s["sweep"]][(measure, 0, None)]
                exact = exact and bool(z["exact"])
                shift = z["median_seconds_per_unit"] - r["base_s"]
                e -= shift
                if abs(shift) > WITHIN / 10 * r["base_s"]:
                    notes.append(f"the stand-in's own loops 0 {100 * shift / r['base_s']:+.2f} %"
                                 " from the base")
            row.update(standin_loops=s["loops"], standin_delays=s["delays"] or None,
                       standin_clients=s["clients"],
                       standin_ns=p["added_ns"] if s["ns"] is None else s["ns"], emulated_s=e,
                       emulated_change_pct=100 * (e - r["base_s"]) / r["base_s"])
            if row["measured_s"] is not None:
                row["standin_error_pct"] = 100 * (e - row["measured_s"]) / row["measured_s"]
            if s["delays"]:
                notes.append(f"stand-in: {len(s['delays'].split(','))} calls' own delays")
            if s["clients"]:
                notes.append("the stand-in delays the clients too")
        else:
            notes.append(f"no stand-in: {why_not.get(tax, 'not planned')}")
        row.update(workload=workload, exact=exact, note="; ".join(notes))
        out.append(row)
    return out


def verdict(value):
    return "" if value is None else ("ok" if abs(value) <= 100 * WITHIN else "OFF")


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def seconds(value):
    """A time to five figures in the unit that suits it: 35.737 us, 77.210 ms."""
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            break
    return f"{value / scale:.5g} {unit}"


def pct(value):
    return "-" if value is None else f"{value:+.2f}%"


def report(rows, tax_dir, meta):
    out = [f"tax workloads: each workload under each tax of {tax_dir}, "
           f"{results.describe(meta)}",
           "(time of a unit of work; error: predicted against measured, stand-in: "
           f"emulated against measured; ok within {100 * WITHIN:.0f} %)", "",
           f"{'workload':<9}{'measure':<11}{'tax':<23}{'base':>11}{'calls':>8}{'ns/call':>10}"
           f"{'predicted':>12}{'measured':>12}{'change':>10}{'error':>9}{'':>4}"
           f"{'stand-in ns':>12}{'emulated':>12}{'error':>9}"]
    for r in rows:
        out.append(
            f"{r['workload']:<9}{r['measure']:<11}{r['tax']:<23}{seconds(r['base_s']):>11}"
            f"{r['calls_per_unit']:>8,.0f}{r['added_ns_per_call']:>10,.1f}"
            f"{seconds(r['predicted_s']):>12}{seconds(r['measured_s']):>12}"
            f"{pct(r['measured_change_pct']):>10}{pct(r['error_pct']):>9}"
            f"{verdict(r['error_pct']):>4}{fmt(r['standin_ns'], ',.1f'):>12}"
            f"{seconds(r['emulated_s']):>12}{pct(r['standin_error_pct']):>9}"
            f"{verdict(r['standin_error_pct']):>4}"
            + ("" if r["exact"] else "  (not exact)") + (f"  {r['note']}" if r["note"] else ""))
    return "\n".join(out) + "\n"


def change_cell(r):
    """A table cell of row @r: the measured change in %, then in brackets
    the prediction's error and the stand-in's (if it has one); "-" for a
    row not measured."""
    if r is None or r["measured_change_pct"] is None:
        return "-"
    m = r["measured_change_pct"]
    cell = f"{m:+,.0f}" if abs(m) >= 100 else f"{m:+.2f}"
    inner = f"{r['error_pct']:+.2f}" if r["error_pct"] is not None else "-"
    if r["standin_error_pct"] is not None:
        inner += f"; {r['standin_error_pct']:+.2f}"
    return f"{cell} ({inner})"


def markdown(rows):
    """workloads.md: the measured change of each measure under each tax,
    with the prediction's and the stand-in's errors (change_cell), as
    Markdown tables, taxes down: one table of the workloads with one
    measure, one of the servers'."""
    taxes = list(dict.fromkeys(r["tax"] for r in rows))
    by = {(r["workload"], r["measure"], r["tax"]): r for r in rows}
    measures = list(dict.fromkeys((r["workload"], r["measure"]) for r in rows))
    out = ["Each cell: the measured change of a unit of work's time under the tax, "
           "then in brackets the prediction's error against it and the stand-in's "
           "against the real tax, in %."]
    for group in ([m for m in measures if m[0] not in SERVERS],
                  [m for m in measures if m[0] in SERVERS]):
        if group:
            out += ["", text.markdown(["tax"] + [f"{w} {m}" for w, m in group],
                                      [[f"`{t}`"] + [change_cell(by.get((w, m, t)))
                                                     for w, m in group] for t in taxes])]
    return "\n".join(out) + "\n"
