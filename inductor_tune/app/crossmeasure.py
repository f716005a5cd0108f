"""``crossmeasure``: each size group's best configs timed at every shape of the group, the evidence of `distill`."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from ..shapes import ALIGNMENT_CLASSES
from .common import (AppError, check_readable, check_replay, default_workers, import_torch, refuse_storage_among,
                     require_gpus, storage_url)

if TYPE_CHECKING:
    from ..problem import Shape

log = logging.getLogger("inductor_tune")

DEFAULT_STORAGE = "db/crossmeasure.sqlite"
# Kinds whose kernels run over the rows (probes); outer reductions run over the columns.
PROBEABLE_KINDS = ("mix_order", "inner_persistent", "inner_looped")


@dataclasses.dataclass(frozen=True)
class CrossmeasureRequest:
    dbs: tuple[str, ...]  # databases with the studies, as given (the plan and the next step name them)
    storage: str = DEFAULT_STORAGE
    kernels: frozenset[str] | None = None  # None: every kernel
    top: int = 3  # best configs taken from each shape of a group
    neighbours: int = 2  # ... and from each shape of the adjacent groups
    max_configs: int = 10  # configs timed per shape at most
    rounds: int = 5
    hold_out: tuple[Shape, ...] = ()  # shapes that propose no config and place no probe
    probes: tuple[str, ...] = ("mix_order",)  # kinds also timed at 3/2 of each studied shape's rows
    gpu: int = 0
    workers: int | None = None
    replay: str | None = None  # a database whose recorded measurements answer instead of the GPU
    progress: bool = True
    # Span probes instead of the studied shapes: this many per size group whose rule sets a config,
    # drawn from ``seed``, never at a problem of the held-out draws in ``avoid_draws`` (--draw-out files).
    span_probes: int = 0
    # Edge probes: this many per kernel a config rule matches, at the lowest octave of its rows.
    edge_probes: int = 0
    # Hull probes, with span probes only: this many per config rule at odd N outside the hull of its odd evidence.
    hull_probes: int = 0
    # Coverage fill: this many leading candidates of each uncovered size group or row band, timed at its
    # shapes that lack them (``fill``).
    fill: int = 0
    # ... among the candidates timed at this share of the set's shapes at least (None: ``fill.MIN_SHARE``).
    fill_share: float | None = None
    # ... only the sets that fit in this many shapes to time, the most left to the best found first (None: all).
    fill_shapes: int | None = None
    seed: int = 0
    # The most GPU memory a span or edge probe may keep resident (the random gate's bound by default).
    probe_max_gib: float = 4.0
    avoid_draws: tuple[str, ...] = ()
    # A GPU (query) whose studies choose the candidates, for a GPU with no studies of its own: the plan is
    # that GPU's, the times this one's, and each record's origins name the proposing GPU.
    candidates_from: str | None = None

    @property
    def probing(self) -> bool:
        """Probes at shapes no study ran, placed by this GPU's fit, instead of the studied shapes."""
        return bool(self.span_probes or self.edge_probes)


@dataclasses.dataclass(frozen=True)
class CrossmeasureResult:
    request: CrossmeasureRequest
    items: tuple[Any, ...]  # crossmeasure.PlanItem
    storage: str
    counts: dict[str, int] | None = None  # stored, skipped and failed shapes; None for a plan only

    @property
    def ok(self) -> bool:
        return not (self.counts or {}).get("failed")


def crossmeasure(request: CrossmeasureRequest, plan_only: str | None = None) -> CrossmeasureResult:
    """Time the plan on the GPU the studies ran on and store the records; with ``plan_only`` (a GPU name
    or fingerprint), only plan for that GPU's studies, with no GPU."""
    from .. import crossmeasure as crossmeasure_mod
    from ..store import Store, check_url

    unknown = sorted(set(request.probes) - set(PROBEABLE_KINDS))
    if unknown:
        raise AppError(f"--probes: unknown kind(s) {', '.join(unknown)}; known: {', '.join(PROBEABLE_KINDS)}, none")
    classes = len(ALIGNMENT_CLASSES)
    if 0 < request.span_probes < classes:
        # distill settles a rule on the latest span round in its span, and only once that round timed its config at
        # N of every alignment class: a smaller round leaves every rule it probes held back (H100, stop 47).
        raise AppError(f"--span-probes {request.span_probes}: a span round needs at least {classes} probes per rule, "
                       "one at N of each alignment class, or distill holds back every rule it probes")
    if request.hull_probes and not request.span_probes:
        # Alone they would make a round of odd N only, the latest in each rule's span, and distill would hold back
        # every rule they probed for want of the other alignment classes.
        raise AppError("--hull-probes go with --span-probes: a round of odd N alone leaves every rule it probes "
                       "held back")
    check_readable([storage_url(d) for d in request.dbs])
    storage = storage_url(request.storage)
    refuse_storage_among(storage, request.dbs, DEFAULT_STORAGE)
    if request.replay:  # before the storage is created
        check_replay(request.replay, storage)
    check_url(storage, create=True)
    if request.replay and (request.probing or request.fill):
        raise AppError("--span-probes, --edge-probes or --fill with --replay: a recording has no measurements at "
                       "shapes no study ran, nor of configs its studies did not try")
    inputs = _inputs(request)  # before the GPU is asked for: a bad draw, database or GPU query is one line
    if request.replay and request.probes:  # a recording holds the studies' own shapes; probes lie between them
        # Warned once the input is known good: a bad input's output is its one error line.
        log.warning("--replay: no probes (a recording has no measurements at shapes no study ran)")
        request = dataclasses.replace(request, probes=())
    if plan_only:
        return CrossmeasureResult(request, tuple(_plan(request, plan_only, inputs)), storage)
    torch = import_torch("crossmeasure")
    from ..choices import check_torch_supported
    from ..workers import BackendSpec, WorkerPool

    check_torch_supported()
    if request.replay:
        backend = BackendSpec("replay", storage_url(request.replay))
    else:
        backend = BackendSpec()
        require_gpus(torch, "crossmeasure")
    from tqdm import tqdm


    store = Store(storage, create=True)
    with WorkerPool(request.gpu, request.workers or default_workers(), 900, backend=backend) as pool:
        # Only the GPU and software stack the studies ran on can confirm their configs.
        items = _plan(request, pool.fingerprint.key, inputs)
        with tqdm(total=len(items), disable=not request.progress, unit="shape", desc="crossmeasuring") as bar:
            counts = crossmeasure_mod.run(items, pool, store, request.rounds, progress=bar,
                                          span_seed=request.seed if request.probing else None)
    return CrossmeasureResult(request, tuple(items), storage, counts)


@dataclasses.dataclass(frozen=True)
class _PlanInputs:
    stores: list
    source: object  # the --candidates-from GPU (evidence.GpuSpec), or None
    draws: tuple  # the --avoid-draw held-out draws


def _inputs(request: CrossmeasureRequest) -> _PlanInputs:
    """What a plan reads besides the request, read once."""
    from .validate import read_draws

    draws = read_draws(request.avoid_draws, "--avoid-draw")
    stores = _stores(request)
    source = _select(stores, request.candidates_from, "--candidates-from: ") if request.candidates_from else None
    return _PlanInputs(stores, source, draws)


def _stores(request: CrossmeasureRequest) -> list:
    from ..distill import open_stores
    from ..evidence import DistillError

    try:
        return open_stores([storage_url(d) for d in request.dbs])
    except DistillError as exc:
        raise AppError(str(exc)) from None


def _select(stores: list, query: str, what: str):
    from ..evidence import DistillError, select_gpu

    try:
        return select_gpu(stores, query)
    except DistillError as exc:
        raise AppError(f"{what}{exc}") from None


def _plan(request: CrossmeasureRequest, gpu_query: str, inputs: _PlanInputs | None = None) -> list:
    """The items to time on the GPU ``gpu_query`` names (for span probes: that GPU's fit)."""
    from .. import crossmeasure as crossmeasure_mod
    from ..evidence import load_points

    inputs = inputs or _inputs(request)
    stores, source, draws = inputs.stores, inputs.source, inputs.draws
    def refuse_measured(fingerprint: str) -> None:
        if source is not None and fingerprint == source.fingerprint:
            raise AppError(f"--candidates-from {request.candidates_from!r} names the GPU measured; "
                           "it has studies of its own")

    refuse_measured(gpu_query)  # the pool's fingerprint; a --plan-only query is checked once resolved
    if request.probing or request.fill or source is None:
        # Span probes are placed by this GPU's fit, framed by the source's studies where it has none.
        gpu = _select(stores, gpu_query, "the GPU measured: " if source else "")
        refuse_measured(gpu.fingerprint)
        points, _ = load_points(stores, gpu, list(request.dbs), bool(request.replay), source)
    else:
        gpu = source
        points, _ = load_points(stores, source, list(request.dbs), bool(request.replay))
    points = [p for p in points if request.kernels is None or p.kernel in request.kernels]
    if not points:
        raise AppError(f"no usable single-kernel study of {gpu.fingerprint} in {', '.join(request.dbs)}")
    held = {(s.rows, s.cols) for s in request.hold_out}
    avoid = {(rows, cols) for draw in draws for _, rows, cols, _ in draw.problems} | held
    if request.fill:
        from ..fill import MIN_SHARE, fill_plan

        # Studied shapes are the fit's own (a spent held-out set's best-found studies among them); only a probe
        # could lie at a held-out problem, and none is placed there.
        share = MIN_SHARE if request.fill_share is None else request.fill_share
        items = [i for i in fill_plan(points, request.fill, max_configs=request.max_configs, min_share=share,
                                      max_shapes=request.fill_shapes)
                 if i.point.compiled not in avoid or not i.point.probe]
    elif request.probing:
        items = crossmeasure_mod.span_probes(points, request.span_probes, request.seed, avoid, request.max_configs,
                                             edge_per_kernel=request.edge_probes,
                                             hull_per_rule=request.hull_probes,
                                             max_bytes=int(request.probe_max_gib * 2**30),
                                             split_rows=2 * gpu.sm_count,
                                             capability_major=int(str(gpu.compute_capability).split(".")[0]))
    else:
        items = crossmeasure_mod.plan(points, request.top, request.neighbours, request.max_configs, request.probes,
                                      request.hold_out)
        if source is not None:
            fitted = [p for p in points if (p.rows, p.cols) not in held]
            items = crossmeasure_mod.lead_with_rules(items, fitted, request.max_configs)
        # A studied shape is never drawn, but a probe between studied rows may land on a drawn problem.
        items = [i for i in items if i.point.compiled not in avoid or not i.point.probe]
    if source is None:
        return items
    return [dataclasses.replace(i, origins=tuple(tuple(f"{source.fingerprint}: {o}" for o in names)
                                                 for names in i.origins)) for i in items]
