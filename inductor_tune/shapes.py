"""The shapes and dtypes a tuning problem may name, without torch and without the kernel catalog.

Below both ``kernels`` (whose specs take a ``Shape``) and ``problem`` (whose ``Problem`` looks its
kernel up in the catalog), so neither imports the other back; both re-export these names.
"""

from __future__ import annotations

import dataclasses

# The one next_pow2: the runtime's rule lookup (which `patch` copies into torch) buckets sizes with it,
# so the tuner must bucket them the same way.
from .runtime.torch_rules import next_pow2  # noqa: F401 - re-exported


# The activation dtypes a problem may name, with their bytes per element (torch's itemsize).
ELEMENT_SIZES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp32": 4}
DTYPE_NAMES = tuple(ELEMENT_SIZES)

# Alignment classes of a row length N, as (modulus, residue): rows 32-byte aligned at 2-byte elements,
# 16-byte, 8-byte, 4-byte, and odd.  A rule's win can turn into a loss from one class to the next
# (docs/rules.md, stop 21), so span probes take N from each in turn and a rule ships only once probed
# in all of them that it applies at.
ALIGNMENT_CLASSES = ((16, 0), (16, 8), (8, 4), (4, 2), (2, 1))


def classes_with_n(lo: int, hi: int, classes=ALIGNMENT_CLASSES) -> list[tuple[int, int]]:
    """The alignment classes (modulus, residue) of ``classes`` that hold some N in [lo, hi]."""
    return [(m, r) for m, r in classes if lo + (r - lo) % m <= hi]  # the class's least N from lo on


@dataclasses.dataclass(frozen=True)
class Shape:
    """Rows (M) by reduction length (N) of a 2-D activation."""

    rows: int
    cols: int

    @classmethod
    def parse(cls, text: str) -> "Shape":
        parts = text.lower().replace(" ", "").split("x")
        # ASCII digits only: str.isdigit() also accepts full-width and superscript digits ('１２', '²').
        if len(parts) != 2 or not all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"shape {text!r} is not of the form MxN with positive integers, e.g. 32768x4096")
        return cls(int(parts[0]), int(parts[1]))

    def __str__(self) -> str:
        return f"{self.rows}x{self.cols}"


