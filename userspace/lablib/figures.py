"""The headline figures of an analysed result folder, one reader per
experiment: what 'compare' sets side by side and what the clocks table
(userspace/clocks) puts under both clocks.

A figure is a dict:
  figure   its name, e.g. "getppid slope (p10 fit)"
  unit     e.g. "ns/loop", "greps/min"
  value    the folder's value (None: the run has no such figure)
  spread   (min, max) over the runs inside the folder, or None
  repeats  True when the value is the mean of those runs (a sweep's point):
           compare then counts the spread as the figure's own
  better   "higher", "lower" or None (neither is a regression)
  kind     the repeatability band it is held to on the virtual clock
           (compare_verdicts.BANDS), e.g. "calibrate.slope", "sweep.point"
  headline False for the detail only compare shows (a sweep's points, a
           fit's intercept), True for what the clocks table shows too
  role     "measured" (a figure a run measures, or a fit's parameter),
           "derived" (computed from other figures: d1/2 = base / calls, a
           slowdown, a ratio of medians) or "fit" (a fit's quality: R^2, a
           model check's error); compare tests and counts as worse only
           measured figures

read(folder) -> {"path", "experiment", "meta", "clock", "figures"}; an
analysed folder's summary is read, never recomputed: a folder not yet
analysed is refused with the command that analyses it (NotAResult)."""
import pathlib

from . import cli, results
from .sweep import catalog


class NotAResult(cli.BadInput):
    """A folder that is no analysed lab result of an experiment read here."""


def figure(name, unit, value, spread=None, better=None, kind="default", headline=True,
           role="measured", repeats=False):
    return {"figure": name, "unit": unit, "value": value, "spread": spread,
            "better": better, "kind": kind, "headline": headline, "role": role,
            "repeats": repeats}


def _summary(d, name, key=None, kind=dict, what=""):
    """The JSON of @d/@name, which 'lab analyse' writes (NotAResult if it is
    missing); with @key, it must hold @key as a @kind (NotAResult naming
    @what it is then not)."""
    path = d / name
    if not path.is_file():
        raise NotAResult(f"{d}: no {name}: analyse it first (lab analyse {d})")
    s = results.read_json(path)
    if not isinstance(s, (dict, list)):
        raise NotAResult(f"{path}: not a JSON object")
    if key is not None and not (isinstance(s, dict) and isinstance(s.get(key), kind)):
        raise NotAResult(f"{d}/{name}: no {key}: not {what}")
    return s


def _spread(r):
    return (r["min"], r["max"]) if r and r.get("n", 0) > 1 else None


# --- the experiments -----------------------------------------------------------

def read_calibrate(d):
    s = _summary(d, "summary.json")
    out = []
    for key, what in (("fits", "p10 fit"), ("fits_p50", "p50 fit")):
        for call, f in sorted((s.get(key) or {}).items()):
            out.append(figure(f"{call} slope ({what})", "ns/loop", f.get("slope"),
                              kind="calibrate.slope" if key == "fits" else "calibrate.slope_p50"))
            out.append(figure(f"{call} R^2 ({what})", "R^2", f.get("r2"),
                              kind="calibrate.r2", role="fit"))
            out.append(figure(f"{call} intercept ({what})", "ns", f.get("intercept"),
                              better="lower", headline=False,
                              kind="calibrate.ns" if key == "fits" else "calibrate.ns_p50"))
    if not out:
        raise NotAResult(f"{d}/summary.json: no fits: not an analysed calibration")
    if isinstance(s.get("entry_ns"), (int, float)):
        out.append(figure("cost of a delayed call before its first loop", "ns",
                          s["entry_ns"], better="lower", kind="calibrate.ns", headline=False))
    return out


def read_sweep(d):
    s = _summary(d, "summary.json", "measures",
                 what="a workload sweep's summary")
    out = []
    for name, m in s["measures"].items():
        mod = m.get("model") or {}
        what = name if name == s.get("workload") else f"{s.get('workload')} {name}"
        # A saturation is found by a search of offered rates, not timed.
        kind = "sweep.knee" if name == "saturation" else "sweep.point"
        for p in m.get("points") or []:
            at = f"{p.get('knob', 'loops')} {p.get('setting', p.get('loops'))}"
            out.append(figure(f"{what} at {at}", p.get("unit") or m.get("unit") or "",
                              p.get("mean"), _spread(p), better="higher",
                              kind=kind, headline=False, repeats=True))
        check = (mod.get("check") or {}).get("max_abs_error")
        out += [
            figure(f"{what}: base time of a unit of work", "s",
                   mod.get("base_seconds_per_unit"), better="lower", kind=kind),
            figure(f"{what}: system calls of a unit of work", "calls",
                   mod.get("syscalls_per_unit"), kind="sweep.calls", headline=False),
            figure(f"{what}: delay that doubles it (base / calls)", "ns",
                   mod.get("half_ns"), kind=kind, role="derived"),
            figure(f"{what}: model check max |error|", "%",
                   None if check is None else 100 * check, kind="sweep.check", role="fit"),
            figure(f"{what}: measured slowdown at {mod.get('knob', 'loops')} "
                   f"{mod.get('max_setting')}", "x", mod.get("measured_slowdown"), kind=kind,
                   role="derived"),
            figure(f"{what}: predicted slowdown at {mod.get('knob', 'loops')} "
                   f"{mod.get('max_setting')}", "x", mod.get("predicted_slowdown"), kind=kind,
                   role="derived"),
        ]
    return out


def _range(values):
    v = [x for x in values if x is not None]
    return (min(v), max(v)) if len(v) > 1 else None


def rt_kernel(v, prefix=""):
    """The figures of one kernel of an rt-compare (@v: its part of
    comparison.json, or experiments.rtcompare.read_kernel of its folder):
    cyclictest's, then the rest rt-compare's own table sets side by side.
    A spread is over cyclictest's threads or perf stat's repeats: inside
    one boot."""
    out = []
    for load in ("idle", "loaded"):
        ct = results.get(v, "cyclictest", load) or {}
        pooled = ct.get("pooled")
        if pooled:
            for q, key in (("min", "min"), ("mean", "mean"), ("p50", "p50"), ("p99", "p99"),
                           ("p99.9", "p999"), ("max", "max")):
                if key in pooled:
                    out.append(figure(f"{prefix}cyclictest {load} {q}", "us", pooled[key],
                                      _range([t.get(key) for t in ct.get("threads") or []]),
                                      better="lower", kind="latency",
                                      headline=q in ("p99.9", "max")))
    for kind, dm in (v.get("delay") or {}).items():
        for h in dm.get("holds") or []:
            out.append(figure(f"{prefix}cyclictest max, {h['ns'] / 1e3:g} us hold ({kind})",
                              "us", h.get("max"), better="lower", kind="latency"))
    # The rest of what rt-compare's own table sets side by side.
    for order, pf in (v.get("perfstat") or {}).items():
        for e in ("task-clock", "seconds", "user_s", "sys_s", "context-switches",
                  "cpu-migrations", "page-faults", "cycles", "branch-misses"):
            if isinstance(pf.get(e), dict) and pf[e].get("mean") is not None:
                out.append(figure(f"{prefix}perf stat sortsum {order}: {e}", pf[e]["unit"],
                                  pf[e]["mean"], _range((pf.get("values") or {}).get(e, ())),
                                  better="lower", headline=False))
    for w, sq in (v.get("squarewave") or {}).items():
        for key, what in (("highest_held_mean", "mean"), ("highest_held_p99", "p99")):
            out.append(figure(f"{prefix}square wave {w}: highest Hz, {what} period within 10 %",
                              "Hz", sq.get(key), better="higher", headline=False))
    lab = v.get("lab") or {}
    for call, cal in (lab.get("calibrate") or {}).items():
        out.append(figure(f"{prefix}calibration {call} slope", "ns/loop",
                          cal.get("slope_ns_per_loop"), kind="calibrate.slope", headline=False))
        out.append(figure(f"{prefix}calibration {call} intercept", "ns",
                          cal.get("intercept_ns"), better="lower", kind="calibrate.ns",
                          headline=False))
    for cell, c in (lab.get("irqhook") or {}).items():
        for q in ("p50", "p99"):
            if results.get(c, "wakeup", q) is not None:
                out.append(figure(f"{prefix}wake-up (irqhook) {cell} {q}", "us",
                                  c["wakeup"][q] / 1e3, better="lower", kind="latency",
                                  headline=False))
    for case, spans in (lab.get("smp") or {}).items():
        for span, sp in spans.items():
            if isinstance(sp, dict) and sp.get("p50") is not None:
                out.append(figure(f"{prefix}smp {case} {span} p50", "ns", sp["p50"],
                                  better="lower", kind="smp", headline=False))
    return out


def read_rtcompare(d):
    """An rt-compare run's figures, kernel by kernel ("stock cyclictest idle
    p99.9"); or, for one of its kernel folders (DIR/stock/, DIR/rt/), that
    kernel's, unprefixed, so that compare sets a kernel of one run against
    a kernel of another: compare -a R1/stock R2/stock -b R1/rt R2/rt."""
    if not (d / "comparison.json").is_file() and (d / "skipped.csv").is_file():
        from .experiments import rtcompare
        return rt_kernel(rtcompare.read_kernel(d))
    s = _summary(d, "comparison.json", "kernels",
                 what="an rt-compare comparison")
    return [f for k, v in s["kernels"].items() for f in rt_kernel(v, f"{k} ")]


def read_smp(d):
    s = _summary(d, "summary.json", "cases", what="an smp summary")
    return [figure(f"{case} {span} p50", "ns", v["ns"]["p50"], _spread(v.get("round_p50")),
                   better="lower", kind="smp")
            for case, c in s["cases"].items() for span, v in c["spans"].items()]


def read_msgq(d):
    s = _summary(d, "summary.json", "strategies",
                 what="a msgq profile's summary")
    out = []
    for strat, v in s["strategies"].items():
        f = results.get(v, "figures", "cpu_us_per_msg")
        if f:
            out.append(figure(f"{strat}: CPU time per message", "us", f["p50"], _spread(f),
                              better="lower", kind="msgq"))
        e2e = results.get(v, "queueing", "end_to_end", "ns")
        if e2e and e2e.get("n"):
            out.append(figure(f"{strat}: send to receipt p50", "us", e2e["p50"] / 1e3,
                              better="lower", kind="latency"))
    return out


def read_hookcost(d):
    s = _summary(d, "summary.json", "cases",
                 what="a hookcost summary")
    out = [figure(f"{k} {c.get('label', '')}: median".replace("  ", " "), "ns", c.get("p50"),
                  (c.get("min"), c.get("max")) if c.get("n", 0) > 1 else None,
                  better="lower", kind="calibrate.ns")
           for k, c in s["cases"].items()]
    for name, r in (s.get("ratios_p50") or {}).items():
        out.append(figure(f"{name} (medians)", "ratio", r, better="lower", kind="ratio",
                          role="derived"))
    if "ns_per_loop_p50" in s:
        out.append(figure("one loop (medians)", "ns/loop", s["ns_per_loop_p50"],
                          kind="calibrate.slope"))
    return out


def read_tailamp(d):
    s = _summary(d, "summary.json", "points", list,
                 "a tailamp summary")
    out = [figure("system calls per request", "calls", s.get("calls_per_request"),
                  kind="sweep.calls")]
    for p in s["points"]:
        for q in ("mean", "p50", "p99", "p999"):
            out.append(figure(f"reply {q} at {p['ppm']} ppm", "us", p.get(f"{q}_us"),
                              better="lower", kind="latency"))
    return out


def _latency_figures(prefix, series):
    return [figure(f"{prefix}{q}", "us", series[key] / 1e3, better="lower", kind="latency")
            for q, key in (("mean", "mean"), ("p50", "p50"), ("p99", "p99"),
                           ("p99.9", "p999"), ("max", "max"))
            if isinstance(series.get(key), (int, float))]


def read_irqhook(d):
    s = _summary(d, "summary.json", "after_first",
                 what="an irqhook summary")
    return [f for name, series in s["after_first"].items()
            for f in _latency_figures(f"{name} after the first event: ", series)]


def read_irqhook_sweep(d):
    rows = _summary(d, "sweep.json")
    if not isinstance(rows, list):
        raise NotAResult(f"{d}/sweep.json: not a list of cells")
    out = []
    for r in rows:
        cell = f"{r.get('class')} {r.get('loads')} loads: "
        for key, what in (("switching_mean_us", "switching mean"),
                          ("switching_p99_us", "switching p99"),
                          ("wakeup_mean_us", "wake-up mean"), ("wakeup_p50_us", "wake-up p50"),
                          ("wakeup_p99_us", "wake-up p99"), ("wakeup_max_us", "wake-up max")):
            out.append(figure(cell + what, "us", r.get(key), better="lower", kind="latency"))
    return out


READERS = {"calibrate": read_calibrate, "sweep": read_sweep, "rt-compare": read_rtcompare,
           "smp": read_smp, "msgq-profile": read_msgq, "hookcost": read_hookcost,
           "tailamp": read_tailamp, "irqhook": read_irqhook,
           "irqhook-sweep": read_irqhook_sweep}


# --- which clock ----------------------------------------------------------------

def _kind(meta):
    """The clock meta.json names: "host" or "virtual"; "host" for a lab
    VM's meta.json from before the clock choice (no "clock" key: the host's
    was the only one); None outside a VM (a runner's meta.json on the host)."""
    machine = meta.get("machine") or {}
    clock = machine.get("clock")
    if isinstance(clock, dict) and clock.get("kind"):
        return clock["kind"]
    if "clock" not in machine and machine.get("virtual") is True:
        return "host"
    return None


def clock_of(d, meta):
    """(kind, the meta.json that says so) of result folder @d: its own
    meta.json, else the guests' one or two levels down (guest/, a kernel
    folder, runs/CASE-rK/, boots/B/), which must agree."""
    kind = _kind(meta)
    if kind:
        return kind, meta
    found = {}
    for p in sorted([*d.glob("*/meta.json"), *d.glob("runs/*/meta.json"),
                     *d.glob("boots/*/meta.json")]):
        m = results.read_json(p)
        k = _kind(m) if isinstance(m, dict) else None
        if k:
            found.setdefault(k, (p.parent, m))
    if len(found) > 1:
        raise NotAResult(f"{d}: its guests ran on different clocks "
                         f"({', '.join(f'{k} in {v[0].name}' for k, v in found.items())})")
    if not found:
        raise NotAResult(f"{d}: no meta.json in it names the guest's clock "
                         f"(machine.clock): not a result of the lab's VM")
    kind, (_, m) = next(iter(found.items()))
    if kind not in ("host", "virtual"):
        raise NotAResult(f"{d}: clock {kind!r} is neither host nor virtual")
    return kind, m


def is_sweep(meta):
    """Whether @meta is a workload sweep's: its experiment is the workload
    its settings name."""
    exp = meta.get("experiment")
    return exp is not None and results.settings(meta).get("workload") == exp


def experiment_of(meta):
    """The reader's name for meta.json's experiment ("sweep" for every
    workload), or None."""
    return "sweep" if is_sweep(meta) else meta.get("experiment")


def read(d):
    """{"path", "experiment", "workload", "meta", "guest", "clock",
    "describe", "figures"} of result folder @d (guest: the meta.json that
    names the clock, the folder's own or a guest's); NotAResult if it is
    not one read here."""
    d = pathlib.Path(d)
    if not d.is_dir():
        raise NotAResult(f"{d}: no such folder")
    try:
        meta = results.read_meta(d)
    except ValueError as e:
        raise NotAResult(cli.message(e)) from None
    exp = experiment_of(meta)
    if exp not in READERS:
        raise NotAResult(f"{d}: experiment {meta.get('experiment')!r}, not one of "
                         f"{', '.join(sorted(READERS))} or a workload sweep "
                         f"({', '.join(catalog.names())})")
    kind, guest = clock_of(d, meta)
    return {"path": str(d), "experiment": exp, "workload": meta.get("experiment"),
            "meta": meta, "guest": guest, "clock": kind, "describe": results.describe(guest),
            "figures": READERS[exp](d)}
