"""Per-shape evidence for ``distill``: what each measured config gained over Inductor's default.

Evidence.  Only studies whose function compiles to a single reduction kernel under Inductor's
default graph flags are used (forward norms and softmax, fused mix-order backward): there a trial's
time belongs to that kernel's config.  In studies with several kernels every trial changes all of
them at once, so no kernel's share can be told apart; those are listed as skipped.  Per shape, each
measured config gets its speedup over Inductor's default: the interleaved re-measure ratio for the
verdict's finalists and for every config ``inductor-tune crossmeasure`` timed there, else the
trial-time ratio against the study's default trial.  The shape's noise is the largest of the
default's round-to-round spreads and of how far trial ratios missed the interleaved ones.  Studies
of the same shape (e.g. from two databases) pool their speedups (geometric mean).

Focused studies.  A study whose space varies one kernel of a multi-kernel problem (``SearchSpace.focused``:
the split kernel of a split reduction, a weight gradient's column reduction) leaves the others to Inductor,
so its trial ratios are that kernel's; it gives a point of that kernel at its own sizes (rows = its
xnumel, cols = its rnumel, as the runtime matches it), with the problem it was compiled in (``problem``).
The row kernel of a multi-kernel problem (``focus: row``) has the problem's sizes and is framed as a single
kernel's (``point_frame``), so it is probed as one.

Probes.  Crossmeasure records at a shape no study ran (``crossmeasure.probes``: 3/2 of a studied
shape's rows; ``crossmeasure.span_probes``: random rows and N inside a rule's span) join their group
as probe shapes: every candidate must have been timed there too, and must not lose there, but a probe
proposes no config and is never scored as held out.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import math
import re
import statistics
from typing import Iterable, Sequence

from .heuristics import ELEMENT_SIZES, GpuSpec, gpu_problem, slot_hints
from .kernels import CATALOG, PROBED_OPS
from .points import ShapePoint, Skipped
from .records import Outcome
from .space import DEFAULT_FLAGS, SearchSpace, SlotConfig, TrialConfig, slot_key, slot_role
from .store import Gpu, Store
from .runtime.launch import choices_for_slot
from .runtime.torch_rules import OPS_FIELD, kernel_kind, kernel_signature, next_pow2
from .stats import geomean

log = logging.getLogger(__name__)


class DistillError(ValueError):
    """Nothing sensible to distil (unknown GPU, no usable study); one line for the user."""


def select_gpu(stores: Sequence[Store], query: str) -> GpuSpec:
    """The one GPU fingerprint (torch and triton included) that ``query`` names: one with studies, or with
    crossmeasure records only (its candidates came from another GPU's studies, ``--candidates-from``)."""
    found: dict[str, Gpu] = {}
    for store in stores:
        for study in store.studies():
            found.setdefault(study.gpu.fingerprint, study.gpu)
        for rec in store.crossmeasures():
            found.setdefault(rec.gpu.fingerprint, rec.gpu)
    q = query.lower()
    matches = [g for fp, g in found.items() if q == fp.lower() or q in g.name.lower() or q in fp.lower()]
    exact = [g for g in matches if g.fingerprint.lower() == q]
    if not matches:
        raise DistillError(f"no studies or crossmeasure records of a GPU matching {query!r}; the databases hold "
                           f"{', '.join(found) or 'none'}")
    if len(matches) > 1 and not exact:
        raise DistillError(
            f"{query!r} matches {len(matches)} GPU fingerprints ({', '.join(g.fingerprint for g in matches)}); pass one"
        )
    g = (exact or matches)[0]
    spec = GpuSpec(g.name, g.fingerprint, g.compute_capability, g.sm_count, g.torch, g.triton)
    # A heuristic file carries these into generated code (`inductor-tune patch`); one that its own
    # loader would refuse is never written.
    problem = gpu_problem(spec)
    if problem:
        raise DistillError(f"the GPU record {g.fingerprint!r} cannot go into a heuristic file: {problem}")
    return spec


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
    slot = _studied_slot(space)
    if isinstance(slot, str):
        return Skipped(name, slot)
    reductions = _signature(slot, study.kernel)
    if not reductions:
        return Skipped(name, "the kernel's reduction types were not probed and the catalog does not know them")
    if not slot.envelope:
        # Spaces probed before envelopes were recorded: the catalog's, measured for bf16 on the GPU.
        envelope = CATALOG[study.kernel].envelope if study.kernel in CATALOG and study.dtype == "bf16" else ""
        if not envelope:
            return Skipped(name, "the kernel's envelope was not probed and the catalog does not know it")
        slot = dataclasses.replace(slot, envelope=envelope)
    if OPS_FIELD + "=" not in slot.envelope:
        # Spaces probed before op counts were recorded: what the GPU probe saw this kernel compute.
        ops = PROBED_OPS.get((study.kernel, reductions, slot.envelope)) if study.dtype == "bf16" else None
        if not ops:
            return Skipped(name, "what the kernel computes (its reductions' op counts) was not probed for "
                                 f"{reductions} with {slot.envelope}")
        slot = dataclasses.replace(slot, envelope=f"{slot.envelope},{OPS_FIELD}={ops}")
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
    structures = dict(space.structures)  # the study's kernels under each graph-flag setting it probed
    for t in ok:
        if t.inductor_default:
            continue
        config = TrialConfig.from_json(t.config_json)
        same_kernel = structures.get(config.flags) == structures[DEFAULT_FLAGS]
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
    sizes, problem = point_frame(slot, study.rows, study.cols, bool(space.focus))
    return ShapePoint(
        study.kernel, *sizes, study.dtype, kind, reductions, slot, speedups, noise, (name,),
        _default_description(default[0].inductor_choice_json, slot), frozenset(interleaved), frozenset(times),
        problem=problem,
    )


def point_frame(slot, rows: int, cols: int, focused: bool) -> tuple[tuple[int, int], tuple[int, ...]]:
    """A study's point's rows x cols and the problem a crossmeasure compiles for it (``ShapePoint.problem``) where
    the study timed ``slot`` of a rows x cols problem.  A focused study's kernel is a point at its own sizes inside
    the problem, except the row kernel of a multi-kernel problem (``focus: row``, e.g. a backward below Inductor's
    mix-order threshold): it runs over the problem's rows and N, so it is framed as a single kernel's, and a probe
    of it at other sizes compiles the problem there and forces that kernel alone (``probe_parent``'s ``keys``)."""
    if focused and (slot.xnumel, slot.rnumel) != (rows, cols):
        return (slot.xnumel, slot.rnumel), (rows, cols)
    return (rows, cols), ()


def _studied_slot(space: SearchSpace) -> object:
    """The kernel whose time a study's trials measure (its focus, else its problem's only kernel), or why none."""
    try:
        default_slots = space.structure(DEFAULT_FLAGS)
    except KeyError:
        return "Inductor's default graph flags were not probed"
    if space.focus:
        slot = next((s for s in default_slots if s.key == space.focus[0]), None)
        if len(space.focus) == 1 and slot is not None:
            return slot
        return f"its focus {list(space.focus)} is not one kernel of Inductor's default compile"
    if len(default_slots) != 1:
        return (f"{len(default_slots)} reduction kernels change together in every trial; "
                "no kernel's share of the time can be told apart")
    return default_slots[0]


def _finalists(ok) -> list:
    """The verdict's finalists, in its order: best trial time first, one per distinct config (search.py)."""
    ranked, seen = [], set()
    for t in sorted((t for t in ok if not t.inductor_default), key=lambda t: t.time_ms):
        if t.config_json not in seen:
            seen.add(t.config_json)
            ranked.append(t)
    return ranked


def _default_description(choice_json: str | None, slot) -> str:
    found = choices_for_slot(json.loads(choice_json or "[]"), slot)
    return SlotConfig.from_inductor_choice(found[0]).describe() if found else ""


def load_points(
    stores: Sequence[Store], gpu: GpuSpec, names: Sequence[str] | None = None, allow_replayed: bool = False,
    candidates_from: GpuSpec | None = None,
) -> tuple[list[ShapePoint], list[Skipped]]:
    """Shape points of one GPU fingerprint, with the crossmeasure records of the same fingerprint
    merged in; studies of the same shape are pooled.

    ``candidates_from``: another GPU whose studies frame this GPU's crossmeasure records at shapes this
    GPU never studied (``crossmeasure --candidates-from``): their kernel, signature, envelope and
    proposals, none of their measurements (``transplant``)."""
    by_shape: dict[tuple, list[ShapePoint]] = collections.defaultdict(list)
    framing: dict[tuple, list[ShapePoint]] = collections.defaultdict(list)
    skipped: list[Skipped] = []
    crossmeasured: dict[tuple, list] = collections.defaultdict(list)
    span_rounds: dict[tuple, tuple[str, ...]] = {}
    for store, db_name in zip(stores, names or [s.url for s in stores]):
        for study in store.studies():
            if study.gpu.fingerprint == gpu.fingerprint:
                into = by_shape
            elif candidates_from is not None and study.gpu.fingerprint == candidates_from.fingerprint:
                into = framing
            else:
                continue
            got = _study_point(store, study, db_name, allow_replayed)
            if isinstance(got, Skipped):
                skipped.append(got)
            else:
                into[(got.kernel, got.rows, got.cols, got.dtype, got.problem, got.slot.key if got.problem else "")
                     ].append(got)
        records = [rec for rec in store.crossmeasures()
                   if rec.gpu.fingerprint == gpu.fingerprint and (allow_replayed or not rec.replayed)]
        for rec in records:
            crossmeasured[(rec.kernel, rec.rows, rec.cols, rec.dtype)].append(rec)
        span_rounds.update(_span_rounds(records, db_name))
    points = [_with_crossmeasure(_pool(ps), crossmeasured.get(record_key(ps[0]), ()))
              for _, ps in sorted(by_shape.items())]
    # Another GPU's study frames a shape only where this GPU measured it: nothing of its times is kept.
    framed = [_with_crossmeasure(transplant(_pool(ps)), crossmeasured[record_key(ps[0])])
              for key, ps in sorted(framing.items()) if key not in by_shape and record_key(ps[0]) in crossmeasured]
    points += [p for p in framed if p.crossmeasured]
    known = {record_key(p) for p in points}
    probed = [_probe(points, key, records, span_rounds.get(key, ()))
              for key, records in sorted(crossmeasured.items()) if key not in known]
    return points + [p for p in probed if p is not None], skipped


def record_key(point: ShapePoint) -> tuple[str, int, int, str]:
    """The (kernel, rows, cols, dtype) under which crossmeasure records of the point's problem are stored."""
    return (point.kernel, *point.compiled, point.dtype)


def _is_span(rec) -> bool:
    # A row probe's configs were proposed by studies its record names; a span probe's come from a fit of
    # every shape, and its record names no proposer.
    return not any(json.loads(rec.origin_json or "[]"))


def _span_rounds(records: Sequence, db_name: str) -> dict[tuple, tuple[str, ...]]:
    """Per shape of a span-probe record, its round: the records of one database and seed (older records
    carry no seed: one round per database), keyed by when the round's first record was stored."""
    rounds: dict[tuple, list] = collections.defaultdict(list)
    for rec in records:
        if _is_span(rec):
            rounds[(db_name, str(json.loads(rec.timing_json or "{}").get("span_seed", "")))].append(rec)
    return {(rec.kernel, rec.rows, rec.cols, rec.dtype): (min(r.created for r in recs).isoformat(), *round_id)
            for round_id, recs in rounds.items() for rec in recs}


def transplant(point: ShapePoint) -> ShapePoint:
    """Another GPU's study point as the frame of this GPU's measurements at the same shape: the kernel it
    compiled and the configs its studies proposed, with every measurement, and what Inductor chose there,
    dropped.  This GPU's crossmeasure check (the forced kernel must be one its compile generates) is what
    says the frame fits."""
    return dataclasses.replace(point, speedups={}, noise=0.0, studies=(), inductor_default="",
                               interleaved=frozenset(), failed=frozenset(), crossmeasured=0)


def probe_point(parent: ShapePoint, rows: int, cols: int | None = None, span: bool = False) -> ShapePoint:
    """``parent``'s kernel at another row count (and reduction length): no study, nothing measured yet;
    ``span``: a span probe (``crossmeasure.span_probes``), not one at 3/2 of a studied shape's rows."""
    slot = parent.slot
    cols = parent.cols if cols is None else cols
    rnumel = cols if slot.rnumel == parent.cols else slot.rnumel
    key = slot_key(slot.backward, slot.mix_order, rows, rnumel, ())
    return dataclasses.replace(
        parent, rows=rows, cols=cols, slot=dataclasses.replace(slot, key=key, xnumel=rows, rnumel=rnumel),
        speedups={}, noise=0.0, studies=(), inductor_default="", interleaved=frozenset(), proposed=frozenset(),
        failed=frozenset(), crossmeasured=0, probe=True, span=span,
    )


def runs_over_rows(point: ShapePoint) -> bool:
    """Whether the kernel's grid runs over the rows and its reduction over the whole row (inner and fused
    mix-order kernels): only such a kernel can be probed at other rows and reduction lengths."""
    return point.slot.xnumel == point.rows and point.slot.rnumel == point.cols and not point.problem


def probe_parent(points: Sequence[ShapePoint], kernel: str, dtype: str, rows: int, cols: int,
                 other_buckets: bool = True, keys: Sequence[str] = (), mix_order: bool | None = None
                 ) -> ShapePoint | None:
    """The studied shape whose kernel a probe of ``kernel`` at rows x cols compiles: of the same kernel and
    dtype, in the same power-of-two bucket of N where it has one, with the nearest N and then the nearest
    rows.  ``other_buckets``: else the one at the nearest N of any bucket, for a span probe of a kernel its
    rule's family studied only at other N (``crossmeasure``'s docstring says why).  ``keys``: the kernels the
    probe's records forced configs onto; a parent must be of one of them at rows x cols, because one problem
    may have studied kernels of two programs (a backward's fused mix-order kernel at many rows, its row kernel
    below Inductor's mix-order threshold).  ``mix_order``: the parent's kernel is (or is not) a fused mix-order
    one, for a probe of a rule of that kind."""
    parents = [p for p in points if (p.kernel, p.dtype) == (kernel, dtype) and runs_over_rows(p) and not p.probe
               and (other_buckets or next_pow2(p.cols) == next_pow2(cols))
               and (not keys or slot_key(p.slot.backward, p.slot.mix_order, rows, cols, ()) in keys)
               and (mix_order is None or p.slot.mix_order == mix_order)]
    return min(parents, default=None, key=lambda p: (next_pow2(p.cols) != next_pow2(cols), abs(math.log(p.cols / cols)),
                                                     abs(math.log(p.rows / rows)), p.rows, p.cols))


def span_kernels(points: Sequence[ShapePoint], family: tuple, r_pow2: int) -> tuple[tuple[str, str], ...]:
    """The (kernel, dtype) pairs whose probes at N in bucket ``r_pow2`` compile a kernel of ``family``: every
    kernel a rule of that family and size group matches by its envelope, as far as this GPU's studies know."""
    studied = sorted({(p.kernel, p.dtype) for p in points if p.family == family and not p.probe and runs_over_rows(p)})
    parents = {k: probe_parent(points, *k, r_pow2, r_pow2, mix_order=family[0] == "mix_order") for k in studied}
    return tuple(k for k, parent in parents.items() if parent is not None and parent.family == family)


def _probe(points: Sequence[ShapePoint], key: tuple, records: Sequence, span_round: tuple[str, ...] = ()
           ) -> ShapePoint | None:
    """The probe point of crossmeasure records at a shape no study ran: at these sizes, the kernel of
    ``probe_parent`` (a row probe keeps its N and its bucket; a span probe, ``crossmeasure.span_probes``,
    lies between studied N too, and may take a kernel studied only in other buckets)."""
    kernel, rows, cols, dtype = key
    # A span probe stays one when ``crossmeasure --fill`` times more configs there later (a record that
    # names their proposers): its round and placing config are those of its span records.
    spans = [rec for rec in records if _is_span(rec)]
    span = bool(spans)
    if span:
        # A probe of a split kernel times that kernel, not the problem's row kernel some study may know.
        split = record_probe(points, kernel, dtype, rows, cols, _forced_keys(spans))
        if split is not None:
            return _placed_probe(split, records, spans, span_round)
    parent = probe_parent(points, kernel, dtype, rows, cols, other_buckets=span, keys=_forced_keys(records))
    if parent is None:
        log.info("crossmeasure records of %s %dx%d %s: no study of that kernel and dtype with the kernel they forced "
                 "(for a row probe, in that N bucket); not used", kernel, rows, cols, dtype)
        return None
    return _placed_probe(probe_point(parent, rows, cols, span), records, spans, span_round)


def _forced_keys(records: Sequence) -> list[str]:
    """The kernels crossmeasure records forced their configs onto (Inductor's default, first, forces none)."""
    return [key for rec in records for config in json.loads(rec.configs_json)[1:]
            for key, _ in TrialConfig.from_json(config).slots]


def _placed_probe(point: ShapePoint, records: Sequence, spans: Sequence, span_round: tuple[str, ...]
                  ) -> ShapePoint | None:
    if spans:
        # The placing fit's rule config is timed first, right after Inductor's default.
        configs = json.loads(spans[-1].configs_json)
        placed_by = TrialConfig.from_json(configs[1]).slot_map().get(point.slot.key) if len(configs) > 1 else None
        point = dataclasses.replace(point, span_round=span_round, placed_by=placed_by)
    for rec in records:
        reasons = [f for f in json.loads(rec.checks_json).get("failures", []) if f]
        if any("that this compile did not generate" in f for f in reasons):
            # Inductor generated other kernels at these sizes: the probe does not speak for the group.
            log.info("probe %s not used: %s", point.label, reasons[0][:200])
            return None
    point = _with_crossmeasure(point, records)
    return point if point.crossmeasured else None


_KEY_SIZES = re.compile(r"\.x(\d+)\.r(\d+)$")


# The kernels of a focused study that take span probes of their own (``split_probes``): Inductor's split of a row
# reduction (its outputs are the problem's rows times the split) and of a column reduction (its N times the split).
PART_ROLES = ("split", "column_split")


def part_role(point: ShapePoint) -> str | None:
    """``split`` or ``column_split`` where the point is that kernel of a focused study (or of a probe of one)."""
    role = slot_role(point.slot, *point.problem) if point.problem else None
    return role if role in PART_ROLES else None


def is_split_point(point: ShapePoint) -> bool:
    """Whether the point is the split kernel of a focused study (or of a probe of one, ``split_probes``)."""
    return part_role(point) == "split"


def split_probe(parent: ShapePoint, rows: int, cols: int, split: int) -> ShapePoint:
    """``parent``'s kernel, a split or a column split (``part_role``), in a rows x cols problem that Inductor splits in
    ``split`` parts: nothing measured."""
    if part_role(parent) == "column_split":
        x, r = cols * split, -(-rows // split)
    else:
        x, r = rows * split, -(-cols // split)
    # The n-th split kernel of a compile (softmax has two) keeps its place: its key's "#n".
    _, sep, nth = parent.slot.key.partition("#")
    point = probe_point(parent, x, r, span=True)
    key = slot_key(parent.slot.backward, False, x, r, ()) + sep + nth
    return dataclasses.replace(point, problem=(rows, cols), slot=dataclasses.replace(point.slot, key=key))


def record_probe(points: Sequence[ShapePoint], kernel: str, dtype: str, rows: int, cols: int,
                 forced_keys: Sequence[str]) -> ShapePoint | None:
    """The split-kernel probe a crossmeasure record at rows x cols times (its configs forced onto ``forced_keys``),
    framed by the nearest studied split (or column split) kernel of that kernel and dtype; None where it forced
    neither."""
    for key in dict.fromkeys(forced_keys):  # every config of a record names the same kernel
        base, sep, nth = key.partition("#")
        sizes = _KEY_SIZES.search(base)
        x, r = (int(sizes.group(1)), int(sizes.group(2))) if sizes else (0, 0)
        # A row kernel's key (x == rows) is the common case: it is told apart before any point is looked at.
        for role, outputs in (("split", rows), ("column_split", cols)):
            if x <= outputs or x % outputs:
                continue
            parents = [p for p in points if (p.kernel, p.dtype) == (kernel, dtype) and not p.probe
                       and part_role(p) == role and p.slot.key.partition("#")[1:] == (sep, nth)]
            if not parents:
                continue
            parent = min(parents, key=lambda p: (abs(math.log(p.cols / r)), abs(math.log(p.rows / x)), p.rows, p.cols))
            probe = split_probe(parent, rows, cols, x // outputs)
            if probe.slot.key == key and slot_role(probe.slot, rows, cols) == role:
                return probe
    return None


def _pool(points: list[ShapePoint]) -> ShapePoint:
    if len(points) == 1:
        return points[0]
    per_cfg: dict[SlotConfig, list[float]] = collections.defaultdict(list)
    for p in points:
        for cfg, s in p.speedups.items():
            per_cfg[cfg].append(s)
    return dataclasses.replace(
        points[0], speedups={c: geomean(v) for c, v in per_cfg.items()}, noise=max(p.noise for p in points),
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
