"""What workloads/sweep.sh prints while it runs, from the lablib code that
lablib.sweep.analyse uses on the host, so that the two agree:

  python -m lablib.sweep.progress fit CALIBRATION_DIR
      the added latency of the calibrate folder's fit: ns per loop and the
      cost of entering the delay (lablib.experiments.calibration)
  python -m lablib.sweep.progress point RAW_CSV LOOPS NS
      the first measure of the rows of raw.csv at this point: mean and
      standard deviation of the seconds a unit of work took (raw.csv read
      by lablib.experiments.workloads, as lablib.sweep.analyse reads it)
  python -m lablib.sweep.progress clock RESULT_DIR
      the clock the result was measured on, from its meta.json: virtual or
      host (also where meta.json names none: hardware, an older lab)
  python -m lablib.sweep.progress columns
      the header of raw.csv: lablib's RAW_COLUMNS, the one list of them

A folder or file it cannot read is one line on stderr and exit status 1.
"""
import pathlib
import sys

from lablib import results, stats
from lablib.experiments import calibration, workloads


def fit(folder):
    _, summary = calibration.load(folder)
    slope, _ = calibration.ns_per_loop(summary, where=folder)
    return f"{slope:.4f} {calibration.entry_ns(summary):.1f}"


def point(raw, loops, ns):
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


def clock(folder):
    meta = results.read_meta(pathlib.Path(folder))
    return "virtual" if results.on_virtual_clock(meta) else "host"


def main(argv=None, prog=None):
    """Print what @argv (default sys.argv[1:]) asks for; the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = prog or "python -m lablib.sweep.progress"
    try:
        if len(argv) == 2 and argv[0] == "fit":
            print(fit(argv[1]))
        elif len(argv) == 4 and argv[0] == "point":
            print(point(*argv[1:]))
        elif len(argv) == 2 and argv[0] == "clock":
            print(clock(argv[1]))
        elif argv == ["columns"]:
            print(",".join(workloads.RAW_COLUMNS))
        else:
            print(__doc__.split("\n\n")[1], file=sys.stderr)
            return 2
    except (OSError, ValueError, KeyError, ZeroDivisionError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
