"""A rule whose config does not fit a kernel never breaks a compile (simulated on the CPU; the GPU test
with a real out-of-shared-memory rule is tests/test_gpu_heuristics.py)."""

from __future__ import annotations

import logging
import types

import pytest

from inductor_tune import fallback, torch_rules

RULE = torch_rules.Rule("mix_order", 2, (4096, 8192), (8192, 32768), True, XBLOCK=2, num_warps=8, RSPLIT_SIZE=16,
                        NUM_STAGES=3, reductions="sum@backward", envelopes=("E1",))
OTHER = torch_rules.Rule("inner_looped", 2, (4096, 4096), (8192, 32768), False, XBLOCK=1, num_warps=8, R0_BLOCK=1024,
                         reductions="sum", envelopes=("E2",))
TABLE = torch_rules.Table("GPU", 90, 132, (RULE, OTHER))
OOR = ("No valid triton configs. OutOfMemoryError: out of resource: {name} Required: 278624 Hardware limit:232448")


@pytest.fixture(autouse=True)
def fresh():
    torch_rules._UNFIT.clear()
    yield
    torch_rules._UNFIT.clear()


class _Compile:
    """Stands in for Inductor's fx_codegen_and_compile: applies the rules that still match, "names" a
    kernel for each, and fails while a rule listed in ``breaks`` is applied."""

    def __init__(self, breaks=(RULE,), error=OOR):
        self.breaks, self.error, self.calls, self.graphs = breaks, error, 0, []

    def __call__(self, gm, example_inputs, *args, **kwargs):
        self.calls += 1
        self.graphs.append(gm)
        scheduling = fallback.guard_define_kernel(lambda self_, src, schedule, kernel: kernel.name)
        applied = []
        for rule, envelope, name in ((RULE, "E1", "triton_unk_fused_mix_7"), (OTHER, "E2", "triton_unk_fused_red_3")):
            if torch_rules.lookup(rule.kind, 2, rule.rnumel[0], rule.xnumel[0], TABLE, rule.reductions, envelope):
                fixed = object()
                fallback.record(rule, envelope, fixed)
                scheduling(None, "src", [], types.SimpleNamespace(fixed_config=fixed, name=name))
                applied.append((rule, name))
        for rule, name in applied:
            if rule in self.breaks:
                raise RuntimeError(self.error.format(name=name))
        return f"compiled with {len(applied)} rule(s)"


def test_a_failing_rule_is_dropped_for_that_kernel_and_the_compile_retried_with_one_warning(caplog):
    inner = _Compile()
    guarded = fallback.guard_compile(inner)
    with caplog.at_level(logging.WARNING, logger="inductor_tune"):
        assert guarded({"graph": 1}, []) == "compiled with 1 rule(s)"  # OTHER still applies
    assert inner.calls == 2
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "mix_order sum@backward" in warning and "triton_unk_fused_mix_7" in warning and "out of resource" in warning
    # The retry starts from a copy of the graph as it came in (post-grad passes rewrite it in place).
    assert inner.graphs[1] == inner.graphs[0] and inner.graphs[1] is not inner.graphs[0]
    # Later compiles in this process skip the rule for kernels of that envelope only.
    assert torch_rules.lookup("mix_order", 2, 4096, 8192, TABLE, "sum@backward", "E1") is None
    assert torch_rules.lookup("inner_looped", 2, 4096, 8192, TABLE, "sum", "E2") is OTHER


def test_errors_the_rules_cannot_explain_are_raised_unchanged_and_disable_nothing():
    inner = _Compile(error="ImportError: cannot import name '_cuda_getCurrentRawStream'")
    with pytest.raises(RuntimeError, match="_cuda_getCurrentRawStream"):
        fallback.guard_compile(inner)({}, [])
    assert inner.calls == 1 and not torch_rules._UNFIT


def test_an_error_in_the_code_generation_of_a_ruled_kernel_drops_that_rule_alone(caplog):
    """Inductor's code generation can fail on a forced config before the kernel is defined (an H200: a
    mix-order config with XBLOCK 1, "list indices must be integers or slices, not NoneType")."""
    calls = []

    def compile_once(gm, example_inputs):
        calls.append(gm)
        scheduling = fallback.guard_define_kernel(lambda self_, src, schedule, kernel: kernel.name)
        if torch_rules.lookup("inner_looped", 2, 4096, 8192, TABLE, "sum", "E2"):
            fixed = object()
            fallback.record(OTHER, "E2", fixed)
            scheduling(None, "src", [], types.SimpleNamespace(fixed_config=fixed, name="triton_red_fused_3"))
        if torch_rules.lookup("mix_order", 2, 4096, 8192, TABLE, "sum@backward", "E1"):
            fallback.record(RULE, "E1", object())
            raise TypeError("list indices must be integers or slices, not NoneType")
        return "compiled"

    with caplog.at_level(logging.WARNING, logger="inductor_tune"):
        assert fallback.guard_compile(compile_once)({}, []) == "compiled"
    assert len(calls) == 2 and len(torch_rules._UNFIT) == 1
    assert torch_rules.lookup("inner_looped", 2, 4096, 8192, TABLE, "sum", "E2") is OTHER
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "mix_order sum@backward" in warning and "list indices" in warning


def test_a_kernel_failure_naming_no_kernel_makes_every_rule_of_the_graph_step_back():
    inner = _Compile(breaks=(RULE, OTHER), error="No valid triton configs. PTXASError: ptxas failed")
    assert fallback.guard_compile(inner)({}, []) == "compiled with 0 rule(s)"
    assert inner.calls == 2 and len(torch_rules._UNFIT) == 2


def test_a_compile_without_rules_is_not_retried():
    def failing(gm, example_inputs):
        raise RuntimeError(OOR.format(name="triton_red_fused_0"))

    with pytest.raises(RuntimeError, match="No valid triton configs"):
        fallback.guard_compile(failing)({}, [])


def test_keep_fallback_carries_inductors_configs_and_they_are_used_once(caplog):
    pytest.importorskip("triton")
    from torch._inductor.runtime.triton_compat import Config

    meta = {"distilled_rule": torch_rules.describe_rule(RULE)}
    own = [Config({"XBLOCK": 1, "R0_BLOCK": 2048}, num_warps=8, num_stages=1)]
    assert torch_rules.keep_fallback("rule-config", own, meta) == ["rule-config"]
    autotuner = types.SimpleNamespace(inductor_meta=meta, fn=types.SimpleNamespace(__name__="triton_red_fused_0"))
    with caplog.at_level(logging.WARNING):
        (config,) = torch_rules.fallback_configs(autotuner, RuntimeError("out of resource: shared memory"))
    assert (config.kwargs, config.num_warps, config.num_stages) == ({"XBLOCK": 1, "R0_BLOCK": 2048}, 8, 1)
    assert "mix_order sum@backward" in caplog.text and "triton_red_fused_0" in caplog.text
    assert torch_rules.fallback_configs(autotuner, RuntimeError("again")) is None  # once: no loop
