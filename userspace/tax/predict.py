"""Predict what each tax of a tax run does to a workload, before running it.

Reads a workload sweep's folder (SWEEP: raw.csv, and by_call.csv, the
calls of its targeted tasks by number, which the delay module counts) and
a tax folder (TAX: summary.json, the ns each tax adds to each call).  For
each measure of the workload at its untaxed point (loops 0 or ns 0): the
time of a unit of work (the median window's seconds per unit), its calls
(the median window's system calls per unit), their mix by number (the
point's by_call.csv), and under each tax

    predicted = base + calls per unit x sum over numbers (share x tax of the number)

A call number the tax run did not time takes the tax's figure only where
the tax is one figure for every call it timed (within 1 % or 1 ns: a
cached seccomp answer, a trace event); otherwise its share is left out and said
so (covered < 100 %).  A server's reply and saturation are timed at its
clients, whose calls a tax every process pays (MACHINE_WIDE) slows too:
where the sweep counted them (the tax's sweep hooks, COUNT_CLIENTS: clients.csv and
clients_by_call.csv) the prediction adds the clients' calls a unit times
their own mix of the tax.  Writes SWEEP/prediction-<tax run>.csv and
prints the table.  NOTES.md, "The prediction", says why the mix of the
point, and "A server's client pays a machine's taxes" why the clients.

With --measured DIR (the same sweep run under one tax, e.g. a make ab's B
side) and --tax NAME, the table also holds the measured time of a unit
of work there and how far the prediction lies from it.
"""
import pathlib
import statistics
import sys

from lablib import cli, results

PREDICTION_COLUMNS = ("workload", "measure", "tax", "base_s", "calls_per_unit",
                      "added_ns_per_call", "client_calls_per_unit", "client_added_ns_per_call",
                      "predicted_s", "change_pct", "covered_pct", "uniform", "measured_s",
                      "measured_change_pct", "error_pct")
# The taxes every process pays (the others: only the taxed work and what
# it starts), and the measures timed at a server's clients, whose calls
# pay those too.
MACHINE_WIDE = {"trace", "bpftrace", "audit-one", "audit-all", "pti", "retpoline"}
CLIENT_TIMED = {"reply", "saturation"}
# A tax is one figure for every call where its figures spread less than
# this many ns, or this share of their median.
UNIFORM_NS = 1.0
UNIFORM_SHARE = 0.01


def untaxed_rows(sweep, name="raw.csv"):
    """The rows of @name (raw.csv, or clients.csv) at the untaxed point
    (loops 0 or ns 0), by measure."""
    out = {}
    for r in results.read_csv(sweep / name, ("workload", "measure", "units", "seconds",
                                              "syscalls")):
        if (r.get("loops") or "0") in ("0", "") and (r.get("ns") or "0") in ("0", ""):
            out.setdefault((r["workload"], r["measure"]), []).append(r)
    if not out:
        raise ValueError(f"{sweep}/{name} has no row at loops 0 or ns 0: no untaxed point")
    return out


def clients(sweep):
    """({(workload, measure): the clients' calls a unit of work}, {nr:
    share}) of a sweep that counted its clients (COUNT_CLIENTS), or
    ({}, {})."""
    if not (sweep / "clients.csv").exists():
        return {}, {}
    calls = {key: statistics.median(int(r["syscalls"]) / int(r["units"]) for r in raw)
             for key, raw in untaxed_rows(sweep, "clients.csv").items()}
    return calls, mix(sweep, "clients_by_call.csv")


def mix(sweep, name="by_call.csv"):
    """{nr: share} of the untaxed point's calls by number (by_call.csv, or
    the clients' clients_by_call.csv)."""
    path = sweep / name
    if not path.exists():
        raise ValueError(f"{sweep} has no {name}: the sweep ran with a delay module "
                         "that does not count calls by number (make module, then sweep again)")
    counts = {}
    for r in results.read_csv(path, ("loops", "ns", "nr", "calls")):
        if (r["loops"] or "0") == "0" and (r["ns"] or "0") == "0":
            counts[int(r["nr"])] = counts.get(int(r["nr"]), 0) + int(r["calls"])
    total = sum(counts.values())
    if not total:
        raise ValueError(f"{path}: no call counted at the untaxed point")
    return {nr: n / total for nr, n in counts.items()}


def taxes(tax_summary):
    """{tax: ({nr: added_ns}, uniform or None)}: the exact figures of each
    tax, and the one figure of a tax that is the same for every call."""
    out = {}
    for r in tax_summary["rows"]:
        if r["tax"] == tax_summary.get("base", "none") or not r["exact"]:
            continue
        out.setdefault(r["tax"], {})[int(r["nr"])] = float(r["added_ns"])
    uniform = {}
    for tax, cells in out.items():
        v = list(cells.values())
        mid = statistics.median(v)
        uniform[tax] = mid if max(v) - min(v) < max(UNIFORM_NS, UNIFORM_SHARE * abs(mid)) \
            else None
    return {t: (cells, uniform[t]) for t, cells in out.items()}


def unit_time(raw):
    """The median window's seconds per unit of work."""
    return statistics.median(float(r["seconds"]) / int(r["units"]) for r in raw)


def measured(rows, taxed, tax):
    """@rows with the measured time of sweep folder @taxed (run under
    @tax) beside their prediction; the other taxes' rows dropped."""
    got = {key: unit_time(raw) for key, raw in untaxed_rows(pathlib.Path(taxed)).items()}
    out = [r for r in rows if r["tax"] == tax]
    if not out:
        raise ValueError(f"the tax run has no exact figure of the tax '{tax}'")
    for r in out:
        m = got.get((r["workload"], r["measure"]))
        if m is None:
            raise ValueError(f"{taxed} has no {r['workload']} {r['measure']} at its "
                             "untaxed point")
        r["measured_s"] = m
        r["measured_change_pct"] = 100 * (m - r["base_s"]) / r["base_s"]
        r["error_pct"] = 100 * (r["predicted_s"] - m) / m
    return out


def mixed(shares, cells, uniform):
    """(ns a call, share covered) of a tax's figures @cells (@uniform for a
    number it did not time, if one figure) over the calls' mix @shares."""
    added = covered = 0.0
    for nr, share in shares.items():
        ns = cells.get(nr, uniform)
        if ns is not None:
            added += share * ns
            covered += share
    return added, covered


def predict(sweep, tax_dir):
    sweep, tax_dir = pathlib.Path(sweep), pathlib.Path(tax_dir)
    shares = mix(sweep)
    client_calls, client_shares = clients(sweep)
    per_tax = taxes(results.read_json(tax_dir / "summary.json"))
    rows = []
    for (workload, measure), raw in untaxed_rows(sweep).items():
        base = unit_time(raw)
        calls = statistics.median(int(r["syscalls"]) / int(r["units"]) for r in raw)
        for tax, (cells, uniform) in per_tax.items():
            added, covered = mixed(shares, cells, uniform)
            extra = client_added = None
            if tax in MACHINE_WIDE and measure in CLIENT_TIMED:
                extra = client_calls.get((workload, measure))
                if extra is not None:
                    client_added = mixed(client_shares, cells, uniform)[0]
            predicted = base + (calls * added + (extra or 0) * (client_added or 0)) * 1e-9
            rows.append({"workload": workload, "measure": measure, "tax": tax,
                         "base_s": base, "calls_per_unit": calls,
                         "added_ns_per_call": added, "client_calls_per_unit": extra,
                         "client_added_ns_per_call": client_added, "predicted_s": predicted,
                         "change_pct": 100 * (predicted - base) / base,
                         "covered_pct": 100 * covered, "uniform": uniform is not None})
    return rows


def table(rows, tax_dir):
    check = "measured_s" in rows[0] if rows else False
    out = [f"predicted under the taxes of {tax_dir} (time of a unit of work):",
           f"{'workload':<10}{'measure':<12}{'tax':<24}{'base':>12}{'calls':>10}"
           f"{'ns/call':>10}{'predicted':>12}{'change':>9}{'covered':>9}"
           + (f"{'measured':>12}{'change':>9}{'error':>9}" if check else "")]
    for r in rows:
        line = (f"{r['workload']:<10}{r['measure']:<12}{r['tax']:<24}{r['base_s']:>12.6g}"
                f"{r['calls_per_unit']:>10.0f}{r['added_ns_per_call']:>10.1f}"
                f"{r['predicted_s']:>12.6g}{r['change_pct']:>+8.2f}%"
                f"{r['covered_pct']:>8.1f}%")
        if check:
            line += (f"{r['measured_s']:>12.6g}{r['measured_change_pct']:>+8.2f}%"
                     f"{r['error_pct']:>+8.2f}%")
        out.append(line)
    return "\n".join(out) + "\n"


def add_args(p):
    p.add_argument("sweep", metavar="SWEEP", help="a workload sweep's result folder")
    p.add_argument("tax", metavar="TAX", help="a tax run's result folder (make tax)")
    p.add_argument("--measured", metavar="DIR",
                   help="the same sweep run under one tax: its time beside the prediction")
    p.add_argument("--tax", dest="tax_name", metavar="NAME",
                   help="the tax DIR ran under (with --measured)")
    cli.add_json_option(p)


def work(args):
    if bool(args.measured) != bool(args.tax_name):
        raise cli.BadInput("--measured DIR and --tax NAME go together")
    rows = predict(args.sweep, args.tax)
    name = f"prediction-{pathlib.Path(args.tax).resolve().name}.csv"
    if args.measured:
        rows = measured(rows, args.measured, args.tax_name)
        name = f"prediction-{pathlib.Path(args.tax).resolve().name}-{args.tax_name}.csv"
    results.write_csv(pathlib.Path(args.sweep) / name, PREDICTION_COLUMNS, rows)
    cli.show(args, rows, table(rows, args.tax), args.sweep, [name])


main = cli.command(__doc__, "python -m lablib.tax.predict results/latest-grep results/latest-tax",
                   add_args, work)


if __name__ == "__main__":
    sys.exit(main())
