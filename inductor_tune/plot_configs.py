"""Launch config vs N: what the studies adopted and what Inductor picks, one parameter per panel.

A best config is *adopted* only where its verdict found it faster than Inductor's default beyond
noise; elsewhere Inductor's default stays in use, and the figure draws the default there.  Lines join
adopted configs of neighbouring shapes only, so no line suggests a config that was never adopted.
The graph flags and the mix-order split size (RSPLIT_SIZE) have panels of their own: turning mix-order
off replaces the main kernel by another one, a change the per-kernel fields cannot show.
"""

from __future__ import annotations

import math
from typing import Sequence

from .figdata import SlotChoice
from .plotkit import COLORS, LINESTYLES, MARKERS, empty, int_formatter, legend_below, log2_axis, row_groups

CONFIG_FIELDS = ("num_warps", "XBLOCK", "R0_BLOCK", "num_stages", "persistent", "RSPLIT_SIZE", "flags")
# The flags panel's rows, in the order of ``_flags_index``.
FLAG_STATES = ("Inductor's: split on,\nmix-order on", "mix-order off", "split off", "split off,\nmix-order off")
UNUSED = {"R0_BLOCK": "every config here is persistent", "num_stages": "every config here is persistent",
          "RSPLIT_SIZE": "no mix-order kernel here"}
ADOPTED = "adopted: best found, faster than the default beyond noise"
KEPT = "kept Inductor's default (no candidate beat it)"
OPEN = "best so far, no verdict yet (not adopted)"


def _flags_index(c: SlotChoice) -> int:
    return 2 * (not c.split_reductions) + (not c.mix_order_reduction)


def field_value(c: SlotChoice, field: str) -> float | None:
    """The value a panel plots for one config; None where the field does not apply to its main kernel."""
    if field == "persistent":
        return int(c.persistent)
    if field == "flags":
        return _flags_index(c)
    return getattr(c, field)


def plot_config_field(ax, choices: Sequence[SlotChoice], kernel: str, field: str, dtype: str = "bf16",
                      rows: int | None = None, legend: bool = False):
    """One launch parameter of the main kernel vs N: the adopted config and Inductor's default (crosses).

    Filled markers: adopted best configs, joined only where neighbouring shapes both adopted one.
    Rings around the default's cross: the best candidate did not beat the default, which stays in use.
    Grey hollow markers: a study without a verdict yet (its best candidate is adopted nowhere).
    """
    sel = [c for c in choices if c.kernel == kernel and c.dtype == dtype and (rows is None or c.rows == rows)]
    if not sel:
        return empty(ax, f"no {kernel} configs")
    if all(field_value(c, field) is None for c in sel):
        return empty(ax, f"{kernel}: {field}\nunused: {UNUSED.get(field, 'no value recorded')}")
    for mi, (m, group) in enumerate(row_groups(sel)):
        tag = f" M={m}" if m is not None else ""
        _draw_group(ax, group, field, tag, MARKERS[mi % len(MARKERS)], LINESTYLES[mi % len(LINESTYLES)], mi)
    cols = [c.cols for c in sel]
    log2_axis(ax, cols, label="N (log2 scale)")
    ax.tick_params(axis="x", labelsize="small")
    # Every panel of a kernel spans the same N, whichever shapes the field applies to; the rings around
    # the defaults are wider than matplotlib's own margin.
    ax.set_xlim(min(cols) / 1.2, max(cols) * 1.2)
    ax.margins(y=0.1)
    _y_axis(ax, field)
    ax.set_title(f"{kernel}: {'graph flags' if field == 'flags' else field}", fontsize="medium")
    ax.grid(True, alpha=0.3)
    if legend:
        legend_below(ax, ncol=1)
    return ax


def _draw_group(ax, group: Sequence[SlotChoice], field: str, tag: str, marker: str, ls: str, mi: int) -> None:
    default = {c.cols: c for c in group if c.source == "default"}
    best = sorted((c for c in group if c.source == "best"), key=lambda c: c.cols)
    dpts = sorted((c for c in default.values() if field_value(c, field) is not None), key=lambda c: c.cols)
    if dpts:
        ax.scatter([c.cols for c in dpts], [field_value(c, field) for c in dpts], color=COLORS["default"],
                   marker="x" if mi == 0 else "+", s=60, zorder=4, label=f"Inductor default{tag}")
    adopted = [c for c in best if c.improved and field_value(c, field) is not None]
    # NaN at every shape that did not adopt (or where the field does not apply) breaks the line there.
    ys = [field_value(c, field) if c.improved and field_value(c, field) is not None else math.nan for c in best]
    ax.plot([c.cols for c in best], ys, ls=ls, lw=1.2, color=COLORS["best"], alpha=0.8)
    if adopted:
        ax.scatter([c.cols for c in adopted], [field_value(c, field) for c in adopted], color=COLORS["best"],
                   marker=marker, zorder=3, label=f"{ADOPTED}{tag}")
    kept = [default[c.cols] for c in best if c.improved is False and c.cols in default
            and field_value(default[c.cols], field) is not None]
    if kept:
        ax.scatter([c.cols for c in kept], [field_value(c, field) for c in kept], s=150, facecolors="none",
                   edgecolors=COLORS["best"], lw=1.2, zorder=3, label=f"{KEPT}{tag}")
    pending = [c for c in best if c.improved is None and field_value(c, field) is not None]
    if pending:
        ax.scatter([c.cols for c in pending], [field_value(c, field) for c in pending], facecolors="white",
                   edgecolors=COLORS["ceiling"], marker=marker, zorder=3, label=f"{OPEN}{tag}")
    if field == "flags":
        changed = [c for c in adopted if _flags_index(c) and c.speedup]
        for i, c in enumerate(changed):
            # Alternate above/below: neighbouring shapes would print over each other.
            ax.annotate(f"{c.speedup:.2f}x", (c.cols, _flags_index(c)), textcoords="offset points",
                        xytext=(0, 7 if i % 2 == 0 else -14), ha="center", fontsize="small")


def _y_axis(ax, field: str) -> None:
    if field == "persistent":
        ax.set_yticks([0, 1], ["looped", "persistent"])
        ax.set_ylim(-0.3, 1.3)
    elif field == "flags":
        ax.set_yticks(range(len(FLAG_STATES)), FLAG_STATES, fontsize="small")
        ax.set_ylim(-0.5, len(FLAG_STATES) - 0.4)
    else:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(int_formatter())
        ax.minorticks_off()
    ax.set_ylabel({"persistent": "kernel", "flags": "graph flags"}.get(field, field + " (log2)"))


def shared_legend(ax, panels) -> None:
    """The legend of a config figure, once, on an axes of its own (``ax``): every entry of ``panels``."""
    seen = {}
    for panel in panels:
        for handle, label in zip(*panel.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    ax.set_axis_off()
    if seen:
        ax.legend(list(seen.values()), list(seen), loc="center", fontsize="small", frameon=False)


def plot_config_grid(fig, choices: Sequence[SlotChoice], kernel: str, dtype: str = "bf16", ncols: int = 4):
    """Every field of ``CONFIG_FIELDS`` for one kernel on ``fig``: per M (when M varies at one N) a block of
    panels whose last cell holds the legend.  Returns the axes."""
    sel = [c for c in choices if c.kernel == kernel and c.dtype == dtype]
    groups = row_groups(sel)
    per_group = -(-(len(CONFIG_FIELDS) + 1) // ncols)
    axes = fig.subplots(per_group * len(groups), ncols, squeeze=False)
    for g, (m, group) in enumerate(groups):
        cells = list(axes[g * per_group:(g + 1) * per_group].ravel())
        for ax, field in zip(cells, CONFIG_FIELDS):
            plot_config_field(ax, group, kernel, field, dtype)
            if m is not None:  # an empty panel says why in its text and has no title of its own
                rest = ax.get_title().split(": ", 1)[-1]
                ax.set_title(f"M={m}: {rest}" if rest else f"M={m}", fontsize="medium")
        shared_legend(cells[len(CONFIG_FIELDS)], cells[:len(CONFIG_FIELDS)])
        for ax in cells[len(CONFIG_FIELDS) + 1:]:
            ax.set_axis_off()
    return axes


def grid_rows(choices: Sequence[SlotChoice], kernel: str, dtype: str = "bf16", ncols: int = 4) -> int:
    """How many rows of panels ``plot_config_grid`` draws (to size the figure before drawing)."""
    sel = [c for c in choices if c.kernel == kernel and c.dtype == dtype]
    return -(-(len(CONFIG_FIELDS) + 1) // ncols) * len(row_groups(sel))
