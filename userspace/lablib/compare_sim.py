"""compare's host-clock verdicts on made-up runs with known truth: how often
each verdict comes, and how often the interval of B / A holds the true
ratio (userspace/compare/NOTES.md, "Error rates"; tests/host/test_compare_errors.py).

    python -m lablib.compare_sim [--reps N] [--module lablib.compare_verdicts]

A case is one figure (a time: lower is better), n runs a side, each run
base (1 + change) (1 + cv z) with z standard normal, through judge() at the
default band; --module names another module with a judge() of the same
shape (the table's "before" came from the compare.py this one replaced)."""
import importlib
import sys

from . import cli

# The table's cases: A/A at two CVs, and real changes beside the 2 % band.
RUNS = (2, 5, 10, 20)
CASES = ([(cv, 0.0, n) for cv in (0.01, 0.02) for n in RUNS]
         + [(cv, change, n) for cv in (0.01, 0.02) for change in (0.01, 0.03, 0.05)
            for n in RUNS])
SEED = 67


def runs(rng, n, cv, value):
    return [value * (1 + cv * rng.standard_normal()) for _ in range(n)]


def case(cv, change, n, reps=60, seed=SEED, judge=None, band=None):
    """{"coverage", "same", "slower", "faster", "inconclusive", "runs_needed"}
    over @reps comparisons of @n runs a side at @cv with B @change above A:
    the share of each verdict, the share of intervals that hold 1 + @change
    (None if no comparison gave one) and the median runs_needed named."""
    import numpy as np
    if judge is None:
        from .compare_verdicts import judge
    kw = {} if band is None else {"band": band}
    rng = np.random.default_rng([seed, int(1e4 * cv), int(1e4 * change), n])
    counts, held, intervals, needed = {}, 0, 0, []
    for _ in range(reps):
        row = {"figure": "t", "unit": "s", "better": "lower", "kind": "default",
               "a": runs(rng, n, cv, 1.0), "b": runs(rng, n, cv, 1.0 + change)}
        judge([row], "host", **kw)
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
        if row.get("ci"):
            intervals += 1
            held += row["ci"][0] <= 1 + change <= row["ci"][1]
        if row.get("runs_needed") and row["verdict"] == "inconclusive":
            needed.append(row["runs_needed"])
    out = {v: counts.get(v, 0) / reps for v in ("same", "slower", "faster", "inconclusive")}
    out["coverage"] = held / intervals if intervals else None
    out["runs_needed"] = float(np.median(needed)) if needed else None
    return out


def table(reps, judge=None):
    """The Markdown table of every case in CASES."""
    lines = ["| CV | B / A | runs a side | coverage | same | slower | faster | "
             "runs named (median) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for cv, change, n in CASES:
        r = case(cv, change, n, reps, judge=judge)
        cov = "-" if r["coverage"] is None else f"{100 * r['coverage']:.0f} %"
        need = "-" if r["runs_needed"] is None else f"{r['runs_needed']:g}"
        lines.append(f"| {100 * cv:g} % | {1 + change:g} | {n} | {cov} | "
                     f"{100 * r['same']:.0f} % | {100 * r['slower']:.0f} % | "
                     f"{100 * r['faster']:.0f} % | {need} |")
    return "\n".join(lines) + "\n"


def add_args(p):
    p.add_argument("--reps", type=int, default=400, help="comparisons a case (default 400)")
    p.add_argument("--module", default="lablib.compare_verdicts",
                   help="the module whose judge() to run")


def work(args):
    judge = importlib.import_module(args.module).judge
    print(table(args.reps, judge), end="")


def main(argv=None):
    return cli.main(__doc__.split("\n\n")[0], "python -m lablib.compare_sim --reps 100",
                    add_args, work, argv=argv, prog="lablib.compare_sim")


if __name__ == "__main__":
    sys.exit(main())
