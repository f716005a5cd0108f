"""The worker protocol: what the tuner asks a worker process to do, and what a remeasure answers.

Every stage that measures (a study's trials and probes, its verdict's remeasure, crossmeasure, validate)
hands the worker pool one of these frozen tasks; a backend (the GPU's in ``workers``, a recording's in
``replay``) answers by the task's type:

* ``TrialTask``: one config compiled and timed → ``records.Measurement``;
* ``ProbeTask``: one graph-flag combination compiled → the kernels it generates (``space.KernelSlot``s);
* ``RemeasureTask``: configs compiled afresh and timed interleaved with each other → ``Remeasured``;
* ``ValidateTask``: Inductor's default, a heuristic file, the best found and the peers on one problem
  → the dict ``variants.measure_variants`` returns (stored as the validation record's JSON).

A task that produced nothing (its worker died, hung or raised) comes back as ``workers.TaskFailure``.
No torch here: the tuner builds tasks in the parent process; only the worker runs them.
"""

from __future__ import annotations

import dataclasses
from typing import Union

from .problem import Problem
from .records import TimingSpec
from .space import GraphFlags, TrialConfig


@dataclasses.dataclass(frozen=True)
class TrialTask:
    task_id: int
    problem: Problem
    config: TrialConfig
    timing: TimingSpec


@dataclasses.dataclass(frozen=True)
class ProbeTask:
    task_id: int
    problem: Problem
    flags: GraphFlags


@dataclasses.dataclass(frozen=True)
class RemeasureTask:
    task_id: int
    problem: Problem
    configs: tuple[TrialConfig, ...]  # Inductor's default first, by convention of every caller
    rounds: int
    timing: TimingSpec
    # Configs measured at shapes they were not tuned on are checked against the float64 reference
    # first, and a wrong one is not timed.
    check: bool = False


@dataclasses.dataclass(frozen=True)
class ValidateTask:
    task_id: int
    problem: Problem
    heuristics: str  # absolute path of the heuristic file the worker installs
    rounds: int
    timing: TimingSpec
    best_config: str | None = None  # TrialConfig JSON of the studies' per-shape best, if any
    studied: bool = False  # a study ran at this problem's shape
    skip_untouched: bool = False  # the gate: a problem no rule reaches is timed as the default only
    peers: bool = True  # also time Quack and Liger where importable


Task = Union[TrialTask, ProbeTask, RemeasureTask, ValidateTask]


@dataclasses.dataclass(frozen=True)
class Release:
    """Not a task: tells an idle worker to drop the problem it keeps compiled (its GPU memory)."""


@dataclasses.dataclass(frozen=True)
class Remeasured:
    """Per config of a ``RemeasureTask``, in its order: the median time of each round (None: not timed),
    the normwise error against the float64 reference (checked tasks only) and why it has no times."""

    times: list[list[float | None]]
    errors: list[float | None]
    failures: list[str | None]
