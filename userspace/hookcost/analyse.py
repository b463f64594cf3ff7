"""Summarise the hook-overhead benchmark (make bench-hook).

Null-syscall latency (getppid) per case: a (hook compiled out), b
(compiled in, nothing registered), c (delay loaded, loops=0), d (loops=1).
Reads DIR/raw.csv (case,boot,round,ns_per_call) and DIR/meta.json; writes
DIR/summary.json (per case statistics, the ratios b/a and c/a of the
medians and of the minima, the ns one loop adds) and prints a table with a
verdict against the targets b/a <= 1.01, c/a <= 1.05.
"""
import pathlib
import sys

from lablib import cli, results, stats

LABELS = {
    "a": "hook compiled out",
    "b": "hook compiled in, nothing registered",
    "c": "delay loaded, loops=0",
    "d": "delay loaded, loops=1",
}
TARGETS = {"b/a": 1.01, "c/a": 1.05}
RAW_COLUMNS = ("case", "boot", "round", "ns_per_call")


def read_raw(path):
    """{case: [ns_per_call, ...]} of a hookcost raw.csv."""
    samples = {k: [] for k in LABELS}
    for i, row in enumerate(results.read_csv(path, RAW_COLUMNS), 2):
        if row["case"] not in samples:
            raise ValueError(f"{path} line {i}: unknown case {row['case']!r} "
                             f"(known: {', '.join(LABELS)})")
        try:
            ns = float(row["ns_per_call"])
        except ValueError:
            raise ValueError(f"{path} line {i}: ns_per_call {row['ns_per_call']!r} is not a "
                             f"number") from None
        if not 0 < ns < float("inf"):
            raise ValueError(f"{path} line {i}: ns_per_call {ns} is not a time > 0")
        samples[row["case"]].append(ns)
    missing = [k for k, v in samples.items() if not v]
    if missing:
        raise ValueError(f"{path}: no samples for case(s) {', '.join(missing)}")
    return samples


def summarise(samples):
    """The summary.json dict (README.md, Conventions: summary keys)."""
    cases = {k: {"label": LABELS[k], **stats.summary(v)} for k, v in samples.items()}
    med = {k: c["p50"] for k, c in cases.items()}
    low = {k: c["min"] for k, c in cases.items()}
    # The minimum is the run the host disturbed least; the median is the
    # usual figure.  Both are reported: on a noisy host they differ.
    return {
        "experiment": "hookcost", "unit": "ns", "cases": cases,
        "ratios_p50": {r: med[r[0]] / med[r[2]] for r in TARGETS},
        "ratios_min": {r: low[r[0]] / low[r[2]] for r in TARGETS},
        "ns_per_loop_p50": med["d"] - med["c"],
        "ns_per_loop_min": low["d"] - low["c"],
        "targets": TARGETS,
    }


def boot_lines(d):
    """Where each kernel ran: one line per kind of boot, from boots/*/meta.json
    (the folder's own meta.json describes the host that ran the VMs)."""
    lines = {}
    for m in sorted(pathlib.Path(d).glob("boots/*/meta.json")):
        which = m.parent.name.split("-")[0]
        lines.setdefault(which, f"  {which}: {results.describe(results.read_meta(m.parent))}")
    return list(lines.values())


def table(meta, s, boots=()):
    out = [f"hookcost: run from {results.describe(meta)}", *boots]
    for k, c in s["cases"].items():
        out.append(f"{k}  {c['label']:<38} median {c['p50']:7.1f} ns  min "
                   f"{c['min']:7.1f} ns  (sd {c['stddev']:.1f}, {c['n']} runs)")
    for name, target in TARGETS.items():
        med, low = s["ratios_p50"][name], s["ratios_min"][name]
        verdict = "ok" if med <= target else "ABOVE TARGET"
        out.append(f"{name} = {med:.4f} (medians), {low:.4f} (minima)  "
                   f"target <= {target}: {verdict}")
    out.append(f"one loop adds {s['ns_per_loop_p50']:.2f} ns (medians), "
               f"{s['ns_per_loop_min']:.2f} ns (minima)")
    return "\n".join(out) + "\n"


def analyse(d):
    meta = results.read_meta(d)
    summary = summarise(read_raw(d / "raw.csv"))
    results.write_json(d / "summary.json", summary)
    return summary, table(meta, summary, boot_lines(d)), ["summary.json"]


add_args, work = cli.folder_analyser("DIR", "a hookcost result folder", analyse)


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-hookcost", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.hookcost.analyse")


if __name__ == "__main__":
    sys.exit(main())
