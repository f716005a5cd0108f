"""Worker processes: compile in parallel, measure one at a time, survive crashes and hangs.

Each worker owns a CUDA context on one GPU and evaluates one task at a time.  Compiles (CPU-bound)
run concurrently across workers; anything that touches the GPU for numerics or timing holds a
file lock per GPU, which the kernel releases if the holder dies.  The parent never initialises
CUDA: a worker that segfaults, aborts, poisons its context or hangs past the trial timeout is
killed, its task is reported as ``crash`` or ``timeout`` and a fresh worker takes its place.
"""

from __future__ import annotations

import collections
import dataclasses
import fcntl
import functools
import gc
import logging
import math
import multiprocessing as mp
import os
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Sequence

from .gpu import GpuIdentity
from .tasks import ProbeTask, Release, RemeasureTask, Task, TrialTask, ValidateTask

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 600.0
CRASH_EXIT_CODE = 3
RECYCLE_EXIT_CODE = 4
LEAK_LIMIT_BYTES = 1 << 30


class GpuLock:
    """Exclusive use of one GPU for measuring, across processes (flock dies with its holder).

    Re-entrant within a process: Inductor's own autotuning takes it too (``_lock_inductor_benchmarks``),
    also when it runs inside a section that already holds it."""

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self._depth = 0

    def __enter__(self):
        if self._depth == 0:
            self._fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        self._depth += 1
        return self

    def __exit__(self, *exc):
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _lock_inductor_benchmarks(lock: GpuLock) -> None:
    """Make Inductor's own benchmarking (autotuning its candidate configs at a kernel's first call,
    which runs outside the timed sections) hold the GPU lock.  Unlocked, a default compile that
    autotunes kept the GPU busy for tens of milliseconds while another worker timed: seen on an H200
    as single interleaved rounds 2x slower than the others."""
    from torch._inductor.runtime import benchmarking

    bench = benchmarking.benchmarker
    original = bench.benchmark_gpu

    @functools.wraps(original)
    def locked(*args, **kwargs):
        with lock:
            return original(*args, **kwargs)

    bench.benchmark_gpu = locked  # the instance every CachingAutotuner imported


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """What answers a worker's tasks: the GPU, or a recording of earlier measurements.

    ``faults`` (replay only, for tests) maps a config's JSON to an injected fault: crash, segfault,
    hang, raise or wrong (see ``replay.FaultyBackend``).
    """

    kind: str = "gpu"
    source: str | None = None
    faults: tuple[tuple[str, str], ...] = ()


class GpuBackend:
    """Compiles and measures on the GPU this process was given (see evaluate.py)."""

    def __init__(self, lock: GpuLock):
        import torch
        import torch._inductor.config as inductor_config

        from . import choices, evaluate

        # One compile at a time per worker: parallelism comes from the workers themselves, and the
        # choices hook must run in this process, not in Inductor's own compile subprocesses.
        inductor_config.compile_threads = 1
        choices.install()
        _lock_inductor_benchmarks(lock)
        self.lock = lock
        torch.cuda.init()
        with lock:
            self.ceiling_gbps = evaluate.copy_ceiling_gbps(evaluate.TimingSpec())
        torch.cuda.empty_cache()
        self.fingerprint = evaluate.gpu_identity(0)
        self.state = None

    def run(self, task: Task) -> Any:
        from . import evaluate

        if self.state is None or self.state.problem != task.problem:
            self.release()
            self.state = evaluate.ProblemState(task.problem)
        if isinstance(task, TrialTask):
            return evaluate.evaluate(self.state, task.config, task.timing, self.ceiling_gbps, self.lock)
        if isinstance(task, ProbeTask):
            return evaluate.probe(self.state, task.flags)
        if isinstance(task, RemeasureTask):
            return evaluate.remeasure(self.state, task.configs, task.timing, task.rounds, self.lock, task.check)
        if isinstance(task, ValidateTask):
            from .variants import measure_variants

            return measure_variants(self.state, task, self.lock)
        raise TypeError(f"not a task: {task!r}"[:200])

    def release(self) -> None:
        import torch

        self.state = None
        gc.collect()
        torch.cuda.empty_cache()

    def leaked_bytes(self) -> int:
        """GPU memory still allocated after a task beyond the problem's own inputs."""
        import torch

        # Compiled graphs, CUDA graphs and autograd state form reference cycles; without an
        # explicit collection one worker kept over 100 GiB of finished trials' tensors on an H200.
        gc.collect()
        torch.cuda.empty_cache()
        return torch.cuda.memory_allocated() - (self.state.resident_bytes if self.state is not None else 0)


def make_backend(spec: BackendSpec, lock: GpuLock):
    if spec.kind == "gpu":
        return GpuBackend(lock)
    if spec.kind == "replay":
        from .replay import FaultyBackend, ReplayBackend

        backend = ReplayBackend(spec.source)
        return FaultyBackend(backend, dict(spec.faults)) if spec.faults else backend
    raise ValueError(f"unknown backend {spec.kind!r}")


def worker_main(conn: Connection, gpu_index: int, lock_path: str, log_level: int, spec: BackendSpec) -> None:
    """Entry point of a worker process."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_index)
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    logging.basicConfig(level=log_level, format=f"[worker {os.getpid()}] %(levelname)s %(name)s: %(message)s")
    from .records import Outcome
    from .evaluate import classify_exception, short_reason

    try:
        backend = make_backend(spec, GpuLock(lock_path))
    except Exception as exc:  # told to the parent, which reports it, rather than a bare "exited"
        conn.send(("failed", short_reason(exc), traceback.format_exc()))
        return
    conn.send(("hello", backend.fingerprint, backend.ceiling_gbps))
    while True:
        task: Task | Release | None = conn.recv()
        if task is None:
            return
        if isinstance(task, Release):
            backend.release()
            continue
        try:
            result: Any = backend.run(task)
            message: tuple = ("result", task.task_id, result)
            # A CUDA error leaves the context unusable; a fresh worker replaces this one.
            poisoned = isinstance(task, TrialTask) and result.outcome == Outcome.CRASH
            result = None
        except Exception as exc:
            outcome = classify_exception(exc)
            message = ("error", task.task_id, (outcome, short_reason(exc), traceback.format_exc()))
            poisoned = outcome == Outcome.CRASH
        exit_code = CRASH_EXIT_CODE if poisoned else None
        if not poisoned:
            leaked = backend.leaked_bytes()
            if leaked > LEAK_LIMIT_BYTES:
                # Live tensors nobody should hold: start afresh rather than starve the other workers.
                log.warning("recycling: %.1f GiB still allocated after the task", leaked / 2**30)
                exit_code = RECYCLE_EXIT_CODE
        # The parent learns with the result that this worker is leaving, so it never hands the
        # next task to a process that is about to exit.
        conn.send(message + (exit_code,))
        if exit_code is not None:
            conn.close()
            os._exit(exit_code)


# Bytes of GPU memory a worker needs per byte of one (M, N) activation: inputs, outputs, gradients,
# a CUDA graph's private outputs and saved forward tensors; plus a fixed CUDA-context overhead.
WORKER_ACTIVATION_FACTOR = {False: 6, True: 10}
WORKER_FIXED_BYTES = 1.5 * 2**30
# Of the GPU's memory, what workers may fill together: the rest is the allocator's slack.
MEMORY_HEADROOM = 0.85


def workers_that_fit(memory_bytes: float, bytes_per_worker: float, most: int) -> int:
    """How many workers, each holding ``bytes_per_worker``, fit in the GPU's memory (at least one, at
    most ``most``): the one sizing rule of studies, crossmeasure and validate."""
    return max(1, min(most, math.floor(MEMORY_HEADROOM * memory_bytes / bytes_per_worker)))


def run_tasks(pool, tasks: Sequence[Task] | Callable[[], Task | None], on_result: Callable[[Task, Any], None],
              width: int | Callable[[Task], int] | None = None, tick: Callable[[], None] | None = None) -> None:
    """The one dispatch/collect loop: idle workers take the next tasks in order, and each result (or
    ``TaskFailure``) goes to ``on_result`` as it arrives, until no task is left and none is running.

    ``tasks``: a list (a study's first phase and verdict, crossmeasure, validate), or a function asked for
    the next task only when a worker is free, None once there is none (a study's trials: the sampler
    proposes each one after the results it could learn from).  ``width``: how many workers may run at
    once, or, for a list, per task the most that may run while it is next (what GPU memory allows);
    order such a list widest first, so that the width only shrinks and idle workers beyond it are told
    once to give their memory back.  ``tick``: called every turn (a study keeps its in-flight trials'
    heartbeats going)."""
    if callable(tasks) and callable(width):
        raise TypeError("a per-task width needs the tasks up front, not asked for one at a time")
    source = iter(tasks, None) if callable(tasks) else iter(tasks)
    upcoming: collections.deque[Task] = collections.deque()

    def head() -> Task | None:
        if not upcoming:
            task = next(source, None)
            if task is not None:
                upcoming.append(task)
        return upcoming[0] if upcoming else None

    def limit(task: Task | None) -> int:
        if isinstance(width, int):
            return min(pool.size, width)
        return pool.size if width is None or task is None else min(pool.size, width(task))

    released = pool.size
    while True:
        if tick is not None:
            tick()
        allowed = limit(head() if callable(width) else None)  # a function is asked only for a free worker
        if allowed < released:  # idle workers beyond the new width give their GPU memory back
            pool.release(keep=allowed)
            released = allowed
        for index in pool.idle(allowed):
            task = head()
            if task is None or pool.busy() >= limit(task):
                break
            pool.dispatch(index, upcoming.popleft())
        if not pool.busy():  # every worker was free to take a task, and none was left
            return
        finished = pool.collect()
        if finished and released < pool.size:
            pool.release(keep=released)  # workers beyond the width that just finished keep no problem
        for task, result in finished:
            on_result(task, result)


class WorkerStartError(RuntimeError):
    """A worker could not start its backend (the reason is its exception, in one line)."""


@dataclasses.dataclass
class _Slot:
    process: mp.process.BaseProcess
    conn: Connection
    task: Task | None = None
    started: float = 0.0


@dataclasses.dataclass(frozen=True)
class TaskFailure:
    """A task that produced no result: its worker died, hung or raised."""

    outcome: Any
    reason: str
    detail: str = ""


class WorkerPool:
    """A fixed number of workers on one GPU, dispatched by the parent one task at a time."""

    def __init__(
        self, gpu_index: int, workers: int, task_timeout_s: float, lock_dir: str = "/tmp",
        backend: BackendSpec = BackendSpec(),
    ):
        self.gpu_index = gpu_index
        self.backend = backend
        self.size = workers
        self.task_timeout_s = task_timeout_s
        self.lock_path = os.path.join(lock_dir, f"inductor_tune_gpu{gpu_index}.lock")
        self._ctx = mp.get_context("spawn")
        self._slots: list[_Slot] = []
        self.fingerprint: GpuIdentity | None = None  # of the GPU (or recording) the workers answer from
        self.ceilings: list[float] = []

    def __enter__(self) -> "WorkerPool":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _spawn(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=worker_main,
            args=(child, self.gpu_index, self.lock_path, logging.getLogger().level, self.backend),
            daemon=True,
        )
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def _await_hello(self, slot: _Slot) -> None:
        if not slot.conn.poll(HELLO_TIMEOUT_S):
            raise RuntimeError(f"worker on GPU {self.gpu_index} did not start within {HELLO_TIMEOUT_S:.0f} s")
        try:
            kind, fingerprint, ceiling = slot.conn.recv()
        except EOFError:
            raise WorkerStartError(
                f"worker on GPU {self.gpu_index} exited during start-up (exit code {slot.process.exitcode})"
            ) from None
        if kind == "failed":
            log.debug("worker start-up failed:\n%s", ceiling)
            raise WorkerStartError(f"worker on GPU {self.gpu_index} could not start: {fingerprint}")
        self.fingerprint = fingerprint
        self.ceilings.append(ceiling)

    def start(self) -> None:
        self._slots = [self._spawn() for _ in range(self.size)]
        for slot in self._slots:
            self._await_hello(slot)
        log.info("%d workers ready on GPU %d (%s)", self.size, self.gpu_index, self.fingerprint.name)

    def recorded_configs(self, problem):
        """For a replay backend: the configs its recording holds (grid search walks these)."""
        if self.backend.kind != "replay":
            return None
        if getattr(self, "_replay", None) is None:
            from .replay import ReplayBackend

            self._replay = ReplayBackend(self.backend.source)
        return self._replay.recorded_configs(problem)

    @property
    def ceiling_gbps(self) -> float:
        ordered = sorted(self.ceilings)
        return ordered[len(ordered) // 2]

    def idle(self, limit: int | None = None) -> list[int]:
        chosen = range(min(limit or self.size, self.size))
        return [i for i in chosen if self._slots[i].task is None]

    def busy(self) -> int:
        return sum(s.task is not None for s in self._slots)

    def dispatch(self, index: int, task: Task) -> None:
        if not self._slots[index].process.is_alive():  # exited after its last result (CUDA error)
            self._replace(index, None, self._death_reason(self._slots[index]))
        slot = self._slots[index]
        assert slot.task is None, "worker already busy"
        try:
            slot.conn.send(task)
        except OSError:  # died between the check and the send
            self._replace(index, None, self._death_reason(slot))
            slot = self._slots[index]
            slot.conn.send(task)
        slot.task, slot.started = task, time.monotonic()

    def release(self, keep: int) -> None:
        """Free the GPU memory of workers beyond ``keep`` (a study with big tensors uses fewer)."""
        for slot in self._slots[keep:]:
            if slot.task is None:
                slot.conn.send(Release())

    def collect(self, timeout: float = 0.5) -> list[tuple[Task, Any]]:
        """Finished tasks as (task, result or TaskFailure); replaces dead and hung workers."""
        from .evaluate import Outcome

        done: list[tuple[Task, Any]] = []
        conns = {s.conn: i for i, s in enumerate(self._slots) if s.task is not None}
        ready = wait(list(conns), timeout) if conns else []
        for conn in ready:
            i = conns[conn]
            slot = self._slots[i]
            try:
                kind, task_id, payload, leaving = conn.recv()
            except (EOFError, OSError):
                done.append((slot.task, self._replace(i, Outcome.CRASH, self._death_reason(slot))))
                continue
            task, slot.task = slot.task, None
            if leaving is not None:
                self._replace(i, None, self._death_reason(slot))
            if kind == "error":
                outcome, reason, detail = payload
                log.debug("task %s failed in worker:\n%s", task_id, detail)
                payload = TaskFailure(outcome, reason, detail)
            done.append((task, payload))
        now = time.monotonic()
        for i, slot in enumerate(self._slots):
            if slot.task is None:
                continue
            if not slot.process.is_alive() and not slot.conn.poll():
                done.append((slot.task, self._replace(i, Outcome.CRASH, self._death_reason(slot))))
            elif now - slot.started > self.task_timeout_s:
                slot.process.kill()
                reason = f"killed after exceeding the {self.task_timeout_s:.0f} s task timeout"
                done.append((slot.task, self._replace(i, Outcome.TIMEOUT, reason)))
        return done

    def _death_reason(self, slot: _Slot) -> str:
        slot.process.join(5)
        code = slot.process.exitcode
        if code is not None and code < 0:
            return f"worker killed by signal {-code}"
        if code == CRASH_EXIT_CODE:
            return "CUDA error poisoned the worker's context"
        if code == RECYCLE_EXIT_CODE:
            return "worker recycled: it kept GPU memory after its task"
        return f"worker exited with code {code}"

    def _replace(self, index: int, outcome, reason: str) -> TaskFailure:
        old = self._slots[index]
        log.warning("worker %d lost (%s); starting a replacement", old.process.pid, reason)
        if old.process.is_alive():
            old.process.kill()
        old.process.join(10)
        old.conn.close()
        slot = self._spawn()
        self._await_hello(slot)
        self._slots[index] = slot
        return TaskFailure(outcome, reason)

    def close(self) -> None:
        for slot in self._slots:
            try:
                slot.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        deadline = time.monotonic() + 10
        for slot in self._slots:
            slot.process.join(max(0.0, deadline - time.monotonic()))
            if slot.process.is_alive():
                slot.process.kill()
        self._slots = []
