"""Catalog of the normalization kernels that are tuned.

Each entry is a plain PyTorch function that Inductor compiles.  Forward entries time the compiled
function; backward entries time only the backward graph Inductor generates for it (the forward is
compiled too, but stays on Inductor's defaults and is run outside the timed region).

The same function, built with float64 accumulation and fed float64 inputs, is the reference the
numerics guard compares against, so the reference cannot drift from what is compiled.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

from .runtime import torch_rules
from .shapes import ELEMENT_SIZES, Shape, next_pow2  # noqa: F401 - re-exported from their old home

EPS = 1e-6

# Normwise relative error ||out - ref|| / ||ref|| allowed per activation dtype.  A bf16 output carries
# about 2^-9 relative rounding error per element; a correct kernel lands near 3e-3, a broken one (a
# dropped term, an unwritten tile) far above 1e-1, so these bounds separate the two with margin.
TOLERANCES: dict[str, float] = {"bf16": 1.6e-2, "fp16": 4e-3, "fp32": 1e-4}


def _import_torch() -> None:
    """Bind ``torch``, ``F`` and ``DTYPES`` (name -> torch dtype) here on first need, not at import.

    The read-only commands read this catalog and must not pay seconds for torch.  The kernel
    functions read ``torch`` and ``F`` as this module's globals, as before: Dynamo traces them, so
    they must be the modules themselves by then, which ``KernelSpec.build`` sees to.
    """
    global torch, F, DTYPES
    if "DTYPES" not in globals():
        import torch
        import torch.nn.functional as F

        DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def __getattr__(name: str):
    if name == "DTYPES":  # ``from .kernels import DTYPES`` still works, importing torch then
        _import_torch()
        return DTYPES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


# -- the norms real models call, written as they are (module kernels) ------------------------------
# Their parameters are in the activation dtype, as in a model cast to bf16, and they compute the way
# the module does: the compiled function ignores ``acc`` except where the module itself upcasts.  The
# float64 reference is the same code on float64 inputs.

SOFTMAX_SCALE = 128 ** -0.5  # attention scores: 1/sqrt(head_dim) with 128-wide heads


def _llama_rmsnorm(acc: torch.dtype, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    # transformers' LlamaRMSNorm.forward: fp32 upcast, normalise, cast back, then scale by the weight.
    input_dtype = x.dtype
    hidden = x.to(acc)  # float32 as the module does; float64 in the reference
    variance = hidden.pow(2).mean(-1, keepdim=True)
    hidden = hidden * torch.rsqrt(variance + EPS)
    return weight * hidden.to(input_dtype)


def _prenorm(acc: torch.dtype, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
    # A pre-norm decoder block's entry: the residual stream is updated, then normalised.
    hidden = x + residual
    return _llama_rmsnorm(acc, hidden, weight), hidden


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
        vector_traffic: length-N vectors read or written (weights in, weight grads out).
        param_dtype: "fp32" for fp32 weights and biases, "act" for parameters in the activation dtype
            (a module in a model cast to bf16).
        outputs: how many (M, N) outputs the function returns; a backward entry gets one gradient
            per output (the pre-norm block returns the normalised and the residual stream).
        train: a forward entry whose ``grad_inputs`` require gradients, timed as a training step runs
            its forward: Inductor then compiles the forward graph of the joint graph, whose kernel also
            saves what the backward needs (RMSNorm's rstd), so it reads and writes other tensors than
            the inference forward and is another kernel for the rules.
        envelope: ``torch_rules.envelope_text`` of the main kernel under Inductor's default graph flags
            on a GPU, like ``reductions``; "" where not yet probed there.
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
    param_dtype: str = "fp32"
    outputs: int = 1
    envelope: str = ""
    train: bool = False

    def minimal_bytes(self, shape: Shape, dtype: str) -> int:
        """Fewest bytes the op must move through device memory (GB/s is computed from this)."""
        element = ELEMENT_SIZES[dtype]
        activations = (self.activation_reads + self.activation_writes) * shape.rows * shape.cols * element
        param = 4 if self.param_dtype == "fp32" else element
        return activations + self.vector_traffic * shape.cols * param

    def make_inputs(self, shape: Shape, dtype: str, device: str, seed: int) -> dict[str, torch.Tensor]:
        """Random inputs (never zeros: zeros hide unwritten outputs and run unrealistically fast)."""
        _import_torch()
        gen = torch.Generator(device=device).manual_seed(seed)
        act = DTYPES[dtype]
        param = torch.float32 if self.param_dtype == "fp32" else act
        tensors: dict[str, torch.Tensor] = {}
        for name in self.inputs:
            if name in ("x", "residual"):
                t = torch.randn(shape.rows, shape.cols, generator=gen, device=device, dtype=act)
            elif name == "weight":
                t = (1.0 + 0.1 * torch.randn(shape.cols, generator=gen, device=device, dtype=torch.float32)).to(param)
            elif name == "bias":
                t = (0.1 * torch.randn(shape.cols, generator=gen, device=device, dtype=torch.float32)).to(param)
            else:  # pragma: no cover - catalog entries only use the names above
                raise KeyError(name)
            tensors[name] = t.requires_grad_((self.backward or self.train) and name in self.grad_inputs)
        return tensors

    def make_grad_output(self, shape: Shape, dtype: str, device: str, seed: int):
        """One gradient per output: a tensor, or a tuple for functions with several outputs."""
        _import_torch()
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        grads = tuple(torch.randn(shape.rows, shape.cols, generator=gen, device=device, dtype=DTYPES[dtype])
                      for _ in range(self.outputs))
        return grads[0] if self.outputs == 1 else grads


def _spec(name, build, inputs, backward, grad_inputs, reads, writes, vectors, description, reductions="", **extra
          ) -> KernelSpec:
    return KernelSpec(name, _torch_first(build), inputs, backward, grad_inputs, reads, writes, vectors, description,
                      reductions, **extra)


def _torch_first(build):
    """``build``, binding torch here before it makes the function Dynamo traces (see ``_import_torch``)."""

    @functools.wraps(build)
    def built(acc):
        _import_torch()
        return build(acc)

    return built


def _module_pair(name, build, inputs, fwd_traffic, bwd_traffic, description, grad_inputs=None, **extra):
    """Forward and backward entries of one module kernel (parameters in the activation dtype)."""
    grads = grad_inputs or inputs
    return (
        _spec(f"{name}_fwd", build, inputs, False, (), *fwd_traffic, description, param_dtype="act", **extra),
        _spec(f"{name}_bwd", build, inputs, True, grads, *bwd_traffic, f"gradients of {description}",
              param_dtype="act", **extra),
    )


def _train_forward(spec: KernelSpec) -> KernelSpec:
    """The forward of a module kernel as a training step compiles it (inputs and parameters need grads)."""
    return dataclasses.replace(spec, name=spec.name.replace("_fwd", "_train_fwd"), train=True, grad_inputs=spec.inputs,
                               description=f"{spec.description}, training forward (saves what the backward needs)")


def _rms_builder(acc):
    return lambda x, weight: _rmsnorm(acc, x, weight)


def _ln_builder(acc):
    return lambda x, weight, bias: _layernorm(acc, x, weight, bias)


def _softmax_builder(acc):
    return lambda x: _softmax(acc, x)


def _add_rms_builder(acc):
    return lambda x, residual, weight: _add_rmsnorm(acc, x, residual, weight)


def _nn_rms_builder(acc):
    # torch.nn.RMSNorm.forward is F.rms_norm with the module's weight and eps.
    return lambda x, weight: F.rms_norm(x, (x.shape[-1],), weight, EPS)


def _nn_ln_builder(acc):
    return lambda x, weight, bias: F.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


def _nn_ln_nobias_builder(acc):
    return lambda x, weight: F.layer_norm(x, (x.shape[-1],), weight, None, EPS)


def _llama_rms_builder(acc):
    return lambda x, weight: _llama_rmsnorm(acc, x, weight)


def _prenorm_builder(acc):
    return lambda x, residual, weight: _prenorm(acc, x, residual, weight)


def _scaled_softmax_builder(acc):
    # Attention probabilities: scaled scores, softmax in fp32, cast back (the reference in float64).
    return lambda x: torch.softmax(x * SOFTMAX_SCALE, dim=-1, dtype=acc).to(x.dtype)


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
        # Module kernels (traffic: (M, N) reads, (M, N) writes, length-N vectors).
        *_module_pair("nn_rmsnorm", _nn_rms_builder, ("x", "weight"), (1, 1, 1), (2, 1, 2),
                      "torch.nn.RMSNorm / F.rms_norm"),
        *_module_pair("nn_layernorm", _nn_ln_builder, ("x", "weight", "bias"), (1, 1, 2), (2, 1, 3),
                      "torch.nn.LayerNorm with bias"),
        *_module_pair("nn_layernorm_nobias", _nn_ln_nobias_builder, ("x", "weight"), (1, 1, 1), (2, 1, 2),
                      "torch.nn.LayerNorm(bias=False)"),
        *_module_pair("llama_rmsnorm", _llama_rms_builder, ("x", "weight"), (1, 1, 1), (2, 1, 2),
                      "transformers' LlamaRMSNorm (fp32 upcast, cast back, then the weight)"),
        # Backward: the saved h, dy and dh in, one gradient for both x and residual out.
        *_module_pair("prenorm_rmsnorm", _prenorm_builder, ("x", "residual", "weight"), (2, 2, 1), (3, 1, 2),
                      "a pre-norm block's h = x + residual; (LlamaRMSNorm(h), h)", outputs=2),
        *_module_pair("scaled_softmax", _scaled_softmax_builder, ("x",), (1, 1, 0), (2, 1, 0),
                      "attention-style softmax(x / sqrt(128)) in fp32, cast back"),
    )
}
# The norms a decoder layer trains with: their forward kernels as a training step compiles them.
TRAIN_FORWARD_OF = ("nn_rmsnorm_fwd", "nn_layernorm_fwd", "llama_rmsnorm_fwd", "prenorm_rmsnorm_fwd")
CATALOG.update({(train := _train_forward(CATALOG[name])).name: train for name in TRAIN_FORWARD_OF})


def _envelope(*counts: int) -> str:
    """``torch_rules.envelope_text`` of (row_reads, row_writes, other_reads, other_writes, row_bytes)."""
    return torch_rules.envelope_text(dict(zip(torch_rules.ENVELOPE_FIELDS, counts)))


# What a default bf16 compile's main kernel (the forward kernel; the fused mix-order or row kernel of a
# backward) reported on an H200 with torch 2.11.0+cu130 (experiments/probe_envelopes.py, 2026-11-23, at
# 8192x2048 and 32768x4096 alike): its reductions and envelope.  Studies probed before slots recorded
# them fall back to these; tests/test_gpu.py checks them against the probe.
PROBED_BF16 = {
    "rmsnorm_fwd": ("sum", _envelope(1, 1, 1, 1, 4)),
    "rmsnorm_bwd": ("sum", _envelope(2, 1, 2, 1, 6)),
    "layernorm_fwd": ("welford_reduce+welford_reduce", _envelope(1, 1, 2, 2, 4)),
    "layernorm_bwd": ("sum+sum", _envelope(2, 1, 3, 2, 6)),
    "softmax_fwd": ("online_softmax_reduce+online_softmax_reduce", _envelope(1, 1, 0, 2, 4)),
    "softmax_bwd": ("sum", _envelope(2, 1, 2, 1, 6)),
    "add_rmsnorm_fwd": ("sum", _envelope(2, 2, 1, 1, 8)),
    "nn_rmsnorm_fwd": ("sum", _envelope(1, 1, 1, 1, 4)),
    "nn_rmsnorm_bwd": ("sum", _envelope(2, 1, 2, 1, 6)),
    "nn_layernorm_fwd": ("welford_reduce+welford_reduce", _envelope(1, 1, 2, 2, 4)),
    "nn_layernorm_bwd": ("sum+sum", _envelope(2, 1, 3, 2, 6)),
    "nn_layernorm_nobias_fwd": ("welford_reduce+welford_reduce", _envelope(1, 1, 1, 2, 4)),
    "nn_layernorm_nobias_bwd": ("sum+sum", _envelope(2, 1, 3, 2, 6)),
    "llama_rmsnorm_fwd": ("sum", _envelope(1, 1, 1, 1, 4)),
    "llama_rmsnorm_bwd": ("sum", _envelope(2, 1, 2, 1, 6)),
    "prenorm_rmsnorm_fwd": ("sum", _envelope(2, 2, 1, 1, 8)),
    "prenorm_rmsnorm_bwd": ("sum", _envelope(3, 1, 2, 1, 8)),
    # The fp32 softmax of scaled scores keeps max and sum (no online-softmax rewrite).
    "scaled_softmax_fwd": ("max+sum", _envelope(1, 1, 0, 2, 4)),
    "scaled_softmax_bwd": ("sum", _envelope(2, 1, 2, 1, 6)),
    # Training forwards also write the saved statistics (one more other_write than the inference forward).
    "nn_rmsnorm_train_fwd": ("sum", _envelope(1, 1, 1, 2, 4)),
    "nn_layernorm_train_fwd": ("welford_reduce+welford_reduce", _envelope(1, 1, 2, 3, 4)),
    "llama_rmsnorm_train_fwd": ("sum", _envelope(1, 1, 1, 2, 4)),
    "prenorm_rmsnorm_train_fwd": ("sum", _envelope(2, 2, 1, 2, 8)),
}
# What each reduction kernel of a default bf16 compile computes (``torch_rules.reduction_ops``), keyed by
# catalog kernel, signature and envelope without op counts: studies that ran before op counts were recorded
# join their family through this table.  From experiments/probe_envelopes.py on an H200 (torch 2.11.0+cu130,
# 2026-11-23) at 32768x1024, 8192x2048, 32768x4096 and 16384x8192: the same text at every shape.
PROBED_OPS: dict[tuple[str, str, str], str] = {
    ("add_rmsnorm_fwd", "sum", _envelope(2, 2, 1, 1, 8)): "load:1+mul:1+to_dtype:1",
    ("layernorm_bwd", "sum+sum@backward", _envelope(2, 1, 3, 2, 6)): "load:7+mul:4+sub:1+to_dtype:3",
    ("layernorm_bwd", "welford_reduce+welford_reduce", _envelope(1, 1, 2, 3, 4)): "load:2+to_dtype:2",
    ("layernorm_fwd", "welford_reduce+welford_reduce", _envelope(1, 1, 2, 2, 4)): "load:2+to_dtype:2",
    ("llama_rmsnorm_bwd", "sum", _envelope(1, 1, 1, 2, 4)): "load:1+mul:1+to_dtype:1",
    ("llama_rmsnorm_bwd", "sum@backward", _envelope(2, 1, 2, 1, 6)): "load:3+mul:2+to_dtype:2",
    ("llama_rmsnorm_fwd", "sum", _envelope(1, 1, 1, 1, 4)): "load:1+mul:1+to_dtype:1",
    ("llama_rmsnorm_train_fwd", "sum", _envelope(1, 1, 1, 2, 4)): "load:1+mul:1+to_dtype:1",
    ("nn_layernorm_bwd", "sum+sum@backward", _envelope(2, 1, 3, 2, 6)): "load:7+mul:4+sub:1+to_dtype:5",
    ("nn_layernorm_bwd", "welford_reduce+welford_reduce", _envelope(1, 1, 2, 3, 4)): "load:2+to_dtype:2",
    ("nn_layernorm_fwd", "welford_reduce+welford_reduce", _envelope(1, 1, 2, 2, 4)): "load:2+to_dtype:2",
    ("nn_layernorm_nobias_bwd", "sum+sum@backward", _envelope(2, 1, 3, 2, 6)): "load:7+mul:4+sub:1+to_dtype:5",
    ("nn_layernorm_nobias_bwd", "welford_reduce+welford_reduce", _envelope(1, 1, 1, 3, 4)): "load:2+to_dtype:2",
    ("nn_layernorm_nobias_fwd", "welford_reduce+welford_reduce", _envelope(1, 1, 1, 2, 4)): "load:2+to_dtype:2",
    ("nn_layernorm_train_fwd", "welford_reduce+welford_reduce", _envelope(1, 1, 2, 3, 4)): "load:2+to_dtype:2",
    ("nn_rmsnorm_bwd", "sum", _envelope(1, 1, 1, 2, 4)): "load:1+mul:1+to_dtype:1",
    ("nn_rmsnorm_bwd", "sum@backward", _envelope(2, 1, 2, 1, 6)): "load:4+mul:3+to_dtype:3",
    ("nn_rmsnorm_fwd", "sum", _envelope(1, 1, 1, 1, 4)): "load:1+mul:1+to_dtype:1",
    ("nn_rmsnorm_train_fwd", "sum", _envelope(1, 1, 1, 2, 4)): "load:1+mul:1+to_dtype:1",
    ("prenorm_rmsnorm_bwd", "sum", _envelope(2, 2, 1, 2, 8)): "load:1+mul:1+to_dtype:1",
    ("prenorm_rmsnorm_bwd", "sum@backward", _envelope(3, 1, 2, 1, 8)): "load:3+mul:2+to_dtype:2",
    ("prenorm_rmsnorm_fwd", "sum", _envelope(2, 2, 1, 1, 8)): "load:1+mul:1+to_dtype:1",
    ("prenorm_rmsnorm_train_fwd", "sum", _envelope(2, 2, 1, 2, 8)): "load:1+mul:1+to_dtype:1",
    ("rmsnorm_bwd", "sum", _envelope(1, 1, 1, 2, 4)): "load:1+mul:1+to_dtype:1",
    ("rmsnorm_bwd", "sum@backward", _envelope(2, 1, 2, 1, 6)): "load:3+mul:2+to_dtype:2",
    ("rmsnorm_fwd", "sum", _envelope(1, 1, 1, 1, 4)): "load:1+mul:1+to_dtype:1",
    ("scaled_softmax_bwd", "max+sum", _envelope(1, 1, 0, 2, 4)): "exp:1+load:3+mul:3+sub:1+to_dtype:2",
    ("scaled_softmax_bwd", "sum@backward", _envelope(2, 1, 2, 1, 6)): "exp:1+load:4+mul:3+sub:1+to_dtype:2+truediv:1",
    ("scaled_softmax_fwd", "max+sum", _envelope(1, 1, 0, 2, 4)): "exp:1+load:3+mul:3+sub:1+to_dtype:2",
    ("softmax_bwd", "online_softmax_reduce+online_softmax_reduce", _envelope(1, 1, 0, 2, 4)): "load:2+to_dtype:2",
    ("softmax_bwd", "sum@backward", _envelope(2, 1, 2, 1, 6)): "exp:1+load:4+mul:1+sub:1+to_dtype:2+truediv:1",
    ("softmax_fwd", "online_softmax_reduce+online_softmax_reduce", _envelope(1, 1, 0, 2, 4)): "load:2+to_dtype:2",
}



def _probed_envelope(spec: KernelSpec) -> str:
    """The main kernel's envelope with what its reductions compute, as the probe saw it."""
    reductions, envelope = PROBED_BF16[spec.name]
    signature = torch_rules.kernel_signature(reductions.split("+"), spec.backward)
    return f"{envelope},{torch_rules.OPS_FIELD}={PROBED_OPS[(spec.name, signature, envelope)]}"


CATALOG = {name: dataclasses.replace(spec, reductions=PROBED_BF16[name][0], envelope=_probed_envelope(spec))
           for name, spec in CATALOG.items()}

# The catalog functions the project first tuned; module kernels are the rest.
FUNCTION_KERNELS = ("rmsnorm_fwd", "rmsnorm_bwd", "layernorm_fwd", "layernorm_bwd", "softmax_fwd", "softmax_bwd",
                    "add_rmsnorm_fwd")
MODULE_KERNELS = tuple(name for name in CATALOG if name not in FUNCTION_KERNELS)


def get_kernel(name: str) -> KernelSpec:
    try:
        return CATALOG[name]
    except KeyError:
        raise ValueError(f"unknown kernel {name!r}; known kernels: {', '.join(CATALOG)}") from None
