"""What every analysis script of the lab does around its real work: check
the argument count against the usage line of its docstring, turn the
expected failures into one line on stderr and an exit status, and save a
matplotlib figure the same way everywhere."""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported for the scripts)


def run(doc, argv, nargs, work):
    """Call work(*argv[1:]); 2 for a wrong count, 1 for a bad input."""
    prog = argv[0].rsplit("/", 1)[-1].removesuffix(".py")
    if len(argv) != nargs + 1:
        print(doc.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        return work(*argv[1:]) or 0
    except (OSError, ValueError, KeyError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1


def save(fig, ax, path):
    """Grid, legend, tight layout, write, close."""
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
