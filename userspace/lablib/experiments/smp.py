"""An smp result's runs (runs/CASE-rK/: one smp folder a case and round,
raw.csv record,span,cycles,ns and meta.json) and the summary of a case
over its rounds.  Shared by the smp analyser and rt-compare, which runs
the same benchmarks on each kernel."""
import math
import pathlib
import re

from .. import results, stats

BENCHES = ("pipes", "cv", "tlbflush", "timer", "tun")
CASE = re.compile(r"^(?P<case>[a-z]+(?:-[a-z0-9]+)*)-r(?P<round>\d+)$")
UNITS = ("cycles", "ns")


def split_name(name):
    """(case, round) of a runs/ folder name such as pipes-cross-r3."""
    m = CASE.match(name)
    if not m:
        raise ValueError(f"runs/{name}: not CASE-rK (an smp folder of guest.sh)")
    return m["case"], int(m["round"])


def read_run(folder):
    """(meta, settings, {span: {"cycles": [...], "ns": [...], "backward": k}})
    of one smp folder.  A record that went backwards (negative cycles and
    ns: the ends' clocks disagree) is counted in "backward" and left out
    of the lists; smp counts them too (settings "backward"), and the two
    counts must agree."""
    meta = results.read_meta(folder)
    s = results.settings(meta)
    for key in ("bench", "n", "tsc_hz", "spans"):
        if s.get(key) is None:
            raise ValueError(f"{folder}/meta.json: settings have no {key!r}")
    if s["bench"] not in BENCHES:
        raise ValueError(f"{folder}/meta.json: unknown bench {s['bench']!r}")
    path = pathlib.Path(folder) / "raw.csv"
    spans = {sp: {"cycles": [], "ns": [], "backward": 0} for sp in s["spans"]}
    records = dict.fromkeys(s["spans"], 0)
    for i, row in enumerate(results.read_csv(path, ("record", "span", "cycles", "ns")), 2):
        if row["span"] not in spans:
            raise ValueError(f"{path} line {i}: span {row['span']!r} is not one of "
                             f"{', '.join(spans)}")
        try:
            c, ns = float(row["cycles"]), float(row["ns"])
        except ValueError:
            raise ValueError(f"{path} line {i}: cycles and ns must be numbers") from None
        if not (abs(c) < math.inf and abs(ns) < math.inf) or (c < 0) != (ns < 0):
            raise ValueError(f"{path} line {i}: cycles {row['cycles']} and ns {row['ns']}: "
                             f"not finite, or of different signs")
        v = spans[row["span"]]
        records[row["span"]] += 1
        if c < 0:
            v["backward"] += 1
            continue
        v["cycles"].append(c)
        v["ns"].append(ns)
    said = s.get("backward") or {}
    for sp, v in spans.items():
        if records[sp] != s["n"]:
            raise ValueError(f"{path}: {records[sp]} records of span {sp}, but meta.json "
                             f"says n = {s['n']}")
        # Folders from before smp counted them have no "backward".
        if sp in said and said[sp] != v["backward"]:
            raise ValueError(f"{path}: {v['backward']} records of span {sp} went "
                             f"backwards, but meta.json says {said[sp]}")
    return meta, s, spans


def case_order(case):
    """Sort key of a case name: the benches' order, then its numbers."""
    bench = case.split("-")[0]
    nums = [int(x) for x in re.findall(r"\d+", case)]
    return (BENCHES.index(bench) if bench in BENCHES else len(BENCHES), nums, case)


def read_runs(d):
    """{case: {round: (meta, settings, spans)}} of result folder @d, the
    cases in case_order."""
    runs_dir = pathlib.Path(d) / "runs"
    folders = sorted(p for p in runs_dir.glob("*") if p.is_dir()) if runs_dir.is_dir() else []
    if not folders:
        raise ValueError(f"{d}: no runs/*/ folders: not an smp result, or nothing measured")
    out = {}
    for f in folders:
        case, rnd = split_name(f.name)
        out.setdefault(case, {})[rnd] = read_run(f)
    return {c: out[c] for c in sorted(out, key=case_order)}


def _summary(values, unit):
    return {**stats.summary(values), "unit": unit}


def summarise_span(rounds, span):
    """One span of a case {round: (meta, settings, spans)}: the summary of
    every round's records pooled, in cycles and in ns; each round's own
    ("rounds"); the summary of the rounds' medians in ns with their
    coefficient of variation, cv_pct (run-to-run noise, apart from the
    spread within a run); and "backward", the records that went backwards,
    left out of every summary (each round's too)."""
    per_round = [{"round": r, **{u: _summary(rounds[r][2][span][u], u) for u in UNITS},
                  "backward": rounds[r][2][span].get("backward", 0)}
                 for r in sorted(rounds)]
    meds = _summary([r["ns"]["p50"] for r in per_round if r["ns"]["n"]], "ns")
    return {**{u: _summary([x for r in sorted(rounds) for x in rounds[r][2][span][u]], u)
               for u in UNITS},
            "backward": sum(r["backward"] for r in per_round),
            "rounds": per_round,
            "round_p50": {**meds, "cv_pct": meds["stddev"] / meds["mean"] * 100
                          if meds["mean"] else None}}


def summarise_case(rounds):
    """The pooled and per-round figures of one case {round: (meta, s, spans)}."""
    first = rounds[min(rounds)][1]
    out = {"bench": first["bench"], "placement": first.get("placement"),
           "cpus": first.get("cpus"), "rounds": sorted(rounds), "spans": {}}
    for key in ("pages", "remote", "remote_cpus", "interval_ns", "policy"):
        if key in first:
            out[key] = first[key]
    if first["bench"] == "tlbflush":
        per = [r[1].get("tlb_shootdowns_per_record") for r in rounds.values()]
        per = [p for p in per if p is not None]
        out["tlb_shootdowns_per_record"] = sum(per) / len(per) if per else None
    if first["bench"] == "tun":
        out["packets_sent"] = sum(r[1].get("packets_sent", 0) for r in rounds.values())
        out["packets_received"] = sum(r[1].get("packets_received", 0)
                                      for r in rounds.values())
    for span in first["spans"]:
        out["spans"][span] = summarise_span(rounds, span)
    return out
