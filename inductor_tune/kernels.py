"""Catalog of the normalization kernels that are tuned.

Each entry is a plain PyTorch function that Inductor compiles.  Forward entries time the compiled
function; backward entries time only the backward graph Inductor generates for it (the forward is
compiled too, but stays on Inductor's defaults and is run outside the timed region).

The same function, built with float64 accumulation and fed float64 inputs, is the reference the
numerics guard compares against, so the reference cannot drift from what is compiled.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch
import torch.nn.functional as F

EPS = 1e-6

DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# Normwise relative error ||out - ref|| / ||ref|| allowed per activation dtype.  A bf16 output carries
# about 2^-9 relative rounding error per element; a correct kernel lands near 3e-3, a broken one (a
# dropped term, an unwritten tile) far above 1e-1, so these bounds separate the two with margin.
TOLERANCES: dict[str, float] = {"bf16": 1.6e-2, "fp16": 4e-3, "fp32": 1e-4}


@dataclasses.dataclass(frozen=True)
class Shape:
    """Rows (M) by reduction length (N) of a 2-D activation."""

    rows: int
    cols: int

    @classmethod
    def parse(cls, text: str) -> "Shape":
        parts = text.lower().replace(" ", "").split("x")
        if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"shape {text!r} is not of the form MxN with positive integers, e.g. 32768x4096")
        return cls(int(parts[0]), int(parts[1]))

    def __str__(self) -> str:
        return f"{self.rows}x{self.cols}"


def _acc(dtype: torch.dtype) -> torch.dtype:
    """Accumulation dtype: float32 as the compiled kernels use it, float64 for the reference."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _rmsnorm(acc: torch.dtype, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.to(acc)
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return (y * weight.to(acc)).to(x.dtype)


def _layernorm(acc: torch.dtype, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    y = F.layer_norm(x.to(acc), (x.shape[-1],), weight.to(acc), bias.to(acc), EPS)
    return y.to(x.dtype)


def _softmax(acc: torch.dtype, x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.to(acc), dim=-1).to(x.dtype)


def _add_rmsnorm(acc: torch.dtype, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
    hidden = x + residual
    return _rmsnorm(acc, hidden, weight), hidden


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """One tunable kernel family.

    Attributes:
        name: catalog key, e.g. ``rmsnorm_bwd``.
        build: ``build(acc_dtype)`` returns the plain function; inputs are passed positionally in
            the order of ``inputs``.
        inputs: names of the function's tensor arguments; ``x``/``residual`` are (M, N) activations,
            ``weight``/``bias`` are fp32 vectors of length N.
        backward: time the backward graph (gradients w.r.t. ``grad_inputs``) instead of the forward.
        grad_inputs: inputs that receive gradients in the backward kernels.
        activation_reads: (M, N) activation tensors the minimal kernel must read.
        activation_writes: (M, N) activation tensors it must write.
        vector_traffic: fp32 length-N vectors read or written (weights in, weight grads out).
        reductions: the reduction types of its main kernel under Inductor's default graph flags
            (``torch_rules.reductions_key``: the single forward kernel, or the fused mix-order
            backward kernel, whose column reductions become pointwise code), as its scheduler
            reports them on a GPU (on torch 2.11, H200); "" where there is no single such kernel.
            Probes record them per kernel slot; studies probed before that fall back to these
            (checked by tests/test_gpu.py; on CPU by tests/test_codegen_cpu.py, whose harness
            skips the post-grad patterns that make softmax an online softmax).
    """

    name: str
    build: Callable[[torch.dtype], Callable[..., object]]
    inputs: tuple[str, ...]
    backward: bool
    grad_inputs: tuple[str, ...]
    activation_reads: int
    activation_writes: int
    vector_traffic: int
    description: str
    reductions: str = ""

    def minimal_bytes(self, shape: Shape, dtype: str) -> int:
        """Fewest bytes the op must move through device memory (GB/s is computed from this)."""
        element = torch.empty((), dtype=DTYPES[dtype]).element_size()
        activations = (self.activation_reads + self.activation_writes) * shape.rows * shape.cols * element
        return activations + self.vector_traffic * shape.cols * 4

    def make_inputs(self, shape: Shape, dtype: str, device: str, seed: int) -> dict[str, torch.Tensor]:
        """Random inputs (never zeros: zeros hide unwritten outputs and run unrealistically fast)."""
        gen = torch.Generator(device=device).manual_seed(seed)
        act = DTYPES[dtype]
        tensors: dict[str, torch.Tensor] = {}
        for name in self.inputs:
            if name in ("x", "residual"):
                t = torch.randn(shape.rows, shape.cols, generator=gen, device=device, dtype=act)
            elif name == "weight":
                t = 1.0 + 0.1 * torch.randn(shape.cols, generator=gen, device=device, dtype=torch.float32)
            elif name == "bias":
                t = 0.1 * torch.randn(shape.cols, generator=gen, device=device, dtype=torch.float32)
            else:  # pragma: no cover - catalog entries only use the names above
                raise KeyError(name)
            tensors[name] = t.requires_grad_(self.backward and name in self.grad_inputs)
        return tensors

    def make_grad_output(self, shape: Shape, dtype: str, device: str, seed: int) -> torch.Tensor:
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        return torch.randn(shape.rows, shape.cols, generator=gen, device=device, dtype=DTYPES[dtype])


def _spec(name, build, inputs, backward, grad_inputs, reads, writes, vectors, description, reductions="") -> KernelSpec:
    return KernelSpec(name, build, inputs, backward, grad_inputs, reads, writes, vectors, description, reductions)


def _rms_builder(acc):
    return lambda x, weight: _rmsnorm(acc, x, weight)


def _ln_builder(acc):
    return lambda x, weight, bias: _layernorm(acc, x, weight, bias)


def _softmax_builder(acc):
    return lambda x: _softmax(acc, x)


def _add_rms_builder(acc):
    return lambda x, residual, weight: _add_rmsnorm(acc, x, residual, weight)


# Traffic: forward reads x and writes y; backward reads x (softmax: its saved output y) and dy and
# writes dx; weight vectors are read once and weight gradients written once.
CATALOG: dict[str, KernelSpec] = {
    s.name: s
    for s in (
        _spec("rmsnorm_fwd", _rms_builder, ("x", "weight"), False, (), 1, 1, 1, "y = x * rsqrt(mean(x^2) + eps) * w",
              "sum"),
        _spec("rmsnorm_bwd", _rms_builder, ("x", "weight"), True, ("x", "weight"), 2, 1, 2, "dx, dw of RMSNorm", "sum"),
        _spec("layernorm_fwd", _ln_builder, ("x", "weight", "bias"), False, (), 1, 1, 2, "LayerNorm with weight and bias",
              "welford_reduce+welford_reduce"),
        _spec(
            "layernorm_bwd", _ln_builder, ("x", "weight", "bias"), True, ("x", "weight", "bias"), 2, 1, 3,
            "dx, dw, db of LayerNorm", "sum+sum",
        ),
        _spec("softmax_fwd", _softmax_builder, ("x",), False, (), 1, 1, 0, "softmax over the last dim",
              "online_softmax_reduce+online_softmax_reduce"),
        _spec("softmax_bwd", _softmax_builder, ("x",), True, ("x",), 2, 1, 0, "dx of softmax", "sum"),
        _spec(
            "add_rmsnorm_fwd", _add_rms_builder, ("x", "residual", "weight"), False, (), 2, 2, 1,
            "h = x + residual; returns (RMSNorm(h), h)", "sum",
        ),
    )
}


def get_kernel(name: str) -> KernelSpec:
    try:
        return CATALOG[name]
    except KeyError:
        raise ValueError(f"unknown kernel {name!r}; known kernels: {', '.join(CATALOG)}") from None


def next_pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(n)))
