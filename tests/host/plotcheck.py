"""What a reader needs of the lab's plots, checked on the figures the
analysers draw: lablib.plot.save is wrapped so that each figure is
described (axes, scales, the tick labels a reader sees, legend, lines)
before it is closed."""
import itertools
import math
import pathlib


from lablib import plot

# More labelled ticks than this on one axis is a wall of text.
MAX_TICKS = 25


def _labels(ax, axis):
    """The tick labels of @axis ("x" or "y") of @ax a reader sees: drawn,
    not empty, at a tick inside the view."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    out = []
    for label in [*a.get_majorticklabels(), *a.get_minorticklabels()]:
        pos = label.get_position()[0 if axis == "x" else 1]
        if label.get_visible() and label.get_text() and lo <= pos <= hi:
            out.append(label)
    return out


def _overlaps(labels, renderer, dpi):
    """Pairs of tick labels on top of each other (unreadable): level ones
    whose boxes overlap; slanted ones (rotated x labels, whose boxes
    overlap anyway) closer along the axis than their line height allows."""
    slanted = [lb for lb in labels if lb.get_rotation() % 180]
    if slanted:
        xs = sorted((lb.get_window_extent(renderer).x1, lb) for lb in slanted)
        return [(a.get_text(), b.get_text()) for (xa, a), (xb, b) in zip(xs, xs[1:])
                if xb - xa < a.get_fontsize() * dpi / 72
                / math.sin(math.radians(a.get_rotation() % 180))]
    boxes = [(lb.get_text(), lb.get_window_extent(renderer)) for lb in labels]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
            if ba.overlaps(bb) and ba.width > 0 and bb.width > 0]


def describe(fig):
    """Per Axes of @fig: title, labels, scales, whether an axis is
    categorical (strings as data) or shared with another Axes, the tick
    labels seen, their overlaps, the legend's entries, how many lines and
    patches were drawn, the y limits and the highest y a line reaches."""
    import matplotlib.category
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        head = fig._suptitle.get_text() if fig._suptitle else ""
        d = {"title": ax.get_title(), "figure_title": head,
             "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
             "lines": len(ax.lines), "patches": len(ax.patches)}
        for axis, a in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _labels(ax, axis)
            d[f"{axis}scale"] = a.get_scale()
            shared = ax.get_shared_x_axes() if axis == "x" else ax.get_shared_y_axes()
            d[f"{axis}_shared"] = len(shared.get_siblings(ax)) > 1
            d[f"{axis}_categorical"] = isinstance(a.get_units(), matplotlib.category.UnitData)
            d[f"{axis}ticks"] = [lb.get_text() for lb in labels]
            d[f"{axis}_overlaps"] = (_overlaps(labels, renderer, fig.dpi)
                                     if len(labels) <= 4 * MAX_TICKS else ["too many"])
        # Points drawn with markers (not the error bars' caps), hollow (a
        # point the plot cannot vouch for) or filled.
        # Each run's dot (the host clock's, labelled "each run") is no point.
        marked = [ln for ln in ax.lines if ln.get_label() != "each run"
                  and ln.get_marker() not in (None, "", "None", " ", "_", "|")]
        d["runs_drawn"] = sum(len(ln.get_xdata()) for ln in ax.lines
                              if ln.get_label() == "each run")
        d["hollow_points"] = sum(len(ln.get_xdata()) for ln in marked
                                 if str(ln.get_markerfacecolor()) == "none")
        d["solid_points"] = sum(len(ln.get_xdata()) for ln in marked
                                if str(ln.get_markerfacecolor()) != "none")
        d["ylim"] = ax.get_ylim()
        ys = [y for ln in ax.lines for y in ln.get_ydata() if y == y]
        d["ydata_max"] = max(ys, default=None)
        legend = ax.get_legend()
        d["legend"] = [t.get_text() for t in legend.get_texts()] if legend else []
        out.append(d)
    return out


def record(monkeypatch):
    """{file name: describe(figure)} of every figure lablib.plot.save
    writes from now on in this test (the files are still written)."""
    figures = {}
    real_save, plt = plot.save, plot.pyplot()
    real_close = plt.close

    def save(fig, ax, path):
        monkeypatch.setattr(plt, "close", lambda *a, **k: None)
        try:
            real_save(fig, ax, path)
        finally:
            monkeypatch.setattr(plt, "close", real_close)
        figures[pathlib.Path(path).name] = describe(fig)
        real_close(fig)

    monkeypatch.setattr(plot, "save", save)
    return figures


def assert_readable(axes):
    """Every Axes described in @axes: numbers on both axes (no category
    per value), between 2 and MAX_TICKS labelled ticks on each (or none on
    an axis shared with another Axes), no two tick labels on top of each
    other, axis labels, something drawn."""
    for i, d in enumerate(axes):
        where = f"axes {i} ({d['title']!r})"
        for axis in ("x", "y"):
            assert not d[f"{axis}_categorical"], f"{where}: {axis} is categorical"
            n = len(d[f"{axis}ticks"])
            if n == 0 and d[f"{axis}_shared"]:
                continue        # labelled on the Axes it shares this axis with
            assert 2 <= n <= MAX_TICKS, f"{where}: {n} labelled {axis} ticks"
            assert not d[f"{axis}_overlaps"], f"{where}: {axis} labels overlap: " \
                f"{d[f'{axis}_overlaps'][:3]}"
        assert d["ylabel"] or i > 0, f"{where}: no y label"
        assert d["xlabel"] or d["xticks"], f"{where}: no x label"
        assert d["lines"] + d["patches"] > 0, f"{where}: nothing drawn"
