"""experiments/fits/changed_kernels.py names the families whose config rules differ between two heuristic files."""

import subprocess
import sys

import fast_yaml


def _run(*args):
    return subprocess.run([sys.executable, "experiments/fits/changed_kernels.py", *args], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_stop_48_refit_changes_the_families_span_round_21_probed_and_a_file_against_itself_none():
    # Stop 48, H200: the fit of fill 18 against the shipped ae00ae0e; span round 21 probed these three families.
    shipped, refit = "experiments/candidates/h200-s47.yaml", "experiments/candidates/h200-s48.yaml"
    changed = _run(shipped, refit).split(",")
    assert {"nn_layernorm_nobias_fwd", "nn_layernorm_train_fwd", "prenorm_rmsnorm_fwd"} <= set(changed)
    assert changed == sorted(changed) and "softmax_bwd" not in changed
    assert _run(refit, refit) == ""


def test_a_changed_config_or_span_counts_and_a_keep_default_rule_does_not(tmp_path):
    def rule(family, config, cols=(100, 200)):
        return {"kind": "inner_looped", "reductions": "sum", "element_size": 2, "rnumel": [256, 256],
                "xnumel": [1, 8], "rows": [1, 8], "cols": list(cols), **config,
                "evidence": {"shapes": [f"{family} 4x150 (fw.red.x4.r150 of 4x150) bf16"]}}

    configured = {"action": "config", "config": {"persistent": True, "XBLOCK": 1, "num_warps": 4}}
    other_config = {"action": "config", "config": {"persistent": True, "XBLOCK": 1, "num_warps": 8}}
    keep = {"action": "keep_default"}
    files = {
        "old": [rule("rmsnorm_fwd", configured), rule("softmax_fwd", configured), rule("layernorm_fwd", keep)],
        "new": [rule("rmsnorm_fwd", other_config), rule("softmax_fwd", configured, cols=(100, 300)),
                rule("layernorm_fwd", keep, cols=(100, 300))],
    }
    for name, rules in files.items():
        (tmp_path / f"{name}.yaml").write_text(fast_yaml.safe_dump({"rules": rules}))
    assert _run(str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")) == "rmsnorm_fwd,softmax_fwd"


def test_held_back_counts_a_rule_newly_held_back_and_only_with_the_flag(tmp_path):
    def rule(family, note=None, fitted_cols=(100, 200)):
        evidence = {"shapes": [f"{family} 4x150 bf16"], **({"note": note} if note else {})}
        return {"kind": "mix_order", "reductions": "sum@backward", "element_size": 2, "rnumel": [256, 256],
                "xnumel": [1, 8], "rows": [1, 8], "cols": list(fitted_cols), "action": "keep_default",
                "evidence": evidence}

    waiting = "fitted persistent XBLOCK=2 warps=1 split=32 NUM_STAGES=3, not shipped: no span-probe round has timed it"
    files = {
        "old": [rule("rmsnorm_bwd", waiting), rule("layernorm_bwd", fitted_cols=(300, 400))],
        # rmsnorm_bwd: held back in both, the same span and config; layernorm_bwd: newly held back;
        # nn_rmsnorm_bwd: a plain keep_default rule, new but not held back.
        "new": [rule("rmsnorm_bwd", waiting), rule("layernorm_bwd", waiting, fitted_cols=(300, 400)),
                rule("nn_rmsnorm_bwd", fitted_cols=(500, 600))],
    }
    for name, rules in files.items():
        (tmp_path / f"{name}.yaml").write_text(fast_yaml.safe_dump({"rules": rules}))
    old, new = str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")
    assert _run(old, new) == ""
    assert _run(old, new, "--held-back") == "layernorm_bwd"
    assert _run(new, old, "--held-back") == ""


def test_stop_49_refit_holds_back_the_many_row_fused_backward_rule_the_plain_list_misses():
    # Stop 49, H200: span round 22 probed the plain list; the rule fitted on the coverage10 studies at 248104..286842
    # rows stayed held back, unprobed, and only --held-back names its family.
    shipped, refit = "experiments/candidates/h200-s48b.yaml", "experiments/candidates/h200-s49.yaml"
    assert "nn_rmsnorm_bwd" not in _run(shipped, refit).split(",")
    assert "nn_rmsnorm_bwd" in _run(shipped, refit, "--held-back").split(",")
