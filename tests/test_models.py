"""`validate --models` on the CPU: the catalog, the plain layer stacks, the per-variant compiles, the
summary, the records and the command line (the GPU run is tests/test_gpu_models.py)."""

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest
import torch

from inductor_tune import model_blocks, models
from inductor_tune.gpu import GpuIdentity
from inductor_tune.models import DEFAULT, DEFAULT_AGAIN, RULES, ModelSpec
from inductor_tune.store import Store
from inductor_tune.validate import NOISE_FLOOR

TINY = {
    "llama": ModelSpec("tiny-llama", "llama", 64, 160, 4, 2, batch=2, seq=16),
    "gpt2": ModelSpec("tiny-gpt2", "gpt2", 64, 256, 4, 4, batch=2, seq=16),
}


def test_catalog_names_and_configs():
    assert list(models.CATALOG) == ["llama-2048", "llama-4096", "llama-8192", "gpt2-1024", "gpt2-2048",
                                    "llama-2048-t2048", "gpt2-1024-t2048", "gpt2-768-t400", "llama-5120-t32768",
                                    "gpt2-768-t32768", "gpt2-1280-t32768"]
    assert [models.CATALOG[n].tokens for n in ("llama-2048-t2048", "gpt2-1024-t2048", "gpt2-768-t400",
                                               "llama-5120-t32768", "gpt2-768-t32768", "gpt2-1280-t32768")] == \
        [2048, 2048, 400, 32768, 32768, 32768]
    llama = models.CATALOG["llama-4096"]
    assert (llama.family, llama.hidden, llama.intermediate, llama.heads, llama.kv_heads, llama.layers) == \
        ("llama", 4096, 14336, 32, 8, 2)
    for spec in models.CATALOG.values():
        assert spec.tokens == spec.batch * spec.seq and spec.layers == 2 and spec.hidden % spec.heads == 0
        if spec.family == "llama":
            assert spec.heads == spec.hidden // 128 and spec.kv_heads == spec.heads // 4
            assert spec.intermediate % 256 == 0 and abs(spec.intermediate - 3.5 * spec.hidden) <= 128
        else:
            assert spec.family == "gpt2" and spec.intermediate == 4 * spec.hidden and spec.kv_heads == spec.heads
    assert [models.CATALOG[n].intermediate for n in ("llama-2048", "llama-8192")] == [7168, 28672]
    assert models.llama_spec(4096, batch=2, seq=512).tokens == 1024


def test_model_names_are_parsed_and_unknown_ones_refused():
    assert models.parse_names("all") == list(models.CATALOG)
    assert models.parse_names(" gpt2-1024,llama-2048,gpt2-1024 ") == ["gpt2-1024", "llama-2048"]
    for bad in ("llama-3", "llama-2048,gpt-9", ","):
        with pytest.raises(models.ModelsError, match="unknown model"):
            models.parse_names(bad)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_plain_stacks_train_on_the_cpu(family):
    spec = TINY[family]
    model, impl = model_blocks.build(spec, "cpu", torch.float32, impl="plain", seed=3)
    assert impl == "plain"
    x = torch.randn(spec.batch, spec.seq, spec.hidden, requires_grad=True)
    out = model(x)
    assert out.shape == x.shape
    out.float().pow(2).mean().backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads)
    assert x.grad is not None and torch.isfinite(x.grad).all()
    # Causal attention: the last token does not reach the earlier ones.
    later = x.detach().clone()
    later[:, -1] += torch.randn(spec.hidden)  # not a constant: LayerNorm removes those
    with torch.no_grad():
        torch.testing.assert_close(model(later)[:, :-1], model(x)[:, :-1])
        assert not torch.allclose(model(later)[:, -1], model(x)[:, -1])
    again, _ = model_blocks.build(spec, "cpu", torch.float32, impl="plain", seed=3)
    other, _ = model_blocks.build(spec, "cpu", torch.float32, impl="plain", seed=4)
    with torch.no_grad():
        torch.testing.assert_close(again(x), model(x))
        assert not torch.allclose(other(x), model(x))


def test_plain_llama_follows_the_llama_pattern(monkeypatch):
    spec = TINY["llama"]
    monkeypatch.setattr(model_blocks, "transformers_available", lambda: False)
    model, impl = model_blocks.build(spec, "cpu", torch.bfloat16, impl="auto")
    assert impl == "plain"
    layer = model.layers[0]
    head_dim = spec.hidden // spec.heads
    assert layer.self_attn.k_proj.out_features == spec.kv_heads * head_dim  # grouped-query attention
    assert layer.self_attn.q_proj.out_features == spec.heads * head_dim
    assert layer.mlp.gate_proj.out_features == spec.intermediate and layer.mlp.gate_proj.bias is None
    assert layer.self_attn.q_proj.weight.dtype == torch.bfloat16
    assert model.rotary.inv_freq.dtype == torch.float32  # as LlamaModel keeps it
    # RMSNorm in float32, cast back before the weight: LlamaRMSNorm's rounding.
    norm = model.norm
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, spec.hidden))
    x = torch.randn(4, spec.hidden, dtype=torch.bfloat16)
    h = x.float()
    want = norm.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + model_blocks.RMS_EPS)).to(torch.bfloat16)
    got = norm(x)
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


def test_the_plain_llama_computes_what_transformers_layers_compute():
    """Where transformers is importable (the GPU host): the fallback is the same model, weight for weight."""
    pytest.importorskip("transformers")
    spec = ModelSpec("tiny-llama", "llama", 256, 640, 2, 1, batch=2, seq=16)  # head dim 128, two heads per KV head
    hf, impl = model_blocks.build(spec, "cpu", torch.float32, impl="transformers", seed=1)
    assert impl == "transformers" and type(hf.layers[0]).__name__ == "LlamaDecoderLayer"
    plain, _ = model_blocks.build(spec, "cpu", torch.float32, impl="plain", seed=2)
    plain.load_state_dict(hf.state_dict(), strict=True)
    x = torch.randn(spec.batch, spec.seq, spec.hidden)
    with torch.no_grad():
        torch.testing.assert_close(plain(x), hf(x))
    assert model_blocks.build(spec, "cpu", torch.float32, seed=1)[1] == "transformers"  # auto prefers it


def test_each_variant_compiles_its_own_code_object():
    from torch._dynamo.testing import CompileCounter

    a, b = models.variant_function(DEFAULT), models.variant_function(RULES)
    assert a.__code__ is not b.__code__ and a.__name__ != b.__name__
    model, _ = model_blocks.build(TINY["llama"], "cpu", torch.float32, impl="plain")
    x = torch.randn(2, 16, 64)
    torch.testing.assert_close(a(model, x), models._forward_loss(model, x))
    import copy

    twin = copy.deepcopy(model)

    def compiled_frames(first, second):
        torch._dynamo.reset()
        counter = CompileCounter()
        torch.compile(first, backend=counter, fullgraph=True)(model, x)
        torch.compile(second, backend=counter, fullgraph=True)(twin, x)
        return counter.frame_count

    # The pitfall: two compiles of one function share Dynamo's cache, even on separate model copies.
    assert compiled_frames(models._forward_loss, models._forward_loss) == 1
    assert compiled_frames(a, b) == 2
    torch._dynamo.reset()


class _Recorder:
    """An install() stand-in and an AOT backend that note whether the rules were installed at each
    compile; ``fail`` makes the compile of ("fw" | "bw", installed) raise."""

    def __init__(self, fail=None, active=True):
        self.installed, self.seen, self.fail, self.active = False, [], fail, active

    def install(self, heur):
        recorder = self

        class Handle:
            active, reason = recorder.active, "" if recorder.active else "not installed: another GPU"

            def __enter__(self):
                recorder.installed = True
                return self

            def __exit__(self, *exc):
                recorder.installed = False

        return Handle()

    def backend(self):
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd

        def compiler(kind):
            def compile_graph(gm, example_inputs):
                self.seen.append((kind, self.installed))
                if self.fail == (kind, self.installed):
                    raise RuntimeError("out of resource: shared memory, Required: 262144,\nHardware limit: 232448")
                return make_boxed_func(gm.forward)
            return compile_graph

        return aot_autograd(fw_compiler=compiler("fw"), bw_compiler=compiler("bw"))


def _measure(recorder, rounds=2):
    torch._dynamo.reset()
    return models.measure_model(TINY["llama"], None, rounds=rounds, steps=1, device="cpu", dtype="fp32",
                                backend=recorder.backend(), impl="plain", install=recorder.install)


def test_both_graphs_of_each_variant_compile_under_its_install_state():
    recorder, stages = _Recorder(), []
    torch._dynamo.reset()
    data = models.measure_model(TINY["llama"], None, rounds=3, steps=1, device="cpu", dtype="fp32",
                                backend=recorder.backend(), impl="plain", install=recorder.install,
                                on_stage=stages.append)
    assert stages == ["default compile", "rules compile", "default second compile", "timing"]
    # Forward and the lazily compiled backward: the default without the rules, then each with them, then the
    # default's second compile without them (the rules were given back).
    assert recorder.seen == [("fw", False), ("bw", False), ("fw", True), ("bw", True), ("fw", False), ("bw", False)]
    assert data["failure"] is None and data["implementation"] == "plain"
    assert [len(data["times"][v]) for v in (DEFAULT, RULES, DEFAULT_AGAIN)] == [3, 3, 3]
    assert set(data["profiles"]) == {DEFAULT, RULES}
    result = models.summarize(data)
    # Timed on a busy CPU, so either verdict may come out; no failure may.
    assert result.failure_stage is None and result.status in ("ok", "REGRESSED")
    assert result.default_rounds == tuple(data["times"][DEFAULT])
    # Each variant's compile and first steps are timed, and the table shows both.
    assert (result.compile_s_default, result.compile_s_rules) == (data["compile_s"][DEFAULT], data["compile_s"][RULES])
    assert all(s > 0 for s in data["compile_s"].values())
    assert f"{result.compile_s_default:.0f} -> {result.compile_s_rules:.0f}" in models.render([result])


@pytest.mark.parametrize("fail, stage", [(("bw", True), "rules compile"), (("fw", False), "default compile")])
def test_a_compile_failure_is_recorded_in_one_line(fail, stage):
    data = _measure(_Recorder(fail=fail))
    assert data["failure"]["stage"] == stage and "times" not in data
    reason = data["failure"]["reason"]
    assert "\n" not in reason and "out of resource: shared memory" in reason and "Hardware limit" in reason
    assert "Traceback" in data["failure"]["detail"]
    result = models.summarize(data)
    assert result.status == f"COMPILE FAILED: {reason}" and not result.regressed and result.ratio is None


def test_the_kernel_scan_survives_dead_weak_proxies():
    """gc hands out weakref proxies whose object died; asking one for its class raises ReferenceError."""
    import weakref

    from inductor_tune import evaluate

    class Gone:
        pass

    obj = Gone()
    proxy = weakref.proxy(obj)
    del obj
    assert json.loads(evaluate.inductor_choices_made(set())) == [] and evaluate._autotuner_ids() == set()
    del proxy


@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("c++")), reason="Inductor's CPU backend needs a C++ compiler")
def test_both_variants_compile_with_inductor_on_the_cpu():
    recorder = _Recorder()
    torch._dynamo.reset()
    data = models.measure_model(TINY["gpt2"], None, rounds=2, steps=1, device="cpu", dtype="fp32", impl="plain",
                                install=recorder.install)
    assert data["failure"] is None, data["failure"]
    # No Triton kernels on the CPU: nothing to compare, nothing changed.
    assert data["choices"] == {DEFAULT: [], RULES: [], DEFAULT_AGAIN: []}
    assert data["kernels_changed"] == data["kernels_changed_again"] == 0
    assert models.summarize(data).status in ("ok", "REGRESSED")


def test_the_reason_is_the_innermost_error_on_one_line():
    from torch._dynamo.exc import BackendCompilerFailed
    from torch._inductor.exc import InductorError

    smem = RuntimeError("No valid triton configs. OutOfResources: out of resource: shared memory,\n"
                        "Required: 393216, Hardware limit: 232448.")
    wrapped = BackendCompilerFailed(lambda: None, InductorError(smem, None), None)
    wrapped.args = (str(wrapped) + "\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace " + "x" * 400,)
    assert models.one_line_reason(wrapped) == (
        "RuntimeError: No valid triton configs. OutOfResources: out of resource: shared memory, "
        "Required: 393216, Hardware limit: 232448.")
    try:
        try:
            raise smem
        except RuntimeError as exc:
            raise ValueError("while compiling the backward") from exc
    except ValueError as exc:
        assert models.one_line_reason(exc).startswith("RuntimeError: No valid triton configs.")
    assert len(models.one_line_reason(RuntimeError("y" * 1000))) == 300
    hinted = RuntimeError("boom\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace")
    assert models.one_line_reason(hinted) == "RuntimeError: boom"


def test_rules_that_do_not_install_are_a_setup_failure():
    data = _measure(_Recorder(active=False))
    assert data["failure"]["stage"] == "setup" and "another GPU" in data["failure"]["reason"]
    assert models.summarize(data).status.startswith("FAILED (setup)")


def _data(base, rules, **extra):
    spec = models.CATALOG["llama-2048"]
    return {"model": spec.name, "spec": {**spec.__dict__}, "tokens": spec.tokens, "implementation": "plain",
            "failure": None, "times": {DEFAULT: base, RULES: rules}, **extra}


@pytest.mark.parametrize("base, rules, regressed", [
    ([10.0, 10.1, 10.05], [11.0, 11.1, 11.05], True),  # slower in every round, far beyond the noise
    ([10.0, 10.5, 10.2], [10.3, 10.6, 10.4], False),  # slower, but within the default's own spread
    ([10.0, 10.01, 10.02], [10.1, 10.11, 10.12], False),  # slower by 1 %: inside the noise floor
    ([10.0, 10.0, 10.0], [11.0, 9.9, 11.0], False),  # faster in one round
    ([10.0, 10.1, 10.05], [9.0, 9.1, 9.05], False),  # faster
])
def test_regressed_means_slower_in_every_round_and_beyond_noise(base, rules, regressed):
    r = models.summarize(_data(base, rules))
    assert r.regressed is regressed and r.status == ("REGRESSED" if regressed else "ok")
    ratios = [d / t for d, t in zip(base, rules)]
    assert r.ratio == pytest.approx(sorted(base)[1] / sorted(rules)[1])
    assert (r.ratio_low, r.ratio_high) == (pytest.approx(min(ratios)), pytest.approx(max(ratios)))
    assert r.noise == pytest.approx((max(base) - min(base)) / sorted(base)[1])
    assert NOISE_FLOOR == pytest.approx(0.015)


@pytest.mark.parametrize("rules, again, regressed", [
    ([11.0, 11.1, 11.05], [11.2, 11.3, 11.25], False),  # slower than the first compile, not than the second
    ([11.0, 11.1, 11.05], [10.0, 10.1, 10.05], True),  # slower than both compiles of the default
    ([11.0, 11.1, 11.05], [10.6, 11.3, 10.9], False),  # the second compile is faster in one round
])
def test_a_step_regresses_only_where_it_is_slower_than_each_compile_of_the_default(rules, again, regressed):
    data = _data([10.0, 10.1, 10.05], rules)
    data["times"][DEFAULT_AGAIN] = again
    r = models.summarize({**data, "kernels_changed_again": 2})
    assert r.regressed is regressed and r.status == ("REGRESSED" if regressed else "ok")
    assert r.default_again_ms == pytest.approx(sorted(again)[1])
    assert r.again_ratio == pytest.approx(10.05 / sorted(again)[1]) and r.kernels_changed_again == 2
    table = models.render([r])
    assert f"{r.again_ratio:.3f} (2 changed)" in table and "Inductor's default compiled twice" in table
    # Records before the second compile was timed read as they did.
    old = models.summarize(_data([10.0, 10.1, 10.05], rules))
    assert old.regressed and old.again_ratio is None and "compiled twice" not in models.render([old])


def test_the_timed_rounds_rotate_which_variant_goes_first(monkeypatch):
    timed = []
    monkeypatch.setattr(model_blocks, "median_step_ms",
                        lambda step, steps, device: timed.append(step.__self__) or 1.0)
    data = _measure(_Recorder(), rounds=3)
    assert data["failure"] is None and len(timed) == 9
    rounds = [timed[i:i + 3] for i in range(0, 9, 3)]
    # Each round times the three variants once, and each of them goes first in one round.
    assert all(len({id(run) for run in r}) == 3 for r in rounds) and len({id(r[0]) for r in rounds}) == 3


def test_reduction_share_and_speedup_come_from_the_reduction_kernels():
    default = models.kernel_time_breakdown([[
        ("triton_red_fused_add_mean_0", 20.0), ("triton_per_fused_mul_sum_1", 10.0), ("triton_poi_fused_add_2", 30.0),
        ("sm90_xmma_gemm_bf16", 40.0), ("triton_red_fused_add_mean_0", 0.0)]])
    rules = models.kernel_time_breakdown([[
        ("triton_unk_fused_add_mean_0", 10.0), ("triton_per_fused_mul_sum_1", 5.0), ("triton_poi_fused_add_2", 30.0),
        ("sm90_xmma_gemm_bf16", 40.0)]])
    assert (default["total_us"], default["reduction_us"], default["share"]) == (100.0, 30.0, 0.3)
    assert default["reduction_kernels"] == 2 and (default["fixed_config_kernels"], rules["fixed_config_kernels"]) == (0, 1)
    r = models.summarize(_data([1.0, 1.0], [1.0, 1.0], profiles={DEFAULT: default, RULES: rules}))
    assert r.reduction_share_default == pytest.approx(0.3) and r.reduction_share_rules == pytest.approx(15 / 85)
    assert r.reduction_speedup == pytest.approx(2.0)
    assert models.kernel_time_breakdown([])["share"] is None


def test_each_kernel_counts_its_median_over_the_profiled_steps():
    steps = [[("triton_red_fused_mean_0", 10.0), ("gemm", 50.0)],
             [("triton_red_fused_mean_0", 11.0), ("gemm", 500.0)],  # one slow launch of the GEMM
             [("triton_red_fused_mean_0", 30.0), ("gemm", 52.0)],  # one slow launch of the reduction
             [("triton_red_fused_mean_0", 6.0), ("triton_red_fused_mean_0", 6.0), ("gemm", 51.0)],  # launched twice
             [("gemm", 49.0)]]  # a step that did not run the reduction counts 0 for it
    out = models.kernel_time_breakdown(steps)
    assert out["by_kernel"] == {"gemm": 51.0, "triton_red_fused_mean_0": 11.0}
    assert (out["total_us"], out["reduction_us"]) == (62.0, 11.0) and out["share"] == pytest.approx(11 / 62)
    assert out["profiled_steps"] == 5 and out["step_totals_us"] == [60.0, 511.0, 82.0, 63.0, 49.0]


def test_both_variants_are_profiled_over_several_alternating_steps(monkeypatch):
    from inductor_tune import model_blocks

    order = []
    monkeypatch.setattr(model_blocks, "profile_kernels", lambda step, device: order.append(step.__self__) or [])
    data = _measure(_Recorder(), rounds=1)
    assert data["failure"] is None and len(order) == 2 * models.PROFILE_STEPS > 2
    assert all(p["profiled_steps"] == models.PROFILE_STEPS for p in data["profiles"].values())
    # Alternating: each pair of profiled steps is one of each variant, and the first of a pair changes.
    pairs = [order[i:i + 2] for i in range(0, len(order), 2)]
    assert all(a is not b for a, b in pairs) and pairs[0][0] is pairs[1][1]


def test_kernels_changed_compares_launch_configs_of_the_same_kernels():
    hints = {"x": 8192, "r0_": 2048}
    default = [
        {"kernel": "triton_per_fused_add_mean_0", "size_hints": hints, "candidates": 1, "config": {"XBLOCK": 1}},
        {"kernel": "triton_red_fused_sum_1", "size_hints": hints, "candidates": 1, "config": {"R0_BLOCK": 512}},
        {"kernel": "triton_poi_fused_mul_2", "size_hints": {"x": 2**24}, "candidates": 4, "config": {"XBLOCK": 512}},
        {"kernel": "triton_per_fused_mul_sum_3", "size_hints": hints, "candidates": 1, "config": {"XBLOCK": 2}},
    ]
    rules = [
        # forced by a rule to the config Inductor picks anyway: renamed, not changed
        {"kernel": "triton_unk_fused_mul_sum_3", "size_hints": hints, "candidates": 1, "config": {"XBLOCK": 2}},
        # forced by a rule: renamed (unk), another config
        {"kernel": "triton_unk_fused_add_mean_0", "size_hints": hints, "candidates": 1, "config": {"XBLOCK": 4}},
        # recompiled with the default's config: unchanged
        {"kernel": "triton_red_fused_sum_1", "size_hints": hints, "candidates": 1, "config": {"R0_BLOCK": 512}},
        # still autotuning among Inductor's candidates: no rule forced it
        {"kernel": "triton_poi_fused_mul_2", "size_hints": {"x": 2**24}, "candidates": 4, "config": {"XBLOCK": 1024}},
    ]
    assert models.kernels_changed(default, rules) == 1
    assert models.kernels_changed(default, []) == 0


def test_failures_and_regressions_render_on_one_line_each():
    ok = models.summarize(_data([10.0, 10.0], [9.0, 9.0]))
    failed = models.summarize({**_data([], []), "failure": {"stage": "rules compile", "reason": "OutOfResources: smem"}})
    text = models.render([ok, failed])
    lines = text.splitlines()
    # A record made before compiles were timed has no compile seconds, and still renders (report_html reads them).
    old = {k: v for k, v in dataclasses.asdict(ok).items() if not k.startswith("compile_s")}
    assert models.ModelResult(**old).compile_s_rules is None and "compile s" in lines[0]
    assert len(lines) == 4 and lines[0].split()[:3] == ["model", "impl", "tokens"]
    assert "1.111 [1.111-1.111]" in lines[2] and lines[2].endswith("ok")
    assert lines[3].endswith("COMPILE FAILED: OutOfResources: smem") and " - " in lines[3]


def test_each_model_is_stored_as_one_validation_record(tmp_path, monkeypatch):
    fp = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=1, l2_bytes=1,
                     cuda_driver="x", cuda_runtime="x", torch="2.11.0+cu130", triton="3.6.0")
    answers = {
        "llama-2048": ((fp, 4000.0), _data([10.0, 10.1], [11.0, 11.1], kernels_changed=3)),
        "gpt2-1024": ((fp, 4000.0), {**_data([], []), "model": "gpt2-1024",
                                     "failure": {"stage": "rules compile", "reason": "OutOfResources: smem"}}),
        "llama-4096": (None, {**_data([], []), "model": "llama-4096",
                              "failure": {"stage": "worker", "reason": "its process died"}}),
    }
    monkeypatch.setattr(models, "run_one", lambda spec, *a, **k: answers[spec.name])
    store = Store(f"sqlite:///{tmp_path}/v.sqlite")
    results = models.run_models("heuristics/h200.yaml", ["llama-2048", "gpt2-1024"], store, rounds=2)
    assert [r.status for r in results] == ["REGRESSED", "COMPILE FAILED: OutOfResources: smem"]
    records = store.validations()
    assert [(r.kernel, r.rows, r.cols, r.dtype, r.regressed) for r in records] == [
        ("model:llama-2048", 8192, 2048, "bf16", True), ("model:gpt2-1024", 8192, 1024, "bf16", False)]
    stored = json.loads(records[0].result_json)
    assert stored["summary"]["kernels_changed"] == 3 and stored["times"][DEFAULT] == [10.0, 10.1]
    assert json.loads(records[0].timing_json)["rounds"] == 2
    # A process that died before it reported the GPU cannot be stored, and is reported all the same.
    fresh = Store(f"sqlite:///{tmp_path}/w.sqlite")
    (result,) = models.run_models("heuristics/h200.yaml", ["llama-4096"], fresh, rounds=2)
    assert result.status == "FAILED (worker): its process died" and fresh.validations() == []


def test_a_stopped_run_measures_only_the_models_it_has_no_record_of(tmp_path, monkeypatch):
    fp = GpuIdentity(name="NVIDIA H200", sm_count=132, compute_capability="9.0", memory_bytes=1, l2_bytes=1,
                     cuda_driver="x", cuda_runtime="x", torch="2.11.0+cu130", triton="3.6.0")
    other_gpu = dataclasses.replace(fp, torch="2.13.0+cu130")
    measured = []

    def run_one(spec, *a, **k):
        measured.append(spec.name)
        return (fp, 4000.0), {**_data([10.0, 10.0], [9.0, 9.0]), "model": spec.name}

    monkeypatch.setattr(models, "run_one", run_one)
    store = Store(f"sqlite:///{tmp_path}/v.sqlite")
    models.run_models("heuristics/h200.yaml", ["llama-2048"], store, rounds=2, gpu_key=fp.key)
    assert measured == ["llama-2048"]
    again = models.run_models("heuristics/h200.yaml", ["llama-2048", "gpt2-1024"], store, rounds=2, gpu_key=fp.key)
    assert measured == ["llama-2048", "gpt2-1024"]  # the record of llama-2048 answered for it
    assert [r.name for r in again] == ["llama-2048", "gpt2-1024"] and again[0].ratio == pytest.approx(10 / 9)
    assert len(store.validations()) == 2
    # Another GPU stack, other rounds or another file measure again.
    models.run_models("heuristics/h200.yaml", ["llama-2048"], store, rounds=2, gpu_key=other_gpu.key)
    models.run_models("heuristics/h200.yaml", ["llama-2048"], store, rounds=3, gpu_key=fp.key)
    models.run_models("heuristics/h100.yaml", ["llama-2048"], store, rounds=2, gpu_key=fp.key)
    assert measured == ["llama-2048", "gpt2-1024"] + ["llama-2048"] * 3
    # Without the GPU's key nothing is looked up.
    models.run_models("heuristics/h200.yaml", ["gpt2-1024"], store, rounds=2)
    assert measured[-1] == "gpt2-1024" and len(measured) == 6


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the death of a process that needs a GPU")
def test_a_model_process_that_dies_is_a_recorded_failure():
    hello, data = models.run_one(TINY["llama"], "heuristics/h200.yaml", rounds=2, timeout_s=300)
    # It needs CUDA before it reports the GPU: it dies setting up, and says so.
    assert hello is None and data["failure"]["stage"] == "setup"
    assert data["failure"]["reason"] == "its process died (exit code 1)"
    assert models.summarize(data).status == "FAILED (setup): its process died (exit code 1)"


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "inductor_tune", *args], capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return proc.returncode, proc.stdout, lines


def test_cli_refuses_unknown_models_in_one_line(tmp_path):
    storage = tmp_path / "v.sqlite"
    code, out, err = _cli("validate", "heuristics/h200.yaml", "--models", "llama-2048,llama-3", "--storage", str(storage))
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("inductor-tune: error: unknown model(s) llama-3; known: llama-2048")
    code, _, err = _cli("validate", "heuristics/h200.yaml", "--models", "llama-2048", "--kernels", "rmsnorm_fwd")
    assert code == 2 and len(err) == 1 and "--models does not take --kernels" in err[0]
    assert not storage.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_cli_models_without_a_gpu_says_so(tmp_path):
    code, _, err = _cli("validate", "heuristics/h200.yaml", "--models", "--storage", str(tmp_path / "v.sqlite"))
    assert code == 2 and len(err) == 1 and "`validate --models` measures on a GPU" in err[0]
    assert not (tmp_path / "v.sqlite").exists()


def test_each_variant_compiles_with_cold_caches_and_the_setting_is_given_back(monkeypatch):
    """The rules' compile comes second; with caches it found the default's kernels ready (stop 58: 30 -> 14 s)."""
    import os

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/warm-inductor")
    seen = []
    for _ in range(2):
        with models._cold_caches(True):
            seen.append((os.environ["TORCHINDUCTOR_CACHE_DIR"], os.environ["TRITON_CACHE_DIR"]))
    assert seen[0] != seen[1] and all(d != "/tmp/warm-inductor" and t.startswith(d) for d, t in seen)
    assert all(not os.listdir(d) for d, _ in seen)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/tmp/warm-inductor"
    with models._cold_caches(False):  # another backend (the CPU tests' eager one) has no Inductor caches
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/tmp/warm-inductor"
    for folder, _ in seen:
        os.rmdir(folder)
