"""``inductor-tune report``: PNG figures and one self-contained HTML page for a database.

Figures are drawn on ``matplotlib.figure.Figure`` objects created here (not pyplot), so making a
report changes no global plotting state and needs no display.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import html
import importlib.metadata
import logging
import os
import platform
import re
from pathlib import Path

from . import plot
from .show import StudyRow, study_rows

log = logging.getLogger(__name__)


class ReportError(Exception):
    """Nothing to report (no studies, nothing matching the GPU filter): one line for the user."""


@dataclasses.dataclass(frozen=True)
class Figure:
    name: str  # file name of the PNG
    title: str
    caption: str


@dataclasses.dataclass(frozen=True)
class Report:
    html: Path
    figures: tuple[Path, ...]
    notes: tuple[str, ...]


def _new_figure(width: float, height: float):
    from matplotlib.figure import Figure as MplFigure

    return MplFigure(figsize=(width, height), layout="constrained")


def _save(fig, out: Path, name: str) -> Path:
    # Names hold kernel names read from the database: no separator may take a figure outside ``out``.
    path = out / re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
    fig.savefig(path, dpi=110)
    return path


def build(db: str, out_dir: str | os.PathLike, gpu: str | None = None) -> Report:
    """Write the PNGs and ``index.html`` for every study of ``db`` (or those of one GPU) into ``out_dir``."""
    store = plot.open_store(db)
    points = plot.shape_points(store, gpu=gpu)
    if not points:
        where = f" on a GPU matching {gpu!r}" if gpu else ""
        raise ReportError(f"{db} has no studies{where}; nothing to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    choices = plot.config_choices(store, gpu=gpu)
    figures: list[tuple[Figure, Path]] = []
    notes: list[str] = []
    kernels = sorted({p.kernel for p in points}, key=plot.kernel_order)
    dtypes = sorted({p.dtype for p in points})

    for dtype in dtypes:
        ks = [k for k in kernels if any(p.kernel == k and p.dtype == dtype for p in points)]
        ncols = min(3, len(ks))
        nrows = -(-len(ks) // ncols)
        fig = _new_figure(5.2 * ncols, 4.6 * nrows)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, k in zip(axes, ks):
            plot.plot_bandwidth(ax, points, k, dtype)
        for ax in axes[len(ks):]:
            ax.set_axis_off()
        name = f"bandwidth_{dtype}.png"
        figures.append((Figure(name, f"Bandwidth vs N ({dtype})",
                               "Inductor default and best config found (verdict re-measurement when the study has "
                               "one), GB/s of the minimal traffic; grey line: the GPU's measured copy ceiling. "
                               "No distilled heuristic or peer library (Quack, Liger) is recorded in the database, "
                               "so none is drawn."), _save(fig, out, name)))

        n_cols = len({p.cols for p in points if p.dtype == dtype})
        fig = _new_figure(max(8.0, 1.3 * n_cols + 3), 0.9 * _n_rows(points, dtype) + 2)
        plot.plot_speedup_heatmap(fig.subplots(), points, dtype)
        name = f"speedup_{dtype}.png"
        figures.append((Figure(name, f"Speedup over Inductor's default ({dtype})",
                               "Median ratio of the interleaved re-measurement rounds, with the range over rounds. "
                               "'=': no config beat the default in every round by more than its own spread."),
                        _save(fig, out, name)))

        for k in ks:
            sel = [c for c in choices if c.kernel == k and c.dtype == dtype]
            groups = plot.row_groups(sel)
            fig = _new_figure(22, 4.3 * len(groups) + 1.2)
            axes = fig.subplots(len(groups), len(plot.CONFIG_FIELDS), squeeze=False)
            for r, (m, group) in enumerate(groups):
                for c, field in enumerate(plot.CONFIG_FIELDS):
                    plot.plot_config_field(axes[r][c], group, k, field, dtype, legend=(c == 0))
                    if m is not None:
                        axes[r][c].set_title(f"{k} M={m}: {field}", fontsize="medium")
            name = f"configs_{k}_{dtype}.png"
            figures.append((Figure(name, f"Best config vs N: {k} ({dtype})",
                                   "Launch parameters of the main reduction kernel (largest tile space) of the best "
                                   "config found (steps; hollow: within noise, Inductor's default is kept) and of "
                                   "Inductor's own choice (crosses). R0_BLOCK and num_stages exist only for looped "
                                   "kernels."), _save(fig, out, name)))

            top = max((p for p in points if p.kernel == k and p.dtype == dtype),
                      key=lambda p: (p.speedup or 0.0, p.cols))
            history = plot.study_history(store.url, top.study)
            block, cells = plot.warps_block_grid(store, top.study)
            fig = _new_figure(19, 5.2)
            axes = fig.subplots(1, 3)
            plot.plot_history(axes[0], history, top.ceiling_gbps)
            plot.plot_importances(axes[1], history)
            plot.plot_warps_block(axes[2], block, cells)
            name = f"search_{k}_{dtype}.png"
            figures.append((Figure(name, f"Search of {k} {top.rows}x{top.cols} ({dtype})",
                                   "The study of this kernel with the largest speedup. Left: GB/s per Optuna trial "
                                   "(FAIL: measured failure; PRUNED: illegal config, never compiled). Middle: "
                                   "parameter importance over the trials that sampled parameters (the default "
                                   "trial has none). Right: median GB/s of measured trials per num_warps and block "
                                   "size of the main kernel."), _save(fig, out, name)))

    comparison = plot.compare_gpus(store)
    notes.append(comparison.message)
    if len(comparison.gpus) > 1:
        fig = _new_figure(5.2 * len(kernels), 5)
        for ax, k in zip(fig.subplots(1, len(kernels), squeeze=False).ravel(), kernels):
            plot.plot_gpu_comparison(ax, points, comparison, k)
        figures.append((Figure("gpus.png", "Across GPUs", comparison.message), _save(fig, out, "gpus.png")))

    page = out / "index.html"
    page.write_text(_html(db, gpu, store, study_rows(store, gpu=gpu), figures, comparison), encoding="utf-8")
    log.info("wrote %s and %d figures", page, len(figures))
    return Report(page, tuple(p for _, p in figures), tuple(notes))


def _n_rows(points, dtype: str) -> int:
    pts = [p for p in points if p.dtype == dtype]
    return len({(p.kernel, p.rows) if plot.split_by_rows(pts) else p.kernel for p in pts})


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _f(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def _html(db, gpu, store, rows: list[StudyRow], figures, comparison) -> str:
    gpu_rows = [
        [g.name, g.fingerprint, str(g.sm_count), g.compute_capability, f"{g.memory_gb:.0f} GB", f"{g.l2_mb:.0f} MB",
         g.cuda_driver, g.cuda_runtime, g.torch, g.triton, f"{g.ceiling_gbps:.0f}"]
        for g in plot.gpus(store) if not gpu or gpu.lower() in (g.name + " " + g.fingerprint).lower()
    ]
    gpu_table = _table(["GPU", "fingerprint", "SMs", "CC", "memory", "L2", "driver", "CUDA", "torch (measured)",
                        "triton (measured)", "copy ceiling GB/s"], gpu_rows)
    versions = _table(["software (this report)", "version"], [
        ["inductor_tune", _version("inductor_tune")], ["optuna", _version("optuna")],
        ["matplotlib", _version("matplotlib")], ["python", platform.python_version()],
    ])
    study_table = _table(
        ["kernel", "shape", "dtype", "trials", "failed", "illegal", "default GB/s", "best GB/s", "best % ceiling",
         "speedup [range]", "verdict", "best config"],
        [[r.kernel, r.shape, r.dtype, str(r.trials), str(r.failed), str(r.constraints), _f(r.default_gbps, "{:.0f}"),
          _f(r.best_gbps, "{:.0f}"), _f(r.best_pct, "{:.1f}"),
          _f(r.speedup, "{:.3f}") + (f" [{r.speedup_low:.3f}-{r.speedup_high:.3f}]" if r.speedup_low else ""),
          r.verdict, r.best_config] for r in rows],
    )
    figs = []
    for fig, path in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        figs.append(f"<h3>{html.escape(fig.title)}</h3><p>{html.escape(fig.caption)}</p>"
                    f'<img alt="{html.escape(fig.title)}" src="data:image/png;base64,{data}">')
    title = f"inductor_tune report: {os.path.basename(str(db))}" + (f" ({gpu})" if gpu else "")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; max-width: 1800px; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin-bottom: 1em; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
th {{ background: #f0f0f0; }}
img {{ max-width: 100%; border: 1px solid #ddd; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Database <code>{html.escape(str(db))}</code>, {len(rows)} studies; generated {stamp}. Every number below was
read from the database; nothing was measured to make this page.</p>
<h2>GPU</h2>{gpu_table}
<h2>Versions</h2>{versions}
<h2>Studies</h2>
<p>Default and best GB/s as <code>inductor-tune show</code> reports them (verdict re-measurement when present).</p>
{study_table}
<h2>Across GPUs</h2><p>{html.escape(comparison.message)}</p>
<h2>Figures</h2>
{''.join(figs)}
</body></html>
"""
