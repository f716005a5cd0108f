"""Unsplit rules: where an inner reduction Inductor splits into two kernels is faster as one.

Inductor splits an inner reduction with fewer outputs than 2 x SMs and more than 8192 elements
(``InductorChoices.reduction_split_factor``).  Per-shape best found showed the largest gaps left there:
on an H200, add_rmsnorm_fwd 263x18684 ran 1.39x faster with ``split_reductions=False`` and a tuned
config, and no launch rule can reach such a problem, whose studies change two kernels together.

The evidence is a plain A/B: ``probe`` writes a heuristic file that keeps every split reduction of the
region in one kernel, ``inductor-tune validate PROBE --draw TRAIN`` times it against Inductor's default,
interleaved, on a seeded training draw, and ``fit`` keeps the cells (rows band x N octave) where no
problem lost beyond its noise band and the geomean gained beyond the noise floor.  A rule covers only
the rows and lengths its cell's problems measured, and a win is scored again on a held-out draw (the
gate) before the file ships.  The one kernel takes its launch config from the launch rules or from
Inductor, exactly as in the A/B.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from .gate import COLS
from .runtime.rulefile import INNER_SPLIT_MIN_RNUMEL
from .runtime.rules import Evidence, Heuristics, UnsplitSpec
from .shapes import Shape
from .stats import NOISE_FLOOR, geomean
# Rows bands (inclusive lower edges) and N octaves of the cells a rule may cover: a cell is where the
# decision was measured as one; finer cells would hold too few training problems to call a win.
ROW_EDGES = (1, 16, 32, 64, 128)
MIN_PROBLEMS = 3


@dataclasses.dataclass(frozen=True)
class ABPoint:
    """One training problem of the probe: Inductor's split against one kernel, interleaved rounds."""

    kernel: str
    rows: int
    cols: int
    ratio: float  # default time / unsplit time (median of rounds)
    band: float  # the noise band: the default's round-to-round spread, at least NOISE_FLOOR

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.rows}x{self.cols}"


def region(heur: Heuristics) -> tuple[tuple[int, int], tuple[int, int]]:
    """(rows, cols) spans where Inductor splits an inner reduction on the file's GPU."""
    # N no further than the gate draws it: no evidence reaches beyond.
    return (1, 2 * heur.gpu.sm_count - 1), (INNER_SPLIT_MIN_RNUMEL, COLS[1])


def probe(heur: Heuristics) -> Heuristics:
    """``heur`` plus one unsplit rule over the whole split region: what the training A/B measures."""
    rows, cols = region(heur)
    spec = UnsplitSpec(rows, cols, Evidence(note="probe: keeps every split inner reduction in one kernel, to be "
                                                 "measured against Inductor's split; not a proposed default"))
    return dataclasses.replace(heur, unsplit=(spec,))


def points_from_rows(rows) -> list[ABPoint]:
    """ABPoints from ``validate.ValidationRow``s of a probe run (``figdata.validation_rows``): the problems an
    unsplit rule touched, inside the split region."""
    from .validate import HEURISTICS

    out = []
    for r in rows:
        heur = r.variant(HEURISTICS)
        shape = Shape.parse(r.shape)
        if heur is None or not r.heuristics_applied or shape.cols < INNER_SPLIT_MIN_RNUMEL:
            continue
        out.append(ABPoint(r.kernel, shape.rows, shape.cols, heur.ratio_to_default, max(r.noise, NOISE_FLOOR)))
    return out


def cells(heur: Heuristics) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The rows band x N octave cells of the split region, in order."""
    (_, rows_hi), (cols_lo, cols_hi) = region(heur)
    edges = [e for e in ROW_EDGES if e <= rows_hi] + [rows_hi + 1]
    bands = [(lo, hi - 1) for lo, hi in zip(edges, edges[1:])]
    octaves, lo = [], cols_lo
    while lo <= cols_hi:
        hi = min(cols_hi, 1 << (lo - 1).bit_length())
        octaves.append((lo, hi))
        lo = hi + 1
    return [(b, o) for b in bands for o in octaves]


def cell_verdict(points: Sequence[ABPoint]) -> str | None:
    """Why a cell's problems do not make a rule, or None when they do."""
    if len(points) < MIN_PROBLEMS:
        return f"{len(points)} problem(s), fewer than {MIN_PROBLEMS}"
    lost = [p for p in points if p.ratio < 1 - p.band]
    if lost:
        worst = min(lost, key=lambda p: p.ratio)
        return f"{len(lost)} lost beyond noise (worst {worst.label} {worst.ratio:.3f})"
    gain = geomean([p.ratio for p in points])
    if gain < 1 + NOISE_FLOOR:
        return f"geomean {gain:.3f} is no win beyond the {NOISE_FLOOR:.1%} noise floor"
    return None


def fit(heur: Heuristics, points: Sequence[ABPoint], sources: Sequence[str]) -> tuple[Heuristics, list[str]]:
    """``heur`` with the unsplit rules its cells earn (replacing any it had), and one line per cell."""
    specs, lines = [], []
    for (rows, cols) in cells(heur):
        inside = [p for p in points if rows[0] <= p.rows <= rows[1] and cols[0] <= p.cols <= cols[1]]
        why = cell_verdict(inside)
        where = f"rows {rows[0]}..{rows[1]} N {cols[0]}..{cols[1]}"
        if why is not None:
            lines.append(f"{where}: Inductor's split kept: {why}")
            continue
        ratios = [p.ratio for p in inside]
        spec = UnsplitSpec(
            (min(p.rows for p in inside), max(p.rows for p in inside)),
            (min(p.cols for p in inside), max(p.cols for p in inside)),
            Evidence(shapes=tuple(p.label for p in inside), measured=tuple(p.label for p in inside),
                     gain_geomean=round(geomean(ratios), 4), gain_min=round(min(ratios), 4),
                     gain_max=round(max(ratios), 4), noise=round(max(p.band for p in inside), 4),
                     note="one kernel against Inductor's split, interleaved (validate of the probe); "
                          "the measured span of a cell with no loss beyond noise"),
        )
        specs.append(spec)
        lines.append(f"{where}: one kernel: {len(inside)} problems, geomean {spec.evidence.gain_geomean:.3f}, "
                     f"worst {spec.evidence.gain_min:.3f}; covers rows {spec.rows[0]}..{spec.rows[1]} "
                     f"N {spec.cols[0]}..{spec.cols[1]}")
    provenance = dict(heur.provenance, unsplit_evidence=list(sources))
    return dataclasses.replace(heur, unsplit=tuple(specs), provenance=provenance), lines

