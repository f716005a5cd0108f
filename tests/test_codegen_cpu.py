"""Inductor's CUDA source generated on the CPU (fake H100 properties): the forced config lands."""

import pytest
import torch

from inductor_tune import choices, cpu_codegen, kernels
from inductor_tune.space import INDUCTOR_DEFAULT, SlotConfig, TrialConfig

INPUTS = [((8192, 4096), torch.bfloat16), ((4096,), torch.float32)]


@pytest.fixture(scope="module", autouse=True)
def hooked():
    import torch._inductor.config as inductor_config

    old = inductor_config.inductor_choices_class
    choices.install()
    yield
    inductor_config.inductor_choices_class = old


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
