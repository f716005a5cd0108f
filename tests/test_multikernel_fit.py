"""experiments/multikernel_fit.py: multi-kernel entries fitted per size group, kept only where they hold up on the
shapes they were not chosen on, seeded with the configs of the rules they come before."""

import sys
import types
from pathlib import Path

from inductor_tune.heuristics import Evidence, RuleSpec
from inductor_tune.runtime.launch import SlotConfig

# The script imports ceiling and fit_loo from its own folder, as running it does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import multikernel_fit as fit  # noqa: E402

WIDE = SlotConfig(persistent=True, XBLOCK=1, num_warps=16)
NARROW = SlotConfig(persistent=True, XBLOCK=4, num_warps=4)
LOOPED = SlotConfig(persistent=False, XBLOCK=1, num_warps=8, R0_BLOCK=1024)


def shape(rows, cols, speedups, family=("inner_looped", 2, "sum", "x"), probe=False):
    kind, element_size, reductions, envelope = family
    return types.SimpleNamespace(
        kernel="rmsnorm_fwd", rows=rows, cols=cols, kind=kind, element_size=element_size, reductions=reductions,
        envelope=envelope, probe=probe, family=family, r_pow2=4096, x_pow2=1 << (rows - 1).bit_length(),
        inductor_default="looped R0_BLOCK=1024 XBLOCK=1 warps=8 stages=1", speedups=speedups,
        interleaved=frozenset(speedups))


def test_a_config_that_loses_somewhere_still_makes_an_entry_since_the_default_competes():
    group = [shape(1000, 3000, {WIDE: 1.5, LOOPED: 1.0}), shape(2000, 3500, {WIDE: 1.6, LOOPED: 1.0}),
             shape(4000, 4000, {WIDE: 1.4, LOOPED: 1.0}), shape(8000, 4096, {WIDE: 0.9, LOOPED: 1.0})]
    (entry,), report = fit.fit_entries(group, [], k=3, min_gain=1.02, min_shapes=3)
    # WIDE alone: LOOPED adds nothing over the default it ties.
    assert entry.configs == (WIDE,) and entry.kernels == (("sum", "x"),)
    assert (entry.rows, entry.cols, entry.kind, entry.element_size) == ((1000, 8000), (3000, 4096), "inner_looped", 2)
    assert "4 shapes" in report[0] and "1 config(s)" in report[0]
    assert entry.evidence.gain_min == 1.0 and entry.evidence.gain_max == 1.6


def test_no_entry_where_nothing_beats_the_default_or_too_few_shapes():
    flat = [shape(1000 * (i + 1), 3000, {WIDE: 0.99, NARROW: 1.005}) for i in range(4)]
    entries, report = fit.fit_entries(flat, [], k=3, min_gain=1.02, min_shapes=3)
    assert entries == [] and report[0].endswith("no entry")
    few = [shape(1000, 3000, {WIDE: 2.0}), shape(2000, 3000, {WIDE: 2.0}), shape(3000, 3000, {WIDE: 2.0}, probe=True)]
    assert fit.fit_entries(few, [], k=3, min_gain=1.02, min_shapes=3) == ([], [])


def test_the_configs_of_the_rules_it_comes_before_are_chosen_first():
    group = [shape(1000, 3000, {WIDE: 1.5, NARROW: 1.2}), shape(2000, 3500, {WIDE: 1.6, NARROW: 1.3}),
             shape(4000, 4000, {WIDE: 1.4, NARROW: 1.25})]
    rule = RuleSpec("inner_looped", 2, (4096, 4096), (1, 1 << 20), NARROW, Evidence(), "sum", ("x",))
    (entry,), _ = fit.fit_entries(group, [rule], k=3, min_gain=1.02, min_shapes=3)
    assert entry.configs == (NARROW, WIDE)
    # In sample the file reads NARROW's ratios and the entry the fastest of the default, NARROW and WIDE.
    lines = fit.in_sample(group, [rule], [entry])
    assert lines[0].startswith("in sample, all: 3 shapes, the file 0.8") and lines[0].endswith("with its entries 1.000")
