"""``tune``, ``sweep`` and ``gpus``: run or resume an experiment's studies on a GPU, or one process per GPU."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
from typing import TYPE_CHECKING

from .common import (check_replay, configure_logging, default_workers, import_torch, one_line_message,
                     require_gpus, storage_url)

if TYPE_CHECKING:
    from ..experiment import Experiment
    from ..show import StudyRow

log = logging.getLogger("inductor_tune")

SWEEP_TRIALS = 10**9  # a sweep ends when its grid is exhausted


@dataclasses.dataclass(frozen=True)
class TuneRequest:
    """An experiment file and what overrides it; None keeps the file's value (kernels, shapes and dtypes
    are comma-separated text, as in the file's own lists)."""

    experiment: str
    sweep: bool = False  # every legal config of the space or its declared grid, in sweep studies
    kernels: str | None = None
    shapes: str | None = None
    dtypes: str | None = None
    trials: int | None = None
    sampler: str | None = None
    seed: int | None = None
    warm_start: int | None = None
    timeout_s: float | None = None
    trial_timeout_s: float | None = None
    storage: str | None = None
    workers: int | None = None
    gpus: tuple[int, ...] = (0,)  # more than one: a process per GPU, sharing the study set
    replay: str | None = None  # a database whose recorded measurements answer the trials
    progress: bool = True

    @property
    def command(self) -> str:
        return "sweep" if self.sweep else "tune"


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """What one GPU's run did; a ``tune --gpus`` process that stopped early has ``error`` or ``exit_code``."""

    gpu: int
    rows: tuple[StudyRow, ...] = ()  # the studies this run touched, as `show` summarizes them
    measured: int = 0
    measure_wall_s: float = 0.0
    parent_busy_s: float = 0.0  # of measure_wall_s, spent sampling and recording rather than waiting
    failed: tuple[str, ...] = ()  # why studies could not finish
    error: str | None = None  # the one-line error that stopped the process
    exit_code: int | None = None  # the status of a process that ended without a result

    @property
    def rate(self) -> float:
        return self.measured / self.measure_wall_s if self.measure_wall_s else 0.0

    @property
    def status(self) -> int:
        """0 when every study finished, 1 when one failed, 2 after a one-line error."""
        if self.exit_code is not None:
            return self.exit_code
        return 2 if self.error is not None else 1 if self.failed else 0


def experiment_for(request: TuneRequest) -> Experiment:
    from .. import experiment as experiment_mod

    sampler = "grid" if request.sweep else request.sampler
    if request.replay and sampler is None:
        # A replay answers only configs the recording has: a sampler left to roam asks mostly for
        # others (TPE: 15-18 of 20 trials failed as NotRecorded on db/quack.sqlite), so unless one is
        # asked for, the study walks the recorded configs (search.Tuner._grid_configs).
        sampler = "grid"
    exp = experiment_mod.with_overrides(
        experiment_mod.load(request.experiment), kernels=request.kernels, shapes=request.shapes,
        dtypes=request.dtypes, trials=request.trials, timeout_s=request.timeout_s,
        trial_timeout_s=request.trial_timeout_s, sampler=sampler,
        storage=request.storage and storage_url(request.storage), seed=request.seed, workers=request.workers,
        warm_start=request.warm_start,
    )
    if request.sweep:  # every legal config: no trial budget
        exp = dataclasses.replace(exp, sweep=True, trials=SWEEP_TRIALS)
    return exp


def tune(request: TuneRequest) -> list[TuneResult]:
    """Run (or resume) the studies: one result per GPU."""
    from ..store import check_url

    exp = experiment_for(request)
    if request.replay:  # before the storage is touched (created, or its folder made)
        check_replay(request.replay, exp.storage_url, exp.problems())
    if exp.storage_url.startswith("sqlite:///db/"):
        os.makedirs("db", exist_ok=True)
    check_url(exp.storage_url, create=True)
    torch = import_torch(request.command)
    from ..choices import check_torch_supported

    check_torch_supported()
    if not request.replay:
        require_gpus(torch, request.command, request.gpus)
    if len(request.gpus) > 1:
        return _fan_out(request, exp)
    return [_run(request, exp, request.gpus[0])]


def _run(request: TuneRequest, exp: Experiment, gpu: int) -> TuneResult:
    from tqdm import tqdm

    from ..search import Tuner
    from ..show import study_rows
    from ..store import Store
    from ..workers import BackendSpec, WorkerPool

    backend = BackendSpec("replay", storage_url(request.replay)) if request.replay else BackendSpec()
    store = Store(exp.storage_url, create=True)
    n_workers = exp.workers or default_workers()
    problems = exp.problems()
    log.info("%d studies x %d trials on GPU %d with %d workers -> %s", len(problems), exp.trials, gpu,
             n_workers, exp.storage_url)
    start = time.monotonic()
    with WorkerPool(gpu, n_workers, exp.trial_timeout_s, backend=backend) as pool, tqdm(
        total=None if request.sweep else len(problems) * exp.trials, disable=not request.progress, unit="trial",
        desc="sweeping" if request.sweep else "tuning",
    ) as bar:
        tuner = Tuner(exp, pool, store, progress=bar)
        names = tuner.run()
    result = TuneResult(
        gpu, tuple(r for r in study_rows(store) if any(n.startswith(f"{r.kernel}/{r.shape}/{r.dtype}@") for n in names)),
        tuner.measured, tuner.measure_wall_s, tuner.parent_busy_s, tuple(tuner.failed),
    )
    log.info("measured %d trials in %.0f s of search (%.2f trials/s); %.0f s in all", result.measured,
             result.measure_wall_s, result.rate, time.monotonic() - start)
    return result


def _fan_out(request: TuneRequest, exp: Experiment) -> list[TuneResult]:
    """One process per GPU, each a whole `tune` of its own on one GPU; study leases share the study set
    out between them.  Each process splits the CPU cores with the others unless --workers says."""
    import multiprocessing as mp

    from ..store import Store

    Store(exp.storage_url)  # the schema once, before the processes race to create it
    ctx = mp.get_context("spawn")  # a fresh interpreter: the parent has imported torch
    level = logging.getLogger().getEffectiveLevel()
    started = []
    for gpu in request.gpus:
        one = dataclasses.replace(request, gpus=(gpu,), workers=request.workers or default_workers(len(request.gpus)))
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_gpu_process, args=(one, level, send), name=f"inductor-tune-gpu{gpu}")
        proc.start()
        send.close()  # the child's end only: its exit, result or not, ends the parent's wait
        started.append((gpu, proc, receive))
    results = []
    for gpu, proc, receive in started:
        try:
            result = receive.recv()
        except EOFError:
            result = None
        proc.join()
        results.append(result or TuneResult(gpu, exit_code=proc.exitcode or 1))
    return results


def _gpu_process(request: TuneRequest, level: int, send) -> None:
    configure_logging(level)
    try:
        result = tune(request)[0]
    except KeyboardInterrupt:
        sys.exit(130)  # the parent, interrupted too, says so once
    except Exception as exc:
        message = one_line_message(exc)
        if message is None:
            raise
        result = TuneResult(request.gpus[0], error=message)
    send.send(result)


def fingerprints() -> list:
    """The identity (``gpu.GpuIdentity``) of each visible GPU."""
    torch = import_torch("gpus")
    require_gpus(torch, "gpus")
    from ..evaluate import gpu_identity

    return [gpu_identity(i) for i in range(torch.cuda.device_count())]

