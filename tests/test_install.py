"""`inductor_tune.install`: the rules reach Inductor's generated kernels through its own extension
point on the file's GPU (faked on CPU), nowhere else; bad files fail in one line."""

import importlib.metadata
import logging
import os
import re
import subprocess
import sys
import types

import distill_fixtures as fx
import pytest
import torch
import yaml

import inductor_tune
from inductor_tune import cpu_codegen, heuristics, kernels
from inductor_tune.choices import CompilePlan
from inductor_tune.heuristics import HeuristicsError, KernelSlot
from inductor_tune.space import INDUCTOR_DEFAULT, SlotConfig, TrialConfig

H200_FILE = os.path.join(fx.ROOT, "heuristics", "h200.yaml")
H200 = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132)
RMS_2048 = [((8192, 2048), torch.bfloat16), ((2048,), torch.float32)]
FIXED = re.compile(r"@triton_heuristics\.fixed_config\(\s*config=(\{[^}]*\})")


@pytest.fixture
def device(monkeypatch):
    """Which GPU install() sees; None is this CPU-only machine."""
    holder = types.SimpleNamespace(props=None)
    monkeypatch.setattr(heuristics, "_current_device_props", lambda: holder.props)
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
    with inductor_tune.install(H200_FILE) as handle:
        assert handle.active and _hooks() != before
        (src,) = cpu_codegen.generate_sources(fn, RMS_2048)
        assert FIXED.findall(src) == ["{'XBLOCK': 1, 'num_warps': 4, 'num_stages': 1}"]
        assert "R0_BLOCK: tl.constexpr = 2048" in src  # persistent: the whole row in one block
        (src,) = cpu_codegen.generate_sources(fn, [((8192, 4096), torch.bfloat16), ((4096,), torch.float32)])
        assert not FIXED.findall(src) and "@triton_heuristics.reduction(" in src  # keep default there
        (src,) = cpu_codegen.generate_sources(fn, [((8192, 2048), torch.float32), ((2048,), torch.float32)])
        assert not FIXED.findall(src)  # 4-byte elements: the rules were measured on 2-byte ones
    assert _hooks() == before
    (src,) = cpu_codegen.generate_sources(fn, RMS_2048)
    assert not FIXED.findall(src) and "@triton_heuristics.reduction(" in src


def _rms_backward(x, w, dy, rstd):
    xf, dyf = x.float(), dy.float()
    wdy = dyf * w
    dx = rstd * (wdy - xf * rstd * rstd * (wdy * xf).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xf * rstd).sum(0)


def test_install_sets_the_mix_order_split_and_config_together(device):
    device.props = H200
    heur = fx.relaxed_heuristics()
    (mix,) = [r for r in heur.rules if r.kind == "mix_order"]
    inputs = [((32768, 2048), torch.bfloat16), ((2048,), torch.float32), ((32768, 2048), torch.bfloat16),
              ((32768, 1), torch.float32)]
    with inductor_tune.install(heur):
        (src,) = cpu_codegen.generate_sources(_rms_backward, inputs)
    assert FIXED.findall(src) == [repr(mix.config.fixed_config())]
    rows = -(-32768 // mix.config.RSPLIT_SIZE)  # the workspace holds one partial dW row per split
    assert f"workspace_0 = empty_strided_cuda(({rows * 2048}, )" in src
    (src,) = cpu_codegen.generate_sources(_rms_backward, inputs)
    assert f"workspace_0 = empty_strided_cuda(({2048 * 2048}, )" in src  # Inductor's own split, 16


def test_a_tuning_plan_wins_over_installed_rules(device):
    device.props = H200
    fn = kernels.get_kernel("rmsnorm_fwd").build(torch.float32)
    forced = SlotConfig(False, 2, 8, R0_BLOCK=1024, num_stages=2)
    with inductor_tune.install(H200_FILE):
        plan = cpu_codegen.generate(fn, RMS_2048, CompilePlan(TrialConfig(slots=(("fw.red.x8192.r2048", forced),)), False))
    assert FIXED.findall(plan.sources[0]) == [repr(forced.fixed_config())]


def test_rules_as_the_trial_config_validate_measures():
    heur = heuristics.load(H200_FILE)
    slot = KernelSlot("fw.red.x8192.r2048", False, 8192, 2048, False, False)
    config = heur.trial_config([slot], "bf16", {slot.key: "INNER"})
    assert config == TrialConfig(slots=((slot.key, SlotConfig(True, 1, 4)),))
    assert heur.trial_config([slot], "bf16") == INDUCTOR_DEFAULT  # without its hint a kernel is not matched
    assert heur.trial_config([slot], "fp32", {slot.key: "INNER"}) == INDUCTOR_DEFAULT
    wide = KernelSlot("fw.red.x8192.r4096", False, 8192, 4096, False, False)
    assert heur.trial_config([wide], "bf16", {wide.key: "INNER"}) == INDUCTOR_DEFAULT  # keep-default rule
    choice = ('[{"config": {"R0_BLOCK": 2048, "XBLOCK": 2, "num_stages": 1, "num_warps": 16}, "heuristic": '
              '"HeuristicType.REDUCTION", "reduction_hint": "ReductionHint.INNER", "size_hints": {"r0_": 2048, '
              '"x": 8192}}]')
    assert heuristics.slot_hints([slot, wide], choice) == {slot.key: "INNER"}


def _first_rule(**changes):
    def edit(doc):
        doc["rules"][0].update(changes)
        for key, value in changes.items():
            if value is None:
                del doc["rules"][0][key]
    return edit


BAD_FILES = [
    ("rules: [\n", "is not valid YAML"),
    ("- 1\n", "not a heuristic file"),
    ("format: other/1\n", "format is 'other/1'"),
    (lambda doc: doc.pop("gpu"), "missing `gpu`"),
    (_first_rule(kind="sideways"), "kind 'sideways' is not one of"),
    (_first_rule(rnumel=[2048, 1024]), "rnumel: must be [low, high] powers of two"),
    (_first_rule(config={"persistent": True, "XBLOCK": 64, "num_warps": 4}), "illegal config: 1024 tile elements per thread exceed 256"),
    (_first_rule(config={"persistent": True, "XBLOCK": 3, "num_warps": 4}), "XBLOCK=3 is not a positive power of two"),
    (_first_rule(config={"persistent": True, "XBLOCK": 1, "warps": 4}), "config must be a mapping with keys from"),
    (_first_rule(action="keep_default"), "needs `config` exactly when"),
    (lambda doc: doc["rules"].append(dict(doc["rules"][0])), "overlaps rules[0]"),
]


@pytest.mark.parametrize("edit, message", BAD_FILES)
def test_bad_heuristic_files_fail_in_one_line(edit, message, tmp_path):
    if callable(edit):
        doc = yaml.safe_load(open(H200_FILE))
        edit(doc)
        text = yaml.safe_dump(doc)
    else:
        text = edit
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(HeuristicsError) as err:
        inductor_tune.install(str(path))
    assert message in str(err.value) and "\n" not in str(err.value)


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
