"""A point's line while a sweep runs: the time a unit of work took there,
from the lablib code that lablib.sweep.analyse uses, so that the two
agree (lab sweep adds it to the guest's line of each point)."""
from lablib import stats
from lablib.experiments import workloads


def point(raw, loops, ns):
    """The first measure of @raw's rows at this point (@loops or @ns, the
    other ''): mean and standard deviation of the seconds a unit of work
    took."""
    loops, ns = (int(v) if v else None for v in (loops, ns))
    rows = [r for r in workloads.read_raw(raw) if (r["loops"], r["ns"]) == (loops, ns)]
    if not rows:
        return "no runs"
    measure = rows[0]["measure"]
    per_unit = [r["seconds"] / r["units"] for r in rows
                if r["measure"] == measure and r["units"] > 0]
    if not per_unit:
        return f"{measure}: no unit of work done"
    s = stats.summary(per_unit)
    # In a unit that keeps four digits: an Apache reply is some 56 us on
    # the virtual clock, a build minutes on hardware.
    scale, unit = next((f, u) for f, u in ((1, "s"), (1e-3, "ms"), (1e-6, "us"))
                       if abs(s["mean"]) >= f or u == "us")
    return (f"{measure} {s['mean'] / scale:.4g} {unit} per unit +- "
            f"{s['stddev'] / scale:.2g} (n={s['n']})")
