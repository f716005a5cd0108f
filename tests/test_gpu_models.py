"""GPU tests of `validate --models` (H100/H200): ``pytest -m gpu``; skipped without CUDA.

Each runs the command on the smallest Llama stack, whose fused RMSNorm backward kernel is where an
installed rule once ran out of shared memory."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

MODEL = "llama-2048"


def _validate(heuristics: str, storage) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "inductor_tune", "validate", str(heuristics), "--models", MODEL, "--rounds", "3",
         "--storage", str(storage), "--no-progress"],
        capture_output=True, text=True, timeout=3600,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: a regression or a failure, reported as such
    from inductor_tune.models import CATALOG
    from inductor_tune.store import Store

    (record,) = Store(f"sqlite:///{storage}", create=False).validations()
    spec = CATALOG[MODEL]
    assert (record.kernel, record.rows, record.cols, record.dtype) == (f"model:{MODEL}", spec.tokens, spec.hidden, "bf16")
    data = json.loads(record.result_json)
    assert MODEL in proc.stdout and data["summary"]["name"] == MODEL
    return proc, data


def _status_line(proc) -> str:
    return next(line for line in proc.stdout.splitlines() if line.startswith(MODEL))


def test_shipped_rules_on_a_llama_training_step(tmp_path, shipped_heuristics):
    proc, data = _validate(shipped_heuristics, tmp_path / "v.sqlite")
    wanted = "transformers" if importlib.util.find_spec("transformers") else "plain"
    assert data["implementation"] == wanted, data.get("failure")
    summary = data["summary"]
    if data["failure"] is not None:
        assert proc.returncode == 1 and "FAILED" in _status_line(proc), proc.stdout
        pytest.fail(f"{shipped_heuristics} fails on {MODEL}: {summary['failure_stage']}: {summary['failure']}")
    assert [len(data["times"][v]) for v in ("inductor_default", "heuristics", "inductor_default_again")] == [3, 3, 3]
    assert summary["again_ratio"] > 0 and summary["kernels_changed_again"] is not None
    # The stack's norms compile to Inductor reduction kernels, and the profile found them.
    assert 0 < summary["reduction_share_default"] < 1 and 0 < summary["reduction_share_rules"] < 1
    assert data["profiles"]["inductor_default"]["reduction_kernels"] > 0
    assert proc.returncode == (1 if summary["regressed"] else 0), proc.stderr


def test_an_oversized_mix_order_rule_is_recorded_not_crashed(tmp_path):
    """A mix-order rule for the RMSNorm backward at the model's width with the largest tile and the deepest
    pipeline: it either runs (then it changed the model's kernel) or fails to compile, recorded in one line."""
    from inductor_tune import heuristics
    from inductor_tune.distill import X_UNBOUNDED
    from inductor_tune.space import SlotConfig

    props = torch.cuda.get_device_properties(0)
    gpu = heuristics.GpuSpec(props.name, "test", f"{props.major}.{props.minor}", props.multi_processor_count,
                             str(torch.__version__), "any")
    cfg = SlotConfig(persistent=True, XBLOCK=32, num_warps=32, RSPLIT_SIZE=32, NUM_STAGES=3)
    rule = heuristics.RuleSpec("mix_order", 2, (2048, 2048), (1, X_UNBOUNDED), cfg)
    path = tmp_path / "oversized.yaml"
    heuristics.dump(heuristics.Heuristics(gpu, (rule,)), str(path))
    proc, data = _validate(path, tmp_path / "v.sqlite")
    line = _status_line(proc)
    if data["failure"] is None:
        assert data["kernels_changed"] >= 1, "the rule did not reach the model's fused RMSNorm backward kernel"
        assert proc.returncode == (1 if data["summary"]["regressed"] else 0), proc.stderr
    else:
        assert data["failure"]["stage"] == "rules compile", data["failure"]
        assert "\n" not in data["failure"]["reason"] and line.endswith(f"COMPILE FAILED: {data['failure']['reason']}")
        assert proc.returncode == 1 and MODEL in proc.stderr
