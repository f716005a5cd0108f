"""Figures for inspecting recorded studies; needs no GPU.

Two layers, so that tests can check numbers without pixels:

* data functions (``figdata``, re-exported here) read a ``Store`` (and Optuna's tables for the search history) and return small
  frozen records;
* renderers take those records and draw onto an Axes the caller owns, then return it.  They never
  create figures or call ``plt.show``, so notebooks, the HTML report and tests share them.

Every number drawn comes from a database or a heuristic file: the studies' (``plot_bandwidth``,
``plot_config_field`` in ``plot_configs``...), the validation records of a heuristic file
(``plot_validation`` in ``plot_validation``: default, heuristics, best found and the peer libraries,
all timed in the same interleaved rounds) or the rules and evidence of the file itself
(``plot_heuristics`` in ``plot_rules``).  Series that no database holds are not invented: callers pass
them in as ``ExtraSeries``.  Every renderer is re-exported here, so that callers import one module.
"""

from __future__ import annotations

import collections
import math
from typing import Sequence

from .figdata import (  # noqa: F401 - re-exported: notebooks and tests use one module
    ExtraSeries, GpuComparison, GpuInfo, GridCell, HistoryPoint, ShapePoint, SlotChoice, StudyHistory, ValidationPoint,
    ValidationRun, compare_gpus, config_choices, describe_choice, gpu_matches, gpus, main_slot, open_store,
    shape_points, study_history, validation_note, validation_points, validation_records, validation_rows,
    validation_runs, warps_block_grid,
)
from .plot_configs import (  # noqa: F401 - re-exported
    CONFIG_FIELDS, grid_rows as config_grid_rows, plot_config_field, plot_config_grid,
)
from .plot_rules import RuleCell, plot_heuristics, rule_cells  # noqa: F401 - re-exported
from .plot_validation import MIN_LINE, VALIDATION_SERIES, plot_validation  # noqa: F401 - re-exported
from .plotkit import (  # noqa: F401 - re-exported: callers learned these names from this module
    COLORS, LINESTYLES, MARKERS, RATIO_CMAP, empty as _empty, figure_legend, finish_bandwidth,
    int_formatter as _int_formatter, kernel_order, legend_below as _legend_below, log2_axis as _log2_axis, ratio_colorbar, ratio_norm, robust_top,
    row_groups, short as _short, split_by_rows, text_color,
)
from .show import SLOWER

MAX_IMPORTANCES = 10


# -- renderers -------------------------------------------------------------------------------


def _series_groups(points: Sequence[ShapePoint]):
    """(gpu, M) groups: one line per GPU, and per row count when M varies at the same N."""
    gpus_ = sorted({p.gpu for p in points})
    for gi, g in enumerate(gpus_):
        for mi, (m, group) in enumerate(row_groups([p for p in points if p.gpu == g])):
            pts = sorted(group, key=lambda p: p.cols)
            parts = ([pts[0].gpu_name] if len(gpus_) > 1 else []) + ([f"M={m}"] if m is not None else [])
            yield pts, LINESTYLES[mi % len(LINESTYLES)], MARKERS[gi % len(MARKERS)], ", ".join(parts)


def _usual_rows(pts) -> int | None:
    """The M most points share; None when every point has its own (then every point is labelled)."""
    (usual, count), = collections.Counter(p.rows for p in pts).most_common(1) if pts else [(None, 0)]
    return usual if count > 1 or len(pts) == 1 else None


def _annotate_rows(ax, pts: Sequence[ShapePoint], ys) -> None:
    """When M varies along N (single line), label the points whose M is not the usual one."""
    usual = _usual_rows(pts)
    odd = [(p, y) for p, y in zip(pts, ys) if p.rows != usual and y is not None]
    for i, (p, y) in enumerate(odd):
        # Alternate above/below: neighbouring points at large N would print over each other.
        ax.annotate(f"M={p.rows}", (p.cols, y), textcoords="offset points", xytext=(0, 8 if i % 2 == 0 else -14),
                    ha="center", fontsize="x-small")


def plot_bandwidth(ax, points: Sequence[ShapePoint], kernel: str, dtype: str = "bf16",
                   extra: Sequence[ExtraSeries] = (), legend: bool = True):
    """GB/s vs N: Inductor default, best found, copy ceiling (one line per GPU / M); plus ``extra``."""
    pts = [p for p in points if p.kernel == kernel and p.dtype == dtype]
    if not pts and not extra:
        return _empty(ax, f"no {kernel} {dtype} studies")
    for group, ls, marker, suffix in _series_groups(pts):
        tag = f" ({suffix})" if suffix else ""
        cols = [p.cols for p in group]
        ax.plot(cols, [p.default_gbps for p in group], ls=ls, marker=marker, color=COLORS["default"],
                label=f"Inductor default{tag}")
        ax.plot(cols, [p.best_gbps for p in group], ls=ls, marker=marker, color=COLORS["best"],
                label=f"best found{tag}")
        if not split_by_rows(pts) and len({p.rows for p in group}) > 1:
            _annotate_rows(ax, group, [p.best_gbps for p in group])
    for gi, (fp, ceiling) in enumerate(sorted({(p.gpu, p.ceiling_gbps) for p in pts if p.ceiling_gbps})):
        name = next(p.gpu_name for p in pts if p.gpu == fp)
        ax.axhline(ceiling, color=COLORS["ceiling"], ls=LINESTYLES[gi % len(LINESTYLES)], lw=1,
                   label=f"copy ceiling {name} ({ceiling:.0f} GB/s)")
    for s in extra:
        ax.plot(s.cols, s.gbps, marker="x", color=s.color or COLORS.get(s.kind, COLORS["peer"]), label=s.label)
    usual = _usual_rows(pts)
    title = f"{kernel} {dtype}"
    if pts and not split_by_rows(pts):
        title += f" (M={usual})" if usual else " (M marked per point)"
    return finish_bandwidth(ax, [p.cols for p in pts] + [n for s in extra for n in s.cols], title, legend)


def plot_speedup_heatmap(ax, points: Sequence[ShapePoint], dtype: str = "bf16"):
    """Speedup of the adopted config over default per (kernel, M) x N; each cell shows the per-round range.

    Cells where the default was kept are drawn at 1.0, worded by what the verdict measured ("=": within
    noise; "= slower": the best candidate was slower), cells without a verdict blank.  The colour scale
    ends at the largest speedup that is no outlier (``plotkit.robust_top``): an outlier takes the top
    colour and its number says how far it goes.
    """
    import numpy as np

    pts = [p for p in points if p.dtype == dtype]
    if not pts:
        return _empty(ax, "no studies")
    multi_m = split_by_rows(pts)
    label = lambda p: f"{p.kernel} M={p.rows}" if multi_m else p.kernel  # noqa: E731
    ylabels = list(dict.fromkeys(label(p) for p in sorted(pts, key=lambda p: (kernel_order(p.kernel), p.rows))))
    m_note = "" if multi_m else ", M = " + "/".join(str(m) for m in sorted({p.rows for p in pts}, reverse=True))
    xs = sorted({p.cols for p in pts})
    grid = np.full((len(ylabels), len(xs)), np.nan)
    for p in pts:
        if p.speedup is not None and p.improved is not None:
            grid[ylabels.index(label(p)), xs.index(p.cols)] = p.speedup if p.improved else 1.0
    values = [float(v) for v in grid[np.isfinite(grid)]]
    norm = ratio_norm(values)
    image = ax.imshow(grid, cmap=RATIO_CMAP, norm=norm, aspect="auto")
    for p in pts:
        i, j = ylabels.index(label(p)), xs.index(p.cols)
        ax.text(j, i, _cell_text(p), ha="center", va="center", fontsize=7,
                color=text_color(norm, grid[i, j] if math.isfinite(grid[i, j]) else None))
    ax.set_xticks(range(len(xs)), [_short(n) for n in xs])
    ax.set_yticks(range(len(ylabels)), ylabels)
    ax.set_xlabel(f"N (reduction length, elements per row{m_note})")
    ax.set_title(f"speedup of the adopted config over Inductor's default ({dtype})\n"
                 "'=': default kept, within noise; '= slower': default kept, best candidate slower", fontsize="medium")
    ratio_colorbar(ax, image, values, "speedup (x, log scale)")
    return ax


def _cell_text(p: ShapePoint) -> str:
    if p.improved is None:
        return "no\nverdict"
    if p.improved:
        return f"{p.speedup:.2f}\n[{p.speedup_low:.2f}-{p.speedup_high:.2f}]"
    return "= slower" if p.verdict.startswith(SLOWER) else "="


def plot_history(ax, history: StudyHistory, ceiling_gbps: float | None = None, legend: bool = True):
    """GB/s per trial number, best so far as a step line, failures and illegal samples at the bottom."""
    ok = [p for p in history.points if p.gbps is not None]
    if not ok:
        return _empty(ax, "no successful trial")
    ax.scatter([p.number for p in ok if not p.inductor_default], [p.gbps for p in ok if not p.inductor_default],
               color=COLORS["trial"], edgecolors=COLORS["best"], s=25, label="measured trial", zorder=2)
    default = [p for p in ok if p.inductor_default]
    if default:
        ax.scatter([p.number for p in default], [p.gbps for p in default], color=COLORS["default"], marker="*",
                   s=120, label="Inductor default (trial 0)", zorder=3)
    steps = [p for p in history.points if p.best_gbps is not None]
    ax.step([p.number for p in steps], [p.best_gbps for p in steps], where="post", color=COLORS["best"],
            label="best so far", zorder=2)
    failed = [p.number for p in history.points if p.state == "FAIL"]
    pruned = [p.number for p in history.points if p.state == "PRUNED"]
    if failed:
        ax.scatter(failed, [0] * len(failed), marker="x", color=COLORS["failed"], label="failed (FAIL)", zorder=3)
    if pruned:
        ax.scatter(pruned, [0] * len(pruned), marker="|", color=COLORS["ceiling"], label="illegal (PRUNED)")
    if ceiling_gbps:
        ax.axhline(ceiling_gbps, color=COLORS["ceiling"], lw=1, label=f"copy ceiling ({ceiling_gbps:.0f} GB/s)")
    ax.set_ylim(bottom=-0.04 * max(ceiling_gbps or 0, max(p.gbps for p in ok)))
    ax.set_xlabel("Optuna trial number")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title(history.study.split("@")[0] + ": search history", fontsize="medium")
    ax.grid(True, alpha=0.3)
    if legend:
        _legend_below(ax, ncol=3)
    return ax


def plot_importances(ax, history: StudyHistory):
    if not history.importances:
        return _empty(ax, "too few searched trials for parameter importance")
    shown = [(k, v) for k, v in history.importances if v >= 0.005][:MAX_IMPORTANCES]
    hidden = len(history.importances) - len(shown)
    slots = {k.rsplit(".", 1)[0] for k, _ in shown if not k.startswith("graph.")}
    # Parameter names are "<slot key>.<param>"; keep the slot only when several slots were searched.
    names = [k if k.startswith("graph.") else (k.split(".", 1)[1] if len(slots) > 1 else k.rsplit(".", 1)[1])
             for k, _ in shown][::-1]
    ax.barh(names, [v for _, v in shown][::-1], color=COLORS["best"])
    note = f"; {hidden} more below 0.005 not shown" if hidden else ""
    ax.set_xlabel(f"importance (Optuna default evaluator, sums to 1{note})")
    ax.set_title(history.study.split("@")[0] + ": parameter importance", fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    return ax


def plot_warps_block(ax, block: str, cells: Sequence[GridCell], title: str = ""):
    """Median GB/s per (num_warps, block) cell, with the trial count."""
    import numpy as np

    if not cells:
        return _empty(ax, "no measured trials")
    warps = sorted({c.num_warps for c in cells})
    blocks = sorted({c.block for c in cells})
    grid = np.full((len(warps), len(blocks)), np.nan)
    for c in cells:
        grid[warps.index(c.num_warps), blocks.index(c.block)] = c.median_gbps
    image = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
    middle = (np.nanmin(grid) + np.nanmax(grid)) / 2
    for c in cells:
        ax.text(blocks.index(c.block), warps.index(c.num_warps), f"{c.median_gbps:.0f}\nn={c.count}", ha="center",
                va="center", fontsize=7, color="black" if c.median_gbps > middle else "white")
    ax.set_xticks(range(len(blocks)), [str(b) for b in blocks])
    ax.set_yticks(range(len(warps)), [str(w) for w in warps])
    ax.set_xlabel(f"{block} (main slot)")
    ax.set_ylabel("num_warps")
    ax.set_title(title or f"median GB/s per num_warps x {block}", fontsize="medium")
    ax.figure.colorbar(image, ax=ax, label="median GB/s")
    return ax


def plot_gpu_comparison(ax, points: Sequence[ShapePoint], comparison: GpuComparison, kernel: str,
                        dtype: str = "bf16"):
    """Best GB/s as % of each GPU's own ceiling vs N, one line per GPU; a plain note with one GPU."""
    if len(comparison.gpus) < 2:
        ax.text(0.5, 0.5, comparison.message, ha="center", va="center", wrap=True, transform=ax.transAxes)
        ax.set_axis_off()
        return ax
    pts = [p for p in points if p.kernel == kernel and p.dtype == dtype and p.best_gbps and p.ceiling_gbps]
    for gi, fp in enumerate(comparison.gpus):
        for mi, (m, group) in enumerate(row_groups([p for p in pts if p.gpu == fp])):
            sel = sorted(group, key=lambda p: p.cols)
            if sel:
                ax.plot([p.cols for p in sel], [100 * p.best_gbps / p.ceiling_gbps for p in sel],
                        ls=LINESTYLES[mi % len(LINESTYLES)], marker=MARKERS[gi % len(MARKERS)],
                        label=sel[0].gpu_name + (f" M={m}" if m is not None else ""))
    top = max((100 * p.best_gbps / p.ceiling_gbps for p in pts), default=100.0)
    ax.set_ylim(0, max(105.0, top + 5))
    _log2_axis(ax, [p.cols for p in pts])
    ax.set_ylabel("best found, % of the GPU's copy ceiling")
    ax.set_title(f"{kernel} {dtype}: best config across GPUs", fontsize="medium")
    ax.grid(True, alpha=0.3)
    _legend_below(ax, ncol=1)
    return ax
