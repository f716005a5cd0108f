"""`inductor-tune patch`: the patched functions, imported from a patched copy of the installed torch's files,
return the distilled configs under fake device properties, for the kernels whose signature (fused
reductions, forward or backward graph) the rule names only.

On torch 2.14 and later the config functions are the installed ones, asking Inductor's heuristics
registry, where the patch's reduction heuristic is registered (or not: ``_registry_as``).
tests/test_patch_sources.py checks the diff against the sources; tests/test_patch_torch.py a whole
patched torch against `install`."""

import ast
import contextlib
import importlib.util
import logging
import os
import re
import subprocess
import sys
import types
from unittest import mock

import pytest
import sympy
import torch
from patch_fixtures import CHOICES, CODEGEN, REGISTRY, SIMD, TH, h200_with_rules
from patch_fixtures import pristine as _pristine
from torch._inductor.runtime.hints import DeviceProperties, ReductionHint

from inductor_tune import cpu_codegen, kernels, torch_rules
from inductor_tune import patch as patch_mod

RULES_MODULE = "torch._inductor.runtime.distilled_reduction_rules"
REGISTRY_MODULE = "torch._inductor.heuristics.triton_codegen.distilled_reduction"
REGISTRY_KEY = ("reduction", "cuda", None)
PATCHED = {  # the patched copies of Inductor's modules, loaded beside the installed ones
    "th": ("torch._inductor.runtime._patched_th", TH),
    "choices": ("torch._inductor._patched_choices", CHOICES),
    "simd": ("torch._inductor.codegen._patched_simd", SIMD),
    "codegen": ("torch._inductor.codegen._patched_triton", CODEGEN),
}
SIGNATURE = {"in_ptr0": "*bf16", "in_ptr1": "*fp32", "out_ptr0": "*bf16", "xnumel": "i32", "r0_numel": "i32"}


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def heur():
    return h200_with_rules()


@pytest.fixture(scope="module")
def patched(heur, tmp_path_factory):
    """The patch applied to a pristine copy; its modules loaded under their package (relative imports
    resolve to the installed torch), the rules module registered where the hooks import it from."""
    root = _pristine(tmp_path_factory.mktemp("pristine"))
    text, _ = patch_mod.generate(heur, root)
    (tmp_path_factory.getbasetemp() / "fixture.patch").write_text(text)
    subprocess.run(["git", "apply", str(tmp_path_factory.getbasetemp() / "fixture.patch")], cwd=root, check=True)
    rules = _load(RULES_MODULE, os.path.join(root, patch_mod.RULES_PATH))
    mods = types.SimpleNamespace(root=root, rules=rules, **{
        attr: _load(name, os.path.join(root, path)) for attr, (name, path) in PATCHED.items()
    })
    with _registry_snapshot():
        if REGISTRY:  # registers itself on import, as the patched triton_codegen/__init__.py imports it
            _DISTILLED.append(_load(REGISTRY_MODULE, os.path.join(root, patch_mod.REGISTRY_PATH)))
        yield mods
    _DISTILLED.clear()
    for name in (RULES_MODULE, *(name for name, _ in PATCHED.values()), REGISTRY_MODULE):
        sys.modules.pop(name, None)


_DISTILLED: list = []  # the patch's registry module while the `patched` fixture is up (torch 2.14 on)


@contextlib.contextmanager
def _registry_snapshot():
    """Inductor's heuristics registry as it was, afterwards (a no-op before torch 2.14)."""
    if not REGISTRY:
        yield
        return
    from torch._inductor.heuristics import registry

    saved = dict(registry._HEURISTIC_REGISTRY)
    try:
        yield
    finally:
        registry._HEURISTIC_REGISTRY.clear()
        registry._HEURISTIC_REGISTRY.update(saved)
        registry._HEURISTIC_CACHE.clear()


@contextlib.contextmanager
def _registry_as(module):
    """The registry the config functions of ``module`` (a patched or the pristine triton_heuristics) see:
    the patch's reduction heuristic registered for the patched one, Inductor's alone for the pristine."""
    with _registry_snapshot():
        if REGISTRY:
            from torch._inductor.heuristics import registry

            registry._HEURISTIC_REGISTRY.pop(REGISTRY_KEY, None)
            if module.__name__ == PATCHED["th"][0]:
                registry._HEURISTIC_REGISTRY[REGISTRY_KEY] = _DISTILLED[0].DistilledReductionHeuristic
            registry._HEURISTIC_CACHE.clear()
        yield


def _props(cc=90, sms=132):
    return DeviceProperties(
        type="cuda", index=0, multi_processor_count=sms, cc=cc, major=cc // 10, regs_per_multiprocessor=65536,
        max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32,
    )


def _configs(th, rule, device, signature=SIGNATURE, reductions="rule"):
    """The configs ``th``'s config function gives for a kernel in the rule's range; ``reductions`` is
    the kernel signature the patched codegen wrote into inductor_meta ("rule": the rule's own)."""
    # codegen writes the GPU's name where it is the table's (the device check is the props' here)
    meta = {"num_load": 2, "num_store": 1, "num_reduction": 1, "reduction_device": "NVIDIA H200"}
    reductions = rule.reductions if reductions == "rule" else reductions
    if reductions is not None:
        meta["reduction_signature"] = reductions
    if rule.kind == "mix_order":
        meta["RSPLIT_SIZE"] = rule.RSPLIT_SIZE
    heuristic = th.persistent_reduction if rule.persistent else th.reduction
    # the CUDA branch of Inductor's heuristics (torch 2.13 asks torch.cuda, 2.14 the device's type)
    with mock.patch("torch.cuda.is_available", lambda: True), _registry_as(th):
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


def _other_signatures(rule) -> list:
    """Kernel signatures a rule must not cover: no signature in the meta (an unpatched codegen), the
    same reductions in the other graph direction, other reductions."""
    if rule.reductions is None:
        return []
    plain = rule.reductions.removesuffix("@backward")
    other_direction = plain if rule.reductions.endswith("@backward") else plain + "@backward"
    others = {"sum", "welford_reduce+welford_reduce", "sum+sum@backward", "online_softmax_reduce+online_softmax_reduce"}
    return [None, other_direction, *sorted(others - {rule.reductions})]


def test_patched_config_functions_apply_a_rule_only_to_the_kernels_it_names(patched, heur):
    """The rule's config comes back only when inductor_meta carries the rule's exact signature."""
    import torch._inductor.runtime.triton_heuristics as pristine

    checked = 0
    for rule in heur.table().rules:
        assert _configs(patched.th, rule, _props()) == _expected(rule), rule
        for reductions in _other_signatures(rule):
            if torch_rules.lookup(rule.kind, 2, rule.rnumel[0], rule.xnumel[1], heur.table(), reductions):
                continue  # another rule covers that kernel (the mix-order rules at 2048)
            got = _configs(patched.th, rule, _props(), reductions=reductions)
            assert got == _configs(pristine, rule, _props(), reductions=reductions), (rule, reductions)
            assert got != _expected(rule) or rule.kind == "mix_order", (rule, reductions)
            checked += 1
        if rule.reductions is None:  # a rule without a signature covers every kernel of its sizes
            for reductions in (None, "sum", "max+sum@backward"):
                assert _configs(patched.th, rule, _props(), reductions=reductions) == _expected(rule)
    assert checked >= 20
    # A "sum" rule keeps a "sum@backward" kernel or a LayerNorm of its size on Inductor's configs.
    (looped,) = [r for r in heur.table().rules if r.reductions == "sum" and r.kind == "inner_looped"]
    for reductions in ("sum@backward", "welford_reduce+welford_reduce"):
        assert _configs(patched.th, looped, _props(), reductions=reductions) != _expected(looped)


class _Reduction:
    """A scheduler node as torch_rules reads its reduction type (node.node.get_reduction_type())."""

    def __init__(self, kind):
        self.node = types.SimpleNamespace(get_reduction_type=lambda: kind)

    def is_reduction(self):
        return True


def _nodes(signature):
    types_ = (signature or "").removesuffix("@backward")
    return [_Reduction(t) for t in types_.split("+") if t]


def _features(rnumel, xnumel, signature):
    node = types.SimpleNamespace(get_device=lambda: torch.device("cuda", 0))
    return types.SimpleNamespace(
        reduction_numel=sympy.Integer(rnumel), numel=sympy.Integer(xnumel), scheduler_nodes=lambda: [node],
        get_reduction_hint=lambda *a: ReductionHint.INNER, buf_accesses=lambda: {"x": [], "weight": []},
        reduction_nodes=lambda: _nodes(signature),
        strict_sum_rblock=lambda: None,  # torch 2.14: no sum planned by numerics="strict"
    )


def _graph(backward=False):
    return types.SimpleNamespace(
        get_dtype=lambda name: torch.bfloat16 if name == "x" else torch.float32,
        sizevars=types.SimpleNamespace(statically_known_leq=lambda a, b: int(a) <= int(b)),
        is_backward=backward,
    )


@pytest.mark.parametrize("sms", [132, 114])
def test_patched_persistent_threshold_follows_the_rules_on_their_gpu_only(patched, heur, sms):
    from torch._inductor.choices import InductorChoices
    from torch._inductor.virtualized import V

    checked = 0
    with cpu_codegen.fake_cuda(9, sms), V.set_graph_handler(_graph()):
        for rule in heur.table().rules:
            if rule.kind == "mix_order":
                continue
            # a non-power-of-two row inside the rule's range, as the llm shapes have
            features = _features(rule.rnumel[1] * 5 // 8, rule.xnumel[0], rule.reductions or "sum")
            default = InductorChoices.should_use_persistent_reduction(features, False)
            got = patched.choices.InductorChoices.should_use_persistent_reduction(features, False)
            assert got == (rule.persistent if sms == 132 else default)
            moves = rule.persistent != (rule.kind == "inner_persistent")
            assert (got != default) == (sms == 132 and moves)
            if rule.reductions and moves:  # another kernel of the same size keeps Inductor's decision
                other = _features(rule.rnumel[1] * 5 // 8, rule.xnumel[0], "max+sum")
                assert patched.choices.InductorChoices.should_use_persistent_reduction(other, False) == default
            checked += 1
    assert checked >= 3


def _autotuner(th, results, fallback, compiled):
    """A CachingAutotuner as far as its compile and launcher steps use it: ``results`` are compile results
    whose launcher either loads or raises; ``compiled`` records the configs compiled afresh."""
    fake = types.SimpleNamespace(
        launchers=[], compile_results=list(results), configs=None, fn=types.SimpleNamespace(__name__="triton_k_0"),
        triton_meta={"device": 0}, inductor_meta={} if fallback is None else {"distilled_fallback": fallback},
        device_props=types.SimpleNamespace(type="cuda"),  # torch 2.14 resolves the device to load on from it
        get_device_interface=lambda: types.SimpleNamespace(exchange_device=lambda i: 0, maybe_exchange_device=lambda i: 0),
    )
    fake._make_launcher = lambda result: result()  # (launcher, None) or (None, exception)

    def precompile_config(config):
        compiled.append(config)
        return lambda: (f"launcher of {config.kwargs}", None)

    fake._precompile_config = precompile_config
    for name in ("_make_launchers", "_precompile_worker"):
        setattr(fake, name, types.MethodType(getattr(th.CachingAutotuner, name), fake))
    return fake


def test_patched_autotuner_falls_back_to_inductors_configs_when_the_rules_does_not_load(patched, caplog):
    """A rule's config that compiles but cannot be loaded (out of shared memory at launch) is replaced by the
    Inductor configs the config hook kept; without kept configs, Inductor's own error stands."""
    from torch._inductor.runtime.triton_compat import OutOfResources

    def out_of_memory():
        return None, OutOfResources(278624, 232448, "shared memory")

    out_of_memory.config = types.SimpleNamespace(num_stages=1, kwargs={"XBLOCK": 2, "NUM_STAGES": 1})

    kept = {"rule": "mix_order sum@backward rnumel 4096..8192 (...)",
            "configs": [{"kwargs": {"XBLOCK": 1, "RSPLIT_SIZE": 16, "NUM_STAGES": 1}, "num_warps": 8, "num_stages": 1}]}
    compiled = []
    fake = _autotuner(patched.th, [out_of_memory], kept, compiled)
    # The warning's logger sits under torch._inductor, which stops propagation once torch's logging is set up:
    # capture it where it is logged, not at the root (alone, this test saw nothing at the root).
    rules_logger = logging.getLogger(patched.rules.__name__)
    rules_logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger=patched.rules.__name__):
            fake._make_launchers()
    finally:
        rules_logger.removeHandler(caplog.handler)
    assert fake.launchers == ["launcher of {'XBLOCK': 1, 'RSPLIT_SIZE': 16, 'NUM_STAGES': 1}"]
    assert [c.num_warps for c in compiled] == [8] and "distilled_fallback" not in fake.inductor_meta
    assert "does not fit kernel triton_k_0" in caplog.text and "mix_order sum@backward" in caplog.text
    # No kept configs (a kernel no rule chose): Inductor's own handling, unchanged.
    plain = _autotuner(patched.th, [out_of_memory], None, [])
    with pytest.raises(RuntimeError, match="No valid triton configs. OutOfResources"):
        plain._make_launchers()
    assert plain.launchers == []


def test_patched_split_size_hook_sits_in_inductors_split_choice(patched, heur):
    from torch._inductor.virtualized import V

    mixes = [r for r in heur.table().rules if r.kind == "mix_order"]
    assert {r.reductions for r in mixes} == {"sum", "sum@backward", "sum+sum@backward"}
    for mix in mixes:
        node = types.SimpleNamespace(
            get_device=lambda: torch.device("cuda", 0), get_nodes=lambda mix=mix: _nodes(mix.reductions),
            read_writes=types.SimpleNamespace(reads=[types.SimpleNamespace(name="x")], writes=[]),
        )
        backward = mix.reductions.endswith("@backward")
        with V.set_graph_handler(_graph(backward)):
            with cpu_codegen.fake_cuda(9, 132):
                assert patched.rules.mix_order_split_size(node, 32768, mix.rnumel[0]) == mix.RSPLIT_SIZE
            with cpu_codegen.fake_cuda(9, 114):
                assert patched.rules.mix_order_split_size(node, 32768, mix.rnumel[0]) is None
        if backward:  # the same reductions in a forward graph: not this rule's kernel
            with V.set_graph_handler(_graph(False)), cpu_codegen.fake_cuda(9, 132):
                assert patched.rules.mix_order_split_size(node, 32768, mix.rnumel[0]) is None
    tree = ast.parse(open(os.path.join(patched.root, SIMD)).read())
    (pick,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_pick_split_size"]
    assert "mix_order_split_size" in ast.unparse(pick)


def _rms_backward(x, w, dy, rstd):
    """RMSNorm's dx and dw as a forward function (autograd on fake CUDA tensors is not available on CPU)."""
    xf, dyf = x.float(), dy.float()
    wdy = dyf * w
    dx = rstd * (wdy - xf * rstd * rstd * (wdy * xf).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dyf * xf * rstd).sum(0)


_DECORATOR = re.compile(r"@triton_heuristics\.(\w+)\((.*?)\)\n@triton\.jit", re.S)


def _decorator_args(source: str):
    heuristic, args = _DECORATOR.search(source).groups()
    kwargs = eval(f"dict({args})", {"DeviceProperties": DeviceProperties, "ReductionHint": ReductionHint,
                                    "__file__": None})
    kwargs.pop("filename", None)
    return heuristic, kwargs


def _decorator_configs(module, source: str, **meta):
    """Evaluate the generated kernel's decorator and ask the given triton_heuristics for its configs
    (``meta`` overrides entries of the kernel's inductor_meta)."""
    heuristic, kwargs = _decorator_args(source)
    kwargs["inductor_meta"] = {**kwargs["inductor_meta"], **meta}
    with mock.patch("torch.cuda.is_available", lambda: True), _registry_as(module):
        configs = getattr(module, heuristic)(filename=None, return_configs=True, **kwargs)
    return heuristic, [(dict(c.kwargs), c.num_warps, c.num_stages) for c in configs]


@pytest.fixture
def patched_codegen(patched, monkeypatch):
    """Inductor's codegen with the patch's three codegen-time hooks (persistent threshold, split size,
    kernel signature in inductor_meta) taken from the patched copy."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.codegen.simd import SIMDScheduling
    from torch._inductor.codegen.triton import TritonKernel

    monkeypatch.setattr(InductorChoices, "should_use_persistent_reduction",
                        patched.choices.InductorChoices.__dict__["should_use_persistent_reduction"])
    monkeypatch.setattr(SIMDScheduling, "_codegen_mix_order_reduction",
                        patched.simd.SIMDScheduling._codegen_mix_order_reduction)
    monkeypatch.setattr(TritonKernel, "inductor_meta_per_kernel",
                        patched.codegen.TritonKernel.__dict__["inductor_meta_per_kernel"])
    return patched


def _kernel(name, rows, cols):
    spec = kernels.get_kernel(name)
    inputs = [((rows, cols), torch.bfloat16) if n in ("x", "residual") else ((cols,), torch.float32)
              for n in spec.inputs]
    (src,) = cpu_codegen.generate_sources(spec.build(torch.float32), inputs)
    return src


def _rule(heur, kind, reductions, rnumel):
    (rule,) = [r for r in heur.table().rules
               if (r.kind, r.reductions) == (kind, reductions) and r.rnumel[0] <= rnumel <= r.rnumel[1]]
    return rule


def test_patched_codegen_writes_the_kernel_signature_and_the_config_functions_key_on_it(patched_codegen, heur):
    """RMSNorm and LayerNorm forward of one size: the "sum" rule reaches RMSNorm's kernel only."""
    import torch._inductor.runtime.triton_heuristics as pristine

    th = patched_codegen.th
    rms = _kernel("rmsnorm_fwd", 8192, 2048)
    assert _decorator_args(rms)[1]["inductor_meta"]["reduction_signature"] == "sum"
    rule = _rule(heur, "inner_looped", "sum", 2048)
    assert _decorator_configs(th, rms) == ("persistent_reduction", _expected(rule))  # threshold moved, config set
    # The same kernel read as another kernel's: Inductor's own configs, as the pristine torch gives them.
    for other in ("sum@backward", "welford_reduce+welford_reduce", None):
        got = _decorator_configs(th, rms, reduction_signature=other)
        assert got == _decorator_configs(pristine, rms, reduction_signature=other) and got[1] != _expected(rule)

    layer = _kernel("layernorm_fwd", 8192, 2048)  # no rule for LayerNorm at 2048: a looped Inductor kernel
    assert _decorator_args(layer)[1]["inductor_meta"]["reduction_signature"] == "welford_reduce+welford_reduce"
    assert _decorator_configs(th, layer) == _decorator_configs(pristine, layer)
    assert _decorator_configs(th, layer)[0] == "reduction" and _decorator_configs(th, layer)[1] != _expected(rule)

    layer = _kernel("layernorm_fwd", 8192, 4096)  # LayerNorm's own looped rule
    rule = _rule(heur, "inner_looped", "welford_reduce+welford_reduce", 4096)
    assert _decorator_configs(th, layer) == ("reduction", _expected(rule))
    # the codegen's signature picks the rule: read as RMSNorm's, whose rule is persistent, it gets none
    assert _decorator_configs(th, layer, reduction_signature="sum") == _decorator_configs(
        pristine, layer, reduction_signature="sum") != _decorator_configs(th, layer)


def test_patched_torch_generates_the_rules_kernels_end_to_end(patched_codegen, heur):
    """The fused mix-order kernel: split size at codegen and launch config, from the rule of its signature.

    `_rms_backward` is compiled as a forward graph on CPU (V.graph.is_backward is False), so its
    kernel's signature is "sum"; on a GPU, AOTAutograd compiles it in a backward graph: "sum@backward".
    """
    inputs = [((32768, 2048), torch.bfloat16), ((2048,), torch.float32), ((32768, 2048), torch.bfloat16),
              ((32768, 1), torch.float32)]
    (src,) = cpu_codegen.generate_sources(_rms_backward, inputs)
    mix = _rule(heur, "mix_order", "sum", 2048)
    assert _decorator_args(src)[1]["inductor_meta"]["reduction_signature"] == "sum"
    assert f"'RSPLIT_SIZE': {mix.RSPLIT_SIZE}" in src  # the split the rule chose at codegen
    assert _decorator_configs(patched_codegen.th, src) == ("persistent_reduction", _expected(mix))

    # The same graph lowered as a backward graph (as AOTAutograd lowers it on a GPU): its signature is
    # "sum@backward", for which these rules have nothing at 2048, so Inductor keeps its split (16) and configs.
    import torch._inductor.runtime.triton_heuristics as pristine
    from torch._inductor.graph import GraphLowering

    lower = GraphLowering.__init__
    backward = lambda self, *a, **k: lower(self, *a, **{**k, "is_backward": True})  # noqa: E731
    with mock.patch.object(GraphLowering, "__init__", backward):
        (src,) = cpu_codegen.generate_sources(_rms_backward, inputs)
    assert _decorator_args(src)[1]["inductor_meta"]["reduction_signature"] == "sum@backward"
    assert "'RSPLIT_SIZE': 16" in src
    got = _decorator_configs(patched_codegen.th, src)
    assert got == _decorator_configs(pristine, src) and got[1] != _expected(mix)


def test_split_size_and_launch_config_lookups_see_the_same_envelope_and_sizes(patched_codegen, monkeypatch):
    """The split size is chosen from the row-wise side of a mix-order fusion, before the other side's
    reductions become pointwise code; the launch config from the fused kernel's inductor_meta. Both must
    see one envelope (op counts of the reduction nodes included) and one pair of actual sizes, or a rule
    would set the split and another (or none) the launch."""
    seen = []
    rules = patched_codegen.rules
    original = rules.envelope_of_nodes

    def spy(nodes, xnumel, rnumel):
        seen.append((original(nodes, xnumel, rnumel), [int(xnumel), int(rnumel)]))
        return seen[-1][0]

    monkeypatch.setattr(rules, "envelope_of_nodes", spy)
    inputs = [((32768, 2048), torch.bfloat16), ((2048,), torch.float32), ((32768, 2048), torch.bfloat16),
              ((32768, 1), torch.float32)]
    (src,) = cpu_codegen.generate_sources(_rms_backward, inputs)
    meta = _decorator_args(src)[1]["inductor_meta"]
    assert "RSPLIT_SIZE" in meta and seen, "no mix-order kernel, or its split was not looked up"
    assert ",ops=" in meta["reduction_envelope"]
    assert seen[0] == (meta["reduction_envelope"], meta["reduction_sizes"]) == (seen[0][0], [32768, 2048])
    assert meta["reduction_device"] == "NVIDIA H200"
