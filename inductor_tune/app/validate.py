"""``validate``: a heuristic file measured on the GPU, on chosen problems, a random draw (the gate) or whole models."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable

from .common import AppError, check_readable, import_torch, refuse_storage_among, require_gpus, storage_url

if TYPE_CHECKING:
    from ..gate import Draw, GateSummary
    from ..problem import Problem

DEFAULT_STORAGE = "db/validation.sqlite"


@dataclasses.dataclass(frozen=True)
class GateRequest:
    """The generalization gate's draw: ``count`` random problems at shapes no study or crossmeasure record
    of the databases ran."""

    count: int
    seed: int
    kernels: tuple[str, ...] | None  # None: the whole catalog
    dtype: str
    max_gib: float  # the most memory a problem may keep resident on the GPU
    rows: tuple[int, int]  # inclusive ranges, drawn log-uniform
    cols: tuple[int, int]
    avoid_draws: tuple[str, ...] = ()  # held-out draws (--draw-out files) whose shapes the draw keeps out too


@dataclasses.dataclass(frozen=True)
class ValidateRequest:
    heuristics: str  # the file written by `distill`
    problems: tuple[Problem, ...] = ()  # what to validate, unless gate draws it
    gate: GateRequest | None = None
    dbs: tuple[str, ...] | None = None  # studies for the per-shape best found; None: the file's provenance
    storage: str = DEFAULT_STORAGE
    rounds: int = 5
    gpu: int = 0
    workers: int | None = None  # None: as many as fit, up to 8
    progress: bool = True
    # A gate's draw is written to this new file and nothing is measured: a held-out set is fixed (and
    # committed) before any rule it will score is fitted, and crossmeasure keeps its shapes out.
    draw_out: str | None = None
    # A committed draw scored exactly as written, rather than drawn again from --db (another database list
    # would silently give other problems); refused if the databases now hold one of its shapes.
    draw_in: str | None = None


@dataclasses.dataclass(frozen=True)
class ValidateResult:
    rows: tuple[Any, ...]  # validate.ValidationRow, and for a gate validate.ProblemFailure too
    storage: str  # where the records went
    draw: Draw | None = None
    gate: GateSummary | None = None
    resumed: int = 0  # gate problems read back from the storage's earlier records instead of measured again


@dataclasses.dataclass(frozen=True)
class ModelsRequest:
    heuristics: str
    names: tuple[str, ...]  # catalog models
    storage: str = DEFAULT_STORAGE
    rounds: int = 5
    gpu: int = 0
    progress: bool = True


@dataclasses.dataclass(frozen=True)
class ModelsResult:
    results: tuple[Any, ...]  # models.ModelResult
    storage: str


def load_heuristics(path: str):
    from ..heuristics import HeuristicsError, load

    try:
        return load(path)
    except (HeuristicsError, OSError) as exc:
        raise AppError(str(exc)) from None


def suite_problems(suite: str, kernels: str | None = None, dtypes: str | None = None) -> tuple[Problem, ...]:
    """The problems of an experiment (a YAML path, or a name under experiments/), its kernels or dtypes
    replaced by comma-separated ones where given."""
    from .. import experiment as experiment_mod
    from ..problem import Problem

    path = suite if os.path.exists(suite) else os.path.join("experiments", f"{suite}.yaml")
    exp = experiment_mod.with_overrides(experiment_mod.load(path), kernels=kernels, dtypes=dtypes)
    return tuple(Problem(p.kernel, p.shape, p.dtype) for p in exp.problems())


def validate(request: ValidateRequest, on_draw: Callable[[Draw, int], None] | None = None) -> ValidateResult:
    """Measure the heuristics against Inductor's default (and, off the gate, the best found and peers) and
    store a record per problem.  ``on_draw`` hears of a gate's draw (and how many shapes it kept out)
    before anything is measured."""
    from ..records import TimingSpec
    from ..store import Store, check_url

    heur = load_heuristics(request.heuristics)
    dbs = list(request.dbs) if request.dbs is not None else list(heur.provenance.get("databases", []))
    db_urls = [storage_url(d) for d in dbs]
    check_readable(db_urls)
    draw = None
    if request.draw_in is not None or request.gate is not None:
        studied = _studied_shapes(db_urls)
        draw = (_committed_draw(request.draw_in, studied) if request.draw_in is not None
                else _draw(request.gate, dbs, studied))
        if on_draw is not None:
            on_draw(draw, len(studied))
        if request.draw_out:
            write_draw(draw, request.draw_out)
            return ValidateResult((), request.draw_out, draw)
    storage = storage_url(request.storage)
    refuse_storage_among(storage, dbs, DEFAULT_STORAGE)
    check_url(storage, create=True)
    torch = import_torch("validate")
    require_gpus(torch, "validate")
    _require_device(torch, heur, request.heuristics, request.gpu)
    from tqdm import tqdm

    from ..validate import recorded_gate_rows, run_validation
    from ..workers import WorkerPool

    problems = draw.as_problems() if draw else list(request.problems)
    store = Store(storage, create=True)
    gate = dataclasses.asdict(draw) if draw else None
    with WorkerPool(request.gpu, request.workers or _workers(torch, problems, request.gpu), 900) as pool, tqdm(
        total=len(problems), disable=not request.progress, unit="shape", desc="validating"
    ) as bar:
        done = recorded_gate_rows(store, pool, heur.digest(), gate, request.rounds, TimingSpec()) if gate else {}
        try:
            rows = run_validation(request.heuristics, problems, pool, store, db_urls, request.rounds, TimingSpec(),
                                  bar, gate=gate, done=done)
        except RuntimeError as exc:
            raise AppError(str(exc)) from None
    if draw is None:
        return ValidateResult(tuple(rows), storage)
    from ..gate import summarize_gate

    return ValidateResult(tuple(rows), storage, draw, summarize_gate(rows, draw), resumed=len(done))


def _workers(torch, problems, gpu: int) -> int:
    # Each worker holds every variant of its problem compiled and captured at once (see validate.py).
    from ..workers import WORKER_FIXED_BYTES, workers_that_fit

    largest = max(p.shape.rows * p.shape.cols * (4 if p.dtype == "fp32" else 2) for p in problems)
    return workers_that_fit(torch.cuda.get_device_properties(gpu).total_memory, WORKER_FIXED_BYTES + 24 * largest,
                            min(len(problems), 8, (os.cpu_count() or 2) - 1))


def _studied_shapes(db_urls: list[str]) -> set[tuple[int, int]]:
    from ..gate import studied_shapes
    from ..store import Store

    return studied_shapes(Store(url, create=False) for url in db_urls)


def _draw(gate: GateRequest, dbs: list[str], studied: set[tuple[int, int]]) -> Draw:
    from ..gate import make_draw

    held_out = {(rows, cols) for draw in read_draws(gate.avoid_draws, "--avoid-draw")
                for _, rows, cols, _ in draw.problems}
    try:
        return make_draw(gate.count, gate.seed, gate.kernels, studied | held_out, int(gate.max_gib * 2**30),
                         gate.dtype, avoided_from=dbs, rows=gate.rows, cols=gate.cols, avoided_draws=gate.avoid_draws)
    except ValueError as exc:
        raise AppError(f"--random: {exc}") from None


def _committed_draw(path: str, studied: set[tuple[int, int]]) -> Draw:
    (draw,) = read_draws((path,), "--draw")
    inside = [(kernel, rows, cols) for kernel, rows, cols, _ in draw.problems if (rows, cols) in studied]
    if inside:
        kernel, rows, cols = inside[0]
        raise AppError(f"--draw: {len(inside)} of the {len(draw.problems)} problems of {path} lie at shapes the "
                       f"databases hold (first: {kernel} {rows}x{cols}); it is not held out from them")
    return draw


def write_draw(draw: Draw, path: str) -> None:
    """The draw as JSON in a new file; an existing file is never replaced (a fixed held-out set stays fixed)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise AppError(f"--draw-out: {os.path.dirname(path) or '.'} is not a directory")
    try:
        with open(path, "x", encoding="utf-8") as out:
            out.write(draw.to_json() + "\n")
    except FileExistsError:
        raise AppError(f"--draw-out: {path} exists; a fixed draw is never rewritten (choose a new file)") from None
    except OSError as exc:
        raise AppError(f"--draw-out: cannot write {path}: {exc.strerror}") from None


def read_draws(paths: tuple[str, ...], flag: str) -> tuple[Draw, ...]:
    """Draws written by ``--draw-out``, each checked to be one."""
    from ..gate import Draw

    draws = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                draws.append(Draw.from_json(f.read()))
        except OSError as exc:
            raise AppError(f"{flag}: cannot read {path}: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise AppError(f"{flag}: {path} is not a draw written by `validate --draw-out` ({exc})") from None
    return tuple(draws)


def _require_device(torch, heur, path: str, gpu: int) -> None:
    """A heuristic file is validated on its own GPU model only (name, capability and SM count: an H100 SXM
    has an H200's capability and SM count), before any worker starts."""
    from ..heuristics import device_matches

    props = torch.cuda.get_device_properties(gpu)
    if not device_matches(heur, props):
        raise AppError(f"{path} is for {heur.gpu.name}; GPU {gpu} is {props.name}: validate a file on the GPU model "
                       "it was distilled for")


def validate_models(request: ModelsRequest) -> ModelsResult:
    """One training-step comparison per model, each in a process of its own; a record per model."""
    from .. import models
    from ..store import Store, check_url

    heur = load_heuristics(request.heuristics)  # a bad file is reported before the GPU is asked for
    storage = storage_url(request.storage)
    check_url(storage, create=True)
    torch = import_torch("validate")
    require_gpus(torch, "validate --models", [request.gpu])
    _require_device(torch, heur, request.heuristics, request.gpu)
    from tqdm import tqdm

    store = Store(storage, create=True)
    with tqdm(total=len(request.names), disable=not request.progress, unit="model", desc="validating") as bar:
        try:
            results = models.run_models(request.heuristics, list(request.names), store, request.rounds,
                                        gpu=request.gpu, progress=bar, gpu_key=models.gpu_key(request.gpu))
        except models.ModelsError as exc:
            raise AppError(str(exc)) from None
    return ModelsResult(tuple(results), storage)
