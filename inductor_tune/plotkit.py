"""What every inspection figure shares: colours, axes, legends and the colour scale of ratios.

Renderers in ``plot``, ``plot_configs`` and ``plot_rules`` draw with these, so that a series has the
same colour everywhere and every N axis reads the same way.
"""

from __future__ import annotations

import collections
import math
import textwrap
from typing import Iterable, Sequence

# One color per series across every figure, so a reader learns them once.
COLORS = {
    "default": "#d62728",  # Inductor's own choice
    "best": "#1f77b4",  # best config found (verdict)
    "ceiling": "#7f7f7f",  # measured copy bandwidth
    "heuristic": "#2ca02c",  # distilled rules (validation records, or passed in by callers)
    "peer": "#9467bd",  # other libraries (passed in by callers)
    "quack": "#9467bd",
    "liger": "#8c564b",
    "trial": "#aec7e8",
    "failed": "#ff7f0e",
    "keep": "#d9d9d9",  # a rule that keeps Inductor's default
}
MARKERS = ("o", "s", "^", "D", "v", "P")
LINESTYLES = ("-", "--", ":", "-.")
RATIO_CMAP = "viridis"
# Past this many ticks the axis is labelled at powers of two when most N are none (random shapes of a
# gate run): labels at such N would print over each other.  With more ticks than MAX_DATA_TICKS, N that
# are no powers of two go unlabelled.
MAX_ODD_TICKS = 4
MAX_DATA_TICKS = 10
FAR_OUT = 3.0  # Tukey's far-out fence, in interquartile ranges (robust_top)


def short(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def log2_axis(ax, cols: Iterable[int], label: str = "N (reduction length, elements per row; log2 scale)") -> None:
    """A log2 N axis ticked at the data's N, or at powers of two when the data's N are too many to label."""
    ticks = sorted(set(cols))
    ax.set_xscale("log", base=2)
    ax.minorticks_off()
    ax.set_xlabel(label)
    if not ticks:
        return
    odd = sum(bool(n & (n - 1)) for n in ticks)
    if len(ticks) > MAX_ODD_TICKS and odd > len(ticks) // 2:
        lo, hi = ticks[0].bit_length() - 1, (ticks[-1] - 1).bit_length()
        step = max(1, -(-(hi - lo + 1) // 12))
        ticks = [2**k for k in range(lo, hi + 1, step)]
        ax.set_xticks(ticks, [short(n) for n in ticks])
        ax.set_xlim(ticks[0] / 1.2, ticks[-1] * 1.2)
        return
    # Non-powers of two between close powers of two print over each other: then only 2^k is labelled.
    crowded = len(ticks) > MAX_DATA_TICKS and any(b / a < 1.3 for a, b in zip(ticks, ticks[1:]))
    labels = ["" if crowded and n & (n - 1) else short(n) for n in ticks]
    rotate = len(ticks) > 6
    ax.set_xticks(ticks, labels, rotation=45 if rotate else 0, ha="right" if rotate else "center")


def split_by_rows(items) -> bool:
    """Whether some N was studied at several M (then M gets its own line; else M just varies along N)."""
    seen = collections.defaultdict(set)
    for it in items:
        seen[(getattr(it, "gpu", None), it.kernel, it.dtype, it.cols)].add(it.rows)
    return any(len(ms) > 1 for ms in seen.values())


def row_groups(items) -> list[tuple[int | None, list]]:
    if not split_by_rows(items):
        return [(None, list(items))]
    return [(m, [it for it in items if it.rows == m]) for m in sorted({it.rows for it in items})]


def kernel_order(kernel: str) -> tuple[str, int]:
    base, _, direction = kernel.rpartition("_")
    return base, 0 if direction == "fwd" else 1


def legend_below(ax, ncol: int = 2, title: str | None = None) -> None:
    # Below the plot area: a legend inside would hide points at one end of N or the other.
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=ncol, frameon=False,
              title=title, title_fontsize="small")


def finish_bandwidth(ax, cols, title: str, legend: bool, note: str | None = None):
    """Axes, title, grid and legend (``note``: its title; without a legend, a smaller part of the title)
    shared by the GB/s-vs-N figures."""
    log2_axis(ax, cols)
    ax.set_ylabel("bandwidth (GB/s, minimal traffic)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if legend:
        legend_below(ax, title="\n".join(textwrap.wrap(note, 90)) if note else None)
    elif note:
        # The width of a panel in a two-column figure of the report: wider lines run into the next panel.
        ax.text(0.5, -0.2, "\n".join(textwrap.wrap(note, 75)), transform=ax.transAxes, ha="center", va="top",
                fontsize="small")
    ax.set_title(title, fontsize="medium")
    return ax


def figure_legend(fig, axes, ncol: int = 3, rename=lambda label: label) -> None:
    """One legend above the panels of ``fig``: every distinct entry of ``axes`` (after ``rename``, which
    merges entries that differ per panel), in drawing order."""
    seen = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(rename(label), handle)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside upper center", ncol=ncol, fontsize="small",
                   frameon=False)


def empty(ax, text: str):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return ax


def int_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:g}")


def robust_top(values: Sequence[float], floor: float = 1.0, least: float = 1.25) -> float:
    """The top of a ratio colour scale: the largest value above ``floor`` that is no outlier.

    An outlier lies past Tukey's "far out" fence (third quartile + 3 interquartile ranges) of the log
    ratios above ``floor``; it is drawn in the top colour and its number says how far it goes, so one
    5x shape cannot press every 1.1-1.5x shape into the same colour.  The far fence, not the usual 1.5:
    on the recorded studies the inner fence also cut off whole clusters (softmax forward's five ~2x
    shapes in db/quack.sqlite), which are results, not outliers.
    """
    logs = sorted(math.log(v) for v in values if v is not None and math.isfinite(v) and v > floor)
    if not logs:
        return max(least, 2.0)
    q1, q3 = _quantile(logs, 0.25), _quantile(logs, 0.75)
    fence = q3 + FAR_OUT * (q3 - q1)
    return max(least, math.exp(max(v for v in logs if v <= fence)))


def _quantile(ordered: Sequence[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ratio_norm(values: Sequence[float], floor: float = 1.0):
    """A log colour scale from ``floor`` to ``robust_top(values)``; values beyond it take the top colour."""
    from matplotlib.colors import LogNorm

    return LogNorm(vmin=floor, vmax=robust_top(values, floor))


def ratio_colorbar(ax, mappable, values: Sequence[float], label: str, **kwargs):
    """A colour bar for ``ratio_norm``, with an arrow when some value lies beyond its top."""
    norm = mappable.norm
    beyond = any(v is not None and math.isfinite(v) and v > norm.vmax * (1 + 1e-9) for v in values)
    bar = ax.figure.colorbar(mappable, ax=ax, label=label, extend="max" if beyond else "neither", **kwargs)
    bar.set_ticks([t for t in (1, 1.1, 1.25, 1.5, 2, 3, 4, 6, 8) if norm.vmin <= t <= norm.vmax])
    bar.ax.yaxis.set_major_formatter(int_formatter())
    bar.ax.yaxis.set_minor_formatter(int_formatter())
    bar.ax.minorticks_off()
    return bar


def text_color(norm, value: float | None) -> str:
    """Black on the bright upper half of viridis, white on its dark lower half."""
    if value is None or not math.isfinite(value):
        return "black"
    return "black" if float(norm(value)) > 0.5 else "white"
