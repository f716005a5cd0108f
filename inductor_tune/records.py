"""Typed results passed from the measuring workers to the study loop and the database."""

from __future__ import annotations

import dataclasses
import enum

from .space import KernelSlot


class Outcome(str, enum.Enum):
    OK = "ok"
    COMPILE_ERROR = "compile_error"
    OUT_OF_RESOURCES = "out_of_resources"
    TIMEOUT = "timeout"
    CRASH = "crash"
    WRONG_RESULT = "wrong_result"
    CONSTRAINT = "constraint"  # illegal combination: rejected before compiling, never measured


@dataclasses.dataclass(frozen=True)
class TimingSpec:
    """How a trial is timed; stored with every trial."""

    method: str = "triton.testing.do_bench"
    warmup_ms: float = 5.0
    rep_ms: float = 40.0
    statistic: str = "median"
    l2_flush: str = "do_bench zeroes a 256 MB buffer before every repeat"
    cuda_graph: bool = True  # replay a CUDA graph of the call when capture works (no launch overhead)


@dataclasses.dataclass(frozen=True)
class Measurement:
    """What a worker returns for one trial."""

    outcome: Outcome
    reason: str = ""
    time_ms: float | None = None
    time_p20_ms: float | None = None
    time_p80_ms: float | None = None
    gbps: float | None = None
    ceiling_gbps: float | None = None
    rel_error: float | None = None
    source_hash: str | None = None
    slots: tuple[KernelSlot, ...] = ()
    inductor_choice: str | None = None  # JSON: the configs Inductor itself picked (default trials)
    compile_s: float | None = None
    measure_s: float | None = None
    timing: str | None = None  # JSON of TimingSpec, with the cuda_graph actually used
