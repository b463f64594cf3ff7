"""The tax on the running kernel (run.sh --here): what each tax adds to
each call on this machine's own CPU and clock, each figure with its
interval, beside the virtual clock's.

Reads DIR/raw.csv (phase, round, position, tax, nr, batch, calls,
ns_per_call: every timed batch of here.sh), DIR/runs.csv (each run's
wall-clock times and load), DIR/skipped.csv and DIR/meta.json.  A run's
figure is the median of its batches.  A tax's figure on a call is the
median over the rounds of its run less the same round's untaxed run, with
the distribution-free 95 % interval of that median (order statistics,
the sign test's binomial: scipy.stats.quantile_test; at least 6 rounds);
beside it, as a check that needs no pairing, the Hodges-Lehmann shift of
the taxed runs from the untaxed ones and its exact Mann-Whitney interval
(lablib.compare_verdicts.shift_interval, compare's).  The audit taxes'
rounds come after the others with untaxed runs of their own: their
figures are against those, and how far those moved from the first
rounds' is what audit left in every process started after it.

The virtual clock's figures (ns = instructions) come from an analysed tax
run of the lab's VM (--virtual DIR, or the settings' virtual) or else
from virtual.csv beside this file, the README's headline figures
(VIRTUAL_SOURCE).  Writes summary.json, summary.csv, report.txt and, with
lablib.tax.here_plot, tax.png.
"""
import pathlib

import numpy as np
from lablib import compare_verdicts, results, stats
from scipy import stats as sps

RAW_COLUMNS = ("phase", "round", "position", "tax", "nr", "batch", "calls", "ns_per_call")
RUN_COLUMNS = ("phase", "round", "position", "tax", "start_s", "end_s", "load1")
SUMMARY_COLUMNS = ("tax", "nr", "call", "phase", "rounds", "median_ns", "median_low_ns",
                   "median_high_ns", "added_ns", "added_low_ns", "added_high_ns",
                   "includes_zero", "p_sign", "hl_ns", "hl_low_ns", "hl_high_ns", "virtual_ns",
                   "ns_per_instruction")
BASE = "none"
PHASES = ("base", "audit")
CONFIDENCE = 0.95
VIRTUAL_CSV = pathlib.Path(__file__).with_name("virtual.csv")
VIRTUAL_SOURCE = ("the README's headline figures (make tax, virtual clock, 1 vCPU, "
                  "6.12.118-lab-tax, pti=off spectre_v2=off, 2026-12-06)")
# The taxes a boot option applies: not measured on the running kernel.
# For each, the option and the vulnerability file that says what is in force.
BOOT_ONLY = {"pti": ("pti=on", "meltdown"), "retpoline": ("spectre_v2=retpoline", "spectre_v2")}
HARDWARE = ("on hardware: make deb, the lab kernel installed and booted with and without "
            "the option (userspace/tax/README.md)")


def is_here(meta):
    """Is @meta a run.sh --here folder's?"""
    return results.settings(meta).get("here") is True


def read_raw(path):
    """{(phase, round, tax, nr): [ns_per_call, ...]}, keys in the order met."""
    out = {}
    for line, row in enumerate(results.read_csv(path, RAW_COLUMNS), 2):
        try:
            key = (row["phase"], int(row["round"]), row["tax"], int(row["nr"]))
            ns = float(row["ns_per_call"])
        except ValueError:
            raise ValueError(f"{path} line {line}: round {row['round']!r}, nr {row['nr']!r} "
                             f"or ns_per_call {row['ns_per_call']!r} is not a number") from None
        if key[0] not in PHASES:
            raise ValueError(f"{path} line {line}: phase {key[0]!r} is not one of "
                             f"{', '.join(PHASES)}")
        if not 0 < ns < float("inf"):
            raise ValueError(f"{path} line {line}: ns_per_call {ns} is not a time > 0")
        out.setdefault(key, []).append(ns)
    if not any(k[2] == BASE for k in out):
        raise ValueError(f"{path}: no rows of tax '{BASE}', the untaxed calls every tax is "
                         f"measured against")
    return out


def read_runs(path):
    """The 1-minute load averages at the runs' starts, and the seconds from
    the first run's start to the last one's end (None without runs.csv)."""
    if path is None or not pathlib.Path(path).exists():
        return {"load_min": None, "load_max": None, "seconds": None}
    rows = results.read_csv(path, RUN_COLUMNS)
    load = [float(r["load1"]) for r in rows]
    t = [(float(r["start_s"]), float(r["end_s"])) for r in rows]
    return {"load_min": min(load, default=None), "load_max": max(load, default=None),
            "seconds": max(e for _, e in t) - min(s for s, _ in t) if t else None}


def run_medians(raw):
    """{(phase, tax, nr): {round: the median of the run's batches}}."""
    out = {}
    for (phase, rnd, tax, nr), ns in raw.items():
        out.setdefault((phase, tax, nr), {})[rnd] = float(np.median(ns))
    return out


def median_interval(values, confidence=CONFIDENCE):
    """(median, low, high) of @values (lablib.stats.median_interval)."""
    return stats.median_interval(values, confidence)


def read_virtual(d=None):
    """({(tax, nr): ns}, source): the virtual clock's figures, the added ns
    of each tax and the untaxed ns (tax 'none').  From @d, an analysed tax
    run of the lab's VM (its summary.json; its base boot on the virtual
    clock), else from VIRTUAL_CSV."""
    if not d:
        rows = results.read_csv(VIRTUAL_CSV, ("tax", "nr", "ns"))
        return {(r["tax"], int(r["nr"])): float(r["ns"]) for r in rows}, VIRTUAL_SOURCE
    from lablib.tax import analyse
    d = pathlib.Path(d)
    meta, _ = analyse.measured_meta(d)
    if is_here(meta) or not results.on_virtual_clock(meta):
        raise ValueError(f"--virtual {d}: not a tax run on the virtual clock (its base "
                         f"boot's meta.json names another clock)")
    s = results.read_json(d / "summary.json")
    out = {}
    for r in s.get("rows", []):
        out[(r["tax"], int(r["nr"]))] = float(r["median_ns"] if r["tax"] == BASE
                                              else r["added_ns"])
    return out, f"{d} ({results.describe(meta)})"


def summarise(raw, names, skipped, meta, virtual, source, runs=None):
    """The summary.json dict: a row per phase, tax and call (the untaxed
    calls' too), the audit rounds' untaxed shift, the boot-only taxes."""
    med = run_medians(raw)
    rows, missing = [], []
    calls = list(dict.fromkeys(nr for (_, tax, nr) in med if tax == BASE))
    # The taxes in the order the run named them.
    met = dict.fromkeys(t for (_, t, _) in med if t != BASE)
    named = str(results.settings(meta).get("taxes") or "").split(",")
    taxes = [t for t in named if t in met] + [t for t in met if t not in named]
    for (phase, tax, nr), by_round in med.items():
        base = med.get((phase, BASE, nr))
        if base is None:
            missing.append(f"{phase}/{tax}/{nr}")
            continue
        m, lo, hi = median_interval(list(by_round.values()))
        row = {"tax": tax, "nr": nr, "call": names.get(nr, str(nr)), "phase": phase,
               "rounds": len(by_round), "median_ns": m, "median_low_ns": lo,
               "median_high_ns": hi, "added_ns": None, "added_low_ns": None,
               "added_high_ns": None, "includes_zero": None, "p_sign": None, "hl_ns": None,
               "hl_low_ns": None, "hl_high_ns": None,
               "virtual_ns": virtual.get((tax, nr)), "ns_per_instruction": None}
        if tax == BASE:
            # The audit rounds' untaxed calls carry audit's context, which
            # the virtual clock's untaxed figure does not.
            v = virtual.get((BASE, nr)) if phase == "base" else None
            row["virtual_ns"] = v
            row["ns_per_instruction"] = m / v if v else None
        else:
            paired = sorted(set(by_round) & set(base))
            if not paired:
                raise ValueError(f"{tax} on call {nr}: no round with an untaxed run beside it")
            d = [by_round[r] - base[r] for r in paired]
            row["rounds"] = len(paired)
            added, lo, hi = median_interval(d)
            hl, hl_lo, hl_hi = compare_verdicts.shift_interval(list(base.values()),
                                                               list(by_round.values()))
            v = row["virtual_ns"]
            row.update({"added_ns": added, "added_low_ns": lo, "added_high_ns": hi,
                        "includes_zero": lo is None or lo <= 0 <= hi,
                        "p_sign": float(sps.quantile_test(d, q=0).pvalue), "hl_ns": hl,
                        "hl_low_ns": hl_lo, "hl_high_ns": hl_hi,
                        "ns_per_instruction": added / v if v else None})
        rows.append(row)
    if missing:
        raise ValueError(f"runs with no untaxed run in their phase: {', '.join(missing)}")
    rows.sort(key=lambda r: (PHASES.index(r["phase"]), r["tax"] != BASE,
                             taxes.index(r["tax"]) if r["tax"] != BASE else 0,
                             calls.index(r["nr"])))
    return {"experiment": "tax", "here": True, "clock": "host", "unit": "ns", "base": BASE,
            "confidence": CONFIDENCE, "rounds": results.settings(meta).get("rounds"),
            "taxes": taxes, "calls": calls, "rows": rows,
            "audit_shift": audit_shift(med, calls, names),
            "boot_only": boot_only(meta, virtual, calls),
            "skipped": [{"tax": t, "reason": r} for t, r in skipped],
            "virtual_source": source, "runs": runs or read_runs(None),
            "hides": hides(rows, taxes)}


def audit_shift(med, calls, names):
    """Per call, how far the audit rounds' untaxed runs lie from the first
    rounds' (audit, once enabled, gives every new process its context):
    the Hodges-Lehmann shift and its exact interval, [] without audit
    rounds."""
    out = []
    for nr in calls:
        a, b = med.get(("base", BASE, nr)), med.get(("audit", BASE, nr))
        if not a or not b:
            continue
        est, lo, hi = compare_verdicts.shift_interval(list(a.values()), list(b.values()))
        out.append({"nr": nr, "call": names.get(nr, str(nr)), "shift_ns": est,
                    "low_ns": lo, "high_ns": hi})
    return out


def boot_only(meta, virtual, calls):
    """A line's facts per boot-only tax: its option, what the running
    kernel has in force, the virtual clock's figures on @calls."""
    mitigations = results.settings(meta).get("mitigations") or {}
    out = []
    for tax, (option, vuln) in BOOT_ONLY.items():
        figures = [virtual[(tax, nr)] for nr in calls if (tax, nr) in virtual]
        out.append({"tax": tax, "option": option, "vulnerability": vuln,
                    "in_force": mitigations.get(vuln),
                    "virtual_min_ns": min(figures, default=None),
                    "virtual_max_ns": max(figures, default=None)})
    return out


def hides(rows, taxes):
    """Per tax with virtual figures, what the virtual clock's instructions
    leave out: the host's ns per instruction of the tax (its added ns over
    its calls, summed, over their instructions, summed: the dearest calls
    weigh most) against the untaxed calls' own."""
    own = [r for r in rows if r["tax"] == BASE and r["phase"] == "base" and r["virtual_ns"]]
    if not own:
        return []
    ref = sum(r["median_ns"] for r in own) / sum(r["virtual_ns"] for r in own)
    out = []
    for tax in taxes:
        sel = [r for r in rows if r["tax"] == tax and r["virtual_ns"]]
        if not sel:
            continue
        per = sum(r["added_ns"] for r in sel) / sum(r["virtual_ns"] for r in sel)
        out.append({"tax": tax, "ns_per_instruction": per, "call_path_ns_per_instruction": ref,
                    "times_the_call_path": per / ref,
                    "calls_within_noise": [r["call"] for r in sel if r["includes_zero"]]})
    return out


def hides_words(h):
    """What a tax's ratio to the call path's says, in words."""
    x = h["times_the_call_path"]
    if x >= 2:
        return ("dearer than its instructions: time the virtual clock cannot count (a wait "
                "for another task or CPU, cache and TLB misses, serialising instructions)")
    if x <= 0.5:
        return ("cheaper than its instructions: they run faster than the call's own, or part "
                "of what one vCPU counted runs beside the call here (another CPU, a daemon)")
    return "about what its instructions say, at the pace of the call's own"


def fmt(v, digits=1):
    """A figure in ns as the table prints it: 1,234.5; 25.3 us from 10,000."""
    if v is None:
        return "-"
    if abs(v) >= 10000:
        return f"{v / 1000:,.1f} us"
    return f"{v:,.{digits}f}"


def interval_text(lo, hi):
    return "[no interval]" if lo is None else f"[{fmt(lo)}, {fmt(hi)}]"


def header(s, meta):
    """The report's first lines: where and how it was measured."""
    st = results.settings(meta)
    runs = s["runs"]
    load = "" if runs["load_min"] is None else \
        f"; load average {runs['load_min']:.2f}-{runs['load_max']:.2f} over the runs"
    took = "" if runs["seconds"] is None else f", {runs['seconds']:.0f} s"
    cpu = st.get("cpu_model") or (meta.get("machine") or {}).get("cpu_model") or "?"
    if st.get("hypervisor"):
        cpu += f" ({st['hypervisor']} guest)"
    mit = st.get("mitigations") or {}
    active = [f"{k}: {v}" for k, v in mit.items() if v != "Not affected"]
    lines = [f"tax on the running kernel: ns each tax adds to a call, "
             f"{results.describe(meta)}, the host's clock (no VM)",
             f"CPU {cpu}, the calls pinned to CPU {st.get('cpu', '?')}{load}{took}",
             "mitigations in force: " + ("; ".join(active) if active else "none reported"),
             f"{s['rounds']} rounds, each the untaxed calls and every tax once in an order of "
             f"its own (seed {st.get('seed', '?')}), a run {st.get('batches', '?')} batches x "
             f"{st.get('calls_per_batch', '?')} calls a call; a run's figure is its batches' "
             f"median",
             f"added: the median over the rounds of the tax's run less the same round's "
             f"untaxed run, [its {100 * s['confidence']:.0f} % distribution-free interval]; "
             f"'~' marks one whose interval holds 0",
             f"virtual: the virtual clock's figure (instructions), from {s['virtual_source']}"]
    if st.get("audit_context") == "yes":
        lines.append("audit had been enabled since the boot before the run: every figure "
                     "includes audit's context in the timed processes")
    return lines


def table(s, meta):
    """report.txt."""
    out = header(s, meta) + [""]
    width = max([len(t) for t in s["taxes"]] + [9]) + 2
    cw = max([len(f"{r['call']} ({r['nr']})") for r in s["rows"]] + [10]) + 2
    out.append(f"{'tax':<{width}}{'call':<{cw}}{'added ns':>12}  {'95 % interval':<24}"
               f"{'virtual':>10}  ns an instruction")
    for r in s["rows"]:
        label = f"{r['call']} ({r['nr']})"
        if r["tax"] == BASE:
            name = "untaxed" if r["phase"] == "base" else "untaxed (audit rounds)"
            cell = fmt(r["median_ns"])
            iv = interval_text(r["median_low_ns"], r["median_high_ns"])
        else:
            name = r["tax"]
            cell = ("~" if r["includes_zero"] else "") + f"{r['added_ns']:+,.1f}"
            iv = interval_text(r["added_low_ns"], r["added_high_ns"])
        virt = "-" if r["virtual_ns"] is None else \
            (fmt(r["virtual_ns"]) if r["tax"] == BASE else "+" + fmt(r["virtual_ns"]))
        per = "-" if r["ns_per_instruction"] is None else f"{r['ns_per_instruction']:.2f}"
        out.append(f"{name:<{width}}{label:<{cw}}{cell:>12}  {iv:<24}{virt:>10}  {per}")
    for r in s["rows"]:
        if r["tax"] == BASE or r["hl_low_ns"] is None or r["added_low_ns"] is None:
            continue
        if (r["hl_low_ns"] <= 0 <= r["hl_high_ns"]) != r["includes_zero"]:
            out.append(f"check: {r['tax']} on {r['call']}: the unpaired shift "
                       f"{fmt(r['hl_ns'])} {interval_text(r['hl_low_ns'], r['hl_high_ns'])} "
                       f"{'holds' if r['hl_low_ns'] <= 0 <= r['hl_high_ns'] else 'leaves out'} "
                       f"0, the paired rounds' interval "
                       f"{'does' if r['includes_zero'] else 'does not'}")
    for a in s["audit_shift"]:
        out.append(f"audit left in every new process: {a['call']} ({a['nr']}) untaxed "
                   f"{a['shift_ns']:+,.1f} ns {interval_text(a['low_ns'], a['high_ns'])} in the "
                   f"audit rounds against the first (Hodges-Lehmann, exact Mann-Whitney)")
    for b in s["boot_only"]:
        out.append(boot_line(b))
    for sk in s["skipped"]:
        out.append(f"not measured: {sk['tax']}: {sk['reason']}")
    if s["hides"]:
        out += ["", "what the virtual clock hides (ns here per instruction there; the untaxed "
                    f"calls' own: {s['hides'][0]['call_path_ns_per_instruction']:.2f}):"]
        for h in s["hides"]:
            within = ""
            if h["calls_within_noise"]:
                within = (f"; within this machine's noise on "
                          f"{', '.join(h['calls_within_noise'])}")
            out.append(f"  {h['tax']}: {h['ns_per_instruction']:.2f} ns an instruction, "
                       f"{h['times_the_call_path']:.1f} x the call's own: {hides_words(h)}"
                       f"{within}")
    return "\n".join(out) + "\n"


def boot_line(b):
    """The one line of a boot-only tax."""
    virt = "no figure" if b["virtual_min_ns"] is None else (
        f"+{fmt(b['virtual_min_ns'], 0)} ns a call" if b["virtual_min_ns"] == b["virtual_max_ns"]
        else f"+{fmt(b['virtual_min_ns'], 0)} to +{fmt(b['virtual_max_ns'], 0)} ns a call")
    force = b["in_force"] or "not reported"
    return (f"not measured here: {b['tax']}: a boot option ({b['option']}), not a tax of the "
            f"running kernel (its {b['vulnerability']}: {force}); the virtual clock: {virt}; "
            f"{HARDWARE}")


def analyse(d, virtual_dir=None):
    """Analyse --here folder @d: (summary, report text, files written)."""
    from lablib import syscalls
    from lablib.tax import analyse as tax_analyse
    d = pathlib.Path(d)
    meta = results.read_meta(d)
    if not is_here(meta):
        raise ValueError(f"{d}: not a run.sh --here folder (meta.json's settings.here)")
    virtual, source = read_virtual(virtual_dir or results.settings(meta).get("virtual"))
    try:
        names = syscalls.table()
    except OSError:
        names = {}
    s = summarise(read_raw(d / "raw.csv"), names, tax_analyse.read_skipped(d / "skipped.csv"),
                  meta, virtual, source, read_runs(d / "runs.csv"))
    text = table(s, meta)
    files = results.write_summary(d, s, SUMMARY_COLUMNS, s["rows"], text)
    return s, text, files


def draw_folder(s, d):
    """tax.png of --here folder @d."""
    from lablib.tax import here_plot
    here_plot.draw(s, results.read_meta(d), pathlib.Path(d) / "tax.png")
