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
Inductor, exactly as in the A/B, or, where a probe forced one config onto it (``probe(heur, config)``),
that config: each probe is a variant, and a cell takes the variant with the best geomean among those that
earn a rule there.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping, Sequence

from .gate import COLS
from .runtime.launch import KernelSlot, SlotConfig, slot_violations
from .runtime.rulefile import INNER_SPLIT_MIN_RNUMEL, OUTER_SPLIT_MIN_ROWS
from .runtime.rules import Evidence, Heuristics, UnsplitSpec
from .runtime.torch_rules import next_pow2
from .shapes import ELEMENT_SIZES, Shape
from .stats import NOISE_FLOOR, geomean
# Rows bands (inclusive lower edges) and N octaves of the cells a rule may cover: a cell is where the
# decision was measured as one; finer cells would hold too few training problems to call a win.
ROW_EDGES = (1, 16, 32, 64, 128)
MIN_PROBLEMS = 3
# Column reductions (outer): rows up to Inductor's mix-order threshold, below which a norm backward's weight
# gradient is a column sum of its own that Inductor splits (coverage12's RMSNorm backwards; at more rows it fuses
# into the mix-order kernel). Cells are octaves of rows and of N.
OUTER_ROWS_MAX = 4095


@dataclasses.dataclass(frozen=True)
class ABPoint:
    """One training problem of the probe: Inductor's split against one kernel, interleaved rounds."""

    kernel: str
    rows: int
    cols: int
    ratio: float  # default time / unsplit time (median of rounds)
    band: float  # the noise band: the default's round-to-round spread, at least NOISE_FLOOR
    element_size: int = 2

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.rows}x{self.cols}"


def region(heur: Heuristics, config: SlotConfig | None = None,
           outer: bool = False) -> tuple[tuple[int, int], tuple[int, int]]:
    """(rows, cols) spans where Inductor splits an inner reduction on the file's GPU (and ``config`` is a legal
    launch config of the one kernel: a persistent row holds at most 64K elements); with ``outer``, a column
    reduction (rows up to OUTER_ROWS_MAX; no config: such a rule takes Inductor's)."""
    if outer:
        if config is not None:
            raise ValueError("an outer unsplit probe launches the one kernel as Inductor picks")
        return (OUTER_SPLIT_MIN_ROWS, OUTER_ROWS_MAX), (COLS[0], 64 * heur.gpu.sm_count - 1)
    # N no further than the gate draws it: no evidence reaches beyond.
    cols_hi = COLS[1]
    while config is not None and slot_violations(KernelSlot("probe", False, 1 << 30, cols_hi, False, False), config):
        cols_hi = next_pow2(cols_hi) // 2
        if cols_hi < INNER_SPLIT_MIN_RNUMEL:
            raise ValueError(f"{config.describe()} is no legal config for any reduction Inductor splits")
    return (1, 2 * heur.gpu.sm_count - 1), (INNER_SPLIT_MIN_RNUMEL, cols_hi)


def probe(heur: Heuristics, config: SlotConfig | None = None, element_size: int = 2,
          reduction_type: str | None = None, outer: bool = False) -> Heuristics:
    """``heur`` plus one unsplit rule over the whole split region (where ``config`` is legal), the one kernel
    launched with ``config`` (None: as the launch rules or Inductor launch it), for reductions of
    ``reduction_type`` only where one is given, column reductions with ``outer``: what the training A/B measures."""
    rows, cols = region(heur, config, outer)
    what = f"launched as {config.describe()}" if config else "launched as Inductor or a launch rule picks"
    kind = "column reduction" if outer else "reduction" if reduction_type else "inner reduction"
    which = f"{reduction_type} {kind}" if reduction_type else kind
    spec = UnsplitSpec(rows, cols, Evidence(note=f"probe: keeps every split {which} in one kernel, {what}, "
                                                 "to be measured against Inductor's split; not a proposed default"),
                       config, element_size if config else None,
                       reduction_types=(reduction_type,) if reduction_type else (), outer=outer)
    if outer:
        # The A/B isolates the column decision: a backward's row kernel would take the launch rules too, and its
        # gain would be credited to the column rule. The file ships no launch rule of column kernels, so the
        # one kernel takes Inductor's config in both.
        return dataclasses.replace(heur, rules=(), unsplit=(spec,), mix_autotune=(), multi_kernel=())
    return dataclasses.replace(heur, unsplit=(spec,))


def probe_config(heur: Heuristics) -> tuple[SlotConfig | None, int | None]:
    """The config a probe file forces onto the one kernel, and its element size."""
    if len(heur.unsplit) != 1:
        raise ValueError(f"a probe holds one unsplit rule, not {len(heur.unsplit)}")
    return heur.unsplit[0].config, heur.unsplit[0].element_size


def points_from_rows(rows, outer: bool = False) -> list[ABPoint]:
    """ABPoints from ``validate.ValidationRow``s of a probe run (``figdata.validation_rows``): the problems an
    unsplit rule touched, inside the split region (of column reductions with ``outer``)."""
    if outer:
        return touched_points(rows, lambda row, shape: OUTER_SPLIT_MIN_ROWS <= shape.rows <= OUTER_ROWS_MAX)
    return touched_points(rows, lambda row, shape: shape.cols >= INNER_SPLIT_MIN_RNUMEL)


def touched_points(rows, keep: Callable[[Any, Shape], bool]) -> list[ABPoint]:
    """ABPoints of the validation rows a probe's rules touched and ``keep(row, shape)`` accepts."""
    from .validate import HEURISTICS

    out = []
    for r in rows:
        heur = r.variant(HEURISTICS)
        shape = Shape.parse(r.shape)
        if heur is None or not r.heuristics_applied or not keep(r, shape):
            continue
        out.append(ABPoint(r.kernel, shape.rows, shape.cols, heur.ratio_to_default, max(r.noise, NOISE_FLOOR),
                           ELEMENT_SIZES[r.dtype]))
    return out


def cells(heur: Heuristics, outer: bool = False) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The rows band x N octave cells of the split region (rows octaves too with ``outer``), in order."""
    (rows_lo, rows_hi), (cols_lo, cols_hi) = region(heur, outer=outer)
    if outer:
        bands = _octaves(rows_lo, rows_hi)
    else:
        edges = [e for e in ROW_EDGES if e <= rows_hi] + [rows_hi + 1]
        bands = [(lo, hi - 1) for lo, hi in zip(edges, edges[1:])]
    return [(b, o) for b in bands for o in _octaves(cols_lo, cols_hi)]


def _octaves(lo: int, hi_end: int) -> list[tuple[int, int]]:
    """lo..hi_end cut at powers of two (each octave ends at one; one that starts at one ends at the next)."""
    out = []
    while lo <= hi_end:
        hi = min(hi_end, 1 << (lo - 1).bit_length() if lo & (lo - 1) else 2 * lo)
        out.append((lo, hi))
        lo = hi + 1
    return out


def cell_verdict(points: Sequence[ABPoint], max_loss: float | None = None, every_win: bool = False) -> str | None:
    """Why a cell's problems do not make a rule, or None when they do (``max_loss`` as ``_lost`` reads it; with
    ``every_win`` each problem must win beyond the noise floor, a tie no more than a loss)."""
    if len(points) < MIN_PROBLEMS:
        return f"{len(points)} problem(s), fewer than {MIN_PROBLEMS}"
    lost = _lost(points, max_loss)
    if lost:
        worst = min(lost, key=lambda p: p.ratio)
        return f"{len(lost)} lost beyond noise (worst {worst.label} {worst.ratio:.3f})"
    tied = [p for p in points if p.ratio < 1 + NOISE_FLOOR] if every_win else []
    if tied:
        worst = min(tied, key=lambda p: p.ratio)
        return (f"{len(tied)} of {len(points)} did not win beyond the {NOISE_FLOOR:.1%} noise floor "
                f"(worst {worst.label} {worst.ratio:.3f})")
    gain = geomean([p.ratio for p in points])
    if gain < 1 + NOISE_FLOOR:
        return f"geomean {gain:.3f} is no win beyond the {NOISE_FLOOR:.1%} noise floor"
    return None


@dataclasses.dataclass(frozen=True)
class Variant:
    """One probe's A/B, where it forced ``config`` onto the one kernel: its points, and per catalog kernel the
    one kernel's (signature, envelope) pairs where the config may apply (forward graphs that compiled with it)."""

    config: SlotConfig
    points: tuple[ABPoint, ...]
    kernels: Mapping[str, tuple[tuple[str, str], ...]]

    @property
    def name(self) -> str:
        return self.config.describe()


def configurable_kernels(spaces: Iterable[tuple[str, Any]], failed: Iterable[str]) -> dict[str, tuple]:
    """Per catalog kernel, the (signature, envelope) of the one kernel its split reduction compiles to with
    ``split_reductions=False``, as the studies' probes recorded it (``spaces``: (kernel, SearchSpace) of this GPU),
    forward graphs only, and none of the kernels in ``failed`` (a probe's config did not compile there: Inductor
    cannot emit a persistent XBLOCK=1 kernel for the backwards' loads, seen on torch 2.11)."""
    out: dict[str, set] = {}
    failed = set(failed)
    for kernel, space in spaces:
        for flags, slots in space.structures:
            if flags.split_reductions or kernel in failed:
                continue
            for slot in slots:
                if slot.rnumel >= INNER_SPLIT_MIN_RNUMEL and not slot.mix_order and not slot.backward \
                        and slot.reductions and slot.envelope:
                    out.setdefault(kernel, set()).add((slot.reductions, slot.envelope))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _cell_spec(inside: Sequence[ABPoint], config: SlotConfig | None = None,
               kernels: tuple[tuple[str, str], ...] = (), reduction_types: tuple[str, ...] = (),
               outer: bool = False) -> UnsplitSpec:
    ratios = [p.ratio for p in inside]
    sizes = {p.element_size for p in inside}
    if config is not None and len(sizes) != 1:
        raise ValueError(f"a cell's problems mix element sizes {sorted(sizes)}; a config rule keys on one")
    launched = (f"launched as {config.describe()} where the kernel is one of those listed, else as Inductor picks"
                if config else "launched as Inductor picks")
    return UnsplitSpec(
        (min(p.rows for p in inside), max(p.rows for p in inside)),
        (min(p.cols for p in inside), max(p.cols for p in inside)),
        Evidence(shapes=tuple(p.label for p in inside), measured=tuple(p.label for p in inside),
                 gain_geomean=round(geomean(ratios), 4), gain_min=round(min(ratios), 4),
                 gain_max=round(max(ratios), 4), noise=round(max(p.band for p in inside), 4),
                 note=f"one kernel, {launched}, against Inductor's split, interleaved (validate of the probes); "
                      "the measured span of a cell with no loss beyond noise"),
        config, sizes.pop() if config is not None else None, kernels, reduction_types, outer,
    )


def _with_config(base: Sequence[ABPoint], variant: Variant) -> tuple[list[ABPoint], tuple[tuple[str, str], ...]]:
    """A cell's problems as a file with ``variant``'s config would run them: the config's point where the
    problem's kernel may take it, Inductor's config (the base probe's point) elsewhere."""
    timed = {(p.kernel, p.rows, p.cols): p for p in variant.points}
    points, kernels = [], set()
    for p in base:
        q = timed.get((p.kernel, p.rows, p.cols))
        if q is not None and p.kernel in variant.kernels:
            points.append(q)
            kernels.update(variant.kernels[p.kernel])
        else:
            points.append(p)
    return points, tuple(sorted(kernels))


def fit(heur: Heuristics, base: Sequence[ABPoint], variants: Sequence[Variant],
        sources: Sequence[str], reduction_type: str | None = None, outer: bool = False,
        max_loss: float | None = None, every_win: bool = False) -> tuple[Heuristics, list[str]]:
    """``heur`` with the unsplit rules its cells earn (replacing any it had), and one line per cell and variant.

    ``base`` is the A/B of the probe that keeps Inductor's config; each variant's config applies only to the
    kernels it was measured on, so a cell's problems are scored as the file would run them (``_with_config``).
    A config earns nothing where Inductor's config loses: the split is decided from sizes alone, so a kernel the
    config does not list (any kernel not measured in that cell) runs whole there with Inductor's config (held-out
    set 21: 0.793 at a kernel no config listed). A cell takes the choice with the best geomean among those that earn.

    With ``reduction_type``, the rules earned key on it and replace only the file's rules of that type alone; the
    points must then be problems whose split reduction is of that type (the caller keeps those), and a cell whose
    span would overlap a kept rule earns nothing there (the kept rule decides). With ``outer`` the rules are of
    column reductions, and the file's inner rules stay (as its column rules stay in a fit of inner ones).
    ``max_loss`` caps the loss a problem's noise band excuses (``_lost``); with ``every_win`` a cell earns only where
    each of its problems, in each timing of it, won beyond the noise floor: a tie is not a win, and a column rule
    whose 16 problems all won lost at an unseen one (stop 76). The file's provenance records both."""
    types = (reduction_type,) if reduction_type else ()
    kept = tuple(u for u in heur.unsplit if u.outer != outer or (reduction_type and u.reduction_types != types))
    specs, lines = [], []
    for (rows, cols) in cells(heur, outer):
        where = f"rows {rows[0]}..{rows[1]} N {cols[0]}..{cols[1]}"
        inside = [p for p in base if rows[0] <= p.rows <= rows[1] and cols[0] <= p.cols <= cols[1]]
        unlisted_why = cell_verdict(inside, max_loss, every_win)
        choices = [("Inductor's config", inside, None, ())]
        for variant in variants:
            points, kernels = _with_config(inside, variant)
            if kernels:
                choices.append((f"{variant.name} for {len(kernels)} kernel(s)", points, variant.config, kernels))
        earned = []
        for name, points, config, kernels in choices:
            why = cell_verdict(points, max_loss, every_win)
            if why is None and unlisted_why is not None:
                why = f"an unlisted kernel would run whole with Inductor's config, which does not earn: {unlisted_why}"
            if why is not None:
                lines.append(f"{where}: {name}: Inductor's split kept: {why}")
                continue
            spec = _cell_spec(points, config, kernels, types, outer)
            clash = next((u for u in kept if u.outer == outer and _meets(u.rows, spec.rows)
                          and _meets(u.cols, spec.cols)), None)
            if clash is not None:
                lines.append(f"{where}: {name}: Inductor's split kept: overlaps {clash.describe()}")
                continue
            earned.append(spec)
            ev = earned[-1].evidence
            lines.append(f"{where}: {name}: one kernel: {len(points)} problems, geomean {ev.gain_geomean:.3f}, "
                         f"worst {ev.gain_min:.3f}")
        if earned:
            spec = max(earned, key=lambda s: s.evidence.gain_geomean)
            specs.append(spec)
            lines.append(f"{where}: chosen: {spec.describe()}")
    evidence = list(heur.provenance.get("unsplit_evidence", [])) if kept else []
    provenance = dict(heur.provenance, unsplit_evidence=evidence + [s for s in sources if s not in evidence])
    if max_loss is not None:
        provenance["unsplit_max_loss"] = max_loss
    if every_win:
        provenance["unsplit_every_win"] = True
    return dataclasses.replace(heur, unsplit=kept + tuple(specs), provenance=provenance), lines


def prune(heur: Heuristics, points: Sequence[ABPoint], sources: Sequence[str], outer: bool = False,
          ) -> tuple[Heuristics, list[str]]:
    """``heur`` without the unsplit rules (of column reductions with ``outer``) whose cell holds a problem of a
    fresh training draw that lost beyond noise, and one line per rule. Nothing widens and nothing is added, so each
    kept rule keeps the held-out score its file earned; a dropped rule's kernels go back to Inductor's split (stop
    71: a third draw found llama_rmsnorm_bwd 203x215 at 0.956 inside a gated rule of rows 147..233 x N 132..233)."""
    kept, lines = [], []
    region_cells = cells(heur, outer)
    for spec in heur.unsplit:
        cell = next((c for c in region_cells if c[0][0] <= spec.rows[0] <= c[0][1]
                     and c[1][0] <= spec.cols[0] <= c[1][1]), None) if spec.outer == outer else None
        if cell is None:
            kept.append(spec)
            continue
        (rows, cols) = cell
        inside = [p for p in points if rows[0] <= p.rows <= rows[1] and cols[0] <= p.cols <= cols[1]]
        lost = _lost(inside)
        if lost:
            worst = min(lost, key=lambda p: p.ratio)
            lines.append(f"{spec.describe()}: dropped: {len(lost)} of {len(inside)} problem(s) of its cell lost "
                         f"beyond noise (worst {worst.label} {worst.ratio:.3f})")
        else:
            kept.append(spec)
            lines.append(f"{spec.describe()}: kept: {len(inside)} problem(s) of its cell, none lost beyond noise")
    evidence = list(heur.provenance.get("unsplit_evidence", []))
    provenance = dict(heur.provenance, unsplit_evidence=evidence + [s for s in sources if s not in evidence])
    return dataclasses.replace(heur, unsplit=tuple(kept), provenance=provenance), lines


def withdraw(heur: Heuristics, outer: bool, why: str) -> Heuristics:
    """``heur`` without its unsplit rules of column reductions (``outer``) or of inner ones, every other rule kept:
    where fresh rounds timed such a rule slower than Inductor's split, Inductor's own split is the safe default
    (stop 76: two of cd6c1b3d's column rules lost 2-8 %). ``why`` goes to the provenance, beside earlier ones."""
    kept = tuple(u for u in heur.unsplit if u.outer != outer)
    withdrawn = list(heur.provenance.get("withdrawn", [])) + [
        {"rules": [u.describe() for u in heur.unsplit if u.outer == outer], "why": why}]
    return dataclasses.replace(heur, unsplit=kept, provenance=dict(heur.provenance, withdrawn=withdrawn))


def _lost(points: Sequence[ABPoint], max_loss: float | None = None) -> list[ABPoint]:
    """The problems slower than Inductor's split beyond their noise band, the band capped at ``max_loss`` where
    given (0: any problem slower than the split is lost; a tie is not a win)."""
    return [p for p in points if p.ratio < 1 - (p.band if max_loss is None else min(p.band, max_loss))]


def _meets(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]
