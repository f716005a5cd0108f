"""A rule that applied yet left Inductor's own program cannot regress (stop 62), from the record of held-out set 55
that it concerns: `rmsnorm_bwd` 36143x418 on an H200, where a split-autotune entry timed splits 32 and 64 and kept
Inductor's 32, and the rules' compile ran 2 % slower than the default's in every round."""

import copy
import json

import pytest

from inductor_tune import gate, validate
from inductor_tune.store import Store

CEILING = 4247.4


@pytest.fixture(scope="module")
def kept_split():
    records = [r for r in Store("sqlite:///db/heldout55.sqlite", create=False).validations()
               if (r.kernel, r.rows, r.cols) == ("rmsnorm_bwd", 36143, 418)]
    assert len(records) == 1 and records[0].heuristics_digest == "aa79734db32400ea"
    return json.loads(records[0].result_json)


def _summary(data):
    return validate.summarize_problem("rmsnorm_bwd", "36143x418", "bf16", data, CEILING)


def _final_kernel(data):
    """The rules' compile's fused backward kernel that the program runs (not one only timed while compiling)."""
    (kernel,) = [c for c in data["heuristic_choice"] if "sum_0" in c["kernel"]]
    return kernel


def test_the_recorded_kernels_are_the_defaults_plus_two_timed_only_while_compiling(kept_split):
    timed_only = [c for c in kept_split["heuristic_choice"] if c["kernel"] == validate.TIMED_WHILE_COMPILING]
    assert sorted(c["config"]["RSPLIT_SIZE"] for c in timed_only) == [32, 64]
    assert validate.kernels_changed(kept_split["default_choice"], kept_split["heuristic_choice"]) == 0
    assert validate.same_program(kept_split)


def test_a_kept_split_is_touched_but_cannot_regress(kept_split):
    row = _summary(kept_split)
    assert row.heuristics_applied and row.same_program and not row.regressed
    assert row.variant(validate.HEURISTICS).ratio_to_default == pytest.approx(0.980, abs=5e-4)
    assert "yes (Inductor's program)" in validate.render([row])


def test_the_same_timings_with_another_split_in_the_program_regress(kept_split):
    moved = copy.deepcopy(kept_split)
    _final_kernel(moved)["config"]["RSPLIT_SIZE"] = 64
    row = _summary(moved)
    assert not validate.same_program(moved) and row.heuristics_applied and row.regressed


@pytest.mark.parametrize("change", ["extra kernel", "missing kernel", "no default kernels", "no rules' kernels",
                                    "other size hints", "every kernel unnamed"])
def test_any_other_difference_is_not_inductors_program(kept_split, change):
    data = copy.deepcopy(kept_split)
    rules, default = data["heuristic_choice"], data["default_choice"]
    if change == "extra kernel":
        rules.append({**_final_kernel(data), "kernel": "triton_per_fused_mul_sum_7"})
    elif change == "missing kernel":
        rules.remove(_final_kernel(data))
    elif change == "no default kernels":
        data["default_choice"] = [c for c in default if c["kernel"] == validate.TIMED_WHILE_COMPILING]
    elif change == "no rules' kernels":
        del data["heuristic_choice"]
    elif change == "other size hints":
        _final_kernel(data)["size_hints"] = {"r0_": 1024, "x": 65536}
    else:  # as with Inductor's unique_kernel_names off: nothing tells the program's kernels apart
        for choice in (rules, default):
            for kernel in choice:
                kernel["kernel"] = validate.TIMED_WHILE_COMPILING
    assert not validate.same_program(data)
    assert _summary(data).regressed


def test_the_gate_counts_inductors_program_apart_and_passes_on_it(kept_split):
    faster = copy.deepcopy(kept_split)
    faster["times"][validate.HEURISTICS] = [t / 1.2 for t in faster["times"][validate.DEFAULT]]
    _final_kernel(faster)["config"]["XBLOCK"] = 8
    rows = [_summary(kept_split), validate.summarize_problem("rmsnorm_bwd", "40000x418", "bf16", faster, CEILING)]
    summary = gate.summarize_gate(rows)
    assert summary.passed and summary.touched == 2 and summary.same_program == 1
    assert summary.worst_same_program == pytest.approx(0.980, abs=5e-4)
    assert "(1 of them compiled to Inductor's own kernels and launch configs, which cannot regress: worst 0.980)" \
        in summary.render()
    assert "of them compiled" not in gate.summarize_gate(rows[1:]).render()
