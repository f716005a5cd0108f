"""Split one size group of a fit into two bands of rows where no config serves all of its rows.

A size group (kernel kind, signature, element size, next_pow2(N)) is first fitted over every row count
its family was measured at, since most kernels launch rows / XBLOCK programs and a config that wins at
some rows tends to win at all of them.  Not always: on an H200 a persistent RMSNorm forward config won
1.2-1.8x at 114003 and 262144 rows and lost at one probe of 2076 rows, and the one rule for the whole
group had to keep Inductor's default at every row count (docs/rules.md, stops 21 and 23).

So where the whole-group fit keeps the default, ``split`` tries each cut between two of the group's
row buckets (next_pow2(rows)), fits each side on its own shapes, and keeps the cut under which a config
serves the most shapes.  One cut at most: a band is a claim about rows, and each claim needs span probes
of its own before it ships (``crossmeasure.span_probes``, ``distill.unsettled_rules``).  The low band
reaches down to the family's fewest rows and the high band up to its most, as an unsplit rule does; row
buckets between the two bands that the group never measured stay with Inductor's default.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterator, Protocol, Sequence

from .evidence import ShapePoint
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
    fit: GroupFit  # the fit of the band's own shapes


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
          family_rows: tuple[int, int], min_band_shapes: int = 2) -> tuple[Band, Band] | None:
    """The two bands of the best cut, or None where no cut lets a config serve one side.  ``fit`` fits
    one group of shapes (``distill.fit_group`` with the fit's parameters); each side needs at least
    ``min_band_shapes`` shapes, probes included."""
    best, best_key = None, None
    for low, high in cuts(points, min_band_shapes):
        low_top, high_bottom = max(p.x_pow2 for p in low), min(p.x_pow2 for p in high)
        fits = (fit(low), fit(high))
        served = [f for f in fits if f.config is not None]
        if not served:
            continue
        # Most shapes served first, then the larger total log-gain; the lower cut breaks exact ties.
        key = (sum(len(f.points) for f in served), sum(len(f.points) * math.log(f.evidence.gain_geomean)
                                                       for f in served))
        if best_key is None or key > best_key:
            best_key = key
            best = (Band((family_rows[0], low_top), fits[0]), Band((high_bottom, family_rows[1]), fits[1]))
    return best
