"""`inductor-tune patch`: the diff applies to a pristine copy of the installed torch, and the patched
functions, imported from that copy, return the distilled configs under fake device properties."""

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import types
from unittest import mock

import distill_fixtures as fx
import pytest
import sympy
import torch
from torch._inductor.runtime.hints import DeviceProperties, ReductionHint

from inductor_tune import cli, cpu_codegen
from inductor_tune import patch as patch_mod
from inductor_tune.heuristics import RuleSpec

FILES = (
    "torch/version.py", "torch/_inductor/choices.py", "torch/_inductor/codegen/simd.py",
    "torch/_inductor/runtime/triton_heuristics.py",
)
RULES_MODULE = "torch._inductor.runtime.distilled_reduction_rules"
SIGNATURE = {"in_ptr0": "*bf16", "in_ptr1": "*fp32", "out_ptr0": "*bf16", "xnumel": "i32", "r0_numel": "i32"}


def _pristine(dest) -> str:
    root = patch_mod.installed_torch_root()
    for name in FILES:
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        shutil.copyfile(os.path.join(root, name), os.path.join(dest, name))
    return str(dest)


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def heur():
    return fx.relaxed_heuristics()


@pytest.fixture(scope="module")
def patched(heur, tmp_path_factory):
    """The patch applied to a pristine copy; its modules loaded under their package (relative imports
    resolve to the installed torch), the rules module registered where the hooks import it from."""
    root = _pristine(tmp_path_factory.mktemp("pristine"))
    text, _ = patch_mod.generate(heur, root)
    (tmp_path_factory.getbasetemp() / "fixture.patch").write_text(text)
    subprocess.run(["git", "apply", str(tmp_path_factory.getbasetemp() / "fixture.patch")], cwd=root, check=True)
    rules = _load(RULES_MODULE, os.path.join(root, patch_mod.RULES_PATH))
    mods = types.SimpleNamespace(
        root=root, rules=rules,
        th=_load("torch._inductor.runtime._patched_th", os.path.join(root, FILES[3])),
        choices=_load("torch._inductor._patched_choices", os.path.join(root, FILES[1])),
        simd=_load("torch._inductor.codegen._patched_simd", os.path.join(root, FILES[2])),
    )
    yield mods
    for name in (RULES_MODULE, "torch._inductor.runtime._patched_th", "torch._inductor._patched_choices",
                 "torch._inductor.codegen._patched_simd"):
        del sys.modules[name]


def _props(cc=90, sms=132):
    return DeviceProperties(
        type="cuda", index=0, multi_processor_count=sms, cc=cc, major=cc // 10, regs_per_multiprocessor=65536,
        max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32,
    )


def _configs(th, rule, device, signature=SIGNATURE):
    meta = {"num_load": 2, "num_store": 1, "num_reduction": 1}
    if rule.kind == "mix_order":
        meta["RSPLIT_SIZE"] = rule.RSPLIT_SIZE
    heuristic = th.persistent_reduction if rule.persistent else th.reduction
    with mock.patch("torch.cuda.is_available", lambda: True):  # the CUDA branch of Inductor's heuristics
        configs = heuristic(
            size_hints={"x": rule.xnumel[1], "r0_": rule.rnumel[0]}, reduction_hint=ReductionHint.INNER,
            triton_meta={"device": device, "signature": signature}, filename=None, inductor_meta=meta,
            return_configs=True,
        )
    return [(dict(c.kwargs), c.num_warps, c.num_stages) for c in configs]


def _expected(rule):
    kwargs = {"XBLOCK": rule.XBLOCK}
    if not rule.persistent:
        kwargs["R0_BLOCK"] = rule.R0_BLOCK
    if rule.RSPLIT_SIZE:
        kwargs.update(RSPLIT_SIZE=rule.RSPLIT_SIZE, NUM_STAGES=rule.NUM_STAGES)
    return [(kwargs, rule.num_warps, rule.num_stages if not rule.persistent else 1)]


def test_patch_applies_cleanly_to_a_pristine_copy_of_the_installed_torch(heur, tmp_path):
    text, version = patch_mod.generate(heur)  # against the installed torch itself
    assert version == torch.__version__
    root = _pristine(tmp_path / "torch-copy")
    path = tmp_path / "h.patch"
    path.write_text(text)
    git = subprocess.run(["git", "apply", "--check", str(path)], cwd=root, capture_output=True, text=True)
    assert git.returncode == 0, git.stderr
    if shutil.which("patch"):
        gnu = subprocess.run(["patch", "-p1", "--dry-run", "-i", str(path)], cwd=root, capture_output=True, text=True)
        assert gnu.returncode == 0, gnu.stdout + gnu.stderr
    assert text.count("diff --git") == 4 and "new file mode" in text


def test_each_hook_is_readable_in_its_hunk_and_the_table_shows_the_rules(heur):
    text, _ = patch_mod.generate(heur)
    for name in ("persistent_decision", "looped_config", "persistent_config", "mix_order_config", "mix_order_split_size"):
        assert re.search(rf"^\+.*\b{name}\(", text, re.M), name
    for rule in heur.table().rules:
        assert f"Rule(kind={rule.kind!r}, element_size=2, rnumel={rule.rnumel!r}" in text
    assert "capability=90" in text and "sm_count=132" in text


def test_patched_config_functions_return_the_distilled_configs_on_the_rules_gpu(patched, heur):
    for rule in heur.table().rules:
        assert _configs(patched.th, rule, _props()) == _expected(rule), rule


@pytest.mark.parametrize("device, signature", [
    (_props(cc=90, sms=114), SIGNATURE),  # same architecture, another SM count (H100 PCIe)
    (_props(cc=100, sms=148), SIGNATURE),  # another architecture
    (_props(), {**SIGNATURE, "in_ptr0": "*fp32", "out_ptr0": "*fp32"}),  # element size the rules never saw
])
def test_patched_config_functions_keep_inductors_configs_elsewhere(patched, heur, device, signature):
    import torch._inductor.runtime.triton_heuristics as pristine

    for rule in heur.table().rules:
        got = _configs(patched.th, rule, device, signature)
        assert got == _configs(pristine, rule, device, signature)
        assert got != _expected(rule) or rule.kind == "mix_order"  # Inductor's own mix pick may coincide


def _features(rnumel, xnumel):
    node = types.SimpleNamespace(get_device=lambda: torch.device("cuda", 0))
    return types.SimpleNamespace(
        reduction_numel=sympy.Integer(rnumel), numel=sympy.Integer(xnumel), scheduler_nodes=lambda: [node],
        get_reduction_hint=lambda *a: ReductionHint.INNER, buf_accesses=lambda: {"x": [], "weight": []},
    )


_GRAPH = types.SimpleNamespace(
    get_dtype=lambda name: torch.bfloat16 if name == "x" else torch.float32,
    sizevars=types.SimpleNamespace(statically_known_leq=lambda a, b: int(a) <= int(b)),
)


@pytest.mark.parametrize("sms", [132, 114])
def test_patched_persistent_threshold_follows_the_rules_on_their_gpu_only(patched, heur, sms):
    from torch._inductor.choices import InductorChoices
    from torch._inductor.virtualized import V

    checked = 0
    with cpu_codegen.fake_cuda(9, sms), V.set_graph_handler(_GRAPH):
        for rule in heur.table().rules:
            if rule.kind == "mix_order":
                continue
            # a non-power-of-two row inside the rule's range, as the llm shapes have
            features = _features(rule.rnumel[1] * 5 // 8, rule.xnumel[0])
            default = InductorChoices.should_use_persistent_reduction(features, False)
            got = patched.choices.InductorChoices.should_use_persistent_reduction(features, False)
            assert got == (rule.persistent if sms == 132 else default)
            moves = rule.persistent != (rule.kind == "inner_persistent")
            assert (got != default) == (sms == 132 and moves)
            checked += 1
    assert checked >= 2


def test_patched_split_size_hook_sits_in_inductors_split_choice(patched, heur):
    (mix,) = [r for r in heur.table().rules if r.kind == "mix_order"]
    node = types.SimpleNamespace(
        get_device=lambda: torch.device("cuda", 0),
        read_writes=types.SimpleNamespace(reads=[types.SimpleNamespace(name="x")], writes=[]),
    )
    from torch._inductor.virtualized import V

    with V.set_graph_handler(_GRAPH):
        with cpu_codegen.fake_cuda(9, 132):
            assert patched.rules.mix_order_split_size(node, 32768, mix.rnumel[0]) == mix.RSPLIT_SIZE
        with cpu_codegen.fake_cuda(9, 114):
            assert patched.rules.mix_order_split_size(node, 32768, mix.rnumel[0]) is None
    tree = ast.parse(open(os.path.join(patched.root, FILES[2])).read())
    (pick,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_pick_split_size"]
    assert "mix_order_split_size" in ast.unparse(pick)


def _rms_backward(x, w, dy, rstd):
    """RMSNorm's dx and dw as a forward function (autograd on fake CUDA tensors is not available on CPU)."""
    xf, dyf = x.float(), dy.float()
    wdy = dyf * w
    dx = rstd * (wdy - xf * rstd * rstd * (wdy * xf).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xf * rstd).sum(0)


_DECORATOR = re.compile(r"@triton_heuristics\.(\w+)\((.*?)\)\n@triton\.jit", re.S)


def _decorator_configs(module, source: str):
    """Evaluate the generated kernel's decorator and ask the given triton_heuristics for its configs."""
    heuristic, args = _DECORATOR.search(source).groups()
    kwargs = eval(f"dict({args})", {"DeviceProperties": DeviceProperties, "ReductionHint": ReductionHint,
                                    "__file__": None})
    kwargs.pop("filename", None)
    with mock.patch("torch.cuda.is_available", lambda: True):
        configs = getattr(module, heuristic)(filename=None, return_configs=True, **kwargs)
    return heuristic, [(dict(c.kwargs), c.num_warps, c.num_stages) for c in configs]


def test_patched_torch_generates_the_rules_kernels_end_to_end(patched, heur, monkeypatch):
    """Codegen with the patched threshold and split choice, then the patched config functions."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.codegen.simd import SIMDScheduling

    monkeypatch.setattr(InductorChoices, "should_use_persistent_reduction",
                        patched.choices.InductorChoices.__dict__["should_use_persistent_reduction"])
    monkeypatch.setattr(SIMDScheduling, "_codegen_mix_order_reduction",
                        patched.simd.SIMDScheduling._codegen_mix_order_reduction)
    table = {r.kind + str(r.rnumel[0]): r for r in heur.table().rules}

    softmax = lambda x: torch.softmax(x.float(), -1).to(x.dtype)  # noqa: E731
    (src,) = cpu_codegen.generate_sources(softmax, [((8192, 2048), torch.bfloat16)])
    rule = table["inner_looped2048"]
    assert _decorator_configs(patched.th, src) == ("persistent_reduction", _expected(rule))

    inputs = [((32768, 2048), torch.bfloat16), ((2048,), torch.float32), ((32768, 2048), torch.bfloat16),
              ((32768, 1), torch.float32)]
    (src,) = cpu_codegen.generate_sources(_rms_backward, inputs)
    mix = table["mix_order2048"]
    assert f"'RSPLIT_SIZE': {mix.RSPLIT_SIZE}" in src  # the split the rule chose at codegen
    assert _decorator_configs(patched.th, src) == ("persistent_reduction", _expected(mix))


def test_unsupported_torch_version_is_refused_in_one_line(heur, tmp_path):
    root = _pristine(tmp_path)
    version_py = os.path.join(root, "torch", "version.py")
    text = open(version_py).read()
    open(version_py, "w").write(re.sub(r"__version__ = '[^']+'", "__version__ = '2.12.0'", text))
    with pytest.raises(patch_mod.PatchError, match=r"^torch 2\.12\.0 is not supported: .*2\.11 and 2\.13$"):
        patch_mod.generate(heur, root)


def test_source_that_lost_an_anchor_is_refused_naming_the_file(heur, tmp_path):
    root = _pristine(tmp_path)
    path = os.path.join(root, FILES[2])
    text = open(path).read()
    open(path, "w").write(text.replace("return config.triton.mix_order_reduction_split_size", "return None"))
    with pytest.raises(patch_mod.PatchError) as err:
        patch_mod.generate(heur, root)
    assert "torch/_inductor/codegen/simd.py does not match" in str(err.value) and "\n" not in str(err.value)


def test_keep_default_only_file_and_already_patched_tree_are_refused(heur, patched, tmp_path):
    keep = fx.with_rules(heur, RuleSpec("inner_looped", 2, (2048, 2048), (8192, 32768), None))
    with pytest.raises(patch_mod.PatchError, match="nothing to patch"):
        patch_mod.generate(keep, _pristine(tmp_path))
    with pytest.raises(patch_mod.PatchError, match="already patched"):
        patch_mod.generate(heur, patched.root)


def test_cli_patch_writes_the_file_and_reports_errors_in_one_line(heur, tmp_path, capsys):
    from inductor_tune.heuristics import dump

    hfile = tmp_path / "h.yaml"
    dump(heur, str(hfile))
    out = tmp_path / "patches" / "x.patch"
    assert cli.main(["patch", str(hfile), "--out", str(out)]) == 0
    assert out.read_text() == patch_mod.generate(heur)[0]
    root = _pristine(tmp_path / "old")
    version_py = os.path.join(root, "torch", "version.py")
    open(version_py, "w").write("__version__ = '2.9.1'\n")
    before = out.read_text()
    assert cli.main(["patch", str(hfile), "--out", str(out), "--torch-root", root]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["inductor-tune: error: torch 2.9.1 is not supported: the patch generator knows the Inductor "
                   "sources of torch 2.11 and 2.13"]
    assert out.read_text() == before  # an error never touches an existing output
