"""GPU test of an unsplit rule keyed on the reduction type (H200): ``pytest -m gpu``; skipped without CUDA."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from gpu_fixtures import reduction_kernels

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

HEURISTICS = "heuristics/h200.yaml"


def test_an_online_softmax_rule_keeps_the_softmax_whole_and_leaves_a_norm_of_its_size_split():
    """At 100x16000 Inductor splits both a softmax forward (online_softmax_reduce) and an RMSNorm forward (sum);
    a rule of the softmax's type keeps the softmax in one kernel, with the same numbers, and the norm split."""
    import inductor_tune
    from inductor_tune import heuristics
    from inductor_tune.runtime.rules import UnsplitSpec

    heur = heuristics.load(HEURISTICS)
    if torch.cuda.get_device_name() != heur.gpu.name:
        pytest.skip(f"{HEURISTICS} is for {heur.gpu.name}")
    rule = dataclasses.replace(heur, rules=(), multi_kernel=(), unsplit=(
        UnsplitSpec((64, 127), (8193, 16384), reduction_types=("online_softmax_reduce",)),))
    x = torch.randn(100, 16000, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(16000, device="cuda", dtype=torch.bfloat16)

    def softmax(x):
        return torch.softmax(x.float(), dim=-1).to(x.dtype)

    def norm(x, w):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-6)

    torch._dynamo.reset()
    split_softmax = reduction_kernels(torch.compile(softmax), x)
    split_norm = reduction_kernels(torch.compile(norm), x, w)
    with inductor_tune.install(rule) as handle:
        assert handle.active, handle.reason
        torch._dynamo.reset()
        mark = len(heuristics.applied_rules())
        kept = torch.compile(softmax)
        assert reduction_kernels(kept, x) == 1 < split_softmax
        assert [line for line in heuristics.applied_rules()[mark:] if line.startswith("unsplit")]
        torch.testing.assert_close(kept(x), softmax(x), atol=2e-2, rtol=2e-2)
        torch._dynamo.reset()
        assert reduction_kernels(torch.compile(norm), x, w) == split_norm > 1
    torch._dynamo.reset()
