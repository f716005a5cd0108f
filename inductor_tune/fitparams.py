"""The parameters of one fit (``distill.fit_rules``) and what they excuse as noise.

Shared by the fit (``distill``) and the settling of its rules against span probes (``settle``).
"""

from __future__ import annotations

import dataclasses

from . import stats
from .points import ShapePoint
from .space import SlotConfig


@dataclasses.dataclass(frozen=True)
class FitParams:
    min_coverage: float = 1.0  # fraction of a group's shapes a rule's config must have been timed at
    min_shapes: int = 1  # and at least this many shapes
    merge_tolerance: float = 0.02  # worst-case loss allowed for one rule to span two size groups
    # stats.NOISE_FLOOR: the same kernel compiled twice timed up to 1.2 % apart on an H200.
    noise_floor: float = stats.NOISE_FLOOR
    # Smallest geometric-mean gain a rule is adopted for: a 1.6 % gain fitted at one shape lost 5 % at
    # a held-out shape of its size group on an H200; gains that small are not worth the risk.
    min_gain: float = 0.03
    # Adoptable configs whose worst ratio to the best found lies within this of the most robust one tie on it, and
    # the tie goes to the one least slower than Inductor's default at its worst shape: on an H200 the RMSNorm
    # forwards' split-kernel rule took 32 warps for a worst ratio 0.001 above 8 warps' (gains 0.994.. against
    # 1.010..), and lost 4.9 % at llama_rmsnorm_train_fwd 144x118778 where 8 warps won 16.6 % (stop 48).
    # 0 reproduces the files up to stop 47.
    regret_tie: float = stats.NOISE_FLOOR
    # The most loss a shape's noise may excuse: the gate's bar is 0.98x Inductor's default.  A LayerNorm
    # forward rule whose one noisy shape (noise 3.3 %) read 0.972x was adopted, and fresh rounds on an
    # H200 timed that shape at 0.976x with 0.4 % noise (docs/rules.md).
    max_excused_loss: float = 0.02
    # Only interleaved ratios (verdict finalists, crossmeasure) count as a config's evidence; trial
    # ratios against a default timed minutes apart are leads for crossmeasure, not proof.
    interleaved_only: bool = True
    # Replayed studies copy other measurements; only the CPU demo fits them (and says so in provenance).
    allow_replayed: bool = False
    # Configs ship only where span probing has settled: where the latest round of span probes still caught
    # a config slower beyond noise, the next fit has only moved the failure elsewhere (fused mix-order
    # backwards on an H200 and an H100 lost in every round).  ``settle_by`` says what such a round holds
    # back; False ships every fitted config (for comparisons only).
    settled_kinds_only: bool = True
    # What one lost span probe keeps at the default: "rule" (the rule whose span it lay in, see
    # ``unsettled_rules``) or "kind" (every rule of its kernel kind, the shipped files up to stop 20).
    # Once span probes took N from every alignment class (shapes.ALIGNMENT_CLASSES), each round on
    # an H200 found some small loss in one or two of ~30 inner-looped rules (0.94x at 2076x1894), which
    # sent all 24 fitted configs back to the default; a loss says nothing of a rule whose span it is not in.
    settle_by: str = "rule"
    # Where no config serves a whole size group, split its rows in two bands and fit each (``rowbands``):
    # one probe lost at 2076 rows kept an H200 RMSNorm rule at the default up to 262144 rows.  False
    # reproduces the files up to stop 24.  A band needs ``min_band_shapes`` shapes, probes included.
    split_rows: bool = True
    min_band_shapes: int = 2
    # The fused mix-order backwards are split in row bands too, each band's rule covering only its own shapes' rows
    # (as every mix-order rule does).  On an H200 their studies found 1.18-1.66x at all 8 coverage9 problems of
    # 16716..63656 rows (stop 41), in groups whose covered configs lose beyond noise at some shape, so the one rule
    # of each group kept the default at every row.  False reproduces the files up to df475948 (stop 41).
    split_mix_rows: bool = True
    # Where no config serves a whole size group, a cut in N competes with the cuts in rows (``rowbands.col_cuts``):
    # on an H200 the LayerNorm forwards at N 4097..8192 had configs that won at N 4272..7374 and lost at N = 8192
    # exactly (stop 41).  False reproduces the files up to 259a40e9 (stop 41).
    split_cols: bool = True
    # Span probes take every kernel a rule matches by its envelope in turn, and a rule ships only once the
    # latest round timed its config at each (``evidence.span_kernels``): on an H200 an RMSNorm rule whose
    # probes of rmsnorm_fwd all held lost 3 % at llama_rmsnorm_fwd (held-out set 13).  False reproduces
    # the files and span rounds up to stop 26.
    probe_every_kernel: bool = True
    # A rule covers, at N of each alignment class (shapes.ALIGNMENT_CLASSES), only the N its evidence of that class
    # spans (rows of odd N start unaligned).  On an H200 the scaled softmax backward's rule (N 8251..12048)
    # won at its 71 shapes, odd N among them up to 11611, and lost 5-13 % at odd N 11799..12047 while N = 11896,
    # 11898 and 11900 won 1.11-1.30x (stop 52).  False reproduces the files up to stop 51.
    cols_by_alignment: bool = True
    # At odd N a rule covers only the convex hull, in (log2 rows, N), of its evidence at odd N: the class span
    # leaves the rows free, and on an H200 the same rule, whose odd evidence reached N 11015 only from 1405 rows on,
    # lost 2-6 % at 540x11401 and 540x11503 and up to 14 % at 274x11297 in fresh compiles, while 540x11402 won 1.19x
    # (stop 54, db/retime52-48edc030-*.sqlite).  False reproduces the files up to stop 53.
    odd_hull: bool = True
    # A rule waits for a span round to time its config at N of every alignment class it may apply at, and only
    # those (``settle.applied_classes``): with class spans, a rule launches Inductor's default at N of a class its
    # evidence does not hold, so waiting for a probe there held back for good every rule of one N.  Of the 34 rules
    # stop 68's refit held back, 11 ship with it: 7 fused backwards of one N (256..8192) and 4 rules of fewer
    # classes.  False reproduces the files up to stop 68 (51913101).
    settle_applied_classes: bool = True


def excused_loss(point: ShapePoint, params: FitParams) -> float:
    """How much slower than the default a config may read at this shape and still count as no loss."""
    return min(max(point.noise, params.noise_floor), params.max_excused_loss)


def probe_loss(p: ShapePoint, config: SlotConfig, params: FitParams) -> float | None:
    """``config``'s ratio to the default at span probe ``p`` where it failed (0.0) or lost beyond noise;
    None where it held or was not timed."""
    if config in p.failed:
        return 0.0
    ratio = p.speedups.get(config)
    return ratio if ratio is not None and ratio < 1 - excused_loss(p, params) else None
