"""Inductor's CUDA source generated on the CPU (fake H100 properties): the forced config lands, and the
probe records each kernel's reductions as the catalog states them."""

import pytest
import torch

from inductor_tune import choices, cpu_codegen, kernels
from inductor_tune.space import INDUCTOR_DEFAULT, SlotConfig, TrialConfig

INPUTS = [((8192, 4096), torch.bfloat16), ((4096,), torch.float32)]
pytestmark = pytest.mark.usefixtures("hooked")  # tests/conftest.py


def _generate(config):
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    return cpu_codegen.generate(fn, INPUTS, choices.CompilePlan(config, backward=False))


def test_default_compile_reports_its_kernel_and_forces_nothing():
    plan = _generate(INDUCTOR_DEFAULT)
    (slot,) = plan.slots
    assert (slot.xnumel, slot.rnumel, slot.mix_order, slot.default_persistent) == (8192, 4096, False, False)
    assert choices.verify_source(plan) is None
    assert "fixed_config" not in plan.sources[0] and "@triton_heuristics.reduction" in plan.sources[0]


@pytest.mark.parametrize(
    "cfg, expect",
    [
        (SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=2), "R0_BLOCK : tl.constexpr"),
        (SlotConfig(True, 4, 4), "R0_BLOCK: tl.constexpr = 4096"),
    ],
)
def test_forced_config_is_written_into_the_kernel(cfg, expect):
    key = _generate(INDUCTOR_DEFAULT).slots[0].key
    plan = _generate(TrialConfig(slots=((key, cfg),)))
    assert choices.verify_source(plan) is None
    src = plan.sources[0]
    assert f"config={cfg.fixed_config()!r}" in src and expect in src


def test_verify_source_catches_configs_that_did_not_land():
    key = _generate(INDUCTOR_DEFAULT).slots[0].key
    plan = _generate(TrialConfig(slots=((key, SlotConfig(True, 4, 4)),)))
    plan.sources = [src.replace("'XBLOCK': 4", "'XBLOCK': 8") for src in plan.sources]
    assert "not in the generated source" in choices.verify_source(plan)
    ghost = _generate(TrialConfig(slots=(("fw.red.x1.r2", SlotConfig(True, 1, 1)),)))
    assert "did not generate" in choices.verify_source(ghost)


def _probe(name: str, rows: int = 8192, cols: int = 2048):
    """The kernel slots a default compile of the catalog kernel records (what a study's probe stores)."""
    spec = kernels.get_kernel(name)
    inputs = [((rows, cols), torch.bfloat16) if n in ("x", "residual") else ((cols,), torch.float32)
              for n in spec.inputs]
    return cpu_codegen.generate(spec.build(torch.float32), inputs, choices.CompilePlan(INDUCTOR_DEFAULT, False)).slots


@pytest.mark.parametrize("name", ["rmsnorm_fwd", "layernorm_fwd", "add_rmsnorm_fwd"])
def test_the_catalogs_reductions_are_what_the_probe_records(name):
    (slot,) = _probe(name)
    assert slot.reductions == kernels.get_kernel(name).reductions != ""


def test_softmax_probes_as_max_and_sum_on_the_cpu_harness():
    """On a GPU a post-grad pattern rewrites softmax's max and sum into prepare_softmax_online (two
    online_softmax_reduce nodes), which the catalog records.  That pattern is registered by
    post_grad.lazy_init, which fake_cuda no-ops (pattern init traces tensors on the absent device), so
    the CPU harness sees the two plain reductions: a known limit of the harness, not of the catalog."""
    (slot,) = _probe("softmax_fwd")
    assert slot.reductions == "max+sum"
    assert kernels.get_kernel("softmax_fwd").reductions == "online_softmax_reduce+online_softmax_reduce"
