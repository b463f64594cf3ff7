"""Fixed-width text tables, the analysers' report.txt: each column's title
and width written once, for the header and every row alike; Markdown tables
(tabulate), for a README; and the one way a report writes a figure (num)."""
import math


def table(columns, rows, notes=()):
    """The lines of a table, joined by newlines.  @columns: (title, spec)
    pairs, spec a format spec of width and alignment ("<22", ">12"); a
    plain string in @columns is put as it is between its neighbours, in the
    header and in every row (a gap: "  ").  @rows: one sequence of values a
    row, one for each (title, spec) column; a value that is not a string is
    formatted with str().  @notes: lines after the rows."""
    def line(values):
        values = iter(values)
        return "".join(c if isinstance(c, str) else format(str(next(values)), c[1])
                       for c in columns)
    head = line(c[0] for c in columns if not isinstance(c, str))
    return "\n".join([head, *(line(r) for r in rows), *notes])


def markdown(headers, rows):
    """A Markdown table (GitHub's pipes), its lines joined by newlines:
    @headers, then @rows, each value as str() writes it (a figure already
    formatted is not read as a number again).  tabulate is imported here:
    the analysers that write no Markdown do not need it."""
    from tabulate import tabulate
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def duration(seconds):
    """A run's length as progress lines write it (lab sweep's, the tax
    experiment's): "4m05s", "2h07m"."""
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def num(v, digits=3):
    """@v as a report's tables and sentences write a figure: "-" when it
    is unknown, yes or no for a flag, a whole number (or one of 10**@digits
    and more) without places and with thousands separators, anything else
    to @digits significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if not math.isfinite(v):
        return str(v)
    if abs(v) >= 10 ** digits or v == int(v):
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"
