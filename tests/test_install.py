"""`inductor_tune.install`: the rules reach Inductor's generated kernels through its own extension
point on the file's GPU (faked on CPU), nowhere else; bad files fail in one line."""

import concurrent.futures
import contextvars
import dataclasses
import functools
import importlib.metadata
import logging
import os
import re
import subprocess
import sys
import types
from unittest import mock

import distill_fixtures as fx
import fast_yaml
import pytest
import torch
import torch._inductor.config as inductor_config

import inductor_tune
from inductor_tune import choices, cpu_codegen, heuristics, kernels
from inductor_tune.choices import CompilePlan
from inductor_tune.heuristics import HeuristicsError, KernelSlot, RuleSpec
from inductor_tune.runtime import installation, registry
from inductor_tune.space import INDUCTOR_DEFAULT, SlotConfig, TrialConfig

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
H200 = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132)
RMS_2048 = [((8192, 2048), torch.bfloat16), ((2048,), torch.float32)]
# RMSNorm's forward at 8192x4096 in bf16: a shape where the committed H200 file sets a config for it.
RMS_RULED = [((8192, 4096), torch.bfloat16), ((4096,), torch.float32)]
LN_2048 = [((8192, 2048), torch.bfloat16), ((2048,), torch.float32), ((2048,), torch.float32)]
FIXED = re.compile(r"@triton_heuristics\.fixed_config\(\s*config=(\{[^}]*\})")
ALL_ROWS = (8192, 2**31)
# Configs from heuristics/h200.yaml: RMSNorm forward's rule at 2048..4096 (moves the looped kernel to
# persistent) and the LayerNorm backward mix-order rule at 2048 (split 128, not Inductor's 16 there).
SUM_FWD = SlotConfig(True, 2, 8)
MIX_2048 = SlotConfig(True, 8, 8, RSPLIT_SIZE=128, NUM_STAGES=3)
RMS_BWD_INPUTS = [((32768, 2048), torch.bfloat16), ((2048,), torch.float32), ((32768, 2048), torch.bfloat16),
                  ((32768, 1), torch.float32)]


@functools.lru_cache(maxsize=1)
def _h200() -> heuristics.Heuristics:
    return heuristics.load(H200_FILE)


def _heur(*rules: RuleSpec, mix_autotune=()) -> heuristics.Heuristics:
    """h200.yaml's GPU with the given rules (and split-autotune entries) only."""
    return dataclasses.replace(_h200(), rules=rules, mix_autotune=mix_autotune)


@pytest.fixture
def device(monkeypatch):
    """Which GPU install() sees; None is this CPU-only machine."""
    holder = types.SimpleNamespace(props=None)
    monkeypatch.setattr(installation, "_current_device_props", lambda: holder.props)
    return holder


def _hooks():
    import torch._inductor.config as inductor_config
    from torch._inductor.codegen.simd import SIMDScheduling

    return inductor_config.inductor_choices_class, SIMDScheduling._codegen_mix_order_reduction


def test_install_is_a_noop_without_a_gpu_and_says_so(caplog):
    before = _hooks()
    with caplog.at_level(logging.WARNING, logger="inductor_tune"):
        handle = inductor_tune.install(H200_FILE)  # the real probe: this machine has no CUDA device
    assert not handle.active and _hooks() == before
    assert "heuristics for NVIDIA H200 (sm90, 132 SMs) not installed: no CUDA device here" in caplog.text


@pytest.mark.parametrize("props", [
    types.SimpleNamespace(name="NVIDIA H100 PCIe", major=9, minor=0, multi_processor_count=114),
    types.SimpleNamespace(name="NVIDIA B200", major=10, minor=0, multi_processor_count=148),
    # An H100 SXM has an H200's capability and SM count; an H200 rule slowed one of its kernels 2.6 %.
    types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132),
])
def test_install_is_a_noop_on_another_gpu(device, props, caplog):
    device.props = props
    before = _hooks()
    with caplog.at_level(logging.WARNING, logger="inductor_tune"), inductor_tune.install(H200_FILE) as handle:
        assert not handle.active and _hooks() == before
    assert f"this device is {props.name}" in caplog.text and "Inductor keeps its defaults" in caplog.text


def test_install_forces_the_rule_config_and_uninstall_restores_inductor(device):
    device.props = H200
    before = _hooks()
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    heur = _h200()
    # The committed file's rule for this kernel: its envelope is the same on the CPU harness (torch 2.13)
    # as the GPU probe recorded (torch 2.11), so the rule reaches the kernel here too.
    envelope = kernels.get_kernel("rmsnorm_fwd").envelope
    rule = heur.lookup("inner_looped", 2, 4096, 8192, "sum", envelope)
    assert rule.config is not None and rule.config.persistent
    assert heur.lookup("inner_looped", 2, 4096, 8192, "sum") is None  # an unknown envelope: no rule
    assert heur.lookup("inner_looped", 2, 8192, 8192, "sum", envelope).config is None  # a keep-default rule
    with inductor_tune.install(H200_FILE) as handle:
        assert handle.active and _hooks() != before
        (src,) = cpu_codegen.generate_sources(fn, RMS_RULED)
        assert FIXED.findall(src) == [repr(rule.config.fixed_config())]
        assert "R0_BLOCK: tl.constexpr = 4096" in src  # persistent: the whole row in one block
        (src,) = cpu_codegen.generate_sources(fn, [((8192, 8192), torch.bfloat16), ((8192,), torch.float32)])
        assert not FIXED.findall(src) and "@triton_heuristics.reduction(" in src  # keep default there
        (src,) = cpu_codegen.generate_sources(fn, [((8192, 4096), torch.float32), ((4096,), torch.float32)])
        assert not FIXED.findall(src)  # 4-byte elements: the rules were measured on 2-byte ones
    assert _hooks() == before
    (src,) = cpu_codegen.generate_sources(fn, RMS_RULED)
    assert not FIXED.findall(src) and "@triton_heuristics.reduction(" in src


def _kernels(src: str) -> list:
    """The Triton kernels of a wrapper (decorator and body), without the wrapper's per-compile ids."""
    return re.findall(r"^@triton_heuristics\..*?device_str=", src, re.M | re.S)


def test_a_rule_reaches_only_the_kernels_of_its_signature(device):
    """A "sum" rule changes RMSNorm's forward kernel, not LayerNorm's of the same size (welford)."""
    device.props = H200
    rms = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    layer = kernels.get_kernel("layernorm_fwd").build(torch.float32)
    (default_layer,) = cpu_codegen.generate_sources(layer, LN_2048)
    with inductor_tune.install(_heur(RuleSpec("inner_looped", 2, (2048, 2048), ALL_ROWS, SUM_FWD, reductions="sum"))):
        (src,) = cpu_codegen.generate_sources(rms, RMS_2048)
        assert FIXED.findall(src) == [repr(SUM_FWD.fixed_config())]
        (src,) = cpu_codegen.generate_sources(layer, LN_2048)
        assert not FIXED.findall(src) and _kernels(src) == _kernels(default_layer)  # Inductor's own kernel
    # The same config for LayerNorm's signature reaches LayerNorm only.
    with inductor_tune.install(_heur(RuleSpec("inner_looped", 2, (2048, 2048), ALL_ROWS, SUM_FWD,
                                              reductions="welford_reduce+welford_reduce"))):
        (src,) = cpu_codegen.generate_sources(layer, LN_2048)
        assert FIXED.findall(src) == [repr(SUM_FWD.fixed_config())]
        (src,) = cpu_codegen.generate_sources(rms, RMS_2048)
        assert not FIXED.findall(src)


def _rms_backward(x, w, dy, rstd):
    xf, dyf = x.float(), dy.float()
    wdy = dyf * w
    dx = rstd * (wdy - xf * rstd * rstd * (wdy * xf).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xf * rstd).sum(0)


def _workspace_rows(src: str) -> int:
    """Rows of the mix-order kernel's partial-dW workspace (one per split of the 32768 rows)."""
    (elements,) = re.findall(r"workspace_0 = empty_strided_cuda\(\((\d+), \)", src)
    return int(elements) // 2048


def _as_backward_graph():
    """Lower every graph as a backward one, as AOTAutograd lowers the backward on a GPU."""
    from torch._inductor.graph import GraphLowering

    lower = GraphLowering.__init__
    backward = lambda self, *a, **k: lower(self, *a, **{**k, "is_backward": True})  # noqa: E731
    return mock.patch.object(GraphLowering, "__init__", backward)


def test_install_sets_the_mix_order_split_and_config_together(device):
    device.props = H200
    # On a GPU the RMSNorm backward's fused kernel is signed "sum@backward".  `_rms_backward` is its
    # dx/dW written as a forward function (autograd on fake CUDA tensors is not available on CPU), so it
    # is lowered as a forward graph (V.graph.is_backward is False) and signed "sum": the rule says so.
    mix = RuleSpec("mix_order", 2, (2048, 2048), ALL_ROWS, MIX_2048, reductions="sum")
    with inductor_tune.install(_heur(mix)):
        (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
    assert FIXED.findall(src) == [repr(MIX_2048.fixed_config())]
    assert _workspace_rows(src) == 32768 // MIX_2048.RSPLIT_SIZE  # the split the rule chose at codegen
    (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
    assert _workspace_rows(src) == 32768 // 16 and not FIXED.findall(src)  # Inductor's own split, 16


def test_a_split_autotune_entry_lets_inductor_time_the_split_and_keeps_it_when_timing_fails(device):
    """On the CPU harness Inductor cannot time anything: every split fails while timed, the entry keeps
    Inductor's own split (16 at 32768 rows on 132 SMs), the compile goes on, and the note says so."""
    device.props = H200
    entry = heuristics.MixAutotuneSpec((8192, 65536), (243, 16384), 2, min_split=16, margin=0.05, up_only=True)
    mark = len(registry.applied_rules())
    with inductor_tune.install(_heur(mix_autotune=(entry,))):
        (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
    (note,) = registry.applied_rules()[mark:]
    assert "Inductor autotunes the split" in note and "x=32768 r=2048: split 16 kept" in note and "16:failed" in note
    assert "'RSPLIT_SIZE': 16" in src


def test_a_backward_rule_reaches_the_backward_graphs_kernel_only(device):
    """"sum@backward" covers the fused kernel lowered in a backward graph, not the same kernel in a forward one."""
    device.props = H200
    with inductor_tune.install(_heur(RuleSpec("mix_order", 2, (2048, 2048), ALL_ROWS, MIX_2048,
                                              reductions="sum@backward"))):
        (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
        assert _workspace_rows(src) == 32768 // 16 and not FIXED.findall(src)  # a forward graph: "sum"
        with _as_backward_graph():
            (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
    assert FIXED.findall(src) == [repr(MIX_2048.fixed_config())]
    assert _workspace_rows(src) == 32768 // MIX_2048.RSPLIT_SIZE


def test_an_application_in_a_backward_graph_is_marked_so_validate_counts_the_timed_graph_only(device):
    """A backward problem times only its backward graph; the note of each rule application says which graph
    it configured, so that a rule reaching only the forward graph leaves the problem untouched (set 45)."""
    device.props = H200
    forward = RuleSpec("mix_order", 2, (2048, 2048), ALL_ROWS, MIX_2048, reductions="sum")
    backward = dataclasses.replace(forward, reductions="sum@backward")
    mark = len(registry.applied_rules())
    with inductor_tune.install(_heur(forward, backward)):
        cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
        with _as_backward_graph():
            cpu_codegen.generate_sources(_rms_backward, RMS_BWD_INPUTS)
    in_forward, in_backward = registry.applied_rules()[mark:]
    assert in_backward.endswith(registry.BACKWARD_GRAPH_NOTE) and not in_forward.endswith(registry.BACKWARD_GRAPH_NOTE)
    assert registry.in_graph_timed(in_backward, backward_problem=True)
    assert not registry.in_graph_timed(in_forward, backward_problem=True)
    assert registry.in_graph_timed(in_forward, backward_problem=False)
    assert not registry.in_graph_timed(in_backward, backward_problem=False)


# An RMSNorm backward of 640 rows, below Inductor's mix-order threshold: a row kernel (dx, x=640 r=272), the weight
# gradient's column split (x = 272 x 5 splits, r = 128 rows each, OUTER) and its combine (x=272 r=5, OUTER_TINY).
RMS_BWD_FEW_ROWS = [((640, 272), torch.bfloat16), ((272,), torch.float32), ((640, 272), torch.bfloat16),
                    ((640, 1), torch.float32)]


def test_an_outer_rule_reaches_the_column_split_alone(device):
    """The first config rules of the column split (stop 72's coverage13 studies feed the next fit): the rule's
    config lands in the partial-sum kernel, and the row kernel and the combine stay Inductor's own."""
    device.props = H200
    column_split = SlotConfig(True, 16, 4)
    (default,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_FEW_ROWS)
    mark = len(registry.applied_rules())
    with inductor_tune.install(_heur(RuleSpec("outer", 2, (128, 128), (2048, 2048), column_split, reductions="sum"))):
        (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_FEW_ROWS)
    assert FIXED.findall(src) == [repr(column_split.fixed_config())]
    assert "R0_BLOCK: tl.constexpr = 128" in src  # persistent: the split's 128 rows in one block
    assert [a == b for a, b in zip(_kernels(default), _kernels(src))] == [False, True, True]
    (note,) = registry.applied_rules()[mark:]
    assert note.endswith("x=1360 r=128")
    # The combine is an outer reduction too (r=5, pow2 8, of fp32 partial sums): a rule of r=128 does not reach it,
    # and one of its own sizes reaches it alone.
    with inductor_tune.install(_heur(RuleSpec("outer", 4, (8, 8), (512, 512), column_split, reductions="sum"))):
        (src,) = cpu_codegen.generate_sources(_rms_backward, RMS_BWD_FEW_ROWS)
    assert FIXED.findall(src) == [repr(column_split.fixed_config())]
    assert [a == b for a, b in zip(_kernels(default), _kernels(src))] == [True, False, True]


def test_install_reaches_a_thread_that_cached_its_choices_before(device):
    """Inductor caches one choices object per thread; autograd's device thread compiles backward graphs
    with the one it made before install().  When that is a TrialChoices (the tuner's class), the rules
    must reach it: TrialChoices applies them itself whenever no tuning plan is active."""
    import torch._inductor.config as inductor_config
    from torch._inductor.virtualized import V

    def on_thread(fn, *args):
        # Inductor's config is per thread (a ContextVar on torch 2.13); autograd runs the backward in a
        # copy of the caller's context (torch.autograd.graph._engine_run_backward), and so does this.
        return thread.submit(contextvars.copy_context().run, fn, *args).result()

    device.props = H200
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    rule = RuleSpec("inner_looped", 2, (2048, 2048), ALL_ROWS, SUM_FWD, reductions="sum")
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread, \
            inductor_config.patch(inductor_choices_class=choices.TrialChoices):
        cached = on_thread(lambda: V.choices)  # made and cached on that thread before install()
        assert type(cached) is choices.TrialChoices and cached.uuid() == "inductor-default"
        with inductor_tune.install(_heur(rule)) as handle:
            (src,) = on_thread(cpu_codegen.generate_sources, fn, RMS_2048)
            assert on_thread(lambda: V.choices) is cached  # compiled with the cached object
            assert cached.uuid() == f"inductor-tune-heuristics-{handle.heuristics.digest()}"
        assert FIXED.findall(src) == [repr(SUM_FWD.fixed_config())]
        (src,) = on_thread(cpu_codegen.generate_sources, fn, RMS_2048)
        assert not FIXED.findall(src) and cached.uuid() == "inductor-default"  # uninstalled: Inductor's again


def test_a_tuning_plan_wins_over_installed_rules(device):
    device.props = H200
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    forced = SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=2)
    with inductor_tune.install(H200_FILE):
        plan = cpu_codegen.generate(fn, RMS_2048, CompilePlan(TrialConfig(slots=(("fw.red.x8192.r2048", forced),)), False))
    assert FIXED.findall(plan.sources[0]) == [repr(forced.fixed_config())]


class _Planner:
    """A registered planner as the runtime sees one (the tuner's CompilePlan is the real one)."""

    def __init__(self, answer):
        self.answer, self.asked = answer, 0

    def cache_key(self) -> str:
        return "test-planner"

    def kernel_kwargs(self, hook, features, groups, kernel_kwargs):
        self.asked += 1
        return self.answer(kernel_kwargs)


def test_the_hook_asks_a_registered_planner_first_and_the_rules_only_where_it_declines(device):
    """The tuner reaches the runtime's hook through registry.planning alone: what the planner returns is
    used as it is (Inductor's own kwargs included), and None leaves the kernel to the installed rules."""
    device.props = H200
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    rule = RuleSpec("inner_looped", 2, (2048, 2048), ALL_ROWS, SUM_FWD, reductions="sum")
    with inductor_tune.install(_heur(rule)):
        for answer, fixed in ((lambda kwargs: None, [repr(SUM_FWD.fixed_config())]), (lambda kwargs: kwargs, [])):
            planner = _Planner(answer)
            with registry.planning(planner):
                (src,) = cpu_codegen.generate_sources(fn, RMS_2048)
            assert planner.asked and FIXED.findall(src) == fixed

def test_rules_as_the_trial_config_validate_measures():
    heur = _heur(
        RuleSpec("inner_looped", 2, (2048, 2048), ALL_ROWS, SUM_FWD, reductions="sum"),
        RuleSpec("inner_looped", 2, (4096, 4096), ALL_ROWS, None, reductions="sum"),
        RuleSpec("mix_order", 2, (2048, 2048), ALL_ROWS, MIX_2048, reductions="sum@backward"),
    )
    slot = KernelSlot("fw.red.x8192.r2048", False, 8192, 2048, False, False, "sum")
    config = heuristics.trial_config(heur, [slot], "bf16", {slot.key: "INNER"})
    assert config == TrialConfig(slots=((slot.key, SUM_FWD),))
    assert heuristics.trial_config(heur, [slot], "bf16") == INDUCTOR_DEFAULT  # without its hint a kernel is not matched
    assert heuristics.trial_config(heur, [slot], "fp32", {slot.key: "INNER"}) == INDUCTOR_DEFAULT
    # The slot's reductions pick the rule: another kernel of the same size, or a probe that recorded
    # none (then torch_rules matches rules without a signature only), keeps the default.
    for reductions in ("welford_reduce+welford_reduce", ""):
        other = dataclasses.replace(slot, reductions=reductions)
        assert heuristics.trial_config(heur, [other], "bf16", {slot.key: "INNER"}) == INDUCTOR_DEFAULT
    wide = KernelSlot("fw.red.x8192.r4096", False, 8192, 4096, False, False, "sum")
    assert heuristics.trial_config(heur, [wide], "bf16", {wide.key: "INNER"}) == INDUCTOR_DEFAULT  # keep-default rule
    # A backward slot is signed "@backward" (mix-order slots need no hint).
    mix = KernelSlot("bw.mix.x32768.r2048", True, 32768, 2048, True, True, "sum")
    assert heuristics.trial_config(heur, [mix], "bf16") == TrialConfig(slots=((mix.key, MIX_2048),))
    forward = dataclasses.replace(mix, backward=False)
    assert heuristics.trial_config(heur, [forward], "bf16") == INDUCTOR_DEFAULT
    choice = ('[{"config": {"R0_BLOCK": 2048, "XBLOCK": 2, "num_stages": 1, "num_warps": 16}, "heuristic": '
              '"HeuristicType.REDUCTION", "reduction_hint": "ReductionHint.INNER", "size_hints": {"r0_": 2048, '
              '"x": 8192}}]')
    assert heuristics.slot_hints([slot, wide], choice) == {slot.key: "INNER"}


def _first_rule(**changes):
    """An edit of the file's first config rule (a keep-default rule has no config to break)."""
    def edit(doc):
        rule = next(r for r in doc["rules"] if r["action"] == "config")
        rule.update(changes)
        for key, value in changes.items():
            if value is None:
                del rule[key]
    return edit


BAD_FILES = [
    ("rules: [\n", "is not valid YAML"),
    ("- 1\n", "not a heuristic file"),
    ("format: other/1\n", "format is 'other/1'"),
    (lambda doc: doc.pop("gpu"), "missing `gpu`"),
    (_first_rule(kind="sideways"), "kind 'sideways' is not one of"),
    (_first_rule(rnumel=[2048, 1024]), "rnumel: must be [low, high] powers of two"),
    # The shipped H200 file's first config rule reaches N = 2048: 64 rows x 2048 over 1 warp of 32 threads.
    (_first_rule(config={"persistent": True, "XBLOCK": 64, "num_warps": 1}),
     "illegal config: 4096 tile elements per thread exceed 256"),
    (_first_rule(config={"persistent": True, "XBLOCK": 3, "num_warps": 4}), "XBLOCK=3 is not a positive power of two"),
    (_first_rule(config={"persistent": True, "XBLOCK": 1, "warps": 4}), "config must be a mapping with keys from"),
    (_first_rule(action="keep_default"), "needs `config` exactly when"),
    (lambda doc: doc["rules"].append(dict(doc["rules"][0])), "overlaps rules[0]"),
]


@pytest.mark.parametrize("edit, message", BAD_FILES)
def test_bad_heuristic_files_fail_in_one_line(edit, message, tmp_path):
    if callable(edit):
        doc = fast_yaml.safe_load(open(H200_FILE))
        edit(doc)
        text = fast_yaml.safe_dump(doc)
    else:
        text = edit
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(HeuristicsError) as err:
        inductor_tune.install(str(path))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("version", ["2.12.0+cu128", "2.15.0", "2.10.1"])
def test_install_refuses_an_unchecked_torch_in_one_line(monkeypatch, device, version):
    device.props = H200
    before = _hooks()
    monkeypatch.setattr(torch, "__version__", version)
    with pytest.raises(choices.UnsupportedTorch) as err:
        inductor_tune.install(H200_FILE)
    assert str(err.value) == (f"torch {version} is not supported: inductor_tune knows the Inductor sources of "
                              "torch 2.11, 2.13 and 2.14")
    assert _hooks() == before and registry.installed_table() is None


@pytest.mark.skipif(not hasattr(inductor_config, "numerics"), reason="numerics='strict' is new in torch 2.14")
def test_rules_step_back_under_strict_numerics(device):
    """torch 2.14's numerics="strict" plans the reduction order of its sums; the rules, which change the
    blocks a row is reduced in, keep out of such compiles as they do under deterministic mode."""
    device.props = H200
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    with inductor_tune.install(H200_FILE):
        (src,) = cpu_codegen.generate_sources(fn, RMS_RULED)
        assert FIXED.findall(src)
        with inductor_config.patch(numerics="strict"):
            (src,) = cpu_codegen.generate_sources(fn, RMS_RULED)
        assert not FIXED.findall(src)


def test_a_rule_leaves_the_persistent_choice_inductor_forces_alone(monkeypatch):
    """Inductor forces a kernel persistent where only that works (sort; torch 2.14's strict multi-row sums)
    before the hook runs; a looped rule of the kernel's size must not undo it, and applies otherwise."""
    from inductor_tune import torch_rules
    from inductor_tune.runtime import hook

    rule = torch_rules.Rule("inner_looped", 2, (2048, 2048), ALL_ROWS, False, XBLOCK=2, num_warps=8, R0_BLOCK=1024)
    monkeypatch.setattr(registry, "installed_table", lambda: torch_rules.Table("NVIDIA H200", 90, 132, (rule,)))
    monkeypatch.setattr(torch_rules, "rule_for_features", lambda features, mix, table: rule)
    monkeypatch.setattr(torch_rules, "envelope_of_features", lambda features: None)
    features = types.SimpleNamespace(numel=8192, reduction_numel=2048)
    forced = {"override_persistent_reduction": True}
    assert hook.apply_rules(features, [{"x": 8192, "r0_": 2048}], forced) == forced
    got = hook.apply_rules(features, [{"x": 8192, "r0_": 2048}], {})
    assert got["override_persistent_reduction"] is False and got["fixed_config"].config["R0_BLOCK"] == 1024


def _run_python(code: str, env_file: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, INDUCTOR_TUNE_HEURISTICS=env_file)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(
    not any(e.value == "inductor_tune:_torch_autoload" for e in importlib.metadata.entry_points(group="torch.backends")),
    reason="inductor_tune is not installed with its entry points (pip install -e .)",
)
def test_environment_variable_reaches_unmodified_scripts(tmp_path):
    done = _run_python("import torch; print('imported')", H200_FILE)
    assert done.returncode == 0 and "imported" in done.stdout
    assert "heuristics for NVIDIA H200 (sm90, 132 SMs) not installed: no CUDA device here" in done.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: nope\n")
    done = _run_python("import torch; print('imported')", str(bad))
    assert done.returncode == 0 and "imported" in done.stdout  # a bad file never breaks `import torch`
    assert f"INDUCTOR_TUNE_HEURISTICS={bad}: not installed: {bad}: format is 'nope'" in done.stderr
