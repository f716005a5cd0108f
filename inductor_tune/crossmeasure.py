"""Time each size group's candidate configs at every shape of the group (``inductor-tune crossmeasure``).

A study of 20 trials measures a config at the one shape it tuned, so ``distill`` rarely knows how a
promising config does at the other shapes of its size group, and a rule chosen for robustness needs
exactly that.  This step, on the GPU the studies ran on, takes per group (kernel kind, reductions,
element size, next_pow2(rnumel)) the best configs the group's studies found and those of the
neighbouring size groups, and times all of them at every shape of the group, interleaved round by
round with Inductor's default (the same ``remeasure`` task a study's verdict uses).  One record per
shape goes to ``it_crossmeasure``; ``distill`` folds the ratios in as interleaved evidence.

Probes.  A rule covers a range of rows, but the studies ran at power-of-two rows only.  Where a
kernel's grid is rows / RSPLIT_SIZE programs (fused mix-order backward), how many waves fill the
SMs changes with the rows, and a config may win at 8192 and 32768 rows yet lose at 16384 (seen on an
H200).  So per studied shape of a probed kind the group's configs are also timed at 3/2 of its rows,
a row count no study uses; ``distill`` counts those probes as shapes of the group that a rule must
hold at too.

Span probes.  A rule covers every row count and reduction length between the smallest and largest its
evidence measured, but the studies ran at a few sizes, most of them powers of two, and a fused backward
whose split won at 1536 and 2048 lost 29 % at N=1868 (an H200's held-out set 4).  So ``span_probes``
draws, from a seed, random rows (log-uniform) and N (in the group's power-of-two bucket) inside
the span of each group whose fitted rule sets a config, and times there that rule's config and the
group's other covered candidates: what a rule claims, measured where no study looked.  The draw keeps
out the studied shapes and the held-out draws it is given (``validate --draw-out``).

A row's alignment changes the kernel: on an H200 a softmax-backward rule that won at 60 shapes of its
span, all but one of them with N ≢ 4 (mod 8), lost 12-15 % at N = 5500 and 5948 and won at 5000, 5200,
6200, 6400 and 7000 (held-out set 9, diagnosed in ``db/diag-set9.sqlite``).  A uniform N lands on
N ≡ 4 (mod 8) one time in eight, so span probes take N from each alignment class in turn
(``ALIGNMENT_CLASSES``): the loss a class hides is measured before a rule ships, not after.

A rule matches kernels by their envelope, so one rule may serve ``rmsnorm_fwd``, ``llama_rmsnorm_fwd``
and ``nn_rmsnorm_fwd``.  On an H200 a rule whose probes all took ``rmsnorm_fwd`` (the only kernel its N
bucket had studied) lost 3 % at ``llama_rmsnorm_fwd`` (held-out set 13) and 6.8 % at ``nn_rmsnorm_fwd``.
So span probes also take each kernel of the rule's family in turn (``evidence.span_kernels``,
``FitParams.probe_every_kernel``). A kernel studied only at other N lends its slot from the nearest one.

Edge probes.  Rows drawn log-uniform over a band of several octaves rarely land where it starts, where the
grid is smallest; on an H200 a rule from 256 rows lost 4 % at 300 rows of one of the kernels it matched, a
shape none of its probes was near.  So ``edge_per_kernel`` more probes per rule take each kernel it matches
with rows in the lowest octave of its band.  Their first round found that loss again, on training data
(0.958 at 273 rows), and the refit moved the band's start above it.

Inductor's split region.  Below 2 x the GPU's SMs rows, Inductor splits an inner reduction of N above 8192
into two kernels, so a probe there times none of the kernels its rule matches: its record says the compile did
not generate them, and ``distill`` drops it.  On an H200 round 7 lost three of the six probes of the scaled
softmax forward at N 8193..16384 so (8, 30 and 208 rows), with them two alignment classes, and a rule that won
1.43x over 109 shapes stayed held back (docs/rules.md, stop 39).  So a probe of an inner reduction is never
drawn there (``split_rows``), and an edge octave starts above it.

Hull probes.  At odd N a rule covers only the convex hull of its odd evidence (``distill.odd_hull``, since stop 54),
and span probes spread over the whole span fill that hull slowly: on an H200 the best found at
``prenorm_rmsnorm_train_fwd`` 32220x3159 was 1.78x the default, with a rule of that config whose odd evidence
stopped at 32066 rows (stop 64).  So ``hull_per_rule`` more probes per config rule take odd N inside its rows and N
span but outside that hull, where a win grows the hull and a loss holds the rule back, as any span probe's does.
They go with a span round only: alone, a round of odd N would leave every rule it probed unsettled (``settle``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
from typing import Container, Sequence

from .distill import FitParams, candidates, fit_rules, size_groups
from .evidence import probe_parent, probe_point, record_key, runs_over_rows, span_kernels
from .points import ShapePoint
from .heuristics import RuleSpec
from .problem import Problem, Shape
from .shapes import ALIGNMENT_CLASSES, classes_with_n
from .records import TimingSpec
from .runtime import torch_rules
from .runtime.rulefile import INNER_SPLIT_MIN_RNUMEL
from .space import DEFAULT_FLAGS, INDUCTOR_DEFAULT, SlotConfig, TrialConfig, slot_violations
from .tasks import Remeasured, RemeasureTask

log = logging.getLogger(__name__)

# Crossmeasure times many configs per shape; a shorter window than a study's keeps a full plan within
# one GPU session, and interleaving (not window length) is what cancels drift.
TIMING = TimingSpec(rep_ms=20.0)

# Kernel kinds probed between the studied rows by default: those whose program count follows the rows
# through their split size.  Other kinds launch rows / XBLOCK programs, many waves at these sizes.
PROBED_KINDS = ("mix_order",)


@dataclasses.dataclass(frozen=True)
class PlanItem:
    point: ShapePoint
    configs: tuple[SlotConfig, ...]
    origins: tuple[tuple[str, ...], ...]  # per config, the shapes whose studies proposed it

    @property
    def problem(self) -> Problem:
        return Problem(self.point.kernel, Shape(*self.point.compiled), self.point.dtype)

    def trial_configs(self) -> list[TrialConfig]:
        """Inductor's default first, then each candidate forced onto this shape's kernel."""
        key = self.point.slot.key
        return [INDUCTOR_DEFAULT] + [TrialConfig(DEFAULT_FLAGS, ((key, cfg),)) for cfg in self.configs]


def _top(point: ShapePoint, k: int) -> list[SlotConfig]:
    """The k fastest configs this shape's own studies tried (ties broken by description)."""
    mine = [cfg for cfg in point.speedups if cfg in point.proposed]
    return sorted(mine, key=lambda c: (-point.speedups[c], c.describe()))[:k]


def probes(points: Sequence[ShapePoint], kinds: Sequence[str] = PROBED_KINDS) -> list[ShapePoint]:
    """One probe at 3/2 of the rows of every studied shape of ``kinds`` whose kernel runs over the rows
    (xnumel == rows), unless a study measured that shape itself."""
    studied = {(p.kernel, p.rows, p.cols, p.dtype) for p in points}
    out: dict[tuple, ShapePoint] = {}
    for p in points:
        rows = p.rows * 3 // 2
        key = (p.kernel, rows, p.cols, p.dtype)
        if p.kind in kinds and runs_over_rows(p) and not p.probe and p.rows % 2 == 0 \
                and key not in studied and key not in out:
            out[key] = probe_point(p, rows)
    return [out[k] for k in sorted(out)]


def plan(points: Sequence[ShapePoint], top: int = 3, neighbours: int = 2, max_configs: int = 10,
         probe_kinds: Sequence[str] = PROBED_KINDS, hold_out: Sequence[Shape] = ()) -> list[PlanItem]:
    """Per shape, the configs to time there: the ``top`` best of each shape of its group, then the
    ``neighbours`` best of each shape of the two adjacent size groups of the same family (so that
    ``distill`` can tell whether one rule spans them), kept where legal at every shape of the group.
    Then the probes of ``probe_kinds`` (see the module's docstring) with the same configs.

    ``hold_out``: shapes (every kernel at those MxN) fixed as held out before any candidate is chosen.
    They propose no config and place no probe; their items time the training shapes' candidates, so
    that a hold-out fit can be scored there."""
    points = [p for p in points if not p.probe]  # probes come from the studies, never from other probes
    held = {(s.rows, s.cols) for s in hold_out}
    training = [p for p in points if p.compiled not in held]
    groups = size_groups(points)
    proposing = size_groups(training)
    probes_of = size_groups(probes(training, probe_kinds))
    proposers: dict[SlotConfig, list[str]] = {}
    for p in training:
        for cfg in p.proposed:
            proposers.setdefault(cfg, []).append(p.label)
    items = []
    for (kind, element_size, reductions, envelope, r), group in groups.items():
        wanted: list[SlotConfig] = []
        for p in proposing.get((kind, element_size, reductions, envelope, r), ()):
            wanted += _top(p, top)
        for adjacent in (r // 2, r * 2):
            for p in proposing.get((kind, element_size, reductions, envelope, adjacent), ()):
                wanted += _top(p, neighbours)
        configs: list[SlotConfig] = []
        for cfg in wanted:
            if cfg not in configs and not any(slot_violations(p.slot, cfg) for p in group):
                configs.append(cfg)
        configs = configs[:max_configs]
        for p in group:
            items.append(PlanItem(p, tuple(configs), tuple(tuple(sorted(proposers.get(c, ()))) for c in configs)))
        # A probe has more rows than its studied shape, and no launch constraint tightens with the
        # rows, so the group's configs are legal there too.
        for p in probes_of.get((kind, element_size, reductions, envelope, r), ()):
            items.append(PlanItem(p, tuple(configs), tuple(tuple(sorted(proposers.get(c, ()))) for c in configs)))
    return items


FITTED_RULE = "fitted rule"  # the origin of a config a fit of the planning GPU's shapes adopted (lead_with_rules)


def lead_with_rules(items: Sequence[PlanItem], points: Sequence[ShapePoint], max_configs: int,
                    params: FitParams = FitParams()) -> list[PlanItem]:
    """Each item's configs led by the config that a fit of ``points`` adopts for its size group, where it
    is not among them already (then the last config makes room).  For a GPU whose candidates come from
    another GPU's studies, that GPU's rules are what a shared file would ship and the first thing to check;
    the studies' own top configs miss them where the rule came from crossmeasure or a neighbour group."""
    rules = [r for r in fit_rules(points, params) if r.config is not None]
    out = []
    for item in items:
        p = item.point
        # Every item of a size group gets the same rule (the first), so the group's configs stay one set.
        rule = next((r for r in rules if r.matches(p.kind, p.element_size, p.r_pow2, r.xnumel[0], p.reductions,
                                                   p.envelope or None)), None)
        if rule is None or rule.config in item.configs or slot_violations(p.slot, rule.config):
            out.append(item)
            continue
        out.append(dataclasses.replace(item, configs=(rule.config, *item.configs[:max_configs - 1]),
                                       origins=((FITTED_RULE,), *item.origins[:max_configs - 1])))
    return out


# Span probes are drawn within the sizes a gate problem may have (gate.draw_problems' default bound, which
# `validate --random --max-gib` moves as `crossmeasure --max-gib` moves this one).  Rule bands of more rows
# than fit it cannot settle: on an H200 the probes of two bands above 33000 rows (N 8192) all lay at the
# lowest N of their bucket, just under 4 GiB (docs/rules.md, stop 31).
SPAN_PROBE_MAX_BYTES = 4 * 2**30
SPAN_PROBE_ATTEMPTS = 50


def aligned_cols(cols: int, lo: int, hi: int, alignment: tuple[int, int]) -> int | None:
    """``cols`` moved to the nearest value in [lo, hi] of the alignment class (modulus, residue), or
    None where the range holds none."""
    modulus, residue = alignment
    below = cols - (cols - residue) % modulus
    for c in sorted((below, below + modulus), key=lambda c: abs(c - cols)):
        if lo <= c <= hi:
            return c
    return None


def span_probes(points: Sequence[ShapePoint], per_group: int, seed: int, avoid: Container[tuple[int, int]] = (),
                max_configs: int = 8, params: FitParams = FitParams(), edge_per_kernel: int = 0,
                max_bytes: int = SPAN_PROBE_MAX_BYTES, split_rows: int = 0, capability_major: int = 9,
                hull_per_rule: int = 0) -> list[PlanItem]:
    """``per_group`` random probes inside the span of each size group whose fitted rule sets a config (see
    the module's docstring), each timing that config and the group's covered candidates, at most
    ``max_configs``; ``edge_per_kernel`` more per kernel the rule matches, at its lowest rows (edge
    probes); and ``hull_per_rule`` more at odd N outside the rule's odd hull (hull probes).  A pure function of
    its arguments; ``avoid``: (rows, cols) kept out for every kernel (held-out draws), besides every shape the
    points measured; ``max_bytes``: the most a probe may keep resident on the GPU; ``split_rows``: rows below
    which Inductor splits an inner reduction of N above 8192 (2 x the GPU's SMs; 0: none), where no probe of one
    is drawn (the module's docstring says why), and where a rule fitted on split kernels (focused studies) takes
    its probes (``split_probes``)."""
    rng = random.Random(seed)
    # Edge, split and hull probes draw from their own streams, so a seed's span probes are the same with or without
    # them.
    edge_rng, split_rng = random.Random(f"edge:{seed}"), random.Random(f"split:{seed}")
    hull_rng = random.Random(f"hull:{seed}")
    rules = fit_rules(points, params)
    taken = {p.compiled for p in points}
    items: list[PlanItem] = []
    for (kind, element_size, reductions, envelope, r), whole_group in sorted(size_groups(points).items()):
        # One rule per group, or one per band where the fit cut the group's rows or N (``rowbands``).
        for rule in (x for x in rules if x.config is not None and x.matches(kind, element_size, r, x.xnumel[0],
                                                                           reductions, envelope or None)):
            group = [p for p in whole_group
                     if rule.xnumel[0] <= p.x_pow2 <= rule.xnumel[1] and torch_rules.within(rule.cols, p.cols)]
            draw = _probe_draw(rule, group, points, r, taken, avoid, max_configs, params, max_bytes,
                               split_rows if kind.startswith("inner") else 0)
            if draw is None:
                items += _split_probes(rule, group, points, per_group, split_rng, taken, avoid, max_configs, params,
                                       max_bytes, split_rows, capability_major)
                continue
            items += draw.probes(per_group, rule.rows, draw.kernels, rng)
            if edge_per_kernel:
                items += _edge_probes(draw, rule.rows, edge_per_kernel, edge_rng)
            if hull_per_rule and rule.odd_hull:
                items += draw.probes(hull_per_rule, rule.rows, draw.kernels, hull_rng, classes=((2, 1),),
                                     outside=rule.odd_hull)
    return items


def _probe_draw(rule: RuleSpec, group: Sequence[ShapePoint], points: Sequence[ShapePoint], r: int, taken: set,
                avoid: Container[tuple[int, int]], max_configs: int, params: FitParams,
                max_bytes: int, split_rows: int = 0) -> _ProbeDraw | None:
    """What the probes of one config rule in size group ``r`` draw from (``group``: its shapes there;
    ``points``: every shape, whose studies lend the probes their kernels); None where it places none."""
    if not group or rule.rows is None:
        return None
    family = group[0].family
    parents = [p for p in group if not p.probe and runs_over_rows(p)]
    kernels = span_kernels(points, family, r) if params.probe_every_kernel else ()
    # A row band whose shapes are all probes (its studies lie in another band or bucket) is probed through
    # its family's studied kernels: skipping it left nine fitted H200 rules held back for good, since no
    # later round could settle them (docs/rules.md, stop 31).
    if not parents and not kernels:
        return None
    return _ProbeDraw(family, parents, points, kernels, _rule_configs(rule, group, params), r, taken, avoid,
                      max_configs, max_bytes, split_rows, rule.cols)


def _rule_configs(rule: RuleSpec, group: Sequence[ShapePoint], params: FitParams) -> list[SlotConfig]:
    """What a span probe of ``rule`` times: its config, then the group's covered candidates."""
    need = max(params.min_shapes, math.ceil(params.min_coverage * len(group)))
    return [rule.config] + [c.config for c in candidates(group, params) if len(c.measured) >= need]


def _split_probes(rule: RuleSpec, group: Sequence[ShapePoint], points: Sequence[ShapePoint], count: int,
                  rng: random.Random, taken: set, avoid: Container[tuple[int, int]], max_configs: int,
                  params: FitParams, max_bytes: int, split_rows: int, capability_major: int) -> list[PlanItem]:
    """Span probes of a rule fitted on split (or column-split) kernels: problems whose such kernel lies in its span."""
    from .gate import resident_bytes
    from .split_probes import part_draw, split_parents

    parents = split_parents(group, points)
    if not parents or rule.rows is None or rule.cols is None or not split_rows:
        return []
    draw = part_draw(parents, rule.rows, rule.cols, split_rows // 2, capability_major)
    configs = _rule_configs(rule, group, params)
    items = []
    for point, _ in draw.problems(count, rng, taken, avoid,
                                  lambda kernel, rows, cols: resident_bytes(kernel, rows, cols, parents[0].dtype)
                                  <= max_bytes):
        legal = list(dict.fromkeys(c for c in configs if not slot_violations(point.slot, c)))[:max_configs]
        if legal:
            items.append(PlanItem(point, tuple(legal), tuple(() for _ in legal)))
    return items


def _edge_probes(draw: _ProbeDraw, rows: tuple[int, int], per_kernel: int, rng: random.Random) -> list[PlanItem]:
    """``per_kernel`` probes at each kernel the rule matches, with rows in the lowest octave of its ``rows``.

    Where a rule's band starts, the grid is smallest and a config's wave count the most fragile, and a
    log-uniform draw over the whole band lands there rarely: on an H200 a rule whose 256-row edge no probe
    took lost 4 % at 300 rows of a kernel it matched (docs/rules.md, stop 29).  The alignment classes go on
    turning from one kernel to the next."""
    rows_lo, rows_hi = rows
    if draw.r // 2 + 1 >= INNER_SPLIT_MIN_RNUMEL:
        # Every N of the bucket is split below ``split_rows``: the band's kernel starts there.
        rows_lo = min(rows_hi, max(rows_lo, draw.split_rows))
    octave = (rows_lo, min(rows_hi, 2 * rows_lo))
    items: list[PlanItem] = []
    for n, kernel in enumerate(draw.kernels or (None,)):
        items += draw.probes(per_kernel, octave, (kernel,) if kernel else (), rng, first_class=n * per_kernel)
    return items


@dataclasses.dataclass(frozen=True)
class _ProbeDraw:
    """What the probes of one rule draw from, and the shapes already taken (a set shared by every rule)."""
    family: tuple
    parents: Sequence[ShapePoint]
    points: Sequence[ShapePoint]
    kernels: tuple[tuple[str, str], ...]  # the kernels the rule matches, taken in turn (none: nearest parent's)
    configs: list
    r: int
    taken: set
    avoid: Container[tuple[int, int]]
    max_configs: int
    max_bytes: int  # the most a probe may keep resident on the GPU
    split_rows: int = 0  # below it Inductor splits N above 8192 into two kernels: no probe there
    # The rule's N span: a probe outside it says nothing of the rule (``settle``), and a band cut in N spans part
    # of its octave only (``rowbands.col_cuts``).  None: the whole octave.
    cols: tuple[int, int] | None = None

    def probes(self, count: int, rows_band: tuple[int, int], kernels: Sequence[tuple[str, str]], rng: random.Random,
               first_class: int = 0, classes: Sequence[tuple[int, int]] = ALIGNMENT_CLASSES,
               outside: tuple = ()) -> list[PlanItem]:
        """``count`` probes with rows log-uniform over ``rows_band`` and N in the bucket and the rule's N span, in
        each of ``classes`` in turn from ``first_class``, kernels in turn (none: the nearest studied shape's); with
        ``outside`` (a rule's odd hull), none inside it."""
        from .gate import resident_bytes

        (rows_lo, rows_hi), (cols_lo, cols_hi) = rows_band, (max(self.r // 2 + 1, 1), self.r)
        if self.cols is not None:
            cols_lo, cols_hi = max(cols_lo, self.cols[0]), min(cols_hi, self.cols[1])
        if cols_lo > cols_hi:  # a rule's measured N lies in its octave, so this guards a malformed span only
            return []
        # Only classes with an N in the span: the class in turn stays until a probe is placed, so one with none
        # spent every attempt (a rule of one N, e.g. a fused backward at N = 4096, got 1 probe of 10, stop 68).
        classes = classes_with_n(cols_lo, cols_hi, classes)
        if not classes:
            return []
        items: list[PlanItem] = []
        placed = 0
        for _ in range(SPAN_PROBE_ATTEMPTS * count):
            if placed == count:
                break
            # Every attempt draws the same two numbers, so the sequence depends only on the seed, the
            # groups and the rejections.
            rows = min(rows_hi, max(rows_lo, round(math.exp(rng.uniform(math.log(rows_lo), math.log(rows_hi))))))
            alignment = classes[(first_class + placed) % len(classes)]
            cols = aligned_cols(rng.randint(cols_lo, cols_hi), cols_lo, cols_hi, alignment)
            if cols is None or (rows, cols) in self.taken or (rows, cols) in self.avoid \
                    or (rows < self.split_rows and cols >= INNER_SPLIT_MIN_RNUMEL) \
                    or (outside and torch_rules.within_odd_hull(outside, rows, cols)):
                continue
            # Kernels in turn, as alignment classes (the module's docstring says why).
            if kernels:
                parent = probe_parent(self.points, *kernels[placed % len(kernels)], rows, cols,
                                      mix_order=self.family[0] == "mix_order")
                if parent is None or parent.family != self.family:
                    continue
            else:
                parent = min(self.parents, key=lambda p: (abs(math.log(p.cols / cols)), abs(math.log(p.rows / rows)),
                                                          p.rows))
            if resident_bytes(parent.kernel, rows, cols, parent.dtype) > self.max_bytes:
                continue
            point = probe_point(parent, rows, cols, span=True)
            legal = list(dict.fromkeys(c for c in self.configs if not slot_violations(point.slot, c)))
            legal = legal[:self.max_configs]
            if not legal:
                continue
            self.taken.add((rows, cols))
            placed += 1
            items.append(PlanItem(point, tuple(legal), tuple(() for _ in legal)))
        return items


def bytes_needed(item: PlanItem, fixed: float, factor: dict[bool, float]) -> float:
    """GPU memory one worker needs to keep every config of the item compiled and captured at once."""
    element = 4 if item.point.dtype == "fp32" else 2
    activation = math.prod(item.point.compiled) * element
    backward = item.point.slot.backward
    per_config = 3 if backward else 1  # outputs of each captured graph (backward: saved tensors too)
    return fixed + activation * (factor[backward] + per_config * (len(item.configs) + 1))


def run(items: Sequence[PlanItem], pool, store, rounds: int = 5, timing: TimingSpec = TIMING, progress=None,
        span_seed: int | None = None) -> dict:
    """Measure every item (one worker task each, as many at once as GPU memory allows) and store a
    record per item; items this GPU stack already has a complete record of are skipped (a run cut
    short resumes).  Returns counts of stored, skipped and failed items.  ``span_seed``: the seed of
    span probes, stored with each record so that ``distill`` can tell one round from the next."""
    from .workers import WORKER_ACTIVATION_FACTOR, WORKER_FIXED_BYTES, TaskFailure, run_tasks, workers_that_fit

    replayed, key = pool.fingerprint.replayed, pool.fingerprint.key
    gpu_id = store.upsert_gpu(pool.fingerprint, pool.ceiling_gbps)
    memory = pool.fingerprint.memory_bytes
    done = {(r.kernel, r.rows, r.cols, r.dtype, r.configs_json) for r in store.crossmeasures()
            if r.gpu.fingerprint == key and json.loads(r.rounds_json)}

    def width(item: PlanItem) -> int:
        return workers_that_fit(memory, bytes_needed(item, WORKER_FIXED_BYTES, WORKER_ACTIVATION_FACTOR), pool.size)

    todo = [i for i in items if (*record_key(i.point), json.dumps(payload_configs(i))) not in done]
    counts = {"stored": 0, "skipped": len(items) - len(todo), "failed": 0}
    if progress is not None:
        progress.update(counts["skipped"])
    # Smallest first: the allowed width only shrinks, so idle workers are released once, in order.
    pending = sorted(todo, key=width, reverse=True)
    tasks = [RemeasureTask(n, item.problem, tuple(item.trial_configs()), rounds, timing, check=True)
             for n, item in enumerate(pending)]

    def store_record(task: RemeasureTask, result) -> None:
        item = pending[task.task_id]
        if isinstance(result, TaskFailure):
            counts["failed"] += 1
            log.warning("crossmeasure of %s failed (%s): %s", item.point.label, result.outcome.value, result.reason)
            result = Remeasured([], [], [f"{result.outcome.value}: {result.reason}"[:2000]])
        else:
            counts["stored"] += 1
        store.add_crossmeasure(
            gpu_id=gpu_id, kernel=item.point.kernel, rows=item.point.compiled[0], cols=item.point.compiled[1],
            dtype=item.point.dtype, configs_json=json.dumps(payload_configs(item)),
            rounds_json=json.dumps(result.times), origin_json=json.dumps([list(o) for o in item.origins]),
            checks_json=json.dumps({"errors": result.errors, "failures": result.failures}),
            timing_json=json.dumps({**dataclasses.asdict(timing), "rounds": rounds, "interleaved": True,
                                    **({"span_seed": span_seed} if span_seed is not None else {})}),
            replayed=replayed,
        )
        if progress is not None:
            progress.update(1)

    run_tasks(pool, tasks, store_record, width=lambda task: width(pending[task.task_id]))
    return counts


def payload_configs(item: PlanItem) -> list[str]:
    return [c.to_json() for c in item.trial_configs()]


def describe(items: Sequence[PlanItem]) -> str:
    """One line per size group: how many shapes and which configs will be timed there."""
    lines, seen = [], set()
    for item in items:
        p = item.point
        key = (p.family, p.r_pow2)
        if key in seen:
            continue
        seen.add(key)
        same = [i for i in items if (i.point.family, i.point.r_pow2) == key]
        probed = sum(i.point.probe for i in same)
        extra = f" + {probed} probe(s) where no study ran" if probed else ""
        lines.append(f"{p.kind} {p.reductions} r={p.r_pow2}: {len(same) - probed} shape(s){extra} x "
                     f"{len(item.configs)} config(s)")
    return "\n".join(lines)
