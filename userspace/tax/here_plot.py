"""tax.png of a run.sh --here folder (lablib.tax.here's summary): a
panel per call, each tax's added ns on this machine's clock drawn with its
interval, beside the virtual clock's figure.  A tax whose interval holds
0 is drawn hollow and grey: what the machine's noise hides."""
import math

from lablib import plot

BASE = "none"
# The x axis is linear within this many ns of 0 and logarithmic beyond:
# an interval around 0 is drawn as it is, a strace stop beside it.
LINEAR_NS = 10.0
COLUMNS = 3


def _rows_of(s, nr):
    return [r for r in s["rows"] if r["nr"] == nr and r["tax"] != BASE]


def _untaxed(s, nr):
    return next((r for r in s["rows"] if r["nr"] == nr and r["tax"] == BASE
                 and r["phase"] == "base"), None)


def limits(s):
    """The x axis's ends, the same on every panel: every interval, median
    and virtual figure, and 0, inside."""
    v = [x for r in s["rows"] if r["tax"] != BASE
         for x in (r["added_ns"], r["added_low_ns"], r["added_high_ns"], r["virtual_ns"])
         if x is not None]
    lo, hi = min(v + [0.0]), max(v + [0.0])
    return (-2 * LINEAR_NS if lo > -LINEAR_NS else 2 * lo,
            2 * LINEAR_NS if hi < LINEAR_NS else 1.8 * hi)


def panel(ax, s, nr):
    """One call's panel on @ax."""
    from matplotlib import ticker
    rows = _rows_of(s, nr)
    for i, r in enumerate(rows):
        hollow = r["includes_zero"]
        colour = "grey" if hollow else "tab:blue"
        lo, hi = r["added_low_ns"], r["added_high_ns"]
        if lo is not None:
            ax.plot([lo, hi], [i, i], color=colour, linewidth=3, alpha=0.6,
                    solid_capstyle="butt", label="95 % interval" if i == 0 else None)
            for x in (lo, hi):
                ax.plot([x, x], [i - 0.2, i + 0.2], color=colour, linewidth=1)
        ax.plot(r["added_ns"], i, "o", markersize=5, color=colour,
                markerfacecolor="white" if hollow else colour,
                label=None if i else "host clock: median over the rounds")
        if r["virtual_ns"] is not None:
            ax.plot(r["virtual_ns"], i, "x", color="black", markersize=6,
                    label="virtual clock (instructions)" if not any(
                        q["virtual_ns"] is not None for q in rows[:i]) else None)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xscale("symlog", linthresh=LINEAR_NS, linscale=0.5)
    ax.set_xlim(*limits(s))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: plot.short_number(v)))
    ax.set_yticks(range(len(rows)), [r["tax"] + (" †" if r["phase"] == "audit" else "")
                                     for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    base = _untaxed(s, nr)
    title = f"{base['call'] if base else nr} ({nr})"
    if base:
        lo, hi = base["median_low_ns"], base["median_high_ns"]
        title += f": untaxed {base['median_ns']:,.1f} ns"
        if lo is not None:
            title += f" [{lo:,.1f}, {hi:,.1f}]"
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("ns added per call (linear within ±10 ns, log beyond)", fontsize=7)


def notes(s):
    """The lines under the panels: the boot-only taxes, those skipped, the
    hollow marks' meaning."""
    out = ["hollow, grey: the interval holds 0 (the tax is within this machine's noise)"]
    if any(r["phase"] == "audit" for r in s["rows"]):
        shift = ", ".join(f"{a['call']} {a['shift_ns']:+,.0f}" for a in s["audit_shift"])
        out.append("†: in rounds of their own, after the others, against their own untaxed "
                   "runs; audit left its context in every process started since: "
                   f"untaxed {shift} ns")
    for b in s["boot_only"]:
        virt = "" if b["virtual_min_ns"] is None else \
            f"; virtual clock +{b['virtual_min_ns']:,.0f}" + (
                "" if b["virtual_max_ns"] == b["virtual_min_ns"]
                else f" to +{b['virtual_max_ns']:,.0f}") + " ns"
        out.append(f"{b['tax']}: a boot option ({b['option']}), not measured here{virt}")
    out += [f"{k['tax']}: not measured: {k['reason']}" for k in s["skipped"]]
    return out


def draw(s, meta, path):
    """Write tax.png of summary @s to @path."""
    plt = plot.pyplot()
    calls = s["calls"]
    ncols = min(COLUMNS, len(calls))
    nrows = math.ceil(len(calls) / ncols)
    taxes = max(len(_rows_of(s, nr)) for nr in calls)
    lines = notes(s)
    top_h = (0.26 * taxes + 1.3) * nrows + 1.3
    low_h = 0.15 * len(lines) + 0.2
    fig = plt.figure(figsize=(5.2 * ncols, top_h + low_h), dpi=120, layout="constrained")
    top, low = fig.subfigures(2, 1, height_ratios=[top_h, low_h])
    axes = top.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, nr in zip(axes, calls):
        panel(ax, s, nr)
    for ax in axes[len(calls):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        top.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=7)
    low.text(0.01, 0.98, "\n".join(lines), fontsize=7, va="top", ha="left")
    st = meta.get("settings") or {}
    runs = s.get("runs") or {}
    where = f"{st.get('cpu_model') or '?'}" + (f" ({st['hypervisor']} guest)"
                                               if st.get("hypervisor") else "")
    if runs.get("load_min") is not None:
        where += f", load {runs['load_min']:.1f}-{runs['load_max']:.1f}"
    plot.headline(top, "what each tax adds to a system call on this machine's kernel and "
                  f"CPU (host clock, no VM)\n{where}, {s['rounds']} rounds", meta, width=110)
    fig.savefig(path)
    plt.close(fig)
