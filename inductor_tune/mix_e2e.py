"""End-to-end split autotuning of the fused mix-order backwards: entries fitted from a plain A/B.

Where Inductor fuses a norm's backward with its weight gradient (``MixOrderReduction.can_fuse`` in torch 2.11:
rows >= 4096, rows >= 2 N, rows x N >= 5 Mi elements, N <= 16384), the best split moves with the rows in ways no
rule of one config captured (docs/rules.md, stops 37 and 75), and Inductor's own split autotuner, which times the
fused kernel alone, lost end to end (stop 38). An ``end_to_end`` entry (``runtime.mix_autotune``) lets Inductor
time each split together with the reduction of the partial sums it leaves.

The evidence is a plain A/B, as for the unsplit rules (``inductor_tune.unsplit``): ``probe`` writes a file whose
only content is such entries over the whole fused region (no launch rule, so the A/B times the entry alone),
``inductor-tune validate PROBE --draw TRAIN`` times it against Inductor's default on a stratified training draw
(``stratified_problems``: problems in every rows band x N octave cell), and ``fit`` gives a file an entry for each
cell where every problem the entry changed, in every record, won beyond the noise floor
(``unsplit.cell_verdict(every_win=True)``; a problem whose autotuning kept Inductor's split compiled Inductor's own
program, and is left out): the entry covers the rows and N its problems measured. The fitted entries replace the
file's earlier split-autotune entries (their evidence timed the fused kernel alone; the provenance records them),
and a launch rule that matches a kernel still comes first. A held-out draw scores the fit once before it ships.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Container, Sequence

from .runtime.rulefile import _overlap
from .runtime.rules import Evidence, Heuristics, MixAutotuneSpec, mix_autotune_dict
from .shapes import ELEMENT_SIZES as ELEMENT_SIZE_OF
from .stats import geomean
from .unsplit import ABPoint, _octaves, cell_verdict, touched_points

# Inductor's fusion thresholds (torch 2.11 ``MixOrderReduction.can_fuse``, unchanged through 2.14).
MIN_ROWS = 4096
MIN_ELEMENTS = 5 * 2**20
MAX_COLS = 16384
# The draw's span: N from the gate's floor; rows up to 256 K, where a model step's tokens lie, and at most
# MAX_ELEMENTS, which keeps one problem's timing within a few seconds.
ROWS = (MIN_ROWS, 262144)
COLS = (128, MAX_COLS)
MAX_ELEMENTS = 2**29
ROW_BANDS = ((4096, 16384), (16385, 65536), (65537, 262144))
# Leaving Inductor's own split takes a split timed faster end to end by more than the timing's own noise.
MARGIN = 0.02
ELEMENT_SIZES = (2, 4)
# The norm backwards Inductor fuses this way (those of experiments/heldout_spans.py).
KERNELS = ("rmsnorm_bwd", "layernorm_bwd", "nn_rmsnorm_bwd", "nn_layernorm_bwd", "nn_layernorm_nobias_bwd",
           "llama_rmsnorm_bwd", "prenorm_rmsnorm_bwd")


def fused(rows: int, cols: int) -> bool:
    """Whether Inductor fuses a norm backward of ``rows`` x ``cols`` into one mix-order kernel."""
    return rows >= MIN_ROWS and rows >= 2 * cols and rows * cols >= MIN_ELEMENTS and cols <= MAX_COLS


def cells() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Rows band x N octave cells of the span that hold fused problems of at most MAX_ELEMENTS."""
    return [(band, octave) for band in ROW_BANDS for octave in _octaves(*COLS) if _drawable_cols(band, octave)]


def _rows_span(band: tuple[int, int], cols: int) -> tuple[int, int] | None:
    """The rows of ``band`` at which a problem of ``cols`` is fused and within MAX_ELEMENTS, or None."""
    lo = max(band[0], 2 * cols, -(-MIN_ELEMENTS // cols))
    hi = min(band[1], MAX_ELEMENTS // cols)
    return (lo, hi) if lo <= hi and cols <= MAX_COLS else None


def _drawable_cols(band: tuple[int, int], octave: tuple[int, int]) -> list[int]:
    return [c for c in range(octave[0], octave[1] + 1) if _rows_span(band, c)]


def probe(heur: Heuristics, sweep: bool = False) -> Heuristics:
    """The A/B's file: ``heur``'s GPU, no launch or unsplit rule, and one end-to-end entry per element size over
    the whole span (``sweep``: entries that time every power-of-two split)."""
    note = ("probe of end-to-end split autotuning over the fused mix-order span (inductor_tune.mix_e2e); "
            "not a heuristic to ship")
    entries = tuple(MixAutotuneSpec(ROWS, COLS, size, margin=MARGIN, end_to_end=True, evidence=Evidence(note=note),
                                    sweep=sweep)
                    for size in ELEMENT_SIZES)
    return dataclasses.replace(heur, rules=(), unsplit=(), mix_autotune=entries, multi_kernel=(),
                               provenance={"probe": "mix_e2e"}, holdout={})


def stratified_problems(per_cell: int, seed: int, kernels: Sequence[str], held: Container[tuple],
                        dtype: str = "bf16") -> list[tuple[str, int, int, str]]:
    """``per_cell`` fused problems (rows and N log-uniform in the cell, seeded) in every cell, none in ``held``
    (the problems of every held-out draw) and none twice."""
    rng, problems = random.Random(seed), []

    def log_uniform(lo: int, hi: int) -> int:
        return min(hi, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 0.999))))))

    for band, octave in cells():
        usable = _drawable_cols(band, octave)
        lo, hi = usable[0], usable[-1]
        for _ in range(per_cell):
            while True:
                cols = log_uniform(lo, hi)
                span = _rows_span(band, cols)
                if span is None:
                    continue
                p = (rng.choice(list(kernels)), log_uniform(*span), cols, dtype)
                if p not in held and p not in problems:
                    break
            problems.append(p)
    return problems


def reached_by_sweeps(heur: Heuristics, problems: Sequence[tuple], held: Container[tuple]) -> list[tuple]:
    """The fused ``problems`` (kernel, rows, cols, dtype) that a sweeping entry of ``heur`` reaches, each once, none of
    ``held``: training problems to time again in fresh compiles, so that an entry's cells are read in one more
    record than the fit had."""
    out: dict[tuple, None] = {}  # insertion-ordered, each problem once
    for p in map(tuple, problems):
        _, rows, cols, dtype = p
        if p in held or p in out or not fused(rows, cols):
            continue
        if any(e.sweep and e.element_size == ELEMENT_SIZE_OF[dtype] and e.rows[0] <= rows <= e.rows[1]
               and e.cols[0] <= cols <= e.cols[1] for e in heur.mix_autotune):
            out[p] = None
    return list(out)


def points_from_rows(rows) -> list[ABPoint]:
    """ABPoints from ``validate.ValidationRow``s of a probe run: the fused problems where the entry moved the split.
    Where the autotuner kept Inductor's split, the compile is Inductor's own program (``same_program``), which can
    neither win nor lose; counted, such a problem would be a tie that keeps every cell from earning."""
    return touched_points(rows, lambda row, shape: not row.same_program and fused(shape.rows, shape.cols))


def fit(heur: Heuristics, points: Sequence[ABPoint], sources: Sequence[str],
        sweep: bool = False, keep: bool = False) -> tuple[Heuristics, list[str]]:
    """``heur`` with one end-to-end entry per cell and element size where every problem the entry changed won
    beyond the noise floor (its earlier split-autotune entries withdrawn), and one line per cell.  An entry lists
    no kernels: unlike a launch rule's config, its choice is timed on the very kernel it governs, end to end.  The
    evidence note's words are those the scored candidate carries (its digest hashes them).  ``sweep``: the records
    are of a sweeping probe, and so are the entries.  ``keep``: ``heur``'s earlier entries that no new entry
    overlaps stay (entries of another probe's fit, each earned on that probe's own records); only those it
    overlaps are withdrawn."""
    entries, lines = [], []
    for size in sorted({p.element_size for p in points}):
        for rows, cols in cells():
            where = f"{size}B rows {rows[0]}..{rows[1]} N {cols[0]}..{cols[1]}"
            inside = [p for p in points if p.element_size == size and rows[0] <= p.rows <= rows[1]
                      and cols[0] <= p.cols <= cols[1]]
            why = cell_verdict(inside, every_win=True)
            if why is not None:
                lines.append(f"{where}: Inductor's split kept: {why}")
                continue
            ratios = [p.ratio for p in inside]
            evidence = Evidence(shapes=tuple(p.label for p in inside), measured=tuple(p.label for p in inside),
                                gain_geomean=round(geomean(ratios), 4), gain_min=round(min(ratios), 4),
                                gain_max=round(max(ratios), 4), noise=round(max(p.band for p in inside), 4),
                                note="end-to-end split autotuning against Inductor's split, interleaved (validate of "
                                     "the mix_e2e probe); the measured span of a cell where every problem won")
            entries.append(MixAutotuneSpec((min(p.rows for p in inside), max(p.rows for p in inside)),
                                           (min(p.cols for p in inside), max(p.cols for p in inside)), size,
                                           margin=MARGIN, end_to_end=True, evidence=evidence, sweep=sweep))
            lines.append(f"{where}: entry: {len(inside)} problems, geomean {evidence.gain_geomean:.3f}, "
                         f"worst {evidence.gain_min:.3f}")

    def overlaps(old: MixAutotuneSpec) -> bool:
        return any(new.element_size == old.element_size and _overlap(new.rows, old.rows)
                   and _overlap(new.cols, old.cols) for new in entries)

    kept = [e for e in heur.mix_autotune if keep and not overlaps(e)]
    withdrawn = [mix_autotune_dict(e) for e in heur.mix_autotune if e not in kept]
    if keep:  # the entries kept came with a record of what their own fit withdrew
        withdrawn = list(heur.provenance.get("mix_autotune_withdrawn", ())) + withdrawn
    provenance = dict(heur.provenance)
    if kept:
        # The evidence of the entries kept stays named beside the new records.
        provenance["mix_e2e_evidence_kept"] = list(heur.provenance.get("mix_e2e_evidence", ()))
    provenance["mix_e2e_evidence"] = list(sources)
    if withdrawn:
        provenance["mix_autotune_withdrawn"] = withdrawn
    lines += [f"kept: {e.describe()}" for e in kept]
    return dataclasses.replace(heur, mix_autotune=tuple(kept) + tuple(entries), provenance=provenance), lines
