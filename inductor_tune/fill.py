"""Time a size group's leading candidates at the shapes that lack them (``crossmeasure --fill``).

A rule needs one config timed interleaved with the default at every shape of its group (or row band),
probes included (``FitParams.min_coverage``).  Each round of new data breaks that: a new study, a span
probe placed for another rule, or a row band cut at new rows brings shapes where the group's best config
was never timed.  On an H200 a stop-35 refit kept Inductor's default on 45 groups or bands for that
reason alone, among them the RMSNorm and LayerNorm forwards at N 2049..4096: no config was timed at all of
their 87-198 shapes, and Inductor's default reached 0.33-0.52 of the best found there (the LayerNorm forward
at 8553x3757 of held-out set 22 was left at 0.604 of its best found).  Two fills left 29.

So, per group and per row band the fit would cut, where no adoptable config is covered, the ``per_set`` adoptable
candidates timed at the most shapes (no loss beyond noise where timed, a gain beyond it), and at a fifth
of them at least, are timed at every shape of the set that lacks them.  A config timed at one shape of a
hundred is a guess, and filling it in costs a hundred timings: on that H200 data the fifth cut the plan
from 1582 shapes to 828.  The configs, the shapes and the sets all come from the fit's own
points, none from a held-out draw; whether the candidates then win is for ``distill`` to decide, and a
rule they give still settles against span probes before it ships.

A set whose covered configs all lose somewhere is filled too (stop 37).  Every fused mix-order backward
group of the stop-36 H200 data had a covered config that lost beyond noise at some shape, so the fill left
them alone while candidates with no loss where timed sat at 1-17 of their 5-45 shapes; those groups kept
Inductor's default, and their backwards leave the largest best-found gaps.
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

from .crossmeasure import PlanItem
from .distill import candidates, families, fit_group, fit_rules, row_bands, rows_of, score, splittable
from .points import ShapePoint
from .fitparams import FitParams
from .rowbands import col_cuts, cuts
from .space import SlotConfig

# The least share of a set's shapes a candidate must be timed at already to be filled in (the docstring says why).
# `crossmeasure --fill-share` sets another: at 0 (stop 36) every uncovered set with an adoptable candidate is filled,
# 1035 shapes on that H200 data, since a fifth had left 35 of 36 uncovered sets as they were.
MIN_SHARE = 0.2
# The origin of a config with no proposing study on record (a record naming no proposer reads as a span probe).
FILL_ORIGIN = "coverage fill"


def fill_sets(points: Sequence[ShapePoint], params: FitParams = FitParams()) -> Iterator[tuple[ShapePoint, ...]]:
    """Each size group's shapes, then, where the fit may cut its rows in two bands (``distill.splittable``), both
    sides of every cut (``rowbands.cuts``; of N too with ``FitParams.split_cols``, ``rowbands.col_cuts``), not only
    of the cut the fit chooses today.

    The cut the fit chooses is decided by coverage too: on an H200 (stop 41) a persistent config of the
    RMSNorm training forward at N 1025..2048 (XBLOCK 1, 4 warps) won 1.07-1.56x at each of 221 shapes from 4113 to
    262144 rows, but one study shape of 17533 rows never had it timed, so the fit cut at 65536 rows, and a fill of
    that cut's bands never planned the one timing that moves the cut down (held-out set 31 reached 0.75 of its best
    found at 4725x1631 there)."""
    for (kind, *_), groups in families(points).items():
        family_rows = rows_of(groups)
        for r in sorted(groups):
            fit = fit_group(groups[r], params)
            yield fit.points
            if not splittable(kind, fit, params):
                continue
            n_cuts = col_cuts(fit.points, params.min_band_shapes) if params.split_cols else ()
            for low, high in (*cuts(fit.points, params.min_band_shapes), *n_cuts):
                yield tuple(low)
                yield tuple(high)
            if params.split_cols:
                # The row bands the fit cuts today, cut once more in N where no config serves them (``rowbands``).
                for band_points in _row_bands_today(kind, fit, family_rows, params):
                    for low, high in col_cuts(band_points, params.min_band_shapes):
                        yield tuple(low)
                        yield tuple(high)


def _row_bands_today(kind: str, fit, family_rows: tuple[int, int], params: FitParams) -> list[tuple[ShapePoint, ...]]:
    """The shapes of each row band of the cut the fit makes today (a band it cut in N again counts whole)."""
    bands = row_bands(kind, fit, family_rows, params) or ()
    by_rows: dict[tuple[int, int], list[ShapePoint]] = {}
    for band in bands:
        if band.axis != "cols":
            by_rows.setdefault(band.xnumel, []).extend(band.fit.points)
    return [tuple(points) for points in by_rows.values()]


def leading_uncovered(shapes: Sequence[ShapePoint], per_set: int, params: FitParams = FitParams(),
                      min_share: float = MIN_SHARE) -> list:
    """The ``per_set`` adoptable candidates timed at the most of ``shapes`` (and at ``min_share`` of them at
    least), where no adoptable config is timed at enough of them to be covered; [] where one is."""
    need = max(params.min_shapes, math.ceil(params.min_coverage * len(shapes)))
    ranked = candidates(shapes, params)
    if any(len(c.measured) >= need and c.adoptable for c in ranked):
        return []
    adoptable = [c for c in ranked if c.adoptable and len(c.measured) >= min_share * len(shapes)]
    return sorted(adoptable, key=lambda c: (-len(c.measured), -c.gain, c.config.describe()))[:per_set]


def fill_plan(points: Sequence[ShapePoint], per_set: int, params: FitParams = FitParams(),
              max_configs: int = 10, min_share: float = MIN_SHARE, max_shapes: int | None = None) -> list[PlanItem]:
    """Per shape lacking them, the leading candidates of each uncovered set it belongs to (``fill_sets``),
    at most ``max_configs``; ``min_share``: the least share of a set's shapes a candidate is timed at already;
    ``max_shapes``: the sets that fit in that many shapes to time, where the fit leaves the most first (``within``)."""
    chosen = [(shapes, leading) for shapes in fill_sets(points, params)
              if (leading := leading_uncovered(shapes, per_set, params, min_share))]
    if max_shapes is not None:
        chosen = within(chosen, max_shapes, shortfall(points, params))
    at: dict[tuple, ShapePoint] = {}
    wanted: dict[tuple, list[SlotConfig]] = {}
    for shapes, leading in chosen:
        for candidate in leading:
            measured = {_key(p) for p in candidate.measured}
            for p in shapes:
                configs = wanted.setdefault(_key(p), [])
                at[_key(p)] = p
                if _key(p) not in measured and candidate.config not in configs:
                    configs.append(candidate.config)
    proposers: dict[SlotConfig, set[str]] = {}
    for p in points:
        for cfg in p.proposed:
            proposers.setdefault(cfg, set()).add(p.label)
    items = []
    for key in sorted(k for k in wanted if wanted[k]):
        p, configs = at[key], tuple(wanted[key][:max_configs])
        items.append(PlanItem(p, configs, tuple(tuple(sorted(proposers.get(c, ()))) or (FILL_ORIGIN,)
                                                for c in configs)))
    return items


def shortfall(points: Sequence[ShapePoint], params: FitParams = FitParams()) -> dict[tuple, float]:
    """Per shape, the log of its best found over what the fit's rule launches there today (before span settling):
    Inductor's default where the rule keeps it, where no rule covers the shape, or where its config was not timed.

    Inductor's default alone overstates it: fill sets are also the two sides of cuts the fit does not make, and on
    the H200's data of stop 73 the set ranked second (softmax forwards, r 4096, 312 shapes, the default 2.03x short
    of the best found) lay inside a config rule of 289 shapes."""
    return {_key(p): math.log(p.best / (row["speedup"] or 1.0))
            for p, row in zip(points, score(fit_rules(points, params), points, params))}


def within(chosen: Sequence[tuple[tuple[ShapePoint, ...], list]], max_shapes: int, left: dict[tuple, float]) -> list:
    """The (set, leading candidates) of ``chosen`` whose shapes to time fit in ``max_shapes``, taken by what the fit
    leaves to the best found at their shapes (``left``, ``shortfall``) per shape to time, largest first; a set too
    large for what is left is passed.

    A fill that takes candidates timed at any share plans a shape per shape of every uncovered set: on the H200's
    data of stop 73, 12415 shapes, some forty calls. What a fill could win back is the shortfall at a set's shapes,
    which every study and crossmeasure record already measured; a leading candidate's own gain, where it was timed
    at one shape, is that one timing's luck as much as the config's."""
    ranked = []
    for shapes, leading in chosen:
        timed_by = [{_key(m) for m in c.measured} for c in leading]
        lacking = {_key(p) for p in shapes if any(_key(p) not in keys for keys in timed_by)}
        worth = sum(max(0.0, left[_key(p)]) for p in shapes) / max(1, len(lacking))
        ranked.append((worth, lacking, shapes, leading))
    taken, timed, seen = [], set(), set()
    for _, lacking, shapes, leading in sorted(ranked, key=lambda entry: entry[0], reverse=True):
        key = tuple(_key(p) for p in shapes)
        new = lacking - timed
        if key in seen or len(timed) + len(new) > max_shapes:
            continue
        seen.add(key)
        timed |= new
        taken.append((shapes, leading))
    return taken


def _key(point: ShapePoint) -> tuple:
    # A focused point is one kernel of its problem: two of one problem differ by their kernel.
    return (point.kernel, point.rows, point.cols, point.dtype, point.probe, point.problem,
            point.slot.key if point.problem else "")
