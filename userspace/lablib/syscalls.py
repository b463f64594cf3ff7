"""System calls by number: the delay module's stats/by_call and the
kernel's 64-bit table that names them.

stats/by_call is an array of unsigned 64-bit counts in the machine's byte
order: one for each number of the 64-bit table, then one for the calls of
no 64-bit number (modules/delay/README.md).  A sweep keeps a copy before
and after a timed window; their difference is the window's calls by
number.  Plain lists of ints, no numpy: a sweep in the lab's VM imports
this, where numpy's import alone took seconds of the emulator's time.
"""
import array
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = "arch/x86/entry/syscalls/syscall_64.tbl"
OTHER = "other"                 # the name of the last slot


def by_call(data):
    """The counts of one copy of stats/by_call (bytes or a path), a list."""
    if not isinstance(data, (bytes, bytearray)):
        data = pathlib.Path(data).read_bytes()
    if not data or len(data) % 8:
        raise ValueError(f"stats/by_call holds 8-byte counts, not {len(data)} bytes")
    counts = array.array("Q")           # unsigned, 8 bytes, the machine's order
    counts.frombytes(data)
    return counts.tolist()


def window(before, after):
    """The calls by number between two copies; a count that went back
    (the module was loaded again between them) is refused."""
    b, a = by_call(before), by_call(after)
    if len(a) != len(b):
        raise ValueError(f"two copies of stats/by_call of {len(b)} and {len(a)} counts")
    diff = [x - y for x, y in zip(a, b)]
    if min(diff) < 0:
        raise ValueError("stats/by_call went back between its two copies: "
                         "the module was loaded again")
    return diff


def table(tree=None):
    """{number: name} of the 64-bit table's calls (abi common or 64),
    from a kernel tree: @tree, else the lab's source."""
    tree = pathlib.Path(tree) if tree else ROOT / "build/src/linux-source-6.12"
    names = {}
    for line in (tree / TABLE).read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#") and fields[1] in ("common", "64"):
            names[int(fields[0])] = fields[2]
    return names


def named(counts, names):
    """{name: count} of the nonzero counts, by number; a number the table
    does not name is kept as its number, the last slot as OTHER."""
    out = {}
    last = len(counts) - 1
    for nr, n in enumerate(counts):
        if n:
            out[OTHER if nr == last else names.get(nr, str(nr))] = int(n)
    return out


def numbers(names, table_=None):
    """The numbers of a comma-separated list of names (or numbers) of the
    64-bit table, in the order given; an unknown name is a ValueError."""
    table_ = table() if table_ is None else table_
    by_name = {v: k for k, v in table_.items()}
    out = []
    for item in names.split(","):
        if item.isdigit() and int(item) in table_:
            out.append(int(item))
        elif item in by_name:
            out.append(by_name[item])
        else:
            raise ValueError(f"{item!r} is no call of the 64-bit table")
    if len(set(out)) != len(out):
        raise ValueError(f"a call is listed twice in {names!r}")
    return out


def window_rows(before, after, prefix):
    """The CSV lines "PREFIX,nr,calls" of the nonzero counts between two
    copies of stats/by_call (the last slot, the calls of no 64-bit number,
    under its own number: the table's size)."""
    return [f"{prefix},{nr},{n}" for nr, n in enumerate(window(before, after)) if n]


def windows(folder):
    """A sweep folder's calls by number: each point's pair of copies of
    stats/by_call that the guest kept (by_call/N.before and N.after, and
    by_call/index.csv's line "N,CSV,LOOPS,NS" for them) into the rows
    "loops,ns,nr,calls" of CSV (by_call.csv, clients_by_call.csv) in the
    folder, in the order the points ran; by_call/ then goes.  Nothing
    where the module counts no calls by number."""
    folder = pathlib.Path(folder)
    raw = folder / "by_call"
    if not raw.is_dir():
        return
    index = raw / "index.csv"
    rows = {}
    for line in (index.read_text().splitlines() if index.is_file() else []):
        n, csv_name, loops, ns = line.split(",")
        if csv_name not in ("by_call.csv", "clients_by_call.csv"):
            raise ValueError(f"{index}: {csv_name} is no file of calls by number")
        rows.setdefault(csv_name, []).extend(
            window_rows(raw / f"{n}.before", raw / f"{n}.after", f"{loops},{ns}"))
    for csv_name, lines in rows.items():
        (folder / csv_name).write_text("loops,ns,nr,calls\n" + "".join(
            f"{line}\n" for line in lines))
    for f in raw.iterdir():
        f.unlink()
    raw.rmdir()


def main(argv=None):
    """python -m lablib.syscalls numbers NAMES: the numbers, comma-separated."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m lablib.syscalls", description=main.__doc__)
    sub = p.add_subparsers(dest="what", required=True)
    n = sub.add_parser("numbers", help="the numbers of names of the 64-bit table")
    n.add_argument("names", help="names or numbers of the 64-bit table, comma-separated")
    args = p.parse_args(argv)
    try:
        print(",".join(str(n) for n in numbers(args.names)))
    except (ValueError, OSError) as e:
        p.exit(2, f"{p.prog}: {e}\n")


if __name__ == "__main__":
    main()
