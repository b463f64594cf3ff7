"""The square wave in Python, the way a first attempt writes it: toggle,
time.sleep(half a period), again.  It records what the C tool
(squarewave --mode nanosleep|rt) records, in the same files: edges.csv
(freq_hz,edge,t_ns, CLOCK_MONOTONIC) and meta.json in a new result
folder, so lablib.rtcompare.analyse reads all three implementations
alike."""
import json
import os
import pathlib
import shutil
import signal
import sys
import time

from lablib import cli, lists, results

MODULE = "lablib.rtcompare.squarewave"
MAX_FREQ = 1_000_000


def wave(freq, periods, max_seconds):
    """Edge times (ns) of one frequency: up to 2 x @periods edges."""
    half = 0.5 / freq
    now = time.monotonic_ns
    deadline = now() + max_seconds * 1_000_000_000
    edges = []
    level = False
    for _ in range(2 * periods):
        time.sleep(half)
        t = now()
        level = not level
        edges.append(t)
        if t > deadline:
            break
    return edges


def add_args(p):
    p.add_argument("-f", "--freq", default="100,1000,10000", metavar="LIST",
                   help="frequencies in Hz (default 100,1000,10000)")
    p.add_argument("-n", dest="periods", type=int, default=500, metavar="N",
                   help="periods (2 edges each) per frequency (default 500)")
    p.add_argument("--seconds", type=int, default=2, metavar="S",
                   help="at most S seconds per frequency (default 2)")
    p.add_argument("-C", "--cpu", type=int, default=None, metavar="N",
                   help="pin to CPU N (default: not pinned)")
    p.add_argument("-o", "--output", default="results", metavar="DIR",
                   help="parent of the result folder (default results)")
    p.add_argument("--name", default=None, help="the result folder's name")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def bad_value(args):
    """What is wrong with the options, in one line, or None."""
    try:
        freqs = lists.parse_list(args.freq)
    except ValueError:
        freqs = []
    if not freqs or not all(1 <= f <= MAX_FREQ for f in freqs):
        return f"--freq wants frequencies from 1 to {MAX_FREQ} Hz, not {args.freq!r}"
    if not 2 <= args.periods <= 10_000_000:
        return f"-n wants a whole number from 2 to 10000000, not '{args.periods}'"
    if not 1 <= args.seconds <= 3600:
        return f"--seconds wants a whole number from 1 to 3600, not '{args.seconds}'"
    online = pathlib.Path(f"/sys/devices/system/cpu/cpu{args.cpu}/online")
    if args.cpu is not None and (args.cpu < 0 or args.cpu >= (os.cpu_count() or 1) or
                                 (online.exists() and online.read_text().strip() != "1")):
        return f"--cpu wants an online CPU, not '{args.cpu}'"
    return None


def lab(*args):
    """The lab helper's one line of output (lablib.results.lab); OSError
    with its message if it fails."""
    try:
        return results.lab(*args)
    except ValueError as e:
        raise OSError(str(e)) from None


def work(args, argv, prog):
    """Draw the waves into a new result folder whose meta.json records the
    command as [python, -m, MODULE, *@argv]; @prog starts the progress lines."""
    freqs = lists.parse_list(args.freq)
    if not os.access(results.LAB, os.X_OK):
        raise OSError(f"{results.LAB} is not built; run 'make userspace'")
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    folder = pathlib.Path(lab("begin", args.output, "squarewave",
                              *([args.name] if args.name is not None else [])))
    try:
        rows = []
        for f in freqs:
            edges = wave(f, args.periods, args.seconds)
            rows += [{"freq_hz": f, "edge": i, "t_ns": t} for i, t in enumerate(edges)]
            if not args.quiet:
                print(f"{prog}: python {f} Hz: {len(edges)} edges", file=sys.stderr)
        results.write_csv(folder / "edges.csv", ("freq_hz", "edge", "t_ns"), rows)
        # The C squarewave's settings, in its order: the options, then what
        # the mode made of them.
        settings = {
            "impl": "python", "mode": "python", "freqs_hz": freqs, "periods": args.periods,
            "max_seconds": args.seconds, "cpu": args.cpu, "trace_marker": False,
            "policy": "SCHED_OTHER", "priority": 0, "mlockall": False,
            "sleep": "time.sleep relative"}
        lab("meta", folder, "squarewave",
            *(f"{k}:={json.dumps(v)}" for k, v in settings.items()), "--",
            sys.executable, "-m", MODULE, *argv)
        # A named folder is a cell of a larger run: no latest- link.
        final = lab("commit", folder, *(["squarewave"] if args.name is None else []))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    print(final)
    return 0


def main(argv=None, prog=None):
    """Draw the waves @argv (default sys.argv[1:]) asks for; the exit status."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    argv = sys.argv[1:] if argv is None else list(argv)
    p = cli.parser(__doc__.split("\n\n")[0], f"python -m {MODULE} -f 100,500,1000 -n 200",
                   prog=prog or f"python -m {MODULE}")
    add_args(p)
    args = p.parse_args(argv)
    bad = bad_value(args)
    if bad:
        print(f"{p.prog}: {bad}", file=sys.stderr)
        return 2
    try:
        return work(args, argv, p.prog)
    except OSError as e:
        print(f"{p.prog}: error: {cli.message(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{p.prog}: stopped; nothing kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
