#!/usr/bin/env python3
"""What workloads/sweep.sh prints while it runs, from the lablib code that
analyse.py uses on the host, so that the two agree:

  progress.py fit CALIBRATION_DIR
      the added latency of the calibrate folder's fit: ns per loop and the
      cost of entering the delay (lablib.experiments.calibration)
  progress.py point RAW_CSV LOOPS NS
      the first measure of the rows of raw.csv at this point: mean and
      standard deviation of the seconds a unit of work took (raw.csv read
      by lablib.experiments.workloads, as analyse.py reads it)
  progress.py clock RESULT_DIR
      the clock the result was measured on, from its meta.json: virtual or
      host (also where meta.json names none: hardware, an older lab)
  progress.py parts POINTS
      a filter for the output of a sweep's VMs (run.sh): passes every line
      on and, after each line in which sweep.sh says it finished a point
      ('[i/n]', in a split sweep 'part K/N: [i/n]'), the whole sweep's
      progress: points done of POINTS, the host's time since the filter
      started and the time left, the longest of the parts' (see parts())

A folder or file it cannot read is one line on stderr and exit status 1.
"""
import pathlib
import re
import sys
import time

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


PART_POINT = re.compile(r"sweep\.sh: (?:part (\d+)/(\d+): )?\[(\d+)/(\d+)\]")


def duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def parts(total, lines=sys.stdin, out=sys.stdout, clock=time.monotonic):
    """The filter of 'progress.py parts'.  The times are the host's: a
    part's own elapsed and ETA are its guest's, which on the virtual clock
    pass as the guest executes, not as the host's do.  A line without a
    part is the one VM's of a serial sweep (part 1/1).  A part's time left
    is its wall time per point since its first point, times its points
    left, less the time since its last; a part with one point done has no
    estimate yet ('at least' the others').  A part that runs several
    workloads ('all') counts from 1 again for each: its points add up, and
    its points left are the current workload's (in one VM: the sweep's)."""
    total = int(total)
    start = clock()
    first, last, size, before = {}, {}, {}, {}
    for line in lines:
        out.write(line)
        m = PART_POINT.search(line)
        if m:
            now = clock()
            k, parts_n = m.group(1) or "1", int(m.group(2) or 1)
            i, n = int(m.group(3)), int(m.group(4))
            if k in last and i <= last[k][1] - before[k]:
                before[k] += size[k]
            before.setdefault(k, 0)
            done_k = before[k] + i
            first.setdefault(k, (now, done_k))
            last[k] = (now, done_k)
            size[k] = n
            done = sum(c for _, c in last.values())
            left = []
            for part, (t1, c1) in last.items():
                t0, c0 = first[part]
                if c1 > c0:
                    todo = total - c1 if parts_n == 1 else before[part] + size[part] - c1
                    left.append((t1 - t0) / (c1 - c0) * todo - (now - t1))
            eta = ""
            if left:
                some = "at least " if len(left) < parts_n else ""
                eta = f", ETA {some}{duration(max(max(left), 0))}"
            out.write(f"run.sh: the sweep: {done} of {total} points; elapsed "
                      f"{duration(now - start)}{eta}\n")
        out.flush()


def main(argv):
    try:
        if len(argv) == 2 and argv[0] == "fit":
            print(fit(argv[1]))
        elif len(argv) == 4 and argv[0] == "point":
            print(point(*argv[1:]))
        elif len(argv) == 2 and argv[0] == "clock":
            print(clock(argv[1]))
        elif len(argv) == 2 and argv[0] == "parts":
            parts(argv[1])
        else:
            print(__doc__.split("\n\n")[1], file=sys.stderr)
            return 2
    except (OSError, ValueError, KeyError, ZeroDivisionError) as e:
        print(f"progress.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
