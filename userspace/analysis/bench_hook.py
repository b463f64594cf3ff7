#!/usr/bin/env python3
"""Summarise the hook-overhead benchmark (scripts/bench-hook.sh).

Input: lines "case round ns_per_call" for cases a (hook compiled out),
b (compiled in, unused), c (delay loaded, loops=0), d (loops=1).
Prints a table and the ratios, writes them as JSON.

usage: bench_hook.py RAW OUT.json
"""
import json
import statistics
import sys

from labcli import run

LABELS = {
    "a": "hook compiled out",
    "b": "hook compiled in, nothing registered",
    "c": "delay loaded, loops=0",
    "d": "delay loaded, loops=1",
}
TARGETS = {"b/a": 1.01, "c/a": 1.05}


def summarise(lines):
    samples = {k: [] for k in LABELS}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] in samples:
            samples[parts[0]].append(float(parts[2]))
    missing = [k for k, v in samples.items() if not v]
    if missing:
        raise ValueError(f"no samples for case(s) {', '.join(missing)}")
    med = {k: statistics.median(v) for k, v in samples.items()}
    low = {k: min(v) for k, v in samples.items()}
    return {
        "cases": {k: {"label": LABELS[k], "median_ns": med[k], "min_ns": low[k],
                      "samples_ns": v,
                      "stdev_ns": statistics.stdev(v) if len(v) > 1 else 0.0}
                  for k, v in samples.items()},
        # The minimum is the run the host disturbed least; the median is the
        # usual figure.  Both are reported: on a noisy host they differ.
        "ratios": {"b/a": med["b"] / med["a"], "c/a": med["c"] / med["a"]},
        "ratios_of_minima": {"b/a": low["b"] / low["a"], "c/a": low["c"] / low["a"]},
        "ns_per_loop": med["d"] - med["c"],
        "ns_per_loop_of_minima": low["d"] - low["c"],
        "targets": TARGETS,
    }


def report(raw, out):
    with open(raw, encoding="utf-8") as f:
        result = summarise(f)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    for k, c in result["cases"].items():
        print(f"{k}  {c['label']:<38} median {c['median_ns']:7.1f} ns  min "
              f"{c['min_ns']:7.1f} ns  (sd {c['stdev_ns']:.1f}, {len(c['samples_ns'])} runs)")
    for name in TARGETS:
        med, low = result["ratios"][name], result["ratios_of_minima"][name]
        verdict = "ok" if med <= TARGETS[name] else "ABOVE TARGET"
        print(f"{name} = {med:.4f} (medians), {low:.4f} (minima)  "
              f"target <= {TARGETS[name]}: {verdict}")
    print(f"one loop adds {result['ns_per_loop']:.2f} ns (medians), "
          f"{result['ns_per_loop_of_minima']:.2f} ns (minima)")
    print(f"written: {out}")


def main(argv):
    return run(__doc__, argv, 2, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
