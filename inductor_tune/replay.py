"""Answer trials from recorded measurements instead of the GPU (a worker backend).

``ReplayBackend`` serves the same tasks as the GPU backend (probe, trial, remeasure; ``tasks``) from a
database of studies recorded earlier on a real GPU.  Everything it returns is labelled as replayed:
the fingerprint says so (so replayed studies get their own names and never mix with measured
ones), every reason starts with "replayed from", and every timing record names its source.  A
config the recording lacks is an error, never a guess.

``FaultyBackend`` wraps it to inject crashes, hangs, exceptions and wrong results on chosen
configs, so the isolation machinery can be tested on a machine without a GPU.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import time
from typing import Any

from .gpu import GpuIdentity
from .kernels import TOLERANCES
from .records import Measurement, Outcome
from .space import KernelSlot, SearchSpace, TrialConfig
from .store import Store, Study, TrialRecord
from .tasks import ProbeTask, Remeasured, RemeasureTask, Task, TrialTask


class NotRecorded(LookupError):
    """The recording has no measurement for what was asked."""


@dataclasses.dataclass(frozen=True)
class _Recording:
    study: Study
    space: SearchSpace
    by_config: dict[str, TrialRecord]


class ReplayBackend:
    def __init__(self, source: str):
        self.source = source
        self.store = Store(source, create=False)
        studies = self.store.studies()
        if not studies:
            raise NotRecorded(f"{source} has no recorded studies to replay")
        real = [s for s in studies if not s.replayed]
        gpu = (real or studies)[0].gpu
        self.gpu_id = gpu.id
        self.fingerprint = GpuIdentity.from_record(gpu, replayed=True)
        self.ceiling_gbps = gpu.ceiling_gbps
        self._recordings: dict[Any, _Recording] = {}

    def _recording(self, problem) -> _Recording:
        if problem not in self._recordings:
            match = [
                s for s in self.store.studies()
                if s.gpu_id == self.gpu_id and not s.replayed and (s.kernel, s.rows, s.cols, s.dtype)
                == (problem.kernel, problem.shape.rows, problem.shape.cols, problem.dtype)
            ]
            if not match or not match[0].space_json:
                raise NotRecorded(f"{self.source} has no recorded study of {problem.kernel} {problem.shape} {problem.dtype}")
            study = match[0]
            records = {}
            for rec in self.store.trials(study.id):
                if rec.outcome != Outcome.CONSTRAINT and not rec.reason.startswith("same config"):
                    records.setdefault(_config_key(rec.config_json), rec)
            self._recordings[problem] = _Recording(study, SearchSpace.from_json(study.space_json), records)
        return self._recordings[problem]

    def recorded_configs(self, problem) -> list[TrialConfig]:
        """The configs the recording measured, in recorded order (what grid search walks here)."""
        return [TrialConfig.from_json(r.config_json) for r in self._recording(problem).by_config.values()]

    def run(self, task: Task) -> Any:
        recording = self._recording(task.problem)
        if isinstance(task, ProbeTask):
            structure = dict(recording.space.structures).get(task.flags)
            if structure is None:
                raise NotRecorded(f"the recording has no probe for {task.flags}")
            return structure
        if isinstance(task, TrialTask):
            return self._measurement(recording, task.config, task.problem.dtype)
        if isinstance(task, RemeasureTask):
            times, errors, failures = [], [], []
            for config in task.configs:
                m = self._measurement(recording, config, task.problem.dtype)
                ok = m.outcome == Outcome.OK
                times.append([m.time_ms if ok else None] * task.rounds)
                errors.append(m.rel_error)
                failures.append(None if ok else f"{m.outcome.value}: {m.reason}")
            return Remeasured(times, errors, failures)
        raise NotRecorded(f"a recording answers trials, probes and remeasures, not {type(task).__name__}")

    def _measurement(self, recording: _Recording, config: TrialConfig, dtype: str) -> Measurement:
        rec = recording.by_config.get(_config_key(config.to_json()))
        if rec is None:
            raise NotRecorded(f"the recording has no measurement of {config.describe()}")
        outcome, reason = rec.outcome, rec.reason
        if outcome == Outcome.OK and rec.rel_error is not None and not rec.rel_error <= TOLERANCES[dtype]:
            outcome, reason = Outcome.WRONG_RESULT, f"normwise relative error {rec.rel_error:.3g} exceeds {TOLERANCES[dtype]:g}"
        slots = tuple(KernelSlot(**s) for s in json.loads(rec.slots_json)) if rec.slots_json else ()
        timing = json.loads(rec.timing_json) if rec.timing_json else {}
        timing["replayed_from"] = f"{self.source} trial {rec.trial_number} of {recording.study.name}"
        return Measurement(
            outcome, f"replayed from {self.source} trial {rec.trial_number}" + (f": {reason}" if reason else ""),
            time_ms=rec.time_ms, time_p20_ms=rec.time_p20_ms, time_p80_ms=rec.time_p80_ms, gbps=rec.gbps,
            ceiling_gbps=rec.ceiling_gbps, rel_error=rec.rel_error, source_hash=rec.source_hash, slots=slots,
            inductor_choice=rec.inductor_choice_json, compile_s=0.0, measure_s=0.0, timing=json.dumps(timing),
        )

    def release(self) -> None:
        pass

    def leaked_bytes(self) -> int:
        return 0


def _config_key(config_json: str) -> str:
    return json.dumps(json.loads(config_json), sort_keys=True)


FAULTS = ("crash", "segfault", "hang", "raise", "wrong")


class FaultyBackend:
    """Injects one fault per chosen config (tests of crash, hang and error handling)."""

    def __init__(self, inner: ReplayBackend, faults: dict[str, str]):
        unknown = set(faults.values()) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; known: {', '.join(FAULTS)}")
        self.inner = inner
        self.faults = {_config_key(k): v for k, v in faults.items()}
        self.fingerprint, self.ceiling_gbps = inner.fingerprint, inner.ceiling_gbps

    def run(self, task: Task) -> Any:
        fault = self.faults.get(_config_key(task.config.to_json())) if isinstance(task, TrialTask) else None
        if fault == "crash":
            os.abort()
        if fault == "segfault":
            ctypes.string_at(0)
        if fault == "hang":
            time.sleep(10**6)
        if fault == "raise":
            raise RuntimeError("injected failure while compiling")
        result = self.inner.run(task)
        if fault == "wrong":
            tolerance = TOLERANCES[task.problem.dtype]
            return dataclasses.replace(
                result, outcome=Outcome.WRONG_RESULT, rel_error=10 * tolerance,
                reason=f"normwise relative error {10 * tolerance:.3g} exceeds {tolerance:g} (injected)",
                time_ms=None, gbps=None,
            )
        return result

    def release(self) -> None:
        self.inner.release()

    def leaked_bytes(self) -> int:
        return 0
