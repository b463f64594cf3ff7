"""One workload swept at the same ns points through the delay module and
through the BPF delay, on the virtual clock, point against point: whether
both counted the same calls, how the time of a unit of work rose per ns
asked on each, and how far apart the curves are once the BPF delay's
fixed cost is taken off every call.

Per point, with t the median time of a unit of work, N its calls and s
the ns each delay says it spun a delayed call (points.csv's measured_ns):

  fixed cost at 0    f0 = (t_bpf(0) - t_module(0)) / N: what the BPF
                     program costs a call beyond the module's hook
  after it           t_bpf - N f0 against t_module
  after the spins    t_bpf - N (f0 + s_bpf - s_module) against t_module:
                     each delay spins its own length for one ns asked
  a delayed call     (t_bpf - t_module) / N - (s_bpf - s_module): the
                     BPF delay's cost beyond the module's on a call it
                     delays, which need not be f0 (the clock reads and
                     bpf_loop against the module's own)

Writes RESULTS/bpfdelay-against-<date>-<time>/: report.txt, against.csv
(a row a point), against.json and against.png."""
import pathlib
import statistics

import numpy as np

from lablib import cli, plot, results
from lablib.sweep import analyse

COLUMNS = ("measure", "ns", "calls_module", "calls_bpf", "seconds_module", "seconds_bpf",
           "spun_module", "spun_bpf", "gap_ns", "gap_after_spins_ns", "after_fixed",
           "after_spins", "after_delayed_fixed", "runs_spread", "exact")


def runs_spread(p):
    """How far apart the runs of point @p are: (max - min) / median of
    their times a unit; 0 for one run."""
    v = p["seconds_values"]
    return (max(v) - min(v)) / statistics.median(v) if v else 0.0


def side(folder, delay):
    """(meta, summary) of the sweep in @folder, which must have swept
    through @delay on the virtual clock in ns."""
    folder = pathlib.Path(folder)
    if not (folder / "raw.csv").is_file():
        raise cli.BadInput(f"{folder}: no raw.csv: not a workload sweep's folder")
    meta, summary, _ = analyse.summarise(folder)
    settings = results.settings(meta)
    if settings.get("delay", "module") != delay:
        raise cli.BadInput(f"{folder}: swept through the {settings.get('delay')} delay, "
                           f"not the {delay} one")
    if settings.get("knob") != "ns":
        raise cli.BadInput(f"{folder}: swept loop counts; the BPF delay has only ns "
                           "(sweep both with --ns LIST)")
    if not results.on_virtual_clock(meta):
        raise cli.BadInput(f"{folder}: not on the virtual clock, where both delays are "
                           "exact; on the host's clock compare the sweeps with "
                           "'lab compare'")
    return meta, summary


def compare(module_dir, bpf_dir):
    """(the comparison of the two sweeps, as against.json holds it, the BPF
    sweep's meta.json)."""
    _, sum_m = side(module_dir, "module")
    meta_b, sum_b = side(bpf_dir, "bpf")
    if sum_m["workload"] != sum_b["workload"]:
        raise cli.BadInput(f"one sweep is of {sum_m['workload']}, the other of "
                           f"{sum_b['workload']}")
    out = {"experiment": "bpfdelay-against", "workload": sum_m["workload"],
           "module": str(module_dir), "bpf": str(bpf_dir),
           "describe": results.describe(meta_b), "measures": {}}
    for name, mm in sum_m["measures"].items():
        mb = sum_b["measures"].get(name)
        if mb is None:
            continue
        by_ns = {p["ns"]: p for p in mb["points"]}
        pairs = [(p, by_ns[p["ns"]]) for p in mm["points"] if p["ns"] in by_ns]
        if len(pairs) < 2 or pairs[0][0]["ns"] != 0:
            raise cli.BadInput(f"{name}: the sweeps share {len(pairs)} points; --against "
                               "wants 0 and at least one delayed point on both")
        if any(p["syscalls_per_unit"] is None for pair in pairs for p in pair):
            continue   # a server's reply through the BPF delay has no calls
        out["measures"][name] = measure(pairs)
    if not out["measures"]:
        raise cli.BadInput("no measure with its calls counted on both sides")
    return out, meta_b


def measure(pairs):
    """Point against point of one measure (@pairs: module's row, BPF's row)."""
    (m0, b0) = pairs[0]
    f0 = (b0["median_seconds_per_unit"] - m0["median_seconds_per_unit"]) / \
        m0["syscalls_per_unit"] * 1e9
    rows = []
    for m, b in pairs:
        tm, tb = m["median_seconds_per_unit"], b["median_seconds_per_unit"]
        calls = b["syscalls_per_unit"]
        spins = (b["measured_ns"] or 0.0) - (m["measured_ns"] or 0.0) if m["ns"] else 0.0
        gap = (tb - tm) / calls * 1e9
        rows.append({"ns": m["ns"], "calls_module": m["syscalls_per_unit"],
                     "calls_bpf": calls, "seconds_module": tm, "seconds_bpf": tb,
                     "spun_module": m["measured_ns"], "spun_bpf": b["measured_ns"],
                     "spins": spins, "gap_ns": gap, "gap_after_spins_ns": gap - spins,
                     "after_fixed": (tb - calls * f0 * 1e-9) / tm - 1,
                     "after_spins": (tb - calls * (f0 + spins) * 1e-9) / tm - 1,
                     "runs_spread": max(runs_spread(m), runs_spread(b)),
                     "exact": bool(m["exact"] and b["exact"])})
    delayed = rows[1:]
    fd = statistics.median(r["gap_after_spins_ns"] for r in delayed)
    for r in rows:
        r["after_delayed_fixed"] = None if not r["ns"] else \
            (r["seconds_bpf"] - r["calls_bpf"] * (fd + r["spins"]) * 1e-9) / r["seconds_module"] - 1

    def slope(key):
        if len(delayed) < 2:
            return None
        x = [r["ns"] for r in delayed]
        y = [r[key] / r["calls_bpf"] * 1e9 for r in delayed]
        return float(np.polyfit(x, y, 1)[0])

    def worst(key, among):
        r = max(among, key=lambda r: abs(r[key]))
        return {"value": r[key], "ns": r["ns"]}

    return {"rows": rows, "fixed_ns": f0, "delayed_fixed_ns": fd,
            "delayed_fixed_range": [min(r["gap_after_spins_ns"] for r in delayed),
                                    max(r["gap_after_spins_ns"] for r in delayed)],
            "spins_range": [min(r["spins"] for r in delayed), max(r["spins"] for r in delayed)],
            "same_calls": all(r["calls_module"] == r["calls_bpf"] for r in rows),
            "calls_apart": max(abs(r["calls_bpf"] / r["calls_module"] - 1) for r in rows),
            "slope_module": slope("seconds_module"), "slope_bpf": slope("seconds_bpf"),
            "after_fixed": worst("after_fixed", rows),
            "after_spins": worst("after_spins", rows),
            "after_delayed_fixed": worst("after_delayed_fixed", delayed),
            "runs_spread": max(r["runs_spread"] for r in rows),
            "exact": all(r["exact"] for r in rows)}


def report(c):
    """report.txt."""
    lines = [f"{c['workload']} through the delay module ({c['module']}) and through the "
             f"BPF delay ({c['bpf']})", c["describe"], ""]
    for name, m in c["measures"].items():
        rows = m["rows"]
        ns = [r["ns"] for r in rows]
        lines.append(f"{name}: {len(rows)} points, 0 to {ns[-1]:,} ns asked; every point "
                     + ("exact on both sides" if m["exact"] else "NOT exact on both sides "
                        "(against.csv says which)"))
        calls = rows[0]["calls_module"]
        lines.append(f"  the runs of one point differ by up to {100 * m['runs_spread']:.3f} % "
                     "(the larger side's): two points closer than that are the same")
        lines.append(f"  calls a unit: {calls:,.1f}, "
                     + ("the same through both at every point" if m["same_calls"] else
                        f"apart by up to {100 * m['calls_apart']:.3f} % between the delays"))
        if m["slope_module"] is not None:
            lines.append(f"  time a call per ns asked: {m['slope_module']:.4f} ns through the "
                         f"module, {m['slope_bpf']:.4f} through the BPF delay")
        lines.append(f"  the BPF delay's fixed cost at 0: {m['fixed_ns']:.1f} ns a call "
                     "beyond the module's")
        w = m["after_fixed"]
        lines.append(f"  with it taken off every call, every point within "
                     f"{100 * abs(w['value']):.3f} % of the module's (the largest at "
                     f"{w['ns']:,} ns)")
        lo, hi = m["spins_range"]
        w = m["after_spins"]
        lines.append(f"  each delay spins its own length for the ns asked (the BPF's minus "
                     f"the module's: {lo:+.1f} to {hi:+.1f} ns); with that taken off too, "
                     f"within {100 * abs(w['value']):.3f} % (at {w['ns']:,} ns)")
        lo, hi = m["delayed_fixed_range"]
        cost = f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f} to {hi:.1f}"
        w = m["after_delayed_fixed"]
        lines.append(f"  on a call it delays, the BPF delay costs {cost} ns "
                     f"beyond the module's and its spin (median {m['delayed_fixed_ns']:.1f}), "
                     f"against {m['fixed_ns']:.1f} at 0; with the median taken off, every "
                     f"delayed point within {100 * abs(w['value']):.3f} %")
        lines.append("")
    return "\n".join(lines)


def draw(c, meta, path):
    """against.png, subtitled with where @meta's sweep ran: the first
    measure's time a unit against the ns asked through both delays and
    through the BPF delay less its fixed cost at 0; beside it how far that
    is from the module's, before and after the spins."""
    name, m = next(iter(c["measures"].items()))
    rows = m["rows"]
    ns = [r["ns"] for r in rows]
    fig, (top, low) = plot.figure(ncols=2, width=11, height=5.2)
    top.plot(ns, [r["seconds_module"] * 1e3 for r in rows], "o-", label="module")
    top.plot(ns, [r["seconds_bpf"] * 1e3 for r in rows], "s-", label="BPF delay")
    top.plot(ns, [(r["seconds_bpf"] - r["calls_bpf"] * m["fixed_ns"] * 1e-9) * 1e3
                  for r in rows], "k--", label=f"BPF less {m['fixed_ns']:.1f} ns a call")
    top.set_xlabel("ns asked a call")
    top.set_ylabel(f"ms a unit of {c['workload']}")
    low.plot(ns, [100 * r["after_fixed"] for r in rows], "o-",
             label="after the fixed cost at 0")
    low.plot(ns, [100 * r["after_spins"] for r in rows], "s-",
             label="and after each delay's spin")
    low.plot(ns[1:], [100 * r["after_delayed_fixed"] for r in rows[1:]], "^-",
             label=f"with {m['delayed_fixed_ns']:.1f} ns a delayed call instead")
    band = [100 * r["runs_spread"] for r in rows]
    low.fill_between(ns, [-b for b in band], band, color="0.85",
                     label="the runs' own spread at the point")
    low.axhline(0, color="k", linewidth=0.8)
    low.set_xlabel("ns asked a call")
    low.set_ylabel("BPF against module, %")
    what = c["workload"] if name == c["workload"] else f"{c['workload']} ({name})"
    plot.headline(fig, f"{what} through the module and through the BPF delay", meta)
    low.grid(True, alpha=0.3)
    low.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    plot.save(fig, top, path)


def run(module_dir, bpf_dir, parent, no_plot=False):
    """Compare, write the result folder under @parent; (folder, files,
    comparison, report)."""
    c, meta = compare(pathlib.Path(module_dir), pathlib.Path(bpf_dir))
    pathlib.Path(parent).mkdir(parents=True, exist_ok=True)
    d = pathlib.Path(results.lab("begin", parent, "bpfdelay-against"))
    results.lab("meta", d, "bpfdelay-against", f"workload={c['workload']}",
                f"module={module_dir}", f"bpf={bpf_dir}", "--", "lab", "bpfdelay",
                "--against", str(module_dir), str(bpf_dir))
    results.write_csv(d / "against.csv", COLUMNS,
                      [{"measure": n, **r} for n, m in c["measures"].items() for r in m["rows"]])
    results.write_json(d / "against.json", c)
    text = report(c)
    results.write_text(d / "report.txt", text)
    files = ["report.txt", "against.csv", "against.json"]
    if not no_plot:
        draw(c, meta, d / "against.png")
        files.append("against.png")
    d = pathlib.Path(results.lab("commit", d, "bpfdelay-against"))
    return d, files, c, text


def main_against(args):
    """lab bpfdelay --against: the exit status."""
    d, files, c, text = run(*args.against, args.output, args.no_plot)
    cli.show(args, c, text, d, files)
    return 0
