"""Analyse a tail-amplification run (userspace/tailamp).

For each fraction P of Apache's system calls delayed by D: the reply
times' mean, p50, p99 and p99.9 beside a model in which a request of N
calls (the calls counted while it was in flight) meets K ~ Binomial(N, P)
delayed ones and takes base + K x d (d the module's measured ns per
delayed call), and the share of requests that met at least one,
measured (slower than the slowest undelayed reply by d / 2) and modelled
(1 - (1 - P)^N).  Reads DIR/meta.json and DIR/runs/ppm-P/ (one
workloads/sweep.sh apache folder per P); writes summary.json,
summary.csv, report.txt and tailamp.png.
"""
import collections
import math
import sys

from lablib import cli, plot, results, stats, text
from lablib.experiments import workloads

COLUMNS = ("ppm", "requests", "calls_per_request", "delay_ns", "base_p50_us", "mean_us",
           "p50_us", "p99_us", "p999_us", "model_mean_us", "model_p50_us", "model_p99_us",
           "model_p999_us", "slow_share", "model_slow_share", "p9_requests")
QUANTILES = {"p50": 0.5, "p99": 0.99, "p999": 0.999}


def read_replies(path):
    """[(seconds, calls)] of a reqtime reply log (lablib's
    workloads.read_replies: its CSV, a row a request); a request that got
    no reply of status 200 is left out."""
    replies, _ = workloads.read_replies(path)
    if not replies:
        raise ValueError(f"{path}: no replies")
    if replies[0][1] is None:
        raise ValueError(f"{path}: no calls counted (reqtime without --calls-fd)")
    return replies


def read_point(folder, ns):
    """One P's sweep folder: (ppm, base replies, delayed replies, the
    module's ns per delayed call or None, 9p requests in its windows)."""
    meta = results.read_meta(folder)
    ppm = results.get(meta, "settings", "delay_settings", "ppm")
    if ppm is None:
        raise ValueError(f"{folder}/meta.json: no settings.delay_settings.ppm")
    base = read_replies(folder / "logs/reply-ns0-1.csv")
    delayed = read_replies(folder / f"logs/reply-ns{ns}-1.csv")
    # Required: the reader's {} for a missing file would pass for a sweep
    # whose module measured nothing.
    if not (folder / "points.csv").is_file():
        raise ValueError(f"{folder}: no points.csv (the sweep writes it)")
    measured = workloads.read_points(folder / "points.csv").get((None, ns))
    p9 = sum(r["p9_requests"] or 0 for r in workloads.read_raw(folder / "raw.csv")
             if r["measure"] == "reply")
    return int(ppm), base, delayed, measured, p9


def binomial_cdf(n, p, k):
    """P(Binomial(n, p) <= k)."""
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(min(k, n) + 1))


def model_quantile(calls, p, q):
    """The smallest k with the mixture over the requests' call counts
    @calls of P(K <= k) >= @q, K ~ Binomial(N, @p)."""
    counts = collections.Counter(calls)
    k = 0
    while k < max(counts) and sum(m * binomial_cdf(n, p, k)
                                  for n, m in counts.items()) / len(calls) < q:
        k += 1
    return k


def summarise_point(ppm, base, delayed, measured, p9, ns):
    p = ppm / 1e6
    d = measured or ns
    b = stats.summary(s for s, _ in base)
    got = stats.summary(s for s, _ in delayed)
    calls = [c for _, c in delayed]
    slow = sum(s > b["max"] + d / 2e9 for s, _ in delayed) / len(delayed)
    row = {"ppm": ppm, "requests": len(delayed), "calls_per_request": sum(calls) / len(calls),
           "delay_ns": d, "base_p50_us": b["p50"] * 1e6, "mean_us": got["mean"] * 1e6,
           "p50_us": got["p50"] * 1e6, "p99_us": got["p99"] * 1e6, "p999_us": got["p999"] * 1e6,
           "model_mean_us": (b["mean"] * 1e9 + p * sum(calls) / len(calls) * d) / 1e3,
           "slow_share": slow,
           "model_slow_share": sum(1 - (1 - p) ** n for n in calls) / len(calls),
           "p9_requests": p9}
    for name, q in QUANTILES.items():
        row[f"model_{name}_us"] = (b["p50"] * 1e9 + model_quantile(calls, p, q) * d) / 1e3
    return row


def threshold(n, share):
    """The P (ppm) at which a request of @n calls meets a delayed one with
    probability @share: 1 - (1 - share)^(1/n)."""
    return (1 - (1 - share) ** (1 / n)) * 1e6


def analyse(d):
    meta = results.read_meta(d)
    ns = results.get(meta, "settings", "ns")
    if not isinstance(ns, int):
        raise ValueError(f"{d}/meta.json: no settings.ns")
    folders = sorted((d / "runs").glob("ppm-*"), key=lambda f: int(f.name[4:]))
    if not folders:
        raise ValueError(f"{d}/runs: no ppm-P folders (guest.sh writes them)")
    rows = [summarise_point(*read_point(f, ns), ns) for f in folders]
    n = sum(r["calls_per_request"] for r in rows) / len(rows)
    summary = {"experiment": "tailamp", "unit": "us", "ns": ns,
               "mode": results.get(meta, "settings", "mode"),
               "calls_per_request": n,
               "p99_moves_at_ppm": threshold(n, 0.01), "p50_moves_at_ppm": threshold(n, 0.5),
               "exact": all(r["p9_requests"] == 0 for r in rows), "points": rows}
    rep = report(meta, summary)
    return summary, rep, results.write_summary(d, summary, COLUMNS, rows, rep)


def report(meta, s):
    num = text.num
    head = [f"tailamp: Apache replies with a share P of its calls delayed by {num(s['ns'])} ns "
            f"({s['mode']}); {results.describe(meta)}"]
    cols = [("P ppm", ">9"), "  ", ("replies", ">8"), "  ", ("N", ">6"), "  ",
            ("mean us", ">10"), " ", ("model", ">10"), "  ", ("p50", ">9"), " ", ("model", ">9"),
            "  ", ("p99", ">9"), " ", ("model", ">9"), "  ", ("p99.9", ">9"), " ",
            ("model", ">9"), "  ", ("slow", ">7"), " ", ("model", ">7")]
    rows = [(num(r["ppm"]), num(r["requests"]), num(r["calls_per_request"]),
             num(r["mean_us"], 4), num(r["model_mean_us"], 4), num(r["p50_us"], 4),
             num(r["model_p50_us"], 4), num(r["p99_us"], 4), num(r["model_p99_us"], 4),
             num(r["p999_us"], 4), num(r["model_p999_us"], 4),
             f"{100 * r['slow_share']:.2f}%", f"{100 * r['model_slow_share']:.2f}%")
            for r in s["points"]]
    n = s["calls_per_request"]
    notes = [
        "",
        f"A request makes N = {num(n)} delayable calls on average; each is delayed with "
        "chance P, so a request is slow (meets at least one) with chance 1 - (1 - P)^N, "
        "about N x P while that is small: the tail feels P N times over.",
        f"The p99 moves by a whole delay once 1 % of requests are slow: P >= "
        f"{num(s['p99_moves_at_ppm'])} ppm; the median once half are: P >= "
        f"{num(s['p50_moves_at_ppm'])} ppm.  The mean moves smoothly, by N x P x d.",
        "slow: replies slower than the slowest undelayed one by half a delay.",
    ]
    if not s["exact"]:
        notes.append("NOT EXACT: some timed windows made requests to the host's files (9p).")
    return "\n".join([*head, text.table(cols, rows, notes)]) + "\n"


def draw(s, folder):
    pts = [r for r in s["points"] if r["ppm"] > 0]
    if not pts:
        return []
    fig, (ax, ax2) = plot.figure(ncols=2, width=11)
    x = [r["ppm"] for r in pts]
    # A point whose windows read the host's files (9p) is not exact: drawn
    # hollow and grey, off the measured line, with a banner saying so.
    bad = [r for r in pts if r["p9_requests"]]
    for key, colour in (("mean", "C0"), ("p50", "C1"), ("p99", "C2"), ("p999", "C3")):
        label = "p99.9" if key == "p999" else key
        ax.plot(x, [float("nan") if r["p9_requests"] else r[f"{key}_us"] for r in pts], "o-",
                color=colour, label=f"{label} measured")
        ax.plot(x, [r[f"model_{key}_us"] for r in pts], "--", color=colour,
                label=f"{label} model")
        if bad:
            ax.plot([r["ppm"] for r in bad], [r[f"{key}_us"] for r in bad], "o", color="0.55",
                    mfc="none", label="not exact (9p)" if key == "mean" else None)
    ax.axhline(pts[0]["base_p50_us"], color="grey", lw=0.8, label="undelayed p50")
    plot.log_axis(ax, "x", min(x), max(x))
    plot.log_axis(ax, "y", min(r["p50_us"] for r in pts),
                  max(max(r["p999_us"], r["model_p999_us"]) for r in pts))
    ax.set_xlabel("share of calls delayed, P (ppm)")
    ax.set_ylabel("reply time (us)")
    title = f"{plot.short_number(s['ns'])} ns a delayed call ({s['mode']})"
    if bad:
        ax.set_title(f"{len(bad)} of {len(pts)} points not exact, drawn hollow: their windows "
                     "made requests to the host's files (9p)", fontsize=8, color="C3")
    ax2.plot([r["ppm"] for r in pts if not r["p9_requests"]],
             [100 * r["slow_share"] for r in pts if not r["p9_requests"]], "o", color="C3",
             label="measured")
    if bad:
        ax2.plot([r["ppm"] for r in bad], [100 * r["slow_share"] for r in bad], "o",
                 color="0.55", mfc="none", label="not exact (9p)")
    grid = [min(x) * (max(x) / min(x)) ** (i / 50) for i in range(51)]
    n = s["calls_per_request"]
    ax2.plot(grid, [100 * (1 - (1 - g / 1e6) ** n) for g in grid], "-", color="C3",
             label=f"1 - (1 - P)^N, N = {n:.1f}")
    ax2.plot(grid, [g / 1e4 for g in grid], ":", color="grey", label="P itself")
    plot.log_axis(ax2, "x", min(x), max(x))
    ax2.set_xlabel("share of calls delayed, P (ppm)")
    ax2.set_ylabel("requests that met a delayed call (%)")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=8)
    plot.headline(fig, f"tailamp: reply times with a share of calls delayed, {title}",
                  results.read_meta(folder), 150)
    plot.save(fig, ax, folder / "tailamp.png")
    return []


add_args, work = cli.folder_analyser("DIR", "a tailamp result folder", analyse, plot=draw,
                                     picture="tailamp.png")


def main(argv=None, prog=None):
    """Analyse the folder of @argv (default sys.argv[1:]); the exit status."""
    return cli.main(__doc__, "lab analyse results/latest-tailamp", add_args, work,
                    argv=argv, prog=prog or "python -m lablib.tailamp.analyse")


if __name__ == "__main__":
    sys.exit(main())
