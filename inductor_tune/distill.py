"""Distil one GPU model's tuning studies into robust per-kernel-kind rules (``inductor-tune distill``).

Evidence.  Only studies whose function compiles to a single reduction kernel under Inductor's
default graph flags are used (forward norms and softmax, fused mix-order backward): there a trial's
time belongs to that kernel's config.  In studies with several kernels every trial changes all of
them at once, so no kernel's share can be told apart; those are listed as skipped.  Per shape, each
measured config gets its speedup over Inductor's default: the interleaved re-measure ratio for the
verdict's finalists and for every config ``inductor-tune crossmeasure`` timed there, else the
trial-time ratio against the study's default trial.  The shape's noise is the largest of the
default's round-to-round spreads and of how far trial ratios missed the interleaved ones.  Studies
of the same shape (e.g. from two databases) pool their speedups (geometric mean).

Rules.  Shapes are grouped by kind (inner_persistent, inner_looped, outer, mix_order), the kernel's
signature (its reductions, ``sum`` for RMSNorm, ``sum@backward`` for its fused backward, ...),
element size and next_pow2(rnumel).
A candidate is a config legal at every shape of the group that was timed interleaved with the
default at ``min_coverage`` of them (``crossmeasure`` times each group's candidates at all of its
shapes) and failed at none.  It is adoptable only if it is not slower than the default beyond the
noise at any shape and its geometric-mean gain exceeds both the largest noise there and ``min_gain``.  Among adoptable
candidates the one with the best worst-case ratio to each shape's best wins (robustness, not
per-shape argmax); without one the rule says "keep default".  Neighbouring groups merge while one
config serves both without losing more than ``merge_tolerance`` in the worst case.  A rule covers
next_pow2(rows) from the fewest rows its family was measured at upwards (more rows add waves of the
same programs; fewer rows than measured are never assumed), a mix-order rule from the fewest rows of
its own shapes (its split size sets how many programs there are).

Hold-out.  Rules are refitted without some shapes and scored on them (every distinct N, every
single shape, and optionally shapes named by the user), with only configs that the remaining
shapes' own studies proposed; a held-out shape whose rule config was never measured there is
reported as unmeasured, never guessed.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import math
import statistics
from typing import Iterable, Mapping, Sequence

from . import __version__
from .heuristics import ELEMENT_SIZES, Evidence, GpuSpec, Heuristics, RuleSpec, slot_hints
from .kernels import CATALOG, Shape
from .records import Outcome
from .space import DEFAULT_FLAGS, SearchSpace, SlotConfig, TrialConfig, slot_violations
from .store import Gpu, Store, StoreError
from .torch_rules import kernel_kind, kernel_signature, next_pow2

log = logging.getLogger(__name__)

# Upper bound of every rule's row range (Inductor's x size hints stay below 2**31).
X_UNBOUNDED = 1 << 31


class DistillError(ValueError):
    """Nothing sensible to distil (unknown GPU, no usable study); one line for the user."""


@dataclasses.dataclass(frozen=True)
class FitParams:
    min_coverage: float = 1.0  # fraction of a group's shapes a rule's config must have been timed at
    min_shapes: int = 1  # and at least this many shapes
    merge_tolerance: float = 0.02  # worst-case loss allowed for one rule to span two size groups
    # validate.NOISE_FLOOR: the same kernel compiled twice timed up to 1.2 % apart on an H200.
    noise_floor: float = 0.015
    # Smallest geometric-mean gain a rule is adopted for: a 1.6 % gain fitted at one shape lost 5 % at
    # a held-out shape of its size group on an H200; gains that small are not worth the risk.
    min_gain: float = 0.03
    # Only interleaved ratios (verdict finalists, crossmeasure) count as a config's evidence; trial
    # ratios against a default timed minutes apart are leads for crossmeasure, not proof.
    interleaved_only: bool = True
    # Replayed studies copy other measurements; only the CPU demo fits them (and says so in provenance).
    allow_replayed: bool = False


@dataclasses.dataclass(frozen=True)
class ShapePoint:
    """One kernel/shape/dtype: what each measured config gained over Inductor's default there."""

    kernel: str
    rows: int
    cols: int
    dtype: str
    kind: str
    reductions: str
    slot: object  # space.KernelSlot of the single kernel
    speedups: Mapping[SlotConfig, float]
    noise: float
    studies: tuple[str, ...]
    inductor_default: str = ""
    interleaved: frozenset = frozenset()  # configs whose speedup was timed interleaved with the default
    proposed: frozenset = frozenset()  # configs this shape's own studies tried (its sampler's proposals)
    failed: frozenset = frozenset()  # configs that failed to compile or run here in a crossmeasure
    crossmeasured: int = 0  # crossmeasure records merged in

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.rows}x{self.cols} {self.dtype}"

    @property
    def element_size(self) -> int:
        return ELEMENT_SIZES[self.dtype]

    @property
    def r_pow2(self) -> int:
        return next_pow2(self.slot.rnumel)

    @property
    def x_pow2(self) -> int:
        return next_pow2(self.slot.xnumel)

    @property
    def family(self) -> tuple[str, int, str]:
        return self.kind, self.element_size, self.reductions

    @property
    def best(self) -> float:
        return max([1.0, *self.speedups.values()])


@dataclasses.dataclass(frozen=True)
class GroupFit:
    points: tuple[ShapePoint, ...]
    config: SlotConfig | None
    evidence: Evidence
    worst_regret: float | None


@dataclasses.dataclass(frozen=True)
class Skipped:
    study: str
    reason: str


# -- reading the studies -------------------------------------------------------------------------


def select_gpu(stores: Sequence[Store], query: str) -> GpuSpec:
    """The one GPU fingerprint (torch and triton included) that ``query`` names."""
    found: dict[str, Gpu] = {}
    for store in stores:
        for study in store.studies():
            found.setdefault(study.gpu.fingerprint, study.gpu)
    q = query.lower()
    matches = [g for fp, g in found.items() if q == fp.lower() or q in g.name.lower() or q in fp.lower()]
    exact = [g for g in matches if g.fingerprint.lower() == q]
    if not matches:
        raise DistillError(f"no studies of a GPU matching {query!r}; the databases hold {', '.join(found) or 'none'}")
    if len(matches) > 1 and not exact:
        raise DistillError(
            f"{query!r} matches {len(matches)} GPU fingerprints ({', '.join(g.fingerprint for g in matches)}); pass one"
        )
    g = (exact or matches)[0]
    return GpuSpec(g.name, g.fingerprint, g.compute_capability, g.sm_count, g.torch, g.triton)


def _median(values: Iterable[float | None]) -> float | None:
    valid = [v for v in values if v is not None]
    return statistics.median(valid) if valid else None


def _signature(slot, kernel: str) -> str:
    """The kernel's torch_rules.kernel_signature: the reductions the probe recorded, else (spaces probed
    before they were recorded) the catalog's entry, marked for a backward graph."""
    types = slot.reductions or (CATALOG[kernel].reductions if kernel in CATALOG else "")
    return kernel_signature(types.split("+"), slot.backward) if types else ""


def _study_point(store: Store, study, db_name: str, allow_replayed: bool = False) -> ShapePoint | Skipped:
    name = f"{db_name}: {study.name}"  # two databases may hold studies of the same name
    if study.replayed and not allow_replayed:
        return Skipped(name, "replayed study: its times are copies of other measurements")
    if study.dtype not in ELEMENT_SIZES:
        return Skipped(name, f"dtype {study.dtype} has no known element size")
    if not study.space_json:
        return Skipped(name, "no probed search space")
    space = SearchSpace.from_json(study.space_json)
    try:
        default_slots = space.structure(DEFAULT_FLAGS)
    except KeyError:
        return Skipped(name, "Inductor's default graph flags were not probed")
    if len(default_slots) != 1:
        return Skipped(name, f"{len(default_slots)} reduction kernels change together in every trial; "
                             "no kernel's share of the time can be told apart")
    slot = default_slots[0]
    reductions = _signature(slot, study.kernel)
    if not reductions:
        return Skipped(name, "the kernel's reduction types were not probed and the catalog does not know them")
    ok = [t for t in store.trials(study.id) if t.outcome == Outcome.OK and t.time_ms]
    default = [t for t in ok if t.inductor_default]
    if not default:
        return Skipped(name, "no successful Inductor-default trial")
    default_ms = _median(t.time_ms for t in default)
    hint = slot_hints([slot], default[0].inductor_choice_json).get(slot.key)
    if not slot.mix_order and hint is None:
        return Skipped(name, "Inductor's reduction hint for its kernel is not recorded")
    kind = kernel_kind(hint or "", next_pow2(slot.rnumel), slot.mix_order)

    times: dict[SlotConfig, list[float]] = collections.defaultdict(list)
    trial_cfg: dict[int, SlotConfig] = {}
    for t in ok:
        if t.inductor_default:
            continue
        config = TrialConfig.from_json(t.config_json)
        try:
            same_kernel = space.structure(config.flags) == default_slots
        except KeyError:
            same_kernel = False
        if same_kernel and slot.key in config.slot_map():  # other flags, same single kernel
            trial_cfg[t.trial_number] = config.slot_map()[slot.key]
            times[trial_cfg[t.trial_number]].append(t.time_ms)
    speedups = {cfg: default_ms / _median(ts) for cfg, ts in times.items()}

    noise = None
    interleaved = set()
    verdict = store.verdict(study.id)
    if verdict is not None and verdict.rounds_json:
        rounds = json.loads(verdict.rounds_json)
        default_rounds = [r for r in rounds[0] if r]
        if default_rounds:
            d_ms = statistics.median(default_rounds)
            noise = (max(default_rounds) - min(default_rounds)) / d_ms
            # The finalists are ranked among the trials the verdict saw; later trials (a run stopped
            # before its next verdict) must not shift which rounds belong to which config.
            for trial, cfg_rounds in zip(_finalists(ok[: verdict.trials_measured]), rounds[1:]):
                f_ms = _median(cfg_rounds)
                cfg = trial_cfg.get(trial.trial_number)
                if f_ms is None or cfg is None:
                    continue
                interleaved_ratio = d_ms / f_ms
                noise = max(noise, abs(speedups[cfg] / interleaved_ratio - 1))
                speedups[cfg] = interleaved_ratio  # interleaved with the default: the better estimate
                interleaved.add(cfg)
    if noise is None:
        return Skipped(name, "no interleaved re-measure (verdict), so its noise is unknown")
    return ShapePoint(
        study.kernel, study.rows, study.cols, study.dtype, kind, reductions, slot, speedups, noise, (name,),
        _default_description(default[0].inductor_choice_json, slot), frozenset(interleaved), frozenset(times),
    )


def _finalists(ok) -> list:
    """The verdict's finalists, in its order: best trial time first, one per distinct config (search.py)."""
    ranked, seen = [], set()
    for t in sorted((t for t in ok if not t.inductor_default), key=lambda t: t.time_ms):
        if t.config_json not in seen:
            seen.add(t.config_json)
            ranked.append(t)
    return ranked


def _default_description(choice_json: str | None, slot) -> str:
    for k in json.loads(choice_json or "[]"):
        cfg = k.get("config") or {}
        if k.get("size_hints") == {"x": next_pow2(slot.xnumel), "r0_": next_pow2(slot.rnumel)} and \
                bool(cfg.get("RSPLIT_SIZE")) == slot.mix_order:
            persistent = "PERSISTENT" in str(k.get("heuristic", ""))
            return SlotConfig(
                persistent, cfg.get("XBLOCK", 1), cfg.get("num_warps", 0), cfg.get("R0_BLOCK"),
                cfg.get("num_stages", 1), cfg.get("RSPLIT_SIZE"), cfg.get("NUM_STAGES"),
            ).describe()
    return ""


def load_points(
    stores: Sequence[Store], gpu: GpuSpec, names: Sequence[str] | None = None, allow_replayed: bool = False
) -> tuple[list[ShapePoint], list[Skipped]]:
    """Shape points of one GPU fingerprint, with the crossmeasure records of the same fingerprint
    merged in; studies of the same shape are pooled."""
    by_shape: dict[tuple, list[ShapePoint]] = collections.defaultdict(list)
    skipped: list[Skipped] = []
    crossmeasured: dict[tuple, list] = collections.defaultdict(list)
    for store, db_name in zip(stores, names or [s.url for s in stores]):
        for study in store.studies():
            if study.gpu.fingerprint != gpu.fingerprint:
                continue
            got = _study_point(store, study, db_name, allow_replayed)
            if isinstance(got, Skipped):
                skipped.append(got)
            else:
                by_shape[(got.kernel, got.rows, got.cols, got.dtype)].append(got)
        for rec in store.crossmeasures():
            if rec.gpu.fingerprint == gpu.fingerprint and (allow_replayed or not rec.replayed):
                crossmeasured[(rec.kernel, rec.rows, rec.cols, rec.dtype)].append(rec)
    points = [_with_crossmeasure(_pool(ps), crossmeasured.get(key, ())) for key, ps in sorted(by_shape.items())]
    return points, skipped


def _pool(points: list[ShapePoint]) -> ShapePoint:
    if len(points) == 1:
        return points[0]
    per_cfg: dict[SlotConfig, list[float]] = collections.defaultdict(list)
    for p in points:
        for cfg, s in p.speedups.items():
            per_cfg[cfg].append(s)
    return dataclasses.replace(
        points[0], speedups={c: _geomean(v) for c, v in per_cfg.items()}, noise=max(p.noise for p in points),
        studies=tuple(n for p in points for n in p.studies),
        interleaved=frozenset().union(*(p.interleaved for p in points)),
        proposed=frozenset().union(*(p.proposed for p in points)),
    )


def _with_crossmeasure(point: ShapePoint, records: Sequence) -> ShapePoint:
    """The point with every crossmeasured config's interleaved ratio (a later record's replaces an
    earlier one's) and the default's spread in those records folded into its noise."""
    speedups, interleaved, failed, noise = dict(point.speedups), set(point.interleaved), set(point.failed), point.noise
    used = 0
    for rec in records:
        configs = [TrialConfig.from_json(c) for c in json.loads(rec.configs_json)]
        rounds = json.loads(rec.rounds_json)
        base = [t for t in (rounds[0] if rounds else []) if t]
        if not base or not configs[0].inductor_default:
            continue
        used += 1
        d_ms = statistics.median(base)
        noise = max(noise, (max(base) - min(base)) / d_ms)
        for config, cfg_rounds in zip(configs[1:], rounds[1:]):
            cfg = config.slot_map().get(point.slot.key)
            if cfg is None or config.flags != DEFAULT_FLAGS:
                continue
            valid = [t for t in cfg_rounds if t]
            if not valid:
                failed.add(cfg)
                continue
            failed.discard(cfg)
            speedups[cfg] = d_ms / statistics.median(valid)
            interleaved.add(cfg)
    if not used:
        return point
    return dataclasses.replace(point, speedups=speedups, interleaved=frozenset(interleaved), failed=frozenset(failed),
                               noise=noise, crossmeasured=point.crossmeasured + used)


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


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
        return _geomean(self.gains)

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
            all(p.speedups[cfg] >= 1 - max(p.noise, params.noise_floor) for p in measured), params.min_gain,
        ))
    # Robustness first (worst case), then the typical gain; the description breaks exact ties.
    return sorted(out, key=lambda c: (c.adoptable, c.worst_regret, c.gain, c.config.describe()), reverse=True)


def fit_group(points: Sequence[ShapePoint], params: FitParams, top: int = 3, allowed=None) -> GroupFit:
    """The most robust adoptable config of one group of shapes, or keep-default with the reason."""
    points = tuple(points)
    need = max(params.min_shapes, math.ceil(params.min_coverage * len(points)))
    ranked = candidates(points, params, allowed)
    covered = [c for c in ranked if len(c.measured) >= need]
    default_worst = min(1 / p.best for p in points)
    base = Evidence(
        shapes=tuple(p.label for p in points),
        inductor_default=tuple(sorted({p.inductor_default for p in points if p.inductor_default})),
        # Promising configs short of coverage: what `inductor-tune crossmeasure` should time across the group.
        candidates=tuple(c.describe(len(points)) for c in ranked if c.gain > 1 and c not in covered[:1])[:top],
    )
    if not covered:
        note = (f"no config was timed interleaved at {need} or more of the {len(points)} shapes; "
                f"Inductor's default reaches {default_worst:.3f} of the best found in the worst case")
        return GroupFit(points, None, dataclasses.replace(base, note=note), default_worst)
    best = covered[0]
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


def fit_rules(points: Sequence[ShapePoint], params: FitParams = FitParams(), allowed=None) -> list[RuleSpec]:
    rules = []
    families = collections.defaultdict(dict)
    for (kind, element_size, reductions, r), group in size_groups(points).items():
        families[(kind, element_size, reductions)][r] = group
    for (kind, element_size, reductions), groups in sorted(families.items()):
        x_low = min(p.x_pow2 for g in groups.values() for p in g)
        runs: list[tuple[int, int, GroupFit]] = []
        for r in sorted(groups):
            fit = fit_group(groups[r], params, allowed=allowed)
            if runs:
                lo, _, last = runs[-1]
                merged = fit_group(last.points + fit.points, params, allowed=allowed)
                if _mergeable(last, fit, merged, params):
                    runs[-1] = (lo, r, merged)
                    continue
            runs.append((r, r, fit))
        for lo, hi, fit in runs:
            # A fused mix-order kernel has rows/RSPLIT_SIZE programs, so its best split moves with the
            # rows (an H200 lost 2x at 8192 rows with a split chosen at 32768): its rules start at the
            # fewest rows of their own shapes.  Other kernels launch the same programs at any row count.
            low = min(p.x_pow2 for p in fit.points) if kind == "mix_order" else x_low
            rules.append(RuleSpec(kind, element_size, (lo, hi), (low, X_UNBOUNDED), fit.config, fit.evidence,
                                  reductions))
    return rules


def size_groups(points: Sequence[ShapePoint]) -> dict[tuple[str, int, str, int], list[ShapePoint]]:
    """Shapes by (kind, element size, reductions, next_pow2(rnumel)): the unit a rule is first fitted on."""
    groups = collections.defaultdict(list)
    for p in points:
        groups[(*p.family, p.r_pow2)].append(p)
    return dict(sorted(groups.items()))


def proposed_by(points: Sequence[ShapePoint]) -> frozenset:
    """Every config the studies of these shapes tried (what a fit on them alone may choose from)."""
    return frozenset().union(*(p.proposed for p in points)) if points else frozenset()


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
    return next((r for r in rules if r.matches(p.kind, p.element_size, p.r_pow2, p.x_pow2, p.reductions)), None)


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


def holdout(points: Sequence[ShapePoint], params: FitParams = FitParams(), scheme: str = "leave_one_n_out") -> dict:
    """Fit on some shapes, score on the disjoint rest; never in-sample."""
    if scheme == "leave_one_n_out":
        folds = [[p for p in points if p.cols == n] for n in sorted({p.cols for p in points})]
    elif scheme == "leave_one_shape_out":
        folds = [[p] for p in points]
    else:
        raise ValueError(f"unknown hold-out scheme {scheme!r}; known: {', '.join(HOLDOUT_SCHEMES)}")
    rows = []
    for held in folds:
        train = [p for p in points if p not in held]
        rows += score(fit_rules(train, params, proposed_by(train)), held, params)
    return summarize_rows(scheme, HOLDOUT_SCHEMES[scheme], rows)


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
            geomean_speedup=round(_geomean([r["speedup"] for r in scored]), 4),
            worst_speedup=round(min(r["speedup"] for r in scored), 4),
            regressions_beyond_noise=sum(r["speedup"] < 1 - r["noise"] for r in scored),
            oracle_geomean_same_shapes=round(_geomean([r["best_found"] for r in scored]), 4),
            # The yardstick: the rules against the best config found at each shape.
            geomean_vs_best_found=round(_geomean([r["speedup"] / r["best_found"] for r in scored]), 4),
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
    hold_out: Sequence[Shape] = (),
) -> Heuristics:
    """The heuristic file for one GPU fingerprint; ``names`` are the databases as the user gave them.
    ``hold_out``: shapes (every kernel at those MxN) kept out of the fit and scored on instead."""
    stores = open_stores(db_urls)
    gpu = select_gpu(stores, gpu_query)
    points, skipped = load_points(stores, gpu, names or db_urls, params.allow_replayed)
    if not points:
        raise DistillError(f"no usable single-kernel study of {gpu.fingerprint}: "
                           + "; ".join(sorted({s.reason for s in skipped}))[:300])
    held_shapes = {(s.rows, s.cols) for s in hold_out}
    held = [p for p in points if (p.rows, p.cols) in held_shapes]
    fitted = [p for p in points if (p.rows, p.cols) not in held_shapes]
    missing = sorted(held_shapes - {(p.rows, p.cols) for p in held})
    if missing:
        raise DistillError(f"no usable study of the held-out shape(s) {', '.join(f'{m}x{n}' for m, n in missing)}")
    if not fitted:
        raise DistillError("every usable shape is held out: nothing left to fit")
    rules = fit_rules(fitted, params, proposed_by(fitted) if held else None)
    kinds = {p.kind for p in fitted}
    shapes_by_kind = {k: sorted(p.label for p in fitted if p.kind == k) for k in sorted(kinds)}
    provenance = {
        "tool": f"inductor_tune {__version__} (inductor-tune distill)",
        "databases": list(names or db_urls),
        "gpu_fingerprint": gpu.fingerprint,
        "torch": gpu.torch,
        "triton": gpu.triton,
        "parameters": dataclasses.asdict(params),
        "shapes": shapes_by_kind,
        "held_out_shapes": sorted(p.label for p in held),
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
        **{scheme: holdout(fitted, params, scheme) for scheme in HOLDOUT_SCHEMES},
    }
    if held:
        held_out[NAMED_SCHEME] = summarize_rows(NAMED_SCHEME, NAMED_METHOD, score(rules, held, params))
    return Heuristics(gpu, tuple(rules), provenance, held_out, not_covered)
