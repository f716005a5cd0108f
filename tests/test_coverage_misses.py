"""experiments/coverage_misses.py names the first condition that turned every rule away from a kernel."""

import dataclasses
import os
import subprocess
import sys

import pytest

from inductor_tune import heuristics
from inductor_tune.runtime.launch import KernelSlot
from inductor_tune.runtime.rules import RuleSpec, SlotConfig, UnsplitSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import coverage_misses  # noqa: E402

ENVELOPE = "row_reads=1,row_writes=1,other_reads=1,other_writes=1,row_bytes=4,ops=load:1+mul:1+to_dtype:1"
LOOPED = SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=2)
# One looped rule: rows 600..1000 (pow2 1024), N 5000..8000 (pow2 8192), odd N only 5001..7001.
RULE = RuleSpec("inner_looped", 2, (8192, 8192), (1024, 1024), LOOPED, reductions="sum", envelopes=(ENVELOPE,),
                rows=(600, 1000),
                cols=(5000, 8000), aligned_cols=((2, 0, 5000, 8000), (2, 1, 5001, 7001)))


def _heur(*rules, unsplit=()):
    shipped = heuristics.load(os.path.join(ROOT, "heuristics", "h200.yaml"))
    return dataclasses.replace(shipped, rules=rules, unsplit=unsplit, mix_autotune=())


def _slot(rows, cols, envelope=ENVELOPE, reductions="sum"):
    return KernelSlot("fw.red", False, rows, cols, False, False, reductions, envelope)


def _why(heur, slot, rows, cols, hint="INNER", dtype="bf16"):
    return coverage_misses.miss_reason(heur, slot, hint, dtype, rows, cols)


@pytest.mark.parametrize("rows, cols, envelope, why", [
    (800, 6000, ENVELOPE, "a config rule matched"),
    (800, 6000, ENVELOPE.replace("mul:1", "mul:2"), "no rule measured on this kernel"),
    (800, 6000, "", "no rule measured on this kernel"),  # an envelope not recorded matches no rule that has some
    (3000, 6000, ENVELOPE, "this kernel's size group not studied"),
    (800, 3000, ENVELOPE, "this kernel's size group not studied"),  # a looped kernel of N 4096 (pow2)
    (520, 6000, ENVELOPE, "outside the measured rows or N"),  # pow2 1024, below the measured 600
    (800, 8100, ENVELOPE, "outside the measured rows or N"),
    (800, 7501, ENVELOPE, "outside N's alignment class span or the odd hull"),
])
def test_each_condition_alone_turns_the_rule_away(rows, cols, envelope, why):
    assert _why(_heur(RULE), _slot(rows, cols, envelope), rows, cols) == why


def test_the_reductions_element_size_and_hint_count_too():
    heur = _heur(RULE)
    assert _why(heur, _slot(800, 6000, reductions="max"), 800, 6000) == "no rule measured on this kernel"
    assert _why(heur, _slot(800, 6000), 800, 6000, dtype="fp32") == "this kernel's size group not studied"
    assert _why(heur, _slot(800, 6000), 800, 6000, hint="OUTER") == "this kernel's size group not studied"
    assert _why(heur, _slot(800, 6000), 800, 6000, hint=None) == "Inductor's reduction hint not recorded"


def test_a_rule_that_keeps_the_default_is_told_apart_from_a_config():
    keep = dataclasses.replace(RULE, config=None)
    assert _why(_heur(keep), _slot(800, 6000), 800, 6000) == "evidence kept Inductor's default"
    # The first rule that matches decides, as the runtime's lookup does.
    assert _why(_heur(keep, RULE), _slot(800, 6000), 800, 6000) == "evidence kept Inductor's default"
    assert _why(_heur(RULE, keep), _slot(800, 6000), 800, 6000) == "a config rule matched"


def test_a_split_problem_is_judged_by_the_unsplit_spans():
    unsplit = (UnsplitSpec(rows=(64, 124), cols=(8717, 16192)),)
    # Inductor split 98x33678 into 490 x 6736 and 98 x 5 (db/bestfound47-validate-0608dd76.sqlite).
    heur = _heur(RULE, unsplit=unsplit)
    assert _why(heur, _slot(490, 6736), 98, 33678) == "split by Inductor, outside the unsplit spans"
    assert _why(heur, _slot(500, 2000), 100, 10000) == "split by Inductor, inside the unsplit spans"
    # Not split (the kernel has the problem's sizes): the launch rules decide.
    assert _why(heur, _slot(100, 10000), 100, 10000) == "this kernel's size group not studied"


def test_set_47_reads_as_validate_printed_it():
    # docs/runs/2026-11-28-h200-s55-a.log: 12 problems, 0.928 of the best found over both suites (bestfound_table),
    # scaled_softmax_fwd 98x33678 the worst at 0.482 and split by Inductor (as layernorm_fwd 1x23657 at 1.003), and
    # the rules applied at softmax_fwd 15504x6170 alone.
    out = subprocess.run([sys.executable, "experiments/coverage_misses.py", "experiments/candidates/h200-s54.yaml",
                          "db/bestfound47-validate-0608dd76.sqlite", "db/bestfound47-large-validate-0608dd76.sqlite"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.startswith("12 problems, rules / best found geomean 0.928")
    # Inductor's two compiles launched different configs at scaled_softmax_fwd 98x33678 (bestfound_table: "differ").
    assert ("| split by Inductor, outside the unsplit spans | 2 | 0.695 | 81% | 1 (81% of the gap) | "
            "scaled_softmax_fwd 98x33678 0.482 |") in out
    assert "| rules applied | 1 | 0.936 | 7% | 0 (0% of the gap) | softmax_fwd 15504x6170 0.936 |" in out
