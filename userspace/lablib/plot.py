"""The lab's plot style.  matplotlib is imported on the first call, with
the Agg backend and, unless MPLCONFIGDIR is set, a cache folder that is
writable even for root in a VM or a read-only home."""
import math
import os
import pathlib
import tempfile

_plt = None


def pyplot():
    """matplotlib.pyplot, imported and set up once."""
    global _plt
    if _plt is None:
        if not os.environ.get("MPLCONFIGDIR"):
            os.environ["MPLCONFIGDIR"] = os.path.join(tempfile.gettempdir(),
                                                      f"lab-matplotlib-{os.getuid()}")
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        _plt = plt
    return _plt


def figure(ncols=1, width=7.0, height=4.5, **kwargs):
    """(fig, axes) of a new figure: one Axes for ncols 1, else a list."""
    fig, axes = pyplot().subplots(1, ncols, figsize=(width, height), dpi=120,
                                  squeeze=False, **kwargs)
    axes = list(axes[0])
    return fig, axes[0] if ncols == 1 else axes


def headline(fig, title, meta, width=75):
    """@title over the whole figure with, under it, where the result was
    measured (results.describe of @meta: kernel, CPUs, clock), wrapped at
    @width characters: the subtitle every experiment's picture carries."""
    import textwrap

    from . import results
    fig.suptitle(title + "\n" + "\n".join(textwrap.wrap(results.describe(meta), width)),
                 fontsize=9)


def log_bins(lo, hi, n=60):
    """@n + 1 histogram bin edges evenly spaced on a log scale from @lo to
    @hi (both > 0; one bin around @lo if @hi is not above it): for times
    with a long tail, drawn on a log x axis."""
    if hi <= lo:
        lo, hi = lo / 1.1, lo * 1.1
    return [lo * (hi / lo) ** (i / n) for i in range(n + 1)]


# A log axis ends this factor beyond the data at each end.
MARGIN = 1.25


def short_number(v):
    """A tick label of at most five characters: 20, 5,000, 50k, 2M."""
    for scale, start, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e3, 1e4, "k")):
        if abs(v) >= start:
            return f"{v / scale:,.3g}{suffix}"
    return f"{v:,.10g}"


def log_axis(ax, axis="x", lo=None, hi=None):
    """Put @axis ("x" or "y") of @ax on a log scale whose ticks a reader
    can read: short numbers (20, 5,000, 50k, 2M), at 1, 2 and 5 of each decade over
    up to three decades, at each decade over more, at most about eight.
    With @lo and @hi (> 0, the data's range) the axis spans them with a
    margin of a factor 1.25 at each end (a marker at @hi is drawn whole),
    and at least a factor 6.25, so that two ticks are labelled."""
    from matplotlib import ticker
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    # What is drawn, margins included, decides how dense the labels are.
    decades = math.log10(hi / lo) + 2 * math.log10(MARGIN) if lo and hi else 3
    a.set_major_locator(ticker.LogLocator(subs=(1, 2, 5) if decades <= 3 else (1,),
                                          numticks=8))
    a.set_major_formatter(ticker.FuncFormatter(lambda v, _: short_number(v)))
    a.set_minor_formatter(ticker.NullFormatter())
    if lo and hi:
        mid, half = math.sqrt(lo * hi), max(MARGIN * math.sqrt(hi / lo), 2.5)
        (ax.set_xlim if axis == "x" else ax.set_ylim)(mid / half, mid * half)


def save(fig, ax, path):
    """Grid and legend (if anything is labelled) on @ax, tight layout,
    write @path atomically (format from its suffix), close @fig."""
    plt = pyplot()
    path = pathlib.Path(path)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png")
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if tmp.exists():
            tmp.unlink()
