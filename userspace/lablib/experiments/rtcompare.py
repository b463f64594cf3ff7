"""What one rt-compare run holds (userspace/rtcompare, make rt-compare),
read into plain data: for each kernel folder DIR/<variant>/ that guest.sh
wrote, cyclictest idle and loaded (every thread's summary and their
histograms pooled), its traced and caught runs, cyclictest against the
delay module's holds, perf stat of sortsum, the square wave's periods, and
the lab's own experiments run there (calibration, wake-up, SMP, unloads).
lablib.rtcompare.analyse compares and reports what this reads."""
import pathlib

from lablib import results, stats
from lablib.experiments import calibration, irqhook, smp
from lablib.readers import ftrace, perf, rttests

# The square wave holds a frequency when its mean period is within this of
# the requested one (the reference's criterion, read off a logic analyser).
HOLD = 0.10
LOADS = ("idle", "loaded")
PERF_KEEP = ("task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles",
             "instructions", "branches", "branch-misses")
UNITS = {"task-clock": "ms", "seconds": "s", "user_s": "s", "sys_s": "s"}


def read_cyclictest(path):
    """One cyclictest run, every thread (lablib.readers.rttests): "threads", each
    {thread, cpu, overflow} and its summary; "pooled": the summary of all
    threads; "hist": their histograms added up, {"us": [...], "count":
    [...]} (numbers as lists: JSON has no numeric keys), in us."""
    run = rttests.read_cyclictest(path)
    threads = [{"thread": t["thread"], "cpu": t["cpu"], "overflow": t["overflow"],
                **rttests.summary(run, [t["thread"]])} for t in run["threads"]]
    hist = rttests.histogram(run)
    return {"threads": threads, "unstarted": run["unstarted"],
            "pooled": rttests.summary(run),
            "hist": {"us": list(hist), "count": list(hist.values())}, "unit": "us",
            "return_code": run["return_code"], "from_text": run["from_text"]}


def read_traced(folder, measured_max=None):
    """A traced run of guest.sh (traced: the whole run in trace.dat):
    cyclictest's own max and cycles, and the worst wake-up the trace holds
    (lablib.readers.ftrace.worst_wakeup: due, ran, latency_ns, count, and 'delay',
    what held the CPU), None without trace-cmd or such a wake-up, and
    lost_events, what the ring buffer dropped (0: the whole run);
    measured_max: the untraced run's max (us) it stands for.  'excerpt':
    the trace's lines from 100 us before the worst wake-up's timer was due
    to its run (worst.txt)."""
    t = read_cyclictest(folder / "cyclictest.json")
    out = {"max": t["pooled"]["max"], "cycles": t["pooled"]["n"],
           "measured_max": measured_max, "trace": (folder / "trace.dat").exists(),
           "worst": None}
    try:
        text = ftrace.report(folder / "trace.dat")
    except ValueError:
        return out
    out["lost_events"] = ftrace.lost(text)
    out["worst"] = ftrace.worst_wakeup(ftrace.parse_report(text))
    if out["worst"]:
        out["excerpt"] = ftrace.excerpt(text, out["worst"]["due"] - 100_000,
                                        out["worst"]["ran"])
    return out


def read_caught(folder):
    """The caught run of guest.sh (caught/: wake-ups 100 us apart, the
    trace stopped by cyclictest -b at the first over the threshold):
    cyclictest's max and cycles, threshold (us), and caught:
    lablib.readers.ftrace.caught()'s answer, None when no wake-up crossed the
    threshold or the trace could not be read; unread: why not (trace-cmd
    missing here, no trace.dat), else None."""
    t = read_cyclictest(folder / "cyclictest.json")
    th = folder / "threshold"
    out = {"max": t["pooled"]["max"], "cycles": t["pooled"]["n"],
           "threshold": int(th.read_text()) if th.exists() else None, "caught": None,
           "unread": None}
    try:
        out["caught"] = ftrace.caught(ftrace.read(folder / "trace.dat"))
    except ValueError as e:
        out["unread"] = str(e)
    return out


def read_delay(folder):
    """guest.sh's delay member: {"holds": [{"ns": hold, and the pooled
    cyclictest summary}, ...] by hold, "traced": read_traced() of the
    largest hold, with its "ns"}."""
    holds = [{"ns": int(f.stem[3:]), **read_cyclictest(f)["pooled"]}
             for f in folder.glob("ns-*.json")]
    out = {"holds": sorted(holds, key=lambda h: h["ns"])}
    traced = folder / "traced"
    if (traced / "cyclictest.json").exists():
        ns = int((traced / "ns").read_text()) if (traced / "ns").exists() else None
        same = next((h for h in out["holds"] if h["ns"] == ns), None)
        out["traced"] = {"ns": ns, **read_traced(traced, same and same["max"])}
    return out


def read_delays(folder, settings):
    """guest.sh's delay member: {kind: read_delay()} for each kind of hold
    (MODE-WHERE: spin-entry, sleep-entry, spin-exit, ...), in the order the
    run's delay_holds gave them.  A run from before the kinds has its
    ns-*.json in the folder itself: the one kind its delay_mode and
    delay_where named."""
    if any(folder.glob("ns-*.json")):
        kind = f"{settings.get('delay_mode', 'spin')}-{settings.get('delay_where', 'entry')}"
        return {kind: read_delay(folder)}
    order = [h.replace("@", "-") for h in str(settings.get("delay_holds", "")).split(",")]
    kinds = [p for p in folder.iterdir() if p.is_dir() and any(p.glob("ns-*.json"))]
    kinds.sort(key=lambda p: (order.index(p.name) if p.name in order else len(order), p.name))
    return {p.name: read_delay(p) for p in kinds}


def read_perfstat(folder):
    """{order: {"runs": n, "unsupported": [...], FIGURE: summary, "values":
    {FIGURE: [one a repeat]}}}: perf stat's events (lablib.readers.perf) and
    sortsum's rusage (seconds, user_s, sys_s) over the repeats."""
    out = {}
    for order in ("unsorted", "sorted"):
        runs = sorted(folder.glob(f"{order}-r*.perf"))
        if not runs:
            continue
        per = [perf.read_stat(p) for p in runs]
        rus = [results.read_json(p.with_suffix(".json")) for p in runs
               if p.with_suffix(".json").exists()]
        values = {e: [p[e] for p in per if p.get(e) is not None] for e in PERF_KEEP}
        values |= {k: [r[k] for r in rus if k in r] for k in ("seconds", "user_s", "sys_s")}
        values = {k: v for k, v in values.items() if v}
        out[order] = {"runs": len(per),
                      "unsupported": sorted({e for p in per for e in perf.not_counted(p)}),
                      **{k: {**stats.summary(v), "unit": UNITS.get(k, "count")}
                         for k, v in values.items()},
                      "values": values}
    return out


def read_wave(folder):
    """{freq: {"periods": n, "mean_err": x, "p99_err": x, "held": bool}} of
    one squarewave folder: the period is the time between every second
    edge, its error relative to 1/freq."""
    rows = results.read_csv(folder / "edges.csv", ("freq_hz", "edge", "t_ns"))
    by = {}
    for r in rows:
        by.setdefault(int(r["freq_hz"]), []).append(int(r["t_ns"]))
    out = {}
    for f, t in sorted(by.items()):
        want = 1e9 / f
        periods = [t[i + 2] - t[i] for i in range(0, len(t) - 2, 2)]
        if not periods:
            continue
        errs = sorted(abs(p / want - 1) for p in periods)
        mean_err = sum(periods) / len(periods) / want - 1
        out[f] = {"periods": len(periods), "mean_period_ns": sum(periods) / len(periods),
                  "mean_err": mean_err, "p99_err": stats.percentile(errs, 99),
                  "held": abs(mean_err) <= HOLD}
    return out


def highest_held(wave, key="mean_err"):
    """The highest frequency whose @key error is within HOLD, or None."""
    ok = [f for f, w in wave.items() if abs(w[key]) <= HOLD]
    return max(ok) if ok else None


def read_lab(folder):
    out = {}
    cal = folder / "calibrate"
    if (cal / "raw.csv").exists():
        _, s = calibration.load(cal)
        fits = s.get("fits") or {}
        out["calibrate"] = {name: {"slope_ns_per_loop": f["slope"],
                                   "intercept_ns": f["intercept"], "r2": f["r2"]}
                            for name, f in fits.items()}
    ih = folder / "irqhook"
    if ih.is_dir():
        cells = {}
        for cell in sorted(p for p in ih.iterdir() if (p / "events.csv").exists()):
            _, _, s = irqhook.load(cell)
            a = s["after_first"]
            cells[cell.name] = {k: {"p50": a[k]["p50"], "p99": a[k]["p99"], "n": a[k]["n"],
                                    "unit": "ns"} for k in ("wakeup", "switching")}
        out["irqhook"] = cells
    if (folder / "smp" / "runs").is_dir():
        out["smp"] = {case: {sp: {"p50": v["ns"]["p50"], "p99": v["ns"]["p99"], "unit": "ns"}
                             for sp, v in smp.summarise_case(rounds)["spans"].items()}
                      for case, rounds in smp.read_runs(folder / "smp").items()}
    un = folder / "unload.csv"
    if un.exists():
        r = results.read_csv(un, ("cycles", "completed", "kernel_problems"))[0]
        out["unload"] = {k: int(v) for k, v in r.items()}
    return out


def read_kernel(folder):
    meta = results.read_meta(folder)
    k = {"meta": meta, "kernel": meta.get("kernel", {}), "cyclictest": {}, "skipped": []}
    ct = folder / "cyclictest"
    for load in LOADS:
        if (ct / f"{load}.json").exists():
            k["cyclictest"][load] = read_cyclictest(ct / f"{load}.json")
    traced = ct / "traced"
    if (traced / "cyclictest.json").exists():
        k["cyclictest"]["traced"] = read_traced(
            traced, results.get(k, "cyclictest", "loaded", "pooled", "max"))
    if (ct / "caught" / "cyclictest.json").exists():
        k["cyclictest"]["caught"] = read_caught(ct / "caught")
    if (folder / "delay").is_dir():
        k["delay"] = read_delays(folder / "delay", results.settings(meta))
    if (folder / "perfstat").is_dir():
        k["perfstat"] = read_perfstat(folder / "perfstat")
    sq = folder / "squarewave"
    if sq.is_dir():
        waves = {}
        for d in sorted(p for p in sq.iterdir() if (p / "edges.csv").exists()):
            w = read_wave(d)
            waves[d.name] = {"freqs": {str(f): v for f, v in w.items()},
                             "highest_held_mean": highest_held(w),
                             "highest_held_p99": highest_held(w, "p99_err")}
        k["squarewave"] = waves
    if (folder / "lab").is_dir():
        k["lab"] = read_lab(folder / "lab")
    if (folder / "skipped.csv").exists():
        k["skipped"] = results.read_csv(folder / "skipped.csv", ("member", "reason"))
    return k


def run_order(d):
    """The kernel folders' names in the order run.sh's --variants gave them
    (its meta.json: "stock,stock:preempt=full,rt" names stock,
    stock-preempt-full and rt, as guest.sh names a kernel as booted); []
    for a folder without that setting."""
    try:
        variants = results.settings(results.read_meta(d)).get("variants")
    except ValueError:
        return []
    if not isinstance(variants, str):
        return []
    names = []
    for spec in variants.split(","):
        variant, _, boot = spec.partition(":")
        preempt = boot[len("preempt="):] if boot.startswith("preempt=") else ""
        names.append(variant + (f"-preempt-{preempt}" if preempt else ""))
    return names


def kernels_of(d):
    """{kernel: read_kernel(...)} of rt-compare folder @d: stock first, the
    base every other kernel is set against, then the others in the order
    they ran (run_order), any other alphabetically."""
    d = pathlib.Path(d)
    found = {p.name: p for p in sorted(d.iterdir())
             if p.is_dir() and (p / "meta.json").exists() and (p / "skipped.csv").exists()}
    if not found:
        raise ValueError(f"{d}: no kernel folders (DIR/<variant>/ with meta.json): "
                         f"not an rt-compare result, or nothing measured")
    ran = run_order(d)
    order = sorted(found, key=lambda v: (v != "stock", ran.index(v) if v in ran else len(ran), v))
    return {v: read_kernel(found[v]) for v in order}
