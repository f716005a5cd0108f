"""experiments/gap_rules.py says, per kernel, why a file kept Inductor's default where a best-found study won."""

import subprocess
import sys


def _run(*args):
    return subprocess.run([sys.executable, "experiments/gap_rules.py", *args], capture_output=True, text=True,
                          check=True).stdout


def test_only_untouched_problems_with_a_gain_are_listed_with_each_kernels_rule():
    # Stop 43, H200 (db/bestfound36-validate-f732d95d.sqlite, docs/runs/2026-11-26-h200-s43.log): rmsnorm_bwd
    # 3479x1512 kept the default (best found 1.304x); layernorm_fwd 31x3433 kept it through a rule whose best
    # candidate did not clear the noise; scaled_softmax_fwd 2318x2626 had a rule applied; nn_rmsnorm_fwd 855x263's
    # study found nothing better than the default.
    out = _run("experiments/candidates/h200-s43.yaml", "db/bestfound36-validate-f732d95d.sqlite")
    assert out.startswith("heuristics f732d95d: ")
    assert "\nrmsnorm_bwd 3479x1512: best found 1.304x default\n  bw.red.x42336.r125 (sum): no rule covers" in out
    assert "\nlayernorm_fwd 31x3433: best found 1.198x default\n" in out
    assert "its gain does not exceed the noise" in out
    assert "scaled_softmax_fwd" not in out and "nn_rmsnorm_fwd" not in out
    assert out.index("layernorm_fwd 130x11250") < out.index("rmsnorm_bwd 3479x1512")  # largest gain first


def test_the_gain_threshold_is_an_argument():
    out = _run("experiments/candidates/h200-s43.yaml", "db/bestfound36-validate-f732d95d.sqlite", "--min-gain", "1.3")
    assert "rmsnorm_bwd 3479x1512" in out and "layernorm_fwd 31x3433" not in out
