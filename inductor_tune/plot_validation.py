"""GB/s vs N from the validation records of one heuristic file: the Quack-style figure.

Inductor's default, the installed rules, the best config found, Quack and Liger, all timed in the
same interleaved rounds of one ``inductor-tune validate`` run, against the copy ceiling that run
measured.  A variant the record holds no rounds of is absent from the figure (never drawn as zero)
and the legend says where and why.
"""

from __future__ import annotations

import collections
import math
from typing import Sequence

from .figdata import ValidationPoint
from .plotkit import COLORS, LINESTYLES, empty, finish_bandwidth

MIN_LINE = 3  # plot_validation joins shapes of one M by a line from this many on
# Past this many shapes at an M of their own (a random gate draw), MxN labels would cover the points.
MAX_SHAPE_LABELS = 8
# Validation variants as stored by `inductor-tune validate`: name, legend label, color key, marker.
VALIDATION_SERIES = (
    ("inductor_default", "Inductor default", "default", "o"),
    # Since stop 59, where the rules touched a problem: the default compiled again, its compile-to-compile spread.
    ("inductor_default_again", "Inductor default, second compile", "default", "."),
    ("heuristics", "heuristics (rules installed)", "heuristic", "s"),
    ("best_found", "best found (study's per-shape winner)", "best", "^"),
    ("quack", "Quack", "quack", "D"),
    ("liger", "Liger", "liger", "v"),
)


def plot_validation(ax, points: Sequence[ValidationPoint], kernel: str, dtype: str = "bf16",
                    rows: int | None = None, legend: bool = True):
    """GB/s vs N from one heuristic file's validation records: Inductor default, heuristics, best found,
    Quack, Liger (all timed in the same interleaved rounds) and that run's copy ceiling (dashed).

    Lines join shapes of the same M only, and only where that M has ``MIN_LINE`` chosen shapes or more
    (two shapes of one M are often unrelated, e.g. an LLM shape and a sweep point; problems of a random
    draw never are); other shapes are bare markers, labelled MxN while there are few of them.
    Best found where the study found nothing better is Inductor's default: hollow marker at the
    default's GB/s.  Heuristic points the record marks as regressed get a red ring.  Variants missing
    at some shapes (peer not importable or not the same op, shape not studied, rules not timed where
    they changed no kernel) are absent there and listed in the legend.
    """
    pts = [p for p in points if p.kernel == kernel and p.dtype == dtype and (rows is None or p.rows == rows)]
    if not pts:
        return empty(ax, f"no validation record of {kernel} {dtype}" + (f" at M={rows}" if rows else ""))
    runs = sorted({(p.heuristics_path, p.digest) for p in pts})
    if len(runs) > 1:
        raise ValueError(f"points of {len(runs)} heuristic files/digests; pass those of one run")
    base = sorted((p for p in pts if p.variant == "inductor_default"), key=lambda p: p.cols)  # one per shape
    measured = [p for p in pts if p.measured]
    by_m = collections.defaultdict(list)
    for d in base:
        by_m[(d.rows, d.drawn)].append(d)
    joined = lambda g: len(g) >= MIN_LINE and not g[0].drawn  # noqa: E731
    lines = sorted((g for g in by_m.values() if joined(g)), key=lambda g: (-len(g), g[0].rows))
    alone = [d for g in by_m.values() if not joined(g) for d in g]
    _draw_series(ax, measured, lines, alone)
    _draw_changes(ax, measured, alone)
    at = {(p.rows, p.cols, p.variant): p for p in measured}
    bad = [at[(d.rows, d.cols, "heuristics")] for d in base if d.regressed and (d.rows, d.cols, "heuristics") in at]
    if bad:
        ax.scatter([p.cols for p in bad], [p.gbps for p in bad], s=160, facecolors="none", lw=1.5, zorder=4,
                   edgecolors=COLORS["default"], label="heuristics regressed beyond noise (record's verdict)")
    labelled = len(alone) <= MAX_SHAPE_LABELS
    if labelled:
        for i, d in enumerate(sorted(alone, key=lambda d: d.cols)):
            top = max(p.gbps for p in measured if (p.rows, p.cols) == (d.rows, d.cols))
            ax.annotate(f"{d.rows}x{d.cols}", (d.cols, top), textcoords="offset points", ha="center",
                        xytext=(0, 8 if i % 2 == 0 else 16), fontsize="x-small")
    ceilings = sorted({round(p.ceiling_gbps) for p in pts})
    span = f"{ceilings[0]}" if len(ceilings) == 1 else f"{ceilings[0]}-{ceilings[-1]}"
    ax.axhline(max(p.ceiling_gbps for p in pts), color=COLORS["ceiling"], ls="--", lw=1,
               label=f"copy ceiling, measured in the run ({span} GB/s)")
    path, digest = runs[0]
    title = f"{kernel} {dtype}: validation of {path.rsplit('/', 1)[-1]} ({digest[:8]})\n"
    return finish_bandwidth(ax, [d.cols for d in base], title + _layout_note(lines, alone, labelled), legend,
                            _missing_note(measured, base))


def _draw_series(ax, measured: Sequence[ValidationPoint], lines: list[list], alone: list) -> None:
    """Each variant: one line per M of ``lines``, bare markers at the shapes of ``alone``; NaN (a gap) where
    the variant has no rounds."""
    at = {(p.rows, p.cols, p.variant): p for p in measured}
    # A peer's legend names the version the records compared, where they kept it ("Quack 0.6.5").
    versions = {p.variant: p.version for p in measured if p.version}
    series = [(n, f"{label} {versions[n]}" if n in versions else label, *rest)
              for n, label, *rest in VALIDATION_SERIES if any(p.variant == n for p in measured)]
    series += [(n, n, "peer", "x") for n in sorted({p.variant for p in measured} - {v[0] for v in VALIDATION_SERIES})]
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


def _draw_changes(ax, measured: Sequence[ValidationPoint], alone: list) -> None:
    """At shapes no line joins, a thin segment from the default to the rules where the rules changed a kernel:
    the eye finds the pair without a line to follow."""
    at = {(p.rows, p.cols, p.variant): p for p in measured}
    for d in alone:
        rules = at.get((d.rows, d.cols, "heuristics"))
        if rules is not None and d.applied:
            ax.plot([d.cols, d.cols], [d.gbps, rules.gbps], color=COLORS["heuristic"], lw=1, alpha=0.6, zorder=1,
                    label="_nolegend_")


def _layout_note(lines: list[list], alone: list, labelled: bool) -> str:
    """The title's second line: which shapes a line joins and how the others are marked."""
    if len(lines) == 1:
        rest = ("; other shapes labelled MxN" if labelled else f"; {len(alone)} other shapes") if alone else ""
        return f"lines: M={lines[0][0].rows}{rest}"
    if lines:
        return "one line per M" + (f"; {len(alone)} other shapes" if alone and not labelled else "")
    if labelled:
        return "every shape at its own M (labelled MxN)"
    ms = sorted(d.rows for d in alone)
    return f"{len(alone)} shapes, each at its own M ({ms[0]}..{ms[-1]} rows)"


def _missing_note(measured: Sequence[ValidationPoint], base: Sequence[ValidationPoint]) -> str | None:
    """Which variants lack a measurement at some validated shapes, and why (the reasons in the records' notes)."""
    have = collections.Counter(p.variant for p in measured)
    parts = []
    for name, label, *_ in VALIDATION_SERIES:
        if name == "inductor_default_again":  # timed only where the rules touched a problem: its absence is no gap
            continue
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
