#!/usr/bin/env python3
"""What workloads/sweep.sh prints while it runs, from the lablib code that
analyse.py uses on the host, so that the two agree:

  progress.py fit CALIBRATION_DIR
      the added latency of the calibrate folder's fit: ns per loop and the
      cost of entering the delay (lablib.calibration)
  progress.py point RAW_CSV LOOPS NS
      the first measure of the rows of raw.csv at this point: mean and
      standard deviation of the seconds a unit of work took (lablib.stats)
  progress.py clock RESULT_DIR
      the clock the result was measured on, from its meta.json: virtual or
      host (also where meta.json names none: hardware, an older lab)
  progress.py parts POINTS
      a filter for the output of a split sweep's parts (sweep-vm.sh --vms):
      passes every line on and, after each line in which a part says it
      finished a point ('part K/N: [i/n] ... ETA 1m30s'), the whole sweep's
      progress: points done of POINTS, the time since the filter started
      and the time left: the longest of the parts' own estimates, each
      less the time since it was made ('at least' while a part has
      finished no point: its boot and staging are not known in advance)

A folder or file it cannot read is one line on stderr and exit status 1.
"""
import csv
import pathlib
import re
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "userspace"))
from lablib import calibration, results, stats  # noqa: E402


def fit(folder):
    _, summary = calibration.load(folder)
    slope, _ = calibration.ns_per_loop(summary, where=folder)
    return f"{slope:.4f} {calibration.entry_ns(summary):.1f}"


def point(raw, loops, ns):
    rows = [r for r in csv.DictReader(open(raw))
            if r["loops"] == loops and r.get("ns", "") == ns]
    if not rows:
        return "no runs"
    measure = rows[0]["measure"]
    per_unit = [float(r["seconds"]) / float(r["units"])
                for r in rows if r["measure"] == measure]
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


PART_POINT = re.compile(r"part (\d+)/(\d+): \[(\d+)/\d+\]")
ETA = re.compile(r"ETA (?:(\d+)h(\d+)m|(\d+)m(\d+)s)")


def duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def parts(total, lines=sys.stdin, out=sys.stdout, clock=time.monotonic):
    total = int(total)
    start = clock()
    done, ends = {}, {}
    for line in lines:
        out.write(line)
        m = PART_POINT.search(line)
        if m:
            now = clock()
            done[m.group(1)] = int(m.group(3))
            e = ETA.search(line, m.end())
            if e:
                h, hm, m_, s = (int(g) if g else 0 for g in e.groups())
                ends[m.group(1)] = now + h * 3600 + hm * 60 + m_ * 60 + s
            n = sum(done.values())
            left = max((t - now for t in ends.values()), default=0)
            some = "at least " if len(done) < int(m.group(2)) else ""
            out.write(f"sweep-vm.sh: the sweep: {n} of {total} points; elapsed "
                      f"{duration(now - start)}, ETA {some}{duration(max(left, 0))}\n")
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
