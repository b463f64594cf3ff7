"""The lab's plot style.  matplotlib is imported on the first call, with
the Agg backend and, unless MPLCONFIGDIR is set, a cache folder that is
writable even for root in a VM or a read-only home."""
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
