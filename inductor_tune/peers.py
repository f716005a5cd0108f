"""Peer libraries (Quack, Liger) wrapped as plain functions with the catalog's signatures.

Each wrapper takes the catalog function's inputs (``x, weight[, bias]``) and returns what the
catalog function returns, so ``evaluate.CompiledCall`` times it, captures it in a CUDA graph and
checks it against the same float64 reference as Inductor's kernels; backward entries are timed
through autograd exactly like the compiled ones.  A peer that is not installed or has no such op
is reported with the reason, never silently left out.
"""

from __future__ import annotations

import importlib
from typing import Callable

from .kernels import EPS


def _quack_rmsnorm():
    from quack.rmsnorm import rmsnorm

    return lambda x, weight: rmsnorm(x, weight, eps=EPS)


def _quack_layernorm():
    # The module, not ``from quack import rmsnorm``: Quack's __init__ binds that name to the function.
    quack_norms = importlib.import_module("quack.rmsnorm")
    if not hasattr(quack_norms, "layernorm_bwd"):
        raise ImportError("this Quack has no LayerNorm with bias and backward (since 0.6.2)")
    import torch

    class QuackLayerNorm(torch.autograd.Function):
        """Quack's LayerNorm kernels (forward, and backward from the saved mean and rstd) under autograd."""

        @staticmethod
        def forward(ctx, x, weight, bias):
            # Quack takes fp32 parameters: the catalog's LayerNorm parameters are fp32, so no copy is timed.
            w, b = weight.float(), bias.float()
            out, rstd, mean = quack_norms.layernorm_fwd(x, w, b, eps=EPS, return_rstd=True, return_mean=True)
            ctx.save_for_backward(x, w, rstd, mean)
            ctx.dtypes = weight.dtype, bias.dtype
            return out

        @staticmethod
        def backward(ctx, dout):
            x, w, rstd, mean = ctx.saved_tensors
            dx, dw, db = quack_norms.layernorm_bwd(x, w, dout.contiguous(), rstd, mean, has_bias=True)
            return dx, dw.to(ctx.dtypes[0]), db.to(ctx.dtypes[1])

    return QuackLayerNorm.apply


def _quack_softmax():
    from quack.softmax import softmax

    return lambda x: softmax(x)


def _liger_rmsnorm():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    # in_place=False: Liger otherwise writes dx into dy, which a repeated backward would read again.
    return lambda x, weight: LigerRMSNormFunction.apply(x, weight, EPS, 0.0, "llama", False)


def _liger_layernorm():
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    return lambda x, weight, bias: LigerLayerNormFunction.apply(x, weight, bias, EPS)


def _liger_softmax():
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    return lambda x: LigerSoftmaxFunction.apply(x)


PEERS: dict[str, dict[str, Callable[[], Callable] | str]] = {
    "rmsnorm_fwd": {"quack": _quack_rmsnorm, "liger": _liger_rmsnorm},
    "rmsnorm_bwd": {"quack": _quack_rmsnorm, "liger": _liger_rmsnorm},
    # Quack before 0.6.2 has a LayerNorm without bias and backward: reported as not importable there.
    "layernorm_fwd": {"quack": _quack_layernorm, "liger": _liger_layernorm},
    "layernorm_bwd": {"quack": _quack_layernorm, "liger": _liger_layernorm},
    "softmax_fwd": {"quack": _quack_softmax, "liger": _liger_softmax},
    "softmax_bwd": {"quack": _quack_softmax, "liger": _liger_softmax},
    "add_rmsnorm_fwd": {"quack": "not wrapped (returns the residual sum in another layout)", "liger": "no fused op"},
}
_PACKAGES = {"quack": "quack", "liger": "liger_kernel"}
_DISTRIBUTIONS = {"quack": "quack-kernels", "liger": "liger-kernel"}


def versions() -> dict[str, str | None]:
    """Each peer library's installed version (None: not installed), kept with every validation record."""
    import importlib.metadata

    found: dict[str, str | None] = {}
    for name, distribution in _DISTRIBUTIONS.items():
        try:
            found[name] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def peer_functions(kernel: str) -> tuple[dict[str, Callable], dict[str, str]]:
    """(name -> function, name -> why it is not compared) for a catalog kernel."""
    found: dict[str, Callable] = {}
    missing: dict[str, str] = {}
    for name, factory in PEERS.get(kernel, {}).items():
        if isinstance(factory, str):
            missing[name] = factory
            continue
        try:
            importlib.import_module(_PACKAGES[name])
            found[name] = factory()
        except Exception as exc:  # not installed, or an API this wrapper does not know
            missing[name] = f"not importable here ({type(exc).__name__}: {str(exc)[:120]})"
    return found, missing
