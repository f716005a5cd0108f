"""Launch configs forced onto reduction kernels, and the limits that make one illegal.

Both sides use these: a rule file's config is a ``SlotConfig`` checked by ``slot_violations`` when
the file is read (``rulefile``) and forced into a kernel by ``force_config`` (the hook and the multi-kernel
entries), and the tuner's search space (``space``) samples the same configs under the same limits.  They live in
the runtime so that reading a rule file needs neither Optuna nor the search space.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from .torch_rules import next_pow2

# Triton holds a tile of XBLOCK x R0_BLOCK accumulators in registers; past 64K elements per program
# every config spills (the whole register file of an SM is 64K 32-bit registers).
MAX_TILE_ELEMENTS = 65536
# A thread holding more than this many tile elements cannot keep them in its 255 registers: such
# configs spill heavily, take minutes in ptxas and are never fast (seen: XBLOCK=16 x 4096, 1 warp).
MAX_ELEMENTS_PER_THREAD = 256


@dataclasses.dataclass(frozen=True)
class KernelSlot:
    """One reduction kernel Inductor generates for the function, as seen by the probe."""

    key: str
    backward: bool
    xnumel: int
    rnumel: int
    mix_order: bool
    default_persistent: bool
    # torch_rules.reductions_key of the kernel's reductions (e.g. "sum"); "" in spaces probed
    # before it was recorded (distill falls back to the catalog's kernels.KernelSpec.reductions).
    reductions: str = ""
    # torch_rules.envelope_text of what the kernel reads and writes; "" in spaces probed before it was
    # recorded (distill falls back to the catalog's kernels.KernelSpec.envelope).
    envelope: str = ""

    @property
    def persistent_allowed(self) -> bool:
        return next_pow2(self.rnumel) <= MAX_TILE_ELEMENTS


@dataclasses.dataclass(frozen=True)
class SlotConfig:
    """A launch config forced onto one slot."""

    persistent: bool
    XBLOCK: int
    num_warps: int
    R0_BLOCK: int | None = None
    num_stages: int = 1
    RSPLIT_SIZE: int | None = None
    NUM_STAGES: int | None = None

    def fixed_config(self) -> dict[str, int]:
        """The dict handed to Inductor's ``FixedTritonConfig`` (and so written into the source)."""
        cfg: dict[str, int] = {"XBLOCK": self.XBLOCK}
        if not self.persistent:
            # Persistent kernels hard-code R0_BLOCK = next_pow2(rnumel); passing it fails codegen.
            cfg["R0_BLOCK"] = int(self.R0_BLOCK or 0)
        if self.RSPLIT_SIZE is not None:
            cfg["RSPLIT_SIZE"] = self.RSPLIT_SIZE
            cfg["NUM_STAGES"] = int(self.NUM_STAGES or 1)
        cfg["num_warps"] = self.num_warps
        cfg["num_stages"] = self.num_stages
        return cfg

    @classmethod
    def from_inductor_choice(cls, choice: Mapping[str, Any]) -> "SlotConfig":
        """The config Inductor picked for one kernel: an entry of a default trial's ``inductor_choice_json``."""
        cfg = choice.get("config") or {}
        return cls("PERSISTENT" in str(choice.get("heuristic", "")), cfg.get("XBLOCK", 1), cfg.get("num_warps", 0),
                   cfg.get("R0_BLOCK"), cfg.get("num_stages", 1), cfg.get("RSPLIT_SIZE"), cfg.get("NUM_STAGES"))

    def describe(self) -> str:
        kind = "persistent" if self.persistent else f"looped R0_BLOCK={self.R0_BLOCK}"
        text = f"{kind} XBLOCK={self.XBLOCK} warps={self.num_warps}"
        if not self.persistent:
            text += f" stages={self.num_stages}"
        if self.RSPLIT_SIZE is not None:
            text += f" split={self.RSPLIT_SIZE} NUM_STAGES={self.NUM_STAGES}"
        return text


def choices_for_slot(choices: Sequence[Mapping[str, Any]], slot: KernelSlot) -> list[Mapping[str, Any]]:
    """The entries of Inductor's recorded choice (a default trial's ``inductor_choice_json``, parsed) that
    are ``slot``'s kernel: the same size hints, and a split size exactly where it is a fused mix-order
    kernel.  Several kernels of one size match alike; their order is generation order."""
    wanted = {"x": next_pow2(slot.xnumel), "r0_": next_pow2(slot.rnumel)}
    return [c for c in choices if c.get("size_hints") == wanted
            and bool((c.get("config") or {}).get("RSPLIT_SIZE")) == slot.mix_order]


# The launch fields, declared once: ``SlotConfig``'s fields, in its order.  Rule files (their YAML keys),
# the search space (its Optuna parameters: ``search_param``), the trial tables and the figures take
# their names from here.
LAUNCH_FIELDS = tuple(f.name for f in dataclasses.fields(SlotConfig))
POW2_FIELDS = ("XBLOCK", "num_warps", "R0_BLOCK", "RSPLIT_SIZE")  # powers of two: searched as their log2
STAGE_FIELDS = ("num_stages", "NUM_STAGES")  # pipeline stages: counts
# What a config of each kind sets besides ``persistent``, in the order the search asks for them.
MIX_ORDER_FIELDS = ("RSPLIT_SIZE", "XBLOCK", "NUM_STAGES", "num_warps")  # always persistent
PERSISTENT_FIELDS = ("XBLOCK", "num_warps")  # R0_BLOCK is the whole row
LOOPED_FIELDS = ("XBLOCK", "R0_BLOCK", "num_warps", "num_stages")
assert set(LAUNCH_FIELDS) == {"persistent", *POW2_FIELDS, *STAGE_FIELDS}


def search_param(field: str) -> str:
    """The name a launch field has as a search parameter (a power of two is searched as its log2)."""
    return f"log2_{field}" if field in POW2_FIELDS else field


def slot_violations(slot: KernelSlot, cfg: SlotConfig) -> list[str]:
    """Reasons why ``cfg`` is not a legal launch config for ``slot`` (empty when legal)."""
    reasons = []
    r_pow2 = next_pow2(slot.rnumel)
    if cfg.XBLOCK > next_pow2(slot.xnumel):
        reasons.append(f"XBLOCK={cfg.XBLOCK} exceeds next_pow2(xnumel={slot.xnumel})")
    if slot.mix_order:
        if not cfg.persistent:
            reasons.append("the mix-order kernel is always persistent")
        if cfg.RSPLIT_SIZE is None or cfg.NUM_STAGES is None:
            reasons.append("mix-order kernel needs RSPLIT_SIZE and NUM_STAGES")
        elif cfg.XBLOCK > cfg.RSPLIT_SIZE:
            reasons.append(f"XBLOCK={cfg.XBLOCK} exceeds RSPLIT_SIZE={cfg.RSPLIT_SIZE}")
        elif cfg.RSPLIT_SIZE > next_pow2(slot.xnumel):
            reasons.append(f"RSPLIT_SIZE={cfg.RSPLIT_SIZE} exceeds the rows")
    tile = cfg.XBLOCK * (r_pow2 if cfg.persistent else (cfg.R0_BLOCK or r_pow2))
    if tile > MAX_ELEMENTS_PER_THREAD * 32 * cfg.num_warps:
        reasons.append(f"{tile // (32 * cfg.num_warps)} tile elements per thread exceed {MAX_ELEMENTS_PER_THREAD}")
    if cfg.persistent:
        if not slot.persistent_allowed:
            reasons.append(f"persistent row of {r_pow2} elements exceeds {MAX_TILE_ELEMENTS}")
        elif cfg.XBLOCK * r_pow2 > MAX_TILE_ELEMENTS:
            reasons.append(f"persistent tile XBLOCK*{r_pow2} exceeds {MAX_TILE_ELEMENTS} elements")
    else:
        if cfg.R0_BLOCK is None:
            reasons.append("looped kernel needs R0_BLOCK")
        elif cfg.R0_BLOCK > r_pow2:
            reasons.append(f"R0_BLOCK={cfg.R0_BLOCK} exceeds next_pow2(rnumel={slot.rnumel})")
        elif cfg.XBLOCK * cfg.R0_BLOCK > MAX_TILE_ELEMENTS:
            reasons.append(f"tile XBLOCK*R0_BLOCK={cfg.XBLOCK * cfg.R0_BLOCK} exceeds {MAX_TILE_ELEMENTS}")
    return reasons


def force_config(kernel_kwargs: dict[str, Any], cfg: SlotConfig, mix_order: bool) -> dict[str, Any]:
    """The TritonKernel kwargs that make Inductor emit ``cfg`` (installed rules and tuning plans alike)."""
    from torch._inductor.codegen.triton import FixedTritonConfig

    kernel_kwargs = dict(kernel_kwargs)
    kernel_kwargs["fixed_config"] = FixedTritonConfig(cfg.fixed_config())
    kernel_kwargs["override_cooperative_reduction"] = False
    if not mix_order:  # Inductor asserts the mix-order kernel is persistent; it is forced already
        kernel_kwargs["override_persistent_reduction"] = cfg.persistent
    return kernel_kwargs
