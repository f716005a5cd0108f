"""One GPU's identity: the model and the software stack every measurement depends on.

A worker reads it off its device (``evaluate.gpu_identity``), a recording restores it from its
``it_gpu`` row (``replay``), every store keys its rows by ``key`` (also part of every study's name, so
studies of two stacks never mix), and a heuristic file carries the part a training process can check
(``spec``: the runtime's ``GpuSpec``).  No torch here.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .runtime.rules import GpuSpec


@dataclasses.dataclass(frozen=True)
class GpuIdentity:
    name: str  # torch.cuda.get_device_properties(...).name, e.g. "NVIDIA H200"
    sm_count: int
    compute_capability: str  # "9.0"
    memory_bytes: int
    l2_bytes: int
    cuda_driver: str
    cuda_runtime: str
    torch: str
    triton: str
    # Measurements answered from a recording: their studies and records are kept apart from measured ones.
    replayed: bool = False

    @property
    def key(self) -> str:
        """Readable identity of GPU model + software: ``it_gpu.fingerprint`` and part of every study name."""
        gpu = re.sub(r"[^A-Za-z0-9]+", "-", self.name).strip("-")
        key = f"{gpu}/sm{self.compute_capability.replace('.', '')}x{self.sm_count}/torch{self.torch}/triton{self.triton}"
        return key + "/replay" if self.replayed else key

    def stored_fields(self) -> dict[str, Any]:
        """The columns of its ``it_gpu`` row (the row's key says whether it was replayed)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "replayed"}

    @classmethod
    def from_record(cls, row: Any, replayed: bool = False) -> "GpuIdentity":
        """The identity an ``it_gpu`` row (or anything with its columns) recorded."""
        return cls(**{f.name: getattr(row, f.name) for f in dataclasses.fields(cls) if f.name != "replayed"},
                   replayed=replayed)

    def spec(self) -> GpuSpec:
        """What a heuristic file records of it and a training process checks."""
        return GpuSpec(self.name, self.key, self.compute_capability, self.sm_count, self.torch, self.triton)
