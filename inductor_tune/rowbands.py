"""Split one size group of a fit into two bands, of rows or of N, where no config serves all of it.

A size group (kernel kind, signature, element size, next_pow2(N)) is first fitted over every row count
its family was measured at, since most kernels launch rows / XBLOCK programs and a config that wins at
some rows tends to win at all of them.  Not always: on an H200 a persistent RMSNorm forward config won
1.2-1.8x at 114003 and 262144 rows and lost at one probe of 2076 rows, and the one rule for the whole
group had to keep Inductor's default at every row count (docs/rules.md, stops 21 and 23).

So where the whole-group fit keeps the default, ``split`` tries each cut between two of the group's
row buckets (next_pow2(rows)), fits each side on its own shapes, and keeps the cut under which a config
serves the most shapes.  One cut in rows at most: a band is a claim about rows, and each claim needs span
probes of its own before it ships (``crossmeasure.span_probes``, ``distill.unsettled_rules``).  The low band
reaches down to the family's fewest rows and the high band up to its most, as an unsplit rule does; row
buckets between the two bands that the group never measured stay with Inductor's default.

A group may also be cut in N (``FitParams.split_cols``): between two eighths of its octave of N, or just below
the power of two itself.  On an H200 the LayerNorm forwards at N 4097..8192 from 2048 rows (26 shapes) had
configs that won up to 1.45x at N 4272..7374 and lost (0.67-0.98x) at N = 8192 exactly, where Inductor's
default needs no mask; a rule keyed on next_pow2(N) could not tell them apart, and held-out set 33's
``nn_layernorm_fwd`` 5943x5288 reached 0.60 of its best found (docs/rules.md, stop 41).  Each side of an N cut
covers the family's rows and only the N its own shapes were measured at (``distill.fit_rules`` takes a rule's
N span from its shapes); the N between the two sides stays with Inductor's default.  A row band that no config
serves may be cut once more, in N; no band is cut a third time.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterator, Protocol, Sequence

from .points import ShapePoint
from .heuristics import Evidence
from .space import SlotConfig


class GroupFit(Protocol):
    """What ``split`` reads of a fit (``distill.GroupFit``, which imports this module)."""
    points: tuple[ShapePoint, ...]
    config: SlotConfig | None
    evidence: Evidence


@dataclasses.dataclass(frozen=True)
class Band:
    xnumel: tuple[int, int]  # the pow2 row buckets the band's rule covers
    fit: GroupFit  # the fit of the band's own shapes (its N span is theirs)
    axis: str = "rows"  # what the cut divided: "rows" or "cols" (N)


# Parts of an octave of N a cut in N may fall between; one more part is the power of two itself.
N_PARTS = 8
# An octave narrower than this is not cut in N: its parts would hold one N each.
MIN_CUT_OCTAVE = 16


def n_part(cols: int, r_pow2: int) -> int:
    """Which part of its octave (r_pow2 / 2, r_pow2] an N lies in: 1..N_PARTS, or N_PARTS + 1 for the power of two
    itself, where a kernel's block needs no mask."""
    if cols == r_pow2:
        return N_PARTS + 1
    half = r_pow2 // 2
    return max(1, -(-(cols - half) * N_PARTS // half))


def col_cuts(points: Sequence[ShapePoint],
             min_band_shapes: int = 2) -> Iterator[tuple[list[ShapePoint], list[ShapePoint]]]:
    """The two sides of each cut in N between two parts of the group's octave (``n_part``) with ``min_band_shapes``
    shapes or more on each side, lowest cut first; none where the octave is narrower than ``MIN_CUT_OCTAVE``."""
    if not points or points[0].r_pow2 < MIN_CUT_OCTAVE:
        return
    r = points[0].r_pow2
    parts = sorted({n_part(p.cols, r) for p in points})
    for low_top in parts[:-1]:
        low = [p for p in points if n_part(p.cols, r) <= low_top]
        high = [p for p in points if n_part(p.cols, r) > low_top]
        if min(len(low), len(high)) >= min_band_shapes:
            yield low, high


def cuts(points: Sequence[ShapePoint], min_band_shapes: int = 2) -> Iterator[tuple[list[ShapePoint], list[ShapePoint]]]:
    """The two sides of each cut between two of the group's row buckets with ``min_band_shapes`` shapes or more
    on each side, lowest cut first; each side keeps the order of ``points``."""
    buckets = sorted({p.x_pow2 for p in points})
    for low_top, high_bottom in zip(buckets, buckets[1:]):
        low = [p for p in points if p.x_pow2 <= low_top]
        high = [p for p in points if p.x_pow2 >= high_bottom]
        if min(len(low), len(high)) >= min_band_shapes:
            yield low, high


def split(points: Sequence[ShapePoint], fit: Callable[[Sequence[ShapePoint]], GroupFit],
          family_rows: tuple[int, int], min_band_shapes: int = 2, by_cols: bool = False) -> tuple[Band, ...] | None:
    """The bands of the best cut, or None where no cut lets a config serve one side.  ``fit`` fits
    one group of shapes (``distill.fit_group`` with the fit's parameters); each side needs at least
    ``min_band_shapes`` shapes, probes included.

    ``by_cols``: cuts in N compete with the cuts in rows, and a row band that no config serves is cut once more, in
    N (so three bands, or four): on that H200 the LayerNorm forwards at N 4097..8192 were served below 2048 rows, and
    above them lost at N = 8192 only."""
    row_cuts = [("rows", low, high) for low, high in cuts(points, min_band_shapes)]
    n_cuts = [("cols", low, high) for low, high in col_cuts(points, min_band_shapes)] if by_cols else []
    best = _best_cut([*row_cuts, *n_cuts], fit, family_rows)
    if best is None or not by_cols or best[0].axis != "rows":
        return best
    out: list[Band] = []
    for band in best:
        inner = None if band.fit.config is not None else _best_cut(
            [("cols", low, high) for low, high in col_cuts(band.fit.points, min_band_shapes)], fit, band.xnumel)
        out += [dataclasses.replace(b, axis="rows+cols") for b in inner] if inner else [band]
    return tuple(out)


def _best_cut(sides: Sequence[tuple[str, list[ShapePoint], list[ShapePoint]]],
              fit: Callable[[Sequence[ShapePoint]], GroupFit], rows: tuple[int, int]) -> tuple[Band, Band] | None:
    """The two bands of the cut (axis, low side, high side) under which a config serves the most shapes; ``rows``:
    the pow2 row buckets the cut shapes span, which both sides of a cut in N cover."""
    best, best_key = None, None
    for axis, low, high in sides:
        xnumels = (((rows[0], max(p.x_pow2 for p in low)), (min(p.x_pow2 for p in high), rows[1])) if axis == "rows"
                   else (rows, rows))
        fits = (fit(low), fit(high))
        served = [f for f in fits if f.config is not None]
        if not served:
            continue
        # Most shapes served first, then the larger total log-gain; the lower cut (a cut in rows before one
        # in N) breaks exact ties.
        key = (sum(len(f.points) for f in served), sum(len(f.points) * math.log(f.evidence.gain_geomean)
                                                       for f in served))
        if best_key is None or key > best_key:
            best_key = key
            best = (Band(xnumels[0], fits[0], axis), Band(xnumels[1], fits[1], axis))
    return best
