"""Span probes of split kernels: problems whose split kernel lands inside a rule's span.

Below 2 x the GPU's SMs rows, Inductor splits an inner reduction of N above 8192 into a split kernel (partial
sums of each row: rows x s programs' worth of outputs, ceil(N / s) elements each) and a kernel that combines
them.  Focused studies (``SearchSpace.focused``) give the split kernel evidence of its own, and a rule fitted
on it matches split kernels by their sizes (xnumel, rnumel), not the problem's.  A span probe of such a rule
must therefore be a problem whose *split kernel* lies in the rule's span, which ``crossmeasure.span_probes``
(rows and N drawn directly) cannot place.

The split factor s is decided from sizes alone (``InductorChoices.reduction_split_factor``, inner
reductions; the same formula in torch 2.11 and 2.13 for GPUs below compute capability 10), so
``SplitDraw.problems`` draws the kernel's sizes first (xnumel log-uniform in the rule's span, rnumel in the rule's
N span and in each alignment class in turn), then a problem that Inductor would split into exactly that kernel.  Where
the compile disagrees with the prediction, the crossmeasure record says the forced kernel was not generated
and ``distill`` drops the probe (``evidence``), as for any probe.

A column reduction (a weight gradient: N outputs, each a sum over the M rows) is split the same way, by the outer
branch of the same heuristic (``inductor_outer_split``): a column-split kernel of N x s outputs, ceil(M / s) rows
each, and a combine.  Inductor keeps it whole only at 32 rows or fewer, at N of 64 x SMs or more, or at 128 rows
or fewer of a small problem, so most weight gradients of unfused backwards run split.  ``ColumnSplitDraw`` places
probes of rules fitted on such kernels (``focus: column_split``): the problem's sizes transposed, and the alignment
class on N, which the column kernel's loads run along.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Container, Sequence

# The points of split kernels are evidence's: a crossmeasure record of a split probe is framed there.
from .evidence import part_role, record_probe, split_probe  # noqa: F401 - record_probe re-exported
from .points import ShapePoint
from .gate import COLS, ROWS
from .shapes import ALIGNMENT_CLASSES
from .space import slot_role
from .runtime.rulefile import INNER_SPLIT_MIN_RNUMEL

WARP_SIZE = 32
MAX_THREADS_PER_SM = 2048
ATTEMPTS = 200  # per probe: draws of the kernel's sizes before giving up on a narrow span


def inductor_inner_split(rows: int, cols: int, sm_count: int, capability_major: int = 9) -> int:
    """Inductor's split factor of an inner reduction of ``rows`` outputs and length ``cols`` (1: no split),
    as ``InductorChoices.reduction_split_factor`` computes it (torch 2.11-2.13), for a GPU of ``sm_count`` SMs."""
    if rows >= 2 * sm_count:
        return 1
    no_split_up_to = 524288 if capability_major >= 10 else INNER_SPLIT_MIN_RNUMEL - 1
    if cols <= no_split_up_to:
        return 1
    threads_per_sm, num_threads = MAX_THREADS_PER_SM, WARP_SIZE * 8
    min_per_device = WARP_SIZE * sm_count * threads_per_sm
    max_per_device = 512 * sm_count * threads_per_sm
    if cols * rows <= min_per_device:
        split_size = WARP_SIZE
    elif cols * rows < max_per_device:
        target_blocks = sm_count * threads_per_sm // (2 * num_threads)
        blocks_per_output = (target_blocks + rows - 1) // rows
        tmp = (cols + num_threads * blocks_per_output - 1) // (num_threads * blocks_per_output)
        closest = _nearest_divisor(cols, tmp)
        split_size = max(closest, WARP_SIZE) if abs(closest - tmp) < 30 else tmp
    else:
        closest = _nearest_divisor(cols, 512)
        split_size = closest if abs(closest - 512) < 50 else 512
    return (cols + split_size * num_threads - 1) // (split_size * num_threads)


def inductor_outer_split(rows: int, cols: int, sm_count: int) -> int:
    """Inductor's split factor of a column reduction of ``cols`` outputs over ``rows`` (1: no split), as
    ``Reduction.num_splits`` and the outer branch of ``InductorChoices.reduction_split_factor`` compute it
    (torch 2.11-2.14), for a GPU of ``sm_count`` SMs."""
    if rows <= WARP_SIZE or cols >= sm_count * 2 * WARP_SIZE:
        return 1
    rvals_per_thread, num_threads = 4, WARP_SIZE * 8
    min_per_device = WARP_SIZE * sm_count * MAX_THREADS_PER_SM
    max_per_device = 512 * sm_count * MAX_THREADS_PER_SM
    if rows * cols < min_per_device:
        split_size = WARP_SIZE
    elif rows * cols < max_per_device:
        xblocks = -(-cols // 128)
        target_blocks = -(-(sm_count * MAX_THREADS_PER_SM // num_threads) // xblocks)
        tmp = -(-rows // (rvals_per_thread * target_blocks))
        closest = _nearest_divisor(rows, tmp)
        split_size = max(closest, WARP_SIZE) if abs(tmp - closest) < 20 else tmp
    else:
        closest = _nearest_divisor(rows, 512)
        split_size = closest if abs(closest - 512) < 50 else 512
    return -(-rows // (rvals_per_thread * split_size))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _nearest_divisor(n: int, target: int) -> int:
    """The divisor of n nearest ``target``, the smaller on a tie (``sympy.divisors`` order, as Inductor picks it)."""
    return min(_divisors(n), key=lambda d: abs(d - target))


@dataclasses.dataclass(frozen=True)
class SplitDraw:
    """What the span probes of one rule fitted on split kernels draw from."""

    parents: Sequence[ShapePoint]  # the family's split-kernel points (studied), whose kernels the probes take in turn
    xnumel: tuple[int, int]  # the rule's span of the kernel's outputs (its rows)
    rnumel: tuple[int, int]  # and of its reduction length (its cols)
    sm_count: int
    capability_major: int = 9

    @property
    def masked(self) -> bool:
        """Whether the family's kernels mask a ragged last part (the split length not a multiple of s): that is in
        their envelope, so a probe of the other kind would time a kernel the rule does not match."""
        return "masked:" in self.parents[0].envelope

    def problems(self, count: int, rng: random.Random, taken: set, avoid: Container[tuple[int, int]],
                 fits=lambda kernel, rows, cols: True) -> list[tuple[ShapePoint, int]]:
        """``count`` probes (point, split), kernels and alignment classes in turn (``_place`` says of what);
        ``taken`` (problems' rows, cols) grows with each; ``fits``: whether a problem fits the GPU memory bound."""
        kernels = sorted({(p.kernel, p.dtype) for p in self.parents})
        out: list[tuple[ShapePoint, int]] = []
        for n in range(count):
            kernel = kernels[n % len(kernels)]
            modulus, residue = ALIGNMENT_CLASSES[n % len(ALIGNMENT_CLASSES)]
            parent_pool = [p for p in self.parents if (p.kernel, p.dtype) == kernel]
            for _ in range(ATTEMPTS):
                x = round(math.exp(rng.uniform(math.log(self.xnumel[0]), math.log(self.xnumel[1]))))
                found = self._place(x, rng.randint(*self.rnumel), modulus, residue, rng)
                if found is None:
                    continue
                rows, cols, split, r = found
                if (rows, cols) in taken or (rows, cols) in avoid or not fits(kernel[0], rows, cols):
                    continue
                parent = min(parent_pool, key=lambda p: (abs(math.log(p.cols / r)), abs(math.log(p.rows / x))))
                taken.add((rows, cols))
                out.append((split_probe(parent, rows, cols, split), split))
                break
        return out

    def _place(self, x: int, r: int, modulus: int, residue: int, rng: random.Random
               ) -> tuple[int, int, int, int] | None:
        """A problem (rows, cols, split, the kernel's length) of a split kernel of x outputs near length r, that
        length in the alignment class; None where the draw places none."""
        r -= (r - residue) % modulus
        found = self._problem(x, r, rng)
        return None if found is None or r < self.rnumel[0] else (*found, r)

    def _problem(self, x: int, r: int, rng: random.Random) -> tuple[int, int, int] | None:
        """A rows x cols problem that Inductor splits into a split kernel of exactly x outputs and length r."""
        splits = [s for s in _divisors(x) if s > 1 and x // s < 2 * self.sm_count]
        rng.shuffle(splits)
        for s in splits:
            rows = x // s
            lo, hi = max((r - 1) * s + 1, INNER_SPLIT_MIN_RNUMEL + 1), r * s
            if hi > COLS[1]:  # no longer than the gate draws: no held-out problem is
                continue
            cols = self._length(lo, hi, rng)
            if cols is not None and inductor_inner_split(rows, cols, self.sm_count, self.capability_major) == s:
                return rows, cols, s
        return None

    def _length(self, lo: int, hi: int, rng: random.Random) -> int | None:
        """A length the split reduces in ``lo..hi`` (its kernel's length times s at most), ragged where the family's
        kernels mask and a multiple of s where they do not; None where none is."""
        if self.masked:
            hi -= 1
        elif lo <= hi:
            lo = hi
        return rng.randint(lo, hi) if lo <= hi else None


class ColumnSplitDraw(SplitDraw):
    """What the span probes of one rule fitted on column-split kernels draw from: a kernel of x = N x s outputs and
    length ceil(M / s) (the module's docstring)."""

    def _place(self, x: int, r: int, modulus: int, residue: int, rng: random.Random
               ) -> tuple[int, int, int, int] | None:
        """A problem (rows, cols, split, r) whose column split has exactly x outputs and length r, its N in the
        alignment class; None where none is."""
        splits = [s for s in _divisors(x) if s > 1 and COLS[0] <= x // s < 2 * WARP_SIZE * self.sm_count
                  and (x // s) % modulus == residue]
        rng.shuffle(splits)
        for s in splits:
            lo, hi = max((r - 1) * s + 1, WARP_SIZE + 1), r * s
            if hi > ROWS[1]:  # no more rows than the gate draws
                continue
            rows = self._length(lo, hi, rng)
            # Sizes that would also read as a split of the rows (``slot_role`` asks that first) are no probe of it.
            if rows is not None and inductor_outer_split(rows, x // s, self.sm_count) == s \
                    and slot_role(dataclasses.replace(self.parents[0].slot, xnumel=x, rnumel=r), rows, x // s) \
                    == "column_split":
                return rows, x // s, s, r
        return None


def part_draw(parents: Sequence[ShapePoint], xnumel: tuple[int, int], rnumel: tuple[int, int], sm_count: int,
              capability_major: int = 9) -> SplitDraw:
    """The draw of span probes of a rule fitted on ``parents``' kernels: column splits or splits of rows."""
    draw = ColumnSplitDraw if part_role(parents[0]) == "column_split" else SplitDraw
    return draw(parents, xnumel, rnumel, sm_count, capability_major)


def split_parents(group: Sequence[ShapePoint], points: Sequence[ShapePoint]) -> list[ShapePoint]:
    """The studied points of the group's family that play its kernels' part (a split or a column split, any size
    group): the kernels a probe may take."""
    role = part_role(group[0]) if group else None
    if role is None or not all(part_role(p) == role for p in group):
        return []
    family = group[0].family
    return [p for p in points if p.family == family and not p.probe and part_role(p) == role]
