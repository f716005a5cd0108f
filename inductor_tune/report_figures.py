"""The figures of ``inductor-tune report``, section by section, as PNG files.

Each figure is drawn on a ``matplotlib.figure.Figure`` created here (not pyplot), so making a report
changes no global plotting state and needs no display.  No figure is wider than ``PAGE_WIDTH_IN`` at
``DPI``: the page shows it at its own size, so its text stays as large as the font it was drawn with.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Sequence

from . import plot
from .plotkit import figure_legend

PAGE_WIDTH_IN = 13.0
DPI = 100
PAGE_WIDTH_PX = int(PAGE_WIDTH_IN * DPI)  # the HTML page's width, in CSS pixels


@dataclasses.dataclass(frozen=True)
class Figure:
    name: str  # file name of the PNG
    title: str
    caption: str


def new_figure(width: float, height: float):
    from matplotlib.figure import Figure as MplFigure

    return MplFigure(figsize=(min(width, PAGE_WIDTH_IN), height), layout="constrained")


def save(fig, out: Path, name: str) -> Path:
    # Names hold kernel names read from the database: no separator may take a figure outside ``out``.
    path = out / re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
    fig.savefig(path, dpi=DPI)
    return path


def _saved(fig, out: Path, name: str, title: str, caption: str) -> tuple[Figure, Path]:
    """The figure written under ``out`` as ``name``, with the title and caption the report shows."""
    return Figure(name, title, caption), save(fig, out, name)


# -- studies ---------------------------------------------------------------------------------


def study_figures(store, points, choices, out: Path) -> list[tuple[Figure, Path]]:
    """Per dtype: GB/s vs N, the speedup heatmap, and per kernel its configs and its most improved search."""
    figures = []
    kernels = sorted({p.kernel for p in points}, key=plot.kernel_order)
    for dtype in sorted({p.dtype for p in points}):
        ks = [k for k in kernels if any(p.kernel == k and p.dtype == dtype for p in points)]
        figures.append(_bandwidth(points, ks, dtype, out))
        figures.append(_speedup(points, dtype, out))
        for k in ks:
            figures.append(_configs([c for c in choices if c.kernel == k and c.dtype == dtype], k, dtype, out))
            figures.append(_search(store, points, k, dtype, out))
    return figures


def _bandwidth(points, ks: Sequence[str], dtype: str, out: Path):
    ncols = min(3, len(ks))
    nrows = -(-len(ks) // ncols)
    fig = new_figure(PAGE_WIDTH_IN, 4.3 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, k in zip(axes, ks):
        plot.plot_bandwidth(ax, points, k, dtype, legend=False)
    for ax in axes[len(ks):]:
        ax.set_axis_off()
    figure_legend(fig, axes[:len(ks)], ncol=4)
    name = f"bandwidth_{dtype}.png"
    return _saved(fig, out, name, f"Bandwidth vs N ({dtype})",
                  "Inductor default and best config found (verdict re-measurement when the study has one), GB/s "
                  "of the minimal traffic; grey line: the GPU's measured copy ceiling. The rules and the peer "
                  "libraries (Quack, Liger) are timed by `inductor-tune validate`: their figure is drawn from "
                  "validation records (section Validation, when the database holds some).")


def _speedup(points, dtype: str, out: Path):
    pts = [p for p in points if p.dtype == dtype]
    n_cols = len({p.cols for p in pts})
    n_rows = len({(p.kernel, p.rows) if plot.split_by_rows(pts) else p.kernel for p in pts})
    fig = new_figure(max(8.0, 0.8 * n_cols + 3.5), 0.55 * n_rows + 2.6)
    plot.plot_speedup_heatmap(fig.subplots(), points, dtype)
    name = f"speedup_{dtype}.png"
    return _saved(fig, out, name, f"Speedup over Inductor's default ({dtype})",
                  "Median ratio of the interleaved re-measurement rounds, with the range over rounds, of the config "
                  "adopted (faster than the default in every round, beyond the noise band, and confirmed in fresh "
                  "rounds). '=': the default is kept because no candidate left the noise band; '= slower': kept "
                  "because the best candidate was slower in every round. The colour scale ends at the largest "
                  "speedup that is no outlier (Tukey's fence on the log speedups); an outlier (arrow on the bar) "
                  "takes the top colour and its number says how far it goes.")


def _configs(sel, k: str, dtype: str, out: Path):
    fig = new_figure(PAGE_WIDTH_IN, 3.4 * plot.config_grid_rows(sel, k, dtype) + 0.4)
    plot.plot_config_grid(fig, sel, k, dtype)
    name = f"configs_{k}_{dtype}.png"
    return _saved(fig, out, name, f"Config vs N: {k} ({dtype})",
                  "Launch parameters of the main reduction kernel (largest tile space): crosses, Inductor's own "
                  "choice; filled markers, the best config found where it was adopted (faster than the default "
                  "beyond noise), joined only between neighbouring adopted shapes; rings, shapes where the default "
                  "was kept (drawn at the default's value, which stays in use). R0_BLOCK and num_stages exist only "
                  "for looped kernels, RSPLIT_SIZE (split size) only for mix-order kernels; the graph-flags panel "
                  "shows configs that turn split reductions or mix-order reductions off, with their speedup: "
                  "such a config replaces the main kernel by another one.")


def _search(store, points, k: str, dtype: str, out: Path):
    top = max((p for p in points if p.kernel == k and p.dtype == dtype), key=lambda p: (p.speedup or 0.0, p.cols))
    history = plot.study_history(store.url, top.study)
    block, cells = plot.warps_block_grid(store, top.study)
    # Two rows: side by side, three panels leave the importances' parameter names no room at page width.
    fig = new_figure(PAGE_WIDTH_IN, 10)
    axes = fig.subplot_mosaic([["history", "map"], ["importance", "importance"]])
    plot.plot_history(axes["history"], history, top.ceiling_gbps)
    plot.plot_importances(axes["importance"], history)
    plot.plot_warps_block(axes["map"], block, cells)
    name = f"search_{k}_{dtype}.png"
    return _saved(fig, out, name, f"Search of {k} {top.rows}x{top.cols} ({dtype})",
                  "The study of this kernel with the largest speedup. Top left: GB/s per Optuna trial (FAIL: "
                  "measured failure; PRUNED: illegal config, never compiled). Top right: median GB/s of measured "
                  "trials per num_warps and block size of the main kernel. Bottom: parameter importance over the "
                  "trials that sampled parameters (the default trial has none).")


def gpu_figure(points, comparison, out: Path):
    kernels = sorted({p.kernel for p in points}, key=plot.kernel_order)
    ncols = min(3, len(kernels))
    fig = new_figure(PAGE_WIDTH_IN, 5 * -(-len(kernels) // ncols))
    for ax, k in zip(fig.subplots(-(-len(kernels) // ncols), ncols, squeeze=False).ravel(), kernels):
        plot.plot_gpu_comparison(ax, points, comparison, k)
    return _saved(fig, out, "gpus.png", "Across GPUs", comparison.message)


# -- validation records and heuristic files ----------------------------------------------------


def validation_figure(points, run, out: Path):
    """One run (a heuristic file version): the Quack-style GB/s vs N of every kernel it validated."""
    mine = [p for p in points if (p.heuristics_path, p.digest) == (run.heuristics_path, run.digest)]
    panels = sorted({(p.kernel, p.dtype) for p in mine}, key=lambda kd: (plot.kernel_order(kd[0]), kd[1]))
    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    fig = new_figure(PAGE_WIDTH_IN, 5.6 * nrows + 0.8)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (k, dtype) in zip(axes, panels):
        plot.plot_validation(ax, mine, k, dtype, legend=False)
    for ax in axes[len(panels):]:
        ax.set_axis_off()
    ceilings = sorted({round(p.ceiling_gbps) for p in mine})
    span = f"{ceilings[0]}" if len(ceilings) == 1 else f"{ceilings[0]}-{ceilings[-1]}"
    # Each panel names its own measured ceiling; the shared legend names the range over the run.
    figure_legend(fig, axes[:len(panels)], rename=lambda label: f"copy ceiling, measured in the run ({span} GB/s)"
                  if label.startswith("copy ceiling") else label)
    name = f"validation_{run.digest}.png"
    title = f"Validation of {run.heuristics_path} (digest {run.digest})"
    return _saved(fig, out, name, title,
                  f"{run.shapes} problems, {run.records} records, {run.first:%Y-%m-%d %H:%M} .. "
                  f"{run.last:%Y-%m-%d %H:%M} UTC. Per kernel, GB/s (minimal traffic) of Inductor's default, the "
                  "installed rules, the best config the studies found, Quack and Liger, all timed in the same interleaved rounds of one "
                  "process, and the copy ceiling that run measured (dashed). A variant without rounds in a record "
                  "is absent there (never zero): the legend says where and why (peer not installed, shape never "
                  "studied, rules timed only where they change a kernel) below each panel.")


def heuristics_figure(heur, label: str, out: Path):
    """The picture of one heuristic file: kernel family x size bucket."""
    cells = plot.rule_cells(heur)
    families = len({c.family for c in cells})
    fig = new_figure(PAGE_WIDTH_IN, 0.62 * families + 2.4)
    plot.plot_heuristics(fig.subplots(), heur, cells)
    name = f"heuristics_{heur.digest()}.png"
    return _saved(fig, out, name, f"Heuristic file {label} (digest {heur.digest()})",
                  "One row per kernel family (the kernels a rule's evidence measured), one column per bucket of "
                  "next_pow2(N). Coloured cells set a launch config, coloured by its in-sample gain over Inductor's "
                  "default (the file's evidence: geomean over the fitting shapes where it was measured; the scale "
                  "ends at the largest gain that is no outlier). Grey cells keep Inductor's default; in parentheses "
                  "the gain of the best candidate that was not adopted (within noise, below the minimum gain, or "
                  "slower somewhere). Blank: no rule, Inductor decides. A rule applies only inside its evidence "
                  "(rows, N span, element size, envelope), which the picture does not draw.")
