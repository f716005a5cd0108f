"""Peer wrappers without a GPU: Quack's LayerNorm (0.6.2 and later) under autograd, checked against
PyTorch's LayerNorm through stand-in kernels; an older Quack is reported, never silently left out; and
the installed peer versions travel with every validation record."""

import sys
import types

import pytest
import torch
import torch.nn.functional as F

from inductor_tune import peers, validate
from inductor_tune.kernels import EPS


def _quack(with_layernorm_bwd: bool) -> types.ModuleType:
    """A stand-in for the quack package: LayerNorm forward and backward computed by PyTorch, with the
    signatures of quack.rmsnorm.layernorm_fwd / layernorm_bwd in Quack 0.6.5."""
    norms = types.ModuleType("quack.rmsnorm")
    norms.calls = []

    def layernorm_fwd(x, weight, bias=None, eps=1e-6, return_rstd=False, return_mean=False):
        assert weight.dtype == torch.float32 and bias.dtype == torch.float32  # Quack's contract
        norms.calls.append("fwd")
        mean = x.float().mean(-1)
        rstd = torch.rsqrt(x.float().var(-1, unbiased=False) + eps)
        out = (((x.float() - mean[:, None]) * rstd[:, None]) * weight + bias).to(x.dtype)
        return out, rstd, mean

    def layernorm_bwd(x, weight, dout, rstd, mean, has_bias=True):
        norms.calls.append("bwd")
        xhat = (x.float() - mean[:, None]) * rstd[:, None]
        g = dout.float() * weight
        dx = rstd[:, None] * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
        return dx.to(x.dtype), (dout.float() * xhat).sum(0), dout.float().sum(0)

    norms.layernorm_fwd = layernorm_fwd
    if with_layernorm_bwd:
        norms.layernorm_bwd = layernorm_bwd
    package = types.ModuleType("quack")
    # As in Quack 0.6.5's __init__: the package attribute ``rmsnorm`` is the function, which shadows the
    # submodule, so ``from quack import rmsnorm`` does not reach the LayerNorm kernels.
    package.rmsnorm = lambda x, weight, eps=1e-6: x
    package.norms = norms
    return package


@pytest.fixture
def fake_quack(monkeypatch):
    def install(with_layernorm_bwd=True):
        package = _quack(with_layernorm_bwd)
        monkeypatch.setitem(sys.modules, "quack", package)
        monkeypatch.setitem(sys.modules, "quack.rmsnorm", package.norms)
        return package.norms
    return install


def test_quack_layernorm_forward_and_backward_match_pytorch(fake_quack):
    norms = fake_quack()
    found, missing = peers.peer_functions("layernorm_bwd")
    assert "quack" in found and "quack" not in missing
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 96, generator=gen, dtype=torch.float64).requires_grad_()
    weight = (1 + 0.1 * torch.randn(96, generator=gen)).requires_grad_()
    bias = (0.1 * torch.randn(96, generator=gen)).requires_grad_()
    dout = torch.randn(64, 96, generator=gen, dtype=torch.float64)
    out = found["quack"](x, weight, bias)
    grads = torch.autograd.grad(out, (x, weight, bias), dout)
    ref = F.layer_norm(x, (96,), weight.double(), bias.double(), EPS)
    ref_grads = torch.autograd.grad(ref, (x, weight, bias), dout)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got.double(), want.double(), rtol=1e-4, atol=1e-4)
    assert grads[1].dtype == weight.dtype and norms.calls == ["fwd", "bwd"]


def test_a_quack_without_layernorm_backward_is_named_not_left_out(fake_quack):
    fake_quack(with_layernorm_bwd=False)
    for kernel in ("layernorm_fwd", "layernorm_bwd"):
        found, missing = peers.peer_functions(kernel)
        assert "quack" not in found and "no LayerNorm with bias and backward (since 0.6.2)" in missing["quack"]


def test_peer_versions_are_read_and_named_once_in_the_validation_table(monkeypatch):
    import importlib.metadata

    installed = {"quack-kernels": "0.6.5"}

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert peers.versions() == {"quack": "0.6.5", "liger": None}
    data = {"times": {"inductor_default": [1.0, 1.0, 1.0], "heuristics": [0.9, 0.9, 0.9]}, "notes": [],
            "errors": {}, "bytes": 1 << 20, "default_choice": [], "heuristic_choice": [],
            "peer_versions": peers.versions()}
    rows = [validate.summarize_problem("layernorm_fwd", shape, "bf16", data, 4000.0) for shape in ("8x8", "16x8")]
    text = validate.render(rows)
    assert text.count("peer versions: liger not installed, quack 0.6.5") == 1
