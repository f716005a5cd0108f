"""Fused mix-order kernels whose split Inductor's own autotuner picks: a heuristic file's ``mix_autotune``.

A fixed split and config for a norm's fused backward, fitted where studies found them, lost beyond noise at 38 %
of the further shapes of its size group it was timed at (docs/rules.md, stop 37): the best split moves with
the rows in ways no row band captured.  Inductor can time split sizes itself while it compiles
(``triton.mix_order_reduction_autotune_split_size``: from its SM-count formula's split it halves and doubles
while the kernel gets faster, ``CoordescTuner.autotune_single_field``).  An entry switches that on for the
kernels inside the spans its evidence measured.  The lookup is torch_rules' own, so an entry keys on what a
config rule keys on; a split that fails to compile while Inductor times it is never chosen.

Inductor times the fused kernel alone, not the reduction of its partial sums that follows (rows / split of
them), so left free it picks near-ties and loses end to end (down to 0.47x on an H200, stop 38): the entry's
``min_split``, ``up_only`` and ``margin`` bound where it may go.  An ``end_to_end`` entry adds that reduction's
time to each split instead (``Tail``), as Inductor's wrapper will run it, and a ``sweep`` entry times every
power-of-two split rather than climbing from Inductor's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from typing import Iterator, Optional

from . import torch_rules
from .rules import entry_table

log = logging.getLogger(__name__)

AUTOTUNE_SPLIT = "triton.mix_order_reduction_autotune_split_size"
MULTI_STAGES = "triton.mix_order_reduction_allow_multi_stages"
# A sweeping entry's largest split: Inductor caps the split it picks at 128 (``_pick_split_size`` in
# ``SIMDScheduling._codegen_mix_order_reduction``, torch 2.13), and its climb kept none above 256 in the end-to-end
# probe's four training records on the H200 (it timed 512 four times; db/mix-e2e-train*.sqlite, stops 79 and 82).
SWEEP_MAX = 256


def lookup_table(specs, gpu: str, capability: int, sm_count: int) -> torch_rules.Table:
    """The entries as mix_order rules for ``torch_rules.mix_order_split_size`` (``rules.entry_table``)."""
    return entry_table(specs, gpu, capability, sm_count, "mix_order", persistent=True)


def entry_for(node, numel, rnumel, installed):
    """The entry covering the fused kernel of ``node`` (``torch_rules.mix_order_split_size``'s arguments), or
    None; ``installed`` is (lookup table, entries) as ``registry.installed_mix_autotune`` keeps them."""
    if installed is None:
        return None
    table, specs = installed
    index = torch_rules.mix_order_split_size(node, numel, rnumel, table)
    return None if index is None else specs[index - 1]


@dataclasses.dataclass(frozen=True)
class Tail:
    """The reduction of a fused mix-order kernel's partial sums that Inductor's wrapper runs after it
    (``SIMDScheduling._codegen_mix_order_reduction``): per weight gradient, ``sum(dim=0)`` over a float32
    workspace of ceil(rows / split) x rnumel."""

    rows: int
    rnumel: int
    partial_sums: int
    device: str

    def ms(self, split: int, cache: dict) -> float:
        nsplit = -(-self.rows // split)
        if nsplit not in cache:
            import torch
            from torch._inductor.runtime.benchmarking import benchmarker

            workspace = torch.empty(self.partial_sums, nsplit, self.rnumel, dtype=torch.float32, device=self.device)

            def reduce_partial_sums():
                for partial in workspace:
                    partial.sum(dim=0)

            cache[nsplit] = benchmarker.benchmark_gpu(reduce_partial_sums)
        return cache[nsplit]


@contextlib.contextmanager
def split_autotuned(spec, kernel: str, timings: dict, tail: Optional[Tail] = None) -> Iterator[None]:
    """Inside the block Inductor times split sizes for the mix-order kernel it generates: from the entry's
    ``min_split`` (and only above its own split where the entry says ``up_only``), leaving its own split only for
    one faster by more than the entry's ``margin``, with multi-stage loops where the entry says so.  ``timings``
    receives what it timed (split: ms, or the error of a split that failed) and the split it kept (key
    ``"kept"``); where the entry is ``end_to_end`` and ``tail`` describes the kernel's partial sums, a split's ms
    include their reduction.  A split whose kernel fails to build or run (or whose tail fails to time) counts as
    infinitely slow, so the autotuner keeps a split that works, and one WARNING line names the entry, the kernel
    and the splits that failed."""
    import torch._inductor.config as inductor_config
    from torch._inductor.runtime.coordinate_descent_tuner import CoordescTuner

    original = CoordescTuner.__dict__["autotune_single_field"]
    tail_cache: dict = {}

    def guarded(fn, init_val, min_val=None, max_val=None):
        floor = max(spec.min_split or 1, init_val if spec.up_only else 1)
        start = max(init_val, floor)

        seen: dict = {}  # Inductor's own split is timed before its autotuner asks for it again

        def timed(split):
            if split not in seen:
                seen[split] = timed_once(split)
            return seen[split]

        def timed_once(split):
            try:
                ms = fn(split)
                if spec.end_to_end and tail is not None and math.isfinite(ms):
                    ms += tail.ms(split, tail_cache)
            except Exception as exc:  # Inductor would fail the compile; the entry must not
                first_line = str(exc).splitlines()[0][:80] if str(exc) else ""
                timings[split] = f"failed ({type(exc).__name__}: {first_line})"
                return math.inf
            timings[split] = ms
            # Every split but Inductor's own carries the margin, so only leaving Inductor's split needs to clear it.
            return ms if split == start else ms * (1 + (spec.margin or 0))

        # Inductor's benchmark gives a split inf, without raising, where its kernel spills more than 8 registers
        # or fails to compile; without the entry Inductor compiles its own split all the same.  Nothing is shown
        # faster than a split that was not timed, so the entry leaves it there: at nn_layernorm_bwd 70460x7521 on
        # the H200 split 64 spilled and the autotuner moved to 32 (23 % slower end to end at stop 80, whose record
        # did not land); kept, it reads 1.000 (db/mix-e2e-train4.sqlite, stop 82).
        if start == init_val and timed(start) == math.inf and not isinstance(timings.get(start), str):
            timings["kept"] = start
            log.info("inductor_tune: Inductor's split %s of %s could not be timed (spills or failed to compile "
                     "in its benchmark); kept (%s)", start, kernel, spec.describe())
            return start
        low = max(min_val or 1, floor)
        if spec.sweep:
            chosen = swept(timed, start, low, min(max_val or SWEEP_MAX, SWEEP_MAX))
        else:
            chosen = original.__func__(timed, start, low, max_val)
        timings["kept"] = chosen
        failed = {split: why for split, why in timings.items() if isinstance(why, str)}
        if failed:
            log.warning("inductor_tune: splits %s of %s failed while Inductor timed them (%s); split %s kept (%s)",
                        sorted(failed), kernel, next(iter(failed.values())), chosen, spec.describe())
        return chosen

    patch = {AUTOTUNE_SPLIT: True, **({MULTI_STAGES: True} if spec.multi_stages else {})}
    CoordescTuner.autotune_single_field = staticmethod(guarded)
    try:
        with inductor_config.patch(patch):
            yield
    finally:
        CoordescTuner.autotune_single_field = original


def swept(timed, start: int, low: int, high: int) -> int:
    """The fastest of ``start`` and every power of two from ``low`` to ``high`` by ``timed`` (which carries the
    margin), ``start`` on a tie: unlike a climb, a split past one that is slower or cannot be timed is still timed."""
    splits = [start] + [1 << k for k in range(max(low, 1).bit_length() - 1, high.bit_length())
                        if low <= 1 << k <= high and 1 << k != start]
    return min(splits, key=lambda split: (timed(split), split != start))


def describe_timings(timings: dict) -> str:
    kept = timings.get("kept")
    timed = " ".join(f"{split}:{ms:.4f}" if isinstance(ms, float) else f"{split}:{ms}"
                     for split, ms in sorted((k, v) for k, v in timings.items() if k != "kept"))
    return f"split {kept} kept (ms by split: {timed or 'none timed'})"
