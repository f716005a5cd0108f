"""Distil one GPU model's tuning studies into robust per-kernel-kind rules (``inductor-tune distill``).

Evidence: per shape, each measured config's speedup over Inductor's default (``evidence.py``; probes
included).

Rules.  Shapes are grouped by kind (inner_persistent, inner_looped, outer, mix_order), the kernel's
signature (its reductions, ``sum`` for RMSNorm, ``sum@backward`` for its fused backward, ...),
element size and next_pow2(rnumel).
A candidate is a config legal at every shape of the group that was timed interleaved with the
default at ``min_coverage`` of them (``crossmeasure`` times each group's candidates at all of its
shapes) and failed at none.  It is adoptable only if it is not slower than the default beyond the
noise at any shape (noise excuses at most ``max_excused_loss``, 2 %) and its geometric-mean gain
exceeds both the largest noise there and ``min_gain``.  Among adoptable
candidates the one with the best worst-case ratio to each shape's best wins (robustness, not
per-shape argmax); without one the rule says "keep default".  Neighbouring groups merge while one
config serves both without losing more than ``merge_tolerance`` in the worst case.  A rule covers
only what its evidence covers (span probes included, see ``crossmeasure.span_probes``):
next_pow2(rows) between the fewest and most rows its family was measured at (a mix-order rule only the
rows of its own shapes, probes included: its split size sets how many programs there are, and
Inductor's own split grows with the rows), and only kernels with the envelope (what they read and
write, ``torch_rules.envelope_of_features``) of its evidence.  Where no config serves a whole group, its
rows are split in two bands, each fitted on its own shapes and covering only its own rows (``rowbands``;
a mix-order band only the rows of its own shapes).

Hold-out.  Rules are refitted without some shapes and scored on them (every distinct N, every
single shape, and optionally shapes named by the user), with only configs that the remaining
shapes' own studies proposed; a held-out shape whose rule config was never measured there is
reported as unmeasured, never guessed.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import logging
import math
from typing import Sequence

from . import __version__, rowbands
from .stats import geomean
from .evidence import DistillError, load_points, select_gpu
from .points import ShapePoint
from .fitparams import FitParams, excused_loss
from .heuristics import Evidence, Heuristics, RuleSpec
from .runtime.torch_rules import hull_turn
from .kernels import Shape
from .shapes import ALIGNMENT_CLASSES
# The fit's settling against span probes lives in ``settle``; its names stay importable from here.
from .settle import settle, settle_rules, unsettled_kinds, unsettled_rules  # noqa: F401
from .space import SlotConfig, slot_violations
from .store import Store, StoreError

log = logging.getLogger(__name__)

# Inductor's x size hints stay below 2**31: the widest row range a hand-written rule can name.
X_UNBOUNDED = 1 << 31


@dataclasses.dataclass(frozen=True)
class GroupFit:
    points: tuple[ShapePoint, ...]
    config: SlotConfig | None
    evidence: Evidence
    worst_regret: float | None


# -- fitting -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Candidate:
    config: SlotConfig
    measured: tuple[ShapePoint, ...]
    gains: tuple[float, ...]
    worst_regret: float  # worst ratio of a shape's best to this config, over the measured shapes
    noise: float  # largest noise at the measured shapes (at least the noise floor)
    no_loss: bool  # nowhere slower than the default beyond noise

    @property
    def gain(self) -> float:
        return geomean(self.gains)

    min_gain: float = 0.0

    @property
    def adoptable(self) -> bool:
        return self.no_loss and self.gain > 1 + max(self.noise, self.min_gain)

    def describe(self, of: int) -> str:
        return (f"{self.config.describe()}: measured at {len(self.measured)}/{of} shapes, gain "
                f"{min(self.gains):.3f}..{max(self.gains):.3f} (geomean {self.gain:.3f}), worst ratio to best "
                f"{self.worst_regret:.3f}")


def candidates(points: Sequence[ShapePoint], params: FitParams = FitParams(), allowed=None) -> list[Candidate]:
    """Configs legal at every shape and failed at none, with their evidence, best first.

    ``allowed``: only these configs may be candidates (a hold-out fit admits only what the shapes
    it fits on proposed); None admits every measured config."""
    out = []
    for cfg in {cfg for p in points for cfg in p.speedups}:
        if allowed is not None and cfg not in allowed:
            continue
        if any(slot_violations(p.slot, cfg) or cfg in p.failed for p in points):
            continue
        measured = tuple(p for p in points if cfg in p.speedups and (cfg in p.interleaved or not params.interleaved_only))
        if not measured:
            continue
        gains = tuple(p.speedups[cfg] for p in measured)
        out.append(Candidate(
            cfg, measured, gains, min(p.speedups[cfg] / p.best for p in measured),
            max(max(p.noise, params.noise_floor) for p in measured),
            all(p.speedups[cfg] >= 1 - excused_loss(p, params) for p in measured), params.min_gain,
        ))
    # Robustness first (worst case), then the typical gain; the description breaks exact ties.
    return sorted(out, key=lambda c: (c.adoptable, c.worst_regret, c.gain, c.config.describe()), reverse=True)


def _most_robust(covered: Sequence[Candidate], params: FitParams) -> Candidate:
    """The first of ``covered`` (ranked by ``candidates``), except that adoptable configs within
    ``params.regret_tie`` of the best worst ratio to the best found tie, and the tie goes to the highest worst
    gain over Inductor's default (then the geomean gain)."""
    adoptable = [c for c in covered if c.adoptable]
    if not adoptable:
        return covered[0]
    tied = [c for c in adoptable if c.worst_regret >= adoptable[0].worst_regret - params.regret_tie]
    return max(tied, key=lambda c: (min(c.gains), c.gain, c.config.describe()))


def fit_group(points: Sequence[ShapePoint], params: FitParams, top: int = 3, allowed=None) -> GroupFit:
    """The most robust adoptable config of one group of shapes, or keep-default with the reason."""
    points = tuple(points)
    need = max(params.min_shapes, math.ceil(params.min_coverage * len(points)))
    ranked = candidates(points, params, allowed)
    covered = [c for c in ranked if len(c.measured) >= need]
    best = _most_robust(covered, params) if covered else None
    default_worst = min(1 / p.best for p in points)
    base = Evidence(
        shapes=tuple(p.label for p in points),
        inductor_default=tuple(sorted({p.inductor_default for p in points if p.inductor_default})),
        # Promising configs short of coverage: what `inductor-tune crossmeasure` should time across the group.
        candidates=tuple(c.describe(len(points)) for c in ranked if c.gain > 1 and c is not best)[:top],
    )
    if not covered:
        note = (f"no config was timed interleaved at {need} or more of the {len(points)} shapes; "
                f"Inductor's default reaches {default_worst:.3f} of the best found in the worst case")
        return GroupFit(points, None, dataclasses.replace(base, note=note), default_worst)
    evidence = dataclasses.replace(
        base, measured=tuple(p.label for p in best.measured),
        unmeasured=tuple(p.label for p in points if p not in best.measured), gain_geomean=round(best.gain, 4),
        gain_min=round(min(best.gains), 4), gain_max=round(max(best.gains), 4), noise=round(best.noise, 4),
        worst_regret=round(best.worst_regret, 4),
    )
    if best.adoptable:
        return GroupFit(points, best.config, evidence, best.worst_regret)
    why = (f"its gain does not exceed the noise or {params.min_gain:.0%}" if best.no_loss
           else "it is slower than the default beyond noise at a shape")
    note = f"best covered candidate {best.config.describe()} not adopted: {why}"
    return GroupFit(points, None, dataclasses.replace(evidence, note=note), default_worst)


def _mergeable(a: GroupFit, b: GroupFit, merged: GroupFit, params: FitParams) -> bool:
    # One config may span two groups if it is as robust over both as what each had (a keep-default
    # group counts with the default's own worst case); two keep-default groups stay apart so that
    # each keeps its own evidence and candidates.
    if merged.config is None or (a.config is None and b.config is None):
        return False
    measured = {p.label for p in merged.points if merged.config in p.speedups}
    if not (measured & {p.label for p in a.points} and measured & {p.label for p in b.points}):
        return False  # a config spans two groups only on evidence from both
    return merged.worst_regret >= min(a.worst_regret, b.worst_regret) - params.merge_tolerance


def families(points: Sequence[ShapePoint]) -> dict[tuple, dict[int, list[ShapePoint]]]:
    """The size groups of each family (kind, element size, signature, envelope), by next_pow2(rnumel)."""
    out = collections.defaultdict(dict)
    for (kind, element_size, reductions, envelope, r), group in size_groups(points).items():
        out[(kind, element_size, reductions, envelope)][r] = group
    return dict(sorted(out.items()))


def rows_of(groups: dict[int, list[ShapePoint]]) -> tuple[int, int]:
    """The fewest and most pow2 row buckets a family was measured at."""
    buckets = [p.x_pow2 for g in groups.values() for p in g]
    return min(buckets), max(buckets)


def splittable(kind: str, fit: GroupFit, params: FitParams) -> bool:
    """Whether the fit may cut the group's rows in two bands: no config serves all of them (a fused mix-order
    kernel's only with ``split_mix_rows``; its bands, like its groups, cover only their own shapes' rows)."""
    return params.split_rows and (kind != "mix_order" or params.split_mix_rows) and fit.config is None


def row_bands(kind: str, fit: GroupFit, family_rows: tuple[int, int], params: FitParams, allowed=None):
    """The two bands (of rows, or of N with ``split_cols``) a group is cut into where no config serves all of it
    (``rowbands``), or None."""
    if not splittable(kind, fit, params):
        return None
    return rowbands.split(fit.points, lambda pts: fit_group(pts, params, allowed=allowed), family_rows,
                          params.min_band_shapes, params.split_cols)


def fit_rules(points: Sequence[ShapePoint], params: FitParams = FitParams(), allowed=None) -> list[RuleSpec]:
    rules = []
    for (kind, element_size, reductions, envelope), groups in families(points).items():
        family_allowed = allowed.get((kind, element_size, reductions, envelope), frozenset()) \
            if allowed is not None else None
        family_points = [p for g in groups.values() for p in g]
        family_rows = rows_of(groups)
        # (lo r, hi r, fit, its row band's pow2 buckets; None: the family's rows, and it may merge)
        runs: list[tuple[int, int, GroupFit, tuple[int, int] | None]] = []
        for r in sorted(groups):
            fit = fit_group(groups[r], params, allowed=family_allowed)
            bands = row_bands(kind, fit, family_rows, params, family_allowed)
            if bands:
                runs += [(r, r, band.fit, band.xnumel) for band in bands]
                continue
            if runs and runs[-1][3] is None:
                lo, _, last, _ = runs[-1]
                merged = fit_group(last.points + fit.points, params, allowed=family_allowed)
                if _mergeable(last, fit, merged, params):
                    runs[-1] = (lo, r, merged, None)
                    continue
            runs.append((r, r, fit, None))
        for lo, hi, fit, band in runs:
            # A fused mix-order kernel has rows/RSPLIT_SIZE programs, and Inductor's own split grows with
            # the rows (rows / (8 x SMs), 16..128), so a fixed split's edge moves with them: on an H200 a
            # split chosen at 32768 rows lost 2x at 8192, and one fitted up to 49152 lost 5 % at 81920.
            # Its rules cover only the rows of their own shapes (studies and probes).
            # Other kernels launch rows / XBLOCK programs, the same ones at any row count, yet a rule still
            # covers only the row counts its family was measured at: the rows no study ran are for
            # Inductor's own heuristics until evidence says otherwise.
            # Within those buckets, a rule covers the actual rows and reduction lengths between the
            # smallest and the largest measured: a pow2 bucket reaches down to half its size.
            # A row band (``rowbands``) covers its own buckets, and its rows are the family's measured there.
            if kind == "mix_order":
                rows = (min(p.x_pow2 for p in fit.points), max(p.x_pow2 for p in fit.points))
            else:
                rows = band or family_rows
            spread = fit.points if kind == "mix_order" else [p for p in family_points if rows[0] <= p.x_pow2 <= rows[1]]
            rules.append(RuleSpec(kind, element_size, (lo, hi), rows, fit.config, fit.evidence, reductions,
                                  (envelope,) if envelope else (), (min(p.rows for p in spread), max(p.rows for p in spread)),
                                  (min(p.cols for p in fit.points), max(p.cols for p in fit.points)),
                                  aligned_spans(fit.points) if params.cols_by_alignment else (),
                                  odd_hull(fit.points) if params.odd_hull else ()))
    return rules


def odd_hull(points: Sequence[ShapePoint]) -> tuple[tuple[int, int], ...]:
    """The (rows, N) vertices of the convex hull of ``points`` at odd N, counter-clockwise in (log2 rows, N) with
    collinear points dropped (Andrew's monotone chain); where a rule may apply at odd N (``FitParams.odd_hull``)."""
    odd = sorted({(p.rows, p.cols) for p in points if p.cols % 2 == 1})
    if len(odd) <= 2:
        return tuple(odd)

    def chain(ordered):
        out: list[tuple[int, int]] = []
        for p in ordered:
            while len(out) >= 2 and hull_turn(out[-2], out[-1], p) <= 1e-9 * (1.0 + abs(p[1] - out[-2][1])):
                out.pop()
            out.append(p)
        return out

    lower, upper = chain(odd), chain(reversed(odd))
    return tuple(lower[:-1] + upper[:-1])  # collinear points: the two ends


def aligned_spans(points: Sequence[ShapePoint]) -> tuple[tuple[int, int, int, int], ...]:
    """Per alignment class of N (``ALIGNMENT_CLASSES``, a partition of the integers), the smallest and largest N
    of that class among ``points``: where a rule may apply at N of the class (``FitParams.cols_by_alignment``)."""
    out = []
    for m, r in ALIGNMENT_CLASSES:
        cols = [p.cols for p in points if p.cols % m == r]
        if cols:
            out.append((m, r, min(cols), max(cols)))
    return tuple(out)


def size_groups(points: Sequence[ShapePoint]) -> dict[tuple[str, int, str, str, int], list[ShapePoint]]:
    """Shapes by (kind, element size, reductions, envelope, next_pow2(rnumel)): the unit a rule is first
    fitted on."""
    groups = collections.defaultdict(list)
    for p in points:
        groups[(*p.family, p.r_pow2)].append(p)
    return dict(sorted(groups.items()))


def derived_from(point: ShapePoint, held: Sequence[ShapePoint]) -> bool:
    """A probe placed because of a held-out shape, which stays out of a fit that holds the shape out: a row
    probe (``crossmeasure.probes``) at 3/2 of its rows exists only because that shape was studied; a span
    probe (``crossmeasure.span_probes``) lies in a span and times configs that a fit of every shape of its
    size group chose, so any held-out shape of that group may have placed it."""
    if not point.probe:
        return False
    if point.span:
        return any((*h.family, h.r_pow2) == (*point.family, point.r_pow2) for h in held)
    return any((h.kernel, h.cols, h.dtype) == (point.kernel, point.cols, point.dtype)
               and h.rows * 3 // 2 == point.rows for h in held)


def proposed_by(points: Sequence[ShapePoint]) -> dict[tuple, frozenset]:
    """Per family, every config the studies of these shapes tried: what a fit on them alone may choose
    from.  A config some other family's study tried is no evidence that this family's sampler would
    have proposed it, so a hold-out fit does not take it from there."""
    out: dict[tuple, set] = collections.defaultdict(set)
    for p in points:
        out[p.family] |= p.proposed
    return {family: frozenset(configs) for family, configs in out.items()}


# -- held-out scoring ----------------------------------------------------------------------------


HOLDOUT_SCHEMES = {
    "leave_one_n_out": "rules refitted without every shape of that N (all kernels, all M), scored on those shapes",
    "leave_one_shape_out": "rules refitted without one kernel/shape, scored on it: generalisation across M and to "
                           "non-power-of-two N within a size group",
}
NAMED_SCHEME = "held_out_shapes"
NAMED_METHOD = ("the shapes given with --hold-out (every kernel at those MxN): never fitted on, and their studies' "
                "configs never offered to the fit; scored with the rules in this file")


def _rule_for(rules: Sequence[RuleSpec], p: ShapePoint) -> RuleSpec | None:
    return next((r for r in rules if r.matches(p.kind, p.element_size, p.r_pow2, p.x_pow2, p.reductions,
                                                p.envelope, p.rows, p.cols)), None)


def score(rules: Sequence[RuleSpec], held: Sequence[ShapePoint], params: FitParams = FitParams()) -> list[dict]:
    """One row per held-out shape: what the rule covering it gains there, where that was measured."""
    rows = []
    for p in held:
        rule = _rule_for(rules, p)
        if rule is None or rule.config is None:
            status, speedup = ("no rule" if rule is None else "keep default"), 1.0
        elif rule.config in p.speedups:
            status, speedup = "measured", p.speedups[rule.config]
        else:
            status, speedup = "unmeasured", None
        rows.append({
            "shape": p.label, "kind": p.kind,
            "rule": rule.config.describe() if rule and rule.config else "inductor default",
            "status": status, "speedup": None if speedup is None else round(speedup, 4),
            "best_found": round(p.best, 4), "noise": round(max(p.noise, params.noise_floor), 4),
        })
    return rows


def holdout(points: Sequence[ShapePoint], params: FitParams = FitParams(), scheme: str = "leave_one_n_out",
            workers: int = 1) -> dict:
    """Fit on some shapes, score on the disjoint rest; never in-sample.  Each fold refits every rule, so
    ``workers`` processes refit folds side by side (on an H200's data the two schemes' 509 folds took 19
    minutes in one process)."""
    folds = _folds(points, scheme)
    if workers > 1 and len(folds) > 1:
        with concurrent.futures.ProcessPoolExecutor(min(workers, len(folds)), initializer=_start_fold_worker,
                                                    initargs=(points, params, scheme)) as pool:
            per_fold = list(pool.map(_fold_of_worker, range(len(folds))))
    else:
        per_fold = [_fold_rows(points, params, scheme, held) for held in folds]
    return summarize_rows(scheme, HOLDOUT_SCHEMES[scheme], [row for rows in per_fold for row in rows])


def _folds(points: Sequence[ShapePoint], scheme: str) -> list[list[ShapePoint]]:
    studied = [p for p in points if not p.probe]  # probes are never scored: no study searched there
    if scheme == "leave_one_n_out":
        return [[p for p in studied if p.cols == n] for n in sorted({p.cols for p in studied})]
    if scheme == "leave_one_shape_out":
        return [[p] for p in studied]
    raise ValueError(f"unknown hold-out scheme {scheme!r}; known: {', '.join(HOLDOUT_SCHEMES)}")


def _fold_rows(points: Sequence[ShapePoint], params: FitParams, scheme: str, held: list[ShapePoint]) -> list[dict]:
    held_n = {p.cols for p in held} if scheme == "leave_one_n_out" else set()
    train = [p for p in points if p not in held and not (p.probe and p.cols in held_n)]
    return score(fit_rules(train, params, proposed_by(train)), held, params)


# A fold worker receives the points once (not with every fold) and rebuilds the same folds from them.
_fold_worker_state: tuple | None = None


def _start_fold_worker(points: Sequence[ShapePoint], params: FitParams, scheme: str) -> None:
    global _fold_worker_state
    _fold_worker_state = (points, params, scheme, _folds(points, scheme))


def _fold_of_worker(index: int) -> list[dict]:
    points, params, scheme, folds = _fold_worker_state
    return _fold_rows(points, params, scheme, folds[index])


def summarize_rows(scheme: str, method: str, rows: list[dict]) -> dict:
    summary = {"all": _summarize(rows)}
    for kind in sorted({r["kind"] for r in rows}):
        summary[kind] = _summarize([r for r in rows if r["kind"] == kind])
    return {"scheme": scheme, "method": method, "summary": summary, "shapes": rows}


def _summarize(rows: list[dict]) -> dict:
    scored = [r for r in rows if r["speedup"] is not None]
    counts = collections.Counter(r["status"] for r in rows)
    out = {"shapes": len(rows), **{k.replace(" ", "_"): counts.get(k, 0) for k in
                                   ("measured", "unmeasured", "keep default", "no rule")}}
    if scored:
        out.update(
            geomean_speedup=round(geomean([r["speedup"] for r in scored]), 4),
            worst_speedup=round(min(r["speedup"] for r in scored), 4),
            regressions_beyond_noise=sum(r["speedup"] < 1 - r["noise"] for r in scored),
            oracle_geomean_same_shapes=round(geomean([r["best_found"] for r in scored]), 4),
            # The yardstick: the rules against the best config found at each shape.
            geomean_vs_best_found=round(geomean([r["speedup"] / r["best_found"] for r in scored]), 4),
            worst_vs_best_found=round(min(r["speedup"] / r["best_found"] for r in scored), 4),
        )
    return out


# -- the whole stage ------------------------------------------------------------------------------

NOT_COVERED = {
    "outer": "outer (column) reductions: measured only inside multi-kernel backward studies, where no "
             "kernel's share of a trial's time can be told apart; Inductor keeps its defaults",
    "inner_persistent": "inner persistent reductions: no single-kernel study measured them",
    "inner_looped": "inner looped reductions: no single-kernel study measured them",
    "mix_order": "fused mix-order backward: no single-kernel study measured it",
}


def open_stores(db_urls: Sequence[str]) -> list[Store]:
    try:
        return [Store(url, create=False) for url in db_urls]
    except StoreError as exc:
        raise DistillError(str(exc)) from None


def distill(
    db_urls: Sequence[str], gpu_query: str, params: FitParams = FitParams(), names: Sequence[str] | None = None,
    hold_out: Sequence[Shape] = (), candidates_from: str | None = None, workers: int = 1, folds: bool = True,
) -> Heuristics:
    """The heuristic file for one GPU fingerprint; ``names`` are the databases as the user gave them.
    ``hold_out``: shapes (every kernel at those MxN) kept out of the fit and scored on instead.
    ``candidates_from``: a GPU whose studies frame this GPU's crossmeasure records (``load_points``).
    ``workers``: processes for the hold-out refits (``holdout``); the file is the same for any number.
    ``folds``: False skips those refits (most of distill's time on large data); the rules are the same, and the
    file's ``holdout`` says the cross-validation was skipped."""
    if params.settle_by not in ("rule", "kind"):
        raise DistillError(f"FitParams.settle_by must be 'rule' or 'kind', not {params.settle_by!r}")
    stores = open_stores(db_urls)
    gpu = select_gpu(stores, gpu_query)
    source = select_gpu(stores, candidates_from) if candidates_from else None
    if source is not None and source.fingerprint == gpu.fingerprint:
        raise DistillError(f"--candidates-from {candidates_from!r} names the GPU fitted ({gpu.fingerprint}); "
                           "name the GPU whose studies proposed the candidates")
    points, skipped = load_points(stores, gpu, names or db_urls, params.allow_replayed, source)
    if not points:
        hint = "" if source else " (crossmeasured with another GPU's candidates? name it with --candidates-from)"
        raise DistillError(f"no usable single-kernel study of {gpu.fingerprint}{hint}: "
                           + "; ".join(sorted({s.reason for s in skipped}))[:300])
    held_shapes = {(s.rows, s.cols) for s in hold_out}
    # A held-out shape is a problem: every kernel of it is held out, a focused study's included.
    held = [p for p in points if p.compiled in held_shapes and not p.probe]
    fitted = [p for p in points if p.compiled not in held_shapes and not derived_from(p, held)]
    missing = sorted(held_shapes - {p.compiled for p in held})
    if missing:
        raise DistillError(f"no usable study of the held-out shape(s) {', '.join(f'{m}x{n}' for m, n in missing)}")
    if not fitted:
        raise DistillError("every usable shape is held out: nothing left to fit")
    rules = fit_rules(fitted, params, proposed_by(fitted) if held else None)
    unsettled, held_back = {}, []
    if params.settled_kinds_only and params.settle_by == "kind":
        unsettled = unsettled_kinds(fitted, params)
        rules = settle(rules, unsettled)
    elif params.settled_kinds_only:
        pending = unsettled_rules(rules, fitted, params)
        held_back = [{"rule": rules[i].describe(), "envelopes": list(rules[i].envelopes), "why": why}
                     for i, why in sorted(pending.items())]
        rules = settle_rules(rules, pending)
    kinds = {p.kind for p in fitted}
    shapes_by_kind = {k: sorted(p.label for p in fitted if p.kind == k) for k in sorted(kinds)}
    provenance = {
        "tool": f"inductor_tune {__version__} (inductor-tune distill)",
        "databases": list(names or db_urls),
        "gpu_fingerprint": gpu.fingerprint,
        # Whose studies chose the candidates this GPU timed; every number fitted was measured on this GPU.
        "candidates_from": source.fingerprint if source else None,
        "torch": gpu.torch,
        "triton": gpu.triton,
        "parameters": dataclasses.asdict(params),
        "shapes": shapes_by_kind,
        "held_out_shapes": sorted(p.label for p in held),
        "probe_shapes": sum(p.probe for p in fitted),
        "unsettled_kinds": unsettled,
        "unsettled_rules": held_back,
        "crossmeasured_shapes": sum(p.crossmeasured > 0 for p in points),
        "studies": sorted(n for p in fitted for n in p.studies),
        "skipped_studies": [{"study": s.study, "reason": s.reason} for s in skipped],
    }
    not_covered = tuple(text for kind, text in NOT_COVERED.items() if kind not in kinds)
    log.info("distilled %d rules from %d shapes (%d held out, %d studies skipped)", len(rules), len(fitted),
             len(held), len(skipped))
    held_out = {
        "note": "speedup is over Inductor's default at the held-out shape: 1.0 where the rule keeps the default or "
                "no rule covers the shape; unmeasured: the rule's config was never measured there (crossmeasure on "
                "the GPU); best_found: the best speedup any measured config reached there",
        **({scheme: holdout(fitted, params, scheme, workers) for scheme in HOLDOUT_SCHEMES} if folds else
           {"skipped": "distill --no-folds: no leave-one-out refit was scored"}),
    }
    if held:
        held_out[NAMED_SCHEME] = summarize_rows(NAMED_SCHEME, NAMED_METHOD, score(rules, held, params))
    return Heuristics(gpu, tuple(rules), provenance, held_out, not_covered)
