"""Figures for inspecting recorded studies; needs no GPU.

Two layers, so that tests can check numbers without pixels:

* data functions (``figdata``, re-exported here) read a ``Store`` (and Optuna's tables for the search history) and return small
  frozen records;
* renderers take those records and draw onto an Axes the caller owns, then return it.  They never
  create figures or call ``plt.show``, so notebooks, the HTML report and tests share them.

Every number drawn comes from a database: the studies' (``plot_bandwidth``...) or the validation
records of a heuristic file (``plot_validation``: default, heuristics, best found and the peer
libraries, all timed in the same interleaved rounds).  Series that no database holds are not
invented: callers pass them in as ``ExtraSeries``.
"""

from __future__ import annotations

import collections
import math
import textwrap
from typing import Iterable, Sequence

from .figdata import (  # noqa: F401 - re-exported: notebooks and tests use one module
    ExtraSeries, GpuComparison, GpuInfo, GridCell, HistoryPoint, ShapePoint, SlotChoice, StudyHistory, ValidationPoint,
    ValidationRun, compare_gpus, config_choices, describe_choice, gpus, main_slot, open_store, shape_points,
    study_history, validation_note, validation_points, validation_rows, validation_runs, warps_block_grid,
)

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
}
MARKERS = ("o", "s", "^", "D", "v", "P")
LINESTYLES = ("-", "--", ":", "-.")
CONFIG_FIELDS = ("num_warps", "XBLOCK", "R0_BLOCK", "num_stages", "persistent")
MAX_IMPORTANCES = 10
MIN_LINE = 3  # plot_validation joins shapes of one M by a line from this many on
# Validation variants as stored by `inductor-tune validate`: name, legend label, color key, marker.
VALIDATION_SERIES = (
    ("inductor_default", "Inductor default", "default", "o"),
    ("heuristics", "heuristics (rules installed)", "heuristic", "s"),
    ("best_found", "best found (study's per-shape winner)", "best", "^"),
    ("quack", "Quack", "quack", "D"),
    ("liger", "Liger", "liger", "v"),
)


# -- renderers -------------------------------------------------------------------------------


def _log2_axis(ax, cols: Iterable[int]) -> None:
    ticks = sorted(set(cols))
    # Non-powers of two between close powers of two print over each other: then only 2^k is labelled.
    crowded = len(ticks) > 10 and any(b / a < 1.3 for a, b in zip(ticks, ticks[1:]))
    labels = ["" if crowded and n & (n - 1) else _short(n) for n in ticks]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, rotation=45 if len(ticks) > 6 else 0, ha="right" if len(ticks) > 6 else "center")
    ax.minorticks_off()
    ax.set_xlabel("N (reduction length, elements per row; log2 scale)")


def _short(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


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


def _series_groups(points: Sequence[ShapePoint]):
    """(gpu, M) groups: one line per GPU, and per row count when M varies at the same N."""
    gpus_ = sorted({p.gpu for p in points})
    for gi, g in enumerate(gpus_):
        for mi, (m, group) in enumerate(row_groups([p for p in points if p.gpu == g])):
            pts = sorted(group, key=lambda p: p.cols)
            parts = ([pts[0].gpu_name] if len(gpus_) > 1 else []) + ([f"M={m}"] if m is not None else [])
            yield pts, LINESTYLES[mi % len(LINESTYLES)], MARKERS[gi % len(MARKERS)], ", ".join(parts)


def _legend_below(ax, ncol: int = 2, title: str | None = None) -> None:
    # Below the plot area: a legend inside would hide points at one end of N or the other.
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=ncol, frameon=False,
              title=title, title_fontsize="small")


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
    return _finish_bandwidth(ax, [p.cols for p in pts] + [n for s in extra for n in s.cols], title, legend)


def _finish_bandwidth(ax, cols, title: str, legend: bool, note: str | None = None):
    """Axes, title, grid and legend (``note``: its title) shared by the GB/s-vs-N figures."""
    _log2_axis(ax, cols)
    ax.set_ylabel("bandwidth (GB/s, minimal traffic)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if note:
        note = "\n".join(textwrap.wrap(note, 90))
    if legend:
        _legend_below(ax, title=note)
    elif note:
        title += "\n" + note
    ax.set_title(title, fontsize="medium")
    return ax


def plot_validation(ax, points: Sequence[ValidationPoint], kernel: str, dtype: str = "bf16",
                    rows: int | None = None, legend: bool = True):
    """GB/s vs N from one heuristic file's validation records: Inductor default, heuristics, best found,
    Quack, Liger (all timed in the same interleaved rounds) and that run's copy ceiling (dashed).

    Lines join shapes of the same M only, and only where that M has ``MIN_LINE`` shapes or more (two
    shapes of one M are often unrelated, e.g. an LLM shape and a sweep point); other shapes are bare
    markers labelled MxN.
    Best found where the study found nothing better is Inductor's default: hollow marker at the
    default's GB/s.  Heuristic points the record marks as regressed get a red ring.  Variants missing
    at some shapes (peer not importable or not the same op, shape not studied) are listed in the legend.
    """
    pts = [p for p in points if p.kernel == kernel and p.dtype == dtype and (rows is None or p.rows == rows)]
    if not pts:
        return _empty(ax, f"no validation record of {kernel} {dtype}" + (f" at M={rows}" if rows else ""))
    runs = sorted({(p.heuristics_path, p.digest) for p in pts})
    if len(runs) > 1:
        raise ValueError(f"points of {len(runs)} heuristic files/digests; pass those of one run")
    at = {(p.rows, p.cols, p.variant): p for p in pts}
    base = sorted((p for p in pts if p.variant == "inductor_default"), key=lambda p: p.cols)  # one per shape
    by_m = collections.defaultdict(list)
    for d in base:
        by_m[d.rows].append(d)
    lines = sorted((g for g in by_m.values() if len(g) >= MIN_LINE), key=lambda g: (-len(g), g[0].rows))
    alone = [d for g in by_m.values() if len(g) < MIN_LINE for d in g]
    series = [v for v in VALIDATION_SERIES if any(p.variant == v[0] for p in pts)]
    series += [(n, n, "peer", "x") for n in sorted({p.variant for p in pts} - {v[0] for v in VALIDATION_SERIES})]
    hollow = False  # the stand-in's legend entry is drawn once
    for name, label, color, marker in series:
        drawn = False
        for gi, group in enumerate(lines + [[d] for d in alone]):
            own = [at.get((d.rows, d.cols, name)) for d in group]
            # the study's winner was Inductor's default: drawn there, hollow
            kept = [name == "best_found" and p is None and bool(d.studied) for p, d in zip(own, group)]
            ys = [p.gbps if p else (d.gbps if k else math.nan) for p, d, k in zip(own, group, kept)]
            if all(math.isnan(y) for y in ys):
                continue
            tag = f" (M={group[0].rows})" if len(lines) > 1 and gi < len(lines) else ""
            ax.plot([d.cols for d in group], ys, ls=LINESTYLES[gi % len(LINESTYLES)] if gi < len(lines) else "none",
                    marker=marker, color=COLORS[color], label=label + tag if tag or not drawn else "_nolegend_")
            drawn = True
            if any(kept):
                ax.scatter([d.cols for d, k in zip(group, kept) if k], [y for y, k in zip(ys, kept) if k],
                           marker=marker, facecolors="white", edgecolors=COLORS[color], zorder=3,
                           label="_nolegend_" if hollow else "best found = Inductor default (study found no gain)")
                hollow = True
    bad = [at[(d.rows, d.cols, "heuristics")] for d in base if d.regressed and (d.rows, d.cols, "heuristics") in at]
    if bad:
        ax.scatter([p.cols for p in bad], [p.gbps for p in bad], s=160, facecolors="none", lw=1.5, zorder=4,
                   edgecolors=COLORS["default"], label="heuristics regressed beyond noise (record's verdict)")
    for i, d in enumerate(sorted(alone, key=lambda d: d.cols)):
        top = max(p.gbps for p in pts if (p.rows, p.cols) == (d.rows, d.cols))
        ax.annotate(f"{d.rows}x{d.cols}", (d.cols, top), textcoords="offset points", ha="center",
                    xytext=(0, 8 if i % 2 == 0 else 16), fontsize="x-small")
    ceilings = sorted({round(p.ceiling_gbps) for p in pts})
    span = f"{ceilings[0]}" if len(ceilings) == 1 else f"{ceilings[0]}-{ceilings[-1]}"
    ax.axhline(max(p.ceiling_gbps for p in pts), color=COLORS["ceiling"], ls="--", lw=1,
               label=f"copy ceiling, measured in the run ({span} GB/s)")
    path, digest = runs[0]
    title = f"{kernel} {dtype}: validation of {path.rsplit('/', 1)[-1]} ({digest[:8]})"
    if len(lines) == 1:
        title += f"\nlines: M={lines[0][0].rows}" + ("; other shapes labelled MxN" if alone else "")
    elif not lines:
        title += "\nevery shape at its own M (labelled MxN)"
    return _finish_bandwidth(ax, [d.cols for d in base], title, legend, _missing_note(pts, base))


def _missing_note(pts: Sequence[ValidationPoint], base: Sequence[ValidationPoint]) -> str | None:
    """Which variants lack a measurement at some validated shapes, and why (the reasons in the records' notes)."""
    have = collections.Counter(p.variant for p in pts)
    parts = []
    for name, label, *_ in VALIDATION_SERIES:
        count = max(have[name], sum(bool(d.studied) for d in base)) if name == "best_found" else have[name]
        if count >= len(base):
            continue
        where = "any shape" if count == 0 else f"{len(base) - count} of {len(base)} shapes"
        if name == "best_found":
            parts.append(f"best found: not studied at {where}")
            continue
        # notes read "liger: not importable here (ModuleNotFoundError: ...)": keep the part before " ("
        why = collections.Counter(n.split(": ", 1)[1].split(" (")[0] for d in base for n in d.notes
                                  if n.startswith(name + ": "))
        reasons = ", ".join(w if len(why) == 1 else f"{w}: {c}" for w, c in why.most_common())
        parts.append(f"{label}: none at {where}" + (f" ({reasons})" if reasons else ""))
    return ("missing data - " + "; ".join(parts)) if parts else None


def plot_config_field(ax, choices: Sequence[SlotChoice], kernel: str, field: str, dtype: str = "bf16",
                      rows: int | None = None, legend: bool = False):
    """One launch parameter of the main slot vs N: best found (steps) and Inductor's default (markers).

    Hollow best markers: the verdict found no significant gain, so the default stays in use.
    """
    sel = [c for c in choices if c.kernel == kernel and c.dtype == dtype and (rows is None or c.rows == rows)]
    if not sel:
        return _empty(ax, f"no {kernel} configs")
    value = (lambda c: int(c.persistent)) if field == "persistent" else (lambda c: getattr(c, field))
    if all(value(c) is None for c in sel):
        return _empty(ax, f"{kernel}: {field}\nunused: every config here is persistent")
    for source, style in (("best", dict(where="mid", lw=2)), ("default", None)):
        for mi, (m, group) in enumerate(row_groups(sel)):
            pts = sorted((c for c in group if c.source == source and value(c) is not None), key=lambda c: c.cols)
            if not pts:
                continue
            tag = f" M={m}" if m is not None else ""
            xs, ys = [c.cols for c in pts], [value(c) for c in pts]
            marker = MARKERS[mi % len(MARKERS)]
            style = dict(style or {}, ls=LINESTYLES[mi % len(LINESTYLES)])
            if source == "best":
                # NaN where the field does not apply (R0_BLOCK of a persistent config) breaks the line there
                # instead of bridging two looped shapes across a persistent one.
                every = sorted((c for c in group if c.source == source), key=lambda c: c.cols)
                ax.step([c.cols for c in every], [math.nan if value(c) is None else value(c) for c in every],
                        color=COLORS["best"], alpha=0.8, **style)
                gain = [(x, y) for c, x, y in zip(pts, xs, ys) if c.improved is not False]
                kept = [(x, y) for c, x, y in zip(pts, xs, ys) if c.improved is False]
                for sel_, face, text in ((gain, COLORS["best"], "best found"),
                                         (kept, "white", "best candidate, within noise (default kept)")):
                    if sel_:
                        ax.scatter(*zip(*sel_), color=face, edgecolors=COLORS["best"], marker=marker, zorder=3,
                                   label=f"{text}{tag}")
            else:
                ax.scatter(xs, ys, color=COLORS["default"], marker="x" if mi == 0 else "+", s=60, zorder=4,
                           label=f"Inductor default{tag}")
    _log2_axis(ax, [c.cols for c in sel])
    if field == "persistent":
        ax.set_yticks([0, 1], ["looped", "persistent"])
        ax.set_ylim(-0.3, 1.3)
    else:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(_int_formatter())
        ax.minorticks_off()
    ax.set_ylabel(field + ("" if field == "persistent" else " (log2)"))
    ax.set_title(f"{kernel}: {field}", fontsize="medium")
    ax.grid(True, alpha=0.3)
    if legend:
        _legend_below(ax, ncol=1)
    return ax


def _int_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:g}")


def plot_speedup_heatmap(ax, points: Sequence[ShapePoint], dtype: str = "bf16"):
    """Speedup of best over default per (kernel, M) x N; each cell shows the per-round range.

    Cells without a significant gain are drawn at 1.0 (grey text "="), cells without a verdict blank.
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
    top = max(2.0, float(np.nanmax(grid)) if np.isfinite(grid).any() else 2.0)
    from matplotlib.colors import LogNorm

    image = ax.imshow(grid, cmap="viridis", norm=LogNorm(vmin=1.0, vmax=top), aspect="auto")
    for p in pts:
        i, j = ylabels.index(label(p)), xs.index(p.cols)
        if p.improved is None:
            text = "no\nverdict"
        elif p.improved:
            text = f"{p.speedup:.2f}\n[{p.speedup_low:.2f}-{p.speedup_high:.2f}]"
        else:
            text = "="
        bright = not math.isfinite(grid[i, j]) or grid[i, j] > math.sqrt(top)
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color="black" if bright else "white")
    ax.set_xticks(range(len(xs)), [_short(n) for n in xs])
    ax.set_yticks(range(len(ylabels)), ylabels)
    ax.set_xlabel(f"N (reduction length, elements per row{m_note})")
    ax.set_title(f"speedup of best config over Inductor default ({dtype}); '=' within noise")
    bar = ax.figure.colorbar(image, ax=ax, label="speedup (x, log scale)")
    bar.set_ticks([t for t in (1, 1.25, 1.5, 2, 3, 4, 6, 8) if t <= top])
    bar.ax.yaxis.set_major_formatter(_int_formatter())
    bar.ax.yaxis.set_minor_formatter(_int_formatter())
    bar.ax.minorticks_off()
    return ax


def kernel_order(kernel: str) -> tuple[str, int]:
    base, _, direction = kernel.rpartition("_")
    return base, 0 if direction == "fwd" else 1


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


def _empty(ax, text: str):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return ax
