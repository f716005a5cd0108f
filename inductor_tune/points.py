"""What ``distill`` reads per kernel shape: a ``ShapePoint`` (what each measured config gained over Inductor's
default there, ``evidence`` builds them) or why a study gave none (``Skipped``)."""

from __future__ import annotations

import dataclasses
from typing import Mapping

from .heuristics import ELEMENT_SIZES
from .runtime.torch_rules import next_pow2
from .space import SlotConfig


@dataclasses.dataclass(frozen=True)
class ShapePoint:
    """One kernel/shape/dtype: what each measured config gained over Inductor's default there."""

    kernel: str
    rows: int
    cols: int
    dtype: str
    kind: str
    reductions: str
    slot: object  # space.KernelSlot of the single kernel
    speedups: Mapping[SlotConfig, float]
    noise: float
    studies: tuple[str, ...]
    inductor_default: str = ""
    interleaved: frozenset = frozenset()  # configs whose speedup was timed interleaved with the default
    proposed: frozenset = frozenset()  # configs this shape's own studies tried (its sampler's proposals)
    failed: frozenset = frozenset()  # configs that failed to compile or run here in a crossmeasure
    crossmeasured: int = 0  # crossmeasure records merged in
    # A shape no study ran, where crossmeasure timed its group's configs (crossmeasure.probes): it
    # proposes nothing and is never scored as held out, but a rule must hold there too.
    probe: bool = False
    # A span probe (crossmeasure.span_probes): placed inside a rule's span by a fit of every shape, not
    # at 3/2 of one studied shape's rows.
    span: bool = False
    # A span probe's round (when it began, its database, its seed: sortable) and the config the placing
    # fit's rule set there, timed first: what that fit claimed where it had not looked.
    span_round: tuple[str, ...] = ()
    placed_by: SlotConfig | None = None
    # For one kernel of a multi-kernel problem (a focused study): the problem's rows and cols, which a
    # crossmeasure compiles; () where the kernel is the problem's only one and rows x cols is the problem.
    problem: tuple[int, ...] = ()

    @property
    def compiled(self) -> tuple[int, int]:
        """The rows x cols of the problem to compile to time this point's kernel."""
        return (self.problem[0], self.problem[1]) if self.problem else (self.rows, self.cols)

    @property
    def label(self) -> str:
        of = f" ({self.slot.key} of {self.problem[0]}x{self.problem[1]})" if self.problem else ""
        return f"{self.kernel} {self.rows}x{self.cols}{of} {self.dtype}" + (" (probe)" if self.probe else "")

    @property
    def element_size(self) -> int:
        return ELEMENT_SIZES[self.dtype]

    @property
    def r_pow2(self) -> int:
        return next_pow2(self.slot.rnumel)

    @property
    def x_pow2(self) -> int:
        return next_pow2(self.slot.xnumel)

    @property
    def envelope(self) -> str:
        return self.slot.envelope

    @property
    def family(self) -> tuple[str, int, str, str]:
        """What one rule covers besides sizes: kernels of one kind, element size, signature and envelope."""
        return self.kind, self.element_size, self.reductions, self.envelope

    @property
    def best(self) -> float:
        return max([1.0, *self.speedups.values()])


@dataclasses.dataclass(frozen=True)
class Skipped:
    study: str
    reason: str
